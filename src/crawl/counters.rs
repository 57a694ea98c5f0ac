//! What a crawl counts: its sink lines by outcome ([`LineTally`]), its own events
//! ([`CrawlCounters`]) and where its fetches' time goes ([`StageTimes`]): what a run's
//! summary, stats.json, exit status and the bench's stage line are made from.

use std::time::Duration;

use super::page_shapes::PageShapes;
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
    /// Lines with a response, by status class: 1xx to 5xx (tries included: a 429 is one).
    pub status_classes: [u64; 5],
}

impl LineTally {
    pub fn add(&mut self, outcome: ReturnCode, status: u16) {
        if let Some(n) = self
            .status_classes
            .get_mut((status / 100).wrapping_sub(1) as usize)
        {
            *n += 1;
        }
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
        for (a, b) in self.status_classes.iter_mut().zip(other.status_classes) {
            *a += b;
        }
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
            (&mut self.pages_fingerprinted, o.pages_fingerprinted),
            (&mut self.near_duplicates, o.near_duplicates),
            (&mut self.robots_excluded, o.robots_excluded),
            (&mut self.redirects_followed, o.redirects_followed),
            (&mut self.urls_readmitted, o.urls_readmitted),
            (&mut self.too_many_redirects, o.too_many_redirects),
            (&mut self.blocked_without_fetch, o.blocked_without_fetch),
            (&mut self.robots_unreachable, o.robots_unreachable),
            (&mut self.auth_retries, o.auth_retries),
            (&mut self.bad_links, o.bad_links),
            (&mut self.pages_scan_truncated, o.pages_scan_truncated),
            (&mut self.links_over_page_cap, o.links_over_page_cap),
            (&mut self.links_nofollow, o.links_nofollow),
            (&mut self.pages_nofollow, o.pages_nofollow),
            (&mut self.pages_noindex, o.pages_noindex),
            (&mut self.urls_forwarded, o.urls_forwarded),
            (&mut self.urls_received, o.urls_received),
            (&mut self.received_duplicates, o.received_duplicates),
            (&mut self.revisits.fetched, o.revisits.fetched),
            (&mut self.revisits.not_modified, o.revisits.not_modified),
            (&mut self.revisits.unchanged, o.revisits.unchanged),
            (&mut self.revisits.changed, o.revisits.changed),
            (&mut self.revisits.bytes_saved, o.revisits.bytes_saved),
            (&mut self.revisits.taken_due, o.revisits.taken_due),
            (&mut self.revisits.learning, o.revisits.learning),
            (&mut self.revisits.for_freshness, o.revisits.for_freshness),
            (&mut self.revisits.for_discovery, o.revisits.for_discovery),
            (&mut self.revisits.floor, o.revisits.floor),
            (&mut self.revisits.first_fetches, o.revisits.first_fetches),
            (&mut self.revisits.planned, o.revisits.planned),
        ] {
            *a += b;
        }
        self.revisits.age_secs += o.revisits.age_secs;
        self.revisits.planned_freshness += o.revisits.planned_freshness;
        self.focus.merge(&o.focus);
        self.shapes.merge(&o.shapes);
        let (d, e) = (&mut self.discovery, &o.discovery);
        for (a, b) in [
            (&mut d.sitemaps_read, e.sitemaps_read),
            (&mut d.sitemap_urls, e.sitemap_urls),
            (&mut d.sitemaps_over_budget, e.sitemaps_over_budget),
            (&mut d.urls_over_budget, e.urls_over_budget),
            (&mut d.feeds_read, e.feeds_read),
            (&mut d.feed_items, e.feed_items),
            (&mut d.unreadable, e.unreadable),
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
    /// Pages whose main text got a simhash (`crawl::near_dups`).
    pub pages_fingerprinted: u64,
    /// Of those, pages within distance 3 of an earlier page of the partition.
    pub near_duplicates: u64,
    pub robots_excluded: u64,
    pub redirects_followed: u64,
    /// URLs queued again after a response set a cookie and redirected back to its host.
    pub urls_readmitted: u64,
    pub too_many_redirects: u64,
    /// URLs ended as `PrivateAddressBlocked` without a request, their host being blocked.
    pub blocked_without_fetch: u64,
    /// URLs ended as `RobotsUnreachable`.
    pub robots_unreachable: u64,
    /// 401 challenges answered by fetching the URL again with credentials (`crawl::auth`).
    pub auth_retries: u64,
    /// Links that did not normalize (bad syntax, non-http schemes).
    pub bad_links: u64,
    /// Pages whose content was longer than the scan limit (`--max-scan-bytes`) or spilled:
    /// links past the scanned part were not followed.
    pub pages_scan_truncated: u64,
    /// Links not considered because their page had already given `max_links_per_page`.
    pub links_over_page_cap: u64,
    /// Links not followed as robots directives asked (their page's `nofollow`, their own
    /// `rel="nofollow"`).
    pub links_nofollow: u64,
    /// Scanned pages whose robots directives said `nofollow`.
    pub pages_nofollow: u64,
    /// Pages whose robots directives said `noindex` (marked in crawl.log, left out of the
    /// text outputs).
    pub pages_noindex: u64,
    /// URLs sent to the partitions owning their hosts (a partitioned crawl), and received.
    pub urls_forwarded: u64,
    pub urls_received: u64,
    /// Received URLs this partition had seen already.
    pub received_duplicates: u64,
    /// What revisits found (a URL fetched again with what its last fetch left).
    pub revisits: RevisitCounters,
    /// Sitemaps and feeds read, and what they brought.
    pub discovery: DiscoveryCounters,
    /// A focused crawl's relevance scores.
    pub focus: FocusCounters,
    /// Pages by MIME type and depth (for `spinneret report`).
    pub shapes: PageShapes,
    /// Per-stage time, summed over fetches: latency of each network stage (stages of
    /// different fetches overlap). The loop time a completion costs is its caller's to
    /// measure (the crawl reads no clock): `Driver::source_time`.
    pub stages: StageTimes,
}

/// A focused crawl's pages, and the harvest rate over the crawl (ARCHITECTURE §7a).
#[derive(Clone, Debug, Default)]
pub struct FocusCounters {
    /// Pages scored, and of them those at or above [`FocusCounters::RELEVANT`].
    pub scored: u64,
    pub relevant: u64,
    /// (pages scored, relevant among them) every [`FocusCounters::STEP`] pages scored:
    /// the harvest rate over time. Past [`FocusCounters::MAX_POINTS`] points every other one
    /// is dropped and the step doubles, so the curve stays bounded however long the crawl.
    pub curve: Vec<(u64, u64)>,
    step: u64,
}

impl FocusCounters {
    /// The score from which a page counts as on the topic.
    pub const RELEVANT: f32 = 0.2;
    pub const STEP: u64 = 100;
    pub const MAX_POINTS: usize = 200;

