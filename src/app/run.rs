//! Running a command: set up, drive the event loop with a source, handle Ctrl-C and
//! `--max-time`, report, and end with the exit status [`super::exit::ExitStatus`] decides.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use url::Url;

use crate::app::cli::{abbrev, CommonArgs, CrawlArgs, ScopeArg, Setup};
use crate::app::exit::{usage, ExitStatus, Failure, RunEnd};
use crate::app::loops::Partitions;
use crate::app::report::{eprint_line, CrawlReport, Figures, Progress, ProgressMode};
use crate::app::url_lines::{Line, UrlLines};
use crate::crawl::sink::{Hop, Sink, Via};
use crate::crawl::Crawl;
use crate::fetcher::{Crawler, CrawlerConfig, Driver, FetchDone, FetchSource, PayloadDigest, Turn};
use crate::store::archive::output::{Output, Written};
use crate::store::archive::spool::FileSpool;
use crate::store::state::crawl_state;
use crate::ReturnCode;

/// URLs in messages are cut to about this many characters.
pub(super) const URL_IN_MESSAGES: usize = 120;

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

// ---- the sink: crawl.log and WARC, and -v ----

/// The store's output, echoing every line on stderr under `-v`.
pub struct AppSink {
    pub output: Output,
    pub verbose: bool,
}

impl AppSink {
    fn echo(&self, outcome: ReturnCode, status: u16, url: &str) {
        if self.verbose {
            eprint_line(&format!(
                "{:<22} {status:>3} {}",
                outcome.name(),
                abbrev(url, URL_IN_MESSAGES)
            ));
        }
    }
}

impl Sink for AppSink {
    fn store(
        &mut self,
        done: &FetchDone<'_>,
        via: Via<'_>,
        outcome: ReturnCode,
        digest: Option<PayloadDigest>,
    ) -> io::Result<()> {
        self.echo(outcome, done.status(), done.request.url.as_str());
        self.output.record_as(done, via, outcome, digest)
    }

    fn log_unfetched(&mut self, url: &str, via: Via<'_>, outcome: ReturnCode) -> io::Result<()> {
        self.echo(outcome, 0, url);
        self.output.record_unfetched(url, via, outcome)
    }

    fn admitted(&mut self, url: &str, entry: &[u8]) {
        self.output.record_admitted(url, entry);
    }

    fn released(&mut self, url: &str) {
        self.output.record_released(url);
    }

    fn hosts_saved(&mut self, state: &[u8]) -> io::Result<()> {
        self.output.record_hosts(state)
    }
}

/// How a URL of the `fetch` list was found: given, or a redirect's target.
pub(super) fn fetch_via(hops: u8, referrer: Option<&str>) -> Via<'_> {
    let hop = if hops == 0 { Hop::Seed } else { Hop::Redirect };
    Via::new(referrer, hop)
}

/// A resumed crawl reports (and decides its exit status on) the whole crawl's lines, counted
/// from its crawl.log; the stats.json of earlier runs is kept as `stats.N.json`.
fn whole_crawl_counts(report: &mut CrawlReport) -> Result<(), Failure> {
    use crate::crawl::sink::Hop;
    let mut urls = crate::crawl::LineTally::default();
    let mut robots = crate::crawl::LineTally::default();
    let log = report.out_dir.join("crawl.log");
    crate::store::archive::crawl_log::for_each_line(&log, |l| {
        let tally = if l.hop == Some(Hop::Prerequisite) {
            &mut robots
        } else {
            &mut urls
        };
        tally.add(l.outcome, l.status);
    })
    .map_err(|e| Failure::Output(format!("cannot read {}: {e}", log.display())))?;
    report.counters.url_lines = urls;
    report.counters.robots_lines = robots;
    let stats = report.out_dir.join("stats.json");
    if stats.exists() {
        // Bounded: one name per earlier run.
        let mut n = 1u32;
        while report.out_dir.join(format!("stats.{n}.json")).exists() && n < u32::MAX {
            n += 1;
        }
        std::fs::rename(&stats, report.out_dir.join(format!("stats.{n}.json")))
            .map_err(Failure::output)?;
    }
    Ok(())
}

