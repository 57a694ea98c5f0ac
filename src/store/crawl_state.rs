//! What a crawl records in `DIR/crawl.state/` so that `spinneret resume DIR` can continue it:
//! the command line it was started with (`args`, an atomic [`checkpoint`] file), an append-only
//! [`journal`] of URL events, and a `finished` mark once the frontier emptied.
//!
//! Journal records (each one logical journal record):
//! - `A` + url + entry: a URL entered the frontier; `entry` is the crawl's own encoding of its
//!   queue entry (depth, referrer, hop), opaque here.
//! - `D` + url + optional SHA-1: the URL ended (its crawl.log line, and its WARC records when it
//!   was fetched, were handed to the OS before this record was, see `store::output`).
//! - `F` + url: the URL is no longer this crawl's to end: it was delivered to the partition
//!   owning its host (a cluster node), or dropped on arrival there. Ends it like `D`, without
//!   counting it done.
//!
//! A URL may be admitted more than once (a partitioned crawl's sender and owner both record
//! it when loops share one journal); it is queued once.
//!
//! Replaying gives the URLs admitted and not ended, in admission order (the frontier to
//! restore), every URL admitted (the URL-seen set), and the payload digests seen, streamed
//! to a [`ReplaySink`] so that a journal of millions of URLs is not held in memory.

use std::collections::HashSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::checkpoint;
use super::journal::{JournalReader, JournalWriter};
use crate::crawl::spill::{get_bytes, put_bytes};
use crate::fetcher::PayloadDigest;

/// The state directory's name inside the output directory.
pub const STATE_DIR: &str = "crawl.state";
const ARGS_FILE: &str = "args";
const JOURNAL_FILE: &str = "journal";
const FINISHED_FILE: &str = "finished";
/// Format version of the `args` file.
const ARGS_VERSION: u32 = 1;

const ADMITTED: u8 = b'A';
const DONE: u8 = b'D';
const RELEASED: u8 = b'F';

/// Whether `out` already holds a crawl (its state, or at least its log).
pub fn holds_crawl(out: &Path) -> bool {
    out.join(STATE_DIR).exists() || out.join("crawl.log").exists()
}

/// `DIR/crawl.state`.
pub fn state_dir(out: &Path) -> PathBuf {
    out.join(STATE_DIR)
}

pub fn journal_path(out: &Path) -> PathBuf {
    state_dir(out).join(JOURNAL_FILE)
}

/// Records a new crawl's arguments (without the program name). Creates the state directory.
pub fn create(out: &Path, args: &[String]) -> io::Result<()> {
    let dir = state_dir(out);
    fs::create_dir_all(&dir)?;
    let mut body = Vec::new();
    for a in args {
        put_bytes(&mut body, a.as_bytes());
    }
    checkpoint::save(&dir.join(ARGS_FILE), ARGS_VERSION, &body)
}

/// Why a recorded crawl could not be loaded.
#[derive(Debug)]
pub enum StateError {
    /// DIR holds no `crawl.state` (not a crawl's output directory).
    NotACrawl(PathBuf),
    /// A file is damaged beyond the repairs a crash calls for.
    Damaged(String),
    Io(io::Error),
}

impl std::fmt::Display for StateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StateError::NotACrawl(d) => write!(f, "{} holds no crawl to resume", d.display()),
            StateError::Damaged(why) => write!(f, "crawl state damaged: {why}"),
            StateError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl From<io::Error> for StateError {
    fn from(e: io::Error) -> Self {
        StateError::Io(e)
    }
}

/// The arguments a crawl was started with.
pub fn load_args(out: &Path) -> Result<Vec<String>, StateError> {
    let path = state_dir(out).join(ARGS_FILE);
    let cp = checkpoint::load(&path)
        .map_err(|e| StateError::Damaged(format!("{}: {e:?}", path.display())))?
        .ok_or_else(|| StateError::NotACrawl(out.to_path_buf()))?;
    if cp.version != ARGS_VERSION {
        return Err(StateError::Damaged(format!(
            "{}: unknown version {}",
            path.display(),
            cp.version
        )));
    }
    let mut input = cp.body.as_slice();
    let mut args = Vec::new();
    while !input.is_empty() {
        let a = get_bytes(&mut input)
            .and_then(|b| std::str::from_utf8(b).ok())
            .ok_or_else(|| StateError::Damaged(format!("{}: bad argument", path.display())))?;
        args.push(a.to_string());
    }
    Ok(args)
}

pub fn mark_finished(out: &Path) -> io::Result<()> {
    checkpoint::save(&state_dir(out).join(FINISHED_FILE), 1, b"")
}

pub fn is_finished(out: &Path) -> bool {
    state_dir(out).join(FINISHED_FILE).exists()
}

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

/// Opens the journal for appending (a torn tail from a crash is cut off).
pub fn open_journal(out: &Path) -> io::Result<JournalWriter> {
    JournalWriter::open_append(&journal_path(out))
}

/// What replaying the journal found, besides what it handed to the [`ReplaySink`].
#[derive(Debug, Default)]
pub struct Replayed {
    /// URLs admitted.
    pub admitted: u64,
    /// URLs ended.
    pub done: u64,
    /// Of the admitted, those still queued (handed to [`ReplaySink::queued`]).
    pub queued: u64,
}

