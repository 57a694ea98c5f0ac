//! TLS mode of the HTTP server with certificates from `TestCa`, checked by a verifying rustls
//! client that trusts only the test CA.

use crate::common;

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use rustls::pki_types::{CertificateDer, ServerName};
use spinneret_tools::http_server::*;
use spinneret_tools::tls::{self_signed, TestCa, TlsIdentity};

fn tls_server(identity: TlsIdentity, routes: Routes) -> HttpServer {
    HttpServer::start(HttpServerConfig {
        tls: Some(identity),
        routes,
        lifetime: Duration::from_secs(30),
        ..HttpServerConfig::default()
    })
    .unwrap()
}

type Client = rustls::StreamOwned<rustls::ClientConnection, TcpStream>;

fn client(ca: &TestCa, addr: SocketAddr, name: &str) -> Client {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from(ca.ca_der())).unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let conn = rustls::ClientConnection::new(
        Arc::new(config),
        ServerName::try_from(name.to_string()).unwrap(),
    )
    .unwrap();
    rustls::StreamOwned::new(conn, connect(addr))
}

fn routes(script: Script) -> Routes {
    let mut r = Routes::new();
    r.add("h1.test", "/", script);
    r
}

#[test]
fn tls_serves_scripts_with_a_ca_issued_certificate() {
    let ca = TestCa::new();
    let mut r = routes(Script::Respond(Response::ok("secure", "text/plain")));
    r.add(
        "h1.test",
        "/raw",
        Script::Raw {
            bytes: b"HTTP/1.1 204 No Content\r\n\r\n".to_vec(),
            then: After::KeepOpen,
        },
    );
    let srv = tls_server(ca.issue(&["h1.test", "127.0.0.1"]), r);
    let mut c = client(&ca, srv.addrs()[0], "h1.test");
    let mut buf = Vec::new();
    for _ in 0..2 {
        c.write_all(&request("h1.test", "/")).unwrap();
        let resp = read_response(&mut c, &mut buf).unwrap();
        assert_eq!(resp.status, 200);
        assert_eq!(resp.body, b"secure");
    }
    c.write_all(&request("h1.test", "/raw")).unwrap();
    assert_eq!(read_response_head_status(&mut c, &mut buf), 204);
    assert_eq!(srv.request_count(), 3);
    assert!(srv.requests().iter().all(|r| r.conn_id == 0));
    // An IP SAN works too.
    let mut c = client(&ca, srv.addrs()[0], "127.0.0.1");
    c.write_all(&request("h1.test", "/")).unwrap();
    assert_eq!(
        read_response(&mut c, &mut Vec::new()).unwrap().body,
        b"secure"
    );
}

fn read_response_head_status(c: &mut Client, buf: &mut Vec<u8>) -> u16 {
    let mut tmp = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = c.read(&mut tmp).unwrap();
        assert!(n > 0);
        buf.extend_from_slice(&tmp[..n]);
    }
    let status = std::str::from_utf8(&buf[9..12]).unwrap().parse().unwrap();
    buf.clear();
    status
}

fn handshake_error(ca: &TestCa, identity: TlsIdentity, name: &str) -> String {
    let srv = tls_server(
        identity,
        routes(Script::Respond(Response::ok("x", "text/plain"))),
    );
    let mut c = client(ca, srv.addrs()[0], name);
    let err = c
        .write_all(&request("h1.test", "/"))
        .and_then(|_| c.flush());
    let err = match err {
        Err(e) => e,
        Ok(()) => c.read(&mut [0u8; 64]).unwrap_err(),
    };
    format!("{err:?}")
}

#[test]
fn expired_certificate_fails_verification() {
    let ca = TestCa::new();
    let err = handshake_error(&ca, ca.issue_expired(&["h1.test"]), "h1.test");
    assert!(err.contains("Expired"), "{err}");
}

#[test]
fn self_signed_and_wrong_name_fail_verification() {
    let ca = TestCa::new();
    let err = handshake_error(&ca, self_signed(&["h1.test"]), "h1.test");
    assert!(err.contains("UnknownIssuer"), "{err}");
    let err = handshake_error(&ca, ca.issue(&["other.test"]), "h1.test");
    assert!(err.contains("NotValidForName"), "{err}");
}

#[test]
fn close_without_close_notify_is_an_unexpected_eof() {
    let ca = TestCa::new();
    for (notify, expect_clean) in [(true, true), (false, false)] {
        let srv = tls_server(
            ca.issue(&["h1.test"]),
            routes(Script::Respond(
                Response::ok("bye", "text/plain")
                    .framing(Framing::Close)
                    .close_notify(notify),
            )),
        );
        let mut c = client(&ca, srv.addrs()[0], "h1.test");
        c.write_all(&request("h1.test", "/")).unwrap();
        let mut got = Vec::new();
        let r = read_to_end(&mut c, &mut got);
        assert!(String::from_utf8_lossy(&got).ends_with("bye"));
        match r {
            Ok(()) => assert!(expect_clean),
            Err(e) => {
                assert!(!expect_clean);
                assert_eq!(e.kind(), ErrorKind::UnexpectedEof);
            }
        }
    }
}

#[test]
fn ca_pem_is_written() {
    let ca = TestCa::new();
    let path = std::env::temp_dir().join(format!("spinneret-tools-ca-{}.pem", std::process::id()));
    ca.write_ca_pem(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    assert!(text.starts_with("-----BEGIN CERTIFICATE-----"));
    assert_eq!(text, ca.ca_pem());
}

#[test]
fn tls_runs_stream_trickle_and_reset_scripts() {
    let ca = TestCa::new();
    let head = b"HTTP/1.1 200 OK\r\n\r\n".to_vec();
    let mut r = routes(Script::Stream {
        head: head.clone(),
        body_len: 3 * 1024 * 1024,
    });
    r.add(
        "h1.test",
        "/trickle",
        Script::Trickle {
            bytes: b"abcdef".to_vec(),
            chunk: 2,
            interval: Duration::from_millis(30),
        },
    );
    r.add(
        "h1.test",
        "/reset",
        Script::ResetAfter {
            bytes: b"half".to_vec(),
        },
    );
    let srv = tls_server(ca.issue(&["h1.test"]), r);
    let addr = srv.addrs()[0];

    let mut c = client(&ca, addr, "h1.test");
    c.write_all(&request("h1.test", "/")).unwrap();
    let mut got = Vec::new();
    read_to_end(&mut c, &mut got).unwrap();
    assert_eq!(got.len(), head.len() + 3 * 1024 * 1024);

    let mut c = client(&ca, addr, "h1.test");
    c.write_all(&request("h1.test", "/trickle")).unwrap();
    let mut got = Vec::new();
    read_to_end(&mut c, &mut got).unwrap();
    assert_eq!(got, b"abcdef");

    let mut c = client(&ca, addr, "h1.test");
    c.write_all(&request("h1.test", "/reset")).unwrap();
    let mut got = Vec::new();
    let err = read_to_end(&mut c, &mut got).unwrap_err();
    assert_eq!(got, b"half");
    assert_eq!(err.kind(), ErrorKind::ConnectionReset);
}
