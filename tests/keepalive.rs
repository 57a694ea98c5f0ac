//! Connections through a broad crawl: a web whose pages link to random pages of other hosts,
//! crawled with the default connection budgets, opens about one connection per host, and
//! politeness holds while active hosts keep idle connections through their delays.
//! The server counts connections (each request carries its connection's number).

use crate::common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::Ipv4Addr;
use std::time::Duration;

use common::{assert_spaced, read_log, spinneret, temp_dir};
use spinneret_tools::dns_server::{DnsServer, DnsServerConfig, Record};
use spinneret_tools::http_server::{
    HttpServer, HttpServerConfig, RequestRecord, Response, Routes, Script,
};

const LIFETIME: Duration = Duration::from_secs(120);

fn host(h: usize) -> String {
    format!("h{h}.keep.test")
}

/// `hosts` hosts of `pages` pages on 127.4.x.y. Page k of host h links to the next page of
/// its own host (the last one back to the home page) and to `cross` random pages of other
/// hosts (a fixed xorshift, so the web is the same every run); each home page also links to
/// the next host's, so everything is reachable from host 0's.
struct Web {
    http: HttpServer,
    dns: DnsServer,
    urls: BTreeSet<String>,
    /// The test CA's certificate, for an HTTPS web.
    ca_pem: Option<std::path::PathBuf>,
}

fn start_web(hosts: usize, pages: usize, cross: usize) -> Web {
    start_web_as(hosts, pages, cross, false)
}

fn start_web_as(hosts: usize, pages: usize, cross: usize, https: bool) -> Web {
    let scheme = if https { "https" } else { "http" };
    let (tls, ca_pem) = if https {
        let ca = spinneret_tools::tls::TestCa::new();
        let names: Vec<String> = (0..hosts).map(host).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let pem = temp_dir("keepalive-ca").join("ca.pem");
        ca.write_ca_pem(&pem).expect("write CA");
        (Some(ca.issue(&refs)), Some(pem))
    } else {
        (None, None)
    };
    let ips: Vec<Ipv4Addr> = (0..hosts)
        .map(|i| Ipv4Addr::new(127, 4, (i / 250) as u8, (i % 250) as u8 + 1))
        .collect();
    let http = HttpServer::start(HttpServerConfig {
        addrs: ips.clone(),
        tls,
        lifetime: LIFETIME,
        ..HttpServerConfig::default()
    })
    .expect("http server");
    let port = http.port();
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = |n: usize| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng % n as u64) as usize
    };
    let mut routes = Routes::new();
    let mut urls = BTreeSet::new();
    for h in 0..hosts {
        for k in 0..pages {
            let mut body = format!("<html><body><h1>{h}/{k}</h1>");
            if k + 1 < pages {
                body.push_str(&format!("<a href=\"/p{}.html\">next</a>", k + 1));
            } else {
                body.push_str("<a href=\"/\">home</a>");
            }
            if k == 0 {
                let o = host((h + 1) % hosts);
                body.push_str(&format!("<a href=\"{scheme}://{o}:{port}/\">next host</a>"));
            }
            for _ in 0..cross {
                let (oh, ok) = ((h + 1 + next(hosts - 1)) % hosts, next(pages));
                body.push_str(&format!(
                    "<a href=\"{scheme}://{}:{port}/{}\">x</a>",
                    host(oh),
                    if ok == 0 {
                        String::new()
                    } else {
                        format!("p{ok}.html")
                    }
                ));
            }
            body.push_str("</body></html>");
            let path = if k == 0 {
                "/".to_string()
            } else {
                format!("/p{k}.html")
            };
            urls.insert(format!("{scheme}://{}:{port}{path}", host(h)));
            routes.add(
                &host(h),
                &path,
                Script::Respond(Response::ok(body, "text/html")),
            );
        }
    }
    http.set_routes(routes);
    let dns = DnsServer::start(DnsServerConfig {
        records: (0..hosts)
            .map(|h| (host(h), vec![Record::A(ips[h])]))
            .collect(),
        lifetime: LIFETIME,
        ..DnsServerConfig::default()
    })
    .expect("dns server");
    Web {
        http,
        dns,
        urls,
        ca_pem,
    }
}

/// Crawls `web` from host 0's home page with the default budgets and `extra` flags; returns
/// the server's request log.
fn crawl(web: &Web, name: &str, extra: &[&str]) -> Vec<RequestRecord> {
    crawl_with_stats(web, name, extra).0
}

/// As [`crawl`], with the crawl's stats.json.
fn crawl_with_stats(web: &Web, name: &str, extra: &[&str]) -> (Vec<RequestRecord>, String) {
    let out = temp_dir(name).join("out");
    let seed = web
        .urls
        .iter()
        .find(|u| u.contains("//h0."))
        .unwrap()
        .clone();
    let dns = web.dns.addr().to_string();
    let mut args = vec![
        "crawl",
        seed.as_str(),
        "--out",
        out.to_str().unwrap(),
        "--dns-server",
        &dns,
        "-q",
    ];
    args.extend(common::crawl_run::TEST_WEB_FLAGS);
    let ca = web
        .ca_pem
        .as_ref()
        .map(|p| p.to_string_lossy().into_owned());
    if let Some(ca) = &ca {
        args.extend(["--ca-file", ca.as_str()]);
    }
    args.extend_from_slice(extra);
    let res = spinneret(&args, Duration::from_secs(90));
    assert_eq!(
        res.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
    let fetched: BTreeSet<String> = read_log(&out)
        .into_iter()
        .filter(|l| l.outcome == spinneret::ReturnCode::Success && !l.url.ends_with("/robots.txt"))
        .map(|l| l.url)
        .collect();
    assert_eq!(fetched, web.urls, "every page fetched once, nothing else");
    let stats = std::fs::read_to_string(out.join("stats.json")).expect("stats.json");
    (web.http.requests(), stats)
}

/// A whole-number field of stats.json.
fn stat(stats: &str, key: &str) -> u64 {
    let at = stats.find(&format!("\"{key}\": ")).expect(key) + key.len() + 4;
    stats[at..]
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|n| n.parse().ok())
        .expect(key)
}

