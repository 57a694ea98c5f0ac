use super::*;
use crate::dns::message::tests::AnswerBuilder;
use crate::dns::tcp::{FrameDecoder, Status};
use std::net::Ipv6Addr;

/// Bound on driver steps, so a livelock fails the test instead of hanging it.
const MAX_STEPS: usize = 1000;

/// A query as the fake server sees it.
#[derive(Clone, Debug)]
struct Seen {
    at: Instant,
    server: usize,
    id: u16,
    name: String,
    qtype: u16,
    /// Asked over TCP (after a truncated answer).
    tcp: bool,
    /// The query carried an OPT record.
    edns: bool,
}

/// What the fake server sends back for one query.
type FakeServer<'a> = dyn FnMut(&Seen) -> Option<Vec<u8>> + 'a;

struct Sim {
    r: Resolver,
    now: Instant,
    servers: Vec<SocketAddr>,
    seen: Vec<Seen>,
    events: Vec<(String, Result<Resolved, DnsError>)>,
}

fn servers(n: usize) -> Vec<SocketAddr> {
    (0..n)
        .map(|i| SocketAddr::from(([127, 0, 0, 1 + i as u8], 53)))
        .collect()
}

/// Deterministic "random" IDs (an LCG), distinct over the short runs of these tests.
fn lcg_ids() -> Box<dyn FnMut() -> u16> {
    let mut x: u32 = 12345;
    Box::new(move || {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        (x >> 16) as u16
    })
}

impl Sim {
    fn new(n_servers: usize, tweak: impl FnOnce(&mut ResolverConfig)) -> Sim {
        let mut config = ResolverConfig {
            servers: servers(n_servers),
            ..ResolverConfig::default()
        };
        tweak(&mut config);
        let servers = config.servers.clone();
        Sim {
            r: Resolver::new(config, lcg_ids()),
            now: Instant::now(),
            servers,
            seen: Vec::new(),
            events: Vec::new(),
        }
    }

    fn resolve(&mut self, name: &str) -> Resolve {
        self.r.resolve(name, self.now)
    }

    /// Records a query as the fake server sees it.
    fn see(&mut self, query: &[u8], server: usize, tcp: bool) -> Seen {
        let p = dns_parser::Packet::parse(query).expect("our query parses");
        let seen = Seen {
            at: self.now,
            server,
            id: p.header.id,
            name: p.questions[0].qname.to_string(),
            qtype: p.questions[0].qtype as u16,
            tcp,
            edns: p.opt.is_some(),
        };
        self.seen.push(seen.clone());
        seen
    }

    /// Delivers every queued query (datagrams and TCP queries) to the fake server and its
    /// answers back, firing timers when nothing else is left, until the resolver is idle or
    /// `until` passes. A TCP query the server does not answer is left to time out.
    fn drive(&mut self, server: &mut FakeServer, until: Option<Instant>) {
        for _ in 0..MAX_STEPS {
            if let Some(t) = self.r.poll_transmit() {
                let seen = self.see(&t.payload, t.server, false);
                if let Some(reply) = server(&seen) {
                    let from = self.servers[t.server];
                    self.r.handle_datagram(t.server, from, &reply, self.now);
                }
                continue;
            }
            if let Some(t) = self.r.poll_tcp_query() {
                let mut frames = FrameDecoder::new(512);
                let whole = Status::Complete {
                    consumed: t.payload.len(),
                };
                assert_eq!(frames.decode(&t.payload), Ok(whole), "one framed query");
                let seen = self.see(frames.message().unwrap(), t.server, true);
                assert_eq!(seen.id, t.id);
                assert!(t.deadline > self.now && t.deadline <= self.now + TCP_TIMEOUT);
                if let Some(reply) = server(&seen) {
                    self.r.handle_tcp_answer(t.server, t.id, &reply, self.now);
                }
                continue;
            }
            while let Some(e) = self.r.poll_event() {
                self.events.push(e);
            }
            match self.r.poll_timeout() {
                Some(t) if until.is_none_or(|u| t <= u) => {
                    assert!(t >= self.now, "timer in the past");
                    self.now = t;
                    self.r.handle_timeout(self.now);
                }
                _ => return,
            }
        }
        panic!("resolver did not settle in {MAX_STEPS} steps");
    }

    fn run(&mut self, server: &mut FakeServer) {
        self.drive(server, None);
    }

    fn only_event(&mut self) -> (String, Result<Resolved, DnsError>) {
        assert_eq!(self.events.len(), 1, "{:?}", self.events);
        self.events.remove(0)
    }
}

