//! Append-only segment files for a frontier queue spilled to disk (Mercator style: each back
//! queue keeps its head and tail in RAM and the middle on disk, as batches).
//!
//! [`SegmentStore::append`] writes one batch of items for one queue to the current segment file
//! and returns a [`SegmentRef`] (small, `Copy`, with a fixed 32-byte encoding for
//! checkpoints). [`SegmentStore::read`] reads a batch back; [`SegmentStore::release`] says it is
//! no longer needed. Segment files rotate at a size limit (64 MiB by default) and are never
//! appended to after a restart. Memory: the store keeps one counter (and at most one open
//! handle) per segment file, plus one reused encode buffer; a batch is at most
//! [`MAX_BATCH_BYTES`].
//!
//! # File format
//! `DIR/{id:016}.seg`, a sequence of batches: magic `SGB1` | queue id (u64 LE) | item count
//! (u32 LE) | body length (u32 LE) | masked CRC32C (u32 LE) over the three fields before it and
//! the body | body = items, each `length (u32 LE) | bytes`. A read checks all of it against
//! the `SegmentRef`, so a damaged or mismatched batch is an `InvalidData` error, never
//! misread.
//!
//! # Durability (where the fsyncs are) and the resume protocol
//! - `append` hands the whole batch to the OS in one positioned write: it survives the process
//!   dying once `append` returns; not a power loss.
//! - [`SegmentStore::sync`]: `fdatasync` of the current segment, plus the directory when a new
//!   segment file was created since the last sync. A segment is also fsynced when it is
//!   rotated away, so `sync` covers every batch appended so far.
//! - Order for a checkpoint: `sync()`, then save the checkpoint holding the live
//!   `SegmentRef`s ([`super::checkpoint`]), then [`SegmentStore::delete_released`].
//!   `release` never deletes by itself: the last durable checkpoint may still name a released
//!   batch, and a crash before the next checkpoint would otherwise lose it.
//! - On restart: [`SegmentStore::open`], then [`SegmentStore::restore`] with the refs from the
//!   checkpoint: files none of them names (including a half-written batch at the end of the
//!   segment that was current at the crash) are deleted, and the others are released
//!   batch by batch as usual.
//!
//! One process owns the directory.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::crc32c;
use super::journal::sync_parent_dir;

/// Rotation size of segment files.
pub const DEFAULT_SEGMENT_BYTES: u64 = 64 * 1024 * 1024;
/// Largest encoded batch (header included) `append` accepts and `read` trusts.
pub const MAX_BATCH_BYTES: usize = 16 * 1024 * 1024;
/// Batch header: magic, queue id, count, body length, CRC.
pub const BATCH_HEADER_BYTES: usize = 4 + 8 + 4 + 4 + 4;
const BATCH_MAGIC: [u8; 4] = *b"SGB1";
const SUFFIX: &str = ".seg";

/// Where one batch lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SegmentRef {
    pub segment: u64,
    pub offset: u64,
    /// Encoded length, header included.
    pub len: u32,
    pub count: u32,
    pub queue_id: u64,
}

impl SegmentRef {
    /// Length of [`Self::encode`]'s output.
    pub const ENCODED_LEN: usize = 32;

    /// Fixed little-endian encoding, for checkpoints.
    pub fn encode(&self) -> [u8; Self::ENCODED_LEN] {
        let mut b = [0u8; Self::ENCODED_LEN];
        b[0..8].copy_from_slice(&self.segment.to_le_bytes());
        b[8..16].copy_from_slice(&self.offset.to_le_bytes());
        b[16..20].copy_from_slice(&self.len.to_le_bytes());
        b[20..24].copy_from_slice(&self.count.to_le_bytes());
        b[24..32].copy_from_slice(&self.queue_id.to_le_bytes());
        b
    }

    /// Inverse of [`Self::encode`]; `None` unless `b` is exactly `ENCODED_LEN` bytes.
    pub fn decode(b: &[u8]) -> Option<SegmentRef> {
        let b: &[u8; Self::ENCODED_LEN] = b.try_into().ok()?;
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        Some(SegmentRef {
            segment: u64_at(0),
            offset: u64_at(8),
            len: u32_at(16),
            count: u32_at(20),
            queue_id: u64_at(24),
        })
    }
}

/// What the store knows about one segment file.
struct Segment {
    /// Batches not yet released.
    live: u64,
    /// Open handle, created on first read of a sealed segment.
    file: Option<File>,
}

