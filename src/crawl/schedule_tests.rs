use super::*;
use crate::test_rng::Rng;
use proptest::prelude::*;

const DAY: u64 = 86_400;

/// An exponential wait with mean `mean` seconds.
fn exp(rng: &mut Rng, mean: f64) -> u64 {
    (-rng.unit().ln() * mean) as u64
}

fn config(policy: Policy) -> ScheduleConfig {
    ScheduleConfig {
        policy,
        ..ScheduleConfig::default()
    }
}

/// Visits a page over `days` of simulated time, each visit when the schedule said, and
/// returns every interval scheduled with the time it was scheduled at. `changed(prev, now)`
/// says whether the page changed between two visits.
fn simulate(
    config: &ScheduleConfig,
    days: u64,
    mut changed: impl FnMut(u64, u64) -> bool,
) -> Vec<(u64, u64)> {
    let mut history = PageHistory::default();
    let first = Visit {
        at: 0,
        seen: Observation::Unknown,
        last_modified: None,
    };
    let mut due = config.schedule(&mut history, None, first);
    let mut prev = 0;
    let mut out = vec![(0, history.interval)];
    // Bounded: at least min_interval per step.
    while due < days * DAY {
        let now = due;
        let seen = if changed(prev, now) {
            Observation::Changed
        } else {
            Observation::Unchanged
        };
        let visit = Visit {
            at: now,
            seen,
            last_modified: None,
        };
        due = config.schedule(&mut history, Some(prev), visit);
        assert!(due > now);
        out.push((now, history.interval));
        prev = now;
    }
    out
}

#[test]
fn a_page_that_changes_every_visit_converges_to_the_minimum() {
    for policy in [Policy::Adaptive, Policy::Estimated] {
        let c = config(policy);
        let got = simulate(&c, 30, |_, _| true);
        let last = got.last().unwrap().1;
        assert_eq!(last, c.min_interval, "{policy:?}");
    }
}

#[test]
fn a_page_that_never_changes_converges_to_the_maximum() {
    for policy in [Policy::Adaptive, Policy::Estimated] {
        let c = config(policy);
        let got = simulate(&c, 365, |_, _| false);
        let last = got.last().unwrap().1;
        assert_eq!(last, c.max_interval, "{policy:?}");
    }
}

/// Simulated visits (each when the schedule said) to a Poisson page changing every `mean`
/// days on average, for a year; the mean interval scheduled in the second half-year.
fn poisson_late_mean(config: &ScheduleConfig, seed: u64, mean: f64) -> f64 {
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut next_change = exp(&mut rng, mean * DAY as f64);
    let got = simulate(config, 365, |_, now| {
        let mut hit = false;
        while next_change <= now {
            hit = true;
            next_change += exp(&mut rng, mean * DAY as f64).max(1);
        }
        hit
    });
    let late: Vec<u64> = got
        .iter()
        .filter(|(at, _)| *at > 180 * DAY)
        .map(|&(_, i)| i)
        .collect();
    assert!(late.len() > 30, "seed {seed}: {} visits", late.len());
    late.iter().sum::<u64>() as f64 / late.len() as f64 / DAY as f64
}

/// A page changing every 3 days (Poisson), visited for a year: the estimator's schedule
/// settles near 3 days, one visit per expected change. One page's year is ~60 visits, so
/// its estimate is within about ±30 % (4.55 days is the worst of these 32 seeds); over 32
/// pages the mean is within 15 % (3.36 days: the estimate's convexity leans long).
#[test]
fn a_page_changing_every_three_days_settles_near_three_days() {
    let c = config(Policy::Estimated);
    let means: Vec<f64> = (1..=32)
        .map(|seed| poisson_late_mean(&c, seed, 3.0))
        .collect();
    for (seed, m) in means.iter().enumerate() {
        assert!(
            (2.0..=5.0).contains(m),
            "seed {}: mean {m:.2} days",
            seed + 1
        );
    }
    let overall = means.iter().sum::<f64>() / means.len() as f64;
    assert!((2.55..=3.45).contains(&overall), "mean {overall:.2} days");
}

/// Nutch's walk (without sync), on the same pages, settles where 45 % of visits see a
/// change (at 0.2/0.2): about 1.8 days, more visits than changes. Matching the rate is the
/// estimator's doing.
#[test]
fn the_adaptive_walk_settles_below_the_change_interval() {
    let c = ScheduleConfig {
        sync_delta_rate: None,
        ..config(Policy::Adaptive)
    };
    let means: Vec<f64> = (1..=32)
        .map(|seed| poisson_late_mean(&c, seed, 3.0))
        .collect();
    let overall = means.iter().sum::<f64>() / means.len() as f64;
    assert!((1.4..=2.3).contains(&overall), "mean {overall:.2} days");
}

