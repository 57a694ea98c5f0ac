//! Recovery of WARC files a crash left as `NAME.warc.gz.open` (see [`super::warc::WarcWriter`]:
//! a file keeps its `.open` name until it is closed).
//!
//! Our `.warc.gz` files are a sequence of gzip members, one WARC record each, and the writer
//! only ever appends whole members, so the complete records of a crashed file are exactly its
//! complete gzip members. [`recover_open_warc`] streams through the file member by member
//! (each decompressed into a counting sink, with gzip's CRC-32 and ISIZE checked by flate2;
//! memory use is one read buffer, whatever the file size), stops at the first member that is
//! cut short or damaged, cuts the file back to the end of the last good member, and gives it
//! its final name. Startup code calls [`find_open_warcs`] on the output directory and recovers
//! each file before the crawl opens new ones.
//!
//! A crash between an exchange's request and response members leaves a request record
//! without its response; it is kept (it is a valid record), and the refetch after resume
//! writes a fresh pair.
//!
//! # Durability (where the fsyncs are)
//! The file is fsynced after the cut (and even with nothing to cut: the crashed writer never
//! synced it), *then* renamed, then the directory is fsynced, so the final name always
//! refers to a complete file. A file with no complete record at all is deleted instead.
//!
//! One process recovers a directory; nothing may be writing the file meanwhile.
//!
//! Before that, a durable crawl's resume cuts its outputs back to the journal's newest
//! [commit mark](crate::store::state::commit_mark) with [`cut_back`]: files begun after it
//! deleted, the rest cut to the lengths it records. Cutting is idempotent: a crash during
//! [`cut_back`] leaves the same mark to cut to, and the journal is cut last.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

use flate2::bufread::GzDecoder;

use super::warc;
use super::warc::reader::MAX_RECORD_BYTES;
use crate::store::state::commit_mark::LastMark;
use crate::store::state::journal::sync_parent_dir;

/// Suffix of a WARC file still being written (or left by a crash).
pub const OPEN_SUFFIX: &str = ".warc.gz.open";

const READ_BUFFER_BYTES: usize = 256 * 1024;

/// What [`recover_open_warc`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recovered {
    /// The name the file now has (without `.open`); `None` when it held no complete record and
    /// was deleted.
    pub final_path: Option<PathBuf>,
    /// Complete records (gzip members) kept.
    pub records_kept: u64,
    /// Bytes cut off the end.
    pub bytes_dropped: u64,
}

/// The `*.warc.gz.open` files directly in `dir`, sorted by name.
pub fn find_open_warcs(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir)? {
        let e = e?;
        let is_open = e
            .file_name()
            .to_str()
            .is_some_and(|n| n.len() > OPEN_SUFFIX.len() && n.ends_with(OPEN_SUFFIX));
        if is_open && e.file_type()?.is_file() {
            out.push(e.path());
        }
    }
    out.sort();
    Ok(out)
}

/// Result of scanning a stream of gzip members.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemberScan {
    /// Complete, valid members from the start.
    pub members: u64,
    /// Byte offset just after the last of them.
    pub good_len: u64,
    /// Whether anything follows `good_len`.
    pub damaged_tail: bool,
}

/// Scans `src` member by member: each must decompress (CRC-32 and ISIZE checked) to at most
/// [`MAX_RECORD_BYTES`] bytes starting with `WARC/1.`. Stops at the first that does not. I/O
/// errors of `src` itself are returned, never mistaken for damage.
pub fn scan_members<R: Read>(src: R) -> io::Result<MemberScan> {
    let mut r = Counting {
        inner: BufReader::with_capacity(READ_BUFFER_BYTES, src),
        pos: 0,
        io_error: None,
    };
    let mut scan = MemberScan {
        members: 0,
        good_len: 0,
        damaged_tail: false,
    };
    loop {
        match r.fill_buf() {
            Ok([]) => return Ok(scan),
            Ok(_) => {}
            Err(e) => return Err(e),
        }
        let mut sink = RecordSink {
            len: 0,
            head: Vec::with_capacity(8),
        };
        let res = io::copy(
            &mut GzDecoder::new(&mut r).take(MAX_RECORD_BYTES as u64 + 1),
            &mut sink,
        );
        if let Some(e) = r.io_error.take() {
            return Err(e);
        }
        let ok = res.is_ok() && sink.len <= MAX_RECORD_BYTES as u64 && sink.head == b"WARC/1.";
        if !ok {
            scan.damaged_tail = true;
            return Ok(scan);
        }
        scan.members += 1;
        scan.good_len = r.pos;
    }
}