/// What the app tells the user the first time a host is refused by the address policy.
pub(super) fn blocked_notice(host: &str) -> String {
    format!(
        "spinneret: {} is a loopback, private or reserved address, refused by default: its URLs \
         end as PrivateAddressBlocked. Pass --allow-private (or --allow-net CIDR) to fetch it.",
        abbrev(host, URL_IN_MESSAGES)
    )
}

/// Gives the crawler a file spool in the output directory, so bodies too large for memory go
/// to disk there.
pub(crate) fn with_spool(
    mut config: CrawlerConfig,
    out_dir: &std::path::Path,
) -> io::Result<CrawlerConfig> {
    config.spool = Some(std::sync::Arc::new(FileSpool::new(out_dir)?));
    Ok(config)
}

// ---- the run loop ----

/// A source that stores what it fetches: the run loop needs its first storage error, its
/// output (to flush it now and then), its queue length and its notices for the user.
pub trait StoringSource: FetchSource {
    fn take_io_error(&mut self) -> Option<io::Error>;
    fn output(&mut self) -> &mut Output;
    /// URLs waiting to be fetched.
    fn queued(&self) -> u64;
    /// A message for the user, once per occasion.
    fn take_notice(&mut self) -> Option<String>;
    /// Work may have arrived from elsewhere (another partition): the driver asks again.
    fn has_news(&mut self) -> bool {
        false
    }
}

/// Why [`drive`] returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stop {
    Finished,
    Interrupted,
    Deadline,
}

/// Turns the loop until the source is exhausted, Ctrl-C, or `deadline` (in both of the last
/// cases every live fetch ends as `Interrupted`, at once: `--max-time` is a hard bound).
pub(crate) fn drive<S: StoringSource>(
    crawler: &mut Crawler,
    source: &mut S,
    progress: &mut Progress,
    deadline: Option<Instant>,
) -> Result<Stop, Failure> {
    install_interrupt_handler();
    let mut driver = Driver::new();
    let stop = loop {
        if interrupted() {
            driver.interrupt(crawler, source);
            break Stop::Interrupted;
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            driver.interrupt(crawler, source);
            break Stop::Deadline;
        }
        if source.has_news() {
            driver.poke();
        }
        let turn = driver.turn(crawler, source).map_err(Failure::runtime)?;
        if let Some(e) = source.take_io_error() {
            return Err(Failure::output(e));
        }
        if turn == Turn::Finished {
            break Stop::Finished;
        }
        while let Some(notice) = source.take_notice() {
            eprint_line(&notice);
        }
        let queued = source.queued();
        if progress.tick(|| Figures::of(&crawler.stats(), queued)) {
            source.output().flush().map_err(Failure::output)?;
        }
    };
    while let Some(notice) = source.take_notice() {
        eprint_line(&notice);
    }
    progress.clear();
    match source.take_io_error() {
        Some(e) => Err(Failure::output(e)),
        None => Ok(stop),
    }
}

impl StoringSource for Crawl<AppSink> {
    fn take_io_error(&mut self) -> Option<io::Error> {
        self.io_error.take()
    }

    fn output(&mut self) -> &mut Output {
        &mut self.sink().output
    }

    fn queued(&self) -> u64 {
        self.frontier_len() as u64
    }

    fn take_notice(&mut self) -> Option<String> {
        self.take_blocked_notice().map(|h| blocked_notice(&h))
    }
}

/// How a command shows what it does.
#[derive(Clone, Copy, Debug)]
pub struct Display {
    pub progress: ProgressMode,
    pub verbose: bool,
    pub quiet: bool,
}

impl Display {
    pub(super) fn of(common: &CommonArgs) -> Display {
        Display {
            progress: ProgressMode::for_stderr(common.quiet),
            verbose: common.verbose,
            quiet: common.quiet,
        }
    }
}

