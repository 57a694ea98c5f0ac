//! DNS answers on arbitrary bytes: `dns::parse_response` as given, with the header made ours,
//! and with our question spliced in (so the walk of every section, OPT record included, is
//! reached); then a `Resolver` (A and AAAA side by side) fed the same datagrams from the right
//! server, and over TCP whenever one came back truncated. No panic; a resolution ends in
//! exactly one event.
#![no_main]

use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use libfuzzer_sys::fuzz_target;
use spinneret::dns::{
    build_query, parse_response, Edns, QueryType, Resolve, Resolver, ResolverConfig,
};

/// The seeds in corpus/dns_response are answers to this query.
const ID: u16 = 0x1234;
const NAME: &str = "www.example.com";
/// Asked right after `NAME`, it waits for it (one name on the wire at a time).
const WAITING: &str = "waiting.example.com";
const HEADER_LEN: usize = 12;
const FLAG_QR: u16 = 0x8000;
const OPCODE_MASK: u16 = 0x7800;

/// `packet` with our ID, QR set, opcode QUERY and one question: the checks before the question.
fn ours(packet: &[u8]) -> Vec<u8> {
    let mut p = packet.to_vec();
    if p.len() < HEADER_LEN {
        p.resize(HEADER_LEN, 0);
    }
    let flags = (u16::from_be_bytes([p[2], p[3]]) | FLAG_QR) & !OPCODE_MASK;
    p[0..2].copy_from_slice(&ID.to_be_bytes());
    p[2..4].copy_from_slice(&flags.to_be_bytes());
    p[4..6].copy_from_slice(&1u16.to_be_bytes());
    p
}

/// `ours(packet)` with our question for `qtype` inserted after the header: the fuzzer's bytes
/// become the answer section.
fn with_question(packet: &[u8], qtype: QueryType) -> Vec<u8> {
    let header = ours(packet);
    let mut query = Vec::new();
    build_query(ID, NAME, qtype, Edns::Advertise, &mut query);
    let mut p = header[..HEADER_LEN].to_vec();
    p.extend_from_slice(&query[HEADER_LEN..]);
    p.extend_from_slice(packet.get(HEADER_LEN..).unwrap_or(&[]));
    p
}

fn check(packet: &[u8], qtype: QueryType) {
    if let Ok(answer) = parse_response(packet, ID, NAME, qtype) {
        assert!(answer.addrs.is_empty() != answer.cname_target.is_none());
        assert!(answer.ttl <= i32::MAX as u32);
        for a in &answer.addrs {
            assert_eq!(a.is_ipv4(), qtype == QueryType::A);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let patched = [
        ours(data),
        with_question(data, QueryType::A),
        with_question(data, QueryType::Aaaa),
    ];
    for qtype in [QueryType::A, QueryType::Aaaa] {
        check(data, qtype);
        for p in &patched {
            check(p, qtype);
        }
    }

    let server = SocketAddr::from((Ipv4Addr::LOCALHOST, 53));
    // One name on the wire at a time: a second name waits, and must start once the first
    // ends however it ends, and end itself by its deadline.
    let config = ResolverConfig {
        servers: vec![server],
        max_names_in_flight: 1,
        ..ResolverConfig::default()
    };
    let deadline = config.total_timeout;
    let mut resolver = Resolver::new(config, Box::new(|| ID));
    let now = Instant::now();
    assert_eq!(resolver.resolve(NAME, now), Resolve::Pending);
    assert_eq!(resolver.resolve(WAITING, now), Resolve::Pending);
    let mut events = 0;
    let mut waiting_events = 0;
    for datagram in std::iter::once(data).chain(patched.iter().map(Vec::as_slice)) {
        // Bound: one transmit per answer (retry, CNAME target, plain retry) at most.
        while resolver.poll_transmit().is_some() {}
        resolver.handle_datagram(0, server, datagram, now);
        // A truncated answer moved its lookup to TCP: the same bytes come back that way, under
        // the TCP query's ID. Bound: two lookups, and TCP answers make no TCP queries.
        for _ in 0..2 {
            let Some(q) = resolver.poll_tcp_query() else {
                break;
            };
            assert_eq!(q.server, 0);
            let mut answer = datagram.to_vec();
            if answer.len() >= 2 {
                answer[..2].copy_from_slice(&q.id.to_be_bytes());
            }
            resolver.handle_tcp_answer(q.server, q.id, &answer, now);
        }
        while let Some((name, _)) = resolver.poll_event() {
            match name.as_str() {
                WAITING => waiting_events += 1,
                _ => events += 1,
            }
        }
        assert!(events <= 1, "more than one event for one name");
    }
    // Past the whole-resolution deadline every query has finished, with exactly one event.
    // The waiting name's deadline runs from when it was asked, as the first's does: both
    // have ended by then, whenever the first ended and the second was sent.
    resolver.handle_timeout(now + deadline + Duration::from_secs(1));
    while let Some((name, _)) = resolver.poll_event() {
        match name.as_str() {
            WAITING => waiting_events += 1,
            _ => events += 1,
        }
    }
    assert_eq!((events, waiting_events), (1, 1));
    assert_eq!(resolver.pending(), 0);
});
