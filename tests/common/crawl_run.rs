//! The loopback test web crawled by a `spinneret` child process, and checks of what the crawl
//! stored: shared by the durable-crawl, `--loops` and cluster tests.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use spinneret::store::archive::warc::reader::read_records;
use spinneret_tools::dns_server::{DnsServer, DnsServerConfig};
use spinneret_tools::testweb::{TestWeb, WebConfig, WebServer};

pub const LIFETIME: Duration = Duration::from_secs(300);
/// Connections of the crawl: the bound on fetches in flight at a kill.
pub const MAX_CONNS: usize = 4;
/// Fetches a kill can make the crawl do again: those in flight, the writer's queue (64
/// messages) and its uncommitted batch (32). See store::archive::writer.
pub const LOST_PER_KILL: usize = MAX_CONNS + 64 + 32;
/// Each run (between kills) may take at most this long.
pub const RUN_LIMIT: Duration = Duration::from_secs(120);

/// The test web and its DNS, running for the test.
pub struct Web {
    pub web: Arc<TestWeb>,
    pub server: WebServer,
    pub dns: DnsServer,
}

pub fn start_web(hosts: usize, pages: usize) -> Web {
    start_web_of(hosts, pages, 4)
}

/// [`start_web`] with pages of about `page_kb` KB.
pub fn start_web_of(hosts: usize, pages: usize, page_kb: usize) -> Web {
    let web = Arc::new(TestWeb::generate(&WebConfig {
        hosts,
        pages,
        page_kb,
        ..WebConfig::default()
    }));
    let server = WebServer::start(web.clone(), 0, LIFETIME).unwrap();
    let dns = DnsServer::start(DnsServerConfig {
        records: web.dns_records(),
        lifetime: LIFETIME,
        ..DnsServerConfig::default()
    })
    .unwrap();
    Web { web, server, dns }
}

/// What lets a crawl reach the loopback test webs (`*.test` names on 127.0.0.0/8, our own DNS
/// rather than /etc/hosts).
pub const TEST_WEB_FLAGS: [&str; 8] = [
    "--scope",
    "any",
    "--allow-domain",
    "test",
    "--allow-net",
    "127.0.0.0/8",
    "--hosts-file",
    "none",
];

/// The crawl command for `web` into `out`; `delay_ms` spaces each host's requests so that a
/// crawl lasts long enough to be killed in the middle.
pub fn crawl_args(web: &Web, out: &Path, delay_ms: u64) -> Vec<String> {
    crawl_args_with(web, out, delay_ms, &[])
}

/// [`crawl_args`] with `extra` options (e.g. `--loops 2`) before the seeds.
pub fn crawl_args_with(web: &Web, out: &Path, delay_ms: u64, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = ["crawl"]
        .iter()
        .chain(&TEST_WEB_FLAGS)
        .chain(&["--checkpoint-secs", "1", "-q"])
        .map(|s| s.to_string())
        .collect();
    args.extend([
        "--dns-server".into(),
        web.dns.addr().to_string(),
        "--max-conns".into(),
        MAX_CONNS.to_string(),
        "--delay-ms".into(),
        delay_ms.to_string(),
        "--delay-factor".into(),
        "0".into(),
        "-o".into(),
        out.to_str().unwrap().into(),
    ]);
    args.extend(extra.iter().map(|s| s.to_string()));
    args.extend(web.web.seeds(web.server.port()));
    args
}

/// A `spinneret` child, killed when dropped.
pub struct Run(pub Child);

