//! The frontier: which URL to fetch next, politely (ARCHITECTURE §8, Mercator).
//!
//! - F **front queues** (FIFO each) hold URLs by priority; a biased selector prefers high ones
//!   (priority 0 is highest: seeds and shallow links).
//! - **back queues**, each non-empty while assigned and holding URLs of a single host; a
//!   table maps host → back queue. At most B of them are *active* (BUbiNG's workbench): in
//!   the heap or being fetched. B is the crawl's socket budget, so every active host can keep
//!   its connection while it waits out its politeness delay.
//! - A **heap** keyed by the earliest time `t_e` each active back queue's host may be
//!   contacted again.
//!
//! A host's turn ends when its queue empties (the queue is freed) or, while other hosts wait
//! for a place, after [`TURN_PAGES`] fetches: its queue is then *parked* with its URLs and
//! becomes active again when a place frees up (Heritrix rotates its queues the same way), so
//! one huge host cannot hold a place forever while others starve.
//!
//! A host popped from the heap is *busy* until the caller reports [`Frontier::done`] with the
//! gap to wait (`max(delay, factor × fetch duration, crawl-delay)`, computed by the crawl
//! layer), so one host never has two fetches in flight and consecutive requests to it are
//! spaced. When a back queue empties it is reassigned to the next host drawn from the front
//! queues; the host's next-contact time is remembered, so a host that comes back later is
//! still spaced. This is sans-IO: time comes in as `now`.
//!
//! Every queue is a [`SpillQueue`]: past `ram_items` URLs in memory, the middle of the queues
//! moves in batches to a [`SpillStore`] (the store's segment files), so the frontier's RAM is
//! bounded by configuration, not by the crawl's size. A spill store failure stops taking new
//! work ([`Frontier::take_error`]).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::io;
use std::time::{Duration, Instant};

use super::spill::{SpillQueue, SpillStore, Spillable, BATCH_ITEMS};
use crate::codec::{get_bytes, put_bytes};

/// Fetches a host may make in one turn while other hosts wait for a place among the active
/// ones. At the default 1 s delay a turn is about 8 minutes; with no delay, a few seconds.
pub const TURN_PAGES: u32 = 500;

/// Identifies a back queue while its host is busy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BackQueueId(usize);

#[derive(Clone, Debug)]
pub struct FrontierConfig {
    /// Number of front queues (priorities).
    pub priorities: usize,
    /// Active back queues (hosts being worked on at once): the socket budget, so that each
    /// can keep its connection.
    pub back_queues: usize,
    /// URLs kept in memory before the queues' middles spill to the store.
    pub ram_items: usize,
}

/// What the frontier offers.
#[derive(Debug)]
pub enum Pop<T> {
    /// Fetch this now; report [`Frontier::done`] for `queue` when finished.
    Ready {
        queue: BackQueueId,
        host: String,
        item: T,
    },
    /// Nothing may be fetched before this instant.
    Wait(Instant),
    /// Every host with URLs is busy: wait for a `done`.
    Busy,
    /// No URLs at all.
    Empty,
}

struct Queued<T> {
    host: String,
    item: T,
}

impl<T: Spillable> Spillable for Queued<T> {
    fn encode(&self, out: &mut Vec<u8>) {
        put_bytes(out, self.host.as_bytes());
        self.item.encode(out);
    }

    fn decode(input: &mut &[u8]) -> Option<Self> {
        let host = String::from_utf8(get_bytes(input)?.to_vec()).ok()?;
        Some(Queued {
            host,
            item: T::decode(input)?,
        })
    }
}

struct BackQueue<T> {
    /// The host this queue serves; `None` while the queue is free.
    host: Option<String>,
    urls: SpillQueue<T>,
    /// Fetches reported done in this turn.
    turn: u32,
}

impl<T> BackQueue<T> {
    fn new() -> BackQueue<T> {
        BackQueue {
            host: None,
            urls: SpillQueue::default(),
            turn: 0,
        }
    }
}

/// The store used when none is given: nothing spills, so it is never asked.
struct NoSpill;

impl SpillStore for NoSpill {
    fn write_batch(&mut self, _: &[u8]) -> io::Result<super::spill::BatchRef> {
        Err(io::Error::other("frontier has no spill store"))
    }

    fn take_batch(&mut self, _: super::spill::BatchRef, _: &mut Vec<u8>) -> io::Result<()> {
        Err(io::Error::other("frontier has no spill store"))
    }
}

