//! robots.txt (RFC 9309, ARCHITECTURE §8): parsing, matching, and a per-origin cache.
//!
//! Sans-IO. [`Robots`] turns a robots.txt body into the rules that apply to our product token and
//! answers [`Robots::is_allowed`]. [`RobotsCache`] is the per-origin state machine: the crawl layer
//! asks [`RobotsCache::check`] right before fetching a URL; when told [`Check::NeedFetch`] it fetches
//! `/robots.txt` through the event loop (following up to 5 redirects itself) and reports back with
//! [`RobotsCache::fetch_done`]. Time is always passed in as `now`.
//!
//! [`sitemap_lines`] reads the `Sitemap:` lines (outside the groups, for every crawler);
//! [`directives`] the robots directives pages carry (`<meta name="robots">`, `X-Robots-Tag`).
//!
//! Not here: fetching and redirects (crawl layer over `fetch`), honouring Crawl-delay (the
//! frontier, §6), and reading the sitemaps themselves (`discovery::sitemap`).
//!
//! Bounds: at most [`MAX_ROBOTS_BYTES`] of a body is parsed; at most [`MAX_RULES`] rules are kept
//! per group set, each pattern at most [`MAX_PATTERN_BYTES`] (16 KiB) after normalization. A
//! longer pattern must never make us allow more than the site asked: a longer Disallow is cut to
//! its first `MAX_PATTERN_BYTES` and matched as a prefix (it then disallows at least what the site
//! said, and still outranks every Allow it would have outranked); a longer Allow is dropped (cut
//! short, it would allow more). Normalization at most triples a value, so the patterns kept add up
//! to at most 3 × `MAX_ROBOTS_BYTES`. Matching one rule is O(pattern + path): wildcards are matched
//! greedily, segment by segment, with `memmem` (linear), so no pattern can make it backtrack. One
//! `is_allowed` call is therefore O(total pattern bytes + rules × path length), at most
//! O(3 × MAX_ROBOTS_BYTES + MAX_RULES × path length).

use std::borrow::Cow;
use std::time::Duration;

use memchr::{memchr, memchr2, memmem, memrchr};

/// At most this much of a robots.txt body is parsed (RFC 9309 asks for at least 500 KiB); the rest
/// is ignored, and so is a line cut in two by the limit.
pub const MAX_ROBOTS_BYTES: usize = 512 * 1024;
/// At most this many rules are kept for the group set that applies to us; later rules are ignored.
pub const MAX_RULES: usize = 10_000;
/// Patterns up to this many octets (after percent-encoding normalization, a final `$` included) are
/// kept whole. A longer Disallow is cut to this length and matched as a prefix; a longer Allow is
/// ignored. (Google's parser keeps the first 16,664 bytes of a line.)
pub const MAX_PATTERN_BYTES: usize = 16 * 1024;
/// Crawl-delay values above this are clamped to it (a day: more than that is the frontier's call).
pub const MAX_CRAWL_DELAY: Duration = Duration::from_secs(24 * 60 * 60);
/// The cache's `max_age` and `retry_after` are clamped to this, so `now + age` cannot overflow.
pub const MAX_CACHE_AGE: Duration = Duration::from_secs(365 * 24 * 60 * 60);

/// The UTF-8 byte order mark; a body may start with all of it or, cut short, with `EF BB` or `EF`.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// One compiled Allow/Disallow rule; its pattern lives in `Robots::patterns[start..start + len]`.
#[derive(Clone, Copy, Debug)]
struct Rule {
    start: usize,
    len: usize,
    /// The pattern ended in `$`: the path must end where the pattern does.
    anchored: bool,
    allow: bool,
    /// Normalized pattern length in octets, `$` included: longest match wins. A Disallow cut at
    /// `MAX_PATTERN_BYTES` gets `MAX_PATTERN_BYTES + 1`: its full pattern was longer than any rule
    /// kept whole, so it still beats every Allow the full pattern beat.
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
        let body = strip_bom(body);

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
        // An Allow over the limit is dropped. Cheap early reject: normalization shrinks a pattern
        // at most 3x (%XX → X).
        if allow && value.len() > 3 * MAX_PATTERN_BYTES {
            return;
        }
        let start = self.patterns.len();
        let whole = normalize_into(value, &mut self.patterns, MAX_PATTERN_BYTES);
        let priority = if whole {
            self.patterns.len() - start
        } else if allow {
            self.patterns.truncate(start);
            return;
        } else {
            // A Disallow cut short: a prefix match on what is kept covers all the full pattern
            // covered. A `$` the cut left at the end is a literal, not an anchor.
            MAX_PATTERN_BYTES + 1
        };
        let anchored = whole && self.patterns.last() == Some(&b'$');
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

/// Strips a byte order mark from the start of the body, or the start of one (`EF BB`, `EF`), as
/// Google's parser does. A line starting with those bytes is never a record anyway.
fn strip_bom(body: &[u8]) -> &[u8] {
    let n = body.iter().zip(BOM).take_while(|(a, b)| a == b).count();
    &body[n..]
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
///
/// Appends at most `limit` octets to `out` and stops reading there (every input byte or `%XX` yields
/// at least one octet, so at most 3 × `limit` input bytes are read). Returns whether the whole
/// input fit; if not, what was appended is the first `limit` octets of the full normalization
/// (which may end inside a `%XX`).
fn normalize_into(input: &[u8], out: &mut Vec<u8>, limit: usize) -> bool {
    let end = out.len().saturating_add(limit);
    out.reserve(input.len().min(limit));
    let mut i = 0;
    // Bounded: every pass consumes at least one input byte, or returns.
    while i < input.len() {
        let room = end.saturating_sub(out.len());
        if room == 0 {
            out.truncate(end);
            return false;
        }
        let n = (input.len() - i).min(room);
        let run = input[i..i + n]
            .iter()
            .position(|&b| NEEDS_NORMALIZING[b as usize])
            .unwrap_or(n);
        out.extend_from_slice(&input[i..i + run]);
        i += run;
        if out.len() >= end {
            continue;
        }
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
    // The last `%XX` written may have run past `end`.
    if out.len() > end {
        out.truncate(end);
        return false;
    }
    true
}

fn normalize_path(path: &[u8]) -> Cow<'_, [u8]> {
    if path.iter().any(|&b| NEEDS_NORMALIZING[b as usize]) {
        let mut out = Vec::with_capacity(path.len() + 8);
        normalize_into(path, &mut out, usize::MAX);
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

mod cache;
pub mod directives;
mod saved;
mod sitemap_lines;

pub use cache::{Check, FetchResult, RobotsCache};
pub use directives::Directives;
pub use sitemap_lines::{sitemap_lines, MAX_SITEMAP_LINES, MAX_SITEMAP_URL_BYTES};

#[cfg(test)]
mod tests;
