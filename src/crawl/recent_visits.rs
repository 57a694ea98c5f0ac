//! A page's recent visits, one byte each, and the change rate they give: the per-visit
//! evidence a continuous crawl's budget (`host_budget`) prices pages by (issue 44).
//!
//! The schedule's counts (`PageHistory`: visits, changes, seconds observed) cannot tell a
//! page changed at each of 8 visits 500 s apart from one changed at each of 8 visits 10 s
//! apart, nor weigh a long learning interval against short ones: the bias-reduced estimator
//! averages the intervals. [`RecentVisits`] keeps the last [`RECENT_VISITS`] visits, each
//! as its interval (a quarter-octave, within 9 %) and whether it saw a change, and
//! [`estimate`] turns them (with the counts' older visits, taken at their mean interval)
//! into Cho & Garcia-Molina's maximum-likelihood estimate for a Poisson page visited at
//! irregular intervals ("Estimating frequency of change", ACM TOIT 2003, §5): the rate
//! `λ` solving `Σ_changed Iᵢ/(e^(λIᵢ) − 1) = Σ_unchanged Iⱼ`. A page changed at every
//! visit has no finite estimate: [`Estimate::EveryVisit`] keeps the visits, so the budget
//! can ask how likely that was at a given rate ([`Evidence::chance_all_changed`]).
//!
//! Persisted by the crawl database inside `LastFetch` (13 bytes at most), sans-IO, no
//! allocation. `PageHistory` (`schedule`) holds a page's [`RecentVisits`] and [`Counts`].

/// The schedule's counts of a page's compared visits (`PageHistory`'s), every visit's,
/// the kept ones too.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub visits: u32,
    pub changes: u32,
    pub observed_secs: u64,
}

/// Visits kept: enough to hold a page's probes at short intervals beside the visits that
/// taught it (a page changing faster than the budget can follow is told from a catchable
/// one by two or three short probes) and a dozen visits' changes for the estimate.
pub const RECENT_VISITS: usize = 12;

/// Interval codes per octave: an interval is kept within 2^(1/8), 9 %.
const CODES_PER_OCTAVE: f64 = 4.0;
/// The code's bits; the byte's top bit says whether the visit saw a change.
const CODE_MASK: u8 = 0x7f;
const CHANGED: u8 = 0x80;

/// The last [`RECENT_VISITS`] compared visits, oldest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct RecentVisits {
    len: u8,
    visits: [u8; RECENT_VISITS],
}

/// One visit as kept: its interval from the visit before (seconds) and whether it saw a
/// change.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Kept {
    pub secs: f64,
    pub changed: bool,
}

impl RecentVisits {
    /// Records a visit `secs` after the one before, forgetting the oldest when full.
    pub fn push(&mut self, secs: u64, changed: bool) {
        let code = ((secs.max(1) as f64).log2() * CODES_PER_OCTAVE).round();
        let byte = (code.min(f64::from(CODE_MASK)) as u8) | if changed { CHANGED } else { 0 };
        let len = usize::from(self.len);
        if len == RECENT_VISITS {
            self.visits.copy_within(1.., 0);
            self.visits[RECENT_VISITS - 1] = byte;
        } else {
            self.visits[len] = byte;
            self.len += 1;
        }
    }

    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The kept visits, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = Kept> + '_ {
        self.visits[..self.len()].iter().map(|&b| Kept {
            secs: (f64::from(b & CODE_MASK) / CODES_PER_OCTAVE).exp2(),
            changed: b & CHANGED != 0,
        })
    }

    /// The byte form: a count, then a byte a visit.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.push(self.len);
        out.extend_from_slice(&self.visits[..self.len()]);
    }

    /// Reads what [`RecentVisits::encode`] wrote; `None` when short or over the bound.
    pub fn decode(input: &mut &[u8]) -> Option<RecentVisits> {
        let (&len, rest) = input.split_first()?;
        let n = usize::from(len);
        if n > RECENT_VISITS || rest.len() < n {
            return None;
        }
        let mut visits = [0; RECENT_VISITS];
        visits[..n].copy_from_slice(&rest[..n]);
        *input = &rest[n..];
        Some(RecentVisits { len, visits })
    }
}

