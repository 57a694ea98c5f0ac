//! The real web's DNS manners, end to end over loopback: a name with 40 A records (asked again
//! over TCP after a truncated answer, or answered in one datagram when the server honours
//! EDNS), a server refusing TCP, a host with only an AAAA record fetched over IPv6, and 600
//! names asked for at once.

use crate::common;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use common::{config, run, spinneret, temp_dir};
use spinneret::fetcher::addr_policy::AddrPolicy;
use spinneret::ReturnCode;
use spinneret_tools::dns_server::{DnsServer, DnsServerConfig, Record, TYPE_A};
use spinneret_tools::http_server::{HttpServer, HttpServerConfig, Response, Routes, Script};

const LIFETIME: Duration = Duration::from_secs(60);

/// `big.test`: 40 A records, 127.0.0.1 (where the page is) first; about 700 bytes of answer.
fn dns(edns: bool, tcp: bool) -> DnsServer {
    let mut a = vec![Record::A(Ipv4Addr::LOCALHOST)];
    a.extend((2..=40).map(|i| Record::A(Ipv4Addr::new(127, 0, 0, i))));
    let mut records = HashMap::new();
    records.insert("big.test".to_string(), a);
    records.insert(
        "v6.test".to_string(),
        vec![Record::Aaaa(Ipv6Addr::LOCALHOST)],
    );
    DnsServer::start(DnsServerConfig {
        records,
        lifetime: LIFETIME,
        edns,
        tcp,
        ..DnsServerConfig::default()
    })
    .expect("dns server")
}

fn page() -> HttpServer {
    let mut routes = Routes::new();
    routes.add(
        "big.test",
        "/page",
        Script::Respond(Response::ok("forty", "text/plain")),
    );
    HttpServer::start(HttpServerConfig {
        routes,
        lifetime: LIFETIME,
        ..HttpServerConfig::default()
    })
    .expect("http server")
}

#[test]
fn forty_a_records_resolve_over_tcp_after_a_truncated_answer() {
    let (dns, http) = (dns(false, true), page());
    let url = format!("http://big.test:{}/page", http.port());
    let d = run(config(Some(dns.addr())), &url);
    assert_eq!((d.outcome, d.status), (ReturnCode::Success, 200));
    assert_eq!(d.content, b"forty");
    assert_eq!(
        d.peer,
        Some(SocketAddr::from(([127, 0, 0, 1], http.port())))
    );
    let a_queries = dns.queries().iter().filter(|q| q.1 == TYPE_A).count();
    assert_eq!(a_queries, 2, "once over UDP, once over TCP");
    assert_eq!(dns.tcp_queries(), [("big.test".to_string(), TYPE_A)]);
}

#[test]
fn forty_a_records_come_in_one_datagram_when_the_server_honours_edns() {
    let (dns, http) = (dns(true, true), page());
    let url = format!("http://big.test:{}/page", http.port());
    let d = run(config(Some(dns.addr())), &url);
    assert_eq!((d.outcome, d.status), (ReturnCode::Success, 200));
    assert_eq!(dns.tcp_queries(), [], "no TCP");
}

#[test]
fn a_server_refusing_tcp_ends_the_name_dns_refused() {
    let dns = dns(false, false);
    let d = run(config(Some(dns.addr())), "http://big.test:9/");
    assert_eq!(d.outcome, ReturnCode::DnsRefused);
}

