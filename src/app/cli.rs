//! The `spinneret` command line: flags → validated configuration → a run → an exit code.
//!
//! As in ripgrep, clap parses flags into plain argument structs, which are then checked and
//! turned into the working configuration ([`CrawlerConfig`], [`OutputConfig`]); only this
//! module turns errors into messages for people. Subcommands:
//! - `fetch`: every given URL once, no link following;
//! - `crawl`: follow links from seeds through [`crate::crawl::Crawl`];
//! - `bench`: crawl the built-in test web and report speed ([`crate::app::bench`]);
//! - `help outcomes`: what each crawl.log outcome means.
//!
//! Flag names follow wget and curl where they have one (`-i`, `-o`, `-l`, `-w`, `-q`, `-v`,
//! `--header`, `--max-redirect`, `--accept-regex`, `--reject-regex`); everything a run is
//! given is validated before anything starts.

use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::app::cluster::ClusterConfig;
use crate::app::exit::{usage, Failure};
use crate::crawl::splitter::MAX_PARTITIONS;
use crate::dns::{self, ResolverConfig};
use crate::fetcher::addr_policy::{AddrPolicy, Cidr};
use crate::fetcher::CrawlerConfig;
use crate::http::Limits;
use crate::store::archive::output::OutputConfig;

/// `--max-conns` unless given: what `crawl` and `fetch` open, and what `bench` measures.
pub const DEFAULT_MAX_CONNS: usize = 128;
/// `crawl --delay-factor` unless given (`bench` uses it too).
pub const DEFAULT_DELAY_FACTOR: f64 = 5.0;

/// The exit statuses, shown by `--help` (the one table; `run::ExitStatus` decides them).
pub const EXIT_CODES_HELP: &str = "\
Exit status (when several apply, the first listed wins):
  3  output error: the WARC files, crawl.log or stats.json could not be written, or a
     body could not be spooled to disk (SpoolFailed)
  9  stopped before the work was done: Ctrl-C or --max-time
  4  some URLs got no complete HTTP response: bad URL, DNS failure, blocked address
     (PrivateAddressBlocked), connection, TLS, timeout, malformed response, robots.txt
     unreachable
  8  some URLs got an HTTP error status (4xx/5xx) or too many redirects
  0  everything else: every URL fetched with a 2xx/3xx, or deliberately not fetched
     (robots.txt, --scope and other filters, --max-pages)
  2  usage error: bad flags or input (nothing was started)
  1  the crawler itself failed (e.g. no sockets)
Every URL's outcome is in OUT/crawl.log; `spinneret help outcomes` lists them.";

#[derive(Parser, Debug)]
#[command(
    name = "spinneret",
    version,
    about = "A fast, polite web crawler writing WARC files",
    after_help = EXIT_CODES_HELP,
    disable_help_subcommand = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

// Parsed once per process: the size of the largest variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Fetch every given URL once (no link following) and store the responses as WARC.
    Fetch(FetchArgs),
    /// Crawl from seed URLs, following links politely, and store every page as WARC.
    Crawl(CrawlArgs),
    /// Continue a crawl stopped by Ctrl-C, --max-time, a kill or a power cut.
    Resume(ResumeArgs),
    /// Print the progress of a crawl spread over nodes (`crawl --cluster`): pages, pages/s
    /// and queue per node.
    ClusterStatus(ClusterStatusArgs),
    /// Crawl the built-in local test web (loopback only) and report pages/s, CPU and memory.
    Bench(crate::app::bench::BenchArgs),
    /// Serve the test web for `bench` (internal).
    #[command(name = "__testweb", hide = true)]
    TestWeb(crate::app::bench::TestWebArgs),
    /// Help on a command, or on a topic: `outcomes` (what each crawl.log outcome means).
    Help(HelpArgs),
}

#[derive(Args, Debug)]
pub struct ClusterStatusArgs {
    /// The cluster's Redis, as given to `crawl --cluster`.
    #[arg(long, value_name = "URL")]
    pub cluster: String,
}

