//! The resolver state machine (sans-IO): names in, query datagrams and results out.
//!
//! The event loop owns one UDP socket per server and drives this with `resolve`,
//! `poll_transmit` (send the payload to `servers[server]`), `handle_datagram` (what arrived on
//! that socket), `handle_timeout` / `poll_timeout`, and `poll_event` (finished names).
//!
//! Per name: hosts table, then the cache (positive and negative), else one query shared by
//! every caller asking for that name. A query goes to the server with the shortest queue; each
//! retry uses a fresh random ID and the next server, after a delay that doubles per attempt.
//! A first, AAAA when the name has no A; CNAME targets the packet stops at are queried in
//! turn. Message building and checking live in `dns::message`.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use slab::Slab;

use super::message::{build_query, normalize_name, parse_response, Answer, Edns};
use super::{DnsError, QueryType};

/// Attempts per query are capped so the backoff shift cannot overflow.
pub const MAX_ATTEMPTS: u32 = 16;
/// Random IDs drawn before falling back to probing for a free one on that server.
const ID_DRAWS: u32 = 16;
/// Shortest retry delay, so a zero `total_timeout` cannot make a timer that never advances.
const MIN_DELAY: Duration = Duration::from_millis(1);
/// Caps on configured durations, so `now + duration` cannot overflow `Instant`.
pub const MAX_TOTAL_TIMEOUT: Duration = Duration::from_secs(3600);
pub const MAX_CACHE_TTL: Duration = Duration::from_secs(7 * 86_400);

/// Resolver settings; [`Default`] gives the documented values and no servers.
#[derive(Clone, Debug)]
pub struct ResolverConfig {
    /// Upstream recursive servers; `Transmit::server` indexes this.
    pub servers: Vec<SocketAddr>,
    /// Names answered without DNS (keys normalized, see `dns::parse_hosts`).
    pub hosts: HashMap<String, Vec<IpAddr>>,
    /// Bound on the whole resolution of one name (A, AAAA, CNAME re-queries, retries).
    pub total_timeout: Duration,
    /// Sends per query packet, first included (capped at `MAX_ATTEMPTS`).
    pub attempts: u32,
    /// CNAME targets re-queried across packets for one name.
    pub max_cname: u32,
    /// Names kept in the cache.
    pub cache_capacity: usize,
    /// How long NXDOMAIN and "no address" are remembered.
    pub negative_ttl: Duration,
    /// Upper bound on the TTL of a cached answer.
    pub max_ttl: Duration,
}

impl Default for ResolverConfig {
    fn default() -> Self {
        ResolverConfig {
            servers: Vec::new(),
            hosts: HashMap::new(),
            total_timeout: Duration::from_secs(10),
            attempts: 5,
            max_cname: 8,
            cache_capacity: 100_000,
            negative_ttl: Duration::from_secs(60),
            max_ttl: Duration::from_secs(86_400),
        }
    }
}

/// A successful resolution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    pub addrs: Vec<IpAddr>,
}

/// What `resolve` says right away.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Resolve {
    /// Answered from the hosts table or the cache, or refused without sending anything.
    Done(Result<Resolved, DnsError>),
    /// A query is under way; the result comes from `poll_event` under the normalized name.
    Pending,
}

/// A datagram to send to `config.servers[server]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transmit {
    pub server: usize,
    pub payload: Vec<u8>,
}

/// Counters for the stats line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DnsStats {
    pub queries_sent: u64,
    pub cache_hits: u64,
    pub cache_misses: u64,
    /// Datagrams dropped: wrong source, unknown ID, or not matching the question.
    pub dropped_mismatch: u64,
    pub retries: u64,
    pub timeouts: u64,
}

/// The packet in flight for a query. A query is always waiting for exactly one packet: every
/// answer either finishes it or sends its next packet at once.
#[derive(Debug)]
struct InFlight {
    server: usize,
    id: u16,
    /// 0 for the first send of this packet; the backoff delay is `initial << attempt`.
    attempt: u32,
    /// When the timer fires: the retry time, or the whole-resolution deadline if sooner.
    timer: Instant,
}

#[derive(Debug)]
struct Query {
    /// The normalized name given to `resolve`: the cache key and the event's name.
    name: String,
    /// The name being asked for now (differs from `name` after a CNAME).
    current: String,
    qtype: QueryType,
    /// Names asked for so far in this resolution (CNAME loop detection; at most max_cname+1).
    chain: Vec<String>,
    /// Smallest TTL seen along the CNAME chain.
    ttl: u32,
    deadline: Instant,
    /// A server error seen on an earlier attempt, reported if the rest time out.
    last_error: Option<DnsError>,
    in_flight: InFlight,
}

