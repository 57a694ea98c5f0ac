//! The `spinneret` command line: flags → validated configuration → a run → an exit code.
//!
//! As in ripgrep, clap parses flags into plain argument structs, which are then checked and
//! turned into the working configuration ([`CrawlerConfig`], [`OutputConfig`]); only this
//! module turns errors into messages for people. Subcommands:
//! - `fetch`: every given URL once, no link following;
//! - `crawl`: follow links from seeds through [`crate::crawl::Crawl`];
//! - `bench`: crawl the built-in test web and report speed ([`crate::bench`]).

use std::collections::VecDeque;
use std::fmt;
use std::io::{self, BufRead, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use clap::{Args, Parser, Subcommand};

use crate::addr_policy::{AddrPolicy, Cidr};
use crate::dns::{self, ResolverConfig};
use crate::event_loop::{Crawler, CrawlerConfig, FetchSource, Next, Turn};
use crate::fetch::{FetchDone, FetchRequest};
use crate::http::Limits;
use crate::output::{Output, OutputConfig};
use crate::stats::{process_usage, JsonObject, LoopStats};
use crate::ReturnCode;

/// How often the progress line goes to stderr.
const STATS_INTERVAL: Duration = Duration::from_secs(2);

#[derive(Parser, Debug)]
#[command(
    name = "spinneret",
    version,
    about = "A fast, polite web crawler writing WARC files"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Fetch every given URL once (no link following) and store the responses as WARC.
    Fetch(FetchArgs),
    /// Crawl from seed URLs, following links politely, and store every page as WARC.
    Crawl(CrawlArgs),
    /// Crawl the built-in local test web (loopback only) and report pages/s, CPU and memory.
    Bench(crate::bench::BenchArgs),
    /// Serve the test web for `bench` (internal).
    #[command(name = "__testweb", hide = true)]
    TestWeb(crate::bench::TestWebArgs),
}

