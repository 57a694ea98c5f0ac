//! Shared helpers for integration tests: an in-process crawler run with a bounded loop, and
//! the `spinneret` binary run as a child. Everything talks to loopback servers only.
#![allow(dead_code)]

pub mod crawl_run;
pub mod pywb;
pub mod static_site;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use spinneret::dns::ResolverConfig;
use spinneret::fetcher::addr_policy::AddrPolicy;
use spinneret::fetcher::{
    Crawler, CrawlerConfig, Driver, FetchDone, FetchRequest, FetchSource, Next, Turn,
};
use spinneret::ReturnCode;

/// One finished fetch, copied out of the loop's buffers.
#[derive(Clone, Debug)]
pub struct Done {
    pub url: String,
    pub outcome: ReturnCode,
    pub status: u16,
    pub content: Vec<u8>,
    pub response: Vec<u8>,
    pub peer: Option<SocketAddr>,
}

#[derive(Default)]
pub struct Collect {
    pub queue: VecDeque<FetchRequest>,
    pub done: Vec<Done>,
}

impl FetchSource for Collect {
    fn next_fetch(&mut self, _now: Instant) -> Next {
        match self.queue.pop_front() {
            Some(r) => Next::Fetch(r),
            None => Next::Done,
        }
    }

    fn fetch_done(&mut self, d: &FetchDone<'_>, _now: Instant) {
        self.done.push(Done {
            url: d.request.url.to_string(),
            outcome: d.outcome,
            status: d.status(),
            content: d.content.to_vec(),
            response: d.response.to_vec(),
            peer: d.peer,
        });
    }
}

/// A crawler configuration for loopback tests: private addresses allowed, no system DNS or
/// hosts file, short timeouts so failure tests stay quick.
pub fn config(dns: Option<SocketAddr>) -> CrawlerConfig {
    let mut c = CrawlerConfig::new(
        32,
        ResolverConfig {
            servers: dns.into_iter().collect(),
            hosts: Default::default(),
            total_timeout: Duration::from_millis(1500),
            ..ResolverConfig::default()
        },
        spinneret::fetcher::tls::client_config(None).unwrap(),
    );
    c.user_agent = "spinneret-test/1.0".into();
    c.http_timeout = Duration::from_secs(5);
    c.connect_timeout = Duration::from_secs(2);
    c.idle_timeout = Duration::from_secs(5);
    c.addr_policy = AddrPolicy::new(true, vec![]);
    c
}

/// Drives `crawler` with `src` until it finishes; panics if that takes longer than `limit`
/// (a hang is a failure, never a stuck test). `what` says what did not finish.
pub fn drive(crawler: &mut Crawler, src: &mut dyn FetchSource, limit: Duration, what: &str) {
    let mut driver = Driver::new();
    let start = Instant::now();
    while driver.turn(crawler, src).expect("turn") == Turn::Continue {
        assert!(
            start.elapsed() < limit,
            "{what}: not finished within {limit:?}"
        );
    }
}

/// Runs the crawler over `urls` until it finishes; panics if it takes longer than `limit`
/// (a hang is a failure, never a stuck test).
pub fn run_with(config: CrawlerConfig, urls: &[String], limit: Duration) -> Vec<Done> {
    run_with_stats(config, urls, limit).0
}

/// As [`run_with`], with the loop's counters at the end.
pub fn run_with_stats(
    config: CrawlerConfig,
    urls: &[String],
    limit: Duration,
) -> (Vec<Done>, spinneret::fetcher::stats::LoopStats) {
    let mut crawler = Crawler::new(config).expect("crawler");
    let mut src = Collect::default();
    for (i, u) in urls.iter().enumerate() {
        src.queue.push_back(FetchRequest::new(
            url::Url::parse(u).expect("test URL"),
            i as u64,
        ));
    }
    let mut driver = Driver::new();
    let start = Instant::now();
    while driver.turn(&mut crawler, &mut src).expect("turn") == Turn::Continue {
        assert!(
            start.elapsed() < limit,
            "crawler did not finish within {limit:?}; {} of {} done",
            src.done.len(),
            urls.len()
        );
    }
    assert_eq!(src.done.len(), urls.len(), "every URL ends exactly once");
    (src.done, crawler.stats())
}

pub fn run(config: CrawlerConfig, url: &str) -> Done {
    run_with(config, &[url.to_string()], Duration::from_secs(30)).remove(0)
}

/// A fresh empty directory under the target dir's tmp, never one another test of this process
/// was given (the tests of every file share one process).
pub fn temp_dir(name: &str) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "{name}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The finished WARC files in `dir`, in name order (so in the order they were written).
pub fn warc_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".warc.gz"))
        .collect();
    v.sort();
    v
}

/// The environment variables a proxy setting is read from: taken out of every run's
/// environment, so that the machine's own proxy never stands between a test and loopback.
pub const PROXY_VARS: [&str; 8] = [
    "http_proxy",
    "HTTP_PROXY",
    "https_proxy",
    "HTTPS_PROXY",
    "all_proxy",
    "ALL_PROXY",
    "no_proxy",
    "NO_PROXY",
];

