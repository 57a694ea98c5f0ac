//! Every fetch outcome (`ReturnCode`) provoked over real loopback sockets, one scenario each,
//! through the in-process crawler. Each test starts its own servers on ephemeral ports.

use crate::common;

use std::collections::HashMap;
use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use common::{config, run};
use spinneret::ReturnCode;
use spinneret_tools::dns_server::{Behaviour, DnsServer, DnsServerConfig, Record};
use spinneret_tools::http_server::{After, HttpServer, HttpServerConfig, Response, Routes, Script};
use spinneret_tools::tls::{self, TestCa};

const LIFETIME: Duration = Duration::from_secs(60);

fn http_server(routes: Routes) -> HttpServer {
    HttpServer::start(HttpServerConfig {
        routes,
        lifetime: LIFETIME,
        ..HttpServerConfig::default()
    })
    .expect("http server")
}

/// A server answering every request on `/` with `script`; returns it and the URL.
fn serve(script: Script) -> (HttpServer, String) {
    let mut routes = Routes::new();
    routes.add("127.0.0.1", "/", script);
    let server = http_server(routes);
    let url = format!("http://127.0.0.1:{}/", server.port());
    (server, url)
}

fn raw(bytes: &[u8]) -> Script {
    Script::Raw {
        bytes: bytes.to_vec(),
        then: After::Close,
    }
}

fn outcome_of(script: Script) -> ReturnCode {
    let (_server, url) = serve(script);
    run(config(None), &url).outcome
}

fn dns_server(records: &[(&str, Vec<Record>)], behaviours: &[(&str, Behaviour)]) -> DnsServer {
    DnsServer::start(DnsServerConfig {
        records: records
            .iter()
            .map(|(n, r)| (n.to_string(), r.clone()))
            .collect::<HashMap<_, _>>(),
        behaviours: behaviours
            .iter()
            .map(|(n, b)| (n.to_string(), b.clone()))
            .collect::<HashMap<_, _>>(),
        lifetime: LIFETIME,
        ..DnsServerConfig::default()
    })
    .expect("dns server")
}

fn dns_outcome(name: &str, records: Vec<Record>, behaviour: Behaviour) -> ReturnCode {
    let dns = dns_server(&[(name, records)], &[(name, behaviour)]);
    run(config(Some(dns.addr())), &format!("http://{name}:9/")).outcome
}

#[test]
fn success_through_test_dns_and_http() {
    let mut routes = Routes::new();
    routes.add(
        "site.test",
        "/page",
        Script::Respond(Response::ok("<p>hello</p>", "text/html")),
    );
    let server = http_server(routes);
    let dns = dns_server(&[("site.test", vec![Record::A(Ipv4Addr::LOCALHOST)])], &[]);
    let d = run(
        config(Some(dns.addr())),
        &format!("http://site.test:{}/page", server.port()),
    );
    assert_eq!((d.outcome, d.status), (ReturnCode::Success, 200));
    assert_eq!(d.content, b"<p>hello</p>");
    assert!(d.response.starts_with(b"HTTP/1.1 200"));
    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].host, "site.test");
    assert_eq!(reqs[0].target, "/page");
}

#[test]
fn url_outcomes() {
    assert_eq!(
        run(config(None), "ftp://127.0.0.1/x").outcome,
        ReturnCode::HttpUnsupportedScheme
    );
}

#[test]
fn dns_outcomes() {
    let a = || vec![Record::A(Ipv4Addr::LOCALHOST)];
    assert_eq!(
        dns_outcome("nx.test", vec![], Behaviour::NxDomain),
        ReturnCode::DnsNxDomain
    );
    assert_eq!(
        dns_outcome("sf.test", a(), Behaviour::ServFail),
        ReturnCode::DnsServFail
    );
    assert_eq!(
        dns_outcome("rf.test", a(), Behaviour::Refused),
        ReturnCode::DnsRefused
    );
    assert_eq!(
        dns_outcome("to.test", a(), Behaviour::Drop),
        ReturnCode::DnsTimeout
    );
    assert_eq!(
        dns_outcome("gb.test", a(), Behaviour::Garbage(vec![0xff; 40])),
        ReturnCode::DnsTimeout,
        "garbage that does not even carry our ID is dropped like a spoof, so the name times out"
    );
    assert_eq!(
        dns_outcome("tc.test", a(), Behaviour::Truncated),
        ReturnCode::DnsUnsupportedAnswer
    );
    assert_eq!(
        dns_outcome("nd.test", vec![], Behaviour::Normal),
        ReturnCode::DnsNoAddress
    );
    // Wrong ID and wrong question are not answers to our query: dropped, then timeout.
    assert_eq!(
        dns_outcome("wi.test", a(), Behaviour::WrongId),
        ReturnCode::DnsTimeout
    );
    assert_eq!(
        dns_outcome("wq.test", a(), Behaviour::WrongQuestion),
        ReturnCode::DnsTimeout
    );
    assert_eq!(
        dns_outcome("ws.test", a(), Behaviour::WrongSource),
        ReturnCode::DnsTimeout
    );
}

