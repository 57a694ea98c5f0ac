//! The `Crawler`: one `mio::Poll` loop driving every [`Fetch`] (`docs/ARCHITECTURE.md`).
//!
//! The loop owns every socket, the clock and all timing; the protocol work is done by the
//! sans-IO cores ([`crate::dns::Resolver`], [`crate::http::ResponseDecoder`]) and the byte
//! shuffling by [`super::conn`]. Requests come in through [`Crawler::fetch_push`]; every
//! request ends in exactly one [`Completion`], queued for the driver ([`super::driver`]) to
//! take with [`Crawler::poll_completion`] between turns: the loop never calls out in the
//! middle of a turn. The clock is read once per turn, after the poll; [`Crawler::now`] hands
//! that reading on.
//!
//! The book's queues, by name:
//! - `wait_for_issue`: pushed requests not yet given a `Fetch` (the live count is bounded);
//! - `wait_for_dns`: fetches waiting for a name, by name (the per-server query lists live in
//!   the resolver, which sends each new query to the server with the shortest list);
//! - `wait_for_http`: resolved fetches waiting for a connection slot;
//! - `busy_servers`: open connections per server IP (politeness: `--conns-per-server`), kept
//!   by [`super::pool::ConnPool`] with the keep-alive pool;
//! - `completions`: finished requests waiting for the driver.
//!
//! Each turn (ARCHITECTURE §3 numbers the steps): issue new fetches, send DNS queries, start
//! waiting ones whose server has room, poll until the earliest deadline, read the clock,
//! advance what is ready, hand resolved names on, expire what is late. The driver runs it
//! through its [`super::Loop`] (`driven.rs`), as it runs the crawl tests' simulated loop.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use mio::net::UdpSocket;
use mio::{Events, Interest, Poll, Token};
use slab::Slab;

use super::addr_policy::{AddrPolicy, Verdict};
use super::conn::Readiness;
use super::fetch::{
    Completion, Fetch, FetchRequest, FetchState, Marks, Origin, Proxied, Target, TargetHost,
};
use super::pool::{ConnPool, ConnState};
use super::spool::Spool;
use super::stats::LoopStats;
use super::timers::FetchTimers;

mod completions;
mod dispatch;
mod dns_io;
mod dns_tcp;
mod driven;
mod http_stage;
mod proxy_stage;
mod receive_pool;
mod states;
mod tokens;
use crate::dns::{DnsError, Resolve, Resolver, ResolverConfig};
use crate::http::{self, Limits, Method, Request, ResponseDecoder};
use crate::proxy::{self, ProxyKind, ProxySettings};
use crate::ReturnCode;
use dns_tcp::DnsTcp;
use receive_pool::ReceivePool;
use tokens::{DNS_TCP_TOKEN_BASE, DNS_TOKEN_BASE, WAKE_TOKEN};

/// The longest a poll sleeps, so that an interrupt flag set by a signal handler is seen soon.
const MAX_POLL_WAIT: Duration = Duration::from_millis(200);
/// Scratch buffer for socket reads (TLS, chunk framing), and the most one read puts straight
/// into a response's buffer.
const READ_BUF_BYTES: usize = 64 * 1024;
/// Largest DNS datagram accepted (we advertise 1232 bytes in EDNS, so answers are no longer;
/// larger ones are cut and then fail to parse, which is the right outcome).
const DNS_DATAGRAM_BYTES: usize = 4096;
/// Datagrams read from one DNS socket per readiness event before yielding (a flood of
/// spoofed answers must not starve the rest of the loop; the socket stays readable and
/// the remainder is read on the next turn).
const MAX_DNS_READS_PER_EVENT: usize = 256;
/// Buffers (decoders, request and content buffers) larger than this are dropped rather than
/// pooled, so one large page does not pin its memory for the rest of the crawl.
const POOLED_BUFFER_MAX: usize = 256 * 1024;
/// The most the pools may hold in all, whatever `max_live` is.
const POOL_BUDGET: usize = 16 << 20;
/// The most DNS queries prefetching may leave outstanding (it must not crowd out the lookups
/// of URLs that are due).
const MAX_PREFETCH_PENDING: usize = 256;
/// TLS sessions cached per socket of the budget (hosts rotate through the sockets; a session
/// is a few hundred bytes).
const TLS_SESSIONS_PER_SOCKET: usize = 4;
/// The most TLS sessions cached.
const MAX_TLS_SESSIONS: usize = 16_384;
/// Live fetches per allowed connection: enough to keep every connection busy while others
/// wait for DNS or for their server's turn.
const LIVE_PER_CONN: usize = 4;
/// The fewest live fetches, however few connections.
const MIN_LIVE: usize = 64;

