//! `spinneret-testserver`: serves a generated multi-host site (`sites::simple_site`) and its
//! DNS on loopback for manual crawls and benchmarks. Prints
//! `http_port=PORT dns=IP:PORT urls=N`, then (with `--print-urls`) every URL, then serves until
//! `--lifetime` seconds have passed.

use std::io::Write;
use std::net::Ipv4Addr;
use std::process::ExitCode;
use std::time::Duration;

use spinneret_tools::dns_server::{DnsServer, DnsServerConfig};
use spinneret_tools::http_server::{HttpServer, HttpServerConfig};
use spinneret_tools::sites::simple_site;

const USAGE: &str = "usage: spinneret-testserver [--hosts N] [--pages P] [--lifetime SECS] \
                     [--bind 127.0.0.1] [--print-urls]";

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

fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
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
    while !http.is_stopped() {
        std::thread::sleep(Duration::from_millis(100));
    }
    dns.stop();
    http.stop();
    ExitCode::SUCCESS
}