#[test]
fn dns_retry_recovers_from_dropped_queries() {
    let mut routes = Routes::new();
    routes.add(
        "flaky.test",
        "/",
        Script::Respond(Response::ok("ok", "text/plain")),
    );
    let server = http_server(routes);
    let dns = dns_server(
        &[("flaky.test", vec![Record::A(Ipv4Addr::LOCALHOST)])],
        &[("flaky.test", Behaviour::FailFirst(2))],
    );
    let mut cfg = config(Some(dns.addr()));
    cfg.resolver.total_timeout = Duration::from_secs(4);
    let d = run(cfg, &format!("http://flaky.test:{}/", server.port()));
    assert_eq!(d.outcome, ReturnCode::Success);
    assert!(
        dns.queries().len() >= 3,
        "two dropped queries, then an answered retry"
    );
}

#[test]
fn dns_malformed_and_cname_outcomes() {
    // A header claiming a question and 65,535 answers with nothing behind it.
    let mut bogus = vec![0, 0, 0x81, 0x80, 0, 1, 0xff, 0xff, 0, 0, 0, 0];
    bogus.extend_from_slice(b"\x02mf\x04test\x00\x00\x01\x00\x01");
    assert_eq!(
        dns_outcome("mf.test", vec![], Behaviour::Raw(bogus)),
        ReturnCode::DnsParseError
    );
    let dns = dns_server(
        &[
            ("loop1.test", vec![Record::Cname("loop2.test".into())]),
            ("loop2.test", vec![Record::Cname("loop1.test".into())]),
        ],
        &[],
    );
    assert_eq!(
        run(config(Some(dns.addr())), "http://loop1.test:9/").outcome,
        ReturnCode::DnsCnameChain
    );
}

#[test]
fn dns_configuration_outcomes() {
    assert_eq!(
        run(config(None), "http://nowhere.test/").outcome,
        ReturnCode::DnsServerUnknown
    );
    let label = "a".repeat(64);
    let dns = dns_server(&[], &[]);
    assert_eq!(
        run(config(Some(dns.addr())), &format!("http://{label}.test/")).outcome,
        ReturnCode::DnsBadHostName
    );
    assert!(
        dns.queries().is_empty(),
        "a bad name never reaches the wire"
    );
}

#[test]
fn private_addresses_are_blocked_unless_allowed() {
    let (server, url) = serve(Script::Respond(Response::ok("x", "text/plain")));
    let mut cfg = config(None);
    cfg.addr_policy = spinneret::fetcher::addr_policy::AddrPolicy::default();
    assert_eq!(
        run(cfg.clone(), &url).outcome,
        ReturnCode::PrivateAddressBlocked
    );
    let dns = dns_server(
        &[("inside.test", vec![Record::A(Ipv4Addr::LOCALHOST)])],
        &[],
    );
    cfg.resolver.servers = vec![dns.addr()];
    assert_eq!(
        run(
            cfg.clone(),
            &format!("http://inside.test:{}/", server.port())
        )
        .outcome,
        ReturnCode::PrivateAddressBlocked
    );
    assert_eq!(
        server.request_count(),
        0,
        "no connection is made to a blocked address"
    );
    cfg.addr_policy = spinneret::fetcher::addr_policy::AddrPolicy::new(
        false,
        vec!["127.0.0.0/8".parse().unwrap()],
    );
    assert_eq!(run(cfg, &url).outcome, ReturnCode::Success);
}

