//! robots.txt (RFC 9309, DESIGN §6): parsing, matching, and a per-origin cache.
//!
//! Sans-IO. [`Robots`] turns a robots.txt body into the rules that apply to our product token and
//! answers [`Robots::is_allowed`]. [`RobotsCache`] is the per-origin state machine: the crawl layer
//! asks [`RobotsCache::check`] right before fetching a URL; when told [`Check::NeedFetch`] it fetches
//! `/robots.txt` through the event loop (following up to 5 redirects itself) and reports back with
//! [`RobotsCache::fetch_done`]. Time is always passed in as `now`.
//!
//! Not here: fetching and redirects (crawl layer over `fetch`), honouring Crawl-delay (the
//! frontier, §6), and sitemaps (`Sitemap:` lines are ignored).
//!
//! Bounds: at most [`MAX_ROBOTS_BYTES`] of a body is parsed; at most [`MAX_RULES`] rules are kept
//! per group set, each pattern at most [`MAX_PATTERN_BYTES`] after normalization (longer ones are
//! dropped, not truncated, since a truncated Allow would allow more than the site said). Matching
//! one rule is O(pattern + path): wildcards are matched greedily, segment by segment, with
//! `memmem` (linear), so no pattern can make it backtrack. One `is_allowed` call is therefore
//! at most O(MAX_RULES × (MAX_PATTERN_BYTES + path length)).

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use memchr::{memchr, memchr2, memmem, memrchr};

/// At most this much of a robots.txt body is parsed (RFC 9309 asks for at least 500 KiB); the rest
/// is ignored, and so is a line cut in two by the limit.
pub const MAX_ROBOTS_BYTES: usize = 512 * 1024;
/// At most this many rules are kept for the group set that applies to us; later rules are ignored.
pub const MAX_RULES: usize = 10_000;
/// A pattern longer than this (in octets, after percent-encoding normalization) is ignored.
pub const MAX_PATTERN_BYTES: usize = 2 * 1024;
/// Crawl-delay values above this are clamped to it (a day: more than that is the frontier's call).
pub const MAX_CRAWL_DELAY: Duration = Duration::from_secs(24 * 60 * 60);
/// The cache's `max_age` and `retry_after` are clamped to this, so `now + age` cannot overflow.
pub const MAX_CACHE_AGE: Duration = Duration::from_secs(365 * 24 * 60 * 60);

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// One compiled Allow/Disallow rule; its pattern lives in `Robots::patterns[start..start + len]`.
#[derive(Clone, Copy, Debug)]
struct Rule {
    start: usize,
    len: usize,
    /// The pattern ended in `$`: the path must end where the pattern does.
    anchored: bool,
    allow: bool,
    /// Normalized pattern length in octets, `$` included: longest match wins.
    priority: usize,
}

/// The robots.txt rules that apply to one product token, compiled for matching.
#[derive(Clone, Debug, Default)]
pub struct Robots {
    /// All patterns back to back (one allocation instead of one per rule).
    patterns: Vec<u8>,
    /// Sorted by priority, highest first, Allow before Disallow on a tie: the first match decides.
    rules: Vec<Rule>,
    crawl_delay: Option<Duration>,
}

/// Which groups a run of user-agent lines named.
#[derive(Clone, Copy, Debug, Default)]
struct GroupMatch {
    ours: bool,
    star: bool,
}

/// Where the parser is relative to groups (RFC 9309 §2.1).
#[derive(Clone, Copy, Debug)]
enum ParseState {
    /// No user-agent line yet: rules here belong to no group and are ignored.
    BeforeGroup,
    /// Inside a run of user-agent lines: another one joins the same group.
    Agents(GroupMatch),
    /// Rules seen: the next user-agent line starts a new group.
    Rules(GroupMatch),
}

impl Robots {
    /// Parses `body` (at most [`MAX_ROBOTS_BYTES`] of it) and keeps the rules for `product_token`.
    ///
    /// All groups naming our token are merged; if none does, all `*` groups are merged; if there
    /// is no `*` group either, everything is allowed. Never fails: unparsable lines are skipped.
    pub fn parse(body: &[u8], product_token: &str) -> Robots {
        let token = product_token_prefix(product_token.as_bytes());
        let body = limit_body(body);
        let body = body.strip_prefix(BOM).unwrap_or(body);

        let mut ours = Robots::default();
        let mut star = Robots::default();
        let (mut ours_seen, mut star_seen) = (false, false);
        let mut state = ParseState::BeforeGroup;

        let mut rest = body;
        // Bounded: each pass consumes at least one byte of a body of at most MAX_ROBOTS_BYTES.
        while !rest.is_empty() {
            let end = memchr2(b'\r', b'\n', rest).unwrap_or(rest.len());
            let line = &rest[..end];
            rest = &rest[(end + 1).min(rest.len())..];

            let Some((key, value)) = split_line(line) else {
                continue;
            };
            match classify_key(key) {
                Key::UserAgent => {
                    let m = match_agent(value, token);
                    ours_seen |= m.ours;
                    star_seen |= m.star;
                    state = match state {
                        ParseState::Agents(g) => ParseState::Agents(GroupMatch {
                            ours: g.ours | m.ours,
                            star: g.star | m.star,
                        }),
                        ParseState::BeforeGroup | ParseState::Rules(_) => ParseState::Agents(m),
                    };
                }
                Key::Record(kind) => {
                    let g = match state {
                        ParseState::BeforeGroup => continue,
                        ParseState::Agents(g) | ParseState::Rules(g) => g,
                    };
                    state = ParseState::Rules(g);
                    for (wanted, robots) in [(g.ours, &mut ours), (g.star, &mut star)] {
                        if wanted {
                            robots.add_record(kind, value);
                        }
                    }
                }
                Key::Other => {}
            }
        }

        let mut robots = if ours_seen {
            ours
        } else if star_seen {
            star
        } else {
            Robots::allow_all()
        };
        robots.finish();
        robots
    }

    /// Rules that allow everything (robots.txt missing: 4xx).
    pub fn allow_all() -> Robots {
        Robots::default()
    }

