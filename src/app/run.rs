//! Running a command: set up, drive the event loop with a source, handle Ctrl-C, report.

use std::collections::VecDeque;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::app::cli::{read_url_file, CrawlArgs, FetchArgs, ScopeArg, Setup, UsageError};
use crate::app::report::{CrawlReport, Progress, Summary};
use crate::crawl::Crawl;
use crate::fetcher::{
    Crawler, CrawlerConfig, Driver, FetchDone, FetchRequest, FetchSource, Next, Turn,
};
use crate::store::output::Output;
use crate::store::spool::FileSpool;
use crate::ReturnCode;

// ---- Ctrl-C ----

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
    // A second Ctrl-C kills at once, as users expect.
    // SAFETY: signal() is async-signal-safe; restoring the default disposition is always valid.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_DFL);
    }
}

/// Installs the SIGINT (and SIGTERM) handler that asks the run to stop cleanly.
pub fn install_interrupt_handler() {
    // SAFETY: the handler only stores to an atomic and calls signal(), both async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, on_sigint as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_sigint as *const () as libc::sighandler_t);
    }
}

pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

// ---- the run loop ----

/// A source that stores what it fetches: the run loop needs its first storage error and its
/// output (to flush it with each progress line).
pub trait StoringSource: FetchSource {
    fn take_io_error(&mut self) -> Option<io::Error>;
    fn output(&mut self) -> &mut Output;
}

/// Turns the loop until the source is exhausted or Ctrl-C (then every live fetch ends as
/// `Interrupted`). Returns whether it was interrupted; a storage error stops the run.
fn drive<S: StoringSource>(
    crawler: &mut Crawler,
    source: &mut S,
    mut progress: Option<&mut Progress>,
) -> Result<bool, Box<dyn std::error::Error>> {
    install_interrupt_handler();
    let mut driver = Driver::new();
    loop {
        if interrupted() {
            driver.interrupt(crawler, source);
            return match source.take_io_error() {
                Some(e) => Err(Box::new(e)),
                None => Ok(true),
            };
        }
        if driver.turn(crawler, source)? == Turn::Finished {
            return match source.take_io_error() {
                Some(e) => Err(Box::new(e)),
                None => Ok(false),
            };
        }
        if let Some(e) = source.take_io_error() {
            return Err(Box::new(e));
        }
        if let Some(p) = progress.as_deref_mut() {
            if p.maybe_print(|| crawler.stats()) {
                source.output().flush()?;
            }
        }
    }
}

impl StoringSource for Crawl<Output> {
    fn take_io_error(&mut self) -> Option<io::Error> {
        self.io_error.take()
    }

    fn output(&mut self) -> &mut Output {
        self.sink()
    }
}

/// Gives the crawler a file spool in the output directory, so bodies too large for memory go
/// to disk there.
fn with_spool(mut config: CrawlerConfig, out_dir: &std::path::Path) -> io::Result<CrawlerConfig> {
    config.spool = Some(std::sync::Arc::new(FileSpool::new(out_dir)?));
    Ok(config)
}

// ---- fetch ----

/// The `fetch` command's work list and sink.
struct FetchList {
    urls: VecDeque<String>,
    output: Output,
    /// First storage error: the run stops and reports it (nothing is silently dropped).
    io_error: Option<io::Error>,
}

impl StoringSource for FetchList {
    fn take_io_error(&mut self) -> Option<io::Error> {
        self.io_error.take()
    }

    fn output(&mut self) -> &mut Output {
        &mut self.output
    }
}

impl FetchSource for FetchList {
    fn next_fetch(&mut self, _now: Instant) -> Next {
        while let Some(u) = self.urls.pop_front() {
            match url::Url::parse(&u) {
                Ok(url) => return Next::Fetch(FetchRequest { url, tag: 0 }),
                Err(_) => {
                    if let Err(e) =
                        self.output
                            .record_unfetched(&u, None, ReturnCode::HttpBadUrlSyntax)
                    {
                        self.io_error.get_or_insert(e);
                    }
                }
            }
        }
        Next::Done
    }

    fn fetch_done(&mut self, done: &FetchDone<'_>, _now: Instant) {
        if let Err(e) = self.output.record(done, None) {
            self.io_error.get_or_insert(e);
        }
    }
}

pub fn run_fetch(args: FetchArgs) -> Result<(), Box<dyn std::error::Error>> {
    let setup = args.common.setup()?;
    let mut urls: VecDeque<String> = args.urls.into_iter().collect();
    if let Some(path) = &args.urls_file {
        urls.extend(read_url_file(path)?.into_iter().map(|(_, u)| u));
    }
    if urls.is_empty() {
        return Err(Box::new(UsageError(
            "no URLs given (pass URLs or --urls FILE)".into(),
        )));
    }
    let total = urls.len() as u64;
    let output = Output::create(&setup.output)?;
    let mut crawler = Crawler::new(with_spool(setup.crawler, output.dir())?)?;
    let mut list = FetchList {
        urls,
        output,
        io_error: None,
    };
    let started = Instant::now();
    let mut progress = Progress::new(started);
    if drive(&mut crawler, &mut list, Some(&mut progress))? {
        // Every URL gets its one line: those never issued end as Interrupted too.
        let rest: Vec<String> = list.urls.drain(..).collect();
        for u in rest {
            list.output
                .record_unfetched(&u, None, ReturnCode::Interrupted)?;
        }
        eprintln!("spinneret: interrupted; live fetches ended, output flushed");
    }
    let stats = crawler.stats();
    let dir = list.output.dir().to_path_buf();
    let stored = list.output.stored().clone();
    let files = list.output.finish()?;
    let elapsed = started.elapsed();
    let summary = Summary {
        urls: total,
        stats: &stats,
        body_bytes: stored.body_bytes,
        elapsed,
        warc_files: files.len(),
    };
    std::fs::write(dir.join("stats.json"), summary.json(&[]).finish())?;
    eprintln!("{}", summary.line());
    Ok(())
}

