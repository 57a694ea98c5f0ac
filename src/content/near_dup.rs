//! Near-duplicate search: the earlier sketches ([`super::minhash`]) whose resemblance to a
//! new one reaches a threshold, by locality-sensitive banding (IIR §19.6; Leskovec,
//! Rajaraman and Ullman, *Mining of Massive Datasets* §3.4), in a RAM budget.
//!
//! # Tables
//! A sketch's 128 bins make [`BANDS`] (16) bands of 8 bins, each a `u32`. Table `t` holds
//! band `t` of every sketch inserted, with the sketch's number, sorted. A query looks up
//! each of its bands in its table: every sketch agreeing on a whole band is a candidate
//! (at resemblance 0.9, 0.9999 of pairs share a band; at 0.5, one in ten), and each
//! candidate's sketch is read back to estimate the resemblance, which decides. At most
//! [`PER_BAND`] candidates a band are read (the earliest), so a trap of a thousand copies
//! costs a query no more than one of a few.
//!
//! # Sketches
//! The sketches themselves (64 bytes, and the caller's 64-bit id) are a log in insertion
//! order: a sketch's number is its place there. It stays in RAM until the budget is passed,
//! then goes to the spill store like the runs and is read back by offset.
//!
//! # Runs and memory (an LSM tree of sorted runs)
//! New sketches' bands go to a small unsorted buffer ([`PENDING_ENTRIES`], scanned
//! linearly). When it fills it is sorted into a run (16 sorted tables); runs are merged like a
//! binary counter (the newer into the older while the older is no larger), so there are at
//! most log₂(N / [`PENDING_ENTRIES`]) runs in RAM. When [`NearDupIndex::memory_bytes`] passes
//! the budget, the RAM runs are merged into one immutable run written to a [`NearDupSpill`]
//! store, of which RAM keeps only a fence index (the first key of every [`FENCE_ENTRIES`]
//! entries of each table: 1/128 of the run), and the sketch log's RAM part is appended to
//! its own run. Spilled runs are merged the same way, streaming (two cursors of
//! [`MERGE_CHUNK_ENTRIES`] each). A query reads, per spilled run and band, the fence blocks
//! whose keys can hold its band: usually one 512-byte block.
//!
//! RAM per sketch before the spill: 16 entries of 8 bytes and the 72-byte log record,
//! 200 bytes. The index is not checkpointed: the crawl that wants it across a restart
//! rebuilds it from the sketches it recorded.

use std::collections::HashMap;
use std::io;

use super::minhash::{resemblance_of, Sketch, BANDS, SKETCH_BYTES};

/// Tables, one per band.
const TABLES: usize = BANDS;
/// Sketches kept unsorted before they become a run: a linear scan of 256 × 16 band keys
/// costs about what 16 binary searches in a run would.
pub const PENDING_ENTRIES: usize = 256;
/// Entries per fence block of a spilled run: 64 × 8 bytes = a 512-byte read, scanned for the
/// key (16 bands make 16 reads per run and query: small blocks keep them cheap, and fences
/// cost 1/128 of a run's bytes in RAM).
pub const FENCE_ENTRIES: usize = 64;
/// Entries a merge or a long query reads at a time: 32 KiB buffers.
pub const MERGE_CHUNK_ENTRIES: usize = 4096;
/// Candidates read per band of a query, the earliest first.
pub const PER_BAND: usize = 8;
const ENTRY_BYTES: usize = 8;
/// A log record: the sketch, then the caller's id (little-endian).
const RECORD_BYTES: usize = SKETCH_BYTES + 8;

/// A band's value in one sketch, and that sketch's number in the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Entry {
    key: u32,
    id: u32,
}

impl Entry {
    fn encode(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.key.to_le_bytes());
        out.extend_from_slice(&self.id.to_le_bytes());
    }

    fn decode(b: &[u8]) -> Entry {
        let word = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        Entry {
            key: word(0),
            id: word(4),
        }
    }
}

/// An earlier sketch whose resemblance reached the threshold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Match {
    /// The caller's id of the earlier sketch.
    pub id: u64,
    /// Bins equal in the two sketches (128: the same sketch).
    pub equal_bins: u32,
}

