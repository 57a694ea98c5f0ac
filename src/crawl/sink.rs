//! Where the crawl puts what it learns: the [`Sink`] trait. The crawl layer never touches
//! files; the app gives it the store's WARC/log sink, tests give it a [`MemorySink`].

use std::io;
use std::time::SystemTime;

use super::revisit::{LastFetch, Seen};
use super::schedule::PageHistory;
use crate::content::Sketch;
use crate::fetcher::{FetchDone, PayloadDigest};
use crate::ReturnCode;

/// How a URL was found: Heritrix's hop letters, written to crawl.log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hop {
    /// Given by the user (`S`).
    Seed,
    /// A link on a page (`L`).
    Link,
    /// Something a page needs to render: image, script, stylesheet, CSS `url()` (`E`).
    Embed,
    /// A redirect's target (`R`).
    Redirect,
    /// What a fetch needs first: robots.txt (`P`).
    Prerequisite,
    /// A sitemap, named by robots.txt, given, or listed by a sitemap index (`M`).
    Sitemap,
}

impl Hop {
    pub fn letter(self) -> char {
        match self {
            Hop::Seed => 'S',
            Hop::Link => 'L',
            Hop::Embed => 'E',
            Hop::Redirect => 'R',
            Hop::Prerequisite => 'P',
            Hop::Sitemap => 'M',
        }
    }

    pub fn from_letter(c: u8) -> Option<Hop> {
        match c {
            b'S' => Some(Hop::Seed),
            b'L' => Some(Hop::Link),
            b'E' => Some(Hop::Embed),
            b'R' => Some(Hop::Redirect),
            b'P' => Some(Hop::Prerequisite),
            b'M' => Some(Hop::Sitemap),
            _ => None,
        }
    }
}

/// How a URL came to be fetched: the page it was found on and the hop that led there.
#[derive(Clone, Copy, Debug)]
pub struct Via<'a> {
    pub referrer: Option<&'a str>,
    pub hop: Hop,
}

impl<'a> Via<'a> {
    pub fn new(referrer: Option<&'a str>, hop: Hop) -> Via<'a> {
        Via { referrer, hop }
    }

    /// A URL the user gave.
    pub fn seed() -> Via<'static> {
        Via {
            referrer: None,
            hop: Hop::Seed,
        }
    }
}

/// What the crawl tells the sink of a URL that ended, for the crawl database: what its last
/// fetch left (`None` for a first fetch), what this fetch saw, the updated change history,
/// when the URL is due again, and how it was found (kept for its revisits).
#[derive(Clone, Copy, Debug)]
pub struct Scheduled<'a> {
    pub last: Option<&'a LastFetch>,
    pub seen: Seen,
    /// The wall time of this fetch (or of the URL's end without one), unix seconds.
    pub at: u64,
    pub history: PageHistory,
    pub due: u64,
    pub depth: u32,
    pub hop: Hop,
    /// A focused crawl's relevance score of the page (crawl.log's relevance column).
    pub relevance: Option<f32>,
    /// The sketch of the page's main text, for a scanned HTML page with text (crawl.log's
    /// sketch column, the CDXJ line's `sketch`).
    pub sketch: Option<Sketch>,
    /// The crawl asks the sink to fingerprint the page (main text, sketch, near-duplicate
    /// lookup) off the event loop: `sketch` is then `None`, and the sink fills in crawl.log's
    /// and CDXJ's sketch itself ([`CrawlConfig::near_dups_in_sink`](super::CrawlConfig)).
    pub fingerprint: bool,
    /// The page's robots directives say `noindex` (its headers', or its meta tags'): it is
    /// stored, marked so in crawl.log and left out of the text outputs.
    pub noindex: bool,
}

/// Receives every URL's one outcome.
pub trait Sink {
    /// Stores a finished fetch (its WARC records, when a response head arrived) and logs it
    /// with `outcome` (which may differ from the fetch's, e.g. `DuplicateContent`) and the
    /// content digest. `scheduled` comes with a URL's end (not with robots.txt, nor with a
    /// try that will be repeated): a revisit's outcome and the URL's next due time.
    fn store(
        &mut self,
        done: &FetchDone<'_>,
        via: Via<'_>,
        outcome: ReturnCode,
        digest: Option<PayloadDigest>,
        scheduled: Option<&Scheduled<'_>>,
    ) -> io::Result<()>;

    /// The outlinks of a scanned HTML page, for the link graph: `page` is the page's
    /// URL-seen key ([`crate::crawl::url_seen::url_key`]), `targets` the keys of the URLs its
    /// anchors, areas, frames and non-requisite `<link>`s lead to, sorted and distinct. Called
    /// right before the [`Sink::store`] of that page, so a sink keeps them in the page's
    /// order (a durable one makes them durable no later than the page's crawl.log line).
    fn outlinks(&mut self, _page: u64, _targets: &[u64]) {}