#[derive(Args, Debug)]
pub struct HelpArgs {
    /// `outcomes`, or a command name.
    pub topic: Option<String>,
}

#[derive(Args, Debug)]
#[command(after_help = EXIT_CODES_HELP)]
pub struct CrawlArgs {
    /// Seed URLs (a missing scheme means http://).
    pub seeds: Vec<String>,
    /// A file of seed URLs, one per line (blank lines and `#` comments ignored).
    #[arg(
        short = 'i',
        long = "input-file",
        visible_alias = "seeds",
        value_name = "FILE"
    )]
    pub seeds_file: Option<PathBuf>,
    /// Stop after fetching this many pages (URLs still queued stay queued for `resume`).
    #[arg(long, value_name = "N")]
    pub max_pages: Option<u64>,
    /// Do not follow links more than this many hops from a seed.
    #[arg(short = 'l', long, value_name = "N")]
    pub max_depth: Option<u32>,
    /// Stop after this many seconds: fetches in flight end as Interrupted, URLs still queued
    /// stay queued for `spinneret resume`, and the exit status is 9.
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
    /// Only follow links whose URL matches this regular expression (seeds are always fetched).
    #[arg(long, value_name = "REGEX")]
    pub accept_regex: Option<String>,
    /// Do not follow links whose URL matches this regular expression.
    #[arg(long, value_name = "REGEX")]
    pub reject_regex: Option<String>,
    /// Do not follow links to files with these extensions (comma-separated or repeated,
    /// e.g. `pdf,zip`).
    #[arg(long, value_name = "EXT[,EXT…]", value_delimiter = ',')]
    pub reject_ext: Vec<String>,
    #[command(flatten)]
    pub delay: DelayArgs,
    /// Gap ≥ this × the duration of the host's last fetch.
    #[arg(long, value_name = "X", default_value_t = DEFAULT_DELAY_FACTOR)]
    pub delay_factor: f64,
    /// Cap on a robots.txt Crawl-delay.
    #[arg(long, value_name = "SECS", default_value_t = 30)]
    pub max_crawl_delay: u64,
    /// Tries after a 429 or 503 answer, each after the server's Retry-After, before the
    /// answer stands.
    #[arg(long, value_name = "N", default_value_t = crate::crawl::DEFAULT_MAX_RETRIES)]
    pub max_retries: u8,
    /// Longest wait a server's Retry-After can impose on its host.
    #[arg(long, value_name = "SECS", default_value_t = crate::crawl::DEFAULT_MAX_RETRY_AFTER.as_secs())]
    pub max_retry_after: u64,
    /// Stop following a host after this many pages.
    #[arg(long, value_name = "N")]
    pub max_pages_per_host: Option<u64>,
    /// Longest URL followed.
    #[arg(long, value_name = "N", default_value_t = crate::crawl::url_filter::DEFAULT_MAX_URL_LENGTH)]
    pub max_url_length: usize,
    /// Do not fetch or obey robots.txt (off by default; be sure you may).
    #[arg(long)]
    pub ignore_robots: bool,
    /// Links admitted from one page at most.
    #[arg(long, value_name = "N", default_value_t = crate::crawl::DEFAULT_MAX_LINKS_PER_PAGE)]
    pub max_links_per_page: usize,
    /// Do not fetch what pages need to render (images, scripts, stylesheets, CSS url()s).
    /// By default they are fetched, even outside --scope, so archived pages replay whole.
    #[arg(long)]
    pub no_page_requisites: bool,
    /// Fetch page requisites (the default; the flag exists for symmetry with wget's -p).
    #[arg(short = 'p', long, conflicts_with = "no_page_requisites")]
    pub page_requisites: bool,
    /// How often WARC files, crawl.log and the crawl's journal are fsynced (what a power cut
    /// can lose; a kill or Ctrl-C loses nothing either way).
    #[arg(long, value_name = "SECS", default_value_t = 60)]
    pub checkpoint_secs: u64,
    /// Memory for queued URLs; past it the frontier spills to segment files in OUT.
    #[arg(long, value_name = "BYTES", value_parser = parse_size, default_value = "32M")]
    pub frontier_ram: u64,
    /// Event loops (threads), each owning the hosts the host splitter gives it; connections,
    /// --max-pages and --frontier-ram are divided among them. WARC files are named PREFIX-pK-….
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub loops: usize,
    /// Run as one node of a crawl spread over machines, coordinated through this Redis
    /// (redis://HOST:PORT/): each node owns the hosts the host splitter gives it and
    /// exchanges URLs with the others through Redis Streams. Seeds may be given to any node.
    #[arg(long, value_name = "URL", requires_all = ["cluster_nodes", "cluster_node"])]
    pub cluster: Option<String>,
    /// Nodes in the cluster (every node is given the same number).
    #[arg(long, value_name = "N", requires = "cluster")]
    pub cluster_nodes: Option<u32>,
    /// This node's number, 0 to N-1.
    #[arg(long, value_name = "K", requires = "cluster")]
    pub cluster_node: Option<u32>,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// `spinneret resume DIR`: the crawl recorded in DIR, with a few settings changed.