/// Where a replay puts what it finds (the crawl being restored).
pub trait ReplaySink {
    /// A URL the crawl admitted (done or not): it is seen.
    fn seen(&mut self, url: &str);
    /// A URL admitted and not ended, in admission order: `entry` as the crawl encoded it.
    fn queued(&mut self, url: &str, entry: &[u8]);
    /// The payload digest of a URL that ended with one.
    fn digest(&mut self, digest: PayloadDigest);
}

/// A URL's key in the replay's done set: 8 bytes per ended URL instead of its text.
fn done_key(url: &str) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault};
    BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default().hash_one(url)
}

/// Replays the journal into `sink` in two streaming passes (memory: 8 bytes per ended URL,
/// not the journal): the ended URLs first, then the admitted ones in order. A torn tail is
/// ignored: it was never acknowledged. (A 64-bit hash collision could make one queued URL
/// look ended: about 1 in 10^8 for a crawl of 10^6 URLs… per pair of 2^64; accepted.)
pub fn replay(out: &Path, sink: &mut dyn ReplaySink) -> Result<Replayed, StateError> {
    let path = journal_path(out);
    let mut r = Replayed::default();
    let mut done: HashSet<u64> = HashSet::new();
    let bad = |what: &str| StateError::Damaged(format!("{}: bad {what} record", path.display()));
    for pass in 0..2 {
        let file = match fs::File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(r),
            Err(e) => return Err(e.into()),
        };
        let mut reader = JournalReader::new(file)?;
        // Bounded by the journal's length: each step consumes one record.
        while let Some(rec) = reader.next_record()? {
            let Some((&tag, mut input)) = rec.split_first() else {
                return Err(bad("empty"));
            };
            let url = get_bytes(&mut input)
                .and_then(|b| std::str::from_utf8(b).ok())
                .ok_or_else(|| bad("URL"))?;
            match (tag, pass) {
                (DONE, 0) => {
                    r.done += 1;
                    done.insert(done_key(url));
                    if let Ok(d) = <PayloadDigest>::try_from(input) {
                        sink.digest(d);
                    }
                }
                (RELEASED, 0) => {
                    done.insert(done_key(url));
                }
                (ADMITTED, 1) => {
                    let entry = get_bytes(&mut input).ok_or_else(|| bad("admitted"))?;
                    r.admitted += 1;
                    sink.seen(url);
                    // Queued once, however often admitted: then it counts as ended here.
                    if done.insert(done_key(url)) {
                        r.queued += 1;
                        sink.queued(url, entry);
                    }
                }
                (DONE | ADMITTED | RELEASED, _) => {}
                _ => return Err(bad("unknown")),
            }
        }
        if reader.damage().is_some_and(|d| !d.torn_tail) {
            return Err(StateError::Damaged(format!(
                "{}: corrupt with intact records after the damage",
                path.display()
            )));
        }
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Collect {
        seen: Vec<String>,
        queued: Vec<Vec<u8>>,
        digests: usize,
    }

    impl ReplaySink for Collect {
        fn seen(&mut self, url: &str) {
            self.seen.push(url.to_string());
        }
        fn queued(&mut self, _url: &str, entry: &[u8]) {
            self.queued.push(entry.to_vec());
        }
        fn digest(&mut self, _: PayloadDigest) {
            self.digests += 1;
        }
    }

    fn journal(out: &Path, records: &[Vec<u8>]) {
        create(out, &["crawl".into()]).unwrap();
        let mut j = open_journal(out).unwrap();
        for r in records {
            j.append(r).unwrap();
        }
        j.sync().unwrap();
    }

    fn rec(f: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
        let mut v = Vec::new();
        f(&mut v);
        v
    }

    #[test]
    fn released_urls_end_without_counting_done_and_a_url_admitted_twice_queues_once() {
        let dir = std::env::temp_dir().join(format!("spinneret-replay-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let (a, b, c) = ("http://a.test/", "http://b.test/", "http://c.test/");
        journal(
            &dir,
            &[
                rec(|v| push_admitted(v, a, b"ea")),
                rec(|v| push_admitted(v, b, b"eb")),
                rec(|v| push_admitted(v, c, b"ec")),
                // b went to the partition owning its host; a was admitted by that partition
                // again (loops sharing a journal); c was fetched.
                rec(|v| push_released(v, b)),
                rec(|v| push_admitted(v, a, b"ea")),
                rec(|v| push_done(v, c, Some(&[7; 20]))),
            ],
        );
        let mut sink = Collect::default();
        let r = replay(&dir, &mut sink).unwrap();
        assert_eq!(
            sink.queued,
            vec![b"ea".to_vec()],
            "only a is still this crawl's"
        );
        assert_eq!(r.queued, 1);
        assert_eq!(r.done, 1, "a release is not a page done");
        assert_eq!(sink.digests, 1);
        for u in [a, b, c] {
            assert!(sink.seen.iter().any(|s| s == u), "{u} not seen");
        }
        let _ = fs::remove_dir_all(&dir);
    }
}