fn ok(addrs: &[&str]) -> Result<Resolved, DnsError> {
    Ok(Resolved {
        addrs: addrs.iter().map(|a| a.parse().unwrap()).collect(),
    })
}

/// A server that knows a few names: A records for `*.a.test`, AAAA only for `v6.test`,
/// NXDOMAIN for `nx.test`, NODATA for everything else.
fn zone(q: &Seen) -> Option<Vec<u8>> {
    let b = AnswerBuilder::new(q.id, &q.name, q.qtype);
    Some(match (q.name.as_str(), q.qtype) {
        (n, 1) if n.ends_with(".a.test") => b.a(n, 30, [192, 0, 2, 1]).build(),
        ("v6.test", 28) => b
            .aaaa("v6.test", 30, "2001:db8::6".parse().unwrap())
            .build(),
        ("nx.test", _) => AnswerBuilder::with_flags(q.id, 0x8183, &q.name, q.qtype).build(),
        _ => b.build(),
    })
}

#[test]
fn answers_and_coalesces_identical_names() {
    let mut s = Sim::new(2, |_| {});
    assert_eq!(s.resolve("www.a.test"), Resolve::Pending);
    assert_eq!(s.resolve("WWW.A.TEST."), Resolve::Pending);
    assert_eq!(s.r.pending(), 1);
    s.run(&mut zone);
    let asked: Vec<u16> = s.seen.iter().map(|q| q.qtype).collect();
    assert_eq!(asked, [1, 28], "one A and one AAAA query for both callers");
    assert!(s.seen.iter().all(|q| q.edns && !q.tcp));
    assert_eq!(s.only_event(), ("www.a.test".into(), ok(&["192.0.2.1"])));
    assert_eq!(s.r.pending(), 0);
    assert_eq!(s.r.queue_len(0) + s.r.queue_len(1), 0);
    assert_eq!(s.r.poll_timeout(), None);
    // Now cached.
    assert_eq!(s.resolve("www.a.test"), Resolve::Done(ok(&["192.0.2.1"])));
    let st = s.r.stats();
    assert_eq!((st.queries_sent, st.cache_hits, st.cache_misses), (2, 1, 2));
}

#[test]
fn new_queries_go_to_the_shortest_queue() {
    let mut s = Sim::new(3, |_| {});
    let mut lens = [0; 3];
    for name in ["a.test", "b.test", "c.test", "d.test"] {
        assert_eq!(s.resolve(name), Resolve::Pending);
        // A, then AAAA: each to the shortest queue when sent, the lowest index on ties.
        for _ in 0..2 {
            let t = s.r.poll_transmit().unwrap();
            let shortest = (0..3).min_by_key(|&i| lens[i]).unwrap();
            assert_eq!(t.server, shortest, "{name}");
            lens[t.server] += 1;
        }
    }
    assert_eq!(
        (
            s.r.queue_len(0),
            s.r.queue_len(1),
            s.r.queue_len(2),
            s.r.queue_len(9)
        ),
        (3, 3, 2, 0)
    );
}

#[test]
fn retries_use_fresh_ids_next_server_and_doubling_delays_then_time_out() {
    let mut s = Sim::new(2, |_| {});
    let start = s.now;
    s.resolve("silent.test");
    s.run(&mut |_| None);
    assert_eq!(s.seen.len(), 10);
    let mut ids: Vec<u16> = s.seen.iter().map(|q| q.id).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 10, "every retry has a fresh ID");
    // A starts on the first server, AAAA on the other (the shorter queue then).
    for (qtype, first) in [(1, 0), (28, 1)] {
        let sent: Vec<&Seen> = s.seen.iter().filter(|q| q.qtype == qtype).collect();
        let servers: Vec<usize> = sent.iter().map(|q| q.server).collect();
        assert_eq!(servers, [first, 1 - first, first, 1 - first, first]);
        let gaps: Vec<Duration> = sent.windows(2).map(|w| w[1].at - w[0].at).collect();
        let d = gaps[0];
        assert!(
            d > Duration::from_millis(300) && d < Duration::from_millis(350),
            "{d:?}"
        );
        for (i, g) in gaps.iter().enumerate() {
            assert_eq!(*g, d * (1 << i));
        }
    }
    assert_eq!(
        s.only_event(),
        ("silent.test".into(), Err(DnsError::Timeout))
    );
    let total = s.now - start;
    assert!(total <= Duration::from_secs(10) && total > Duration::from_millis(9_900));
    let st = s.r.stats();
    assert_eq!((st.queries_sent, st.retries, st.timeouts), (10, 8, 2));
    // Timeouts are not cached.
    assert_eq!(s.resolve("silent.test"), Resolve::Pending);
}