/// Cuts `path` (`NAME.warc.gz.open`) back to its last complete record, fsyncs it and renames
/// it to `NAME.warc.gz`. Refuses (`AlreadyExists`) when `NAME.warc.gz` exists already, and
/// (`InvalidInput`) a path not ending in `.warc.gz.open`.
pub fn recover_open_warc(path: &Path) -> io::Result<Recovered> {
    let final_path = path
        .to_str()
        .and_then(|s| s.strip_suffix(".open"))
        .filter(|s| s.ends_with(".warc.gz") && !s.ends_with("/.warc.gz"))
        .map(PathBuf::from)
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is not a .warc.gz.open file", path.display()),
            )
        })?;
    if final_path.try_exists()? {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!("{} already exists", final_path.display()),
        ));
    }
    let file = OpenOptions::new().read(true).write(true).open(path)?;
    let len = file.metadata()?.len();
    let scan = scan_members(&file)?;
    if scan.members == 0 {
        drop(file);
        fs::remove_file(path)?;
        sync_parent_dir(path)?;
        return Ok(Recovered {
            final_path: None,
            records_kept: 0,
            bytes_dropped: len,
        });
    }
    if scan.good_len < len {
        file.set_len(scan.good_len)?;
    }
    file.sync_all()?;
    drop(file);
    fs::rename(path, &final_path)?;
    sync_parent_dir(&final_path)?;
    Ok(Recovered {
        final_path: Some(final_path),
        records_kept: scan.members,
        bytes_dropped: len - scan.good_len,
    })
}

