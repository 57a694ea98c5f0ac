//! The changing web's server: one listener on 127.0.0.1, a blocking accept thread woken by a
//! self-connect at stop, one thread per keep-alive connection (pipelining answered in order),
//! a watchdog that stops everything after the lifetime, and the request log. The version a
//! request gets and the time it is logged with are one reading of one clock, the clock the
//! change times count from.

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::pages::{not_found_body, Site};
use super::{FreshConfig, LogEntry, Schedule};
use crate::{conditional, sleep_unless_stopped, POLL_STEP};

/// Open connections at once; more are closed at once.
const MAX_CONNS: usize = 256;
/// Largest request head buffered.
const MAX_HEAD: usize = 16 * 1024;
/// Headers parsed per request; more is a bad request.
const MAX_HEADERS: usize = 64;
/// Requests served on one connection.
const MAX_REQUESTS_PER_CONN: usize = 100_000;
/// A client that reads nothing for this long loses its connection.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// Bound on the self-connect that wakes the accept thread at stop.
const WAKE_TIMEOUT: Duration = Duration::from_millis(500);
/// Log entries kept in memory; past this, requests are only counted
/// ([`FreshWeb::log_dropped`]).
pub const MAX_LOG: usize = 1_000_000;

struct Shared {
    cfg: FreshConfig,
    schedule: Schedule,
    port: u16,
    /// t = 0.
    start: Instant,
    /// The wall-clock second at or just after t = 0 (dates count from it).
    date_base: i64,
    stop: AtomicBool,
    open: AtomicUsize,
    log: Mutex<Vec<LogEntry>>,
    dropped: AtomicU64,
    conns: Mutex<Vec<JoinHandle<()>>>,
}

/// Locks, ignoring poisoning: a panicking test thread must not hide the log from the others.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    fn now(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    fn site(&self) -> Site<'_> {
        Site {
            cfg: &self.cfg,
            schedule: &self.schedule,
            port: self.port,
            date_base: self.date_base,
        }
    }

    fn record(&self, entry: LogEntry) {
        let mut log = lock(&self.log);
        if log.len() < MAX_LOG {
            log.push(entry);
        } else {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Sets the stop flag and wakes the accept thread.
    fn stop(&self) {
        if !self.stop.swap(true, Ordering::SeqCst) {
            let addr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, self.port));
            let _ = TcpStream::connect_timeout(&addr, WAKE_TIMEOUT);
        }
    }
}

/// The changing web, served on 127.0.0.1 until stopped, dropped, or its lifetime has passed.
pub struct FreshWeb {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

impl FreshWeb {
    /// Checks `cfg`, draws its schedule up to the lifetime, binds `127.0.0.1:cfg.port` and
    /// starts serving; t = 0 is now.
    pub fn start(cfg: FreshConfig) -> io::Result<FreshWeb> {
        cfg.check()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let schedule = Schedule::new(&cfg, cfg.lifetime.as_secs_f64());
        let listener = TcpListener::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, cfg.port))?;
        let port = listener.local_addr()?.port();
        let lifetime = cfg.lifetime;
        let start = Instant::now();
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        let shared = Arc::new(Shared {
            cfg,
            schedule,
            port,
            start,
            date_base: wall.ceil() as i64,
            stop: AtomicBool::new(false),
            open: AtomicUsize::new(0),
            log: Mutex::new(Vec::new()),
            dropped: AtomicU64::new(0),
            conns: Mutex::new(Vec::new()),
        });
        let accept = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("freshweb-accept".into())
                .spawn(move || accept_loop(listener, shared))?
        };
        let mut web = FreshWeb {
            shared,
            threads: vec![accept],
        };
        let shared = web.shared.clone();
        // On failure, dropping `web` stops the accept thread.
        let watchdog = std::thread::Builder::new()
            .name("freshweb-watchdog".into())
            .spawn(move || {
                sleep_unless_stopped(&shared.stop, lifetime);
                shared.stop();
            })?;
        web.threads.push(watchdog);
        Ok(web)
    }

    pub fn port(&self) -> u16 {
        self.shared.port
    }

    pub fn config(&self) -> &FreshConfig {
        &self.shared.cfg
    }

    /// The change times served, drawn up to the lifetime.
    pub fn schedule(&self) -> &Schedule {
        &self.shared.schedule
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.shared.port)
    }

    /// The index, from which everything is linked.
    pub fn seeds(&self) -> Vec<String> {
        vec![self.url("/")]
    }

    /// Seconds since t = 0 on the server's clock (the log's and the schedule's).
    pub fn elapsed(&self) -> f64 {
        self.shared.now()
    }

    /// A snapshot of the log, in order of logging (nearly that of `t`: connections log
    /// concurrently).
    pub fn log(&self) -> Vec<LogEntry> {
        self.log_from(0)
    }

    /// The log's entries from the `from`-th on (to follow it as it grows).
    pub fn log_from(&self, from: usize) -> Vec<LogEntry> {
        let log = lock(&self.shared.log);
        log.get(from..).map_or_else(Vec::new, <[LogEntry]>::to_vec)
    }

    /// Requests answered past `MAX_LOG` and so not in the log.
    pub fn log_dropped(&self) -> u64 {
        self.shared.dropped.load(Ordering::Relaxed)
    }

    /// True once stopped (by `stop`, drop or the lifetime).
    pub fn is_stopped(&self) -> bool {
        self.shared.stop.load(Ordering::SeqCst)
    }

    /// Stops serving, closes every socket and joins every thread (within about `POLL_STEP`,
    /// or `WRITE_TIMEOUT` for a client that stopped reading).
    pub fn stop(self) {
        // Drop does the work.
    }
}

