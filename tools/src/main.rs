//! `spinneret-testserver`: loopback servers for manual crawls and benchmarks.
//!
//! - default mode: serves a generated multi-host site (`sites::simple_site`) and its DNS. Prints
//!   `http_port=PORT dns=IP:PORT urls=N`, then (with `--print-urls`) every URL, then serves
//!   until `--lifetime` seconds have passed.
//! - `web`: serves the synthetic web (`testweb`) and its DNS; prints
//!   `http_port=PORT dns=IP:PORT pages=N`, writes the expected URLs to `--urls-out`, serves
//!   until `--lifetime` (or, with `--until-stdin-closes`, until its stdin closes: how
//!   `spinneret bench` runs it as a child), then prints `test web: served N requests` on
//!   stderr. `--shape linked` makes pages link mostly to other hosts (`testweb::Shape`);
//!   `--latency-ms` answers each connect and response that late.
//! - `files`: writes the synthetic web under `--dir`, one directory per host, for nginx to
//!   serve over HTTP or (`--https`) HTTPS on `--port`; writes the expected URLs to
//!   `--urls-out`; prints `files=N pages=M`.
//! - `load`: measures a running `web` server (`testweb::load`) and prints requests/s and MB/s.
//! - `fresh`: serves the web that changes while it is crawled (`freshweb`) on 127.0.0.1;
//!   prints `http_port=PORT seed=http://127.0.0.1:PORT/`, appends every request to `--log`
//!   (`freshweb`'s log format, flushed every `LOG_FLUSH`), serves until `--lifetime`.
//! - `fresh-report`: reads a `fresh` log and prints `freshweb::analyze`'s figures, one
//!   `key=value` per line; it needs the content flags the server ran with.
//! - `template`: serves the near-duplicate web (`templateweb`: two news sites whose templates
//!   dwarf their articles) and its DNS; prints `http_port=PORT dns=IP:PORT pages=N` and the
//!   two seeds, one a line, then serves until `--lifetime`.

use std::io::Write;
use std::net::Ipv4Addr;
use std::process::ExitCode;
use std::sync::mpsc;
use std::time::Duration;

use spinneret_tools::dns_server::{DnsServer, DnsServerConfig};
use spinneret_tools::freshweb::{self, FreshConfig, FreshWeb};
use spinneret_tools::http_server::{HttpServer, HttpServerConfig};
use spinneret_tools::sites::simple_site;
use spinneret_tools::testweb::load::{self, LoadConfig};
use spinneret_tools::testweb::{files, Scheme, Shape, TestWeb, WebConfig, WebServer};

const USAGE: &str = "usage: spinneret-testserver [--hosts N] [--pages P] [--lifetime SECS] \
                     [--bind 127.0.0.1] [--print-urls]\n\
       spinneret-testserver web [--shape clustered|linked] [--hosts N] [--pages P] \
                     [--page-kb K] [--seed S] [--port P] [--lifetime SECS] [--urls-out FILE] \
                     [--latency-ms MS] [--until-stdin-closes]\n\
       spinneret-testserver files --dir DIR --port P [--https] [--shape clustered|linked] \
                     [--hosts N] [--pages P] [--page-kb K] [--seed S] [--urls-out FILE]\n\
       spinneret-testserver load --port P [--hosts N] [--pages P] [--conns C] [--seconds S]\n\
       spinneret-testserver fresh [--pages N] [--seed S] [--mean-change-secs 0,10,40,160] \
                     [--article-secs A] [--lifetime SECS] [--port P] [--log FILE]\n\
       spinneret-testserver fresh-report --log FILE [--pages N] [--seed S] \
                     [--mean-change-secs LIST] [--article-secs A] [--lifetime SECS] \
                     [--from T0] [--to T1]\n\
       spinneret-testserver template [--articles N] [--lifetime SECS]";

/// How often `fresh` appends the new log entries to `--log`.
const LOG_FLUSH: Duration = Duration::from_millis(200);
/// How often `web` looks whether its server stopped (its lifetime).
const WAIT_STEP: Duration = Duration::from_millis(100);

struct Args {
    hosts: usize,
    pages: usize,
    lifetime: Duration,
    bind: Ipv4Addr,
    print_urls: bool,
}