/// The end of a command: stats.json, the summary and the reason for the exit status.
pub(super) fn conclude(
    dir: &std::path::Path,
    json: String,
    summary: String,
    status: ExitStatus,
    reason: String,
    written: &Written,
    display: Display,
) -> Result<ExitStatus, Failure> {
    let path = dir.join("stats.json");
    std::fs::write(&path, json)
        .map_err(|e| Failure::Output(format!("cannot write {}: {e}", path.display())))?;
    if !display.quiet {
        eprint_line(&summary);
        if let Some(hint) = replay_hint(dir, written) {
            eprint_line(&hint);
        }
    }
    if !display.quiet || status != ExitStatus::Ok {
        eprint_line(&format!("spinneret: {reason}"));
    }
    Ok(status)
}

/// Where the archive is and how to replay it with pywb.
fn replay_hint(dir: &std::path::Path, written: &Written) -> Option<String> {
    let first = written.warc_files.first()?;
    let n = written.warc_files.len();
    let files = if n == 1 {
        first.display().to_string()
    } else {
        format!("{} (and {} more)", first.display(), n - 1)
    };
    let index = if written.indexes.is_empty() {
        String::new()
    } else {
        format!(", CDXJ index beside each ({})", written.indexes.len())
    };
    Some(format!(
        "spinneret: WARC: {files}{index}\n  replay: wb-manager init mycoll && wb-manager add \
         mycoll {}/*.warc.gz && wayback  (then http://localhost:8080/mycoll/)",
        dir.display()
    ))
}

/// Reads the positional URLs and the `-i` file (in bounded pieces: a line past `max_len`
/// bytes is not held): `(place, line)` pairs.
fn input_lines(
    args: &[String],
    file: Option<&std::path::Path>,
    max_len: usize,
) -> Result<Vec<(String, Line)>, Failure> {
    let mut lines: Vec<(String, Line)> = args
        .iter()
        .enumerate()
        .map(|(i, s)| (format!("argument {}", i + 1), Line::Text(s.clone())))
        .collect();
    if let Some(path) = file {
        let failed = |e: io::Error| usage(format!("{}: {e}", path.display()));
        let mut reader = UrlLines::new(std::fs::File::open(path).map_err(failed)?, max_len);
        while let Some((n, line)) = reader.next_line().map_err(failed)? {
            lines.push((format!("{}: line {n}", path.display()), line));
        }
    }
    Ok(lines)
}

/// `-w/--delay SECS` or `--delay-ms MS` (default 1 s): the least gap between two requests to
/// one host.
pub(super) fn delay_of(secs: Option<f64>, ms: Option<u64>) -> Result<Duration, Failure> {
    match (secs, ms) {
        (Some(s), _) if !(s.is_finite() && (0.0..=86_400.0).contains(&s)) => {
            Err(usage("-w/--delay must be between 0 and 86400 seconds"))
        }
        (Some(s), _) => Ok(Duration::from_secs_f64(s)),
        (None, Some(ms)) => Ok(Duration::from_millis(ms)),
        (None, None) => Ok(Duration::from_secs(1)),
    }
}

// ---- crawl ----

/// `--reject-ext` values: without a leading dot, not empty.
fn extensions(list: &[String]) -> Result<Vec<String>, Failure> {
    let mut out = Vec::new();
    for e in list {
        let e = e.trim().trim_start_matches('.');
        if e.is_empty() || e.contains('/') {
            return Err(usage(format!(
                "--reject-ext {e:?}: expected an extension such as pdf"
            )));
        }
        out.push(e.to_string());
    }
    Ok(out)
}

fn regex_flag(flag: &str, pattern: Option<&str>) -> Result<Option<regex::Regex>, Failure> {
    pattern
        .map(|p| regex::Regex::new(p).map_err(|e| usage(format!("{flag} {}: {e}", abbrev(p, 80)))))
        .transpose()
}