#[test]
fn datagrams_not_matching_an_outstanding_query_are_dropped() {
    let mut s = Sim::new(2, |_| {});
    s.resolve("www.a.test");
    let t = s.r.poll_transmit().unwrap();
    let id = u16::from_be_bytes([t.payload[0], t.payload[1]]);
    // The AAAA question is answered first: no AAAA record.
    let t6 = s.r.poll_transmit().unwrap();
    let id6 = u16::from_be_bytes([t6.payload[0], t6.payload[1]]);
    let nodata = AnswerBuilder::new(id6, "www.a.test", 28).build();
    s.r.handle_datagram(t6.server, s.servers[t6.server], &nodata, s.now);
    let good = AnswerBuilder::new(id, "www.a.test", 1)
        .a("www.a.test", 30, [192, 0, 2, 9])
        .build();
    let (right, other) = (s.servers[t.server], s.servers[1 - t.server]);
    let spoof: SocketAddr = "127.0.0.99:53".parse().unwrap();
    let bad = [
        (t.server, spoof, good.clone()), // wrong source address
        (t.server, SocketAddr::new(right.ip(), 5353), good.clone()), // wrong port
        (1 - t.server, other, good.clone()), // right bytes, other server
        (t.server, right, {
            let mut p = good.clone();
            p[0] ^= 0xff; // wrong ID
            p
        }),
        (
            t.server,
            right,
            AnswerBuilder::new(id, "evil.test", 1)
                .a("evil.test", 30, [6, 6, 6, 6])
                .build(),
        ),
        (t.server, right, good[..5].to_vec()),
        (7, right, good.clone()), // no such server
    ];
    for (server, from, data) in &bad {
        s.r.handle_datagram(*server, *from, data, s.now);
    }
    assert_eq!(s.r.poll_event(), None);
    assert_eq!(s.r.stats().dropped_mismatch, bad.len() as u64);
    s.r.handle_datagram(t.server, right, &good, s.now);
    assert_eq!(
        s.r.poll_event(),
        Some(("www.a.test".into(), ok(&["192.0.2.9"])))
    );
    // A duplicate of the accepted answer is no longer ours.
    s.r.handle_datagram(t.server, right, &good, s.now);
    assert_eq!(s.r.stats().dropped_mismatch, bad.len() as u64 + 1);
}

#[test]
fn answers_expire_with_their_ttl_capped_by_max_ttl() {
    let mut s = Sim::new(1, |c| c.max_ttl = Duration::from_secs(20));
    s.resolve("x.a.test"); // TTL 30, capped to 20
    s.run(&mut zone);
    s.now += Duration::from_secs(19);
    assert_eq!(s.resolve("x.a.test"), Resolve::Done(ok(&["192.0.2.1"])));
    s.now += Duration::from_secs(1);
    assert_eq!(s.resolve("x.a.test"), Resolve::Pending);
}

#[test]
fn nxdomain_and_no_address_are_cached_negatively_servfail_is_not() {
    let mut s = Sim::new(1, |_| {});
    s.resolve("nx.test");
    s.resolve("empty.test");
    s.run(&mut zone);
    assert_eq!(s.events.len(), 2);
    assert!(s
        .events
        .contains(&("nx.test".into(), Err(DnsError::NxDomain))));
    assert!(s
        .events
        .contains(&("empty.test".into(), Err(DnsError::NoAddress))));
    let sent = s.seen.len();
    s.now += Duration::from_secs(59);
    assert_eq!(s.resolve("nx.test"), Resolve::Done(Err(DnsError::NxDomain)));
    assert_eq!(
        s.resolve("empty.test"),
        Resolve::Done(Err(DnsError::NoAddress))
    );
    assert_eq!(s.r.poll_transmit(), None);
    assert_eq!(s.seen.len(), sent);
    s.now += Duration::from_secs(1);
    assert_eq!(s.resolve("nx.test"), Resolve::Pending);

    let mut s = Sim::new(1, |_| {});
    let mut servfail =
        |q: &Seen| Some(AnswerBuilder::with_flags(q.id, 0x8182, &q.name, q.qtype).build());
    s.resolve("sf.test");
    s.run(&mut servfail);
    assert_eq!(s.only_event(), ("sf.test".into(), Err(DnsError::ServFail)));
    assert_eq!(s.resolve("sf.test"), Resolve::Pending);
}