    /// Logs a URL that ended without a fetch (robots exclusion, too many redirects,
    /// interrupted in the queue) at `at` on the wall clock (the date of its line; a
    /// `scheduled` has it too); `scheduled` as for [`Sink::store`], for a URL the crawl
    /// will come back to.
    fn log_unfetched(
        &mut self,
        url: &str,
        via: Via<'_>,
        outcome: ReturnCode,
        at: SystemTime,
        scheduled: Option<&Scheduled<'_>>,
    ) -> io::Result<()>;

    /// A URL entered the frontier; `entry` is the crawl's encoding of its queue entry, given
    /// back by [`crate::crawl::Crawl::restore_queued`] when a crawl resumes. A durable sink records it
    /// before the end of the page that linked it (the crawl reports that page's end after its
    /// links), so no link of a page counted as done can be lost.
    fn admitted(&mut self, _url: &str, _entry: &[u8]) {}

    /// A URL this partition admitted is no longer its business: another partition holds it
    /// now (a batch delivered), or it was dropped on arrival. A durable sink records it as
    /// ended, without a crawl.log line (the owner logs the URL's outcome).
    fn released(&mut self, _url: &str) {}

    /// The crawl's per-host state (robots.txt rules, next-contact times: its own encoding,
    /// given back by [`crate::crawl::Crawl::restore_hosts`]), to replace the one saved before.
    /// Sent every [`crate::crawl::CrawlConfig::save_hosts_every`] and at a stop.
    fn hosts_saved(&mut self, _state: &[u8]) -> io::Result<()> {
        Ok(())
    }

    /// Makes what was stored so far readable by others (crawl.log, the WARC files); the run
    /// calls it now and then.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }

    /// A position after every URL event recorded so far: once [`Sink::committed`] reaches
    /// it, they survive a kill. A cluster node acknowledges the URLs it received then.
    fn journal_mark(&mut self) -> io::Result<u64> {
        Ok(0)
    }

    /// How far the URL events are committed (see [`Sink::journal_mark`]).
    fn committed(&self) -> u64 {
        u64::MAX
    }
}

/// One line of what a [`MemorySink`] was told.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Logged {
    pub url: String,
    pub referrer: Option<String>,
    pub hop: Hop,
    pub outcome: ReturnCode,
    /// HTTP status, 0 without a response.
    pub status: u16,
    /// Whether a response was stored (a WARC record would have been written).
    pub stored: bool,
    /// A revisit's outcome, and when the URL is due again (`None`: not a URL's end).
    pub seen: Option<Seen>,
    pub due: Option<u64>,
}

/// A sink that keeps every line in memory, for tests of crawl policy without files.
#[derive(Debug, Default)]
pub struct MemorySink {
    pub lines: Vec<Logged>,
    /// The last per-host state saved.
    pub hosts: Option<Vec<u8>>,
    /// Each page's outlinks: the index its line was about to get in `lines`, its key, the
    /// targets' keys.
    pub outlinks: Vec<(usize, u64, Vec<u64>)>,
}

impl Sink for MemorySink {
    fn store(
        &mut self,
        done: &FetchDone<'_>,
        via: Via<'_>,
        outcome: ReturnCode,
        _digest: Option<PayloadDigest>,
        scheduled: Option<&Scheduled<'_>>,
    ) -> io::Result<()> {
        self.lines.push(Logged {
            url: done.request.url.to_string(),
            referrer: via.referrer.map(str::to_string),
            hop: via.hop,
            outcome,
            status: done.status(),
            stored: done.head.is_some(),
            seen: scheduled.map(|s| s.seen),
            due: scheduled.map(|s| s.due),
        });
        Ok(())
    }

    fn log_unfetched(
        &mut self,
        url: &str,
        via: Via<'_>,
        outcome: ReturnCode,
        _at: SystemTime,
        scheduled: Option<&Scheduled<'_>>,
    ) -> io::Result<()> {
        self.lines.push(Logged {
            url: url.to_string(),
            referrer: via.referrer.map(str::to_string),
            hop: via.hop,
            outcome,
            status: 0,
            stored: false,
            seen: scheduled.map(|s| s.seen),
            due: scheduled.map(|s| s.due),
        });
        Ok(())
    }

    fn outlinks(&mut self, page: u64, targets: &[u64]) {
        self.outlinks
            .push((self.lines.len(), page, targets.to_vec()));
    }

    fn hosts_saved(&mut self, state: &[u8]) -> io::Result<()> {
        self.hosts = Some(state.to_vec());
        Ok(())
    }
}
