//! The DNS server's answers and each `Behaviour`, parsed with dns-parser.

use std::collections::HashMap;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use dns_parser::{Builder, Packet, QueryClass, QueryType, RData, ResponseCode};
use spinneret_tools::dns_server::*;

fn server() -> DnsServer {
    let mut records = HashMap::new();
    records.insert(
        "h1.test".to_string(),
        vec![Record::A(Ipv4Addr::new(127, 0, 0, 1))],
    );
    records.insert(
        "V6.test.".to_string(),
        vec![
            Record::Aaaa(Ipv6Addr::LOCALHOST),
            Record::A(Ipv4Addr::new(127, 0, 0, 9)),
        ],
    );
    records.insert(
        "www.test".to_string(),
        vec![Record::Cname("alias.test".into())],
    );
    records.insert(
        "alias.test".to_string(),
        vec![Record::Cname("real.test".into())],
    );
    records.insert(
        "real.test".to_string(),
        vec![
            Record::A(Ipv4Addr::new(127, 0, 0, 2)),
            Record::A(Ipv4Addr::new(127, 0, 0, 3)),
        ],
    );
    DnsServer::start(DnsServerConfig {
        records,
        ttl: 77,
        lifetime: Duration::from_secs(30),
        ..DnsServerConfig::default()
    })
    .unwrap()
}

fn client(timeout_ms: u64) -> UdpSocket {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_read_timeout(Some(Duration::from_millis(timeout_ms)))
        .unwrap();
    s
}

fn query(id: u16, name: &str, qtype: QueryType) -> Vec<u8> {
    let mut b = Builder::new_query(id, true);
    b.add_question(name, false, qtype, QueryClass::IN);
    b.build().unwrap()
}

/// Sends a query and returns the raw reply and its source, or None on timeout.
fn ask(
    srv: &DnsServer,
    id: u16,
    name: &str,
    qtype: QueryType,
    timeout_ms: u64,
) -> Option<(Vec<u8>, SocketAddr)> {
    let s = client(timeout_ms);
    s.send_to(&query(id, name, qtype), srv.addr()).unwrap();
    let mut buf = [0u8; 1500];
    match s.recv_from(&mut buf) {
        Ok((n, from)) => Some((buf[..n].to_vec(), from)),
        Err(_) => None,
    }
}

fn a_addrs(p: &Packet<'_>) -> Vec<Ipv4Addr> {
    p.answers
        .iter()
        .filter_map(|rr| match rr.data {
            RData::A(a) => Some(a.0),
            _ => None,
        })
        .collect()
}

#[test]
fn answers_a_aaaa_and_case_insensitive_names() {
    let srv = server();
    let (raw, from) = ask(&srv, 0x1234, "H1.Test", QueryType::A, 2000).unwrap();
    assert_eq!(from, srv.addr());
    let p = Packet::parse(&raw).unwrap();
    assert_eq!(p.header.id, 0x1234);
    assert!(!p.header.query);
    assert_eq!(p.header.response_code, ResponseCode::NoError);
    // The question is echoed byte for byte (case kept, as 0x20-randomizing resolvers need).
    assert_eq!(p.questions[0].qname.to_string(), "H1.Test");
    assert_eq!(a_addrs(&p), vec![Ipv4Addr::new(127, 0, 0, 1)]);
    assert_eq!(p.answers[0].ttl, 77);

    let (raw, _) = ask(&srv, 7, "v6.test", QueryType::AAAA, 2000).unwrap();
    let p = Packet::parse(&raw).unwrap();
    assert_eq!(p.answers.len(), 1);
    assert!(matches!(p.answers[0].data, RData::AAAA(a) if a.0 == Ipv6Addr::LOCALHOST));

    // A known name without the asked type: NOERROR, no answers.
    let (raw, _) = ask(&srv, 8, "h1.test", QueryType::AAAA, 2000).unwrap();
    let p = Packet::parse(&raw).unwrap();
    assert_eq!(p.header.response_code, ResponseCode::NoError);
    assert!(p.answers.is_empty());

    let log = srv.queries();
    assert_eq!(log.len(), 3);
    assert_eq!(log[0].0, "h1.test");
    assert_eq!(log[0].1, 1);
    assert_eq!(log[1].1, 28);
}

