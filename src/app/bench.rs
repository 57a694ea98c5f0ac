//! `spinneret bench`: crawl the local test web on loopback and report how fast.
//!
//! The test web runs in a child process, the tools crate's `spinneret-testserver`
//! (`test_web`), so the figures printed here (CPU per page, peak RSS) are the crawler's alone
//! and the shipped binary carries no test web. Its pages link mostly to random pages of other
//! hosts (`--shape linked`), as on the real web. The crawl is a normal
//! [`super::loops::execute_crawl`] with `crawl`'s defaults (connections, one per server, the
//! delay factor) but no fixed delay, WARC written to a temporary directory; `--fetch` runs the
//! `fetch` command over the same URLs shuffled instead (`fetch_list`). The verdict checks the
//! result against the exact URL set the test web says a full crawl must fetch, and the
//! connections opened per host.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use crate::app::cli::BenchArgs;
use crate::app::config::Setup;
use crate::app::exit::UsageError;
use crate::app::loops::execute_crawl;
use crate::app::process::process_usage;
use crate::app::report::CrawlReport;
use crate::crawl::url_filter::{FilterConfig, Scope};
use crate::crawl::CrawlConfig;
use crate::dns::ResolverConfig;
use crate::fetcher::addr_policy::AddrPolicy;
use crate::fetcher::CrawlerConfig;
use crate::store::archive::crawl_log;
use crate::store::archive::output::OutputConfig;
use crate::ReturnCode;

/// Connections opened per host, on average, above which the verdict fails. Keep-alive lets a
/// crawl fetch all of a host's pages on one connection; the tenth more allows for the few a
/// polite crawl must reopen (a server's idle close, a host left idle for long), while a crawl
/// that closes a host's connection between its pages (the 16,000 connections for
/// 21,500 requests) fails by far.
pub const MAX_CONNS_PER_HOST: f64 = 1.1;

mod fetch_list;
mod test_web;

use test_web::WebChild;

/// What the crawl got right or wrong against the expected URL set.
pub struct Verdict {
    pub expected: usize,
    pub fetched_ok: usize,
    pub missing: Vec<String>,
    pub unexpected: Vec<String>,
    pub fetched_twice: Vec<String>,
}

impl Verdict {
    pub fn passed(&self) -> bool {
        self.missing.is_empty() && self.unexpected.is_empty() && self.fetched_twice.is_empty()
    }
}

/// The connections a run opened, against the hosts it fetched from.
pub struct Conns {
    pub opened: u64,
    /// Requests sent on a kept-alive connection.
    pub reused: u64,
    /// Requests retried on a fresh connection after a kept-alive one was found closed.
    pub stale_retries: u64,
    pub hosts: usize,
}

impl Conns {
    pub fn per_host(&self) -> f64 {
        self.opened as f64 / self.hosts.max(1) as f64
    }

    pub fn passed(&self) -> bool {
        self.per_host() <= MAX_CONNS_PER_HOST
    }

    fn print(&self) {
        println!(
            "  connections    {} opened for {} hosts: {:.2} per host (at most {MAX_CONNS_PER_HOST}); \
             {} requests on kept-alive ones, {} stale retries",
            self.opened,
            self.hosts,
            self.per_host(),
            self.reused,
            self.stale_retries
        );
    }
}

/// Distinct hosts (with port) of `urls`.
fn hosts_of(urls: &[String]) -> usize {
    urls.iter()
        .filter_map(|u| url::Url::parse(u).ok())
        .filter_map(|u| Some(format!("{}:{}", u.host_str()?, u.port_or_known_default()?)))
        .collect::<BTreeSet<_>>()
        .len()
}