/// A `BufRead` that counts consumed bytes (so the end of each gzip member is known exactly)
/// and remembers an underlying I/O error, which the decoder would otherwise report as just
/// another failure.
struct Counting<R> {
    inner: BufReader<R>,
    pos: u64,
    io_error: Option<io::Error>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let avail = self.fill_buf()?;
        let n = avail.len().min(buf.len());
        buf[..n].copy_from_slice(&avail[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl<R: Read> BufRead for Counting<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        match self.inner.fill_buf() {
            Ok(b) => Ok(b),
            Err(e) => {
                let kind = e.kind();
                self.io_error = Some(e);
                Err(io::Error::new(kind, "read error"))
            }
        }
    }

    fn consume(&mut self, n: usize) {
        self.inner.consume(n);
        self.pos += n as u64;
    }
}

/// Counts decompressed bytes and keeps the first seven.
struct RecordSink {
    len: u64,
    head: Vec<u8>,
}

impl Write for RecordSink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let want = 7 - self.head.len();
        self.head.extend_from_slice(&buf[..want.min(buf.len())]);
        self.len += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
#[path = "recover_tests.rs"]
mod tests;

/// Closes the CDXJ index a crash left beside `warc_open` (`NAME.warc.gz.open`): the lines of
/// records inside the `kept` bytes of the recovered WARC are sorted into `NAME.cdxj`; the
/// unsorted `NAME.cdxj.open` is removed. With `kept` `None` (the WARC held nothing and was
/// deleted) the index goes too. Lines of records written after the index's last flush are
/// missing: pywb then does not find those few records, which are still in the WARC.
pub fn recover_open_index(warc_open: &Path, kept: Option<u64>) -> io::Result<()> {
    let Some(stem) = warc_open
        .to_str()
        .and_then(|s| s.strip_suffix(OPEN_SUFFIX))
        .map(str::to_string)
    else {
        return Ok(());
    };
    let open = PathBuf::from(format!("{stem}.cdxj.open"));
    let file = match File::open(&open) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    if let Some(kept) = kept {
        let final_path = PathBuf::from(format!("{stem}.cdxj"));
        let tmp = PathBuf::from(format!("{stem}.cdxj.tmp"));
        // Read a line at a time and sorted in bounded memory, whatever the index holds.
        let mut sorter = super::line_sort::LineSorter::new(&tmp);
        let mut reader = BufReader::with_capacity(READ_BUFFER_BYTES, file);
        let mut line = Vec::new();
        // Bounded by the file: each pass consumes at least one byte or ends it.
        loop {
            line.clear();
            if reader.read_until(b'\n', &mut line)? == 0 {
                break;
            }
            let text = String::from_utf8_lossy(&line);
            let num = |name: &str| -> Option<u64> {
                let key = format!("\"{name}\": \"");
                let start = text.find(&key)? + key.len();
                let end = start + text[start..].find('"')?;
                text[start..end].parse().ok()
            };
            let fits =
                matches!((num("offset"), num("length")), (Some(o), Some(l)) if o + l <= kept);
            if fits && line.ends_with(b"\n") {
                sorter.push(&line[..line.len() - 1])?;
            }
        }
        sorter.write_to_file(&tmp)?;
        fs::rename(&tmp, &final_path)?;
    }
    fs::remove_file(&open)?;
    sync_parent_dir(&open)
}

/// Closes the indexes a crash left `.cdxj.open` beside a WARC file that is no longer `.open`
/// (killed after the file was renamed, before its index was sorted): each is rebuilt from its
/// lines inside the file, or removed when the file is gone. Run after [`recover_open_warc`]
/// and [`recover_open_index`] have dealt with the `.open` WARC files. Returns how many.
pub fn recover_orphan_indexes(dir: &Path) -> io::Result<u64> {
    let mut n = 0;
    for e in fs::read_dir(dir)? {
        let path = e?.path();
        let Some(stem) = path.to_str().and_then(|s| s.strip_suffix(".cdxj.open")) else {
            continue;
        };
        let warc_open = PathBuf::from(format!("{stem}{OPEN_SUFFIX}"));
        if warc_open.try_exists()? {
            continue;
        }
        let kept = match fs::metadata(format!("{stem}.warc.gz")) {
            Ok(m) => Some(m.len()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        recover_open_index(&warc_open, kept)?;
        n += 1;
    }
    Ok(n)
}

/// What [`cut_back`] removed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Cut {
    /// WARC files begun after the mark, deleted.
    pub files_removed: u64,
    /// Bytes cut off the end of the marked WARC files, crawl.log and the journal.
    pub warc_bytes: u64,
    pub log_bytes: u64,
    pub journal_bytes: u64,
}

/// Cuts `out`'s outputs back to `last`: WARC files begun after it are deleted (with their
/// indexes), each partition's marked file, if still `.open`, is cut to its marked length (it
/// is then closed as any `.open` file is, by [`recover_open_warc`]), crawl.log is cut to its
/// marked length, and the journal to the mark (newer generations deleted). Each cut file is
/// fsynced before the next step.
pub fn cut_back(out: &Path, last: &LastMark) -> io::Result<Cut> {
    let mut cut = Cut::default();
    // Each series' last marked file: its prefix, sequence number, name and length.
    let marked: Vec<_> = last
        .mark
        .warcs
        .iter()
        .flatten()
        .filter_map(|(name, len)| Some((warc::parse_file_name(name)?, name, *len)))
        .collect();
    for e in fs::read_dir(out)? {
        let e = e?;
        let file_name = e.file_name();
        let Some((prefix, seq)) = file_name.to_str().and_then(warc::parse_file_name) else {
            continue;
        };
        if marked.iter().any(|((p, s), ..)| *p == prefix && seq > *s) {
            remove_with_index(&e.path())?;
            cut.files_removed += 1;
        }
    }
    for (_, name, len) in &marked {
        cut.warc_bytes += cut_file(&out.join(format!("{name}.open")), *len)?;
    }
    cut.log_bytes = cut_file(&out.join("crawl.log"), last.mark.log_len)?;
    sync_parent_dir(&out.join("crawl.log"))?;
    cut.journal_bytes = cut_file(&last.journal, last.end)?;
    for p in &last.newer {
        remove_if_there(p)?;
    }
    sync_parent_dir(&last.journal)?;
    Ok(cut)
}

/// Cuts `path` to `len` bytes and fsyncs it; a missing or shorter file is left alone (a
/// power cut lost its tail: the usual recovery repairs it). Returns the bytes cut.
fn cut_file(path: &Path, len: u64) -> io::Result<u64> {
    let file = match OpenOptions::new().write(true).open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let have = file.metadata()?.len();
    if have <= len {
        return Ok(0);
    }
    file.set_len(len)?;
    file.sync_all()?;
    Ok(have - len)
}

/// Removes a WARC file (`NAME.warc.gz` or `NAME.warc.gz.open`) and its CDXJ index files.
fn remove_with_index(path: &Path) -> io::Result<()> {
    remove_if_there(path)?;
    let Some(stem) = path
        .to_str()
        .map(|s| s.strip_suffix(".open").unwrap_or(s))
        .and_then(|s| s.strip_suffix(".warc.gz"))
    else {
        return Ok(());
    };
    for ext in ["cdxj", "cdxj.open", "cdxj.tmp"] {
        remove_if_there(Path::new(&format!("{stem}.{ext}")))?;
    }
    Ok(())
}

fn remove_if_there(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}
