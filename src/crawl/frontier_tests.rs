//! The frontier's tests: order, politeness, parking, holds and spilling.

use super::*;

fn cfg(b: usize) -> FrontierConfig {
    FrontierConfig {
        priorities: 3,
        back_queues: b,
        ram_items: usize::MAX,
        rank_within_hosts: false,
    }
}

use crate::codec::{get_bytes, get_varint, put_bytes, put_varint};

// The item types these tests queue.
impl Spillable for i32 {
    fn encode(&self, out: &mut Vec<u8>) {
        put_varint(out, u64::from(*self as u32));
    }
    fn decode(input: &mut &[u8]) -> Option<Self> {
        Some(u32::try_from(get_varint(input)?).ok()? as i32)
    }
}
impl Spillable for (i32, i32) {
    fn encode(&self, out: &mut Vec<u8>) {
        self.0.encode(out);
        self.1.encode(out);
    }
    fn decode(input: &mut &[u8]) -> Option<Self> {
        Some((i32::decode(input)?, i32::decode(input)?))
    }
}
impl Spillable for String {
    fn encode(&self, out: &mut Vec<u8>) {
        put_bytes(out, self.as_bytes());
    }
    fn decode(input: &mut &[u8]) -> Option<Self> {
        String::from_utf8(get_bytes(input)?.to_vec()).ok()
    }
}
impl Spillable for &'static str {
    fn encode(&self, out: &mut Vec<u8>) {
        put_bytes(out, self.as_bytes());
    }
    fn decode(input: &mut &[u8]) -> Option<Self> {
        Some(String::leak(String::decode(input)?))
    }
}

/// Pops everything (done at once, no gaps), recording the order.
/// A continuous crawl's order within a host: its new URLs first, then its revisits in
/// the order they came (their due order), whether the host had a back queue when they
/// came or not; and a host with revisits only gets a queue too.
#[test]
fn new_urls_go_before_revisits_and_revisits_keep_their_order() {
    let t0 = Instant::now();
    let mut f: Frontier<i32> = Frontier::new(&cfg(4));
    f.push_later("a", 100);
    f.push_later("b", 200);
    f.push("a", 0, 1);
    f.push_later("a", 101);
    f.push("a", 2, 2);
    assert_eq!((f.len(), f.later_len()), (5, 3));
    let mut got = Vec::new();
    let mut now = t0;
    // Bounded: five items, each popped then done.
    for _ in 0..20 {
        match f.pop(now) {
            Pop::Ready { queue, host, item } => {
                got.push((host, item));
                f.done(queue, now, Duration::from_millis(10));
            }
            Pop::Wait(t) => now = t,
            Pop::Busy | Pop::Empty => break,
        }
    }
    let of = |h: &str| -> Vec<i32> {
        got.iter()
            .filter(|(x, _)| x == h)
            .map(|(_, i)| *i)
            .collect()
    };
    assert_eq!(of("a"), [1, 2, 100, 101]);
    assert_eq!(of("b"), [200]);
    assert_eq!((f.len(), f.later_len()), (0, 0));
}

