//! Near-duplicate search: the earlier 64-bit fingerprints within Hamming distance
//! [`MAX_DISTANCE`] (3) of a new one, by the permuted tables of Manku, Jain and Das Sarma
//! ("Detecting near-duplicates for web crawling", WWW 2007; seomoz `simhash-cpp` is a small
//! implementation of the same idea), in a RAM budget.
//!
//! # Tables
//! The 64 bits are cut into 4 blocks of 16. Two fingerprints at most 3 bits apart agree
//! exactly on at least one block (3 differing bits touch at most 3 of the 4). Table `t` holds
//! every fingerprint rotated so that block `t` leads, sorted; a query looks, in each table,
//! at the entries whose leading 16 bits equal its own rotated ones, and checks their
//! distance. A fingerprint that agrees on several blocks is reported from the first table
//! only. Why 4 tables and not the 20 of the 6-block design (`simhash-cpp`'s default, leading
//! 32–33 bits): every table is a copy of the index, and on disk every table is one more read
//! per run per query; 4 tables cost 64 bytes per fingerprint (fingerprint and id, 16 bytes,
//! per table), 20 would cost 320. The price is the scan: a query compares about N / 65,536
//! entries per table (15 at a million fingerprints, 1,500 at a hundred million), each an XOR
//! and a popcount over sequential memory — far below what fetching the page cost.
//!
//! # Runs and memory (an LSM tree of sorted runs)
//! New fingerprints go to a small unsorted buffer ([`PENDING_ENTRIES`], scanned linearly).
//! When it fills it is sorted into a run (4 sorted tables); runs are merged like a binary
//! counter (the newer into the older while the older is no larger), so there are at most
//! log₂(N / [`PENDING_ENTRIES`]) runs in RAM. When [`NearDupIndex::memory_bytes`] passes the
//! budget, the RAM runs are merged into one immutable run written to a [`NearDupSpill`]
//! store, of which RAM keeps only a fence index (the first key of every [`FENCE_ENTRIES`]
//! entries of each table: 1/512 of the run). Spilled runs are merged the same way, streaming
//! (two cursors of [`MERGE_CHUNK_ENTRIES`] each). A query reads, per spilled run and table,
//! the fence blocks whose keys can share its leading 16 bits: usually one or two 4 KiB
//! blocks.
//!
//! The index is not checkpointed: the crawl that wants it across a restart rebuilds it from
//! the fingerprints it recorded.

use std::collections::HashMap;
use std::io;
use std::ops::ControlFlow;

/// The Hamming distance within which fingerprints are near-duplicates (Manku et al.'s k = 3
/// of 64 bits).
pub const MAX_DISTANCE: u32 = 3;
/// Tables, one per 16-bit block: any k ≤ 3 leaves one block intact.
const TABLES: usize = 4;
const BLOCK_BITS: u32 = 16;
/// Fingerprints kept unsorted before they become a run: a linear scan of 256 entries costs
/// about what a binary search in each of 4 tables would.
pub const PENDING_ENTRIES: usize = 256;
/// Entries per fence block of a spilled run: 256 × 16 bytes = a 4 KiB read.
pub const FENCE_ENTRIES: usize = 256;
/// Entries a merge or a long query reads at a time: 64 KiB buffers.
pub const MERGE_CHUNK_ENTRIES: usize = 4096;
const ENTRY_BYTES: usize = 16;

/// A stored fingerprint and the caller's id for it; in a table, `key` is the fingerprint
/// rotated for that table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Entry {
    key: u64,
    id: u64,
}

impl Entry {
    fn encode(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.key.to_le_bytes());
        out.extend_from_slice(&self.id.to_le_bytes());
    }

    fn decode(b: &[u8]) -> Entry {
        let word = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&b[i..i + 8]);
            u64::from_le_bytes(w)
        };
        Entry {
            key: word(0),
            id: word(8),
        }
    }
}

/// An earlier fingerprint within [`MAX_DISTANCE`] of the one asked about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Match {
    pub distance: u32,
    pub id: u64,
    pub fingerprint: u64,
}

