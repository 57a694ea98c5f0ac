//! The `spinneret` command line's flags, declared once each: what the user may type, with
//! its help and its default (taken from the constant beside the setting it feeds, so a
//! default is written once).
//!
//! As in ripgrep, clap parses flags into plain argument structs; [`super::config`] checks
//! them and turns them into the working configuration. Flags several commands share are
//! declared once here and flattened into each ([`InputArgs`], [`LimitArgs`], [`DelayArgs`],
//! [`CommonArgs`]). Subcommands:
//! - `fetch`: every given URL once, no link following;
//! - `crawl`: follow links from seeds through [`crate::crawl::Crawl`];
//! - `graph`: the crawl's link graph, compressed ([`crate::app::graph`]);
//! - `bench`: crawl the local test web and report speed ([`crate::app::bench`]);
//! - `help outcomes`: what each crawl.log outcome means.
//!
//! Flag names follow wget and curl where they have one (`-i`, `-o`, `-l`, `-w`, `-q`, `-v`,
//! `--header`, `--max-redirect`, `--accept-regex`, `--reject-regex`); everything a run is
//! given is validated before anything starts.

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::crawl::{DEFAULT_DELAY_FACTOR, DEFAULT_MAX_CRAWL_DELAY};
use crate::fetcher::{
    DEFAULT_CONNECT_TIMEOUT, DEFAULT_HTTP_TIMEOUT, DEFAULT_MAX_BUFFER_BYTES, DEFAULT_MAX_CONNS,
    DEFAULT_MAX_SCAN_BYTES,
};
use crate::store::archive::output::{
    DEFAULT_CHECKPOINT_SECS, DEFAULT_GZIP_LEVEL, DEFAULT_WARC_MAX_SIZE,
};

/// Milliseconds of a default duration, for a `--…-ms` flag's default.
const fn ms(d: Duration) -> u64 {
    d.as_millis() as u64
}

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
  5  `stop`: no crawl was running in DIR (nothing was signalled)
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
    /// Say whether the crawl in DIR is running, stopped or finished, with its latest figures
    /// (read from DIR alone).
    Status(StatusArgs),
    /// Stop the crawl running in DIR as Ctrl-C does (resumably) and wait until it has ended.
    Stop(StopArgs),
    /// Add seeds to a crawl: a running one takes them within a second, a stopped one when
    /// it is resumed. Scope and robots.txt rules apply as for seeds.
    Add(AddArgs),
    /// Write DIR/report.html: charts of a crawl (rates, outcomes, hosts, sizes, memory) in
    /// one self-contained file that opens in any browser, without a server.
    Report(ReportArgs),
    /// Print the progress of a crawl spread over nodes (`crawl --cluster`): pages, pages/s
    /// and queue per node.
    ClusterStatus(ClusterStatusArgs),
    /// Print every page of the crawl in DIR whose main text is a near-duplicate of an
    /// earlier page's: `URL<TAB>URL it duplicates<TAB>resemblance` (estimated Jaccard).
    NearDuplicates(NearDupsArgs),
    /// Write the main content of HTML files (plain or gzip) as plain text or Markdown
    /// (`-o DIR`: `DIR/NAME.txt` or `.md` for each; without it one file to stdout), and of
    /// WARC files as WET files.
    Extract(ExtractArgs),
    /// Write the link graph of the crawl in DIR (every DIR of a cluster's nodes) in WebGraph's
    /// BVGraph format, and print its nodes, arcs, bits per link and top pages.
    Graph(GraphArgs),
    /// Pack crawl directories (a crawl's `--out`; a cluster's node directories, all of them)
    /// into one WACZ file: the WARC files, one sorted index, the page list and a manifest,
    /// which ReplayWeb.page opens in a browser and pywb replays.
    Wacz(WaczArgs),
    /// Crawl the local test web (loopback only, served by `spinneret-testserver`) and report
    /// pages/s, CPU and memory.
    Bench(BenchArgs),
    /// Help on a command, or on a topic: `outcomes` (what each crawl.log outcome means).
    Help(HelpArgs),
}

