//! The two files a running crawl keeps in `DIR/crawl.state/` so that another process
//! (`spinneret status`, `spinneret stop`, a script) can watch and steer it without a network
//! port: `running` (its process id and start time, there while a run is under way) and
//! `progress.json` (its figures, replaced every few seconds); and the recorder of the same
//! figures over time in `DIR/timeline.tsv`, for `spinneret report`. This module owns their
//! formats, their atomic writing, their parsing (damaged input gives `None`, never a panic)
//! and the question whether the process a `running` file names is still alive.
//!
//! Both are written as a temporary file renamed over the old one, so a reader never sees half
//! of one. A killed crawl leaves `running` behind: its pid is then dead (or reused by another
//! program), which [`pid_is_spinneret`] tells apart.

use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::app::process::resident_bytes;
use crate::app::report::Figures;
use crate::store::archive::stats_json::JsonObject;
use crate::store::archive::timeline::{Row, TimelineWriter};
use crate::store::state::crawl_state;

/// `DIR/crawl.state/running`.
pub fn running_path(out: &Path) -> PathBuf {
    crawl_state::state_dir(out).join(crawl_state::RUNNING_FILE)
}

/// `DIR/crawl.state/progress.json`.
pub fn progress_path(out: &Path) -> PathBuf {
    crawl_state::state_dir(out).join(crawl_state::PROGRESS_FILE)
}

/// Writes `body` to `path` through `path.tmp` and a rename: whole or not at all.
fn write_atomic(path: &Path, body: &str) -> io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, body)?;
    std::fs::rename(&tmp, path)
}

/// Reads at most `limit` bytes of a small file: what we parse is ours and short, and a
/// damaged or replaced file must not make a reader hold gigabytes.
fn read_small(path: &Path, limit: u64) -> io::Result<String> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(path)?
        .take(limit)
        .read_to_string(&mut text)?;
    Ok(text)
}

/// The most any of the files read here can hold.
const READ_LIMIT: u64 = 1 << 20;

fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).unwrap_or_default().as_millis() as u64
}

// ---- running ----

/// What a `running` file says: which process runs the crawl, since when.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunningFile {
    /// Always positive: `kill(0 or -N, …)` would signal whole process groups.
    pub pid: i32,
    pub started_unix_ms: u64,
}

impl RunningFile {
    fn text(&self) -> String {
        format!(
            "pid {}\nstarted_unix_ms {}\n",
            self.pid, self.started_unix_ms
        )
    }

    /// Parses a `running` file's text; `None` if it is not one (no pid, a pid below 1).
    pub fn parse(text: &str) -> Option<RunningFile> {
        let (mut pid, mut started) = (None, None);
        for line in text.lines().take(16) {
            match line.split_once(' ') {
                Some(("pid", v)) => pid = v.trim().parse::<i32>().ok().filter(|&p| p > 0),
                Some(("started_unix_ms", v)) => started = v.trim().parse::<u64>().ok(),
                _ => {}
            }
        }
        Some(RunningFile {
            pid: pid?,
            started_unix_ms: started.unwrap_or(0),
        })
    }

    pub fn started(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(self.started_unix_ms)
    }
}

/// The `running` file of this process's run: written when made, removed when dropped, so
/// every way out of a run that returns (or unwinds) removes it; a kill leaves it.
pub struct RunningMark {
    path: PathBuf,
}

impl RunningMark {
    /// Says that this process runs the crawl in `out` (whose state directory exists).
    pub fn write(out: &Path) -> io::Result<RunningMark> {
        let path = running_path(out);
        let me = RunningFile {
            pid: std::process::id() as i32,
            started_unix_ms: unix_ms(SystemTime::now()),
        };
        write_atomic(&path, &me.text())?;
        Ok(RunningMark { path })
    }
}