impl Drop for FreshWeb {
    fn drop(&mut self) {
        self.shared.stop();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        // The accept thread is joined: no connection thread can appear now.
        let conns: Vec<_> = lock(&self.shared.conns).drain(..).collect();
        for t in conns {
            let _ = t.join();
        }
    }
}

/// Blocking accept (no polling delay for clients); `Shared::stop` wakes it.
fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    while !shared.stop.load(Ordering::SeqCst) {
        let stream = match listener.accept() {
            Ok(_) if shared.stop.load(Ordering::SeqCst) => break,
            Ok((s, _)) => s,
            // EMFILE and friends: back off instead of spinning.
            Err(_) => {
                std::thread::sleep(POLL_STEP);
                continue;
            }
        };
        if shared.open.load(Ordering::SeqCst) >= MAX_CONNS {
            continue; // dropped: closed at once
        }
        shared.open.fetch_add(1, Ordering::SeqCst);
        let s = shared.clone();
        let spawned = std::thread::Builder::new()
            .name("freshweb-conn".into())
            .spawn(move || {
                serve(stream, &s);
                s.open.fetch_sub(1, Ordering::SeqCst);
            });
        match spawned {
            Ok(handle) => {
                let mut conns = lock(&shared.conns);
                // Reap finished threads so a long run does not accumulate handles.
                conns.retain(|h| !h.is_finished());
                conns.push(handle);
            }
            Err(_) => {
                shared.open.fetch_sub(1, Ordering::SeqCst);
            }
        }
    }
}

/// One request's answer: the bytes to write and whether the connection ends after them.
struct Answer {
    bytes: Vec<u8>,
    close: bool,
}

enum Parsed {
    Request(Answer, usize),
    Partial,
}

/// Serves one connection: requests in order, until the peer closes, a request asks to close,
/// the per-connection bound, a bad request, or stop.
fn serve(mut sock: TcpStream, sh: &Shared) {
    let _ = sock.set_nodelay(true);
    if sock.set_read_timeout(Some(POLL_STEP)).is_err()
        || sock.set_write_timeout(Some(WRITE_TIMEOUT)).is_err()
    {
        return;
    }
    let mut buf: Vec<u8> = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    for _ in 0..MAX_REQUESTS_PER_CONN {
        // Read until a whole head is buffered: each wait is one POLL_STEP, and stop (at the
        // latest the lifetime) ends the loop.
        let (answer, used) = loop {
            match answer(sh, &buf) {
                Parsed::Request(a, n) => break (a, n),
                Parsed::Partial if buf.len() >= MAX_HEAD => return,
                Parsed::Partial => {}
            }
            if sh.stop.load(Ordering::SeqCst) {
                return;
            }
            match sock.read(&mut chunk) {
                Ok(0) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock
                            | io::ErrorKind::TimedOut
                            | io::ErrorKind::Interrupted
                    ) => {}
                Err(_) => return,
            }
        };
        buf.drain(..used);
        if sock.write_all(&answer.bytes).is_err() || answer.close {
            return;
        }
    }
}