#[derive(Args, Debug)]
pub struct ClusterStatusArgs {
    /// The cluster's Redis, as given to `crawl --cluster`.
    #[arg(long, value_name = "URL")]
    pub cluster: String,
}

/// `spinneret graph DIR… [-o BASENAME]`.
#[derive(Args, Debug)]
pub struct GraphArgs {
    /// The crawl's output directory (its `--out`); a cluster's node directories, all of them.
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// Write BASENAME.graph, .offsets, .properties, .ef and .urls [default: DIR/graph].
    #[arg(short = 'o', long = "out", value_name = "BASENAME")]
    pub out: Option<PathBuf>,
}

/// `spinneret wacz DIR… [-o FILE]`.
#[derive(Args, Debug)]
pub struct WaczArgs {
    /// The crawl's output directories: WARC files, their CDXJ, their text if kept.
    #[arg(required = true, value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// The package to write [default: DIR.wacz beside the first DIR].
    #[arg(short = 'o', long = "out", value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Replace FILE if it exists.
    #[arg(long)]
    pub force: bool,
    /// The index's form: plain CDXJ (`indexes/index.cdx`), compressed ZipNum
    /// (`indexes/index.cdx.gz` + `index.idx`), or auto: plain up to 1 MiB of index.
    #[arg(long, value_enum, default_value = "auto")]
    pub index: IndexArg,
    /// No summary on stderr.
    #[arg(short, long)]
    pub quiet: bool,
}

/// `wacz --index`'s values.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum IndexArg {
    Auto,
    Plain,
    Compressed,
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// The crawl's output directory (its `--out`).
    pub dir: PathBuf,
}

#[derive(Args, Debug)]
pub struct StatusArgs {
    /// The crawl's output directory (its `--out`).
    pub dir: PathBuf,
    /// One JSON object instead of lines.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
#[command(
    after_help = "Exit status: 0 the crawl stopped (or had just finished); 5 no crawl \
was running in DIR; 2 DIR holds no crawl; 1 it could not be signalled or did not stop \
within 60 s."
)]
pub struct StopArgs {
    /// The crawl's output directory (its `--out`).
    pub dir: PathBuf,
}

/// `spinneret extract [-o DIR] FILE…`.
#[derive(Args, Debug)]
pub struct ExtractArgs {
    /// Where to write `NAME.txt` for each FILE (NAME: the file's name without `.gz` and
    /// `.html`/`.htm`); made if missing. Without it, FILE must be one, its text to stdout.
    #[arg(short = 'o', long = "out", value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Markdown instead of plain text (`NAME.md`): headings, lists, tables, code blocks,
    /// quotes and links kept.
    #[arg(long)]
    pub markdown: bool,
    /// HTML files, plain or gzip.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
}

/// `spinneret near-duplicates DIR`.
#[derive(Args, Debug)]
pub struct NearDupsArgs {
    /// The crawl's output directory (its `--out`), holding its crawl.log.
    pub dir: PathBuf,
    /// Memory for the fingerprint index; past it, sorted runs go to a temporary directory
    /// in DIR (removed at the end).
    #[arg(long, value_name = "BYTES", default_value_t = Size(crate::content::near_dups::DEFAULT_NEAR_DUP_RAM as u64))]
    pub index_ram: Size,
    /// Report pairs whose main texts' word 4-shingle Jaccard coefficient (estimated from
    /// the sketches in crawl.log) is at least this.
    #[arg(long, value_name = "0..1", default_value_t = Threshold(crate::content::near_dups::DEFAULT_THRESHOLD))]
    pub near_duplicate_threshold: Threshold,
}

