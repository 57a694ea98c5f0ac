//! The revisit schedule: when a fetched page is due again, learned from what its visits saw.
//!
//! Sans-IO policy. A visit comes in as plain data (`Visit`: when, in unix seconds, what was
//! seen, the server's `Last-Modified`), with the page's `PageHistory` and the
//! `ScheduleConfig`; the next due time comes out and the history is updated in place. No
//! clock is read here: the crawl passes the wall time of the fetch. Two policies:
//!
//! - `Policy::Adaptive`, Nutch's `AdaptiveFetchSchedule`: the interval shrinks by
//!   `dec_rate` when the page changed and grows by `inc_rate` when it did not (Nutch's
//!   names), with Nutch's optional sync toward the observed modification time. It walks
//!   around an equilibrium where a change is seen on 45 % of visits (at 0.2/0.2), so a page
//!   changing every 3 days settles near 1.8 days, not 3.
//! - `Policy::Estimated` (the default): the change rate is estimated from the page's history
//!   with Cho & Garcia-Molina's estimator for a Poisson process ("Estimating frequency of
//!   change", ACM TOIT 2003, the bias-reduced `λ̂ = −ln((n − X + 0.5)/(n + 0.5)) / I`), and
//!   the interval aims at one visit per expected change. Growth is damped by `inc_rate` per
//!   visit (an estimate from a few unchanged visits says "never", which is too sure), or
//!   doubles per visit for a page never seen changing, while a shrink is taken at once (a
//!   change seen is evidence).
//!
//! With a bounded fetch budget, `visits_per_change` turns the same rate estimate into the
//! frequency that buys the most freshness per visit at a price (Cho & Garcia-Molina, ICDE
//! 2003): pages changing too fast to keep fresh get fewer visits. A continuous crawl finds
//! the price per host from its budget (`host_budget`) and decides the interval there, after
//! [`ScheduleConfig::observe`] has recorded the visit.
//!
//! Every interval is clamped to `[min_interval, max_interval]`, and so is every due time's
//! distance from the visit. The history forgets: past `MAX_HISTORY_VISITS` its counts are
//! halved, so a page whose habits change is re-learned within a few dozen visits.
//!
//! Neighbours: the crawl decides which due URL goes when (the frontier, politeness); the
//! store keeps the facts (`store::state::crawl_db` persists `PageHistory` and the due time); whether
//! a page changed (304, validators, payload digest) is decided by the crawl from the fetch.

use super::recent_visits::{self, Counts, Estimate, RecentVisits};

/// Counts are halved when a page has this many compared visits: the estimate then reflects
/// roughly the last 32–64 visits, enough for a ±15 % rate estimate at the fixed point, and
/// a page that starts or stops changing is re-learned in about as many visits.
pub const MAX_HISTORY_VISITS: u32 = 64;

/// Defaults: one minute (Nutch's minimum: below that politeness, not the schedule, decides),
/// thirty days (a page unchanged for months is still looked at monthly in a collection kept
/// for months), one day for a page never revisited (what a news-less site changes at).
pub const DEFAULT_MIN_INTERVAL: u64 = 60;
pub const DEFAULT_MAX_INTERVAL: u64 = 30 * 86_400;
pub const DEFAULT_INITIAL_INTERVAL: u64 = 86_400;

/// Which rule turns a visit into the next interval (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    Adaptive,
    Estimated,
}

/// The schedule's knobs. Intervals in seconds; rates are fractions (Nutch's 0.2 defaults:
/// Nutch warns that above 0.4 the walk may diverge).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScheduleConfig {
    pub policy: Policy,
    pub min_interval: u64,
    pub max_interval: u64,
    pub initial_interval: u64,
    /// Growth per unchanged visit (`Adaptive`), and the damping of growth (`Estimated`).
    pub inc_rate: f64,
    /// Shrink per changed visit (`Adaptive`).
    pub dec_rate: f64,
    /// `Adaptive` only: the next visit is moved earlier by this fraction of the time since
    /// the last change (Nutch's `sync_delta_rate`), and the interval is at least that time.
    /// A Poisson page has no phase to sync to, so `Estimated` ignores it.
    pub sync_delta_rate: Option<f64>,
}

