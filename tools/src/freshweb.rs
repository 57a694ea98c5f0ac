//! A web that changes while it is crawled, for testing continuous crawling: one loopback host
//! (`http://127.0.0.1:PORT/`), everything deterministic from the seed and the server's start
//! instant (t = 0).
//!
//! - `/`: links to every `/p/{i}` and to `/news/`; never changes.
//! - `/p/{i}`, i in `0..pages`: changes as a Poisson process whose mean interval is
//!   `mean_change_secs[i % len]` (0: never). Its change times are drawn once from the seed
//!   ([`Schedule`]); its version at t is the number of changes at or before t, and its body
//!   shows the version, so the payload changes exactly when the version does.
//! - `/news/`: the newest [`NEWS_ITEMS`] articles, newest first, with an RSS 2.0 feed
//!   `/news/feed.xml`; article n is published at n × `article_secs` and `/news/a/{n}` is 200
//!   from then on (unchanging), 404 before.
//! - `/robots.txt` allows everything; anything else is 404.
//!
//! Every 200 carries an `ETag` (per resource and version) and a `Last-Modified`; a conditional
//! GET whose copy is current gets a bodiless 304 (`conditional`). `Last-Modified` has one-second
//! resolution, so a version's date is its change time rounded *up* to a whole second of wall
//! time (never before the change), and `If-Modified-Since` is only trusted when the previous
//! version's date is an earlier second: two versions dated the same second are told apart by
//! `If-None-Match` alone, and the date then always gets a 200. No false 304, ever.
//!
//! Every request is logged with the time it was answered for ([`LogEntry`]); [`analyze`]
//! turns a log into the figures a continuous crawl is judged by (`analysis`).

mod analysis;
mod log;
mod pages;
mod server;

use std::time::Duration;

pub use analysis::{analyze, analyze_schedule, FreshReport};
pub use log::{format_log, parse_log, LogEntry, LOG_HEADER};
pub use server::FreshWeb;

use crate::testweb::Rng;

/// Most `/p/{i}` pages.
pub const MAX_PAGES: usize = 100_000;
/// Most page changes drawn for one web over its lifetime (bounds memory and start time).
pub const MAX_CHANGES: f64 = 20_000_000.0;
/// Most articles over a lifetime (`lifetime / article_secs`).
pub const MAX_ARTICLES: f64 = 10_000_000.0;
/// Articles on the front page and in the feed.
pub const NEWS_ITEMS: u64 = 20;
/// Shortest mean interval between changes, and between articles, seconds.
pub const MIN_INTERVAL_SECS: f64 = 0.001;

/// What the web holds and how it changes; see the module doc.
#[derive(Clone, Debug, PartialEq)]
pub struct FreshConfig {
    /// `/p/{i}` pages.
    pub pages: usize,
    /// Change times and text follow from this.
    pub seed: u64,
    /// Mean seconds between changes of each rate class, 0 for never: page i is in class
    /// `i % mean_change_secs.len()`.
    pub mean_change_secs: Vec<f64>,
    /// Seconds between articles (may be fractional).
    pub article_secs: f64,
    /// The server stops by itself after this.
    pub lifetime: Duration,
    /// 0: any free port.
    pub port: u16,
}

impl Default for FreshConfig {
    fn default() -> Self {
        FreshConfig {
            pages: 40,
            seed: 0x5eed_f5e5,
            mean_change_secs: vec![0.0, 10.0, 40.0, 160.0],
            article_secs: 5.0,
            lifetime: Duration::from_secs(600),
            port: 0,
        }
    }
}

impl FreshConfig {
    /// Why this config cannot be served, if it cannot.
    pub fn check(&self) -> Result<(), String> {
        if self.pages == 0 || self.pages > MAX_PAGES {
            return Err(format!("pages must be 1..={MAX_PAGES}"));
        }
        if self.mean_change_secs.is_empty()
            || self
                .mean_change_secs
                .iter()
                .any(|&m| !m.is_finite() || (m != 0.0 && m < MIN_INTERVAL_SECS))
        {
            return Err(format!(
                "mean change intervals: a list of 0 (never) or seconds >= {MIN_INTERVAL_SECS}"
            ));
        }
        if !self.article_secs.is_finite() || self.article_secs < MIN_INTERVAL_SECS {
            return Err(format!("article interval must be >= {MIN_INTERVAL_SECS} s"));
        }
        let secs = self.lifetime.as_secs_f64();
        if secs / self.article_secs > MAX_ARTICLES {
            return Err(format!(
                "more than {MAX_ARTICLES} articles over the lifetime"
            ));
        }
        if self.expected_changes(secs) > MAX_CHANGES {
            return Err(format!(
                "more than {MAX_CHANGES} page changes over the lifetime"
            ));
        }
        Ok(())
    }

    /// The mean change interval of page `i` (0: never changes).
    pub fn mean_change_secs_of(&self, i: usize) -> f64 {
        match self.mean_change_secs.len() {
            0 => 0.0,
            n => self.mean_change_secs[i % n],
        }
    }