#[test]
fn the_estimator_is_its_closed_form() {
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b.abs().max(1e-30);
    // n = 10, X = 4, I = 1 h.
    let want = -(6.5f64 / 10.5).ln() / 3600.0;
    assert!(close(estimate_change_rate(10, 4, 3600.0), want));
    // No change seen: rate 0. Every visit a change: ln(2n + 1) / I, finite.
    assert_eq!(estimate_change_rate(10, 0, 3600.0), 0.0);
    assert!(close(
        estimate_change_rate(10, 10, 3600.0),
        21f64.ln() / 3600.0
    ));
    // More changes than visits cannot be: read as every visit.
    assert_eq!(
        estimate_change_rate(5, 9, 60.0),
        estimate_change_rate(5, 5, 60.0)
    );
    // From a history: the mean interval is observed / visits.
    let h = PageHistory {
        visits: 4,
        changes: 2,
        observed_secs: 4 * 7200,
        last_change: None,
        interval: 7200,
        new_urls: 0,
        ..PageHistory::default()
    };
    assert!(close(
        change_rate(&h).unwrap(),
        -(2.5f64 / 4.5).ln() / 7200.0
    ));
    assert_eq!(change_rate(&PageHistory::default()), None);
}

/// With visits at the true mean interval 1/λ, the estimate over many visits recovers λ
/// (the point of the estimator: the naive X/(nI) would say 0.63 λ).
#[test]
fn the_estimator_recovers_a_poisson_rate() {
    let mut rng = Rng(77);
    let interval: f64 = 3600.0;
    let lambda = 1.0 / interval;
    let n = 20_000u32;
    let changes = (0..n)
        .filter(|_| rng.unit() < 1.0 - (-lambda * interval).exp())
        .count() as u32;
    let got = estimate_change_rate(n, changes, interval);
    assert!((got / lambda - 1.0).abs() < 0.03, "{got} vs {lambda}");
    let naive = f64::from(changes) / (f64::from(n) * interval);
    assert!(naive / lambda < 0.7);
}

#[test]
fn a_rate_becomes_one_visit_per_change_within_bounds() {
    let c = ScheduleConfig::default();
    assert_eq!(interval_for_rate(&c, 1.0 / 7200.0), 7200);
    assert_eq!(interval_for_rate(&c, 1.0), c.min_interval);
    assert_eq!(interval_for_rate(&c, 0.0), c.max_interval);
    assert_eq!(interval_for_rate(&c, 1e-300), c.max_interval);
    assert_eq!(interval_for_rate(&c, f64::NAN), c.max_interval);
    assert_eq!(interval_for_rate(&c, f64::INFINITY), c.max_interval);
}

#[test]
fn history_forgets_so_a_page_that_stops_changing_is_relearned() {
    let c = config(Policy::Estimated);
    // Busy for a month, then still: within the next 6 months it reaches the maximum.
    let got = simulate(&c, 210, |_, now| now < 30 * DAY);
    let h_visits = got.len();
    assert!(h_visits > 100);
    assert_eq!(got.last().unwrap().1, c.max_interval);
}

#[test]
fn an_unknown_visit_leaves_the_history_alone() {
    let c = ScheduleConfig::default();
    let mut h = PageHistory {
        visits: 3,
        changes: 1,
        observed_secs: 3 * DAY,
        last_change: Some(5),
        interval: DAY,
        new_urls: 0,
        ..PageHistory::default()
    };
    let before = h;
    let visit = Visit {
        at: 10 * DAY,
        seen: Observation::Unknown,
        last_modified: None,
    };
    let due = c.schedule(&mut h, Some(9 * DAY), visit);
    assert_eq!((h.visits, h.changes, h.observed_secs), (3, 1, 3 * DAY));
    assert_eq!(h.last_change, before.last_change);
    assert_eq!(due, 10 * DAY + h.interval);
}

#[test]
fn a_change_is_dated_by_last_modified_when_it_falls_between_visits() {
    let c = ScheduleConfig::default();
    let mut h = PageHistory::default();
    let at = |t, lm| Visit {
        at: t,
        seen: Observation::Changed,
        last_modified: lm,
    };
    c.schedule(&mut h, Some(1000), at(2000, Some(1500)));
    assert_eq!(h.last_change, Some(1500));
    // A date before the previous visit (a stale or lying server): the visit's time.
    c.schedule(&mut h, Some(2000), at(3000, Some(100)));
    assert_eq!(h.last_change, Some(3000));
    // From the future: the visit's time too.
    c.schedule(&mut h, Some(3000), at(4000, Some(9000)));
    assert_eq!(h.last_change, Some(4000));
}

#[test]
fn nutch_sync_moves_the_visit_toward_the_last_change() {
    let c = ScheduleConfig {
        policy: Policy::Adaptive,
        sync_delta_rate: Some(0.2),
        ..ScheduleConfig::default()
    };
    // Unchanged since 10 days, interval 1 day: the interval becomes at least 10 days, and
    // counts from 2 days (0.2 × 10) before the visit.
    let mut h = PageHistory {
        last_change: Some(90 * DAY),
        interval: DAY,
        ..PageHistory::default()
    };
    let visit = Visit {
        at: 100 * DAY,
        seen: Observation::Unchanged,
        last_modified: None,
    };
    let due = c.schedule(&mut h, Some(99 * DAY), visit);
    assert_eq!(h.interval, 10 * DAY);
    assert_eq!(due, 98 * DAY + 10 * DAY);
}