/// What a page's visits say of its change rate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Estimate {
    /// No compared visit yet.
    Unknown,
    /// No visit saw a change, over this many seconds observed.
    Unchanged { secs: f64 },
    /// The maximum-likelihood rate, changes a second, and the visits it came from.
    Rate(f64, Evidence),
    /// Every visit saw a change: the rate has no upper bound from these visits.
    EveryVisit(Evidence),
}

/// The visits behind an estimate: the kept ones, and the counts' older visits summarized
/// at their mean interval (`older`: visits, changes, mean seconds).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Evidence {
    recent: RecentVisits,
    older: (f64, f64, f64),
}

impl Evidence {
    fn of(r: &RecentVisits, history: Counts) -> Evidence {
        let kept = r.len() as f64;
        let kept_changes = r.iter().filter(|v| v.changed).count() as f64;
        let kept_secs: f64 = r.iter().map(|v| v.secs).sum();
        // The counts hold every visit, the kept ones too (halved at times: then what is
        // left after the kept ones is an approximation, as the halving itself is).
        let visits = (f64::from(history.visits) - kept).max(0.0);
        let changes = (f64::from(history.changes) - kept_changes).clamp(0.0, visits);
        let secs = (history.observed_secs as f64 - kept_secs).max(0.0);
        let older = match visits > 0.0 && secs > 0.0 {
            true => (visits, changes, secs / visits),
            false => (0.0, 0.0, 0.0),
        };
        Evidence { recent: *r, older }
    }

