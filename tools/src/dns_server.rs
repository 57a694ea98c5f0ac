//! A misbehaving authoritative DNS server on loopback UDP for resolver tests.
//!
//! Queries are parsed and answers built by hand (A, AAAA, CNAME chains), so the server can
//! also produce every wrong answer a resolver must survive (`Behaviour`). Names are matched
//! case-insensitively without a trailing dot; unknown names get NXDOMAIN. The HTTP side of a
//! test site lives in `http_server`; the records for a generated site come from `sites`.

use std::collections::HashMap;
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::{sleep_unless_stopped, POLL_STEP};

/// Longest CNAME chain followed when building an answer.
const MAX_CNAME_CHAIN: usize = 8;
/// Largest query accepted (classic UDP DNS).
const MAX_QUERY: usize = 512;
/// Most labels in a question name.
const MAX_LABELS: usize = 127;

pub const TYPE_A: u16 = 1;
pub const TYPE_CNAME: u16 = 5;
pub const TYPE_AAAA: u16 = 28;
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
        }
    }
}

struct State {
    records: HashMap<String, Vec<Record>>,
    behaviours: HashMap<String, Behaviour>,
    /// Queries seen per name, for `FailFirst`.
    seen: HashMap<String, u32>,
    queries: Vec<(String, u16, Instant)>,
}

struct Shared {
    state: Mutex<State>,
    stop: AtomicBool,
    ttl: u32,
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
        let sock = UdpSocket::bind(SocketAddrV4::new(config.addr, config.port))?;
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
            }),
            stop: AtomicBool::new(false),
            ttl: config.ttl,
        });
        let s = shared.clone();
        let serve = std::thread::spawn(move || serve(sock, other, s));
        let s = shared.clone();
        let lifetime = config.lifetime;
        let watchdog = std::thread::spawn(move || {
            sleep_unless_stopped(&s.stop, lifetime);
            s.stop.store(true, Ordering::SeqCst);
        });
        Ok(DnsServer {
            shared,
            addr,
            threads: vec![serve, watchdog],
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every well-formed query received: (name lowercased without trailing dot, qtype, when).
    pub fn queries(&self) -> Vec<(String, u16, Instant)> {
        lock(&self.shared.state).queries.clone()
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

/// A parsed question: the query's ID, flags, the raw question section and the name.
struct Query<'a> {
    id: u16,
    flags: u16,
    question: &'a [u8],
    name: String,
    qtype: u16,
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
    Some(Query {
        id,
        flags,
        question: &msg[12..pos + 4],
        name: labels.join("."),
        qtype,
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

/// What to send for one query: bytes and whether from the other socket; None = drop.
fn decide(q: &Query<'_>, shared: &Shared) -> (Option<(Vec<u8>, bool)>, Option<Duration>) {
    let mut st = lock(&shared.state);
    st.queries.push((q.name.clone(), q.qtype, Instant::now()));
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
    let normal = |st: &State| normal_answer(q, q.id, q.question, st, ttl);
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
        let (reply, delay) = decide(&q, &shared);
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
