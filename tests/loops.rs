//! `crawl --loops N`: one event loop per partition of the hosts, in one process. Whatever the
//! number of loops, every expected page is stored once, each host by one loop (politeness and
//! robots stay with one owner), and a crawl killed and resumed loses nothing.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use common::crawl_run::{
    check_complete, check_complete_after_kills, crawl_args_with, kill_and_resume_until_done,
    resume_args, start_web, Rng, Run,
};
use common::temp_dir;
use spinneret::store::archive::warc::reader::read_records;

/// For each host, the WARC series (`-pK-` in the file name) its pages were stored in.
fn partitions_of_hosts(dir: &Path) -> BTreeMap<String, Vec<String>> {
    let mut by_host: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for f in common::warc_files(dir) {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let part = name
            .split('-')
            .find(|p| p.starts_with('p') && p[1..].parse::<u32>().is_ok())
            .unwrap_or_else(|| panic!("{name}: no partition in the name"))
            .to_string();
        let bytes = std::fs::read(&f).unwrap();
        for r in read_records(&bytes).unwrap() {
            if r.header("WARC-Type") == Some("response") {
                let uri = r.header("WARC-Target-URI").unwrap();
                let host = url::Url::parse(uri)
                    .unwrap()
                    .host_str()
                    .unwrap()
                    .to_string();
                let parts = by_host.entry(host).or_default();
                if !parts.contains(&part) {
                    parts.push(part.clone());
                }
            }
        }
    }
    by_host
}

#[test]
fn two_loops_store_every_page_once_and_each_host_in_one_partition() {
    let web = start_web(30, 5);
    let out = temp_dir("loops-two").join("crawl");
    let mut run = Run::start(&crawl_args_with(&web, &out, 0, &["--loops", "2"]));
    assert_eq!(run.wait(), Some(0));
    drop(run);
    assert_eq!(check_complete(&web, &[&out]), 0, "pages fetched twice");
    let hosts = partitions_of_hosts(&out);
    assert_eq!(hosts.len(), 30);
    let split: Vec<_> = hosts.iter().filter(|(_, p)| p.len() > 1).collect();
    assert!(split.is_empty(), "hosts crawled by two loops: {split:?}");
    let used: std::collections::BTreeSet<_> = hosts.values().flatten().collect();
    assert_eq!(used.len(), 2, "both loops crawl: {used:?}");
    let _ = std::fs::remove_dir_all(out.parent().unwrap());
}

#[test]
fn three_loops_killed_and_resumed_lose_nothing() {
    let web = start_web(12, 20);
    let out = temp_dir("loops-kill").join("crawl");
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    // The number of loops comes back from the saved command line.
    let run = Run::start(&crawl_args_with(&web, &out, 120, &["--loops", "3"]));
    let kills = kill_and_resume_until_done(run, &out, &mut rng, 3, (300, 700), 2);
    check_complete_after_kills(&web, &[&out], kills);
    let _ = std::fs::remove_dir_all(out.parent().unwrap());
}

#[test]
fn a_page_limit_is_shared_by_the_loops_and_a_resume_completes_the_crawl() {
    let web = start_web(10, 6);
    let out = temp_dir("loops-limit").join("crawl");
    let args = crawl_args_with(&web, &out, 0, &["--loops", "2", "--max-pages", "20"]);
    let mut run = Run::start(&args);
    let code = run.wait();
    drop(run);
    // Fetches, not lines: URLs robots.txt excludes end with a line but no request, and how
    // many the loops reach before their share of the limit depends on timing.
    let fetched = common::read_log(&out)
        .iter()
        .filter(|l| {
            !l.url.ends_with("/robots.txt") && l.outcome != spinneret::ReturnCode::RobotsExcluded
        })
        .count();
    assert!(
        (1..=20).contains(&fetched),
        "--max-pages 20 over two loops fetched {fetched} pages (exit {code:?})"
    );
    // The limit is saved with the crawl: the resume lifts it.
    let mut resume = resume_args(&out);
    resume.extend(["--max-pages".into(), "100000".into()]);
    let mut again = Run::start(&resume);
    assert_eq!(again.wait(), Some(0));
    drop(again);
    assert_eq!(check_complete(&web, &[&out]), 0);
    let _ = std::fs::remove_dir_all(out.parent().unwrap());
}