/// Where spilled runs live: the store's files in a crawl, memory in tests. A run is written
/// once (created, appended to in order), then only read at offsets, then removed.
pub trait NearDupSpill {
    /// Starts a new, empty run; returns its handle.
    fn create_run(&mut self) -> io::Result<u64>;
    /// Appends bytes to a run being written.
    fn append(&mut self, run: u64, bytes: &[u8]) -> io::Result<()>;
    /// Fills `out` with the run's bytes from `offset`; an error if the run is shorter.
    fn read_at(&mut self, run: u64, offset: u64, out: &mut [u8]) -> io::Result<()>;
    /// The run is no longer needed (merged into another one).
    fn remove_run(&mut self, run: u64) -> io::Result<()>;
}

impl<T: NearDupSpill + ?Sized> NearDupSpill for Box<T> {
    fn create_run(&mut self) -> io::Result<u64> {
        (**self).create_run()
    }
    fn append(&mut self, run: u64, bytes: &[u8]) -> io::Result<()> {
        (**self).append(run, bytes)
    }
    fn read_at(&mut self, run: u64, offset: u64, out: &mut [u8]) -> io::Result<()> {
        (**self).read_at(run, offset, out)
    }
    fn remove_run(&mut self, run: u64) -> io::Result<()> {
        (**self).remove_run(run)
    }
}

/// Runs kept in memory: for tests, and for crawls without a spill directory.
#[derive(Debug, Default)]
pub struct MemoryRuns {
    runs: HashMap<u64, Vec<u8>>,
    next: u64,
    /// `read_at` calls so far.
    pub reads: u64,
}

impl MemoryRuns {
    /// Runs held now.
    pub fn runs(&self) -> usize {
        self.runs.len()
    }

    /// Bytes held now.
    pub fn bytes(&self) -> usize {
        self.runs.values().map(Vec::len).sum()
    }
}

fn no_run() -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, "no such near-duplicate run")
}

impl NearDupSpill for MemoryRuns {
    fn create_run(&mut self) -> io::Result<u64> {
        self.next += 1;
        self.runs.insert(self.next, Vec::new());
        Ok(self.next)
    }

    fn append(&mut self, run: u64, bytes: &[u8]) -> io::Result<()> {
        self.runs
            .get_mut(&run)
            .ok_or_else(no_run)?
            .extend_from_slice(bytes);
        Ok(())
    }

    fn read_at(&mut self, run: u64, offset: u64, out: &mut [u8]) -> io::Result<()> {
        self.reads += 1;
        let bytes = self.runs.get(&run).ok_or_else(no_run)?;
        let start = usize::try_from(offset).map_err(|_| no_run())?;
        let src = start
            .checked_add(out.len())
            .and_then(|end| bytes.get(start..end))
            .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "short run"))?;
        out.copy_from_slice(src);
        Ok(())
    }

    fn remove_run(&mut self, run: u64) -> io::Result<()> {
        self.runs.remove(&run).map(drop).ok_or_else(no_run)
    }
}

/// Rotates a fingerprint so that block `table` leads.
fn permute(fp: u64, table: usize) -> u64 {
    fp.rotate_left(BLOCK_BITS * table as u32)
}

fn unpermute(key: u64, table: usize) -> u64 {
    key.rotate_right(BLOCK_BITS * table as u32)
}

/// The first table in which `a` and `b` share the leading block (the one that reports them).
fn first_shared_table(a: u64, b: u64) -> usize {
    let x = a ^ b;
    (0..TABLES)
        .find(|&t| permute(x, t) >> (64 - BLOCK_BITS) == 0)
        .unwrap_or(TABLES)
}

/// The keys of table entries that share `q`'s leading block: `lo..=hi`.
fn key_range(q: u64) -> (u64, u64) {
    let lo = q & !(u64::MAX >> BLOCK_BITS);
    (lo, lo | u64::MAX >> BLOCK_BITS)
}

