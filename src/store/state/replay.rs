//! Replaying a crawl's state (ARCHITECTURE §9a): the newest checkpoint ([`super::compaction`])
//! and the journals' [URL events](super::url_events) after it give the URLs admitted and not
//! ended, in admission order (the frontier to restore), every URL admitted (the URL-seen
//! set), and the payload digests seen, streamed to a [`ReplaySink`] so that a journal of
//! millions of URLs is not held in memory.

use std::path::Path;

use super::compaction;
use super::crawl_state::{state_files, StateError};
use super::url_events::{admitted_after, scan_ends, still_queued, Event};
use crate::fetcher::PayloadDigest;

/// What replaying the journal found, besides what it handed to the [`ReplaySink`].
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Replayed {
    /// URLs admitted.
    pub admitted: u64,
    /// URLs ended.
    pub done: u64,
    /// Of the admitted, those still queued (handed to [`ReplaySink::queued`]).
    pub queued: u64,
}

/// Where a replay puts what it finds (the crawl being restored).
pub trait ReplaySink {
    /// Keys of the URL-seen set of local partition `part`, from a checkpoint: increasing
    /// within a partition, and given before any [`Self::seen`].
    fn seen_sorted(&mut self, part: u32, keys: &[u64]);
    /// A URL the crawl admitted (done or not) after the checkpoint: it is seen.
    fn seen(&mut self, url: &str);
    /// A URL admitted and not ended, in admission order: `entry` as the crawl encoded it.
    fn queued(&mut self, url: &str, entry: &[u8]);
    /// The payload digest of a URL that ended with one.
    fn digest(&mut self, digest: PayloadDigest);
    /// A URL's crawl database record as the writer put it (its value bytes), in journal
    /// order: a resume puts it again, as a kill may have taken it from the database.
    fn record(&mut self, _url: &str, _value: &[u8]) -> Result<(), StateError> {
        Ok(())
    }
}

/// Replays the crawl's state into `sink`: the newest checkpoint and the journals after it,
/// streamed (memory: 8 bytes per URL ended since the checkpoint, not the journal): a pass
/// over the journals for what ended since (and their digests), the checkpoint (its URL-seen
/// keys, its queue minus what ended, its digests), then the journals' admissions. (A 64-bit
/// hash collision could make one queued URL look ended: about 1 in 10^8 for a crawl of
/// 10^6 URLs; accepted.) `partitions`: local partitions sharing the journal; past one, a URL
/// admitted twice is queued once, at 8 bytes per queued URL more.
pub fn replay(
    out: &Path,
    sink: &mut dyn ReplaySink,
    partitions: u32,
) -> Result<Replayed, StateError> {
    let dedupe = partitions > 1;
    let files = state_files(out)?;
    let mut r = Replayed::default();
    let mut ends = scan_ends(&files.journals, |ev| {
        match ev {
            Event::Done {
                digest: Some(d), ..
            } => sink.digest(*d),
            Event::Record { url, value } => sink.record(url, value)?,
            _ => {}
        }
        Ok(())
    })?;
    if let Some((_, cp)) = &files.checkpoint {
        let counts = compaction::read(cp, |item| {
            match item {
                compaction::Item::Seen(part, keys) => sink.seen_sorted(part, keys),
                compaction::Item::Queued(url, entry) => {
                    if still_queued(&mut ends, url, dedupe) {
                        r.queued += 1;
                        sink.queued(url, entry);
                    }
                }
                compaction::Item::Digests(ds) => {
                    for d in ds.chunks_exact(size_of::<PayloadDigest>()) {
                        sink.digest(d.try_into().expect("a chunk is one digest"));
                    }
                }
            }
            Ok(())
        })?;
        r.admitted += counts.admitted;
        r.done += counts.done;
    }
    r.done += ends.done;
    r.admitted += admitted_after(&files.journals, &mut ends, dedupe, |url, entry, queued| {
        sink.seen(url);
        if queued {
            r.queued += 1;
            sink.queued(url, entry);
        }
        Ok(())
    })?;
    Ok(r)
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;
    use crate::store::state::crawl_state::{create, journal_path};
    use crate::store::state::journal::JournalWriter;
    use crate::store::state::url_events::{push_admitted, push_done, push_released};

    #[derive(Default)]
    struct Collect {
        seen: Vec<String>,
        queued: Vec<Vec<u8>>,
        digests: usize,
    }

    impl ReplaySink for Collect {
        fn seen_sorted(&mut self, _: u32, _: &[u64]) {
            unreachable!("no checkpoint here")
        }
        fn seen(&mut self, url: &str) {
            self.seen.push(url.to_string());
        }
        fn queued(&mut self, _url: &str, entry: &[u8]) {
            self.queued.push(entry.to_vec());
        }
        fn digest(&mut self, _: PayloadDigest) {
            self.digests += 1;
        }
    }

    fn journal(out: &Path, records: &[Vec<u8>]) {
        create(out, &["crawl".into()]).unwrap();
        let mut j = JournalWriter::open_append(&journal_path(out, 0)).unwrap();
        for r in records {
            j.append(r).unwrap();
        }
        j.sync().unwrap();
    }

    fn rec(f: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
        let mut v = Vec::new();
        f(&mut v);
        v
    }

    #[test]
    fn released_urls_end_without_counting_done_and_a_url_admitted_twice_queues_once() {
        let dir = std::env::temp_dir().join(format!("spinneret-replay-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let (a, b, c) = ("http://a.test/", "http://b.test/", "http://c.test/");
        journal(
            &dir,
            &[
                rec(|v| push_admitted(v, a, b"ea")),
                rec(|v| push_admitted(v, b, b"eb")),
                rec(|v| push_admitted(v, c, b"ec")),
                // b went to the partition owning its host; a was admitted again (another
                // loop forwarded it to its owner too); c was fetched.
                rec(|v| push_released(v, b)),
                rec(|v| push_admitted(v, a, b"ea")),
                rec(|v| push_done(v, c, Some(&[7; 20]))),
            ],
        );
        let mut sink = Collect::default();
        let r = replay(&dir, &mut sink, 2).unwrap();
        assert_eq!(
            sink.queued,
            vec![b"ea".to_vec()],
            "only a is still this crawl's"
        );
        assert_eq!(r.queued, 1);
        assert_eq!(r.done, 1, "a release is not a page done");
        assert_eq!(sink.digests, 1);
        for u in [a, b, c] {
            assert!(sink.seen.iter().any(|s| s == u), "{u} not seen");
        }
        let _ = fs::remove_dir_all(&dir);
    }
}