    /// The expected number of page changes in `secs` seconds.
    fn expected_changes(&self, secs: f64) -> f64 {
        (0..self.pages)
            .map(|i| match self.mean_change_secs_of(i) {
                m if m > 0.0 => secs / m,
                _ => 0.0,
            })
            .sum()
    }
}

/// Salt of the change-time draws, so they do not repeat the text's draws.
const CHANGE_SALT: u64 = 0xc4a1_6e5d_0000_0001;

/// The precomputed timeline of a [`FreshConfig`]: every page's change times up to a horizon
/// (the same times for any horizon: a longer one only adds later ones) and the articles'
/// publication times. Times are seconds since the server's start.
#[derive(Clone, Debug)]
pub struct Schedule {
    changes: Vec<Vec<f64>>,
    means: Vec<f64>,
    article_secs: f64,
    horizon: f64,
}

impl Schedule {
    /// Draws the change times up to `horizon` seconds (exponential intervals, one splitmix64
    /// stream per page). A config that fails [`FreshConfig::check`] still gives a schedule,
    /// with at most `MAX_CHANGES` changes over all pages.
    pub fn new(cfg: &FreshConfig, horizon: f64) -> Schedule {
        let horizon = if horizon.is_finite() {
            horizon.max(0.0)
        } else {
            0.0
        };
        let pages = cfg.pages.min(MAX_PAGES);
        let mut budget = MAX_CHANGES as usize;
        let mut changes = Vec::with_capacity(pages);
        let mut means = Vec::with_capacity(pages);
        for i in 0..pages {
            let mean = cfg.mean_change_secs_of(i);
            let mut times = Vec::new();
            if mean.is_finite() && mean >= MIN_INTERVAL_SECS {
                let mut rng = Rng::new(cfg.seed ^ CHANGE_SALT, i, 0);
                let mut t = 0.0;
                // Bounded by the budget; ends at the horizon.
                while budget > 0 {
                    // A uniform in (0, 1]: 53 random bits, never 0 (ln(0) is -inf).
                    let u = ((rng.next() >> 11) + 1) as f64 / (1u64 << 53) as f64;
                    t += -mean * u.ln();
                    if t > horizon {
                        break;
                    }
                    times.push(t);
                    budget -= 1;
                }
            }
            changes.push(times);
            means.push(mean);
        }
        Schedule {
            changes,
            means,
            article_secs: cfg.article_secs.max(MIN_INTERVAL_SECS),
            horizon,
        }
    }

    /// A hand-made timeline (for tests of what reads one): page i changes at `changes[i]`
    /// (ascending) and counts as changing when `means[i]` is not 0; articles every
    /// `article_secs`; nothing is known past `horizon`.
    pub fn from_parts(
        means: Vec<f64>,
        changes: Vec<Vec<f64>>,
        article_secs: f64,
        horizon: f64,
    ) -> Schedule {
        let mut means = means;
        means.resize(changes.len(), 0.0);
        Schedule {
            changes,
            means,
            article_secs: article_secs.max(MIN_INTERVAL_SECS),
            horizon,
        }
    }

    pub fn pages(&self) -> usize {
        self.changes.len()
    }

    /// The time the change times were drawn up to.
    pub fn horizon(&self) -> f64 {
        self.horizon
    }

    /// Page `i`'s mean change interval (0: never changes).
    pub fn mean_change_secs(&self, i: usize) -> f64 {
        self.means.get(i).copied().unwrap_or(0.0)
    }

    /// Page `i`'s change times, ascending (empty for a page that never changes).
    pub fn changes(&self, i: usize) -> &[f64] {
        self.changes.get(i).map_or(&[], Vec::as_slice)
    }

    /// Page `i`'s version at `t`: its changes at or before `t`.
    pub fn version_at(&self, i: usize, t: f64) -> usize {
        self.changes(i).partition_point(|&c| c <= t)
    }

    /// When version `v` of page `i` appeared (0 for version 0; `None` past the horizon).
    pub fn version_time(&self, i: usize, v: usize) -> Option<f64> {
        match v {
            0 => Some(0.0),
            _ => self.changes(i).get(v - 1).copied(),
        }
    }

    /// When article `n` is published.
    pub fn article_time(&self, n: u64) -> f64 {
        n as f64 * self.article_secs
    }

    /// Articles published at or before `t` (article 0 at t = 0, so at least 1 from then on).
    pub fn articles_at(&self, t: f64) -> u64 {
        if t.is_nan() || t < 0.0 {
            return 0;
        }
        let mut n = (t / self.article_secs).floor().min(u64::MAX as f64 / 2.0) as u64 + 1;
        // The division's rounding is off by at most one either way.
        for _ in 0..2 {
            if n > 0 && self.article_time(n - 1) > t {
                n -= 1;
            }
            if self.article_time(n) <= t {
                n += 1;
            }
        }
        n
    }
}

#[cfg(test)]
mod tests;
