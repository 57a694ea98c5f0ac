//! Durable crawls, end to end: a crawl of the loopback test web killed (SIGKILL) or stopped
//! (SIGINT) again and again, resumed each time, ends with every expected page stored once in
//! valid WARC files, crawl.log one line per URL, and duplicates only where a kill allows them.
//! Also: a used output directory is refused, a finished crawl resumes to nothing.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::temp_dir;
use spinneret::store::warc::reader::read_records;
use spinneret_tools::dns_server::{DnsServer, DnsServerConfig};
use spinneret_tools::testweb::{TestWeb, WebConfig, WebServer};

const LIFETIME: Duration = Duration::from_secs(300);
/// Connections of the crawl: the bound on fetches in flight at a kill.
const MAX_CONNS: usize = 4;
/// Messages the writer may hold uncommitted, and the writer queue: with the fetches in
/// flight, what a kill can lose (and so fetch again). See store::output.
const UNCOMMITTED: usize = 32 + 64;
/// Each run (between kills) may take at most this long.
const RUN_LIMIT: Duration = Duration::from_secs(120);

/// The test web and its DNS, running for the test.
struct Web {
    web: Arc<TestWeb>,
    server: WebServer,
    dns: DnsServer,
}

fn start_web(hosts: usize, pages: usize) -> Web {
    let web = Arc::new(TestWeb::generate(&WebConfig {
        hosts,
        pages,
        page_kb: 4,
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

/// The crawl command for `web` into `out`; `delay_ms` spaces each host's requests so that a
/// crawl lasts long enough to be killed in the middle.
fn crawl_args(web: &Web, out: &Path, delay_ms: u64) -> Vec<String> {
    let mut args: Vec<String> = [
        "crawl",
        "--scope",
        "any",
        "--allow-domain",
        "test",
        "--allow-net",
        "127.0.0.0/8",
        "--hosts-file",
        "none",
        "--checkpoint-secs",
        "1",
        "-q",
    ]
    .iter()
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
    args.extend(web.web.seeds(web.server.port()));
    args
}

/// A `spinneret` child, killed when dropped.
struct Run(Child);

impl Run {
    fn start(args: &[String]) -> Run {
        Run(Command::new(env!("CARGO_BIN_EXE_spinneret"))
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn spinneret"))
    }

    fn signal(&self, sig: &str) {
        let ok = Command::new("kill")
            .args([sig, &self.0.id().to_string()])
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        assert!(ok, "kill {sig}");
    }

    /// Waits (bounded) for the exit status.
    fn wait(&mut self) -> Option<i32> {
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

fn resume_args(out: &Path) -> Vec<String> {
    vec!["resume".into(), out.to_str().unwrap().into(), "-q".into()]
}

/// A small deterministic generator for kill times (xorshift), seeded and printed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Response records per target URI over every WARC file; every file must read whole.
fn responses(dir: &Path) -> BTreeMap<String, usize> {
    let mut n = BTreeMap::new();
    for f in common::warc_files(dir) {
        let bytes = std::fs::read(&f).unwrap();
        let records = read_records(&bytes).unwrap_or_else(|e| panic!("{}: {e:?}", f.display()));
        for r in records {
            if matches!(r.header("WARC-Type"), Some("response" | "revisit")) {
                let uri = r.header("WARC-Target-URI").unwrap().to_string();
                *n.entry(uri).or_insert(0) += 1;
            }
        }
        if common::warcio_available() {
            common::warcio_check(&f);
        }
    }
    n
}

/// Checks the finished crawl in `out` against the web; returns the duplicate fetches.
fn check_complete(web: &Web, out: &Path) -> usize {
    let open: Vec<_> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".open"))
        .collect();
    assert!(open.is_empty(), "files left open: {open:?}");
    let expected: BTreeSet<String> = web
        .web
        .expected_urls(web.server.port())
        .into_iter()
        .collect();
    let stored = responses(out);
    let missing: Vec<_> = expected
        .iter()
        .filter(|u| !stored.contains_key(*u))
        .collect();
    assert!(missing.is_empty(), "pages never stored: {missing:?}");
    let log = common::read_log(out);
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

#[test]
fn killed_again_and_again_then_resumed_nothing_is_lost() {
    let web = start_web(12, 25);
    let out = temp_dir("durable-kill").join("crawl");
    let seed = std::env::var("SPINNERET_KILL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x9e37_79b9_7f4a_7c15u64);
    eprintln!("kill seed {seed} (SPINNERET_KILL_SEED to repeat)");
    let mut rng = Rng(seed | 1);
    let mut run = Run::start(&crawl_args(&web, &out, 150));
    let mut kills = 0;
    // At least five kills: at random moments, and one aimed at a checkpoint (fsync every
    // second: just after a whole second of the run).
    for k in 0..6 {
        let wait_ms = if k == 2 {
            1_000 + rng.below(20)
        } else {
            200 + rng.below(900)
        };
        std::thread::sleep(Duration::from_millis(wait_ms));
        if run.0.try_wait().unwrap().is_some() {
            break;
        }
        run.signal("-KILL");
        run.wait();
        kills += 1;
        run = Run::start(&resume_args(&out));
    }
    let status = run.wait();
    drop(run);
    // A crawl that finished inside the last resume exits 0 or with HTTP errors (none here).
    assert_eq!(status, Some(0), "the last resume did not finish the crawl");
    assert!(
        kills >= 5,
        "only {kills} kills: the crawl ended too soon to test"
    );
    let dups = check_complete(&web, &out);
    eprintln!("{kills} kills, {dups} pages fetched twice");
    assert!(
        dups <= kills * (MAX_CONNS + UNCOMMITTED),
        "{dups} duplicates after {kills} kills"
    );
    // A finished crawl resumes to nothing.
    let mut again = Run::start(&resume_args(&out));
    assert_eq!(again.wait(), Some(0));
    drop(again);
    assert_eq!(
        check_complete(&web, &out),
        dups,
        "resuming a finished crawl fetched again"
    );
    let _ = std::fs::remove_dir_all(out.parent().unwrap());
}

#[test]
fn stopped_with_ctrl_c_and_resumed_nothing_is_fetched_twice() {
    let web = start_web(8, 20);
    let out = temp_dir("durable-int").join("crawl");
    let mut run = Run::start(&crawl_args(&web, &out, 120));
    let mut stops = 0;
    for _ in 0..4 {
        std::thread::sleep(Duration::from_millis(700));
        if run.0.try_wait().unwrap().is_some() {
            break;
        }
        run.signal("-INT");
        let code = run.wait();
        assert_eq!(code, Some(9), "a stop by Ctrl-C exits 9");
        stops += 1;
        run = Run::start(&resume_args(&out));
    }
    assert_eq!(run.wait(), Some(0));
    drop(run);
    assert!(
        stops >= 2,
        "only {stops} stops: the crawl ended too soon to test"
    );
    assert_eq!(
        check_complete(&web, &out),
        0,
        "pages fetched twice after Ctrl-C"
    );
    let log = common::read_log(&out);
    let pages = log.iter().filter(|l| !l.url.ends_with("/robots.txt"));
    assert!(
        pages
            .clone()
            .all(|l| l.outcome != spinneret::ReturnCode::Interrupted),
        "a fetch cut by Ctrl-C was logged instead of left for the resume"
    );
    let _ = std::fs::remove_dir_all(out.parent().unwrap());
}

/// Every file name in `dir` with its length.
fn listing(dir: &Path) -> BTreeMap<String, u64> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .map(|e| {
            let len = e.metadata().unwrap().len();
            (e.file_name().to_string_lossy().into_owned(), len)
        })
        .collect()
}

#[test]
fn a_directory_holding_a_crawl_is_refused_and_left_alone() {
    let web = start_web(2, 3);
    let out = temp_dir("durable-refuse").join("crawl");
    let mut first = Run::start(&crawl_args(&web, &out, 0));
    assert_eq!(first.wait(), Some(0));
    drop(first);
    let before = listing(&out);
    let again = common::spinneret(
        &crawl_args(&web, &out, 0)
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
        RUN_LIMIT,
    );
    assert_eq!(again.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(stderr.contains("spinneret resume"), "{stderr}");
    let after = listing(&out);
    assert_eq!(before, after, "the refused run changed the directory");
    // Not a crawl directory: resume says so (usage error).
    let empty = temp_dir("durable-none");
    let r = common::spinneret(&["resume", empty.to_str().unwrap()], RUN_LIMIT);
    assert_eq!(r.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(out.parent().unwrap());
    let _ = std::fs::remove_dir_all(empty);
}

/// The frontier past its RAM budget lives on disk: a crawl of a web whose every page links
/// 200 new URLs queues over 5 million URLs after 25,000 pages, in at most 128 MB.
#[test]
fn a_frontier_of_five_million_urls_stays_under_128_mb() {
    use spinneret_tools::fanout::{FanoutConfig, FanoutServer};
    const HOSTS: usize = 200;
    let server = FanoutServer::start(FanoutConfig {
        hosts: HOSTS,
        fanout: 200,
        lifetime: LIFETIME,
    })
    .unwrap();
    let dns = DnsServer::start(DnsServerConfig {
        records: FanoutServer::dns_records(HOSTS),
        lifetime: LIFETIME,
        ..DnsServerConfig::default()
    })
    .unwrap();
    let out = temp_dir("durable-5m").join("crawl");
    let started = Instant::now();
    let r = common::spinneret(
        &[
            "crawl",
            "--scope",
            "any",
            "--allow-domain",
            "test",
            "--allow-net",
            "127.0.0.0/8",
            "--hosts-file",
            "none",
            "--dns-server",
            &dns.addr().to_string(),
            "--delay-ms",
            "0",
            "--delay-factor",
            "0",
            "--max-pages",
            "25200",
            // The default budget (32 MB); SPINNERET_FRONTIER_RAM=10G measures the frontier
            // all in RAM for comparison.
            "--frontier-ram",
            &std::env::var("SPINNERET_FRONTIER_RAM").unwrap_or_else(|_| "32M".into()),
            "-q",
            "-o",
            out.to_str().unwrap(),
            &server.seed(),
        ],
        Duration::from_secs(240),
    );
    let stats = std::fs::read_to_string(out.join("stats.json")).unwrap();
    let number = |key: &str| -> u64 {
        let at = stats.find(&format!("\"{key}\": ")).expect(key) + key.len() + 4;
        stats[at..]
            .split(|c: char| !c.is_ascii_digit())
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let queued = number("frontier_size");
    let rss = number("peak_rss_bytes");
    eprintln!(
        "{} pages, {queued} URLs queued, peak RSS {:.1} MB, {:.1} s",
        number("pages_fetched"),
        rss as f64 / 1048576.0,
        started.elapsed().as_secs_f64()
    );
    assert_eq!(
        r.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
    assert!(queued >= 5_000_000, "only {queued} URLs queued");
    assert!(rss <= 128 << 20, "peak RSS {rss} bytes");
    let _ = std::fs::remove_dir_all(out.parent().unwrap());
}