impl Run {
    pub fn start(args: &[String]) -> Run {
        Run(super::spinneret_command()
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn spinneret"))
    }

    pub fn signal(&self, sig: &str) {
        let ok = Command::new("kill")
            .args([sig, &self.0.id().to_string()])
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        assert!(ok, "kill {sig}");
    }

    /// What it printed on stderr (read once it has exited).
    pub fn stderr(&mut self) -> String {
        use std::io::Read;
        let mut text = String::new();
        if let Some(mut err) = self.0.stderr.take() {
            let _ = err.read_to_string(&mut text);
        }
        text
    }

    /// Waits (bounded) for the exit status.
    pub fn wait(&mut self) -> Option<i32> {
        let start = Instant::now();
        loop {
            if let Some(status) = self.0.try_wait().unwrap() {
                return status.code();
            }
            assert!(
                start.elapsed() < RUN_LIMIT,
                "spinneret ran over {RUN_LIMIT:?}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn resume_args(out: &Path) -> Vec<String> {
    vec!["resume".into(), out.to_str().unwrap().into(), "-q".into()]
}

/// A small deterministic generator for kill times (xorshift), seeded and printed.
pub struct Rng(pub u64);

impl Rng {
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Response records per target URI over every WARC file; every file must read whole.
pub fn responses(dir: &Path) -> BTreeMap<String, usize> {
    let mut n = BTreeMap::new();
    let files = super::warc_files(dir);
    for f in &files {
        let bytes = std::fs::read(f).unwrap();
        let records = read_records(&bytes).unwrap_or_else(|e| panic!("{}: {e:?}", f.display()));
        for r in records {
            if matches!(r.header("WARC-Type"), Some("response" | "revisit")) {
                let uri = r.header("WARC-Target-URI").unwrap().to_string();
                *n.entry(uri).or_insert(0) += 1;
            }
        }
    }
    if super::warcio_available() {
        super::warcio_check_all(&files);
    }
    n
}

/// Kills `run` (SIGKILL) up to `attempts` times, each `pause_ms.0` plus a random share of
/// `pause_ms.1` milliseconds after it started, resuming the crawl in `out` each time; then
/// the last resume must finish the crawl (exit 0), after at least `min_kills` kills.
/// Returns the kills.
pub fn kill_and_resume_until_done(
    mut run: Run,
    out: &Path,
    rng: &mut Rng,
    attempts: usize,
    pause_ms: (u64, u64),
    min_kills: usize,
) -> usize {
    let mut kills = 0;
    for _ in 0..attempts {
        std::thread::sleep(Duration::from_millis(pause_ms.0 + rng.below(pause_ms.1)));
        if run.0.try_wait().unwrap().is_some() {
            break;
        }
        // A run killed before it recorded its command line leaves nothing to resume (and
        // `resume` rightly says so): on a loaded machine a debug build can take longer than
        // the pause to get there.
        wait_until_resumable(out);
        run.signal("-KILL");
        run.wait();
        kills += 1;
        run = Run::start(&resume_args(out));
    }
    let status = run.wait();
    assert_eq!(
        status,
        Some(0),
        "the last resume did not finish the crawl; it said:\n{}",
        run.stderr()
    );
    assert!(
        kills >= min_kills,
        "only {kills} kills: the crawl ended too soon to test"
    );
    kills
}

/// Waits (at most 30 s) until `out` holds a recorded crawl that `resume` can take up.
fn wait_until_resumable(out: &Path) {
    use spinneret::store::state::crawl_state::{ARGS_FILE, STATE_DIR};
    let args = out.join(STATE_DIR).join(ARGS_FILE);
    let started = Instant::now();
    while !args.exists() && started.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// [`check_complete`] after `kills` SIGKILLs: a kill loses the fetches in flight and those
/// the journal had not yet committed; resume cuts the outputs back to the last commit, so
/// those are fetched again and none is archived twice. Returns the duplicates (none).
pub fn check_complete_after_kills(web: &Web, outs: &[&Path], kills: usize) -> usize {
    let dups = check_complete(web, outs);
    eprintln!("{kills} kills, {dups} pages archived twice");
    assert_eq!(dups, 0, "pages archived twice after {kills} kills");
    dups
}

/// Checks the finished crawl written to `outs` (one directory, or one per cluster node)
/// against the web: every expected page stored and logged, no file left open. Returns the
/// duplicate fetches.
pub fn check_complete(web: &Web, outs: &[&Path]) -> usize {
    let mut stored: BTreeMap<String, usize> = BTreeMap::new();
    let mut log = Vec::new();
    for out in outs {
        let open: Vec<_> = std::fs::read_dir(out)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".open"))
            .collect();
        assert!(open.is_empty(), "files left open: {open:?}");
        for (u, n) in responses(out) {
            *stored.entry(u).or_insert(0) += n;
        }
        log.extend(super::read_log(out));
    }
    let expected: BTreeSet<String> = web
        .web
        .expected_urls(web.server.port())
        .into_iter()
        .collect();
    let missing: Vec<_> = expected
        .iter()
        .filter(|u| !stored.contains_key(*u))
        .collect();
    assert!(missing.is_empty(), "pages never stored: {missing:?}");
    let extra: Vec<_> = stored
        .keys()
        .filter(|u| !u.ends_with("/robots.txt") && !expected.contains(*u))
        .collect();
    assert!(
        extra.is_empty(),
        "pages stored that the web does not link: {extra:?}"
    );
    let mut lines: BTreeMap<&str, usize> = BTreeMap::new();
    for l in &log {
        if !l.url.ends_with("/robots.txt") {
            *lines.entry(l.url.as_str()).or_insert(0) += 1;
        }
    }
    let unlogged: Vec<_> = expected
        .iter()
        .filter(|u| !lines.contains_key(u.as_str()))
        .collect();
    assert!(
        unlogged.is_empty(),
        "pages without a crawl.log line: {unlogged:?}"
    );
    let dup_records: usize = stored
        .iter()
        .filter(|(u, _)| !u.ends_with("/robots.txt"))
        .map(|(_, n)| n - 1)
        .sum();
    let dup_lines: usize = lines.values().map(|n| n - 1).sum();
    assert!(
        dup_lines <= dup_records,
        "crawl.log has {dup_lines} extra lines but only {dup_records} pages were fetched twice"
    );
    dup_records
}
