//! What a run tells its user: the periodic progress line, the summary line and `stats.json`.

use std::collections::VecDeque;
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::app::line_class::{ClassCounts, LineClass};
use crate::app::metrics::MetricsSlot;
use crate::app::process::process_usage;
use crate::crawl::{LineTally, RevisitCounters};
use crate::fetcher::stats::LoopStats;
use crate::store::archive::stats_json::JsonObject;
use crate::ReturnCode;

/// How often the log and WARC are flushed (and a plain progress line printed).
const FLUSH_INTERVAL: Duration = Duration::from_secs(2);
/// How often the in-place progress line is redrawn on a terminal.
const REDRAW_INTERVAL: Duration = Duration::from_millis(500);
/// The window rates are measured over.
const RATE_WINDOW: Duration = Duration::from_secs(3);

/// Whether an in-place progress line is on the terminal now (so another message must clear it
/// first).
static LINE_DRAWN: AtomicBool = AtomicBool::new(false);
/// Carriage return and "erase the whole line" (ANSI EL2).
const CLEAR_LINE: &str = "\r\x1b[2K";

/// URLs in messages are cut to about this many characters.
pub const URL_IN_MESSAGES: usize = 120;

/// How a command shows what it does.
#[derive(Clone, Copy, Debug)]
pub struct Display {
    pub progress: ProgressMode,
    pub verbose: bool,
    pub quiet: bool,
    /// `--metrics ADDR`: where the run serves its figures to Prometheus.
    pub metrics: Option<std::net::SocketAddr>,
}

/// `-v`: the output's echo of each crawl.log line (`outcome status url`), printed as
/// [`eprint_line`] does, the URL abbreviated. Whole lines only: a partial one waits.
#[derive(Default)]
pub struct EchoLines {
    pending: Vec<u8>,
}

