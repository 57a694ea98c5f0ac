//! An append-only record journal in LevelDB's log format: what a crawl appends as it goes
//! (e.g. "URL done", "URL discovered") so a restart can replay it.
//!
//! # Format
//! The file is a sequence of 32 KiB blocks ([`BLOCK_SIZE`]). Each block holds physical records:
//! `masked CRC32C (u32 LE) | length (u16 LE) | type (u8) | payload`, where the CRC covers the
//! type byte and the payload ([`super::crc32c::mask`]). A logical record that fits the rest of a
//! block is one `FULL` physical record; otherwise it is split into `FIRST`, `MIDDLE`..., `LAST`
//! fragments across blocks. When fewer than 7 bytes are left in a block they are zero-filled
//! (the trailer) and the next record starts at the next block. Logical records are at most
//! [`MAX_RECORD_BYTES`].
//!
//! # Damage
//! Reading stops at the first thing that is not a valid record; nothing after that point is
//! returned, so damage is never misread as data. [`JournalRead::valid_len`] is the end of the
//! last complete logical record. The damage is classified:
//! - a *torn tail* ([`Damage::torn_tail`]): the file ends inside a record, or the bad bytes are
//!   not followed by any intact physical record (an interrupted append, or unwritten garbage or
//!   zeros after a power loss). [`JournalWriter::open_append`] cuts it off and appends after
//!   the last complete record.
//!   (A damaged length field in the last block looks the same as a truncated append; that is
//!   the one case where intact records, all in the final 32 KiB block, can be cut off.)
//! - *mid-file corruption*: intact records follow the bad spot (found at a later block start,
//!   or right after a record whose checksum failed). Those later records are not returned, and
//!   `open_append` refuses the file (`InvalidData`) instead of silently dropping them.
//!
//! # Durability (where the fsyncs are)
//! - [`JournalWriter::append`] only buffers (64 KiB); [`JournalWriter::flush`] hands the bytes
//!   to the OS, which is enough to survive the *process* dying (Ctrl-C, `kill -9`).
//! - [`JournalWriter::sync`] = flush + `fdatasync`: survives power loss. It costs a disk
//!   round trip, so callers batch: sync once per batch of appends, and before acting on
//!   anything (e.g. deleting input) that assumes the journal is durable.
//! - `open_append` fsyncs the directory when it creates the file, and fsyncs the file after
//!   cutting off a torn tail (so new records never land after stale bytes).
//!
//! Writing after an I/O error is refused (the file may end in a partial record); reopen with
//! `open_append`, which repairs the tail.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::crc32c;

/// Size of a block; physical records never cross a block boundary.
pub const BLOCK_SIZE: usize = 32 * 1024;
/// Physical record header: CRC (4), length (2), type (1).
pub const HEADER_SIZE: usize = 7;
/// Largest logical record accepted by `append` and by the reader.
pub const MAX_RECORD_BYTES: usize = 16 * 1024 * 1024;

const FULL: u8 = 1;
const FIRST: u8 = 2;
const MIDDLE: u8 = 3;
const LAST: u8 = 4;

const WRITE_BUFFER_BYTES: usize = 64 * 1024;

/// Why reading stopped before the end of the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DamageKind {
    /// The file ends inside a header, a payload, or a fragmented record.
    Truncated,
    /// A physical record's CRC does not match.
    Checksum,
    /// A physical record's type is not FULL/FIRST/MIDDLE/LAST.
    BadType(u8),
    /// A physical record's length runs past its block.
    BadLength,
    /// Fragments out of order (e.g. MIDDLE without FIRST, FULL inside a fragmented record).
    FragmentSequence,
    /// A logical record longer than [`MAX_RECORD_BYTES`].
    TooLarge,
}

/// Where and why reading stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Damage {
    /// File offset of the physical record where the problem was found.
    pub offset: u64,
    pub kind: DamageKind,
    /// True when no intact record follows: an interrupted append, safe to cut off.
    pub torn_tail: bool,
}

