//! The synthetic web's server: one thread, one `mio` loop, one listener per host address (all
//! on one port), keep-alive connections with pipelining, responses written straight from bytes
//! rendered once at start (head + body, `Content-Length`), partial writes resumed from a
//! per-connection offset. What is served comes from `testweb`'s generator.
//!
//! A resource with validators has two pre-rendered answers: its 200 (with `ETag` and
//! `Last-Modified`) and its `304 Not Modified` (the same validators, no body and so no
//! `Content-Length`: a 304 ends at its head, and the connection stays open). Only a request
//! carrying `If-None-Match` or `If-Modified-Since` pays for the check (`conditional`).
//!
//! With a latency (`WebServer::start_with_latency`), each connection is answered as if the
//! client were that far away: nothing is read from a new connection until the latency has
//! passed (the connect answer), and each response is written the latency after its request
//! was read. Waits are timers in the loop (a heap of wake-up times bounding the poll
//! timeout), never busy-waiting or a thread per connection.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token, Waker};
use slab::Slab;

use super::{host_ip, parse_host, Scheme, TestWeb};

/// Open connections at once; more are accepted and closed at once.
const MAX_CONNS: usize = 16_384;
/// Request bytes buffered per connection: a request head must fit.
const IN_BUF: usize = 16 * 1024;
/// Responses queued per connection (pipelining) before it stops reading.
const MAX_PIPELINE: usize = 64;
/// Headers parsed per request; more is a bad request (closed).
const MAX_HEADERS: usize = 32;
/// Read/parse/write rounds for one connection per turn; the rest waits for the next turn.
const MAX_STEPS: usize = 64;
/// Accepts per listener per turn.
const MAX_ACCEPTS: usize = 256;
/// Events taken per poll.
const EVENTS: usize = 1024;

const NOT_FOUND_BODY: &str = "<!DOCTYPE html>\n<html><head><title>Not found</title></head>\
<body><p>Nothing here.</p></body></html>\n";

/// One response on the wire: head then body in one buffer.
struct Served {
    bytes: Vec<u8>,
    head_len: usize,
    /// The `ETag` sent (quoted) and the index of the 304 to answer a matching conditional
    /// request with; None: sent without validators (and the 304s themselves).
    validator: Option<(Box<[u8]>, u32)>,
    /// A `304 Not Modified` (counted apart).
    not_modified: bool,
}

/// Everything the loop serves, rendered for one port.
struct Site {
    responses: Vec<Served>,
    /// Per host: request target → index into `responses`.
    routes: Vec<HashMap<Box<[u8]>, u32>>,
    not_found: u32,
}

/// `extra`: header lines, each ending in CRLF.
fn served(status: &str, content_type: &str, extra: &str, body: &[u8]) -> Served {
    let head = format!(
        "HTTP/1.1 {status}\r\nServer: spinneret-testweb\r\nContent-Type: {content_type}\r\n\
         {extra}Content-Length: {}\r\nConnection: keep-alive\r\n\r\n",
        body.len()
    );
    let mut bytes = Vec::with_capacity(head.len() + body.len());
    bytes.extend_from_slice(head.as_bytes());
    bytes.extend_from_slice(body);
    Served {
        bytes,
        head_len: head.len(),
        validator: None,
        not_modified: false,
    }
}

/// The 304 for a resource with validators `extra`: no body, so no `Content-Length` at all
/// (a 304's length is its head's, whatever the header would say).
fn not_modified(extra: &str) -> Served {
    let head = format!(
        "HTTP/1.1 304 Not Modified\r\nServer: spinneret-testweb\r\n{extra}\
         Connection: keep-alive\r\n\r\n"
    );
    Served {
        head_len: head.len(),
        bytes: head.into_bytes(),
        validator: None,
        not_modified: true,
    }
}

