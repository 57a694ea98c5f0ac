//! A scripted HTTP/1.1 (optionally TLS) server on loopback for integration tests.
//!
//! One accept thread per bound address (all on one port), one thread per connection with
//! blocking I/O and a short read timeout so threads notice `stop`. Requests are parsed with
//! httparse, routed by (Host without port, exact target) to a `Script` that says what goes on
//! the wire, and recorded in a request log. A watchdog stops everything after `lifetime`.
//! Certificates come from `tls`; DNS for the virtual hosts is `dns_server`'s job.

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::{sleep_unless_stopped, POLL_STEP};

mod script;

pub use script::{After, Framing, Generator, Responder, Response, Routes, Script};

/// Largest request head we buffer; beyond it the connection is closed.
const MAX_REQUEST_HEAD: usize = 64 * 1024;
/// Largest request body we read and discard (Content-Length); beyond it we close.
const MAX_REQUEST_BODY: u64 = 16 * 1024 * 1024;
/// Most headers parsed per request.
const MAX_HEADERS: usize = 64;
/// Most requests served on one connection.
const MAX_REQUESTS_PER_CONN: u32 = 10_000;
/// Block size for generated `Stream` bodies.
const STREAM_BLOCK: usize = 64 * 1024;
/// Attempts at finding a port free on every requested address when `port` is 0.
const PORT_ATTEMPTS: usize = 20;
/// Bound on the self-connect that wakes an accept thread at stop.
const WAKE_TIMEOUT: Duration = Duration::from_millis(500);
/// Default lifetime: the server stops by itself after this.
pub const DEFAULT_LIFETIME: Duration = Duration::from_secs(120);

pub struct HttpServerConfig {
    /// All bound on one common port.
    pub addrs: Vec<Ipv4Addr>,
    /// Also listen on `[::1]`, on the same port (starting fails where IPv6 loopback cannot
    /// be bound).
    pub also_v6: bool,
    /// 0 = pick a free one.
    pub port: u16,
    pub tls: Option<crate::tls::TlsIdentity>,
    pub lifetime: Duration,
    pub routes: Routes,
    pub fallback: Script,
}

impl Default for HttpServerConfig {
    fn default() -> Self {
        HttpServerConfig {
            addrs: vec![Ipv4Addr::LOCALHOST],
            also_v6: false,
            port: 0,
            tls: None,
            lifetime: DEFAULT_LIFETIME,
            routes: Routes::new(),
            fallback: Script::Respond(Response::not_found()),
        }
    }
}

#[derive(Clone, Debug)]
pub struct RequestRecord {
    /// Connections are numbered from 0 in accept order, across all addresses.
    pub conn_id: u64,
    /// 0 for the first request on a connection.
    pub index_on_conn: u32,
    pub local_addr: SocketAddr,
    pub peer: SocketAddr,
    pub method: String,
    /// Without port, lowercased.
    pub host: String,
    pub target: String,
    pub headers: Vec<(String, String)>,
    /// When the request head was complete.
    pub received: Instant,
    /// When the answer was (about to be) complete: set just before its last byte is written, so a
    /// client that read the whole answer always sees it. None: no complete answer.
    pub answered: Option<Instant>,
}

struct Shared {
    routes: Mutex<Routes>,
    fallback: Script,
    requests: Mutex<Vec<RequestRecord>>,
    stop: AtomicBool,
    next_conn: AtomicU64,
    tls: Option<Arc<rustls::ServerConfig>>,
    conn_threads: Mutex<Vec<JoinHandle<()>>>,
}

/// Locks, ignoring poisoning: a panicking test thread must not hide the log from the others.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

pub struct HttpServer {
    shared: Arc<Shared>,
    port: u16,
    addrs: Vec<SocketAddr>,
    threads: Vec<JoinHandle<()>>,
}

