//! Flags become working configuration here, and only here: every value checked (a bad one
//! is a [`UsageError`] before anything starts), defaults taken from the flags (which take
//! them from the settings' own constants), the warcinfo record's list of effective options,
//! and each event loop's share of what is divided among them.
//!
//! A new crawl flag touches three files: its declaration in [`super::cli`], its line here
//! ([`crawl_plan`] and `crawl_options`), and the code that uses the setting.

use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use url::Url;

use crate::app::cli::{CommonArgs, CrawlArgs, DelayArgs, FreshArgs, ScopeArg};
use crate::app::exit::{usage, Failure, UsageError};
use crate::app::fd_limit;
use crate::app::login::{is_credential_header, redact_command_line, redact_header_arg};
use crate::app::report::{abbrev, eprint_line, Display, EchoLines, ProgressMode, URL_IN_MESSAGES};
use crate::app::url_lines::{Line, UrlLines};
use crate::crawl::canon::CanonConfig;
use crate::crawl::schedule::ScheduleConfig;
use crate::crawl::splitter::MAX_PARTITIONS;
use crate::crawl::url_filter::{FilterConfig, Scope};
use crate::crawl::{CookieConfig, CrawlConfig, MannersConfig};
use crate::dns::{self, ResolverConfig};
use crate::fetcher::addr_policy::{AddrPolicy, Cidr};
use crate::fetcher::CrawlerConfig;
use crate::http::Limits;
use crate::proxy::ProxySettings;
use crate::store::archive::output::{Echo, OutputConfig};
use crate::store::archive::spool::FileSpool;
use crate::store::archive::text_sides::TextOut;
use crate::store::state::crawl_db;
use crate::ReturnCode;

