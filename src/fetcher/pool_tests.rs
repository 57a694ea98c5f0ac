//! The pool's scheduling decisions in simulated time: connections are `()`, the clock an
//! `Instant` advanced by hand, and each test plays the loop's part (insert on `Open`,
//! `set_active` on `Reuse`, `park_idle` or `remove` when a fetch ends).

use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use mio::Interest;

use super::pool::{Budgets, ConnEntry, ConnKey, ConnPool, ConnState, Slot};

const IDLE: Duration = Duration::from_secs(15);

fn key(server: u8, tls: Option<&str>) -> ConnKey {
    ConnKey {
        addr: SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, server)), 80),
        server_name: tls.map(str::to_string),
        origin: None,
    }
}

fn budgets(max_conns: usize, max_sockets: usize) -> Budgets {
    Budgets {
        max_conns,
        max_sockets,
        conns_per_server: 1,
    }
}

/// What the loop does with a slot for `fetch`: the connection now carrying it, or `None`
/// when it must wait.
fn take(pool: &mut ConnPool<()>, b: &Budgets, k: &ConnKey, fetch: usize) -> Option<usize> {
    match pool.slot_for(b, || k.clone()) {
        Slot::Wait => None,
        Slot::Reuse(conn) => {
            pool.set_active(conn, fetch);
            Some(conn)
        }
        Slot::Open { key, close } => {
            if let Some(c) = close {
                pool.remove(c)
                    .expect("the idle connection it names is open");
            }
            Some(pool.insert(ConnEntry {
                conn: (),
                key,
                state: ConnState::Active { fetch },
                registered: Interest::READABLE,
            }))
        }
    }
}

#[test]
fn max_conns_is_never_exceeded_and_always_used_while_work_waits() {
    // 12 servers, 5 fetches each, latencies 1..=7 ms; every response keeps its connection.
    let b = budgets(4, 8);
    let mut pool = ConnPool::<()>::new(8);
    let mut waiting: VecDeque<(usize, u8)> = (0..60).map(|f| (f, (f % 12) as u8)).collect();
    let mut live: Vec<(Instant, usize, u8)> = Vec::new();
    let mut now = Instant::now();
    let mut peak = 0;
    // Bounded: every round but the first ends at least one fetch.
    for _ in 0..=60 {
        // The loop's dispatch: each waiting fetch tried once, in order.
        for _ in 0..waiting.len() {
            let (f, server) = waiting.pop_front().expect("counted");
            match take(&mut pool, &b, &key(server, None), f) {
                Some(conn) => {
                    let latency = Duration::from_millis(1 + (f as u64 * 5) % 7);
                    live.push((now + latency, conn, server));
                }
                None => waiting.push_back((f, server)),
            }
        }
        assert!(pool.active() <= b.max_conns, "over max_conns");
        assert!(pool.len() <= b.max_sockets, "over max_sockets");
        peak = peak.max(pool.active());
        // Work-conserving: a fetch waits with room in flight only because its server is busy.
        if pool.active() < b.max_conns {
            for (_, server) in &waiting {
                assert!(
                    live.iter().any(|l| l.2 == *server),
                    "a fetch to an idle server waits with a connection slot free"
                );
            }
        }
        let Some(next) = live.iter().map(|l| l.0).min() else {
            break;
        };
        now = next;
        for &(_, conn, _) in live.iter().filter(|l| l.0 <= now) {
            pool.park_idle(conn, now + IDLE, true);
        }
        live.retain(|l| l.0 > now);
    }
    assert!(waiting.is_empty() && live.is_empty(), "all 60 fetches done");
    assert_eq!(peak, b.max_conns);
}

#[test]
fn a_second_fetch_to_a_host_reuses_its_idle_connection() {
    let b = budgets(4, 8);
    let mut pool = ConnPool::<()>::new(8);
    let now = Instant::now();
    let a = key(1, Some("a.test"));
    let first = take(&mut pool, &b, &a, 0).expect("room");
    pool.park_idle(first, now + IDLE, true);
    assert_eq!(pool.slot_for(&b, || a.clone()), Slot::Reuse(first));
    assert_eq!((pool.len(), pool.active()), (1, 1));
    // Busy again: a second fetch to the host waits for it rather than opening another
    // (one connection per server).
    assert_eq!(pool.slot_for(&b, || a.clone()), Slot::Wait);
    // Idle again: the same server under another TLS name cannot use it, and it is closed to
    // make room for that name's own connection.
    pool.set_active(first, 0);
    pool.remove(first);
    let conn = take(&mut pool, &b, &a, 1).expect("room");
    pool.park_idle(conn, now + IDLE, false);
    let other = key(1, Some("b.test"));
    assert_eq!(
        pool.slot_for(&b, || other.clone()),
        Slot::Open {
            key: other.clone(),
            close: Some(conn)
        }
    );
}