/// The answer to the request at the start of `buf`, logged; `Partial` until its head is
/// whole. A malformed request, or one with a body, gets a 400 and the connection closes.
fn answer(sh: &Shared, buf: &[u8]) -> Parsed {
    if buf.is_empty() {
        return Parsed::Partial;
    }
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let used = match req.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Parsed::Partial,
        Err(_) => {
            let mut entry = LogEntry::new(sh.now(), b"-", b"-");
            let bytes = respond(&mut entry, "400 Bad Request", "", None, &[], true);
            sh.record(entry);
            return Parsed::Request(Answer { bytes, close: true }, buf.len());
        }
    };
    // The version served and the log's time: one reading of the clock.
    let t = sh.now();
    let method = req.method.unwrap_or("");
    let target = req.path.unwrap_or("");
    let mut entry = LogEntry::new(t, method.as_bytes(), target.as_bytes());
    let mut close = req.version == Some(0);
    let mut has_body = false;
    for h in req.headers.iter() {
        if h.name.eq_ignore_ascii_case("connection") {
            if h.value.eq_ignore_ascii_case(b"close") {
                close = true;
            } else if h.value.eq_ignore_ascii_case(b"keep-alive") {
                close = false;
            }
        } else if h.name.eq_ignore_ascii_case("transfer-encoding")
            || (h.name.eq_ignore_ascii_case("content-length") && h.value.trim_ascii() != b"0")
        {
            // Never expected here; not reading bodies keeps the loop simple.
            has_body = true;
        } else if conditional::is_conditional_header(h.name) {
            entry.conditional = true;
        }
    }
    let head_only = method == "HEAD";
    let mut bytes = if has_body {
        close = true;
        respond(&mut entry, "400 Bad Request", "", None, &[], true)
    } else if method != "GET" && !head_only {
        let allow = Some("Allow: GET, HEAD\r\n");
        respond(&mut entry, "405 Method Not Allowed", "", allow, &[], close)
    } else {
        let site = sh.site();
        match site.state(target, t) {
            None => {
                let html = "text/html; charset=utf-8";
                respond(
                    &mut entry,
                    "404 Not Found",
                    html,
                    None,
                    not_found_body(),
                    close,
                )
            }
            Some(state) => {
                let v = &state.validators;
                let lm = http_date_line(v.last_modified);
                let validators = format!("ETag: {}\r\n{lm}", v.etag);
                entry.version = state.version as i64;
                let date = v.date_trusted.then_some(v.last_modified);
                if entry.conditional
                    && conditional::is_not_modified(req.headers, v.etag.as_bytes(), date)
                {
                    respond(
                        &mut entry,
                        "304 Not Modified",
                        "",
                        Some(&validators),
                        &[],
                        close,
                    )
                } else {
                    let (content_type, body) = site.body(&state);
                    let ok = "200 OK";
                    respond(
                        &mut entry,
                        ok,
                        content_type,
                        Some(&validators),
                        &body,
                        close,
                    )
                }
            }
        }
    };
    if head_only {
        // The head a GET would get, without the body.
        bytes.truncate(bytes.len() - entry.body_bytes as usize);
        entry.body_bytes = 0;
    }
    // Logged before it is written: a client that has its answer finds it in the log.
    sh.record(entry);
    Parsed::Request(Answer { bytes, close }, used)
}

fn http_date_line(unix: i64) -> String {
    format!("Last-Modified: {}\r\n", crate::http_date::format(unix))
}

/// A whole response (a 304's without `Content-Length`: it has no body by definition), with
/// the status and body size noted in `entry`. `extra`: header lines, each ending in CRLF.
fn respond(
    entry: &mut LogEntry,
    status: &str,
    content_type: &str,
    extra: Option<&str>,
    body: &[u8],
    close: bool,
) -> Vec<u8> {
    let not_modified = status.starts_with("304");
    let mut head = format!("HTTP/1.1 {status}\r\nServer: spinneret-freshweb\r\n");
    if !content_type.is_empty() {
        head.push_str(&format!("Content-Type: {content_type}\r\n"));
    }
    if !not_modified {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str(extra.unwrap_or(""));
    head.push_str(if close {
        "Connection: close\r\n\r\n"
    } else {
        "Connection: keep-alive\r\n\r\n"
    });
    entry.status = status[..3].parse().unwrap_or(0);
    entry.body_bytes = body.len() as u64;
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}
