//! What a crawl of the changing web achieved, from the server's log and the config alone
//! (the change times are drawn again from the seed): the time-averaged freshness and age of
//! the changing pages, the same for a uniform round-robin revisit of every page with as many
//! fetches, how
//! soon news articles were fetched, what refetching the unchanging pages cost, and totals.
//!
//! Definitions (Cho & Garcia-Molina's freshness and age):
//! - A *fetch* of a page is a GET answered 200 or 304 (the server never answers a false 304,
//!   so either way the crawler then holds the version logged).
//! - Page p is *fresh* at t if the version its latest fetch at or before t got is still
//!   current at t; otherwise its *age* at t is t minus the first change the crawler has not
//!   seen (0 when fresh).
//! - A page counts from its first fetch (before it the crawler has no copy, fresh or stale)
//!   or the window's start, whichever is later, to the window's end. Freshness and mean age
//!   are averaged over the pairs (changing page, t) so counted: fresh page-seconds over
//!   page-seconds. A changing page never fetched in the window is left out (and counted
//!   apart).
//! - The window: given, or from the first logged request to the last.
//! - Round robin: a uniform revisit, which cannot tell the pages that change from those that
//!   never do. F = the crawl's fetches of the pages (changing or not; not `/`, a hub) in
//!   [B, end], B = the first fetch of any page (or the window's start if later); F visits at
//!   B + j·(end − B)/F, j = 0..F, to every page in index order, round after round; the
//!   changing pages' freshness and age under those visits, measured as above.
//! - News: every article published in the window; its latency is the first 200 GET of
//!   `/news/a/{n}` anywhere in the log minus its publication time. Median and p90 are
//!   nearest-rank over the captured articles.
//! - Unchanging pages (`/` and the pages whose mean interval is 0): GETs in the window after
//!   the page's first fetch, those that were conditional, those answered 304.

use std::collections::HashMap;

use super::pages::{route, Route};
use super::{FreshConfig, LogEntry, Schedule, MAX_ARTICLES};

/// The figures; `None` where there is nothing to average.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FreshReport {
    pub window_start: f64,
    pub window_end: f64,
    /// Pages whose mean change interval is not 0.
    pub changing_pages: usize,
    /// Of those, the ones fetched at or before the window's end.
    pub changing_pages_fetched: usize,
    /// Fetches of changing pages in the window.
    pub changing_fetches: u64,
    /// F: fetches of any page but `/` in the window, the round robin's budget.
    pub page_fetches: u64,
    pub freshness: Option<f64>,
    pub mean_age_secs: Option<f64>,
    pub round_robin_freshness: Option<f64>,
    pub round_robin_mean_age_secs: Option<f64>,
    pub articles_published: u64,
    pub articles_captured: u64,
    pub capture_latency_median_secs: Option<f64>,
    pub capture_latency_p90_secs: Option<f64>,
    /// `/` and the pages that never change.
    pub static_pages: usize,
    pub static_refetches: u64,
    pub static_refetches_conditional: u64,
    pub static_not_modified: u64,
    /// Requests in the window, by status, and their body bytes.
    pub requests: u64,
    pub status_200: u64,
    pub status_304: u64,
    pub body_bytes: u64,
}

impl FreshReport {
    /// `(key, value)` in a fixed order, as `fresh-report` prints them; `none` for `None`.
    pub fn key_values(&self) -> Vec<(&'static str, String)> {
        let opt = |v: Option<f64>| v.map_or_else(|| "none".to_string(), |v| format!("{v:.6}"));
        vec![
            ("window_start", format!("{:.6}", self.window_start)),
            ("window_end", format!("{:.6}", self.window_end)),
            ("changing_pages", self.changing_pages.to_string()),
            (
                "changing_pages_fetched",
                self.changing_pages_fetched.to_string(),
            ),
            ("changing_fetches", self.changing_fetches.to_string()),
            ("freshness", opt(self.freshness)),
            ("mean_age_secs", opt(self.mean_age_secs)),
            ("rr_freshness", opt(self.round_robin_freshness)),
            ("rr_mean_age_secs", opt(self.round_robin_mean_age_secs)),
            ("page_fetches", self.page_fetches.to_string()),
            ("articles_published", self.articles_published.to_string()),
            ("articles_captured", self.articles_captured.to_string()),
            (
                "capture_latency_median_secs",
                opt(self.capture_latency_median_secs),
            ),
            (
                "capture_latency_p90_secs",
                opt(self.capture_latency_p90_secs),
            ),
            ("static_pages", self.static_pages.to_string()),
            ("static_refetches", self.static_refetches.to_string()),
            (
                "static_refetches_conditional",
                self.static_refetches_conditional.to_string(),
            ),
            ("static_not_modified", self.static_not_modified.to_string()),
            ("requests", self.requests.to_string()),
            ("status_200", self.status_200.to_string()),
            ("status_304", self.status_304.to_string()),
            ("body_bytes", self.body_bytes.to_string()),
        ]
    }
}

