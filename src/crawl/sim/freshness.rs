//! A host of Poisson pages and a feed, crawled in simulated time through the real revisit
//! policy (`RevisitBudget::decide`, its host budget and the schedule's estimator): hours of
//! a continuous crawl in a fraction of a second, with the time-averaged freshness it reached
//! against a uniform revisit with the same fetches and against the optimum computed from
//! the true rates with the same budget (issue 44's figures).
//!
//! The host takes one fetch per `period` seconds, as politeness allows: a new URL first (the
//! frontier's new URLs go before its revisits), else the page due earliest if one is due,
//! else the host waits for the next due time. Page `i` changes as a Poisson process of rate
//! `λᵢ` (seeded draws); a fetch sees a change when one came since the last fetch, and the
//! crawler's copy is fresh from a fetch until the page's next change. The feed gains new
//! articles as a Poisson process; each article is a new URL, fetched first and then revisited
//! like any page (it never changes). Freshness is measured over the pages of the mix only,
//! after a warm-up in which the policy learns their rates.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::time::Instant;

use super::ok_head;
use crate::crawl::counters::RevisitCounters;
use crate::crawl::revisit::{LastFetch, Seen};
use crate::crawl::revisit_budget::{Ended, RevisitBudget};
use crate::crawl::schedule::{expected_freshness, visits_per_change, ScheduleConfig};
use crate::test_rng::Rng;

/// The simulated wall clock's start, unix seconds.
const T0: u64 = 1_800_000_000;
/// Fetches a run takes at most (a bound on its loop, whatever the mix).
const MAX_FETCHES: usize = 1_000_000;

/// A mix of pages on one host, and how it is crawled.
#[derive(Clone, Debug)]
pub struct Mix {
    /// (pages, mean seconds between changes; 0: never).
    pub classes: Vec<(usize, f64)>,
    /// Mean seconds between a feed's new articles (`None`: no feed).
    pub article_secs: Option<f64>,
    /// Seconds per fetch: what politeness allows on the host.
    pub period: f64,
    /// The crawl's length, and the warm-up not measured, seconds.
    pub secs: f64,
    pub warm_up: f64,
    pub schedule: ScheduleConfig,
    pub seed: u64,
}

/// What a run reached.
#[derive(Clone, Debug, Default)]
pub struct Figures {
    /// Time-averaged freshness of the mix's pages over the measured time.
    pub policy: f64,
    /// The same fetches to the mix's pages spread uniformly (each page every N/B seconds),
    /// and the optimum from the true rates with that budget (Cho & Garcia-Molina): expected
    /// values.
    pub uniform: f64,
    pub optimum: f64,
    /// Revisits of the mix's pages over the measured time, per second.
    pub page_revisits: f64,
    /// Fetches over the measured time: all, the feed's, articles' first fetches and their
    /// revisits.
    pub fetches: u64,
    pub feed_fetches: u64,
    pub article_fetches: u64,
    pub article_revisits: u64,
    /// The feed's mean interval between fetches, and the median seconds from an article's
    /// publication to its fetch (measured time only).
    pub feed_interval: Option<f64>,
    pub article_latency_median: Option<f64>,
    /// The share of the host's fetch slots left unused (nothing was due).
    pub idle: f64,
    /// Revisits over the measured time of each of the mix's classes, per page and hour.
    pub visits_per_hour: Vec<f64>,
    pub counted: RevisitCounters,
}

/// A URL on the simulated host.
struct Url {
    /// Changes per second (0: never).
    rate: f64,
    /// The next change after the last fetch (infinite: never).
    next_change: f64,
    last: Option<LastFetch>,
    last_fetch: f64,
    /// Fresh seconds within the measured time, summed.
    fresh: f64,
    kind: Kind,
    /// Its class in the mix, and its revisits in the measured time.
    class: usize,
    revisits: u64,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Page,
    Feed,
    /// Published at this time (seconds since the start, in thousandths).
    Article(u64),
}

fn exp_wait(rng: &mut Rng, rate: f64) -> f64 {
    if rate <= 0.0 {
        return f64::INFINITY;
    }
    -rng.unit().ln() / rate
}