/// Where the cluster is and which node this is (`crawl --cluster`).
#[derive(Clone, Debug)]
pub struct ClusterConfig {
    pub url: String,
    pub nodes: u32,
    pub node: u32,
}

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
        let (mut headers, mut origin_headers) = (Vec::new(), Vec::new());
        for h in &self.headers {
            let (name, value) = parse_header(h)?;
            if is_credential_header(&name) {
                origin_headers.push((name, value));
            } else {
                headers.push((name, value));
            }
        }
        if self.max_conns == 0 {
            return Err(UsageError("--max-conns must be at least 1".into()));
        }
        if self.max_sockets == Some(0) {
            return Err(UsageError("--max-sockets must be at least 1".into()));
        }
        if self.dns_names_in_flight == 0 {
            return Err(UsageError(
                "--dns-names-in-flight must be at least 1".into(),
            ));
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
            max_names_in_flight: self.dns_names_in_flight,
            ..ResolverConfig::default()
        };
        let limits = Limits {
            max_body_bytes: self.max_body_bytes.0,
            max_decoded_bytes: self.max_body_bytes.0,
            // Chunk-size lines cost ~8 bytes per chunk: allow bodies in chunks of ≥ ~128 bytes.
            max_framing_bytes: usize::try_from(self.max_body_bytes.0 / 16)
                .unwrap_or(usize::MAX)
                .max(crate::http::DEFAULT_MAX_FRAMING_BYTES),
            ..Limits::default()
        };
        let mut crawler = CrawlerConfig::new(self.max_conns, resolver, tls);
        crawler.max_sockets =
            fd_limit::socket_budget(self.max_sockets, self.max_conns, fd_limit::raise_nofile());
        crawler.conns_per_server = self.conns_per_server;
        if let Some(ua) = &self.user_agent {
            crawler.user_agent = ua.clone();
        }
        crawler.extra_headers = headers;
        crawler.origin_headers = origin_headers;
        crawler.limits = limits;
        crawler.http_timeout = Duration::from_millis(self.http_timeout_ms.max(1));
        crawler.connect_timeout = Duration::from_millis(self.connect_timeout_ms.max(1));
        crawler.addr_policy = AddrPolicy::new(self.allow_private, allow_nets);
        crawler.proxies = self.proxies()?;
        crawler.max_scan_bytes = usize::try_from(self.max_scan_bytes.0).unwrap_or(usize::MAX);
        crawler.max_buffer_bytes = usize::try_from(self.max_buffer_bytes.0).unwrap_or(usize::MAX);
        let mut output = OutputConfig::new(self.out.clone(), "spinneret");
        output.warc_max_size = self.warc_max_size.0;
        output.gzip_level = self.gzip.level;
        output.response_block_digest = self.warc_block_digest;
        output.text = TextOut {
            wet: self.text,
            markdown: self.markdown,
        };
        output.command_line = Some(redact_command_line(std::env::args()));
        output.keep_auth = self.warc_keep_auth;
        output.options = self.options(&crawler);
        if self.verbose {
            output.echo = Some(Echo(Arc::new(Mutex::new(EchoLines::default()))));
        }
        Ok(Setup { crawler, output })
    }

    /// The proxies of `--proxy`, `--no-proxy` and the environment, their names resolved by
    /// the system (getaddrinfo, as curl does: the proxy is the user's, not the web's, so the
    /// address guard does not apply to it); `None` when no URL goes through one.
    fn proxies(&self) -> Result<Option<Arc<ProxySettings>>, UsageError> {
        let env = |name: &str| {
            if self.no_proxy {
                return None;
            }
            std::env::var(name).ok()
        };
        let mut proxies = ProxySettings::new(self.proxy.as_deref(), env).map_err(UsageError)?;
        if proxies.is_empty() {
            return Ok(None);
        }
        proxies
            .resolve(|host, port| {
                use std::net::ToSocketAddrs;
                (host, port)
                    .to_socket_addrs()
                    .map(Iterator::collect)
                    .map_err(|e| format!("cannot resolve {host}: {e}"))
            })
            .map_err(UsageError)?;
        Ok(Some(Arc::new(proxies)))
    }

    /// The cookie jar these flags ask for, with `--load-cookies`'s file read. A file in which
    /// no line is a usable cookie is refused: it is probably not a cookies.txt file.
    pub fn cookies(&self) -> Result<CookieConfig, UsageError> {
        let mut config = CookieConfig {
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
            ("max-body-bytes".into(), self.max_body_bytes.0.to_string()),
            ("max-scan-bytes".into(), self.max_scan_bytes.0.to_string()),
            ("max-redirect".into(), self.max_redirect.to_string()),
            ("http-timeout-ms".into(), self.http_timeout_ms.to_string()),
            (
                "connect-timeout-ms".into(),
                self.connect_timeout_ms.to_string(),
            ),
            ("dns-timeout-ms".into(), self.dns_timeout_ms.to_string()),
            (
                "dns-names-in-flight".into(),
                self.dns_names_in_flight.to_string(),
            ),
            ("allow-private".into(), self.allow_private.to_string()),
            ("cookies".into(), (!self.no_cookies).to_string()),
            (
                "warc-block-digest".into(),
                self.warc_block_digest.to_string(),
            ),
        ];
        for h in &self.headers {
            o.push(("header".into(), redact_header_arg(h)));
        }
        if let Some(user) = &self.http_user {
            o.push(("http-user".into(), user.clone()));
        }
        o.push((
            "auth-no-challenge".into(),
            self.auth_no_challenge.to_string(),
        ));
        o.push(("warc-keep-auth".into(), self.warc_keep_auth.to_string()));
        for n in &self.allow_nets {
            o.push(("allow-net".into(), n.clone()));
        }
        // Where the archive's responses came through (credentials left out).
        if let Some(p) = &crawler.proxies {
            for (scheme, proxy) in [("http", &p.http), ("https", &p.https)] {
                if let Some(proxy) = proxy {
                    o.push((format!("proxy-{scheme}"), proxy.redacted()));
                }
            }
        }
        o
    }
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

