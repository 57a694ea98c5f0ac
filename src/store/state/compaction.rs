//! Checkpoints of a crawl's URL state (`crawl.state/checkpoint.N`): the checkpoint before and
//! the journals up to generation N folded into one file, so that a resume reads one file and
//! the journals written since, and the folded journals can be deleted.
//!
//! A checkpoint is written in the journal's framing (checksummed records in 32 KiB blocks,
//! [`super::journal`]) as `checkpoint.N.tmp`, fsynced, renamed and its directory fsynced; only
//! then are the journals it covers removed. A crash at any instant leaves either the old
//! checkpoint with its journals or the new one (with, at worst, stale journals that
//! [`super::crawl_state::state_files`] sets aside). Its records, in this order:
//! - `V` format version;
//! - `S` part + sorted URL keys: the URL-seen set of each local partition, increasing;
//! - `Q` url + entry: the URLs admitted and not ended, in admission order;
//! - `G` payload digests (content seen), 20 bytes each;
//! - `C` URLs admitted and URLs done, in all;
//! - `E` the end: a checkpoint without it is not one.
//!
//! Compaction runs on its own thread beside the crawl; its memory is what the journals since
//! the last checkpoint hold (their ended URLs, 8 bytes each, and their new URL keys), never
//! the checkpoint's size.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs;
use std::io::{self, Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::crawl_state::{self, checkpoint_path, StateError, StateFiles};
use super::journal::{sync_parent_dir, JournalReader, JournalWriter};
use super::url_events::{admitted_after, scan_ends, still_queued, Event};
use crate::codec::{get_bytes, get_varint, put_bytes, put_varint};
use crate::fetcher::PayloadDigest;

/// 3: a URL-seen key's resource hash is seeded with its host's (`crawl::url_seen::url_key`);
/// version 2's was not (two hosts with the same 24 key bits shared the keys of common paths),
/// version 1's were MD5. A checkpoint holds keys, not URLs, so an older one cannot be
/// converted.
const VERSION: u64 = 3;
const TAG_VERSION: u8 = b'V';
const TAG_SEEN: u8 = b'S';
const TAG_QUEUED: u8 = b'Q';
const TAG_DIGESTS: u8 = b'G';
const TAG_COUNTS: u8 = b'C';
const TAG_END: u8 = b'E';
/// Keys per `S` record (32 KiB) and digests per `G` record (32,000 bytes).
const KEYS_PER_RECORD: usize = 4096;
const DIGESTS_PER_RECORD: usize = 1600;
const DIGEST_BYTES: usize = size_of::<PayloadDigest>();

/// Maps a journal URL to its local partition and URL-seen key (`None`: not a URL; it is then
/// left out of the seen set, as a restore would).
pub type KeyFn = dyn Fn(&str) -> Option<(u32, u64)> + Send + Sync;

/// A shared [`KeyFn`], for the output's configuration.
#[derive(Clone)]
pub struct StateKeys(pub Arc<KeyFn>);

impl std::fmt::Debug for StateKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StateKeys")
    }
}

