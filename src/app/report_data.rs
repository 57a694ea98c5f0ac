//! What `spinneret report` reads from a crawl's directory, in bounded memory however large
//! the crawl: crawl.log streamed once into time buckets (merged pairwise as the run grows
//! longer, so there are never more than [`MAX_BUCKETS`]), a capped table of hosts, and
//! log-scale histograms of fetch time and page size; the MIME types and depths stats.json
//! counted (every run's: `stats.json` and the `stats.N.json` of earlier runs); the timeline.
//!
//! Nothing here trusts the files: a line that does not parse is counted as unreadable and
//! skipped, a missing stats.json or timeline is `None`.

use std::collections::HashMap;
use std::io::{self, BufRead, Read};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::app::line_class::LineClass;
use crate::crawl::sink::Hop;
use crate::store::archive::crawl_log::{parse_line, ParsedLine, MAX_LINE_BYTES};
use crate::store::archive::timeline::Timeline;
use crate::ReturnCode;

/// Most time buckets; past it neighbours merge and the width doubles.
pub const MAX_BUCKETS: usize = 240;
/// Hosts tallied at once; past it the less visited half is dropped (see [`HostTable`]).
pub const MAX_HOSTS: usize = 4096;
/// Log-scale histogram buckets: `0`, then `[2^(i-1), 2^i)` for `i` in `1..`.
pub const LOG_BUCKETS: usize = 42;
/// Most bytes of stats.json read.
const STATS_LIMIT: u64 = 1 << 20;
/// Earlier runs' `stats.N.json` looked for.
const MAX_STATS_FILES: u32 = 10_000;

/// Status classes charted over time: no response, 1xx … 5xx.
pub const STATUS_CLASSES: [&str; 6] = ["no response", "1xx", "2xx", "3xx", "4xx", "5xx"];

/// One time bucket of crawl.log.
#[derive(Clone, Debug)]
pub struct Bucket {
    /// Lines, pages (lines but robots.txt's) and body bytes.
    pub lines: u64,
    pub pages: u64,
    pub bytes: u64,
    /// Lines by outcome, indexed as [`ReturnCode::ALL`].
    pub outcomes: Vec<u64>,
    /// Lines by [`STATUS_CLASSES`].
    pub statuses: [u64; 6],
}

impl Bucket {
    fn new() -> Bucket {
        Bucket {
            lines: 0,
            pages: 0,
            bytes: 0,
            outcomes: vec![0; ReturnCode::ALL.len()],
            statuses: [0; 6],
        }
    }

    fn merge(&mut self, o: &Bucket) {
        self.lines += o.lines;
        self.pages += o.pages;
        self.bytes += o.bytes;
        for (a, b) in self.outcomes.iter_mut().zip(&o.outcomes) {
            *a += b;
        }
        for (a, b) in self.statuses.iter_mut().zip(o.statuses) {
            *a += b;
        }
    }
}

/// A host's lines, errors and body bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostTally {
    pub lines: u64,
    pub errors: u64,
    pub bytes: u64,
}

/// Hosts' tallies in bounded memory: at most [`MAX_HOSTS`] hosts; when full, the half with
/// fewest lines is dropped, and the most lines a dropped host had is remembered: a host
/// listed may then miss up to that many lines of its own (it was dropped and came back), a
/// host with more is certain to be listed, exactly once.
#[derive(Debug, Default)]
pub struct HostTable {
    hosts: HashMap<String, HostTally>,
    /// The most lines of a dropped host: the count a listed host may lack.
    pub dropped_max: u64,
    /// Hosts dropped (counted once per drop).
    pub dropped: u64,
}

impl HostTable {
    fn add(&mut self, host: &str, errors: u64, bytes: u64) {
        if !self.hosts.contains_key(host) && self.hosts.len() >= MAX_HOSTS {
            self.shrink();
        }
        // Allocates only for a host not in the table.
        let t = match self.hosts.get_mut(host) {
            Some(t) => t,
            None => self.hosts.entry(host.to_string()).or_default(),
        };
        t.lines += 1;
        t.errors += errors;
        t.bytes += bytes;
    }

