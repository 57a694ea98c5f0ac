//! What the crawl knows of its pages' content ([`PageContent`]): the payload digests it has
//! seen (Mercator's content-seen test: an exact duplicate is stored as such and not scanned
//! again), the partition's near-duplicate index when pages are fingerprinted on the loop
//! (`content::near_dups`), and a focused crawl's topic (`focused`). Per page it returns a
//! verdict ([`Judged`]); the crawl counts and follows by it.

use std::collections::HashSet;
use std::io;

use super::focused::Focus;
use super::CrawlConfig;
use crate::content::near_dups::BoxedSpill;
use crate::content::{NearDups, PagePrint};
use crate::fetcher::PayloadDigest;

/// What the crawl makes of a scanned HTML page's content.
#[derive(Debug, Default)]
pub(super) struct Judged {
    /// A focused crawl's relevance score.
    pub relevance: Option<f32>,
    /// Its main text's sketch and near-duplicate verdict, when taken on the loop.
    pub print: Option<PagePrint>,
    /// The sink is to fingerprint the page, off the loop (`Scheduled::fingerprint`).
    pub ask_sink: bool,
    /// Its links are followed: not with the trap guard on a near-duplicate.
    pub follow_links: bool,
    /// The near-duplicate index could not spill: the run stops and reports it.
    pub error: Option<io::Error>,
}

pub(super) struct PageContent {
    /// Payload digests of 2xx HTML pages seen.
    digests: HashSet<PayloadDigest>,
    /// Main text, sketch and the partition's sketch index, when the crawl fingerprints on
    /// the loop (not `near_dups_in_sink`, or the trap guard on).
    near_dups: NearDups,
    near_dup_ram: usize,
    /// A focused crawl's topic, and its reused buffers.
    focus: Option<Focus>,
    /// Pages are fingerprinted at all (`--no-near-duplicates` turns it off)...
    fingerprint: bool,
    /// ...by the sink, off the loop...
    in_sink: bool,
    /// ...unless a near-duplicate's links are not followed, which needs the verdict here.
    skip_near_duplicate_links: bool,
}

impl PageContent {
    pub fn new(config: &CrawlConfig) -> PageContent {
        PageContent {
            digests: HashSet::new(),
            near_dups: NearDups::new(config.near_dup_ram).with_threshold(config.near_dup_threshold),
            near_dup_ram: config.near_dup_ram,
            focus: config.focus.as_deref().and_then(Focus::new),
            fingerprint: config.near_duplicates,
            in_sink: config.near_dups_in_sink,
            skip_near_duplicate_links: config.skip_near_duplicate_links,
        }
    }

    /// Where the near-duplicate index spills its runs past its RAM.
    pub fn set_near_dup_spill(&mut self, spill: BoxedSpill) {
        self.near_dups.set_spill(self.near_dup_ram, spill);
    }

    /// Content seen: whether an earlier page had this payload (remembered if not).
    pub fn seen_before(&mut self, digest: PayloadDigest) -> bool {
        !self.digests.insert(digest)
    }

    /// A payload a stopped crawl fetched, on resume.
    pub fn restore_digest(&mut self, digest: PayloadDigest) {
        self.digests.insert(digest);
    }

    /// Scores and fingerprints a scanned HTML page of `host` (learning from it): the verdict
    /// says what to log of it and whether its links are followed.
    pub fn judge(&mut self, html: &[u8], host: &[u8]) -> Judged {
        let relevance = self.focus.as_mut().map(|f| f.score(html));
        // Fingerprinted on the loop only when its verdict decides what is followed;
        // otherwise the sink does it, off the loop.
        let ask_sink = self.fingerprint && self.in_sink && !self.skip_near_duplicate_links;
        let (print, error) = if ask_sink || !self.fingerprint {
            (None, None)
        } else {
            let print = self.near_dups.page(html, host);
            (print, self.near_dups.take_error())
        };
        // A near-duplicate's links are mostly its original's: with the trap guard on, they
        // are not followed (the page itself is stored all the same).
        let follow_links =
            !(self.skip_near_duplicate_links && print.is_some_and(|p| p.near_duplicate));
        Judged {
            relevance,
            print,
            ask_sink,
            follow_links,
            error,
        }
    }

    /// A focused crawl's frontier priority for the last judged page's link `href`.
    pub fn priority(&self, href: &[u8]) -> Option<u8> {
        self.focus.as_ref().map(|f| f.priority(href))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::crawl::url_filter::FilterConfig;

    fn config() -> CrawlConfig {
        CrawlConfig::new(FilterConfig::default(), 4)
    }

    fn page(words: &str) -> Vec<u8> {
        format!("<html><body><p>{words}</p></body></html>").into_bytes()
    }

    const TEXT: &str = "the quick brown fox jumps over the lazy dog while the cat watches \
                        from the warm windowsill and the birds sing in the old oak tree";

    #[test]
    fn a_payload_is_seen_once() {
        let mut c = PageContent::new(&config());
        let d = crate::fetcher::digest::of(b"body");
        assert!(!c.seen_before(d));
        assert!(c.seen_before(d));
        let e = crate::fetcher::digest::of(b"other");
        c.restore_digest(e);
        assert!(c.seen_before(e), "a restored digest is seen");
    }

    #[test]
    fn on_the_loop_the_second_copy_is_a_near_duplicate_and_its_links_still_followed() {
        let mut c = PageContent::new(&config());
        let first = c.judge(&page(TEXT), b"a.test");
        assert!(first.print.is_some_and(|p| !p.near_duplicate));
        let second = c.judge(&page(TEXT), b"b.test");
        assert!(second.print.is_some_and(|p| p.near_duplicate));
        assert!(
            second.follow_links,
            "without the trap guard links are followed"
        );
        assert!(!second.ask_sink && second.relevance.is_none());
    }

    #[test]
    fn the_trap_guard_keeps_a_near_duplicate_s_links_and_the_verdict_on_the_loop() {
        let mut c = PageContent::new(&CrawlConfig {
            skip_near_duplicate_links: true,
            near_dups_in_sink: true,
            ..config()
        });
        assert!(c.judge(&page(TEXT), b"a.test").follow_links);
        let again = c.judge(&page(TEXT), b"a.test");
        assert!(
            !again.ask_sink,
            "the verdict decides what is followed: taken here"
        );
        assert!(!again.follow_links);
    }

    #[test]
    fn in_the_sink_or_off_nothing_is_fingerprinted_here() {
        let mut sink = PageContent::new(&CrawlConfig {
            near_dups_in_sink: true,
            ..config()
        });
        let j = sink.judge(&page(TEXT), b"a.test");
        assert!(j.ask_sink && j.print.is_none() && j.follow_links);
        let mut off = PageContent::new(&CrawlConfig {
            near_duplicates: false,
            near_dups_in_sink: true,
            ..config()
        });
        let j = off.judge(&page(TEXT), b"a.test");
        assert!(!j.ask_sink && j.print.is_none());
    }

    #[test]
    fn a_focused_crawl_scores_the_page_and_ranks_its_links() {
        let topic: Arc<[u8]> = Arc::from(&b"fox dog cat birds oak tree"[..]);
        let mut c = PageContent::new(&CrawlConfig {
            focus: Some(topic),
            ..config()
        });
        let j = c.judge(&page(TEXT), b"a.test");
        assert!(j.relevance.is_some_and(|r| r > 0.0));
        assert!(c.priority(b"/anywhere").is_some());
        assert_eq!(PageContent::new(&config()).priority(b"/x"), None);
    }
}
