//! The URL events a crawl journals (each one logical [journal](super::journal) record):
//! - `A` + url + entry: a URL entered the frontier; `entry` is the crawl's own encoding of its
//!   queue entry (depth, referrer, hop), opaque here.
//! - `D` + url + optional SHA-1: the URL ended (its crawl.log line, and its WARC records when it
//!   was fetched, were handed to the OS before this record was, see `store::archive::output`).
//! - `F` + url: the URL is no longer this crawl's to end: it was delivered to the partition
//!   owning its host (a cluster node), or dropped on arrival there. Ends it like `D`, without
//!   counting it done.
//! - `U` + url + value: the URL's crawl database record (`crawl_db::UrlRecord`'s value) as
//!   the writer put it in the database: the journal is the database's log, so a resume
//!   puts again what a kill took from the database before its durable commit.
//! - `M` + lengths: a [`commit_mark`]: how far crawl.log and the WARC files were written when
//!   the records before it were committed. Resume cuts the outputs (and the journal) back to
//!   the newest one.
//!
//! A URL may be admitted more than once when loops share one journal (see `still_queued`);
//! it is queued once. Writing records is the writer thread's ([`push_admitted`] and its
//! siblings build them); reading them, in the passes [`super::replay`] and
//! [`super::compaction`] make, is here.

use std::collections::HashSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::commit_mark;
use super::crawl_state::StateError;
use super::journal::JournalReader;
use crate::codec::{get_bytes, put_bytes};
use crate::fetcher::PayloadDigest;

const ADMITTED: u8 = b'A';
const DONE: u8 = b'D';
const RELEASED: u8 = b'F';
const RECORD: u8 = b'U';

/// Appends an `A` record for `url` to `out` (a batch being built for the journal).
pub fn push_admitted(out: &mut Vec<u8>, url: &str, entry: &[u8]) {
    out.push(ADMITTED);
    put_bytes(out, url.as_bytes());
    put_bytes(out, entry);
}

/// Appends a `D` record.
pub fn push_done(out: &mut Vec<u8>, url: &str, digest: Option<&PayloadDigest>) {
    out.push(DONE);
    put_bytes(out, url.as_bytes());
    if let Some(d) = digest {
        out.extend_from_slice(d);
    }
}

/// Appends an `F` record.
pub fn push_released(out: &mut Vec<u8>, url: &str) {
    out.push(RELEASED);
    put_bytes(out, url.as_bytes());
}

/// Appends a `U` record: `value` is the URL's crawl database value.
pub fn push_record(out: &mut Vec<u8>, url: &str, value: &[u8]) {
    out.push(RECORD);
    put_bytes(out, url.as_bytes());
    put_bytes(out, value);
}

/// A URL's key in the replay's done set: 8 bytes per ended URL instead of its text.
fn done_key(url: &str) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault};
    BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default().hash_one(url)
}

/// One journal record, parsed.
pub(super) enum Event<'a> {
    Admitted {
        url: &'a str,
        entry: &'a [u8],
    },
    Done {
        url: &'a str,
        digest: Option<PayloadDigest>,
    },
    Released {
        url: &'a str,
    },
    Record {
        url: &'a str,
        value: &'a [u8],
    },
    /// A [`commit_mark`]: how far the outputs were written (read on resume, not replayed).
    Mark,
}

/// Calls `f` with each record of the journal at `path` (missing: none). A torn tail is
/// ignored (it was never acknowledged); damage with intact records after it is an error.
pub(super) fn for_each_event(
    path: &Path,
    mut f: impl FnMut(Event<'_>) -> Result<(), StateError>,
) -> Result<(), StateError> {
    let bad = |what: &str| StateError::Damaged(format!("{}: bad {what} record", path.display()));
    let file = match fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    let mut reader = JournalReader::new(file)?;
    // Bounded by the journal's length: each step consumes one record.
    while let Some(rec) = reader.next_record()? {
        let Some((&tag, mut input)) = rec.split_first() else {
            return Err(bad("empty"));
        };
        if tag == commit_mark::TAG {
            f(Event::Mark)?;
            continue;
        }
        let url = get_bytes(&mut input)
            .and_then(|b| std::str::from_utf8(b).ok())
            .ok_or_else(|| bad("URL"))?;
        f(match tag {
            ADMITTED => Event::Admitted {
                url,
                entry: get_bytes(&mut input).ok_or_else(|| bad("admitted"))?,
            },
            DONE => Event::Done {
                url,
                digest: <PayloadDigest>::try_from(input).ok(),
            },
            RELEASED => Event::Released { url },
            RECORD => Event::Record {
                url,
                value: get_bytes(&mut input).ok_or_else(|| bad("record"))?,
            },
            _ => return Err(bad("unknown")),
        })?;
    }
    if reader.damage().is_some_and(|d| !d.torn_tail) {
        return Err(StateError::Damaged(format!(
            "{}: corrupt with intact records after the damage",
            path.display()
        )));
    }
    Ok(())
}

/// The URLs the journals after a checkpoint ended (done or released), by their hash.
pub(super) struct Ends {
    pub(super) ended: HashSet<u64>,
    pub(super) done: u64,
}

/// The first of the two passes over the journals: what ended, and for each record `f`.
pub(super) fn scan_ends(
    journals: &[(u64, PathBuf)],
    mut f: impl FnMut(&Event<'_>) -> Result<(), StateError>,
) -> Result<Ends, StateError> {
    let mut ends = Ends {
        ended: HashSet::new(),
        done: 0,
    };
    for (_, path) in journals {
        for_each_event(path, |ev| {
            match &ev {
                Event::Done { url, .. } => {
                    ends.done += 1;
                    ends.ended.insert(done_key(url));
                }
                Event::Released { url } => {
                    ends.ended.insert(done_key(url));
                }
                Event::Admitted { .. } | Event::Record { .. } | Event::Mark => {}
            }
            f(&ev)
        })?;
    }
    Ok(ends)
}

/// Whether a URL is queued (not ended, and with `dedupe` not queued before; `dedupe` then
/// remembers it). Several local partitions (`--loops`) sharing one journal admit a URL more
/// than once: each journals the URLs it forwards, and two may forward the same one, or one
/// forward what its owner admitted itself; the owner's URL-seen set keeps one. A single
/// crawl (one loop, a cluster node) admits each URL once, so it needs no set of queued URLs.
pub(super) fn still_queued(ends: &mut Ends, url: &str, dedupe: bool) -> bool {
    let k = done_key(url);
    if dedupe {
        ends.ended.insert(k)
    } else {
        !ends.ended.contains(&k)
    }
}

/// The second pass: each URL the journals admitted, in order, with whether it is still
/// queued (see [`still_queued`]). Returns how many were admitted.
pub(super) fn admitted_after(
    journals: &[(u64, PathBuf)],
    ends: &mut Ends,
    dedupe: bool,
    mut f: impl FnMut(&str, &[u8], bool) -> Result<(), StateError>,
) -> Result<u64, StateError> {
    let mut admitted = 0;
    for (_, path) in journals {
        for_each_event(path, |ev| match ev {
            Event::Admitted { url, entry } => {
                admitted += 1;
                f(url, entry, still_queued(ends, url, dedupe))
            }
            _ => Ok(()),
        })?;
    }
    Ok(admitted)
}
