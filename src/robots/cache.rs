//! The per-origin robots.txt cache and fetch scheduler: when to fetch, how long rules last,
//! how failures back off. Time comes in as `now`; fetching is the crawl layer's job.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use super::{Robots, MAX_CACHE_AGE};

/// The outcome of fetching `/robots.txt` for one origin, as the crawl layer saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FetchResult {
    /// A response arrived (after the caller followed at most 5 redirects); `body` is decoded.
    Status { status: u16, body: Vec<u8> },
    /// DNS, connect, timeout or TLS failure, or too many redirects.
    Unreachable,
}

/// What the crawl layer should do with a URL right now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    Allowed,
    Disallowed,
    /// Fetch this origin's robots.txt now, then call `fetch_done`. Given once per needed fetch.
    NeedFetch,
    /// A robots.txt fetch is under way, or the origin is backing off after a failure: wait
    /// (see [`RobotsCache::next_retry`]).
    Pending,
}

/// One origin's robots.txt state.
#[derive(Clone, Debug)]
pub(super) enum State {
    /// A fetch is under way. `stale`: the expired rules, still answered from meanwhile.
    /// `failed_delay`: the back-off used after the previous failure, to double on another.
    Fetching {
        stale: Option<Robots>,
        failed_delay: Option<Duration>,
    },
    /// Rules in force until `expires` (2xx parsed, or allow-all after a 4xx).
    Ready { robots: Robots, expires: Instant },
    /// The last fetch failed (5xx, 429, unreachable): disallow everything until `until`.
    Backoff { until: Instant, delay: Duration },
}

#[derive(Clone, Debug)]
pub(super) struct Entry {
    /// Key in `RobotsCache::by_age`: larger is younger.
    seq: u64,
    pub(super) state: State,
}

/// Per-origin robots.txt cache and fetch scheduler (RFC 9309 §2.3–2.4).
///
/// - 2xx: the body is parsed; 4xx (404, 401, 403 included): allow all. Both last `max_age`.
/// - 429, 5xx, unreachable, or any other status (3xx should have been followed by the caller):
///   everything waits ([`Check::Pending`]) for `retry_after`, doubling on each further failure
///   up to `max_age`, then one more [`Check::NeedFetch`].
/// - Expiry: after `max_age` the next check says `NeedFetch`; while that refetch is under way the
///   old rules keep answering (one fetch's worth of staleness beats stalling the host), and they
///   are dropped if the refetch fails.
/// - At most `capacity` origins; a new one evicts the one fetched (or first asked for) longest
///   ago. An evicted origin whose fetch was under way is accepted again by `fetch_done`.
#[derive(Debug)]
pub struct RobotsCache {
    product_token: String,
    pub(super) max_age: Duration,
    retry_after: Duration,
    capacity: usize,
    pub(super) entries: HashMap<Box<str>, Entry>,
    pub(super) by_age: BTreeMap<u64, Box<str>>,
    next_seq: u64,
}

impl RobotsCache {
    /// `max_age`: how long rules are trusted (24 h); `retry_after`: the first back-off after a
    /// failure (e.g. 60 s); `capacity`: origins kept (at least 1).
    pub fn new(
        product_token: &str,
        max_age: Duration,
        retry_after: Duration,
        capacity: usize,
    ) -> Self {
        let max_age = max_age.min(MAX_CACHE_AGE);
        RobotsCache {
            product_token: product_token.to_owned(),
            max_age,
            retry_after: retry_after.min(max_age),
            capacity: capacity.max(1),
            entries: HashMap::new(),
            by_age: BTreeMap::new(),
            next_seq: 0,
        }
    }