fn render(web: &TestWeb, port: u16) -> Site {
    let hosts = web.config().hosts;
    let mut responses = Vec::with_capacity(web.resources.len() + 1);
    let mut routes: Vec<HashMap<Box<[u8]>, u32>> = vec![HashMap::new(); hosts];
    let mut body = Vec::new();
    let last_modified = crate::http_date::format(super::LAST_MODIFIED);
    for r in &web.resources {
        body.clear();
        r.body.render(Scheme::Http, port, &mut body);
        let idx = responses.len() as u32;
        routes[r.host].insert(r.target.as_bytes().into(), idx);
        if !r.kind.has_validators() {
            responses.push(served("200 OK", r.kind.content_type(), "", &body));
            continue;
        }
        let etag = super::etag(web.config(), r.host, &r.target);
        let extra = format!("ETag: {etag}\r\nLast-Modified: {last_modified}\r\n");
        let mut ok = served("200 OK", r.kind.content_type(), &extra, &body);
        ok.validator = Some((etag.into_bytes().into(), idx + 1));
        responses.push(ok);
        responses.push(not_modified(&extra));
    }
    let not_found = responses.len() as u32;
    responses.push(served(
        "404 Not Found",
        "text/html; charset=utf-8",
        "",
        NOT_FOUND_BODY.as_bytes(),
    ));
    Site {
        responses,
        routes,
        not_found,
    }
}

struct Shared {
    stop: AtomicBool,
    requests: AtomicU64,
    /// Of `requests`, those answered 304.
    not_modified: AtomicU64,
}

/// Serves a [`TestWeb`] on loopback until stopped, dropped, or its lifetime has passed.
pub struct WebServer {
    port: u16,
    shared: Arc<Shared>,
    waker: Arc<Waker>,
    thread: Option<JoinHandle<()>>,
}

impl WebServer {
    /// Binds `host_ip(i):port` for every host (`port` 0: one free on all of them), renders every
    /// response for that port and starts the loop thread.
    pub fn start(web: Arc<TestWeb>, port: u16, lifetime: Duration) -> io::Result<WebServer> {
        Self::start_with_latency(web, port, lifetime, Duration::ZERO)
    }

    /// As [`WebServer::start`], answering every connection `latency` late (see the module
    /// docs).
    pub fn start_with_latency(
        web: Arc<TestWeb>,
        port: u16,
        lifetime: Duration,
        latency: Duration,
    ) -> io::Result<WebServer> {
        let addrs: Vec<_> = (0..web.config().hosts).map(host_ip).collect();
        let listeners = crate::http_server::bind_all(&addrs, port)?;
        let port = listeners[0].local_addr()?.port();
        let site = render(&web, port);
        let poll = Poll::new()?;
        let hosts = listeners.len();
        let mut mio_listeners = Vec::with_capacity(hosts);
        for (i, l) in listeners.into_iter().enumerate() {
            l.set_nonblocking(true)?;
            let mut l = TcpListener::from_std(l);
            poll.registry()
                .register(&mut l, Token(i), Interest::READABLE)?;
            mio_listeners.push(l);
        }
        let waker = Arc::new(Waker::new(poll.registry(), Token(hosts))?);
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            requests: AtomicU64::new(0),
            not_modified: AtomicU64::new(0),
        });
        let deadline = Instant::now().checked_add(lifetime);
        let loop_shared = shared.clone();
        let thread = std::thread::Builder::new()
            .name("testweb".into())
            .spawn(move || {
                let mut server = Loop {
                    poll,
                    listeners: mio_listeners,
                    conns: Slab::new(),
                    site,
                    shared: loop_shared,
                    again: Vec::new(),
                    latency,
                    wakes: BinaryHeap::new(),
                };
                server.run(deadline);
                server.shared.stop.store(true, Ordering::SeqCst);
            })?;
        Ok(WebServer {
            port,
            shared,
            waker,
            thread: Some(thread),
        })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Requests parsed so far (every response, 404s included).
    pub fn requests(&self) -> u64 {
        self.shared.requests.load(Ordering::Relaxed)
    }

    /// Of [`WebServer::requests`], those answered `304 Not Modified`.
    pub fn not_modified(&self) -> u64 {
        self.shared.not_modified.load(Ordering::Relaxed)
    }

    /// True once stopped (by `stop`, drop or lifetime).
    pub fn is_stopped(&self) -> bool {
        self.shared.stop.load(Ordering::SeqCst)
    }

    /// Stops the loop, closes every socket and joins the thread.
    pub fn stop(self) {
        // Drop does the work.
    }
}