impl HttpServer {
    pub fn start(config: HttpServerConfig) -> io::Result<HttpServer> {
        let addrs = if config.addrs.is_empty() {
            vec![Ipv4Addr::LOCALHOST]
        } else {
            config.addrs.clone()
        };
        if let Some(bad) = addrs.iter().find(|a| !a.is_loopback()) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("refusing non-loopback address {bad}"),
            ));
        }
        let mut listeners = bind_all(&addrs, config.port)?;
        let port = listeners[0].local_addr()?.port();
        if config.also_v6 {
            listeners.push(TcpListener::bind((std::net::Ipv6Addr::LOCALHOST, port))?);
        }
        let tls = match &config.tls {
            Some(identity) => Some(identity.server_config()?),
            None => None,
        };
        let shared = Arc::new(Shared {
            routes: Mutex::new(config.routes),
            fallback: config.fallback,
            requests: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
            next_conn: AtomicU64::new(0),
            tls,
            conn_threads: Mutex::new(Vec::new()),
        });
        let mut threads = Vec::new();
        let mut bound = Vec::new();
        for listener in listeners {
            bound.push(listener.local_addr()?);
            let shared = shared.clone();
            threads.push(std::thread::spawn(move || accept_loop(listener, shared)));
        }
        let watchdog_shared = shared.clone();
        let lifetime = config.lifetime;
        let watchdog_addrs = bound.clone();
        threads.push(std::thread::spawn(move || {
            sleep_unless_stopped(&watchdog_shared.stop, lifetime);
            stop_all(&watchdog_shared, &watchdog_addrs);
        }));
        Ok(HttpServer {
            shared,
            port,
            addrs: bound,
            threads,
        })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn addrs(&self) -> Vec<SocketAddr> {
        self.addrs.clone()
    }

    /// A snapshot of the request log, in order of arrival.
    pub fn requests(&self) -> Vec<RequestRecord> {
        lock(&self.shared.requests).clone()
    }

    pub fn request_count(&self) -> usize {
        lock(&self.shared.requests).len()
    }

    /// Adds or replaces a route while running; takes effect for the next request.
    pub fn set_route(&self, host: &str, path: &str, script: Script) {
        lock(&self.shared.routes).add(host, path, script);
    }

    /// Replaces the whole routing table (e.g. once the port is known for absolute links).
    pub fn set_routes(&self, routes: Routes) {
        *lock(&self.shared.routes) = routes;
    }

    /// True once stopped (by `stop`, drop or the lifetime watchdog).
    pub fn is_stopped(&self) -> bool {
        self.shared.stop.load(Ordering::SeqCst)
    }

    /// Stops and joins every thread (within about `POLL_STEP` plus one socket timeout).
    pub fn stop(self) {
        // Drop does the work.
    }

    fn shutdown(&mut self) {
        stop_all(&self.shared, &self.addrs);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        // Accept threads are joined, so no new connection threads can appear.
        let conns: Vec<_> = lock(&self.shared.conn_threads).drain(..).collect();
        for t in conns {
            let _ = t.join();
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Binds one listener per address, all on one port (`0`: a free one, retried while another
/// process holds the chosen port on a later address). Shared with the test web's server.
pub(crate) fn bind_all(addrs: &[Ipv4Addr], port: u16) -> io::Result<Vec<TcpListener>> {
    let attempts = if port == 0 { PORT_ATTEMPTS } else { 1 };
    let mut last_err = None;
    for _ in 0..attempts {
        let first = TcpListener::bind(SocketAddrV4::new(addrs[0], port))?;
        let chosen = first.local_addr()?.port();
        let mut listeners = vec![first];
        let mut failed = None;
        for a in &addrs[1..] {
            match TcpListener::bind(SocketAddrV4::new(*a, chosen)) {
                Ok(l) => listeners.push(l),
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        match failed {
            None => return Ok(listeners),
            Some(e) => last_err = Some(e),
        }
    }
    Err(last_err.unwrap_or_else(|| io::Error::other("no common port")))
}

/// Sets the stop flag and wakes the blocking accept threads with a throwaway connection each.
fn stop_all(shared: &Shared, addrs: &[SocketAddr]) {
    shared.stop.store(true, Ordering::SeqCst);
    for a in addrs {
        let _ = TcpStream::connect_timeout(a, WAKE_TIMEOUT);
    }
}

/// Blocking accept (no polling delay for clients); `stop_all` wakes it.
fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    while !shared.stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok(_) if shared.stop.load(Ordering::SeqCst) => break,
            Ok((stream, peer)) => {
                let id = shared.next_conn.fetch_add(1, Ordering::SeqCst);
                let s = shared.clone();
                let handle = std::thread::spawn(move || {
                    let _ = serve_connection(stream, peer, id, &s);
                });
                let mut conns = lock(&shared.conn_threads);
                // Reap finished threads so a long test does not accumulate handles.
                conns.retain(|h| !h.is_finished());
                conns.push(handle);
            }
            // EMFILE and friends: back off instead of spinning.
            Err(_) => std::thread::sleep(POLL_STEP),
        }
    }
}

/// Why a blocking operation ended early.
#[derive(Debug)]
enum Stopped {
    /// Server stopping (lifetime or stop()).
    Server,
    /// The socket or TLS failed; the connection is abandoned either way.
    Io,
}

impl From<io::Error> for Stopped {
    fn from(_: io::Error) -> Self {
        Stopped::Io
    }
}

enum ReadOutcome {
    Data(usize),
    Eof,
}

/// A connection, plain or TLS, with stop-aware blocking reads and writes.
struct Conn<'a> {
    sock: TcpStream,
    tls: Option<rustls::ServerConnection>,
    stop: &'a AtomicBool,
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

impl Conn<'_> {
    fn check_stop(&self) -> Result<(), Stopped> {
        if self.stop.load(Ordering::SeqCst) {
            Err(Stopped::Server)
        } else {
            Ok(())
        }
    }

    fn read(&mut self, buf: &mut [u8]) -> Result<ReadOutcome, Stopped> {
        loop {
            self.check_stop()?;
            let Some(tls) = self.tls.as_mut() else {
                match self.sock.read(buf) {
                    Ok(0) => return Ok(ReadOutcome::Eof),
                    Ok(n) => return Ok(ReadOutcome::Data(n)),
                    Err(e) if is_timeout(&e) => continue,
                    Err(e) => return Err(e.into()),
                }
            };
            match tls.reader().read(buf) {
                Ok(0) => return Ok(ReadOutcome::Eof),
                Ok(n) => return Ok(ReadOutcome::Data(n)),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                // Peer closed without close_notify.
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(ReadOutcome::Eof),
                Err(e) => return Err(e.into()),
            }
            match tls.read_tls(&mut self.sock) {
                Ok(0) => return Ok(ReadOutcome::Eof),
                Ok(_) => {
                    if let Err(e) = tls.process_new_packets() {
                        // Let the peer see our alert, then give up.
                        let _ = self.flush_tls();
                        let _ = e;
                        return Err(Stopped::Io);
                    }
                    // Handshake messages and alerts.
                    self.flush_tls()?;
                }
                Err(e) if is_timeout(&e) => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }

    fn flush_tls(&mut self) -> Result<(), Stopped> {
        let Some(tls) = self.tls.as_mut() else {
            return Ok(());
        };
        while tls.wants_write() {
            if self.stop.load(Ordering::SeqCst) {
                return Err(Stopped::Server);
            }
            match tls.write_tls(&mut self.sock) {
                Ok(_) => {}
                Err(e) if is_timeout(&e) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    fn write_all(&mut self, mut data: &[u8]) -> Result<(), Stopped> {
        while !data.is_empty() {
            self.check_stop()?;
            let n = match self.tls.as_mut() {
                Some(tls) => tls.writer().write(data)?,
                None => match self.sock.write(data) {
                    Ok(0) => return Err(Stopped::Io),
                    Ok(n) => n,
                    Err(e) if is_timeout(&e) => 0,
                    Err(e) => return Err(e.into()),
                },
            };
            data = &data[n..];
            self.flush_tls()?;
        }
        Ok(())
    }

    /// Graceful close; over TLS sends close_notify first when asked.
    fn close(mut self, close_notify: bool) {
        if close_notify {
            if let Some(tls) = self.tls.as_mut() {
                tls.send_close_notify();
                let _ = self.flush_tls();
            }
        }
        let _ = self.sock.flush();
        let _ = self.sock.shutdown(std::net::Shutdown::Write);
        // Drain briefly so unread request bytes do not turn our FIN into an RST.
        let _ = self.sock.set_read_timeout(Some(POLL_STEP));
        let mut sink = [0u8; 4096];
        for _ in 0..4 {
            match self.sock.read(&mut sink) {
                Ok(n) if n > 0 => {}
                _ => break,
            }
        }
    }

    /// Abortive close: SO_LINGER 0 makes close() send RST.
    fn reset(self) {
        set_linger_zero(&self.sock);
        drop(self.sock);
    }
}

fn set_linger_zero(sock: &TcpStream) {
    use std::os::fd::AsRawFd;
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: valid open fd owned by `sock`; the option value is a properly sized `linger`.
    unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            &linger as *const libc::linger as *const libc::c_void,
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
}

/// What happens to the connection after a script ran.
enum Next {
    KeepOpen,
    Close { close_notify: bool },
    CloseSilently,
    Reset,
}

struct ParsedRequest {
    method: String,
    host: String,
    target: String,
    headers: Vec<(String, String)>,
    head_len: usize,
    body_len: u64,
}

/// Parses one request head from `buf`; Ok(None) = need more bytes.
fn parse_request(buf: &[u8]) -> Result<Option<ParsedRequest>, httparse::Error> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let head_len = match req.parse(buf)? {
        httparse::Status::Complete(n) => n,
        httparse::Status::Partial => return Ok(None),
    };
    let headers: Vec<(String, String)> = req
        .headers
        .iter()
        .map(|h| {
            (
                h.name.to_string(),
                String::from_utf8_lossy(h.value).into_owned(),
            )
        })
        .collect();
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim().to_string())
    };
    let host = header("host").map(|h| strip_port(&h)).unwrap_or_default();
    let body_len = header("content-length")
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0);
    Ok(Some(ParsedRequest {
        method: req.method.unwrap_or("").to_string(),
        host,
        target: req.path.unwrap_or("").to_string(),
        headers,
        head_len,
        body_len,
    }))
}

/// "Example.COM:8080" → "example.com"; "[::1]:80" → "[::1]".
fn strip_port(host: &str) -> String {
    let h = if host.starts_with('[') {
        match host.find(']') {
            Some(end) => &host[..=end],
            None => host,
        }
    } else {
        host.split(':').next().unwrap_or(host)
    };
    h.to_ascii_lowercase()
}

fn serve_connection(
    sock: TcpStream,
    peer: SocketAddr,
    conn_id: u64,
    shared: &Shared,
) -> Result<(), Stopped> {
    sock.set_nonblocking(false)?;
    sock.set_read_timeout(Some(POLL_STEP))?;
    sock.set_write_timeout(Some(POLL_STEP))?;
    let _ = sock.set_nodelay(true);
    let local_addr = sock.local_addr()?;
    let tls = match &shared.tls {
        Some(cfg) => Some(rustls::ServerConnection::new(cfg.clone()).map_err(io::Error::other)?),
        None => None,
    };
    let mut conn = Conn {
        sock,
        tls,
        stop: &shared.stop,
    };
    let mut buf: Vec<u8> = Vec::with_capacity(8192);
    let mut chunk = vec![0u8; 16 * 1024];
    for index_on_conn in 0..MAX_REQUESTS_PER_CONN {
        // Read one request head.
        let req = loop {
            match parse_request(&buf) {
                Ok(Some(req)) => break req,
                Ok(None) if buf.len() < MAX_REQUEST_HEAD => {}
                _ => {
                    conn.close(true);
                    return Ok(());
                }
            }
            match conn.read(&mut chunk)? {
                ReadOutcome::Data(n) => buf.extend_from_slice(&chunk[..n]),
                ReadOutcome::Eof => return Ok(()),
            }
        };
        let received = Instant::now();
        if req.body_len > MAX_REQUEST_BODY {
            conn.close(true);
            return Ok(());
        }
        // Discard the request body.
        let mut body_left = req.body_len;
        let in_buf = (buf.len() - req.head_len) as u64;
        if in_buf >= body_left {
            buf.drain(..req.head_len + body_left as usize);
            body_left = 0;
        } else {
            body_left -= in_buf;
            buf.clear();
        }
        while body_left > 0 {
            match conn.read(&mut chunk)? {
                ReadOutcome::Data(n) => {
                    let used = (n as u64).min(body_left);
                    body_left -= used;
                    if body_left == 0 {
                        buf.extend_from_slice(&chunk[used as usize..n]);
                    }
                }
                ReadOutcome::Eof => return Ok(()),
            }
        }
        let headers = req.headers.clone();
        let record_index = {
            let mut log = lock(&shared.requests);
            log.push(RequestRecord {
                conn_id,
                index_on_conn,
                local_addr,
                peer,
                method: req.method.clone(),
                host: req.host.clone(),
                target: req.target.clone(),
                headers: req.headers,
                received,
                answered: None,
            });
            log.len() - 1
        };
        let script = lock(&shared.routes)
            .get(&req.host, &req.target)
            .cloned()
            .unwrap_or_else(|| shared.fallback.clone());
        let head_only = req.method.eq_ignore_ascii_case("HEAD");
        let mut mark_answered = || {
            lock(&shared.requests)[record_index].answered = Some(Instant::now());
        };
        let next = run_script(
            &mut conn,
            &script,
            (&req.target, &headers),
            head_only,
            &mut chunk,
            &mut mark_answered,
        )?;
        match next {
            Next::KeepOpen => continue,
            Next::Close { close_notify } => {
                conn.close(close_notify);
                return Ok(());
            }
            Next::CloseSilently => {
                drop(conn);
                return Ok(());
            }
            Next::Reset => {
                conn.reset();
                return Ok(());
            }
        }
    }
    conn.close(true);
    Ok(())
}

/// Writes `data`, calling `mark_answered` just before the final byte goes out, so a client that
/// has read the whole answer always finds `answered` set in the log.
fn write_final(
    conn: &mut Conn<'_>,
    data: &[u8],
    mark_answered: &mut dyn FnMut(),
) -> Result<(), Stopped> {
    match data.split_last() {
        None => {
            mark_answered();
            Ok(())
        }
        Some((last, rest)) => {
            conn.write_all(rest)?;
            mark_answered();
            conn.write_all(std::slice::from_ref(last))
        }
    }
}

/// Runs one script; returns what to do with the connection afterwards.
fn run_script(
    conn: &mut Conn<'_>,
    script: &Script,
    (target, headers): (&str, &[(String, String)]),
    head_only: bool,
    scratch: &mut [u8],
    mark_answered: &mut dyn FnMut(),
) -> Result<Next, Stopped> {
    let mut script = script;
    // Delay chains are bounded by the (finite) script value itself.
    loop {
        match script {
            Script::Delay { delay, then } => {
                if !sleep_unless_stopped(conn.stop, *delay) {
                    return Err(Stopped::Server);
                }
                script = then;
            }
            Script::Respond(resp) => {
                write_final(conn, &resp.to_bytes(head_only), mark_answered)?;
                let next = if resp.keeps_alive() {
                    Next::KeepOpen
                } else {
                    Next::Close {
                        close_notify: resp.close_notify,
                    }
                };
                return Ok(next);
            }
            Script::Raw { bytes, then } => {
                write_final(conn, bytes, mark_answered)?;
                let next = match then {
                    After::Close => Next::Close { close_notify: true },
                    After::KeepOpen => Next::KeepOpen,
                    After::Reset => Next::Reset,
                };
                return Ok(next);
            }
            Script::Trickle {
                bytes,
                chunk,
                interval,
            } => {
                let pieces = bytes.chunks((*chunk).max(1));
                let count = pieces.len();
                for (i, piece) in pieces.enumerate() {
                    if i > 0 && !sleep_unless_stopped(conn.stop, *interval) {
                        return Err(Stopped::Server);
                    }
                    if i + 1 == count {
                        write_final(conn, piece, mark_answered)?;
                    } else {
                        conn.write_all(piece)?;
                    }
                }
                if count == 0 {
                    mark_answered();
                }
                return Ok(Next::Close { close_notify: true });
            }
            Script::ResetAfter { bytes } => {
                write_final(conn, bytes, mark_answered)?;
                return Ok(Next::Reset);
            }
            Script::Silence => {
                // Swallow whatever comes until the client gives up or we stop.
                loop {
                    match conn.read(scratch)? {
                        ReadOutcome::Data(_) => {}
                        ReadOutcome::Eof => return Ok(Next::CloseSilently),
                    }
                }
            }
            Script::CloseImmediately => return Ok(Next::CloseSilently),
            Script::Stream { head, body_len } => {
                if *body_len == 0 {
                    write_final(conn, head, mark_answered)?;
                    return Ok(Next::Close { close_notify: true });
                }
                conn.write_all(head)?;
                let block: Vec<u8> = (0..STREAM_BLOCK).map(|i| b'a' + (i % 26) as u8).collect();
                let mut left = *body_len;
                while left > 0 {
                    let n = left.min(STREAM_BLOCK as u64) as usize;
                    left -= n as u64;
                    if left == 0 {
                        write_final(conn, &block[..n], mark_answered)?;
                    } else {
                        conn.write_all(&block[..n])?;
                    }
                }
                return Ok(Next::Close { close_notify: true });
            }
            Script::Repeat {
                head,
                unit,
                count,
                tail,
            } => {
                conn.write_all(head)?;
                // Batch small units into blocks of about STREAM_BLOCK bytes per write.
                let per_block = (STREAM_BLOCK / unit.len().max(1)).max(1) as u64;
                let block: Vec<u8> = unit.repeat(per_block as usize);
                let mut left = if unit.is_empty() { 0 } else { *count };
                while left > 0 {
                    let n = left.min(per_block);
                    conn.write_all(&block[..n as usize * unit.len()])?;
                    left -= n;
                }
                write_final(conn, tail, mark_answered)?;
                return Ok(Next::Close { close_notify: true });
            }
            Script::Generate(generator) => {
                let generated = (generator.0)(target);
                let request = (target, headers);
                return run_script(conn, &generated, request, head_only, scratch, mark_answered);
            }
            Script::ForRequest(responder) => {
                let chosen = (responder.0)(target, headers);
                let request = (target, headers);
                return run_script(conn, &chosen, request, head_only, scratch, mark_answered);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strip_port_handles_names_and_ipv6() {
        assert_eq!(strip_port("Example.COM:8080"), "example.com");
        assert_eq!(strip_port("h1.test"), "h1.test");
        assert_eq!(strip_port("[::1]:80"), "[::1]");
    }

    #[test]
    fn chunked_gzip_response_bytes() {
        let r = Response::ok("hello world", "text/plain")
            .chunked(4)
            .keep_alive(false);
        let s = String::from_utf8(r.to_bytes(false)).unwrap();
        assert!(s.starts_with("HTTP/1.1 200 OK\r\n"));
        assert!(s.contains("Transfer-Encoding: chunked\r\n"));
        assert!(s.contains("Connection: close\r\n"));
        assert!(s.ends_with("\r\n\r\n4\r\nhell\r\n4\r\no wo\r\n3\r\nrld\r\n0\r\n\r\n"));
        let g = Response::ok("x".repeat(1000), "text/plain").gzip(true);
        let bytes = g.to_bytes(false);
        let text = String::from_utf8_lossy(&bytes);
        assert!(text.contains("Content-Encoding: gzip\r\n"));
        assert!(bytes.len() < 300, "gzip should shrink a repetitive body");
    }
}