    fn shrink(&mut self) {
        let mut lines: Vec<u64> = self.hosts.values().map(|t| t.lines).collect();
        let mid = lines.len() / 2;
        let (_, &mut cut, _) = lines.select_nth_unstable(mid);
        let before = self.hosts.len();
        let mut dropped_max = self.dropped_max;
        // Keep those above the median, and as many at it as make half.
        let above = self.hosts.values().filter(|t| t.lines > cut).count();
        let mut at_cut_kept = (before - mid).saturating_sub(above);
        self.hosts.retain(|_, t| {
            let keep = t.lines > cut || (t.lines == cut && at_cut_kept > 0);
            if t.lines == cut && keep {
                at_cut_kept -= 1;
            }
            if !keep {
                dropped_max = dropped_max.max(t.lines);
            }
            keep
        });
        self.dropped += (before - self.hosts.len()) as u64;
        self.dropped_max = dropped_max;
    }

    /// The top `n` hosts by `key`, most first (ties by name).
    pub fn top(&self, n: usize, key: impl Fn(&HostTally) -> u64) -> Vec<(&str, HostTally)> {
        let mut v: Vec<(&str, HostTally)> = self
            .hosts
            .iter()
            .map(|(h, t)| (h.as_str(), *t))
            .filter(|(_, t)| key(t) > 0)
            .collect();
        v.sort_by(|a, b| key(&b.1).cmp(&key(&a.1)).then(a.0.cmp(b.0)));
        v.truncate(n);
        v
    }
}

/// A log-scale histogram: bucket 0 holds 0, bucket `i` holds `[2^(i-1), 2^i)`.
#[derive(Clone, Debug)]
pub struct LogHistogram(pub [u64; LOG_BUCKETS]);

impl Default for LogHistogram {
    fn default() -> Self {
        LogHistogram([0; LOG_BUCKETS])
    }
}

impl LogHistogram {
    pub fn add(&mut self, v: u64) {
        let i = (64 - v.leading_zeros()) as usize;
        self.0[i.min(LOG_BUCKETS - 1)] += 1;
    }

    /// (lower bound, upper bound exclusive, count) of the buckets from the first to the
    /// last that hold anything; the last bucket's upper bound is `None` (unbounded).
    pub fn ranges(&self) -> Vec<(u64, Option<u64>, u64)> {
        let Some(first) = self.0.iter().position(|&n| n > 0) else {
            return Vec::new();
        };
        let last = self.0.iter().rposition(|&n| n > 0).unwrap_or(first);
        (first..=last)
            .map(|i| {
                let lo = if i == 0 { 0 } else { 1u64 << (i - 1) };
                let hi = (i + 1 < LOG_BUCKETS).then(|| 1u64 << i);
                (lo, hi, self.0[i])
            })
            .collect()
    }
}

/// What crawl.log says, summarized.
#[derive(Debug)]
pub struct LogSummary {
    /// Time of the first line, and the width of a bucket (ms).
    pub start_ms: u64,
    pub end_ms: u64,
    pub bucket_ms: u64,
    pub buckets: Vec<Bucket>,
    pub totals: Bucket,
    pub hosts: HostTable,
    pub fetch_ms: LogHistogram,
    /// Body bytes of pages with a complete response.
    pub page_bytes: LogHistogram,
    /// Lines that did not parse (a torn last line, damage).
    pub unreadable: u64,
}

impl Default for LogSummary {
    fn default() -> Self {
        LogSummary {
            start_ms: 0,
            end_ms: 0,
            bucket_ms: 1000,
            buckets: Vec::new(),
            totals: Bucket::new(),
            hosts: HostTable::default(),
            fetch_ms: LogHistogram::default(),
            page_bytes: LogHistogram::default(),
            unreadable: 0,
        }
    }
}

fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).unwrap_or_default().as_millis() as u64
}

/// The host of a logged URL (`scheme://[userinfo@]host[:port]/…`), lowercased as logged.
pub fn host_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if host_port.starts_with('[') {
        // An IPv6 literal keeps its brackets, up to the closing one.
        return host_port.find(']').map_or(host_port, |i| &host_port[..=i]);
    }
    host_port.split_once(':').map_or(host_port, |(h, _)| h)
}

