//! `spinneret status DIR` and `spinneret stop DIR`: a crawl watched and steered from another
//! process, through the files in its directory alone (no network, no port): the `running`
//! mark and `progress.json` snapshot ([`super::run_files`]), the `finished` mark, the journal
//! and checkpoints ([`crate::store::state::crawl_state`]) and `stats.json`.
//!
//! Which state a directory is in: `running` when its `running` file names a live spinneret
//! process; else `finished` when the crawl's `finished` mark is there; else `stopped` (killed,
//! interrupted or stopped by a limit: `resume` continues it).

use std::io::Write as _;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::app::cli::{AddArgs, StatusArgs, StopArgs};
use crate::app::exit::{usage, ExitStatus, Failure};
use crate::app::inbox;
use crate::app::run_files::{self, json_number, RunningFile};
use crate::datetime::rfc3339;
use crate::store::archive::stats_json::JsonObject;
use crate::store::state::crawl_state;

/// How long `stop` waits for the crawl to end: a stop flushes and journals what it holds,
/// which takes seconds, not minutes.
pub const STOP_WAIT: Duration = Duration::from_secs(60);
/// How often `stop` looks whether the process is gone.
const STOP_POLL: Duration = Duration::from_millis(100);

/// What state a crawl directory is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Running(RunningFile),
    Stopped,
    Finished,
}

impl State {
    pub fn name(&self) -> &'static str {
        match self {
            State::Running(_) => "running",
            State::Stopped => "stopped",
            State::Finished => "finished",
        }
    }
}

/// Kinds of errors the text form of `status` names (the JSON has all).
const SHOWN_FAILURES: usize = 5;

/// A crawl's latest figures, from `progress.json` or `stats.json`.
#[derive(Clone, Debug, PartialEq)]
pub struct Shown {
    /// The file they come from.
    pub source: &'static str,
    pub at: SystemTime,
    /// Fetches of the latest run (pages and robots.txt).
    pub fetched: u64,
    pub pages_per_sec: Option<f64>,
    pub queued: Option<u64>,
    pub live_fetches: Option<u64>,
    pub errors: Option<u64>,
    pub bytes: Option<u64>,
    /// The errors by outcome, most frequent first.
    pub failed: Vec<(String, u64)>,
}

/// Everything `status` says.
#[derive(Clone, Debug)]
pub struct Status {
    pub state: State,
    /// A `running` file whose process is gone (a killed run).
    pub stale_pid: Option<i32>,
    pub figures: Option<Shown>,
    /// The newest checkpoint or journal file, and when it was last written.
    pub checkpoint: Option<(String, SystemTime)>,
    /// When the latest progress snapshot was taken.
    pub snapshot_at: Option<SystemTime>,
}

/// Reads the state of the crawl in `dir`; a usage error if it holds none.
pub fn read_status(dir: &Path) -> Result<Status, Failure> {
    if !crawl_state::state_dir(dir).is_dir() {
        return Err(usage(format!(
            "{} holds no crawl (no {} directory)",
            dir.display(),
            crawl_state::STATE_DIR
        )));
    }
    let mark = run_files::read_running(dir);
    let live = mark.filter(|r| run_files::pid_is_spinneret(r.pid));
    let state = match live {
        Some(r) => State::Running(r),
        None if crawl_state::is_finished(dir) => State::Finished,
        None => State::Stopped,
    };
    let snapshot = run_files::read_progress(dir);
    let progress = snapshot.as_ref().map(|s| Shown {
        source: "progress.json",
        at: s.at(),
        fetched: s.fetched,
        pages_per_sec: Some(s.pages_per_sec),
        queued: Some(s.queued),
        live_fetches: Some(s.live_fetches),
        errors: Some(s.errors),
        bytes: Some(s.bytes),
        failed: s.failed.clone(),
    });
    // A running crawl's figures are its snapshot's. A stopped or finished one's are in
    // stats.json, unless a kill left a snapshot newer than the last stats.json.
    let figures = match (state, progress, stats_figures(dir)) {
        (State::Running(_), p, _) => p,
        (_, Some(p), Some(s)) if p.at > s.at => Some(p),
        (_, p, s) => s.or(p),
    };
    Ok(Status {
        state,
        stale_pid: mark.filter(|_| live.is_none()).map(|r| r.pid),
        figures,
        checkpoint: newest_state_file(dir),
        snapshot_at: snapshot.as_ref().map(|s| s.at()),
    })
}