impl Default for ScheduleConfig {
    fn default() -> ScheduleConfig {
        ScheduleConfig {
            policy: Policy::Estimated,
            min_interval: DEFAULT_MIN_INTERVAL,
            max_interval: DEFAULT_MAX_INTERVAL,
            initial_interval: DEFAULT_INITIAL_INTERVAL,
            inc_rate: 0.2,
            dec_rate: 0.2,
            sync_delta_rate: Some(0.2),
        }
    }
}

/// What a visit found, compared with the previous one. A change detected by payload digest
/// alone counts the same as one shown by validators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Observation {
    Changed,
    /// A 304, or the same payload digest.
    Unchanged,
    /// Nothing to compare (an error, a first fetch): the history is left as it was.
    Unknown,
}

/// One visit: when (unix seconds), what it saw, and the server's `Last-Modified` (unix
/// seconds) when it gave one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Visit {
    pub at: u64,
    pub seen: Observation,
    pub last_modified: Option<u64>,
}

/// What the schedule knows of a page: the estimator's counts and the current interval.
/// Plain data, persisted as is by the crawl database.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct PageHistory {
    /// Visits compared with the one before (the estimator's n).
    pub visits: u32,
    /// Of those, the ones that saw a change (X).
    pub changes: u32,
    /// The sum of those visits' distances from the one before, seconds (n × I).
    pub observed_secs: u64,
    /// When the page last changed, as far as known (unix seconds).
    pub last_change: Option<u64>,
    /// The interval the last visit scheduled, seconds (0: none yet).
    pub interval: u64,
    /// Of those visits' finds, the links that were new to the crawl: a hub's or feed's
    /// yield, `new_urls / observed_secs` new URLs a second.
    pub new_urls: u32,
    /// The last few compared visits one by one: the per-visit evidence the continuous
    /// crawl's budget estimates rates from (`recent_visits`).
    pub recent: RecentVisits,
}

impl ScheduleConfig {
    /// Records `visit` in `history` and returns when the page is due next (unix seconds).
    /// `last_fetch` is the previous visit's time, `None` for a page's first fetch.
    pub fn schedule(
        &self,
        history: &mut PageHistory,
        last_fetch: Option<u64>,
        visit: Visit,
    ) -> u64 {
        self.schedule_counting(history, last_fetch, visit, 0)
    }

    /// As [`ScheduleConfig::schedule`], counting the visit's `new_urls` in the history.
    pub fn schedule_counting(
        &self,
        history: &mut PageHistory,
        last_fetch: Option<u64>,
        visit: Visit,
        new_urls: u32,
    ) -> u64 {
        let now = visit.at;
        let compared = self.observe(history, last_fetch, visit, new_urls);
        let prev = if history.interval == 0 {
            self.initial_interval
        } else {
            history.interval
        };
        let (interval, reference) = match self.policy {
            Policy::Adaptive => self.adaptive(prev, visit.seen, now, history.last_change),
            Policy::Estimated => {
                let target = match (compared, change_rate(history)) {
                    (Some(_), Some(rate)) => interval_for_rate(self, rate),
                    _ => prev,
                };
                // Growth is damped: by `inc_rate` per visit for a page seen changing (its
                // estimate from a few unchanged visits is too sure), doubling per visit for
                // one never seen changing (it backs off to the maximum in a few visits).
                // A continuous crawl's budget (`host_budget`) needs no damping: its price
                // already weighs how sure each estimate is against the other pages'.
                let damped = match history.changes {
                    0 => prev.saturating_mul(2),
                    _ => (prev as f64 * (1.0 + self.inc_rate)) as u64,
                };
                (target.min(damped), now)
            }
        };
        history.interval = self.clamp(interval);
        let due = reference.saturating_add(history.interval);
        due.clamp(
            now.saturating_add(self.min_interval),
            now.saturating_add(self.max_interval.max(self.min_interval)),
        )
    }

