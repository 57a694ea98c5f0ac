//! Keeping a collection fresh, end to end (README "Keeping a collection fresh"):
//! - a re-crawl of the loopback test web with `--previous` asks with the old validators, stores
//!   the 304s as server-not-modified revisits that refer to the old records, writes a WARC a
//!   fraction of the old one's size, logs every URL, and replays from the old records;
//! - a continuous crawl of a web that changes while it is crawled (`freshweb`), under a
//!   binding politeness delay, keeps the changing pages at least as fresh as a uniform
//!   round-robin revisit of every page with the same number of fetches, captures new articles within 20 s (median), and
//!   revisits pages that never change with conditional requests that get 304s; the figures
//!   come from the server's own log;
//! - a continuous crawl killed with SIGKILL and resumed keeps its schedules and validators.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

use common::crawl_run::{crawl_args_with, resume_args, start_web_of, Run};
use common::{read_log, temp_dir, warc_files};
use spinneret::crawl::revisit::Seen;
use spinneret::crawl::sink::Hop;
use spinneret::store::archive::warc::reader::read_records;
use spinneret::store::state::crawl_db::CrawlDb;
use spinneret_tools::freshweb::{analyze, FreshConfig, FreshWeb};

const SERVER_NOT_MODIFIED: &str = "http://netpreserve.org/warc/1.1/revisit/server-not-modified";

fn total_size(files: &[std::path::PathBuf]) -> u64 {
    files
        .iter()
        .map(|f| std::fs::metadata(f).unwrap().len())
        .sum()
}

/// Revisit records of the WARC files in `dir`: (target URI, profile, refers-to URI,
/// refers-to record ID present).
fn revisits(dir: &Path) -> Vec<(String, String, String, bool)> {
    let mut out = Vec::new();
    for f in warc_files(dir) {
        let bytes = std::fs::read(&f).unwrap();
        for r in read_records(&bytes).unwrap() {
            if r.header("WARC-Type") == Some("revisit") {
                out.push((
                    r.header("WARC-Target-URI").unwrap_or_default().to_string(),
                    r.header("WARC-Profile").unwrap_or_default().to_string(),
                    r.header("WARC-Refers-To-Target-URI")
                        .unwrap_or_default()
                        .to_string(),
                    r.header("WARC-Refers-To").is_some(),
                ));
            }
        }
    }
    out
}

