//! Durable crawls, end to end: a crawl of the loopback test web killed (SIGKILL) or stopped
//! (SIGINT) again and again, resumed each time, ends with every expected page stored once in
//! valid WARC files and crawl.log one line per URL.
//! Also: a used output directory is refused, a finished crawl resumes to nothing.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use common::crawl_run::{
    check_complete, check_complete_after_kills, crawl_args, kill_and_resume_until_done,
    resume_args, start_web, Rng, Run, LIFETIME, LOST_PER_KILL, RUN_LIMIT, TEST_WEB_FLAGS,
};
use common::temp_dir;
use spinneret_tools::dns_server::{DnsServer, DnsServerConfig};

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
    let mut run = Run::start(&crawl_args(&web, &out, 250));
    let mut kills = 0;
    let mut from_checkpoint = 0;
    let state = out.join("crawl.state");
    // At least five kills: at random moments, and two aimed at a checkpoint (each second
    // the files are fsynced, the journal moves to a new generation and the closed ones are
    // folded into a checkpoint on a thread of its own): the moment a new generation appears
    // (the fold has just begun), then the same moment once a checkpoint is in place, so
    // that the later resumes start from one however slow the machine.
    for k in 0..7 {
        if k == 1 || k == 3 {
            let before = state_names(&state);
            let aimed_at = |names: Vec<String>| {
                names
                    .iter()
                    .any(|n| n.starts_with("journal") && !before.contains(n))
                    && (k == 1 || names.iter().any(|n| is_checkpoint(n)))
            };
            let t = Instant::now();
            // Bounded: 10 s of 1 ms polls.
            while t.elapsed() < Duration::from_secs(10) && !aimed_at(state_names(&state)) {
                std::thread::sleep(Duration::from_millis(1));
            }
        } else {
            std::thread::sleep(Duration::from_millis(200 + rng.below(900)));
        }
        if run.0.try_wait().unwrap().is_some() {
            break;
        }
        eprintln!(
            "kill {k} at {:?}: {:?}",
            std::time::SystemTime::now(),
            state_names(&state)
        );
        run.signal("-KILL");
        run.wait();
        kills += 1;
        if state_names(&state).iter().any(|n| is_checkpoint(n)) {
            from_checkpoint += 1;
        }
        run = Run::start(&resume_args(&out));
    }
    let status = run.wait();
    drop(run);
    // A crawl that finished inside the last resume exits 0 or with HTTP errors (none here).
    assert_eq!(status, Some(0), "the last resume did not finish the crawl");
    assert!(
        from_checkpoint >= 2,
        "only {from_checkpoint} resumes started from a checkpoint"
    );
    assert!(
        kills >= 5,
        "only {kills} kills: the crawl ended too soon to test"
    );
    let dups = check_complete_after_kills(&web, &[&out], kills);
    // A finished crawl resumes to nothing.
    let mut again = Run::start(&resume_args(&out));
    assert_eq!(again.wait(), Some(0));
    drop(again);
    assert_eq!(
        check_complete(&web, &[&out]),
        dups,
        "resuming a finished crawl fetched again"
    );
    let _ = std::fs::remove_dir_all(out.parent().unwrap());
}

/// Killed while pages stream in at full speed, the crawl has fetches whose WARC records and
/// crawl.log lines are written but not yet committed in the journal: each resume cuts them
/// off and fetches them again, so none is archived twice.
#[test]
fn killed_while_pages_stream_in_none_is_archived_twice() {
    let web = start_web(100, 100);
    let out = temp_dir("durable-stream").join("crawl");
    let mut rng = Rng(0x5851_f42d_4c95_7f2d);
    // Small WARC files: a kill often comes just after one was closed, the moment where the
    // records of fetches not yet committed could be left in a file that looks finished.
    let mut args = crawl_args(&web, &out, 0);
    args.splice(1..1, ["--warc-max-size".to_string(), "256K".to_string()]);
    let kills = kill_and_resume_until_done(Run::start(&args), &out, &mut rng, 6, (100, 200), 2);
    check_complete_after_kills(&web, &[&out], kills);
    // On the wire, each kill costs at most the fetches in flight and one commit's worth again
    // (and each run may ask every host for robots.txt once).
    let pages = web.web.expected_urls(web.server.port()).len() as u64;
    let extra = web.server.requests() - pages;
    let bound = (kills * LOST_PER_KILL + 100 * (kills + 1)) as u64;
    eprintln!("{extra} requests beyond the {pages} pages (bound {bound})");
    assert!(
        extra <= bound,
        "{extra} requests beyond the pages after {kills} kills"
    );
    let _ = std::fs::remove_dir_all(out.parent().unwrap());
}