/// `spinneret add DIR URL… | -i FILE`.
#[derive(Args, Debug)]
pub struct AddArgs {
    /// The crawl's output directory (its `--out`).
    pub dir: PathBuf,
    /// URLs to add.
    pub urls: Vec<String>,
    /// Also add the URLs in FILE, one per line.
    #[arg(short = 'i', long = "input-file", value_name = "FILE")]
    pub file: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct HelpArgs {
    /// `outcomes`, or a command name.
    pub topic: Option<String>,
}

#[derive(Args, Debug)]
#[command(after_help = EXIT_CODES_HELP)]
pub struct CrawlArgs {
    #[command(flatten)]
    pub input: InputArgs,
    #[command(flatten)]
    pub limits: LimitArgs,
    /// Do not follow links more than this many hops from a seed.
    #[arg(short = 'l', long, value_name = "N")]
    pub max_depth: Option<u32>,
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
    #[arg(long, value_name = "SECS", default_value_t = DEFAULT_MAX_CRAWL_DELAY.as_secs())]
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
    /// Ignore robots directives in pages and their headers (`<meta name="robots">`,
    /// `X-Robots-Tag`, `rel="nofollow"`): every link is followed and no page is marked
    /// noindex. For archivists who must; by default they are obeyed.
    #[arg(long)]
    pub ignore_robots_meta: bool,
    /// Follow links marked rel="nofollow", "ugc" or "sponsored" (Heritrix's default); by
    /// default they are not followed (Nutch's and StormCrawler's). A page's own nofollow
    /// still holds.
    #[arg(long)]
    pub follow_nofollow_links: bool,
    /// Key every URL as written: no session IDs or tracking parameters stripped before the
    /// URL-seen test (`spinneret help canonicalization` lists the rules).
    #[arg(long)]
    pub no_canonicalize: bool,
    /// Strip this query parameter too before the URL-seen test (repeatable; ASCII
    /// case-insensitive), as the built-in session and tracking parameters are.
    #[arg(
        long = "strip-query-param",
        value_name = "NAME",
        conflicts_with = "no_canonicalize"
    )]
    pub strip_query_params: Vec<String>,
    /// Links admitted from one page at most.
    #[arg(long, value_name = "N", default_value_t = crate::crawl::DEFAULT_MAX_LINKS_PER_PAGE)]
    pub max_links_per_page: usize,
    /// Store a page whose main text is a near-duplicate of an earlier page's (see
    /// --near-duplicate-threshold) but do not follow its links: a guard against traps of
    /// copies.
    #[arg(long)]
    pub skip_near_duplicate_links: bool,
    /// A page is a near-duplicate of an earlier one whose main text's word 4-shingles it
    /// shares at this Jaccard coefficient (estimated from min-hash sketches; a pair at the
    /// threshold is found 19 times in 20, pairs a little under it may be too).
    #[arg(long, value_name = "0..1", default_value_t = Threshold(crate::content::near_dups::DEFAULT_THRESHOLD))]
    pub near_duplicate_threshold: Threshold,
    /// Take no main text and no sketch of pages (crawl.log's sketch column is `-`): saves
    /// their CPU (about 0.05 ms a page of running text) where near-duplicates do not matter.
    #[arg(long, conflicts_with = "skip_near_duplicate_links")]
    pub no_near_duplicates: bool,
    /// Do not fetch what pages need to render (images, scripts, stylesheets, CSS url()s).
    /// By default they are fetched, even outside --scope, so archived pages replay whole.
    #[arg(long)]
    pub no_page_requisites: bool,
    /// Fetch page requisites (the default; the flag exists for symmetry with wget's -p).
    #[arg(short = 'p', long, conflicts_with = "no_page_requisites")]
    pub page_requisites: bool,
    /// How often WARC files, crawl.log and the crawl's journal are fsynced (what a power cut
    /// can lose; a kill or Ctrl-C loses nothing either way).
    #[arg(long, value_name = "SECS", default_value_t = DEFAULT_CHECKPOINT_SECS)]
    pub checkpoint_secs: u64,
    /// Memory for queued URLs; past it the frontier spills to segment files in OUT.
    #[arg(long, value_name = "BYTES", default_value_t = Size(crate::crawl::DEFAULT_FRONTIER_RAM as u64))]
    pub frontier_ram: Size,
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
    pub fresh: FreshArgs,
    #[command(flatten)]
    pub discovery: DiscoveryArgs,
    /// Serve the crawl's figures to Prometheus at http://ADDR/metrics (OpenMetrics text),
    /// e.g. 127.0.0.1:9464. Nothing is served without it.
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<SocketAddr>,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Discovery beyond links (README, "Sitemaps and feeds").
#[derive(Args, Debug, Clone, Default)]
pub struct DiscoveryArgs {
    /// Fetch this sitemap (or sitemap index, plain or gzipped) and crawl what it lists;
    /// its host joins the scope (repeatable; may stand in for seeds).
    #[arg(long = "sitemap", value_name = "URL")]
    pub sitemaps: Vec<String>,
    /// Do not fetch the sitemaps robots.txt files name.
    #[arg(long)]
    pub no_sitemaps: bool,
    /// Focused crawl: FILE is a text on the topic (a description, or example pages' text);
    /// every page is scored against it and its links are followed best first.
    #[arg(long, value_name = "FILE")]
    pub focus: Option<PathBuf>,
}

