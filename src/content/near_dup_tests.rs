use super::*;
use crate::test_rng::Rng;
use proptest::prelude::*;

/// `fp` with `k` distinct bits flipped.
fn flip(rng: &mut Rng, fp: u64, k: u32) -> u64 {
    let mut mask = 0u64;
    while mask.count_ones() < k {
        mask |= 1 << (rng.next() % 64);
    }
    fp ^ mask
}

/// Every earlier (fingerprint, id) within distance, the slow way.
fn brute(earlier: &[(u64, u64)], fp: u64) -> Vec<Match> {
    let mut v: Vec<Match> = earlier
        .iter()
        .filter(|(e, _)| (e ^ fp).count_ones() <= MAX_DISTANCE)
        .map(|&(e, id)| Match {
            distance: (e ^ fp).count_ones(),
            id,
            fingerprint: e,
        })
        .collect();
    v.sort();
    v
}

/// Fingerprints in crawl order: fresh random ones, and copies of earlier ones at distance
/// 0..=4 (4 must never be reported, 0..=3 always).
fn planted(seed: u64, n: usize) -> Vec<u64> {
    let mut rng = Rng(seed | 1);
    let mut fps: Vec<u64> = Vec::with_capacity(n);
    for _ in 0..n {
        let fp = if !fps.is_empty() && rng.next() % 3 == 0 {
            let base = fps[(rng.next() % fps.len() as u64) as usize];
            let k = (rng.next() % 5) as u32;
            flip(&mut rng, base, k)
        } else {
            rng.next()
        };
        fps.push(fp);
    }
    fps
}

/// Queries every fingerprint before inserting it (crawl order) and compares with brute force.
fn check_against_brute(fps: &[u64], budget: usize) -> NearDupIndex<MemoryRuns> {
    let mut index = NearDupIndex::new(budget, MemoryRuns::default());
    let mut earlier = Vec::new();
    let mut out = Vec::new();
    for (id, &fp) in fps.iter().enumerate() {
        out.clear();
        index.within(fp, usize::MAX, &mut out).unwrap();
        out.sort();
        let want = brute(&earlier, fp);
        assert_eq!(out, want, "fingerprint #{id} {fp:016x}");
        assert_eq!(index.nearest(fp).unwrap(), want.first().copied());
        index.insert(fp, id as u64).unwrap();
        earlier.push((fp, id as u64));
    }
    assert_eq!(index.len(), fps.len() as u64);
    index
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// In RAM and spilled (a budget so small that every sealed run goes to the store and
    /// spilled runs merge), the index finds exactly the earlier fingerprints within 3.
    #[test]
    fn finds_exactly_what_brute_force_finds(seed in any::<u64>(), spill in any::<bool>()) {
        let budget = if spill { 0 } else { usize::MAX };
        let fps = planted(seed, 3000);
        let index = check_against_brute(&fps, budget);
        if spill {
            prop_assert!(index.spilled_runs() >= 1);
            prop_assert!(index.spilled_runs() <= 5, "{} runs", index.spilled_runs());
        }
    }
}

#[test]
fn every_block_can_be_the_one_left_intact() {
    // Three differing bits in three of the four blocks: only one table can find each pair,
    // in a spilled run (budget 0) and in a RAM run.
    let base = 0x0123_4567_89ab_cdef_u64;
    for budget in [0, usize::MAX] {
        let mut index = NearDupIndex::new(budget, MemoryRuns::default());
        index.insert(base, 1).unwrap();
        // Others at distance ≥ 4 from every query below.
        for id in 0..PENDING_ENTRIES as u64 * 3 {
            index
                .insert(base ^ (id << 40 | 1 << 63), 1000 + id)
                .unwrap();
        }
        assert_eq!(index.spilled_runs() > 0, budget == 0);
        for intact in 0..4 {
            let mut q = base;
            for block in (0..4).filter(|&b| b != intact) {
                q ^= 1 << (16 * block + 3);
            }
            let m = index.nearest(q).unwrap();
            assert_eq!(
                m.map(|m| (m.id, m.distance)),
                Some((1, 3)),
                "block {intact} intact"
            );
        }
    }
}

#[test]
fn ties_go_to_the_smaller_id_and_within_stops_at_max() {
    let mut index = NearDupIndex::new(usize::MAX, MemoryRuns::default());
    for id in [9, 4, 7] {
        index.insert(0xffff, id).unwrap();
    }
    index.insert(0xfffe, 1).unwrap();
    let m = index.nearest(0xffff).unwrap().unwrap();
    assert_eq!((m.distance, m.id), (0, 4));
    let mut out = Vec::new();
    assert_eq!(index.within(0xffff, 2, &mut out).unwrap(), 2);
    assert_eq!(out.len(), 2);
    assert_eq!(index.within(0xffff, 0, &mut out).unwrap(), 0);
    assert_eq!(index.nearest(!0xffff).unwrap(), None);
}

#[test]
fn memory_stays_within_the_budget_and_spilled_runs_stay_few() {
    const BUDGET: usize = 256 * 1024;
    let mut index = NearDupIndex::new(BUDGET, MemoryRuns::default());
    let mut rng = Rng(7);
    let mut peak = 0;
    for id in 0..200_000 {
        index.insert(rng.next(), id).unwrap();
        peak = peak.max(index.memory_bytes());
    }
    // Sealing may pass the budget by one merge of the RAM runs (twice what they hold).
    assert!(peak <= 2 * BUDGET + 64 * 1024, "peak {peak}");
    // 200,000 × 64 bytes = 12.8 MB spilled; runs merge like a binary counter.
    assert!(index.spill().bytes() >= 12_000_000);
    let runs = index.spilled_runs();
    assert!((1..=8).contains(&runs), "{runs} spilled runs");
    assert_eq!(index.spill().runs(), runs, "merged runs were not removed");
    // A query reads about one fence block per spilled run and table.
    let reads = index.spill().reads;
    index.nearest(rng.next()).unwrap();
    let per_query = index.spill().reads - reads;
    assert!(per_query <= 2 * 4 * runs as u64, "{per_query} reads");
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
        left: 100_000,
    };
    let mut index = NearDupIndex::new(0, spill);
    let fps = planted(11, 2000);
    let mut failed = 0;
    for (id, &fp) in fps.iter().enumerate() {
        if index.insert(fp, id as u64).is_err() {
            failed += 1;
        }
    }
    assert!(failed > 0, "the store never failed");
    assert_eq!(index.len(), fps.len() as u64);
    // Every fingerprint is still found, from RAM or from runs written before the failures.
    for (id, &fp) in fps.iter().enumerate() {
        let mut out = Vec::new();
        index.within(fp, usize::MAX, &mut out).unwrap();
        assert!(out.iter().any(|m| m.id == id as u64), "#{id} lost");
    }
    // The half-written runs were removed.
    let runs = index.spilled_runs();
    assert_eq!(index.spill().inner.runs(), runs);
}