impl Match {
    /// The estimated resemblance (`minhash::resemblance_of`).
    pub fn resemblance(&self) -> f64 {
        resemblance_of(self.equal_bins)
    }
}

/// Where spilled runs live: the store's files in a crawl, memory in tests. A run is written
/// once (created, appended to in order), then only read at offsets, then removed.
pub trait NearDupSpill {
    /// Starts a new, empty run; returns its handle.
    fn create_run(&mut self) -> io::Result<u64>;
    /// Appends bytes to a run being written; one that fails leaves the run as it was (the
    /// index and its sketch log retry after an error, at the same offsets).
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

/// A run in RAM: 16 tables, each sorted.
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

/// A run in the spill store: `len` entries per table, table `t` at byte `t × len × 8`.
#[derive(Debug)]
struct DiskRun {
    run: u64,
    len: u64,
    /// The key of every [`FENCE_ENTRIES`]-th entry, per table.
    fences: [Vec<u32>; TABLES],
}

impl DiskRun {
    fn table_offset(&self, table: usize) -> u64 {
        table as u64 * self.len * ENTRY_BYTES as u64
    }
}

/// The sketches inserted, in order: the first `spilled` in a spill run, the rest in RAM.
#[derive(Debug, Default)]
struct SketchLog {
    run: Option<u64>,
    spilled: u64,
    ram: Vec<u8>,
    record: Vec<u8>,
}

impl SketchLog {
    fn len(&self) -> u64 {
        self.spilled + (self.ram.len() / RECORD_BYTES) as u64
    }

    fn push(&mut self, sketch: &Sketch, id: u64) {
        self.ram.extend_from_slice(&sketch.0);
        self.ram.extend_from_slice(&id.to_le_bytes());
    }

    /// Sketch number `n` and its caller's id.
    fn get(&mut self, spill: &mut dyn NearDupSpill, n: u64) -> io::Result<(Sketch, u64)> {
        let bytes: &[u8] = if n >= self.spilled {
            let at = (n - self.spilled) as usize * RECORD_BYTES;
            self.ram
                .get(at..at + RECORD_BYTES)
                .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "no such sketch"))?
        } else {
            let run = self.run.ok_or_else(no_run)?;
            self.record.resize(RECORD_BYTES, 0);
            spill.read_at(run, n * RECORD_BYTES as u64, &mut self.record)?;
            &self.record
        };
        let sketch = Sketch(bytes[..SKETCH_BYTES].try_into().expect("64 bytes"));
        let id = u64::from_le_bytes(bytes[SKETCH_BYTES..].try_into().expect("8 bytes"));
        Ok((sketch, id))
    }

    /// Appends the RAM part to the spill run. On an error nothing moved.
    fn spill(&mut self, spill: &mut dyn NearDupSpill) -> io::Result<()> {
        if self.ram.is_empty() {
            return Ok(());
        }
        let run = match self.run {
            Some(r) => r,
            None => {
                let r = spill.create_run()?;
                self.run = Some(r);
                r
            }
        };
        spill.append(run, &self.ram)?;
        self.spilled += (self.ram.len() / RECORD_BYTES) as u64;
        self.ram = Vec::new();
        Ok(())
    }
}

/// The banded index over sketches inserted so far, within a RAM budget.
#[derive(Debug)]
pub struct NearDupIndex<S> {
    spill: S,
    budget: usize,
    /// The bands of sketches not yet in a run, with their numbers.
    pending: Vec<([u32; BANDS], u32)>,
    ram: Vec<RamRun>,
    /// Oldest first.
    disk: Vec<DiskRun>,
    log: SketchLog,
    /// Reused for reads of spilled entries, and for a query's candidates.
    read_buf: Vec<u8>,
    candidates: Vec<u32>,
}