impl LogSummary {
    /// Counts one line.
    pub fn add(&mut self, l: &ParsedLine) {
        let t = unix_ms(l.time);
        if self.totals.lines == 0 {
            self.start_ms = t;
            self.end_ms = t;
        }
        self.end_ms = self.end_ms.max(t);
        // Lines of several loops interleave a little out of order: an earlier one counts in
        // the first bucket.
        let mut i = (t.saturating_sub(self.start_ms) / self.bucket_ms) as usize;
        while i >= MAX_BUCKETS {
            self.merge_buckets();
            i = (t.saturating_sub(self.start_ms) / self.bucket_ms) as usize;
        }
        if self.buckets.len() <= i {
            self.buckets.resize_with(i + 1, Bucket::new);
        }
        let page = l.hop != Some(Hop::Prerequisite);
        let outcome_i = ReturnCode::ALL.iter().position(|&c| c == l.outcome);
        let status_i = match l.status {
            100..=599 => usize::from(l.status / 100),
            _ => 0,
        };
        for b in [&mut self.buckets[i], &mut self.totals] {
            b.lines += 1;
            b.pages += u64::from(page);
            b.bytes += l.body_bytes;
            if let Some(o) = outcome_i {
                b.outcomes[o] += 1;
            }
            b.statuses[status_i] += 1;
        }
        let error = l.outcome != ReturnCode::RetryLater
            && (LineClass::of(l.outcome) == LineClass::Failed
                || (l.outcome.is_success() && l.status >= 400));
        self.hosts
            .add(host_of(&l.url), u64::from(error), l.body_bytes);
        self.fetch_ms.add(l.fetch_ms);
        if l.outcome.is_success() && page {
            self.page_bytes.add(l.body_bytes);
        }
    }

    fn merge_buckets(&mut self) {
        let merged: Vec<Bucket> = self
            .buckets
            .chunks(2)
            .map(|pair| {
                let mut b = pair[0].clone();
                if let Some(o) = pair.get(1) {
                    b.merge(o);
                }
                b
            })
            .collect();
        self.buckets = merged;
        self.bucket_ms = self.bucket_ms.saturating_mul(2);
    }

    /// Streams the log at `path`. Lines longer than crawl.log ever writes, or not UTF-8,
    /// are skipped as unreadable, without being held whole.
    pub fn read(path: &Path) -> io::Result<LogSummary> {
        let mut s = LogSummary::default();
        let mut r = io::BufReader::with_capacity(256 * 1024, std::fs::File::open(path)?);
        let mut line = Vec::with_capacity(1024);
        // Bounded by the file: each pass consumes at least one byte, or ends.
        loop {
            line.clear();
            let n = (&mut r)
                .take(MAX_LINE_BYTES as u64 + 1)
                .read_until(b'\n', &mut line)?;
            if n == 0 {
                return Ok(s);
            }
            if line.last() != Some(&b'\n') {
                if n > MAX_LINE_BYTES {
                    skip_to_newline(&mut r)?;
                }
                // Too long, or the torn end of the file.
                s.unreadable += 1;
                continue;
            }
            match std::str::from_utf8(&line).ok().and_then(parse_line) {
                Some(l) => s.add(&l),
                None if line.starts_with(b"#") => {}
                None => s.unreadable += 1,
            }
        }
    }
}

fn skip_to_newline(r: &mut impl BufRead) -> io::Result<()> {
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            return Ok(());
        }
        if let Some(i) = memchr::memchr(b'\n', buf) {
            r.consume(i + 1);
            return Ok(());
        }
        let n = buf.len();
        r.consume(n);
    }
}

/// The `"key": {"name": n, …}` object of a stats.json (one line, as `JsonObject::counts`
/// writes it); empty if absent or unreadable.
pub fn json_counts(text: &str, key: &str) -> Vec<(String, u64)> {
    let prefix = format!("\"{key}\": {{");
    let Some(body) = text
        .lines()
        .take(1000)
        .find_map(|l| l.trim().strip_prefix(prefix.as_str()))
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut rest = body;
    // Bounded by the line: each pass consumes a pair or ends.
    while out.len() < 10_000 {
        rest = rest.trim_start_matches([',', ' ']);
        let Some(r) = rest.strip_prefix('"') else {
            break;
        };
        let Some((name, after)) = json_string(r) else {
            break;
        };
        let Some(after) = after.trim_start().strip_prefix(':') else {
            break;
        };
        let after = after.trim_start();
        let end = after
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(after.len());
        let Ok(n) = after[..end].parse::<u64>() else {
            break;
        };
        out.push((name, n));
        rest = &after[end..];
    }
    out
}

