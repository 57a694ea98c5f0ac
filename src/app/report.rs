//! What a run tells its user: the periodic progress line, the summary line and `stats.json`.

use std::io::{self, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::fetcher::stats::LoopStats;
use crate::store::stats_json::JsonObject;
use crate::ReturnCode;

/// How often the progress line goes to stderr.
const STATS_INTERVAL: Duration = Duration::from_secs(2);

/// Prints a stats line every few seconds.
pub struct Progress {
    started: Instant,
    next: Instant,
    last_ok: u64,
    last_bytes: u64,
    last_at: Instant,
}

impl Progress {
    pub fn new(started: Instant) -> Progress {
        Progress {
            started,
            next: started + STATS_INTERVAL,
            last_ok: 0,
            last_bytes: 0,
            last_at: started,
        }
    }

    /// Prints the line when it is due; returns whether it did (the caller then also flushes
    /// the log and WARC, so `tail -f crawl.log` follows the run and a crash loses little).
    ///
    /// `stats` is called only when a line is due: collecting them walks every live fetch, which
    /// is too much to do on every loop turn.
    pub fn maybe_print(&mut self, stats: impl FnOnce() -> LoopStats) -> bool {
        let now = Instant::now();
        if now < self.next {
            return false;
        }
        let s = &stats();
        self.next = now + STATS_INTERVAL;
        let secs = now.duration_since(self.last_at).as_secs_f64().max(1e-6);
        let fetched = s.outcomes.total();
        let rate = (fetched - self.last_ok) as f64 / secs;
        let mbs = (s.bytes_received - self.last_bytes) as f64 / secs / 1e6;
        self.last_ok = fetched;
        self.last_bytes = s.bytes_received;
        self.last_at = now;
        let _ = writeln!(
            io::stderr(),
            "[{:>6.1}s] fetched {} | {:.0} pages/s | {:.1} MB/s | live {} (dns {}, http wait {}) | conns {} | buffered {:.1} MB, spooled {:.1} MB | errors {}",
            now.duration_since(self.started).as_secs_f64(),
            fetched,
            rate,
            mbs,
            s.live,
            s.waiting_dns,
            s.waiting_http,
            s.conns_open,
            s.buffered_bytes as f64 / 1e6,
            s.spooled_bytes as f64 / 1e6,
            s.outcomes.failed(),
        );
        true
    }
}

/// The end-of-run figures, as a stderr line and as `stats.json`.
pub struct Summary<'a> {
    pub urls: u64,
    pub stats: &'a LoopStats,
    pub body_bytes: u64,
    pub elapsed: Duration,
    pub warc_files: usize,
}

impl Summary<'_> {
    pub fn pages_per_sec(&self) -> f64 {
        self.stats.outcomes.total() as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    pub fn json(&self, extra: &[(&str, u64)]) -> JsonObject {
        let (cpu, rss) = process_usage();
        let failures: Vec<(&str, u64)> = self
            .stats
            .outcomes
            .failures()
            .into_iter()
            .map(|(c, n)| (c.name(), n))
            .collect();
        let mut j = JsonObject::new();
        j.uint("urls", self.urls)
            .uint("ok", self.stats.outcomes.get(ReturnCode::Success))
            .uint("failed_total", self.stats.outcomes.failed())
            .counts("failed", &failures)
            .uint("bytes", self.stats.bytes_received)
            .uint("body_bytes", self.body_bytes)
            .float("seconds", self.elapsed.as_secs_f64())
            .float("pages_per_sec", self.pages_per_sec())
            .uint("peak_live_fetches", self.stats.peak_live as u64)
            .uint("dns_queries_sent", self.stats.dns_queries_sent)
            .uint("dns_cache_hits", self.stats.dns_cache_hits)
            .uint("connections_opened", self.stats.conns_opened)
            .uint("connections_reused", self.stats.conns_reused)
            .uint("stale_connection_retries", self.stats.stale_retries)
            .uint("peak_buffered_bytes", self.stats.peak_buffered_bytes as u64)
            .uint("spilled_responses", self.stats.spilled_responses)
            .uint("warc_files", self.warc_files as u64)
            .float("cpu_seconds", cpu.as_secs_f64())
            .uint("peak_rss_bytes", rss);
        for &(k, v) in extra {
            j.uint(k, v);
        }
        j
    }

    pub fn line(&self) -> String {
        let failures: Vec<String> = self
            .stats
            .outcomes
            .failures()
            .iter()
            .take(5)
            .map(|(c, n)| format!("{c} {n}"))
            .collect();
        format!(
            "done: {} URLs, {} ok, {} failed{} in {:.2}s ({:.0} pages/s, {:.1} MB), {} WARC file(s)",
            self.urls,
            self.stats.outcomes.get(ReturnCode::Success),
            self.stats.outcomes.failed(),
            if failures.is_empty() {
                String::new()
            } else {
                format!(" ({})", failures.join(", "))
            },
            self.elapsed.as_secs_f64(),
            self.pages_per_sec(),
            self.stats.bytes_received as f64 / 1e6,
            self.warc_files,
        )
    }
}