#[test]
fn connect_outcomes() {
    // A port nobody listens on: refused.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    assert_eq!(
        run(config(None), &format!("http://127.0.0.1:{port}/")).outcome,
        ReturnCode::HttpConnect
    );
    // A listener whose accept queue is full: the SYN is dropped, connect never completes.
    let hole = spinneret_tools::blackhole::start().expect("black hole");
    let mut cfg = config(None);
    cfg.connect_timeout = Duration::from_millis(500);
    let started = std::time::Instant::now();
    let d = run(cfg, &format!("http://{}/", hole.addr()));
    assert_eq!(d.outcome, ReturnCode::HttpConnectTimeout);
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn timeouts_bound_silent_and_trickling_servers() {
    let mut cfg = config(None);
    cfg.http_timeout = Duration::from_millis(800);
    let (_s, url) = serve(Script::Silence);
    assert_eq!(run(cfg.clone(), &url).outcome, ReturnCode::HttpTimeout);
    // One byte every 100 ms of a response that would take minutes: the overall deadline ends it.
    let (_s, url) = serve(Script::Trickle {
        bytes: b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n"
            .iter()
            .copied()
            .chain(std::iter::repeat_n(b'x', 2000))
            .collect(),
        chunk: 1,
        interval: Duration::from_millis(100),
    });
    let started = std::time::Instant::now();
    assert_eq!(run(cfg, &url).outcome, ReturnCode::HttpTimeout);
    assert!(started.elapsed() < Duration::from_secs(4));
}

