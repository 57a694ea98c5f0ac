//! The synthetic web's validators over real sockets: a conditional GET that matches gets a
//! bodiless 304 and the connection goes on; one that does not gets the page; tags are stable
//! across restarts with the same flags.

use crate::common;

use std::io::Write;
use std::net::{SocketAddr, SocketAddrV4};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use spinneret_tools::http_date;
use spinneret_tools::testweb::*;

const LIFETIME: Duration = Duration::from_secs(60);

fn small(seed: u64) -> WebConfig {
    WebConfig {
        hosts: 3,
        pages: 4,
        page_kb: 2,
        seed,
        ..WebConfig::default()
    }
}

fn serve(cfg: &WebConfig) -> WebServer {
    WebServer::start(Arc::new(TestWeb::generate(cfg)), 0, LIFETIME).unwrap()
}

fn addr(h: usize, port: u16) -> SocketAddr {
    SocketAddr::V4(SocketAddrV4::new(host_ip(h), port))
}

/// A GET of `target` on host 1 with extra header lines (each ending in CRLF).
fn conditional(port: u16, target: &str, extra: &str) -> Vec<u8> {
    format!("GET {target} HTTP/1.1\r\nHost: h0001.test:{port}\r\n{extra}\r\n").into_bytes()
}

/// Sends `req` on `s` and reads the answer.
fn exchange(s: &mut std::net::TcpStream, buf: &mut Vec<u8>, req: &[u8]) -> Resp {
    s.write_all(req).unwrap();
    read_response(s, buf).unwrap()
}

#[test]
fn pages_carry_validators_and_a_match_gets_a_bodiless_304() {
    let cfg = small(7);
    let server = serve(&cfg);
    let port = server.port();
    let page = get(addr(1, port), "h0001.test", "/p2.html");
    assert_eq!(page.status, 200);
    let etag = page.header("etag").unwrap().to_string();
    assert_eq!(etag, etag_of(&cfg, 1, "/p2.html"));
    assert!(etag.starts_with('"') && etag.ends_with('"') && etag.len() == 18);
    let lm = page.header("last-modified").unwrap().to_string();
    assert_eq!(http_date::parse(lm.as_bytes()), Some(LAST_MODIFIED));

    let mut s = connect(addr(1, port));
    let mut buf = Vec::new();
    let cases = [
        (format!("If-None-Match: {etag}\r\n"), 304),
        ("If-None-Match: *\r\n".to_string(), 304),
        (format!("If-None-Match: \"x\", W/{etag}\r\n"), 304),
        ("If-None-Match: \"x\"\r\n".to_string(), 200),
        (format!("If-Modified-Since: {lm}\r\n"), 304),
        (
            "If-Modified-Since: Sun, 31 Dec 2023 23:59:59 GMT\r\n".into(),
            200,
        ),
        ("If-Modified-Since: not a date\r\n".into(), 200),
        // If-None-Match decides when both are sent.
        (
            format!("If-None-Match: \"x\"\r\nIf-Modified-Since: {lm}\r\n"),
            200,
        ),
    ];
    // All on one connection: a 304 with no body must leave it usable.
    for (extra, want) in &cases {
        let r = exchange(&mut s, &mut buf, &conditional(port, "/p2.html", extra));
        assert_eq!(r.status, *want, "{extra}");
        assert_eq!(r.header("etag"), Some(etag.as_str()), "{extra}");
        assert_eq!(r.header("last-modified"), Some(lm.as_str()), "{extra}");
        if r.status == 304 {
            assert!(r.body.is_empty());
            assert_eq!(
                r.header("content-length"),
                None,
                "a 304 has no body to count"
            );
            assert_eq!(r.header("connection"), Some("keep-alive"));
        } else {
            assert_eq!(r.body, page.body);
        }
    }
    assert!(buf.is_empty(), "nothing after the last response");
    assert_eq!(server.not_modified(), 4);
    assert_eq!(server.requests(), 1 + cases.len() as u64);
}

#[test]
fn keep_alive_and_pipelining_go_on_after_a_304() {
    let cfg = small(7);
    let server = serve(&cfg);
    let port = server.port();
    let etag = etag_of(&cfg, 1, "/p1.html");
    let mut s = connect(addr(1, port));
    let mut buf = Vec::new();
    // Pipelined: 304, 200, HEAD 304, 304, then a plain request.
    let mut batch = conditional(port, "/p1.html", &format!("If-None-Match: {etag}\r\n"));
    batch.extend(conditional(
        port,
        "/p0.html",
        &format!("If-None-Match: {etag}\r\n"),
    ));
    batch.extend(
        format!("HEAD /p1.html HTTP/1.1\r\nHost: h0001.test\r\nIf-None-Match: {etag}\r\n\r\n")
            .into_bytes(),
    );
    batch.extend(conditional(
        port,
        "/p1.html",
        &format!("If-None-Match: {etag}\r\n"),
    ));
    batch.extend(conditional(port, "/", ""));
    s.write_all(&batch).unwrap();
    let statuses: Vec<u16> = (0..5)
        .map(|_| read_response(&mut s, &mut buf).unwrap().status)
        .collect();
    assert_eq!(statuses, [304, 200, 304, 304, 200]);
    assert!(buf.is_empty());
    // And the connection still serves.
    let r = exchange(&mut s, &mut buf, &conditional(port, "/p3.html", ""));
    assert_eq!(r.status, 200);
    assert_eq!(server.not_modified(), 3);
}

#[test]
fn tags_are_stable_across_restarts_and_follow_the_flags() {
    let a = serve(&small(7));
    let b = serve(&small(7));
    let c = serve(&small(8));
    let tag = |s: &WebServer, h: usize, path: &str| {
        let host = format!("h000{h}.test");
        let r = get(addr(h, s.port()), &host, path);
        r.header("etag").map(str::to_string)
    };
    assert_ne!(a.port(), b.port());
    assert_eq!(tag(&a, 1, "/p1.html"), tag(&b, 1, "/p1.html"));
    assert_ne!(tag(&a, 1, "/p1.html"), tag(&c, 1, "/p1.html"));
    assert_ne!(tag(&a, 1, "/p1.html"), tag(&a, 2, "/p1.html"));
    assert_ne!(tag(&a, 1, "/p1.html"), tag(&a, 1, "/p2.html"));
    assert!(tag(&a, 0, "/style.css").is_some());
    assert!(tag(&a, 0, "/list.html?sort=name&page=1").is_some());
    // robots.txt and 404s are as before: no validators, never a 304.
    assert_eq!(tag(&a, 0, "/robots.txt"), None);
    assert_eq!(tag(&a, 0, "/nothing-here"), None);
    let mut s = connect(addr(0, a.port()));
    let r = exchange(
        &mut s,
        &mut Vec::new(),
        b"GET /robots.txt HTTP/1.1\r\nHost: h0000.test\r\nIf-None-Match: *\r\n\r\n",
    );
    assert_eq!(r.status, 200);
}

fn etag_of(cfg: &WebConfig, host: usize, target: &str) -> String {
    let web = TestWeb::generate(cfg);
    spinneret_tools::testweb::etag(web.config(), host, target)
}
