//! The crawl layer: turns the fetcher into a crawler (DESIGN §5–6).
//!
//! [`Crawl`] is a [`FetchSource`]: the event loop asks it for the next URL and hands every
//! finished fetch back. Around the fetcher it keeps:
//!
//! ```text
//! fetch_done ─► store (WARC, crawl.log) ─► content seen? ─► scan links ─► normalize
//!   ─► URL filter ─► [host splitter] ─► URL seen? ─► frontier ─► robots check ─► next_fetch
//! ```
//!
//! robots.txt is checked immediately before a URL is fetched, not when it is queued; a host's
//! robots.txt is fetched through the same loop (as the host's first request, so it is spaced
//! like any other). The place marked *host splitter* in [`Crawl::admit`] is where a
//! distributed crawl will send URLs of hosts owned by other nodes.

pub mod frontier;
pub mod url_filter;
pub mod url_seen;
pub mod urlnorm;

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use slab::Slab;
use url::Url;

use crate::fetcher::event_loop::{FetchSource, Next};
use crate::fetcher::fetch::{FetchDone, FetchRequest};
use crate::links::{self, Links};
use crate::robots::{Check, FetchResult, RobotsCache};
use crate::store::output::Output;
use crate::ReturnCode;
use frontier::{BackQueueId, Frontier, FrontierConfig, Pop};
use url_filter::{FilterConfig, Reject, UrlFilter};
use url_seen::{url_key, UrlSeen};
use urlnorm::origin_key;

/// Redirect hops followed from the URL first queued.
pub const MAX_REDIRECTS: u8 = 10;
/// Redirect hops followed for robots.txt (RFC 9309 asks for at least five).
pub const MAX_ROBOTS_REDIRECTS: u8 = 5;
/// robots.txt fetch failures (5xx, 429, unreachable) after which an origin's URLs are
/// excluded rather than waited for: "disallow all for now" must not stall a crawl forever.
pub const MAX_ROBOTS_FAILURES: u8 = 3;
/// How long robots.txt rules are cached.
pub const ROBOTS_MAX_AGE: Duration = Duration::from_secs(24 * 3600);
/// First retry delay after a failed robots.txt fetch (doubles per failure).
pub const ROBOTS_RETRY: Duration = Duration::from_secs(10);
/// Origins whose robots rules are cached at once.
pub const ROBOTS_CACHE_CAPACITY: usize = 100_000;
/// Front-queue priorities: depth 0 (seeds), 1, 2, and everything deeper.
pub const PRIORITIES: usize = 4;
/// Frontier pops examined in one `next_fetch` call before yielding to the loop (URLs
/// excluded by robots are consumed without a fetch).
const MAX_POPS_PER_CALL: usize = 256;
/// Host names queued for DNS prefetch at once.
const MAX_PREFETCH_QUEUE: usize = 10_000;

#[derive(Clone, Debug)]
pub struct CrawlConfig {
    pub filter: FilterConfig,
    pub max_pages: Option<u64>,
    pub max_time: Option<Duration>,
    /// Minimum gap between two requests to one host.
    pub delay: Duration,
    /// Gap ≥ this × the duration of the host's last fetch.
    pub delay_factor: f64,
    /// Cap on a robots.txt Crawl-delay.
    pub max_crawl_delay: Duration,
    pub ignore_robots: bool,
    /// Our robots.txt product token.
    pub product_token: String,
    /// Back queues of the frontier (≈ 3 × connections).
    pub back_queues: usize,
}

/// A URL waiting in the frontier.
#[derive(Clone, Debug)]
struct Entry {
    url: Url,
    depth: u32,
    referrer: Option<Arc<str>>,
    hops: u8,
}

/// What a fetch in flight is for.
enum Job {
    Page {
        entry: Entry,
        queue: BackQueueId,
    },
    Robots {
        origin: String,
        queue: BackQueueId,
        hops: u8,
    },
}