#[derive(Args, Debug)]
pub struct CrawlArgs {
    /// Seed URLs (a missing scheme means http://).
    pub seeds: Vec<String>,
    /// A file of seed URLs, one per line (blank lines and `#` comments ignored).
    #[arg(long = "seeds", value_name = "FILE")]
    pub seeds_file: Option<PathBuf>,
    /// Stop after fetching this many pages.
    #[arg(long, value_name = "N")]
    pub max_pages: Option<u64>,
    /// Do not follow links more than this many hops from a seed.
    #[arg(long, value_name = "N")]
    pub max_depth: Option<u32>,
    /// Stop issuing fetches after this many seconds.
    #[arg(long, value_name = "SECS")]
    pub max_time: Option<u64>,
    /// Which URLs to follow: the seeds' hosts, URLs under a seed's directory, or any.
    #[arg(long, value_enum, default_value = "host")]
    pub scope: ScopeArg,
    /// Follow only hosts under this domain suffix (repeatable; e.g. `test`).
    #[arg(long = "allow-domain", value_name = "SUFFIX")]
    pub allow_domains: Vec<String>,
    /// Never follow hosts under this domain suffix (repeatable; beats --allow-domain).
    #[arg(long = "deny-domain", value_name = "SUFFIX")]
    pub deny_domains: Vec<String>,
    /// Minimum gap between two requests to one host.
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    pub delay_ms: u64,
    /// Gap ≥ this × the duration of the host's last fetch.
    #[arg(long, value_name = "X", default_value_t = 5.0)]
    pub delay_factor: f64,
    /// Cap on a robots.txt Crawl-delay.
    #[arg(long, value_name = "SECS", default_value_t = 30)]
    pub max_crawl_delay: u64,
    /// Stop following a host after this many pages.
    #[arg(long, value_name = "N")]
    pub max_pages_per_host: Option<u64>,
    /// Longest URL followed.
    #[arg(long, value_name = "N", default_value_t = crate::url_filter::DEFAULT_MAX_URL_LENGTH)]
    pub max_url_length: usize,
    /// Do not fetch or obey robots.txt (off by default; be sure you may).
    #[arg(long)]
    pub ignore_robots: bool,
    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum ScopeArg {
    Host,
    Prefix,
    Any,
}

#[derive(Args, Debug)]
pub struct FetchArgs {
    /// URLs to fetch.
    pub urls: Vec<String>,
    /// A file of URLs, one per line (blank lines and `#` comments ignored).
    #[arg(long = "urls", value_name = "FILE")]
    pub urls_file: Option<PathBuf>,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Flags shared by every command that fetches.
#[derive(Args, Debug, Clone)]
pub struct CommonArgs {
    /// Output directory (created if missing): WARC files, crawl.log, stats.json.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// DNS server to query, IP or IP:PORT (repeatable; default: the nameservers of /etc/resolv.conf).
    #[arg(long = "dns-server", value_name = "IP[:PORT]")]
    pub dns_servers: Vec<String>,
    /// Hosts file answered without DNS, or `none`.
    #[arg(long, value_name = "PATH|none", default_value = "/etc/hosts")]
    pub hosts_file: String,
    /// Allow connections to loopback, private, link-local, CGNAT and reserved addresses.
    #[arg(long)]
    pub allow_private: bool,
    /// Allow connections to this range even though it is private or reserved (repeatable).
    #[arg(long = "allow-net", value_name = "CIDR")]
    pub allow_nets: Vec<String>,
    /// User-Agent header.
    #[arg(long, value_name = "STR")]
    pub user_agent: Option<String>,
    /// Open HTTP connections in total.
    #[arg(long, value_name = "N", default_value_t = 128)]
    pub max_conns: usize,
    /// Open connections per server IP.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub conns_per_server: usize,
    /// Extra trust anchors (PEM) for HTTPS.
    #[arg(long, value_name = "PEM")]
    pub ca_file: Option<PathBuf>,
    /// Total time to resolve one host name, all retries included.
    #[arg(long, value_name = "MS", default_value_t = 10_000)]
    pub dns_timeout_ms: u64,
    /// Overall time for one HTTP fetch (connect + request + whole response).
    #[arg(long, value_name = "MS", default_value_t = 30_000)]
    pub http_timeout_ms: u64,
    /// Time allowed for the TCP connect (within the HTTP timeout).
    #[arg(long, value_name = "MS", default_value_t = 10_000)]
    pub connect_timeout_ms: u64,
    /// Largest response body accepted, raw and decoded (e.g. 64M).
    #[arg(long, value_name = "BYTES", default_value = "64M", value_parser = parse_size)]
    pub max_body_bytes: u64,
    /// Start a new WARC file when the current one reaches this size (e.g. 1G).
    #[arg(long, value_name = "BYTES", default_value = "1G", value_parser = parse_size)]
    pub warc_max_size: u64,
    /// gzip level of the WARC records (1 fastest … 9 smallest).
    #[arg(long, value_name = "0-9", default_value_t = 1, value_parser = clap::value_parser!(u32).range(0..=9))]
    pub warc_gzip_level: u32,
}

/// A size with an optional K/M/G suffix (binary units).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let (num, mult) = match s.char_indices().last() {
        Some((i, 'k' | 'K')) => (&s[..i], 1u64 << 10),
        Some((i, 'm' | 'M')) => (&s[..i], 1 << 20),
        Some((i, 'g' | 'G')) => (&s[..i], 1 << 30),
        _ => (s, 1),
    };
    let n: u64 = num
        .parse()
        .map_err(|_| format!("`{s}` is not a size (examples: 65536, 64K, 100M, 1G)"))?;
    n.checked_mul(mult)
        .ok_or_else(|| format!("`{s}` is too large"))
}

/// A configuration problem, reported to the user with exit code 2.
#[derive(Debug)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// The binary's entry point.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Fetch(args) => run_fetch(args),
        Command::Crawl(args) => run_crawl(args),
        Command::Bench(args) => crate::bench::run(args),
        Command::TestWeb(args) => crate::bench::serve_test_web(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("spinneret: {e}");
            ExitCode::from(2)
        }
    }
}

/// The working configuration built from [`CommonArgs`].
pub struct Setup {
    pub crawler: CrawlerConfig,
    pub output: OutputConfig,
}