/// Fresh page-seconds, age integral (page-seconds²) and page-seconds observed.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct Freshness {
    pub(super) fresh: f64,
    pub(super) age: f64,
    pub(super) span: f64,
}

impl Freshness {
    fn add(&mut self, o: Freshness) {
        self.fresh += o.fresh;
        self.age += o.age;
        self.span += o.span;
    }

    fn averages(&self) -> (Option<f64>, Option<f64>) {
        if self.span > 0.0 {
            (Some(self.fresh / self.span), Some(self.age / self.span))
        } else {
            (None, None)
        }
    }
}

/// One page over [a, b]: `fetches` are (t, version got), sorted by t, the first at or before
/// `a`; `changes` the page's change times.
pub(super) fn page_freshness(changes: &[f64], fetches: &[(f64, u64)], a: f64, b: f64) -> Freshness {
    let mut acc = Freshness::default();
    let from = fetches.partition_point(|f| f.0 <= a).saturating_sub(1);
    for (k, &(t, version)) in fetches.iter().enumerate().skip(from) {
        let s = t.max(a);
        let e = fetches.get(k + 1).map_or(b, |next| next.0.min(b));
        if s >= b {
            break;
        }
        if s >= e {
            continue;
        }
        // The first change the crawler has not seen.
        let stale_from = usize::try_from(version)
            .ok()
            .and_then(|v| changes.get(v))
            .copied()
            .unwrap_or(f64::INFINITY);
        if stale_from >= e {
            acc.fresh += e - s;
        } else {
            let stale = s.max(stale_from);
            acc.fresh += stale - s;
            acc.age += ((e - stale_from).powi(2) - (stale - stale_from).powi(2)) / 2.0;
        }
        acc.span += e - s;
    }
    acc
}

/// Pages' freshness over [start, end], each page from its first fetch or `start`: the sum
/// and how many pages were counted.
fn pages_freshness(
    schedule: &Schedule,
    pages: &[usize],
    fetches: &[Vec<(f64, u64)>],
    start: f64,
    end: f64,
) -> (Freshness, usize) {
    let mut total = Freshness::default();
    let mut counted = 0;
    for &p in pages {
        let f = &fetches[p];
        let Some(&(first, _)) = f.first() else {
            continue;
        };
        if first > end {
            continue;
        }
        counted += 1;
        total.add(page_freshness(
            schedule.changes(p),
            f,
            first.max(start),
            end,
        ));
    }
    (total, counted)
}

/// Nearest-rank `q`-quantile of ascending `v`.
pub(super) fn quantile(v: &[f64], q: f64) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let rank = (q * v.len() as f64).ceil() as usize;
    Some(v[rank.clamp(1, v.len()) - 1])
}

fn is_fetch(e: &LogEntry) -> bool {
    e.method == "GET" && matches!(e.status, 200 | 304)
}

/// The report for `log` of a web served with `cfg`, over `window` (seconds since start;
/// default: the log's first to last request). See the module doc for the definitions.
pub fn analyze(cfg: &FreshConfig, log: &[LogEntry], window: Option<(f64, f64)>) -> FreshReport {
    // Nothing happens after the server stops: the schedule ends there, or at the log's end.
    let last = log
        .iter()
        .map(|e| e.t)
        .filter(|t| t.is_finite())
        .fold(0.0, f64::max);
    let schedule = Schedule::new(cfg, cfg.lifetime.as_secs_f64().max(last));
    analyze_schedule(&schedule, log, window)
}

