//! Whether and when a host may be asked for a URL ([`HostGate`], ARCHITECTURE §8): robots.txt
//! (the per-origin cache, its fetches' answers and failures), hosts the address policy
//! refused, the manners sites expect (cookies, "come back later", the hosts slowed down:
//! `manners`), the politeness gap after each fetch, a resumed crawl's hold on its first
//! request, and the hosts seen (their names resolved ahead). The frontier holds a host for
//! the gap; this module decides it. Its state is saved for a resume (`state`).
//!
//! Its verdicts: for a URL about to be fetched, [`Gate`]; for a robots.txt answer,
//! [`RobotsDone`]; for a page's answer, [`Answered`].

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant, SystemTime};

use url::Url;

use super::manners::{says_later, Manners};
use super::urlnorm::{self, origin_key};
use super::CrawlConfig;
use crate::fetcher::FetchDone;
use crate::http::ContentCoding;
use crate::robots::{Check, FetchResult, RobotsCache, MAX_ROBOTS_BYTES};
use crate::ReturnCode;

mod state;
pub use state::{BadHostState, HostsRestored};

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
/// Host names queued for DNS prefetch at once.
const MAX_PREFETCH_QUEUE: usize = 10_000;

/// What may become of a URL about to be fetched, by its host's standing.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Gate {
    /// Fetch it.
    Fetch,
    /// It ends without a request, as this (its host refused by the address policy, excluded
    /// by robots.txt, or its robots.txt unreachable).
    End(ReturnCode),
    /// Its origin's robots.txt first: fetch `url` for `origin`; the URL goes back to the
    /// head of its host's queue.
    Robots { origin: String, url: Url },
    /// Back to the head of its host's queue, the host to wait this long (a robots.txt
    /// retry's back-off).
    Later(Duration),
}

/// What a robots.txt answer means for its origin.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum RobotsDone {
    /// A redirect to follow: fetch `url` for the same origin, one hop more; the host stays
    /// busy.
    Redirect(Url),
    /// The host may be asked again after `gap`. `sitemaps`: the rules came in a 2xx, whose
    /// `Sitemap:` lines ([`rules`]) are read.
    Done { gap: Duration, sitemaps: bool },
}

/// What a page's answer means for its host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Answered {
    /// The host waits this long before its next request.
    pub gap: Duration,
    /// The answer said "later" (429, 503) with tries left: the URL is fetched again after
    /// the gap, and this answer is a try, not its end.
    pub again: bool,
}

pub(super) struct HostGate {
    robots: RobotsCache,
    ignore_robots: bool,
    /// robots.txt fetch failures in a row per origin.
    robots_failures: HashMap<String, u8>,
    /// Hosts the address policy refused: their URLs end at once, without a request.
    blocked_hosts: HashSet<String>,
    /// The first blocked host, until the app takes it to tell the user.
    blocked_notice: Option<String>,
    /// Cookies, and what servers that say "later" asked for.
    manners: Manners,
    /// The gap's parts: `--delay`, `--delay-factor`, the cap on a robots.txt Crawl-delay.
    delay: Duration,
    delay_factor: f64,
    max_crawl_delay: Duration,
    /// No request before this (a resumed crawl's first contact with its hosts).
    hold: Option<Instant>,
    /// Hosts seen, and those of them to resolve ahead.
    hosts_seen: HashSet<String>,
    prefetch: VecDeque<String>,
    /// How often the state is saved, when next, and its reused encoding.
    save_every: Option<Duration>,
    next_save: Option<Instant>,
    saved: Vec<u8>,
}

impl HostGate {
    /// `now` on the crawl's clock is `wall` on the wall clock.
    pub fn new(config: &CrawlConfig, now: Instant, wall: SystemTime) -> HostGate {
        HostGate {
            robots: RobotsCache::new(
                &config.product_token,
                ROBOTS_MAX_AGE,
                ROBOTS_RETRY,
                ROBOTS_CACHE_CAPACITY,
            ),
            ignore_robots: config.ignore_robots,
            robots_failures: HashMap::new(),
            blocked_hosts: HashSet::new(),
            blocked_notice: None,
            // The wall clock, carried on `now` (cookie expiry, HTTP dates): see `manners`.
            manners: Manners::new(&config.manners, now, wall).0,
            delay: config.delay,
            delay_factor: config.delay_factor,
            max_crawl_delay: config.max_crawl_delay,
            hold: None,
            hosts_seen: HashSet::new(),
            prefetch: VecDeque::new(),
            save_every: config.save_hosts_every,
            next_save: config.save_hosts_every.map(|every| now + every),
            saved: Vec::new(),
        }
    }

    /// The wall clock at `now`.
    pub fn wall(&self, now: Instant) -> SystemTime {
        self.manners.wall(now)
    }

    /// No request before `until`.
    pub fn hold_until(&mut self, until: Instant) {
        self.hold = Some(until);
    }