fn parse_args(mut it: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut args = Args {
        hosts: 10,
        pages: 100,
        lifetime: Duration::from_secs(120),
        bind: Ipv4Addr::LOCALHOST,
        print_urls: false,
    };
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--hosts" => args.hosts = value()?.parse().map_err(|e| format!("--hosts: {e}"))?,
            "--pages" => args.pages = value()?.parse().map_err(|e| format!("--pages: {e}"))?,
            "--lifetime" => {
                let secs: u64 = value()?.parse().map_err(|e| format!("--lifetime: {e}"))?;
                args.lifetime = Duration::from_secs(secs);
            }
            "--bind" => args.bind = value()?.parse().map_err(|e| format!("--bind: {e}"))?,
            "--print-urls" => args.print_urls = true,
            "--help" | "-h" => return Err(USAGE.to_string()),
            other => return Err(format!("unknown flag {other}\n{USAGE}")),
        }
    }
    if !args.bind.is_loopback() {
        return Err(format!(
            "--bind must be a loopback address, not {}",
            args.bind
        ));
    }
    if args.hosts == 0 || args.pages == 0 {
        return Err("--hosts and --pages must be at least 1".to_string());
    }
    Ok(args)
}

fn num<T: std::str::FromStr>(flag: &str, v: Option<String>) -> Result<T, String>
where
    T::Err: std::fmt::Display,
{
    let v = v.ok_or_else(|| format!("{flag} needs a value"))?;
    v.parse().map_err(|e| format!("{flag}: {e}"))
}

struct WebArgs {
    cfg: WebConfig,
    port: u16,
    lifetime: Duration,
    /// `web` only: each connect and response this late.
    latency: Duration,
    /// `web` only: also stop when stdin reaches its end (the parent closed it or is gone).
    until_stdin_closes: bool,
    urls_out: Option<String>,
    /// `files` mode only.
    dir: Option<String>,
    scheme: Scheme,
}

/// The arguments of `web` and `files` (`files` takes `--dir` and `--https`, `web`
/// `--lifetime`, `--latency-ms` and `--until-stdin-closes`).
fn parse_web_args(mut it: impl Iterator<Item = String>, files: bool) -> Result<WebArgs, String> {
    let mut args = WebArgs {
        cfg: WebConfig::default(),
        port: 0,
        lifetime: Duration::from_secs(600),
        latency: Duration::ZERO,
        until_stdin_closes: false,
        urls_out: None,
        dir: None,
        scheme: Scheme::Http,
    };
    // The shape sets the link counts, so it is applied first, whatever the flags' order.
    let mut shape = Shape::default();
    let mut after_shape: Vec<(String, Option<String>)> = Vec::new();
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--shape" => {
                let v = it.next().ok_or("--shape needs a value")?;
                shape = Shape::parse(&v).ok_or(format!("--shape {v}: clustered or linked"))?;
            }
            "--dir" if files => args.dir = Some(it.next().ok_or("--dir needs a value")?),
            "--https" if files => args.scheme = Scheme::Https,
            "--lifetime" if !files => args.lifetime = Duration::from_secs(num(&flag, it.next())?),
            "--latency-ms" if !files => {
                args.latency = Duration::from_millis(num(&flag, it.next())?)
            }
            "--until-stdin-closes" if !files => args.until_stdin_closes = true,
            "--port" => args.port = num(&flag, it.next())?,
            "--urls-out" => args.urls_out = Some(it.next().ok_or("--urls-out needs a value")?),
            "--help" | "-h" => return Err(USAGE.to_string()),
            _ => {
                let v = it.next();
                after_shape.push((flag, v));
            }
        }
    }
    args.cfg = WebConfig::of_shape(shape);
    for (flag, v) in after_shape {
        match flag.as_str() {
            "--hosts" => args.cfg.hosts = num(&flag, v)?,
            "--pages" => args.cfg.pages = num(&flag, v)?,
            "--page-kb" => args.cfg.page_kb = num(&flag, v)?,
            "--seed" => args.cfg.seed = num(&flag, v)?,
            other => return Err(format!("unknown flag {other}\n{USAGE}")),
        }
    }
    if args.cfg.hosts == 0 || args.cfg.pages == 0 {
        return Err("--hosts and --pages must be at least 1".to_string());
    }
    if files && (args.dir.is_none() || args.port == 0) {
        return Err(format!("files needs --dir and --port\n{USAGE}"));
    }
    Ok(args)
}

