//! Seeds added to a crawl while it runs, or while it is stopped (`spinneret add`): a file
//! each, dropped into `DIR/crawl.state/inbox/` whole (written, then renamed), picked up by
//! the running crawl's first event loop within a second.
//!
//! Nothing is lost if either side dies. A file taken is first recorded in
//! `crawl.state/added` (its URLs, for the scope of later runs: a resume rebuilds the scope
//! from the recorded seeds and these), then its URLs are added as seeds (journaled like any
//! admitted URL), then it is renamed `.taken`; `.taken` files are deleted only when the run
//! ends with its journal final. A run killed in between leaves them, and the next run takes
//! them again: the URL-seen set drops what the journal already had.

use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use crate::store::state::crawl_state;

/// How often a running crawl looks into its inbox.
pub const CHECK_EVERY: Duration = Duration::from_secs(1);
/// Files taken per look, and bytes read of one: a flood waits for the next look, and a huge
/// file is read in part (its first lines).
pub const FILES_PER_CHECK: usize = 16;
pub const MAX_FILE_BYTES: u64 = 1 << 20;

const WAITING: &str = "urls";
const TAKEN: &str = "taken";

pub fn inbox_dir(out: &Path) -> PathBuf {
    crawl_state::state_dir(out).join("inbox")
}

fn added_path(out: &Path) -> PathBuf {
    crawl_state::state_dir(out).join("added")
}

/// Drops `urls` into the inbox of the crawl in `out`, whole: a reader sees the file complete
/// or not at all. Returns its path.
pub fn deposit(out: &Path, urls: &[String]) -> io::Result<PathBuf> {
    let dir = inbox_dir(out);
    fs::create_dir_all(&dir)?;
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let name = format!("{nanos:020}-{}", std::process::id());
    let tmp = dir.join(format!("{name}.tmp"));
    let mut f = fs::File::create(&tmp)?;
    for u in urls {
        writeln!(f, "{u}")?;
    }
    f.sync_all()?;
    let path = dir.join(format!("{name}.{WAITING}"));
    fs::rename(&tmp, &path)?;
    Ok(path)
}

/// The URLs added to the crawl in `out` so far (for the scope of a resumed run).
pub fn added(out: &Path) -> Vec<String> {
    fs::read_to_string(added_path(out))
        .map(|t| lines(&t))
        .unwrap_or_default()
}

/// The usable lines of a file: trimmed, neither empty nor comments.
fn lines(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

/// A running crawl's side of the inbox.
pub struct Inbox {
    out: PathBuf,
    next_check: Instant,
    /// The run's first look also takes what an earlier run took and did not finish.
    first: bool,
}

impl Inbox {
    pub fn new(out: &Path, now: Instant) -> Inbox {
        Inbox {
            out: out.to_path_buf(),
            next_check: now,
            first: true,
        }
    }

    /// The URLs of the files waiting, when a look is due at `now` (at most
    /// [`FILES_PER_CHECK`] files); each is recorded in `added` and marked taken first.
    pub fn take(&mut self, now: Instant) -> io::Result<Vec<String>> {
        if now < self.next_check {
            return Ok(Vec::new());
        }
        self.next_check = now + CHECK_EVERY;
        let dir = inbox_dir(&self.out);
        let mut files: Vec<PathBuf> = match fs::read_dir(&dir) {
            Ok(entries) => entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    let ext = p.extension().and_then(|e| e.to_str());
                    ext == Some(WAITING) || (self.first && ext == Some(TAKEN))
                })
                .collect(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(e),
        };
        self.first = false;
        // Names begin with the time they were written: oldest first.
        files.sort();
        files.truncate(FILES_PER_CHECK);
        let mut urls = Vec::new();
        for path in files {
            let mut text = String::new();
            fs::File::open(&path)?
                .take(MAX_FILE_BYTES)
                .read_to_string(&mut text)
                .or_else(|e| match e.kind() {
                    // Not UTF-8: nothing usable in it.
                    io::ErrorKind::InvalidData => Ok(0),
                    _ => Err(e),
                })?;
            let found = lines(&text);
            let mut log = fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(added_path(&self.out))?;
            for u in &found {
                writeln!(log, "{u}")?;
            }
            log.flush()?;
            if path.extension().and_then(|e| e.to_str()) == Some(WAITING) {
                fs::rename(&path, path.with_extension(TAKEN))?;
            }
            urls.extend(found);
        }
        Ok(urls)
    }
}

/// Deletes the files the run took: its journal is final, and holds their URLs.
pub fn clean(out: &Path) {
    let Ok(entries) = fs::read_dir(inbox_dir(out)) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.extension().and_then(|x| x.to_str()) == Some(TAKEN) {
            let _ = fs::remove_file(p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::test_dir::TempDir;

    #[test]
    fn deposited_urls_are_taken_once_recorded_and_taken_again_by_the_next_run() {
        let dir = TempDir::new("inbox", "take");
        let out = dir.0.clone();
        let t0 = Instant::now();
        deposit(&out, &["http://a.test/".into(), " # no ".into()]).unwrap();
        deposit(&out, &["http://b.test/x".into(), "".into()]).unwrap();
        let mut inbox = Inbox::new(&out, t0);
        assert_eq!(
            inbox.take(t0).unwrap(),
            ["http://a.test/".to_string(), "http://b.test/x".to_string()]
        );
        assert!(inbox.take(t0).unwrap().is_empty(), "not before a second");
        assert!(
            inbox.take(t0 + CHECK_EVERY).unwrap().is_empty(),
            "taken once"
        );
        assert_eq!(added(&out).len(), 2);
        // A run that died before its end: the next one takes them again.
        let mut next = Inbox::new(&out, t0);
        assert_eq!(next.take(t0).unwrap().len(), 2);
        clean(&out);
        let mut after = Inbox::new(&out, t0);
        assert!(
            after.take(t0).unwrap().is_empty(),
            "a run's end deletes them"
        );
        assert_eq!(added(&out).len(), 4, "recorded each time taken");
    }
}