    /// Rules that disallow everything but `/robots.txt` (robots.txt unreachable: 5xx, 429).
    pub fn disallow_all() -> Robots {
        // An empty pattern matches every path; parsed files never produce one.
        Robots {
            patterns: Vec::new(),
            rules: vec![Rule {
                start: 0,
                len: 0,
                anchored: false,
                allow: false,
                priority: 0,
            }],
            crawl_delay: None,
        }
    }

    /// Whether we may fetch `path_and_query` (e.g. `/a/b?c=d`; empty means `/`).
    pub fn is_allowed(&self, path_and_query: &str) -> bool {
        let raw = if path_and_query.is_empty() {
            "/"
        } else {
            path_and_query
        };
        let path = normalize_path(raw.as_bytes());
        let path: &[u8] = &path;
        // RFC 9309 §2.5: /robots.txt itself is always allowed.
        let before_query = memchr(b'?', path).map_or(path, |q| &path[..q]);
        if before_query == b"/robots.txt" {
            return true;
        }
        self.rules
            .iter()
            .find(|r| wildcard_match(&self.patterns[r.start..r.start + r.len], r.anchored, path))
            .is_none_or(|r| r.allow)
    }

    /// The Crawl-delay of the groups that apply to us (the largest, if several give one).
    pub fn crawl_delay(&self) -> Option<Duration> {
        self.crawl_delay
    }

    /// How many Allow/Disallow rules apply to us.
    pub fn rule_count(&self) -> usize {
        self.rules.len()
    }

    fn add_record(&mut self, kind: RecordKind, value: &[u8]) {
        match kind {
            RecordKind::CrawlDelay => {
                if let Some(d) = parse_crawl_delay(value) {
                    self.crawl_delay = Some(self.crawl_delay.map_or(d, |old| old.max(d)));
                }
            }
            RecordKind::Rule { allow } => self.add_rule(allow, value),
        }
    }

    fn add_rule(&mut self, allow: bool, value: &[u8]) {
        // `Disallow:` with no value is no rule (and `Allow:` with none would change nothing).
        if value.is_empty() || self.rules.len() >= MAX_RULES {
            return;
        }
        // Cheap early reject: normalization shrinks a pattern at most 3x (%XX → X).
        if value.len() > 3 * MAX_PATTERN_BYTES {
            return;
        }
        let start = self.patterns.len();
        normalize_into(value, &mut self.patterns);
        let priority = self.patterns.len() - start;
        if priority > MAX_PATTERN_BYTES {
            self.patterns.truncate(start);
            return;
        }
        let anchored = self.patterns.last() == Some(&b'$');
        if anchored {
            self.patterns.pop();
        }
        self.rules.push(Rule {
            start,
            len: self.patterns.len() - start,
            anchored,
            allow,
            priority,
        });
    }

    fn finish(&mut self) {
        // Stable: equal rules keep file order (which does not change the outcome anyway).
        self.rules
            .sort_by_key(|r| (std::cmp::Reverse(r.priority), !r.allow));
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Key {
    UserAgent,
    Record(RecordKind),
    /// `sitemap` and everything else: ignored, and does not end a group.
    Other,
}

/// A line that belongs to the current group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RecordKind {
    Rule { allow: bool },
    CrawlDelay,
}

fn classify_key(key: &[u8]) -> Key {
    if key.eq_ignore_ascii_case(b"user-agent") {
        Key::UserAgent
    } else if key.eq_ignore_ascii_case(b"allow") {
        Key::Record(RecordKind::Rule { allow: true })
    } else if key.eq_ignore_ascii_case(b"disallow") {
        Key::Record(RecordKind::Rule { allow: false })
    } else if key.eq_ignore_ascii_case(b"crawl-delay") {
        Key::Record(RecordKind::CrawlDelay)
    } else {
        Key::Other
    }
}

/// Cuts the body to [`MAX_ROBOTS_BYTES`], dropping a line the limit cut in two.
fn limit_body(body: &[u8]) -> &[u8] {
    if body.len() <= MAX_ROBOTS_BYTES {
        return body;
    }
    let head = &body[..MAX_ROBOTS_BYTES];
    // If the byte right after the cut ends a line, the last line is whole.
    if matches!(body[MAX_ROBOTS_BYTES], b'\r' | b'\n') {
        return head;
    }
    match memchr::memrchr2(b'\r', b'\n', head) {
        Some(i) => &head[..i],
        None => &[],
    }
}

/// Splits `key: value # comment` into trimmed key and value; `None` if there is no `:`.
fn split_line(line: &[u8]) -> Option<(&[u8], &[u8])> {
    let line = memchr(b'#', line).map_or(line, |i| &line[..i]);
    let colon = memchr(b':', line)?;
    Some((trim(&line[..colon]), trim(&line[colon + 1..])))
}

fn trim(s: &[u8]) -> &[u8] {
    let is_ws = |b: &u8| matches!(b, b' ' | b'\t' | b'\x0b' | b'\x0c');
    let start = s.iter().position(|b| !is_ws(b)).unwrap_or(s.len());
    let end = s.iter().rposition(|b| !is_ws(b)).map_or(start, |i| i + 1);
    &s[start..end]
}

/// RFC 9309 §2.2.1: the product token is the leading run of `[a-zA-Z_-]`.
fn product_token_prefix(s: &[u8]) -> &[u8] {
    let s = trim(s);
    let n = s
        .iter()
        .position(|b| !(b.is_ascii_alphabetic() || *b == b'_' || *b == b'-'))
        .unwrap_or(s.len());
    &s[..n]
}

fn match_agent(value: &[u8], our_token: &[u8]) -> GroupMatch {
    // `*` alone, or followed by whitespace (`* bots welcome`); `*bot` is not the wildcard.
    let star = value.first() == Some(&b'*') && value.get(1).is_none_or(u8::is_ascii_whitespace);
    let theirs = product_token_prefix(value);
    GroupMatch {
        ours: !our_token.is_empty() && theirs.eq_ignore_ascii_case(our_token),
        star,
    }
}

/// Seconds, fractions allowed; negative, non-finite or unparsable values are ignored.
fn parse_crawl_delay(value: &[u8]) -> Option<Duration> {
    let secs: f64 = std::str::from_utf8(value).ok()?.parse().ok()?;
    if !secs.is_finite() || secs < 0.0 {
        return None;
    }
    let d = Duration::try_from_secs_f64(secs).unwrap_or(MAX_CRAWL_DELAY);
    Some(d.min(MAX_CRAWL_DELAY))
}

/// Bytes that normalization may rewrite: `%`, controls, space, DEL and everything ≥ 0x80.
const NEEDS_NORMALIZING: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = i == b'%' as usize || i <= 0x20 || i >= 0x7f;
        i += 1;
    }
    t
};

fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

fn hex_val(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

const HEX_UPPER: &[u8; 16] = b"0123456789ABCDEF";

/// Percent-encoding normalization, applied alike to patterns and paths: `%XX` of an unreserved
/// character is decoded, other `%xx` get uppercase hex, and bytes ≥ 0x80, controls and spaces
/// are encoded. A `%` not followed by two hex digits is kept as it is (on both sides).
fn normalize_into(input: &[u8], out: &mut Vec<u8>) {
    out.reserve(input.len());
    let mut i = 0;
    // Bounded: every pass consumes at least one input byte.
    while i < input.len() {
        let run = input[i..]
            .iter()
            .position(|&b| NEEDS_NORMALIZING[b as usize])
            .unwrap_or(input.len() - i);
        out.extend_from_slice(&input[i..i + run]);
        i += run;
        let Some(&b) = input.get(i) else { break };
        if b == b'%' {
            let hi = input.get(i + 1).copied().and_then(hex_val);
            let lo = input.get(i + 2).copied().and_then(hex_val);
            if let (Some(hi), Some(lo)) = (hi, lo) {
                let v = hi << 4 | lo;
                if is_unreserved(v) {
                    out.push(v);
                } else {
                    out.extend_from_slice(&[b'%', HEX_UPPER[hi as usize], HEX_UPPER[lo as usize]]);
                }
                i += 3;
            } else {
                out.push(b'%');
                i += 1;
            }
        } else {
            out.extend_from_slice(&[
                b'%',
                HEX_UPPER[(b >> 4) as usize],
                HEX_UPPER[(b & 15) as usize],
            ]);
            i += 1;
        }
    }
}

fn normalize_path(path: &[u8]) -> Cow<'_, [u8]> {
    if path.iter().any(|&b| NEEDS_NORMALIZING[b as usize]) {
        let mut out = Vec::with_capacity(path.len() + 8);
        normalize_into(path, &mut out);
        Cow::Owned(out)
    } else {
        Cow::Borrowed(path)
    }
}

/// Matches a normalized pattern (`*` = any sequence; `anchored` = the pattern ended in `$`)
/// against the start of `path`.
///
/// Greedy: the part before the first `*` must be a prefix; each middle segment is placed at its
/// leftmost occurrence after the previous one (leftmost leaves the most room for the rest, so
/// this never needs to backtrack); the last segment must occur after that, or end the path when
/// anchored. With linear `memmem` searches, the whole match is O(pattern + path).
fn wildcard_match(pattern: &[u8], anchored: bool, path: &[u8]) -> bool {
    let Some(first_star) = memchr(b'*', pattern) else {
        return if anchored {
            path == pattern
        } else {
            path.starts_with(pattern)
        };
    };
    let head = &pattern[..first_star];
    if !path.starts_with(head) {
        return false;
    }
    let mut pos = head.len();
    // memrchr finds at least the star found above.
    let last_star = memrchr(b'*', pattern).unwrap_or(first_star);
    if first_star < last_star {
        for seg in pattern[first_star + 1..last_star].split(|&b| b == b'*') {
            if seg.is_empty() {
                continue;
            }
            match memmem::find(&path[pos..], seg) {
                Some(i) => pos += i + seg.len(),
                None => return false,
            }
        }
    }
    let tail = &pattern[last_star + 1..];
    if anchored {
        path.len() - pos >= tail.len() && path.ends_with(tail)
    } else {
        memmem::find(&path[pos..], tail).is_some()
    }
}

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
enum State {
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
struct Entry {
    /// Key in `RobotsCache::by_age`: larger is younger.
    seq: u64,
    state: State,
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
    max_age: Duration,
    retry_after: Duration,
    capacity: usize,
    entries: HashMap<Box<str>, Entry>,
    by_age: BTreeMap<u64, Box<str>>,
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

    fn remove(&mut self, origin: &str) {
        if let Some(e) = self.entries.remove(origin) {
            self.by_age.remove(&e.seq);
        }
    }

    /// Inserts `origin` as the youngest entry, evicting the oldest ones beyond capacity.
    fn insert(&mut self, origin: &str, state: State) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const TOKEN: &str = "spinneret";

    /// RFC 9309 §5.1.
    const RFC_SIMPLE: &str = "User-Agent: *\nDisallow: *.gif$\nDisallow: /example/\nAllow: /publications/\n\nUser-Agent: foobot\nDisallow:/\nAllow:/example/page.html\nAllow:/example/allowed.gif\n\nUser-Agent: barbot\nUser-Agent: bazbot\nDisallow: /example/page.html\n\nUser-Agent: quxbot\n\nEOF\n";
    /// RFC 9309 §5.2.
    const RFC_LONGEST: &str =
        "User-Agent: foobot\nAllow: /example/page/\nDisallow: /example/page/disallowed.gif\n";

