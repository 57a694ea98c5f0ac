//! The scripted HTTP server over real loopback sockets.

use crate::common;

use std::io::{ErrorKind, Read, Write};
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use common::*;
use spinneret_tools::http_server::*;

fn server(routes: Routes) -> HttpServer {
    HttpServer::start(HttpServerConfig {
        routes,
        lifetime: Duration::from_secs(30),
        ..HttpServerConfig::default()
    })
    .unwrap()
}

fn one(host: &str, path: &str, script: Script) -> HttpServer {
    let mut r = Routes::new();
    r.add(host, path, script);
    server(r)
}

#[test]
fn respond_ok_and_request_log() {
    let srv = one(
        "h1.test",
        "/a?b=c",
        Script::Respond(Response::ok("hello", "text/plain")),
    );
    let addr = srv.addrs()[0];
    let host = format!("H1.Test:{}", srv.port());
    let resp = get(addr, &host, "/a?b=c");
    assert_eq!(resp.status, 200);
    assert_eq!(resp.body, b"hello");
    assert_eq!(resp.header("content-type"), Some("text/plain"));
    let log = srv.requests();
    assert_eq!(log.len(), 1);
    assert_eq!(srv.request_count(), 1);
    let r = &log[0];
    assert_eq!(r.method, "GET");
    assert_eq!(r.host, "h1.test");
    assert_eq!(r.target, "/a?b=c");
    assert_eq!(r.local_addr, addr);
    assert_eq!(r.index_on_conn, 0);
    assert!(r
        .headers
        .iter()
        .any(|(n, v)| n == "User-Agent" && v == "tools-test"));
    assert!(r.answered.unwrap() >= r.received);
    // Unknown target → the default fallback, a 404 page.
    assert_eq!(get(addr, &host, "/missing").status, 404);
}

#[test]
fn keep_alive_serves_three_requests_on_one_connection() {
    let mut routes = Routes::new();
    for i in 0..3 {
        routes.add(
            "h.test",
            &format!("/{i}"),
            Script::Respond(Response::ok(format!("page {i}"), "text/plain")),
        );
    }
    let srv = server(routes);
    let mut s = connect(srv.addrs()[0]);
    let mut buf = Vec::new();
    for i in 0..3 {
        s.write_all(&request("h.test", &format!("/{i}"))).unwrap();
        let resp = read_response(&mut s, &mut buf).unwrap();
        assert_eq!(resp.body, format!("page {i}").as_bytes());
    }
    let log = srv.requests();
    assert_eq!(log.len(), 3);
    assert!(log.iter().all(|r| r.conn_id == log[0].conn_id));
    assert_eq!(
        log.iter().map(|r| r.index_on_conn).collect::<Vec<_>>(),
        vec![0, 1, 2]
    );
}

#[test]
fn virtual_hosts_on_two_addresses_share_one_port() {
    let mut routes = Routes::new();
    routes.add(
        "a.test",
        "/",
        Script::Respond(Response::ok("A", "text/plain")),
    );
    routes.add(
        "B.test",
        "/",
        Script::Respond(Response::ok("B", "text/plain")),
    );
    let srv = HttpServer::start(HttpServerConfig {
        addrs: vec![Ipv4Addr::new(127, 0, 0, 1), Ipv4Addr::new(127, 0, 0, 2)],
        routes,
        lifetime: Duration::from_secs(30),
        ..HttpServerConfig::default()
    })
    .unwrap();
    let addrs = srv.addrs();
    assert_eq!(addrs.len(), 2);
    assert!(addrs.iter().all(|a| a.port() == srv.port()));
    assert_eq!(get(addrs[0], "a.test", "/").body, b"A");
    assert_eq!(get(addrs[1], "b.test", "/").body, b"B");
    assert_eq!(get(addrs[1], "c.test", "/").status, 404);
    let log = srv.requests();
    assert_eq!(log[1].local_addr, addrs[1]);
    assert_eq!(log[1].host, "b.test");
    assert_ne!(log[0].conn_id, log[1].conn_id);
}

#[test]
fn non_loopback_bind_is_refused() {
    let r = HttpServer::start(HttpServerConfig {
        addrs: vec![Ipv4Addr::new(10, 0, 0, 1)],
        ..HttpServerConfig::default()
    });
    assert_eq!(r.err().unwrap().kind(), ErrorKind::InvalidInput);
}