/// Everything [`JournalReader::read_all`] found.
#[derive(Debug)]
pub struct JournalRead {
    /// The complete logical records before any damage, in order.
    pub records: Vec<Vec<u8>>,
    /// End of the last complete logical record (where appending resumes).
    pub valid_len: u64,
    /// File length minus `valid_len`: the bytes not returned.
    pub dropped_tail_bytes: u64,
    /// Why reading stopped before the end of the file, if it did.
    pub damage: Option<Damage>,
}

/// Appends records to a journal file.
pub struct JournalWriter {
    out: BufWriter<File>,
    path: PathBuf,
    /// Logical file length, including buffered bytes.
    len: u64,
    block_offset: usize,
    dropped_tail_bytes: u64,
    records_at_open: u64,
    failed: bool,
}

impl JournalWriter {
    /// Opens `path` for appending, creating it if missing. A torn tail left by a crash is cut
    /// back to the last complete record (see [`Self::dropped_tail_bytes`]); mid-file corruption
    /// is an `InvalidData` error, since cutting there would drop intact records.
    pub fn open_append(path: &Path) -> io::Result<JournalWriter> {
        let existed = path.try_exists()?;
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        if !existed {
            sync_parent_dir(path)?;
        }
        let file_len = file.metadata()?.len();
        let mut reader = JournalReader::new(&mut file)?;
        let mut records = 0u64;
        while reader.next_record()?.is_some() {
            records += 1;
        }
        let valid_len = reader.valid_len();
        if let Some(d) = reader.damage() {
            if !d.torn_tail {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "journal {} is corrupt at offset {} ({:?}) with intact records after it",
                        path.display(),
                        d.offset,
                        d.kind
                    ),
                ));
            }
        }
        if valid_len < file_len {
            file.set_len(valid_len)?;
            file.sync_all()?;
        }
        file.seek(SeekFrom::Start(valid_len))?;
        Ok(JournalWriter {
            out: BufWriter::with_capacity(WRITE_BUFFER_BYTES, file),
            path: path.to_path_buf(),
            len: valid_len,
            block_offset: (valid_len % BLOCK_SIZE as u64) as usize,
            dropped_tail_bytes: file_len - valid_len,
            records_at_open: records,
            failed: false,
        })
    }

    /// Appends one logical record (buffered; see [`Self::flush`] and [`Self::sync`]).
    pub fn append(&mut self, payload: &[u8]) -> io::Result<()> {
        if self.failed {
            return Err(self.failed_error());
        }
        if payload.len() > MAX_RECORD_BYTES {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "journal record larger than MAX_RECORD_BYTES",
            ));
        }
        let res = self.append_fragments(payload);
        if res.is_err() {
            self.failed = true;
        }
        res
    }

    fn append_fragments(&mut self, payload: &[u8]) -> io::Result<()> {
        let mut rest = payload;
        let mut begin = true;
        loop {
            let left = BLOCK_SIZE - self.block_offset;
            if left < HEADER_SIZE {
                self.out.write_all(&[0u8; HEADER_SIZE][..left])?;
                self.len += left as u64;
                self.block_offset = 0;
            }
            let avail = BLOCK_SIZE - self.block_offset - HEADER_SIZE;
            let n = rest.len().min(avail);
            let end = n == rest.len();
            let kind = match (begin, end) {
                (true, true) => FULL,
                (true, false) => FIRST,
                (false, false) => MIDDLE,
                (false, true) => LAST,
            };
            let (frag, tail) = rest.split_at(n);
            let crc = crc32c::mask(crc32c::extend(crc32c::crc32c(&[kind]), frag));
            let mut header = [0u8; HEADER_SIZE];
            header[..4].copy_from_slice(&crc.to_le_bytes());
            header[4..6].copy_from_slice(&(n as u16).to_le_bytes());
            header[6] = kind;
            self.out.write_all(&header)?;
            self.out.write_all(frag)?;
            self.block_offset += HEADER_SIZE + n;
            self.len += (HEADER_SIZE + n) as u64;
            rest = tail;
            begin = false;
            if end {
                return Ok(());
            }
        }
    }

    /// Hands buffered records to the OS: they survive the process dying, not a power loss.
    pub fn flush(&mut self) -> io::Result<()> {
        if self.failed {
            return Err(self.failed_error());
        }
        self.out.flush().inspect_err(|_| self.failed = true)
    }

    /// Flush + `fdatasync`: every record appended so far survives a power loss.
    pub fn sync(&mut self) -> io::Result<()> {
        self.flush()?;
        self.out
            .get_ref()
            .sync_data()
            .inspect_err(|_| self.failed = true)
    }

    /// Logical length of the journal, including records not yet flushed.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True when the journal holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes of torn tail cut off by `open_append`.
    pub fn dropped_tail_bytes(&self) -> u64 {
        self.dropped_tail_bytes
    }

    /// Complete records the file held when `open_append` opened it.
    pub fn records_at_open(&self) -> u64 {
        self.records_at_open
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn failed_error(&self) -> io::Error {
        io::Error::other(format!(
            "journal {} failed earlier; reopen it with open_append",
            self.path.display()
        ))
    }
}