/// The crawl's own counters (the fetch counters live in the event loop).
#[derive(Clone, Debug, Default)]
pub struct CrawlCounters {
    pub pages_fetched: u64,
    pub robots_fetched: u64,
    pub links_found: u64,
    pub urls_admitted: u64,
    /// Links dropped because their URL was already seen.
    pub duplicate_urls: u64,
    /// Pages whose content was identical to an earlier page (links not scanned again).
    pub duplicate_content: u64,
    pub robots_excluded: u64,
    pub redirects_followed: u64,
    pub too_many_redirects: u64,
    /// Links that did not normalize (bad syntax, non-http schemes).
    pub bad_links: u64,
    /// Per-stage time, summed over fetches: latency of each network stage (stages of
    /// different fetches overlap), and loop time spent scanning and storing.
    pub stages: StageTimes,
}

/// Where a crawl's time goes (DESIGN §7's budget, measured).
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

pub struct Crawl {
    config: CrawlConfig,
    frontier: Frontier<Entry>,
    filter: UrlFilter,
    seen: UrlSeen,
    content_seen: HashSet<[u8; 20]>,
    robots: RobotsCache,
    robots_failures: HashMap<String, u8>,
    inflight: Slab<Job>,
    /// Fetches to issue before anything from the frontier (robots.txt redirect hops).
    ready: VecDeque<FetchRequest>,
    links: Links,
    output: Output,
    prefetch: VecDeque<String>,
    hosts_seen: HashSet<String>,
    counters: CrawlCounters,
    pages_issued: u64,
    deadline: Option<Instant>,
    /// First storage error: the run stops and reports it.
    pub io_error: Option<std::io::Error>,
}

impl Crawl {
    pub fn new(config: CrawlConfig, output: Output, now: Instant) -> Crawl {
        Crawl {
            frontier: Frontier::new(&FrontierConfig {
                priorities: PRIORITIES,
                back_queues: config.back_queues,
            }),
            filter: UrlFilter::new(config.filter.clone()),
            seen: UrlSeen::new(),
            content_seen: HashSet::new(),
            robots: RobotsCache::new(
                &config.product_token,
                ROBOTS_MAX_AGE,
                ROBOTS_RETRY,
                ROBOTS_CACHE_CAPACITY,
            ),
            robots_failures: HashMap::new(),
            inflight: Slab::new(),
            ready: VecDeque::new(),
            links: Links::new(),
            output,
            prefetch: VecDeque::new(),
            hosts_seen: HashSet::new(),
            counters: CrawlCounters::default(),
            pages_issued: 0,
            deadline: config.max_time.map(|t| now + t),
            io_error: None,
            config,
        }
    }

    /// Adds a seed: it defines the scope and enters the frontier at depth 0.
    pub fn add_seed(&mut self, url: Url) {
        self.filter.add_seed(&url);
        self.admit(url, 0, None, 0);
    }

    pub fn counters(&self) -> &CrawlCounters {
        &self.counters
    }

    pub fn frontier_len(&self) -> usize {
        self.frontier.len()
    }

    pub fn urls_seen(&self) -> usize {
        self.seen.len()
    }

    pub fn seen_bytes_per_url(&self) -> f64 {
        self.seen.bytes_used() as f64 / self.seen.len().max(1) as f64
    }

    pub fn rejections(&self) -> &[(Reject, u64)] {
        self.filter.rejections()
    }

    pub fn output(&mut self) -> &mut Output {
        &mut self.output
    }

    pub fn into_output(self) -> Output {
        self.output
    }