#[test]
fn receive_outcomes() {
    assert_eq!(
        outcome_of(Script::CloseImmediately),
        ReturnCode::MimePageEmpty
    );
    assert_eq!(
        outcome_of(Script::ResetAfter {
            bytes: b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nabc".to_vec()
        }),
        ReturnCode::HttpReceive
    );
    assert_eq!(
        outcome_of(raw(b"SSH-2.0-OpenSSH\r\n\r\n")),
        ReturnCode::MimeNoStatusLine
    );
    assert_eq!(
        outcome_of(raw(b"HTTP/2.0 200 OK\r\nContent-Length: 0\r\n\r\n")),
        ReturnCode::MimeUnsupportedHttpVersion
    );
    assert_eq!(
        outcome_of(raw(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n")),
        ReturnCode::MimeMissing
    );
    assert_eq!(
        outcome_of(raw(
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello"
        )),
        ReturnCode::MimeBadHeader
    );
    let mut big = b"HTTP/1.1 200 OK\r\n".to_vec();
    big.extend(
        std::iter::repeat_n(
            b"X-Filler: 0123456789012345678901234567890123456789\r\n".to_vec(),
            2000,
        )
        .flatten(),
    );
    big.extend_from_slice(b"\r\n");
    assert_eq!(outcome_of(raw(&big)), ReturnCode::HttpHeadTooLarge);
    let mut many = b"HTTP/1.1 200 OK\r\n".to_vec();
    for i in 0..500 {
        many.extend_from_slice(format!("X-{i}: a\r\n").as_bytes());
    }
    many.extend_from_slice(b"Content-Length: 0\r\n\r\n");
    assert_eq!(outcome_of(raw(&many)), ReturnCode::HttpTooManyHeaders);
    assert_eq!(
        outcome_of(raw(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n"
        )),
        ReturnCode::MimeBadChunkEncoding
    );
    assert_eq!(
        outcome_of(raw(
            b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b"
        )),
        ReturnCode::HttpPageTruncated
    );
}

#[test]
fn size_and_encoding_outcomes() {
    let mut cfg = config(None);
    cfg.limits.max_body_bytes = 1 << 20;
    cfg.limits.max_decoded_bytes = 1 << 20;
    let (_s, url) = serve(Script::Stream {
        head: b"HTTP/1.1 200 OK\r\nContent-Length: 10737418240\r\n\r\n".to_vec(),
        body_len: 10 << 30,
    });
    assert_eq!(run(cfg.clone(), &url).outcome, ReturnCode::HttpBodyTooLarge);

    // A gzip bomb: 50 MB of zeros in ~50 KB.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(&vec![0u8; 50 << 20]).unwrap();
    let bomb = gz.finish().unwrap();
    let (_s, url) = serve(Script::Respond(
        Response::ok(bomb, "text/html").header("Content-Encoding", "gzip"),
    ));
    assert_eq!(
        run(cfg.clone(), &url).outcome,
        ReturnCode::HttpDecodedTooLarge
    );

    let (_s, url) = serve(Script::Respond(
        Response::ok("definitely not gzip", "text/html").header("Content-Encoding", "gzip"),
    ));
    assert_eq!(
        run(cfg.clone(), &url).outcome,
        ReturnCode::HttpBadContentEncoding
    );

    let (_s, url) = serve(Script::Respond(Response::ok("x", "text/html").header(
        "Content-Encoding",
        "gzip, gzip, gzip, gzip, gzip, gzip, gzip",
    )));
    assert_eq!(
        run(cfg.clone(), &url).outcome,
        ReturnCode::HttpTooManyEncodings
    );

    // And a well-formed gzip page is decoded for the caller while the raw bytes are kept.
    let (_s, url) = serve(Script::Respond(
        Response::ok("<a href=x>x</a>", "text/html").gzip(true),
    ));
    let d = run(cfg, &url);
    assert_eq!(d.outcome, ReturnCode::Success);
    assert_eq!(d.content, b"<a href=x>x</a>");
    assert!(d
        .response
        .windows(4)
        .any(|w| w.eq_ignore_ascii_case(b"gzip")));
}

fn tls_server(identity: tls::TlsIdentity, script: Script) -> HttpServer {
    let mut routes = Routes::new();
    routes.add("localhost", "/", script);
    HttpServer::start(HttpServerConfig {
        routes,
        tls: Some(identity),
        lifetime: LIFETIME,
        ..HttpServerConfig::default()
    })
    .expect("tls server")
}

fn tls_config(ca: &TestCa) -> spinneret::fetcher::CrawlerConfig {
    let dir = common::temp_dir("ca");
    let pem = dir.join("ca.pem");
    ca.write_ca_pem(&pem).unwrap();
    let mut cfg = config(None);
    cfg.resolver.hosts = [("localhost".to_string(), vec!["127.0.0.1".parse().unwrap()])]
        .into_iter()
        .collect();
    let pem = std::fs::read(&pem).unwrap();
    cfg.tls = spinneret::fetcher::tls::client_config(Some(&pem)).unwrap();
    cfg
}

#[test]
fn tls_outcomes() {
    let ca = TestCa::new();
    let ok = Script::Respond(Response::ok("secret", "text/plain"));

    let s = tls_server(ca.issue(&["localhost"]), ok.clone());
    let d = run(tls_config(&ca), &format!("https://localhost:{}/", s.port()));
    assert_eq!(
        (d.outcome, d.content.as_slice()),
        (ReturnCode::Success, &b"secret"[..])
    );

    for identity in [
        ca.issue_expired(&["localhost"]),
        ca.issue(&["other.test"]),
        tls::self_signed(&["localhost"]),
    ] {
        let s = tls_server(identity, ok.clone());
        let d = run(tls_config(&ca), &format!("https://localhost:{}/", s.port()));
        assert_eq!(d.outcome, ReturnCode::TlsCertificate);
    }

    // Plain HTTP on the port we speak TLS to.
    let (plain, _) = serve(ok.clone());
    let d = run(
        tls_config(&ca),
        &format!("https://localhost:{}/", plain.port()),
    );
    assert_eq!(d.outcome, ReturnCode::TlsHandshake);

    // Close without close_notify: fine for a length-delimited body, truncation otherwise.
    let s = tls_server(
        ca.issue(&["localhost"]),
        Script::Respond(
            Response::ok("all here", "text/plain")
                .keep_alive(false)
                .close_notify(false),
        ),
    );
    let d = run(tls_config(&ca), &format!("https://localhost:{}/", s.port()));
    assert_eq!(d.outcome, ReturnCode::Success);
    let s = tls_server(
        ca.issue(&["localhost"]),
        Script::Respond(
            Response::ok("cut?", "text/plain")
                .framing(spinneret_tools::http_server::Framing::Close)
                .close_notify(false),
        ),
    );
    let d = run(tls_config(&ca), &format!("https://localhost:{}/", s.port()));
    assert_eq!(d.outcome, ReturnCode::TlsTruncated);
}

#[test]
fn keep_alive_reuses_one_connection_per_server() {
    let mut routes = Routes::new();
    for i in 0..20 {
        routes.add(
            "127.0.0.1",
            &format!("/{i}"),
            Script::Respond(Response::ok(format!("page {i}"), "text/plain")),
        );
    }
    let server = http_server(routes);
    let urls: Vec<String> = (0..20)
        .map(|i| format!("http://127.0.0.1:{}/{i}", server.port()))
        .collect();
    let done = common::run_with(config(None), &urls, Duration::from_secs(30));
    assert!(done.iter().all(|d| d.outcome == ReturnCode::Success));
    let reqs = server.requests();
    assert_eq!(reqs.len(), 20);
    let conns: std::collections::HashSet<u64> = reqs.iter().map(|r| r.conn_id).collect();
    assert_eq!(
        conns.len(),
        1,
        "20 URLs to one server ride one keep-alive connection"
    );
}

#[test]
fn one_socket_read_per_arrival() {
    // Two requests on one kept-alive connection, each answered in four pieces 30 ms apart:
    // each arrival is read once (a read that gets less than it asked has drained the socket,
    // and the next arrival raises a new edge), and a request on a kept-alive connection is
    // not followed by a read that could only hear that nothing has come yet. Only the fresh
    // connection's first request is (nothing is known of a new socket). The epoll interest
    // changes only when it must: once, when the new connection has sent its first request.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let server = std::thread::spawn(move || {
        // Waits at most 10 s for the crawler, so the server ends by itself whatever happens.
        let mut stream = None;
        for _ in 0..1000 {
            match listener.accept() {
                Ok((s, _)) => {
                    stream = Some(s);
                    break;
                }
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
        let Some(mut stream) = stream else { return };
        stream.set_nonblocking(false).unwrap();
        stream.set_nodelay(true).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut response = b"HTTP/1.1 200 OK\r\nContent-Length: 41\r\n\r\n".to_vec();
        response.extend_from_slice(&[b'x'; 41]);
        let mut got = Vec::new();
        let mut buf = [0u8; 1024];
        for _ in 0..2 {
            // Bounded by the read timeout: a client that never asks ends the server.
            while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                match std::io::Read::read(&mut stream, &mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                }
            }
            got.clear();
            for piece in response.chunks(20) {
                std::thread::sleep(Duration::from_millis(30));
                stream.write_all(piece).unwrap();
            }
        }
    });
    let urls: Vec<String> = ["a", "b"]
        .iter()
        .map(|p| format!("http://127.0.0.1:{port}/{p}"))
        .collect();
    let (done, stats) = common::run_with_stats(config(None), &urls, Duration::from_secs(30));
    server.join().unwrap();
    assert!(
        done.iter().all(|d| d.outcome == ReturnCode::Success),
        "{:?}",
        done.iter().map(|d| d.outcome).collect::<Vec<_>>()
    );
    assert_eq!(stats.conns_opened, 1);
    assert!(
        stats.socket.reads <= 9,
        "two responses of four pieces each took {} reads",
        stats.socket.reads
    );
    assert_eq!(stats.socket.writes, 2, "one write per request");
    assert_eq!(
        stats.socket.reregistrations, 1,
        "the new connection drops its writable interest once; the kept-alive one changes nothing"
    );
}

#[test]
fn a_close_that_came_with_the_last_bytes_is_not_missed() {
    // The server promises keep-alive but closes right after the response's last piece, so
    // the close is often announced by the very event that brought those bytes. The read that
    // took them got less than it asked, yet the socket still has its end to give: the next
    // request on the connection must read it (and retry fresh), not wait for an edge that
    // never comes.
    let mut bytes = b"HTTP/1.1 200 OK\r\nContent-Length: 41\r\n\r\n".to_vec();
    bytes.extend_from_slice(&[b'x'; 41]);
    let mut routes = Routes::new();
    for i in 0..6 {
        routes.add(
            "127.0.0.1",
            &format!("/{i}"),
            Script::Trickle {
                bytes: bytes.clone(),
                chunk: 40,
                interval: Duration::from_millis(5),
            },
        );
    }
    let server = http_server(routes);
    let urls: Vec<String> = (0..6)
        .map(|i| format!("http://127.0.0.1:{}/{i}", server.port()))
        .collect();
    let mut cfg = config(None);
    cfg.http_timeout = Duration::from_secs(3);
    let done = common::run_with(cfg, &urls, Duration::from_secs(30));
    assert!(
        done.iter().all(|d| d.outcome == ReturnCode::Success),
        "{:?}",
        done.iter().map(|d| d.outcome).collect::<Vec<_>>()
    );
}

#[test]
fn politeness_one_connection_per_server_ip() {
    // Four server IPs on one port, 10 URLs each; with --conns-per-server 1 the server must
    // never see two requests to one IP in flight at once.
    let ips: Vec<Ipv4Addr> = (1..=4).map(|i| Ipv4Addr::new(127, 0, 0, i)).collect();
    let mut routes = Routes::new();
    for i in 0..10 {
        routes.add("x", "/", Script::Respond(Response::ok("", "text/plain")));
        for ip in &ips {
            routes.add(
                &ip.to_string(),
                &format!("/{i}"),
                Script::Delay {
                    delay: Duration::from_millis(20),
                    then: Box::new(Script::Respond(
                        Response::ok("slow", "text/plain").keep_alive(i % 3 != 0),
                    )),
                },
            );
        }
    }
    let server = HttpServer::start(HttpServerConfig {
        addrs: ips.clone(),
        routes,
        lifetime: LIFETIME,
        ..HttpServerConfig::default()
    })
    .expect("server");
    let urls: Vec<String> = ips
        .iter()
        .flat_map(|ip| (0..10).map(move |i| (ip, i)))
        .map(|(ip, i)| format!("http://{ip}:{}/{i}", server.port()))
        .collect();
    let done = common::run_with(config(None), &urls, Duration::from_secs(30));
    assert!(
        done.iter().all(|d| d.outcome == ReturnCode::Success),
        "{done:?}"
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 40);
    for ip in &ips {
        let to_ip = reqs
            .iter()
            .filter(|r| r.local_addr.ip() == std::net::IpAddr::V4(*ip));
        common::assert_spaced(to_ip, Duration::ZERO, &ip.to_string());
    }
    // And every server was reached at its own address.
    let peers: std::collections::HashSet<SocketAddr> = done.iter().filter_map(|d| d.peer).collect();
    assert_eq!(peers.len(), 4);
}

#[test]
fn send_failure_is_http_send() {
    // A server that accepts but never reads, then resets: a request larger than the socket
    // buffers can hold is still being written when the reset arrives.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        std::thread::sleep(Duration::from_millis(300));
        // SO_LINGER 0: close with RST.
        let linger = libc::linger {
            l_onoff: 1,
            l_linger: 0,
        };
        // SAFETY: a valid socket fd owned by `stream`; the struct outlives the call.
        unsafe {
            use std::os::fd::AsRawFd;
            libc::setsockopt(
                stream.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_LINGER,
                &linger as *const libc::linger as *const libc::c_void,
                std::mem::size_of::<libc::linger>() as libc::socklen_t,
            );
        }
        drop(stream);
    });
    let path = "a".repeat(24 << 20);
    let d = run(config(None), &format!("http://127.0.0.1:{port}/{path}"));
    server.join().unwrap();
    assert_eq!(d.outcome, ReturnCode::HttpSend);
}

