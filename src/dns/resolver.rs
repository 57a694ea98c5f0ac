//! The resolver state machine (sans-IO): names in, query datagrams and results out.
//!
//! The event loop owns one UDP socket per server and drives this with `resolve`,
//! `poll_transmit` (send the payload to `servers[server]`), `handle_datagram` (what arrived on
//! that socket), `handle_timeout` / `poll_timeout`, and `poll_event` (finished names). A
//! truncated UDP answer is asked again over TCP to the same server: `poll_tcp_query` says what
//! to send (already framed) and by when; the loop hands back the one message that came
//! (`handle_tcp_answer`) or says the connection failed (`handle_tcp_failed`).
//!
//! Per name: hosts table, then the cache (positive and negative), else one A and one AAAA
//! lookup, shared by every caller asking for that name, each followed through CNAME targets
//! the packet stops at. A query goes to the server with the shortest queue; each UDP retry
//! uses a fresh random ID and the next server, after a delay that doubles per attempt. The
//! name's result carries the IPv4 addresses, then the IPv6 ones; once A has addresses, AAAA
//! gets `AAAA_GRACE` more (a server dropping AAAA queries must not hold every name for the
//! whole timeout; the other way round A keeps its time, as IPv4 is what the loop prefers).
//! At most `max_names_in_flight` names per server are being resolved at once; the rest wait,
//! first asked first sent, within their own timeout (`waiting`). Message building and
//! checking live in `dns::message`, the TCP framing in `dns::tcp`, the answer cache in
//! `cache`.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use slab::Slab;

use super::message::{build_query, normalize_name, parse_response, Answer, Edns};
use super::{tcp, DnsError, QueryType};
use cache::Cache;
use waiting::Waiting;

mod cache;
mod waiting;

/// Attempts per query are capped so the backoff shift cannot overflow.
pub const MAX_ATTEMPTS: u32 = 16;
/// Random IDs drawn before falling back to probing for a free one on that server.
const ID_DRAWS: u32 = 16;
/// Shortest retry delay, so a zero `total_timeout` cannot make a timer that never advances.
const MIN_DELAY: Duration = Duration::from_millis(1);
/// Caps on configured durations, so `now + duration` cannot overflow `Instant`.
pub const MAX_TOTAL_TIMEOUT: Duration = Duration::from_secs(3600);
pub const MAX_CACHE_TTL: Duration = Duration::from_secs(7 * 86_400);
/// A TCP query (connect, send, one answer) gets this long, within the name's deadline: a
/// server that has not answered over TCP by then will not.
pub const TCP_TIMEOUT: Duration = Duration::from_secs(5);
/// Once A has addresses, AAAA gets at most this much longer: enough for a retry of a lost
/// datagram, short enough that a server dropping AAAA queries costs a second rather than the
/// whole timeout.
pub const AAAA_GRACE: Duration = Duration::from_secs(1);

/// Resolver settings; [`Default`] gives the documented values and no servers.
#[derive(Clone, Debug)]
pub struct ResolverConfig {
    /// Upstream recursive servers; `Transmit::server` indexes this.
    pub servers: Vec<SocketAddr>,
    /// Names answered without DNS (keys normalized, see `dns::parse_hosts`).
    pub hosts: HashMap<String, Vec<IpAddr>>,
    /// Bound on the whole resolution of one name (A, AAAA, CNAME re-queries, retries, TCP).
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
    /// Names resolved at once per server (at least 1); more wait their turn (`waiting`).
    pub max_names_in_flight: usize,
}

/// Default [`ResolverConfig::total_timeout`].
pub const DEFAULT_TOTAL_TIMEOUT: Duration = Duration::from_secs(10);
/// Default [`ResolverConfig::max_names_in_flight`]: two queries a name, so at most 128
/// datagrams are on the wire to a server and its answers on the wire back, which the
/// default socket receive buffer (~190 small datagrams) holds with room to spare. At a
/// recursive server's 20–50 ms for a name it has not cached, that is still 1,000–3,000
/// new names a second per server.
pub const DEFAULT_MAX_NAMES_IN_FLIGHT: usize = 64;