/// The segment being appended to.
struct Current {
    id: u64,
    file: File,
    len: u64,
}

/// Append-only, checksummed batch storage in rotating segment files (see the module docs).
pub struct SegmentStore {
    dir: PathBuf,
    max_segment_bytes: u64,
    current: Option<Current>,
    /// Segments with live batches (or the current one), by id.
    segments: HashMap<u64, Segment>,
    /// Segments found by `open` whose live batches are unknown until `restore`.
    unrestored: Vec<u64>,
    /// Fully released, sealed segments waiting for `delete_released`.
    released: Vec<u64>,
    next_id: u64,
    dir_dirty: bool,
    buf: Vec<u8>,
}

impl SegmentStore {
    /// Opens (creating if needed) the directory `dir` with 64 MiB segments.
    pub fn open(dir: &Path) -> io::Result<SegmentStore> {
        Self::open_with(dir, DEFAULT_SEGMENT_BYTES)
    }

    /// Like [`Self::open`], rotating segments once they reach `max_segment_bytes`. Segment
    /// files already in `dir` are kept untouched until [`Self::restore`]; new batches go to a
    /// new file.
    pub fn open_with(dir: &Path, max_segment_bytes: u64) -> io::Result<SegmentStore> {
        fs::create_dir_all(dir)?;
        let mut unrestored = Vec::new();
        for e in fs::read_dir(dir)? {
            if let Some(id) = e?.file_name().to_str().and_then(parse_name) {
                unrestored.push(id);
            }
        }
        unrestored.sort_unstable();
        let next_id = unrestored.last().map_or(0, |&id| id + 1);
        Ok(SegmentStore {
            dir: dir.to_path_buf(),
            max_segment_bytes: max_segment_bytes.max(1),
            current: None,
            segments: HashMap::new(),
            unrestored,
            released: Vec::new(),
            next_id,
            dir_dirty: false,
            buf: Vec::new(),
        })
    }

