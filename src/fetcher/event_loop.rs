//! The `Crawler`: one `mio::Poll` loop driving every [`Fetch`] (DESIGN §2).
//!
//! The loop owns every socket, the clock and all timing; the protocol work is done by the
//! sans-IO cores ([`crate::dns::Resolver`], [`crate::http::ResponseDecoder`]) and the byte
//! shuffling by [`crate::fetcher::conn`]. Work comes from a [`FetchSource`] (the `fetch` command's URL
//! list, or the crawl frontier) and from [`Crawler::fetch_push`]; every request ends in exactly
//! one [`FetchSource::fetch_done`] call.
//!
//! The book's queues, by name:
//! - `wait_for_issue`: pushed requests not yet given a `Fetch` (the live count is bounded);
//! - `wait_for_dns`: fetches waiting for a name, by name (the per-server query lists live in
//!   the resolver, which sends each new query to the server with the shortest list);
//! - `wait_for_http`: resolved fetches waiting for a connection slot;
//! - `busy_servers`: open connections per server IP (politeness: `--conns-per-server`).
//!
//! Each turn: issue new fetches, start waiting ones whose server has room, poll until the
//! earliest deadline, expire what is late, advance what is ready, hand finished fetches back.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use mio::net::{TcpStream, UdpSocket};
use mio::{Events, Interest, Poll, Token};
use slab::Slab;

use crate::dns::{DnsError, Resolve, Resolver, ResolverConfig};
use crate::fetcher::addr_policy::{AddrPolicy, Verdict};
use crate::fetcher::conn::{Conn, ConnectStatus, RecvStatus, Transport};
use crate::fetcher::fetch::{
    Attempt, Fetch, FetchDone, FetchRequest, FetchState, Marks, Target, TargetHost, Timings,
};
use crate::fetcher::stats::LoopStats;
use crate::http::{self, Limits, Method, Progress, Request, ResponseDecoder};
use crate::ReturnCode;

/// The longest a poll sleeps, so that an interrupt flag set by a signal handler is seen soon.
const MAX_POLL_WAIT: Duration = Duration::from_millis(200);
/// Scratch buffer for socket reads.
const READ_BUF_BYTES: usize = 64 * 1024;
/// Largest DNS datagram accepted (we send no EDNS, so answers are ≤ 512 bytes by the RFC;
/// larger ones are cut and then fail to parse, which is the right outcome).
const DNS_DATAGRAM_BYTES: usize = 4096;
/// Datagrams read from one DNS socket per readiness event before yielding (a flood of
/// spoofed answers must not starve the rest of the loop; the socket stays readable and
/// the remainder is read on the next turn).
const MAX_DNS_READS_PER_EVENT: usize = 256;
/// mio tokens at and above this value name DNS sockets; below it, connection slab keys.
const DNS_TOKEN_BASE: usize = usize::MAX / 2;
/// Decoders whose buffers grew past this are dropped rather than pooled, so one huge page
/// does not pin its memory for the rest of the crawl.
const POOLED_BUFFER_MAX: usize = 1 << 20;
/// Extra time the loop allows the resolver beyond its own total timeout before it declares a
/// fetch's DNS stage timed out itself (a safety net: the resolver should always answer first).
const DNS_GRACE: Duration = Duration::from_secs(2);
/// Prefetch names taken from the source per turn, and the most queries they may leave
/// outstanding (prefetching must not crowd out the lookups of URLs that are due).
const MAX_PREFETCH_PER_TURN: usize = 32;
const MAX_PREFETCH_PENDING: usize = 256;
/// Times one turn re-asks an idle source after synchronous completions before polling.
const MAX_IDLE_RECHECKS: usize = 8;

/// What the crawler needs to know to run.
#[derive(Clone)]
pub struct CrawlerConfig {
    /// Open HTTP connections in total.
    pub max_conns: usize,
    /// Open connections per server IP.
    pub conns_per_server: usize,
    /// Fetches alive at once (DNS + waiting + connected).
    pub max_live: usize,
    pub user_agent: String,
    pub resolver: ResolverConfig,
    pub limits: Limits,
    /// Overall time for the HTTP stage (connect + send + receive), from the moment a
    /// connection slot is assigned: a server trickling one byte a second still times out.
    pub http_timeout: Duration,
    /// Time allowed for the TCP connect (within `http_timeout`).
    pub connect_timeout: Duration,
    /// How long an idle keep-alive connection is kept for the next URL to its server.
    pub idle_timeout: Duration,
    pub addr_policy: AddrPolicy,
    pub tls: Arc<rustls::ClientConfig>,
    /// Ask for gzip/deflate bodies.
    pub accept_encoding: bool,
}

/// What a [`FetchSource`] has to offer when the crawler has room for another fetch.
pub enum Next {
    Fetch(FetchRequest),
    /// Nothing is due before this instant (politeness delays).
    Wait(Instant),
    /// Nothing now; more may come when live fetches finish.
    Idle,
    /// Nothing now or ever.
    Done,
}