/// What the crawler needs to know to run. Built with [`CrawlerConfig::new`] (the one place
/// that knows the defaults), then adjusted field by field.
#[derive(Clone)]
pub struct CrawlerConfig {
    /// Connections carrying a fetch at once (the in-flight budget; `--max-conns`).
    pub max_conns: usize,
    /// Open sockets in all, idle kept-alive ones included (`--max-sockets`): an active host
    /// keeps its connection between fetches, so this, not `max_conns`, bounds how many hosts
    /// are worked on at once. At least `max_conns`.
    pub max_sockets: usize,
    /// Open connections per server IP.
    pub conns_per_server: usize,
    /// Fetches alive at once (DNS + waiting + connected); [`CrawlerConfig::new`] sets it from
    /// `max_conns`.
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
    /// Where bodies too large for memory go; `None` keeps every body in memory (up to
    /// `limits`).
    pub spool: Option<Arc<dyn Spool>>,
    /// A body holding more than this in memory moves to the spool.
    pub spill_threshold: usize,
    /// Live fetches together hold about this much body in memory at most: past it, a body
    /// spills at its next read however small it is.
    pub max_buffer_bytes: usize,
    /// Decoded content kept for link scanning and robots.txt; the rest is not scanned.
    pub max_scan_bytes: usize,
    /// Further request headers (`--header`), sent in order after the standard ones; a name
    /// or value `http::write_request` refuses ends each fetch as `HttpBadUrlSyntax`, so the
    /// app validates them first.
    pub extra_headers: Vec<(String, String)>,
    /// The proxies URLs go through (`--proxy`, the environment), their names resolved;
    /// `None`: every fetch is direct.
    pub proxies: Option<Arc<ProxySettings>>,
    /// Further request headers sent only on requests that ask for them
    /// ([`FetchRequest::origin_headers`]): `--header` values that are credentials
    /// (`Authorization`, `Cookie`, `Proxy-Authorization`), for the seeds' origins alone. An
    /// `Authorization` among them gives way to the request's own.
    pub origin_headers: Vec<(String, String)>,
}

/// Default [`CrawlerConfig::max_sockets`]: hosts worked on at once, each holding one idle
/// socket between fetches. At the default 1 s delay a crawl then reaches about this many
/// pages per second before politeness binds it; an idle socket costs the kernel a few KB,
/// and the app lowers it to fit the file-descriptor limit.
pub const DEFAULT_MAX_SOCKETS: usize = 4096;
/// Default [`CrawlerConfig::spill_threshold`].
pub const DEFAULT_SPILL_THRESHOLD: usize = 256 * 1024;
/// Default [`CrawlerConfig::max_buffer_bytes`].
pub const DEFAULT_MAX_BUFFER_BYTES: usize = 64 << 20;
/// Default [`CrawlerConfig::max_scan_bytes`].
pub const DEFAULT_MAX_SCAN_BYTES: usize = 4 << 20;
/// Connections carrying a fetch at once, unless told (`--max-conns`).
pub const DEFAULT_MAX_CONNS: usize = 128;
/// Default [`CrawlerConfig::http_timeout`]: one whole fetch.
pub const DEFAULT_HTTP_TIMEOUT: Duration = Duration::from_secs(30);
/// Default [`CrawlerConfig::connect_timeout`].
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

