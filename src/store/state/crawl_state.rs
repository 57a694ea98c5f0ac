//! What a crawl records in `DIR/crawl.state/` so that `spinneret resume DIR` can continue it:
//! the command line it was started with (`args`, an atomic [`checkpoint`] file), append-only
//! [`journal`]s of URL events in generations (`journal.N`), checkpoints folding the older
//! generations ([`compaction`]: `checkpoint.N`), each event loop's per-host state
//! (`hosts.pK`, atomic [`checkpoint`] files: [`save_hosts`]), and a `finished` mark once the
//! frontier emptied.
//!
//! Journal records (each one logical journal record):
//! - `A` + url + entry: a URL entered the frontier; `entry` is the crawl's own encoding of its
//!   queue entry (depth, referrer, hop), opaque here.
//! - `D` + url + optional SHA-1: the URL ended (its crawl.log line, and its WARC records when it
//!   was fetched, were handed to the OS before this record was, see `store::archive::output`).
//! - `F` + url: the URL is no longer this crawl's to end: it was delivered to the partition
//!   owning its host (a cluster node), or dropped on arrival there. Ends it like `D`, without
//!   counting it done.
//! - `M` + lengths: a [`commit_mark`]: how far crawl.log and the WARC files were written when
//!   the records before it were committed. Resume cuts the outputs (and the journal) back to
//!   the newest one.
//!
//! A URL may be admitted more than once when loops share one journal (see [`still_queued`]);
//! it is queued once.
//!
//! Replaying gives the URLs admitted and not ended, in admission order (the frontier to
//! restore), every URL admitted (the URL-seen set), and the payload digests seen, streamed
//! to a [`ReplaySink`] so that a journal of millions of URLs is not held in memory.

use std::collections::HashSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::checkpoint;
use super::commit_mark;
use super::compaction;
use super::journal::JournalReader;
use crate::codec::{get_bytes, put_bytes};
use crate::fetcher::PayloadDigest;

/// The state directory's name inside the output directory.
pub const STATE_DIR: &str = "crawl.state";
const ARGS_FILE: &str = "args";
const JOURNAL_FILE: &str = "journal";
const CHECKPOINT_FILE: &str = "checkpoint";
const FINISHED_FILE: &str = "finished";
const HOSTS_FILE: &str = "hosts";
/// Format version of the `hosts.pK` files (the crawl's encoding inside is its own).
const HOSTS_VERSION: u32 = 1;
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

fn hosts_path(out: &Path, part: usize) -> PathBuf {
    state_dir(out).join(format!("{HOSTS_FILE}.p{part}"))
}

/// Replaces event loop `part`'s per-host state (the crawl's encoding, `state`), stamped with
/// the wall-clock time `at` so that a restore can tell how long ago it was saved. Atomic: a
/// crash leaves the previous state or this one.
pub fn save_hosts(out: &Path, part: usize, at: SystemTime, state: &[u8]) -> io::Result<()> {
    let ms = at
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis() as u64;
    let mut body = Vec::with_capacity(8 + state.len());
    body.extend_from_slice(&ms.to_le_bytes());
    body.extend_from_slice(state);
    checkpoint::save(&hosts_path(out, part), HOSTS_VERSION, &body)
}

/// Event loop `part`'s last saved per-host state and how long before `now` it was saved
/// (zero if the clock went back); `None` if none was saved.
pub fn load_hosts(
    out: &Path,
    part: usize,
    now: SystemTime,
) -> Result<Option<(Duration, Vec<u8>)>, StateError> {
    let path = hosts_path(out, part);
    let damaged = |why: String| StateError::Damaged(format!("{}: {why}", path.display()));
    let Some(cp) = checkpoint::load(&path).map_err(|e| damaged(e.to_string()))? else {
        return Ok(None);
    };
    if cp.version != HOSTS_VERSION || cp.body.len() < 8 {
        return Err(damaged(format!("unknown version {}", cp.version)));
    }
    let mut body = cp.body;
    let ms = u64::from_le_bytes(body[..8].try_into().expect("8 bytes"));
    body.drain(..8);
    let saved = UNIX_EPOCH + Duration::from_millis(ms);
    Ok(Some((now.duration_since(saved).unwrap_or_default(), body)))
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

/// The state files that hold the crawl's URL events: the newest complete checkpoint (the
/// journals up to its generation, compacted) and the journals after it, oldest first.
#[derive(Debug, Default)]
pub struct StateFiles {
    pub checkpoint: Option<(u64, PathBuf)>,
    pub journals: Vec<(u64, PathBuf)>,
    /// Journals and checkpoints a newer checkpoint covers, and unfinished checkpoints: left by a
    /// crash between a checkpoint's rename and the removals after it.
    pub stale: Vec<PathBuf>,
}

impl StateFiles {
    /// The generation the next journal appends go to: the newest journal's, or a new one
    /// after the checkpoint.
    pub fn append_gen(&self) -> u64 {
        let after_cp = self.checkpoint.as_ref().map_or(0, |(g, _)| g + 1);
        self.journals
            .last()
            .map_or(after_cp, |(g, _)| *g)
            .max(after_cp)
    }
}

/// Journal generation `gen`'s path: `journal` for 0 (the name before generations), else
/// `journal.GEN`.
pub fn journal_path(out: &Path, gen: u64) -> PathBuf {
    match gen {
        0 => state_dir(out).join(JOURNAL_FILE),
        g => state_dir(out).join(format!("{JOURNAL_FILE}.{g}")),
    }
}

pub fn checkpoint_path(out: &Path, gen: u64) -> PathBuf {
    state_dir(out).join(format!("{CHECKPOINT_FILE}.{gen}"))
}

/// Lists the journals and checkpoints in `out`'s state directory.
pub fn state_files(out: &Path) -> io::Result<StateFiles> {
    let mut journals = Vec::new();
    let mut checkpoints = Vec::new();
    let mut stale = Vec::new();
    let entries = match fs::read_dir(state_dir(out)) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(StateFiles::default()),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let gen_of = |prefix: &str| -> Option<u64> {
            match name.strip_prefix(prefix)? {
                "" if prefix == JOURNAL_FILE => Some(0),
                rest => rest.strip_prefix('.')?.parse().ok(),
            }
        };
        if let Some(g) = gen_of(JOURNAL_FILE) {
            journals.push((g, entry.path()));
        } else if let Some(g) = gen_of(CHECKPOINT_FILE) {
            checkpoints.push((g, entry.path()));
        } else if name.starts_with(CHECKPOINT_FILE) {
            // An unfinished checkpoint (`.tmp`) or the key runs of its compaction.
            stale.push(entry.path());
        }
    }
    journals.sort();
    checkpoints.sort();
    let checkpoint = checkpoints.pop();
    stale.extend(checkpoints.into_iter().map(|(_, p)| p));
    if let Some((cg, _)) = &checkpoint {
        let (old, newer): (Vec<_>, Vec<_>) = journals.into_iter().partition(|(g, _)| g <= cg);
        stale.extend(old.into_iter().map(|(_, p)| p));
        journals = newer;
    }
    Ok(StateFiles {
        checkpoint,
        journals,
        stale,
    })
}