/// Keeping a collection fresh: re-crawls and continuous crawling (README, "Keeping a
/// collection fresh").
#[derive(Args, Debug, Clone, Default)]
pub struct FreshArgs {
    /// Re-crawl what the crawl in OLD (its --out) holds: each of its URLs is fetched again
    /// with its validators (If-None-Match, If-Modified-Since); a 304, or the same payload,
    /// is stored as a revisit record referring to OLD's. OLD's seeds define the scope too,
    /// so seeds may be left out.
    #[arg(long, value_name = "OLD")]
    pub previous: Option<PathBuf>,
    /// Never run out of work: every fetched URL is due again on its own learned schedule
    /// (its change rate, estimated from what its revisits saw), and new links are fetched in
    /// between; runs until --max-time, Ctrl-C or a kill (`resume` continues it).
    #[arg(long)]
    pub continuous: bool,
    /// Shortest time between two fetches of one URL.
    #[arg(long, value_name = "SECS", default_value_t = crate::crawl::schedule::DEFAULT_MIN_INTERVAL)]
    pub revisit_min: u64,
    /// Longest time between two fetches of one URL (a page never seen to change).
    #[arg(long, value_name = "SECS", default_value_t = crate::crawl::schedule::DEFAULT_MAX_INTERVAL)]
    pub revisit_max: u64,
}

/// `spinneret resume DIR`: the crawl recorded in DIR, with a few settings changed.
#[derive(Args, Debug)]
#[command(after_help = EXIT_CODES_HELP)]
pub struct ResumeArgs {
    /// The crawl's output directory (its `--out`).
    pub dir: PathBuf,
    #[command(flatten)]
    pub limits: LimitArgs,
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
    /// Serve the crawl's figures to Prometheus at http://ADDR/metrics (instead of the
    /// address the crawl was started with, if any).
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<SocketAddr>,
    /// Write the crawl as a WACZ package to FILE when this run ends (instead of the file the
    /// crawl was started with, if any).
    #[arg(long, value_name = "FILE")]
    pub wacz: Option<PathBuf>,
}

/// The URLs a command starts from: given, or read from a file (`crawl`'s seeds, `fetch`'s
/// list).
#[derive(Args, Debug, Clone, Default)]
pub struct InputArgs {
    /// URLs (`crawl`: its seeds); a missing scheme means http://.
    #[arg(value_name = "URL")]
    pub urls: Vec<String>,
    /// A file of URLs, one per line (blank lines and `#` comments ignored).
    #[arg(
        short = 'i',
        long = "input-file",
        visible_aliases = ["seeds", "urls"],
        value_name = "FILE"
    )]
    pub file: Option<PathBuf>,
}

