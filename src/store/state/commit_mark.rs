//! The commit mark: a journal record saying how long crawl.log and each partition's open WARC
//! file were when the writer committed the journal records before it. It makes the journal
//! the one commit point of a durable crawl: on resume, the archive's
//! [`cut_back`](crate::store::archive::recover::cut_back) cuts the outputs back to the newest
//! mark ([`find_last`]) and drops the journal records after it, so a fetch the journal does
//! not vouch for leaves no trace (and is fetched again), and none is in the archive twice.
//!
//! Where marks are written (the archive's writer thread, `journal_side`): after each
//! commit's records (the WARC and crawl.log bytes are handed to the OS first), when the writer
//! starts, and as the first record of each new journal generation, so the newest generation
//! always holds one even after compaction removed the older ones. A WARC file is closed only
//! right after a commit, so a closed file holds committed records (and its closing log
//! record) only. The file names in a mark are opaque here.

use std::fs;
use std::path::{Path, PathBuf};

use super::crawl_state::{self, StateError};
use super::journal::JournalReader;
use crate::codec::{get_bytes, get_varint, put_bytes, put_varint};

/// The journal tag of a mark record.
pub(super) const TAG: u8 = b'M';

/// How far the outputs were written at a commit.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommitMark {
    /// crawl.log's length.
    pub log_len: u64,
    /// Per partition, its open WARC file's final name and length (`None`: no file open).
    pub warcs: Vec<Option<(String, u64)>>,
    /// Per partition, the lengths of that file's text companions (WET, JSONL; 0: none, see
    /// `archive::text_sides`); empty when the crawl writes none (and in older marks).
    pub texts: Vec<(u64, u64)>,
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
        // Only when there are any: a mark without them is written as before.
        if !self.texts.is_empty() {
            put_varint(out, self.texts.len() as u64);
            for &(wet, jsonl) in &self.texts {
                put_varint(out, wet);
                put_varint(out, jsonl);
            }
        }
    }

    /// A mark record's fields (what follows `TAG`).
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
        let mut texts = Vec::new();
        if !input.is_empty() {
            // Never written empty: a lone 0 is not a mark's.
            let n = get_varint(&mut input).filter(|&n| n > 0)?;
            // Bounded by the record: each step consumes at least two bytes.
            for _ in 0..n {
                texts.push((get_varint(&mut input)?, get_varint(&mut input)?));
            }
        }
        input.is_empty().then_some(CommitMark {
            log_len,
            warcs,
            texts,
        })
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

#[cfg(test)]
#[path = "commit_mark_tests.rs"]
mod tests;