/// The crawl's own settings, for the warcinfo record.
fn crawl_options(args: &CrawlArgs) -> Vec<(String, String)> {
    let opt = |v: Option<String>| v.unwrap_or_else(|| "none".into());
    let mut o: Vec<(String, String)> = vec![
        ("scope".into(), format!("{:?}", args.scope).to_lowercase()),
        (
            "max-depth".into(),
            opt(args.max_depth.map(|v| v.to_string())),
        ),
        (
            "max-pages".into(),
            opt(args.max_pages.map(|v| v.to_string())),
        ),
        ("max-time".into(), opt(args.max_time.map(|v| v.to_string()))),
        (
            "max-pages-per-host".into(),
            opt(args.max_pages_per_host.map(|v| v.to_string())),
        ),
        ("delay-factor".into(), args.delay_factor.to_string()),
        ("max-crawl-delay".into(), args.max_crawl_delay.to_string()),
        ("max-retries".into(), args.max_retries.to_string()),
        ("max-retry-after".into(), args.max_retry_after.to_string()),
        ("ignore-robots".into(), args.ignore_robots.to_string()),
        (
            "page-requisites".into(),
            (!args.no_page_requisites).to_string(),
        ),
        (
            "max-links-per-page".into(),
            args.max_links_per_page.to_string(),
        ),
        ("max-url-length".into(), args.max_url_length.to_string()),
    ];
    if let Some(s) = args.delay.delay_secs {
        o.push(("delay".into(), format!("{s}s")));
    } else if let Some(ms) = args.delay.delay_ms {
        o.push(("delay".into(), format!("{ms}ms")));
    }
    for (name, list) in [
        ("allow-domain", &args.allow_domains),
        ("deny-domain", &args.deny_domains),
        ("reject-ext", &args.reject_ext),
    ] {
        for v in list {
            o.push((name.into(), v.clone()));
        }
    }
    for (name, v) in [
        ("accept-regex", &args.accept_regex),
        ("reject-regex", &args.reject_regex),
    ] {
        if let Some(v) = v {
            o.push((name.into(), v.clone()));
        }
    }
    o
}

pub fn run_crawl(args: CrawlArgs) -> Result<ExitStatus, Failure> {
    // The arguments after the program name, recorded for `resume`.
    let argv: Vec<String> = std::env::args().skip(1).collect();
    run_crawl_as(args, Start::New(argv))
}

/// How a crawl run starts.
pub(crate) enum Start {
    /// A new crawl, started with these arguments.
    New(Vec<String>),
    /// An earlier crawl continued, from what its journal says.
    Resume,
}