impl Drop for WebServer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        let _ = self.waker.wake();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A response waiting to be written: `responses[resp].bytes[..end]`.
#[derive(Clone, Copy, Debug)]
struct Pending {
    resp: u32,
    /// `head_len` for HEAD, the whole length for GET.
    end: usize,
    /// Close the connection once written (`Connection: close`, HTTP/1.0, unsupported method).
    close: bool,
    /// Not written before this (the server's latency after the request was read).
    due: Instant,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ReadState {
    Open,
    /// The peer shut its side: answer what is buffered, then close.
    Eof,
}

struct Conn {
    stream: TcpStream,
    /// The host whose address accepted it: routes requests without a Host header.
    host: usize,
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    queue: VecDeque<Pending>,
    /// Bytes of `queue.front()` already written.
    offset: usize,
    read: ReadState,
    /// Readiness not yet used up (edge-triggered: cleared only on WouldBlock).
    readable: bool,
    writable: bool,
    /// Nothing is read before this (the connect answer's latency).
    read_from: Instant,
    /// The earliest time this connection waits for, when it waits for one.
    wake_at: Option<Instant>,
    /// The wake-up time in the loop's heap for it, so one wait is queued once.
    scheduled: Option<Instant>,
}

/// What a connection needs after being driven.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Drive {
    /// Wait for the next readiness event.
    Wait,
    /// Hit `MAX_STEPS` with work left: drive again next turn.
    Again,
    Close,
}

enum Parsed {
    Request(Pending, usize),
    Partial,
    /// Malformed, too many headers, or has a body: close.
    Bad,
}

fn parse_request(data: &[u8], conn_host: usize, site: &Site) -> Parsed {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let n = match req.parse(data) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Parsed::Partial,
        Err(_) => return Parsed::Bad,
    };
    let mut host = Some(conn_host);
    let mut close = req.version == Some(0);
    let mut conditional = false;
    for h in req.headers.iter() {
        if h.name.eq_ignore_ascii_case("host") {
            host = parse_host(h.value).filter(|&i| i < site.routes.len());
        } else if h.name.eq_ignore_ascii_case("connection") {
            let v = h.value;
            if v.eq_ignore_ascii_case(b"close") {
                close = true;
            } else if v.eq_ignore_ascii_case(b"keep-alive") {
                close = false;
            }
        } else if h.name.eq_ignore_ascii_case("transfer-encoding")
            || (h.name.eq_ignore_ascii_case("content-length") && h.value != b"0")
        {
            // Request bodies are never expected here; not reading them keeps the loop simple.
            return Parsed::Bad;
        } else if crate::conditional::is_conditional_header(h.name) {
            conditional = true;
        }
    }
    let head_only = req.method == Some("HEAD");
    if !head_only && req.method != Some("GET") {
        close = true;
    }
    // Absolute-form targets (`GET http://h0001.test:8080/p1.html`, as sent to a proxy) are
    // served like their path: tools/compare_wget.py points wget at us as its HTTP proxy,
    // since wget cannot use the test web's DNS server.
    let mut resp = host
        .zip(req.path.map(origin_form))
        .and_then(|(h, p)| site.routes[h].get(p.as_bytes()).copied())
        .unwrap_or(site.not_found);
    if conditional && (head_only || req.method == Some("GET")) {
        if let Some((etag, not_modified)) = &site.responses[resp as usize].validator {
            let lm = Some(super::LAST_MODIFIED);
            if crate::conditional::is_not_modified(req.headers, etag, lm) {
                resp = *not_modified;
            }
        }
    }
    let served = &site.responses[resp as usize];
    let end = if head_only {
        served.head_len
    } else {
        served.bytes.len()
    };
    Parsed::Request(
        Pending {
            resp,
            end,
            close,
            due: Instant::now(),
        },
        n,
    )
}