impl CrawlerConfig {
    /// Defaults for `max_conns` connections: one per server, the default user agent, standard
    /// limits and timeouts (30 s per fetch, 10 s to connect, 15 s keep-alive), private
    /// addresses refused, gzip/deflate asked for.
    pub fn new(
        max_conns: usize,
        resolver: ResolverConfig,
        tls: Arc<rustls::ClientConfig>,
    ) -> CrawlerConfig {
        let max_conns = max_conns.max(1);
        CrawlerConfig {
            max_conns,
            max_sockets: DEFAULT_MAX_SOCKETS.max(max_conns),
            conns_per_server: 1,
            max_live: max_conns.saturating_mul(LIVE_PER_CONN).max(MIN_LIVE),
            user_agent: default_user_agent(),
            resolver,
            limits: Limits::default(),
            http_timeout: DEFAULT_HTTP_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            idle_timeout: Duration::from_secs(15),
            addr_policy: AddrPolicy::new(false, Vec::new()),
            tls,
            accept_encoding: true,
            spool: None,
            spill_threshold: DEFAULT_SPILL_THRESHOLD,
            max_buffer_bytes: DEFAULT_MAX_BUFFER_BYTES,
            max_scan_bytes: DEFAULT_MAX_SCAN_BYTES,
            extra_headers: Vec::new(),
            proxies: None,
            origin_headers: Vec::new(),
        }
    }
}

impl CrawlerConfig {
    /// This configuration for one of `parts` event loops sharing the machine: the
    /// connections, live fetches, body memory and names resolved at once (each loop asks
    /// the same DNS servers) divided among them.
    pub fn share(&self, parts: usize) -> CrawlerConfig {
        let parts = parts.max(1);
        let max_conns = (self.max_conns / parts).max(1);
        let mut resolver = self.resolver.clone();
        resolver.max_names_in_flight = (resolver.max_names_in_flight / parts).max(1);
        CrawlerConfig {
            resolver,
            max_conns,
            max_sockets: (self.max_sockets / parts).max(max_conns),
            max_live: (self.max_live / parts).max(MIN_LIVE),
            max_buffer_bytes: (self.max_buffer_bytes / parts).max(1 << 20),
            ..self.clone()
        }
    }
}

/// `spinneret/VERSION (+REPOSITORY)`.
pub fn default_user_agent() -> String {
    format!(
        "spinneret/{} (+{})",
        env!("CARGO_PKG_VERSION"),
        env!("CARGO_PKG_REPOSITORY")
    )
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
    ready: Vec<(Token, Readiness)>,
    resolver: Resolver,
    dns_sockets: Vec<UdpSocket>,
    dns_servers: Vec<SocketAddr>,
    /// TCP connections asking again what came back truncated over UDP.
    dns_tcp: DnsTcp,
    fetches: Slab<Fetch>,
    conns: ConnPool,
    wait_for_issue: VecDeque<FetchRequest>,
    wait_for_dns: HashMap<String, Vec<usize>>,
    wait_for_http: VecDeque<usize>,
    /// Every live fetch's named deadlines, earliest first.
    timers: FetchTimers,
    /// Finished requests, oldest first, until the driver takes them.
    completions: VecDeque<Completion>,
    /// Connections whose last receive pass ran out of budget with data possibly unread:
    /// advanced again next turn without waiting for an event (mio is edge-triggered).
    ready_again: Vec<usize>,
    dispatch_needed: bool,
    /// This turn's clock reading (monotonic, and the wall time that dates what ends in it:
    /// [`FetchDone::at`](super::FetchDone::at)).
    now: Instant,
    wall_now: SystemTime,
    read_buf: Vec<u8>,
    decoder_pool: Vec<ResponseDecoder>,
    buffer_pool: Vec<Vec<u8>>,
    /// Capacity held by the two pools.
    pooled: usize,
    receive_pool: ReceivePool,
    /// Response bytes held in memory by live fetches and undelivered completions.
    buffered: usize,
    /// Bytes in spool files of live fetches and undelivered completions.
    spooled: u64,
    stats: LoopStats,
}