    /// Records `visit` in `history` (its counts, with `new_urls` links new to the crawl, and
    /// when the page last changed) and returns the seconds since the previous visit when the
    /// two were compared. The interval is left to the caller.
    pub fn observe(
        &self,
        history: &mut PageHistory,
        last_fetch: Option<u64>,
        visit: Visit,
        new_urls: u32,
    ) -> Option<u64> {
        let now = visit.at;
        let compared = match last_fetch {
            Some(prev) if prev < now && visit.seen != Observation::Unknown => Some(now - prev),
            _ => None,
        };
        if let Some(elapsed) = compared {
            history.record(elapsed, visit.seen == Observation::Changed, new_urls);
        }
        history.last_change = match (visit.seen, compared) {
            // A change after the previous visit: the server's date when it falls in the gap.
            (Observation::Changed, Some(elapsed)) => Some(
                visit
                    .last_modified
                    .filter(|&m| m <= now && m >= now - elapsed)
                    .unwrap_or(now),
            ),
            _ => history
                .last_change
                .or(visit.last_modified.filter(|&m| m <= now)),
        };
        compared
    }

    /// Nutch's step: the next interval and the time it counts from.
    fn adaptive(
        &self,
        prev: u64,
        seen: Observation,
        now: u64,
        last_change: Option<u64>,
    ) -> (u64, u64) {
        let mut interval = match seen {
            Observation::Changed => prev as f64 * (1.0 - self.dec_rate),
            Observation::Unchanged => prev as f64 * (1.0 + self.inc_rate),
            Observation::Unknown => prev as f64,
        };
        let mut reference = now;
        if let Some(rate) = self.sync_delta_rate {
            let delta = now.saturating_sub(last_change.unwrap_or(now));
            interval = interval.max(delta as f64);
            reference = now.saturating_sub((delta as f64 * rate) as u64);
        }
        (interval as u64, reference)
    }

    pub fn clamp(&self, interval: u64) -> u64 {
        interval.clamp(self.min_interval, self.max_interval.max(self.min_interval))
    }
}

impl PageHistory {
    /// The change rate its kept visits and counts give (`recent_visits::estimate`).
    pub fn estimate(&self) -> Estimate {
        let counts = Counts {
            visits: self.visits,
            changes: self.changes,
            observed_secs: self.observed_secs,
        };
        recent_visits::estimate(&self.recent, counts)
    }

    /// Counts one compared visit, halving the counts at `MAX_HISTORY_VISITS`.
    fn record(&mut self, elapsed: u64, changed: bool, new_urls: u32) {
        self.visits = self.visits.saturating_add(1);
        self.changes = self.changes.saturating_add(u32::from(changed));
        self.observed_secs = self.observed_secs.saturating_add(elapsed);
        self.new_urls = self.new_urls.saturating_add(new_urls);
        self.recent.push(elapsed, changed);
        if self.visits >= MAX_HISTORY_VISITS {
            self.visits /= 2;
            self.changes /= 2;
            self.observed_secs /= 2;
            self.new_urls /= 2;
        }
    }
}

/// The page's estimated change rate, changes per second, from its history; `None` before
/// any compared visit.
pub fn change_rate(history: &PageHistory) -> Option<f64> {
    if history.visits == 0 || history.observed_secs == 0 {
        return None;
    }
    let mean_interval = history.observed_secs as f64 / f64::from(history.visits);
    Some(estimate_change_rate(
        history.visits,
        history.changes,
        mean_interval,
    ))
}

/// Cho & Garcia-Molina's estimator: `n` visits `interval` seconds apart of which `changes`
/// saw a change give `λ̂ = −ln((n − X + 0.5)/(n + 0.5)) / I` changes per second. The 0.5s
/// keep it finite when every visit saw a change and remove most of the bias of the naive
/// `−ln(1 − X/n)` (Cho & Garcia-Molina 2003, §4.2).
pub fn estimate_change_rate(visits: u32, changes: u32, interval: f64) -> f64 {
    let n = f64::from(visits);
    let x = f64::from(changes.min(visits));
    -((n - x + 0.5) / (n + 0.5)).ln() / interval
}