#[test]
fn chunked_gzip_response_decodes() {
    let body = "spinneret ".repeat(500);
    let srv = one(
        "h.test",
        "/",
        Script::Respond(
            Response::ok(body.clone(), "text/plain")
                .gzip(true)
                .chunked(100),
        ),
    );
    let resp = get(srv.addrs()[0], "h.test", "/");
    assert_eq!(resp.header("content-encoding"), Some("gzip"));
    let mut plain = String::new();
    flate2::read::GzDecoder::new(&resp.body[..])
        .read_to_string(&mut plain)
        .unwrap();
    assert_eq!(plain, body);
}

#[test]
fn close_framing_ends_body_at_eof() {
    let srv = one(
        "h.test",
        "/",
        Script::Respond(Response::ok("until close", "text/plain").framing(Framing::Close)),
    );
    let resp = get(srv.addrs()[0], "h.test", "/");
    assert_eq!(resp.header("connection"), Some("close"));
    assert_eq!(resp.body, b"until close");
}

#[test]
fn raw_keep_open_then_raw_close() {
    let mut routes = Routes::new();
    let first = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi".to_vec();
    routes.add(
        "h.test",
        "/1",
        Script::Raw {
            bytes: first.clone(),
            then: After::KeepOpen,
        },
    );
    routes.add(
        "h.test",
        "/2",
        Script::Raw {
            bytes: b"garbage".to_vec(),
            then: After::Close,
        },
    );
    let srv = server(routes);
    let mut s = connect(srv.addrs()[0]);
    s.write_all(&request("h.test", "/1")).unwrap();
    let mut got = vec![0u8; first.len()];
    s.read_exact(&mut got).unwrap();
    assert_eq!(got, first);
    s.write_all(&request("h.test", "/2")).unwrap();
    let mut rest = Vec::new();
    read_to_end(&mut s, &mut rest).unwrap();
    assert_eq!(rest, b"garbage");
}

#[test]
fn raw_then_reset_and_reset_after() {
    for script in [
        Script::Raw {
            bytes: b"partial".to_vec(),
            then: After::Reset,
        },
        Script::ResetAfter {
            bytes: b"partial".to_vec(),
        },
    ] {
        let srv = one("h.test", "/", script);
        let mut s = connect(srv.addrs()[0]);
        s.write_all(&request("h.test", "/")).unwrap();
        let mut got = vec![0u8; 7];
        s.read_exact(&mut got).unwrap();
        assert_eq!(got, b"partial");
        let err = s.read(&mut [0u8; 16]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::ConnectionReset);
    }
}

#[test]
fn trickle_spreads_bytes_over_time() {
    let srv = one(
        "h.test",
        "/",
        Script::Trickle {
            bytes: b"0123456789".to_vec(),
            chunk: 2,
            interval: Duration::from_millis(60),
        },
    );
    let mut s = connect(srv.addrs()[0]);
    let start = Instant::now();
    s.write_all(&request("h.test", "/")).unwrap();
    let mut reads = 0;
    let mut got = Vec::new();
    let mut tmp = [0u8; 64];
    loop {
        let n = s.read(&mut tmp).unwrap();
        if n == 0 {
            break;
        }
        reads += 1;
        got.extend_from_slice(&tmp[..n]);
    }
    assert_eq!(got, b"0123456789");
    assert!(start.elapsed() >= Duration::from_millis(240));
    assert!(
        reads >= 3,
        "bytes should arrive in pieces, got {reads} reads"
    );
}

#[test]
fn silence_answers_nothing_and_is_logged_unanswered() {
    let srv = one("h.test", "/", Script::Silence);
    let mut s = connect(srv.addrs()[0]);
    s.set_read_timeout(Some(Duration::from_millis(400)))
        .unwrap();
    s.write_all(&request("h.test", "/")).unwrap();
    let err = s.read(&mut [0u8; 16]).unwrap_err();
    assert!(matches!(
        err.kind(),
        ErrorKind::WouldBlock | ErrorKind::TimedOut
    ));
    let log = srv.requests();
    assert_eq!(log.len(), 1);
    assert!(log[0].answered.is_none());
    // stop() ends the silent connection promptly.
    let t = Instant::now();
    srv.stop();
    assert!(t.elapsed() < Duration::from_secs(1));
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    assert_eq!(s.read(&mut [0u8; 16]).unwrap_or(0), 0);
}