/// A host held outside its queue (a robots.txt hop from another host) is not popped
/// until released, and then only after the released gap; it cannot be held while it
/// waits out its gap or is being fetched.
#[test]
fn a_held_host_is_not_popped_until_released_and_then_spaced() {
    let t0 = Instant::now();
    let ms = Duration::from_millis;
    let mut f: Frontier<i32> = Frontier::new(&cfg(4));
    f.push("a", 0, 9);
    f.push("a", 0, 10);
    f.push("b", 0, 1);
    f.push("b", 0, 2);
    let Pop::Ready { item: 9, queue, .. } = f.pop(t0) else {
        panic!("a comes first");
    };
    f.done(queue, t0, ms(5000));
    // b's queue is in the heap and due: held, so only a, waiting, is left to pop.
    assert_eq!(f.hold("b", t0), Hold::Held);
    assert!(matches!(f.pop(t0), Pop::Wait(t) if t == t0 + ms(5000)));
    assert_eq!(f.hold("b", t0), Hold::Busy, "held already");
    f.release("b", t0 + ms(100), ms(1000));
    assert!(matches!(f.pop(t0 + ms(500)), Pop::Wait(t) if t == t0 + ms(1100)));
    let Pop::Ready { queue, item, .. } = f.pop(t0 + ms(1100)) else {
        panic!("b is due");
    };
    assert_eq!(item, 1);
    // Being fetched: busy; then waiting out its gap: wait.
    assert_eq!(f.hold("b", t0 + ms(1100)), Hold::Busy);
    f.done(queue, t0 + ms(1200), ms(1000));
    assert_eq!(f.hold("b", t0 + ms(1500)), Hold::Wait(t0 + ms(2200)));
    assert_eq!(f.hold("b", t0 + ms(2200)), Hold::Held);
    f.release("b", t0 + ms(2300), ms(1000));
    assert!(matches!(f.pop(t0 + ms(2300)), Pop::Wait(t) if t == t0 + ms(3300)));
}

/// A host held without a back queue keeps the URLs that come meanwhile out of the heap,
/// and its released gap holds for them; a host that left the frontier is held only after
/// its remembered gap.
#[test]
fn a_host_held_without_a_queue_keeps_its_new_urls_until_released() {
    let t0 = Instant::now();
    let ms = Duration::from_millis;
    let mut f: Frontier<i32> = Frontier::new(&cfg(4));
    assert_eq!(f.hold("c", t0), Hold::Held);
    f.push("c", 0, 7);
    f.push("d", 0, 8);
    let Pop::Ready { item: 8, queue, .. } = f.pop(t0) else {
        panic!("d is due, c held");
    };
    f.done(queue, t0, ms(1000));
    assert!(matches!(f.pop(t0), Pop::Busy));
    f.release("c", t0 + ms(50), ms(1000));
    assert!(matches!(f.pop(t0 + ms(60)), Pop::Wait(t) if t == t0 + ms(1050)));
    assert!(matches!(f.pop(t0 + ms(1050)), Pop::Ready { item: 7, .. }));
    // d's queue emptied: its next contact is remembered, and a hold waits for it.
    assert_eq!(f.hold("d", t0 + ms(500)), Hold::Wait(t0 + ms(1000)));
    // Releasing a host never held changes nothing.
    f.release("e", t0, ms(5000));
    assert_eq!(f.hold("e", t0), Hold::Held);
}

/// A parked host held and released stays parked: it gets its place back once, in turn,
/// and is never in the heap twice.
#[test]
fn a_parked_host_held_and_released_comes_back_once() {
    let t0 = Instant::now();
    let ms = Duration::from_millis;
    let mut f: Frontier<i32> = Frontier::new(&cfg(1));
    let n = TURN_PAGES as i32 + 2;
    for i in 0..n {
        f.push("a", 0, i);
    }
    f.push("b", 0, -1);
    let mut now = t0;
    // a's turn: TURN_PAGES fetches, then it is parked for b.
    for _ in 0..TURN_PAGES {
        let Pop::Ready { queue, host, .. } = f.pop(now) else {
            panic!("a is due");
        };
        assert_eq!(host, "a");
        f.done(queue, now, ms(1));
        now += ms(1);
    }
    assert_eq!(f.hold("a", now), Hold::Held);
    f.release("a", now, ms(100));
    // b has the one place: a, parked, waits for it even past its gap.
    let Pop::Ready { queue, host, .. } = f.pop(now) else {
        panic!("b is due");
    };
    assert_eq!(host, "b");
    assert!(matches!(f.pop(now + ms(200)), Pop::Busy));
    f.done(queue, now, Duration::ZERO);
    let mut hosts = vec![host];
    // Bounded: b's one URL and a's last two.
    for _ in 0..10 {
        match f.pop(now) {
            Pop::Ready { queue, host, .. } => {
                hosts.push(host);
                f.done(queue, now, Duration::ZERO);
            }
            Pop::Wait(t) => now = t,
            Pop::Busy | Pop::Empty => break,
        }
    }
    assert_eq!(hosts, ["b", "a", "a"]);
    assert!(
        now >= t0 + ms(u64::from(TURN_PAGES) + 100),
        "a waited its released gap"
    );
}

