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
//! still spaced. A host can also be *held* for one request made outside its queue (a
//! robots.txt redirect hop from another host: [`Frontier::hold`]), with the same effect.
//! This is sans-IO: time comes in as `now`.
//!
//! Every queue is a [`SpillQueue`]: past `ram_items` URLs in memory, the middle of the queues
//! moves in batches to a [`SpillStore`] (the store's segment files), so the frontier's RAM is
//! bounded by configuration, not by the crawl's size. A spill store failure stops taking new
//! work ([`Frontier::take_error`]).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
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
    /// Within a host, serve URLs by priority (focused crawling), not in the order they came.
    pub rank_within_hosts: bool,
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

/// Whether a host can be held outside its back queue ([`Frontier::hold`]).
#[derive(Debug, PartialEq, Eq)]
pub enum Hold {
    /// Held: none of its URLs is popped until [`Frontier::release`].
    Held,
    /// It may not be contacted before this instant.
    Wait(Instant),
    /// It is being fetched, or held already: ask again after a `done`.
    Busy,
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
    /// The host's URLs, a lane per priority when the frontier ranks within hosts
    /// (`FrontierConfig::rank_within_hosts`), else one: the first non-empty lane goes first.
    lanes: Vec<SpillQueue<T>>,
    /// Revisits (`Frontier::push_later`): served once `urls` is empty, in the order they
    /// came, which is their due order. Not spilled: a continuous crawl takes due URLs only
    /// while the frontier is short.
    later: VecDeque<T>,
    /// Fetches reported done in this turn.
    turn: u32,
    /// When its host may be contacted, while the queue is in the heap.
    in_heap: Option<Instant>,
    /// Parked: its turn ended with URLs left, and it waits for a place.
    parked: bool,
}

impl<T> BackQueue<T> {
    fn new(lanes: usize) -> BackQueue<T> {
        BackQueue {
            host: None,
            lanes: (0..lanes.max(1)).map(|_| SpillQueue::default()).collect(),
            later: VecDeque::new(),
            turn: 0,
            in_heap: None,
            parked: false,
        }
    }
}

impl<T: Spillable> BackQueue<T> {
    fn is_empty(&self) -> bool {
        self.lanes.iter().all(|l| l.is_empty()) && self.later.is_empty()
    }

    /// The first lane holding URLs.
    fn first_lane(&self) -> Option<usize> {
        self.lanes.iter().position(|l| !l.is_empty())
    }
}