/// The cluster a crawl node joins, checked.
fn cluster_config(args: &CrawlArgs) -> Result<Option<ClusterConfig>, Failure> {
    let (Some(url), Some(nodes), Some(node)) =
        (&args.cluster, args.cluster_nodes, args.cluster_node)
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
    if args.loops > 1 {
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

/// How a command shows what it does, from `-q` and `-v`.
pub fn display(common: &CommonArgs) -> Display {
    Display {
        progress: ProgressMode::for_stderr(common.quiet),
        verbose: common.verbose,
        quiet: common.quiet,
        metrics: None,
    }
}

/// `-w/--delay SECS` or `--delay-ms MS`: the least gap between two requests to one host;
/// `None` when neither is given (the setting's default then stands).
pub fn delay(d: &DelayArgs) -> Result<Option<Duration>, Failure> {
    match (d.delay_secs, d.delay_ms) {
        (Some(s), _) if !(s.is_finite() && (0.0..=86_400.0).contains(&s)) => {
            Err(usage("-w/--delay must be between 0 and 86400 seconds"))
        }
        (Some(s), _) => Ok(Some(Duration::from_secs_f64(s))),
        (None, Some(ms)) => Ok(Some(Duration::from_millis(ms))),
        (None, None) => Ok(None),
    }
}

/// Gives the crawler a file spool in the output directory, so bodies too large for memory go
/// to disk there.
pub fn with_spool(mut config: CrawlerConfig, out_dir: &Path) -> io::Result<CrawlerConfig> {
    config.spool = Some(Arc::new(FileSpool::new(out_dir)?));
    Ok(config)
}

/// Event loop `k` of `n`'s share of the crawl's settings: the fetcher's connections, sockets
/// and body memory, the crawl's pages, active hosts and frontier memory. The one place a
/// crawl's budgets are divided.
pub fn partition_share(
    crawler: &CrawlerConfig,
    crawl: &CrawlConfig,
    n: usize,
    k: usize,
) -> (CrawlerConfig, CrawlConfig) {
    let n = n.max(1);
    let fetcher = crawler.share(n);
    let mut part = crawl.clone();
    // --max-pages is the crawl's: each partition takes its share, the first ones the rest.
    part.max_pages = crawl
        .max_pages
        .map(|m| (m / n as u64 + u64::from((k as u64) < m % n as u64)).max(1));
    part.back_queues = (crawl.back_queues / n).max(1);
    part.frontier_ram = crawl.frontier_ram / n;
    part.near_dup_ram = crawl.near_dup_ram / n;
    (fetcher, part)
}

/// Given lines that are not usable URLs, with the outcome each is logged with.
pub type BadInputs = Vec<(String, ReturnCode)>;

/// Everything `crawl` runs with, checked: the fetcher's and output's settings, the crawl's,
/// the seeds, and the given lines that are not URLs (each logged with its outcome).
pub struct CrawlPlan {
    pub setup: Setup,
    pub config: CrawlConfig,
    pub seeds: Vec<Url>,
    /// `--previous OLD`: the crawl whose URLs are fetched again.
    pub previous: Option<PathBuf>,
    /// `--sitemap URL`s.
    pub sitemaps: Vec<Url>,
    pub bad_inputs: BadInputs,
    pub cluster: Option<ClusterConfig>,
    pub loops: usize,
    pub display: Display,
}

/// `crawl`'s flags, checked and turned into a [`CrawlPlan`]; bad seed lines are reported
/// here, once.
pub fn crawl_plan(args: &CrawlArgs) -> Result<CrawlPlan, Failure> {
    let mut setup = args.common.setup()?;
    let cookies = args.common.cookies()?;
    setup.output.options.extend(crawl_options(args));
    let limits = &args.limits;
    if limits.max_time == Some(0) {
        return Err(usage("--max-time must be at least 1 second"));
    }
    if limits.max_pages == Some(0) {
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
    let schedule = schedule(&args.fresh)?;
    let focus = focus_topic(args.discovery.focus.as_deref())?;
    let checkpoint_every = Duration::from_secs(args.checkpoint_secs.max(1));
    setup.output.durable = Some(checkpoint_every);
    let defaults = CrawlConfig::new(filter, setup.crawler.max_sockets);
    let config = CrawlConfig {
        frontier_ram: usize::try_from(args.frontier_ram.0).unwrap_or(usize::MAX),
        resumable: true,
        save_hosts_every: Some(checkpoint_every),
        max_pages: limits.max_pages,
        max_time: limits.max_time.map(Duration::from_secs),
        delay: delay(&args.delay)?.unwrap_or(defaults.delay),
        delay_factor: args.delay_factor,
        max_crawl_delay: Duration::from_secs(args.max_crawl_delay),
        ignore_robots: args.ignore_robots,
        max_redirects: args.common.max_redirect,
        max_links_per_page: args.max_links_per_page,
        skip_near_duplicate_links: args.skip_near_duplicate_links,
        near_duplicates: !args.no_near_duplicates,
        near_dup_threshold: args.near_duplicate_threshold.0,
        // The store's page workers fingerprint pages, off the event loop.
        near_dups_in_sink: true,
        page_requisites: !args.no_page_requisites,
        auth: args.common.auth()?,
        robots_directives: !args.ignore_robots_meta,
        follow_nofollow_links: args.follow_nofollow_links,
        canon: canon_config(args)?,
        manners: MannersConfig {
            cookies,
            max_retries: args.max_retries,
            max_retry_after: Duration::from_secs(args.max_retry_after),
        },
        schedule,
        continuous: args.fresh.continuous,
        sitemaps: !args.discovery.no_sitemaps,
        focus,
        ..defaults
    };
    let (seeds, bad_inputs) = seeds(args)?;
    let cluster = cluster_config(args)?;
    let previous = args.fresh.previous.clone();
    if let Some(old) = &previous {
        if !old.join(crawl_db::FILE_NAME).is_file() {
            return Err(usage(format!(
                "--previous {}: no crawl database there ({} is written by `spinneret crawl`)",
                old.display(),
                crawl_db::FILE_NAME
            )));
        }
    }
    let mut sitemaps = Vec::new();
    for text in &args.discovery.sitemaps {
        match Url::parse(text) {
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.host_str().is_some() => {
                sitemaps.push(u)
            }
            _ => return Err(usage(format!("--sitemap {text}: not an http(s) URL"))),
        }
    }
    // A cluster node may start with no seeds: the others send it URLs; a re-crawl has the
    // previous crawl's, and sitemaps list their own.
    if seeds.is_empty() && cluster.is_none() && previous.is_none() && sitemaps.is_empty() {
        return Err(usage(
            "no usable seed URLs (pass URLs or -i/--input-file FILE)",
        ));
    }
    if args.ignore_robots {
        eprint_line(
            "spinneret: WARNING: --ignore-robots: robots.txt is neither fetched nor obeyed",
        );
    }
    Ok(CrawlPlan {
        setup,
        config,
        seeds,
        previous,
        sitemaps,
        bad_inputs,
        cluster,
        loops: args.loops,
        display: Display {
            metrics: args.metrics,
            ..display(&args.common)
        },
    })
}

/// The seeds given as arguments and in the `-i` file, and the lines that are not usable
/// URLs (each reported on stderr and logged with its outcome).
fn seeds(args: &CrawlArgs) -> Result<(Vec<Url>, BadInputs), Failure> {
    let mut seeds = Vec::new();
    let mut bad_inputs = Vec::new();
    let input = &args.input;
    let given = input_lines(&input.urls, input.file.as_deref(), args.max_url_length)?;
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
    Ok((seeds, bad_inputs))
}

/// Reads the positional URLs and the `-i` file (in bounded pieces: a line past `max_len`
/// bytes is not held): `(place, line)` pairs.
fn input_lines(
    args: &[String],
    file: Option<&Path>,
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

/// `--reject-ext` values: without a leading dot, not empty.
/// `--no-canonicalize` and `--strip-query-param`: each name a query parameter's name (not
/// empty, printable ASCII without the query's own delimiters), which is what the rule
/// compares, byte for byte, ASCII case aside.
fn canon_config(args: &CrawlArgs) -> Result<CanonConfig, Failure> {
    for name in &args.strip_query_params {
        let plain = |b: u8| b.is_ascii_graphic() && !matches!(b, b'&' | b'=' | b'?' | b'#');
        if name.is_empty() || name.len() > 256 || !name.bytes().all(plain) {
            return Err(usage(format!(
                "--strip-query-param {name:?}: not a query parameter name (printable ASCII, \
                 no & = ? #, at most 256 bytes)"
            )));
        }
    }
    Ok(CanonConfig {
        on: !args.no_canonicalize,
        strip: args.strip_query_params.clone(),
    })
}

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
/// `--focus FILE`'s topic text, checked to hold words a page can be scored against.
fn focus_topic(file: Option<&Path>) -> Result<Option<Arc<[u8]>>, Failure> {
    use crate::crawl::focus::{TopicModel, MAX_TOPIC_BYTES};
    use std::io::Read;
    let Some(file) = file else {
        return Ok(None);
    };
    let mut text = Vec::new();
    std::fs::File::open(file)
        .and_then(|f| f.take(MAX_TOPIC_BYTES as u64).read_to_end(&mut text))
        .map_err(|e| usage(format!("--focus {}: {e}", file.display())))?;
    if TopicModel::new(&text).is_none() {
        return Err(usage(format!(
            "--focus {}: no words to score pages against",
            file.display()
        )));
    }
    Ok(Some(Arc::from(text)))
}

/// The revisit schedule from `--revisit-min`/`--revisit-max`. A page's first revisit comes
/// after the geometric mean of the two (a day at the defaults, as before any flag), and the
/// schedule learns from there.
fn schedule(args: &FreshArgs) -> Result<ScheduleConfig, Failure> {
    if args.revisit_min == 0 {
        return Err(usage("--revisit-min must be at least 1 second"));
    }
    if args.revisit_max < args.revisit_min {
        return Err(usage("--revisit-max must be at least --revisit-min"));
    }
    let mean = ((args.revisit_min as f64) * (args.revisit_max as f64)).sqrt() as u64;
    Ok(ScheduleConfig {
        min_interval: args.revisit_min,
        max_interval: args.revisit_max,
        initial_interval: mean.clamp(args.revisit_min, args.revisit_max),
        ..ScheduleConfig::default()
    })
}

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
            opt(args.limits.max_pages.map(|v| v.to_string())),
        ),
        (
            "max-time".into(),
            opt(args.limits.max_time.map(|v| v.to_string())),
        ),
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
            "ignore-robots-meta".into(),
            args.ignore_robots_meta.to_string(),
        ),
        (
            "follow-nofollow-links".into(),
            args.follow_nofollow_links.to_string(),
        ),
        ("canonicalize".into(), (!args.no_canonicalize).to_string()),
        (
            "strip-query-param".into(),
            opt((!args.strip_query_params.is_empty()).then(|| args.strip_query_params.join(","))),
        ),
        (
            "page-requisites".into(),
            (!args.no_page_requisites).to_string(),
        ),
        (
            "max-links-per-page".into(),
            args.max_links_per_page.to_string(),
        ),
        ("max-url-length".into(), args.max_url_length.to_string()),
        (
            "skip-near-duplicate-links".into(),
            args.skip_near_duplicate_links.to_string(),
        ),
        (
            "near-duplicates".into(),
            (!args.no_near_duplicates).to_string(),
        ),
        (
            "near-duplicate-threshold".into(),
            args.near_duplicate_threshold.0.to_string(),
        ),
        ("continuous".into(), args.fresh.continuous.to_string()),
        ("sitemaps".into(), (!args.discovery.no_sitemaps).to_string()),
        (
            "focus".into(),
            opt(args
                .discovery
                .focus
                .as_ref()
                .map(|p| p.display().to_string())),
        ),
        ("revisit-min".into(), args.fresh.revisit_min.to_string()),
        ("revisit-max".into(), args.fresh.revisit_max.to_string()),
    ];
    if let Some(old) = &args.fresh.previous {
        o.push(("previous".into(), old.display().to_string()));
    }
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn dns_names_in_flight_reaches_the_resolver() {
        use clap::Parser;
        let argv = [
            "spinneret",
            "crawl",
            "http://a.test/",
            "-o",
            "unused",
            "--dns-server",
            "127.0.0.1",
            "--hosts-file",
            "none",
            "--dns-names-in-flight",
            "7",
        ];
        let cli = crate::app::cli::Cli::try_parse_from(argv).unwrap();
        let crate::app::cli::Command::Crawl(args) = cli.command else {
            panic!("not crawl");
        };
        let setup = args.common.setup().unwrap();
        assert_eq!(setup.crawler.resolver.max_names_in_flight, 7);
    }

    #[test]
    fn budgets_are_divided_among_event_loops_in_one_place() {
        let tls = crate::fetcher::tls::client_config(None).unwrap();
        let crawler = CrawlerConfig::new(128, ResolverConfig::default(), tls);
        let crawl = CrawlConfig {
            max_pages: Some(10),
            ..CrawlConfig::new(FilterConfig::default(), 4096)
        };
        let shares: Vec<_> = (0..3)
            .map(|k| partition_share(&crawler, &crawl, 3, k))
            .collect();
        let pages: Vec<u64> = shares.iter().map(|(_, c)| c.max_pages.unwrap()).collect();
        assert_eq!(pages, [4, 3, 3], "every page of --max-pages is someone's");
        for (f, c) in &shares {
            assert_eq!(f.max_conns, 42);
            assert_eq!(f.resolver.max_names_in_flight, 64 / 3);
            assert_eq!(c.back_queues, 4096 / 3);
            assert_eq!(c.frontier_ram, crawl.frontier_ram / 3);
        }
    }
}