/// Everything a finished crawl reports.
pub struct CrawlReport {
    pub stats: LoopStats,
    pub counters: crate::crawl::CrawlCounters,
    pub frontier_left: u64,
    pub urls_seen: u64,
    pub seen_bytes_per_url: f64,
    pub rejections: Vec<(&'static str, u64)>,
    pub body_bytes: u64,
    pub warc_files: Vec<PathBuf>,
    pub out_dir: PathBuf,
    pub elapsed: Duration,
    pub interrupted: bool,
}

impl CrawlReport {
    pub fn summary(&self) -> Summary<'_> {
        Summary {
            urls: self.stats.outcomes.total(),
            stats: &self.stats,
            body_bytes: self.body_bytes,
            elapsed: self.elapsed,
            warc_files: self.warc_files.len(),
        }
    }

    pub fn json(&self) -> JsonObject {
        let c = &self.counters;
        let mut json = self.summary().json(&[
            ("pages_fetched", c.pages_fetched),
            ("robots_fetched", c.robots_fetched),
            ("frontier_size", self.frontier_left),
            ("urls_seen", self.urls_seen),
            ("links_found", c.links_found),
            ("duplicate_urls_skipped", c.duplicate_urls),
            ("duplicate_content", c.duplicate_content),
            ("robots_excluded", c.robots_excluded),
            ("redirects_followed", c.redirects_followed),
            ("too_many_redirects", c.too_many_redirects),
            ("bad_links", c.bad_links),
            ("pages_scan_truncated", c.pages_scan_truncated),
            ("links_over_page_cap", c.links_over_page_cap),
            (
                "trap_guard_rejections",
                self.rejections.iter().map(|&(_, n)| n).sum(),
            ),
        ]);
        json.counts("rejected", &self.rejections)
            .float("seen_bytes_per_url", self.seen_bytes_per_url);
        json
    }

    pub fn line(&self) -> String {
        format!(
            "{}; {} URLs seen, {} duplicates skipped, {} robots exclusions, {:.1} bytes/seen URL",
            self.summary().line(),
            self.urls_seen,
            self.counters.duplicate_urls,
            self.counters.robots_excluded,
            self.seen_bytes_per_url
        )
    }
}

/// CPU time (user + system) used by this process so far, and its peak resident set in bytes.
pub fn process_usage() -> (std::time::Duration, u64) {
    // SAFETY: getrusage writes into the zeroed struct we own; RUSAGE_SELF is always valid.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    if rc != 0 {
        return (std::time::Duration::ZERO, 0);
    }
    let tv = |t: libc::timeval| {
        std::time::Duration::from_secs(t.tv_sec.max(0) as u64)
            + std::time::Duration::from_micros(t.tv_usec.max(0) as u64)
    };
    let cpu = tv(usage.ru_utime) + tv(usage.ru_stime);
    // Linux reports ru_maxrss in KiB.
    (cpu, (usage.ru_maxrss.max(0) as u64) * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_usage_reports_something() {
        let (_cpu, rss) = process_usage();
        assert!(rss > 0);
    }
}