/// Where the crawler gets work and reports results.
pub trait FetchSource {
    fn next_fetch(&mut self, now: Instant) -> Next;
    /// Called exactly once per request, with its outcome.
    fn fetch_done(&mut self, done: &FetchDone<'_>);
    /// A host name worth resolving ahead of time (DESIGN §3 prefetching), if any.
    fn poll_prefetch(&mut self) -> Option<String> {
        None
    }
}

/// Whether the crawler has anything left to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Turn {
    Continue,
    Finished,
}

/// What the loop knows about its [`FetchSource`]: one place instead of a "done" flag beside
/// an optional "wait until".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SourceState {
    /// Ask it whenever there is room for a fetch.
    Ask,
    /// It said nothing is due before this instant; a finished fetch may change that.
    Wait(Instant),
    /// It said it has nothing now or ever.
    Done,
}

/// A named deadline in the loop's timer set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Timer {
    Fetch(usize),
    IdleConn(usize),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ConnState {
    /// Carrying this fetch (connecting, sending or receiving).
    Active { fetch: usize },
    /// Open and idle, kept for reuse until `deadline`.
    Idle { deadline: Instant },
}

/// Which connections may carry a request: same address, same TLS server name.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct ConnKey {
    addr: SocketAddr,
    server_name: Option<String>,
}

struct ConnEntry {
    conn: Conn,
    key: ConnKey,
    state: ConnState,
    registered: Interest,
}

/// How one advance of a fetch ended.
enum Step {
    /// Waiting for readiness.
    Pending,
    /// A complete response; `reusable` says whether the connection may carry another.
    Complete {
        reusable: bool,
    },
    Failed(ReturnCode),
    /// A reused connection failed before the first byte: try again on a fresh one.
    RetryFresh,
}

/// What the receive closure saw.
enum Received {
    More,
    Complete { leftover: bool },
    Error(ReturnCode),
}

pub struct Crawler {
    config: CrawlerConfig,
    poll: Poll,
    events: Events,
    ready: Vec<(Token, bool, bool)>,
    resolver: Resolver,
    dns_sockets: Vec<UdpSocket>,
    dns_servers: Vec<SocketAddr>,
    fetches: Slab<Fetch>,
    conns: Slab<ConnEntry>,
    wait_for_issue: VecDeque<FetchRequest>,
    wait_for_dns: HashMap<String, Vec<usize>>,
    wait_for_http: VecDeque<usize>,
    /// Open connections per server IP.
    busy_servers: HashMap<IpAddr, usize>,
    idle: HashMap<ConnKey, Vec<usize>>,
    idle_order: BTreeSet<(Instant, usize)>,
    timers: BTreeSet<(Instant, Timer)>,
    source: SourceState,
    /// Connections whose last receive pass ran out of budget with data possibly unread:
    /// advanced again next turn without waiting for an event (mio is edge-triggered).
    ready_again: Vec<usize>,
    dispatch_needed: bool,
    read_buf: Vec<u8>,
    content_buf: Vec<u8>,
    decoder_pool: Vec<ResponseDecoder>,
    request_pool: Vec<Vec<u8>>,
    stats: LoopStats,
}

impl Crawler {
    pub fn new(config: CrawlerConfig) -> io::Result<Crawler> {
        let poll = Poll::new()?;
        let mut dns_sockets = Vec::new();
        let dns_servers = config.resolver.servers.clone();
        for (i, server) in dns_servers.iter().enumerate() {
            // Port 0: the kernel picks a random ephemeral source port per socket.
            let bind: SocketAddr = if server.is_ipv4() {
                "0.0.0.0:0".parse().expect("literal socket address")
            } else {
                "[::]:0".parse().expect("literal socket address")
            };
            let mut sock = UdpSocket::bind(bind)?;
            poll.registry()
                .register(&mut sock, Token(DNS_TOKEN_BASE + i), Interest::READABLE)?;
            dns_sockets.push(sock);
        }
        let mut ids = crate::fetcher::tls::SecureIds::new();
        let resolver = Resolver::new(config.resolver.clone(), Box::new(move || ids.next_id()));
        Ok(Crawler {
            poll,
            events: Events::with_capacity(1024),
            ready: Vec::with_capacity(1024),
            resolver,
            dns_sockets,
            dns_servers,
            fetches: Slab::with_capacity(config.max_live),
            conns: Slab::with_capacity(config.max_conns),
            wait_for_issue: VecDeque::new(),
            wait_for_dns: HashMap::new(),
            wait_for_http: VecDeque::new(),
            busy_servers: HashMap::new(),
            idle: HashMap::new(),
            idle_order: BTreeSet::new(),
            timers: BTreeSet::new(),
            source: SourceState::Ask,
            ready_again: Vec::new(),
            dispatch_needed: false,
            read_buf: vec![0; READ_BUF_BYTES],
            content_buf: Vec::new(),
            decoder_pool: Vec::new(),
            request_pool: Vec::new(),
            stats: LoopStats::default(),
            config,
        })
    }

    /// Queues a request ahead of anything the source offers.
    pub fn fetch_push(&mut self, req: FetchRequest) {
        self.wait_for_issue.push_back(req);
    }