/// Compares the page fetches in `crawl.log` with the expected set.
pub fn verify(log: &Path, expected: &[String]) -> Result<Verdict, Box<dyn std::error::Error>> {
    let text = std::fs::read_to_string(log)?;
    let mut seen = BTreeSet::new();
    let mut twice = Vec::new();
    let mut unexpected = Vec::new();
    let want: BTreeSet<&str> = expected.iter().map(String::as_str).collect();
    for line in text.lines().skip(1) {
        let Some(l) = crawl_log::parse_line(line) else {
            return Err(format!("unreadable crawl.log line: {line:?}").into());
        };
        if l.url.ends_with("/robots.txt") || l.outcome == ReturnCode::RobotsExcluded {
            continue;
        }
        if l.outcome != ReturnCode::Success || !want.contains(l.url.as_str()) {
            unexpected.push(format!("{} {}", l.outcome, l.url));
            continue;
        }
        if !seen.insert(l.url.clone()) {
            twice.push(l.url);
        }
    }
    let missing = want
        .iter()
        .filter(|u| !seen.contains(**u))
        .map(|u| u.to_string())
        .collect();
    Ok(Verdict {
        expected: want.len(),
        fetched_ok: seen.len(),
        missing,
        unexpected,
        fetched_twice: twice,
    })
}

pub fn run(args: BenchArgs) -> Result<(), Box<dyn std::error::Error>> {
    if args.hosts == 0 || args.pages == 0 || args.page_kb == 0 || args.max_conns == 0 {
        return Err(Box::new(UsageError(
            "--hosts, --pages, --page-kb and --max-conns must be at least 1".into(),
        )));
    }
    if !(args.delay_factor.is_finite() && args.delay_factor >= 0.0) {
        return Err(Box::new(UsageError(
            "--delay-factor must be a non-negative number".into(),
        )));
    }
    let server = match test_web::locate(
        args.testserver.as_deref(),
        std::env::var_os(test_web::SERVER_ENV).as_deref(),
        &std::env::current_exe()?,
    ) {
        Ok(path) => path,
        // A path the user gave is a bad flag (or variable); none beside us is a bad install.
        Err(e @ test_web::NoServer::Given { .. }) => {
            return Err(Box::new(UsageError(e.to_string())))
        }
        Err(e) => return Err(Box::new(e)),
    };
    let (scratch, keep) = match &args.out {
        Some(dir) => (dir.clone(), true),
        None => (
            std::env::temp_dir().join(format!("spinneret-bench-{}", std::process::id())),
            false,
        ),
    };
    std::fs::create_dir_all(&scratch)?;
    let urls_file = scratch.join("expected-urls.txt");
    eprintln!(
        "bench: generating the test web: {} hosts x ({} content pages of ~{} KB + index, list pages, stylesheet), {} …",
        args.hosts, args.pages, args.page_kb, args.shape
    );
    let web = WebChild::start(&server, &args, &urls_file)?;
    let expected: Vec<String> = std::fs::read_to_string(&urls_file)?
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect();
    let seeds: Vec<url::Url> = expected
        .iter()
        .filter_map(|u| url::Url::parse(u).ok())
        .filter(|u| u.path() == "/")
        .collect();
    eprintln!(
        "bench: test web up on port {} (DNS {}), {} URLs expected ({} per host), {} ms \
         latency per connect and response; {} …",
        web.port,
        web.dns,
        expected.len(),
        expected.len() / args.hosts.max(1),
        args.latency_ms,
        if args.fetch { "fetching" } else { "crawling" }
    );
    if args.fetch {
        let result = fetch_list::run(&args, web, &expected, &scratch);
        if !keep {
            let _ = std::fs::remove_dir_all(&scratch);
        }
        return result;
    }

    let out_dir = scratch.join("out");
    let _ = std::fs::remove_dir_all(&out_dir);
    let mut crawler = CrawlerConfig::new(
        args.max_conns,
        ResolverConfig {
            servers: vec![web.dns],
            ..ResolverConfig::default()
        },
        crate::fetcher::tls::client_config(None)?,
    );
    crawler.addr_policy =
        AddrPolicy::new(false, vec!["127.0.0.0/8".parse().expect("literal CIDR")]);
    crawler.max_sockets = crate::app::fd_limit::socket_budget(
        None,
        args.max_conns,
        crate::app::fd_limit::raise_nofile(),
    );
    let setup = Setup {
        crawler,
        output: OutputConfig {
            gzip_level: args.gzip.level,
            response_block_digest: args.warc_block_digest,
            text: crate::store::archive::text_sides::TextOut {
                wet: args.text,
                markdown: args.markdown,
            },
            durable: (!args.no_journal).then_some(Duration::from_secs(args.checkpoint_secs.max(1))),
            ..OutputConfig::new(out_dir.clone(), "bench")
        },
    };
    // `crawl`'s politeness (one connection per server, the delay factor) without a fixed
    // delay, as `crawl --delay-ms 0`.
    let config = CrawlConfig {
        delay: Duration::ZERO,
        delay_factor: args.delay_factor,
        // As `crawl`: pages fingerprinted by the store's page workers.
        near_dups_in_sink: true,
        ..CrawlConfig::new(
            FilterConfig {
                scope: Scope::Any,
                allow_domains: vec!["test".into()],
                ..FilterConfig::default()
            },
            setup.crawler.max_sockets,
        )
    };
    let web_cpu_before = web.cpu();
    let (cpu_before, _) = process_usage();
    let display = crate::app::report::Display {
        progress: crate::app::report::ProgressMode::for_stderr(false),
        verbose: false,
        quiet: false,
        metrics: args.metrics,
    };
    let report = execute_crawl(setup, config, seeds, Vec::new(), display, args.loops)?;
    let (cpu_after, peak_rss) = process_usage();
    let web_cpu = match (web_cpu_before, web.cpu()) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a)),
        _ => None,
    };
    drop(web);
    let verdict = verify(&report.out_dir.join("crawl.log"), &expected)?;
    crate::store::archive::stats_json::write(&report.out_dir, &report.json().finish())?;
    let conns = Conns {
        opened: report.stats.conns_opened,
        reused: report.stats.conns_reused,
        stale_retries: report.stats.stale_retries,
        hosts: hosts_of(&expected),
    };
    print_report(
        &title(&args),
        &report,
        cpu_after.saturating_sub(cpu_before),
        peak_rss,
        web_cpu,
    );
    conns.print();
    print_verdict(&verdict, &conns);
    if !keep {
        let _ = std::fs::remove_dir_all(&scratch);
    }
    outcome("crawl", &verdict, &conns)
}

