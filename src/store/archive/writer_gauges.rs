//! What the writer thread has written so far, for whoever watches the crawl (`--metrics`):
//! WARC files and bytes and when the journal was last committed; and what the page workers
//! (`page_work`) found: pages fingerprinted and near-duplicates. Atomics the writer stores
//! now and then (at each commit, and every few hundred messages) and any thread reads: a
//! reader never waits for the writer, nor the writer for it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

#[derive(Debug, Default)]
pub struct WriterGauges {
    warc_files: AtomicU64,
    warc_bytes: AtomicU64,
    crawl_log_bytes: AtomicU64,
    /// Unix milliseconds of the last journal commit (what a resume starts from); 0: none.
    committed_unix_ms: AtomicU64,
    pages_fingerprinted: AtomicU64,
    near_duplicates: AtomicU64,
}

/// One reading of [`WriterGauges`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriterFigures {
    pub warc_files: u64,
    pub warc_bytes: u64,
    pub crawl_log_bytes: u64,
    pub committed_unix_ms: Option<u64>,
    /// Pages the page workers fingerprinted, and those an earlier page was a near-duplicate
    /// of (the crawl counts its own when it fingerprints on the loop).
    pub pages_fingerprinted: u64,
    pub near_duplicates: u64,
}

impl WriterGauges {
    pub(super) fn set_written(&self, warc_files: u64, warc_bytes: u64, crawl_log_bytes: u64) {
        self.warc_files.store(warc_files, Ordering::Relaxed);
        self.warc_bytes.store(warc_bytes, Ordering::Relaxed);
        self.crawl_log_bytes
            .store(crawl_log_bytes, Ordering::Relaxed);
    }

    pub(super) fn set_committed(&self, at: SystemTime) {
        let ms = at
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_millis() as u64;
        self.committed_unix_ms.store(ms.max(1), Ordering::Relaxed);
    }

    pub(super) fn count_fingerprint(&self, near_duplicate: bool) {
        self.pages_fingerprinted.fetch_add(1, Ordering::Relaxed);
        self.near_duplicates
            .fetch_add(u64::from(near_duplicate), Ordering::Relaxed);
    }

    pub fn read(&self) -> WriterFigures {
        let committed = self.committed_unix_ms.load(Ordering::Relaxed);
        WriterFigures {
            warc_files: self.warc_files.load(Ordering::Relaxed),
            warc_bytes: self.warc_bytes.load(Ordering::Relaxed),
            crawl_log_bytes: self.crawl_log_bytes.load(Ordering::Relaxed),
            committed_unix_ms: (committed > 0).then_some(committed),
            pages_fingerprinted: self.pages_fingerprinted.load(Ordering::Relaxed),
            near_duplicates: self.near_duplicates.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_read_what_was_stored_and_no_commit_is_none() {
        let g = WriterGauges::default();
        assert_eq!(g.read(), WriterFigures::default());
        g.set_written(2, 1000, 300);
        g.set_committed(UNIX_EPOCH + std::time::Duration::from_millis(1234));
        assert_eq!(
            g.read(),
            WriterFigures {
                warc_files: 2,
                warc_bytes: 1000,
                crawl_log_bytes: 300,
                committed_unix_ms: Some(1234),
                ..WriterFigures::default()
            }
        );
    }
}