#[test]
fn stale_keep_alive_connection_is_retried_on_a_fresh_one() {
    // The server promises keep-alive (no `Connection: close`) but closes after each response;
    // the next request may go out on the dead connection and must be retried, not failed.
    let (server, _) = serve(Script::Raw {
        bytes: b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".to_vec(),
        then: After::Close,
    });
    let urls: Vec<String> = (0..10)
        .map(|_| format!("http://127.0.0.1:{}/", server.port()))
        .collect();
    let done = common::run_with(config(None), &urls, Duration::from_secs(30));
    assert!(
        done.iter().all(|d| d.outcome == ReturnCode::Success),
        "{:?}",
        done.iter().map(|d| d.outcome).collect::<Vec<_>>()
    );
}

#[test]
fn pushed_requests_go_first_and_each_ends_once() {
    // fetch_push queues ahead of the source: both kinds end in exactly one fetch_done.
    let (server, url) = serve(Script::Respond(Response::ok("x", "text/plain")));
    let mut crawler = spinneret::fetcher::Crawler::new(config(None)).unwrap();
    let mut src = common::Collect::default();
    src.queue.push_back(spinneret::fetcher::FetchRequest::new(
        url::Url::parse(&url).unwrap(),
        2,
    ));
    crawler.fetch_push(spinneret::fetcher::FetchRequest::new(
        url::Url::parse(&format!("{url}?pushed")).unwrap(),
        1,
    ));
    common::drive(
        &mut crawler,
        &mut src,
        Duration::from_secs(10),
        "two fetches",
    );
    assert_eq!(src.done.len(), 2);
    assert!(src.done.iter().all(|d| d.outcome == ReturnCode::Success));
    let targets: Vec<String> = server.requests().iter().map(|r| r.target.clone()).collect();
    assert_eq!(targets, vec!["/?pushed".to_string(), "/".to_string()]);
}