/// A JSON string's content up to its closing quote (after the opening one), unescaped, and
/// what follows it.
fn json_string(s: &str) -> Option<(String, &str)> {
    let mut out = String::new();
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((out, &s[i + 1..])),
            '\\' => match chars.next()?.1 {
                'n' => out.push('\n'),
                'r' => out.push('\r'),
                't' => out.push('\t'),
                'u' => {
                    let mut v = 0u32;
                    for _ in 0..4 {
                        v = v * 16 + chars.next()?.1.to_digit(16)?;
                    }
                    out.push(char::from_u32(v).unwrap_or('\u{fffd}'));
                }
                other => out.push(other),
            },
            c => out.push(c),
        }
    }
    None
}

/// Counts from the crawl's stats files: `stats.json` and earlier runs' `stats.N.json`.
#[derive(Debug, Default)]
pub struct StatsCounts {
    /// Files read.
    pub files: u32,
    pub mime_types: Vec<(String, u64)>,
    pub depths: Vec<(String, u64)>,
    /// The latest stats.json's text (for its totals), if there is one.
    pub latest: Option<String>,
}

fn add_counts(into: &mut Vec<(String, u64)>, from: Vec<(String, u64)>) {
    for (k, n) in from {
        match into.iter_mut().find(|(m, _)| *m == k) {
            Some(slot) => slot.1 += n,
            None => into.push((k, n)),
        }
    }
}

fn read_limited(path: &Path, limit: u64) -> io::Result<String> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(limit)
        .read_to_end(&mut bytes)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

impl StatsCounts {
    /// Reads every run's stats in `dir` (none: `files` 0).
    pub fn read(dir: &Path) -> StatsCounts {
        let mut s = StatsCounts::default();
        let mut paths = vec![dir.join("stats.json")];
        // Earlier runs' are numbered from 1 without gaps (see `crawl_command`).
        for n in 1..MAX_STATS_FILES {
            let p = dir.join(format!("stats.{n}.json"));
            if !p.exists() {
                break;
            }
            paths.push(p);
        }
        for (i, p) in paths.iter().enumerate() {
            let Ok(text) = read_limited(p, STATS_LIMIT) else {
                continue;
            };
            s.files += 1;
            add_counts(&mut s.mime_types, json_counts(&text, "mime_types"));
            add_counts(&mut s.depths, json_counts(&text, "depths"));
            if i == 0 {
                s.latest = Some(text);
            }
        }
        s.mime_types
            .sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        // Depths in numeric order (`32+` last).
        s.depths
            .sort_by_key(|(d, _)| d.trim_end_matches('+').parse::<u64>().unwrap_or(u64::MAX));
        s
    }
}