    /// The hold still in force at `now` (lifted once past).
    pub fn held(&mut self, now: Instant) -> Option<Instant> {
        match self.hold {
            Some(t) if now < t => Some(t),
            Some(_) => {
                self.hold = None;
                None
            }
            None => None,
        }
    }

    /// A URL of `host` was queued: a host seen for the first time is resolved ahead.
    pub fn host_queued(&mut self, host: &str) {
        if !self.hosts_seen.contains(host) {
            self.hosts_seen.insert(host.to_string());
            if self.prefetch.len() < MAX_PREFETCH_QUEUE {
                self.prefetch.push_back(host.to_string());
            }
        }
    }

    /// A host name worth resolving ahead.
    pub fn poll_prefetch(&mut self) -> Option<String> {
        self.prefetch.pop_front()
    }

    /// Whether `url` may be fetched now, by its host's standing and its origin's robots.txt.
    pub fn gate(&mut self, url: &Url, now: Instant) -> Gate {
        if self
            .blocked_hosts
            .contains(url.host_str().unwrap_or_default())
        {
            return Gate::End(ReturnCode::PrivateAddressBlocked);
        }
        if self.ignore_robots {
            return Gate::Fetch;
        }
        let origin = origin_key(url);
        if self.robots_failures.get(&origin).copied().unwrap_or(0) >= MAX_ROBOTS_FAILURES {
            return Gate::End(ReturnCode::RobotsUnreachable);
        }
        match self
            .robots
            .check(&origin, crate::http::path_and_query(url), now)
        {
            Check::Allowed => Gate::Fetch,
            Check::Disallowed => Gate::End(ReturnCode::RobotsExcluded),
            Check::NeedFetch => match url.join("/robots.txt") {
                Ok(url) => Gate::Robots { origin, url },
                Err(_) => {
                    // Unreachable for an http(s) URL with a host; treat as unreachable.
                    self.robots
                        .fetch_done(&origin, FetchResult::Unreachable, now);
                    Gate::Later(Duration::ZERO)
                }
            },
            Check::Pending => {
                // In back-off after a failed robots.txt fetch: come back when it may retry.
                let retry = self
                    .robots
                    .next_retry(&origin)
                    .map_or(ROBOTS_RETRY, |t| t.saturating_duration_since(now));
                Gate::Later(retry.max(Duration::from_millis(1)))
            }
        }
    }

    /// The line a robots.txt answer gets: a 429 or 503 is a try while robots.txt will be
    /// asked again (RFC 9309 §2.3.1.3 and §2.3.1.4: "unreachable" for now, rules wait), as
    /// for a page.
    pub fn robots_outcome(&self, origin: &str, done: &FetchDone<'_>) -> ReturnCode {
        let failures = self.robots_failures.get(origin).copied().unwrap_or(0);
        if says_later(done) && failures + 1 < MAX_ROBOTS_FAILURES {
            ReturnCode::RetryLater
        } else {
            done.outcome
        }
    }

    /// Learns what `origin`'s robots.txt fetch (redirect hop `hops`) answered.
    pub fn robots_done(
        &mut self,
        origin: &str,
        done: &FetchDone<'_>,
        hops: u8,
        now: Instant,
    ) -> RobotsDone {
        let at_once = RobotsDone::Done {
            gap: Duration::ZERO,
            sitemaps: false,
        };
        if done.outcome == ReturnCode::Interrupted {
            // The run is stopping: this says nothing about the server.
            return at_once;
        }
        if done.outcome == ReturnCode::PrivateAddressBlocked && hops == 0 {
            // The host itself is refused: robots.txt is not retried, and its URLs end at once.
            self.block(&done.request.url);
            return at_once;
        }
        let status = done.status();
        if done.outcome.is_success() && (300..400).contains(&status) && hops < MAX_ROBOTS_REDIRECTS
        {
            let target = done
                .head
                .and_then(|h| h.location())
                .and_then(|loc| urlnorm::normalize(&done.request.url, loc).ok());
            if let Some(target) = target {
                // Rules found there apply to the original origin.
                return RobotsDone::Redirect(target);
            }
        }
        let result = match rules(done) {
            Some(body) => FetchResult::Status {
                status,
                body: body.to_vec(),
            },
            None => FetchResult::Unreachable,
        };
        let sitemaps =
            matches!(&result, FetchResult::Status { status, .. } if (200..300).contains(status));
        let failed = match &result {
            FetchResult::Status { status, .. } => *status == 429 || *status >= 500,
            FetchResult::Unreachable => true,
        };
        if failed {
            *self.robots_failures.entry(origin.to_string()).or_insert(0) += 1;
        } else {
            self.robots_failures.remove(origin);
        }
        self.robots.fetch_done(origin, result, now);
        if says_later(done) && done.status() == 429 {
            self.manners
                .slow_down(done.request.url.host_str().unwrap_or_default());
        }
        // The server's own wait, if longer than the back-off: neither robots.txt nor
        // anything else on the host is asked for before it.
        let asked = self.asked(done, now);
        if let Some(after) = asked {
            self.robots.defer(origin, now + after);
        }
        let gap = self
            .gap(done, self.robots.crawl_delay(origin))
            .max(asked.unwrap_or_default());
        RobotsDone::Done { gap, sitemaps }
    }