/// A source that fetches one URL and asks for one host name to be resolved ahead of time.
struct Prefetching {
    inner: common::Collect,
    prefetch: Option<String>,
}

impl spinneret::fetcher::FetchSource for Prefetching {
    fn next_fetch(&mut self, now: std::time::Instant) -> spinneret::fetcher::Next {
        self.inner.next_fetch(now)
    }
    fn fetch_done(&mut self, done: &spinneret::fetcher::FetchDone<'_>, now: std::time::Instant) {
        self.inner.fetch_done(done, now)
    }
    fn poll_prefetch(&mut self) -> Option<String> {
        self.prefetch.take()
    }
}

#[test]
fn prefetched_names_are_resolved_before_any_url_needs_them() {
    let (_server, url) = serve(Script::Respond(Response::ok("x", "text/plain")));
    let dns = dns_server(&[("later.test", vec![Record::A(Ipv4Addr::LOCALHOST)])], &[]);
    let mut crawler = spinneret::fetcher::Crawler::new(config(Some(dns.addr()))).unwrap();
    let mut src = Prefetching {
        inner: common::Collect::default(),
        prefetch: Some("later.test".into()),
    };
    src.inner
        .queue
        .push_back(spinneret::fetcher::FetchRequest::new(
            url::Url::parse(&url).unwrap(),
            0,
        ));
    common::drive(&mut crawler, &mut src, Duration::from_secs(10), "prefetch");
    // No URL of later.test was ever fetched, yet its name went out to the DNS server.
    assert_eq!(src.inner.done.len(), 1);
    // The server logs queries on its own thread: give it a bounded moment.
    let asked = |dns: &DnsServer| {
        dns.queries()
            .iter()
            .any(|(n, _, _)| n.eq_ignore_ascii_case("later.test"))
    };
    let waited = std::time::Instant::now();
    while !asked(&dns) && waited.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(asked(&dns), "{:?}", dns.queries());
}