impl Crawler {
    pub fn new(mut config: CrawlerConfig) -> io::Result<Crawler> {
        // A host reconnects because its socket went to another host, so its TLS session must
        // outlive the socket: the cache holds several sessions per socket.
        let sessions = (config.max_sockets * TLS_SESSIONS_PER_SOCKET).clamp(1024, MAX_TLS_SESSIONS);
        config.tls = super::tls::with_session_cache(&config.tls, sessions);
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
        let mut ids = super::tls::SecureIds::new();
        let resolver = Resolver::new(config.resolver.clone(), Box::new(move || ids.next_id()));
        Ok(Crawler {
            poll,
            events: Events::with_capacity(1024),
            ready: Vec::with_capacity(1024),
            resolver,
            dns_sockets,
            dns_servers,
            dns_tcp: DnsTcp::default(),
            fetches: Slab::with_capacity(config.max_live),
            conns: ConnPool::new(config.max_conns),
            wait_for_issue: VecDeque::new(),
            wait_for_dns: HashMap::new(),
            wait_for_http: VecDeque::new(),
            timers: FetchTimers::with_capacity(config.max_live),
            completions: VecDeque::new(),
            ready_again: Vec::new(),
            dispatch_needed: false,
            now: Instant::now(),
            wall_now: SystemTime::now(),
            read_buf: vec![0; READ_BUF_BYTES],
            decoder_pool: Vec::new(),
            buffer_pool: Vec::new(),
            receive_pool: ReceivePool::new(config.max_conns, READ_BUF_BYTES),
            pooled: 0,
            buffered: 0,
            spooled: 0,
            stats: LoopStats::default(),
            config,
        })
    }

    /// A waker another thread may use to end this loop's poll early (a partition's inbox got
    /// a batch). One per crawler: mio allows a single waker per poll.
    pub fn waker(&self) -> io::Result<std::sync::Arc<mio::Waker>> {
        Ok(std::sync::Arc::new(mio::Waker::new(
            self.poll.registry(),
            Token(WAKE_TOKEN),
        )?))
    }

    /// Queues a request; it starts within the live-fetch bound, in order.
    pub fn fetch_push(&mut self, req: FetchRequest) {
        self.wait_for_issue.push_back(req);
    }

    /// Whether another request would start at once (the driver's cue to ask for more work).
    pub fn has_room(&self) -> bool {
        self.fetches.len() + self.wait_for_issue.len() < self.config.max_live
    }

    /// Starts resolving a host name ahead of its URLs (prefetching); returns false, doing
    /// nothing, when enough prefetch queries are already outstanding.
    pub fn prefetch(&mut self, host: &str) -> bool {
        if self.resolver.pending() >= MAX_PREFETCH_PENDING {
            return false;
        }
        // A name the proxy resolves is not asked of DNS here (it may be the proxy's alone).
        if let Some(proxies) = &self.config.proxies {
            if !proxies.resolves_locally(host) {
                return true;
            }
        }
        let _ = self.resolver.resolve(host, self.now);
        true
    }

    /// No request queued, live or waiting to be taken: a turn now could only sleep.
    pub fn is_idle(&self) -> bool {
        self.fetches.is_empty() && self.wait_for_issue.is_empty() && self.completions.is_empty()
    }

    /// The clock reading of the last turn (monotonic): the `now` a driver passes on.
    pub fn now(&self) -> Instant {
        self.now
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
        s.buffered_bytes = self.buffered;
        s.spooled_bytes = self.spooled;
        s.receive_buffers_allocated = self.receive_pool.allocated;
        let d = self.resolver.stats();
        s.dns_queries_sent = d.queries_sent;
        s.dns_cache_hits = d.cache_hits;
        s.dns_names_waited = d.names_waited;
        s
    }