    /// A URL found on a page (or a seed, or a redirect target): filter, de-duplicate, queue.
    fn admit(&mut self, url: Url, depth: u32, referrer: Option<Arc<str>>, hops: u8) {
        if self.filter.check(&url, depth).is_err() {
            return; // counted by the filter, by reason
        }
        // Host splitter goes here: a distributed crawl forwards URLs of hosts owned by other
        // nodes (in batches) before its own URL-seen test.
        if !self.seen.insert(url_key(&url)) {
            self.counters.duplicate_urls += 1;
            return;
        }
        self.filter.admitted(&url);
        self.counters.urls_admitted += 1;
        let host = url.host_str().unwrap_or_default().to_string();
        if self.hosts_seen.insert(host.clone()) && self.prefetch.len() < MAX_PREFETCH_QUEUE {
            self.prefetch.push_back(host.clone());
        }
        let priority = depth as usize;
        self.frontier.push(
            &host,
            priority,
            Entry {
                url,
                depth,
                referrer,
                hops,
            },
        );
    }

    fn limits_reached(&self, now: Instant) -> bool {
        self.config
            .max_pages
            .is_some_and(|max| self.pages_issued >= max)
            || self.deadline.is_some_and(|d| now >= d)
    }

    /// The gap before the host may be contacted again (DESIGN §6).
    fn gap(&self, done: &FetchDone<'_>, crawl_delay: Option<Duration>) -> Duration {
        let t = done.timings;
        let server_time = t.connect + t.first_byte + t.receive;
        let by_factor = server_time.mul_f64(self.config.delay_factor.max(0.0));
        let by_robots = crawl_delay
            .map(|d| d.min(self.config.max_crawl_delay))
            .unwrap_or(Duration::ZERO);
        self.config.delay.max(by_factor).max(by_robots)
    }

    fn exclude(&mut self, entry: &Entry) {
        self.counters.robots_excluded += 1;
        let referrer = entry.referrer.as_deref();
        if let Err(e) =
            self.output
                .record_unfetched(entry.url.as_str(), referrer, ReturnCode::RobotsExcluded)
        {
            self.io_error.get_or_insert(e);
        }
    }

    fn issue(&mut self, job: Job, url: Url) -> Next {
        let tag = self.inflight.insert(job) as u64;
        Next::Fetch(FetchRequest { url, tag })
    }

    fn robots_done(
        &mut self,
        done: &FetchDone<'_>,
        origin: String,
        queue: BackQueueId,
        hops: u8,
        now: Instant,
    ) {
        self.counters.robots_fetched += 1;
        if let Err(e) = self.output.record(done, None) {
            self.io_error.get_or_insert(e);
        }
        let status = done.status();
        if done.outcome.is_success() && (300..400).contains(&status) && hops < MAX_ROBOTS_REDIRECTS
        {
            let target = done
                .head
                .and_then(|h| h.location())
                .and_then(|loc| urlnorm::normalize(&done.request.url, loc).ok());
            if let Some(target) = target {
                // Rules found there apply to the original origin; the host stays busy.
                let job = Job::Robots {
                    origin,
                    queue,
                    hops: hops + 1,
                };
                let tag = self.inflight.insert(job) as u64;
                self.ready.push_back(FetchRequest { url: target, tag });
                return;
            }
        }
        // A robots.txt over the body limit still has its first part parsed (RFC 9309 asks
        // for at least 500 KiB), when that part is plain text rather than a cut-off encoding.
        let cut_but_usable = done.outcome == ReturnCode::HttpBodyTooLarge
            && (200..300).contains(&status)
            && done.head.is_some_and(|h| {
                h.content_encodings
                    .iter()
                    .all(|c| *c == crate::http::ContentCoding::Identity)
            });
        let result =
            if (done.outcome.is_success() && !(300..400).contains(&status)) || cut_but_usable {
                let keep = done.content.len().min(crate::robots::MAX_ROBOTS_BYTES);
                FetchResult::Status {
                    status,
                    body: done.content[..keep].to_vec(),
                }
            } else {
                FetchResult::Unreachable
            };
        let failed = match &result {
            FetchResult::Status { status, .. } => *status == 429 || *status >= 500,
            FetchResult::Unreachable => true,
        };
        if failed {
            *self.robots_failures.entry(origin.clone()).or_insert(0) += 1;
        } else {
            self.robots_failures.remove(&origin);
        }
        self.robots.fetch_done(&origin, result, now);
        let gap = self.gap(done, self.robots.crawl_delay(&origin));
        self.frontier.done(queue, now, gap);
    }