/// A source that asks for one URL at a time and, like the WARC writer, keeps each response's
/// shared buffer after the fetch, letting go of it before it asks for the next URL.
struct HoldsBuffers {
    queue: std::collections::VecDeque<spinneret::fetcher::FetchRequest>,
    busy: bool,
    held: Option<std::sync::Arc<spinneret::fetcher::SharedBytes>>,
    given_back: Vec<usize>,
    received_into: Vec<usize>,
}

impl spinneret::fetcher::FetchSource for HoldsBuffers {
    fn next_fetch(&mut self, _now: std::time::Instant) -> spinneret::fetcher::Next {
        use spinneret::fetcher::Next;
        // The crawler let go of its share when it recycled the completion: this is the last.
        if let Some(held) = self.held.take() {
            self.given_back.push(held.as_ptr() as usize);
        }
        if self.busy {
            return Next::Idle;
        }
        match self.queue.pop_front() {
            Some(r) => {
                self.busy = true;
                Next::Fetch(r)
            }
            None => Next::Done,
        }
    }

    fn fetch_done(&mut self, d: &spinneret::fetcher::FetchDone<'_>, _now: std::time::Instant) {
        assert_eq!(d.outcome, ReturnCode::Success, "{}", d.request.url);
        self.busy = false;
        self.received_into.push(d.response.as_ptr() as usize);
        let shared = d.shared_response.expect("a whole response is shared");
        self.held = Some(shared.clone());
    }
}