/// The timeline, if the crawl kept one (`None`: missing or unreadable).
pub fn read_timeline(dir: &Path) -> Option<Timeline> {
    Timeline::read(dir).ok().flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(t_ms: u64, outcome: ReturnCode, status: u16, url: &str) -> ParsedLine {
        ParsedLine {
            time: UNIX_EPOCH + std::time::Duration::from_millis(t_ms),
            outcome,
            status,
            body_bytes: 1000,
            fetch_ms: 5,
            url: url.into(),
            referrer: None,
            hop: Some(Hop::Link),
            digest: None,
            revisit: None,
            relevance: None,
            sketch: None,
            noindex: false,
        }
    }

    #[test]
    fn buckets_stay_bounded_and_keep_every_line() {
        let mut s = LogSummary::default();
        for i in 0..10_000u64 {
            s.add(&line(
                1_000_000 + i * 997,
                ReturnCode::Success,
                200,
                "http://a.test/x",
            ));
        }
        assert!(s.buckets.len() <= MAX_BUCKETS);
        assert_eq!(s.buckets.iter().map(|b| b.lines).sum::<u64>(), 10_000);
        assert_eq!(s.totals.statuses[2], 10_000);
        assert_eq!(
            s.hosts.top(5, |t| t.lines),
            [(
                "a.test",
                HostTally {
                    lines: 10_000,
                    errors: 0,
                    bytes: 10_000_000
                }
            )]
        );
    }

    #[test]
    fn the_host_table_is_capped_and_keeps_the_big_hosts() {
        let mut s = LogSummary::default();
        for i in 0..50_000u64 {
            let url = if i % 3 == 0 {
                "http://big.test/".to_string()
            } else {
                format!("https://u:p@h{i}.test:8080/p?q")
            };
            s.add(&line(i, ReturnCode::DnsTimeout, 0, &url));
        }
        assert!(s.hosts.hosts.len() <= MAX_HOSTS);
        let top = s.hosts.top(1, |t| t.errors);
        assert_eq!(top[0].0, "big.test");
        assert_eq!(top[0].1.lines, 16_667);
        assert!(s.hosts.dropped > 0 && s.hosts.dropped_max <= 1);
    }

    #[test]
    fn hosts_are_found_in_any_url() {
        assert_eq!(host_of("http://a.test/x"), "a.test");
        assert_eq!(host_of("https://u@b.test:81?x"), "b.test");
        assert_eq!(host_of("http://[::1]:80/"), "[::1]");
        assert_eq!(host_of("garbage"), "garbage");
        assert_eq!(host_of(""), "");
        assert_eq!(host_of("http://[::1"), "[::1");
    }

    #[test]
    fn log_histograms_span_what_they_hold() {
        let mut h = LogHistogram::default();
        assert!(h.ranges().is_empty());
        for v in [0, 1, 3, 1000, u64::MAX] {
            h.add(v);
        }
        let r = h.ranges();
        assert_eq!(r[0], (0, Some(1), 1));
        assert_eq!(r[1], (1, Some(2), 1));
        assert_eq!(r.last().unwrap().1, None);
        assert_eq!(r.iter().map(|x| x.2).sum::<u64>(), 5);
    }

    #[test]
    fn counts_are_read_from_stats_json_and_garbage_gives_none() {
        let text = "{\n  \"urls\": 3,\n  \"mime_types\": {\"text/html\": 5, \"a\\\"b\\u0041\": 2},\n  \"depths\": {\"0\": 1, \"32+\": 4}\n}\n";
        assert_eq!(
            json_counts(text, "mime_types"),
            [("text/html".to_string(), 5), ("a\"bA".to_string(), 2)]
        );
        assert_eq!(json_counts(text, "depths").len(), 2);
        for bad in [
            "",
            "\"mime_types\": {",
            "  \"mime_types\": {\"x\": -1}",
            "\"mime_types\": {\"\\u12",
        ] {
            assert!(json_counts(bad, "mime_types").is_empty(), "{bad:?}");
        }
    }

    #[test]
    fn a_log_with_garbage_torn_and_huge_lines_reads() {
        let tmp = crate::store::test_dir::TempDir::new("report-data", "log");
        let path = tmp.0.join("crawl.log");
        let mut bytes = crate::store::archive::crawl_log::HEADER.as_bytes().to_vec();
        bytes.extend_from_slice(
            b"2024-01-01T00:00:00.000Z\tSuccess\t200\t10\t3\thttp://a.test/\t-\tS\t-\t-\t-\n",
        );
        bytes.extend_from_slice(b"\xff\xfe garbage\n");
        bytes.extend(std::iter::repeat_n(b'x', MAX_LINE_BYTES + 10));
        bytes.extend_from_slice(
            b"\n2024-01-01T00:00:01.000Z\tSuccess\t404\t10\t3\thttp://b.test/\t-\tL\t-\t-\t-\n",
        );
        bytes.extend_from_slice(b"2024-01-01T00:00:02.000Z\tSucc");
        std::fs::write(&path, &bytes).unwrap();
        let s = LogSummary::read(&path).unwrap();
        assert_eq!(s.totals.lines, 2);
        assert_eq!(s.unreadable, 3);
        assert_eq!(s.hosts.top(1, |t| t.errors)[0].0, "b.test");
    }
}