/// The run's result: an error naming what failed, if anything did.
fn outcome(what: &str, v: &Verdict, conns: &Conns) -> Result<(), Box<dyn std::error::Error>> {
    match (v.passed(), conns.passed()) {
        (true, true) => Ok(()),
        (false, _) => {
            Err(format!("bench: the {what} did not fetch exactly the expected URL set").into())
        }
        (true, false) => Err(format!(
            "bench: the {what} opened {:.2} connections per host (at most {MAX_CONNS_PER_HOST})",
            conns.per_host()
        )
        .into()),
    }
}

/// The verdict lines: the URL set, then the connections per host.
fn print_verdict(v: &Verdict, conns: &Conns) {
    if v.passed() {
        println!(
            "  verdict        PASS: all {} expected pages fetched exactly once, nothing else",
            v.expected
        );
    } else {
        println!(
            "  verdict        FAIL: {} of {} expected pages fetched; {} missing, {} unexpected, {} twice",
            v.fetched_ok,
            v.expected,
            v.missing.len(),
            v.unexpected.len(),
            v.fetched_twice.len()
        );
        for u in v.missing.iter().take(5) {
            println!("    missing    {u}");
        }
        for u in v.unexpected.iter().take(5) {
            println!("    unexpected {u}");
        }
        for u in v.fetched_twice.iter().take(5) {
            println!("    twice      {u}");
        }
    }
    if conns.passed() {
        println!(
            "  verdict        PASS: {:.2} connections per host",
            conns.per_host()
        );
    } else {
        println!(
            "  verdict        FAIL: {:.2} connections per host, more than {MAX_CONNS_PER_HOST}: \
             kept-alive connections were closed while their host still had pages",
            conns.per_host()
        );
    }
}