/// When a crawl stops early, for `crawl` and `resume` (which counts from its own start).
#[derive(Args, Debug, Clone, Default)]
pub struct LimitArgs {
    /// Stop after fetching this many pages in this run (`resume`: this many more); URLs
    /// still queued stay queued for `resume`.
    #[arg(long, value_name = "N")]
    pub max_pages: Option<u64>,
    /// Stop after this many seconds of this run: fetches in flight end as Interrupted, URLs
    /// still queued stay queued for `spinneret resume`, and the exit status is 9.
    #[arg(long, value_name = "SECS")]
    pub max_time: Option<u64>,
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
    #[command(flatten)]
    pub input: InputArgs,
    /// Log a redirect (3xx) as it is and do not fetch its Location.
    #[arg(long)]
    pub no_follow_redirects: bool,
    #[command(flatten)]
    pub delay: DelayArgs,
    /// Longest URL fetched: a longer line of the list is logged as UrlTooLong.
    #[arg(long, value_name = "N", default_value_t = crate::crawl::url_filter::DEFAULT_MAX_URL_LENGTH)]
    pub max_url_length: usize,
    /// Memory for URLs of the list read ahead; past it they wait in files in OUT.
    #[arg(long, value_name = "BYTES", default_value_t = Size(16 << 20))]
    pub frontier_ram: Size,
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
    /// Extra request header, `Name: value` (repeatable). `Authorization`, `Cookie` and
    /// `Proxy-Authorization` go to the seeds' origins only; the others to every host.
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
    /// Fetch through this proxy: http://, socks5:// or socks5h://, with USER:PASS@ for
    /// credentials (default port 1080); wins over http_proxy/https_proxy/all_proxy; "" for
    /// none. no_proxy still applies.
    #[arg(long, value_name = "URL")]
    pub proxy: Option<String>,
    /// Ignore the proxy environment variables (http_proxy, https_proxy, all_proxy, no_proxy
    /// and their upper-case forms).
    #[arg(long)]
    pub no_proxy: bool,
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
    #[arg(long, value_name = "MS", default_value_t = ms(crate::dns::DEFAULT_TOTAL_TIMEOUT))]
    pub dns_timeout_ms: u64,
    /// Host names resolved at once per DNS server; more wait their turn. Past what a UDP
    /// receive buffer holds (two queries a name) a burst of answers is dropped and waits for
    /// retries: raise it only for a server far enough away, or fast enough, to take more.
    #[arg(long, value_name = "N", default_value_t = crate::dns::DEFAULT_MAX_NAMES_IN_FLIGHT)]
    pub dns_names_in_flight: usize,
    /// Overall time for one HTTP fetch (connect + request + whole response).
    #[arg(long, value_name = "MS", default_value_t = ms(DEFAULT_HTTP_TIMEOUT))]
    pub http_timeout_ms: u64,
    /// Time allowed for the TCP connect (within the HTTP timeout).
    #[arg(long, value_name = "MS", default_value_t = ms(DEFAULT_CONNECT_TIMEOUT))]
    pub connect_timeout_ms: u64,
    /// Largest response body accepted, raw and decoded (e.g. 64M).
    #[arg(long, value_name = "BYTES", default_value_t = Size(crate::http::DEFAULT_MAX_BODY_BYTES))]
    pub max_body_bytes: Size,
    /// Start a new WARC file when the current one reaches this size (e.g. 1G).
    #[arg(long, value_name = "BYTES", default_value_t = Size(DEFAULT_WARC_MAX_SIZE))]
    pub warc_max_size: Size,
    #[command(flatten)]
    pub gzip: GzipArgs,
    /// Give response records a WARC-Block-Digest (SHA-1 of HTTP head and body). Optional in
    /// WARC; it costs a second SHA-1 pass over every body (about 6 % more CPU): the payload
    /// digest and gzip's CRC-32 already cover the body. Other records always have one.
    #[arg(long)]
    pub warc_block_digest: bool,
    /// Write each HTML page's main text beside each WARC file `X.warc.gz`, as a WET file
    /// `X.warc.wet.gz` (Common Crawl's layout: a `conversion` record per HTML response).
    #[arg(long)]
    pub text: bool,
    /// Write each HTML page's main content as Markdown beside each WARC file `X.warc.gz`, a
    /// JSON line per page in `X.warc.md.jsonl` (url, fetched, status, title, lang, markdown,
    /// warc_file, warc_offset).
    #[arg(long)]
    pub markdown: bool,
    /// Decoded content scanned for links per page (e.g. 4M); links past it are not followed.
    #[arg(long, value_name = "BYTES", default_value_t = Size(DEFAULT_MAX_SCAN_BYTES as u64))]
    pub max_scan_bytes: Size,
    /// Response bytes all fetches together keep in memory; past it, bodies go to a spool file
    /// in the output directory (a body over 256K always does).
    #[arg(long, value_name = "BYTES", default_value_t = Size(DEFAULT_MAX_BUFFER_BYTES as u64))]
    pub max_buffer_bytes: Size,
    /// Keep no cookies. By default the cookies sites set are kept for the run and sent back
    /// (as wget does), within bounds per site and in all.
    #[arg(long)]
    pub no_cookies: bool,
    /// Start with the cookies of FILE, in the cookies.txt format `wget --save-cookies` and
    /// `curl -c` write.
    #[arg(long, value_name = "FILE", conflicts_with = "no_cookies")]
    pub load_cookies: Option<PathBuf>,
    /// User name for HTTP Basic and Digest authentication, sent to the seeds' origins only,
    /// after they ask for it (a 401), or at once with --auth-no-challenge.
    #[arg(long, value_name = "USER")]
    pub http_user: Option<String>,
    /// Password for --http-user.
    #[arg(long, value_name = "PASS", requires = "http_user")]
    pub http_password: Option<String>,
    /// Read logins from FILE, in the .netrc format [default: ~/.netrc, if there is one].
    #[arg(long, value_name = "FILE", conflicts_with = "no_netrc")]
    pub netrc_file: Option<PathBuf>,
    /// Read no .netrc file.
    #[arg(long)]
    pub no_netrc: bool,
    /// Send Basic credentials without waiting for a 401 challenge (to the origins they
    /// belong to only).
    #[arg(long)]
    pub auth_no_challenge: bool,
    /// Keep Authorization and Proxy-Authorization values in WARC request records (by default
    /// they are written as `Authorization: Basic [redacted]`).
    #[arg(long)]
    pub warc_keep_auth: bool,
    /// When the run ends (Ctrl-C and --max-time too), pack the output directory into a WACZ
    /// file (as `spinneret wacz` does), replacing the one an earlier run wrote.
    #[arg(long, value_name = "FILE")]
    pub wacz: Option<PathBuf>,
}