/// The sans-IO resolver. See the module docs for the protocol.
pub struct Resolver {
    config: ResolverConfig,
    ids: Box<dyn FnMut() -> u16>,
    initial_delay: Duration,
    queries: Slab<Query>,
    by_name: HashMap<String, usize>,
    /// (server, id) → query key, for matching answers.
    outstanding: HashMap<(usize, u16), usize>,
    timers: BTreeSet<(Instant, usize)>,
    queue_lens: Vec<usize>,
    transmits: VecDeque<Transmit>,
    events: VecDeque<(String, Result<Resolved, DnsError>)>,
    cache: Cache,
    stats: DnsStats,
    due: Vec<usize>,
}

impl Resolver {
    pub fn new(mut config: ResolverConfig, ids: Box<dyn FnMut() -> u16>) -> Self {
        config.attempts = config.attempts.clamp(1, MAX_ATTEMPTS);
        config.total_timeout = config.total_timeout.min(MAX_TOTAL_TIMEOUT);
        config.max_ttl = config.max_ttl.min(MAX_CACHE_TTL);
        config.negative_ttl = config.negative_ttl.min(MAX_CACHE_TTL);
        // Delays d, 2d, 4d, ... over `attempts` sends sum to d * (2^attempts - 1).
        let parts = (1u32 << config.attempts) - 1;
        let initial_delay = (config.total_timeout / parts).max(MIN_DELAY);
        let queue_lens = vec![0; config.servers.len()];
        let cache = Cache::new(config.cache_capacity);
        Resolver {
            config,
            ids,
            initial_delay,
            queries: Slab::new(),
            by_name: HashMap::new(),
            outstanding: HashMap::new(),
            timers: BTreeSet::new(),
            queue_lens,
            transmits: VecDeque::new(),
            events: VecDeque::new(),
            cache,
            stats: DnsStats::default(),
            due: Vec::new(),
        }
    }

