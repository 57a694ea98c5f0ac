use super::*;
use crate::content::minhash::{BINS, SKETCH_BYTES};
use crate::test_rng::Rng;
use proptest::prelude::*;

fn random_sketch(rng: &mut Rng) -> Sketch {
    let mut s = [0u8; SKETCH_BYTES];
    for chunk in s.chunks_exact_mut(8) {
        chunk.copy_from_slice(&rng.next().to_le_bytes());
    }
    Sketch(s)
}

/// `s` with `k` bins (of 128, not necessarily distinct) given new random values.
fn edit(rng: &mut Rng, s: &Sketch, k: u32) -> Sketch {
    let mut out = *s;
    for _ in 0..k {
        let i = (rng.next() % BINS as u64) as usize;
        let v = (rng.next() % 16) as u8;
        let shift = 4 * (1 - i % 2);
        out.0[i / 2] = (out.0[i / 2] & !(0xf << shift)) | v << shift;
    }
    out
}

/// What the index should answer, the slow way: among the earliest `PER_BAND` earlier
/// sketches agreeing on each band, the earliest with enough equal bins.
fn brute(earlier: &[(Sketch, u64)], q: &Sketch, min_equal: u32) -> (Option<Match>, bool) {
    let qb = q.bands();
    let mut cands: Vec<usize> = Vec::new();
    for (t, key) in qb.iter().enumerate() {
        cands.extend(
            (0..earlier.len())
                .filter(|&n| earlier[n].0.bands()[t] == *key)
                .take(PER_BAND),
        );
    }
    cands.sort_unstable();
    cands.dedup();
    let same = cands.iter().any(|&n| earlier[n].0 == *q);
    let found = cands
        .iter()
        .map(|&n| (n, earlier[n].0.equal_bins(q)))
        .find(|&(_, e)| e >= min_equal)
        .map(|(n, equal_bins)| Match {
            id: earlier[n].1,
            equal_bins,
        });
    (found, same)
}

/// Sketches in crawl order: fresh random ones, and copies of earlier ones with 0..40 bins
/// changed (some found, some not).
fn planted(seed: u64, n: usize) -> Vec<Sketch> {
    let mut rng = Rng(seed | 1);
    let mut out: Vec<Sketch> = Vec::with_capacity(n);
    for _ in 0..n {
        let s = if !out.is_empty() && rng.next() % 3 == 0 {
            let base = out[(rng.next() % out.len() as u64) as usize];
            let k = (rng.next() % 40) as u32;
            edit(&mut rng, &base, k)
        } else {
            random_sketch(&mut rng)
        };
        out.push(s);
    }
    out
}

/// Queries every sketch before inserting it (crawl order) and compares with brute force.
fn check_against_brute(sketches: &[Sketch], budget: usize) -> NearDupIndex<MemoryRuns> {
    let mut index = NearDupIndex::new(budget, MemoryRuns::default());
    let mut earlier = Vec::new();
    for (n, s) in sketches.iter().enumerate() {
        let id = 1000 + n as u64;
        let want = brute(&earlier, s, 110);
        assert_eq!(index.earliest(s, 110).unwrap(), want, "sketch #{n}");
        index.insert(s, id).unwrap();
        earlier.push((*s, id));
    }
    assert_eq!(index.len(), sketches.len() as u64);
    index
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    /// In RAM and spilled (a budget so small that every sealed run goes to the store and
    /// spilled runs merge), the index finds exactly what brute force finds.
    #[test]
    fn finds_exactly_what_brute_force_finds(seed in any::<u64>(), spill in any::<bool>()) {
        let budget = if spill { 0 } else { usize::MAX };
        let sketches = planted(seed, 1500);
        let index = check_against_brute(&sketches, budget);
        if spill {
            prop_assert!(index.spilled_runs() >= 1);
            prop_assert!(index.spilled_runs() <= 5, "{} runs", index.spilled_runs());
        }
    }
}

#[test]
fn one_shared_band_makes_a_candidate_and_the_bins_decide() {
    let mut rng = Rng(3);
    let a = random_sketch(&mut rng);
    for budget in [0, usize::MAX] {
        let mut index = NearDupIndex::new(budget, MemoryRuns::default());
        index.insert(&a, 7).unwrap();
        for id in 0..PENDING_ENTRIES as u64 * 3 {
            index.insert(&random_sketch(&mut rng), 1000 + id).unwrap();
        }
        assert_eq!(index.spilled_runs() > 0, budget == 0);
        // Only band 5 kept: a candidate, but 8 + chance bins equal.
        let mut q = random_sketch(&mut rng);
        q.0[20..24].copy_from_slice(&a.0[20..24]);
        let (m, same) = index.earliest(&q, 0).unwrap();
        assert_eq!(m.map(|m| m.id), Some(7));
        assert!(!same);
        assert_eq!(index.earliest(&q, 64).unwrap(), (None, false));
        // The same sketch: all bins.
        let (m, same) = index.earliest(&a, 128).unwrap();
        assert_eq!(
            m,
            Some(Match {
                id: 7,
                equal_bins: 128
            })
        );
        assert!(same);
        assert_eq!(m.unwrap().resemblance(), 1.0);
    }
}