#[test]
fn cname_chain_includes_targets_addresses() {
    let srv = server();
    let (raw, _) = ask(&srv, 9, "www.test", QueryType::A, 2000).unwrap();
    let p = Packet::parse(&raw).unwrap();
    assert_eq!(p.answers.len(), 4);
    let cnames: Vec<String> = p
        .answers
        .iter()
        .filter_map(|rr| match rr.data {
            RData::CNAME(n) => Some(format!("{} -> {}", rr.name, n.0)),
            _ => None,
        })
        .collect();
    assert_eq!(
        cnames,
        vec!["www.test -> alias.test", "alias.test -> real.test"]
    );
    assert_eq!(
        a_addrs(&p),
        vec![Ipv4Addr::new(127, 0, 0, 2), Ipv4Addr::new(127, 0, 0, 3)]
    );
    assert_eq!(p.answers[2].name.to_string(), "real.test");
}

#[test]
fn unknown_name_is_nxdomain_and_records_change_at_runtime() {
    let srv = server();
    let (raw, _) = ask(&srv, 1, "nope.test", QueryType::A, 2000).unwrap();
    assert_eq!(
        Packet::parse(&raw).unwrap().header.response_code,
        ResponseCode::NameError
    );
    srv.set_records("Nope.test", vec![Record::A(Ipv4Addr::new(127, 0, 0, 5))]);
    let (raw, _) = ask(&srv, 2, "nope.test", QueryType::A, 2000).unwrap();
    assert_eq!(
        a_addrs(&Packet::parse(&raw).unwrap()),
        vec![Ipv4Addr::new(127, 0, 0, 5)]
    );
}

#[test]
fn drop_and_fail_first_withhold_answers() {
    let srv = server();
    srv.set_behaviour("h1.test", Behaviour::Drop);
    assert!(ask(&srv, 1, "h1.test", QueryType::A, 300).is_none());
    srv.set_behaviour("h1.test", Behaviour::FailFirst(2));
    assert!(ask(&srv, 2, "h1.test", QueryType::A, 300).is_none());
    assert!(ask(&srv, 3, "h1.test", QueryType::A, 300).is_none());
    let (raw, _) = ask(&srv, 4, "h1.test", QueryType::A, 2000).unwrap();
    assert_eq!(Packet::parse(&raw).unwrap().header.id, 4);
    assert_eq!(srv.queries().len(), 4);
}

#[test]
fn delay_answers_late_without_blocking_other_names() {
    let srv = server();
    srv.set_behaviour("h1.test", Behaviour::Delay(Duration::from_millis(400)));
    let slow = client(2000);
    let t = Instant::now();
    slow.send_to(&query(5, "h1.test", QueryType::A), srv.addr())
        .unwrap();
    // Another name is answered meanwhile.
    let (raw, _) = ask(&srv, 6, "real.test", QueryType::A, 300).unwrap();
    assert_eq!(Packet::parse(&raw).unwrap().header.id, 6);
    assert!(t.elapsed() < Duration::from_millis(400));
    let mut buf = [0u8; 512];
    let n = slow.recv(&mut buf).unwrap();
    assert!(t.elapsed() >= Duration::from_millis(400));
    assert_eq!(Packet::parse(&buf[..n]).unwrap().header.id, 5);
}

#[test]
fn wrong_id_question_and_source() {
    let srv = server();
    srv.set_behaviour("h1.test", Behaviour::WrongId);
    let (raw, _) = ask(&srv, 0x1111, "h1.test", QueryType::A, 2000).unwrap();
    let p = Packet::parse(&raw).unwrap();
    assert_ne!(p.header.id, 0x1111);
    assert_eq!(a_addrs(&p), vec![Ipv4Addr::new(127, 0, 0, 1)]);

    srv.set_behaviour("h1.test", Behaviour::WrongQuestion);
    let (raw, _) = ask(&srv, 0x2222, "h1.test", QueryType::A, 2000).unwrap();
    let p = Packet::parse(&raw).unwrap();
    assert_eq!(p.header.id, 0x2222);
    assert_ne!(p.questions[0].qname.to_string(), "h1.test");

    srv.set_behaviour("h1.test", Behaviour::WrongSource);
    let (raw, from) = ask(&srv, 0x3333, "h1.test", QueryType::A, 2000).unwrap();
    assert_ne!(from, srv.addr());
    assert!(from.ip().is_loopback());
    assert_eq!(Packet::parse(&raw).unwrap().header.id, 0x3333);
}