#[test]
fn responses_are_received_into_buffers_given_back() {
    // The WARC writer stores a response after its completion is recycled, so the buffer it
    // was received into comes back later, when the writer lets go of it: every response after
    // the first lands in a buffer given back, and the crawler allocates only the first one.
    let mut routes = Routes::new();
    for i in 0..6 {
        routes.add(
            "127.0.0.1",
            &format!("/{i}"),
            Script::Respond(Response::ok("x".repeat(15_000), "text/html")),
        );
    }
    let server = http_server(routes);
    let mut src = HoldsBuffers {
        queue: (0..6)
            .map(|i| {
                spinneret::fetcher::FetchRequest::new(
                    url::Url::parse(&format!("http://127.0.0.1:{}/{i}", server.port())).unwrap(),
                    i,
                )
            })
            .collect(),
        busy: false,
        held: None,
        given_back: Vec::new(),
        received_into: Vec::new(),
    };
    let mut crawler = spinneret::fetcher::Crawler::new(config(None)).unwrap();
    common::drive(
        &mut crawler,
        &mut src,
        Duration::from_secs(30),
        "six fetches",
    );
    assert_eq!(src.received_into.len(), 6);
    assert_eq!(
        crawler.stats().receive_buffers_allocated,
        1,
        "one buffer for six responses in turn"
    );
    for (i, at) in src.received_into.iter().enumerate().skip(1) {
        assert!(
            src.given_back.contains(at),
            "response {i} was received into a buffer given back"
        );
    }
}

/// A SOCKS5 proxy for one connection that reads what comes and answers each read with the
/// next of `replies` (then holds the connection until the client closes it, or 10 s pass).
fn scripted_proxy(replies: Vec<Vec<u8>>) -> SocketAddr {
    use std::io::Read;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        listener.set_nonblocking(true).expect("nonblocking");
        let start = std::time::Instant::now();
        let mut conn = loop {
            match listener.accept() {
                Ok((c, _)) => break c,
                Err(_) if start.elapsed() < Duration::from_secs(10) => {
                    std::thread::sleep(Duration::from_millis(5))
                }
                Err(_) => return,
            }
        };
        conn.set_nonblocking(false).expect("blocking");
        conn.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        let mut buf = [0u8; 512];
        for reply in replies {
            if !matches!(conn.read(&mut buf), Ok(n) if n > 0) {
                return;
            }
            let _ = conn.write_all(&reply);
        }
        // Held, silent, until the client closes (each read bounded by the timeout).
        while matches!(conn.read(&mut buf), Ok(n) if n > 0) {}
    });
    addr
}

/// The in-process crawler through a socks5h proxy at `proxy`.
fn via_socks(proxy: SocketAddr, url: &str) -> ReturnCode {
    let mut c = config(None);
    let url_text = format!("socks5h://{proxy}");
    let settings = spinneret::proxy::ProxySettings::new(Some(&url_text), |_| None).unwrap();
    c.proxies = Some(std::sync::Arc::new(settings));
    run(c, url).outcome
}

#[test]
fn proxy_outcomes() {
    let site = "http://site.invalid/";
    // Nothing listening at the proxy's address.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap();
    assert_eq!(via_socks(closed, site), ReturnCode::ProxyConnect);
    // A proxy that is not SOCKS5.
    let http = scripted_proxy(vec![b"HTTP/1.1 400 Bad Request\r\n\r\n".to_vec()]);
    assert_eq!(via_socks(http, site), ReturnCode::ProxyProtocol);
    // It wants a method we do not offer.
    let picky = scripted_proxy(vec![vec![5, 0xff]]);
    assert_eq!(via_socks(picky, site), ReturnCode::ProxyAuth);
    // It cannot reach the site ("host unreachable").
    let refusing = scripted_proxy(vec![vec![5, 0], vec![5, 4, 0, 1, 0, 0, 0, 0, 0, 0]]);
    assert_eq!(via_socks(refusing, site), ReturnCode::ProxyRefused);
    // It accepts the greeting and never answers the connect: the step's deadline (2 s here).
    let silent = scripted_proxy(vec![vec![5, 0]]);
    let start = std::time::Instant::now();
    assert_eq!(via_socks(silent, site), ReturnCode::ProxyTimeout);
    assert!(
        start.elapsed() < Duration::from_secs(4),
        "{:?}",
        start.elapsed()
    );
}