    /// After a restart: `live` are the refs the last checkpoint still holds. Segment files from
    /// before the restart that none of them names are deleted now (returns how many); the rest
    /// stay readable and are deleted once all their refs are released. Errors (and changes
    /// nothing) if a ref names a file that is not there or lies past its end.
    pub fn restore(&mut self, live: &[SegmentRef]) -> io::Result<u64> {
        let mut counts: HashMap<u64, u64> = HashMap::new();
        for r in live {
            if self.unrestored.binary_search(&r.segment).is_err() {
                return Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("segment {} named by a checkpoint is missing", r.segment),
                ));
            }
            *counts.entry(r.segment).or_default() += 1;
        }
        for &id in counts.keys() {
            let file_len = fs::metadata(self.path_of(id))?.len();
            if let Some(r) = live
                .iter()
                .find(|r| r.segment == id && r.offset + u64::from(r.len) > file_len)
            {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{r:?} lies past the end of its segment ({file_len} bytes)"),
                ));
            }
        }
        let mut deleted = 0;
        for id in std::mem::take(&mut self.unrestored) {
            match counts.get(&id) {
                Some(&live) => {
                    self.segments.insert(id, Segment { live, file: None });
                }
                None => {
                    fs::remove_file(self.path_of(id))?;
                    deleted += 1;
                }
            }
        }
        if deleted > 0 {
            sync_parent_dir(&self.path_of(0))?;
        }
        Ok(deleted)
    }

    /// Writes `items` as one batch for `queue_id`. The batch is with the OS when this returns;
    /// call [`Self::sync`] before a checkpoint refers to it.
    pub fn append(&mut self, queue_id: u64, items: &[Vec<u8>]) -> io::Result<SegmentRef> {
        let body: usize = items.iter().map(|i| 4 + i.len()).sum();
        let len = BATCH_HEADER_BYTES + body;
        if len > MAX_BATCH_BYTES || items.len() > u32::MAX as usize {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "segment batch larger than MAX_BATCH_BYTES",
            ));
        }
        let b = &mut self.buf;
        b.clear();
        b.extend_from_slice(&BATCH_MAGIC);
        b.extend_from_slice(&queue_id.to_le_bytes());
        b.extend_from_slice(&(items.len() as u32).to_le_bytes());
        b.extend_from_slice(&(body as u32).to_le_bytes());
        b.extend_from_slice(&[0; 4]);
        for i in items {
            b.extend_from_slice(&(i.len() as u32).to_le_bytes());
            b.extend_from_slice(i);
        }
        let crc = crc32c::extend(crc32c::crc32c(&b[4..20]), &b[BATCH_HEADER_BYTES..]);
        b[20..24].copy_from_slice(&crc32c::mask(crc).to_le_bytes());

        let rotate = match &self.current {
            Some(c) => c.len > 0 && c.len + len as u64 > self.max_segment_bytes,
            None => true,
        };
        if rotate {
            self.rotate()?;
        }
        let cur = self.current.as_mut().expect("rotate opened a segment");
        // A failed write leaves `len` unchanged: the next batch overwrites the partial bytes.
        cur.file.write_all_at(&self.buf, cur.len)?;
        let r = SegmentRef {
            segment: cur.id,
            offset: cur.len,
            len: len as u32,
            count: items.len() as u32,
            queue_id,
        };
        cur.len += len as u64;
        self.segments.entry(cur.id).or_insert(Segment {
            live: 0,
            file: None,
        });
        self.segments.get_mut(&cur.id).expect("just inserted").live += 1;
        self.buf.clear();
        self.buf.shrink_to(1024 * 1024);
        Ok(r)
    }

    /// Seals the current segment (fsynced, so `sync` need not revisit it) and opens a new one.
    fn rotate(&mut self) -> io::Result<()> {
        self.seal_current()?;
        let id = self.next_id;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(self.path_of(id))?;
        self.next_id += 1;
        self.dir_dirty = true;
        self.segments.insert(
            id,
            Segment {
                live: 0,
                file: None,
            },
        );
        self.current = Some(Current { id, file, len: 0 });
        Ok(())
    }

    fn seal_current(&mut self) -> io::Result<()> {
        if let Some(c) = &self.current {
            c.file.sync_data()?;
        }
        if let Some(c) = self.current.take() {
            let seg = self.segments.get_mut(&c.id).expect("current is tracked");
            if seg.live == 0 {
                self.segments.remove(&c.id);
                self.released.push(c.id);
            }
        }
        Ok(())
    }

    /// Reads batch `r` back, checking magic, checksum, queue id and item count.
    pub fn read(&mut self, r: &SegmentRef) -> io::Result<Vec<Vec<u8>>> {
        let len = r.len as usize;
        if !(BATCH_HEADER_BYTES..=MAX_BATCH_BYTES).contains(&len) {
            return Err(invalid(r, "bad length"));
        }
        let mut b = vec![0u8; len];
        match &self.current {
            Some(c) if c.id == r.segment => c.file.read_exact_at(&mut b, r.offset)?,
            _ => {
                let path = self.path_of(r.segment);
                let seg = self.segments.get_mut(&r.segment).ok_or_else(|| {
                    io::Error::new(io::ErrorKind::NotFound, format!("{r:?}: unknown segment"))
                })?;
                if seg.file.is_none() {
                    seg.file = Some(File::open(path)?);
                }
                let f = seg.file.as_ref().expect("opened above");
                f.read_exact_at(&mut b, r.offset)?;
            }
        }
        decode_batch(r, &b)
    }

    /// Marks batch `r` as no longer needed. Once every batch of a sealed segment is released,
    /// [`Self::delete_released`] deletes the file. Release each ref once.
    pub fn release(&mut self, r: &SegmentRef) -> io::Result<()> {
        let seg = self
            .segments
            .get_mut(&r.segment)
            .filter(|s| s.live > 0)
            .ok_or_else(|| invalid(r, "released twice or never appended"))?;
        seg.live -= 1;
        let sealed = self.current.as_ref().is_none_or(|c| c.id != r.segment);
        if seg.live == 0 && sealed {
            self.segments.remove(&r.segment);
            self.released.push(r.segment);
        }
        Ok(())
    }

    /// Deletes every segment file whose batches were all released (sealing the current one
    /// first if it is entirely released). Call after the checkpoint that no longer names those
    /// batches is saved. Returns how many files were deleted.
    pub fn delete_released(&mut self) -> io::Result<u64> {
        if let Some(c) = &self.current {
            if c.len > 0 && self.segments.get(&c.id).is_some_and(|s| s.live == 0) {
                self.seal_current()?;
            }
        }
        let mut n = 0;
        while let Some(id) = self.released.pop() {
            if let Err(e) = fs::remove_file(self.path_of(id)) {
                self.released.push(id);
                return Err(e);
            }
            n += 1;
        }
        if n > 0 {
            sync_parent_dir(&self.path_of(0))?;
        }
        Ok(n)
    }

    /// Makes every batch appended so far durable (see the module docs).
    pub fn sync(&mut self) -> io::Result<()> {
        if let Some(c) = &self.current {
            c.file.sync_data()?;
        }
        if self.dir_dirty {
            sync_parent_dir(&self.path_of(0))?;
            self.dir_dirty = false;
        }
        Ok(())
    }

    /// Segment files this store may still need (live, current, or not yet restored).
    pub fn segment_files(&self) -> usize {
        self.segments.len() + self.unrestored.len()
    }

    /// Path of segment `id`.
    pub fn path_of(&self, id: u64) -> PathBuf {
        self.dir.join(format!("{id:016}{SUFFIX}"))
    }
}