/// Reads logical records one at a time, one block in memory (plus the record being built).
pub struct JournalReader<R> {
    src: R,
    block: Vec<u8>,
    block_start: u64,
    pos: usize,
    valid_len: u64,
    damage: Option<Damage>,
    done: bool,
}

impl JournalReader<File> {
    /// Reads a whole journal file. A missing file is an error (`NotFound`).
    pub fn read_all(path: &Path) -> io::Result<JournalRead> {
        let file = File::open(path)?;
        Self::read_all_from(file)
    }
}

impl<R: Read + Seek> JournalReader<R> {
    /// Starts reading `src` from its beginning.
    pub fn new(mut src: R) -> io::Result<Self> {
        src.seek(SeekFrom::Start(0))?;
        let mut r = JournalReader {
            src,
            block: Vec::with_capacity(BLOCK_SIZE),
            block_start: 0,
            pos: 0,
            valid_len: 0,
            damage: None,
            done: false,
        };
        read_block(&mut r.src, &mut r.block)?;
        Ok(r)
    }

    /// Reads every record of `src` (see [`JournalRead`]).
    pub fn read_all_from(src: R) -> io::Result<JournalRead> {
        let mut r = Self::new(src)?;
        let mut records = Vec::new();
        while let Some(rec) = r.next_record()? {
            records.push(rec);
        }
        let file_len = r.src.seek(SeekFrom::End(0))?;
        Ok(JournalRead {
            records,
            valid_len: r.valid_len,
            dropped_tail_bytes: file_len - r.valid_len,
            damage: r.damage,
        })
    }

    /// End of the last complete record returned so far.
    pub fn valid_len(&self) -> u64 {
        self.valid_len
    }

    /// Why reading stopped early; set once `next_record` has returned `None`.
    pub fn damage(&self) -> Option<Damage> {
        self.damage
    }

    /// The next complete logical record, or `None` at the end or at damage.
    pub fn next_record(&mut self) -> io::Result<Option<Vec<u8>>> {
        if self.done {
            return Ok(None);
        }
        let mut partial: Option<Vec<u8>> = None;
        loop {
            if self.block.len() - self.pos < HEADER_SIZE {
                if self.block.len() < BLOCK_SIZE {
                    // The last (short) block: a clean end only between records, exactly at EOF.
                    if partial.is_none() && self.pos == self.block.len() {
                        self.done = true;
                        return Ok(None);
                    }
                    return self.stop(DamageKind::Truncated, self.here());
                }
                // Skip the trailer of a full block.
                self.block_start += BLOCK_SIZE as u64;
                self.pos = 0;
                read_block(&mut self.src, &mut self.block)?;
                continue;
            }
            let at = self.here();
            let h = &self.block[self.pos..self.pos + HEADER_SIZE];
            let crc = u32::from_le_bytes([h[0], h[1], h[2], h[3]]);
            let len = usize::from(u16::from_le_bytes([h[4], h[5]]));
            let kind = h[6];
            let start = self.pos + HEADER_SIZE;
            if start + len > self.block.len() {
                let k = if self.block.len() < BLOCK_SIZE {
                    DamageKind::Truncated
                } else {
                    DamageKind::BadLength
                };
                return self.stop(k, at);
            }
            let payload = &self.block[start..start + len];
            let want = crc32c::extend(crc32c::crc32c(&[kind]), payload);
            if crc32c::unmask(crc) != want {
                return self.stop(DamageKind::Checksum, at);
            }
            if !(FULL..=LAST).contains(&kind) {
                return self.stop(DamageKind::BadType(kind), at);
            }
            if (kind == FULL || kind == FIRST) != partial.is_none() {
                return self.stop(DamageKind::FragmentSequence, at);
            }
            let buf = partial.get_or_insert_with(Vec::new);
            if buf.len() + len > MAX_RECORD_BYTES {
                return self.stop(DamageKind::TooLarge, at);
            }
            buf.extend_from_slice(payload);
            self.pos = start + len;
            if kind == FULL || kind == LAST {
                self.valid_len = self.here();
                return Ok(partial);
            }
        }
    }