#[test]
fn servfail_is_retried_on_the_next_server() {
    let mut s = Sim::new(2, |_| {});
    let mut one_bad = |q: &Seen| {
        let b = AnswerBuilder::with_flags(q.id, 0x8182, &q.name, q.qtype);
        Some(if q.server == 0 { b.build() } else { zone(q)? })
    };
    s.resolve("w.a.test");
    s.run(&mut one_bad);
    assert_eq!(s.only_event(), ("w.a.test".into(), ok(&["192.0.2.1"])));
    let a: Vec<usize> = s
        .seen
        .iter()
        .filter(|q| q.qtype == 1)
        .map(|q| q.server)
        .collect();
    assert_eq!(
        a,
        [0, 1],
        "SERVFAIL from the first, the answer from the second"
    );
}

#[test]
fn aaaa_only_name_resolves_to_its_v6_address() {
    let mut s = Sim::new(1, |_| {});
    s.resolve("v6.test");
    s.run(&mut zone);
    let asked: Vec<u16> = s.seen.iter().map(|q| q.qtype).collect();
    assert_eq!(asked, vec![1, 28]);
    assert_eq!(s.only_event(), ("v6.test".into(), ok(&["2001:db8::6"])));
}

#[test]
fn cname_targets_outside_the_packet_are_queried() {
    let mut s = Sim::new(1, |_| {});
    let mut srv = |q: &Seen| {
        let b = AnswerBuilder::new(q.id, &q.name, q.qtype);
        match q.name.as_str() {
            "www.site.test" => Some(b.cname("www.site.test", 100, "edge.cdn.a.test").build()),
            _ => zone(q),
        }
    };
    s.resolve("WWW.site.test");
    s.run(&mut srv);
    let names: Vec<&str> = s.seen.iter().map(|q| q.name.as_str()).collect();
    let want = [
        "www.site.test",
        "www.site.test",
        "edge.cdn.a.test",
        "edge.cdn.a.test",
    ];
    assert_eq!(names, want, "A and AAAA each follow the CNAME");
    assert_eq!(s.only_event(), ("www.site.test".into(), ok(&["192.0.2.1"])));
    // Cached under the name asked for.
    assert_eq!(
        s.resolve("www.site.test"),
        Resolve::Done(ok(&["192.0.2.1"]))
    );
}

#[test]
fn cname_loops_and_long_chains_across_packets_end() {
    let mut s = Sim::new(1, |_| {});
    let mut looping = |q: &Seen| {
        let next = if q.name == "p.test" {
            "q.test"
        } else {
            "p.test"
        };
        Some(
            AnswerBuilder::new(q.id, &q.name, q.qtype)
                .cname(&q.name, 5, next)
                .build(),
        )
    };
    s.resolve("p.test");
    s.run(&mut looping);
    assert_eq!(s.only_event(), ("p.test".into(), Err(DnsError::CnameChain)));
    assert_eq!(s.seen.len(), 4);

    let mut s = Sim::new(1, |c| c.max_cname = 3);
    let mut endless = |q: &Seen| {
        let next = format!("x{}", q.name);
        Some(
            AnswerBuilder::new(q.id, &q.name, q.qtype)
                .cname(&q.name, 5, &next)
                .build(),
        )
    };
    s.resolve("c.test");
    s.run(&mut endless);
    assert_eq!(s.only_event(), ("c.test".into(), Err(DnsError::CnameChain)));
    assert_eq!(
        s.seen.len(),
        8,
        "the name and 3 re-queried targets, A and AAAA"
    );
}

#[test]
fn hosts_bad_names_and_no_server_answer_without_packets() {
    let mut hosts = HashMap::new();
    hosts.insert("intranet".to_string(), vec!["10.1.2.3".parse().unwrap()]);
    let mut s = Sim::new(0, |c| c.hosts = hosts);
    assert_eq!(s.resolve("Intranet."), Resolve::Done(ok(&["10.1.2.3"])));
    assert_eq!(s.resolve("192.0.2.5"), Resolve::Done(ok(&["192.0.2.5"])));
    assert_eq!(s.resolve("a..b"), Resolve::Done(Err(DnsError::BadName)));
    assert_eq!(
        s.resolve("elsewhere.test"),
        Resolve::Done(Err(DnsError::NoServer))
    );
    assert_eq!(s.r.poll_transmit(), None);
    assert_eq!(s.r.pending(), 0);

    let mut s = Sim::new(1, |_| {});
    let long = format!("{}.test", "a".repeat(64));
    assert_eq!(s.resolve(&long), Resolve::Done(Err(DnsError::BadName)));
    assert_eq!(s.r.poll_transmit(), None);
}