#[derive(Args, Debug)]
#[command(after_help = EXIT_CODES_HELP)]
pub struct ResumeArgs {
    /// The crawl's output directory (its `--out`).
    pub dir: PathBuf,
    /// Stop after this many more seconds.
    #[arg(long, value_name = "SECS")]
    pub max_time: Option<u64>,
    /// Stop after fetching this many more pages.
    #[arg(long, value_name = "N")]
    pub max_pages: Option<u64>,
    /// Open HTTP connections in total.
    #[arg(long, value_name = "N")]
    pub max_conns: Option<usize>,
    #[command(flatten)]
    pub delay: DelayArgs,
    /// Gap ≥ this × the duration of the host's last fetch.
    #[arg(long, value_name = "X")]
    pub delay_factor: Option<f64>,
    /// No progress or summary on stderr.
    #[arg(short, long)]
    pub quiet: bool,
}

/// `-w/--delay` and `--delay-ms`, declared once for `crawl`, `fetch` and `resume`.
#[derive(Args, Debug, Clone, Default)]
pub struct DelayArgs {
    /// Minimum gap between two requests to one host, in seconds (default 1; `resume` keeps
    /// the crawl's unless given).
    #[arg(
        short = 'w',
        long = "delay",
        value_name = "SECS",
        conflicts_with = "delay_ms"
    )]
    pub delay_secs: Option<f64>,
    /// Minimum gap between two requests to one host, in milliseconds.
    #[arg(long, value_name = "MS")]
    pub delay_ms: Option<u64>,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum ScopeArg {
    Host,
    Prefix,
    Any,
}

#[derive(Args, Debug)]
#[command(after_help = EXIT_CODES_HELP)]
pub struct FetchArgs {
    /// URLs to fetch.
    pub urls: Vec<String>,
    /// A file of URLs, one per line (blank lines and `#` comments ignored).
    #[arg(
        short = 'i',
        long = "input-file",
        visible_alias = "urls",
        value_name = "FILE"
    )]
    pub urls_file: Option<PathBuf>,
    /// Log a redirect (3xx) as it is and do not fetch its Location.
    #[arg(long)]
    pub no_follow_redirects: bool,
    #[command(flatten)]
    pub delay: DelayArgs,
    /// Longest URL fetched: a longer line of the list is logged as UrlTooLong.
    #[arg(long, value_name = "N", default_value_t = crate::crawl::url_filter::DEFAULT_MAX_URL_LENGTH)]
    pub max_url_length: usize,
    /// Memory for URLs of the list read ahead; past it they wait in files in OUT.
    #[arg(long, value_name = "BYTES", value_parser = parse_size, default_value = "16M")]
    pub frontier_ram: u64,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Flags shared by every command that fetches.
