//! The manners the real web expects of a crawl, beyond robots.txt: it keeps the cookies sites
//! set (wget does by default: a site that sets a cookie and redirects to itself is otherwise
//! never entered), and it comes back later when told to (a 429 or 503, with or without
//! `Retry-After`) instead of storing the refusal as the page.
//!
//! The jar itself is `http::cookies`, and reading `Retry-After` is `http::retry_after`; this
//! module holds the crawl's side: which responses feed the jar, the tries of each URL, and the
//! hosts that asked us to slow down (each 429 doubles the host's gap for the rest of the
//! crawl, up to [`MAX_SLOWDOWN`]: Heritrix's delay factor, per host). `done.rs` decides, per
//! finished fetch, what to do with what is decided here; the frontier holds the host for the
//! wait (one longer gap in `Frontier::done`). The host's slowdown and the jar are per-host
//! state, saved with it (`host_state`) for `resume`; a wait in progress survives as the host's
//! next-contact time.
//!
//! Cookies and HTTP dates are wall-clock things, and the crawl's time is an `Instant`: the
//! wall clock is read once, when the crawl is made, and carried forward on the monotonic one
//! ([`Manners::wall`]); the app (or a simulated crawl) gives it to [`super::Crawl::new`].

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use url::Url;

use crate::codec::{get_bytes, get_varint, put_bytes, put_varint};
use crate::fetcher::FetchDone;
use crate::http::cookies::{CookieJar, JarLimits, Loaded};

/// Default `--max-retries`: tries after the first answer of 429 or 503.
pub const DEFAULT_MAX_RETRIES: u8 = 3;
/// Default `--max-retry-after`: the longest wait a server can ask for (a site that says
/// "come back tomorrow" is asked again in an hour, or its last answer stands).
pub const DEFAULT_MAX_RETRY_AFTER: Duration = Duration::from_secs(3600);
/// The wait before the first retry when a 429 or 503 gives no (usable) `Retry-After`; it
/// doubles with each further try.
pub const DEFAULT_RETRY_WAIT: Duration = Duration::from_secs(5);
/// Doublings of a host's gap after its 429s: at most 8 ×, so a host that once said "too
/// many" is slowed for the rest of the crawl but not abandoned.
pub const MAX_SLOWDOWN: u8 = 3;
/// Hosts whose slowdown is remembered: as many as the robots.txt cache holds origins (a
/// host past it is still held for its Retry-After, just not slowed afterwards).
const MAX_SLOWED_HOSTS: usize = 100_000;

/// The crawl's manners: cookies and "come back later". A flag about them touches the
/// command line, its configuration and this file.
#[derive(Clone, Debug)]
pub struct MannersConfig {
    /// The cookie jar: on or off, and what it starts with.
    pub cookies: CookieConfig,
    /// Tries after a 429 or 503 before its answer stands (`--max-retries`).
    pub max_retries: u8,
    /// The longest wait a `Retry-After` may impose (`--max-retry-after`).
    pub max_retry_after: Duration,
}

impl Default for MannersConfig {
    fn default() -> Self {
        MannersConfig {
            cookies: CookieConfig {
                enabled: true,
                ..CookieConfig::default()
            },
            max_retries: DEFAULT_MAX_RETRIES,
            max_retry_after: DEFAULT_MAX_RETRY_AFTER,
        }
    }
}

/// What the crawl does about cookies.
#[derive(Clone, Debug, Default)]
pub struct CookieConfig {
    /// Keep a jar (`--no-cookies` turns it off).
    pub enabled: bool,
    /// Cookies to start with, as cookies.txt text (`--load-cookies FILE`, read by the app).
    pub load: Option<Arc<str>>,
    pub limits: JarLimits,
}

/// A 429 or 503 answer: how long its host waits, and whether the URL is tried again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Later {
    /// No request to the host before this long from now.
    pub wait: Duration,
    /// Fetch the URL again after the wait; otherwise the answer stands (tries used up).
    pub again: bool,
}

pub(super) struct Manners {
    /// Retries after a 429 or 503 before its answer stands.
    max_retries: u8,
    /// The longest wait a `Retry-After` may impose.
    max_retry_after: Duration,
    jar: Option<CookieJar>,
    /// The wall clock at an instant of the crawl's clock.
    wall_at: (Instant, SystemTime),
    /// URLs answered 429 or 503 and queued again: their key → tries made so far. At most one
    /// per busy host (the URL goes back to the head of its host's queue, so it is next).
    tries: HashMap<u64, u8>,
    /// Hosts that answered 429: doublings of their gap.
    slowed: HashMap<String, u8>,
}

impl Manners {
    /// `now` on the crawl's clock is `wall` on the wall clock.
    pub fn new(
        config: &MannersConfig,
        now: Instant,
        wall: SystemTime,
    ) -> (Manners, Option<Loaded>) {
        let cookies = &config.cookies;
        let mut jar = cookies.enabled.then(|| CookieJar::new(cookies.limits));
        let loaded = match (&mut jar, &cookies.load) {
            (Some(jar), Some(text)) => Some(jar.load_netscape(text, wall)),
            _ => None,
        };
        let manners = Manners {
            max_retries: config.max_retries,
            max_retry_after: config.max_retry_after,
            jar,
            wall_at: (now, wall),
            tries: HashMap::new(),
            slowed: HashMap::new(),
        };
        (manners, loaded)
    }