pub struct Frontier<T> {
    front: Vec<SpillQueue<Queued<T>>>,
    /// Every back queue: active, parked or free (grows to the most ever in use at once).
    back: Vec<BackQueue<T>>,
    free: Vec<usize>,
    /// Queues in the heap or being fetched; at most `max_active`.
    active: usize,
    max_active: usize,
    /// Queues whose turn ended with URLs left, in the order they get a place again, each
    /// with the count of activations when it was parked.
    parked: VecDeque<(usize, u64)>,
    /// Activations so far: a parked queue comes back once every place has turned over
    /// since it left (or when no new host waits), so new hosts and rotated ones take turns.
    activations: u64,
    host_table: HashMap<String, usize>,
    heap: BinaryHeap<Reverse<(Instant, usize)>>,
    /// Earliest next contact of hosts that currently have no back queue.
    host_next: HashMap<String, Instant>,
    /// Deterministic biased selection: position in a cycle where priority p gets 2^(F-1-p) turns.
    bias_tick: u64,
    len: usize,
    /// Items in spilled batches (the rest of `len` is in memory).
    spilled: usize,
    ram_items: usize,
    store: Box<dyn SpillStore>,
    buf: Vec<u8>,
    /// The first spill store failure.
    error: Option<io::Error>,
}

impl<T: Spillable> Frontier<T> {
    /// A frontier that keeps everything in memory.
    pub fn new(config: &FrontierConfig) -> Frontier<T> {
        let mut f = Frontier::with_store(config, Box::new(NoSpill));
        f.ram_items = usize::MAX;
        f
    }

    /// A frontier whose queues spill to `store` past `config.ram_items`.
    pub fn with_store(config: &FrontierConfig, store: Box<dyn SpillStore>) -> Frontier<T> {
        let priorities = config.priorities.clamp(1, 16);
        let b = config.back_queues.max(1);
        Frontier {
            front: (0..priorities).map(|_| SpillQueue::default()).collect(),
            back: Vec::new(),
            free: Vec::new(),
            active: 0,
            max_active: b,
            parked: VecDeque::new(),
            activations: 0,
            host_table: HashMap::new(),
            heap: BinaryHeap::new(),
            host_next: HashMap::new(),
            bias_tick: 0,
            len: 0,
            spilled: 0,
            ram_items: config.ram_items.max(BATCH_ITEMS),
            store,
            buf: Vec::new(),
            error: None,
        }
    }

    /// URLs held in memory (the rest are spilled).
    pub fn in_ram(&self) -> usize {
        self.len - self.spilled
    }

    /// The first spill store failure, if any (the crawl stops on it).
    pub fn take_error(&mut self) -> Option<io::Error> {
        self.error.take()
    }

    /// Spills queue middles until memory is back under three quarters of the budget: the
    /// largest in-memory queues first, each keeping a short head for the next pops.
    fn spill_if_over(&mut self) {
        if self.error.is_some() || self.in_ram() <= self.ram_items {
            return;
        }
        let target = self.ram_items / 4 * 3;
        let keep_head = BATCH_ITEMS / 4;
        let mut order: Vec<(usize, bool, usize)> = self
            .front
            .iter()
            .enumerate()
            .map(|(i, q)| (q.in_ram(), true, i))
            .chain(
                self.back
                    .iter()
                    .enumerate()
                    .map(|(i, q)| (q.urls.in_ram(), false, i)),
            )
            .filter(|&(n, _, _)| n > keep_head + BATCH_ITEMS)
            .collect();
        order.sort_unstable_by_key(|&(n, _, _)| std::cmp::Reverse(n));
        for (_, front, i) in order {
            if self.in_ram() <= target {
                break;
            }
            let res = if front {
                self.front[i].spill(&mut *self.store, keep_head, &mut self.buf)
            } else {
                self.back[i]
                    .urls
                    .spill(&mut *self.store, keep_head, &mut self.buf)
            };
            match res {
                Ok(n) => self.spilled += n,
                Err(e) => {
                    self.error = Some(e);
                    return;
                }
            }
        }
    }

    /// URLs waiting (front and back), not counting those being fetched.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Hosts that currently hold a back queue (active or parked).
    pub fn active_hosts(&self) -> usize {
        self.host_table.len()
    }

    /// Whether the busy host of `queue` has more URLs queued (its connection is worth
    /// keeping for them).
    pub fn has_queued(&self, queue: BackQueueId) -> bool {
        !self.back[queue.0].urls.is_empty()
    }