fn drain(f: &mut Frontier<(i32, i32)>, t0: Instant) -> Vec<(i32, i32)> {
    let mut got = Vec::new();
    for _ in 0..1_000_000 {
        match f.pop(t0) {
            Pop::Ready { queue, item, .. } => {
                got.push(item);
                f.done(queue, t0, Duration::ZERO);
            }
            Pop::Empty => break,
            other => panic!("{other:?}"),
        }
    }
    got
}

#[test]
fn a_spilling_frontier_gives_the_same_order_with_little_in_memory() {
    let t0 = Instant::now();
    let fill = |f: &mut Frontier<(i32, i32)>| {
        for i in 0..20_000i32 {
            let host = i % 97;
            f.push(&format!("h{host}"), (i % 3) as usize, (host, i));
        }
    };
    let mut plain = Frontier::new(&cfg(8));
    fill(&mut plain);
    let mut config = cfg(8);
    config.ram_items = 1000;
    let mut spilling = Frontier::with_store(
        &config,
        Box::new(crate::crawl::spill::MemorySpill::default()),
    );
    fill(&mut spilling);
    assert!(spilling.in_ram() <= 1000, "{} in memory", spilling.in_ram());
    assert_eq!(spilling.len(), 20_000);
    let a = drain(&mut plain, t0);
    let b = drain(&mut spilling, t0);
    assert_eq!(a.len(), 20_000);
    assert_eq!(a, b);
    assert!(spilling.take_error().is_none());
    assert_eq!(spilling.in_ram(), 0);
}

#[test]
fn one_url_per_host_in_flight_and_gaps_respected() {
    let t0 = Instant::now();
    let mut f = Frontier::new(&cfg(4));
    for i in 0..3 {
        f.push("a", 0, format!("a{i}"));
    }
    f.push("b", 0, "b0".to_string());
    let Pop::Ready {
        queue: qa,
        host,
        item,
    } = f.pop(t0)
    else {
        panic!()
    };
    assert_eq!((host.as_str(), item.as_str()), ("a", "a0"));
    let Pop::Ready {
        queue: qb, item, ..
    } = f.pop(t0)
    else {
        panic!()
    };
    assert_eq!(item, "b0");
    assert!(matches!(f.pop(t0), Pop::Busy), "a is busy, b is busy");
    f.done(qa, t0, Duration::from_secs(2));
    f.done(qb, t0, Duration::from_secs(2));
    match f.pop(t0 + Duration::from_secs(1)) {
        Pop::Wait(t) => assert_eq!(t, t0 + Duration::from_secs(2)),
        other => panic!("{other:?}"),
    }
    let Pop::Ready { item, .. } = f.pop(t0 + Duration::from_secs(2)) else {
        panic!()
    };
    assert_eq!(item, "a1");
}