/// Writes the expected URLs, one per line.
fn write_urls(path: &str, urls: &[String]) -> Result<(), String> {
    let mut text = String::with_capacity(urls.len() * 40);
    for u in urls {
        text.push_str(u);
        text.push('\n');
    }
    std::fs::write(path, text).map_err(|e| format!("{path}: {e}"))
}

fn files_main(args: WebArgs) -> ExitCode {
    let web = TestWeb::generate(&args.cfg);
    let dir = args.dir.unwrap_or_default();
    let written = match files::write_tree(&web, args.scheme, args.port, dir.as_ref()) {
        Ok(n) => n,
        Err(e) => {
            eprintln!("{dir}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let urls = web.expected_urls_as(args.scheme, args.port);
    if let Some(path) = &args.urls_out {
        if let Err(e) = write_urls(path, &urls) {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    }
    println!("files={written} pages={}", urls.len());
    ExitCode::SUCCESS
}

fn web_main(args: WebArgs) -> ExitCode {
    let web = std::sync::Arc::new(TestWeb::generate(&args.cfg));
    let server =
        match WebServer::start_with_latency(web.clone(), args.port, args.lifetime, args.latency) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("web server: {e}");
                return ExitCode::FAILURE;
            }
        };
    let port = server.port();
    let dns = match DnsServer::start(DnsServerConfig {
        addr: Ipv4Addr::LOCALHOST,
        records: web.dns_records(),
        lifetime: args.lifetime,
        ..DnsServerConfig::default()
    }) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("dns server: {e}");
            return ExitCode::FAILURE;
        }
    };
    let urls = web.expected_urls(port);
    if let Some(path) = &args.urls_out {
        if let Err(e) = write_urls(path, &urls) {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    }
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "http_port={port} dns={} pages={}",
        dns.addr(),
        urls.len()
    );
    let _ = out.flush();
    drop(out);
    let stdin_closed = args.until_stdin_closes.then(stdin_end);
    while !server.is_stopped() {
        match &stdin_closed {
            Some(closed) => match closed.recv_timeout(WAIT_STEP) {
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                _ => break,
            },
            None => std::thread::sleep(WAIT_STEP),
        }
    }
    eprintln!("test web: served {} requests", server.requests());
    dns.stop();
    server.stop();
    ExitCode::SUCCESS
}

/// A message once stdin reaches its end: the parent closed it, or exited (even killed).
fn stdin_end() -> mpsc::Receiver<()> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink());
        let _ = tx.send(());
    });
    rx
}

fn parse_load_args(mut it: impl Iterator<Item = String>) -> Result<LoadConfig, String> {
    let mut cfg = LoadConfig {
        port: 0,
        hosts: WebConfig::default().hosts,
        pages: WebConfig::default().pages,
        conns: 64,
        duration: Duration::from_secs(5),
    };
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--port" => cfg.port = num(&flag, it.next())?,
            "--hosts" => cfg.hosts = num(&flag, it.next())?,
            "--pages" => cfg.pages = num(&flag, it.next())?,
            "--conns" => cfg.conns = num(&flag, it.next())?,
            "--seconds" => cfg.duration = Duration::from_secs_f64(num(&flag, it.next())?),
            "--help" | "-h" => return Err(USAGE.to_string()),
            other => return Err(format!("unknown flag {other}\n{USAGE}")),
        }
    }
    if cfg.port == 0 || cfg.hosts == 0 || cfg.pages == 0 || cfg.conns == 0 {
        return Err("--port is required; --hosts, --pages, --conns must be at least 1".into());
    }
    Ok(cfg)
}