/// `--text --markdown`, killed and resumed again and again: every HTML response record kept
/// has its WET record and its JSON line beside its WARC file, in the same order, and none has
/// two; warcio reads the WET files.
#[test]
fn killed_with_text_and_markdown_each_page_has_its_text_once() {
    // As large as the streaming test's web: a smaller one can finish between two kills on a
    // fast machine.
    let web = start_web(100, 100);
    let out = temp_dir("durable-text").join("crawl");
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let extra = ["--text", "--markdown", "--warc-max-size", "256K"];
    let args = common::crawl_run::crawl_args_with(&web, &out, 0, &extra);
    let kills = kill_and_resume_until_done(Run::start(&args), &out, &mut rng, 5, (100, 200), 2);
    check_complete_after_kills(&web, &[&out], kills);
    let mut pages = 0;
    for warc in common::warc_files(&out) {
        let html = html_responses(&warc);
        let name = warc.file_name().unwrap().to_str().unwrap().to_string();
        let (wet, jsonl) = spinneret::store::archive::text_sides::companion_names(&name);
        if html.is_empty() {
            assert!(!out.join(&wet).exists(), "{wet} without pages");
            continue;
        }
        let records = spinneret::store::archive::warc::reader::read_records(
            &std::fs::read(out.join(&wet)).unwrap(),
        )
        .unwrap();
        assert_eq!(records[0].header("WARC-Type"), Some("warcinfo"));
        let refers: Vec<(String, String)> = records[1..]
            .iter()
            .map(|r| {
                assert_eq!(r.header("WARC-Type"), Some("conversion"));
                (
                    r.header("WARC-Refers-To").unwrap().to_string(),
                    r.header("WARC-Target-URI").unwrap().to_string(),
                )
            })
            .collect();
        let want: Vec<(String, String)> = html
            .iter()
            .map(|(id, uri, _)| (id.clone(), uri.clone()))
            .collect();
        assert_eq!(
            refers, want,
            "{wet}: one record per HTML response, in order"
        );
        let lines = std::fs::read_to_string(out.join(&jsonl)).unwrap();
        let got: Vec<(String, u64)> = lines
            .lines()
            .map(|l| {
                let field = |k: &str| {
                    let at = l.find(&format!("\"{k}\": ")).unwrap() + k.len() + 4;
                    l[at..]
                        .split([',', '}'])
                        .next()
                        .unwrap()
                        .trim_matches('"')
                        .to_string()
                };
                assert_eq!(field("warc_file"), name);
                (field("url"), field("warc_offset").parse().unwrap())
            })
            .collect();
        let want: Vec<(String, u64)> = html.iter().map(|(_, u, at)| (u.clone(), *at)).collect();
        assert_eq!(got, want, "{jsonl}: one line per HTML response, in order");
        if common::warcio_available() {
            common::warcio_check(&out.join(&wet));
        }
        pages += html.len();
    }
    // Every URL but the few the test web serves as copies of another (stored as revisits)
    // or not as HTML.
    let expected = web.web.expected_urls(web.server.port()).len();
    assert!(
        pages * 20 >= expected * 19,
        "{pages} pages with text of {expected}"
    );
    let _ = std::fs::remove_dir_all(out.parent().unwrap());
}

/// The HTML response records of a WARC file: record ID, target URI, offset.
fn html_responses(warc: &Path) -> Vec<(String, String, u64)> {
    use spinneret::store::archive::warc::stream::{StreamRecord, WarcStream};
    use spinneret::store::archive::wet::response_html;
    let mut stream = WarcStream::open(warc).unwrap();
    let (mut rec, mut html, mut out) = (StreamRecord::default(), Vec::new(), Vec::new());
    // Bounded by the file: each turn reads one record.
    while stream.next_record(1 << 24, &mut rec).unwrap() {
        if response_html(&rec, &mut html).is_some() {
            let h = |n| rec.header(n).unwrap().to_string();
            out.push((h("WARC-Record-ID"), h("WARC-Target-URI"), rec.offset));
        }
    }
    out
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
        check_complete(&web, &[&out]),
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
    // Each resume kept the robots.txt rules learnt before: one fetch per host in all.
    let mut robots: BTreeMap<&str, usize> = BTreeMap::new();
    for l in log.iter().filter(|l| l.url.ends_with("/robots.txt")) {
        *robots.entry(l.url.as_str()).or_default() += usize::from(l.status == 200);
    }
    assert_eq!(robots.len(), 8, "robots.txt lines: {robots:?}");
    assert!(
        robots.values().all(|&n| n == 1),
        "robots.txt fetched again after a resume: {robots:?}"
    );
    let _ = std::fs::remove_dir_all(out.parent().unwrap());
}