impl Drop for RunningMark {
    fn drop(&mut self) {
        // Only our own: a stale mark is all a failed removal can leave, and `status` tells
        // a stale one from a live one.
        let ours = read_small(&self.path, READ_LIMIT)
            .ok()
            .and_then(|t| RunningFile::parse(&t))
            .is_some_and(|r| r.pid == std::process::id() as i32);
        if ours {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// What `out`'s `running` file says, if it has a readable one.
pub fn read_running(out: &Path) -> Option<RunningFile> {
    let text = read_small(&running_path(out), READ_LIMIT).ok()?;
    RunningFile::parse(&text)
}

/// Whether `pid` is a live `spinneret` process: it exists (`kill(pid, 0)`: a signal of 0
/// only checks) and its command line names spinneret, so a pid the system gave to another
/// program after a kill does not count. A zombie (exited, not yet reaped) has an empty
/// command line and does not count either.
pub fn pid_is_spinneret(pid: i32) -> bool {
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 sends nothing; pid is positive, so it names one process.
    let rc = unsafe { libc::kill(pid, 0) };
    if rc != 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EPERM) {
        return false;
    }
    match std::fs::read(format!("/proc/{pid}/cmdline")) {
        Ok(cmd) => cmd.windows(9).any(|w| w == b"spinneret"),
        Err(_) => false,
    }
}

/// The live crawl process in `out`: its `running` file, if that names a live spinneret.
pub fn live_run(out: &Path) -> Option<RunningFile> {
    read_running(out).filter(|r| pid_is_spinneret(r.pid))
}

// ---- progress.json ----

/// The progress snapshot: the whole crawl's figures (every loop's) at one moment.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    pub pid: u64,
    /// Wall-clock time of the snapshot.
    pub unix_ms: u64,
    /// Seconds since this run started.
    pub elapsed_secs: f64,
    /// Fetches finished in this run (pages and robots.txt).
    pub fetched: u64,
    /// Over the last window (the time since the previous snapshot).
    pub pages_per_sec: f64,
    pub queued: u64,
    pub live_fetches: u64,
    /// Fetches of this run that ended without a complete response.
    pub errors: u64,
    /// Response bytes received in this run.
    pub bytes: u64,
    /// The errors by outcome, most frequent first.
    pub failed: Vec<(String, u64)>,
}

impl Snapshot {
    pub fn json(&self) -> String {
        let mut j = JsonObject::new();
        j.uint("pid", self.pid)
            .uint("unix_ms", self.unix_ms)
            .float("elapsed_seconds", self.elapsed_secs)
            .uint("fetched", self.fetched)
            .float("pages_per_sec", self.pages_per_sec)
            .uint("queued", self.queued)
            .uint("live_fetches", self.live_fetches)
            .uint("errors", self.errors)
            .uint("bytes", self.bytes);
        let failed: Vec<(&str, u64)> = self.failed.iter().map(|(k, n)| (k.as_str(), *n)).collect();
        j.counts("failed", &failed);
        j.finish()
    }

    /// Parses `progress.json`; `None` if it lacks the time or the fetch count.
    pub fn parse(text: &str) -> Option<Snapshot> {
        let n = |k: &str| json_number(text, k);
        let u = |k: &str| n(k).map(|v| v as u64);
        Some(Snapshot {
            pid: u("pid").unwrap_or(0),
            unix_ms: u("unix_ms")?,
            elapsed_secs: n("elapsed_seconds").unwrap_or(0.0),
            fetched: u("fetched")?,
            pages_per_sec: n("pages_per_sec").unwrap_or(0.0),
            queued: u("queued").unwrap_or(0),
            live_fetches: u("live_fetches").unwrap_or(0),
            errors: u("errors").unwrap_or(0),
            bytes: u("bytes").unwrap_or(0),
            failed: json_counts(text, "failed"),
        })
    }