/// [`analyze`] against a given timeline (e.g. [`Schedule::from_parts`]).
pub fn analyze_schedule(
    schedule: &Schedule,
    log: &[LogEntry],
    window: Option<(f64, f64)>,
) -> FreshReport {
    let mut entries: Vec<&LogEntry> = log.iter().filter(|e| e.t.is_finite()).collect();
    // Connections log concurrently, so the log is only nearly in time order.
    entries.sort_by(|a, b| a.t.total_cmp(&b.t));
    let first = entries.first().map_or(0.0, |e| e.t);
    let last = entries.last().map_or(0.0, |e| e.t);
    let (start, end) = match window {
        Some((s, e)) if s.is_finite() && e.is_finite() && s <= e => (s, e),
        _ => (first, last),
    };
    let end = end.min(schedule.horizon().max(last));
    let start = start.min(end);
    let pages = schedule.pages();

    let mut report = FreshReport {
        window_start: start,
        window_end: end,
        ..FreshReport::default()
    };
    let in_window = |t: f64| t >= start && t <= end;
    let mut page_fetches: Vec<Vec<(f64, u64)>> = vec![Vec::new(); pages];
    let mut captured: HashMap<u64, f64> = HashMap::new();
    // Per unchanging resource (`pages` stands for `/`): whether it has had its first fetch.
    let mut static_seen = vec![false; pages + 1];
    for e in &entries {
        if in_window(e.t) {
            report.requests += 1;
            report.status_200 += u64::from(e.status == 200);
            report.status_304 += u64::from(e.status == 304);
            report.body_bytes += e.body_bytes;
        }
        let static_slot = match route(&e.path, pages) {
            Some(Route::Page(i)) => {
                if is_fetch(e) {
                    page_fetches[i].push((e.t, e.version.max(0) as u64));
                }
                (schedule.mean_change_secs(i) <= 0.0).then_some(i)
            }
            Some(Route::Index) => Some(pages),
            Some(Route::Article(n)) if e.method == "GET" && e.status == 200 => {
                captured.entry(n).or_insert(e.t);
                None
            }
            _ => None,
        };
        if let Some(slot) = static_slot.filter(|_| e.method == "GET") {
            if static_seen[slot] && in_window(e.t) {
                report.static_refetches += 1;
                report.static_refetches_conditional += u64::from(e.conditional);
                report.static_not_modified += u64::from(e.status == 304);
            }
            static_seen[slot] |= is_fetch(e);
        }
    }

    let changing: Vec<usize> = (0..pages)
        .filter(|&p| schedule.mean_change_secs(p) > 0.0)
        .collect();
    report.changing_pages = changing.len();
    report.static_pages = pages - changing.len() + 1;
    let (crawl, fetched) = pages_freshness(schedule, &changing, &page_fetches, start, end);
    report.changing_pages_fetched = fetched;
    (report.freshness, report.mean_age_secs) = crawl.averages();

    // The round robin starts where the crawl's first page does.
    let rr_start = page_fetches
        .iter()
        .filter_map(|f| f.first().map(|f| f.0))
        .fold(f64::INFINITY, f64::min)
        .max(start);
    let fetched_in_window = |p: usize| page_fetches[p].iter().filter(|f| in_window(f.0)).count();
    report.changing_fetches = changing.iter().map(|&p| fetched_in_window(p) as u64).sum();
    let fetches: u64 = (0..pages).map(|p| fetched_in_window(p) as u64).sum();
    report.page_fetches = fetches;
    if report.changing_fetches > 0 && rr_start < end {
        let step = (end - rr_start) / fetches as f64;
        let mut visits: Vec<Vec<(f64, u64)>> = vec![Vec::new(); pages];
        for j in 0..fetches {
            let p = (j % pages as u64) as usize;
            let t = rr_start + j as f64 * step;
            visits[p].push((t, schedule.version_at(p, t) as u64));
        }
        let (rr, _) = pages_freshness(schedule, &changing, &visits, rr_start, end);
        (
            report.round_robin_freshness,
            report.round_robin_mean_age_secs,
        ) = rr.averages();
    }

    // Articles published in [start, end]: from the first at or after start.
    let mut n = schedule.articles_at(start);
    if n > 0 && schedule.article_time(n - 1) >= start {
        n -= 1;
    }
    let published_end = schedule
        .articles_at(end)
        .min(n.saturating_add(MAX_ARTICLES as u64));
    let mut latencies = Vec::new();
    for a in n..published_end {
        report.articles_published += 1;
        if let Some(&t) = captured.get(&a) {
            latencies.push(t - schedule.article_time(a));
        }
    }
    report.articles_captured = latencies.len() as u64;
    latencies.sort_by(f64::total_cmp);
    report.capture_latency_median_secs = quantile(&latencies, 0.5);
    report.capture_latency_p90_secs = quantile(&latencies, 0.9);
    report
}