/// `spinneret CMD` with what a test site on loopback needs (its addresses allowed, no hosts
/// file, quiet) writing into `out`; a crawl also gets scope `any` and a `delay_ms` gap per host.
pub fn loopback_args<'a>(cmd: &'a str, out: &'a Path, delay_ms: &'a str) -> Vec<&'a str> {
    let mut args = vec![
        cmd,
        "--allow-net",
        "127.0.0.0/8",
        "--hosts-file",
        "none",
        "-q",
        "-o",
        out.to_str().unwrap(),
    ];
    if cmd == "crawl" {
        args.extend([
            "--scope",
            "any",
            "--delay-ms",
            delay_ms,
            "--delay-factor",
            "0",
        ]);
    }
    args
}

/// The `spinneret` binary as a command, without the machine's proxy variables: a test's
/// loopback crawl must not go through whatever proxy the machine running it has.
pub fn spinneret_command() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_spinneret"));
    for var in PROXY_VARS {
        command.env_remove(var);
    }
    command
}

/// Runs the `spinneret` binary with a time limit (and no proxy from the environment).
pub fn spinneret(args: &[&str], limit: Duration) -> Output {
    let mut command = spinneret_command();
    let mut child = command
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn spinneret");
    let start = Instant::now();
    loop {
        if child.try_wait().expect("wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!(
                "spinneret {args:?} ran longer than {limit:?}\nstderr: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Stops a server started under `timeout` (so that it stops by itself if the test dies):
/// SIGTERM to `timeout`, which passes it on (a SIGKILL would end only `timeout` and leave the
/// server running); SIGKILL if it is still there after 5 s.
pub fn stop_under_timeout(child: &mut std::process::Child) {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(5) {
        if !matches!(child.try_wait(), Ok(None)) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Server-side politeness: sorted by arrival, each request to one server (the requests given)
/// arrives at least `min_gap` after the previous one was answered; `min_gap` zero means only
/// that they never overlap. `what` names the server in the failure message.
pub fn assert_spaced<'a>(
    reqs: impl IntoIterator<Item = &'a spinneret_tools::http_server::RequestRecord>,
    min_gap: Duration,
    what: &str,
) {
    let mut spans: Vec<(Instant, Instant)> = reqs
        .into_iter()
        .map(|r| (r.received, r.answered.expect("answered")))
        .collect();
    spans.sort();
    // The server stamps `answered` after its write returns: a server thread preempted there
    // stamps it late, after the crawler may already have read the answer and started its
    // delay (CI once saw a gap of 149.990 ms for 150). The slack covers that stamp, no more.
    let least = min_gap.saturating_sub(STAMP_SLACK);
    for w in spans.windows(2) {
        assert!(w[1].0 >= w[0].1, "overlapping requests to {what}");
        let gap = w[1].0.duration_since(w[0].1);
        assert!(gap >= least, "gap {gap:?} < {min_gap:?} on {what}");
    }
}

/// How late the test server's `answered` stamp may be (see [`assert_spaced`]).
const STAMP_SLACK: Duration = Duration::from_millis(2);

/// Reads `DIR/crawl.log`: checks the `#` header line, parses every other line.
pub fn read_log(dir: &Path) -> Vec<spinneret::store::archive::crawl_log::ParsedLine> {
    let text = std::fs::read_to_string(dir.join("crawl.log")).unwrap();
    let mut lines = text.lines();
    assert!(lines.next().unwrap().starts_with('#'), "header line first");
    lines
        .map(|l| {
            spinneret::store::archive::crawl_log::parse_line(l)
                .unwrap_or_else(|| panic!("bad log line {l:?}"))
        })
        .collect()
}

/// Whether `name`'s program runs (`run`: the program and an argument that only prints);
/// when it does not, a SKIP line says how to `install` it and what is then not checked. In
/// CI (CI=true) every such tool must be there.
pub fn program_available(name: &str, run: (&str, &str), install: &str, unchecked: &str) -> bool {
    let ok = Command::new(run.0)
        .arg(run.1)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !ok {
        assert!(
            std::env::var("CI").is_err(),
            "{name} is required in CI ({install})"
        );
        eprintln!("SKIP: {name} not installed ({install}); {unchecked} not checked");
    }
    ok
}

/// Whether `python3 -m warcio` is usable; in CI (CI=true) it must be.
pub fn warcio_available() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import warcio"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        assert!(
            std::env::var("CI").is_err(),
            "warcio is required in CI (pip install warcio)"
        );
        eprintln!(
            "SKIP: warcio not installed (pip install warcio); WARC validity not checked by warcio"
        );
    }
    ok
}

/// `warcio check -v FILE` must pass: every record's digests verify.
pub fn warcio_check(file: &Path) {
    warcio_check_all(&[file.to_path_buf()]);
}

/// [`warcio_check`] of many files in one run of warcio (one Python start, not one per file).
pub fn warcio_check_all(files: &[std::path::PathBuf]) {
    if files.is_empty() {
        return;
    }
    let check = Command::new("python3")
        .args(["-m", "warcio.cli", "check", "-v"])
        .args(files)
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "warcio check {files:?}: {}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
}