#[test]
fn a_trap_of_copies_costs_a_query_a_bounded_number_of_reads() {
    let mut rng = Rng(5);
    let a = random_sketch(&mut rng);
    let mut index = NearDupIndex::new(0, MemoryRuns::default());
    for id in 0..5000 {
        index.insert(&edit(&mut rng, &a, 3), id).unwrap();
    }
    let reads = index.spill().reads;
    let (m, _) = index.earliest(&a, 110).unwrap();
    assert_eq!(m.map(|m| m.id), Some(0), "the earliest copy");
    let per_query = index.spill().reads - reads;
    // Per band and spilled run one fence block, plus one sketch per candidate.
    let bound = (TABLES * index.spilled_runs() + TABLES * PER_BAND) as u64;
    assert!(per_query <= bound, "{per_query} reads, bound {bound}");
}

#[test]
fn memory_stays_within_the_budget_and_spilled_runs_stay_few() {
    const BUDGET: usize = 512 * 1024;
    let mut index = NearDupIndex::new(BUDGET, MemoryRuns::default());
    let mut rng = Rng(7);
    let mut peak = 0;
    for id in 0..60_000 {
        index.insert(&random_sketch(&mut rng), id).unwrap();
        peak = peak.max(index.memory_bytes());
    }
    // Sealing may pass the budget by one merge of the RAM runs (twice what they hold).
    assert!(peak <= 2 * BUDGET + 64 * 1024, "peak {peak}");
    // 60,000 × (128 + 72) bytes = 12 MB spilled; runs merge like a binary counter.
    assert!(
        index.spill().bytes() >= 11_000_000,
        "{}",
        index.spill().bytes()
    );
    let runs = index.spilled_runs();
    assert!((1..=8).contains(&runs), "{runs} spilled runs");
    // The sketch log is one more run; merged runs were removed.
    assert_eq!(index.spill().runs(), runs + 1);
    let reads = index.spill().reads;
    index.earliest(&random_sketch(&mut rng), 110).unwrap();
    let per_query = index.spill().reads - reads;
    assert!(per_query <= 2 * (TABLES * runs) as u64, "{per_query} reads");
}

/// A store whose appends fail after a number of bytes.
struct FailingSpill {
    inner: MemoryRuns,
    left: usize,
}

impl NearDupSpill for FailingSpill {
    fn create_run(&mut self) -> io::Result<u64> {
        self.inner.create_run()
    }
    fn append(&mut self, run: u64, bytes: &[u8]) -> io::Result<()> {
        if bytes.len() > self.left {
            return Err(io::Error::other("disk full"));
        }
        self.left -= bytes.len();
        self.inner.append(run, bytes)
    }
    fn read_at(&mut self, run: u64, offset: u64, out: &mut [u8]) -> io::Result<()> {
        self.inner.read_at(run, offset, out)
    }
    fn remove_run(&mut self, run: u64) -> io::Result<()> {
        self.inner.remove_run(run)
    }
}

#[test]
fn a_failed_spill_loses_nothing() {
    let spill = FailingSpill {
        inner: MemoryRuns::default(),
        left: 200_000,
    };
    let mut index = NearDupIndex::new(0, spill);
    let mut rng = Rng(11);
    let sketches: Vec<Sketch> = (0..2000).map(|_| random_sketch(&mut rng)).collect();
    let mut failed = 0;
    for (id, s) in sketches.iter().enumerate() {
        if index.insert(s, id as u64).is_err() {
            failed += 1;
        }
    }
    assert!(failed > 0, "the store never failed");
    assert_eq!(index.len(), sketches.len() as u64);
    // Every sketch is still found, from RAM or from runs written before the failures.
    for (id, s) in sketches.iter().enumerate() {
        let (m, same) = index.earliest(s, 128).unwrap();
        assert_eq!(m.map(|m| m.id), Some(id as u64), "#{id} lost");
        assert!(same);
    }
    // The half-written runs were removed.
    let runs = index.spilled_runs();
    assert!(index.spill().inner.runs() <= runs + 1);
}