#[test]
fn an_idle_connection_expires_at_its_deadline_not_before() {
    let b = budgets(4, 8);
    let mut pool = ConnPool::<()>::new(8);
    let t0 = Instant::now();
    let conn = take(&mut pool, &b, &key(1, None), 0).expect("room");
    assert_eq!(
        pool.next_deadline(),
        None,
        "a busy connection has no idle deadline"
    );
    pool.park_idle(conn, t0 + IDLE, true);
    assert_eq!(pool.next_deadline(), Some(t0 + IDLE));
    assert_eq!(pool.expired(t0 + IDLE - Duration::from_nanos(1)), None);
    assert_eq!(pool.expired(t0 + IDLE), Some(conn));
    // What the loop's expiry does with it: closed, its server slot and deadline released.
    pool.remove(conn);
    assert_eq!((pool.len(), pool.next_deadline()), (0, None));
    assert_eq!(pool.open_to(&key(1, None).server()), 0);
    // Reused before its deadline, a connection does not expire at it.
    let conn = take(&mut pool, &b, &key(2, None), 1).expect("room");
    pool.park_idle(conn, t0 + IDLE, true);
    assert_eq!(take(&mut pool, &b, &key(2, None), 2), Some(conn));
    assert_eq!(pool.expired(t0 + IDLE * 2), None);
}

#[test]
fn a_full_socket_budget_closes_a_spare_connection_before_a_held_one() {
    let b = budgets(4, 2);
    let mut pool = ConnPool::<()>::new(2);
    let t0 = Instant::now();
    let held = take(&mut pool, &b, &key(1, None), 0).expect("room");
    let spare = take(&mut pool, &b, &key(2, None), 1).expect("room");
    // Every socket busy: a third server waits, though fetches could fly.
    assert_eq!(pool.slot_for(&b, || key(3, None)), Slot::Wait);
    // The held one expires first, yet the spare one goes: its host has nothing queued.
    pool.park_idle(held, t0 + IDLE, true);
    pool.park_idle(spare, t0 + IDLE * 2, false);
    assert_eq!(pool.expired(t0 + IDLE), Some(held));
    assert_eq!(
        pool.slot_for(&b, || key(3, None)),
        Slot::Open {
            key: key(3, None),
            close: Some(spare)
        }
    );
}

#[test]
fn the_in_flight_budget_is_checked_before_a_key_is_built() {
    let b = budgets(1, 8);
    let mut pool = ConnPool::<()>::new(8);
    take(&mut pool, &b, &key(1, None), 0).expect("room");
    let slot = pool.slot_for(&b, || panic!("no key is needed at max_conns"));
    assert_eq!(slot, Slot::Wait);
}

/// Through a proxy, politeness counts the site behind it, never the proxy: two sites share
/// the proxy's address and both get a connection; a second one to the same site (by name,
/// as the proxy resolves it) waits; each site's tunnel is reused by that site only.
#[test]
fn behind_a_proxy_politeness_is_per_site() {
    use super::fetch::Origin;
    let proxy: SocketAddr = "127.0.0.1:3128".parse().unwrap();
    let via = |site: &str| ConnKey {
        addr: proxy,
        server_name: Some(site.to_string()),
        origin: Some(Origin::Name(site.into(), 443)),
    };
    let mut pool: ConnPool<()> = ConnPool::new(8);
    let b = budgets(8, 8);
    let t0 = Instant::now();
    for site in ["a.example", "b.example"] {
        let Slot::Open { key, close: None } = pool.slot_for(&b, || via(site)) else {
            panic!("{site} gets its own connection through the proxy");
        };
        let c = pool.insert(ConnEntry {
            conn: (),
            key,
            state: ConnState::Active { fetch: 0 },
            registered: mio::Interest::READABLE,
        });
        assert_eq!(pool.open_to(&via(site).server()), 1);
        if site == "a.example" {
            assert_eq!(pool.slot_for(&b, || via(site)), Slot::Wait);
            pool.park_idle(c, t0 + IDLE, true);
            assert_eq!(pool.slot_for(&b, || via(site)), Slot::Reuse(c));
        }
    }
    assert_eq!(pool.open_to(&super::pool::Server::Ip(proxy.ip())), 0);
}