#[test]
fn cache_is_bounded_evicting_expired_then_oldest() {
    let mut s = Sim::new(1, |c| c.cache_capacity = 2);
    let mut srv = |q: &Seen| {
        let ttl = if q.name == "short.a.test" { 5 } else { 300 };
        Some(
            AnswerBuilder::new(q.id, &q.name, q.qtype)
                .a(&q.name, ttl, [192, 0, 2, 1])
                .build(),
        )
    };
    for name in ["one.a.test", "short.a.test"] {
        s.resolve(name);
        s.run(&mut srv);
    }
    s.now += Duration::from_secs(6); // short.a.test has expired
    s.resolve("three.a.test");
    s.run(&mut srv);
    assert!(
        matches!(s.resolve("one.a.test"), Resolve::Done(Ok(_))),
        "expired went first"
    );
    s.resolve("four.a.test"); // nothing expired: the oldest (one.a.test) goes
    s.run(&mut srv);
    assert_eq!(s.resolve("one.a.test"), Resolve::Pending);
    assert!(matches!(s.resolve("three.a.test"), Resolve::Done(Ok(_))));
}

#[test]
fn extreme_settings_do_not_panic() {
    let mut s = Sim::new(1, |c| {
        c.total_timeout = Duration::MAX;
        c.max_ttl = Duration::MAX;
        c.negative_ttl = Duration::MAX;
        c.attempts = u32::MAX;
    });
    s.resolve("x.a.test");
    s.resolve("nx.test");
    s.run(&mut zone);
    assert_eq!(s.events.len(), 2);
    let mut s = Sim::new(1, |c| {
        c.total_timeout = Duration::ZERO;
        c.attempts = 0;
        c.cache_capacity = 0;
    });
    s.resolve("x.a.test");
    s.run(&mut |_| None);
    assert_eq!(s.only_event(), ("x.a.test".into(), Err(DnsError::Timeout)));
    s.resolve("y.a.test");
    s.run(&mut zone);
    assert_eq!(
        s.resolve("y.a.test"),
        Resolve::Pending,
        "capacity 0 caches nothing"
    );
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

    /// Hostile answers carrying the right ID reach parse_response and the resolver's
    /// transitions; whatever they say, the name ends in exactly one event, in bounded steps.
    #[test]
    fn mutated_answers_never_panic_or_hang(
        edits in proptest::collection::vec((0usize..200, proptest::prelude::any::<u8>()), 0..6),
    ) {
        let mut s = Sim::new(2, |_| {});
        let mut hostile = |q: &Seen| {
            let mut p = AnswerBuilder::new(q.id, &q.name, q.qtype)
                .cname(&q.name, 9, "t.a.test")
                .a("t.a.test", 9, [192, 0, 2, 1])
                .build();
            for &(at, byte) in &edits {
                // Keep the ID so the datagram is matched to the query.
                if at >= 2 && at < p.len() {
                    p[at] = byte;
                }
            }
            Some(p)
        };
        s.resolve("m.test");
        s.run(&mut hostile);
        proptest::prop_assert_eq!(s.events.len(), 1);
        proptest::prop_assert_eq!(s.r.pending(), 0);
        proptest::prop_assert_eq!(s.r.queue_len(0) + s.r.queue_len(1), 0);
    }
}

#[test]
fn spurious_calls_are_no_ops() {
    let mut s = Sim::new(1, |_| {});
    s.r.handle_timeout(s.now);
    assert_eq!(s.r.poll_event(), None);
    assert_eq!(s.r.poll_timeout(), None);
    let six = IpAddr::V6(Ipv6Addr::LOCALHOST);
    s.r.handle_datagram(0, SocketAddr::new(six, 53), &[], s.now);
    assert_eq!(s.r.stats().dropped_mismatch, 1);
}

