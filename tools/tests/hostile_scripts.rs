//! The scripts and DNS behaviours added for the adversarial catalogue: streamed `Repeat`
//! bodies, per-target `Generate` scripts, per-host fallback routes, and the DNS answers with
//! unknown types, a self-pointing name and impossible counts.

use crate::common;

use std::io::Write;
use std::net::{Ipv4Addr, UdpSocket};
use std::time::Duration;

use dns_parser::{Builder, Packet, QueryClass, QueryType};
use spinneret_tools::dns_server::{Behaviour, DnsServer, DnsServerConfig, Record};
use spinneret_tools::http_server::{
    Generator, HttpServer, HttpServerConfig, Response, Routes, Script,
};

#[test]
fn repeat_streams_head_units_and_tail_then_closes() {
    let mut routes = Routes::new();
    routes.add(
        "r.test",
        "/",
        Script::Repeat {
            head: b"HTTP/1.1 200 OK\r\n\r\n<".to_vec(),
            unit: b"abc".to_vec(),
            count: 100_000, // spans several write blocks
            tail: b">".to_vec(),
        },
    );
    let s = HttpServer::start(HttpServerConfig {
        routes,
        ..HttpServerConfig::default()
    })
    .unwrap();
    let mut c = common::connect(s.addrs()[0]);
    c.write_all(&common::request("r.test", "/")).unwrap();
    let mut buf = Vec::new();
    common::read_to_end(&mut c, &mut buf).unwrap();
    let body = &buf[b"HTTP/1.1 200 OK\r\n\r\n".len()..];
    assert_eq!(body.len(), 300_002);
    assert_eq!(body, [&b"<"[..], &b"abc".repeat(100_000), b">"].concat());
    assert!(s.requests()[0].answered.is_some());
}

#[test]
fn generate_and_host_fallback_routes() {
    let mut routes = Routes::new();
    routes.add(
        "g.test",
        "/fixed",
        Script::Respond(Response::ok("fixed", "text/plain")),
    );
    routes.add_host(
        "g.test",
        Script::Generate(Generator::new(|target| {
            Script::Respond(Response::ok(format!("you asked {target}"), "text/plain"))
        })),
    );
    let s = HttpServer::start(HttpServerConfig {
        routes,
        ..HttpServerConfig::default()
    })
    .unwrap();
    let addr = s.addrs()[0];
    assert_eq!(common::get(addr, "g.test", "/fixed").body, b"fixed");
    assert_eq!(
        common::get(addr, "G.Test", "/cal?d=7").body,
        b"you asked /cal?d=7"
    );
    assert_eq!(common::get(addr, "other.test", "/cal").status, 404);
}

fn ask(srv: &DnsServer, name: &str) -> Vec<u8> {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let mut b = Builder::new_query(0x4242, true);
    b.add_question(name, false, QueryType::A, QueryClass::IN);
    s.send_to(&b.build().unwrap(), srv.addr()).unwrap();
    let mut buf = [0u8; 1500];
    let (n, _) = s.recv_from(&mut buf).unwrap();
    buf[..n].to_vec()
}

#[test]
fn dns_typed_answers_pointer_loop_and_huge_counts() {
    let a = vec![Record::A(Ipv4Addr::LOCALHOST)];
    let srv = DnsServer::start(DnsServerConfig {
        records: [
            ("typed.test".to_string(), a.clone()),
            ("loop.test".to_string(), a.clone()),
            ("counts.test".to_string(), a),
        ]
        .into_iter()
        .collect(),
        behaviours: [
            (
                "typed.test".to_string(),
                Behaviour::TypedAnswers(vec![(65, vec![0, 1, 0]), (39, vec![0])]),
            ),
            ("loop.test".to_string(), Behaviour::PointerLoop),
            ("counts.test".to_string(), Behaviour::HugeCounts),
        ]
        .into_iter()
        .collect(),
        ..DnsServerConfig::default()
    })
    .unwrap();

    let typed = ask(&srv, "typed.test");
    assert_eq!(&typed[0..2], &[0x42, 0x42]);
    assert_eq!(&typed[6..8], &[0, 2], "two answers");
    // The first answer: owner typed.test (uncompressed), then type 65 (HTTPS), which
    // dns-parser itself refuses.
    let owner = 12 + "typed.test".len() + 2 + 4;
    let rtype = owner + "typed.test".len() + 2;
    assert_eq!(&typed[rtype..rtype + 2], &[0, 65]);
    assert!(Packet::parse(&typed).is_err());

    let looped = ask(&srv, "loop.test");
    let question_end = 12 + "loop.test".len() + 2 + 4;
    let ptr = u16::from_be_bytes([looped[question_end], looped[question_end + 1]]);
    assert_eq!(
        ptr,
        0xc000 | question_end as u16,
        "the owner points at itself"
    );
    assert!(Packet::parse(&looped).is_err());

    let counts = ask(&srv, "counts.test");
    assert_eq!(&counts[6..12], &[0xff; 6]);
    assert!(Packet::parse(&counts).is_err());
}
