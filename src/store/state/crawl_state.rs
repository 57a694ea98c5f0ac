//! What a crawl records in `DIR/crawl.state/` so that `spinneret resume DIR` can continue it:
//! the command line it was started with (`args`, an atomic [`checkpoint`] file), append-only
//! [journals](super::journal) of URL events in generations (`journal.N`, their records are
//! [`super::url_events`]), checkpoints folding the older generations
//! ([`super::compaction`]: `checkpoint.N`), each event loop's per-host state (`hosts.pK`,
//! atomic [`checkpoint`] files: [`save_hosts`]), and a `finished` mark once the frontier
//! emptied. Two more names are reserved here for the app, which writes and reads them
//! (`app::run_files`): `running` (the pid of a run under way) and `progress.json` (its
//! latest figures); nothing here reads them, and a resume needs neither.
//!
//! This module owns the directory: its files' names, the list of its journals and
//! checkpoints ([`state_files`]), the small files, and [`StateError`], why what is in it
//! cannot be read. Reading the URL events back is [`super::replay`]'s.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::checkpoint;
use crate::codec::{get_bytes, put_bytes};

/// The state directory's name inside the output directory.
pub const STATE_DIR: &str = "crawl.state";
/// The recorded command line in [`STATE_DIR`]: once it is there, the crawl can be resumed.
pub const ARGS_FILE: &str = "args";
const JOURNAL_FILE: &str = "journal";
const CHECKPOINT_FILE: &str = "checkpoint";
const FINISHED_FILE: &str = "finished";
const HOSTS_FILE: &str = "hosts";
/// The app's: a run under way, and its latest figures (`app::run_files`).
pub const RUNNING_FILE: &str = "running";
pub const PROGRESS_FILE: &str = "progress.json";
/// Format version of the `hosts.pK` files (the crawl's encoding inside is its own).
const HOSTS_VERSION: u32 = 1;
/// Format version of the `args` file.
const ARGS_VERSION: u32 = 1;

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