/// Of every this many refill draws, one takes a revisit of a host without a back queue
/// first, so revisits are not starved while new URLs keep coming.
const LATER_DRAW_EVERY: u64 = 16;

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
    /// Lanes per back queue: one, or one per priority.
    lanes: usize,
    /// Revisits of hosts without a back queue, in due order (`push_later`).
    later_front: VecDeque<Queued<T>>,
    later_tick: u64,
    /// Revisits waiting, in `later_front` and the back queues' `later` lanes.
    later_len: usize,
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
    /// Hosts held outside their back queues ([`Frontier::hold`]): an active queue of theirs
    /// stays out of the heap until they are released.
    held: HashSet<String>,
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
            lanes: if config.rank_within_hosts {
                priorities
            } else {
                1
            },
            later_front: VecDeque::new(),
            later_tick: 0,
            later_len: 0,
            back: Vec::new(),
            free: Vec::new(),
            active: 0,
            max_active: b,
            parked: VecDeque::new(),
            activations: 0,
            host_table: HashMap::new(),
            heap: BinaryHeap::new(),
            host_next: HashMap::new(),
            held: HashSet::new(),
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
        // (in memory, front queue or back queue's lane, index)
        let mut order: Vec<(usize, Option<usize>, usize)> = self
            .front
            .iter()
            .enumerate()
            .map(|(i, q)| (q.in_ram(), None, i))
            .chain(self.back.iter().enumerate().flat_map(|(i, q)| {
                q.lanes
                    .iter()
                    .enumerate()
                    .map(move |(l, lane)| (lane.in_ram(), Some(l), i))
            }))
            .filter(|&(n, _, _)| n > keep_head + BATCH_ITEMS)
            .collect();
        order.sort_unstable_by_key(|&(n, _, _)| std::cmp::Reverse(n));
        for (_, lane, i) in order {
            if self.in_ram() <= target {
                break;
            }
            let res = match lane {
                None => self.front[i].spill(&mut *self.store, keep_head, &mut self.buf),
                Some(l) => self.back[i].lanes[l].spill(&mut *self.store, keep_head, &mut self.buf),
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

    /// Revisits waiting (`push_later`), of [`Frontier::len`].
    pub fn later_len(&self) -> usize {
        self.later_len
    }

    /// Hosts that currently hold a back queue (active or parked).
    pub fn active_hosts(&self) -> usize {
        self.host_table.len()
    }

    /// Whether the busy host of `queue` has more URLs queued (its connection is worth
    /// keeping for them).
    pub fn has_queued(&self, queue: BackQueueId) -> bool {
        !self.back[queue.0].is_empty()
    }

    /// Adds a URL of `host` at `priority` (0 highest; clamped to the lowest queue).
    pub fn push(&mut self, host: &str, priority: usize, item: T) {
        self.len += 1;
        if let Some(&q) = self.host_table.get(host) {
            // The host already has a back queue: Mercator's refill would route it there.
            let lane = self.lane(priority);
            self.back[q].lanes[lane].push_back(item);
        } else {
            let p = priority.min(self.front.len() - 1);
            self.front[p].push_back(Queued {
                host: host.to_string(),
                item,
            });
        }
        self.spill_if_over();
    }

    /// The lane of a back queue for priority `p`.
    fn lane(&self, p: usize) -> usize {
        p.min(self.lanes - 1)
    }

    /// Adds a revisit of `host`: after every new URL of its host, in the order given (a
    /// continuous crawl gives them in due order). Within a host, what is new goes first,
    /// then what is due soonest.
    pub fn push_later(&mut self, host: &str, item: T) {
        self.len += 1;
        self.later_len += 1;
        match self.host_table.get(host) {
            Some(&q) => self.back[q].later.push_back(item),
            None => self.later_front.push_back(Queued {
                host: host.to_string(),
                item,
            }),
        }
    }

    /// Takes the oldest item of a back queue, reading a spilled batch back if needed; its
    /// revisits once its new URLs are all taken.
    fn take_back(&mut self, q: usize) -> Option<T> {
        let Some(l) = self.back[q].first_lane() else {
            let item = self.back[q].later.pop_front();
            self.later_len -= usize::from(item.is_some());
            return item;
        };
        let lane = &mut self.back[q].lanes[l];
        let before = lane.in_ram();
        let len_before = lane.len();
        match lane.pop_front(&mut *self.store, &mut self.buf) {
            Ok(item) => {
                // A batch read back moved items from the store to memory.
                let loaded = (lane.in_ram() + usize::from(item.is_some())).saturating_sub(before);
                debug_assert_eq!(len_before - usize::from(item.is_some()), lane.len());
                self.spilled -= loaded.min(self.spilled);
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
        self.back[q].in_heap = None;
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
        self.back[queue.0].lanes[0].push_front(item);
    }

    /// The host of `queue` finished its fetch at `now` and may be contacted again after `gap`.
    pub fn done(&mut self, queue: BackQueueId, now: Instant, gap: Duration) {
        let q = queue.0;
        let next = now + gap;
        self.back[q].turn = self.back[q].turn.saturating_add(1);
        if !self.back[q].is_empty() {
            if self.back[q].turn < TURN_PAGES || !self.others_wait() {
                self.enqueue_at(q, next);
                return;
            }
            // Turn used up while others wait: park the queue, URLs and all.
            if let Some(host) = &self.back[q].host {
                self.host_next.insert(host.clone(), next);
            }
            self.parked.push_back((q, self.activations));
            self.back[q].parked = true;
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
        !self.parked.is_empty()
            || !self.later_front.is_empty()
            || self.front.iter().any(|f| !f.is_empty())
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

    /// Holds `host` for one fetch made outside its back queue (a robots.txt redirect hop
    /// from another host): [`Hold::Held`] when it may be contacted at `now` and is not being
    /// fetched; then none of its URLs is popped until [`Frontier::release`], so the two never
    /// overlap and its spacing holds across both. Needs no back queue of its own: a host
    /// without one is held by name, and a queue it gets meanwhile waits out of the heap.
    pub fn hold(&mut self, host: &str, now: Instant) -> Hold {
        if self.held.contains(host) {
            return Hold::Busy;
        }
        let next = match self.host_table.get(host) {
            Some(&q) => match self.back[q].in_heap {
                Some(t) => Some((t, Some(q))),
                None if self.back[q].parked => self.host_next.get(host).map(|&t| (t, None)),
                // Active and out of the heap: being fetched.
                None => return Hold::Busy,
            },
            None => self.host_next.get(host).map(|&t| (t, None)),
        };
        if let Some((t, in_heap)) = next {
            if t > now {
                return Hold::Wait(t);
            }
            if let Some(q) = in_heap {
                // Bound: the heap holds at most one entry per active queue (a hold is rare:
                // one per robots.txt redirect to another host).
                self.heap.retain(|Reverse((_, x))| *x != q);
                self.back[q].in_heap = None;
            }
        }
        self.held.insert(host.to_string());
        Hold::Held
    }

    /// Ends [`Frontier::hold`] of `host`, whose fetch ended at `now`: it may be contacted
    /// again after `gap`.
    pub fn release(&mut self, host: &str, now: Instant, gap: Duration) {
        if !self.held.remove(host) {
            return;
        }
        let next = now + gap;
        match self.host_table.get(host) {
            // An active queue (it was in the heap, or got its place meanwhile) goes back in.
            Some(&q) if !self.back[q].parked => self.enqueue_at(q, next),
            _ => {
                let at = self.host_next.entry(host.to_string()).or_insert(next);
                *at = (*at).max(next);
            }
        }
    }

    /// Queue `q` waits in the heap until `t`.
    fn enqueue_at(&mut self, q: usize, t: Instant) {
        self.back[q].in_heap = Some(t);
        self.heap.push(Reverse((t, q)));
    }

    /// The host whose URLs `queue` serves.
    pub fn host(&self, queue: BackQueueId) -> Option<&str> {
        self.back[queue.0].host.as_deref()
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
                    let none_new = self.front.iter().all(|f| f.is_empty());
                    if turned_over || (none_new && self.later_front.is_empty()) {
                        self.parked.pop_front();
                        self.back[q].parked = false;
                        self.activate(q, now);
                        continue;
                    }
                }
            }
            let Some((p, Queued { host, item })) = self.draw() else {
                return;
            };
            // Moving between queues keeps an item in memory; it may push the total over.
            self.spill_if_over();
            if let Some(&owner) = self.host_table.get(&host) {
                match p {
                    None => self.back[owner].later.push_back(item),
                    Some(p) => {
                        let lane = self.lane(p);
                        self.back[owner].lanes[lane].push_back(item)
                    }
                }
                continue;
            }
            if self.active >= self.max_active {
                match p {
                    Some(p) => self.front[p].push_front(Queued { host, item }),
                    None => self.later_front.push_front(Queued { host, item }),
                }
                return;
            }
            let lanes = self.lanes;
            let q = self.free.pop().unwrap_or_else(|| {
                self.back.push(BackQueue::new(lanes));
                self.back.len() - 1
            });
            match p {
                None => self.back[q].later.push_back(item),
                Some(p) => {
                    let lane = self.lane(p);
                    self.back[q].lanes[lane].push_back(item)
                }
            }
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
        // A held host's queue enters the heap when it is released.
        if !self.back[q]
            .host
            .as_ref()
            .is_some_and(|h| self.held.contains(h))
        {
            self.enqueue_at(q, t);
        }
    }

    /// The next URL for a back queue, with its priority (`None`: a revisit): by the biased
    /// selector, with a revisit first one draw in [`LATER_DRAW_EVERY`] and whenever no new
    /// URL waits.
    fn draw(&mut self) -> Option<(Option<usize>, Queued<T>)> {
        if self.later_front.is_empty() {
            return self.pop_front_biased().map(|(p, x)| (Some(p), x));
        }
        self.later_tick = self.later_tick.wrapping_add(1);
        if self.later_tick % LATER_DRAW_EVERY != 0 {
            if let Some((p, x)) = self.pop_front_biased() {
                return Some((Some(p), x));
            }
        }
        self.later_front.pop_front().map(|x| (None, x))
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
#[path = "frontier_tests.rs"]
mod tests;