/// `bench --shape`'s values: the test server's names for how pages link
/// (`spinneret_tools::testweb::Shape`), passed on as they are.
pub const SHAPES: [&str; 2] = ["linked", "clustered"];

#[derive(Args, Debug, Clone)]
pub struct BenchArgs {
    /// Hosts in the test web (each on its own loopback address).
    #[arg(long, default_value_t = 500)]
    pub hosts: usize,
    /// Content pages per host (each host also serves an index, list pages and a stylesheet,
    /// which a crawl fetches too, and robots.txt and a few robots-disallowed pages).
    #[arg(long, default_value_t = 40)]
    pub pages: usize,
    /// Approximate page size in KB.
    #[arg(long, default_value_t = 15)]
    pub page_kb: usize,
    /// How the test web's pages link: `linked`, mostly to random pages of other hosts (as
    /// real pages do, so a host's URLs arrive one by one over the whole crawl), or
    /// `clustered`, mostly within their host (the web of figures measured before).
    #[arg(long, value_name = "SHAPE", default_value = SHAPES[0], value_parser = SHAPES)]
    pub shape: String,
    /// Open HTTP connections in total, one per server at most (as `crawl --max-conns`, and
    /// its default). Fewer than --hosts makes a crawl choose which hosts keep theirs.
    #[arg(long, default_value_t = DEFAULT_MAX_CONNS)]
    pub max_conns: usize,
    /// A host's next fetch waits this × its last fetch's time (as `crawl --delay-factor`,
    /// and its default); the fixed delay is 0 (`--delay-ms 0`).
    #[arg(long, value_name = "X", default_value_t = DEFAULT_DELAY_FACTOR)]
    pub delay_factor: f64,
    /// Run the `fetch` command over every URL the crawl would fetch, in a shuffled order,
    /// instead of a crawl.
    #[arg(long, conflicts_with_all = ["loops", "no_journal", "checkpoint_secs", "delay_factor"])]
    pub fetch: bool,
    #[command(flatten)]
    pub gzip: GzipArgs,
    /// Give response records a WARC-Block-Digest (as `crawl --warc-block-digest`): measures
    /// its cost.
    #[arg(long)]
    pub warc_block_digest: bool,
    /// Write each HTML page's main text beside each WARC file `X.warc.gz`, as a WET file
    /// `X.warc.wet.gz` (Common Crawl's layout: a `conversion` record per HTML response).
    #[arg(long)]
    pub text: bool,
    /// Write each HTML page's main content as Markdown beside each WARC file `X.warc.gz`, a
    /// JSON line per page in `X.warc.md.jsonl` (url, fetched, status, title, lang, markdown,
    /// warc_file, warc_offset).
    #[arg(long)]
    pub markdown: bool,
    /// Keep the output here instead of a temporary directory that is removed afterwards.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Do not journal URL events (as `crawl` does, so it can be resumed): measures the
    /// journal's cost.
    #[arg(long)]
    pub no_journal: bool,
    /// Fsync, start a new journal generation and fold the closed ones into a checkpoint this
    /// often (as `crawl --checkpoint-secs`): a short interval measures what checkpoints cost.
    #[arg(long, value_name = "SECS", default_value_t = DEFAULT_CHECKPOINT_SECS)]
    pub checkpoint_secs: u64,
    /// Event loops (as `crawl --loops`): partitions of the hosts, one thread each.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub loops: usize,
    /// The test web answers each connection this late (connect and every response), as if
    /// the crawler were this far from the web: pages/s then follows --max-conns ÷ latency
    /// until the CPU binds.
    #[arg(long, value_name = "MS", default_value_t = 0)]
    pub latency_ms: u64,
    /// Serve the crawl's figures at http://ADDR/metrics (as `crawl --metrics`): measures
    /// what publishing them costs.
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<SocketAddr>,
    /// The test web's server, the tools crate's `spinneret-testserver` (built with `cargo
    /// build --release -p spinneret-tools --bin spinneret-testserver`) [default:
    /// $SPINNERET_TESTSERVER, else the one beside this spinneret].
    #[arg(long, value_name = "PATH")]
    pub testserver: Option<PathBuf>,
}