/// One item of a checkpoint, as [`read`] hands it out.
pub enum Item<'a> {
    Seen(u32, &'a [u64]),
    Queued(&'a str, &'a [u8]),
    /// Concatenated digests.
    Digests(&'a [u8]),
}

/// A checkpoint's totals.
#[derive(Debug, Default, Clone, Copy)]
pub struct Counts {
    pub admitted: u64,
    pub done: u64,
}

/// Reads the checkpoint at `path`, handing each item to `f`. A checkpoint that is damaged or lacks its end is an error: it was renamed
/// into place only once complete and synced.
pub fn read(
    path: &Path,
    mut f: impl FnMut(Item<'_>) -> Result<(), StateError>,
) -> Result<Counts, StateError> {
    let bad = |what: &str| StateError::Damaged(format!("{}: {what}", path.display()));
    let mut reader = JournalReader::new(fs::File::open(path)?)?;
    let mut counts = None;
    let mut keys = Vec::with_capacity(KEYS_PER_RECORD);
    let mut first = true;
    // Bounded by the file's length: each step consumes one record.
    while let Some(rec) = reader.next_record()? {
        let Some((&tag, mut input)) = rec.split_first() else {
            return Err(bad("empty record"));
        };
        if first {
            match (tag, get_varint(&mut input)) {
                (TAG_VERSION, Some(VERSION)) => {}
                (TAG_VERSION, Some(v)) if v < VERSION => {
                    return Err(bad(&format!(
                        "checkpoint format {v} was written by an older spinneret, whose URL \
                         keys differ: resume this crawl with that version"
                    )))
                }
                _ => return Err(bad("not a checkpoint of this version")),
            }
            first = false;
            continue;
        }
        match tag {
            TAG_SEEN => {
                let part = get_varint(&mut input).ok_or_else(|| bad("bad seen record"))?;
                let part = u32::try_from(part).map_err(|_| bad("bad partition"))?;
                if input.len() % 8 != 0 {
                    return Err(bad("bad seen record"));
                }
                keys.clear();
                keys.extend(
                    input
                        .chunks_exact(8)
                        .map(|k| u64::from_le_bytes(k.try_into().expect("8 bytes"))),
                );
                f(Item::Seen(part, &keys))?;
            }
            TAG_QUEUED => {
                let url = get_bytes(&mut input)
                    .and_then(|b| std::str::from_utf8(b).ok())
                    .ok_or_else(|| bad("bad queued URL"))?;
                let entry = get_bytes(&mut input).ok_or_else(|| bad("bad queued entry"))?;
                f(Item::Queued(url, entry))?;
            }
            TAG_DIGESTS if input.len() % DIGEST_BYTES == 0 => f(Item::Digests(input))?,
            TAG_COUNTS => {
                let admitted = get_varint(&mut input).ok_or_else(|| bad("bad counts"))?;
                let done = get_varint(&mut input).ok_or_else(|| bad("bad counts"))?;
                counts = Some(Counts { admitted, done });
            }
            TAG_END => return counts.ok_or_else(|| bad("no counts")),
            _ => return Err(bad("unknown record")),
        }
    }
    Err(bad("incomplete (no end record)"))
}

/// A checkpoint being written to `NAME.tmp`.
struct CheckpointWriter {
    w: JournalWriter,
    tmp: PathBuf,
    path: PathBuf,
    rec: Vec<u8>,
}

impl CheckpointWriter {
    fn create(path: PathBuf) -> io::Result<Self> {
        let tmp = super::checkpoint::tmp_path(&path);
        match fs::remove_file(&tmp) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        let mut w = JournalWriter::open_append(&tmp)?;
        let mut rec = vec![TAG_VERSION];
        put_varint(&mut rec, VERSION);
        w.append(&rec)?;
        Ok(CheckpointWriter { w, tmp, path, rec })
    }

    fn seen(&mut self, part: u32, keys: &[u64]) -> io::Result<()> {
        for chunk in keys.chunks(KEYS_PER_RECORD) {
            self.rec.clear();
            self.rec.push(TAG_SEEN);
            put_varint(&mut self.rec, part.into());
            for k in chunk {
                self.rec.extend_from_slice(&k.to_le_bytes());
            }
            self.w.append(&self.rec)?;
        }
        Ok(())
    }

    fn queued(&mut self, url: &str, entry: &[u8]) -> io::Result<()> {
        self.rec.clear();
        self.rec.push(TAG_QUEUED);
        put_bytes(&mut self.rec, url.as_bytes());
        put_bytes(&mut self.rec, entry);
        self.w.append(&self.rec)
    }

    fn digests(&mut self, digests: &[u8]) -> io::Result<()> {
        for chunk in digests.chunks(DIGESTS_PER_RECORD * DIGEST_BYTES) {
            self.rec.clear();
            self.rec.push(TAG_DIGESTS);
            self.rec.extend_from_slice(chunk);
            self.w.append(&self.rec)?;
        }
        Ok(())
    }

    /// Writes the totals and the end, syncs, and renames the checkpoint into place.
    fn finish(mut self, counts: Counts) -> io::Result<()> {
        self.rec.clear();
        self.rec.push(TAG_COUNTS);
        put_varint(&mut self.rec, counts.admitted);
        put_varint(&mut self.rec, counts.done);
        self.w.append(&self.rec)?;
        self.w.append(&[TAG_END])?;
        self.w.sync()?;
        fs::rename(&self.tmp, &self.path)?;
        sync_parent_dir(&self.path)
    }
}

/// The URL keys the journals since the checkpoint added, per local partition, merged into
/// the checkpoint's sorted keys as those stream past. Past [`RUN_KEYS`] in memory they are
/// sorted and written to a run file (an external sort), so a compaction of many journals
/// holds a few MB of keys, not 8 bytes per URL they admitted.
struct NewKeys {
    /// Where run files go (`checkpoint.N.tmp.runK`), removed when done.
    tmp: PathBuf,
    parts: Vec<Vec<u64>>,
    in_ram: usize,
    run_files: Vec<PathBuf>,
    /// Per partition: the run files' sections holding its keys, then the merge over them.
    runs: Vec<Vec<(usize, u64, u64)>>,
    merging: Vec<Option<Merge>>,
    merged: Vec<u64>,
}

/// Keys held in memory before they go to a run file: 1 MiB (tests: a few, to merge runs).
const RUN_KEYS: usize = if cfg!(test) { 50 } else { 128 * 1024 };

/// A k-way merge of sorted key sources, repeats dropped.
struct Merge {
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    sources: Vec<Source>,
    last: Option<u64>,
}

enum Source {
    /// A run file's section: the reader and the keys left in it.
    File(io::BufReader<fs::File>, u64),
    Mem(std::vec::IntoIter<u64>),
}

impl Source {
    fn next(&mut self) -> io::Result<Option<u64>> {
        match self {
            Source::File(_, 0) => Ok(None),
            Source::File(r, left) => {
                let mut b = [0u8; 8];
                r.read_exact(&mut b)?;
                *left -= 1;
                Ok(Some(u64::from_le_bytes(b)))
            }
            Source::Mem(it) => Ok(it.next()),
        }
    }
}

impl Merge {
    fn new(mut sources: Vec<Source>) -> io::Result<Merge> {
        let mut heap = BinaryHeap::new();
        for (i, s) in sources.iter_mut().enumerate() {
            if let Some(k) = s.next()? {
                heap.push(Reverse((k, i)));
            }
        }
        Ok(Merge {
            heap,
            sources,
            last: None,
        })
    }

    /// The next key, if it is at most `limit`.
    fn next_upto(&mut self, limit: u64) -> io::Result<Option<u64>> {
        // Bounded by the keys left: each step takes one from a source.
        while let Some(&Reverse((k, i))) = self.heap.peek() {
            if k > limit {
                return Ok(None);
            }
            self.heap.pop();
            if let Some(n) = self.sources[i].next()? {
                self.heap.push(Reverse((n, i)));
            }
            if self.last != Some(k) {
                self.last = Some(k);
                return Ok(Some(k));
            }
        }
        Ok(None)
    }
}

impl NewKeys {
    fn new(tmp: PathBuf) -> NewKeys {
        NewKeys {
            tmp,
            parts: Vec::new(),
            in_ram: 0,
            run_files: Vec::new(),
            runs: Vec::new(),
            merging: Vec::new(),
            merged: Vec::new(),
        }
    }

    fn add(&mut self, part: u32, key: u64) -> io::Result<()> {
        let p = part as usize;
        if self.parts.len() <= p {
            self.parts.resize_with(p + 1, Vec::new);
            self.runs.resize_with(p + 1, Vec::new);
        }
        let keys = &mut self.parts[p];
        if keys.len() == keys.capacity() {
            // Grown in steps, not doubled: the run's memory stays near RUN_KEYS keys.
            keys.reserve_exact(RUN_KEYS / 8);
        }
        keys.push(key);
        self.in_ram += 1;
        if self.in_ram >= RUN_KEYS {
            self.spill()?;
        }
        Ok(())
    }

    /// Writes the keys in memory, sorted per partition, to a new run file.
    fn spill(&mut self) -> io::Result<()> {
        let path = PathBuf::from(format!(
            "{}.run{}",
            self.tmp.display(),
            self.run_files.len()
        ));
        let mut out = io::BufWriter::new(fs::File::create(&path)?);
        let file = self.run_files.len();
        self.run_files.push(path);
        let mut offset = 0u64;
        for (p, keys) in self.parts.iter_mut().enumerate() {
            keys.sort_unstable();
            keys.dedup();
            for k in keys.iter() {
                out.write_all(&k.to_le_bytes())?;
            }
            self.runs[p].push((file, offset, keys.len() as u64));
            offset += 8 * keys.len() as u64;
            *keys = Vec::new();
        }
        self.in_ram = 0;
        out.flush()
    }

    /// Ends the adding: each partition's merge over its runs and what is in memory.
    fn sort(&mut self) -> io::Result<()> {
        for (p, keys) in self.parts.iter_mut().enumerate() {
            keys.sort_unstable();
            let mut sources = vec![Source::Mem(std::mem::take(keys).into_iter())];
            for &(file, offset, len) in &self.runs[p] {
                let mut f = fs::File::open(&self.run_files[file])?;
                f.seek(io::SeekFrom::Start(offset))?;
                sources.push(Source::File(io::BufReader::new(f), len));
            }
            self.merging.push(Some(Merge::new(sources)?));
        }
        Ok(())
    }

    /// Writes the checkpoint's `keys` of `part` with the new keys below their end.
    fn merge(&mut self, w: &mut CheckpointWriter, part: u32, keys: &[u64]) -> io::Result<()> {
        let Some(Some(new)) = self.merging.get_mut(part as usize) else {
            return w.seen(part, keys);
        };
        let last = keys.last().copied().unwrap_or(0);
        self.merged.clear();
        let mut next_new = new.next_upto(last)?;
        for &o in keys {
            // Bounded by the new keys up to `last`: each step writes one.
            while let Some(n) = next_new.filter(|&n| n < o) {
                self.merged.push(n);
                next_new = new.next_upto(last)?;
            }
            if next_new == Some(o) {
                next_new = new.next_upto(last)?;
            }
            self.merged.push(o);
        }
        // Keys are increasing, so a new key left over is above `last`: impossible here.
        debug_assert!(next_new.is_none());
        w.seen(part, &self.merged)
    }

    /// Writes the new keys above every key of the checkpoint, and removes the run files.
    fn finish(&mut self, w: &mut CheckpointWriter) -> io::Result<()> {
        for (p, m) in self.merging.iter_mut().enumerate() {
            let Some(mut m) = m.take() else { continue };
            self.merged.clear();
            while let Some(k) = m.next_upto(u64::MAX)? {
                self.merged.push(k);
                if self.merged.len() == KEYS_PER_RECORD {
                    w.seen(p as u32, &self.merged)?;
                    self.merged.clear();
                }
            }
            w.seen(p as u32, &self.merged)?;
        }
        for f in self.run_files.drain(..) {
            fs::remove_file(f)?;
        }
        Ok(())
    }
}

/// Folds the newest checkpoint and the journals up to generation `upto` (closed: appends go
/// to a later one) into `checkpoint.UPTO`, then removes what it covers. Returns the new
/// checkpoint's size in bytes.
///
/// A URL admitted twice (several loops: see [`super::replay::replay`]) may stay queued twice
/// here: the replay queues it once, and keeping a set of queued URLs here would cost 8 bytes
/// per URL of the whole checkpoint.
pub fn compact(out: &Path, upto: u64, key: &KeyFn) -> Result<u64, StateError> {
    let StateFiles {
        checkpoint,
        mut journals,
        ..
    } = crawl_state::state_files(out)?;
    journals.retain(|(g, _)| *g <= upto);
    let path = checkpoint_path(out, upto);
    let mut w = CheckpointWriter::create(path.clone())?;
    let mut new = NewKeys::new(w.tmp.clone());
    let mut digests = Vec::new();
    let mut ends = scan_ends(&journals, |ev| {
        match ev {
            Event::Admitted { url, .. } => {
                if let Some((part, k)) = key(url) {
                    new.add(part, k)?;
                }
            }
            Event::Done {
                digest: Some(d), ..
            } => digests.extend_from_slice(d),
            _ => {}
        }
        Ok(())
    })?;
    new.sort()?;
    let mut counts = Counts::default();
    // Seen records all come first: the new keys above the checkpoint's go before its next item.
    let mut seen_over = false;
    if let Some((_, cp)) = &checkpoint {
        let io = StateError::Io;
        counts = read(cp, |item| {
            if !seen_over && !matches!(item, Item::Seen(..)) {
                new.finish(&mut w).map_err(io)?;
                seen_over = true;
            }
            match item {
                Item::Seen(part, keys) => new.merge(&mut w, part, keys).map_err(io),
                Item::Queued(url, entry) if still_queued(&mut ends, url, false) => {
                    w.queued(url, entry).map_err(io)
                }
                Item::Queued(..) => Ok(()),
                Item::Digests(ds) => w.digests(ds).map_err(io),
            }
        })?;
    }
    if !seen_over {
        new.finish(&mut w)?;
    }
    counts.done += ends.done;
    counts.admitted += admitted_after(&journals, &mut ends, false, |url, entry, queued| {
        if queued {
            w.queued(url, entry)?;
        }
        Ok(())
    })?;
    w.digests(&digests)?;
    w.finish(counts)?;
    let size = fs::metadata(&path)?.len();
    // The new checkpoint is durable: what it covers can go.
    for old in crawl_state::state_files(out)?.stale {
        fs::remove_file(old)?;
    }
    Ok(size)
}

#[cfg(test)]
#[path = "compaction_tests.rs"]
mod tests;