impl Write for EchoLines {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.pending.extend_from_slice(buf);
        while let Some(end) = memchr::memchr(b'\n', &self.pending) {
            let line = String::from_utf8_lossy(&self.pending[..end]).into_owned();
            self.pending.drain(..=end);
            match line.rsplit_once(' ') {
                Some((head, url)) => {
                    eprint_line(&format!("{head} {}", abbrev(url, URL_IN_MESSAGES)))
                }
                None => eprint_line(&line),
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// `s` for a message: control characters escaped, and cut to about `max` characters with
/// the full length said (a 10 KB URL must not flood the terminal).
pub fn abbrev(s: &str, max: usize) -> String {
    let escaped: String = s.chars().flat_map(char::escape_debug).collect();
    let n = escaped.chars().count();
    if n <= max {
        return escaped;
    }
    let keep = max.saturating_sub(20).max(8);
    let head: String = escaped.chars().take(keep).collect();
    format!("{head}… ({} bytes)", s.len())
}

/// Prints a message line on stderr, clearing the progress line first if one is drawn (it
/// is redrawn at the next tick).
pub fn eprint_line(msg: &str) {
    let mut err = io::stderr().lock();
    if LINE_DRAWN.swap(false, Ordering::Relaxed) {
        let _ = err.write_all(CLEAR_LINE.as_bytes());
    }
    let _ = writeln!(err, "{msg}");
}

/// How progress is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProgressMode {
    /// Nothing (`-q`).
    Off,
    /// A plain line every few seconds (stderr is a file or a pipe).
    Lines,
    /// One line redrawn in place (stderr is a terminal).
    Redraw,
}

impl ProgressMode {
    /// `Off` when quiet, else `Redraw` on a terminal and `Lines` otherwise.
    pub fn for_stderr(quiet: bool) -> ProgressMode {
        use std::io::IsTerminal;
        if quiet {
            ProgressMode::Off
        } else if io::stderr().is_terminal() {
            ProgressMode::Redraw
        } else {
            ProgressMode::Lines
        }
    }
}

/// What the progress line shows, taken when a line is due.
#[derive(Clone, Copy, Debug)]
pub struct Figures {
    /// Fetches finished (pages and robots.txt).
    pub fetched: u64,
    /// Fetches that ended without a complete response.
    pub errors: u64,
    pub bytes: u64,
    /// URLs waiting (frontier or list).
    pub queued: u64,
    /// Fetches in flight.
    pub live: u64,
    /// Response bytes held in memory, and in the spool, by live fetches.
    pub buffered: u64,
    pub spooled: u64,
    /// Revisits, and of them 304s and changes found.
    pub revisits: u64,
    pub not_modified: u64,
    pub changed: u64,
    /// A continuous crawl's revisits that found the page fresh, of those compared (the
    /// estimated freshness), and its fetches spent on discovery (first fetches, and hubs'
    /// revisits), of all its fetches.
    pub fresh: u64,
    pub compared: u64,
    pub discovery: u64,
    pub decided: u64,
    /// Fetches by outcome (indexed by `ReturnCode as usize`): the errors by kind.
    pub outcomes: [u64; OUTCOME_KINDS],
}

/// How many outcomes there are.
pub const OUTCOME_KINDS: usize = ReturnCode::ALL.len();

impl Default for Figures {
    fn default() -> Figures {
        Figures {
            fetched: 0,
            errors: 0,
            bytes: 0,
            queued: 0,
            live: 0,
            buffered: 0,
            spooled: 0,
            revisits: 0,
            not_modified: 0,
            changed: 0,
            fresh: 0,
            compared: 0,
            discovery: 0,
            decided: 0,
            outcomes: [0; OUTCOME_KINDS],
        }
    }
}

impl Figures {
    /// Adds another partition's figures.
    fn add(&mut self, o: &Figures) {
        self.fetched += o.fetched;
        self.errors += o.errors;
        self.bytes += o.bytes;
        self.queued += o.queued;
        self.live += o.live;
        self.buffered += o.buffered;
        self.spooled += o.spooled;
        self.revisits += o.revisits;
        self.not_modified += o.not_modified;
        self.changed += o.changed;
        self.fresh += o.fresh;
        self.compared += o.compared;
        self.discovery += o.discovery;
        self.decided += o.decided;
        for (a, b) in self.outcomes.iter_mut().zip(o.outcomes) {
            *a += b;
        }
    }

    /// The fetches that failed, by outcome, most frequent first.
    pub fn failures(&self) -> Vec<(&'static str, u64)> {
        let mut v: Vec<(&'static str, u64)> = ReturnCode::ALL
            .iter()
            .zip(self.outcomes)
            .filter(|&(&c, n)| n > 0 && c != ReturnCode::Success)
            .map(|(c, n)| (c.name(), n))
            .collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        v
    }

    /// With what revisits found so far.
    pub fn with_revisits(mut self, r: &RevisitCounters) -> Figures {
        self.revisits = r.fetched;
        self.not_modified = r.not_modified;
        self.changed = r.changed;
        self.fresh = r.not_modified + r.unchanged;
        self.compared = r.compared();
        self.discovery = r.first_fetches + r.for_discovery;
        self.decided = r.first_fetches + r.fetched;
        self
    }

    pub fn of(stats: &LoopStats, queued: u64) -> Figures {
        let mut outcomes = [0; OUTCOME_KINDS];
        for (n, &c) in outcomes.iter_mut().zip(ReturnCode::ALL) {
            *n = stats.outcomes.get(c);
        }
        Figures {
            outcomes,
            fetched: stats.outcomes.total(),
            errors: stats.outcomes.failed(),
            bytes: stats.bytes_received,
            queued,
            live: stats.live as u64,
            buffered: stats.buffered_bytes as u64,
            spooled: stats.spooled_bytes,
            ..Figures::default()
        }
    }
}

/// Posts a loop's figures on the board (the board and its slot); returns the whole crawl's.
/// The lock is let go before the caller writes anything.
fn post((board, slot): &(Arc<Mutex<Vec<Figures>>>, usize), f: Figures) -> Figures {
    let mut b = board.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(mine) = b.get_mut(*slot) {
        *mine = f;
    }
    let mut whole = Figures::default();
    for other in b.iter() {
        whole.add(other);
    }
    whole
}

/// The progress display: a line redrawn in place on a terminal, a line every few seconds
/// otherwise, or nothing; and the cue to flush the output every few seconds in every mode.
pub struct Progress {
    mode: ProgressMode,
    started: Instant,
    next_draw: Instant,
    next_flush: Instant,
    /// (when, fetched, bytes) samples over the rate window.
    samples: VecDeque<(Instant, u64, u64)>,
    /// `--max-pages`, for the ETA.
    max_pages: Option<u64>,
    /// With `--loops`: every loop's latest figures, and this loop's slot. The loop that
    /// shows the line shows their sum; the others only post theirs.
    board: Option<(Arc<Mutex<Vec<Figures>>>, usize)>,
    /// Called with the whole crawl's figures at every flush (`crawl` writes its progress
    /// snapshot with it: `app::run_files`). Only the loop that shows the line has one.
    on_flush: Option<FlushHook>,
    /// With `--metrics`: where this loop publishes its figures.
    metrics: Option<MetricsSlot>,
}

/// What [`Progress::with_flush_hook`] calls: the time and the whole crawl's figures.
/// The flag says whether this is the run's last call ([`Progress::finish`]).
pub type FlushHook = Box<dyn FnMut(Instant, &Figures, bool) + Send>;

impl Progress {
    pub fn new(started: Instant, mode: ProgressMode, max_pages: Option<u64>) -> Progress {
        let first = match mode {
            ProgressMode::Redraw => started + REDRAW_INTERVAL,
            _ => started + FLUSH_INTERVAL,
        };
        Progress {
            mode,
            started,
            next_draw: first,
            next_flush: started + FLUSH_INTERVAL,
            samples: VecDeque::from([(started, 0, 0)]),
            max_pages,
            board: None,
            on_flush: None,
            metrics: None,
        }
    }

    /// This loop publishes its figures for `--metrics` through `slot`.
    pub fn with_metrics(mut self, slot: MetricsSlot) -> Progress {
        self.metrics = Some(slot);
        self
    }

    /// Where this loop publishes its figures and the time, when a snapshot is due (or
    /// `always`). Without `--metrics`, `None` before reading the clock.
    pub fn metrics_due(&mut self, always: bool) -> Option<(&mut MetricsSlot, Instant)> {
        let slot = self.metrics.as_mut()?;
        let now = Instant::now();
        (always || slot.due(now)).then_some((slot, now))
    }

    /// This loop's progress is part of the whole crawl's, which one loop shows.
    pub fn with_board(mut self, board: Arc<Mutex<Vec<Figures>>>, slot: usize) -> Progress {
        self.board = Some((board, slot));
        self
    }

    /// `hook` gets the whole crawl's figures each time the output is to be flushed (every
    /// few seconds), whatever the display mode.
    pub fn with_flush_hook(mut self, hook: FlushHook) -> Progress {
        self.on_flush = Some(hook);
        self
    }

    /// Draws or prints the line when it is due; returns whether the output should be flushed
    /// now (every few seconds, so `tail -f crawl.log` follows the run and a crash loses little).
    ///
    /// `figures` is called only when a line (or the flush hook) is due: collecting the loop's stats walks every
    /// live fetch, which is too much to do on every loop turn.
    pub fn tick(&mut self, figures: impl FnOnce() -> Figures) -> bool {
        let now = Instant::now();
        let flush = now >= self.next_flush;
        if flush {
            self.next_flush = now + FLUSH_INTERVAL;
        }
        let posts = self.board.is_some();
        let draw = (self.mode != ProgressMode::Off || posts) && now >= self.next_draw;
        let hook = flush && self.on_flush.is_some();
        if !draw && !hook {
            return flush;
        }
        if draw {
            self.next_draw = now
                + match self.mode {
                    ProgressMode::Redraw | ProgressMode::Off => REDRAW_INTERVAL,
                    _ => FLUSH_INTERVAL,
                };
        }
        let mut f = figures();
        if let Some(board) = &self.board {
            if self.mode == ProgressMode::Off && !hook {
                post(board, f);
                return flush;
            }
            f = post(board, f);
        }
        if let (true, Some(on_flush)) = (hook, self.on_flush.as_mut()) {
            on_flush(now, &f, false);
        }
        if !draw || self.mode == ProgressMode::Off {
            return flush;
        }
        let line = self.line(now, &f);
        let mut err = io::stderr().lock();
        match self.mode {
            ProgressMode::Redraw => {
                let width = terminal_width().unwrap_or(100).saturating_sub(1).max(20);
                let shown: String = line.chars().take(width).collect();
                let _ = write!(err, "{CLEAR_LINE}{shown}");
                let _ = err.flush();
                LINE_DRAWN.store(true, Ordering::Relaxed);
            }
            _ => {
                let _ = writeln!(err, "{line}");
            }
        }
        flush
    }

    /// Ends the display at the end of a run: the line taken off the terminal, and the flush
    /// hook called a last time, so what it records (the timeline) has the run's end.
    pub fn finish(&mut self, figures: impl FnOnce() -> Figures) {
        self.clear();
        if self.on_flush.is_none() {
            return;
        }
        let mut f = figures();
        if let Some(board) = &self.board {
            f = post(board, f);
        }
        if let Some(on_flush) = self.on_flush.as_mut() {
            on_flush(Instant::now(), &f, true);
        }
    }

    /// Takes the in-place line off the terminal (before the summary).
    pub fn clear(&mut self) {
        if LINE_DRAWN.swap(false, Ordering::Relaxed) {
            let _ = io::stderr().write_all(CLEAR_LINE.as_bytes());
        }
    }

    fn line(&mut self, now: Instant, f: &Figures) -> String {
        self.samples.push_back((now, f.fetched, f.bytes));
        while self.samples.len() > 2 && now.duration_since(self.samples[0].0) > RATE_WINDOW {
            self.samples.pop_front();
        }
        let (t0, fetched0, bytes0) = self.samples[0];
        let secs = now.duration_since(t0).as_secs_f64().max(1e-3);
        let rate = f.fetched.saturating_sub(fetched0) as f64 / secs;
        let mbs = f.bytes.saturating_sub(bytes0) as f64 / secs / 1e6;
        let eta = match self.max_pages {
            Some(max) if rate > 0.0 => {
                let left = max.saturating_sub(f.fetched) as f64 / rate;
                format!(" | ETA {}", duration_text(left))
            }
            Some(_) => " | ETA -".to_string(),
            None => String::new(),
        };
        let revisits = match f.revisits {
            0 => String::new(),
            n => format!(
                " | revisits {n} ({} not modified, {} changed)",
                f.not_modified, f.changed
            ),
        };
        // A continuous crawl's estimated freshness and the share of its fetches spent on
        // discovery.
        let budget = match (f.compared, f.decided) {
            (0, _) | (_, 0) => String::new(),
            (compared, decided) => format!(
                " | fresh {:.2}, discovery {:.0} %",
                f.fresh as f64 / compared as f64,
                f.discovery as f64 * 100.0 / decided as f64
            ),
        };
        format!(
            "[{:>6.1}s] {} fetched | {:.0} pages/s | {:.1} MB/s | queue {} | live {} | errors {}{eta}{revisits}{budget} | buffered {:.1} MB, spooled {:.1} MB",
            now.duration_since(self.started).as_secs_f64(),
            f.fetched,
            rate,
            mbs,
            f.queued,
            f.live,
            f.errors,
            f.buffered as f64 / 1e6,
            f.spooled as f64 / 1e6,
        )
    }
}

/// `95s` → `1m35s`.
fn duration_text(secs: f64) -> String {
    let s = secs.round().clamp(0.0, 1e9) as u64;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

/// Columns of the terminal on stderr, if it is one.
fn terminal_width() -> Option<usize> {
    // SAFETY: TIOCGWINSZ writes a winsize into the zeroed struct we own; fd 2 may be anything,
    // and a failure is reported by the return value.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::ioctl(2, libc::TIOCGWINSZ, &mut ws) };
    (rc == 0 && ws.ws_col > 0).then_some(usize::from(ws.ws_col))
}

/// The end-of-run figures, as a stderr line and as `stats.json`. The counts are of crawl.log
/// lines: `urls` are the lines of the URLs given and found; robots.txt fetches have lines of
/// their own, counted apart; together they are every line of the log.
pub struct Summary<'a> {
    pub urls: &'a LineTally,
    /// The robots.txt lines (a crawl), if any.
    pub robots: Option<&'a LineTally>,
    pub stats: &'a LoopStats,
    pub body_bytes: u64,
    pub elapsed: Duration,
    pub warc_files: usize,
}

impl Summary<'_> {
    pub fn pages_per_sec(&self) -> f64 {
        self.stats.outcomes.total() as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// Outcomes of the failed lines, most frequent first.
    fn failures(&self) -> Vec<(ReturnCode, u64)> {
        let mut v: Vec<(ReturnCode, u64)> = ReturnCode::ALL
            .iter()
            .map(|&c| (c, self.urls.outcomes.get(c)))
            .filter(|&(c, n)| n > 0 && LineClass::of(c) == LineClass::Failed)
            .collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        v
    }

    fn robots_lines(&self) -> u64 {
        self.robots.map_or(0, LineTally::lines)
    }

    pub fn json(&self, extra: &[(&str, u64)]) -> JsonObject {
        let (cpu, rss) = process_usage();
        let c = ClassCounts::of(self.urls);
        let failures: Vec<(&str, u64)> = self
            .failures()
            .into_iter()
            .map(|(c, n)| (c.name(), n))
            .collect();
        let outcomes: Vec<(&str, u64)> = ReturnCode::ALL
            .iter()
            .map(|&c| (c.name(), self.urls.outcomes.get(c)))
            .filter(|&(_, n)| n > 0)
            .collect();
        let mut j = JsonObject::new();
        j.uint("urls", self.urls.lines())
            .uint("ok", c.ok)
            .uint("http_errors", c.http_errors)
            .uint("failed_total", c.failed)
            .counts("failed", &failures)
            .uint("skipped", c.skipped)
            .uint("not_fetched", c.unfinished)
            .counts("outcomes", &outcomes)
            .uint("robots_lines", self.robots_lines())
            .uint("log_lines", self.urls.lines() + self.robots_lines())
            .uint("bytes", self.stats.bytes_received)
            .uint("body_bytes", self.body_bytes)
            .float("seconds", self.elapsed.as_secs_f64())
            .float("pages_per_sec", self.pages_per_sec())
            .uint("peak_live_fetches", self.stats.peak_live as u64)
            .uint("dns_queries_sent", self.stats.dns_queries_sent)
            .uint("dns_cache_hits", self.stats.dns_cache_hits)
            .uint("dns_names_waited", self.stats.dns_names_waited)
            .uint("connections_opened", self.stats.conns_opened)
            .uint("connections_reused", self.stats.conns_reused)
            .uint("stale_connection_retries", self.stats.stale_retries)
            .uint(
                "happy_eyeballs_fallbacks",
                self.stats.happy_eyeballs_fallbacks,
            )
            .uint("proxy_tunnels", self.stats.proxy_tunnels)
            .uint("socket_reads", self.stats.socket.reads)
            .uint("socket_writes", self.stats.socket.writes)
            .uint("socket_reregistrations", self.stats.socket.reregistrations)
            .uint("tls_full_handshakes", self.stats.socket.tls_full_handshakes)
            .uint("tls_resumed_handshakes", self.stats.socket.tls_resumed)
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

    /// `done: N URLs, …` — the counts add up to N, and N plus the robots.txt lines is the
    /// number of lines in crawl.log.
    pub fn line(&self) -> String {
        let c = ClassCounts::of(self.urls);
        let failures: Vec<String> = self
            .failures()
            .iter()
            .take(5)
            .map(|(c, n)| format!("{c} {n}"))
            .collect();
        let robots = match self.robots {
            Some(r) => format!(
                "; + {} robots.txt = {} crawl.log lines",
                r.lines(),
                self.urls.lines() + r.lines()
            ),
            None => String::new(),
        };
        format!(
            "done: {} URLs, {} ok, {} HTTP errors, {} failed{}, {} skipped, {} not fetched{robots}; {:.2}s ({:.0} fetches/s, {:.1} MB), {} WARC file(s)",
            self.urls.lines(),
            c.ok,
            c.http_errors,
            c.failed,
            if failures.is_empty() {
                String::new()
            } else {
                format!(" ({})", failures.join(", "))
            },
            c.skipped,
            c.unfinished,
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
    /// Revisit records written (payloads stored before).
    pub revisits: u64,
    pub warc_files: Vec<PathBuf>,
    /// CDXJ indexes, one per WARC file.
    pub indexes: Vec<PathBuf>,
    pub out_dir: PathBuf,
    pub elapsed: Duration,
    /// How the run ended.
    pub end: crate::app::exit::RunEnd,
    /// Batches of URLs sent between partitions, and their bytes.
    pub exchange: (u64, u64),
    /// Loop time the crawl spent on completions (`fetch_done`: policy, link scan, store),
    /// summed over partitions, and of it the time in the store (WARC records, crawl.log).
    pub source_time: Duration,
    pub store_time: Duration,
}

impl CrawlReport {
    pub fn summary(&self) -> Summary<'_> {
        Summary {
            urls: &self.counters.url_lines,
            robots: Some(&self.counters.robots_lines),
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
            ("pages_fingerprinted", c.pages_fingerprinted),
            ("near_duplicates", c.near_duplicates),
            ("revisit_records", self.revisits),
            ("robots_excluded", c.robots_excluded),
            ("robots_unreachable", c.robots_unreachable),
            ("auth_retries", c.auth_retries),
            ("blocked_without_fetch", c.blocked_without_fetch),
            ("redirects_followed", c.redirects_followed),
            ("too_many_redirects", c.too_many_redirects),
            ("bad_links", c.bad_links),
            ("pages_scan_truncated", c.pages_scan_truncated),
            ("links_over_page_cap", c.links_over_page_cap),
            ("links_nofollow", c.links_nofollow),
            ("pages_nofollow", c.pages_nofollow),
            ("pages_noindex", c.pages_noindex),
            ("urls_forwarded", c.urls_forwarded),
            ("urls_received", c.urls_received),
            ("received_duplicates", c.received_duplicates),
            ("exchange_batches", self.exchange.0),
            ("exchange_bytes", self.exchange.1),
            (
                "trap_guard_rejections",
                self.rejections.iter().map(|&(_, n)| n).sum(),
            ),
            ("sitemaps_read", c.discovery.sitemaps_read),
            ("sitemap_urls", c.discovery.sitemap_urls),
            ("sitemaps_over_budget", c.discovery.sitemaps_over_budget),
            ("sitemap_urls_over_budget", c.discovery.urls_over_budget),
            ("feeds_read", c.discovery.feeds_read),
            ("feed_items", c.discovery.feed_items),
            ("discovery_unreadable", c.discovery.unreadable),
            ("revisits", c.revisits.fetched),
            ("revisits_not_modified", c.revisits.not_modified),
            ("revisits_unchanged", c.revisits.unchanged),
            ("revisits_changed", c.revisits.changed),
            ("revisit_bytes_saved", c.revisits.bytes_saved),
            ("revisits_taken_due", c.revisits.taken_due),
            ("revisits_learning", c.revisits.learning),
            ("revisits_for_freshness", c.revisits.for_freshness),
            ("revisits_for_discovery", c.revisits.for_discovery),
            ("revisits_floor", c.revisits.floor),
            ("first_fetches", c.revisits.first_fetches),
        ]);
        json.counts("rejected", &self.rejections)
            .float("seen_bytes_per_url", self.seen_bytes_per_url);
        // What `spinneret report` charts and crawl.log does not carry.
        let depths = c.shapes.depths();
        let depths: Vec<(&str, u64)> = depths.iter().map(|(d, n)| (d.as_str(), *n)).collect();
        json.counts("mime_types", &c.shapes.mime_types())
            .counts("depths", &depths);
        let f = &c.focus;
        if let Some(rate) = f.harvest_rate() {
            // (pages scored, relevant among them) along the crawl.
            json.uint("focus_pages_scored", f.scored)
                .uint("focus_pages_relevant", f.relevant)
                .float("harvest_rate", rate)
                .pairs("harvest_curve", &f.curve);
        }
        let r = &c.revisits;
        if let (Some(fresh), Some(age)) = (r.freshness(), r.mean_age_secs()) {
            json.float("estimated_freshness", fresh)
                .float("estimated_mean_age_secs", age);
        }
        // A continuous crawl's budget: the freshness its intervals aim at, and the share of
        // its fetches that went to discovery (new URLs, and hubs and feeds for them).
        if let Some(planned) = r.planned_freshness() {
            json.float("planned_freshness", planned);
        }
        if let Some(share) = r.discovery_share() {
            json.float("discovery_share", share);
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flush_hook_gets_the_whole_crawl_and_a_last_call_at_the_end() {
        let calls = Arc::new(Mutex::new(Vec::new()));
        let seen = calls.clone();
        let board = Arc::new(Mutex::new(vec![Figures::default(); 2]));
        board.lock().unwrap()[1].fetched = 5;
        let mut p = Progress::new(Instant::now(), ProgressMode::Off, None)
            .with_board(board, 0)
            .with_flush_hook(Box::new(move |_, f, last| {
                seen.lock().unwrap().push((f.fetched, last));
            }));
        // Not yet due: no call.
        p.tick(Figures::default);
        p.finish(|| Figures {
            fetched: 3,
            ..Figures::default()
        });
        assert_eq!(*calls.lock().unwrap(), [(8, true)]);
    }

    #[test]
    fn abbreviations() {
        assert_eq!(abbrev("http://a/", 80), "http://a/");
        assert_eq!(abbrev("a\r\nb", 80), "a\\r\\nb");
        let long = format!("http://a/{}", "x".repeat(10_000));
        let a = abbrev(&long, 80);
        assert!(a.chars().count() < 100, "{a}");
        assert!(a.ends_with("(10009 bytes)"), "{a}");
    }

    #[test]
    fn classes_add_up_and_http_errors_come_from_statuses() {
        let mut t = LineTally::default();
        t.add(ReturnCode::Success, 200);
        t.add(ReturnCode::Success, 301);
        t.add(ReturnCode::Success, 404);
        t.add(ReturnCode::Success, 503);
        t.add(ReturnCode::DuplicateContent, 200);
        t.add(ReturnCode::TooManyRedirects, 0);
        t.add(ReturnCode::DnsNxDomain, 0);
        t.add(ReturnCode::PrivateAddressBlocked, 0);
        t.add(ReturnCode::RobotsUnreachable, 0);
        t.add(ReturnCode::RobotsExcluded, 0);
        t.add(ReturnCode::OutOfScope, 0);
        t.add(ReturnCode::NotFetched, 0);
        t.add(ReturnCode::Interrupted, 0);
        let c = ClassCounts::of(&t);
        assert_eq!(
            c,
            ClassCounts {
                ok: 3,
                http_errors: 3,
                failed: 3,
                skipped: 2,
                unfinished: 2
            }
        );
        assert_eq!(c.total(), t.lines());
        // Every outcome has a class; only the crawl-level ones are not failures.
        let failed = ReturnCode::ALL
            .iter()
            .filter(|&&c| LineClass::of(c) == LineClass::Failed)
            .count();
        assert_eq!(failed, ReturnCode::ALL.len() - 11);
    }

    #[test]
    fn durations_read_well() {
        assert_eq!(duration_text(5.4), "5s");
        assert_eq!(duration_text(95.0), "1m35s");
        assert_eq!(duration_text(7260.0), "2h01m");
    }
}