/// The fresh part of `[from, to]` for a copy fresh until `stale_at`, within `[w0, w1]`.
fn fresh_within(from: f64, to: f64, stale_at: f64, w0: f64, w1: f64) -> f64 {
    let (a, b) = (from.max(w0), to.min(stale_at).min(w1));
    (b - a).max(0.0)
}

/// Runs `mix` (see the module doc).
pub fn run(mix: &Mix) -> Figures {
    let mut rng = Rng(mix.seed | 1);
    let mut urls: Vec<Url> = Vec::new();
    for (class, &(n, mean)) in mix.classes.iter().enumerate() {
        for _ in 0..n {
            let rate = if mean > 0.0 { 1.0 / mean } else { 0.0 };
            urls.push(Url {
                rate,
                next_change: exp_wait(&mut rng, rate),
                last: None,
                last_fetch: 0.0,
                fresh: 0.0,
                kind: Kind::Page,
                class,
                revisits: 0,
            });
        }
    }
    let pages = urls.len();
    let article_rate = mix.article_secs.map_or(0.0, |m| 1.0 / m);
    let mut next_article = exp_wait(&mut rng, article_rate);
    let mut published: VecDeque<f64> = VecDeque::new();
    if article_rate > 0.0 {
        urls.push(Url {
            rate: 0.0,
            next_change: f64::INFINITY,
            last: None,
            last_fetch: 0.0,
            fresh: 0.0,
            kind: Kind::Feed,
            class: 0,
            revisits: 0,
        });
    }
    // Found on the front page at the start: every page and the feed, new URLs.
    let mut new_urls: VecDeque<usize> = (0..urls.len()).collect();
    let mut due: BinaryHeap<Reverse<(u64, usize)>> = BinaryHeap::new();
    let mut budget = RevisitBudget::new(mix.schedule, true, Instant::now());
    let mut counted = RevisitCounters::default();
    let head = ok_head();
    let (w0, w1) = (mix.warm_up, mix.secs);
    let mut f = Figures::default();
    let (mut t, mut idle, mut page_revisits) = (0.0f64, 0.0f64, 0u64);
    let mut feed_times: Vec<f64> = Vec::new();
    let mut latencies: Vec<f64> = Vec::new();
    for _ in 0..MAX_FETCHES {
        if t >= mix.secs {
            break;
        }
        let at = T0 + t as u64;
        let next = match new_urls.pop_front() {
            Some(i) => Some(i),
            None => match due.peek() {
                Some(&Reverse((d, i))) if d <= at => {
                    due.pop();
                    Some(i)
                }
                Some(&Reverse((d, _))) => {
                    // Nothing due: the host waits, its slots unused.
                    let wake = ((d - T0) as f64).min(mix.secs);
                    if wake > w0 {
                        idle += wake - t.max(w0);
                    }
                    t = wake.max(t + 1e-3);
                    continue;
                }
                None => break,
            },
        };
        let Some(i) = next else { break };
        let measured = t >= w0;
        let u = &mut urls[i];
        // What the fetch sees, and what the copy was worth since the last one.
        let seen = match (&u.last, u.kind) {
            (None, _) => Seen::Unknown,
            (Some(_), Kind::Feed) => match published.is_empty() {
                true => Seen::NotModified,
                false => Seen::Changed,
            },
            (Some(_), _) if u.next_change <= t => Seen::Changed,
            (Some(_), _) => Seen::NotModified,
        };
        if u.kind == Kind::Page {
            if u.last.is_some() {
                u.fresh += fresh_within(u.last_fetch, t, u.next_change, w0, w1);
                if measured {
                    page_revisits += 1;
                    u.revisits += 1;
                }
            }
            if u.next_change <= t {
                u.next_change = t + exp_wait(&mut rng, u.rate);
            }
        }
        let mut found = 0u32;
        if measured {
            f.fetches += 1;
        }
        match u.kind {
            Kind::Feed => {
                // Articles published since the last look are listed: new URLs.
                while next_article <= t {
                    published.push_back(next_article);
                    next_article += exp_wait(&mut rng, article_rate);
                }
                if measured {
                    f.feed_fetches += 1;
                    feed_times.push(t);
                }
                found = u32::try_from(published.len()).unwrap_or(u32::MAX);
            }
            Kind::Article(p) if u.last.is_none() && measured => {
                f.article_fetches += 1;
                latencies.push(t - p as f64 / 1000.0);
            }
            Kind::Article(_) if measured => f.article_revisits += 1,
            _ => {}
        }
        let ended = Ended {
            host: "sim.test",
            period: mix.period,
            new_urls: found,
        };
        let d = budget.decide(u.last.as_ref(), seen, Some(&head), at, ended, &mut counted);
        u.last = Some(LastFetch {
            fetched_at: at,
            status: 200,
            history: d.history,
            due: d.due,
            ..LastFetch::default()
        });
        u.last_fetch = t;
        due.push(Reverse((d.due, i)));
        for p in published.drain(..) {
            urls.push(Url {
                rate: 0.0,
                next_change: f64::INFINITY,
                last: None,
                last_fetch: 0.0,
                fresh: 0.0,
                kind: Kind::Article((p * 1000.0) as u64),
                class: 0,
                revisits: 0,
            });
            new_urls.push_back(urls.len() - 1);
        }
        t += mix.period;
    }
    // Each page's copy since its last fetch, to the end.
    for u in urls.iter_mut().filter(|u| u.kind == Kind::Page) {
        if u.last.is_some() {
            u.fresh += fresh_within(u.last_fetch, w1, u.next_change, w0, w1);
        }
    }
    let span = (w1 - w0).max(1e-9);
    let rates: Vec<f64> = urls[..pages].iter().map(|u| u.rate).collect();
    f.policy = urls[..pages].iter().map(|u| u.fresh).sum::<f64>() / (pages as f64 * span);
    f.page_revisits = page_revisits as f64 / span;
    f.uniform = uniform(&rates, f.page_revisits);
    f.optimum = optimum(&rates, f.page_revisits, mix.schedule.min_interval as f64);
    f.idle = idle / span;
    f.visits_per_hour = (0..mix.classes.len())
        .map(|c| {
            let (n, sum) = urls[..pages]
                .iter()
                .filter(|u| u.class == c)
                .fold((0u64, 0u64), |(n, s), u| (n + 1, s + u.revisits));
            sum as f64 * 3_600.0 / (n.max(1) as f64 * span)
        })
        .collect();
    f.feed_interval = (feed_times.len() > 1).then(|| {
        (feed_times[feed_times.len() - 1] - feed_times[0]) / (feed_times.len() - 1) as f64
    });
    latencies.sort_by(f64::total_cmp);
    f.article_latency_median = latencies.get(latencies.len() / 2).copied();
    f.counted = counted;
    f
}

