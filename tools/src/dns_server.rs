//! A misbehaving authoritative DNS server on loopback UDP (and TCP) for resolver tests.
//!
//! Queries are parsed and answers built by hand (A, AAAA, CNAME chains), so the server can
//! also produce every wrong answer a resolver must survive (`Behaviour`). Names are matched
//! case-insensitively without a trailing dot; unknown names get NXDOMAIN. As real servers do,
//! a UDP answer that does not fit 512 bytes (or, with `edns`, the size the query's OPT record
//! advertises, at most 1232) is sent truncated (TC, no records), and the same port serves TCP
//! (RFC 7766 framing) unless `tcp` is off. The HTTP side of a
//! test site lives in `http_server`; the records for a generated site come from `sites`.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::{sleep_unless_stopped, POLL_STEP};

/// Longest CNAME chain followed when building an answer.
const MAX_CNAME_CHAIN: usize = 8;
/// Largest query accepted (classic UDP DNS).
const MAX_QUERY: usize = 512;
/// A UDP answer longer than this is truncated when the query has no OPT record (RFC 1035).
const CLASSIC_UDP: usize = 512;
/// The most a UDP answer may take with EDNS, whatever the query advertises (DNS Flag Day 2020).
pub const EDNS_UDP: u16 = 1232;
/// Tries at binding UDP and TCP to one free port (another process may hold the TCP side of
/// the port the kernel gave the UDP socket).
const BIND_TRIES: usize = 16;
/// Most labels in a question name.
const MAX_LABELS: usize = 127;

pub const TYPE_A: u16 = 1;
pub const TYPE_CNAME: u16 = 5;
pub const TYPE_AAAA: u16 = 28;
const TYPE_OPT: u16 = 41;
const CLASS_IN: u16 = 1;