    /// What a page's answer (`key`: its URL's URL-seen key) means for its host.
    pub fn page_done(
        &mut self,
        url: &Url,
        key: u64,
        done: &FetchDone<'_>,
        now: Instant,
    ) -> Answered {
        let later = self.manners.later(done, key, now);
        let gap = if done.outcome == ReturnCode::PrivateAddressBlocked {
            // No request was made, and none to this host will be.
            self.block(url);
            Duration::ZERO
        } else {
            self.gap(done, self.robots.crawl_delay(&origin_key(url)))
        };
        Answered {
            // The whole host waits what a 429 or 503 asked, not only the URL.
            gap: gap.max(later.map_or(Duration::ZERO, |l| l.wait)),
            again: later.is_some_and(|l| l.again),
        }
    }

    /// The gap before the host of a robots.txt redirect hop to another host (`robots_hops`)
    /// may be contacted again: as after one of its pages, and at least what a 429 or 503
    /// asked. Asked after [`Self::robots_done`] has taken the answer, so a 429's slowdown
    /// counts.
    pub fn hop_gap(&self, done: &FetchDone<'_>, now: Instant) -> Duration {
        let origin = origin_key(&done.request.url);
        self.gap(done, self.robots.crawl_delay(&origin))
            .max(self.asked(done, now).unwrap_or_default())
    }

    /// The wait a 429 or 503 answer asked for (`Retry-After`, or the back-off), if any.
    fn asked(&self, done: &FetchDone<'_>, now: Instant) -> Option<Duration> {
        says_later(done)
            .then(|| self.manners.retry_after(done, now))
            .flatten()
    }

    /// The gap before the host may be contacted again (ARCHITECTURE §8), longer for a host
    /// that answered 429 (`manners`).
    fn gap(&self, done: &FetchDone<'_>, crawl_delay: Option<Duration>) -> Duration {
        let t = done.timings;
        let server_time = t.connect + t.first_byte + t.receive;
        let by_factor = server_time.mul_f64(self.delay_factor.max(0.0));
        let by_robots = crawl_delay
            .map(|d| d.min(self.max_crawl_delay))
            .unwrap_or(Duration::ZERO);
        let host = done.request.url.host_str().unwrap_or_default();
        let slowdown = self.manners.slowdown(host);
        self.delay
            .max(by_factor)
            .max(by_robots)
            .saturating_mul(slowdown)
    }

    /// A URL (key `key`) ended without another fetch: its tries are forgotten.
    pub fn forget(&mut self, key: u64) {
        self.manners.forget(key);
    }

    /// Whether `url` waits for its origin's robots.txt to be retried (it failed before).
    pub fn waits_on_robots(&self, url: &Url) -> bool {
        !self.ignore_robots && self.robots_failures.contains_key(&origin_key(url))
    }

    /// Remembers a host the address policy refused; the first one is reported.
    fn block(&mut self, url: &Url) {
        let host = url.host_str().unwrap_or_default();
        if !self.blocked_hosts.contains(host) {
            if self.blocked_hosts.is_empty() {
                self.blocked_notice = Some(host.to_string());
            }
            self.blocked_hosts.insert(host.to_string());
        }
    }

    /// The first host refused by the address policy, once.
    pub fn take_blocked_notice(&mut self) -> Option<String> {
        self.blocked_notice.take()
    }

    /// The `Cookie` header for a request to `url`.
    pub fn cookie_for(&self, url: &Url, now: Instant) -> Option<String> {
        self.manners.cookie_for(url, now)
    }

    /// Keeps the cookies a response set; whether any changed the jar.
    pub fn take_cookies(&mut self, done: &FetchDone<'_>, now: Instant) -> bool {
        self.manners.take_cookies(done, now) > 0
    }

    /// What `host`'s gap is multiplied by, for its 429s.
    #[cfg(test)]
    pub fn slowdown(&self, host: &str) -> u32 {
        self.manners.slowdown(host)
    }
}

/// The part of a robots.txt answer that holds rules: the body (its first
/// [`MAX_ROBOTS_BYTES`]) of a response that is neither a redirect nor a failure, or of a
/// 2xx over the body limit when that part is plain text rather than a cut-off encoding
/// (RFC 9309 asks for at least 500 KiB). `None`: the origin is unreachable for now.
pub(super) fn rules<'a>(done: &FetchDone<'a>) -> Option<&'a [u8]> {
    let status = done.status();
    let cut_but_usable = done.outcome == ReturnCode::HttpBodyTooLarge
        && (200..300).contains(&status)
        && done.head.is_some_and(|h| {
            h.content_encodings
                .iter()
                .all(|c| *c == ContentCoding::Identity)
        });
    let usable = (done.outcome.is_success() && !(300..400).contains(&status)) || cut_but_usable;
    usable.then(|| &done.content[..done.content.len().min(MAX_ROBOTS_BYTES)])
}

#[cfg(test)]
mod tests;