    fn page_done(&mut self, done: &FetchDone<'_>, entry: Entry, queue: BackQueueId, now: Instant) {
        self.counters.pages_fetched += 1;
        let origin = origin_key(&entry.url);
        let gap = self.gap(done, self.robots.crawl_delay(&origin));
        self.frontier.done(queue, now, gap);
        let store_started = Instant::now();
        let md5 = crate::store::output::content_digest(done);
        // Content seen: an exact duplicate of an earlier 2xx page is stored and logged as
        // such, and its links are not scanned again.
        let ok_html = done.outcome.is_success()
            && done
                .head
                .is_some_and(|h| (200..300).contains(&h.status) && is_html(h.content_type()));
        let duplicate = ok_html && md5.is_some_and(|d| !self.content_seen.insert(d));
        let outcome = if duplicate {
            self.counters.duplicate_content += 1;
            ReturnCode::DuplicateContent
        } else {
            done.outcome
        };
        if let Err(e) = self
            .output
            .record_as(done, entry.referrer.as_deref(), outcome, md5)
        {
            self.io_error.get_or_insert(e);
        }
        let scan_started = Instant::now();
        self.counters.stages.store += scan_started - store_started;
        if !done.outcome.is_success() {
            return;
        }
        let Some(head) = done.head else {
            return;
        };
        if (300..400).contains(&head.status) {
            if let Some(loc) = head.location() {
                match urlnorm::normalize(&entry.url, loc) {
                    Ok(target) if entry.hops >= MAX_REDIRECTS => {
                        self.counters.too_many_redirects += 1;
                        if let Err(e) = self.output.record_unfetched(
                            target.as_str(),
                            Some(entry.url.as_str()),
                            ReturnCode::TooManyRedirects,
                        ) {
                            self.io_error.get_or_insert(e);
                        }
                    }
                    Ok(target) => {
                        self.counters.redirects_followed += 1;
                        let from: Arc<str> = Arc::from(entry.url.as_str());
                        self.admit(target, entry.depth, Some(from), entry.hops + 1);
                    }
                    Err(_) => self.counters.bad_links += 1,
                }
            }
            return;
        }
        if !ok_html || duplicate {
            return;
        }
        self.scan_links(done.content, &entry);
        self.counters.stages.scan += scan_started.elapsed();
    }

    fn scan_links(&mut self, html: &[u8], entry: &Entry) {
        let mut found = std::mem::take(&mut self.links);
        links::scan(html, &mut found);
        let base = found
            .base()
            .and_then(|b| urlnorm::normalize(&entry.url, b).ok())
            .unwrap_or_else(|| entry.url.clone());
        let referrer: Arc<str> = Arc::from(entry.url.as_str());
        for (_, href) in found.iter() {
            self.counters.links_found += 1;
            match urlnorm::normalize(&base, href) {
                Ok(url) => self.admit(url, entry.depth + 1, Some(referrer.clone()), 0),
                Err(_) => self.counters.bad_links += 1,
            }
        }
        self.links = found;
    }
}

fn is_html(content_type: Option<&[u8]>) -> bool {
    match content_type {
        None => true, // servers that omit it mostly serve HTML; the scanner is safe on anything
        Some(ct) => {
            let ct = ct.trim_ascii_start();
            ct.len() >= 9 && ct[..9].eq_ignore_ascii_case(b"text/html")
                || ct.len() >= 21 && ct[..21].eq_ignore_ascii_case(b"application/xhtml+xml")
        }
    }
}