    pub fn at(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(self.unix_ms)
    }
}

/// The number under top-level `key` of a flat JSON object written by [`JsonObject`] (one
/// key per line); `None` if absent or not a finite, non-negative number.
pub fn json_number(text: &str, key: &str) -> Option<f64> {
    let mut quoted = String::with_capacity(key.len() + 3);
    let _ = write!(quoted, "\"{key}\":");
    text.lines().take(1000).find_map(|line| {
        let v = line.trim().strip_prefix(quoted.as_str())?;
        let v = v.trim().trim_end_matches(',').trim();
        v.parse::<f64>().ok().filter(|x| x.is_finite() && *x >= 0.0)
    })
}

/// The name → count object under top-level `key` of a JSON text we wrote (`"key": {"A": 1,
/// "B": 2}` on one line), most frequent first; empty if there is none. Damaged input gives
/// what reads, never a panic.
pub fn json_counts(text: &str, key: &str) -> Vec<(String, u64)> {
    let quoted = format!("\"{key}\": {{");
    let Some(body) = text.lines().take(1000).find_map(|line| {
        let v = line.trim().strip_prefix(quoted.as_str())?;
        v.split('}').next()
    }) else {
        return Vec::new();
    };
    let mut v: Vec<(String, u64)> = body
        .split(',')
        .filter_map(|pair| {
            let (name, n) = pair.split_once(':')?;
            let name = name.trim().strip_prefix('"')?.strip_suffix('"')?;
            Some((name.to_string(), n.trim().parse().ok()?))
        })
        .take(256)
        .collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v
}

/// `DIR/crawl.state/progress.json`, if it reads as a snapshot.
pub fn read_progress(out: &Path) -> Option<Snapshot> {
    Snapshot::parse(&read_small(&progress_path(out), READ_LIMIT).ok()?)
}

/// Writes the progress snapshot of a run, from the figures the progress display collects;
/// remembers the previous one for the rate. Errors are not the crawl's business: a snapshot
/// that cannot be written is skipped (the next one tries again).
pub struct SnapshotWriter {
    path: PathBuf,
    started: Instant,
    /// When and at how many fetches the previous snapshot was taken.
    last: (Instant, u64),
}

impl SnapshotWriter {
    pub fn new(out: &Path, started: Instant) -> SnapshotWriter {
        SnapshotWriter {
            path: progress_path(out),
            started,
            last: (started, 0),
        }
    }

    /// Writes the snapshot of `f` taken `now`.
    pub fn write(&mut self, now: Instant, f: &Figures) {
        let (t0, fetched0) = self.last;
        let secs = now.saturating_duration_since(t0).as_secs_f64().max(1e-3);
        let s = Snapshot {
            pid: u64::from(std::process::id()),
            unix_ms: unix_ms(SystemTime::now()),
            elapsed_secs: now.saturating_duration_since(self.started).as_secs_f64(),
            fetched: f.fetched,
            pages_per_sec: f.fetched.saturating_sub(fetched0) as f64 / secs,
            queued: f.queued,
            live_fetches: f.live,
            errors: f.errors,
            bytes: f.bytes,
            failed: f
                .failures()
                .into_iter()
                .map(|(k, n)| (k.to_string(), n))
                .collect(),
        };
        self.last = (now, f.fetched);
        let _ = write_atomic(&self.path, &s.json());
    }
}

// ---- timeline.tsv ----

/// Records the whole crawl's figures in `DIR/timeline.tsv` (the format and its bound are
/// [`crate::store::archive::timeline`]'s): a row when one is due, and the run's last. Errors
/// are not the crawl's business: a row that cannot be written is skipped.
pub struct TimelineRecorder {
    writer: Option<TimelineWriter>,
    started: Instant,
}

impl TimelineRecorder {
    /// Continues the timeline in `out` (a resumed crawl's rows follow the earlier runs').
    pub fn open(out: &Path, started: Instant) -> TimelineRecorder {
        TimelineRecorder {
            writer: TimelineWriter::open(out).ok(),
            started,
        }
    }