/// `--warc-gzip-level`, for the commands that write WARC and for `bench`.
#[derive(Args, Debug, Clone)]
pub struct GzipArgs {
    /// gzip level of the WARC records (1 fastest … 9 smallest).
    #[arg(long = "warc-gzip-level", value_name = "0-9", default_value_t = DEFAULT_GZIP_LEVEL, value_parser = clap::value_parser!(u32).range(0..=9))]
    pub level: u32,
}

/// A resemblance threshold: a number from 0 to 1.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Threshold(pub f64);

impl std::str::FromStr for Threshold {
    type Err = String;
    fn from_str(s: &str) -> Result<Threshold, String> {
        match s.trim().parse::<f64>() {
            Ok(t) if (0.0..=1.0).contains(&t) => Ok(Threshold(t)),
            _ => Err(format!("{s:?} is not a number from 0 to 1")),
        }
    }
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A byte count given as `65536`, `64K`, `100M` or `1G` (binary units), shown the same way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size(pub u64);

impl std::str::FromStr for Size {
    type Err = String;
    fn from_str(s: &str) -> Result<Size, String> {
        parse_size(s).map(Size)
    }
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (unit, shift) in [('G', 30), ('M', 20), ('K', 10)] {
            if self.0 != 0 && self.0 % (1 << shift) == 0 {
                return write!(f, "{}{unit}", self.0 >> shift);
            }
        }
        write!(f, "{}", self.0)
    }
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

#[cfg(test)]
mod tests {

    #[test]
    fn a_threshold_is_a_number_from_0_to_1() {
        use std::str::FromStr;
        assert_eq!(Threshold::from_str("0.85"), Ok(Threshold(0.85)));
        assert_eq!(Threshold::from_str("1"), Ok(Threshold(1.0)));
        for bad in ["1.5", "-0.1", "high", "NaN", ""] {
            assert!(Threshold::from_str(bad).is_err(), "{bad}");
        }
    }

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
    fn a_size_is_shown_as_it_would_be_typed_and_reads_back() {
        for (n, shown) in [
            (64 << 20, "64M"),
            (1 << 30, "1G"),
            (1536, "1536"),
            (1000, "1000"),
            (0, "0"),
        ] {
            assert_eq!(Size(n).to_string(), shown);
            assert_eq!(shown.parse::<Size>(), Ok(Size(n)));
        }
    }

    #[test]
    fn cli_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