#[test]
fn close_immediately_sends_nothing() {
    let srv = one("h.test", "/", Script::CloseImmediately);
    let mut s = connect(srv.addrs()[0]);
    s.write_all(&request("h.test", "/")).unwrap();
    let mut got = Vec::new();
    // EOF or reset, but never a byte.
    let _ = read_to_end(&mut s, &mut got);
    assert!(got.is_empty());
}

#[test]
fn stream_generates_a_large_body() {
    let len: u64 = 20 * 1024 * 1024;
    let head = b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n\r\n".to_vec();
    let srv = one(
        "h.test",
        "/big",
        Script::Stream {
            head: head.clone(),
            body_len: len,
        },
    );
    let mut s = connect(srv.addrs()[0]);
    s.write_all(&request("h.test", "/big")).unwrap();
    let mut total = 0u64;
    let mut first = Vec::new();
    let mut tmp = vec![0u8; 1 << 16];
    loop {
        let n = s.read(&mut tmp).unwrap();
        if n == 0 {
            break;
        }
        if first.len() < head.len() {
            first.extend_from_slice(&tmp[..n.min(head.len() - first.len())]);
        }
        total += n as u64;
    }
    assert_eq!(first, head);
    assert_eq!(total, head.len() as u64 + len);
    assert!(srv.requests()[0].answered.is_some());
}

#[test]
fn delay_holds_the_answer() {
    let srv = one(
        "h.test",
        "/",
        Script::Delay {
            delay: Duration::from_millis(300),
            then: Box::new(Script::Respond(Response::ok("late", "text/plain"))),
        },
    );
    let t = Instant::now();
    let resp = get(srv.addrs()[0], "h.test", "/");
    assert_eq!(resp.body, b"late");
    assert!(t.elapsed() >= Duration::from_millis(300));
}

#[test]
fn set_route_changes_answers_while_running() {
    let srv = one(
        "h.test",
        "/",
        Script::Respond(Response::ok("one", "text/plain")),
    );
    assert_eq!(get(srv.addrs()[0], "h.test", "/").body, b"one");
    srv.set_route("H.TEST", "/", Script::Respond(Response::status(503)));
    assert_eq!(get(srv.addrs()[0], "h.test", "/").status, 503);
}

#[test]
fn head_request_gets_no_body() {
    let srv = one(
        "h.test",
        "/",
        Script::Respond(Response::ok("body", "text/plain")),
    );
    let mut s = connect(srv.addrs()[0]);
    s.write_all(b"HEAD / HTTP/1.1\r\nHost: h.test\r\nConnection: close\r\n\r\n")
        .unwrap();
    s.write_all(&request("h.test", "/")).unwrap();
    let mut got = Vec::new();
    s.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let _ = read_to_end(&mut s, &mut got);
    let text = String::from_utf8_lossy(&got);
    // HEAD answer: head only; the second (GET) answer carries the body.
    assert_eq!(text.matches("HTTP/1.1 200 OK").count(), 2);
    assert!(text.ends_with("\r\n\r\nbody"));
}

#[test]
fn lifetime_stops_the_server() {
    let mut routes = Routes::new();
    routes.add("h.test", "/", Script::Silence);
    let srv = HttpServer::start(HttpServerConfig {
        routes,
        lifetime: Duration::from_millis(300),
        ..HttpServerConfig::default()
    })
    .unwrap();
    let mut s = connect(srv.addrs()[0]);
    s.write_all(&request("h.test", "/")).unwrap();
    let t = Instant::now();
    s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    // The silent connection is closed when the lifetime ends.
    assert_eq!(s.read(&mut [0u8; 16]).unwrap_or(0), 0);
    assert!(t.elapsed() < Duration::from_secs(2));
    assert!(srv.is_stopped());
    std::thread::sleep(Duration::from_millis(100));
    let refused = std::net::TcpStream::connect_timeout(&srv.addrs()[0], Duration::from_secs(1));
    assert!(refused.is_err(), "listener should be closed after lifetime");
}