impl<S: NearDupSpill> NearDupIndex<S> {
    /// An empty index that keeps at most about `budget_bytes` in RAM (runs, fences, the
    /// sketch log and the pending buffer) and spills to `spill` past it. A merge briefly
    /// needs the merged runs twice.
    pub fn new(budget_bytes: usize, spill: S) -> Self {
        NearDupIndex {
            spill,
            budget: budget_bytes,
            pending: Vec::with_capacity(PENDING_ENTRIES),
            ram: Vec::new(),
            disk: Vec::new(),
            log: SketchLog::default(),
            read_buf: Vec::new(),
            candidates: Vec::new(),
        }
    }

    /// Sketches inserted.
    pub fn len(&self) -> u64 {
        self.log.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Runs in the spill store now (the sketch log's not counted).
    pub fn spilled_runs(&self) -> usize {
        self.disk.len()
    }

    /// The spill store (to look at in tests, or to sync at a checkpoint).
    pub fn spill(&self) -> &S {
        &self.spill
    }

    /// RAM held by entries, fences and sketches (what the budget bounds).
    pub fn memory_bytes(&self) -> usize {
        let fences: usize = self
            .disk
            .iter()
            .flat_map(|d| d.fences.iter())
            .map(|f| f.capacity() * size_of::<u32>())
            .sum();
        self.pending.capacity() * (BANDS * 4 + 4)
            + self.ram.iter().map(RamRun::bytes).sum::<usize>()
            + fences
            + self.read_buf.capacity()
            + self.log.ram.capacity()
    }

    /// Adds `sketch` with the caller's `id` (a page number, say). Spills when the budget
    /// is passed; an error leaves the index as it was before the spill.
    pub fn insert(&mut self, sketch: &Sketch, id: u64) -> io::Result<()> {
        let n = u32::try_from(self.log.len()).map_err(|_| {
            io::Error::new(
                io::ErrorKind::OutOfMemory,
                "near-duplicate index full (2³² sketches)",
            )
        })?;
        self.log.push(sketch, id);
        self.pending.push((sketch.bands(), n));
        if self.pending.len() >= PENDING_ENTRIES {
            self.seal();
            if self.memory_bytes() > self.budget {
                self.spill_ram()?;
                self.log.spill(&mut self.spill)?;
            }
        }
        Ok(())
    }

    /// The earliest inserted sketch with at least `min_equal_bins` bins equal to `sketch`'s
    /// among the candidates its bands find (`minhash::equal_bins_for` turns a resemblance
    /// into bins), and whether any candidate is the same sketch.
    pub fn earliest(
        &mut self,
        sketch: &Sketch,
        min_equal_bins: u32,
    ) -> io::Result<(Option<Match>, bool)> {
        self.find_candidates(&sketch.bands())?;
        let mut found = None;
        let mut same = false;
        let candidates = std::mem::take(&mut self.candidates);
        let mut result = Ok(());
        for &n in &candidates {
            match self.log.get(&mut self.spill, u64::from(n)) {
                Ok((earlier, id)) => {
                    let equal_bins = earlier.equal_bins(sketch);
                    same |= equal_bins == 128;
                    if found.is_none() && equal_bins >= min_equal_bins {
                        found = Some(Match { id, equal_bins });
                    }
                }
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        self.candidates = candidates;
        result.map(|()| (found, same))
    }

    /// Fills `self.candidates` with the numbers of sketches sharing a band with `bands`, at
    /// most [`PER_BAND`] a band (the earliest), sorted, each once.
    fn find_candidates(&mut self, bands: &[u32; BANDS]) -> io::Result<()> {
        let mut out = std::mem::take(&mut self.candidates);
        out.clear();
        // Candidates taken per band so far. Oldest first: spilled runs, RAM runs, then the
        // pending buffer.
        let mut taken = [0usize; BANDS];
        let mut result = Ok(());
        // Each band's search in each RAM run starts with a cache miss at its guess; asked
        // for all at once, they overlap instead of following one another.
        for run in &self.ram {
            for (table, &key) in run.tables.iter().zip(bands) {
                prefetch(table, guess(table.len(), key));
            }
        }
        for (t, &key) in bands.iter().enumerate() {
            for i in 0..self.disk.len() {
                if let Err(e) = self.spilled_ids(i, t, key, &mut taken[t], &mut out) {
                    result = Err(e);
                    break;
                }
            }
            for run in &self.ram {
                let table = &run.tables[t];
                let from = lower_bound(table, key);
                for e in table[from..].iter().take_while(|e| e.key == key) {
                    if taken[t] >= PER_BAND {
                        break;
                    }
                    out.push(e.id);
                    taken[t] += 1;
                }
            }
        }
        // Sketch by sketch, all 16 bands compared at once (most share none).
        for (b, n) in &self.pending {
            let shared = b
                .iter()
                .zip(bands)
                .fold(0u32, |m, (x, y)| m | u32::from(x == y));
            if shared == 0 {
                continue;
            }
            for t in 0..BANDS {
                if b[t] == bands[t] && taken[t] < PER_BAND {
                    out.push(*n);
                    taken[t] += 1;
                }
            }
        }
        out.sort_unstable();
        out.dedup();
        self.candidates = out;
        result
    }

    /// Appends the ids of spilled run `i`, table `t`, whose key is `key`, while the band
    /// has fewer than [`PER_BAND`] (`taken`).
    fn spilled_ids(
        &mut self,
        i: usize,
        t: usize,
        key: u32,
        taken: &mut usize,
        out: &mut Vec<u32>,
    ) -> io::Result<()> {
        let run = &self.disk[i];
        let fences = &run.fences[t];
        let first = fences.partition_point(|&k| k < key).saturating_sub(1);
        let end_block = fences.partition_point(|&k| k <= key);
        let mut next = (first * FENCE_ENTRIES) as u64;
        let end = ((end_block * FENCE_ENTRIES) as u64).min(run.len);
        let (id, base) = (run.run, run.table_offset(t));
        // Bound: each turn reads at most MERGE_CHUNK_ENTRIES entries and moves past them.
        while next < end && *taken < PER_BAND {
            let n = (end - next).min(MERGE_CHUNK_ENTRIES as u64) as usize;
            self.read_buf.resize(n * ENTRY_BYTES, 0);
            let offset = base + next * ENTRY_BYTES as u64;
            self.spill.read_at(id, offset, &mut self.read_buf)?;
            for chunk in self.read_buf.chunks_exact(ENTRY_BYTES) {
                let e = Entry::decode(chunk);
                if e.key > key || *taken >= PER_BAND {
                    return Ok(());
                }
                if e.key == key {
                    out.push(e.id);
                    *taken += 1;
                }
            }
            next += n as u64;
        }
        Ok(())
    }

    /// Sorts the pending bands into a run and merges RAM runs like a binary counter.
    fn seal(&mut self) {
        let tables = std::array::from_fn(|t| {
            let mut table: Vec<Entry> = self
                .pending
                .iter()
                .map(|(b, n)| Entry { key: b[t], id: *n })
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

/// Tables shorter than this are binary-searched directly.
const INTERPOLATE_FROM: usize = 64;

/// The first entry of `table` whose key is at least `key`. Fingerprints are spread about
/// evenly over the key space, so the search starts where the key's share of the space
/// points, gallops out to bracket it, then bisects the bracket: a couple of cache misses
/// where a binary search over a million entries takes twenty. Any order of keys gives the
/// right answer; only the speed depends on the spread.
fn lower_bound(table: &[Entry], key: u32) -> usize {
    let n = table.len();
    if n < INTERPOLATE_FROM {
        return table.partition_point(|e| e.key < key);
    }
    let guess = guess(n, key);
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

/// Where [`lower_bound`] starts looking for `key` in a table of `n` entries: the key's
/// share of the key space.
#[inline]
fn guess(n: usize, key: u32) -> usize {
    ((u64::from(key) * n as u64) >> 32) as usize
}

/// Asks the CPU to bring `table[at]` into the cache (nothing when `at` is past the end).
#[inline]
fn prefetch(table: &[Entry], at: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(e) = table.get(at) {
        // SAFETY: a prefetch reads nothing the program sees and cannot fault; the address
        // is an element of `table` anyway.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                (e as *const Entry).cast(),
            )
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (table, at);
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
    let mut fences: [Vec<u32>; TABLES] = Default::default();
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