    pub fn add(&mut self, score: f32) {
        self.scored += 1;
        self.relevant += u64::from(score >= Self::RELEVANT);
        let step = self.step.max(Self::STEP);
        if self.scored % step == 0 {
            self.curve.push((self.scored, self.relevant));
            if self.curve.len() > Self::MAX_POINTS {
                let kept: Vec<_> = self.curve.iter().copied().skip(1).step_by(2).collect();
                self.curve = kept;
                self.step = step * 2;
            }
        }
    }

    /// The share of scored pages on the topic.
    pub fn harvest_rate(&self) -> Option<f64> {
        (self.scored > 0).then(|| self.relevant as f64 / self.scored as f64)
    }

    /// Another partition's: totals add, the curve is this partition's (one loop's view).
    fn merge(&mut self, o: &FocusCounters) {
        self.scored += o.scored;
        self.relevant += o.relevant;
        if self.curve.is_empty() {
            self.curve = o.curve.clone();
        }
    }
}

/// What discovery beyond links read and brought (ARCHITECTURE §7a).
#[derive(Clone, Debug, Default)]
pub struct DiscoveryCounters {
    /// Sitemap files read, and the page URLs they listed that were offered for admission.
    pub sitemaps_read: u64,
    pub sitemap_urls: u64,
    /// Sitemaps not fetched and listed URLs dropped: their host's budget was spent.
    pub sitemaps_over_budget: u64,
    pub urls_over_budget: u64,
    /// Feeds read, and their items offered for admission.
    pub feeds_read: u64,
    pub feed_items: u64,
    /// Sitemaps and feeds whose reading ended in an error (malformed, too large, a bomb):
    /// what was read before stands.
    pub unreadable: u64,
}

/// What the revisits of a crawl found (ARCHITECTURE §9c).
#[derive(Clone, Debug, Default)]
pub struct RevisitCounters {
    /// URLs fetched again with what their last fetch left (a previous crawl's, or this
    /// one's in continuous mode).
    pub fetched: u64,
    /// Of those: `304 Not Modified`, the same payload in full, another payload.
    pub not_modified: u64,
    pub unchanged: u64,
    pub changed: u64,
    /// Payload bytes the 304s did not transfer (the last stored payload's length).
    pub bytes_saved: u64,
    /// URLs a continuous crawl took from the crawl database as due.
    pub taken_due: u64,
    /// The estimated age of the changed pages when revisited, summed (seconds): for a page
    /// that changes at rate λ (its estimate) and was last seen `t` ago, the expected time
    /// since its first unseen change, `t − (1 − e^(−λt))/λ` (Cho & Garcia-Molina's age).
    pub age_secs: f64,
    /// A continuous crawl's revisits by what the host's budget priced them for
    /// (`host_budget::ValueClass`): a page's first revisit (its rate not known yet), keeping
    /// a changing page fresh, finding new URLs (a hub or feed), and the floor (a page never
    /// seen changing, or changing too fast to keep fresh, looked at every --revisit-max or
    /// less often).
    pub learning: u64,
    pub for_freshness: u64,
    pub for_discovery: u64,
    pub floor: u64,
    /// A continuous crawl's first fetches of URLs (the new URLs discovery brought).
    pub first_fetches: u64,
    /// The budget's decisions, and the freshness each expected of its page until the next
    /// visit (`F = (1 − e^(−λI))/(λI)` at the page's estimated rate), summed.
    pub planned: u64,
    pub planned_freshness: f64,
}

impl RevisitCounters {
    /// The share of a continuous crawl's fetches spent on discovery: first fetches of new
    /// URLs and revisits of hubs and feeds for the new URLs they list. `None` before any.
    pub fn discovery_share(&self) -> Option<f64> {
        let all = self.first_fetches + self.fetched;
        (all > 0).then(|| (self.first_fetches + self.for_discovery) as f64 / all as f64)
    }