    /// The wall clock at `now`.
    pub fn wall(&self, now: Instant) -> SystemTime {
        let (at, wall) = self.wall_at;
        match now.checked_duration_since(at) {
            Some(d) => wall + d,
            None => wall - at.duration_since(now),
        }
    }

    /// The `Cookie` header for a request to `url`.
    pub fn cookie_for(&self, url: &Url, now: Instant) -> Option<String> {
        self.jar.as_ref()?.header_for(url, self.wall(now))
    }

    /// Keeps the cookies a response set (any status: a redirect's cookie is often the point).
    /// Returns how many changed the jar.
    pub fn take_cookies(&mut self, done: &FetchDone<'_>, now: Instant) -> usize {
        let wall = self.wall(now);
        match (&mut self.jar, done.head) {
            (Some(jar), Some(head)) => jar.store_response(head, &done.request.url, wall),
            _ => 0,
        }
    }

    /// The answer to the fetch of the URL whose key is `key`: `None` unless it says "later"
    /// (429 or 503). Then its host waits what `Retry-After` asks (at most `max_retry_after`;
    /// without one, [`DEFAULT_RETRY_WAIT`] doubled per try), and the URL is tried again,
    /// unless it had `max_retries` retries already: then the answer stands and its tries are
    /// forgotten. A 429 also slows the host down for the rest of the crawl.
    pub fn later(&mut self, done: &FetchDone<'_>, key: u64, now: Instant) -> Option<Later> {
        let (max_retries, max_wait) = (self.max_retries, self.max_retry_after);
        let status = done.status();
        if !says_later(done) {
            self.tries.remove(&key);
            return None;
        }
        if status == 429 {
            self.slow_down(done.request.url.host_str().unwrap_or_default());
        }
        let tries = self.tries.get(&key).copied().unwrap_or(0);
        let wait = self
            .retry_after(done, now)
            .unwrap_or_else(|| DEFAULT_RETRY_WAIT.saturating_mul(1 << tries.min(16)))
            .min(max_wait);
        let again = tries < max_retries;
        if again {
            self.tries.insert(key, tries + 1);
        } else {
            self.tries.remove(&key);
        }
        Some(Later { wait, again })
    }

    /// The wait a response's `Retry-After` asks for, at most `max_retry_after`.
    pub fn retry_after(&self, done: &FetchDone<'_>, now: Instant) -> Option<Duration> {
        crate::http::retry_after(done.head?, self.wall(now), self.max_retry_after)
    }

    /// Forgets the tries of a URL that ended without another fetch.
    pub fn forget(&mut self, key: u64) {
        self.tries.remove(&key);
    }

    /// One more doubling of `host`'s gap (a 429).
    pub fn slow_down(&mut self, host: &str) {
        if let Some(n) = self.slowed.get_mut(host) {
            *n = (*n + 1).min(MAX_SLOWDOWN);
        } else if self.slowed.len() < MAX_SLOWED_HOSTS {
            self.slowed.insert(host.to_string(), 1);
        }
    }

    /// What `host`'s gap is multiplied by: 2 to the number of its 429s, at most 2^MAX_SLOWDOWN.
    pub fn slowdown(&self, host: &str) -> u32 {
        self.slowed
            .get(host)
            .map_or(1, |&n| 1 << n.min(MAX_SLOWDOWN))
    }

    /// Appends the per-host part of this state (slowed hosts; the jar as cookies.txt text).
    pub fn save(&self, now: Instant, out: &mut Vec<u8>) {
        put_varint(out, self.slowed.len() as u64);
        for (host, n) in &self.slowed {
            put_bytes(out, host.as_bytes());
            put_varint(out, u64::from(*n));
        }
        let mut text = String::new();
        if let Some(jar) = &self.jar {
            jar.save_netscape(&mut text, self.wall(now));
        }
        put_bytes(out, text.as_bytes());
    }

    /// Restores what [`Manners::save`] wrote (at `now`, as the wall clock sees it now). The
    /// saved jar replaces the one loaded at the start: it holds those cookies as the sites
    /// left them. `None` if it does not decode.
    pub fn restore(&mut self, input: &mut &[u8], now: Instant) -> Option<()> {
        let n = usize::try_from(get_varint(input)?).ok()?;
        let mut slowed = Vec::with_capacity(n.min(input.len()));
        for _ in 0..n {
            let host = std::str::from_utf8(get_bytes(input)?).ok()?;
            let doublings = u8::try_from(get_varint(input)?).ok()?;
            slowed.push((host, doublings.min(MAX_SLOWDOWN)));
        }
        let text = std::str::from_utf8(get_bytes(input)?).ok()?;
        for (host, n) in slowed {
            if self.slowed.len() < MAX_SLOWED_HOSTS {
                self.slowed.insert(host.to_string(), n);
            }
        }
        let wall = self.wall(now);
        if let Some(jar) = &mut self.jar {
            let mut saved = CookieJar::new(jar.limits());
            saved.load_netscape(text, wall);
            *jar = saved;
        }
        Some(())
    }
}

/// A complete response saying "later": 429 Too Many Requests or 503 Service Unavailable.
pub(super) fn says_later(done: &FetchDone<'_>) -> bool {
    done.outcome.is_success() && done.head.is_some() && matches!(done.status(), 429 | 503)
}
