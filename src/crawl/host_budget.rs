//! A continuous crawl's fetch budget per host, spent where it buys the most (ARCHITECTURE
//! §9c, issue 44): Cho & Garcia-Molina's optimal revisit frequencies ("Effective page
//! refresh policies", ICDE 2003) with the Lagrange multiplier found for each host from what
//! politeness lets the crawl fetch there.
//!
//! A host is fetched at most once per period (its politeness gap plus a fetch's own time),
//! `C = 1/period` fetches a second. The new URLs its hubs and feeds are expected to bring
//! (each costs a first fetch) are set aside; the rest, `R`, is shared among revisits. A page
//! changing at `λ` and visited `f` times a second is fresh a fraction
//! `F = (f/λ)(1 − e^(−λ/f))` of the time; a hub finding `λₕ` new URLs a second leaves
//! `λₕ/(2f)` of them unfetched on average, each counted as one stale page. The split of `R`
//! that keeps the most pages fresh gives every page and hub the same marginal value `μ` of
//! one more visit a second (`∂F/∂f = μ`, `λₕ/(2f²) = μ`); `μ` is found by bisection so that
//! the frequencies add up to `R`. Pages changing too fast to keep fresh (`μλ ≥ 1`) and pages
//! never seen changing (the bias-reduced estimate is 0 after any number of unchanged visits)
//! buy nothing: they are looked at every `--revisit-max` while that floor costs at most
//! [`FLOOR_SHARE`] of `R`, and less often past it. A page not yet revisited is priced as
//! changing once per the schedule's initial interval, and one whose first revisit found it
//! unchanged as changing half a time over the time observed: its estimate of 0 is believed
//! after [`CONFIRM_UNCHANGED`] unchanged revisits.
//!
//! Sans-IO: times are the fetches' wall times (unix seconds) and periods come from the
//! crawl. Memory: per host, its pages and hubs counted by rate in [`RATE_BUCKETS`] buckets,
//! three to an octave (the solver sees a bucket's pages at its geometric mean rate, within
//! 13 % of their own; each page's interval uses its own estimate), for at most [`MAX_HOSTS`] hosts (past
//! that a host's pages get the unpriced schedule). The counts are not saved: on resume they
//! are rebuilt as pages are fetched again, each with the history the crawl database kept.

use std::collections::HashMap;

use super::recent_visits::Estimate;
use super::schedule::{
    change_rate, expected_freshness, visits_per_change, PageHistory, ScheduleConfig,
};

/// Hosts whose budget is kept; the others' pages get the unpriced schedule. A host's state
/// is about 850 bytes, so this bounds the budgets to about 30 MB.
pub const MAX_HOSTS: usize = 32_768;
/// Rate buckets, three to an octave: bucket `b` holds rates in
/// `[2^((b − RATE_OFFSET)/3), 2^((b + 1 − RATE_OFFSET)/3))` changes a second, from one change
/// in about two years to 64 a second (clamped beyond). A page is counted within 13 % of its
/// rate: near a host's give-up point (`μλ = 1`) a coarser count misjudges whole classes.
pub const RATE_BUCKETS: usize = 96;
const BUCKETS_PER_OCTAVE: f64 = 3.0;
const RATE_OFFSET: i32 = 78;
/// The most of a host's revisit budget that looking at pages which buy nothing (never seen
/// changing, or too fast to keep fresh) may take: past it their interval grows beyond
/// `--revisit-max`, so a host with thousands of unchanging pages still keeps its changing
/// ones fresh.
pub const FLOOR_SHARE: f64 = 0.1;
/// The most of a host's revisit budget pages never seen changing may take together (see
/// `Judged::Unchanging`).
pub const UNCHANGING_SHARE: f64 = 0.05;
/// The least share of a host's fetches left to revisits when its hubs bring more new URLs
/// than it can fetch.
pub const MIN_REVISIT_SHARE: f64 = 0.1;
/// A page changed at every visit but not yet shown too fast is probed: looked at again after
/// `--revisit-min`, the shortest look, which tells a page changing at every look from one
/// that merely changed between long ones. At least this many changed probes (visits at most
/// [`PROBE_SLACK`] times the probe interval after the one before) are needed to give up on
/// a page: a page changing every few minutes changes within a short probe rarely, twice in
/// a row very rarely, whatever the price says.
const PROBES_TO_GIVE_UP: usize = 2;
const PROBE_SLACK: f64 = 2.0;
/// The most of a host's revisit budget probes may take: past it a page waits for its probe,
/// priced meanwhile at its lower bound. Two probes settle most pages, so a few at a time
/// get through hundreds of pages in minutes, on time (a probe that comes late is no probe).
const PROBE_SHARE: f64 = 0.5;
/// A host's multiplier is found again at most this often (seconds), when its counts changed.
pub const SOLVE_EVERY_SECS: u64 = 5;
/// The bracket and steps of the multiplier's bisection (seconds; in log space, so 36 steps
/// resolve it to better than a part in a billion).
const MU_MIN: f64 = 1e-6;
const MU_MAX: f64 = 1e12;
const MU_STEPS: u32 = 36;
/// The weight of a new period in its moving average.
const PERIOD_WEIGHT: f64 = 0.1;