/// The interval that visits a page once per expected change (`1 / rate`), clamped to the
/// configuration's bounds; a page never seen changing gets the maximum.
pub fn interval_for_rate(config: &ScheduleConfig, rate: f64) -> u64 {
    if rate.is_finite() && rate > 0.0 {
        // `as` saturates: a tiny rate gives u64::MAX, clamped below.
        config.clamp((1.0 / rate) as u64)
    } else {
        config.clamp(config.max_interval)
    }
}

/// Most steps of `visits_per_change`'s safeguarded Newton iteration: it converges in about
/// six, and the bisection that guards it halves the bracket [0, `MAX_CATCH_RATIO`] at
/// every step it takes, so 64 are far below f64's resolution.
const SOLVE_STEPS: u32 = 64;

/// The largest changes-per-visit ratio `budgeted_interval` considers: at 64 expected changes
/// between visits a page is stale at every visit, whatever the budget.
const MAX_CATCH_RATIO: f64 = 64.0;

/// The interval that spends a bounded visit budget where it buys the most freshness (Cho &
/// Garcia-Molina, "Effective page refresh policies", ICDE 2003): see [`visits_per_change`].
/// A page with `marginal · λ ≥ 1` changes faster than visits can keep it fresh enough to
/// pay: it gets the maximum interval, fewer visits, not more.
pub fn budgeted_interval(config: &ScheduleConfig, rate: f64, marginal: f64) -> u64 {
    match visits_per_change(rate, marginal) {
        Some(r) => config.clamp((r / rate) as u64),
        None => config.clamp(config.max_interval),
    }
}

/// Cho & Garcia-Molina's optimal frequency for one page, as changes per visit. A page
/// changing at `rate` (per second) and visited `f` times a second is fresh a fraction
/// `F = (f/λ)(1 − e^(−λ/f))` of the time; with a budget, every page's `∂F/∂f` is the same
/// `marginal` (seconds: the freshness one more visit a second buys). With `r = λ/f`,
/// `∂F/∂f = (1 − (1 + r)e^(−r))/λ`, so `r` solves `1 − (1 + r)e^(−r) = marginal · λ`, and
/// the page is visited every `r/λ` seconds. `None`: no visit pays (`marginal · λ ≥ 1`, a
/// page too fast to keep fresh at this price, or no rate to go by).
pub fn visits_per_change(rate: f64, marginal: f64) -> Option<f64> {
    let target = marginal * rate;
    let catchable = |r: f64| 1.0 - (1.0 + r) * (-r).exp();
    if !(rate.is_finite() && rate > 0.0 && target.is_finite() && target > 0.0)
        || target >= catchable(MAX_CATCH_RATIO)
    {
        return None;
    }
    // g(r) = 1 − (1 + r)e^(−r) rises from 0 to 1 with g'(r) = r·e^(−r): Newton from
    // g ≈ r²/2, kept inside a shrinking bracket.
    let (mut lo, mut hi) = (0.0f64, MAX_CATCH_RATIO);
    let mut r = (2.0 * target).sqrt().clamp(1e-9, MAX_CATCH_RATIO);
    for _ in 0..SOLVE_STEPS {
        let g = catchable(r) - target;
        if g < 0.0 {
            lo = r;
        } else {
            hi = r;
        }
        let slope = r * (-r).exp();
        let next = r - g / slope;
        let next = if next.is_finite() && next > lo && next < hi {
            next
        } else {
            (lo + hi) / 2.0
        };
        if (next - r).abs() <= 1e-12 * r {
            return Some(next);
        }
        r = next;
    }
    Some(r)
}

/// The fraction of the time a page changing at `rate` and visited every `interval` seconds
/// is fresh: `F = (1 − e^(−λI))/(λI)` (1 for a page that never changes).
pub fn expected_freshness(rate: f64, interval: f64) -> f64 {
    let x = rate * interval;
    if !(x.is_finite() && x > 1e-12) {
        return 1.0;
    }
    (1.0 - (-x).exp()) / x
}

#[cfg(test)]
#[path = "schedule_tests.rs"]
mod tests;