#[test]
fn a_host_that_returns_is_still_spaced() {
    let t0 = Instant::now();
    let mut f = Frontier::new(&cfg(2));
    f.push("a", 0, 1);
    let Pop::Ready { queue, .. } = f.pop(t0) else {
        panic!()
    };
    f.done(queue, t0, Duration::from_secs(5));
    assert!(matches!(f.pop(t0), Pop::Empty));
    f.push("a", 0, 2);
    match f.pop(t0 + Duration::from_secs(1)) {
        Pop::Wait(t) => assert_eq!(t, t0 + Duration::from_secs(5)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn more_hosts_than_back_queues_all_get_served() {
    let t0 = Instant::now();
    let mut f = Frontier::new(&cfg(2));
    for h in 0..10 {
        for i in 0..3 {
            f.push(&format!("h{h}"), 1, (h, i));
        }
    }
    assert_eq!(f.len(), 30);
    let mut got = drain(&mut f, t0);
    got.sort();
    let want: Vec<(i32, i32)> = (0..10).flat_map(|h| (0..3).map(move |i| (h, i))).collect();
    assert_eq!(got, want);
    assert!(f.is_empty());
    assert_eq!(f.active_hosts(), 0);
}

/// A huge host uses its turn and is parked while others wait: the small hosts are all
/// served before the huge one's last URL, and the huge one still ends with every URL.
#[test]
fn a_huge_host_yields_its_place_after_its_turn() {
    let t0 = Instant::now();
    let mut f = Frontier::new(&cfg(1));
    let huge = 3 * TURN_PAGES as i32;
    // The huge host has its queue when the rest of its URLs arrive (found on its first
    // page), so they join it; the small hosts wait in the front queues.
    f.push("huge", 1, (0, 0));
    let Pop::Ready { queue, item, .. } = f.pop(t0) else {
        panic!("first pop")
    };
    for i in 1..huge {
        f.push("huge", 1, (0, i));
    }
    for h in 1..4 {
        f.push(&format!("h{h}"), 1, (h, 0));
    }
    let mut order = vec![item];
    f.done(queue, t0, Duration::ZERO);
    order.extend(drain(&mut f, t0));
    assert_eq!(order.len(), huge as usize + 3);
    // One place: the huge host and the waiting ones take turns, one turn each.
    let small: Vec<usize> = (0..order.len()).filter(|&i| order[i].0 != 0).collect();
    let turn = TURN_PAGES as usize;
    assert_eq!(small, vec![turn, 2 * turn + 1, 3 * turn + 2], "{small:?}");
    // The huge host's URLs keep their order across its turns.
    let huge_order: Vec<i32> = order.iter().filter(|x| x.0 == 0).map(|x| x.1).collect();
    assert_eq!(huge_order, (0..huge).collect::<Vec<_>>());
    assert_eq!(f.active_hosts(), 0);
}

/// Alone, a huge host keeps its place past its turn: nobody waits for it.
#[test]
fn a_turn_ends_only_when_others_wait() {
    let t0 = Instant::now();
    let mut f = Frontier::new(&cfg(1));
    for i in 0..(TURN_PAGES as i32 + 10) {
        f.push("huge", 1, (0, i));
    }
    let mut n = 0;
    while let Pop::Ready { queue, .. } = f.pop(t0) {
        // The busy host still has URLs until its very last one.
        assert_eq!(f.has_queued(queue), n + 1 < TURN_PAGES as usize + 10);
        f.done(queue, t0, Duration::ZERO);
        n += 1;
    }
    assert_eq!(n, TURN_PAGES as usize + 10);
}

#[test]
fn high_priority_is_preferred() {
    let t0 = Instant::now();
    let mut f = Frontier::new(&cfg(1));
    for i in 0..20 {
        f.push(&format!("low{i}"), 2, 2);
        f.push(&format!("high{i}"), 0, 0);
    }
    let mut first_ten = Vec::new();
    for _ in 0..10 {
        let Pop::Ready { queue, item, .. } = f.pop(t0) else {
            panic!()
        };
        first_ten.push(item);
        f.done(queue, t0, Duration::ZERO);
    }
    let high = first_ten.iter().filter(|&&p| p == 0).count();
    assert!(high >= 7, "biased towards priority 0: {first_ten:?}");
    assert!(
        high < 10,
        "but lower priorities are not starved: {first_ten:?}"
    );
}

#[test]
fn push_front_puts_an_item_first() {
    let t0 = Instant::now();
    let mut f = Frontier::new(&cfg(1));
    f.push("a", 0, "page");
    let Pop::Ready { queue, item, .. } = f.pop(t0) else {
        panic!()
    };
    f.push("a", 0, "later");
    f.push_front(queue, item);
    f.done(queue, t0, Duration::ZERO);
    let Pop::Ready { item, .. } = f.pop(t0) else {
        panic!()
    };
    assert_eq!(item, "page");
}