    /// The mean freshness the budget expects of its pages at the intervals it gave them
    /// (hubs count as fresh). `None` before any decision.
    pub fn planned_freshness(&self) -> Option<f64> {
        (self.planned > 0).then(|| self.planned_freshness / self.planned as f64)
    }

    /// Revisits that compared (a 304, or a full payload against the last one's digest).
    pub fn compared(&self) -> u64 {
        self.not_modified + self.unchanged + self.changed
    }

    /// The estimated collection freshness (Croft et al. §3.2.4): the share of compared
    /// revisits that found the page as last stored, i.e. the share of pages fresh at the
    /// moment the crawl looked. `None` before any.
    pub fn freshness(&self) -> Option<f64> {
        let n = self.compared();
        (n > 0).then(|| (self.not_modified + self.unchanged) as f64 / n as f64)
    }

    /// The estimated mean age of the revisited pages, seconds (fresh pages count 0).
    pub fn mean_age_secs(&self) -> Option<f64> {
        let n = self.compared();
        (n > 0).then(|| self.age_secs / n as f64)
    }
}

/// Where a crawl's fetches spend their time, as the fetcher measured it
/// ([`crate::fetcher::Timings`], summed).
#[derive(Clone, Copy, Debug, Default)]
pub struct StageTimes {
    pub dns: Duration,
    pub wait: Duration,
    pub connect: Duration,
    pub first_byte: Duration,
    pub receive: Duration,
}
