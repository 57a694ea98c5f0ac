//! `spinneret bench --fetch`: the `fetch` command ([`crate::app::fetch::run_fetch`], given a
//! command line as a user would type it) over every URL the test web's crawl must fetch, in a
//! seeded shuffled order, so consecutive URLs name different hosts as a real list does (a
//! seed list, another crawler's output). Checked and printed as the crawl bench is: the URL
//! set fetched exactly once, and the connections opened per host. The figures come from the
//! `stats.json` the command writes, as a user would read them.

use std::ffi::OsString;
use std::path::Path;
use std::time::Instant;

use super::test_web::WebChild;
use super::{hosts_of, outcome, print_verdict, title, verify, BenchArgs, Conns};
use clap::Parser;

use crate::app::cli::{Cli, Command};
use crate::app::process::process_usage;

/// The shuffle's seed: the same list, so the same figures, on every run.
const SHUFFLE_SEED: u64 = 0x5eed_f37c;

/// `urls` in a seeded random order (Fisher–Yates over splitmix64).
fn shuffled(urls: &[String], seed: u64) -> Vec<String> {
    let mut state = seed;
    let mut next = move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let mut v = urls.to_vec();
    for i in (1..v.len()).rev() {
        let j = (next() % (i as u64 + 1)) as usize;
        v.swap(i, j);
    }
    v
}

/// A top-level unsigned figure of a `stats.json` (`  "key": N`, one per line, nested objects
/// inline, as `store::archive::stats_json` writes it).
fn stats_uint(json: &str, key: &str) -> Option<u64> {
    let line_start = format!("  \"{key}\": ");
    json.lines()
        .find_map(|l| l.strip_prefix(&line_start))
        .and_then(|v| v.trim_end_matches(',').parse().ok())
}

pub(super) fn run(
    args: &BenchArgs,
    web: WebChild,
    expected: &[String],
    scratch: &Path,
) -> Result<(), Box<dyn std::error::Error>> {
    let list = scratch.join("fetch-list.txt");
    std::fs::write(&list, shuffled(expected, SHUFFLE_SEED).join("\n") + "\n")?;
    let out = scratch.join("out");
    let _ = std::fs::remove_dir_all(&out);
    let mut argv: Vec<OsString> = ["spinneret", "fetch", "--quiet", "--hosts-file", "none"]
        .map(OsString::from)
        .into();
    for (flag, value) in [
        ("--input-file", list.into_os_string()),
        ("--out", out.clone().into_os_string()),
        ("--dns-server", web.dns.to_string().into()),
        ("--allow-net", "127.0.0.0/8".into()),
        ("--max-conns", args.max_conns.to_string().into()),
        // The web is ours: no politeness delay, as for the crawl bench.
        ("--delay-ms", "0".into()),
        ("--warc-gzip-level", args.gzip.level.to_string().into()),
    ] {
        argv.push(flag.into());
        argv.push(value);
    }
    if args.warc_block_digest {
        argv.push("--warc-block-digest".into());
    }
    let Command::Fetch(fetch_args) = Cli::try_parse_from(argv)?.command else {
        return Err("bench: the fetch command line did not parse as `fetch`".into());
    };

    let web_cpu_before = web.cpu();
    let (cpu_before, _) = process_usage();
    let started = Instant::now();
    // The exit status says what crawl.log says in detail; the verdict reads crawl.log.
    let _status = crate::app::fetch::run_fetch(fetch_args)?;
    let elapsed = started.elapsed();
    let (cpu_after, peak_rss) = process_usage();
    let web_cpu = match (web_cpu_before, web.cpu()) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a)),
        _ => None,
    };
    drop(web);

    let verdict = verify(&out.join("crawl.log"), expected)?;
    let stats = std::fs::read_to_string(out.join("stats.json"))?;
    let figure = |key: &str| {
        stats_uint(&stats, key).ok_or_else(|| format!("bench: stats.json has no {key}"))
    };
    let conns = Conns {
        opened: figure("connections_opened")?,
        reused: figure("connections_reused")?,
        stale_retries: figure("stale_connection_retries")?,
        hosts: hosts_of(expected),
    };
    let fetches = figure("urls")?.max(1);
    let cpu = cpu_after.saturating_sub(cpu_before);
    let secs = elapsed.as_secs_f64().max(1e-9);
    let per_fetch = |n: u64| n as f64 / fetches as f64;
    println!("{}", title(args));
    println!("  URLs           {fetches} in {secs:.2} s");
    println!("  URLs/s         {:.0}", fetches as f64 / secs);
    println!(
        "  MB/s           {:.1} received",
        figure("bytes")? as f64 / secs / 1e6
    );
    println!(
        "  CPU/URL        {:.3} ms (user + sys, crawler process)",
        cpu.as_secs_f64() * 1e3 / fetches as f64
    );
    if let Some(w) = web_cpu {
        println!(
            "  test web CPU   {:.3} ms/URL (child process; {:.0}% of one core)",
            w.as_secs_f64() * 1e3 / fetches as f64,
            w.as_secs_f64() / secs * 100.0
        );
    }
    println!(
        "  peak RSS       {:.1} MB",
        peak_rss as f64 / (1 << 20) as f64
    );
    println!(
        "  socket calls   {:.2} reads, {:.2} writes, {:.3} interest changes per fetch",
        per_fetch(figure("socket_reads")?),
        per_fetch(figure("socket_writes")?),
        per_fetch(figure("socket_reregistrations")?),
    );
    conns.print();
    print_verdict(&verdict, &conns);
    outcome("fetch", &verdict, &conns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shuffle_is_a_seeded_permutation() {
        let urls: Vec<String> = (0..200).map(|i| format!("http://h{i}.test/")).collect();
        let a = shuffled(&urls, SHUFFLE_SEED);
        assert_eq!(a, shuffled(&urls, SHUFFLE_SEED));
        assert_ne!(a, urls);
        assert_ne!(a, shuffled(&urls, SHUFFLE_SEED + 1));
        let mut sorted = a.clone();
        sorted.sort();
        let mut want = urls.clone();
        want.sort();
        assert_eq!(sorted, want);
    }

    #[test]
    fn stats_figures_are_read_as_written() {
        let mut j = crate::store::archive::stats_json::JsonObject::new();
        j.uint("urls", 12)
            .counts("outcomes", &[("Success", 11)])
            .uint("connections_opened", 7)
            .uint("connections_reused", 5);
        let text = j.finish();
        assert_eq!(stats_uint(&text, "urls"), Some(12));
        assert_eq!(stats_uint(&text, "connections_opened"), Some(7));
        assert_eq!(stats_uint(&text, "connections_reused"), Some(5));
        assert_eq!(stats_uint(&text, "Success"), None, "nested, not top-level");
        assert_eq!(stats_uint(&text, "connections"), None);
    }
}