impl Default for ResolverConfig {
    fn default() -> Self {
        ResolverConfig {
            servers: Vec::new(),
            hosts: HashMap::new(),
            total_timeout: DEFAULT_TOTAL_TIMEOUT,
            attempts: 5,
            max_cname: 8,
            cache_capacity: 100_000,
            negative_ttl: Duration::from_secs(60),
            max_ttl: Duration::from_secs(86_400),
            max_names_in_flight: DEFAULT_MAX_NAMES_IN_FLIGHT,
        }
    }
}

/// A successful resolution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// The IPv4 addresses (A), then the IPv6 ones (AAAA), each in answer order; never empty
    /// from DNS (the hosts table gives its own order).
    pub addrs: Vec<IpAddr>,
}

/// What `resolve` says right away.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Resolve {
    /// Answered from the hosts table or the cache, or refused without sending anything.
    Done(Result<Resolved, DnsError>),
    /// A query is under way (or waits for one of the names on the wire to end); the result
    /// comes from `poll_event` under the normalized name.
    Pending,
}

/// A datagram to send to `config.servers[server]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transmit {
    pub server: usize,
    pub payload: Vec<u8>,
}

/// A query to send over a new TCP connection to `config.servers[server]`: write `payload`
/// (framed already), read one framed answer, hand it to [`Resolver::handle_tcp_answer`] with
/// this `server` and `id`, close. Past `deadline` the resolver has given up on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TcpQuery {
    pub server: usize,
    pub id: u16,
    pub payload: Vec<u8>,
    pub deadline: Instant,
}

/// Counters for the stats line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DnsStats {
    /// UDP datagrams and TCP queries sent.
    pub queries_sent: u64,
    /// Of which over TCP, after a truncated answer.
    pub tcp_queries: u64,
    pub cache_hits: u64,
    pub cache_misses: u64,
    /// Datagrams dropped: wrong source, unknown ID, or not matching the question.
    pub dropped_mismatch: u64,
    pub retries: u64,
    /// Lookups (one question type of one name) that got no answer in time.
    pub timeouts: u64,
    /// Names that waited for a place among those on the wire (`max_names_in_flight`).
    pub names_waited: u64,
}

/// How the packet in flight travels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Transport {
    Udp,
    Tcp,
}

/// The packet in flight for a lookup. A lookup is always waiting for exactly one packet: every
/// answer either finishes it or sends its next packet at once.
#[derive(Debug)]
struct InFlight {
    server: usize,
    id: u16,
    transport: Transport,
    /// 0 for the first send of this packet; the backoff delay is `initial << attempt`.
    attempt: u32,
    /// When the timer fires: the retry time, or the deadline if sooner.
    timer: Instant,
}

/// One question type for one name, followed through its CNAME chain.
#[derive(Debug)]
struct Lookup {
    /// The normalized name given to `resolve`: the key of its `Pending`.
    name: String,
    /// The name being asked for now (differs from `name` after a CNAME).
    current: String,
    qtype: QueryType,
    /// Names asked for so far (CNAME loop detection; at most max_cname+1).
    chain: Vec<String>,
    /// Smallest TTL seen along the CNAME chain.
    ttl: u32,
    /// The whole resolution's deadline, or sooner once the other family has addresses.
    deadline: Instant,
    /// A server error seen on an earlier attempt, reported if the rest time out.
    last_error: Option<DnsError>,
    /// Advertise EDNS, until the server answers FORMERR without an OPT record.
    edns: Edns,
    in_flight: InFlight,
}

/// What a lookup has found: addresses and their TTL, or why not.
type LookupResult = Result<(Vec<IpAddr>, u32), DnsError>;

/// One family's part of a name being resolved.
#[derive(Debug)]
enum Family {
    /// The name waits its turn (`waiting`); no lookup exists yet.
    Waiting,
    /// A lookup is under way (its key in `lookups`).
    Running(usize),
    Done(LookupResult),
}

/// The index of a question type in `Pending::families`: A first, so its addresses come first.
fn family(qtype: QueryType) -> usize {
    match qtype {
        QueryType::A => 0,
        QueryType::Aaaa => 1,
    }
}