fn load_main(cfg: LoadConfig) -> ExitCode {
    let r = load::run(&cfg);
    println!(
        "requests={} errors={} seconds={:.2} req/s={:.0} MB/s={:.1}",
        r.requests,
        r.errors,
        r.elapsed.as_secs_f64(),
        r.requests_per_sec(),
        r.mb_per_sec()
    );
    if r.requests == 0 {
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

struct FreshArgs {
    cfg: FreshConfig,
    log: Option<String>,
    /// `fresh-report` only: the window's ends.
    from: Option<f64>,
    to: Option<f64>,
}

/// The arguments of `fresh` and (`report`) `fresh-report`: the content flags they share, the
/// server's port, and the report's log and window.
fn parse_fresh_args(
    mut it: impl Iterator<Item = String>,
    report: bool,
) -> Result<FreshArgs, String> {
    let mut args = FreshArgs {
        cfg: FreshConfig::default(),
        log: None,
        from: None,
        to: None,
    };
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--pages" => args.cfg.pages = num(&flag, it.next())?,
            "--seed" => args.cfg.seed = num(&flag, it.next())?,
            "--mean-change-secs" => {
                let v = it.next().ok_or("--mean-change-secs needs a value")?;
                args.cfg.mean_change_secs = v
                    .split(',')
                    .map(|m| m.trim().parse::<f64>())
                    .collect::<Result<_, _>>()
                    .map_err(|e| format!("--mean-change-secs {v}: {e}"))?;
            }
            "--article-secs" => args.cfg.article_secs = num(&flag, it.next())?,
            "--lifetime" => {
                let secs: f64 = num(&flag, it.next())?;
                args.cfg.lifetime = Duration::try_from_secs_f64(secs)
                    .map_err(|e| format!("--lifetime {secs}: {e}"))?;
            }
            "--log" => args.log = Some(it.next().ok_or("--log needs a value")?),
            "--port" if !report => args.cfg.port = num(&flag, it.next())?,
            "--from" if report => args.from = Some(num(&flag, it.next())?),
            "--to" if report => args.to = Some(num(&flag, it.next())?),
            "--help" | "-h" => return Err(USAGE.to_string()),
            other => return Err(format!("unknown flag {other}\n{USAGE}")),
        }
    }
    args.cfg.check()?;
    if report && args.log.is_none() {
        return Err(format!("fresh-report needs --log\n{USAGE}"));
    }
    Ok(args)
}

/// Appends `entries` to the log file.
fn append_log(file: &mut std::fs::File, entries: &[freshweb::LogEntry]) -> std::io::Result<()> {
    let mut text = String::new();
    freshweb::format_log(entries, &mut text);
    file.write_all(text.as_bytes())
}

