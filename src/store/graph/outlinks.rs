//! Each scanned page's outlinks, kept per partition in `DIR/outlinks-pK` as the crawl goes
//! (ARCHITECTURE §9): the raw material of `spinneret graph` (`super::build`).
//!
//! A record is one page: its URL-seen key ([`crate::crawl::url_seen::url_key`], so the graph
//! can key a crawl.log URL the same way) and the keys of the pages it links to, sorted and
//! distinct, as varint gaps (keys of one host share their high bits, so the gaps of a page's
//! on-site links are short). Records are framed, checksummed and torn-tail-safe by the
//! journal's format ([`crate::store::state::journal`]): a kill at any instant leaves a file
//! whose complete records read back, and reopening it cuts a torn tail. A page fetched again
//! after a resume appends its record again; readers take the union, so duplicates are
//! harmless.
//!
//! Durability is the writer thread's (`archive::writer`): a page's record is appended before
//! its crawl.log line and handed to the OS (or fsynced) before the crawl.log bytes at every
//! commit, so every crawl.log line a resume keeps (it cuts crawl.log back to the last commit
//! mark) has its outlinks on disk.

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

use crate::codec::{get_varint, put_varint};
use crate::store::state::journal::{JournalReader, JournalWriter};

/// File names are this plus the partition number (`outlinks-p0`, `outlinks-p1`, …).
pub const FILE_PREFIX: &str = "outlinks-p";
/// The record format's tag (its version: a later format is told apart, not misread).
const RECORD_V1: u8 = 1;
/// Most targets a record may claim: bounds decoding whatever the bytes say. A page's links
/// are bounded far below by `--max-scan-bytes` (an `href` takes more than 4 bytes).
pub const MAX_TARGETS: usize = 1 << 21;

/// Appends one page's record to `out`: `targets` sorted ascending and distinct.
pub fn encode(out: &mut Vec<u8>, page: u64, targets: &[u64]) {
    debug_assert!(targets.windows(2).all(|w| w[0] < w[1]));
    out.push(RECORD_V1);
    out.extend_from_slice(&page.to_le_bytes());
    put_varint(out, targets.len() as u64);
    let mut prev = 0u64;
    for &t in targets {
        put_varint(out, t.wrapping_sub(prev));
        prev = t;
    }
}

/// One record back: the page's key, its targets into `targets` (cleared first). `None` for
/// bytes that are not a well-formed record (never a panic, whatever the bytes).
pub fn decode(rec: &[u8], targets: &mut Vec<u64>) -> Option<u64> {
    targets.clear();
    let (&tag, rest) = rec.split_first()?;
    if tag != RECORD_V1 || rest.len() < 8 {
        return None;
    }
    let (page, mut rest) = rest.split_at(8);
    let page = u64::from_le_bytes(page.try_into().ok()?);
    let n = usize::try_from(get_varint(&mut rest)?).ok()?;
    // Each target takes at least one byte: a count past the bytes left is a lie.
    if n > MAX_TARGETS || n > rest.len() {
        return None;
    }
    targets.reserve(n);
    let mut prev = 0u64;
    for i in 0..n {
        let gap = get_varint(&mut rest)?;
        if i > 0 && gap == 0 {
            return None;
        }
        prev = prev.checked_add(gap)?;
        targets.push(prev);
    }
    rest.is_empty().then_some(page)
}

/// Partition `part`'s file in `dir`.
pub fn path(dir: &Path, part: usize) -> PathBuf {
    dir.join(format!("{FILE_PREFIX}{part}"))
}

/// Every outlinks file in `dir` (a damaged one set aside too: its intact records count),
/// sorted by name.
pub fn files(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    for e in fs::read_dir(dir)? {
        let e = e?;
        let name = e.file_name();
        let is_ours = name
            .to_str()
            .and_then(|n| n.strip_prefix(FILE_PREFIX))
            .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()));
        if is_ours && e.file_type()?.is_file() {
            found.push(e.path());
        }
    }
    found.sort();
    Ok(found)
}

/// A partition's outlinks file, open for appending (buffered: see [`Self::flush`]).
pub struct OutlinksWriter {
    journal: JournalWriter,
}

impl OutlinksWriter {
    /// Opens partition `part`'s file in `dir`: a fresh crawl (`resume` false) starts it
    /// empty; a resumed one appends after the last complete record (a torn tail is cut). A
    /// file damaged mid-way is set aside as `NAME.damaged` (read by `graph` up to the damage)
    /// rather than stopping the crawl.
    pub fn open(dir: &Path, part: usize, resume: bool) -> io::Result<OutlinksWriter> {
        let path = path(dir, part);
        if !resume {
            remove_if_present(&path)?;
            remove_if_present(&damaged(&path))?;
        }
        let journal = match JournalWriter::open_append(&path) {
            Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                fs::rename(&path, damaged(&path))?;
                JournalWriter::open_append(&path)?
            }
            other => other?,
        };
        Ok(OutlinksWriter { journal })
    }

    /// Appends one encoded record ([`encode`]); an empty one is skipped.
    pub fn append(&mut self, record: &[u8]) -> io::Result<()> {
        if record.is_empty() {
            return Ok(());
        }
        self.journal.append(record)
    }

    /// Hands what is buffered to the OS: enough for a kill.
    pub fn flush(&mut self) -> io::Result<()> {
        self.journal.flush()
    }

    /// Flush and fdatasync: enough for a power cut.
    pub fn sync(&mut self) -> io::Result<()> {
        self.journal.sync()
    }
}

fn damaged(path: &Path) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(".damaged");
    PathBuf::from(p)
}

fn remove_if_present(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// What reading a file found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadStats {
    /// Records read whole and well-formed.
    pub records: u64,
    /// Records whose checksum held but whose content is not a record (skipped).
    pub malformed: u64,
    /// Bytes after the last complete record (a torn tail, or damage): not read.
    pub dropped_bytes: u64,
}

/// Reads a file's records in order, one in memory at a time; stops at damage.
pub struct OutlinksReader {
    reader: JournalReader<File>,
    len: u64,
    stats: ReadStats,
}

impl OutlinksReader {
    pub fn open(path: &Path) -> io::Result<OutlinksReader> {
        let file = File::open(path)?;
        let len = file.metadata()?.len();
        Ok(OutlinksReader {
            reader: JournalReader::new(file)?,
            len,
            stats: ReadStats::default(),
        })
    }

    /// The next page's key and its targets (into `targets`); `None` at the end or at damage.
    /// A record that is not well-formed is counted and skipped.
    pub fn next_page(&mut self, targets: &mut Vec<u64>) -> io::Result<Option<u64>> {
        // Bounded by the file's length: each step consumes one record.
        while let Some(rec) = self.reader.next_record()? {
            match decode(&rec, targets) {
                Some(page) => {
                    self.stats.records += 1;
                    return Ok(Some(page));
                }
                None => self.stats.malformed += 1,
            }
        }
        self.stats.dropped_bytes = self.len.saturating_sub(self.reader.valid_len());
        Ok(None)
    }

    /// What was read so far (complete once `next_page` returned `None`).
    pub fn stats(&self) -> ReadStats {
        self.stats
    }
}

/// Calls `each(page, targets)` for every record of the file at `path`, in order.
pub fn for_each(path: &Path, mut each: impl FnMut(u64, &[u64])) -> io::Result<ReadStats> {
    let mut r = OutlinksReader::open(path)?;
    let mut targets = Vec::new();
    while let Some(page) = r.next_page(&mut targets)? {
        each(page, &targets);
    }
    Ok(r.stats())
}

#[cfg(test)]
#[path = "outlinks_tests.rs"]
mod tests;