    /// Each visit group as (interval, changed visits, unchanged visits).
    fn groups(&self) -> impl Iterator<Item = (f64, f64, f64)> + '_ {
        let (n, x, secs) = self.older;
        let older = (n > 0.0).then_some((secs, x, n - x));
        self.recent
            .iter()
            .map(|v| match v.changed {
                true => (v.secs, 1.0, 0.0),
                false => (v.secs, 0.0, 1.0),
            })
            .chain(older)
    }

    /// How likely every one of these visits was to see a change, were the page changing at
    /// `rate`: `Π (1 − e^(−λIᵢ))`.
    pub fn chance_all_changed(&self, rate: f64) -> f64 {
        self.groups()
            .map(|(secs, x, _)| (1.0 - (-rate * secs).exp()).powf(x))
            .product()
    }

    /// The log-likelihood of the visits at `rate`: `Σ_changed ln(1 − e^(−λI)) − λ Σ_unchanged I`.
    fn log_likelihood(&self, rate: f64) -> f64 {
        self.groups()
            .map(|(secs, x, u)| {
                let changed = match x > 0.0 {
                    true => x * (-(-rate * secs).exp_m1()).ln(),
                    false => 0.0,
                };
                changed - rate * secs * u
            })
            .sum()
    }

    /// The slowest rate the visits do not rule out: below the maximum-likelihood `rate`
    /// (`None`: every visit changed, the likelihood's best is 1 at an infinite rate), where
    /// the visits become `RULED_OUT` (5) times less likely than at the best. A page is taken
    /// for changing faster than some rate only when this bound is past it.
    pub fn lower_bound(&self, rate: Option<f64>) -> f64 {
        let best = rate.map_or(0.0, |r| self.log_likelihood(r));
        let floor = best - RULED_OUT.ln();
        let (mut lo, mut hi) = (1e-12f64.ln(), rate.unwrap_or(1e3).ln());
        if self.log_likelihood(lo.exp()) >= floor {
            return lo.exp();
        }
        for _ in 0..BOUND_STEPS {
            let mid = (lo + hi) / 2.0;
            if self.log_likelihood(mid.exp()) < floor {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        hi.exp()
    }

    /// The kept visits that saw a change at most `secs` seconds after the one before.
    pub fn changed_within(&self, secs: f64) -> usize {
        self.recent
            .iter()
            .filter(|v| v.changed && v.secs <= secs)
            .count()
    }
}

/// Newton steps of the estimate (it converges in about six from its start; each step is
/// kept inside a shrinking bracket).
const SOLVE_STEPS: u32 = 50;

/// The page's change rate from its kept visits and counts (see the module doc).
pub fn estimate(recent: &RecentVisits, history: Counts) -> Estimate {
    if history.visits == 0 || history.observed_secs == 0 {
        return Estimate::Unknown;
    }
    if history.changes == 0 {
        return Estimate::Unchanged {
            secs: history.observed_secs as f64,
        };
    }
    let evidence = Evidence::of(recent, history);
    let unchanged_secs: f64 = evidence.groups().map(|(s, _, u)| s * u).sum();
    if unchanged_secs <= 0.0 {
        return Estimate::EveryVisit(evidence);
    }
    if evidence.groups().all(|(_, x, _)| x == 0.0) {
        // The kept visits and the older ones disagree with the counts (a halving): no
        // change left to estimate from.
        return Estimate::Unchanged {
            secs: history.observed_secs as f64,
        };
    }
    Estimate::Rate(solve(&evidence, unchanged_secs), evidence)
}

/// How much less likely than the best rate the visits must make a rate for
/// [`Evidence::lower_bound`] to rule it out (a likelihood ratio of 1 in 5: the budget's
/// give-up also needs two changed probes for a page changed at every visit, and a page
/// wrongly given up on is looked at again on the floor).
const RULED_OUT: f64 = 5.0;
/// Bisection steps of the lower bound, in log space over [1e-12, `rate`]: 60 resolve it to
/// about a part in a million.
const BOUND_STEPS: u32 = 60;

/// Solves `h(λ) = Σ_changed Iᵢ/(e^(λIᵢ) − 1) − Σ_unchanged Iⱼ = 0` by Newton in `u = ln λ`
/// (h falls from +∞ to −Σ_unchanged as λ grows), bisecting when a step leaves the bracket.
fn solve(evidence: &Evidence, unchanged_secs: f64) -> f64 {
    let h = |rate: f64| -> (f64, f64) {
        // The sum and its derivative in u: d/du [I/(e^(λI) − 1)] = −λI²e^(λI)/(e^(λI) − 1)².
        let mut sum = -unchanged_secs;
        let mut slope = 0.0;
        for (secs, x, _) in evidence.groups().filter(|g| g.1 > 0.0) {
            let e = (rate * secs).exp_m1();
            if e.is_finite() && e > 0.0 {
                sum += x * secs / e;
                slope -= x * rate * secs * secs * (e + 1.0) / (e * e);
            }
        }
        (sum, slope)
    };
    let (mut lo, mut hi) = (1e-12f64.ln(), 1e3f64.ln());
    // Start: the rate at which the changed visits' share is as observed, at the mean gap.
    let (n, x, total) = evidence
        .groups()
        .fold((0.0, 0.0, 0.0), |(n, x, t), (s, c, u)| {
            (n + c + u, x + c, t + s * (c + u))
        });
    let start = -((n - x + 0.5) / (n + 0.5)).ln() / (total / n);
    let mut u = start.ln().clamp(lo, hi);
    for _ in 0..SOLVE_STEPS {
        let (value, slope) = h(u.exp());
        if value > 0.0 {
            lo = u;
        } else {
            hi = u;
        }
        let next = u - value / slope;
        let next = match next.is_finite() && next > lo && next < hi {
            true => next,
            false => (lo + hi) / 2.0,
        };
        if (next - u).abs() < 1e-9 {
            return next.exp();
        }
        u = next;
    }
    u.exp()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A page's kept visits and counts.
    #[derive(Default)]
    struct Page {
        recent: RecentVisits,
        visits: u32,
        changes: u32,
        observed_secs: u64,
    }

    fn estimate(p: &Page) -> Estimate {
        let counts = Counts {
            visits: p.visits,
            changes: p.changes,
            observed_secs: p.observed_secs,
        };
        super::estimate(&p.recent, counts)
    }

    fn history(visits: &[(u64, bool)]) -> Page {
        let mut h = Page::default();
        for &(secs, changed) in visits {
            h.visits += 1;
            h.changes += u32::from(changed);
            h.observed_secs += secs;
            h.recent.push(secs, changed);
        }
        h
    }

    #[test]
    fn intervals_are_kept_within_a_tenth_and_the_oldest_is_forgotten() {
        let mut r = RecentVisits::default();
        for secs in 1..=20u64 {
            r.push(secs * 37, secs % 3 == 0);
        }
        assert_eq!(r.len(), RECENT_VISITS);
        let kept: Vec<Kept> = r.iter().collect();
        for (k, secs) in kept.iter().zip(9..=20u64) {
            let true_secs = (secs * 37) as f64;
            assert!((k.secs / true_secs - 1.0).abs() < 0.1, "{k:?} {true_secs}");
            assert_eq!(k.changed, secs % 3 == 0);
        }
        let mut bytes = Vec::new();
        r.encode(&mut bytes);
        assert_eq!(bytes.len(), 1 + RECENT_VISITS);
        let mut input = bytes.as_slice();
        assert_eq!(RecentVisits::decode(&mut input), Some(r));
        assert!(input.is_empty());
        // Short, or more visits than kept: not decoded.
        assert_eq!(RecentVisits::decode(&mut &bytes[..5]), None);
        assert_eq!(RecentVisits::decode(&mut &[13u8; 20][..]), None);
    }

    #[test]
    fn regular_visits_give_the_closed_form() {
        // n visits I apart, X changed: the MLE is −ln(1 − X/n)/I.
        let mut visits = vec![(100, true); 4];
        visits.extend([(100, false); 6]);
        let rate = match estimate(&history(&visits)) {
            Estimate::Rate(r, _) => r,
            e => panic!("{e:?}"),
        };
        let expected = -(1.0f64 - 0.4).ln() / 2f64.powf((100f64.log2() * 4.0).round() / 4.0);
        assert!((rate / expected - 1.0).abs() < 1e-6, "{rate} {expected}");
    }

    #[test]
    fn a_short_unchanged_visit_outweighs_long_changed_ones() {
        // Changed after 930 s and 500 s, then at two probes 10 s apart, unchanged at a third:
        // a page changing about every 10 s, not one every few hundred.
        let h = history(&[
            (930, true),
            (500, true),
            (10, true),
            (10, true),
            (10, false),
        ]);
        let Estimate::Rate(rate, _) = estimate(&h) else {
            panic!()
        };
        assert!(1.0 / rate > 5.0 && 1.0 / rate < 20.0, "{}", 1.0 / rate);
        // Unchanged after 500 s instead: it changes every few hundred seconds.
        let h = history(&[(930, true), (500, true), (500, false)]);
        let Estimate::Rate(rate, _) = estimate(&h) else {
            panic!()
        };
        assert!(1.0 / rate > 150.0 && 1.0 / rate < 600.0, "{}", 1.0 / rate);
    }

    #[test]
    fn a_page_changed_at_every_visit_has_only_a_likelihood() {
        let h = history(&[(930, true), (12, true), (12, true)]);
        let Estimate::EveryVisit(e) = estimate(&h) else {
            panic!()
        };
        // Changing every 5 s, that was likely; every 100 s, not.
        assert!(e.chance_all_changed(1.0 / 5.0) > 0.8);
        assert!(e.chance_all_changed(1.0 / 100.0) < 0.02);
        assert_eq!((e.changed_within(13.0), e.changed_within(11.0)), (2, 0));
        // Its lower bound: the rate at which all three changes were RULED_OUT times less
        // likely than at an infinite rate.
        let lo = e.lower_bound(None);
        assert!(
            (e.chance_all_changed(lo) - 1.0 / RULED_OUT).abs() < 1e-6,
            "{lo}"
        );
        assert_eq!(
            estimate(&history(&[(60, false), (60, false)])),
            Estimate::Unchanged { secs: 120.0 }
        );
        assert_eq!(estimate(&Page::default()), Estimate::Unknown);
    }

    #[test]
    fn older_visits_count_at_their_mean_interval() {
        // 40 visits 128 s apart of which 20 changed, then the kept ones.
        let mut h = Page {
            visits: 40,
            changes: 20,
            observed_secs: 40 * 128,
            ..Page::default()
        };
        for _ in 0..RECENT_VISITS {
            h.visits += 1;
            h.changes += 1;
            h.observed_secs += 128;
            h.recent.push(128, true);
        }
        let Estimate::Rate(rate, _) = estimate(&h) else {
            panic!()
        };
        // 32 of 52 changed at 128 s.
        let expected = -(1.0f64 - 32.0 / 52.0).ln() / 128.0;
        assert!((rate / expected - 1.0).abs() < 1e-6, "{rate} {expected}");
    }
}