fn fresh_main(args: FreshArgs) -> ExitCode {
    let mut log_file = match &args.log {
        Some(path) => match std::fs::File::create(path)
            .and_then(|mut f| writeln!(f, "{}", freshweb::LOG_HEADER).map(|()| f))
        {
            Ok(f) => Some(f),
            Err(e) => {
                eprintln!("{path}: {e}");
                return ExitCode::FAILURE;
            }
        },
        None => None,
    };
    let web = match FreshWeb::start(args.cfg) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("fresh server: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "http_port={} seed={}", web.port(), web.url("/"));
    let _ = out.flush();
    drop(out);
    let mut written = 0;
    // Bounded by the server's lifetime; one more turn writes what came last.
    loop {
        let stopped = web.is_stopped();
        if let Some(f) = log_file.as_mut() {
            let new = web.log_from(written);
            if let Err(e) = append_log(f, &new) {
                eprintln!("log: {e}");
                return ExitCode::FAILURE;
            }
            written += new.len();
        }
        if stopped {
            break;
        }
        std::thread::sleep(LOG_FLUSH);
    }
    let dropped = web.log_dropped();
    web.stop();
    if let Some(f) = log_file.as_mut() {
        if dropped > 0 && writeln!(f, "# dropped {dropped}").is_err() {
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

fn fresh_report_main(args: FreshArgs) -> ExitCode {
    let path = args.log.unwrap_or_default();
    let parsed = std::fs::read_to_string(&path)
        .map_err(|e| e.to_string())
        .and_then(|text| freshweb::parse_log(&text));
    let (log, dropped) = match parsed {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{path}: {e}");
            return ExitCode::FAILURE;
        }
    };
    // One end given: the other is the log's.
    let window = (args.from.is_some() || args.to.is_some()).then(|| {
        let ts = log.iter().map(|e| e.t);
        let first = ts.clone().fold(f64::INFINITY, f64::min);
        let last = ts.fold(f64::NEG_INFINITY, f64::max);
        (args.from.unwrap_or(first), args.to.unwrap_or(last))
    });
    let report = freshweb::analyze(&args.cfg, &log, window);
    let mut out = std::io::stdout().lock();
    for (k, v) in report.key_values() {
        let _ = writeln!(out, "{k}={v}");
    }
    let _ = writeln!(out, "log_dropped={dropped}");
    ExitCode::SUCCESS
}

/// `template`'s flags: articles, lifetime.
fn parse_template_args(mut it: impl Iterator<Item = String>) -> Result<(usize, Duration), String> {
    let (mut articles, mut lifetime) = (700usize, Duration::from_secs(600));
    while let Some(flag) = it.next() {
        let value = it
            .next()
            .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
        let bad = |_| format!("bad value for {flag}: {value}\n{USAGE}");
        match flag.as_str() {
            "--articles" => articles = value.parse().map_err(bad)?,
            "--lifetime" => lifetime = Duration::from_secs(value.parse().map_err(bad)?),
            _ => return Err(format!("unknown flag {flag}\n{USAGE}")),
        }
    }
    Ok((articles, lifetime))
}

fn template_main((articles, lifetime): (usize, Duration)) -> ExitCode {
    use spinneret_tools::templateweb::{Sites, TemplateWeb};
    let web = TemplateWeb::generate(articles);
    let http = match HttpServer::start(HttpServerConfig {
        routes: web.routes(),
        lifetime,
        ..HttpServerConfig::default()
    }) {
        Ok(s) => s,
        Err(e) => return fail(format!("http server: {e}")),
    };
    let dns = match DnsServer::start(DnsServerConfig {
        records: web.dns_records(),
        lifetime,
        ..DnsServerConfig::default()
    }) {
        Ok(s) => s,
        Err(e) => return fail(format!("dns server: {e}")),
    };
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "http_port={} dns={} pages={}",
        http.port(),
        dns.addr(),
        web.pages.len()
    );
    for seed in web.seeds(http.port()) {
        let _ = writeln!(out, "{seed}");
    }
    let _ = out.flush();
    drop(out);
    serve_until_stopped(http, dns)
}

fn fail(msg: String) -> ExitCode {
    eprintln!("{msg}");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let mut argv = std::env::args().skip(1).peekable();
    match argv.peek().map(String::as_str) {
        Some("web") => {
            argv.next();
            return parse_web_args(argv, false).map_or_else(fail, web_main);
        }
        Some("files") => {
            argv.next();
            return parse_web_args(argv, true).map_or_else(fail, files_main);
        }
        Some("load") => {
            argv.next();
            return parse_load_args(argv).map_or_else(fail, load_main);
        }
        Some("fresh") => {
            argv.next();
            return parse_fresh_args(argv, false).map_or_else(fail, fresh_main);
        }
        Some("fresh-report") => {
            argv.next();
            return parse_fresh_args(argv, true).map_or_else(fail, fresh_report_main);
        }
        Some("template") => {
            argv.next();
            return parse_template_args(argv).map_or_else(fail, template_main);
        }
        _ => {}
    }
    let args = match parse_args(argv) {
        Ok(a) => a,
        Err(msg) => {
            eprintln!("{msg}");
            return ExitCode::from(2);
        }
    };
    // The port is needed inside the pages' absolute links, so routes are installed after start.
    let http = match HttpServer::start(HttpServerConfig {
        addrs: vec![args.bind],
        lifetime: args.lifetime,
        ..HttpServerConfig::default()
    }) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("http server: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (routes, urls, records) = simple_site(args.hosts, args.pages, http.port());
    http.set_routes(routes);
    let dns = match DnsServer::start(DnsServerConfig {
        addr: args.bind,
        records,
        lifetime: args.lifetime,
        ..DnsServerConfig::default()
    }) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("dns server: {e}");
            return ExitCode::FAILURE;
        }
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let _ = writeln!(
        out,
        "http_port={} dns={} urls={}",
        http.port(),
        dns.addr(),
        urls.len()
    );
    if args.print_urls {
        for u in &urls {
            let _ = writeln!(out, "{u}");
        }
    }
    let _ = out.flush();
    drop(out);
    serve_until_stopped(http, dns)
}

/// Waits for `http` to stop by itself (its lifetime bounds the wait), then stops `dns`.
fn serve_until_stopped(http: HttpServer, dns: DnsServer) -> ExitCode {
    while !http.is_stopped() {
        std::thread::sleep(Duration::from_millis(100));
    }
    dns.stop();
    http.stop();
    ExitCode::SUCCESS
}