/// The expected freshness of pages changing at `rates` when `budget` visits a second are
/// spread evenly.
pub fn uniform(rates: &[f64], budget: f64) -> f64 {
    let interval = rates.len() as f64 / budget;
    rates
        .iter()
        .map(|&r| expected_freshness(r, interval))
        .sum::<f64>()
        / rates.len() as f64
}

/// The expected freshness of pages changing at `rates` with `budget` visits a second spent
/// as Cho & Garcia-Molina's optimum (one multiplier, found by bisection), each page visited
/// at most every `min_interval` seconds.
pub fn optimum(rates: &[f64], budget: f64, min_interval: f64) -> f64 {
    let frequency = |rate: f64, mu: f64| {
        visits_per_change(rate, mu).map_or(0.0, |r| (rate / r).min(1.0 / min_interval))
    };
    let demand = |mu: f64| rates.iter().map(|&r| frequency(r, mu)).sum::<f64>();
    let (mut lo, mut hi) = (1e-6f64.ln(), 1e12f64.ln());
    for _ in 0..100 {
        let mid = (lo + hi) / 2.0;
        if demand(mid.exp()) > budget {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let mu = hi.exp();
    let fresh = |r: f64| match frequency(r, mu) {
        _ if r <= 0.0 => 1.0,
        f if f > 0.0 => expected_freshness(r, 1.0 / f),
        _ => 0.0,
    };
    rates.iter().map(|&r| fresh(r)).sum::<f64>() / rates.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crawl::schedule::Policy;

    /// `--revisit-min 10 --revisit-max 86400`: the first revisit after their geometric mean.
    fn schedule() -> ScheduleConfig {
        ScheduleConfig {
            policy: Policy::Estimated,
            min_interval: 10,
            max_interval: 86_400,
            initial_interval: 930,
            ..ScheduleConfig::default()
        }
    }

    /// Eight hours at a fetch a second, the first two not measured (the rates are learned).
    fn mix(classes: &[(usize, f64)], article_secs: Option<f64>) -> Mix {
        Mix {
            classes: classes.to_vec(),
            article_secs,
            period: 1.0,
            secs: 8.0 * 3_600.0,
            warm_up: 2.0 * 3_600.0,
            schedule: schedule(),
            seed: 0x5eed,
        }
    }

    /// The figures: at least 1.1× uniform's freshness and 0.95× the optimum's.
    fn beats_uniform_and_nears_the_optimum(name: &str, m: &Mix) -> Figures {
        let f = run(m);
        eprintln!(
            "{name}: policy {:.3}, uniform {:.3} ({:.2}×), optimum {:.3} ({:.2}×); {:.3} page \
             revisits/s, idle {:.1} %, {} fetches, revisits by class: learning {}, freshness \
             {}, discovery {}, floor {}; revisits per page and hour by class {:.2?}",
            f.policy,
            f.uniform,
            f.policy / f.uniform,
            f.optimum,
            f.policy / f.optimum,
            f.page_revisits,
            f.idle * 100.0,
            f.fetches,
            f.counted.learning,
            f.counted.for_freshness,
            f.counted.for_discovery,
            f.counted.floor,
            f.visits_per_hour,
        );
        assert!(f.policy >= 1.1 * f.uniform, "{name}: {f:?}");
        assert!(f.policy >= 0.95 * f.optimum, "{name}: {f:?}");
        // The host's slots were spent: a policy that idles could beat uniform by the count.
        assert!(f.idle < 0.05, "{name}: {f:?}");
        f
    }

    #[test]
    fn most_pages_never_change() {
        let m = mix(&[(300, 0.0), (200, 167.0)], None);
        let f = beats_uniform_and_nears_the_optimum("most never change", &m);
        // The unchanging pages are looked at on the floor, rarely: a tenth of the budget at
        // most.
        assert!(f.counted.floor * 10 <= f.counted.fetched, "{f:?}");
    }

    /// Pages changing every 5 s, with a fetch a second for 500 pages: the optimum gives them
    /// no visits, and so must the crawl, once it has learned which they are.
    #[test]
    fn pages_changing_faster_than_the_budget_allows() {
        let m = mix(&[(250, 5.0), (150, 250.0), (100, 2_500.0)], None);
        beats_uniform_and_nears_the_optimum("too fast to keep fresh", &m);
    }

    #[test]
    fn a_spread_of_rates_with_fast_and_unchanging_pages() {
        let m = mix(
            &[(200, 3.0), (100, 100.0), (100, 1_000.0), (100, 0.0)],
            None,
        );
        beats_uniform_and_nears_the_optimum("a spread", &m);
    }

    #[test]
    fn a_feed_s_new_articles_are_fetched_within_two_of_its_intervals() {
        let m = mix(&[(300, 0.0), (200, 167.0)], Some(30.0));
        let f = beats_uniform_and_nears_the_optimum("most never change, and a feed", &m);
        let interval = f.feed_interval.expect("the feed was fetched");
        let median = f.article_latency_median.expect("articles fetched");
        eprintln!(
            "feed every {interval:.1} s, articles fetched after {median:.1} s (median), {} \
             articles, {} of their revisits, discovery share {:.3}",
            f.article_fetches,
            f.article_revisits,
            f.counted.discovery_share().unwrap_or(0.0)
        );
        assert!(median <= 2.0 * interval, "{f:?}");
        // An article every 30 s: the feed is looked at by its yield, every minute or two,
        // not every --revisit-max.
        assert!(interval < 120.0, "{f:?}");
    }
}