    /// Adds a URL of `host` at `priority` (0 highest; clamped to the lowest queue).
    pub fn push(&mut self, host: &str, priority: usize, item: T) {
        self.len += 1;
        if let Some(&q) = self.host_table.get(host) {
            // The host already has a back queue: Mercator's refill would route it there.
            self.back[q].urls.push_back(item);
        } else {
            let p = priority.min(self.front.len() - 1);
            self.front[p].push_back(Queued {
                host: host.to_string(),
                item,
            });
        }
        self.spill_if_over();
    }

    /// Takes the oldest item of a back queue, reading a spilled batch back if needed.
    fn take_back(&mut self, q: usize) -> Option<T> {
        let before = self.back[q].urls.in_ram();
        let len_before = self.back[q].urls.len();
        match self.back[q].urls.pop_front(&mut *self.store, &mut self.buf) {
            Ok(item) => {
                // A batch read back moved items from the store to memory.
                let loaded = (self.back[q].urls.in_ram() + usize::from(item.is_some()))
                    .saturating_sub(before);
                self.spilled -= loaded.min(self.spilled);
                debug_assert_eq!(
                    len_before - usize::from(item.is_some()),
                    self.back[q].urls.len()
                );
                item
            }
            Err(e) => {
                self.error.get_or_insert(e);
                None
            }
        }
    }

    /// The next URL due at `now`. Its host is busy until [`Frontier::done`].
    pub fn pop(&mut self, now: Instant) -> Pop<T> {
        self.refill(now);
        match self.heap.peek() {
            Some(&Reverse((t, _))) if t > now => return Pop::Wait(t),
            Some(_) => {}
            None if self.len == 0 => return Pop::Empty,
            None => return Pop::Busy,
        }
        // Invariant: peek() just returned Some.
        let Reverse((_, q)) = self.heap.pop().expect("heap is non-empty");
        let Some(item) = self.take_back(q) else {
            if self.error.is_some() {
                return Pop::Empty;
            }
            // Unreachable by construction (queues in the heap are non-empty), but a free
            // queue in the heap would only be skipped, never crash.
            return self.pop(now);
        };
        self.len -= 1;
        let host = self.back[q].host.clone().unwrap_or_default();
        Pop::Ready {
            queue: BackQueueId(q),
            host,
            item,
        }
    }

    /// Puts an item back at the head of a busy host's queue (e.g. robots.txt must come first).
    pub fn push_front(&mut self, queue: BackQueueId, item: T) {
        self.len += 1;
        self.back[queue.0].urls.push_front(item);
    }

    /// The host of `queue` finished its fetch at `now` and may be contacted again after `gap`.
    pub fn done(&mut self, queue: BackQueueId, now: Instant, gap: Duration) {
        let q = queue.0;
        let next = now + gap;
        self.back[q].turn = self.back[q].turn.saturating_add(1);
        if !self.back[q].urls.is_empty() {
            if self.back[q].turn < TURN_PAGES || !self.others_wait() {
                self.heap.push(Reverse((next, q)));
                return;
            }
            // Turn used up while others wait: park the queue, URLs and all.
            if let Some(host) = &self.back[q].host {
                self.host_next.insert(host.clone(), next);
            }
            self.parked.push_back((q, self.activations));
        } else {
            if let Some(host) = self.back[q].host.take() {
                self.host_table.remove(&host);
                self.host_next.insert(host, next);
            }
            self.free.push(q);
        }
        self.active -= 1;
        self.refill(now);
    }

    /// Whether some host waits for a place among the active ones.
    fn others_wait(&self) -> bool {
        !self.parked.is_empty() || self.front.iter().any(|f| !f.is_empty())
    }

    /// Hosts that may not be contacted yet at `now`, with how long they must still wait (busy
    /// hosts are not among them: their gap is not known until their fetch ends).
    pub fn next_contacts(&self, now: Instant) -> impl Iterator<Item = (&str, Duration)> {
        let queued = self
            .heap
            .iter()
            .filter_map(move |Reverse((t, q))| Some((self.back[*q].host.as_deref()?, *t)));
        let parked = self.host_next.iter().map(|(h, t)| (h.as_str(), *t));
        queued
            .chain(parked)
            .filter_map(move |(h, t)| Some((h, t.checked_duration_since(now)?)))
            .filter(|(_, left)| !left.is_zero())
    }