/// The segment id of a file name written by this module.
fn parse_name(name: &str) -> Option<u64> {
    let digits = name.strip_suffix(SUFFIX)?;
    if digits.len() != 16 || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

fn invalid(r: &SegmentRef, what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("{r:?}: {what}"))
}

/// Checks and splits one encoded batch (exactly `r.len` bytes).
fn decode_batch(r: &SegmentRef, b: &[u8]) -> io::Result<Vec<Vec<u8>>> {
    let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
    if b[..4] != BATCH_MAGIC {
        return Err(invalid(r, "bad batch magic"));
    }
    let crc = crc32c::extend(crc32c::crc32c(&b[4..20]), &b[BATCH_HEADER_BYTES..]);
    if crc32c::unmask(u32_at(20)) != crc {
        return Err(invalid(r, "batch checksum mismatch"));
    }
    let queue_id = u64::from_le_bytes(b[4..12].try_into().expect("8 bytes"));
    let count = u32_at(12);
    let body_len = u32_at(16) as usize;
    if queue_id != r.queue_id || count != r.count || body_len != b.len() - BATCH_HEADER_BYTES {
        return Err(invalid(r, "batch does not match its reference"));
    }
    let mut items = Vec::with_capacity(count as usize);
    let mut pos = BATCH_HEADER_BYTES;
    for _ in 0..count {
        if b.len() - pos < 4 {
            return Err(invalid(r, "item header past batch end"));
        }
        let n = u32_at(pos) as usize;
        pos += 4;
        if b.len() - pos < n {
            return Err(invalid(r, "item past batch end"));
        }
        items.push(b[pos..pos + n].to_vec());
        pos += n;
    }
    if pos != b.len() {
        return Err(invalid(r, "bytes after the last item"));
    }
    Ok(items)
}

#[cfg(test)]
#[path = "segments_tests.rs"]
mod tests;

/// The crawl's frontier spill ([`crate::crawl::spill::SpillStore`]) in segment files. The
/// crawl's journal, not the spill, is what a resumed crawl restores from, so a fresh crawl or
/// resume starts the directory empty and fully released segments are deleted as the crawl
/// goes.
pub struct SegmentSpill {
    store: SegmentStore,
    /// Batches taken since the last deletion of released segments.
    taken: u64,
}

/// Released segments are deleted after this many batches are taken back.
const DELETE_EVERY_BATCHES: u64 = 64;

impl SegmentSpill {
    /// Empties `dir` (creating it if needed) and opens it.
    pub fn create(dir: &Path) -> io::Result<SegmentSpill> {
        match fs::remove_dir_all(dir) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        fs::create_dir_all(dir)?;
        Ok(SegmentSpill {
            store: SegmentStore::open(dir)?,
            taken: 0,
        })
    }
}

impl crate::crawl::spill::SpillStore for SegmentSpill {
    fn write_batch(&mut self, bytes: &[u8]) -> io::Result<crate::crawl::spill::BatchRef> {
        let r = self.store.append(0, &[bytes.to_vec()])?;
        Ok(crate::crawl::spill::BatchRef {
            file: r.segment,
            offset: r.offset,
            len: u64::from(r.len),
        })
    }

    fn take_batch(
        &mut self,
        batch: crate::crawl::spill::BatchRef,
        out: &mut Vec<u8>,
    ) -> io::Result<()> {
        let r = SegmentRef {
            segment: batch.file,
            offset: batch.offset,
            len: u32::try_from(batch.len).map_err(|_| invalid_len())?,
            count: 1,
            queue_id: 0,
        };
        let items = self.store.read(&r)?;
        self.store.release(&r)?;
        out.clear();
        for item in items {
            out.extend_from_slice(&item);
        }
        self.taken += 1;
        if self.taken % DELETE_EVERY_BATCHES == 0 {
            self.store.delete_released()?;
        }
        Ok(())
    }
}

fn invalid_len() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, "spill batch length")
}