    /// Whether `path_and_query` on `origin` (`https://host:port`) may be fetched now.
    pub fn check(&mut self, origin: &str, path_and_query: &str, now: Instant) -> Check {
        let Some(entry) = self.entries.get_mut(origin) else {
            self.insert(
                origin,
                State::Fetching {
                    stale: None,
                    failed_delay: None,
                },
            );
            return Check::NeedFetch;
        };
        let verdict = |robots: &Robots| {
            if robots.is_allowed(path_and_query) {
                Check::Allowed
            } else {
                Check::Disallowed
            }
        };
        match &entry.state {
            State::Ready { robots, expires } if now < *expires => return verdict(robots),
            State::Fetching {
                stale: Some(robots),
                ..
            } => return verdict(robots),
            State::Fetching { stale: None, .. } => return Check::Pending,
            State::Backoff { until, .. } if now < *until => return Check::Pending,
            State::Ready { .. } | State::Backoff { .. } => {}
        }
        // Expired rules or an elapsed back-off: start exactly one fetch.
        let next = match std::mem::replace(
            &mut entry.state,
            State::Fetching {
                stale: None,
                failed_delay: None,
            },
        ) {
            State::Ready { robots, .. } => State::Fetching {
                stale: Some(robots),
                failed_delay: None,
            },
            State::Backoff { delay, .. } => State::Fetching {
                stale: None,
                failed_delay: Some(delay),
            },
            // Returned above; keep whatever it was.
            fetching @ State::Fetching { .. } => fetching,
        };
        entry.state = next;
        Check::NeedFetch
    }

    /// Records the outcome of the robots.txt fetch for `origin`.
    pub fn fetch_done(&mut self, origin: &str, result: FetchResult, now: Instant) {
        let prior_failure = match self.entries.get(origin).map(|e| &e.state) {
            Some(State::Fetching { failed_delay, .. }) => *failed_delay,
            Some(State::Backoff { delay, .. }) => Some(*delay),
            Some(State::Ready { .. }) | None => None,
        };
        let state = match result {
            FetchResult::Status { status, body } if (200..300).contains(&status) => State::Ready {
                robots: Robots::parse(&body, &self.product_token),
                expires: after(now, self.max_age),
            },
            FetchResult::Status { status, .. } if (400..500).contains(&status) && status != 429 => {
                State::Ready {
                    robots: Robots::allow_all(),
                    expires: after(now, self.max_age),
                }
            }
            FetchResult::Status { .. } | FetchResult::Unreachable => {
                let delay = match prior_failure {
                    None => self.retry_after,
                    Some(d) => d.saturating_mul(2).min(self.max_age),
                };
                State::Backoff {
                    until: after(now, delay),
                    delay,
                }
            }
        };
        self.remove(origin);
        self.insert(origin, state);
    }

    /// An origin backing off after a failure waits at least until `until` (the server's
    /// `Retry-After`, when longer than the back-off).
    pub fn defer(&mut self, origin: &str, until: Instant) {
        if let Some(Entry {
            state: State::Backoff { until: at, .. },
            ..
        }) = self.entries.get_mut(origin)
        {
            *at = (*at).max(until);
        }
    }

    /// The Crawl-delay in force for `origin`, if its rules are known and give one.
    pub fn crawl_delay(&self, origin: &str) -> Option<Duration> {
        match &self.entries.get(origin)?.state {
            State::Ready { robots, .. }
            | State::Fetching {
                stale: Some(robots),
                ..
            } => robots.crawl_delay(),
            State::Fetching { stale: None, .. } | State::Backoff { .. } => None,
        }
    }

    /// When an origin that is backing off may be fetched again (`None` if it is not backing off).
    pub fn next_retry(&self, origin: &str) -> Option<Instant> {
        match self.entries.get(origin)?.state {
            State::Backoff { until, .. } => Some(until),
            State::Fetching { .. } | State::Ready { .. } => None,
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub(super) fn remove(&mut self, origin: &str) {
        if let Some(e) = self.entries.remove(origin) {
            self.by_age.remove(&e.seq);
        }
    }

    /// Inserts `origin` as the youngest entry, evicting the oldest ones beyond capacity.
    pub(super) fn insert(&mut self, origin: &str, state: State) {
        // Bounded: each pass removes one entry.
        while self.entries.len() >= self.capacity {
            let Some((_, oldest)) = self.by_age.pop_first() else {
                break;
            };
            self.entries.remove(&oldest);
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        let key: Box<str> = origin.into();
        self.by_age.insert(seq, key.clone());
        self.entries.insert(key, Entry { seq, state });
    }
}

/// `now + d`; `d` is at most [`MAX_CACHE_AGE`], so overflow would need a clock near its end, and
/// then expiring at once (a refetch) is the safe answer.
fn after(now: Instant, d: Duration) -> Instant {
    now.checked_add(d).unwrap_or(now)
}