/// What a page's revisit buys, as the budget priced it: the classes stats.json counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueClass {
    /// Not revisited yet, or not often enough to believe it never changes (see
    /// `page_rate`).
    Learning,
    /// Seen changing and worth keeping fresh at the host's price.
    Freshness,
    /// Its visits have found new URLs: priced by the new URLs a visit is expected to find.
    Discovery,
    /// Never seen changing, or changing faster than visits can keep it fresh: looked at on
    /// the floor (every `--revisit-max`, or less often when the host cannot afford that).
    Floor,
}

/// A budget's verdict on one page: when it is due again and why.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Priced {
    /// Seconds to its next visit: within `[min_interval, max_interval]`, or past
    /// `max_interval` when the host cannot afford its floor.
    pub interval: u64,
    pub class: ValueClass,
    /// The expected fraction of the time it is fresh at that interval (1 for a hub or a
    /// page never seen changing).
    pub freshness: f64,
}

/// Pages (or hubs) counted by rate.
#[derive(Clone, Debug)]
struct RateCounts {
    counts: [u32; RATE_BUCKETS],
    /// Rate 0: never seen changing (or finding nothing new).
    zero: u32,
}

impl Default for RateCounts {
    fn default() -> RateCounts {
        RateCounts {
            counts: [0; RATE_BUCKETS],
            zero: 0,
        }
    }
}

impl RateCounts {
    fn slot(&mut self, rate: f64) -> &mut u32 {
        if rate.is_finite() && rate > 0.0 {
            let b = ((rate.log2() * BUCKETS_PER_OCTAVE).floor() as i32 + RATE_OFFSET)
                .clamp(0, RATE_BUCKETS as i32 - 1);
            &mut self.counts[b as usize]
        } else {
            &mut self.zero
        }
    }

    fn add(&mut self, rate: f64) {
        let slot = self.slot(rate);
        *slot = slot.saturating_add(1);
    }

    /// Saturating: after a resume a page's old rate was never added in this process.
    fn remove(&mut self, rate: f64) {
        let slot = self.slot(rate);
        *slot = slot.saturating_sub(1);
    }

    fn total(&self) -> f64 {
        f64::from(self.zero) + self.counts.iter().map(|&c| f64::from(c)).sum::<f64>()
    }

    /// The occupied buckets: (pages, the bucket's geometric mean rate).
    fn occupied(&self) -> impl Iterator<Item = (f64, f64)> + '_ {
        self.counts
            .iter()
            .enumerate()
            .filter(|&(_, &c)| c > 0)
            .map(|(b, &c)| {
                let rate = ((b as f64 - f64::from(RATE_OFFSET) + 0.5) / BUCKETS_PER_OCTAVE).exp2();
                (f64::from(c), rate)
            })
    }
}

/// One host's budget.
#[derive(Clone, Debug)]
struct HostBudget {
    pages: RateCounts,
    hubs: RateCounts,
    /// Pages never seen changing, by the rate they are priced at (see `Judged::Unchanging`).
    unchanging: RateCounts,
    /// Pages being probed (`Judged::Probe`): each looked at every `PROBE_SHARE · μ`.
    probes: u32,
    /// Seconds per fetch, a moving average (0: none seen yet).
    period: f64,
    /// The marginal value of one more visit a second (seconds), and when it was found.
    mu: f64,
    floor: f64,
    /// The most often a page never seen changing is looked at: together they take at most
    /// [`FLOOR_SHARE`] of the budget.
    unchanging_cap: f64,
    /// Pages that may be probed at once: [`PROBE_SHARE`] of the budget (at least one).
    probe_room: f64,
    solved_at: Option<u64>,
}

/// Every host's budget (see the module doc).
pub struct HostBudgets {
    min_interval: u64,
    max_interval: u64,
    initial_interval: u64,
    hosts: HashMap<Box<str>, HostBudget>,
}