/// A server for `big.test` (40 A records, one AAAA) that answers only what fits a classic
/// 512-byte datagram over UDP, and everything over TCP; other names as `zone`.
fn truncating(q: &Seen) -> Option<Vec<u8>> {
    if q.name != "big.test" {
        return zone(q);
    }
    let mut b = AnswerBuilder::new(q.id, &q.name, q.qtype);
    if q.qtype == 28 {
        b = b.aaaa(&q.name, 30, "2001:db8::40".parse().unwrap());
    } else {
        for i in 0..40 {
            b = b.a(&q.name, 30, [192, 0, 2, i]);
        }
    }
    let full = b.build();
    Some(if q.tcp || full.len() <= 512 {
        full
    } else {
        AnswerBuilder::with_flags(q.id, 0x8380, &q.name, q.qtype).build()
    })
}

fn forty_and_one() -> Vec<String> {
    let mut want: Vec<String> = (0..40).map(|i| format!("192.0.2.{i}")).collect();
    want.push("2001:db8::40".into());
    want
}

#[test]
fn a_truncated_answer_is_asked_again_over_tcp_to_the_same_server() {
    let mut s = Sim::new(2, |_| {});
    s.resolve("big.test");
    s.run(&mut truncating);
    let want = forty_and_one();
    let want: Vec<&str> = want.iter().map(String::as_str).collect();
    assert_eq!(s.only_event(), ("big.test".into(), ok(&want)));
    let a: Vec<(usize, bool)> = s
        .seen
        .iter()
        .filter(|q| q.qtype == 1)
        .map(|q| (q.server, q.tcp))
        .collect();
    assert_eq!(a, [(0, false), (0, true)], "the same server, over TCP");
    let st = s.r.stats();
    assert_eq!((st.queries_sent, st.tcp_queries, st.retries), (3, 1, 0));
    assert_eq!(s.r.queue_len(0) + s.r.queue_len(1), 0);
    assert_eq!(s.r.poll_timeout(), None);
    // Cached like any answer.
    assert_eq!(s.resolve("big.test"), Resolve::Done(ok(&want)));
}

#[test]
fn a_server_honouring_edns_needs_no_tcp() {
    let mut s = Sim::new(1, |_| {});
    let mut edns = |q: &Seen| {
        let mut reply = truncating(&Seen {
            tcp: q.edns,
            ..q.clone()
        })?;
        if q.edns {
            assert!(reply.len() <= usize::from(crate::dns::EDNS_UDP_PAYLOAD));
            reply[11] = 1; // ARCOUNT: the OPT record appended below
            reply.extend_from_slice(&[0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0, 0, 0]);
        }
        Some(reply)
    };
    s.resolve("big.test");
    s.run(&mut edns);
    assert_eq!(s.only_event().1.unwrap().addrs.len(), 41);
    assert!(s.seen.iter().all(|q| !q.tcp));
    assert_eq!(s.r.stats().tcp_queries, 0);
}

#[test]
fn tcp_timeout_failure_and_wrong_answers_end_the_name_clearly() {
    // No answer over TCP: TcpTimeout, TCP_TIMEOUT after the switch, whatever AAAA says.
    let mut s = Sim::new(1, |c| c.total_timeout = Duration::from_secs(30));
    let start = s.now;
    let mut silent_tcp = |q: &Seen| match (q.tcp, q.qtype) {
        (true, _) => None,
        (false, 28) => Some(AnswerBuilder::new(q.id, &q.name, q.qtype).build()),
        _ => truncating(q),
    };
    s.resolve("big.test");
    s.run(&mut silent_tcp);
    assert_eq!(
        s.only_event(),
        ("big.test".into(), Err(DnsError::TcpTimeout))
    );
    assert_eq!(s.now - start, TCP_TIMEOUT);
    assert_eq!(s.r.stats().timeouts, 1);
    assert_eq!(s.resolve("big.test"), Resolve::Pending, "not cached");

    // Within the name's deadline, however short.
    let mut s = Sim::new(1, |c| c.total_timeout = Duration::from_millis(700));
    let start = s.now;
    s.resolve("big.test");
    s.run(&mut silent_tcp);
    assert_eq!(s.only_event().1, Err(DnsError::TcpTimeout));
    assert_eq!(s.now - start, Duration::from_millis(700));

    // The loop says the connection failed; an answer to another question; TC over TCP.
    for (case, want) in [
        ("failed", DnsError::TcpFailed),
        ("other question", DnsError::TcpFailed),
        ("truncated again", DnsError::Truncated),
    ] {
        let mut s = Sim::new(1, |_| {});
        s.resolve("big.test");
        let t = s.r.poll_transmit().unwrap();
        let id = u16::from_be_bytes([t.payload[0], t.payload[1]]);
        let tc = AnswerBuilder::with_flags(id, 0x8380, "big.test", 1).build();
        s.r.handle_datagram(0, s.servers[0], &tc, s.now);
        let q = s.r.poll_tcp_query().expect("a TCP query");
        assert_eq!((q.server, s.r.poll_tcp_query()), (0, None));
        // The same ID over UDP is not taken for the TCP answer.
        let udp = AnswerBuilder::new(q.id, "big.test", 1).a("big.test", 1, [6, 6, 6, 6]);
        s.r.handle_datagram(0, s.servers[0], &udp.build(), s.now);
        match case {
            "failed" => s.r.handle_tcp_failed(0, q.id, s.now),
            "other question" => {
                let p = AnswerBuilder::new(q.id, "evil.test", 1).a("evil.test", 1, [6, 6, 6, 6]);
                s.r.handle_tcp_answer(0, q.id, &p.build(), s.now);
            }
            _ => {
                let p = AnswerBuilder::with_flags(q.id, 0x8380, "big.test", 1);
                s.r.handle_tcp_answer(0, q.id, &p.build(), s.now);
            }
        }
        // The AAAA question: no record.
        s.run(&mut |q: &Seen| Some(AnswerBuilder::new(q.id, &q.name, q.qtype).build()));
        assert_eq!(s.only_event(), ("big.test".into(), Err(want)), "{case}");
        // Late news about the finished query changes nothing.
        s.r.handle_tcp_failed(0, q.id, s.now);
        s.r.handle_tcp_answer(0, q.id, &[0; 12], s.now);
        assert_eq!(s.r.poll_event(), None, "{case}");
    }
}