#[derive(Args, Debug, Clone)]
pub struct CommonArgs {
    /// Output directory (created if missing): WARC files, crawl.log, stats.json.
    #[arg(short = 'o', long, value_name = "DIR")]
    pub out: PathBuf,
    /// No progress and no summary on stderr (warnings and errors still).
    #[arg(short = 'q', long, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Also print every crawl.log line's outcome, status and URL on stderr.
    #[arg(short = 'v', long)]
    pub verbose: bool,
    /// Extra request header, `Name: value` (repeatable).
    #[arg(long = "header", value_name = "NAME: VALUE")]
    pub headers: Vec<String>,
    /// Redirect hops followed from a URL (0: none).
    #[arg(long, value_name = "N", default_value_t = crate::crawl::MAX_REDIRECTS)]
    pub max_redirect: u8,
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
    /// HTTP connections carrying a request at once (fetches in flight).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_CONNS)]
    pub max_conns: usize,
    /// Open sockets in all, idle kept-alive ones included: how many hosts are worked on at
    /// once, each keeping its connection between requests [default: 4096, less if the
    /// open-files limit is lower].
    #[arg(long, value_name = "N")]
    pub max_sockets: Option<usize>,
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
    /// Give response records a WARC-Block-Digest (SHA-1 of HTTP head and body). Optional in
    /// WARC; it costs a second SHA-1 pass over every body (about 6 % more CPU): the payload
    /// digest and gzip's CRC-32 already cover the body. Other records always have one.
    #[arg(long)]
    pub warc_block_digest: bool,
    /// Decoded content scanned for links per page (e.g. 4M); links past it are not followed.
    #[arg(long, value_name = "BYTES", default_value = "4M", value_parser = parse_size)]
    pub max_scan_bytes: u64,
    /// Response bytes all fetches together keep in memory; past it, bodies go to a spool file
    /// in the output directory (a body over 256K always does).
    #[arg(long, value_name = "BYTES", default_value = "64M", value_parser = parse_size)]
    pub max_buffer_bytes: u64,
    /// Keep no cookies. By default the cookies sites set are kept for the run and sent back
    /// (as wget does), within bounds per site and in all.
    #[arg(long)]
    pub no_cookies: bool,
    /// Start with the cookies of FILE, in the cookies.txt format `wget --save-cookies` and
    /// `curl -c` write.
    #[arg(long, value_name = "FILE", conflicts_with = "no_cookies")]
    pub load_cookies: Option<PathBuf>,
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

/// The working configuration built from [`CommonArgs`].
pub struct Setup {
    pub crawler: CrawlerConfig,
    pub output: OutputConfig,
}

impl CommonArgs {
    pub fn setup(&self) -> Result<Setup, UsageError> {
        if let Some(ua) = &self.user_agent {
            if let Some(c) = ua.chars().find(|c| c.is_control()) {
                return Err(UsageError(format!(
                    "--user-agent {}: contains the control character {c:?}",
                    abbrev(ua, 80)
                )));
            }
        }
        let mut headers = Vec::new();
        for h in &self.headers {
            headers.push(parse_header(h)?);
        }
        if self.max_conns == 0 {
            return Err(UsageError("--max-conns must be at least 1".into()));
        }
        if self.max_sockets == Some(0) {
            return Err(UsageError("--max-sockets must be at least 1".into()));
        }
        for (flag, ms) in [
            ("--dns-timeout-ms", self.dns_timeout_ms),
            ("--http-timeout-ms", self.http_timeout_ms),
            ("--connect-timeout-ms", self.connect_timeout_ms),
        ] {
            if ms == 0 {
                return Err(UsageError(format!("{flag} must be at least 1")));
            }
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
        let ca_pem = match &self.ca_file {
            Some(path) => Some(
                std::fs::read(path)
                    .map_err(|e| UsageError(format!("--ca-file {}: {e}", path.display())))?,
            ),
            None => None,
        };
        let tls = crate::fetcher::tls::client_config(ca_pem.as_deref()).map_err(|e| {
            let path = self.ca_file.as_deref().unwrap_or(Path::new(""));
            UsageError(format!("--ca-file {}: {e}", path.display()))
        })?;
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
        let mut crawler = CrawlerConfig::new(self.max_conns, resolver, tls);
        crawler.max_sockets = crate::app::fd_limit::socket_budget(
            self.max_sockets,
            self.max_conns,
            crate::app::fd_limit::raise_nofile(),
        );
        crawler.conns_per_server = self.conns_per_server;
        if let Some(ua) = &self.user_agent {
            crawler.user_agent = ua.clone();
        }
        crawler.extra_headers = headers;
        crawler.limits = limits;
        crawler.http_timeout = Duration::from_millis(self.http_timeout_ms.max(1));
        crawler.connect_timeout = Duration::from_millis(self.connect_timeout_ms.max(1));
        crawler.addr_policy = AddrPolicy::new(self.allow_private, allow_nets);
        crawler.max_scan_bytes = usize::try_from(self.max_scan_bytes).unwrap_or(usize::MAX);
        crawler.max_buffer_bytes = usize::try_from(self.max_buffer_bytes).unwrap_or(usize::MAX);
        let mut output = OutputConfig::new(self.out.clone(), "spinneret");
        output.warc_max_size = self.warc_max_size;
        output.gzip_level = self.warc_gzip_level;
        output.response_block_digest = self.warc_block_digest;
        output.command_line = Some(command_line());
        output.options = self.options(&crawler);
        Ok(Setup { crawler, output })
    }

    /// The cookie jar these flags ask for, with `--load-cookies`'s file read. A file in which
    /// no line is a usable cookie is refused: it is probably not a cookies.txt file.
    pub fn cookies(&self) -> Result<crate::crawl::CookieConfig, UsageError> {
        let mut config = crate::crawl::CookieConfig {
            enabled: !self.no_cookies,
            ..Default::default()
        };
        if let Some(path) = &self.load_cookies {
            let text = std::fs::read_to_string(path)
                .map_err(|e| UsageError(format!("--load-cookies {}: {e}", path.display())))?;
            let mut jar = crate::http::cookies::CookieJar::new(config.limits);
            let loaded = jar.load_netscape(&text, std::time::SystemTime::now());
            if loaded.cookies == 0 && loaded.skipped > 0 {
                return Err(UsageError(format!(
                    "--load-cookies {}: none of its {} cookie lines is an unexpired cookie in \
                     the cookies.txt format",
                    path.display(),
                    loaded.skipped
                )));
            }
            config.load = Some(text.into());
        }
        Ok(config)
    }

    /// The effective settings of these flags, for the warcinfo record (provenance: what a
    /// reader of the archive needs to know of how it was made).
    fn options(&self, crawler: &CrawlerConfig) -> Vec<(String, String)> {
        let mut o: Vec<(String, String)> = vec![
            ("user-agent".into(), crawler.user_agent.clone()),
            ("max-conns".into(), self.max_conns.to_string()),
            ("max-sockets".into(), crawler.max_sockets.to_string()),
            ("conns-per-server".into(), self.conns_per_server.to_string()),
            ("max-body-bytes".into(), self.max_body_bytes.to_string()),
            ("max-scan-bytes".into(), self.max_scan_bytes.to_string()),
            ("max-redirect".into(), self.max_redirect.to_string()),
            ("http-timeout-ms".into(), self.http_timeout_ms.to_string()),
            (
                "connect-timeout-ms".into(),
                self.connect_timeout_ms.to_string(),
            ),
            ("dns-timeout-ms".into(), self.dns_timeout_ms.to_string()),
            ("allow-private".into(), self.allow_private.to_string()),
            ("cookies".into(), (!self.no_cookies).to_string()),
            (
                "warc-block-digest".into(),
                self.warc_block_digest.to_string(),
            ),
        ];
        for h in &self.headers {
            o.push(("header".into(), h.clone()));
        }
        for n in &self.allow_nets {
            o.push(("allow-net".into(), n.clone()));
        }
        o
    }
}

/// This process's command line, arguments quoted where a shell would need it.
pub fn command_line() -> String {
    let mut out = String::new();
    for (i, arg) in std::env::args().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        let plain = !arg.is_empty()
            && arg
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_./:=,@%+".contains(&b));
        if plain {
            out.push_str(&arg);
        } else {
            out.push('\'');
            out.push_str(&arg.replace('\'', "'\\''"));
            out.push('\'');
        }
    }
    out
}

/// Header names the fetcher writes itself: a second one would break the request's framing
/// or contradict what the crawler does with the response.
const RESERVED_HEADERS: &[&str] = &[
    "host",
    "connection",
    "content-length",
    "transfer-encoding",
    "accept-encoding",
    "te",
    "upgrade",
    "user-agent",
];

/// `Name: value` as curl and wget take it: a token name, a value without control
/// characters (tab allowed), neither empty.
pub fn parse_header(h: &str) -> Result<(String, String), UsageError> {
    let bad = |why: &str| UsageError(format!("--header {}: {why}", abbrev(h, 80)));
    let Some((name, value)) = h.split_once(':') else {
        return Err(bad("expected `Name: value`"));
    };
    let value = value.trim_matches([' ', '\t']);
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
    {
        return Err(bad(
            "the name must be a token (letters, digits, `-` …) with no spaces",
        ));
    }
    if value.chars().any(|c| c.is_control() && c != '\t') {
        return Err(bad("the value contains a control character"));
    }
    if RESERVED_HEADERS
        .iter()
        .any(|r| r.eq_ignore_ascii_case(name))
    {
        return Err(bad(if name.eq_ignore_ascii_case("user-agent") {
            "use --user-agent"
        } else {
            "this header is set by spinneret itself"
        }));
    }
    Ok((name.to_string(), value.to_string()))
}

/// `s` for a message: control characters escaped, and cut to about `max` characters with
/// the full length said (a 10 KB URL must not flood the terminal).
pub fn abbrev(s: &str, max: usize) -> String {
    let escaped: String = s.chars().flat_map(char::escape_debug).collect();
    let n = escaped.chars().count();
    if n <= max {
        return escaped;
    }
    let keep = max.saturating_sub(20).max(8);
    let head: String = escaped.chars().take(keep).collect();
    format!("{head}… ({} bytes)", s.len())
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

impl CrawlArgs {
    /// The cluster a crawl node joins, checked.
    pub(crate) fn cluster_config(&self) -> Result<Option<ClusterConfig>, Failure> {
        let (Some(url), Some(nodes), Some(node)) =
            (&self.cluster, self.cluster_nodes, self.cluster_node)
        else {
            return Ok(None);
        };
        if nodes == 0 || nodes > MAX_PARTITIONS {
            return Err(usage(format!(
                "--cluster-nodes {nodes}: give 1 to {MAX_PARTITIONS}"
            )));
        }
        if node >= nodes {
            return Err(usage(format!(
                "--cluster-node {node}: nodes are numbered 0 to {}",
                nodes - 1
            )));
        }
        if self.loops > 1 {
            return Err(usage("--loops and --cluster: a cluster node runs one loop"));
        }
        if !url.starts_with("redis://") {
            return Err(usage(format!(
                "--cluster {url}: expected redis://HOST:PORT/"
            )));
        }
        Ok(Some(ClusterConfig {
            url: url.clone(),
            nodes,
            node,
        }))
    }
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
    fn headers() {
        assert_eq!(
            parse_header("X-Test:  a b\t").unwrap(),
            ("X-Test".to_string(), "a b".to_string())
        );
        assert_eq!(
            parse_header("Accept-Language: fr").unwrap().1,
            "fr".to_string()
        );
        for bad in [
            "no colon",
            ": v",
            "Bad Name: v",
            "X: a\r\nY: b",
            "X: \u{7f}",
            "Host: evil",
            "content-length: 5",
            "User-Agent: x",
        ] {
            assert!(parse_header(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn abbreviations() {
        assert_eq!(abbrev("http://a/", 80), "http://a/");
        assert_eq!(abbrev("a\r\nb", 80), "a\\r\\nb");
        let long = format!("http://a/{}", "x".repeat(10_000));
        let a = abbrev(&long, 80);
        assert!(a.chars().count() < 100, "{a}");
        assert!(a.ends_with("(10009 bytes)"), "{a}");
    }

    #[test]
    fn cli_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