/// Compared visits that must all find a page unchanged before its estimate of 0 is believed:
/// one unlucky revisit of a page changing every few minutes must not send it to the floor.
pub const CONFIRM_UNCHANGED: u32 = 2;

/// What the budget makes of a page's visits (`recent_visits::estimate`) at a price.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Judged {
    /// Priced at this rate: its estimate, or while learning a prior (see `judge`).
    Rate { rate: f64, learning: bool },
    /// Never seen changing, after [`CONFIRM_UNCHANGED`] visits: priced at `rate`, the
    /// Jeffreys posterior mean `0.5/T` over the `T` seconds observed, so a page changing
    /// every hour that happened not to in its first two visits is still looked at as such,
    /// less often as `T` grows; together such pages take at most [`FLOOR_SHARE`] of the
    /// budget, so thousands that never change cannot crowd out the changing ones.
    Unchanging { rate: f64 },
    /// Changed at every visit, and too unlikely to be catchable: the floor.
    TooFast,
    /// Changed at every visit, not yet shown too fast: probed soon. `rate` is the
    /// bias-reduced estimate, a lower bound, as it is counted in the host's demand.
    Probe { rate: f64 },
}

/// A page's verdict at price `mu`. Before its first compared visit it is priced at one
/// change per initial interval; while fewer than [`CONFIRM_UNCHANGED`] visits found it
/// unchanged, at half a change over the time observed (a Jeffreys prior's posterior mean),
/// at most that.
fn judge(history: &PageHistory, initial_interval: u64, mu: f64, probe: f64) -> Judged {
    let prior = 1.0 / initial_interval.max(1) as f64;
    match history.estimate() {
        Estimate::Unknown => Judged::Rate {
            rate: prior,
            learning: true,
        },
        Estimate::Unchanged { secs } if history.visits < CONFIRM_UNCHANGED => Judged::Rate {
            rate: prior.min(0.5 / secs.max(1.0)),
            learning: true,
        },
        Estimate::Unchanged { secs } => Judged::Unchanging {
            rate: prior.min(0.5 / secs.max(1.0)),
        },
        // An estimate past the give-up rate (`μλ ≥ 1`, where no visit pays) is believed
        // only when the visits rule out every rate below it: otherwise the page is probed.
        Estimate::Rate(rate, evidence) if mu > 0.0 && mu * rate >= 1.0 => {
            let lower = evidence.lower_bound(Some(rate));
            match mu * lower >= 1.0 {
                true => Judged::TooFast,
                false => Judged::Probe { rate: lower },
            }
        }
        Estimate::Rate(rate, _) => Judged::Rate {
            rate,
            learning: false,
        },
        Estimate::EveryVisit(evidence) => {
            let lower = evidence.lower_bound(None);
            if mu > 0.0
                && mu * lower >= 1.0
                && evidence.changed_within(probe * PROBE_SLACK) >= PROBES_TO_GIVE_UP
            {
                Judged::TooFast
            } else {
                Judged::Probe { rate: lower }
            }
        }
    }
}

/// Where a page is counted in its host's demand.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Counted {
    /// A page priced at its rate (on the floor at rate 0).
    Page(f64),
    /// A page never seen changing, at the rate it is priced at.
    Unchanging(f64),
    /// A hub, at its new URLs a second.
    Hub(f64),
    /// A page being probed.
    Probe,
}

/// Where a page is counted (`history` as scheduled, with its interval): one on the floor
/// (changed at every visit and scheduled at `max` seconds or more) is counted there. A
/// function of the history alone, so that the count it was added to is the one it is taken
/// from.
fn counted(history: &PageHistory, initial_interval: u64, min: f64, max: f64) -> Counted {
    if history.new_urls > 0 {
        return Counted::Hub(hub_rate(history));
    }
    let interval = history.interval as f64;
    match judge(history, initial_interval, 0.0, min) {
        Judged::Unchanging { rate } => Counted::Unchanging(rate),
        Judged::Rate { rate, .. } => Counted::Page(rate),
        Judged::Probe { .. } if interval >= max => Counted::Page(0.0),
        Judged::Probe { .. } if interval <= min => Counted::Probe,
        Judged::Probe { rate } => Counted::Page(rate),
        Judged::TooFast => Counted::Page(0.0),
    }
}

/// A hub's new URLs a second (0 for a page whose visits found none).
fn hub_rate(history: &PageHistory) -> f64 {
    match (history.new_urls, history.observed_secs) {
        (0, _) | (_, 0) => 0.0,
        (n, secs) => f64::from(n) / secs as f64,
    }
}