    /// Starts resolving `name` (or answers it at once).
    pub fn resolve(&mut self, name: &str, now: Instant) -> Resolve {
        let name = match normalize_name(name) {
            Ok(n) => n,
            Err(e) => return Resolve::Done(Err(e)),
        };
        if let Some(addrs) = self.config.hosts.get(&name) {
            return Resolve::Done(Ok(Resolved {
                addrs: addrs.clone(),
            }));
        }
        // A dotted-quad "name" is an address already (the url crate normally catches these).
        if let Ok(v4) = name.parse::<Ipv4Addr>() {
            return Resolve::Done(Ok(Resolved {
                addrs: vec![IpAddr::V4(v4)],
            }));
        }
        if let Some(result) = self.cache.get(&name, now) {
            self.stats.cache_hits += 1;
            return Resolve::Done(result.map(|addrs| Resolved { addrs }));
        }
        self.stats.cache_misses += 1;
        if self.by_name.contains_key(&name) {
            return Resolve::Pending;
        }
        if self.config.servers.is_empty() {
            return Resolve::Done(Err(DnsError::NoServer));
        }
        let server = self.laziest_server();
        let entry = self.queries.vacant_entry();
        let key = entry.key();
        entry.insert(Query {
            name: name.clone(),
            current: name.clone(),
            qtype: QueryType::A,
            chain: vec![name.clone()],
            ttl: u32::MAX,
            deadline: now + self.config.total_timeout,
            last_error: None,
            in_flight: InFlight {
                server,
                id: 0,
                attempt: 0,
                timer: now,
            },
        });
        self.by_name.insert(name, key);
        self.send(key, server, 0, now);
        Resolve::Pending
    }

    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        self.transmits.pop_front()
    }

    /// A datagram arrived on server `server`'s socket from `from`.
    pub fn handle_datagram(&mut self, server: usize, from: SocketAddr, data: &[u8], now: Instant) {
        let key = match self.config.servers.get(server) {
            Some(&addr) if addr == from && data.len() >= 2 => {
                let id = u16::from_be_bytes([data[0], data[1]]);
                self.outstanding.get(&(server, id)).copied()
            }
            _ => None,
        };
        let Some(key) = key else {
            self.stats.dropped_mismatch += 1;
            return;
        };
        let q = &self.queries[key];
        match parse_response(data, q.in_flight.id, &q.current, q.qtype) {
            Err(DnsError::Mismatch) => self.stats.dropped_mismatch += 1,
            result => self.on_answer(key, result, now),
        }
    }

    /// Fires every timer due at `now`: retries and final timeouts.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.due.clear();
        self.due
            .extend(self.timers.range(..=(now, usize::MAX)).map(|&(_, key)| key));
        // Each due query either finishes or is rescheduled strictly after `now`.
        for i in 0..self.due.len() {
            let key = self.due[i];
            let q = &self.queries[key];
            if now >= q.deadline || q.in_flight.attempt + 1 >= self.config.attempts {
                let err = q.last_error.unwrap_or(DnsError::Timeout);
                if err == DnsError::Timeout {
                    self.stats.timeouts += 1;
                }
                self.finish(key, Err(err), now);
            } else {
                self.retry(key, now);
            }
        }
    }

    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timers.first().map(|&(t, _)| t)
    }

    /// A finished name (normalized) and its result; one event per query, however many callers
    /// joined it.
    pub fn poll_event(&mut self) -> Option<(String, Result<Resolved, DnsError>)> {
        self.events.pop_front()
    }

    /// Queries waiting on server `server` (the book's `wait_for_dns` list length).
    pub fn queue_len(&self, server: usize) -> usize {
        self.queue_lens.get(server).copied().unwrap_or(0)
    }

    /// Names being resolved.
    pub fn pending(&self) -> usize {
        self.queries.len()
    }

    pub fn stats(&self) -> &DnsStats {
        &self.stats
    }

    // ---- internals ----

    /// "The laziest DNS server": the shortest queue, lowest index on ties.
    fn laziest_server(&self) -> usize {
        (0..self.queue_lens.len())
            .min_by_key(|&s| self.queue_lens[s])
            .unwrap_or(0)
    }

    /// A random ID not outstanding on `server`, or None if all 65536 are.
    fn fresh_id(&mut self, server: usize) -> Option<u16> {
        let mut id = 0;
        for _ in 0..ID_DRAWS {
            id = (self.ids)();
            if !self.outstanding.contains_key(&(server, id)) {
                return Some(id);
            }
        }
        (0..=u16::MAX)
            .map(|step| id.wrapping_add(step))
            .find(|&id| !self.outstanding.contains_key(&(server, id)))
    }

    /// Sends the query's packet (attempt `attempt`) to `server`. The previous packet, if any,
    /// must have been released.
    fn send(&mut self, key: usize, server: usize, attempt: u32, now: Instant) {
        let Some(id) = self.fresh_id(server) else {
            // 65536 queries outstanding on one server: it is not answering anyway.
            self.stats.timeouts += 1;
            self.finish_released(key, Err(DnsError::Timeout));
            return;
        };
        let delay = self.initial_delay.saturating_mul(1 << attempt);
        let q = &mut self.queries[key];
        let timer = (now + delay).min(q.deadline).max(now + MIN_DELAY);
        q.in_flight = InFlight {
            server,
            id,
            attempt,
            timer,
        };
        let mut payload = Vec::new();
        build_query(id, &q.current, q.qtype, Edns::Advertise, &mut payload);
        self.transmits.push_back(Transmit { server, payload });
        self.outstanding.insert((server, id), key);
        self.timers.insert((timer, key));
        self.queue_lens[server] += 1;
        self.stats.queries_sent += 1;
    }

    /// Forgets the packet in flight: its ID, its timer, its place in the server's queue.
    fn release(&mut self, key: usize) {
        let f = &self.queries[key].in_flight;
        self.outstanding.remove(&(f.server, f.id));
        self.timers.remove(&(f.timer, key));
        self.queue_lens[f.server] -= 1;
    }

    /// Sends the same question again: fresh ID, next server, doubled delay.
    fn retry(&mut self, key: usize, now: Instant) {
        self.release(key);
        let f = &self.queries[key].in_flight;
        let server = (f.server + 1) % self.config.servers.len();
        let attempt = f.attempt + 1;
        self.stats.retries += 1;
        self.send(key, server, attempt, now);
    }

    /// Asks a new question for the same name (AAAA, or a CNAME target), from attempt 0.
    fn requery(&mut self, key: usize, now: Instant) {
        self.release(key);
        let server = self.laziest_server();
        self.send(key, server, 0, now);
    }

    /// The one place that decides what an accepted answer does to its query.
    fn on_answer(&mut self, key: usize, result: Result<Answer, DnsError>, now: Instant) {
        let max_cname = self.config.max_cname;
        let multi_server = self.config.servers.len() > 1;
        let attempts = self.config.attempts;
        let q = &mut self.queries[key];
        match result {
            Ok(answer) if !answer.addrs.is_empty() => {
                let ttl = q.ttl.min(answer.ttl);
                let addrs = answer.addrs;
                self.finish_with_ttl(key, Ok(addrs), ttl, now);
            }
            Ok(Answer {
                cname_target: Some(target),
                ttl,
                ..
            }) => {
                let target = match normalize_name(&target) {
                    Ok(t) => t,
                    Err(_) => return self.finish(key, Err(DnsError::Malformed), now),
                };
                if q.chain.contains(&target) || q.chain.len() as u32 > max_cname {
                    return self.finish(key, Err(DnsError::CnameChain), now);
                }
                q.ttl = q.ttl.min(ttl);
                q.chain.push(target.clone());
                q.current = target;
                q.last_error = None;
                self.requery(key, now);
            }
            Ok(_) | Err(DnsError::NoAddress) if q.qtype == QueryType::A => {
                q.qtype = QueryType::Aaaa;
                q.last_error = None;
                self.requery(key, now);
            }
            Ok(_) => self.finish(key, Err(DnsError::NoAddress), now),
            // Another server may do better; keep the error in case the others time out.
            Err(e @ (DnsError::ServFail | DnsError::Refused))
                if multi_server && q.in_flight.attempt + 1 < attempts && now < q.deadline =>
            {
                q.last_error = Some(e);
                self.retry(key, now);
            }
            Err(e) => self.finish(key, Err(e), now),
        }
    }

    fn finish(&mut self, key: usize, result: Result<Vec<IpAddr>, DnsError>, now: Instant) {
        self.finish_with_ttl(key, result, u32::MAX, now);
    }

    fn finish_with_ttl(
        &mut self,
        key: usize,
        result: Result<Vec<IpAddr>, DnsError>,
        ttl: u32,
        now: Instant,
    ) {
        self.release(key);
        let lifetime = match &result {
            Ok(_) => Some(Duration::from_secs(ttl.into()).min(self.config.max_ttl)),
            Err(DnsError::NxDomain | DnsError::NoAddress) => Some(self.config.negative_ttl),
            Err(_) => None,
        };
        if let Some(lifetime) = lifetime {
            let name = self.queries[key].name.clone();
            self.cache.insert(name, result.clone(), now + lifetime, now);
        }
        self.finish_released(key, result);
    }

    /// Removes a query whose packet is already released and reports its result.
    fn finish_released(&mut self, key: usize, result: Result<Vec<IpAddr>, DnsError>) {
        let q = self.queries.remove(key);
        self.by_name.remove(&q.name);
        self.events
            .push_back((q.name, result.map(|addrs| Resolved { addrs })));
    }
}