    /// One turn of the loop: issue, dispatch, poll (at most until `wake_at`, when the driver's
    /// source has work due then), read the clock, expire, advance. Finished requests wait in
    /// the completion queue; the poll does not sleep while any are there.
    pub fn turn(&mut self, wake_at: Option<Instant>) -> io::Result<()> {
        self.issue();
        self.flush_dns();
        self.dispatch();
        self.flush_dns();

        let timeout = self.poll_timeout(wake_at);
        match self.poll.poll(&mut self.events, Some(timeout)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
        self.ready.clear();
        for ev in self.events.iter() {
            // Every state re-checks its socket when advanced; the read side is told apart
            // because a connection skips reads it knows would find nothing.
            let readiness = if ev.is_read_closed() || ev.is_error() {
                Readiness::Hangup
            } else if ev.is_readable() {
                Readiness::Readable
            } else {
                Readiness::Writable
            };
            self.ready.push((ev.token(), readiness));
        }

        // The one clock reading of this turn.
        self.now = Instant::now();
        self.wall_now = SystemTime::now();
        let now = self.now;

        // What arrived is read before deadlines are judged: a turn that took long (a large
        // body, a bomb inflated) must not fail fetches whose answer is already waiting.
        let ready = std::mem::take(&mut self.ready);
        for &(token, readiness) in &ready {
            if token.0 == WAKE_TOKEN {
                // Only ends the poll: the driver looks at what woke it.
            } else if token.0 >= DNS_TCP_TOKEN_BASE {
                let slot = token.0 - DNS_TCP_TOKEN_BASE;
                let registry = self.poll.registry();
                self.dns_tcp.ready(registry, &mut self.resolver, slot, now);
            } else if token.0 >= DNS_TOKEN_BASE {
                self.read_dns(token.0 - DNS_TOKEN_BASE, now);
            } else {
                self.conn_ready(token.0, readiness);
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
                self.advance(fetch);
            }
        }
        self.resolver.handle_timeout(now);
        self.dns_tcp
            .expire(self.poll.registry(), &mut self.resolver, now);
        self.resolver_events();
        self.expire(now);
        if self.conns.expire(&self.poll, now) {
            self.dispatch_needed = true;
        }
        self.flush_dns();
        Ok(())
    }

    /// Ctrl-C: every live fetch and every queued request ends now with `Interrupted`; idle
    /// connections are closed.
    pub fn interrupt(&mut self) {
        let keys: Vec<usize> = self.fetches.iter().map(|(k, _)| k).collect();
        for key in keys {
            self.finish(key, ReturnCode::Interrupted);
        }
        while let Some(req) = self.wait_for_issue.pop_front() {
            self.completions.push_back(Completion::without_response(
                req,
                ReturnCode::Interrupted,
                self.wall_now,
            ));
        }
        self.conns.close_idle_all(&self.poll);
    }

    /// Closes the idle keep-alive connections (the driver's work is done).
    pub fn close_idle(&mut self) {
        self.conns.close_idle_all(&self.poll);
    }

    fn poll_timeout(&self, wake_at: Option<Instant>) -> Duration {
        if !self.ready_again.is_empty() || !self.completions.is_empty() {
            return Duration::ZERO;
        }
        // Measured from this moment, not the turn's reading: issuing may have taken a while.
        let now = Instant::now();
        let mut next = now + MAX_POLL_WAIT;
        let deadlines = [
            self.timers.next_deadline(),
            self.conns.next_deadline(),
            self.resolver.poll_timeout(),
            self.dns_tcp.next_deadline(),
            wake_at,
        ];
        for t in deadlines.into_iter().flatten() {
            next = next.min(t);
        }
        next.saturating_duration_since(now)
    }

    // ---- step 1 (ARCHITECTURE §3): issue ----

    fn issue(&mut self) {
        while self.fetches.len() < self.config.max_live {
            let Some(req) = self.wait_for_issue.pop_front() else {
                break;
            };
            self.start_fetch(req);
        }
    }

    fn start_fetch(&mut self, req: FetchRequest) {
        let now = self.now;
        self.stats.issued += 1;
        let target = match Target::of(&req.url) {
            Ok(t) => t,
            Err(code) => {
                self.completions
                    .push_back(Completion::without_response(req, code, self.wall_now));
                return;
            }
        };
        let decoder = match self.decoder_pool.pop() {
            Some(d) => {
                self.pooled = self.pooled.saturating_sub(d.capacity());
                d
            }
            None => {
                let mut d = ResponseDecoder::new(self.config.limits);
                d.reset(false);
                d
            }
        };
        let mut request = self.take_buffer();
        let origin_headers = if req.origin_headers {
            &self.config.origin_headers[..]
        } else {
            &[]
        };
        let mut extra: Vec<(&str, &str)> = self
            .config
            .extra_headers
            .iter()
            .chain(origin_headers.iter().filter(|(n, _)| {
                req.authorization.is_none() || !n.eq_ignore_ascii_case("authorization")
            }))
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        let proxy = self
            .config
            .proxies
            .as_deref()
            .and_then(|p| proxy_stage::route(p, &target));
        // An http URL through an HTTP proxy goes in absolute form, with the proxy's
        // credentials; everything else through a proxy goes through a tunnel, as if direct.
        let (absolute, authorization) = match &proxy {
            Some(p) if p.kind == ProxyKind::Http && !target.tls => (
                Some(format!(
                    "http://{}{}",
                    http::host_and_port(&req.url),
                    http::path_and_query(&req.url)
                )),
                p.credentials
                    .as_ref()
                    .map(proxy::connect::basic_authorization),
            ),
            _ => (None, None),
        };
        if let Some(a) = &authorization {
            extra.push(("Proxy-Authorization", a));
        }
        let written = http::write_request(
            &mut request,
            &Request {
                method: Method::Get,
                host: http::host_and_port(&req.url),
                target: absolute
                    .as_deref()
                    .unwrap_or_else(|| http::path_and_query(&req.url)),
                user_agent: &self.config.user_agent,
                accept_encoding: self.config.accept_encoding,
                keep_alive: true,
                cookie: req.cookie.as_deref(),
                authorization: req.authorization.as_deref(),
                extra_headers: &extra,
                validators: req.validators.as_deref(),
            },
        );
        let host = target.host.clone();
        let proxy = proxy.map(|proxy| {
            let origin = match &target.host {
                TargetHost::Ip(ip) => Origin::Ip(SocketAddr::new(*ip, target.port)),
                // For socks5://, replaced by the address once resolved.
                TargetHost::Name(name) => Origin::Name(name.as_str().into(), target.port),
            };
            Box::new(Proxied {
                proxy,
                origin,
                handshake: None,
            })
        });
        let proxy_resolves = proxy
            .as_ref()
            .is_some_and(|p| p.proxy.kind.resolves_names());
        let key = self.fetches.insert(Fetch {
            req,
            target,
            state: FetchState::Init,
            marks: Marks::new(now),
            request,
            decoder,
            spill: None,
            peer: None,
            sent: false,
            stale_retries_left: 1,
            fallback: None,
            proxy,
        });
        self.stats.peak_live = self.stats.peak_live.max(self.fetches.len());
        if written.is_err() {
            self.finish(key, ReturnCode::HttpBadUrlSyntax);
            return;
        }
        match host {
            TargetHost::Ip(ip) => self.resolved(key, Ok(vec![ip])),
            // The proxy resolves the name: the address guard cannot see it (README, Proxies).
            TargetHost::Name(_) if proxy_resolves => self.wait_for_proxy(key),
            TargetHost::Name(name) => match self.resolver.resolve(&name, now) {
                Resolve::Done(result) => self.resolved(key, result.map(|r| r.addrs)),
                Resolve::Pending => {
                    let waiting_name = crate::dns::normalize_name(&name).unwrap_or(name);
                    self.wait_for_dns
                        .entry(waiting_name.clone())
                        .or_default()
                        .push(key);
                    self.enter(key, FetchState::DnsReceive { name: waiting_name });
                }
            },
        }
    }

    /// A fetch's name is resolved (or failed): check the addresses and queue for HTTP.
    fn resolved(&mut self, key: usize, result: Result<Vec<IpAddr>, DnsError>) {
        let addrs = match result {
            Ok(addrs) if !addrs.is_empty() => addrs,
            Ok(_) => return self.finish(key, ReturnCode::DnsNoAddress),
            Err(e) => return self.finish(key, e.return_code()),
        };
        if let Verdict::Blocked(_) = self.config.addr_policy.check(&addrs) {
            return self.finish(key, ReturnCode::PrivateAddressBlocked);
        }
        let port = self.fetches[key].target.port;
        if let Some(p) = &mut self.fetches[key].proxy {
            // The proxy is asked for one address (it does not fall back), IPv4 first: the
            // family a proxy is likeliest to reach.
            let ip = addrs
                .iter()
                .copied()
                .find(IpAddr::is_ipv4)
                .unwrap_or(addrs[0]);
            p.origin = Origin::Ip(SocketAddr::new(ip, port));
            return self.wait_for_proxy(key);
        }
        // Happy Eyeballs (RFC 8305), one attempt after the other: a host with both families
        // is tried over IPv6 first and over IPv4 if that fails or has not connected within
        // `HAPPY_EYEBALLS_DELAY`. Every address was checked above.
        let v6 = addrs.iter().copied().find(IpAddr::is_ipv6);
        let v4 = addrs.iter().copied().find(IpAddr::is_ipv4);
        let (ip, other) = match (v6, v4) {
            (Some(v6), Some(v4)) => (v6, Some(v4)),
            _ => (addrs[0], None),
        };
        let fetch = &mut self.fetches[key];
        let addr = SocketAddr::new(ip, fetch.target.port);
        fetch.fallback = other.map(|ip| SocketAddr::new(ip, fetch.target.port));
        self.enter(key, FetchState::WaitForHttp { addr });
        self.wait_for_http.push_back(key);
        self.dispatch_needed = true;
    }

    // ---- step 6: advance fetches whose sockets are ready ----

    fn conn_ready(&mut self, conn: usize, readiness: Readiness) {
        let Some(entry) = self.conns.get_mut(conn) else {
            return; // closed earlier in this turn
        };
        entry.conn.event(readiness);
        match entry.state {
            ConnState::Active { fetch } => self.advance(fetch),
            ConnState::Idle { .. } => {
                if readiness != Readiness::Writable {
                    // An idle connection has nothing to say: a readable event means the server
                    // closed it (or sent bytes we never asked for). Either way it is done.
                    self.close_conn(conn);
                }
            }
        }
    }

    fn close_conn(&mut self, conn: usize) {
        self.conns.close(&self.poll, conn);
        self.dispatch_needed = true;
    }

    // ---- a finished fetch: its completion for the driver ----

    fn finish(&mut self, key: usize, code: ReturnCode) {
        self.finish_with(key, code);
    }

    /// Removes the fetch, releases what it held and queues its completion.
    fn finish_with(&mut self, key: usize, code: ReturnCode) {
        if !self.fetches.contains(key) {
            return;
        }
        let mut fetch = self.fetches.remove(key);
        self.timers.clear(key);
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
            | FetchState::Proxy { conn, .. }
            | FetchState::HttpSend { conn, .. }
            | FetchState::HttpReceive { conn, .. } => {
                // Still attached: it did not end with a reusable response.
                if matches!(self.conns.get(*conn), Some(e) if e.state == ConnState::Active { fetch: key })
                {
                    self.close_conn(*conn);
                }
            }
        }
        let mut outcome = code;
        // A spilled body: the rest of it joins the spool, which then holds the whole payload.
        let spool = fetch.spill.take().map(|mut spill| {
            self.stats.spilled_responses += 1;
            let before = fetch.decoder.buffered();
            let mut failed = false;
            let n = fetch.decoder.spill(&mut |bytes: &[u8]| {
                failed |= spill.append(bytes).is_err();
            });
            self.buffered = self
                .buffered
                .saturating_sub(before - fetch.decoder.buffered());
            self.spooled += n as u64;
            if failed {
                outcome = ReturnCode::SpoolFailed;
            }
            spill.finish()
        });
        self.completions.push_back(Completion {
            request: fetch.req,
            outcome,
            sent: fetch.sent,
            decoder: Some(fetch.decoder),
            request_bytes: fetch.request,
            decoded: None,
            content_complete: true,
            spool,
            raw: None,
            peer: fetch.peer,
            at: self.wall_now,
            timings: fetch.marks.timings(self.now),
        });
        self.dispatch_needed = true;
    }
}