/// A run in RAM: 4 tables of the same entries, each sorted by its rotation.
#[derive(Debug)]
struct RamRun {
    tables: [Vec<Entry>; TABLES],
}

impl RamRun {
    fn len(&self) -> usize {
        self.tables[0].len()
    }

    fn bytes(&self) -> usize {
        self.tables.iter().map(|t| t.capacity() * ENTRY_BYTES).sum()
    }
}

/// A run in the spill store: `len` entries per table, table `t` at byte `t × len × 16`.
#[derive(Debug)]
struct DiskRun {
    run: u64,
    len: u64,
    /// The key of every [`FENCE_ENTRIES`]-th entry, per table.
    fences: [Vec<u64>; TABLES],
}

impl DiskRun {
    fn table_offset(&self, table: usize) -> u64 {
        table as u64 * self.len * ENTRY_BYTES as u64
    }
}

/// The permuted-table index over fingerprints inserted so far, within a RAM budget.
#[derive(Debug)]
pub struct NearDupIndex<S> {
    spill: S,
    budget: usize,
    /// Unsorted, unrotated.
    pending: Vec<Entry>,
    ram: Vec<RamRun>,
    /// Oldest first.
    disk: Vec<DiskRun>,
    len: u64,
    /// Reused for reads of spilled entries.
    read_buf: Vec<u8>,
}

impl<S: NearDupSpill> NearDupIndex<S> {
    /// An empty index that keeps at most about `budget_bytes` in RAM (runs, fences and the
    /// pending buffer) and spills to `spill` past it. A merge briefly needs the merged
    /// runs twice.
    pub fn new(budget_bytes: usize, spill: S) -> Self {
        NearDupIndex {
            spill,
            budget: budget_bytes,
            pending: Vec::with_capacity(PENDING_ENTRIES),
            ram: Vec::new(),
            disk: Vec::new(),
            len: 0,
            read_buf: Vec::new(),
        }
    }

    /// Fingerprints inserted.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Runs in the spill store now.
    pub fn spilled_runs(&self) -> usize {
        self.disk.len()
    }

    /// The spill store (to look at in tests, or to sync at a checkpoint).
    pub fn spill(&self) -> &S {
        &self.spill
    }

    /// RAM held by entries and fences (what the budget bounds).
    pub fn memory_bytes(&self) -> usize {
        let fences: usize = self
            .disk
            .iter()
            .flat_map(|d| d.fences.iter())
            .map(|f| f.capacity() * size_of::<u64>())
            .sum();
        self.pending.capacity() * ENTRY_BYTES
            + self.ram.iter().map(RamRun::bytes).sum::<usize>()
            + fences
            + self.read_buf.capacity()
    }

    /// Adds `fingerprint` with the caller's `id` (a page number, say). Spills when the budget
    /// is passed; an error leaves the index as it was before the spill.
    pub fn insert(&mut self, fingerprint: u64, id: u64) -> io::Result<()> {
        self.pending.push(Entry {
            key: fingerprint,
            id,
        });
        self.len += 1;
        if self.pending.len() >= PENDING_ENTRIES {
            self.seal();
            if self.memory_bytes() > self.budget {
                self.spill_ram()?;
            }
        }
        Ok(())
    }

    /// The nearest fingerprint within [`MAX_DISTANCE`] of `fingerprint`, ties going to the
    /// smaller id (the earlier page when ids grow with time).
    pub fn nearest(&mut self, fingerprint: u64) -> io::Result<Option<Match>> {
        let mut best: Option<Match> = None;
        self.visit(fingerprint, &mut |m| {
            if best.is_none_or(|b| (m.distance, m.id) < (b.distance, b.id)) {
                best = Some(m);
            }
            ControlFlow::Continue(())
        })?;
        Ok(best)
    }