// ---- crawl ----

pub fn run_crawl(args: CrawlArgs) -> Result<(), Box<dyn std::error::Error>> {
    use crate::crawl::url_filter::{FilterConfig, Scope};
    use crate::crawl::CrawlConfig;

    let setup = args.common.setup()?;
    let mut seed_lines: Vec<(String, String)> = args
        .seeds
        .iter()
        .enumerate()
        .map(|(i, s)| (format!("argument {}", i + 1), s.clone()))
        .collect();
    if let Some(path) = &args.seeds_file {
        for (line, s) in read_url_file(path)? {
            seed_lines.push((format!("{}: line {line}", path.display()), s));
        }
    }
    let mut seeds = Vec::new();
    for (place, s) in &seed_lines {
        match crate::crawl::urlnorm::parse_seed(s) {
            Ok(u) => seeds.push(u),
            Err(e) => eprintln!("spinneret: {place}: skipping seed `{s}`: {e:?}"),
        }
    }
    if seeds.is_empty() {
        return Err(Box::new(UsageError(
            "no usable seed URLs (pass URLs or --seeds FILE)".into(),
        )));
    }
    if args.ignore_robots {
        eprintln!("spinneret: WARNING: --ignore-robots: robots.txt is neither fetched nor obeyed");
    }
    if !(args.delay_factor.is_finite() && args.delay_factor >= 0.0) {
        return Err(Box::new(UsageError(
            "--delay-factor must be a non-negative number".into(),
        )));
    }
    let filter = FilterConfig {
        scope: match args.scope {
            ScopeArg::Host => Scope::Host,
            ScopeArg::Prefix => Scope::Prefix,
            ScopeArg::Any => Scope::Any,
        },
        allow_domains: args.allow_domains.clone(),
        deny_domains: args.deny_domains.clone(),
        max_url_length: args.max_url_length,
        max_pages_per_host: args.max_pages_per_host,
        max_depth: args.max_depth,
        ..FilterConfig::default()
    };
    let config = CrawlConfig {
        max_pages: args.max_pages,
        max_time: args.max_time.map(Duration::from_secs),
        delay: Duration::from_millis(args.delay_ms),
        delay_factor: args.delay_factor,
        max_crawl_delay: Duration::from_secs(args.max_crawl_delay),
        ignore_robots: args.ignore_robots,
        max_links_per_page: args.max_links_per_page,
        ..CrawlConfig::new(filter, setup.crawler.max_conns)
    };
    let report = execute_crawl(setup, config, seeds, true)?;
    if report.interrupted {
        eprintln!(
            "spinneret: interrupted; live fetches ended, {} queued URLs not fetched, output flushed",
            report.frontier_left
        );
    }
    std::fs::write(report.out_dir.join("stats.json"), report.json().finish())?;
    eprintln!("{}", report.line());
    Ok(())
}

/// Runs a crawl from `seeds` to completion (or Ctrl-C) and closes its output.
pub fn execute_crawl(
    setup: Setup,
    config: crate::crawl::CrawlConfig,
    seeds: Vec<url::Url>,
    show_progress: bool,
) -> Result<CrawlReport, Box<dyn std::error::Error>> {
    let output = Output::create(&setup.output)?;
    let mut crawler = Crawler::new(with_spool(setup.crawler, output.dir())?)?;
    let started = Instant::now();
    let mut crawl = Crawl::new(config, output, started);
    for seed in seeds {
        crawl.add_seed(seed);
    }
    let mut progress = Progress::new(started);
    let interrupted = drive(
        &mut crawler,
        &mut crawl,
        show_progress.then_some(&mut progress),
    )?;
    let elapsed = started.elapsed();
    let stats = crawler.stats();
    let counters = crawl.counters().clone();
    let frontier_left = crawl.frontier_len() as u64;
    let urls_seen = crawl.urls_seen() as u64;
    let seen_bytes_per_url = crawl.seen_bytes_per_url();
    let rejections = crawl
        .rejections()
        .iter()
        .map(|&(r, n)| (r.name(), n))
        .collect();
    let output = crawl.into_sink();
    let out_dir = output.dir().to_path_buf();
    let body_bytes = output.stored().body_bytes;
    let warc_files = output.finish()?;
    Ok(CrawlReport {
        stats,
        counters,
        frontier_left,
        urls_seen,
        seen_bytes_per_url,
        rejections,
        body_bytes,
        warc_files,
        out_dir,
        elapsed,
        interrupted,
    })
}