#[test]
fn a_recrawl_with_previous_stores_304s_as_revisits_of_the_old_records() {
    // Pages of the bench's size (15 KB: about 7.4 KB of WARC each).
    let web = start_web_of(20, 25, 15);
    let root = temp_dir("fresh-recrawl");
    let (old, new) = (root.join("old"), root.join("new"));
    let mut first = Run::start(&crawl_args_with(&web, &old, 0, &[]));
    assert_eq!(first.wait(), Some(0), "first crawl: {}", first.stderr());
    // No seeds: the old crawl's seeds are the scope, its URLs the work.
    let mut args = crawl_args_with(&web, &new, 0, &["--previous", old.to_str().unwrap()]);
    let seeds = web.web.seeds(web.server.port()).len();
    args.truncate(args.len() - seeds);
    let started = Instant::now();
    let mut second = Run::start(&args);
    assert_eq!(second.wait(), Some(0), "re-crawl: {}", second.stderr());
    let secs = started.elapsed().as_secs_f64();

    let old_log = read_log(&old);
    let new_log = read_log(&new);
    let urls = |log: &[spinneret::store::archive::crawl_log::ParsedLine]| -> BTreeSet<String> {
        log.iter()
            .filter(|l| l.hop != Some(Hop::Prerequisite))
            .map(|l| l.url.clone())
            .collect()
    };
    assert_eq!(
        urls(&new_log),
        urls(&old_log),
        "every URL of the old crawl, once"
    );
    // The URLs that got an answer (robots.txt keeps some from ever being fetched).
    let pages: Vec<_> = new_log
        .iter()
        .filter(|l| l.hop != Some(Hop::Prerequisite) && l.status != 0)
        .collect();
    let not_modified = pages
        .iter()
        .filter(|l| l.status == 304 && l.revisit == Some(Seen::NotModified))
        .count();
    eprintln!(
        "re-crawl: {} URLs in {secs:.2} s, {not_modified} answered 304",
        pages.len()
    );
    assert!(
        not_modified * 100 >= pages.len() * 99,
        "{not_modified} of {} pages answered 304",
        pages.len()
    );
    // Every 304 is a server-not-modified revisit naming the old record.
    let revisit_records = revisits(&new);
    let snm: Vec<_> = revisit_records
        .iter()
        .filter(|r| r.1 == SERVER_NOT_MODIFIED)
        .collect();
    assert_eq!(snm.len(), not_modified);
    // Each names the old record by URI, date and record ID, also when the payload was first
    // stored under another URL (the old crawl's record of this one was a revisit of it).
    assert!(
        snm.iter().all(|r| !r.2.is_empty()),
        "refers to the old record"
    );
    assert!(snm.iter().all(|r| r.3), "the old record's ID");
    assert!(
        snm.iter().any(|r| r.0 != r.2),
        "the web has pages whose payload another URL stored first"
    );
    // The CDXJ index has a line for each.
    let cdxj: usize = std::fs::read_dir(&new)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "cdxj"))
        .map(|p| {
            std::fs::read_to_string(p)
                .unwrap()
                .matches("\"mime\": \"warc/revisit\"")
                .count()
        })
        .sum();
    assert!(cdxj >= not_modified, "{cdxj} revisit index lines");
    let (old_size, new_size) = (total_size(&warc_files(&old)), total_size(&warc_files(&new)));
    eprintln!(
        "WARC: {old_size} bytes before, {new_size} after ({:.1} %)",
        new_size as f64 * 100.0 / old_size as f64
    );
    assert!(new_size * 4 <= old_size, "{new_size} of {old_size} bytes");
    // The new crawl's database knows each URL's old record, for the next re-crawl.
    let db = CrawlDb::open(&new.join("crawl.db")).unwrap();
    assert_eq!(db.len().unwrap() as usize, urls(&new_log).len());

    if common::pywb::pywb_available() {
        let mut warcs = warc_files(&old);
        warcs.extend(warc_files(&new));
        let pywb = common::pywb::Pywb::start(&root.join("pywb"), &warcs);
        // A 304 replays as the page it stands for: one whose old record is its own, and one
        // whose payload the old crawl had stored under another URL (its revisit carries that
        // record's head, freshened, as well).
        for own_record in [true, false] {
            let kind: BTreeSet<&str> = snm
                .iter()
                .filter(|r| (r.0 == r.2) == own_record)
                .map(|r| r.0.as_str())
                .collect();
            let page = pages
                .iter()
                .find(|l| l.status == 304 && !l.url.ends_with('/') && kind.contains(l.url.as_str()))
                .expect("a 304 page of each kind");
            let stamp = spinneret::datetime::rfc3339(page.time)
                .replace(['-', ':', 'T', 'Z'], "")
                .chars()
                .take(14)
                .collect::<String>();
            let replayed = pywb
                .get(&format!("{stamp}id_/{}", page.url), Duration::from_secs(30))
                .unwrap();
            let original = old_log.iter().find(|l| l.url == page.url).unwrap();
            assert_eq!(replayed.status, 200, "{}: {}", page.url, replayed.head);
            assert_eq!(replayed.body.len() as u64, original.body_bytes);
        }
    }
}