#[test]
fn truncated_and_error_rcodes() {
    let srv = server();
    srv.set_behaviour("h1.test", Behaviour::Truncated);
    let (raw, _) = ask(&srv, 1, "h1.test", QueryType::A, 2000).unwrap();
    let p = Packet::parse(&raw).unwrap();
    assert!(p.header.truncated);
    assert!(p.answers.is_empty());
    for (b, code) in [
        (Behaviour::ServFail, ResponseCode::ServerFailure),
        (Behaviour::NxDomain, ResponseCode::NameError),
        (Behaviour::Refused, ResponseCode::Refused),
    ] {
        srv.set_behaviour("h1.test", b);
        let (raw, _) = ask(&srv, 2, "h1.test", QueryType::A, 2000).unwrap();
        let p = Packet::parse(&raw).unwrap();
        assert_eq!(p.header.response_code, code);
        assert!(p.answers.is_empty());
    }
}

#[test]
fn garbage_and_raw_bytes() {
    let srv = server();
    srv.set_behaviour("h1.test", Behaviour::Garbage(vec![1, 2, 3]));
    let (raw, _) = ask(&srv, 0xabcd, "h1.test", QueryType::A, 2000).unwrap();
    assert_eq!(raw, vec![1, 2, 3]);
    srv.set_behaviour("h1.test", Behaviour::Raw(vec![0, 0, 0x81, 0x80, 9, 9]));
    let (raw, _) = ask(&srv, 0xabcd, "h1.test", QueryType::A, 2000).unwrap();
    assert_eq!(raw, vec![0xab, 0xcd, 0x81, 0x80, 9, 9]);
}

#[test]
fn stop_and_lifetime_end_the_server() {
    let srv = DnsServer::start(DnsServerConfig {
        lifetime: Duration::from_millis(200),
        ..DnsServerConfig::default()
    })
    .unwrap();
    let addr = srv.addr();
    std::thread::sleep(Duration::from_millis(400));
    let s = client(300);
    s.send_to(&query(1, "x.test", QueryType::A), addr).unwrap();
    assert!(
        s.recv_from(&mut [0u8; 512]).is_err(),
        "no answer after lifetime"
    );
    let t = Instant::now();
    srv.stop();
    assert!(t.elapsed() < Duration::from_secs(1));
}

#[test]
fn a_large_answer_is_truncated_over_udp_unless_edns_is_honoured_and_whole_over_tcp() {
    use std::io::{Read, Write};
    let forty: Vec<Record> = (1..=40)
        .map(|i| Record::A(Ipv4Addr::new(127, 0, 0, i)))
        .collect();
    let start = |edns: bool, tcp: bool| {
        DnsServer::start(DnsServerConfig {
            records: HashMap::from([("big.test".to_string(), forty.clone())]),
            lifetime: Duration::from_secs(30),
            edns,
            tcp,
            ..DnsServerConfig::default()
        })
        .unwrap()
    };
    let plain = query(1, "big.test", QueryType::A);
    let mut with_opt = plain.clone();
    with_opt[11] = 1; // ARCOUNT: an OPT advertising 1232 bytes
    with_opt.extend_from_slice(&[0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0, 0, 0]);
    for (edns, q, whole) in [
        (false, &plain, false),
        (false, &with_opt, false),
        (true, &plain, false),
        (true, &with_opt, true),
    ] {
        let srv = start(edns, true);
        let s = client(2000);
        s.send_to(q, srv.addr()).unwrap();
        let mut buf = [0u8; 2048];
        let (n, _) = s.recv_from(&mut buf).unwrap();
        let p = Packet::parse(&buf[..n]).unwrap();
        let what = format!("edns {edns}, opt {}", q.len() > plain.len());
        assert_eq!(p.header.truncated, !whole, "{what}");
        assert_eq!(p.answers.len(), if whole { 40 } else { 0 }, "{what}");
        assert_eq!(p.opt.is_some(), whole, "{what}");
        assert!(n <= if whole { 1232 } else { 512 }, "{what}");
    }

    // Over TCP the whole answer, framed.
    let srv = start(false, true);
    let mut tcp = std::net::TcpStream::connect(srv.addr()).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let mut framed = (plain.len() as u16).to_be_bytes().to_vec();
    framed.extend_from_slice(&plain);
    tcp.write_all(&framed).unwrap();
    let mut len = [0u8; 2];
    tcp.read_exact(&mut len).unwrap();
    let mut answer = vec![0; usize::from(u16::from_be_bytes(len))];
    tcp.read_exact(&mut answer).unwrap();
    let p = Packet::parse(&answer).unwrap();
    assert!(!p.header.truncated);
    assert_eq!(a_addrs(&p).len(), 40);
    assert_eq!(srv.tcp_queries(), [("big.test".to_string(), TYPE_A)]);

    // TCP off: refused.
    let srv = start(false, false);
    assert!(std::net::TcpStream::connect(srv.addr()).is_err());
}