struct CacheEntry {
    result: Result<Vec<IpAddr>, DnsError>,
    expires: Instant,
    seq: u64,
}

/// A TTL cache bounded by capacity: when full, an expired entry goes first, else the oldest.
struct Cache {
    capacity: usize,
    map: HashMap<String, CacheEntry>,
    by_expiry: BTreeSet<(Instant, u64)>,
    /// Insertion order: seq → name.
    by_age: BTreeMap<u64, String>,
    next_seq: u64,
}

impl Cache {
    fn new(capacity: usize) -> Self {
        Cache {
            capacity,
            map: HashMap::new(),
            by_expiry: BTreeSet::new(),
            by_age: BTreeMap::new(),
            next_seq: 0,
        }
    }

    fn get(&mut self, name: &str, now: Instant) -> Option<Result<Vec<IpAddr>, DnsError>> {
        let entry = self.map.get(name)?;
        if now >= entry.expires {
            self.remove(name);
            return None;
        }
        Some(entry.result.clone())
    }

    fn remove(&mut self, name: &str) {
        if let Some(e) = self.map.remove(name) {
            self.by_expiry.remove(&(e.expires, e.seq));
            self.by_age.remove(&e.seq);
        }
    }

    fn insert(
        &mut self,
        name: String,
        result: Result<Vec<IpAddr>, DnsError>,
        expires: Instant,
        now: Instant,
    ) {
        if self.capacity == 0 || expires <= now {
            return;
        }
        self.remove(&name);
        // Bounded: each turn removes one entry, and the map holds at most `capacity`.
        while self.map.len() >= self.capacity {
            let victim = match self.by_expiry.first() {
                Some(&(t, seq)) if t <= now => seq,
                _ => match self.by_age.first_key_value() {
                    Some((&seq, _)) => seq,
                    None => break,
                },
            };
            let Some(victim) = self.by_age.get(&victim).cloned() else {
                break;
            };
            self.remove(&victim);
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.by_expiry.insert((expires, seq));
        self.by_age.insert(seq, name.clone());
        self.map.insert(
            name,
            CacheEntry {
                result,
                expires,
                seq,
            },
        );
    }
}

#[cfg(test)]
mod tests;