/// The continuous test's web and crawl: one host under a binding politeness delay. Two
/// thirds of its pages never change, as most of the real web does not within minutes: what
/// a uniform revisit spends on them, a learned schedule spends on the pages that change.
/// (With only a quarter unchanging, a learned schedule and a uniform revisit of the changing
/// pages alone came within ±0.015 of each other in 150 s: too close for a test to tell.)
fn fresh_web(lifetime: Duration) -> FreshWeb {
    FreshWeb::start(FreshConfig {
        pages: 24,
        mean_change_secs: vec![0.0, 0.0, 10.0, 0.0, 0.0, 40.0, 0.0, 0.0, 160.0],
        article_secs: 5.0,
        lifetime,
        ..FreshConfig::default()
    })
    .unwrap()
}

fn continuous_args(web: &FreshWeb, out: &Path, max_time: u64) -> Vec<String> {
    let mut args: Vec<String> = [
        "crawl",
        "--continuous",
        "--revisit-min",
        "2",
        "--revisit-max",
        "120",
        "--delay-ms",
        "500",
        "--delay-factor",
        "0",
        "--allow-net",
        "127.0.0.0/8",
        "--checkpoint-secs",
        "1",
        "-q",
        "--max-time",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.push(max_time.to_string());
    args.extend(["-o".to_string(), out.to_str().unwrap().to_string()]);
    args.extend(web.seeds());
    args
}

#[test]
fn a_continuous_crawl_keeps_changing_pages_fresh_and_catches_new_articles() {
    let web = fresh_web(Duration::from_secs(240));
    let out = temp_dir("fresh-continuous").join("crawl");
    let mut run = Run::start(&continuous_args(&web, &out, 150));
    // --max-time ends a continuous crawl: exit 9, the work is never done. (Longer than
    // Run::wait's bound: polled here, for at most a minute past --max-time.)
    let started = Instant::now();
    let status = loop {
        if let Some(status) = run.0.try_wait().unwrap() {
            break status.code();
        }
        assert!(
            started.elapsed() < Duration::from_secs(210),
            "ran over --max-time"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(status, Some(9), "{}", run.stderr());
    let log = web.log();
    let report = analyze(web.config(), &log, None);
    for (k, v) in report.key_values() {
        eprintln!("{k}={v}");
    }
    let fresh = report.freshness.expect("changing pages fetched");
    let round_robin = report.round_robin_freshness.expect("a baseline");
    assert!(
        fresh >= round_robin,
        "freshness {fresh:.3} below round-robin's {round_robin:.3}"
    );
    let median = report
        .capture_latency_median_secs
        .expect("articles captured");
    assert!(median <= 20.0, "new articles captured after {median:.1} s");
    assert!(
        report.static_refetches > 0,
        "pages that never change revisited"
    );
    assert_eq!(
        report.static_not_modified, report.static_refetches,
        "every revisit of a page that never changes is a 304"
    );
    // The crawl's own estimate of its freshness is reported, as a share.
    let stats = std::fs::read_to_string(out.join("stats.json")).unwrap();
    let estimated = spinneret::app::run_files::json_number(&stats, "estimated_freshness")
        .unwrap_or_else(|| panic!("no estimated_freshness: {stats}"));
    assert!((0.0..=1.0).contains(&estimated), "{stats}");
    assert!(
        spinneret::app::run_files::json_number(&stats, "revisits_not_modified")
            .is_some_and(|n| n > 0.0),
        "{stats}"
    );
}

/// The wall time of a crawl.log line, in seconds since the epoch.
fn unix(t: std::time::SystemTime) -> u64 {
    t.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
}

#[test]
fn a_killed_continuous_crawl_resumes_with_its_schedules() {
    let web = fresh_web(Duration::from_secs(200));
    let out = temp_dir("fresh-kill").join("crawl");
    let run = Run::start(&continuous_args(&web, &out, 120));
    std::thread::sleep(Duration::from_secs(40));
    run.signal("-KILL");
    drop(run);
    let killed_at = web.elapsed();
    let killed_wall = unix(std::time::SystemTime::now());

    let mut args = resume_args(&out);
    args.extend(["--max-time".to_string(), "20".to_string()]);
    let mut resumed = Run::start(&args);
    assert_eq!(resumed.wait(), Some(9), "{}", resumed.stderr());

    // What the crawl had committed when it was killed (the resume cut crawl.log back to
    // that): every URL fetched, and those compared with their last fetch.
    let log = read_log(&out);
    let before: Vec<_> = log
        .iter()
        .filter(|l| unix(l.time) < killed_wall && l.hop != Some(Hop::Prerequisite))
        .collect();
    let fetched: BTreeMap<String, u64> = before
        .iter()
        .filter(|l| l.status == 200 || l.status == 304)
        .map(|l| (l.url.clone(), unix(l.time)))
        .collect();
    let compared: BTreeSet<String> = before
        .iter()
        .filter(|l| l.revisit.is_some())
        .map(|l| l.url.clone())
        .collect();
    assert!(!compared.is_empty(), "revisits before the kill");

    // Nothing learned was lost: each URL fetched before the kill has its record, at least
    // as recent as its last fetch then, with its validators and its history.
    let db = CrawlDb::open(&out.join("crawl.db")).unwrap();
    for (url, at) in &fetched {
        let r = db.get(url).unwrap().unwrap_or_else(|| panic!("{url} lost"));
        assert!(
            r.last.fetched_at >= *at,
            "{url}: record older than its fetch"
        );
        if url.contains("/p/") {
            assert!(r.last.validators.is_some(), "{url}: validators lost");
        }
    }
    for url in &compared {
        let r = db.get(url).unwrap().unwrap();
        assert!(r.last.history.visits > 0, "{url}: its history was lost");
    }
    // Revisits due before the kill were not put off: the resumed run's first conditional
    // request comes within a few seconds of its first request, not after an interval.
    let served = web.log();
    let after: Vec<_> = served.iter().filter(|e| e.t > killed_at).collect();
    let first_conditional = after
        .iter()
        .find(|e| e.conditional)
        .expect("conditional requests after the resume");
    let first_request = after.first().expect("requests after the resume");
    assert!(
        first_conditional.t - first_request.t < 5.0,
        "the first revisit came {:.1} s after the resumed run's first request",
        first_conditional.t - first_request.t
    );
}

#[test]
fn a_continuous_crawl_on_two_loops_revisits_each_partitions_hosts() {
    let web = start_web_of(8, 5, 4);
    let out = temp_dir("fresh-loops").join("crawl");
    let extra = [
        "--continuous",
        "--loops",
        "2",
        "--revisit-min",
        "2",
        "--revisit-max",
        "4",
        "--max-time",
        "20",
    ];
    let mut run = Run::start(&crawl_args_with(&web, &out, 0, &extra));
    assert_eq!(run.wait(), Some(9), "{}", run.stderr());
    let log = read_log(&out);
    // Every page was revisited, with a 304 (the test web never changes), whichever loop
    // owns its host.
    let mut revisits: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for l in log.iter().filter(|l| l.revisit == Some(Seen::NotModified)) {
        let ms = l
            .time
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        revisits.entry(l.url.clone()).or_default().push(ms);
    }
    let owners: BTreeSet<u32> = revisits
        .keys()
        .map(|u| {
            spinneret::crawl::partition_key(u, 2, &Default::default())
                .unwrap()
                .0
        })
        .collect();
    assert_eq!(owners.len(), 2, "revisits in both partitions");
    let fetched: BTreeSet<&String> = log
        .iter()
        .filter(|l| l.status == 200 && l.hop != Some(Hop::Prerequisite))
        .map(|l| &l.url)
        .collect();
    for url in &fetched {
        assert!(revisits.contains_key(*url), "{url} never revisited");
    }
    // Each URL is taken from the shared database by its owner alone, once per due time:
    // no two revisits of one URL closer than --revisit-min.
    for (url, times) in &revisits {
        for w in times.windows(2) {
            assert!(
                w[1] - w[0] >= 1_900,
                "{url} revisited {} ms apart",
                w[1] - w[0]
            );
        }
    }
}