/// The figures of `DIR/stats.json`, if it reads; stamped with its modification time.
fn stats_figures(dir: &Path) -> Option<Shown> {
    use std::io::Read;
    let path = dir.join("stats.json");
    let at = std::fs::metadata(&path).ok()?.modified().ok()?;
    let mut text = String::new();
    std::fs::File::open(&path)
        .ok()?
        .take(1 << 20)
        .read_to_string(&mut text)
        .ok()?;
    let u = |k: &str| json_number(&text, k).map(|v| v as u64);
    Some(Shown {
        source: "stats.json",
        at,
        fetched: u("pages_fetched")? + u("robots_fetched").unwrap_or(0),
        pages_per_sec: json_number(&text, "pages_per_sec"),
        queued: u("frontier_size"),
        live_fetches: None,
        errors: u("failed_total"),
        bytes: u("bytes"),
        failed: run_files::json_counts(&text, "failed"),
    })
}

/// The newest of the crawl's checkpoint and journal files, by modification time.
fn newest_state_file(dir: &Path) -> Option<(String, SystemTime)> {
    let files = crawl_state::state_files(dir).ok()?;
    files
        .checkpoint
        .iter()
        .chain(files.journals.iter())
        .filter_map(|(_, p)| {
            let at = std::fs::metadata(p).ok()?.modified().ok()?;
            let name = p.file_name()?.to_string_lossy().into_owned();
            Some((name, at))
        })
        .max_by_key(|(_, at)| *at)
}

/// `1970-…Z (12s ago)`.
fn when(t: SystemTime, now: SystemTime) -> String {
    format!("{} ({} ago)", rfc3339(t), age_text(age(t, now)))
}

fn age(t: SystemTime, now: SystemTime) -> Duration {
    now.duration_since(t).unwrap_or_default()
}

/// `95s` → `1m35s`.
fn age_text(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "-".to_string(), |v| v.to_string())
}

impl Status {
    /// The human-readable lines.
    pub fn text(&self, dir: &Path, now: SystemTime) -> String {
        let mut out = match self.state {
            State::Running(r) => format!(
                "state: running (pid {}, since {})\n",
                r.pid,
                when(r.started(), now)
            ),
            State::Stopped => format!(
                "state: stopped (`spinneret resume {}` continues it)\n",
                dir.display()
            ),
            State::Finished => "state: finished\n".to_string(),
        };
        if let Some(pid) = self.stale_pid {
            out.push_str(&format!(
                "stale: the running file names process {pid}, which is gone (killed or crashed)\n"
            ));
        }
        match &self.figures {
            Some(f) => out.push_str(&format!(
                "fetched: {} ({} pages/s), queue {}, live {}, errors {}, {} MB [{}, {}]\n",
                f.fetched,
                opt(f.pages_per_sec.map(|r| format!("{r:.1}"))),
                opt(f.queued),
                opt(f.live_fetches),
                opt(f.errors),
                opt(f.bytes.map(|b| format!("{:.1}", b as f64 / 1e6))),
                f.source,
                when(f.at, now)
            )),
            None => out.push_str("fetched: - (no progress snapshot or stats.json yet)\n"),
        }
        if let Some(f) = self.figures.as_ref().filter(|f| !f.failed.is_empty()) {
            let shown: Vec<String> = f
                .failed
                .iter()
                .take(SHOWN_FAILURES)
                .map(|(name, n)| format!("{name} {n}"))
                .collect();
            let more = f.failed.len().saturating_sub(SHOWN_FAILURES);
            let more = if more > 0 {
                format!(", {more} more kinds")
            } else {
                String::new()
            };
            out.push_str(&format!("errors by outcome: {}{more}\n", shown.join(", ")));
        }
        match &self.checkpoint {
            Some((name, at)) => {
                out.push_str(&format!("last checkpoint: {} [{name}]\n", when(*at, now)))
            }
            None => out.push_str("last checkpoint: none\n"),
        }
        match self.snapshot_at {
            Some(at) => out.push_str(&format!("last snapshot: {}\n", when(at, now))),
            None => out.push_str("last snapshot: none\n"),
        }
        out
    }