const RCODE_SERVFAIL: u8 = 2;
const RCODE_NXDOMAIN: u8 = 3;
const RCODE_REFUSED: u8 = 5;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Record {
    A(Ipv4Addr),
    Aaaa(Ipv6Addr),
    Cname(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Behaviour {
    Normal,
    /// Never answer.
    Drop,
    /// Answer normally after this long (other queries are not held up).
    Delay(Duration),
    /// Answer with a different transaction ID.
    WrongId,
    /// Answer with a different question name ("wrong." prepended).
    WrongQuestion,
    /// Answer from another socket (another source port).
    WrongSource,
    /// TC bit set, no answers.
    Truncated,
    ServFail,
    NxDomain,
    Refused,
    /// These exact bytes.
    Garbage(Vec<u8>),
    /// These bytes with the query's ID patched in at bytes 0..2.
    Raw(Vec<u8>),
    /// Drop the first n queries for the name, then Normal.
    FailFirst(u32),
    /// NOERROR with these (type, rdata) answers owned by the question name, whatever was
    /// asked: unknown or unexpected types (HTTPS = 65, SVCB = 64, DNAME = 39).
    TypedAnswers(Vec<(u16, Vec<u8>)>),
    /// One answer whose owner name is a compression pointer to itself.
    PointerLoop,
    /// A header claiming 65,535 records in every section (answer, authority, additional) over a
    /// single real A answer.
    HugeCounts,
}

pub struct DnsServerConfig {
    pub addr: Ipv4Addr,
    pub port: u16,
    pub records: HashMap<String, Vec<Record>>,
    pub behaviours: HashMap<String, Behaviour>,
    pub ttl: u32,
    pub lifetime: Duration,
    /// Honour EDNS0: a query with an OPT record gets one back, and UDP answers up to the size
    /// it advertises (at most `EDNS_UDP`). Off, the server ignores OPT and truncates at 512.
    pub edns: bool,
    /// Serve TCP on the same port (for answers truncated over UDP). Off, TCP is refused.
    pub tcp: bool,
}

impl Default for DnsServerConfig {
    fn default() -> Self {
        DnsServerConfig {
            addr: Ipv4Addr::LOCALHOST,
            port: 0,
            records: HashMap::new(),
            behaviours: HashMap::new(),
            ttl: 300,
            lifetime: crate::http_server::DEFAULT_LIFETIME,
            edns: true,
            tcp: true,
        }
    }
}

struct State {
    records: HashMap<String, Vec<Record>>,
    behaviours: HashMap<String, Behaviour>,
    /// Queries seen per name, for `FailFirst`.
    seen: HashMap<String, u32>,
    queries: Vec<(String, u16, Instant)>,
    /// The queries of `queries` that came over TCP.
    tcp_queries: Vec<(String, u16)>,
}

struct Shared {
    state: Mutex<State>,
    stop: AtomicBool,
    ttl: u32,
    edns: bool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn normalize(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

pub struct DnsServer {
    shared: Arc<Shared>,
    addr: SocketAddr,
    threads: Vec<JoinHandle<()>>,
}

impl DnsServer {
    pub fn start(config: DnsServerConfig) -> io::Result<DnsServer> {
        if !config.addr.is_loopback() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("refusing non-loopback address {}", config.addr),
            ));
        }
        let (sock, listener) = bind(config.addr, config.port, config.tcp)?;
        let other = UdpSocket::bind(SocketAddrV4::new(config.addr, 0))?;
        sock.set_read_timeout(Some(POLL_STEP))?;
        let addr = sock.local_addr()?;
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                records: config
                    .records
                    .into_iter()
                    .map(|(k, v)| (normalize(&k), v))
                    .collect(),
                behaviours: config
                    .behaviours
                    .into_iter()
                    .map(|(k, v)| (normalize(&k), v))
                    .collect(),
                seen: HashMap::new(),
                queries: Vec::new(),
                tcp_queries: Vec::new(),
            }),
            stop: AtomicBool::new(false),
            ttl: config.ttl,
            edns: config.edns,
        });
        let s = shared.clone();
        let serve = std::thread::spawn(move || serve(sock, other, s));
        let mut threads = vec![serve];
        if let Some(listener) = listener {
            listener.set_nonblocking(true)?;
            let s = shared.clone();
            threads.push(std::thread::spawn(move || serve_tcp(listener, s)));
        }
        let s = shared.clone();
        let lifetime = config.lifetime;
        let watchdog = std::thread::spawn(move || {
            sleep_unless_stopped(&s.stop, lifetime);
            s.stop.store(true, Ordering::SeqCst);
        });
        threads.push(watchdog);
        Ok(DnsServer {
            shared,
            addr,
            threads,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every well-formed query received: (name lowercased without trailing dot, qtype, when).
    pub fn queries(&self) -> Vec<(String, u16, Instant)> {
        lock(&self.shared.state).queries.clone()
    }

    /// The queries that came over TCP: (name, qtype).
    pub fn tcp_queries(&self) -> Vec<(String, u16)> {
        lock(&self.shared.state).tcp_queries.clone()
    }

    pub fn set_records(&self, name: &str, records: Vec<Record>) {
        lock(&self.shared.state)
            .records
            .insert(normalize(name), records);
    }

    pub fn set_behaviour(&self, name: &str, b: Behaviour) {
        let mut st = lock(&self.shared.state);
        let name = normalize(name);
        st.seen.remove(&name);
        st.behaviours.insert(name, b);
    }

    pub fn stop(self) {
        // Drop does the work.
    }
}

impl Drop for DnsServer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Binds the UDP socket, and the TCP listener on the same port if asked.
fn bind(addr: Ipv4Addr, port: u16, tcp: bool) -> io::Result<(UdpSocket, Option<TcpListener>)> {
    let mut last = None;
    for _ in 0..BIND_TRIES {
        let sock = UdpSocket::bind(SocketAddrV4::new(addr, port))?;
        if !tcp {
            return Ok((sock, None));
        }
        match TcpListener::bind(sock.local_addr()?) {
            Ok(l) => return Ok((sock, Some(l))),
            // The kernel's port for UDP is taken for TCP: try another, unless it was asked for.
            Err(e) if port == 0 => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no port free for UDP and TCP")))
}

/// A parsed question: the query's ID, flags, the raw question section and the name.
struct Query<'a> {
    id: u16,
    flags: u16,
    question: &'a [u8],
    name: String,
    qtype: u16,
    /// The UDP size the query's OPT record advertises, if it has one.
    edns: Option<u16>,
}

fn parse_query(msg: &[u8]) -> Option<Query<'_>> {
    if msg.len() < 12 {
        return None;
    }
    let id = u16::from_be_bytes([msg[0], msg[1]]);
    let flags = u16::from_be_bytes([msg[2], msg[3]]);
    let qdcount = u16::from_be_bytes([msg[4], msg[5]]);
    if flags & 0x8000 != 0 || qdcount != 1 {
        return None;
    }
    let mut pos = 12;
    let mut labels: Vec<String> = Vec::new();
    loop {
        let len = *msg.get(pos)? as usize;
        pos += 1;
        if len == 0 {
            break;
        }
        // Queries carry no compression; longer labels are malformed.
        if len > 63 || labels.len() >= MAX_LABELS {
            return None;
        }
        let label = msg.get(pos..pos + len)?;
        labels.push(String::from_utf8_lossy(label).to_ascii_lowercase());
        pos += len;
    }
    let qtype = u16::from_be_bytes([*msg.get(pos)?, *msg.get(pos + 1)?]);
    msg.get(pos + 2..pos + 4)?;
    // An OPT record right after the question: root owner, TYPE 41, CLASS = UDP size.
    let arcount = u16::from_be_bytes([msg[10], msg[11]]);
    let opt = msg.get(pos + 4..pos + 9);
    let edns = match opt {
        Some(&[0, 0, 41, hi, lo]) if arcount >= 1 => Some(u16::from_be_bytes([hi, lo])),
        _ => None,
    };
    Some(Query {
        id,
        flags,
        question: &msg[12..pos + 4],
        name: labels.join("."),
        qtype,
        edns,
    })
}

fn encode_name(out: &mut Vec<u8>, name: &str) {
    for label in name.split('.').filter(|l| !l.is_empty()) {
        let bytes = &label.as_bytes()[..label.len().min(63)];
        out.push(bytes.len() as u8);
        out.extend_from_slice(bytes);
    }
    out.push(0);
}

fn push_rr(out: &mut Vec<u8>, owner: &str, rtype: u16, ttl: u32, rdata: &[u8]) {
    encode_name(out, owner);
    out.extend_from_slice(&rtype.to_be_bytes());
    out.extend_from_slice(&CLASS_IN.to_be_bytes());
    out.extend_from_slice(&ttl.to_be_bytes());
    out.extend_from_slice(&(rdata.len() as u16).to_be_bytes());
    out.extend_from_slice(rdata);
}

/// A response header + question; answers are appended by the caller (ancount patched).
fn response_head(q: &Query<'_>, id: u16, rcode: u8, truncated: bool, question: &[u8]) -> Vec<u8> {
    let opcode_rd = q.flags & 0x7900; // opcode + RD copied from the query
    let mut flags = 0x8000 | 0x0400 | 0x0080 | opcode_rd | rcode as u16; // QR, AA, RA
    if truncated {
        flags |= 0x0200;
    }
    let mut out = Vec::with_capacity(512);
    out.extend_from_slice(&id.to_be_bytes());
    out.extend_from_slice(&flags.to_be_bytes());
    out.extend_from_slice(&1u16.to_be_bytes());
    out.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
    out.extend_from_slice(question);
    out
}

/// Builds the normal answer: NXDOMAIN for unknown names, else the CNAME chain and addresses.
fn normal_answer(q: &Query<'_>, id: u16, question: &[u8], st: &State, ttl: u32) -> Vec<u8> {
    if !st.records.contains_key(&q.name) {
        return response_head(q, id, RCODE_NXDOMAIN, false, question);
    }
    let mut out = response_head(q, id, 0, false, question);
    let mut answers: u16 = 0;
    let mut name = q.name.clone();
    for _ in 0..MAX_CNAME_CHAIN {
        let records = match st.records.get(&name) {
            Some(r) => r,
            None => break,
        };
        let cname = records.iter().find_map(|r| match r {
            Record::Cname(t) => Some(normalize(t)),
            _ => None,
        });
        if let Some(target) = cname {
            let mut rdata = Vec::new();
            encode_name(&mut rdata, &target);
            push_rr(&mut out, &name, TYPE_CNAME, ttl, &rdata);
            answers += 1;
            if q.qtype == TYPE_CNAME {
                break;
            }
            name = target;
            continue;
        }
        for r in records {
            match r {
                Record::A(ip) if q.qtype == TYPE_A => {
                    push_rr(&mut out, &name, TYPE_A, ttl, &ip.octets());
                    answers += 1;
                }
                Record::Aaaa(ip) if q.qtype == TYPE_AAAA => {
                    push_rr(&mut out, &name, TYPE_AAAA, ttl, &ip.octets());
                    answers += 1;
                }
                _ => {}
            }
        }
        break;
    }
    out[6..8].copy_from_slice(&answers.to_be_bytes());
    out
}

/// Fits a normal answer to the transport, as a real server does: over UDP, at most 512 bytes,
/// or with EDNS honoured the size the query advertised (512 to `EDNS_UDP`) and an OPT record
/// in the answer; past that, the header and question alone with TC set.
fn fit(q: &Query<'_>, mut answer: Vec<u8>, edns: bool, tcp: bool) -> Vec<u8> {
    let honoured = q.edns.filter(|_| edns);
    if let Some(size) = honoured {
        let ar = u16::from_be_bytes([answer[10], answer[11]]) + 1;
        answer[10..12].copy_from_slice(&ar.to_be_bytes());
        answer.push(0);
        answer.extend_from_slice(&TYPE_OPT.to_be_bytes());
        answer.extend_from_slice(&size.clamp(512, EDNS_UDP).to_be_bytes());
        answer.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
    }
    let limit = honoured.map_or(CLASSIC_UDP, |size| {
        usize::from(size.clamp(CLASSIC_UDP as u16, EDNS_UDP))
    });
    if tcp || answer.len() <= limit {
        return answer;
    }
    response_head(q, q.id, 0, true, q.question)
}

/// What to send for one query: bytes and whether from the other socket; None = drop.
fn decide(
    q: &Query<'_>,
    shared: &Shared,
    tcp: bool,
) -> (Option<(Vec<u8>, bool)>, Option<Duration>) {
    let mut st = lock(&shared.state);
    st.queries.push((q.name.clone(), q.qtype, Instant::now()));
    if tcp {
        st.tcp_queries.push((q.name.clone(), q.qtype));
    }
    let seen = {
        let c = st.seen.entry(q.name.clone()).or_insert(0);
        *c = c.saturating_add(1);
        *c
    };
    let behaviour = st
        .behaviours
        .get(&q.name)
        .cloned()
        .unwrap_or(Behaviour::Normal);
    let ttl = shared.ttl;
    let normal = |st: &State| {
        let answer = normal_answer(q, q.id, q.question, st, ttl);
        fit(q, answer, shared.edns, tcp)
    };
    match behaviour {
        Behaviour::Normal => (Some((normal(&st), false)), None),
        Behaviour::Drop => (None, None),
        Behaviour::Delay(d) => (Some((normal(&st), false)), Some(d)),
        Behaviour::WrongId => (
            Some((normal_answer(q, q.id ^ 0x5a5a, q.question, &st, ttl), false)),
            None,
        ),
        Behaviour::WrongQuestion => {
            let mut question = Vec::new();
            encode_name(&mut question, &format!("wrong.{}", q.name));
            question.extend_from_slice(&q.question[q.question.len() - 4..]);
            (
                Some((normal_answer(q, q.id, &question, &st, ttl), false)),
                None,
            )
        }
        Behaviour::WrongSource => (Some((normal(&st), true)), None),
        Behaviour::Truncated => (
            Some((response_head(q, q.id, 0, true, q.question), false)),
            None,
        ),
        Behaviour::ServFail => (
            Some((
                response_head(q, q.id, RCODE_SERVFAIL, false, q.question),
                false,
            )),
            None,
        ),
        Behaviour::NxDomain => (
            Some((
                response_head(q, q.id, RCODE_NXDOMAIN, false, q.question),
                false,
            )),
            None,
        ),
        Behaviour::Refused => (
            Some((
                response_head(q, q.id, RCODE_REFUSED, false, q.question),
                false,
            )),
            None,
        ),
        Behaviour::Garbage(bytes) => (Some((bytes, false)), None),
        Behaviour::Raw(mut bytes) => {
            if bytes.len() >= 2 {
                bytes[0..2].copy_from_slice(&q.id.to_be_bytes());
            }
            (Some((bytes, false)), None)
        }
        Behaviour::TypedAnswers(answers) => {
            let mut out = response_head(q, q.id, 0, false, q.question);
            for (rtype, rdata) in &answers {
                push_rr(&mut out, &q.name, *rtype, ttl, rdata);
            }
            let n = answers.len().min(usize::from(u16::MAX)) as u16;
            out[6..8].copy_from_slice(&n.to_be_bytes());
            (Some((out, false)), None)
        }
        Behaviour::PointerLoop => {
            let mut out = response_head(q, q.id, 0, false, q.question);
            // A pointer at its own offset: a decoder following it never reaches a root label.
            let at = out.len() as u16;
            out.extend_from_slice(&(0xc000 | at).to_be_bytes());
            out.extend_from_slice(&TYPE_A.to_be_bytes());
            out.extend_from_slice(&CLASS_IN.to_be_bytes());
            out.extend_from_slice(&ttl.to_be_bytes());
            out.extend_from_slice(&4u16.to_be_bytes());
            out.extend_from_slice(&[127, 0, 0, 1]);
            out[6..8].copy_from_slice(&1u16.to_be_bytes());
            (Some((out, false)), None)
        }
        Behaviour::HugeCounts => {
            let mut out = response_head(q, q.id, 0, false, q.question);
            push_rr(&mut out, &q.name, TYPE_A, ttl, &[127, 0, 0, 1]);
            out[6..12].copy_from_slice(&[0xff; 6]);
            (Some((out, false)), None)
        }
        Behaviour::FailFirst(n) => {
            if seen <= n {
                (None, None)
            } else {
                (Some((normal(&st), false)), None)
            }
        }
    }
}

fn serve(sock: UdpSocket, other: UdpSocket, shared: Arc<Shared>) {
    let mut buf = [0u8; MAX_QUERY];
    let mut delayed: Vec<JoinHandle<()>> = Vec::new();
    while !shared.stop.load(Ordering::SeqCst) {
        let (n, from) = match sock.recv_from(&mut buf) {
            Ok(x) => x,
            Err(_) => continue, // timeout: check stop
        };
        // Replies only ever go back to loopback senders.
        if !from.ip().is_loopback() {
            continue;
        }
        let Some(q) = parse_query(&buf[..n]) else {
            continue;
        };
        let (reply, delay) = decide(&q, &shared, false);
        let Some((bytes, from_other)) = reply else {
            continue;
        };
        let out = if from_other { &other } else { &sock };
        match delay {
            None => {
                let _ = out.send_to(&bytes, from);
            }
            Some(d) => {
                let Ok(out) = out.try_clone() else { continue };
                let s = shared.clone();
                delayed.retain(|h| !h.is_finished());
                delayed.push(std::thread::spawn(move || {
                    if sleep_unless_stopped(&s.stop, d) {
                        let _ = out.send_to(&bytes, from);
                    }
                }));
            }
        }
    }
    for h in delayed {
        let _ = h.join();
    }
}

/// Accepts TCP connections (nonblocking, so `stop` is seen) and serves each in turn.
fn serve_tcp(listener: TcpListener, shared: Arc<Shared>) {
    while !shared.stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((stream, from)) if from.ip().is_loopback() => serve_tcp_conn(stream, &shared),
            Ok(_) => {}
            Err(_) => std::thread::sleep(POLL_STEP),
        }
    }
}

