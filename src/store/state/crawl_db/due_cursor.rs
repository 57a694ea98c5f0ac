//! A continuous crawl's reader of the due index: the crawl's `DueUrls`, over a database the
//! writer thread updates at the same time (redb's readers see committed snapshots).
//!
//! It hands each due record out once, keeping its position in the index (the key of the
//! last record handed out). A URL fetched again gets a due time at least `--revisit-min`
//! after the fetch, and so later than the position as long as the writer commits it before
//! the position gets there (it commits within half a second; the crawl asks a second behind
//! the clock), and comes back when that time comes: the position needs no bookkeeping of
//! what is in the frontier. A record committed later than that is passed over until the
//! cursor starts again, which it does on every run: a resumed run starts at the beginning,
//! and what was taken but not fetched before the stop is due still, and is taken again.

use std::io;
use std::sync::Arc;

use super::record::due_key;
use super::CrawlDb;
use crate::crawl::due::{DueUrl, DueUrls};

pub struct DueCursor {
    db: Arc<CrawlDb>,
    /// The due-index key of the last record handed out.
    after: Option<Vec<u8>>,
}

impl DueCursor {
    pub fn new(db: Arc<CrawlDb>) -> DueCursor {
        DueCursor { db, after: None }
    }
}

impl DueUrls for DueCursor {
    fn take(&mut self, before: u64, max: usize, out: &mut Vec<DueUrl>) -> io::Result<()> {
        let due = self
            .db
            .due_after(self.after.as_deref(), before, max)
            .map_err(io::Error::other)?;
        let mut key = self.after.take().unwrap_or_default();
        let mut moved = false;
        for record in due {
            let record = record.map_err(io::Error::other)?;
            due_key(record.due(), &record.url, &mut key);
            moved = true;
            let mut last = record.last;
            self.db.locate_copy(&mut last).map_err(io::Error::other)?;
            out.push(DueUrl {
                url: record.url,
                depth: record.depth,
                hop: record.hop,
                last,
            });
        }
        self.after = (moved || !key.is_empty()).then_some(key);
        Ok(())
    }
}