    /// The same as one JSON object; absent figures are left out.
    pub fn json(&self, dir: &Path, now: SystemTime) -> String {
        let ms =
            |t: SystemTime| t.duration_since(UNIX_EPOCH).unwrap_or_default().as_millis() as u64;
        let mut j = JsonObject::new();
        j.string("dir", &dir.display().to_string())
            .string("state", self.state.name());
        if let State::Running(r) = self.state {
            j.uint("pid", r.pid as u64)
                .uint("started_unix_ms", r.started_unix_ms);
        }
        if let Some(pid) = self.stale_pid {
            j.uint("stale_pid", pid as u64);
        }
        if let Some(f) = &self.figures {
            j.string("figures_from", f.source)
                .uint("figures_unix_ms", ms(f.at))
                .uint("fetched", f.fetched);
            if let Some(r) = f.pages_per_sec {
                j.float("pages_per_sec", r);
            }
            for (k, v) in [
                ("queued", f.queued),
                ("live_fetches", f.live_fetches),
                ("errors", f.errors),
                ("bytes", f.bytes),
            ] {
                if let Some(v) = v {
                    j.uint(k, v);
                }
            }
            let failed: Vec<(&str, u64)> = f.failed.iter().map(|(k, n)| (k.as_str(), *n)).collect();
            j.counts("errors_by_outcome", &failed);
        }
        if let Some((name, at)) = &self.checkpoint {
            j.string("checkpoint_file", name)
                .float("checkpoint_age_secs", age(*at, now).as_secs_f64());
        }
        if let Some(at) = self.snapshot_at {
            j.uint("snapshot_unix_ms", ms(at))
                .float("snapshot_age_secs", age(at, now).as_secs_f64());
        }
        j.finish()
    }
}