    /// (what the row checks, robots.txt, product token, path, allowed?)
    const CASES: &[(&str, &str, &str, &str, bool)] = &[
        // ---- Records and syntax ----
        ("disallow prefix", "User-agent: *\nDisallow: /a", TOKEN, "/a/b", false),
        ("disallow leaves others", "User-agent: *\nDisallow: /a", TOKEN, "/b", true),
        ("keys case-insensitive", "USER-AGENT: *\nDISALLOW: /a", TOKEN, "/a", false),
        ("mixed-case keys", "uSeR-aGeNt: *\ndIsAlLoW: /a", TOKEN, "/a", false),
        ("whitespace around colon", "User-agent  :  *\nDisallow\t:\t/a  ", TOKEN, "/a", false),
        ("no space after colon", "User-agent:*\nDisallow:/a", TOKEN, "/a", false),
        ("comment after value", "User-agent: * # all\nDisallow: /a # secret\n", TOKEN, "/a", false),
        ("comment does not leak into pattern", "User-agent: *\nDisallow: /a#b\n", TOKEN, "/ab", false),
        ("full-line comment ignored", "# Disallow: /a\nUser-agent: *\n#Disallow: /b\nDisallow: /c", TOKEN, "/b", true),
        ("CR line ends", "User-agent: *\rDisallow: /a\r", TOKEN, "/a", false),
        ("CRLF line ends", "User-agent: *\r\nDisallow: /a\r\n", TOKEN, "/a", false),
        ("LF line ends", "User-agent: *\nDisallow: /a\n", TOKEN, "/a", false),
        ("BOM ignored", "\u{feff}User-agent: *\nDisallow: /a", TOKEN, "/a", false),
        ("line without colon ignored", "User-agent: *\nDisallow /b\nDisallow: /a", TOKEN, "/b", true),
        ("line without colon does not end group", "User-agent: *\nnonsense\nDisallow: /a", TOKEN, "/a", false),
        ("sitemap ignored, group continues", "User-agent: *\nSitemap: https://x/s.xml\nDisallow: /a", TOKEN, "/a", false),
        ("unknown key ignored", "User-agent: *\nNoindex: /a\nDisallow: /b", TOKEN, "/a", true),
        ("rules before any user-agent ignored", "Disallow: /a\nUser-agent: *\nDisallow: /b", TOKEN, "/a", true),
        ("empty disallow is no rule", "User-agent: *\nDisallow:", TOKEN, "/a", true),
        ("empty file allows all", "", TOKEN, "/a", true),
        ("blank lines do not end a group", "User-agent: *\n\n\nDisallow: /a", TOKEN, "/a", false),
        // ---- Groups ----
        ("our group wins over star", "User-agent: *\nDisallow: /\n\nUser-agent: spinneret\nDisallow: /x", TOKEN, "/a", true),
        ("our group rules apply", "User-agent: *\nDisallow: /\n\nUser-agent: spinneret\nDisallow: /x", TOKEN, "/x", false),
        ("agent match case-insensitive", "User-agent: SpInNeReT\nDisallow: /a", TOKEN, "/a", false),
        ("agent with version matches", "User-agent: spinneret/1.0\nDisallow: /a", TOKEN, "/a", false),
        ("our token with version", "User-agent: spinneret\nDisallow: /a", "spinneret/2.1", "/a", false),
        ("agent token is letters _ - only", "User-agent: spinneret 1.0 (+http://x)\nDisallow: /a", TOKEN, "/a", false),
        ("longer agent is another bot", "User-agent: spinneretbot\nDisallow: /a", TOKEN, "/a", true),
        ("prefix of our token is another bot", "User-agent: spin\nDisallow: /a", TOKEN, "/a", true),
        ("star-prefixed name is not star", "User-agent: *bot\nDisallow: /a", TOKEN, "/a", true),
        ("other bot only: allow all", "User-agent: otherbot\nDisallow: /", TOKEN, "/a", true),
        ("consecutive agents share a group", "User-agent: otherbot\nUser-agent: spinneret\nDisallow: /a", TOKEN, "/a", false),
        ("agent after rules starts new group", "User-agent: spinneret\nDisallow: /a\nUser-agent: otherbot\nDisallow: /b", TOKEN, "/b", true),
        ("all our groups merged (1)", "User-agent: spinneret\nDisallow: /a\n\nUser-agent: otherbot\nDisallow: /b\n\nUser-agent: spinneret\nDisallow: /c", TOKEN, "/a", false),
        ("all our groups merged (2)", "User-agent: spinneret\nDisallow: /a\n\nUser-agent: otherbot\nDisallow: /b\n\nUser-agent: spinneret\nDisallow: /c", TOKEN, "/c", false),
        ("all star groups merged", "User-agent: *\nDisallow: /a\n\nUser-agent: otherbot\nDisallow: /b\n\nUser-agent: *\nDisallow: /c", TOKEN, "/c", false),
        ("star rules dropped when ours exists", "User-agent: *\nDisallow: /a\n\nUser-agent: spinneret\nDisallow: /c", TOKEN, "/a", true),
        ("empty our group still replaces star", "User-agent: *\nDisallow: /\n\nUser-agent: spinneret\n", TOKEN, "/a", true),
        ("group naming star and us", "User-agent: *\nUser-agent: spinneret\nDisallow: /a", TOKEN, "/a", false),
        // ---- Precedence ----
        ("longest match wins: allow", "User-agent: *\nAllow: /p\nDisallow: /", TOKEN, "/page", true),
        ("allow wins a tie", "User-agent: *\nAllow: /folder\nDisallow: /folder", TOKEN, "/folder/page", true),
        ("allow wins a tie, order reversed", "User-agent: *\nDisallow: /folder\nAllow: /folder", TOKEN, "/folder/page", true),
        ("longer wildcard disallow wins", "User-agent: *\nAllow: /page\nDisallow: /*.htm", TOKEN, "/page.htm", false),
        ("allow /$ only root (1)", "User-agent: *\nAllow: /$\nDisallow: /", TOKEN, "/", true),
        ("allow /$ only root (2)", "User-agent: *\nAllow: /$\nDisallow: /", TOKEN, "/page.htm", false),
        ("length counts normalized octets", "User-agent: *\nAllow: /%61%62\nDisallow: /ab*", TOKEN, "/ab", false),
        // ---- RFC 9309 §5 ----
        ("rfc simple: star gif", RFC_SIMPLE, TOKEN, "/x/y.gif", false),
        ("rfc simple: star gif$ not with query", RFC_SIMPLE, TOKEN, "/x/y.gif?z", true),
        ("rfc simple: star /example/", RFC_SIMPLE, TOKEN, "/example/a", false),
        ("rfc simple: star /publications/", RFC_SIMPLE, TOKEN, "/publications/a", true),
        ("rfc simple: foobot page", RFC_SIMPLE, "foobot", "/example/page.html", true),
        ("rfc simple: foobot gif", RFC_SIMPLE, "foobot", "/example/allowed.gif", true),
        ("rfc simple: foobot else", RFC_SIMPLE, "foobot", "/publications/a", false),
        ("rfc simple: barbot page", RFC_SIMPLE, "barbot", "/example/page.html", false),
        ("rfc simple: bazbot page", RFC_SIMPLE, "bazbot", "/example/page.html", false),
        ("rfc simple: bazbot gif", RFC_SIMPLE, "bazbot", "/a.gif", true),
        ("rfc simple: quxbot all", RFC_SIMPLE, "quxbot", "/example/page.html", true),
        ("rfc longest: dir allowed", RFC_LONGEST, "foobot", "/example/page/", true),
        ("rfc longest: gif disallowed", RFC_LONGEST, "foobot", "/example/page/disallowed.gif", false),
        // ---- Google's documented matching ----
        ("/ root", "User-agent: *\nDisallow: /", TOKEN, "/", false),
        ("/* like /", "User-agent: *\nDisallow: /*", TOKEN, "/any/thing", false),
        ("/$ root only (1)", "User-agent: *\nDisallow: /$", TOKEN, "/", false),
        ("/$ root only (2)", "User-agent: *\nDisallow: /$", TOKEN, "/page.html", true),
        ("/fish: /fish", "User-agent: *\nDisallow: /fish", TOKEN, "/fish", false),
        ("/fish: /fish.html", "User-agent: *\nDisallow: /fish", TOKEN, "/fish.html", false),
        ("/fish: /fish/salmon.html", "User-agent: *\nDisallow: /fish", TOKEN, "/fish/salmon.html", false),
        ("/fish: /fishheads", "User-agent: *\nDisallow: /fish", TOKEN, "/fishheads/yummy.html", false),
        ("/fish: query", "User-agent: *\nDisallow: /fish", TOKEN, "/fish.php?id=anything", false),
        ("/fish: not /Fish.asp", "User-agent: *\nDisallow: /fish", TOKEN, "/Fish.asp", true),
        ("/fish: not /catfish", "User-agent: *\nDisallow: /fish", TOKEN, "/catfish", true),
        ("/fish: not /?id=fish", "User-agent: *\nDisallow: /fish", TOKEN, "/?id=fish", true),
        ("/fish: not /desert/fish", "User-agent: *\nDisallow: /fish", TOKEN, "/desert/fish", true),
        ("/fish*: /fish.html", "User-agent: *\nDisallow: /fish*", TOKEN, "/fish.html", false),
        ("/fish*: /fishheads", "User-agent: *\nDisallow: /fish*", TOKEN, "/fishheads/yummy.html", false),
        ("/fish*: not /catfish", "User-agent: *\nDisallow: /fish*", TOKEN, "/catfish", true),
        ("/fish*: not /Fish.asp", "User-agent: *\nDisallow: /fish*", TOKEN, "/Fish.asp", true),
        ("/fish/: /fish/", "User-agent: *\nDisallow: /fish/", TOKEN, "/fish/", false),
        ("/fish/: query", "User-agent: *\nDisallow: /fish/", TOKEN, "/fish/?id=anything", false),
        ("/fish/: below", "User-agent: *\nDisallow: /fish/", TOKEN, "/fish/salmon.htm", false),
        ("/fish/: not /fish", "User-agent: *\nDisallow: /fish/", TOKEN, "/fish", true),
        ("/fish/: not /fish.html", "User-agent: *\nDisallow: /fish/", TOKEN, "/fish.html", true),
        ("/fish/: not /animals/fish/", "User-agent: *\nDisallow: /fish/", TOKEN, "/animals/fish/", true),
        ("/fish/: not /Fish/Salmon.asp", "User-agent: *\nDisallow: /fish/", TOKEN, "/Fish/Salmon.asp", true),
        ("/*.php: /index.php", "User-agent: *\nDisallow: /*.php", TOKEN, "/index.php", false),
        ("/*.php: folder", "User-agent: *\nDisallow: /*.php", TOKEN, "/folder/filename.php", false),
        ("/*.php: query", "User-agent: *\nDisallow: /*.php", TOKEN, "/folder/filename.php?parameters", false),
        ("/*.php: middle", "User-agent: *\nDisallow: /*.php", TOKEN, "/folder/any.php.file.html", false),
        ("/*.php: trailing slash", "User-agent: *\nDisallow: /*.php", TOKEN, "/filename.php/", false),
        ("/*.php: not /", "User-agent: *\nDisallow: /*.php", TOKEN, "/", true),
        ("/*.php: not .PHP", "User-agent: *\nDisallow: /*.php", TOKEN, "/windows.PHP", true),
        ("/*.php$: /filename.php", "User-agent: *\nDisallow: /*.php$", TOKEN, "/filename.php", false),
        ("/*.php$: folder", "User-agent: *\nDisallow: /*.php$", TOKEN, "/folder/filename.php", false),
        ("/*.php$: not query", "User-agent: *\nDisallow: /*.php$", TOKEN, "/filename.php?parameters", true),
        ("/*.php$: not slash", "User-agent: *\nDisallow: /*.php$", TOKEN, "/filename.php/", true),
        ("/*.php$: not php5", "User-agent: *\nDisallow: /*.php$", TOKEN, "/filename.php5", true),
        ("/*.php$: not .PHP", "User-agent: *\nDisallow: /*.php$", TOKEN, "/windows.PHP", true),
        ("/fish*.php: /fish.php", "User-agent: *\nDisallow: /fish*.php", TOKEN, "/fish.php", false),
        ("/fish*.php: deep", "User-agent: *\nDisallow: /fish*.php", TOKEN, "/fishheads/catfish.php?parameters", false),
        ("/fish*.php: not /Fish.PHP", "User-agent: *\nDisallow: /fish*.php", TOKEN, "/Fish.PHP", true),
        // ---- Wildcards ----
        ("$ in the middle is literal", "User-agent: *\nDisallow: /a$b", TOKEN, "/a$b/c", false),
        ("anchored exact", "User-agent: *\nDisallow: /a$", TOKEN, "/a/", true),
        ("double star", "User-agent: *\nDisallow: /a**b$", TOKEN, "/axxb", false),
        ("star then anchor", "User-agent: *\nDisallow: /a*$", TOKEN, "/a/anything", false),
        ("greedy segments in order", "User-agent: *\nDisallow: /*a*b*c", TOKEN, "/cba-abc", false),
        ("segments out of order", "User-agent: *\nDisallow: /*a*b*c", TOKEN, "/cba", true),
        ("anchored tail overlapping middle", "User-agent: *\nDisallow: /*ab*b$", TOKEN, "/ab", true),
        ("anchored tail after middle", "User-agent: *\nDisallow: /*ab*b$", TOKEN, "/abb", false),
        // ---- Percent-encoding normalization ----
        ("unreserved decoded in path", "User-agent: *\nDisallow: /foo/bar/baz", TOKEN, "/foo/bar/%62%61%7A", false),
        ("unreserved decoded in pattern", "User-agent: *\nDisallow: /foo/bar/%62%61%7A", TOKEN, "/foo/bar/baz", false),
        ("raw UTF-8 pattern vs encoded path", "User-agent: *\nDisallow: /foo/bar/\u{30c4}", TOKEN, "/foo/bar/%E3%83%84", false),
        ("encoded pattern vs raw UTF-8 path", "User-agent: *\nDisallow: /foo/bar/%E3%83%84", TOKEN, "/foo/bar/\u{30c4}", false),
        ("hex case normalized", "User-agent: *\nDisallow: /a%2fb", TOKEN, "/a%2Fb", false),
        ("reserved stays encoded", "User-agent: *\nDisallow: /a/b", TOKEN, "/a%2Fb", true),
        ("space encoded", "User-agent: *\nDisallow: /a b", TOKEN, "/a%20b", false),
        ("encoded star is literal", "User-agent: *\nDisallow: /a%2Ab", TOKEN, "/axb", true),
        ("lone percent kept", "User-agent: *\nDisallow: /a%zz", TOKEN, "/a%zz", false),
        // ---- /robots.txt ----
        ("robots.txt always allowed", "User-agent: *\nDisallow: /", TOKEN, "/robots.txt", true),
        ("robots.txt with query allowed", "User-agent: *\nDisallow: /", TOKEN, "/robots.txt?x=1", true),
        ("robots.txt.bak not special", "User-agent: *\nDisallow: /", TOKEN, "/robots.txt.bak", false),
        ("empty path is /", "User-agent: *\nDisallow: /$", TOKEN, "", false),
    ];