/// What replaying the journal found, besides what it handed to the [`ReplaySink`].
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
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
    /// Keys of the URL-seen set of local partition `part`, from a checkpoint: increasing
    /// within a partition, and given before any [`Self::seen`].
    fn seen_sorted(&mut self, part: u32, keys: &[u64]);
    /// A URL the crawl admitted (done or not) after the checkpoint: it is seen.
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
                Event::Admitted { .. } | Event::Mark => {}
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

/// Replays the crawl's state into `sink`: the newest checkpoint and the journals after it,
/// streamed (memory: 8 bytes per URL ended since the checkpoint, not the journal): a pass
/// over the journals for what ended since (and their digests), the checkpoint (its URL-seen
/// keys, its queue minus what ended, its digests), then the journals' admissions. (A 64-bit
/// hash collision could make one queued URL look ended: about 1 in 10^8 for a crawl of
/// 10^6 URLs; accepted.) `partitions`: local partitions sharing the journal; past one, a URL
/// admitted twice is queued once, at 8 bytes per queued URL more.
pub fn replay(
    out: &Path,
    sink: &mut dyn ReplaySink,
    partitions: u32,
) -> Result<Replayed, StateError> {
    let dedupe = partitions > 1;
    let files = state_files(out)?;
    let mut r = Replayed::default();
    let mut ends = scan_ends(&files.journals, |ev| {
        if let Event::Done {
            digest: Some(d), ..
        } = ev
        {
            sink.digest(*d);
        }
        Ok(())
    })?;
    if let Some((_, cp)) = &files.checkpoint {
        let counts = compaction::read(cp, |item| {
            match item {
                compaction::Item::Seen(part, keys) => sink.seen_sorted(part, keys),
                compaction::Item::Queued(url, entry) => {
                    if still_queued(&mut ends, url, dedupe) {
                        r.queued += 1;
                        sink.queued(url, entry);
                    }
                }
                compaction::Item::Digests(ds) => {
                    for d in ds.chunks_exact(size_of::<PayloadDigest>()) {
                        sink.digest(d.try_into().expect("a chunk is one digest"));
                    }
                }
            }
            Ok(())
        })?;
        r.admitted += counts.admitted;
        r.done += counts.done;
    }
    r.done += ends.done;
    r.admitted += admitted_after(&files.journals, &mut ends, dedupe, |url, entry, queued| {
        sink.seen(url);
        if queued {
            r.queued += 1;
            sink.queued(url, entry);
        }
        Ok(())
    })?;
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::state::journal::JournalWriter;

    #[derive(Default)]
    struct Collect {
        seen: Vec<String>,
        queued: Vec<Vec<u8>>,
        digests: usize,
    }

    impl ReplaySink for Collect {
        fn seen_sorted(&mut self, _: u32, _: &[u64]) {
            unreachable!("no checkpoint here")
        }
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
        let mut j = JournalWriter::open_append(&journal_path(out, 0)).unwrap();
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
                // b went to the partition owning its host; a was admitted again (another
                // loop forwarded it to its owner too); c was fetched.
                rec(|v| push_released(v, b)),
                rec(|v| push_admitted(v, a, b"ea")),
                rec(|v| push_done(v, c, Some(&[7; 20]))),
            ],
        );
        let mut sink = Collect::default();
        let r = replay(&dir, &mut sink, 2).unwrap();
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