/// Writes to stdout; a closed pipe (`status | head`) is no error.
fn print(text: &str) {
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

/// `spinneret status DIR [--json]`.
pub fn status(args: StatusArgs) -> Result<ExitStatus, Failure> {
    let s = read_status(&args.dir)?;
    let now = SystemTime::now();
    print(&if args.json {
        s.json(&args.dir, now)
    } else {
        s.text(&args.dir, now)
    });
    Ok(ExitStatus::Ok)
}

/// `spinneret stop DIR`: SIGINT to the crawl's process (what Ctrl-C does: it stops where a
/// `resume` continues), then a bounded wait until it is gone.
pub fn stop(args: StopArgs) -> Result<ExitStatus, Failure> {
    let dir = &args.dir;
    let s = read_status(dir)?;
    let State::Running(r) = s.state else {
        print(&format!(
            "no crawl is running in {}: it is {}\n",
            dir.display(),
            s.state.name()
        ));
        return Ok(ExitStatus::NotRunning);
    };
    // SAFETY: kill() with a positive pid (RunningFile guarantees it) signals that process.
    if unsafe { libc::kill(r.pid, libc::SIGINT) } != 0 {
        return Err(Failure::Runtime(format!(
            "cannot signal process {}: {}",
            r.pid,
            std::io::Error::last_os_error()
        )));
    }
    print(&format!(
        "sent SIGINT to process {}; waiting up to {}s for it to stop\n",
        r.pid,
        STOP_WAIT.as_secs()
    ));
    let asked = Instant::now();
    while run_files::pid_is_spinneret(r.pid) {
        if asked.elapsed() >= STOP_WAIT {
            return Err(Failure::Runtime(format!(
                "process {} is still running {}s after SIGINT (a second `stop` does not \
                 force it; `kill -9 {}` does, and `resume` recovers)",
                r.pid,
                STOP_WAIT.as_secs(),
                r.pid
            )));
        }
        std::thread::sleep(STOP_POLL);
    }
    let took = asked.elapsed().as_secs_f64();
    print(&if crawl_state::is_finished(dir) {
        format!(
            "process {} ended after {took:.1}s; the crawl had finished\n",
            r.pid
        )
    } else {
        format!(
            "process {} stopped after {took:.1}s; `spinneret resume {}` continues the crawl\n",
            r.pid,
            dir.display()
        )
    });
    Ok(ExitStatus::Ok)
}

/// Longest `-i FILE` read by `add`.
const MAX_ADD_FILE_BYTES: u64 = 16 << 20;

/// `spinneret add DIR URL… | -i FILE`: the URLs go into the crawl's inbox (`app::inbox`),
/// which a running crawl empties within a second and a stopped one on `resume`.
pub fn add(args: AddArgs) -> Result<ExitStatus, Failure> {
    use std::io::Read as _;
    let dir = &args.dir;
    let s = read_status(dir)?;
    if matches!(s.state, State::Finished) {
        return Err(usage(format!(
            "the crawl in {} has finished: nothing would take the URLs (start a new crawl)",
            dir.display()
        )));
    }
    let mut given = args.urls.clone();
    if let Some(file) = &args.file {
        let mut text = String::new();
        std::fs::File::open(file)
            .and_then(|f| f.take(MAX_ADD_FILE_BYTES).read_to_string(&mut text))
            .map_err(|e| usage(format!("{}: {e}", file.display())))?;
        given.extend(
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(String::from),
        );
    }
    let mut urls = Vec::new();
    for text in given {
        match crate::crawl::urlnorm::parse_seed(&text) {
            Ok(url) => urls.push(url.to_string()),
            Err(_) => eprintln!("spinneret: not a URL, left out: {text}"),
        }
    }
    if urls.is_empty() {
        return Err(usage("no usable URLs to add"));
    }
    inbox::deposit(dir, &urls).map_err(|e| {
        Failure::Output(format!(
            "cannot write to {}: {e}",
            inbox::inbox_dir(dir).display()
        ))
    })?;
    let when = match s.state {
        State::Running(_) => "the running crawl takes them within a second",
        _ => "`spinneret resume` takes them",
    };
    print(&format!(
        "added {} URLs to the crawl in {}: {when}\n",
        urls.len(),
        dir.display()
    ));
    Ok(ExitStatus::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_without_a_crawl_is_a_usage_error() {
        let tmp = crate::store::test_dir::TempDir::new("operate", "none");
        let e = read_status(&tmp.0).unwrap_err();
        assert_eq!(e.status(), ExitStatus::Usage);
    }

    #[test]
    fn damaged_files_read_as_missing_figures_not_a_panic() {
        let tmp = crate::store::test_dir::TempDir::new("operate", "damaged");
        let dir = tmp.0.as_path();
        let state = crawl_state::state_dir(dir);
        std::fs::create_dir_all(&state).unwrap();
        std::fs::write(state.join("running"), b"pid -1\n\xff\xfe").unwrap();
        std::fs::write(state.join("progress.json"), b"{\"unix_ms\": oops").unwrap();
        std::fs::write(dir.join("stats.json"), b"\x00\x01{{{").unwrap();
        let s = read_status(dir).unwrap();
        assert_eq!(s.state, State::Stopped);
        assert_eq!(s.stale_pid, None);
        assert!(s.figures.is_none());
        let now = SystemTime::now();
        assert!(s.text(dir, now).starts_with("state: stopped"));
        assert!(s.json(dir, now).contains("\"state\": \"stopped\""));
    }

    #[test]
    fn a_newer_snapshot_wins_over_an_older_stats_json_when_stopped() {
        let tmp = crate::store::test_dir::TempDir::new("operate", "newer");
        let dir = tmp.0.as_path();
        std::fs::create_dir_all(crawl_state::state_dir(dir)).unwrap();
        std::fs::write(
            dir.join("stats.json"),
            "{\n  \"pages_fetched\": 5,\n  \"robots_fetched\": 1,\n  \"frontier_size\": 2,\n  \
             \"failed_total\": 3,\n  \"failed\": {\"ConnectRefused\": 1, \"DnsNxDomain\": 2}\n}\n",
        )
        .unwrap();
        let s = read_status(dir).unwrap();
        let now = SystemTime::now();
        let text = s.text(dir, now);
        assert!(
            text.contains("errors by outcome: DnsNxDomain 2, ConnectRefused 1\n"),
            "{text}"
        );
        let json = s.json(dir, now);
        assert!(
            json.contains("\"errors_by_outcome\": {\"DnsNxDomain\": 2, \"ConnectRefused\": 1}"),
            "{json}"
        );
        let f = s.figures.unwrap();
        assert_eq!((f.source, f.fetched, f.queued), ("stats.json", 6, Some(2)));
        // A snapshot taken later (a kill after it) is the better word.
        let later = SystemTime::now() + Duration::from_secs(60);
        let snap = run_files::Snapshot {
            unix_ms: later.duration_since(UNIX_EPOCH).unwrap().as_millis() as u64,
            fetched: 40,
            ..run_files::Snapshot::default()
        };
        std::fs::write(run_files::progress_path(dir), snap.json()).unwrap();
        let f = read_status(dir).unwrap().figures.unwrap();
        assert_eq!((f.source, f.fetched), ("progress.json", 40));
    }
}