/// Distinct connections each host's requests came on.
fn connections_per_host(reqs: &[RequestRecord]) -> BTreeMap<String, usize> {
    let mut by_host: HashMap<&str, BTreeSet<u64>> = HashMap::new();
    for r in reqs {
        by_host.entry(&r.host).or_default().insert(r.conn_id);
    }
    by_host
        .into_iter()
        .map(|(h, c)| (h.to_string(), c.len()))
        .collect()
}

/// The issue's shape, scaled down: more hosts (60) than connections in flight (8), random
/// cross-host links, no delay. Before active hosts kept their connections, the loop closed
/// the oldest idle connection to open one for the next host, and nearly every page paid a
/// connection (here: 300+ for 480 requests).
#[test]
fn a_broad_crawl_opens_about_one_connection_per_host() {
    let web = start_web(60, 8, 3);
    let reqs = crawl(
        &web,
        "keepalive-broad",
        &["--delay-ms", "0", "--max-conns", "8"],
    );
    let per_host = connections_per_host(&reqs);
    let total: usize = per_host.values().sum();
    eprintln!(
        "{} requests over {} hosts on {total} connections",
        reqs.len(),
        per_host.len()
    );
    assert_eq!(per_host.len(), 60);
    assert!(
        total as f64 <= 1.1 * 60.0,
        "{total} connections for 60 hosts: {per_host:?}"
    );
    for h in 0..60 {
        let mine: Vec<&RequestRecord> = reqs.iter().filter(|r| r.host == host(h)).collect();
        assert_spaced(mine, Duration::ZERO, &host(h));
    }
}

/// With fewer sockets than hosts, hosts take turns: every page is still fetched once, one
/// request at a time per host, and a host whose connection had to go reconnects only when
/// it comes back (bounded, not once per page).
#[test]
fn fewer_sockets_than_hosts_still_crawl_everything_politely() {
    let web = start_web(40, 6, 2);
    let reqs = crawl(
        &web,
        "keepalive-few-sockets",
        &["--delay-ms", "0", "--max-conns", "4", "--max-sockets", "8"],
    );
    let per_host = connections_per_host(&reqs);
    let total: usize = per_host.values().sum();
    eprintln!(
        "{} requests on {total} connections with 8 sockets",
        reqs.len()
    );
    assert!(
        total < reqs.len(),
        "{total} connections for {} requests",
        reqs.len()
    );
    for h in 0..40 {
        let mine: Vec<&RequestRecord> = reqs.iter().filter(|r| r.host == host(h)).collect();
        assert_spaced(mine, Duration::ZERO, &host(h));
    }
}

/// An active host keeps its idle connection while it waits out its politeness delay: one
/// connection per host, and every gap at least the delay.
#[test]
fn idle_connections_wait_out_the_delay_and_are_reused() {
    let web = start_web(6, 4, 1);
    let reqs = crawl(
        &web,
        "keepalive-delay",
        &["--delay-ms", "300", "--delay-factor", "0"],
    );
    let per_host = connections_per_host(&reqs);
    for h in 0..6 {
        let mine: Vec<&RequestRecord> = reqs.iter().filter(|r| r.host == host(h)).collect();
        assert_spaced(mine, Duration::from_millis(300), &host(h));
    }
    assert!(
        per_host.values().all(|&n| n == 1),
        "one kept-alive connection per host through its delays: {per_host:?}"
    );
}

/// Over HTTPS: one TLS connection per host with the default budgets; and with fewer sockets
/// than hosts, every connection opened again to a host resumes its TLS session (full
/// handshakes: one per host). With a session cache of one entry per socket, as first built,
/// 118 connections made 118 full handshakes.
#[test]
fn https_hosts_pay_one_full_handshake_and_reconnections_resume() {
    let web = start_web_as(30, 6, 2, true);
    let (reqs, stats) = crawl_with_stats(
        &web,
        "keepalive-https",
        &["--delay-ms", "0", "--max-conns", "8"],
    );
    let total: usize = connections_per_host(&reqs).values().sum();
    assert!(
        total as f64 <= 1.1 * 30.0,
        "{total} TLS connections for 30 hosts"
    );
    assert_eq!(stat(&stats, "tls_full_handshakes"), total as u64);

    let web = start_web_as(30, 6, 2, true);
    let (reqs, stats) = crawl_with_stats(
        &web,
        "keepalive-https-few",
        &["--delay-ms", "0", "--max-conns", "4", "--max-sockets", "6"],
    );
    let total: u64 = connections_per_host(&reqs)
        .values()
        .map(|&n| n as u64)
        .sum();
    let (full, resumed) = (
        stat(&stats, "tls_full_handshakes"),
        stat(&stats, "tls_resumed_handshakes"),
    );
    eprintln!("{total} connections with 6 sockets: {full} full handshakes, {resumed} resumed");
    assert!(total > 30, "the socket budget forced reconnections");
    assert_eq!(full + resumed, total);
    assert!(
        full <= 30,
        "{full} full handshakes for 30 hosts: a reconnection did not resume"
    );
}