/// The budgeted interval satisfies Cho & Garcia-Molina's condition: one more visit a second
/// buys `marginal` of freshness (checked by a finite difference of F over the frequency).
#[test]
fn the_budgeted_interval_equalizes_the_marginal_freshness() {
    let c = ScheduleConfig {
        min_interval: 1,
        max_interval: 10_000 * DAY,
        ..ScheduleConfig::default()
    };
    let marginal = 86_400.0; // one visit a day more buys a whole unit of freshness
                             // Pages changing slower than the price's break-even (one change a day here).
    for mean_days in [1.2f64, 3.0, 10.0, 60.0] {
        let rate = 1.0 / (mean_days * DAY as f64);
        let i = budgeted_interval(&c, rate, marginal) as f64;
        let f = 1.0 / i;
        let h = f * 1e-4;
        let dfdf = ((f + h) / rate * (1.0 - (-rate / (f + h)).exp())
            - (f - h) / rate * (1.0 - (-rate / (f - h)).exp()))
            / (2.0 * h);
        assert!(
            (dfdf / marginal - 1.0).abs() < 1e-3,
            "{mean_days} d: {dfdf} at {i} s"
        );
    }
}

/// With the same budget price, slow pages get longer intervals as they slow, and pages too
/// fast to keep fresh get fewer visits, not more: the interval is not monotone in the rate.
#[test]
fn the_budget_gives_up_on_pages_too_fast_to_catch() {
    let c = ScheduleConfig::default();
    let marginal = 86_400.0;
    let at = |mean_days: f64| budgeted_interval(&c, 1.0 / (mean_days * DAY as f64), marginal);
    assert!(at(30.0) > at(10.0) && at(10.0) > at(3.0));
    // μλ ≥ 1: a page changing every 12 hours is not worth chasing at this price.
    assert_eq!(at(0.5), c.max_interval);
    assert_eq!(budgeted_interval(&c, 0.0, marginal), c.max_interval);
    assert_eq!(budgeted_interval(&c, f64::NAN, marginal), c.max_interval);
    assert_eq!(budgeted_interval(&c, 1e-3, -1.0), c.max_interval);
    // A cheaper visit (smaller price) means more visits everywhere.
    let cheap = budgeted_interval(&c, 1.0 / (3.0 * DAY as f64), marginal / 10.0);
    assert!(cheap < at(3.0));
}

fn arb_seen() -> impl Strategy<Value = Observation> {
    prop_oneof![
        Just(Observation::Changed),
        Just(Observation::Unchanged),
        Just(Observation::Unknown)
    ]
}

proptest! {
    /// Whatever the visits and the configuration, every interval and every due time's
    /// distance from its visit are within [min, max].
    #[test]
    fn bounds_are_always_respected(
        adaptive in any::<bool>(),
        min in 1u64..100_000,
        span in 0u64..10_000_000,
        initial in 0u64..100_000_000,
        inc in 0.0f64..1.0,
        dec in 0.0f64..1.0,
        sync in proptest::option::of(0.0f64..1.0),
        visits in proptest::collection::vec(
            (0u64..50_000_000, arb_seen(), proptest::option::of(0u64..u64::MAX / 2)),
            1..40,
        ),
    ) {
        let c = ScheduleConfig {
            policy: if adaptive { Policy::Adaptive } else { Policy::Estimated },
            min_interval: min,
            max_interval: min + span,
            initial_interval: initial,
            inc_rate: inc,
            dec_rate: dec,
            sync_delta_rate: sync,
        };
        let mut h = PageHistory::default();
        let mut last = None;
        let mut now = 1_000_000_000u64;
        for (gap, seen, lm) in visits {
            now += gap;
            let due = c.schedule(&mut h, last, Visit { at: now, seen, last_modified: lm });
            prop_assert!(h.interval >= c.min_interval && h.interval <= c.max_interval);
            prop_assert!(due >= now + c.min_interval && due <= now + c.max_interval);
            prop_assert!(h.changes <= h.visits && h.visits < MAX_HISTORY_VISITS);
            last = Some(now);
        }
    }
}

/// The changes per visit solve `1 − (1 + r)e^(−r) = marginal · λ` across the range, and no
/// visit pays at or past `marginal · λ = 1`.
#[test]
fn visits_per_change_solves_the_optimality_condition() {
    let g = |r: f64| 1.0 - (1.0 + r) * (-r).exp();
    for target in [
        1e-9, 1e-6, 1e-3, 0.01, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99, 0.999_999,
    ] {
        let r = visits_per_change(1.0, target).expect("a visit pays");
        assert!(
            (g(r) - target).abs() <= 1e-9 * target.max(1e-3),
            "{target}: r {r}"
        );
    }
    assert_eq!(visits_per_change(1.0, 1.0), None);
    assert_eq!(visits_per_change(0.0, 0.5), None);
    assert!((expected_freshness(0.01, 100.0) - (1.0 - (-1.0f64).exp())).abs() < 1e-12);
    assert_eq!(expected_freshness(0.0, 100.0), 1.0);
}