#[test]
fn a_name_with_a_and_aaaa_gives_both_ipv4_first() {
    let mut s = Sim::new(1, |_| {});
    let mut both = |q: &Seen| {
        let b = AnswerBuilder::new(q.id, &q.name, q.qtype);
        Some(match q.qtype {
            1 => b.a("dual.test", 40, [192, 0, 2, 7]).build(),
            _ => b
                .aaaa("dual.test", 20, "2001:db8::7".parse().unwrap())
                .build(),
        })
    };
    s.resolve("dual.test");
    s.run(&mut both);
    assert_eq!(
        s.only_event(),
        ("dual.test".into(), ok(&["192.0.2.7", "2001:db8::7"]))
    );
    // Cached for the smaller TTL.
    s.now += Duration::from_secs(19);
    assert!(matches!(s.resolve("dual.test"), Resolve::Done(Ok(_))));
    s.now += Duration::from_secs(1);
    assert_eq!(s.resolve("dual.test"), Resolve::Pending);
}

#[test]
fn a_lost_aaaa_answer_costs_at_most_aaaa_grace() {
    let mut s = Sim::new(1, |_| {});
    let start = s.now;
    let mut no_aaaa = |q: &Seen| if q.qtype == 28 { None } else { zone(q) };
    s.resolve("x.a.test");
    s.run(&mut no_aaaa);
    assert_eq!(s.only_event(), ("x.a.test".into(), ok(&["192.0.2.1"])));
    assert_eq!(s.now - start, AAAA_GRACE);
    assert_eq!(s.resolve("x.a.test"), Resolve::Done(ok(&["192.0.2.1"])));
}

#[test]
fn nxdomain_ends_the_name_without_waiting_for_the_other_family() {
    let mut s = Sim::new(1, |_| {});
    let start = s.now;
    let mut nx_a = |q: &Seen| if q.qtype == 28 { None } else { zone(q) };
    s.resolve("nx.test");
    s.run(&mut nx_a);
    assert_eq!(s.only_event(), ("nx.test".into(), Err(DnsError::NxDomain)));
    assert_eq!(s.now, start);
    assert_eq!(s.r.poll_timeout(), None, "the AAAA lookup was dropped");
    assert_eq!(s.r.queue_len(0), 0);
}

#[test]
fn formerr_to_edns_is_asked_once_more_without_it() {
    let mut s = Sim::new(1, |_| {});
    let mut old = |q: &Seen| {
        if q.edns {
            Some(AnswerBuilder::with_flags(q.id, 0x8181, &q.name, q.qtype).build())
        } else {
            zone(q)
        }
    };
    s.resolve("old.a.test");
    s.run(&mut old);
    assert_eq!(s.only_event(), ("old.a.test".into(), ok(&["192.0.2.1"])));
    let edns: Vec<bool> = s
        .seen
        .iter()
        .filter(|q| q.qtype == 1)
        .map(|q| q.edns)
        .collect();
    assert_eq!(edns, [true, false]);
    // FORMERR to the plain query too: the server will not answer.
    let mut s = Sim::new(1, |_| {});
    let mut broken =
        |q: &Seen| Some(AnswerBuilder::with_flags(q.id, 0x8181, &q.name, q.qtype).build());
    s.resolve("old.a.test");
    s.run(&mut broken);
    assert_eq!(s.only_event().1, Err(DnsError::FormErr));
    assert_eq!(s.seen.len(), 4);
}

