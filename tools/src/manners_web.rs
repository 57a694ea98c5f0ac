//! A loopback web with the real web's manners mixed across many hosts, for crawl tests: names
//! whose answer holds 40 A records (past 512 bytes: EDNS0 or a retry over TCP), hosts with
//! only an AAAA record (`[::1]`), CNAME chains, hosts that answer 429 or 503 with a
//! `Retry-After` before they serve, and sites behind a cookie gate (a `Set-Cookie` and a
//! redirect to themselves). Every page is linked from the previous host's home page, so one
//! seed reaches them all, and every page's final answer is `200`.

use std::collections::{BTreeSet, HashMap};
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use crate::dns_server::{DnsServer, DnsServerConfig, Record};
use crate::http_server::{HttpServer, HttpServerConfig, Response, Routes, Script};

/// Addresses a 40-record name answers with; the page server listens on all of them.
const BIG_ANSWER: u8 = 40;
/// Pages per host besides the home page.
const PAGES: usize = 2;

/// What a host does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// 40 A records, all served.
    BigAnswer,
    /// An AAAA record only.
    V6Only,
    /// A CNAME to a CNAME to the A record.
    CnameChain,
    /// Each page answers 429 (`Retry-After: 1`) and then 503 (`Retry-After: 1`) before 200.
    Storm,
    /// Each page redirects to itself with a cookie until the cookie comes back.
    CookieGate,
}

const KINDS: [Kind; 5] = [
    Kind::BigAnswer,
    Kind::V6Only,
    Kind::CnameChain,
    Kind::Storm,
    Kind::CookieGate,
];

pub struct MannersWeb {
    pub http: HttpServer,
    pub dns: DnsServer,
    /// The first host's home page.
    pub seed: String,
    /// Every page, each of whose final crawl.log line must be `Success 200`.
    pub pages: BTreeSet<String>,
    /// The pages that answer 429 and 503 first.
    pub storm_pages: BTreeSet<String>,
}

fn name(kind: Kind, i: usize) -> String {
    format!("{}{i}.manners.test", format!("{kind:?}").to_lowercase())
}

/// `per_kind` hosts of every kind, interleaved; the DNS server answers at most 512 bytes
/// over UDP when `edns` is off (so a 40-record name needs TCP).
pub fn start(per_kind: usize, edns: bool, lifetime: Duration) -> io::Result<MannersWeb> {
    let big: Vec<Ipv4Addr> = (1..=BIG_ANSWER)
        .map(|k| Ipv4Addr::new(127, 6, 0, k))
        .collect();
    let mut addrs = big.clone();
    let hosts: Vec<(Kind, usize)> = (0..per_kind)
        .flat_map(|i| KINDS.iter().map(move |&k| (k, i)))
        .collect();
    let mut records: HashMap<String, Vec<Record>> = HashMap::new();
    for (n, &(kind, i)) in hosts.iter().enumerate() {
        let host = name(kind, i);
        let own = Ipv4Addr::new(127, 6, 1, n as u8 + 1);
        match kind {
            Kind::BigAnswer => {
                records.insert(host, big.iter().map(|&a| Record::A(a)).collect());
            }
            Kind::V6Only => {
                records.insert(host, vec![Record::Aaaa(Ipv6Addr::LOCALHOST)]);
            }
            Kind::CnameChain => {
                let (alias, real) = (format!("alias-{host}"), format!("real-{host}"));
                records.insert(host, vec![Record::Cname(alias.clone())]);
                records.insert(alias, vec![Record::Cname(real.clone())]);
                records.insert(real, vec![Record::A(own)]);
                addrs.push(own);
            }
            Kind::Storm | Kind::CookieGate => {
                records.insert(host, vec![Record::A(own)]);
                addrs.push(own);
            }
        }
    }
    let http = HttpServer::start(HttpServerConfig {
        addrs,
        also_v6: true,
        lifetime,
        ..HttpServerConfig::default()
    })?;
    let port = http.port();
    let url = |kind: Kind, i: usize, path: &str| format!("http://{}:{port}{path}", name(kind, i));
    let mut routes = Routes::new();
    let mut pages = BTreeSet::new();
    let mut storm_pages = BTreeSet::new();
    for (n, &(kind, i)) in hosts.iter().enumerate() {
        let host = name(kind, i);
        let (next_kind, next_i) = hosts[(n + 1) % hosts.len()];
        for p in 0..=PAGES {
            let path = if p == 0 {
                "/".to_string()
            } else {
                format!("/p{p}.html")
            };
            let mut body = format!("<html><body><h1>{host} {path}</h1>");
            if p == 0 {
                for q in 1..=PAGES {
                    body.push_str(&format!("<a href=\"/p{q}.html\">page {q}</a>"));
                }
                body.push_str(&format!(
                    "<a href=\"{}\">next host</a>",
                    url(next_kind, next_i, "/")
                ));
            }
            body.push_str("</body></html>");
            let page = Script::Respond(Response::ok(body, "text/html"));
            let script = match kind {
                Kind::Storm => {
                    storm_pages.insert(url(kind, i, &path));
                    Script::in_turn(vec![
                        Script::Respond(Response::status(429).header("Retry-After", "1")),
                        Script::Respond(Response::status(503).header("Retry-After", "1")),
                        page,
                    ])
                }
                Kind::CookieGate => Script::by_cookie(
                    "gate=open",
                    page,
                    Script::Respond(
                        Response::redirect(302, &path).header("Set-Cookie", "gate=open; Path=/"),
                    ),
                ),
                _ => page,
            };
            routes.add(&host, &path, script);
            pages.insert(url(kind, i, &path));
        }
    }
    http.set_routes(routes);
    let dns = DnsServer::start(DnsServerConfig {
        records,
        lifetime,
        edns,
        tcp: true,
        ..DnsServerConfig::default()
    })?;
    let (k0, i0) = hosts[0];
    Ok(MannersWeb {
        http,
        dns,
        seed: url(k0, i0, "/"),
        pages,
        storm_pages,
    })
}
