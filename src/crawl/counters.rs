//! What a crawl counts: its sink lines by outcome ([`LineTally`]), its own events
//! ([`CrawlCounters`]) and where its time goes ([`StageTimes`]): what a run's summary,
//! stats.json, exit status and the bench's stage line are made from.

use std::time::Duration;

use crate::fetcher::stats::Outcomes;
use crate::ReturnCode;

/// Sink lines counted by outcome, with the HTTP error statuses among the responses: what a
/// run's summary and exit status are computed from. A try (`RetryLater`: a 429 or 503 whose
/// URL is fetched again) is not a URL's answer: it is counted apart, in `tries`.
#[derive(Clone, Debug, Default)]
pub struct LineTally {
    pub outcomes: Outcomes,
    /// Lines of complete responses with status 400 or more (their outcome is `Success`).
    pub http_errors: u64,
    /// `RetryLater` lines: not among [`LineTally::lines`].
    pub tries: u64,
}

impl LineTally {
    pub fn add(&mut self, outcome: ReturnCode, status: u16) {
        if outcome == ReturnCode::RetryLater {
            self.tries += 1;
            return;
        }
        self.outcomes.add(outcome);
        if outcome.is_success() && status >= 400 {
            self.http_errors += 1;
        }
    }

    pub fn lines(&self) -> u64 {
        self.outcomes.total()
    }

    pub fn merge(&mut self, other: &LineTally) {
        self.outcomes.merge(&other.outcomes);
        self.http_errors += other.http_errors;
        self.tries += other.tries;
    }
}

impl CrawlCounters {
    /// Adds another partition's counters to these.
    pub fn merge(&mut self, o: &CrawlCounters) {
        self.url_lines.merge(&o.url_lines);
        self.robots_lines.merge(&o.robots_lines);
        for (a, b) in [
            (&mut self.pages_fetched, o.pages_fetched),
            (&mut self.left_for_resume, o.left_for_resume),
            (&mut self.robots_fetched, o.robots_fetched),
            (&mut self.links_found, o.links_found),
            (&mut self.urls_admitted, o.urls_admitted),
            (&mut self.duplicate_urls, o.duplicate_urls),
            (&mut self.duplicate_content, o.duplicate_content),
            (&mut self.robots_excluded, o.robots_excluded),
            (&mut self.redirects_followed, o.redirects_followed),
            (&mut self.urls_readmitted, o.urls_readmitted),
            (&mut self.too_many_redirects, o.too_many_redirects),
            (&mut self.blocked_without_fetch, o.blocked_without_fetch),
            (&mut self.robots_unreachable, o.robots_unreachable),
            (&mut self.bad_links, o.bad_links),
            (&mut self.pages_scan_truncated, o.pages_scan_truncated),
            (&mut self.links_over_page_cap, o.links_over_page_cap),
            (&mut self.urls_forwarded, o.urls_forwarded),
            (&mut self.urls_received, o.urls_received),
            (&mut self.received_duplicates, o.received_duplicates),
        ] {
            *a += b;
        }
        let (s, t) = (&mut self.stages, &o.stages);
        for (a, b) in [
            (&mut s.dns, t.dns),
            (&mut s.wait, t.wait),
            (&mut s.connect, t.connect),
            (&mut s.first_byte, t.first_byte),
            (&mut s.receive, t.receive),
            (&mut s.scan, t.scan),
            (&mut s.store, t.store),
        ] {
            *a += b;
        }
    }
}

/// The crawl's own counters (the fetch counters live in the event loop).
#[derive(Clone, Debug, Default)]
pub struct CrawlCounters {
    /// The lines of seeds and admitted URLs (robots.txt lines are not among them).
    pub url_lines: LineTally,
    /// The lines of robots.txt fetches (one per fetch or redirect hop).
    pub robots_lines: LineTally,
    pub pages_fetched: u64,
    /// Fetches cut by a stop in a resumable crawl: not ended, fetched again on resume.
    pub left_for_resume: u64,
    pub robots_fetched: u64,
    pub links_found: u64,
    pub urls_admitted: u64,
    /// Links dropped because their URL was already seen.
    pub duplicate_urls: u64,
    /// Pages whose content was identical to an earlier page (links not scanned again).
    pub duplicate_content: u64,
    pub robots_excluded: u64,
    pub redirects_followed: u64,
    /// URLs queued again after a response set a cookie and redirected back to its host.
    pub urls_readmitted: u64,
    pub too_many_redirects: u64,
    /// URLs ended as `PrivateAddressBlocked` without a request, their host being blocked.
    pub blocked_without_fetch: u64,
    /// URLs ended as `RobotsUnreachable`.
    pub robots_unreachable: u64,
    /// Links that did not normalize (bad syntax, non-http schemes).
    pub bad_links: u64,
    /// Pages whose content was longer than the scan limit (`--max-scan-bytes`) or spilled:
    /// links past the scanned part were not followed.
    pub pages_scan_truncated: u64,
    /// Links not considered because their page had already given `max_links_per_page`.
    pub links_over_page_cap: u64,
    /// URLs sent to the partitions owning their hosts (a partitioned crawl), and received.
    pub urls_forwarded: u64,
    pub urls_received: u64,
    /// Received URLs this partition had seen already.
    pub received_duplicates: u64,
    /// Per-stage time, summed over fetches: latency of each network stage (stages of
    /// different fetches overlap), and loop time spent scanning and storing.
    pub stages: StageTimes,
}

/// Where a crawl's time goes (ARCHITECTURE §9, measured).
#[derive(Clone, Copy, Debug, Default)]
pub struct StageTimes {
    pub dns: Duration,
    pub wait: Duration,
    pub connect: Duration,
    pub first_byte: Duration,
    pub receive: Duration,
    /// Link scanning, normalization, filtering and queueing of the links found.
    pub scan: Duration,
    /// WARC records, crawl.log line and content digests.
    pub store: Duration,
}