    #[test]
    fn table() {
        let mut failures = Vec::new();
        for &(name, body, token, path, want) in CASES {
            let got = Robots::parse(body.as_bytes(), token).is_allowed(path);
            if got != want {
                failures.push(format!("{name}: {path:?} allowed={got}, want {want}"));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn crawl_delay_parsing() {
        let cases: &[(&str, Option<Duration>)] = &[
            (
                "User-agent: *\nCrawl-delay: 10",
                Some(Duration::from_secs(10)),
            ),
            (
                "User-agent: *\ncrawl-DELAY : 0.5",
                Some(Duration::from_millis(500)),
            ),
            ("User-agent: *\nCrawl-delay: fast", None),
            ("User-agent: *\nCrawl-delay: -3", None),
            ("User-agent: *\nCrawl-delay: NaN", None),
            ("User-agent: *\nCrawl-delay: 1e30", Some(MAX_CRAWL_DELAY)),
            ("User-agent: otherbot\nCrawl-delay: 5", None),
            ("Crawl-delay: 5\nUser-agent: *", None),
            // Merged groups: the most polite wins.
            (
                "User-agent: *\nCrawl-delay: 2\n\nUser-agent: *\nCrawl-delay: 7",
                Some(Duration::from_secs(7)),
            ),
            // Ours overrides star.
            (
                "User-agent: *\nCrawl-delay: 9\n\nUser-agent: spinneret\nCrawl-delay: 1",
                Some(Duration::from_secs(1)),
            ),
        ];
        for &(body, want) in cases {
            assert_eq!(
                Robots::parse(body.as_bytes(), TOKEN).crawl_delay(),
                want,
                "{body:?}"
            );
        }
    }

    #[test]
    fn rule_count_and_constructors() {
        let r = Robots::parse(
            b"User-agent: *\nDisallow: /a\nAllow: /b\nDisallow:\nSitemap: /s",
            TOKEN,
        );
        assert_eq!(r.rule_count(), 2);
        assert_eq!(Robots::allow_all().rule_count(), 0);
        assert!(Robots::allow_all().is_allowed("/x"));
        let d = Robots::disallow_all();
        assert!(!d.is_allowed("/x"));
        assert!(!d.is_allowed(""));
        assert!(!d.is_allowed("?q"));
        assert!(d.is_allowed("/robots.txt"));
    }

    #[test]
    fn only_first_512_kib_parsed() {
        let mut body = b"User-agent: *\nDisallow: /early\n".to_vec();
        let filler = b"# padding padding padding padding padding padding padding\n";
        while body.len() < MAX_ROBOTS_BYTES - 20 {
            body.extend_from_slice(filler);
        }
        // A rule the limit cuts in two: dropped, not truncated to a broader `/cu`.
        body.extend_from_slice(b"Allow: /cut-in-two-by-the-limit\n");
        while body.len() < 10 * 1024 * 1024 {
            body.extend_from_slice(b"Disallow: /late\n");
        }
        let r = Robots::parse(&body, TOKEN);
        assert!(!r.is_allowed("/early"));
        assert!(r.is_allowed("/late"));
        assert_eq!(r.rule_count(), 1);
    }

    #[test]
    fn line_of_100_kb() {
        let long = "a".repeat(100 * 1024);
        let body = format!(
            "User-agent: *\nDisallow: /{long}\n# {long}\nUser-agent: {long}\nUser-agent: *\nDisallow: /x\n"
        );
        let r = Robots::parse(body.as_bytes(), TOKEN);
        // The over-long pattern is dropped; the lines after it still count.
        assert_eq!(r.rule_count(), 1);
        assert!(!r.is_allowed("/x"));
        assert!(r.is_allowed(&format!("/{long}")));
    }

    #[test]
    fn rule_and_pattern_caps() {
        let mut body = String::from("User-agent: *\n");
        for i in 0..MAX_RULES + 50 {
            body.push_str(&format!("Disallow: /{i}/\n"));
        }
        assert_eq!(
            Robots::parse(body.as_bytes(), TOKEN).rule_count(),
            MAX_RULES
        );

        let at_cap = format!(
            "User-agent: *\nDisallow: /{}",
            "b".repeat(MAX_PATTERN_BYTES - 1)
        );
        assert_eq!(Robots::parse(at_cap.as_bytes(), TOKEN).rule_count(), 1);
        let over = format!(
            "User-agent: *\nDisallow: /{}",
            "b".repeat(MAX_PATTERN_BYTES)
        );
        assert_eq!(Robots::parse(over.as_bytes(), TOKEN).rule_count(), 0);
    }

    #[test]
    fn pathological_wildcards_finish() {
        // Exponential for a backtracking matcher: many stars, a tail that never matches.
        let pattern = format!("/{}b", "*a".repeat(MAX_PATTERN_BYTES / 2 - 2));
        let mut body = String::from("User-agent: *\n");
        // 200 such rules fit in MAX_ROBOTS_BYTES.
        for _ in 0..100 {
            body.push_str(&format!("Disallow: {pattern}\nDisallow: {pattern}$\n"));
        }
        let r = Robots::parse(body.as_bytes(), TOKEN);
        assert_eq!(r.rule_count(), 200);
        let path = format!("/{}", "a".repeat(20_000));
        assert!(r.is_allowed(&path));
        assert!(!r.is_allowed(&format!("{path}b")));
    }

    // ---- RobotsCache ----

    const O: &str = "https://example.com:443";
    const HOUR: Duration = Duration::from_secs(3600);
    const MAX_AGE: Duration = Duration::from_secs(24 * 3600);
    const RETRY: Duration = Duration::from_secs(60);

    fn cache(capacity: usize) -> RobotsCache {
        RobotsCache::new(TOKEN, MAX_AGE, RETRY, capacity)
    }

    fn ok(body: &str) -> FetchResult {
        FetchResult::Status {
            status: 200,
            body: body.as_bytes().to_vec(),
        }
    }

    fn status(status: u16) -> FetchResult {
        FetchResult::Status {
            status,
            body: b"User-agent: *\nAllow: /".to_vec(),
        }
    }

    #[test]
    fn need_fetch_once_then_pending_then_rules() {
        let t0 = Instant::now();
        let mut c = cache(10);
        assert!(c.is_empty());
        assert_eq!(c.check(O, "/a", t0), Check::NeedFetch);
        assert_eq!(c.check(O, "/a", t0), Check::Pending);
        assert_eq!(c.check(O, "/b", t0 + HOUR), Check::Pending);
        assert_eq!(c.len(), 1);
        assert_eq!(c.next_retry(O), None);
        c.fetch_done(O, ok("User-agent: *\nDisallow: /a\nCrawl-delay: 2.5"), t0);
        assert_eq!(c.check(O, "/a", t0), Check::Disallowed);
        assert_eq!(c.check(O, "/b", t0), Check::Allowed);
        assert_eq!(c.crawl_delay(O), Some(Duration::from_millis(2500)));
        // Another origin is independent.
        assert_eq!(c.check("http://other:80", "/a", t0), Check::NeedFetch);
        assert_eq!(c.crawl_delay("http://other:80"), None);
    }

    #[test]
    fn client_errors_allow_all() {
        for code in [400, 401, 403, 404, 410, 451, 499] {
            let t0 = Instant::now();
            let mut c = cache(10);
            assert_eq!(c.check(O, "/", t0), Check::NeedFetch);
            c.fetch_done(
                O,
                FetchResult::Status {
                    status: code,
                    body: b"User-agent: *\nDisallow: /".to_vec(),
                },
                t0,
            );
            assert_eq!(c.check(O, "/secret", t0), Check::Allowed, "status {code}");
            assert_eq!(c.next_retry(O), None);
        }
    }

    #[test]
    fn failures_back_off_doubling_up_to_max_age() {
        let failures = [
            status(500),
            status(503),
            status(429),
            FetchResult::Unreachable,
            status(302),
            status(199),
        ];
        for failure in failures {
            let t0 = Instant::now();
            let mut c = cache(10);
            assert_eq!(c.check(O, "/", t0), Check::NeedFetch);
            let mut now = t0;
            let mut want = RETRY;
            // 60 s doubling reaches 24 h after 11 failures; run past it.
            for round in 0..14 {
                c.fetch_done(O, failure.clone(), now);
                assert_eq!(
                    c.next_retry(O),
                    Some(now + want),
                    "{failure:?} round {round}"
                );
                assert_eq!(c.check(O, "/", now), Check::Pending);
                let just_before = now + want - Duration::from_millis(1);
                assert_eq!(c.check(O, "/", just_before), Check::Pending);
                assert_eq!(c.crawl_delay(O), None);
                now += want;
                assert_eq!(
                    c.check(O, "/", now),
                    Check::NeedFetch,
                    "{failure:?} round {round}"
                );
                assert_eq!(c.check(O, "/", now), Check::Pending);
                assert_eq!(c.next_retry(O), None);
                want = (want * 2).min(MAX_AGE);
            }
            assert_eq!(want, MAX_AGE);
            // Success resets the back-off.
            c.fetch_done(O, ok("User-agent: *\nDisallow: /x"), now);
            assert_eq!(c.check(O, "/x", now), Check::Disallowed);
            c.fetch_done(O, FetchResult::Unreachable, now);
            assert_eq!(c.next_retry(O), Some(now + RETRY));
        }
    }

    #[test]
    fn expiry_refetches_keeping_old_rules_meanwhile() {
        let t0 = Instant::now();
        let mut c = cache(10);
        assert_eq!(c.check(O, "/", t0), Check::NeedFetch);
        c.fetch_done(O, ok("User-agent: *\nDisallow: /old\nCrawl-delay: 3"), t0);
        let almost = t0 + MAX_AGE - Duration::from_secs(1);
        assert_eq!(c.check(O, "/old", almost), Check::Disallowed);
        let expired = t0 + MAX_AGE;
        assert_eq!(c.check(O, "/new", expired), Check::NeedFetch);
        // Refetch under way: old rules still answer, and no second NeedFetch.
        assert_eq!(c.check(O, "/old", expired), Check::Disallowed);
        assert_eq!(c.check(O, "/new", expired + HOUR), Check::Allowed);
        assert_eq!(c.crawl_delay(O), Some(Duration::from_secs(3)));
        c.fetch_done(O, ok("User-agent: *\nDisallow: /new"), expired + HOUR);
        assert_eq!(c.check(O, "/new", expired + HOUR), Check::Disallowed);
        assert_eq!(c.check(O, "/old", expired + HOUR), Check::Allowed);
        assert_eq!(c.crawl_delay(O), None);
        // A failed refetch drops the old rules: wait, then retry.
        let t2 = expired + HOUR + MAX_AGE;
        assert_eq!(c.check(O, "/x", t2), Check::NeedFetch);
        c.fetch_done(O, status(502), t2);
        assert_eq!(c.check(O, "/x", t2), Check::Pending);
        assert_eq!(c.next_retry(O), Some(t2 + RETRY));
    }

    #[test]
    fn capacity_evicts_oldest() {
        let t0 = Instant::now();
        let mut c = cache(2);
        let (a, b, d) = ("http://a:80", "http://b:80", "http://d:80");
        assert_eq!(c.check(a, "/", t0), Check::NeedFetch);
        assert_eq!(c.check(b, "/", t0), Check::NeedFetch);
        c.fetch_done(a, ok(""), t0); // a is now the youngest
        assert_eq!(c.check(d, "/", t0), Check::NeedFetch); // evicts b
        assert_eq!(c.len(), 2);
        assert_eq!(c.check(a, "/", t0), Check::Allowed);
        assert_eq!(c.check(d, "/", t0), Check::Pending);
        // b's late answer is still taken (evicting the oldest, a).
        c.fetch_done(b, ok("User-agent: *\nDisallow: /"), t0);
        assert_eq!(c.len(), 2);
        assert_eq!(c.check(b, "/p", t0), Check::Disallowed);
        assert_eq!(c.check(d, "/", t0), Check::Pending);
        assert_eq!(c.check(a, "/", t0), Check::NeedFetch);
        // Capacity 0 behaves as 1.
        let mut c = cache(0);
        assert_eq!(c.check(a, "/", t0), Check::NeedFetch);
        assert_eq!(c.check(b, "/", t0), Check::NeedFetch);
        assert_eq!(c.len(), 1);
    }

    #[test]
    fn huge_durations_do_not_overflow() {
        let t0 = Instant::now();
        let mut c = RobotsCache::new(TOKEN, Duration::MAX, Duration::MAX, 4);
        assert_eq!(c.check(O, "/", t0), Check::NeedFetch);
        c.fetch_done(O, FetchResult::Unreachable, t0);
        assert_eq!(c.check(O, "/", t0), Check::Pending);
        c.fetch_done(O, FetchResult::Unreachable, t0);
        c.fetch_done(O, ok(""), t0);
        assert_eq!(c.check(O, "/", t0), Check::Allowed);
    }

    /// Reference matcher: textbook DP over (pattern, path) positions.
    fn naive_match(pattern: &[u8], anchored: bool, path: &[u8]) -> bool {
        let (p, s) = (pattern.len(), path.len());
        // m[i][j]: pattern[..i] matches path[..j] exactly.
        let mut m = vec![vec![false; s + 1]; p + 1];
        m[0][0] = true;
        for i in 1..=p {
            for j in 0..=s {
                m[i][j] = if pattern[i - 1] == b'*' {
                    m[i - 1][j] || (j > 0 && m[i][j - 1])
                } else {
                    j > 0 && m[i - 1][j - 1] && pattern[i - 1] == path[j - 1]
                };
            }
        }
        if anchored {
            m[p][s]
        } else {
            (0..=s).any(|j| m[p][j])
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn parse_and_match_never_panic(
            body in proptest::collection::vec(any::<u8>(), 0..2048),
            paths in proptest::collection::vec(".{0,64}", 0..8),
        ) {
            let r = Robots::parse(&body, TOKEN);
            for p in &paths {
                let _ = r.is_allowed(p);
            }
            let _ = r.crawl_delay();
        }

        #[test]
        fn structured_robots_never_panic(
            lines in proptest::collection::vec(
                (
                    proptest::sample::select(&["User-agent", "ALLOW", "disallow", "Crawl-delay", "sitemap", "x"][..]),
                    "[ \t]{0,2}",
                    "[*$/a-c%0-9A-F.?# \u{e9}-]{0,12}",
                ),
                0..24,
            ),
            sep in "(\n|\r|\r\n)",
            path in "[*$/a-c%0-9A-F.?\u{e9}-]{0,16}",
        ) {
            let body: String = lines.iter().map(|(k, w, v)| format!("{k}{w}:{w}{v}{sep}")).collect();
            let _ = Robots::parse(body.as_bytes(), TOKEN).is_allowed(&path);
        }

        #[test]
        fn decision_matches_reference(
            rules in proptest::collection::vec((any::<bool>(), "[/ab*$]{0,6}"), 0..8),
            path in "/[/ab$*?]{0,8}",
        ) {
            let body: String = rules
                .iter()
                .map(|(allow, pat)| format!("{}: {pat}\n", if *allow { "Allow" } else { "Disallow" }))
                .collect();
            let robots = Robots::parse(format!("User-agent: *\n{body}").as_bytes(), TOKEN);
            // Reference: every rule in file order, the longest match wins, Allow on a tie.
            let best = rules
                .iter()
                .filter(|(_, pat)| !pat.is_empty())
                .filter(|(_, pat)| {
                    let body = pat.strip_suffix('$').unwrap_or(pat);
                    naive_match(body.as_bytes(), body.len() < pat.len(), path.as_bytes())
                })
                .map(|(allow, pat)| (pat.len(), *allow))
                .max();
            prop_assert_eq!(robots.is_allowed(&path), best.is_none_or(|(_, allow)| allow));
        }

        #[test]
        fn wildcard_matches_reference(
            pattern in "[ab*]{0,10}",
            anchored in any::<bool>(),
            path in "[ab]{0,12}",
        ) {
            prop_assert_eq!(
                wildcard_match(pattern.as_bytes(), anchored, path.as_bytes()),
                naive_match(pattern.as_bytes(), anchored, path.as_bytes()),
            );
        }
    }
}