impl CommonArgs {
    pub fn setup(&self) -> Result<Setup, UsageError> {
        if self.max_conns == 0 {
            return Err(UsageError("--max-conns must be at least 1".into()));
        }
        if self.conns_per_server == 0 {
            return Err(UsageError("--conns-per-server must be at least 1".into()));
        }
        let mut servers = Vec::new();
        for s in &self.dns_servers {
            servers.push(parse_dns_server(s)?);
        }
        if servers.is_empty() {
            // No servers is allowed: names then resolve only through the hosts file, and
            // every other name ends as DnsServerUnknown.
            if let Ok(text) = std::fs::read_to_string("/etc/resolv.conf") {
                servers = dns::parse_resolv_conf(&text);
            }
        }
        let hosts = if self.hosts_file == "none" {
            Default::default()
        } else {
            match std::fs::read_to_string(&self.hosts_file) {
                Ok(text) => dns::parse_hosts(&text),
                // The default /etc/hosts may be missing on a minimal system; a named file not.
                Err(_) if self.hosts_file == "/etc/hosts" => Default::default(),
                Err(e) => return Err(UsageError(format!("--hosts-file {}: {e}", self.hosts_file))),
            }
        };
        let mut allow_nets = Vec::new();
        for s in &self.allow_nets {
            let net: Cidr = s
                .parse()
                .map_err(|e| UsageError(format!("--allow-net {s}: {e}")))?;
            allow_nets.push(net);
        }
        let tls = crate::tls::client_config(self.ca_file.as_deref())
            .map_err(|e| UsageError(e.to_string()))?;
        let resolver = ResolverConfig {
            servers,
            hosts,
            total_timeout: Duration::from_millis(self.dns_timeout_ms.max(1)),
            ..ResolverConfig::default()
        };
        let limits = Limits {
            max_body_bytes: self.max_body_bytes,
            max_decoded_bytes: self.max_body_bytes,
            // Chunk-size lines cost ~8 bytes per chunk: allow bodies in chunks of ≥ ~128 bytes.
            max_framing_bytes: usize::try_from(self.max_body_bytes / 16)
                .unwrap_or(usize::MAX)
                .max(crate::http::DEFAULT_MAX_FRAMING_BYTES),
            ..Limits::default()
        };
        let user_agent = self.user_agent.clone().unwrap_or_else(default_user_agent);
        Ok(Setup {
            crawler: CrawlerConfig {
                max_conns: self.max_conns,
                conns_per_server: self.conns_per_server,
                max_live: (self.max_conns * 4).max(64),
                user_agent,
                resolver,
                limits,
                http_timeout: Duration::from_millis(self.http_timeout_ms.max(1)),
                connect_timeout: Duration::from_millis(self.connect_timeout_ms.max(1)),
                idle_timeout: Duration::from_secs(15),
                addr_policy: AddrPolicy::new(self.allow_private, allow_nets),
                tls,
                accept_encoding: true,
            },
            output: OutputConfig {
                dir: self.out.clone(),
                warc_prefix: "spinneret".into(),
                warc_max_size: self.warc_max_size,
                gzip_level: self.warc_gzip_level,
                software: format!("spinneret/{}", env!("CARGO_PKG_VERSION")),
            },
        })
    }
}

pub fn default_user_agent() -> String {
    format!(
        "spinneret/{} (+{})",
        env!("CARGO_PKG_VERSION"),
        env!("CARGO_PKG_REPOSITORY")
    )
}

fn parse_dns_server(s: &str) -> Result<SocketAddr, UsageError> {
    if let Ok(addr) = s.parse::<SocketAddr>() {
        return Ok(addr);
    }
    if let Ok(ip) = s.parse::<std::net::IpAddr>() {
        return Ok(SocketAddr::new(ip, 53));
    }
    Err(UsageError(format!(
        "--dns-server {s}: expected IP or IP:PORT (e.g. 127.0.0.1:5353 or [::1]:53)"
    )))
}