    /// Records `f` taken `now` if a row is due, or if `last` (the run ends).
    pub fn record(&mut self, now: Instant, f: &Figures, last: bool) {
        let Some(w) = self.writer.as_mut() else {
            return;
        };
        let elapsed_ms = now.saturating_duration_since(self.started).as_millis() as u64;
        if !last && !w.due(elapsed_ms) {
            return;
        }
        let row = Row {
            run: w.run(),
            unix_ms: unix_ms(SystemTime::now()),
            elapsed_ms,
            fetched: f.fetched,
            errors: f.errors,
            bytes: f.bytes,
            queued: f.queued,
            live: f.live,
            buffered_bytes: f.buffered,
            spooled_bytes: f.spooled,
            rss_bytes: resident_bytes().unwrap_or(0),
            revisits: f.revisits,
            not_modified: f.not_modified,
            changed: f.changed,
        };
        if w.append(row).is_err() {
            // A file that cannot be written now (a full disk) is retried at the next row.
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn running_files_parse_and_bad_ones_are_refused() {
        let r = RunningFile {
            pid: 4242,
            started_unix_ms: 1_700_000_000_123,
        };
        assert_eq!(RunningFile::parse(&r.text()), Some(r));
        for bad in [
            "",
            "pid\n",
            "pid 0\n",
            "pid -1\n",
            "pid -4242\n",
            "pid 99999999999999\n",
            "pid abc\n",
            "\u{0}\u{ff}garbage",
            "started_unix_ms 5\n",
        ] {
            assert_eq!(RunningFile::parse(bad), None, "{bad:?}");
        }
        // A damaged time is no reason to lose the pid.
        assert_eq!(
            RunningFile::parse("pid 7\nstarted_unix_ms x\n").map(|r| r.pid),
            Some(7)
        );
    }

    #[test]
    fn no_pid_below_one_is_ever_alive() {
        assert!(!pid_is_spinneret(0));
        assert!(!pid_is_spinneret(-1));
        assert!(!pid_is_spinneret(i32::MIN));
    }

    #[test]
    fn snapshots_round_trip_and_bad_ones_are_refused() {
        let s = Snapshot {
            pid: 12,
            unix_ms: 1_700_000_000_000,
            elapsed_secs: 3.5,
            fetched: 100,
            pages_per_sec: 25.25,
            queued: 7,
            live_fetches: 3,
            errors: 3,
            bytes: 123_456,
            failed: vec![("ConnectTimeout".into(), 2), ("DnsNxDomain".into(), 1)],
        };
        assert_eq!(Snapshot::parse(&s.json()), Some(s.clone()));
        // Errors by outcome: read in any order, most frequent first; damage reads as none.
        let text = "{\n  \"failed\": {\"A\": 1, \"B\": 9, \"bad\": x},\n  \"x\": 1\n}\n";
        assert_eq!(
            json_counts(text, "failed"),
            [("B".to_string(), 9), ("A".to_string(), 1)]
        );
        assert!(json_counts("\"failed\": {\"A", "failed").is_empty());
        assert!(json_counts("", "failed").is_empty());
        for bad in [
            "",
            "{",
            "{\n  \"unix_ms\": 5\n}\n",
            "{\n  \"fetched\": 5\n}\n",
            "{\n  \"unix_ms\": -5,\n  \"fetched\": 1\n}\n",
            "{\n  \"unix_ms\": NaN,\n  \"fetched\": 1\n}\n",
            "{\n  \"unix_ms\": \"5\",\n  \"fetched\": 1\n}\n",
            "\u{0}\u{ff}\"unix_ms\"",
        ] {
            assert_eq!(Snapshot::parse(bad), None, "{bad:?}");
        }
        // Missing figures read as zero, not as a refusal.
        let bare = Snapshot::parse("{\n  \"unix_ms\": 5,\n  \"fetched\": 1\n}\n").unwrap();
        assert_eq!((bare.unix_ms, bare.fetched, bare.queued), (5, 1, 0));
    }

    #[test]
    fn numbers_are_read_from_stats_json_lines_only_at_the_top_level() {
        let text =
            "{\n  \"urls\": 3,\n  \"failed\": {\"urls\": 9},\n  \"pages_per_sec\": 1.500\n}\n";
        assert_eq!(json_number(text, "urls"), Some(3.0));
        assert_eq!(json_number(text, "pages_per_sec"), Some(1.5));
        assert_eq!(json_number(text, "missing"), None);
    }

    #[test]
    fn the_mark_is_removed_when_dropped_and_a_snapshot_is_written_whole() {
        let tmp = crate::store::test_dir::TempDir::new("run-files", "mark");
        let out = tmp.0.as_path();
        std::fs::create_dir_all(crawl_state::state_dir(out)).unwrap();
        let mark = RunningMark::write(out).unwrap();
        let r = read_running(out).unwrap();
        assert_eq!(r.pid, std::process::id() as i32);
        assert!(
            live_run(out).is_some(),
            "the test binary is named spinneret-…"
        );
        drop(mark);
        assert!(!running_path(out).exists());

        let started = Instant::now();
        let mut w = SnapshotWriter::new(out, started);
        let f = Figures {
            fetched: 10,
            queued: 4,
            ..Figures::default()
        };
        w.write(started + Duration::from_secs(2), &f);
        let s = read_progress(out).unwrap();
        assert_eq!((s.fetched, s.queued), (10, 4));
        assert!((s.pages_per_sec - 5.0).abs() < 1e-6);
        let names: Vec<_> = std::fs::read_dir(crawl_state::state_dir(out))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["progress.json"], "no temporary file left");
    }
}