    pub fn stats(&self) -> LoopStats {
        let mut s = self.stats.clone();
        s.live = self.fetches.len();
        s.waiting_http = self.wait_for_http.len();
        s.waiting_dns = self
            .fetches
            .iter()
            .filter(|(_, f)| matches!(f.state, FetchState::DnsReceive { .. }))
            .count();
        s.conns_open = self.conns.len();
        let d = self.resolver.stats();
        s.dns_queries_sent = d.queries_sent;
        s.dns_cache_hits = d.cache_hits;
        s
    }

    /// One turn of the loop (DESIGN §2 steps 1–7).
    pub fn turn(&mut self, source: &mut dyn FetchSource) -> io::Result<Turn> {
        let now = Instant::now();
        self.issue(source, now);
        for _ in 0..MAX_PREFETCH_PER_TURN {
            if self.resolver.pending() >= MAX_PREFETCH_PENDING {
                break;
            }
            match source.poll_prefetch() {
                Some(host) => {
                    let _ = self.resolver.resolve(&host, now);
                }
                None => break,
            }
        }
        self.flush_dns();
        self.dispatch(source, now);

        // Nothing live: finished if the source said so, or if it is idle with nothing that
        // could change its mind. Dispatch can complete fetches synchronously (a reused
        // connection whose response was already there), and such a completion may have given
        // the source more work, so it is asked again before concluding.
        for _ in 0..MAX_IDLE_RECHECKS {
            if !self.fetches.is_empty()
                || !self.wait_for_issue.is_empty()
                || matches!(self.source, SourceState::Wait(_))
            {
                break;
            }
            if self.source == SourceState::Done {
                self.close_idle_all();
                return Ok(Turn::Finished);
            }
            let finished_before = self.stats.outcomes.total();
            self.issue(source, now);
            self.flush_dns();
            self.dispatch(source, now);
            if self.stats.outcomes.total() == finished_before
                && self.fetches.is_empty()
                && self.wait_for_issue.is_empty()
                && self.source == SourceState::Ask
            {
                self.source = SourceState::Done;
                self.close_idle_all();
                return Ok(Turn::Finished);
            }
        }

        let timeout = self.poll_timeout(now);
        match self.poll.poll(&mut self.events, Some(timeout)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
        self.ready.clear();
        for ev in self.events.iter() {
            self.ready.push((
                ev.token(),
                ev.is_readable() || ev.is_read_closed() || ev.is_error(),
                ev.is_writable() || ev.is_write_closed() || ev.is_error(),
            ));
        }

        let now = Instant::now();
        self.expire(source, now);
        self.resolver.handle_timeout(now);

        let ready = std::mem::take(&mut self.ready);
        for &(token, readable, writable) in &ready {
            if token.0 >= DNS_TOKEN_BASE {
                self.read_dns(token.0 - DNS_TOKEN_BASE, now);
            } else {
                self.conn_ready(source, token.0, readable, writable);
            }
        }
        self.ready = ready;
        // Connections that yielded with data left get their next pass (each pass is bounded,
        // so one huge response shares the loop with every other fetch).
        let again = std::mem::take(&mut self.ready_again);
        for &conn in &again {
            // Only a connection still carrying a fetch; one parked or closed meanwhile is not
            // "readable" in the idle sense (that would read as the server closing it).
            if let Some(ConnState::Active { fetch }) = self.conns.get(conn).map(|e| e.state) {
                self.advance(source, fetch);
            }
        }
        self.resolver_events(source, Instant::now());
        self.flush_dns();
        Ok(Turn::Continue)
    }

    /// Ctrl-C: every live fetch and every pushed request ends now with `Interrupted`.
    pub fn interrupt(&mut self, source: &mut dyn FetchSource) {
        let keys: Vec<usize> = self.fetches.iter().map(|(k, _)| k).collect();
        for key in keys {
            self.finish(source, key, ReturnCode::Interrupted);
        }
        while let Some(req) = self.wait_for_issue.pop_front() {
            report_without_response(source, &req, ReturnCode::Interrupted);
        }
        self.close_idle_all();
    }

    fn poll_timeout(&self, now: Instant) -> Duration {
        if !self.ready_again.is_empty() {
            return Duration::ZERO;
        }
        let mut next = now + MAX_POLL_WAIT;
        if let Some(&(t, _)) = self.timers.first() {
            next = next.min(t);
        }
        if let Some(t) = self.resolver.poll_timeout() {
            next = next.min(t);
        }
        if let SourceState::Wait(t) = self.source {
            next = next.min(t);
        }
        next.saturating_duration_since(now)
    }

    // ---- step 1: issue ----

    fn issue(&mut self, source: &mut dyn FetchSource, now: Instant) {
        if matches!(self.source, SourceState::Wait(t) if t <= now) {
            self.source = SourceState::Ask;
        }
        while self.fetches.len() < self.config.max_live {
            let req = if let Some(req) = self.wait_for_issue.pop_front() {
                req
            } else if self.source != SourceState::Ask {
                break;
            } else {
                match source.next_fetch(now) {
                    Next::Fetch(req) => req,
                    Next::Wait(t) => {
                        self.source = SourceState::Wait(t.max(now));
                        break;
                    }
                    Next::Idle => break,
                    Next::Done => {
                        self.source = SourceState::Done;
                        break;
                    }
                }
            };
            self.start_fetch(source, req, now);
        }
    }

    fn start_fetch(&mut self, source: &mut dyn FetchSource, req: FetchRequest, now: Instant) {
        self.stats.issued += 1;
        let target = match Target::of(&req.url) {
            Ok(t) => t,
            Err(code) => {
                self.stats.outcomes.add(code);
                report_without_response(source, &req, code);
                return;
            }
        };
        let decoder = self.decoder_pool.pop().unwrap_or_else(|| {
            let mut d = ResponseDecoder::new(self.config.limits);
            d.reset(false);
            d
        });
        let mut request = self.request_pool.pop().unwrap_or_default();
        request.clear();
        let written = http::write_request(
            &mut request,
            &Request {
                method: Method::Get,
                host: crate::http::host_and_port(&req.url),
                target: crate::http::path_and_query(&req.url),
                user_agent: &self.config.user_agent,
                accept_encoding: self.config.accept_encoding,
                keep_alive: true,
                extra_headers: &[],
            },
        );
        let host = target.host.clone();
        let key = self.fetches.insert(Fetch {
            req,
            target,
            state: FetchState::Init,
            marks: Marks::new(now),
            deadline: None,
            http_deadline: None,
            request,
            decoder,
            peer: None,
            sent_at: None,
            stale_retries_left: 1,
        });
        self.stats.peak_live = self.stats.peak_live.max(self.fetches.len());
        if written.is_err() {
            self.finish(source, key, ReturnCode::HttpBadUrlSyntax);
            return;
        }
        match host {
            TargetHost::Ip(ip) => self.resolved(source, key, Ok(vec![ip]), now),
            TargetHost::Name(name) => match self.resolver.resolve(&name, now) {
                Resolve::Done(result) => self.resolved(source, key, result.map(|r| r.addrs), now),
                Resolve::Pending => {
                    let waiting_name = crate::dns::normalize_name(&name).unwrap_or(name);
                    self.wait_for_dns
                        .entry(waiting_name.clone())
                        .or_default()
                        .push(key);
                    self.fetches[key].state = FetchState::DnsReceive { name: waiting_name };
                    let deadline = now + self.config.resolver.total_timeout + DNS_GRACE;
                    self.set_deadline(key, Some(deadline));
                }
            },
        }
    }

    /// A fetch's name is resolved (or failed): check the addresses and queue for HTTP.
    fn resolved(
        &mut self,
        source: &mut dyn FetchSource,
        key: usize,
        result: Result<Vec<IpAddr>, DnsError>,
        now: Instant,
    ) {
        let addrs = match result {
            Ok(addrs) if !addrs.is_empty() => addrs,
            Ok(_) => return self.finish(source, key, ReturnCode::DnsNoAddress),
            Err(e) => return self.finish(source, key, e.return_code()),
        };
        if let Verdict::Blocked(_) = self.config.addr_policy.check(&addrs) {
            return self.finish(source, key, ReturnCode::PrivateAddressBlocked);
        }
        // Prefer IPv4: loopback test webs and most of the web answer there; the address
        // checked above is exactly the one connected to.
        let ip = addrs
            .iter()
            .copied()
            .find(IpAddr::is_ipv4)
            .unwrap_or(addrs[0]);
        let fetch = &mut self.fetches[key];
        fetch.marks.resolved = Some(now);
        let addr = SocketAddr::new(ip, fetch.target.port);
        fetch.state = FetchState::WaitForHttp { addr };
        self.set_deadline(key, None);
        self.wait_for_http.push_back(key);
        self.dispatch_needed = true;
    }

    // ---- DNS plumbing ----

    fn flush_dns(&mut self) {
        while let Some(tx) = self.resolver.poll_transmit() {
            if let (Some(sock), Some(addr)) = (
                self.dns_sockets.get(tx.server),
                self.dns_servers.get(tx.server),
            ) {
                // A failed send is a lost datagram: the resolver's retry timer covers it.
                let _ = sock.send_to(&tx.payload, *addr);
            }
        }
    }

    fn read_dns(&mut self, server: usize, now: Instant) {
        let mut buf = [0u8; DNS_DATAGRAM_BYTES];
        for _ in 0..MAX_DNS_READS_PER_EVENT {
            let Some(sock) = self.dns_sockets.get(server) else {
                return;
            };
            match sock.recv_from(&mut buf) {
                Ok((n, from)) => self.resolver.handle_datagram(server, from, &buf[..n], now),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // ICMP port unreachable and the like surface here; the retry timer covers it.
                Err(_) => return,
            }
        }
        // Cap reached with datagrams left: mio is edge-triggered, so re-arm the socket to be
        // told again rather than lose the rest.
        if let Some(sock) = self.dns_sockets.get_mut(server) {
            let _ = self.poll.registry().reregister(
                sock,
                Token(DNS_TOKEN_BASE + server),
                Interest::READABLE,
            );
        }
    }

    fn resolver_events(&mut self, source: &mut dyn FetchSource, now: Instant) {
        while let Some((name, result)) = self.resolver.poll_event() {
            let Some(keys) = self.wait_for_dns.remove(&name) else {
                continue; // a prefetch, or every waiter already gave up
            };
            for key in keys {
                let waiting = self.fetches.get(key).is_some_and(
                    |f| matches!(&f.state, FetchState::DnsReceive { name: n } if *n == name),
                );
                if waiting {
                    self.resolved(
                        source,
                        key,
                        result.as_ref().map(|r| r.addrs.clone()).map_err(|e| *e),
                        now,
                    );
                }
            }
        }
    }

    // ---- step 2: dispatch waiting fetches to connections ----

    fn dispatch(&mut self, source: &mut dyn FetchSource, now: Instant) {
        if !self.dispatch_needed {
            return;
        }
        self.dispatch_needed = false;
        for _ in 0..self.wait_for_http.len() {
            let Some(key) = self.wait_for_http.pop_front() else {
                break;
            };
            if !self.try_start_http(source, key, now) {
                self.wait_for_http.push_back(key);
            }
        }
    }

    /// Gives a waiting fetch a connection if politeness and the global cap allow.
    /// Returns false if it must keep waiting.
    fn try_start_http(&mut self, source: &mut dyn FetchSource, key: usize, now: Instant) -> bool {
        let Some(fetch) = self.fetches.get(key) else {
            return true; // finished meanwhile
        };
        let FetchState::WaitForHttp { addr } = fetch.state else {
            return true;
        };
        let ckey = ConnKey {
            addr,
            server_name: fetch.target.server_name(),
        };
        if let Some(conn) = self.take_idle(&ckey) {
            self.stats.conns_reused += 1;
            self.assign(key, now);
            self.fetches[key].state = FetchState::HttpSend {
                conn,
                sent: 0,
                attempt: Attempt::Reused,
            };
            self.conns[conn].state = ConnState::Active { fetch: key };
            self.fetches[key].peer = Some(addr);
            self.advance(source, key);
            return true;
        }
        let open_here = self.busy_servers.get(&addr.ip()).copied().unwrap_or(0);
        if open_here >= self.config.conns_per_server {
            // At the per-server cap: an idle connection of another kind (other TLS name) to
            // the same server may make room; otherwise wait for a busy one to finish.
            match self.idle_for_ip(addr.ip()) {
                Some(c) => self.close_conn(c),
                None => return false,
            }
        }
        if self.conns.len() >= self.config.max_conns {
            match self.idle_order.first().copied() {
                Some((_, c)) => self.close_conn(c),
                None => return false,
            }
        }
        self.assign(key, now);
        self.open_conn(source, key, ckey, now);
        true
    }

    fn assign(&mut self, key: usize, now: Instant) {
        let fetch = &mut self.fetches[key];
        fetch.marks.assigned = Some(now);
        let deadline = now + self.config.http_timeout;
        fetch.http_deadline = Some(deadline);
        self.set_deadline(key, Some(deadline));
    }

    fn open_conn(&mut self, source: &mut dyn FetchSource, key: usize, ckey: ConnKey, now: Instant) {
        let addr = ckey.addr;
        let transport = match &ckey.server_name {
            None => Transport::Plain,
            Some(name) => {
                let server_name = match rustls::pki_types::ServerName::try_from(name.clone()) {
                    Ok(n) => n,
                    Err(_) => return self.finish(source, key, ReturnCode::TlsHandshake),
                };
                match rustls::ClientConnection::new(self.config.tls.clone(), server_name) {
                    Ok(c) => Transport::Tls(Box::new(c)),
                    Err(_) => return self.finish(source, key, ReturnCode::TlsHandshake),
                }
            }
        };
        let stream = match TcpStream::connect(addr) {
            Ok(s) => s,
            Err(_) => return self.finish(source, key, ReturnCode::HttpConnect),
        };
        let _ = stream.set_nodelay(true);
        let entry = self.conns.vacant_entry();
        let conn_key = entry.key();
        let mut conn = Conn::new(stream, transport);
        let interest = Interest::READABLE | Interest::WRITABLE;
        if self
            .poll
            .registry()
            .register(&mut conn.stream, Token(conn_key), interest)
            .is_err()
        {
            return self.finish(source, key, ReturnCode::HttpConnect);
        }
        entry.insert(ConnEntry {
            conn,
            key: ckey,
            state: ConnState::Active { fetch: key },
            registered: interest,
        });
        *self.busy_servers.entry(addr.ip()).or_insert(0) += 1;
        self.stats.conns_opened += 1;
        let fetch = &mut self.fetches[key];
        fetch.peer = Some(addr);
        fetch.state = FetchState::Connecting { conn: conn_key };
        // The connect has its own, shorter deadline inside the overall one.
        let connect_deadline = (now + self.config.connect_timeout).min(
            fetch
                .http_deadline
                .unwrap_or(now + self.config.http_timeout),
        );
        self.set_deadline(key, Some(connect_deadline));
    }

    fn take_idle(&mut self, ckey: &ConnKey) -> Option<usize> {
        let list = self.idle.get_mut(ckey)?;
        let conn = list.pop()?;
        if list.is_empty() {
            self.idle.remove(ckey);
        }
        if let ConnState::Idle { deadline } = self.conns[conn].state {
            self.idle_order.remove(&(deadline, conn));
            self.timers.remove(&(deadline, Timer::IdleConn(conn)));
        }
        Some(conn)
    }

    fn idle_for_ip(&self, ip: IpAddr) -> Option<usize> {
        self.idle
            .iter()
            .find(|(k, v)| k.addr.ip() == ip && !v.is_empty())
            .and_then(|(_, v)| v.last().copied())
    }

    // ---- step 5: advance fetches whose sockets are ready ----

    fn conn_ready(
        &mut self,
        source: &mut dyn FetchSource,
        conn: usize,
        readable: bool,
        _writable: bool,
    ) {
        let Some(entry) = self.conns.get(conn) else {
            return; // closed earlier in this turn
        };
        match entry.state {
            ConnState::Active { fetch } => self.advance(source, fetch),
            ConnState::Idle { .. } => {
                if readable {
                    // An idle connection has nothing to say: a readable event means the server
                    // closed it (or sent bytes we never asked for). Either way it is done.
                    self.close_conn(conn);
                    self.dispatch_needed = true;
                }
            }
        }
    }

    /// Runs a fetch's state machine as far as it can go now. The one place that decides
    /// connection-stage transitions.
    fn advance(&mut self, source: &mut dyn FetchSource, key: usize) {
        let step = self.step(key);
        match step {
            Step::Pending => {}
            Step::Complete { reusable } => self.complete(source, key, reusable),
            Step::Failed(code) => self.finish(source, key, code),
            Step::RetryFresh => self.retry_fresh(key),
        }
    }

    fn step(&mut self, key: usize) -> Step {
        // Bounded: each state moves forward or returns; three states, so three passes.
        for _ in 0..4 {
            let Some(fetch) = self.fetches.get_mut(key) else {
                return Step::Pending;
            };
            let Some(conn_key) = fetch.state.conn() else {
                return Step::Pending;
            };
            let entry = &mut self.conns[conn_key];
            match fetch.state.clone() {
                FetchState::Connecting { conn } => match entry.conn.connect_status() {
                    Err(code) => return Step::Failed(code),
                    Ok(ConnectStatus::InProgress) => return Step::Pending,
                    Ok(ConnectStatus::Connected) => {
                        let now = Instant::now();
                        fetch.marks.connected = Some(now);
                        fetch.state = FetchState::HttpSend {
                            conn,
                            sent: 0,
                            attempt: Attempt::Fresh,
                        };
                        if let Some(d) = fetch.http_deadline {
                            let old = fetch.deadline.replace(d);
                            if let Some(old) = old {
                                self.timers.remove(&(old, Timer::Fetch(key)));
                            }
                            self.timers.insert((d, Timer::Fetch(key)));
                        }
                    }
                },
                FetchState::HttpSend {
                    conn,
                    mut sent,
                    attempt,
                } => {
                    let res = entry.conn.send(&fetch.request, &mut sent);
                    match res {
                        Err(_) if attempt == Attempt::Reused && fetch.stale_retries_left > 0 => {
                            return Step::RetryFresh
                        }
                        Err(code) => return Step::Failed(code),
                        Ok(false) => {
                            fetch.state = FetchState::HttpSend {
                                conn,
                                sent,
                                attempt,
                            };
                            let want = entry.conn.interest(true);
                            reregister(&self.poll, entry, conn, want);
                            return Step::Pending;
                        }
                        Ok(true) => {
                            fetch.marks.sent = Some(Instant::now());
                            fetch.sent_at = Some(SystemTime::now());
                            fetch.state = FetchState::HttpReceive { conn, attempt };
                        }
                    }
                }
                FetchState::HttpReceive { conn, attempt } => {
                    let decoder = &mut fetch.decoder;
                    let marks = &mut fetch.marks;
                    let mut received = Received::More;
                    let mut bytes = 0u64;
                    let res = entry.conn.recv(&mut self.read_buf, &mut |data: &[u8]| {
                        if marks.first_byte.is_none() {
                            marks.first_byte = Some(Instant::now());
                        }
                        bytes += data.len() as u64;
                        match decoder.process(data) {
                            Ok((Progress::NeedMore, _)) => true,
                            Ok((Progress::Complete, used)) => {
                                received = Received::Complete {
                                    leftover: used < data.len(),
                                };
                                false
                            }
                            Err(e) => {
                                received = Received::Error(e.return_code());
                                false
                            }
                        }
                    });
                    self.stats.bytes_received += bytes;
                    let nothing_yet = fetch.decoder.raw().is_empty();
                    let may_retry =
                        attempt == Attempt::Reused && nothing_yet && fetch.stale_retries_left > 0;
                    return match (res, received) {
                        (_, Received::Complete { leftover }) => Step::Complete {
                            reusable: !leftover && fetch.decoder.reusable(),
                        },
                        (_, Received::Error(code)) => Step::Failed(code),
                        (Err(_), Received::More) if may_retry => Step::RetryFresh,
                        (Err(code), Received::More) => Step::Failed(code),
                        (Ok(RecvStatus::Eof { .. }), Received::More) if may_retry => {
                            Step::RetryFresh
                        }
                        (Ok(RecvStatus::Eof { clean }), Received::More) => {
                            let close_delimited = matches!(
                                fetch.decoder.head().map(|h| &h.framing),
                                Some(http::Framing::Close)
                            );
                            match fetch.decoder.process_eof() {
                                Ok(Progress::Complete) if !clean && close_delimited => {
                                    // TLS without close_notify: a close-delimited body may
                                    // have been cut by an attacker (DESIGN §4).
                                    Step::Failed(ReturnCode::TlsTruncated)
                                }
                                Ok(Progress::Complete) => Step::Complete { reusable: false },
                                Ok(Progress::NeedMore) => {
                                    Step::Failed(ReturnCode::HttpPageTruncated)
                                }
                                Err(e) => Step::Failed(e.return_code()),
                            }
                        }
                        (Ok(RecvStatus::Budget), Received::More) => {
                            self.ready_again.push(conn);
                            Step::Pending
                        }
                        (Ok(_), Received::More) => {
                            let want = entry.conn.interest(false);
                            reregister(&self.poll, entry, conn, want);
                            Step::Pending
                        }
                    };
                }
                FetchState::Init
                | FetchState::DnsReceive { .. }
                | FetchState::WaitForHttp { .. } => return Step::Pending,
            }
        }
        Step::Pending
    }

    /// A reused keep-alive connection was already closed by the server: drop it and queue
    /// the fetch again for a fresh connection (once).
    fn retry_fresh(&mut self, key: usize) {
        // Only reached from HttpSend/HttpReceive, which always hold a connection.
        let Some(conn) = self.fetches[key].state.conn() else {
            return;
        };
        self.stats.stale_retries += 1;
        let addr = self.conns[conn].key.addr;
        let fetch = &mut self.fetches[key];
        fetch.stale_retries_left -= 1;
        fetch.decoder.reset(false);
        fetch.state = FetchState::WaitForHttp { addr };
        fetch.sent_at = None;
        self.close_conn(conn);
        self.set_deadline(key, None);
        self.wait_for_http.push_front(key);
        self.dispatch_needed = true;
    }

    /// A complete response: decode its content, release or keep the connection, report.
    fn complete(&mut self, source: &mut dyn FetchSource, key: usize, reusable: bool) {
        if let Some(conn) = self.fetches[key].state.conn() {
            if reusable {
                self.park_conn(conn);
            } else {
                self.close_conn(conn);
            }
        }
        let fetch = &self.fetches[key];
        let code = match fetch.decoder.head() {
            Some(head) => {
                match http::decode_content(
                    head,
                    fetch.decoder.body(),
                    &self.config.limits,
                    &mut self.content_buf,
                ) {
                    Ok(true) => ReturnCode::Success,
                    Ok(false) => {
                        self.content_buf.clear();
                        ReturnCode::Success
                    }
                    Err(e) => {
                        self.content_buf.clear();
                        e.return_code()
                    }
                }
            }
            None => ReturnCode::MimeMissing,
        };
        self.finish_with(source, key, code, true);
    }

    // ---- connections ----

    fn park_conn(&mut self, conn: usize) {
        let deadline = Instant::now() + self.config.idle_timeout;
        let entry = &mut self.conns[conn];
        entry.state = ConnState::Idle { deadline };
        let want = Interest::READABLE;
        reregister(&self.poll, entry, conn, want);
        self.idle.entry(entry.key.clone()).or_default().push(conn);
        self.idle_order.insert((deadline, conn));
        self.timers.insert((deadline, Timer::IdleConn(conn)));
        self.dispatch_needed = true;
    }

    fn close_conn(&mut self, conn: usize) {
        if !self.conns.contains(conn) {
            return;
        }
        let mut entry = self.conns.remove(conn);
        if let ConnState::Idle { deadline } = entry.state {
            self.idle_order.remove(&(deadline, conn));
            self.timers.remove(&(deadline, Timer::IdleConn(conn)));
            if let Some(list) = self.idle.get_mut(&entry.key) {
                list.retain(|&c| c != conn);
                if list.is_empty() {
                    self.idle.remove(&entry.key);
                }
            }
        }
        let _ = self.poll.registry().deregister(&mut entry.conn.stream);
        let ip = entry.key.addr.ip();
        if let Some(n) = self.busy_servers.get_mut(&ip) {
            *n -= 1;
            if *n == 0 {
                self.busy_servers.remove(&ip);
            }
        }
        self.dispatch_needed = true;
    }

    fn close_idle_all(&mut self) {
        let idle: Vec<usize> = self.idle_order.iter().map(|&(_, c)| c).collect();
        for c in idle {
            self.close_conn(c);
        }
    }

    // ---- step 4: deadlines ----

    fn set_deadline(&mut self, key: usize, deadline: Option<Instant>) {
        let fetch = &mut self.fetches[key];
        if let Some(old) = fetch.deadline.take() {
            self.timers.remove(&(old, Timer::Fetch(key)));
        }
        if let Some(d) = deadline {
            fetch.deadline = Some(d);
            self.timers.insert((d, Timer::Fetch(key)));
        }
    }

    fn expire(&mut self, source: &mut dyn FetchSource, now: Instant) {
        while let Some(&(t, timer)) = self.timers.first() {
            if t > now {
                break;
            }
            self.timers.pop_first();
            match timer {
                Timer::IdleConn(conn) => self.close_conn(conn),
                Timer::Fetch(key) => {
                    let Some(fetch) = self.fetches.get_mut(key) else {
                        continue;
                    };
                    fetch.deadline = None;
                    let code = match fetch.state {
                        FetchState::DnsReceive { .. } => ReturnCode::DnsTimeout,
                        FetchState::Connecting { .. }
                            if fetch.http_deadline.is_some_and(|d| d > now) =>
                        {
                            ReturnCode::HttpConnectTimeout
                        }
                        _ => ReturnCode::HttpTimeout,
                    };
                    self.finish(source, key, code);
                }
            }
        }
    }

    // ---- step 6: report ----

    fn finish(&mut self, source: &mut dyn FetchSource, key: usize, code: ReturnCode) {
        self.content_buf.clear();
        self.finish_with(source, key, code, false);
    }

    /// Removes the fetch, releases what it held and reports it. `content_ready` says whether
    /// `content_buf` holds its decoded content.
    fn finish_with(
        &mut self,
        source: &mut dyn FetchSource,
        key: usize,
        code: ReturnCode,
        content_ready: bool,
    ) {
        if !self.fetches.contains(key) {
            return;
        }
        let mut fetch = self.fetches.remove(key);
        if let Some(d) = fetch.deadline.take() {
            self.timers.remove(&(d, Timer::Fetch(key)));
        }
        match &fetch.state {
            FetchState::Init => {}
            FetchState::DnsReceive { name } => {
                if let Some(list) = self.wait_for_dns.get_mut(name) {
                    list.retain(|&k| k != key);
                    if list.is_empty() {
                        self.wait_for_dns.remove(name);
                    }
                }
            }
            FetchState::WaitForHttp { .. } => self.wait_for_http.retain(|&k| k != key),
            FetchState::Connecting { conn }
            | FetchState::HttpSend { conn, .. }
            | FetchState::HttpReceive { conn, .. } => {
                // Still attached: it did not end with a reusable response.
                if matches!(self.conns.get(*conn), Some(e) if e.state == ConnState::Active { fetch: key })
                {
                    self.close_conn(*conn);
                }
            }
        }
        self.stats.outcomes.add(code);
        let now = Instant::now();
        let head = fetch.decoder.head();
        let body = if head.is_some() {
            fetch.decoder.body()
        } else {
            &[]
        };
        let content = if content_ready && !self.content_buf.is_empty() {
            &self.content_buf[..]
        } else {
            body
        };
        let sent = fetch.sent_at.is_some();
        let raw = fetch.decoder.raw();
        let payload = if head.is_some() {
            raw.get(fetch.decoder.head_len()..).unwrap_or(&[])
        } else {
            &[]
        };
        let done = FetchDone {
            request: &fetch.req,
            outcome: code,
            head,
            request_bytes: if sent { &fetch.request } else { &[] },
            response: raw,
            payload,
            body,
            content,
            peer: fetch.peer,
            sent_at: fetch.sent_at,
            timings: fetch.marks.timings(now),
        };
        source.fetch_done(&done);
        // A finished fetch can make work due before the source's last Wait (a host freed, a
        // robots.txt redirect hop queued): ask again.
        if matches!(self.source, SourceState::Wait(_)) {
            self.source = SourceState::Ask;
        }
        // Recycle the big buffers.
        if fetch.decoder.raw().len() <= POOLED_BUFFER_MAX
            && self.decoder_pool.len() < self.config.max_live
        {
            let mut d = fetch.decoder;
            d.reset(false);
            self.decoder_pool.push(d);
        }
        if self.request_pool.len() < self.config.max_live {
            self.request_pool.push(fetch.request);
        }
        if self.content_buf.capacity() > POOLED_BUFFER_MAX {
            self.content_buf = Vec::new();
        }
        self.dispatch_needed = true;
    }
}

fn reregister(poll: &Poll, entry: &mut ConnEntry, conn: usize, want: Interest) {
    if entry.registered != want {
        // A failed reregister leaves the old interest; the fetch deadline still bounds it.
        if poll
            .registry()
            .reregister(&mut entry.conn.stream, Token(conn), want)
            .is_ok()
        {
            entry.registered = want;
        }
    }
}

/// Reports a request that never got as far as a response (bad URL, interrupted in the queue).
fn report_without_response(source: &mut dyn FetchSource, req: &FetchRequest, code: ReturnCode) {
    let done = FetchDone {
        request: req,
        outcome: code,
        head: None,
        request_bytes: &[],
        response: &[],
        payload: &[],
        body: &[],
        content: &[],
        peer: None,
        sent_at: None,
        timings: Timings::default(),
    };
    source.fetch_done(&done);
}