/// Whether `name` is a checkpoint a resume reads (not one still being written).
fn is_checkpoint(name: &str) -> bool {
    name.starts_with("checkpoint.") && !name.contains(".tmp")
}

/// The names in `dir` (none if it is missing).
fn state_names(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir).map_or_else(
        |_| Vec::new(),
        |d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        },
    )
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
/// 200 new URLs queues over 5 million URLs after 25,600 fetches (robots.txt of its 200 hosts
/// included), in at most 128 MB.
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
    let dns_addr = dns.addr().to_string();
    let frontier_ram = std::env::var("SPINNERET_FRONTIER_RAM").unwrap_or_else(|_| "32M".into());
    let mut args = vec!["crawl"];
    args.extend(TEST_WEB_FLAGS);
    args.extend([
        "--dns-server",
        &dns_addr,
        "--delay-ms",
        "0",
        "--delay-factor",
        "0",
        "--max-pages",
        "25600",
        // The default budget (32 MB); SPINNERET_FRONTIER_RAM=10G measures the frontier
        // all in RAM for comparison.
        "--frontier-ram",
        &frontier_ram,
        "-q",
        "-o",
        out.to_str().unwrap(),
    ]);
    let seed = server.seed();
    args.push(&seed);
    let r = common::spinneret(&args, Duration::from_secs(240));
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

/// A crawl killed after its first commit mark (written as its first WARC file opened) and
/// before the commit that held its seeds: the journal says nothing of them. Its resume starts
/// from the seeds, not at an empty, finished crawl. The state is made from a finished crawl,
/// as such a kill leaves it (the window lasts milliseconds, too short to hit by a timed kill):
/// its journal cut to the first mark, nothing else of its state kept but its arguments.
#[test]
fn a_crawl_killed_before_its_seeds_were_committed_resumes_from_its_seeds() {
    let web = start_web(4, 10);
    let out = temp_dir("durable-seeds").join("crawl");
    let mut run = Run::start(&crawl_args(&web, &out, 0));
    assert_eq!(run.wait(), Some(0), "{}", run.stderr());
    let state = out.join("crawl.state");
    let journal = std::fs::read(state.join("journal")).unwrap();
    // LevelDB's log format: masked CRC (4), length (2, LE), type (1), payload; the first
    // record's payload is a commit mark.
    let first = 7 + usize::from(u16::from_le_bytes([journal[4], journal[5]]));
    assert_eq!(journal[6], 1, "the first record is whole (FULL)");
    for entry in std::fs::read_dir(&state).unwrap() {
        let path = entry.unwrap().path();
        match path.file_name().unwrap().to_str().unwrap() {
            "args" => {}
            "journal" => std::fs::write(&path, &journal[..first]).unwrap(),
            _ if path.is_dir() => std::fs::remove_dir_all(&path).unwrap(),
            _ => std::fs::remove_file(&path).unwrap(),
        }
    }
    // The crawl database commits after the journal: a fresh one then. The first WARC file
    // was still open; none was begun after it, nor any index written.
    std::fs::remove_file(out.join("crawl.db")).unwrap();
    let warcs = common::warc_files(&out);
    for (i, warc) in warcs.iter().enumerate() {
        if i == 0 {
            let open = format!("{}.open", warc.display());
            std::fs::rename(warc, open).unwrap();
        } else {
            std::fs::remove_file(warc).unwrap();
        }
    }
    for entry in std::fs::read_dir(&out).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "cdxj") {
            std::fs::remove_file(path).unwrap();
        }
    }
    let mut resumed = Run::start(&resume_args(&out));
    assert_eq!(resumed.wait(), Some(0), "{}", resumed.stderr());
    check_complete_after_kills(&web, &[&out], 1);
    let _ = std::fs::remove_dir_all(out.parent().unwrap());
}