/// The sans-IO resolver. See the module docs for the protocol.
pub struct Resolver {
    config: ResolverConfig,
    ids: Box<dyn FnMut() -> u16>,
    initial_delay: Duration,
    lookups: Slab<Lookup>,
    /// Names being resolved: their A and AAAA parts.
    by_name: HashMap<String, [Family; 2]>,
    /// (server, id) → lookup key, for matching answers (UDP and TCP share the ID space).
    outstanding: HashMap<(usize, u16), usize>,
    timers: BTreeSet<(Instant, usize)>,
    queue_lens: Vec<usize>,
    transmits: VecDeque<Transmit>,
    /// (server, id) of lookups gone over to TCP, until the loop takes them.
    tcp_queries: VecDeque<(usize, u16)>,
    events: VecDeque<(String, Result<Resolved, DnsError>)>,
    /// Names asked for while `running_names` was at its cap.
    waiting: Waiting,
    /// Names with lookups under way (in `by_name`, not waiting).
    running_names: usize,
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
            lookups: Slab::new(),
            by_name: HashMap::new(),
            outstanding: HashMap::new(),
            timers: BTreeSet::new(),
            queue_lens,
            transmits: VecDeque::new(),
            tcp_queries: VecDeque::new(),
            events: VecDeque::new(),
            waiting: Waiting::new(MIN_DELAY),
            running_names: 0,
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
        let deadline = now + self.config.total_timeout;
        if self.running_names >= self.max_running() {
            self.by_name
                .insert(name.clone(), [Family::Waiting, Family::Waiting]);
            self.waiting.push(name, deadline);
            self.stats.names_waited += 1;
            return Resolve::Pending;
        }
        self.start(name, deadline, now);
        // A name that ended as it started (no free query ID) leaves room for a waiting one.
        self.start_waiting(now);
        Resolve::Pending
    }

    /// Sends the A and AAAA queries for `name`, to be answered by `deadline`.
    fn start(&mut self, name: String, deadline: Instant, now: Instant) {
        self.running_names += 1;
        let mut keys = [0; 2];
        for (key, qtype) in keys.iter_mut().zip([QueryType::A, QueryType::Aaaa]) {
            *key = self.lookups.insert(Lookup {
                name: name.clone(),
                current: name.clone(),
                qtype,
                chain: vec![name.clone()],
                ttl: u32::MAX,
                deadline,
                last_error: None,
                edns: Edns::Advertise,
                in_flight: InFlight {
                    server: 0,
                    id: 0,
                    transport: Transport::Udp,
                    attempt: 0,
                    timer: now,
                },
            });
        }
        self.by_name.insert(name, keys.map(Family::Running));
        // Each send may end its lookup at once (no free ID), so the entry must exist first.
        for key in keys {
            if self.lookups.contains(key) {
                let server = self.laziest_server();
                self.send(key, server, 0, now);
            }
        }
    }

    /// Names resolved at once, over all servers.
    fn max_running(&self) -> usize {
        self.config.max_names_in_flight.max(1) * self.config.servers.len()
    }

    /// Starts waiting names while there is room, failing those whose deadline has passed.
    /// Called when a public entry point is done with its own lookups, so a name started here
    /// never takes the slot of a lookup that entry point is still walking over.
    fn start_waiting(&mut self, now: Instant) {
        // Bounded: each turn takes one expired name off the queue.
        while let Some(name) = self.waiting.pop_expired(now) {
            self.waited_out(name);
        }
        // Bounded: each turn takes one name off the queue; none left has expired.
        while self.running_names < self.max_running() {
            let Some((name, deadline)) = self.waiting.pop() else {
                return;
            };
            self.start(name, deadline, now);
        }
    }

    /// A waiting name's time ran out before it was sent.
    fn waited_out(&mut self, name: String) {
        self.by_name.remove(&name);
        self.stats.timeouts += 1;
        self.events.push_back((name, Err(DnsError::Timeout)));
    }

    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        self.transmits.pop_front()
    }

    /// The next query to send over TCP. One the resolver has given up on meanwhile is skipped;
    /// the loop may leave the rest queued here while it has no room for another connection.
    pub fn poll_tcp_query(&mut self) -> Option<TcpQuery> {
        // Bounded: each turn removes one queued query.
        while let Some((server, id)) = self.tcp_queries.pop_front() {
            let Some(key) = self.tcp_key(server, id) else {
                continue;
            };
            let q = &self.lookups[key];
            let mut query = Vec::new();
            build_query(id, &q.current, q.qtype, q.edns, &mut query);
            let mut payload = Vec::with_capacity(tcp::LEN_PREFIX + query.len());
            // A query is a header, a name of at most 255 bytes and an OPT: far under 64 KiB.
            if tcp::encode(&query, &mut payload).is_ok() {
                return Some(TcpQuery {
                    server,
                    id,
                    payload,
                    deadline: q.in_flight.timer,
                });
            }
        }
        None
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
        // An answer to a query now asked over TCP is not taken from UDP.
        let key = key.filter(|&k| self.lookups[k].in_flight.transport == Transport::Udp);
        let Some(key) = key else {
            self.stats.dropped_mismatch += 1;
            return;
        };
        let q = &self.lookups[key];
        match parse_response(data, q.in_flight.id, &q.current, q.qtype) {
            Err(DnsError::Mismatch) => self.stats.dropped_mismatch += 1,
            result => self.on_answer(key, result, now),
        }
        self.start_waiting(now);
    }

    /// The message read from the TCP connection made for [`TcpQuery`] `(server, id)`. It is
    /// checked as a datagram is; one that does not answer the question fails the query (the
    /// connection was ours alone, so this is no stray packet to wait past). A query the
    /// resolver has given up on is ignored.
    pub fn handle_tcp_answer(&mut self, server: usize, id: u16, data: &[u8], now: Instant) {
        let Some(key) = self.tcp_key(server, id) else {
            return;
        };
        let q = &self.lookups[key];
        match parse_response(data, id, &q.current, q.qtype) {
            Err(DnsError::Mismatch) => {
                self.stats.dropped_mismatch += 1;
                self.finish_lookup(key, Err(DnsError::TcpFailed), now);
            }
            result => self.on_answer(key, result, now),
        }
        self.start_waiting(now);
    }

    /// The TCP connection for [`TcpQuery`] `(server, id)` ended without a whole answer (refused,
    /// reset, closed early, or an answer longer than we accept).
    pub fn handle_tcp_failed(&mut self, server: usize, id: u16, now: Instant) {
        if let Some(key) = self.tcp_key(server, id) {
            self.finish_lookup(key, Err(DnsError::TcpFailed), now);
        }
        self.start_waiting(now);
    }

    /// Fires every timer due at `now`: retries and final timeouts.
    pub fn handle_timeout(&mut self, now: Instant) {
        while let Some(name) = self.waiting.pop_expired(now) {
            self.waited_out(name);
        }
        self.due.clear();
        self.due
            .extend(self.timers.range(..=(now, usize::MAX)).map(|&(_, key)| key));
        // Each due lookup either finishes or is rescheduled strictly after `now`; one may also
        // have been finished by an earlier one (its name ended).
        for i in 0..self.due.len() {
            let key = self.due[i];
            let Some(q) = self.lookups.get(key) else {
                continue;
            };
            if q.in_flight.transport == Transport::Tcp {
                self.stats.timeouts += 1;
                self.finish_lookup(key, Err(DnsError::TcpTimeout), now);
            } else if now >= q.deadline || q.in_flight.attempt + 1 >= self.config.attempts {
                let err = q.last_error.unwrap_or(DnsError::Timeout);
                if err == DnsError::Timeout {
                    self.stats.timeouts += 1;
                }
                self.finish_lookup(key, Err(err), now);
            } else {
                self.retry(key, now);
            }
        }
        self.start_waiting(now);
    }

    pub fn poll_timeout(&self) -> Option<Instant> {
        let timer = self.timers.first().map(|&(t, _)| t);
        match (timer, self.waiting.next_deadline()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// A finished name (normalized) and its result; one event per name, however many callers
    /// joined it.
    pub fn poll_event(&mut self) -> Option<(String, Result<Resolved, DnsError>)> {
        self.events.pop_front()
    }

    /// Packets in flight to server `server` (the book's `wait_for_dns` list length).
    pub fn queue_len(&self, server: usize) -> usize {
        self.queue_lens.get(server).copied().unwrap_or(0)
    }

    /// Names being resolved.
    pub fn pending(&self) -> usize {
        self.by_name.len()
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

    /// The lookup waiting for a TCP answer under `(server, id)`.
    fn tcp_key(&self, server: usize, id: u16) -> Option<usize> {
        let key = *self.outstanding.get(&(server, id))?;
        (self.lookups[key].in_flight.transport == Transport::Tcp).then_some(key)
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

    /// Sends the lookup's question to `server` (UDP attempt `attempt`, or TCP), with a fresh
    /// ID. The previous packet, if any, must have been released.
    fn send_by(
        &mut self,
        key: usize,
        server: usize,
        transport: Transport,
        attempt: u32,
        now: Instant,
    ) {
        let Some(id) = self.fresh_id(server) else {
            // 65536 queries outstanding on one server: it is not answering anyway.
            self.stats.timeouts += 1;
            self.end_lookup(key, Err(DnsError::Timeout), now);
            return;
        };
        let q = &mut self.lookups[key];
        let timer = match transport {
            Transport::Udp => now + self.initial_delay.saturating_mul(1 << attempt),
            Transport::Tcp => now + TCP_TIMEOUT,
        };
        let timer = timer.min(q.deadline).max(now + MIN_DELAY);
        q.in_flight = InFlight {
            server,
            id,
            transport,
            attempt,
            timer,
        };
        match transport {
            Transport::Udp => {
                let mut payload = Vec::new();
                build_query(id, &q.current, q.qtype, q.edns, &mut payload);
                self.transmits.push_back(Transmit { server, payload });
            }
            // Built when the loop takes it, so it asks what the lookup asks then.
            Transport::Tcp => {
                self.tcp_queries.push_back((server, id));
                self.stats.tcp_queries += 1;
            }
        }
        self.outstanding.insert((server, id), key);
        self.timers.insert((timer, key));
        self.queue_lens[server] += 1;
        self.stats.queries_sent += 1;
    }

    fn send(&mut self, key: usize, server: usize, attempt: u32, now: Instant) {
        self.send_by(key, server, Transport::Udp, attempt, now);
    }

    /// Forgets the packet in flight: its ID, its timer, its place in the server's queue.
    fn release(&mut self, key: usize) {
        let f = &self.lookups[key].in_flight;
        self.outstanding.remove(&(f.server, f.id));
        self.timers.remove(&(f.timer, key));
        self.queue_lens[f.server] -= 1;
    }

    /// Sends the same question again: fresh ID, next server, doubled delay.
    fn retry(&mut self, key: usize, now: Instant) {
        self.release(key);
        let f = &self.lookups[key].in_flight;
        let server = (f.server + 1) % self.config.servers.len();
        let attempt = f.attempt + 1;
        self.stats.retries += 1;
        self.send(key, server, attempt, now);
    }

    /// Asks a new question for the same lookup (a CNAME target, or without EDNS), from
    /// attempt 0.
    fn requery(&mut self, key: usize, now: Instant) {
        self.release(key);
        let server = self.laziest_server();
        self.send(key, server, 0, now);
    }

    /// Asks the same question over TCP, to the server whose UDP answer was truncated.
    fn ask_over_tcp(&mut self, key: usize, now: Instant) {
        self.release(key);
        let f = &self.lookups[key].in_flight;
        let (server, attempt) = (f.server, f.attempt);
        self.send_by(key, server, Transport::Tcp, attempt, now);
    }

    /// The one place that decides what an accepted answer does to its lookup.
    fn on_answer(&mut self, key: usize, result: Result<Answer, DnsError>, now: Instant) {
        let max_cname = self.config.max_cname;
        let multi_server = self.config.servers.len() > 1;
        let attempts = self.config.attempts;
        let q = &mut self.lookups[key];
        match result {
            Ok(answer) if !answer.addrs.is_empty() => {
                let ttl = q.ttl.min(answer.ttl);
                self.finish_lookup(key, Ok((answer.addrs, ttl)), now);
            }
            Ok(Answer {
                cname_target: Some(target),
                ttl,
                ..
            }) => {
                let target = match normalize_name(&target) {
                    Ok(t) => t,
                    Err(_) => return self.finish_lookup(key, Err(DnsError::Malformed), now),
                };
                if q.chain.contains(&target) || q.chain.len() as u32 > max_cname {
                    return self.finish_lookup(key, Err(DnsError::CnameChain), now);
                }
                q.ttl = q.ttl.min(ttl);
                q.chain.push(target.clone());
                q.current = target;
                q.last_error = None;
                self.requery(key, now);
            }
            Ok(_) => self.finish_lookup(key, Err(DnsError::NoAddress), now),
            Err(DnsError::Truncated) if q.in_flight.transport == Transport::Udp => {
                self.ask_over_tcp(key, now)
            }
            // RFC 6891 §7: a server that cannot read EDNS is asked once more without it.
            Err(DnsError::FormErr) if q.edns == Edns::Advertise => {
                q.edns = Edns::Plain;
                self.requery(key, now);
            }
            // Another server may do better; keep the error in case the others time out.
            Err(e @ (DnsError::ServFail | DnsError::Refused))
                if multi_server && q.in_flight.attempt + 1 < attempts && now < q.deadline =>
            {
                q.last_error = Some(e);
                self.retry(key, now);
            }
            Err(e) => self.finish_lookup(key, Err(e), now),
        }
    }

    /// Ends one lookup; the name ends when both families have, or at once when the name does
    /// not exist (RFC 8020: NXDOMAIN holds for every type).
    fn finish_lookup(&mut self, key: usize, result: LookupResult, now: Instant) {
        self.release(key);
        self.end_lookup(key, result, now);
    }

    /// [`Self::finish_lookup`] for a lookup whose packet is released already (or was never
    /// sent).
    fn end_lookup(&mut self, key: usize, result: LookupResult, now: Instant) {
        let q = self.lookups.remove(key);
        let Some(families) = self.by_name.get_mut(&q.name) else {
            return;
        };
        let mine = family(q.qtype);
        let other = 1 - mine;
        let ended = matches!(result, Err(DnsError::NxDomain));
        let found_v4 = result.is_ok() && q.qtype == QueryType::A;
        families[mine] = Family::Done(result);
        if let Family::Running(o) = families[other] {
            if ended {
                families[other] = Family::Done(Err(DnsError::NxDomain));
                self.release(o);
                self.lookups.remove(o);
            } else if found_v4 {
                self.hurry(o, now + AAAA_GRACE);
            }
        }
        let families = &self.by_name[&q.name];
        if families.iter().all(|f| matches!(f, Family::Done(_))) {
            self.finish_name(q.name, now);
        }
    }

    /// Brings lookup `key`'s deadline (and timer) forward to `deadline` if that is sooner.
    fn hurry(&mut self, key: usize, deadline: Instant) {
        let q = &mut self.lookups[key];
        q.deadline = q.deadline.min(deadline);
        if q.in_flight.timer > q.deadline {
            self.timers.remove(&(q.in_flight.timer, key));
            q.in_flight.timer = q.deadline;
            self.timers.insert((q.deadline, key));
        }
    }

    /// Both families are done: the name's result is every address found (IPv4 first), or the
    /// A lookup's error unless that was only "no A record".
    fn finish_name(&mut self, name: String, now: Instant) {
        let Some([a, aaaa]) = self.by_name.remove(&name) else {
            return;
        };
        self.running_names -= 1;
        let (Family::Done(a), Family::Done(aaaa)) = (a, aaaa) else {
            return;
        };
        let (result, ttl) = match (a, aaaa) {
            (Ok((mut v4, t4)), Ok((v6, t6))) => {
                v4.extend(v6);
                (Ok(v4), t4.min(t6))
            }
            (Ok((addrs, ttl)), Err(_)) | (Err(_), Ok((addrs, ttl))) => (Ok(addrs), ttl),
            (Err(DnsError::NoAddress), Err(e)) | (Err(e), Err(_)) => (Err(e), u32::MAX),
        };
        let lifetime = match &result {
            Ok(_) => Some(Duration::from_secs(ttl.into()).min(self.config.max_ttl)),
            Err(DnsError::NxDomain | DnsError::NoAddress) => Some(self.config.negative_ttl),
            Err(_) => None,
        };
        if let Some(lifetime) = lifetime {
            self.cache
                .insert(name.clone(), result.clone(), now + lifetime, now);
        }
        self.events
            .push_back((name, result.map(|addrs| Resolved { addrs })));
    }
}

#[cfg(test)]
mod tests;