    /// Appends to `out` the fingerprints within [`MAX_DISTANCE`] of `fingerprint`, at most
    /// `max` of them (in no particular order); returns how many it appended.
    pub fn within(
        &mut self,
        fingerprint: u64,
        max: usize,
        out: &mut Vec<Match>,
    ) -> io::Result<usize> {
        let mut n = 0;
        if max == 0 {
            return Ok(0);
        }
        self.visit(fingerprint, &mut |m| {
            out.push(m);
            n += 1;
            if n == max {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })?;
        Ok(n)
    }

    /// Calls `f` on every stored fingerprint within [`MAX_DISTANCE`] of `fp`, once each,
    /// until it breaks.
    fn visit(&mut self, fp: u64, f: &mut dyn FnMut(Match) -> ControlFlow<()>) -> io::Result<()> {
        for e in &self.pending {
            let distance = (e.key ^ fp).count_ones();
            if distance <= MAX_DISTANCE {
                let m = Match {
                    distance,
                    id: e.id,
                    fingerprint: e.key,
                };
                if f(m).is_break() {
                    return Ok(());
                }
            }
        }
        for run in &self.ram {
            for (t, table) in run.tables.iter().enumerate() {
                let q = permute(fp, t);
                let (lo, hi) = key_range(q);
                let from = lower_bound(table, lo);
                for e in table[from..].iter().take_while(|e| e.key <= hi) {
                    if check(fp, q, t, *e, f).is_break() {
                        return Ok(());
                    }
                }
            }
        }
        for i in 0..self.disk.len() {
            for t in 0..TABLES {
                if self.visit_spilled(i, t, fp, f)?.is_break() {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// Reads the fence blocks of spilled run `i`, table `t`, that may hold `fp`'s leading
    /// block, and checks their entries.
    fn visit_spilled(
        &mut self,
        i: usize,
        t: usize,
        fp: u64,
        f: &mut dyn FnMut(Match) -> ControlFlow<()>,
    ) -> io::Result<ControlFlow<()>> {
        let run = &self.disk[i];
        let q = permute(fp, t);
        let (lo, hi) = key_range(q);
        let fences = &run.fences[t];
        let first = fences.partition_point(|&k| k < lo).saturating_sub(1);
        let end_block = fences.partition_point(|&k| k <= hi);
        let mut next = (first * FENCE_ENTRIES) as u64;
        let end = ((end_block * FENCE_ENTRIES) as u64).min(run.len);
        let (id, base) = (run.run, run.table_offset(t));
        // Bound: each turn reads at most MERGE_CHUNK_ENTRIES entries and moves past them.
        while next < end {
            let n = (end - next).min(MERGE_CHUNK_ENTRIES as u64) as usize;
            self.read_buf.resize(n * ENTRY_BYTES, 0);
            let offset = base + next * ENTRY_BYTES as u64;
            self.spill.read_at(id, offset, &mut self.read_buf)?;
            for chunk in self.read_buf.chunks_exact(ENTRY_BYTES) {
                let e = Entry::decode(chunk);
                if e.key > hi {
                    return Ok(ControlFlow::Continue(()));
                }
                if e.key >= lo && check(fp, q, t, e, f).is_break() {
                    return Ok(ControlFlow::Break(()));
                }
            }
            next += n as u64;
        }
        Ok(ControlFlow::Continue(()))
    }

    /// Sorts the pending fingerprints into a run and merges RAM runs like a binary counter.
    fn seal(&mut self) {
        let tables = std::array::from_fn(|t| {
            let mut table: Vec<Entry> = self
                .pending
                .iter()
                .map(|e| Entry {
                    key: permute(e.key, t),
                    id: e.id,
                })
                .collect();
            table.sort_unstable();
            table
        });
        self.pending.clear();
        self.ram.push(RamRun { tables });
        // Bound: each turn removes one run.
        while let [.., older, newer] = &self.ram[..] {
            if older.len() > newer.len() {
                break;
            }
            let newer = self.ram.pop().expect("two runs");
            let older = self.ram.pop().expect("two runs");
            let tables = std::array::from_fn(|t| merge_sorted(&older.tables[t], &newer.tables[t]));
            self.ram.push(RamRun { tables });
        }
    }

    /// Writes the RAM runs, merged, as one spilled run, then merges spilled runs like a
    /// binary counter. On an error the RAM runs stay where they were.
    fn spill_ram(&mut self) -> io::Result<()> {
        if self.ram.is_empty() {
            return Ok(());
        }
        let mut sources: Vec<Source> = self
            .ram
            .iter()
            .map(|r| Source::Ram {
                run: r,
                at: 0,
                table: 0,
            })
            .collect();
        let disk = write_run(&mut self.spill, &mut sources)?;
        drop(sources);
        self.ram.clear();
        self.disk.push(disk);
        // Bound: each turn removes one run.
        while let [.., older, newer] = &self.disk[..] {
            if older.len > newer.len {
                break;
            }
            let (a, b) = (older.run, newer.run);
            let merged = {
                let mut sources = [older, newer].map(|d| Source::Disk(Cursor::new(d)));
                write_run(&mut self.spill, &mut sources)?
            };
            self.disk.truncate(self.disk.len() - 2);
            self.disk.push(merged);
            self.spill.remove_run(a)?;
            self.spill.remove_run(b)?;
        }
        Ok(())
    }
}

/// Reports table entry `e` (table `t`, query rotated to `q`) if it is within distance and
/// this is the first table that finds it.
fn check(
    fp: u64,
    q: u64,
    t: usize,
    e: Entry,
    f: &mut dyn FnMut(Match) -> ControlFlow<()>,
) -> ControlFlow<()> {
    let distance = (e.key ^ q).count_ones();
    if distance > MAX_DISTANCE {
        return ControlFlow::Continue(());
    }
    let fingerprint = unpermute(e.key, t);
    if first_shared_table(fingerprint, fp) != t {
        return ControlFlow::Continue(());
    }
    f(Match {
        distance,
        id: e.id,
        fingerprint,
    })
}

/// Tables shorter than this are binary-searched directly.
const INTERPOLATE_FROM: usize = 64;

/// The first entry of `table` whose key is at least `key`. Fingerprints are spread about
/// evenly over the key space, so the search starts where the key's share of the space
/// points, gallops out to bracket it, then bisects the bracket: a couple of cache misses
/// where a binary search over a million entries takes twenty. Any order of keys gives the
/// right answer; only the speed depends on the spread.
fn lower_bound(table: &[Entry], key: u64) -> usize {
    let n = table.len();
    if n < INTERPOLATE_FROM {
        return table.partition_point(|e| e.key < key);
    }
    let guess = ((u128::from(key) * n as u128) >> 64) as usize;
    let (mut below, mut above) = (guess, guess + 1);
    let mut step = 1;
    // Bound: `step` doubles each turn, so at most log2(n) turns each way.
    while below > 0 && table[below].key >= key {
        below = below.saturating_sub(step);
        step *= 2;
    }
    step = 1;
    while above < n && table[above - 1].key < key {
        above = (above + step).min(n);
        step *= 2;
    }
    // Every entry before `below` is below `key` (or `below` is 0); every one from `above` on
    // is at least `key` (or `above` is n).
    below + table[below..above].partition_point(|e| e.key < key)
}

fn merge_sorted(a: &[Entry], b: &[Entry]) -> Vec<Entry> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if b[j] < a[i] {
            out.push(b[j]);
            j += 1;
        } else {
            out.push(a[i]);
            i += 1;
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

/// A spilled run's table read sequentially, a chunk at a time.
struct Cursor<'a> {
    run: &'a DiskRun,
    table: usize,
    next: u64,
    buf: Vec<Entry>,
    at: usize,
    bytes: Vec<u8>,
}

impl<'a> Cursor<'a> {
    fn new(run: &'a DiskRun) -> Self {
        Cursor {
            run,
            table: 0,
            next: 0,
            buf: Vec::new(),
            at: 0,
            bytes: Vec::new(),
        }
    }
}

/// An input of a merge: a RAM run or a spilled one, one table at a time.
enum Source<'a> {
    Ram {
        run: &'a RamRun,
        table: usize,
        at: usize,
    },
    Disk(Cursor<'a>),
}

impl Source<'_> {
    fn len(&self) -> u64 {
        match self {
            Source::Ram { run, .. } => run.len() as u64,
            Source::Disk(c) => c.run.len,
        }
    }

    /// Moves to the start of table `t`.
    fn start_table(&mut self, t: usize) {
        match self {
            Source::Ram { table, at, .. } => (*table, *at) = (t, 0),
            Source::Disk(c) => {
                (c.table, c.next, c.at) = (t, 0, 0);
                c.buf.clear();
            }
        }
    }

    /// The next entry of the current table, reading a chunk when needed.
    fn peek(&mut self, spill: &mut dyn NearDupSpill) -> io::Result<Option<Entry>> {
        match self {
            Source::Ram { run, table, at } => Ok(run.tables[*table].get(*at).copied()),
            Source::Disk(c) => {
                if c.at == c.buf.len() {
                    let n = (c.run.len - c.next).min(MERGE_CHUNK_ENTRIES as u64) as usize;
                    if n == 0 {
                        return Ok(None);
                    }
                    c.bytes.resize(n * ENTRY_BYTES, 0);
                    let offset = c.run.table_offset(c.table) + c.next * ENTRY_BYTES as u64;
                    spill.read_at(c.run.run, offset, &mut c.bytes)?;
                    c.buf.clear();
                    c.buf
                        .extend(c.bytes.chunks_exact(ENTRY_BYTES).map(Entry::decode));
                    c.next += n as u64;
                    c.at = 0;
                }
                Ok(Some(c.buf[c.at]))
            }
        }
    }

    fn advance(&mut self) {
        match self {
            Source::Ram { at, .. } => *at += 1,
            Source::Disk(c) => c.at += 1,
        }
    }
}

/// Merges `sources` table by table into a new spilled run (removed again on an error).
fn write_run(spill: &mut dyn NearDupSpill, sources: &mut [Source]) -> io::Result<DiskRun> {
    let run = spill.create_run()?;
    match write_tables(spill, run, sources) {
        Ok(disk) => Ok(disk),
        Err(e) => {
            let _ = spill.remove_run(run);
            Err(e)
        }
    }
}

fn write_tables(
    spill: &mut dyn NearDupSpill,
    run: u64,
    sources: &mut [Source],
) -> io::Result<DiskRun> {
    let len: u64 = sources.iter().map(Source::len).sum();
    let mut fences: [Vec<u64>; TABLES] = Default::default();
    let mut buf = Vec::with_capacity(MERGE_CHUNK_ENTRIES * ENTRY_BYTES);
    for (t, fence) in fences.iter_mut().enumerate() {
        sources.iter_mut().for_each(|s| s.start_table(t));
        fence.reserve_exact((len as usize).div_ceil(FENCE_ENTRIES));
        // Bound: each turn writes one entry of the `len` this table has.
        for written in 0..len {
            let mut best: Option<(usize, Entry)> = None;
            for (i, s) in sources.iter_mut().enumerate() {
                if let Some(e) = s.peek(spill)? {
                    if best.is_none_or(|(_, b)| e < b) {
                        best = Some((i, e));
                    }
                }
            }
            let (i, e) = best.ok_or_else(|| {
                io::Error::new(io::ErrorKind::InvalidData, "near-duplicate run too short")
            })?;
            sources[i].advance();
            if written % FENCE_ENTRIES as u64 == 0 {
                fence.push(e.key);
            }
            e.encode(&mut buf);
            if buf.len() >= MERGE_CHUNK_ENTRIES * ENTRY_BYTES {
                spill.append(run, &buf)?;
                buf.clear();
            }
        }
    }
    if !buf.is_empty() {
        spill.append(run, &buf)?;
    }
    Ok(DiskRun { run, len, fences })
}

#[cfg(test)]
#[path = "near_dup_tests.rs"]
mod tests;