    /// `host` may not be contacted before `t` (what a resumed crawl knows of it); the later
    /// of this and what the frontier knows holds. For a host without a back queue, as every
    /// host is before the first `pop`; one that has a queue keeps its place in the heap.
    pub fn not_before(&mut self, host: &str, t: Instant) {
        if self.host_table.contains_key(host) {
            return;
        }
        let at = self.host_next.entry(host.to_string()).or_insert(t);
        *at = (*at).max(t);
    }

    /// Mercator's back-queue refill. URLs are drawn from the front queues in order: one whose
    /// host has a queue (active or parked) joins it; the first other one claims a new queue
    /// if there is room among the active ones, else it goes back to the head of its front
    /// queue and drawing stops. So an active host's URLs reach its queue as soon as they are
    /// at the front, and its connection is kept for them. A parked queue gets its place back
    /// once every place has turned over since it was parked, or when no new host waits.
    fn refill(&mut self, now: Instant) {
        // Forget next-contact times that have passed (bounds the table).
        if self.host_next.len() > 4 * self.max_active + 1024 {
            self.host_next.retain(|_, t| *t > now);
        }
        loop {
            if self.active < self.max_active {
                if let Some(&(q, at)) = self.parked.front() {
                    let turned_over = self.activations - at >= self.max_active as u64;
                    if turned_over || self.front.iter().all(|f| f.is_empty()) {
                        self.parked.pop_front();
                        self.activate(q, now);
                        continue;
                    }
                }
            }
            let Some((p, Queued { host, item })) = self.pop_front_biased() else {
                return;
            };
            // Moving between queues keeps an item in memory; it may push the total over.
            self.spill_if_over();
            if let Some(&owner) = self.host_table.get(&host) {
                self.back[owner].urls.push_back(item);
                continue;
            }
            if self.active >= self.max_active {
                self.front[p].push_front(Queued { host, item });
                return;
            }
            let q = self.free.pop().unwrap_or_else(|| {
                self.back.push(BackQueue::new());
                self.back.len() - 1
            });
            self.back[q].urls.push_back(item);
            self.back[q].host = Some(host.clone());
            self.host_table.insert(host, q);
            self.activate(q, now);
        }
    }

    /// Gives queue `q` a place among the active ones: into the heap at its host's next
    /// contact time, with a new turn.
    fn activate(&mut self, q: usize, now: Instant) {
        let next = self.back[q]
            .host
            .as_ref()
            .and_then(|h| self.host_next.remove(h));
        let t = next.map_or(now, |t| t.max(now));
        self.back[q].turn = 0;
        self.active += 1;
        self.activations += 1;
        self.heap.push(Reverse((t, q)));
    }

    /// The next front-queue URL by the biased selector, with its priority.
    fn pop_front_biased(&mut self) -> Option<(usize, Queued<T>)> {
        let f = self.front.len();
        // Priority p gets 2^(f-1-p) of every (2^f - 1) turns; empty queues pass their turn on.
        let cycle = (1u64 << f) - 1;
        let tick = self.bias_tick % cycle;
        self.bias_tick = self.bias_tick.wrapping_add(1);
        let mut acc = 0u64;
        let mut chosen = f - 1;
        for p in 0..f {
            acc += 1u64 << (f - 1 - p);
            if tick < acc {
                chosen = p;
                break;
            }
        }
        if let Some(x) = self.take_front(chosen) {
            return Some((chosen, x));
        }
        (0..f).find_map(|p| Some((p, self.take_front(p)?)))
    }

    fn take_front(&mut self, p: usize) -> Option<Queued<T>> {
        let before = self.front[p].in_ram();
        match self.front[p].pop_front(&mut *self.store, &mut self.buf) {
            Ok(item) => {
                let loaded =
                    (self.front[p].in_ram() + usize::from(item.is_some())).saturating_sub(before);
                self.spilled -= loaded.min(self.spilled);
                item
            }
            Err(e) => {
                self.error.get_or_insert(e);
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(b: usize) -> FrontierConfig {
        FrontierConfig {
            priorities: 3,
            back_queues: b,
            ram_items: usize::MAX,
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
        let mut got = Vec::new();
        for _ in 0..1000 {
            match f.pop(t0) {
                Pop::Ready { queue, item, .. } => {
                    got.push(item);
                    f.done(queue, t0, Duration::ZERO);
                }
                Pop::Empty => break,
                other => panic!("{other:?}"),
            }
        }
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
        for _ in 0..10_000 {
            match f.pop(t0) {
                Pop::Ready { queue, item, .. } => {
                    order.push(item);
                    f.done(queue, t0, Duration::ZERO);
                }
                Pop::Empty => break,
                other => panic!("{other:?}"),
            }
        }
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
}