/// The path part of an absolute-form request target; other targets unchanged.
fn origin_form(target: &str) -> &str {
    match target.strip_prefix("http://") {
        Some(rest) => rest.find('/').map_or("/", |i| &rest[i..]),
        None => target,
    }
}

impl Conn {
    fn drive(&mut self, site: &Site, shared: &Shared, latency: Duration) -> Drive {
        let now = Instant::now();
        self.wake_at = None;
        for _ in 0..MAX_STEPS {
            let mut progress = false;
            // Parse every complete request buffered, up to the pipeline bound; nothing after
            // a request that closes the connection.
            while self.start < self.end
                && self.queue.len() < MAX_PIPELINE
                && !self.queue.back().is_some_and(|p| p.close)
            {
                match parse_request(&self.buf[self.start..self.end], self.host, site) {
                    Parsed::Request(mut p, n) => {
                        p.due = now + latency;
                        self.queue.push_back(p);
                        self.start += n;
                        shared.requests.fetch_add(1, Ordering::Relaxed);
                        if site.responses[p.resp as usize].not_modified {
                            shared.not_modified.fetch_add(1, Ordering::Relaxed);
                        }
                        progress = true;
                    }
                    Parsed::Partial => break,
                    Parsed::Bad => return Drive::Close,
                }
            }
            if self.start == self.end {
                self.start = 0;
                self.end = 0;
            }
            while self.writable {
                let Some(&p) = self.queue.front() else { break };
                if p.due > now {
                    self.wake_at = Some(p.due);
                    break;
                }
                let bytes = &site.responses[p.resp as usize].bytes[self.offset..p.end];
                match self.stream.write(bytes) {
                    Ok(0) => return Drive::Close,
                    Ok(n) => {
                        progress = true;
                        self.offset += n;
                        if self.offset == p.end {
                            self.queue.pop_front();
                            self.offset = 0;
                            if p.close {
                                return Drive::Close;
                            }
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.writable = false,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => return Drive::Close,
                }
            }
            if self.read == ReadState::Eof && self.queue.is_empty() {
                return Drive::Close;
            }
            let may_read = self.read_from <= now;
            if !may_read && self.readable {
                self.wake_at = Some(
                    self.wake_at
                        .map_or(self.read_from, |t| t.min(self.read_from)),
                );
            }
            if may_read
                && self.readable
                && self.read == ReadState::Open
                && self.queue.len() < MAX_PIPELINE
            {
                if self.end == self.buf.len() {
                    if self.start == 0 {
                        return Drive::Close; // a request head larger than IN_BUF
                    }
                    self.buf.copy_within(self.start..self.end, 0);
                    self.end -= self.start;
                    self.start = 0;
                }
                match self.stream.read(&mut self.buf[self.end..]) {
                    Ok(0) => {
                        self.read = ReadState::Eof;
                        progress = true;
                    }
                    Ok(n) => {
                        self.end += n;
                        progress = true;
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.readable = false,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => return Drive::Close,
                }
            }
            if !progress {
                return Drive::Wait;
            }
        }
        Drive::Again
    }
}

struct Loop {
    poll: Poll,
    listeners: Vec<TcpListener>,
    conns: Slab<Conn>,
    site: Site,
    shared: Arc<Shared>,
    /// Tokens with work left over from the previous turn (caps hit).
    again: Vec<Token>,
    /// How late every connection is answered.
    latency: Duration,
    /// Connections waiting for a time (latency), earliest first. An entry may be stale (the
    /// connection closed or was served earlier): servicing it then does nothing harmful.
    wakes: BinaryHeap<Reverse<(Instant, usize)>>,
}

impl Loop {
    fn conn_base(&self) -> usize {
        self.listeners.len() + 1
    }

    fn run(&mut self, deadline: Option<Instant>) {
        let mut events = Events::with_capacity(EVENTS);
        let waker = Token(self.listeners.len());
        loop {
            if self.shared.stop.load(Ordering::SeqCst) {
                return;
            }
            let now = Instant::now();
            let timeout = match deadline {
                Some(d) if d <= now => return,
                Some(d) => Some(d - now),
                None => None,
            };
            let timeout = match self.wakes.peek() {
                Some(Reverse((t, _))) => {
                    let until = t.saturating_duration_since(now);
                    Some(timeout.map_or(until, |d| d.min(until)))
                }
                None => timeout,
            };
            let timeout = if self.again.is_empty() {
                timeout
            } else {
                Some(Duration::ZERO)
            };
            if let Err(e) = self.poll.poll(&mut events, timeout) {
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return;
            }
            let again = std::mem::take(&mut self.again);
            for ev in events.iter() {
                let t = ev.token();
                if t == waker {
                    continue;
                }
                if t.0 > waker.0 {
                    if let Some(c) = self.conns.get_mut(t.0 - self.conn_base()) {
                        c.readable |= ev.is_readable() || ev.is_read_closed() || ev.is_error();
                        c.writable |= ev.is_writable() || ev.is_write_closed() || ev.is_error();
                    }
                }
                self.service(t);
            }
            for t in again {
                self.service(t);
            }
            // Bounded by the heap's size: each pass removes one entry.
            let now = Instant::now();
            while self.wakes.peek().is_some_and(|Reverse((t, _))| *t <= now) {
                let Some(Reverse((at, token))) = self.wakes.pop() else {
                    break;
                };
                let key = token.wrapping_sub(self.conn_base());
                if let Some(c) = self.conns.get_mut(key) {
                    if c.scheduled == Some(at) {
                        c.scheduled = None;
                    }
                }
                self.service(Token(token));
            }
        }
    }

    fn service(&mut self, t: Token) {
        if t.0 < self.listeners.len() {
            self.accept(t.0);
            return;
        }
        let key = t.0 - self.conn_base();
        let Some(c) = self.conns.get_mut(key) else {
            return;
        };
        let drive = c.drive(&self.site, &self.shared, self.latency);
        if let Some(at) = c.wake_at {
            if c.scheduled.is_none_or(|s| s > at) {
                c.scheduled = Some(at);
                self.wakes.push(Reverse((at, t.0)));
            }
        }
        match drive {
            Drive::Wait => {}
            Drive::Again => self.again.push(t),
            Drive::Close => {
                let mut c = self.conns.remove(key);
                let _ = self.poll.registry().deregister(&mut c.stream);
            }
        }
    }

    fn accept(&mut self, i: usize) {
        for _ in 0..MAX_ACCEPTS {
            let stream = match self.listeners[i].accept() {
                Ok((s, _)) => s,
                // WouldBlock: drained. Anything else (EMFILE…): try again on the next event.
                Err(_) => return,
            };
            if self.conns.len() >= MAX_CONNS {
                continue; // dropped: closed at once
            }
            let _ = stream.set_nodelay(true);
            let entry = self.conns.vacant_entry();
            let token = Token(entry.key() + self.listeners.len() + 1);
            let mut conn = Conn {
                stream,
                host: i,
                buf: vec![0; IN_BUF].into_boxed_slice(),
                start: 0,
                end: 0,
                queue: VecDeque::with_capacity(4),
                offset: 0,
                read: ReadState::Open,
                readable: true,
                writable: true,
                read_from: Instant::now() + self.latency,
                wake_at: None,
                scheduled: None,
            };
            if self
                .poll
                .registry()
                .register(
                    &mut conn.stream,
                    token,
                    Interest::READABLE | Interest::WRITABLE,
                )
                .is_err()
            {
                continue;
            }
            entry.insert(conn);
            self.service(token);
        }
        self.again.push(Token(i));
    }
}

#[cfg(test)]
mod origin_form_tests {
    use super::origin_form;

    #[test]
    fn absolute_form_targets_are_served_by_path() {
        assert_eq!(origin_form("http://h0001.test:8080/p1.html"), "/p1.html");
        assert_eq!(origin_form("http://h0001.test:8080"), "/");
        assert_eq!(origin_form("/p1.html?x=1"), "/p1.html?x=1");
    }
}
