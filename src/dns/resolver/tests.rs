use super::*;
use crate::dns::message::tests::AnswerBuilder;
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

    /// Delivers every queued query to the fake server and its answers back, firing timers
    /// when nothing else is left, until the resolver is idle or `until` passes.
    fn drive(&mut self, server: &mut FakeServer, until: Option<Instant>) {
        for _ in 0..MAX_STEPS {
            if let Some(t) = self.r.poll_transmit() {
                let p = dns_parser::Packet::parse(&t.payload).expect("our query parses");
                let seen = Seen {
                    at: self.now,
                    server: t.server,
                    id: p.header.id,
                    name: p.questions[0].qname.to_string(),
                    qtype: p.questions[0].qtype as u16,
                };
                self.seen.push(seen.clone());
                if let Some(reply) = server(&seen) {
                    let from = self.servers[t.server];
                    self.r.handle_datagram(t.server, from, &reply, self.now);
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
    assert_eq!(s.seen.len(), 1, "one query for both callers");
    assert_eq!(s.only_event(), ("www.a.test".into(), ok(&["192.0.2.1"])));
    assert_eq!(s.r.pending(), 0);
    assert_eq!(s.r.queue_len(0) + s.r.queue_len(1), 0);
    assert_eq!(s.r.poll_timeout(), None);
    // Now cached.
    assert_eq!(s.resolve("www.a.test"), Resolve::Done(ok(&["192.0.2.1"])));
    let st = s.r.stats();
    assert_eq!((st.queries_sent, st.cache_hits, st.cache_misses), (1, 1, 2));
}

#[test]
fn new_queries_go_to_the_shortest_queue() {
    let mut s = Sim::new(3, |_| {});
    for (i, name) in ["a.test", "b.test", "c.test", "d.test"].iter().enumerate() {
        assert_eq!(s.resolve(name), Resolve::Pending);
        let t = s.r.poll_transmit().unwrap();
        assert_eq!(t.server, i % 3, "{name}");
    }
    assert_eq!(
        (
            s.r.queue_len(0),
            s.r.queue_len(1),
            s.r.queue_len(2),
            s.r.queue_len(9)
        ),
        (2, 1, 1, 0)
    );
}

#[test]
fn retries_use_fresh_ids_next_server_and_doubling_delays_then_time_out() {
    let mut s = Sim::new(2, |_| {});
    let start = s.now;
    s.resolve("silent.test");
    s.run(&mut |_| None);
    assert_eq!(s.seen.len(), 5);
    let servers: Vec<usize> = s.seen.iter().map(|q| q.server).collect();
    assert_eq!(servers, vec![0, 1, 0, 1, 0]);
    let mut ids: Vec<u16> = s.seen.iter().map(|q| q.id).collect();
    ids.dedup();
    assert_eq!(ids.len(), 5, "every retry has a fresh ID");
    let gaps: Vec<Duration> = s.seen.windows(2).map(|w| w[1].at - w[0].at).collect();
    let d = gaps[0];
    assert!(
        d > Duration::from_millis(300) && d < Duration::from_millis(350),
        "{d:?}"
    );
    for (i, g) in gaps.iter().enumerate() {
        assert_eq!(*g, d * (1 << i));
    }
    assert_eq!(
        s.only_event(),
        ("silent.test".into(), Err(DnsError::Timeout))
    );
    let total = s.now - start;
    assert!(total <= Duration::from_secs(10) && total > Duration::from_millis(9_900));
    let st = s.r.stats();
    assert_eq!((st.queries_sent, st.retries, st.timeouts), (5, 4, 1));
    // Timeouts are not cached.
    assert_eq!(s.resolve("silent.test"), Resolve::Pending);
}

#[test]
fn datagrams_not_matching_an_outstanding_query_are_dropped() {
    let mut s = Sim::new(2, |_| {});
    s.resolve("www.a.test");
    let t = s.r.poll_transmit().unwrap();
    let id = u16::from_be_bytes([t.payload[0], t.payload[1]]);
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
    assert_eq!(s.seen.len(), 2);
}

#[test]
fn no_a_record_falls_back_to_aaaa() {
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
    assert_eq!(names, vec!["www.site.test", "edge.cdn.a.test"]);
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
    assert_eq!(s.seen.len(), 2);

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
    assert_eq!(s.seen.len(), 4, "the name and 3 re-queried targets");
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