    fn here(&self) -> u64 {
        self.block_start + self.pos as u64
    }

    /// Records the damage at `at`, classifying it as torn tail or mid-file corruption.
    fn stop(&mut self, kind: DamageKind, at: u64) -> io::Result<Option<Vec<u8>>> {
        self.done = true;
        let torn_tail = kind == DamageKind::Truncated || !self.intact_after(kind)?;
        self.damage = Some(Damage {
            offset: at,
            kind,
            torn_tail,
        });
        Ok(None)
    }

    /// Whether any intact physical record follows the damaged one at `self.pos`: right after it
    /// when only its checksum failed (its length is then plausible), or at a later block start.
    fn intact_after(&mut self, kind: DamageKind) -> io::Result<bool> {
        if kind == DamageKind::Checksum {
            let h = &self.block[self.pos..];
            let next = self.pos + HEADER_SIZE + usize::from(u16::from_le_bytes([h[4], h[5]]));
            if next < self.block.len() && any_valid_record(&self.block[next..]) {
                return Ok(true);
            }
        }
        let mut block = Vec::with_capacity(BLOCK_SIZE);
        let mut start = self.block_start + BLOCK_SIZE as u64;
        loop {
            self.src.seek(SeekFrom::Start(start))?;
            read_block(&mut self.src, &mut block)?;
            if block.len() < HEADER_SIZE {
                return Ok(false);
            }
            if any_valid_record(&block) {
                return Ok(true);
            }
            start += BLOCK_SIZE as u64;
        }
    }
}

/// Whether the physical records at the start of `b` (one block's rest) include a valid one.
fn any_valid_record(b: &[u8]) -> bool {
    let mut pos = 0;
    while b.len() - pos >= HEADER_SIZE {
        let h = &b[pos..pos + HEADER_SIZE];
        let len = usize::from(u16::from_le_bytes([h[4], h[5]]));
        let end = pos + HEADER_SIZE + len;
        if end > b.len() || !(FULL..=LAST).contains(&h[6]) {
            return false;
        }
        let crc = u32::from_le_bytes([h[0], h[1], h[2], h[3]]);
        let want = crc32c::extend(crc32c::crc32c(&[h[6]]), &b[pos + HEADER_SIZE..end]);
        if crc32c::unmask(crc) == want {
            return true;
        }
        pos = end;
    }
    false
}

/// Fills `buf` with up to one block from `src` (fewer bytes only at end of file).
fn read_block<R: Read>(src: &mut R, buf: &mut Vec<u8>) -> io::Result<()> {
    buf.clear();
    src.take(BLOCK_SIZE as u64).read_to_end(buf)?;
    Ok(())
}

/// fsyncs the directory holding `path`, so a created or renamed entry survives power loss.
pub(crate) fn sync_parent_dir(path: &Path) -> io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    File::open(dir)?.sync_all()
}

#[cfg(test)]
#[path = "journal_tests.rs"]
mod tests;