/// What was measured, for the report's first line.
fn title(args: &BenchArgs) -> String {
    let mode = if args.fetch {
        "fetch of a shuffled list".to_string()
    } else {
        format!("crawl, --delay-factor {}", args.delay_factor)
    };
    format!(
        "spinneret bench: {} web of {} hosts x {} pages, --max-conns {}, {mode}",
        args.shape, args.hosts, args.pages, args.max_conns
    )
}

fn print_report(
    title: &str,
    r: &CrawlReport,
    cpu: Duration,
    peak_rss: u64,
    web_cpu: Option<Duration>,
) {
    let fetches = r.stats.outcomes.total().max(1);
    let pages = r.counters.pages_fetched;
    let secs = r.elapsed.as_secs_f64().max(1e-9);
    let per_fetch = |d: Duration| d.as_secs_f64() * 1e6 / fetches as f64;
    let per_page = |d: Duration| d.as_secs_f64() * 1e6 / pages.max(1) as f64;
    let s = &r.counters.stages;
    let cpu_ms_per_page = cpu.as_secs_f64() * 1e3 / pages.max(1) as f64;
    let pages_per_sec = pages as f64 / secs;
    println!("{title}");
    println!(
        "  pages          {pages} (+{} robots.txt) in {:.2} s",
        r.counters.robots_fetched, secs
    );
    println!("  pages/s        {pages_per_sec:.0}");
    println!(
        "  MB/s           {:.1} received, {:.1} WARC written",
        r.stats.bytes_received as f64 / secs / 1e6,
        r.warc_files
            .iter()
            .filter_map(|f| std::fs::metadata(f).ok())
            .map(|m| m.len())
            .sum::<u64>() as f64
            / secs
            / 1e6
    );
    println!("  CPU/page       {cpu_ms_per_page:.3} ms (user + sys, crawler process)");
    if let Some(w) = web_cpu {
        println!(
            "  test web CPU   {:.3} ms/page (child process; {:.0}% of one core)",
            w.as_secs_f64() * 1e3 / pages.max(1) as f64,
            w.as_secs_f64() / secs * 100.0
        );
    }
    println!(
        "  peak RSS       {:.1} MB",
        peak_rss as f64 / (1 << 20) as f64
    );
    println!("  bytes/seen URL {:.1}", r.seen_bytes_per_url);
    println!(
        "  socket calls   {:.2} reads, {:.2} writes, {:.3} interest changes per fetch",
        r.stats.socket.reads as f64 / fetches as f64,
        r.stats.socket.writes as f64 / fetches as f64,
        r.stats.socket.reregistrations as f64 / fetches as f64,
    );
    println!(
        "  buffers        {} receive buffers allocated for {fetches} fetches",
        r.stats.receive_buffers_allocated
    );
    let (batches, bytes) = r.exchange;
    if batches > 0 {
        let urls = r.counters.urls_forwarded.max(1) as f64;
        println!(
            "  exchange       {} URLs forwarded in {batches} batches ({:.3} per URL), {:.1} bytes per URL",
            r.counters.urls_forwarded,
            batches as f64 / urls,
            bytes as f64 / urls
        );
    }
    println!("  stages, mean µs per fetch (latency; fetches overlap):");
    println!(
        "    dns {:.1} | wait for slot {:.1} | connect {:.1} | first byte {:.1} | receive {:.1}",
        per_fetch(s.dns),
        per_fetch(s.wait),
        per_fetch(s.connect),
        per_fetch(s.first_byte),
        per_fetch(s.receive)
    );
    // The driver times the crawl's work on completions, the store its own part of it.
    let crawl = r.source_time.saturating_sub(r.store_time);
    println!("  stages, mean µs of loop time per page:");
    println!(
        "    crawl (digest, policy, scan) {:.1} | store {:.1} | everything else {:.1}",
        per_page(crawl),
        per_page(r.store_time),
        (cpu_ms_per_page * 1e3 - per_page(r.source_time)).max(0.0)
    );
    let failures: Vec<String> = r
        .stats
        .outcomes
        .failures()
        .iter()
        .map(|(c, n)| format!("{c} {n}"))
        .collect();
    if !failures.is_empty() {
        println!("  failures       {}", failures.join(", "));
    }
}

#[cfg(test)]
mod tests;