/// Answers framed queries on one connection until the client closes it or stops talking. A
/// dropped query is simply not answered; a delay is slept here (one client at a time).
fn serve_tcp_conn(mut stream: TcpStream, shared: &Shared) {
    if stream.set_nonblocking(false).is_err() || stream.set_read_timeout(Some(POLL_STEP)).is_err() {
        return;
    }
    let mut buf = Vec::new();
    let mut idle = Duration::ZERO;
    let mut chunk = [0u8; 1024];
    // Bounded: the connection ends when the client closes, errs, or is silent past a lifetime.
    while !shared.stop.load(Ordering::SeqCst) && idle < crate::http_server::DEFAULT_LIFETIME {
        match stream.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => {
                idle = Duration::ZERO;
                buf.extend_from_slice(&chunk[..n]);
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                idle += POLL_STEP;
                continue;
            }
            Err(_) => return,
        }
        // Every whole framed query in the buffer.
        while buf.len() >= 2 {
            let len = usize::from(u16::from_be_bytes([buf[0], buf[1]]));
            if buf.len() < 2 + len {
                break;
            }
            let msg: Vec<u8> = buf.drain(..2 + len).skip(2).collect();
            let Some(q) = parse_query(&msg) else {
                continue;
            };
            let (reply, delay) = decide(&q, shared, true);
            if let Some(d) = delay {
                if !sleep_unless_stopped(&shared.stop, d) {
                    return;
                }
            }
            if let Some((bytes, _)) = reply {
                let mut framed = (bytes.len().min(usize::from(u16::MAX)) as u16)
                    .to_be_bytes()
                    .to_vec();
                framed.extend_from_slice(&bytes);
                if stream.write_all(&framed).is_err() {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query_bytes(name: &str, qtype: u16) -> Vec<u8> {
        let mut q = vec![0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
        encode_name(&mut q, name);
        q.extend_from_slice(&qtype.to_be_bytes());
        q.extend_from_slice(&CLASS_IN.to_be_bytes());
        q
    }

    #[test]
    fn parses_a_query_and_rejects_malformed_ones_without_panicking() {
        let q = query_bytes("Www.Example.test", TYPE_AAAA);
        let parsed = parse_query(&q).unwrap();
        assert_eq!(parsed.id, 0x1234);
        assert_eq!(parsed.name, "www.example.test");
        assert_eq!(parsed.qtype, TYPE_AAAA);
        assert_eq!(parsed.question, &q[12..]);
        // Every truncation, and a response (QR set), is ignored rather than answered.
        for cut in 0..q.len() {
            assert!(parse_query(&q[..cut]).is_none(), "cut at {cut}");
        }
        let mut resp = q.clone();
        resp[2] |= 0x80;
        assert!(parse_query(&resp).is_none());
        // A compression pointer in a query is not a label.
        let mut ptr = q[..12].to_vec();
        ptr.extend_from_slice(&[0xc0, 0x0c, 0, 1, 0, 1]);
        assert!(parse_query(&ptr).is_none());
    }
}
