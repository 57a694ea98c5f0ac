//! The commit mark: a journal record saying how long crawl.log and each partition's open WARC
//! file were when the writer committed the journal records before it. It makes the journal
//! the one commit point of a durable crawl: on resume, [`cut_back`] cuts the outputs back to
//! the newest mark and drops the journal records after it, so a fetch the journal does not
//! vouch for leaves no trace (and is fetched again), and none is in the archive twice.
//!
//! Where marks are written ([`crate::store::archive::writer`], [`super::journal_side`]): after each commit's
//! records (the WARC and crawl.log bytes are handed to the OS first), when the writer starts,
//! and as the first record of each new journal generation, so the newest generation always
//! holds one even after compaction removed the older ones. A WARC file is closed only right
//! after a commit, so a closed file holds committed records (and its closing log record) only.
//!
//! Cutting is idempotent: a crash during [`cut_back`] leaves the same mark to cut to, and the
//! journal is cut last.

use std::fs::{self, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

use super::crawl_state::{self, StateError};
use super::journal::{sync_parent_dir, JournalReader};
use crate::codec::{get_bytes, get_varint, put_bytes, put_varint};
use crate::store::archive::warc;

/// The journal tag of a mark record.
pub(super) const TAG: u8 = b'M';

/// How far the outputs were written at a commit.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommitMark {
    /// crawl.log's length.
    pub log_len: u64,
    /// Per partition, its open WARC file's final name and length (`None`: no file open).
    pub warcs: Vec<Option<(String, u64)>>,
}

impl CommitMark {
    /// The mark as a journal record.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.push(TAG);
        put_varint(out, self.log_len);
        put_varint(out, self.warcs.len() as u64);
        for w in &self.warcs {
            match w {
                Some((name, len)) => {
                    put_bytes(out, name.as_bytes());
                    put_varint(out, *len);
                }
                None => put_bytes(out, b""),
            }
        }
    }

    /// A mark record's fields (what follows [`TAG`]).
    pub fn decode(mut input: &[u8]) -> Option<CommitMark> {
        let log_len = get_varint(&mut input)?;
        let n = get_varint(&mut input)?;
        let mut warcs = Vec::new();
        // Bounded by the record: each step consumes at least one byte.
        for _ in 0..n {
            let name = std::str::from_utf8(get_bytes(&mut input)?).ok()?;
            warcs.push(match name {
                "" => None,
                name => Some((name.to_string(), get_varint(&mut input)?)),
            });
        }
        input.is_empty().then_some(CommitMark { log_len, warcs })
    }
}

/// The newest mark of a crawl's journals.
#[derive(Debug)]
pub struct LastMark {
    pub mark: CommitMark,
    /// The journal generation holding it, and the offset just past it.
    pub journal: PathBuf,
    pub end: u64,
    /// Newer generations (begun, with no mark yet).
    pub newer: Vec<PathBuf>,
}

/// Finds the newest mark in the journals after the newest checkpoint; `None` when there is
/// none (a crawl from a version without marks: its outputs are kept as they are).
pub fn find_last(out: &Path) -> Result<Option<LastMark>, StateError> {
    let files = crawl_state::state_files(out)?;
    let mut newer = Vec::new();
    // Bounded by the journal files; each read is bounded by its file.
    for (_, path) in files.journals.iter().rev() {
        let file = fs::File::open(path)?;
        let mut reader = JournalReader::new(file)?;
        let mut last = None;
        while let Some(rec) = reader.next_record()? {
            if let Some((&TAG, fields)) = rec.split_first() {
                let mark = CommitMark::decode(fields).ok_or_else(|| {
                    StateError::Damaged(format!("{}: bad mark record", path.display()))
                })?;
                last = Some((mark, reader.valid_len()));
            }
        }
        if reader.damage().is_some_and(|d| !d.torn_tail) {
            return Err(StateError::Damaged(format!(
                "{}: corrupt with intact records after the damage",
                path.display()
            )));
        }
        if let Some((mark, end)) = last {
            newer.reverse();
            return Ok(Some(LastMark {
                mark,
                journal: path.clone(),
                end,
                newer,
            }));
        }
        newer.push(path.clone());
    }
    Ok(None)
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
/// is then closed as any `.open` file is, see [`crate::store::archive::recover`]), crawl.log is cut to its
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

#[cfg(test)]
#[path = "commit_mark_tests.rs"]
mod tests;