pub(crate) fn run_crawl_as(args: CrawlArgs, start: Start) -> Result<ExitStatus, Failure> {
    use crate::crawl::url_filter::{FilterConfig, Scope};
    use crate::crawl::CrawlConfig;

    let mut setup = args.common.setup()?;
    let cookies = args.common.cookies()?;
    setup.output.options.extend(crawl_options(&args));
    let display = Display::of(&args.common);
    if args.max_time == Some(0) {
        return Err(usage("--max-time must be at least 1 second"));
    }
    if args.max_pages == Some(0) {
        return Err(usage("--max-pages must be at least 1"));
    }
    if args.max_pages_per_host == Some(0) {
        return Err(usage("--max-pages-per-host must be at least 1"));
    }
    if args.max_url_length == 0 {
        return Err(usage("--max-url-length must be at least 1"));
    }
    if !(args.delay_factor.is_finite() && args.delay_factor >= 0.0) {
        return Err(usage("--delay-factor must be a non-negative number"));
    }
    let delay = delay_of(args.delay.delay_secs, args.delay.delay_ms)?;
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
        accept_regex: regex_flag("--accept-regex", args.accept_regex.as_deref())?,
        reject_regex: regex_flag("--reject-regex", args.reject_regex.as_deref())?,
        reject_ext: extensions(&args.reject_ext)?,
        ..FilterConfig::default()
    };
    let mut seeds = Vec::new();
    let mut bad_inputs = Vec::new();
    let given = input_lines(&args.seeds, args.seeds_file.as_deref(), args.max_url_length)?;
    for (place, line) in given {
        let (text, outcome, why) = match line {
            Line::Text(s) => match crate::crawl::urlnorm::parse_seed(&s) {
                Ok(u) => {
                    seeds.push(u);
                    continue;
                }
                Err(e) => (
                    s,
                    ReturnCode::HttpBadUrlSyntax,
                    format!("not a usable URL ({e:?})"),
                ),
            },
            Line::TooLong(head) => (
                head,
                ReturnCode::UrlTooLong,
                "longer than --max-url-length".into(),
            ),
            Line::NotUtf8(text) => (text, ReturnCode::HttpBadUrlSyntax, "not UTF-8".into()),
        };
        eprint_line(&format!(
            "spinneret: {place}: {why}: `{}` (logged as {})",
            abbrev(&text, URL_IN_MESSAGES),
            outcome.name()
        ));
        bad_inputs.push((text, outcome));
    }
    let cluster = args.cluster_config()?;
    // A cluster node may start with no seeds: the others send it URLs.
    if seeds.is_empty() && cluster.is_none() {
        return Err(usage(
            "no usable seed URLs (pass URLs or -i/--input-file FILE)",
        ));
    }
    if args.ignore_robots {
        eprint_line(
            "spinneret: WARNING: --ignore-robots: robots.txt is neither fetched nor obeyed",
        );
    }
    let out = args.common.out.clone();
    let resume = match start {
        Start::New(argv) => {
            if let Some(c) = &cluster {
                // Nothing is written for a node whose cluster cannot be reached.
                crate::app::cluster::open(&c.url).map_err(Failure::Runtime)?;
            }
            if crawl_state::holds_crawl(&out) {
                return Err(usage(format!(
                    "{} already holds a crawl: `spinneret resume {}` continues it, or give \
                     another --out",
                    out.display(),
                    out.display()
                )));
            }
            std::fs::create_dir_all(&out)
                .and_then(|()| crawl_state::create(&out, &argv))
                .map_err(|e| Failure::Output(format!("cannot write to {}: {e}", out.display())))?;
            false
        }
        Start::Resume => {
            setup.output.resume = true;
            true
        }
    };
    let checkpoint_every = Duration::from_secs(args.checkpoint_secs.max(1));
    setup.output.durable = Some(checkpoint_every);
    let config = CrawlConfig {
        frontier_ram: usize::try_from(args.frontier_ram).unwrap_or(usize::MAX),
        resumable: true,
        save_hosts_every: Some(checkpoint_every),
        max_pages: args.max_pages,
        max_time: args.max_time.map(Duration::from_secs),
        delay,
        delay_factor: args.delay_factor,
        max_crawl_delay: Duration::from_secs(args.max_crawl_delay),
        ignore_robots: args.ignore_robots,
        max_redirects: args.common.max_redirect,
        max_links_per_page: args.max_links_per_page,
        page_requisites: !args.no_page_requisites,
        cookies,
        max_retries: args.max_retries,
        max_retry_after: Duration::from_secs(args.max_retry_after),
        ..CrawlConfig::new(filter, setup.crawler.max_sockets)
    };
    let mut report = crate::app::loops::execute(
        setup,
        config,
        seeds,
        bad_inputs,
        display,
        resume,
        Partitions {
            loops: args.loops,
            cluster,
        },
    )?;
    if resume {
        whole_crawl_counts(&mut report)?;
    }
    if report.end == RunEnd::Finished {
        crawl_state::mark_finished(&out).map_err(Failure::output)?;
    }
    let status = ExitStatus::decide(report.end, &report.counters.url_lines);
    let mut json = report.json();
    json.uint("exit_status", u64::from(status.code()));
    conclude(
        &report.out_dir,
        json.finish(),
        report.line(),
        status,
        status.reason(report.end, &report.counters.url_lines, report.frontier_left),
        &Written {
            warc_files: report.warc_files.clone(),
            indexes: report.indexes.clone(),
        },
        display,
    )
}

/// Runs a crawl from `seeds` on `loops` event loops to completion (or Ctrl-C, or its time
/// limit) and closes its output. `bad_inputs` are given lines that are not URLs, with the
/// outcome each is logged with: each gets its line first.
pub fn execute_crawl(
    setup: Setup,
    config: crate::crawl::CrawlConfig,
    seeds: Vec<Url>,
    bad_inputs: Vec<(String, ReturnCode)>,
    display: Display,
    loops: usize,
) -> Result<CrawlReport, Failure> {
    crate::app::loops::execute(
        setup,
        config,
        seeds,
        bad_inputs,
        display,
        false,
        Partitions {
            loops,
            cluster: None,
        },
    )
}