/// A crawl starting from many seeds asks for many names at once: past the cap, names wait
/// and go out as earlier ones end, so the server never has more than the cap's queries to
/// answer, and every name still resolves once.
#[test]
fn names_past_the_cap_wait_and_go_out_as_earlier_ones_end() {
    let mut s = Sim::new(1, |c| c.max_names_in_flight = 2);
    let names: Vec<String> = (0..5).map(|i| format!("n{i}.a.test")).collect();
    for n in &names {
        assert_eq!(s.resolve(n), Resolve::Pending);
    }
    assert_eq!(s.r.pending(), 5);
    let mut first = Vec::new();
    while let Some(t) = s.r.poll_transmit() {
        first.push(s.see(&t.payload, t.server, false));
    }
    let asked: Vec<&str> = first.iter().map(|q| q.name.as_str()).collect();
    assert_eq!(asked, ["n0.a.test", "n0.a.test", "n1.a.test", "n1.a.test"]);
    assert_eq!(s.r.queue_len(0), 4);
    // The first name's answers end it, and the third name goes out in its place.
    for q in first.iter().filter(|q| q.name == "n0.a.test") {
        let reply = zone(q).unwrap();
        s.r.handle_datagram(0, s.servers[0], &reply, s.now);
    }
    assert_eq!(s.r.queue_len(0), 4);
    let next =
        s.r.poll_transmit()
            .map(|t| s.see(&t.payload, t.server, false));
    assert_eq!(next.map(|q| q.name), Some("n2.a.test".into()));
    // The rest, answered as they come.
    for q in first.iter().filter(|q| q.name == "n1.a.test") {
        let reply = zone(q).unwrap();
        s.r.handle_datagram(0, s.servers[0], &reply, s.now);
    }
    let pending: Vec<Seen> = s.seen.iter().skip(4).cloned().collect();
    for q in &pending {
        let reply = zone(q).unwrap();
        s.r.handle_datagram(0, s.servers[0], &reply, s.now);
    }
    s.run(&mut zone);
    let mut done: Vec<String> = s.events.iter().map(|(n, _)| n.clone()).collect();
    done.sort();
    assert_eq!(done, names);
    assert!(s.events.iter().all(|(_, r)| *r == ok(&["192.0.2.1"])));
    assert_eq!(s.r.stats().queries_sent, 10, "one A and one AAAA per name");
    assert_eq!(s.r.stats().names_waited, 3);
    assert_eq!((s.r.pending(), s.r.poll_timeout()), (0, None));
}

/// A name that waits for its turn gets no more time than one sent at once: behind a server
/// that never answers, it fails at its own deadline without a query of its own, and a
/// second caller of it gets the same one result.
#[test]
fn a_waiting_name_fails_at_its_deadline_and_is_shared() {
    let timeout = Duration::from_secs(10);
    let mut s = Sim::new(1, |c| {
        c.max_names_in_flight = 1;
        c.total_timeout = timeout;
    });
    let t0 = s.now;
    assert_eq!(s.resolve("first.test"), Resolve::Pending);
    assert_eq!(s.resolve("second.test"), Resolve::Pending);
    assert_eq!(s.resolve("SECOND.test."), Resolve::Pending);
    s.run(&mut |_| None);
    // Within a timer's least step of the deadline (the backoff's sum rounds).
    assert!(s.now + MIN_DELAY >= t0 + timeout && s.now <= t0 + timeout + MIN_DELAY);
    assert!(
        s.seen.iter().all(|q| q.name == "first.test"),
        "{:?}",
        s.seen
    );
    let mut ended = s.events.clone();
    ended.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        ended,
        [
            ("first.test".into(), Err(DnsError::Timeout)),
            ("second.test".into(), Err(DnsError::Timeout))
        ]
    );
    assert_eq!((s.r.pending(), s.r.poll_timeout()), (0, None));
    // Nothing is left waiting: a new name goes out at once.
    assert_eq!(s.resolve("third.test"), Resolve::Pending);
    assert!(s.r.poll_transmit().is_some());
}