/// Cho & Garcia-Molina's frequency at price `mu` (0: no visit pays).
fn optimal_frequency(rate: f64, mu: f64) -> f64 {
    visits_per_change(rate, mu).map_or(0.0, |r| rate / r)
}

/// The frequency where one more visit a second finds `mu` new URLs' worth:
/// `λₕ/(2f²) = μ`.
fn hub_frequency(rate: f64, mu: f64) -> f64 {
    if rate > 0.0 && mu > 0.0 {
        (rate / (2.0 * mu)).sqrt()
    } else {
        0.0
    }
}

impl HostBudgets {
    pub fn new(schedule: &ScheduleConfig) -> HostBudgets {
        let min_interval = schedule.min_interval.max(1);
        HostBudgets {
            min_interval,
            max_interval: schedule.max_interval.max(min_interval),
            initial_interval: schedule.initial_interval.max(1),
            hosts: HashMap::new(),
        }
    }

    /// Hosts with a budget.
    #[cfg(test)]
    pub fn hosts(&self) -> usize {
        self.hosts.len()
    }

    /// The value class of a page with this history on `host`, at the host's current price.
    pub fn class(&self, host: &str, history: &PageHistory) -> ValueClass {
        let mu = self.hosts.get(host).map_or(0.0, |h| h.mu);
        self.class_at(history, mu)
    }

    fn class_at(&self, history: &PageHistory, mu: f64) -> ValueClass {
        if history.new_urls > 0 {
            return ValueClass::Discovery;
        }
        match judge(history, self.initial_interval, mu, self.min_interval as f64) {
            Judged::Rate { learning: true, .. } | Judged::Probe { .. } => ValueClass::Learning,
            Judged::Rate { rate, .. } if optimal_frequency(rate, mu) > 0.0 => ValueClass::Freshness,
            Judged::Rate { .. } | Judged::Unchanging { .. } | Judged::TooFast => ValueClass::Floor,
        }
    }

    /// A page of `host` ended at `at` (unix seconds), `period` seconds after the host's
    /// previous fetch could start (its politeness gap plus this fetch's time): `old` is its
    /// history before this visit (`None`: its first fetch), `new` after. Returns when it is due
    /// again and why; `None` when the host is past [`MAX_HOSTS`] (the caller's unpriced
    /// schedule decides).
    pub fn price(
        &mut self,
        host: &str,
        old: Option<&PageHistory>,
        new: &PageHistory,
        period: f64,
        at: u64,
    ) -> Option<Priced> {
        if !self.hosts.contains_key(host) {
            if self.hosts.len() >= MAX_HOSTS {
                return None;
            }
            self.hosts.insert(
                host.into(),
                HostBudget {
                    pages: RateCounts::default(),
                    hubs: RateCounts::default(),
                    unchanging: RateCounts::default(),
                    probes: 0,
                    period: 0.0,
                    mu: MU_MIN,
                    floor: 1.0 / self.max_interval as f64,
                    unchanging_cap: 1.0 / self.min_interval as f64,
                    probe_room: 1.0,
                    solved_at: None,
                },
            );
        }
        let initial = self.initial_interval;
        let (min, max) = (self.min_interval as f64, self.max_interval as f64);
        let h = self.hosts.get_mut(host)?;
        if period.is_finite() && period > 0.0 {
            h.period = match h.period {
                p if p > 0.0 => p + PERIOD_WEIGHT * (period - p),
                _ => period,
            };
        }
        let (mu, floor, cap) = (h.mu, h.floor, h.unchanging_cap);
        let probe_room = f64::from(h.probes) < h.probe_room;
        let judged = judge(new, initial, mu, min);
        let rate = match judged {
            Judged::Rate { rate, .. } | Judged::Probe { rate } => rate,
            Judged::Unchanging { .. } | Judged::TooFast => 0.0,
        };
        let f = match judged {
            Judged::Unchanging { rate } if new.new_urls == 0 => {
                optimal_frequency(rate, mu).min(cap)
            }
            _ => optimal_frequency(rate, mu).max(hub_frequency(hub_rate(new), mu)),
        };
        let f = f.max(floor).min(1.0 / min);
        let longest = max.max(1.0 / floor);
        let mut interval = (1.0 / f).clamp(min, longest);
        let class = self.class_at(new, mu);
        match judged {
            // Too fast to keep fresh: looked at on the floor (a lower bound's estimate
            // would still look catchable).
            Judged::TooFast if new.new_urls == 0 => interval = longest,
            // Changed at every visit: the next look comes soon enough to see it unchanged
            // if it is catchable at all.
            Judged::Probe { .. }
                if new.new_urls == 0 && matches!(new.estimate(), Estimate::EveryVisit(_)) =>
            {
                let probing = old.is_some_and(|o| counted(o, initial, min, max) == Counted::Probe);
                if probing || probe_room {
                    interval = min;
                }
            }
            _ => {}
        }
        // The page moves to its new place in the counts, as it is now scheduled.
        let scheduled = PageHistory {
            interval: interval.round() as u64,
            ..*new
        };
        let h = self.hosts.get_mut(host)?;
        if let Some(old) = old {
            match counted(old, initial, min, max) {
                Counted::Page(rate) => h.pages.remove(rate),
                Counted::Unchanging(rate) => h.unchanging.remove(rate),
                Counted::Hub(rate) => h.hubs.remove(rate),
                Counted::Probe => h.probes = h.probes.saturating_sub(1),
            }
        }
        match counted(&scheduled, initial, min, max) {
            Counted::Page(rate) => h.pages.add(rate),
            Counted::Unchanging(rate) => h.unchanging.add(rate),
            Counted::Hub(rate) => h.hubs.add(rate),
            Counted::Probe => h.probes = h.probes.saturating_add(1),
        }
        if h.solved_at
            .is_none_or(|t| at >= t.saturating_add(SOLVE_EVERY_SECS))
        {
            h.solve(min, max);
            h.solved_at = Some(at);
        }
        let freshness = match (class, judged) {
            (ValueClass::Discovery, _) => 1.0,
            // Its lower bound: fresh at most this much.
            (_, Judged::TooFast) => expected_freshness(change_rate(new).unwrap_or(0.0), interval),
            _ => expected_freshness(rate, interval),
        };
        Some(Priced {
            interval: interval.round() as u64,
            class,
            freshness,
        })
    }
}