/// Reads a URL list: one per line, blank lines and `#` comments skipped. Returns the lines
/// with their line numbers.
pub fn read_url_file(path: &Path) -> Result<Vec<(usize, String)>, UsageError> {
    let file =
        std::fs::File::open(path).map_err(|e| UsageError(format!("{}: {e}", path.display())))?;
    let mut out = Vec::new();
    for (i, line) in io::BufReader::new(file).lines().enumerate() {
        let line =
            line.map_err(|e| UsageError(format!("{}: line {}: {e}", path.display(), i + 1)))?;
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        out.push((i + 1, t.to_string()));
    }
    Ok(out)
}

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
    loop {
        if interrupted() {
            crawler.interrupt(source);
            return match source.take_io_error() {
                Some(e) => Err(Box::new(e)),
                None => Ok(true),
            };
        }
        if crawler.turn(source)? == Turn::Finished {
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

impl StoringSource for crate::crawl::Crawl {
    fn take_io_error(&mut self) -> Option<io::Error> {
        self.io_error.take()
    }

    fn output(&mut self) -> &mut Output {
        crate::crawl::Crawl::output(self)
    }
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

    fn fetch_done(&mut self, done: &FetchDone<'_>) {
        if let Err(e) = self.output.record(done, None) {
            self.io_error.get_or_insert(e);
        }
    }
}

fn run_fetch(args: FetchArgs) -> Result<(), Box<dyn std::error::Error>> {
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
    let mut crawler = Crawler::new(setup.crawler)?;
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

/// Prints a stats line every few seconds.
pub struct Progress {
    started: Instant,
    next: Instant,
    last_ok: u64,
    last_bytes: u64,
    last_at: Instant,
}

impl Progress {
    pub fn new(started: Instant) -> Progress {
        Progress {
            started,
            next: started + STATS_INTERVAL,
            last_ok: 0,
            last_bytes: 0,
            last_at: started,
        }
    }

    /// Prints the line when it is due; returns whether it did (the caller then also flushes
    /// the log and WARC, so `tail -f crawl.log` follows the run and a crash loses little).
    ///
    /// `stats` is called only when a line is due: collecting them walks every live fetch, which
    /// is too much to do on every loop turn.
    pub fn maybe_print(&mut self, stats: impl FnOnce() -> LoopStats) -> bool {
        let now = Instant::now();
        if now < self.next {
            return false;
        }
        let s = &stats();
        self.next = now + STATS_INTERVAL;
        let secs = now.duration_since(self.last_at).as_secs_f64().max(1e-6);
        let fetched = s.outcomes.total();
        let rate = (fetched - self.last_ok) as f64 / secs;
        let mbs = (s.bytes_received - self.last_bytes) as f64 / secs / 1e6;
        self.last_ok = fetched;
        self.last_bytes = s.bytes_received;
        self.last_at = now;
        let _ = writeln!(
            io::stderr(),
            "[{:>6.1}s] fetched {} | {:.0} pages/s | {:.1} MB/s | live {} (dns {}, http wait {}) | conns {} | errors {}",
            now.duration_since(self.started).as_secs_f64(),
            fetched,
            rate,
            mbs,
            s.live,
            s.waiting_dns,
            s.waiting_http,
            s.conns_open,
            s.outcomes.failed(),
        );
        true
    }
}

/// The end-of-run figures, as a stderr line and as `stats.json`.
pub struct Summary<'a> {
    pub urls: u64,
    pub stats: &'a LoopStats,
    pub body_bytes: u64,
    pub elapsed: Duration,
    pub warc_files: usize,
}

impl Summary<'_> {
    pub fn pages_per_sec(&self) -> f64 {
        self.stats.outcomes.total() as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    pub fn json(&self, extra: &[(&str, u64)]) -> JsonObject {
        let (cpu, rss) = process_usage();
        let failures: Vec<(&str, u64)> = self
            .stats
            .outcomes
            .failures()
            .into_iter()
            .map(|(c, n)| (c.name(), n))
            .collect();
        let mut j = JsonObject::new();
        j.uint("urls", self.urls)
            .uint("ok", self.stats.outcomes.get(ReturnCode::Success))
            .uint("failed_total", self.stats.outcomes.failed())
            .counts("failed", &failures)
            .uint("bytes", self.stats.bytes_received)
            .uint("body_bytes", self.body_bytes)
            .float("seconds", self.elapsed.as_secs_f64())
            .float("pages_per_sec", self.pages_per_sec())
            .uint("peak_live_fetches", self.stats.peak_live as u64)
            .uint("dns_queries_sent", self.stats.dns_queries_sent)
            .uint("dns_cache_hits", self.stats.dns_cache_hits)
            .uint("connections_opened", self.stats.conns_opened)
            .uint("connections_reused", self.stats.conns_reused)
            .uint("stale_connection_retries", self.stats.stale_retries)
            .uint("warc_files", self.warc_files as u64)
            .float("cpu_seconds", cpu.as_secs_f64())
            .uint("peak_rss_bytes", rss);
        for &(k, v) in extra {
            j.uint(k, v);
        }
        j
    }

    pub fn line(&self) -> String {
        let failures: Vec<String> = self
            .stats
            .outcomes
            .failures()
            .iter()
            .take(5)
            .map(|(c, n)| format!("{c} {n}"))
            .collect();
        format!(
            "done: {} URLs, {} ok, {} failed{} in {:.2}s ({:.0} pages/s, {:.1} MB), {} WARC file(s)",
            self.urls,
            self.stats.outcomes.get(ReturnCode::Success),
            self.stats.outcomes.failed(),
            if failures.is_empty() {
                String::new()
            } else {
                format!(" ({})", failures.join(", "))
            },
            self.elapsed.as_secs_f64(),
            self.pages_per_sec(),
            self.stats.bytes_received as f64 / 1e6,
            self.warc_files,
        )
    }
}

// ---- crawl ----

fn run_crawl(args: CrawlArgs) -> Result<(), Box<dyn std::error::Error>> {
    use crate::crawl::CrawlConfig;
    use crate::url_filter::{FilterConfig, Scope};

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
        match crate::urlnorm::parse_seed(s) {
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
        filter,
        max_pages: args.max_pages,
        max_time: args.max_time.map(Duration::from_secs),
        delay: Duration::from_millis(args.delay_ms),
        delay_factor: args.delay_factor,
        max_crawl_delay: Duration::from_secs(args.max_crawl_delay),
        ignore_robots: args.ignore_robots,
        product_token: "spinneret".into(),
        back_queues: setup.crawler.max_conns * 3,
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

/// Everything a finished crawl reports.
pub struct CrawlReport {
    pub stats: LoopStats,
    pub counters: crate::crawl::CrawlCounters,
    pub frontier_left: u64,
    pub urls_seen: u64,
    pub seen_bytes_per_url: f64,
    pub rejections: Vec<(&'static str, u64)>,
    pub body_bytes: u64,
    pub warc_files: Vec<PathBuf>,
    pub out_dir: PathBuf,
    pub elapsed: Duration,
    pub interrupted: bool,
}

impl CrawlReport {
    fn summary(&self) -> Summary<'_> {
        Summary {
            urls: self.stats.outcomes.total(),
            stats: &self.stats,
            body_bytes: self.body_bytes,
            elapsed: self.elapsed,
            warc_files: self.warc_files.len(),
        }
    }

    pub fn json(&self) -> JsonObject {
        let c = &self.counters;
        let mut json = self.summary().json(&[
            ("pages_fetched", c.pages_fetched),
            ("robots_fetched", c.robots_fetched),
            ("frontier_size", self.frontier_left),
            ("urls_seen", self.urls_seen),
            ("links_found", c.links_found),
            ("duplicate_urls_skipped", c.duplicate_urls),
            ("duplicate_content", c.duplicate_content),
            ("robots_excluded", c.robots_excluded),
            ("redirects_followed", c.redirects_followed),
            ("too_many_redirects", c.too_many_redirects),
            ("bad_links", c.bad_links),
            (
                "trap_guard_rejections",
                self.rejections.iter().map(|&(_, n)| n).sum(),
            ),
        ]);
        json.counts("rejected", &self.rejections)
            .float("seen_bytes_per_url", self.seen_bytes_per_url);
        json
    }

    pub fn line(&self) -> String {
        format!(
            "{}; {} URLs seen, {} duplicates skipped, {} robots exclusions, {:.1} bytes/seen URL",
            self.summary().line(),
            self.urls_seen,
            self.counters.duplicate_urls,
            self.counters.robots_excluded,
            self.seen_bytes_per_url
        )
    }
}

/// Runs a crawl from `seeds` to completion (or Ctrl-C) and closes its output.
pub fn execute_crawl(
    setup: Setup,
    config: crate::crawl::CrawlConfig,
    seeds: Vec<url::Url>,
    show_progress: bool,
) -> Result<CrawlReport, Box<dyn std::error::Error>> {
    use crate::crawl::Crawl;

    let output = Output::create(&setup.output)?;
    let mut crawler = Crawler::new(setup.crawler)?;
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
    let output = crawl.into_output();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("65536"), Ok(65536));
        assert_eq!(parse_size("64K"), Ok(65536));
        assert_eq!(parse_size("100m"), Ok(100 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert!(parse_size("x").is_err());
        assert!(parse_size("-1").is_err());
        assert!(parse_size("99999999999999999999G").is_err());
    }

    #[test]
    fn dns_server_flags() {
        assert_eq!(
            parse_dns_server("127.0.0.1").unwrap(),
            "127.0.0.1:53".parse().unwrap()
        );
        assert_eq!(
            parse_dns_server("127.0.0.1:5353").unwrap(),
            "127.0.0.1:5353".parse().unwrap()
        );
        assert_eq!(
            parse_dns_server("::1").unwrap(),
            "[::1]:53".parse().unwrap()
        );
        assert!(parse_dns_server("localhost").is_err());
    }

    #[test]
    fn cli_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
