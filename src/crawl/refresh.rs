//! Keeping a collection fresh, the crawl's side (ARCHITECTURE §9c): the previous crawl's URLs
//! queued with what their last fetch left (`--previous`), and a continuous crawl's URLs due
//! again, taken from the crawl database behind [`DueUrls`] into the frontier's revisit lanes.

use std::time::{Duration, Instant};

use url::Url;

use super::due::DueUrls;
use super::revisit::{self, LastFetch};
use super::sink::{Hop, Sink};
use super::{Crawl, Entry};

/// A continuous crawl asks the crawl database for due URLs this often...
const DUE_CHECK_EVERY: Duration = Duration::from_secs(1);
/// ...at most this many at a time, and only while the frontier holds fewer revisits than
/// `DUE_FRONTIER_ROOM`: what is due waits in the database, not in memory.
const DUE_BATCH: usize = 1024;
/// How far behind the clock a continuous crawl takes due URLs, seconds (see `take_due`).
pub(super) const DUE_LAG_SECS: u64 = 1;
const DUE_FRONTIER_ROOM: usize = 16 * 1024;

impl<S: Sink> Crawl<S> {
    /// Queues a URL an earlier crawl fetched (`--previous`), with what that fetch left, so
    /// it is asked for with its validators. It was in that crawl's scope: the filter is not
    /// asked again; a URL queued before (a seed, an earlier line) is queued once.
    pub fn add_previous(&mut self, url: Url, depth: u32, hop: Hop, last: LastFetch) {
        self.queue_new(Entry {
            last: Some(Box::new(last)),
            ..Entry::new(url, depth, None, 0, hop)
        });
    }

    /// Where a continuous crawl ([`CrawlConfig::continuous`](super::CrawlConfig::continuous)) finds the URLs due again.
    pub fn set_due_urls(&mut self, due: Box<dyn DueUrls>) {
        self.due_urls = Some(due);
    }

    /// Takes the URLs due by `now` from the crawl database into the frontier (a continuous
    /// crawl, every [`DUE_CHECK_EVERY`], while the frontier has room). They are not
    /// journaled: the database is their record, and a resumed run takes them again.
    pub(super) fn take_due(&mut self, now: Instant) {
        if now < self.next_due_check || self.frontier.later_len() >= DUE_FRONTIER_ROOM {
            return;
        }
        self.next_due_check = now + DUE_CHECK_EVERY;
        let Some(source) = self.due_urls.as_mut() else {
            return;
        };
        // A second behind the clock: the database's cursor passes each due time once, so a
        // URL fetched again must have its new (later) due time committed before the cursor
        // gets there; the lag gives the writer --revisit-min plus a second to commit it.
        let before = revisit::unix_secs(self.manners.wall(now)).saturating_sub(DUE_LAG_SECS);
        let mut due = std::mem::take(&mut self.due_buf);
        due.clear();
        if let Err(e) = source.take(before, DUE_BATCH, &mut due) {
            self.io_error.get_or_insert(e);
        }
        if due.len() == DUE_BATCH {
            self.next_due_check = now; // more are due: ask again at the next call
        }
        for d in due.drain(..) {
            let Ok(url) = Url::parse(&d.url) else {
                continue;
            };
            if !self.owns(&url) {
                continue; // another partition's: its own ask takes it
            }
            self.counters.revisits.taken_due += 1;
            // Behind what is new on its host: the links the revisits find go first.
            let entry = Entry {
                last: Some(Box::new(d.last)),
                ..Entry::new(url, d.depth, None, 0, d.hop)
            };
            self.push_entry_at(entry, None);
        }
        self.due_buf = due;
    }
}