impl HostBudget {
    /// Finds the multiplier at which the host's revisits use its revisit budget, and the
    /// floor's frequency. `min`, `max`: the schedule's interval bounds, seconds.
    fn solve(&mut self, min: f64, max: f64) {
        if self.period <= 0.0 {
            return;
        }
        let capacity = 1.0 / self.period;
        // The new URLs the hubs are expected to bring, each a first fetch.
        let discovery: f64 = self.hubs.occupied().map(|(n, rate)| n * rate).sum();
        let budget = (capacity - discovery).max(capacity * MIN_REVISIT_SHARE);
        let unchanging = self.unchanging.total();
        let probes = f64::from(self.probes);
        self.probe_room = (PROBE_SHARE * budget * min).max(1.0);
        // Pages at `--revisit-min` are a demand the price does not move until they are
        // fetched again (soon): at most the probes' share, so that many pages there at
        // the start (when the price is still low) do not drive it up.
        let probing = (probes / min).min(PROBE_SHARE * budget);
        let all = self.pages.total() + self.hubs.total() + unchanging + probes;
        if all <= 0.0 {
            return;
        }
        self.floor = (1.0 / max).min(FLOOR_SHARE * budget / all);
        self.unchanging_cap = (UNCHANGING_SHARE * budget / unchanging.max(1.0)).max(self.floor);
        let (floor, most, cap) = (self.floor, 1.0 / min, self.unchanging_cap);
        let demand = |mu: f64| -> f64 {
            let pages: f64 = self
                .pages
                .occupied()
                .map(|(n, rate)| n * optimal_frequency(rate, mu).clamp(floor, most))
                .sum();
            let hubs: f64 = self
                .hubs
                .occupied()
                .map(|(n, rate)| n * hub_frequency(rate, mu).clamp(floor, most))
                .sum();
            let unchanging: f64 = self
                .unchanging
                .occupied()
                .map(|(n, rate)| n * optimal_frequency(rate, mu).min(cap).clamp(floor, most))
                .sum();
            pages
                + hubs
                + unchanging
                + probing
                + f64::from(self.pages.zero + self.hubs.zero) * floor
        };
        if demand(MU_MIN) <= budget {
            // Politeness leaves more than every page can use: each at its most.
            self.mu = MU_MIN;
            return;
        }
        let (mut lo, mut hi) = (MU_MIN.ln(), MU_MAX.ln());
        for _ in 0..MU_STEPS {
            let mid = (lo + hi) / 2.0;
            if demand(mid.exp()) > budget {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        self.mu = hi.exp();
    }
}

#[cfg(test)]
#[path = "host_budget_tests.rs"]
mod tests;