impl FetchSource for Crawl {
    fn next_fetch(&mut self, now: Instant) -> Next {
        if let Some(req) = self.ready.pop_front() {
            return Next::Fetch(req);
        }
        if self.io_error.is_some() || self.limits_reached(now) {
            return Next::Done;
        }
        for _ in 0..MAX_POPS_PER_CALL {
            let (queue, entry) = match self.frontier.pop(now) {
                Pop::Ready { queue, item, .. } => (queue, item),
                Pop::Wait(t) => return Next::Wait(t),
                Pop::Busy => return Next::Idle,
                Pop::Empty if self.inflight.is_empty() => return Next::Done,
                Pop::Empty => return Next::Idle,
            };
            if self.config.ignore_robots {
                self.pages_issued += 1;
                let url = entry.url.clone();
                return self.issue(Job::Page { entry, queue }, url);
            }
            let origin = origin_key(&entry.url);
            if self.robots_failures.get(&origin).copied().unwrap_or(0) >= MAX_ROBOTS_FAILURES {
                self.exclude(&entry);
                self.frontier.done(queue, now, Duration::ZERO);
                continue;
            }
            match self
                .robots
                .check(&origin, crate::http::path_and_query(&entry.url), now)
            {
                Check::Allowed => {
                    self.pages_issued += 1;
                    let url = entry.url.clone();
                    return self.issue(Job::Page { entry, queue }, url);
                }
                Check::Disallowed => {
                    self.exclude(&entry);
                    // No request was made: the host's spacing is unchanged.
                    self.frontier.done(queue, now, Duration::ZERO);
                }
                Check::NeedFetch => {
                    let robots_url = entry.url.join("/robots.txt");
                    self.frontier.push_front(queue, entry);
                    match robots_url {
                        Ok(url) => {
                            let job = Job::Robots {
                                origin,
                                queue,
                                hops: 0,
                            };
                            return self.issue(job, url);
                        }
                        Err(_) => {
                            // Unreachable for an http(s) URL with a host; treat as unreachable.
                            self.robots
                                .fetch_done(&origin, FetchResult::Unreachable, now);
                            self.frontier.done(queue, now, Duration::ZERO);
                        }
                    }
                }
                Check::Pending => {
                    // In back-off after a failed robots.txt fetch: come back when it may retry.
                    self.frontier.push_front(queue, entry);
                    let retry = self
                        .robots
                        .next_retry(&origin)
                        .map_or(ROBOTS_RETRY, |t| t.saturating_duration_since(now));
                    self.frontier
                        .done(queue, now, retry.max(Duration::from_millis(1)));
                }
            }
        }
        Next::Idle
    }

    fn fetch_done(&mut self, done: &FetchDone<'_>) {
        let now = Instant::now();
        let t = done.timings;
        let stages = &mut self.counters.stages;
        stages.dns += t.dns;
        stages.wait += t.wait;
        stages.connect += t.connect;
        stages.first_byte += t.first_byte;
        stages.receive += t.receive;
        let key = done.request.tag as usize;
        let Some(job) = self.inflight.try_remove(key) else {
            return; // not ours: cannot happen, since every request we issue carries its key
        };
        match job {
            Job::Page { entry, queue } => self.page_done(done, entry, queue, now),
            Job::Robots {
                origin,
                queue,
                hops,
            } => self.robots_done(done, origin, queue, hops, now),
        }
    }

    fn poll_prefetch(&mut self) -> Option<String> {
        self.prefetch.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_content_types() {
        assert!(is_html(None));
        assert!(is_html(Some(b"text/html")));
        assert!(is_html(Some(b"Text/HTML; charset=utf-8")));
        assert!(is_html(Some(b"application/xhtml+xml")));
        assert!(!is_html(Some(b"text/plain")));
        assert!(!is_html(Some(b"image/png")));
        assert!(!is_html(Some(b"text/htm")));
    }
}