/// A one-page HTTP server on `[::1]`: answers each connection's request with "hello over v6".
struct V6Server {
    port: u16,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl V6Server {
    /// None when `[::1]` cannot be bound (no IPv6 on this machine).
    fn start() -> Option<V6Server> {
        let listener = TcpListener::bind("[::1]:0").ok()?;
        listener.set_nonblocking(true).ok()?;
        let port = listener.local_addr().ok()?.port();
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::spawn(move || {
            let end = Instant::now() + LIFETIME;
            while !s.load(Ordering::SeqCst) && Instant::now() < end {
                let Ok((mut conn, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                };
                let _ = conn.set_nonblocking(false);
                let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
                let mut req = Vec::new();
                let mut buf = [0u8; 1024];
                // Bounded: a request head ends, the client closes, or the read times out.
                while !req.windows(4).any(|w| w == b"\r\n\r\n") && req.len() < 16_384 {
                    match conn.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => req.extend_from_slice(&buf[..n]),
                    }
                }
                let body = "hello over v6";
                let _ = write!(
                    conn,
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\
                     Connection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        Some(V6Server {
            port,
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for V6Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[test]
fn an_aaaa_only_host_on_ipv6_loopback_is_fetched() {
    let Some(http) = V6Server::start() else {
        eprintln!("SKIP: [::1] cannot be bound here (no IPv6 loopback)");
        return;
    };
    let dns = dns(true, true);
    let url = format!("http://v6.test:{}/", http.port);

    // In process: the address connected to is the IPv6 one.
    let d = run(config(Some(dns.addr())), &url);
    assert_eq!((d.outcome, d.status), (ReturnCode::Success, 200));
    assert_eq!(d.content, b"hello over v6");
    assert_eq!(
        d.peer,
        Some(SocketAddr::from((Ipv6Addr::LOCALHOST, http.port)))
    );
    // The address policy judges IPv6 loopback as it does 127.0.0.1.
    let mut strict = config(Some(dns.addr()));
    strict.addr_policy = AddrPolicy::default();
    assert_eq!(run(strict, &url).outcome, ReturnCode::PrivateAddressBlocked);
    let mut one_net = config(Some(dns.addr()));
    one_net.addr_policy = AddrPolicy::new(false, vec!["::1/128".parse().unwrap()]);
    assert_eq!(run(one_net, &url).outcome, ReturnCode::Success);

    // The command line.
    let dir = temp_dir("dns-manners-v6");
    let list = dir.join("urls.txt");
    std::fs::write(&list, format!("{url}\n")).unwrap();
    let out = dir.join("out");
    let dns_arg = dns.addr().to_string();
    let res = spinneret(
        &[
            "fetch",
            "--urls",
            list.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--dns-server",
            &dns_arg,
            "--hosts-file",
            "none",
            "--allow-net",
            "::1/128",
        ],
        Duration::from_secs(60),
    );
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert!(res.status.success(), "exit {:?}: {stderr}", res.status);
    let lines = common::read_log(&out);
    assert_eq!(lines.len(), 1, "{stderr}");
    assert_eq!(
        (lines[0].outcome, lines[0].status),
        (ReturnCode::Success, 200)
    );
}

/// `both.test` has IPv6 (black-holed: connects to it never complete) and IPv4 (the page, on
/// the same port): Happy Eyeballs tries IPv6 first, gives it 250 ms, and fetches over IPv4 —
/// well within the connect timeout, which alone would have ended the fetch.
#[test]
fn a_black_holed_ipv6_address_falls_back_to_ipv4_within_the_connect_timeout() {
    let mut routes = Routes::new();
    routes.add(
        "both.test",
        "/",
        Script::Respond(Response::ok("over v4", "text/plain")),
    );
    let http = HttpServer::start(HttpServerConfig {
        routes,
        lifetime: LIFETIME,
        ..HttpServerConfig::default()
    })
    .expect("http server");
    let hole = match spinneret_tools::blackhole::start_at(SocketAddr::from((
        Ipv6Addr::LOCALHOST,
        http.port(),
    ))) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("SKIP: no black hole on [::1]:{} ({e})", http.port());
            return;
        }
    };
    let mut records = HashMap::new();
    records.insert(
        "both.test".to_string(),
        vec![
            Record::A(Ipv4Addr::LOCALHOST),
            Record::Aaaa(Ipv6Addr::LOCALHOST),
        ],
    );
    let dns = DnsServer::start(DnsServerConfig {
        records,
        lifetime: LIFETIME,
        ..DnsServerConfig::default()
    })
    .expect("dns server");
    let mut cfg = config(Some(dns.addr()));
    cfg.connect_timeout = Duration::from_secs(3);
    let url = format!("http://both.test:{}/", http.port());
    let started = Instant::now();
    let d = run(cfg.clone(), &url);
    let took = started.elapsed();
    assert_eq!((d.outcome, d.status), (ReturnCode::Success, 200));
    assert_eq!(
        d.peer,
        Some(SocketAddr::from((Ipv4Addr::LOCALHOST, http.port())))
    );
    assert!(took < cfg.connect_timeout, "took {took:?}");
    drop(hole);
}

/// A server answering `http://both.test/`, over IPv4 only.
fn both_test_server() -> HttpServer {
    let mut routes = Routes::new();
    routes.add(
        "both.test",
        "/",
        Script::Respond(Response::ok("v4", "text/plain")),
    );
    HttpServer::start(HttpServerConfig {
        routes,
        lifetime: LIFETIME,
        ..HttpServerConfig::default()
    })
    .expect("http server")
}

/// `both.test` named at `v6` first and at 127.0.0.1 second: the page comes over IPv4.
fn fetched_over_ipv4_after(v6: Ipv6Addr, http: &HttpServer) {
    let mut records = HashMap::new();
    records.insert(
        "both.test".to_string(),
        vec![Record::Aaaa(v6), Record::A(Ipv4Addr::LOCALHOST)],
    );
    let dns = DnsServer::start(DnsServerConfig {
        records,
        lifetime: LIFETIME,
        ..DnsServerConfig::default()
    })
    .expect("dns server");
    let d = run(
        config(Some(dns.addr())),
        &format!("http://both.test:{}/", http.port()),
    );
    assert_eq!((d.outcome, d.status), (ReturnCode::Success, 200));
    assert_eq!(
        d.peer,
        Some(SocketAddr::from((Ipv4Addr::LOCALHOST, http.port())))
    );
}

/// A refused IPv6 connect (nothing listens there) falls back at once, not after a delay.
#[test]
fn a_refused_ipv6_connect_falls_back_to_ipv4() {
    let http = both_test_server();
    if TcpListener::bind("[::1]:0").is_err() {
        eprintln!("SKIP: no IPv6 loopback here");
        return;
    }
    fetched_over_ipv4_after(Ipv6Addr::LOCALHOST, &http);
}

/// An IPv6 address the system refuses to connect to before anything is sent (link-local
/// without a scope: `EINVAL` at once, as a host with no IPv6 route gets `ENETUNREACH`) still
/// falls back to the name's IPv4 address; no packet leaves the machine.
#[test]
fn an_ipv6_connect_refused_at_once_falls_back_to_ipv4() {
    let http = both_test_server();
    let unscoped: Ipv6Addr = "fe80::1".parse().unwrap();
    if std::net::TcpStream::connect((unscoped, http.port())).is_ok() {
        eprintln!("SKIP: this system connects to an unscoped link-local address");
        return;
    }
    fetched_over_ipv4_after(unscoped, &http);
}

/// A crawl from many seeds meets many names at once. The resolver keeps no more of them on
/// the wire than a UDP receive buffer holds, so a healthy server loses none of its queries
/// and no name waits for a retry: one A and one AAAA query per name, and every page fetched.
#[test]
fn six_hundred_names_at_once_resolve_without_a_retry() {
    let names: Vec<String> = (0..600).map(|i| format!("h{i}.many.test")).collect();
    let records = names
        .iter()
        .map(|n| (n.clone(), vec![Record::A(Ipv4Addr::LOCALHOST)]))
        .collect();
    let dns = DnsServer::start(DnsServerConfig {
        records,
        lifetime: LIFETIME,
        ..DnsServerConfig::default()
    })
    .expect("dns server");
    let mut routes = Routes::new();
    for n in &names {
        routes.add(n, "/", Script::Respond(Response::ok("hi", "text/plain")));
    }
    let http = HttpServer::start(HttpServerConfig {
        routes,
        lifetime: LIFETIME,
        ..HttpServerConfig::default()
    })
    .expect("http server");
    let urls: Vec<String> = names
        .iter()
        .map(|n| format!("http://{n}:{}/", http.port()))
        .collect();
    let mut c = config(Some(dns.addr()));
    c.resolver.total_timeout = Duration::from_secs(10);
    // As a crawl with the default 128 connections: all 600 names asked for at once.
    c.max_live = names.len();
    let (done, stats) = common::run_with_stats(c, &urls, Duration::from_secs(60));
    let fetched = done
        .iter()
        .filter(|d| (d.outcome, d.status) == (ReturnCode::Success, 200))
        .count();
    assert_eq!(fetched, names.len());
    assert_eq!(
        dns.queries().len(),
        2 * names.len(),
        "an A and an AAAA query per name, none sent again"
    );
    // All but the first 64 were asked for before any answer came back.
    let waited = stats.dns_names_waited;
    assert!((1..=600 - 64).contains(&waited), "{waited} names waited");
}
