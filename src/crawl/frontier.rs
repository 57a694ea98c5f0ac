//! The frontier: which URL to fetch next, politely (ARCHITECTURE §8, Mercator).
//!
//! - F **front queues** (FIFO each) hold URLs by priority; a biased selector prefers high ones
//!   (priority 0 is highest: seeds and shallow links).
//! - B **back queues**, each non-empty while assigned and holding URLs of a single host; a
//!   table maps host → back queue.
//! - A **heap** keyed by the earliest time `t_e` each back queue's host may be contacted again.
//!
//! A host popped from the heap is *busy* until the caller reports [`Frontier::done`] with the
//! gap to wait (`max(delay, factor × fetch duration, crawl-delay)`, computed by the crawl
//! layer), so one host never has two fetches in flight and consecutive requests to it are
//! spaced. When a back queue empties it is reassigned to the next host drawn from the front
//! queues; the host's next-contact time is remembered, so a host that comes back later is
//! still spaced. This is sans-IO: time comes in as `now`. Everything lives in memory here;
//! the spill-to-disk frontier will keep this interface.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::time::{Duration, Instant};

/// Identifies a back queue while its host is busy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BackQueueId(usize);

#[derive(Clone, Debug)]
pub struct FrontierConfig {
    /// Number of front queues (priorities).
    pub priorities: usize,
    /// Number of back queues: ≈ 3 × open connections.
    pub back_queues: usize,
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

struct BackQueue<T> {
    /// The host this queue serves; `None` while the queue is free.
    host: Option<String>,
    urls: VecDeque<T>,
}

pub struct Frontier<T> {
    front: Vec<VecDeque<Queued<T>>>,
    back: Vec<BackQueue<T>>,
    free: Vec<usize>,
    host_table: HashMap<String, usize>,
    heap: BinaryHeap<Reverse<(Instant, usize)>>,
    /// Earliest next contact of hosts that currently have no back queue.
    host_next: HashMap<String, Instant>,
    /// Deterministic biased selection: position in a cycle where priority p gets 2^(F-1-p) turns.
    bias_tick: u64,
    len: usize,
}

impl<T> Frontier<T> {
    pub fn new(config: &FrontierConfig) -> Frontier<T> {
        let priorities = config.priorities.clamp(1, 16);
        let b = config.back_queues.max(1);
        Frontier {
            front: (0..priorities).map(|_| VecDeque::new()).collect(),
            back: (0..b)
                .map(|_| BackQueue {
                    host: None,
                    urls: VecDeque::new(),
                })
                .collect(),
            free: (0..b).rev().collect(),
            host_table: HashMap::new(),
            heap: BinaryHeap::new(),
            host_next: HashMap::new(),
            bias_tick: 0,
            len: 0,
        }
    }

    /// URLs waiting (front and back), not counting those being fetched.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Hosts that currently hold a back queue.
    pub fn active_hosts(&self) -> usize {
        self.host_table.len()
    }

    /// Adds a URL of `host` at `priority` (0 highest; clamped to the lowest queue).
    pub fn push(&mut self, host: &str, priority: usize, item: T) {
        self.len += 1;
        if let Some(&q) = self.host_table.get(host) {
            // The host already has a back queue: Mercator's refill would route it there.
            self.back[q].urls.push_back(item);
            return;
        }
        let p = priority.min(self.front.len() - 1);
        self.front[p].push_back(Queued {
            host: host.to_string(),
            item,
        });
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
        let Some(item) = self.back[q].urls.pop_front() else {
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
        if !self.back[q].urls.is_empty() {
            self.heap.push(Reverse((next, q)));
            return;
        }
        if let Some(host) = self.back[q].host.take() {
            self.host_table.remove(&host);
            self.host_next.insert(host, next);
        }
        self.free.push(q);
        self.refill(now);
    }

    /// Mercator's back-queue refill: while a back queue is free, draw URLs from the front
    /// queues; a URL whose host has a queue joins it, the first other one claims the free queue.
    fn refill(&mut self, now: Instant) {
        // Forget next-contact times that have passed (bounds the table).
        if self.host_next.len() > 4 * self.back.len() + 1024 {
            self.host_next.retain(|_, t| *t > now);
        }
        while let Some(&q) = self.free.last() {
            let Some(Queued { host, item }) = self.pop_front_biased() else {
                return;
            };
            if let Some(&owner) = self.host_table.get(&host) {
                self.back[owner].urls.push_back(item);
                continue;
            }
            self.free.pop();
            let t = self.host_next.remove(&host).map_or(now, |t| t.max(now));
            self.back[q].urls.push_back(item);
            self.back[q].host = Some(host.clone());
            self.host_table.insert(host, q);
            self.heap.push(Reverse((t, q)));
        }
    }

    fn pop_front_biased(&mut self) -> Option<Queued<T>> {
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
        if let Some(x) = self.front[chosen].pop_front() {
            return Some(x);
        }
        self.front.iter_mut().find_map(|q| q.pop_front())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(b: usize) -> FrontierConfig {
        FrontierConfig {
            priorities: 3,
            back_queues: b,
        }
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
