//! DNS messages: name validation, query building, answer checking.
//!
//! Queries are written by hand (`dns-parser` 0.8's `Builder` asserts labels are shorter than
//! 63 bytes, so a legal 63-byte label from a hostile link would panic). Answers go through
//! guards first (the RFC 5452 checks `dns-parser` does not do: QR bit, ID, question; plausible
//! record counts, since it pre-allocates from them), then `dns_parser::Packet::parse` validates
//! the answer section and classifies unknown record types. Names and addresses are then read by
//! our own bounded walker: `dns-parser`'s `Name` `Display` recurses once per compression pointer
//! and rescans each time, which a hostile packet can turn into deep recursion.
//!
//! The resolver state machine that sends these queries and uses these answers is
//! `dns::resolver`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::{DnsError, QueryType};

/// Longest label (RFC 1035 §2.3.4). 63 itself is legal.
pub const MAX_LABEL_LEN: usize = 63;
/// Longest name in dotted text without the trailing dot (255 wire bytes).
pub const MAX_NAME_LEN: usize = 253;
/// Longest answer datagram we look at. We send no EDNS, so servers must truncate at 512;
/// anything far larger is hostile, and bounding it bounds `dns-parser`'s name rescans.
pub const MAX_RESPONSE_LEN: usize = 4096;
/// Smallest possible resource record: root name (1) + type, class, TTL, rdlength (10).
const MIN_RR_LEN: usize = 11;
/// Compression pointers followed while reading one name (they must also strictly decrease).
const MAX_POINTER_HOPS: usize = 64;
/// CNAME records followed inside one packet.
pub const MAX_CNAME_IN_PACKET: usize = 16;

const HEADER_LEN: usize = 12;
const FLAG_QR: u16 = 0x8000;
const OPCODE_MASK: u16 = 0x7800;
const FLAG_TC: u16 = 0x0200;
const FLAG_RD: u16 = 0x0100;
const RCODE_MASK: u16 = 0x000f;
const CLASS_IN: u16 = 1;
const TYPE_A: u16 = 1;
const TYPE_CNAME: u16 = 5;
const TYPE_AAAA: u16 = 28;

/// What one answer packet says about a name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    /// Addresses of the asked type at the end of the in-packet CNAME chain (empty when
    /// `cname_target` is set).
    pub addrs: Vec<IpAddr>,
    /// The smallest TTL among the records used (the chain's CNAMEs and the addresses).
    pub ttl: u32,
    /// The chain ended at a name with no address in this packet: the resolver must query it.
    pub cname_target: Option<String>,
}

/// Validates a host name and returns it in the form used for queries and cache keys:
/// lowercase ASCII, one trailing dot removed, labels of 1..=63 bytes of `[a-z0-9-_]`, at most
/// 253 bytes. IDNs arrive punycoded from the `url` crate, so any non-ASCII byte is refused.
pub fn normalize_name(name: &str) -> Result<String, DnsError> {
    let name = name.strip_suffix('.').unwrap_or(name);
    if name.is_empty() || name.len() > MAX_NAME_LEN {
        return Err(DnsError::BadName);
    }
    for label in name.split('.') {
        if label.is_empty() || label.len() > MAX_LABEL_LEN {
            return Err(DnsError::BadName);
        }
        if !label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(DnsError::BadName);
        }
    }
    Ok(name.to_ascii_lowercase())
}

/// Writes a standard query (RD set, class IN, one question, no EDNS) for `name` into `out`,
/// replacing its contents. `name` must come from [`normalize_name`].
pub fn build_query(id: u16, name: &str, qtype: QueryType, out: &mut Vec<u8>) {
    debug_assert!(
        normalize_name(name).as_deref() == Ok(name),
        "unnormalized {name:?}"
    );
    out.clear();
    out.extend_from_slice(&id.to_be_bytes());
    out.extend_from_slice(&FLAG_RD.to_be_bytes());
    out.extend_from_slice(&[0, 1, 0, 0, 0, 0, 0, 0]); // QD=1, AN=NS=AR=0
    for label in name.split('.') {
        // Normalized labels are 1..=63 bytes, so the length fits the 6-bit field.
        out.push(label.len() as u8);
        out.extend_from_slice(label.as_bytes());
    }
    out.push(0);
    out.extend_from_slice(&qtype.code().to_be_bytes());
    out.extend_from_slice(&CLASS_IN.to_be_bytes());
}

fn be16(packet: &[u8], at: usize) -> Option<u16> {
    let b = packet.get(at..at.checked_add(2)?)?;
    Some(u16::from_be_bytes([b[0], b[1]]))
}

fn be32(packet: &[u8], at: usize) -> Option<u32> {
    let b = packet.get(at..at.checked_add(4)?)?;
    Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

/// Matches the question at offset 12 against ours (name case-insensitively, type, class IN).
/// Returns the offset just past the question.
fn match_question(packet: &[u8], name: &str, qtype: QueryType) -> Option<usize> {
    let mut pos = HEADER_LEN;
    for label in name.split('.') {
        let len = *packet.get(pos)? as usize;
        let bytes = packet.get(pos + 1..pos + 1 + len)?;
        if len != label.len() || !bytes.eq_ignore_ascii_case(label.as_bytes()) {
            return None;
        }
        pos += 1 + len;
    }
    if *packet.get(pos)? != 0 {
        return None;
    }
    pos += 1;
    if be16(packet, pos)? != qtype.code() || be16(packet, pos + 2)? != CLASS_IN {
        return None;
    }
    Some(pos + 4)
}

/// Reads the possibly compressed name at `start` into `out` (lowercase, dotted, no trailing
/// dot) and returns the offset just past it. Pointers must point before the name and strictly
/// backwards from each other, at most `MAX_POINTER_HOPS` of them; the name at most 255 bytes.
fn read_name(packet: &[u8], start: usize, out: &mut String) -> Result<usize, DnsError> {
    out.clear();
    let mut pos = start;
    let mut end = None;
    let mut limit = start;
    let mut hops = 0;
    // Bounded: each label advances `pos` and grows `out` (capped), each pointer counts a hop.
    loop {
        let len = *packet.get(pos).ok_or(DnsError::Malformed)? as usize;
        match len & 0xc0 {
            0x00 if len == 0 => return Ok(end.unwrap_or(pos + 1)),
            0x00 => {
                let label = packet
                    .get(pos + 1..pos + 1 + len)
                    .ok_or(DnsError::Malformed)?;
                if out.len() + 1 + len > MAX_NAME_LEN + 1 {
                    return Err(DnsError::Malformed);
                }
                if !out.is_empty() {
                    out.push('.');
                }
                out.extend(label.iter().map(|&b| char::from(b.to_ascii_lowercase())));
                pos += 1 + len;
            }
            0xc0 => {
                let low = *packet.get(pos + 1).ok_or(DnsError::Malformed)? as usize;
                let target = ((len & 0x3f) << 8) | low;
                hops += 1;
                if target >= limit || hops > MAX_POINTER_HOPS {
                    return Err(DnsError::Malformed);
                }
                end.get_or_insert(pos + 2);
                limit = target;
                pos = target;
            }
            _ => return Err(DnsError::Malformed),
        }
    }
}

/// One record of the answer section, as far as we use it.
enum Rdata {
    Addr(IpAddr),
    Cname(String),
    Other,
}

struct Record {
    owner: String,
    ttl: u32,
    data: Rdata,
}

/// Checks that `packet` answers our query for `name` (normalized) with `qtype` under `id`, and
/// extracts the addresses, following CNAMEs inside the packet.
///
/// `Mismatch` means "not an answer to this query" (drop it and keep waiting); every other
/// error is the answer. Never panics, whatever the bytes.
pub fn parse_response(
    packet: &[u8],
    id: u16,
    name: &str,
    qtype: QueryType,
) -> Result<Answer, DnsError> {
    // ---- is it ours? (RFC 5452; dns-parser checks none of this) ----
    if packet.len() < HEADER_LEN {
        return Err(DnsError::Mismatch);
    }
    let flags = be16(packet, 2).ok_or(DnsError::Mismatch)?;
    if be16(packet, 0) != Some(id)
        || flags & FLAG_QR == 0
        || flags & OPCODE_MASK != 0
        || be16(packet, 4) != Some(1)
    {
        return Err(DnsError::Mismatch);
    }
    let after_question = match_question(packet, name, qtype).ok_or(DnsError::Mismatch)?;

    // ---- plausibility, before dns-parser pre-allocates from the counts ----
    if packet.len() > MAX_RESPONSE_LEN {
        return Err(DnsError::Malformed);
    }
    let count = |at| be16(packet, at).map_or(0, usize::from);
    let (an, ns, ar) = (count(6), count(8), count(10));
    if (an + ns + ar) * MIN_RR_LEN > packet.len() - after_question {
        return Err(DnsError::Malformed);
    }
    if flags & FLAG_TC != 0 {
        return Err(DnsError::Truncated);
    }
    match flags & RCODE_MASK {
        0 => {}
        2 => return Err(DnsError::ServFail),
        3 => return Err(DnsError::NxDomain),
        _ => return Err(DnsError::Refused),
    }

    // ---- dns-parser validates the answer section ----
    // Authority and additional sections are not used; zeroing their counts keeps an unknown
    // type there (RRSIG, NSEC3 in a signed zone's authority) from failing the whole answer.
    let mut copy = packet.to_vec();
    copy[8..12].fill(0);
    if let Err(e) = dns_parser::Packet::parse(&copy) {
        return Err(match e {
            dns_parser::Error::InvalidType(_) | dns_parser::Error::InvalidClass(_) => {
                DnsError::Unsupported
            }
            _ => DnsError::Malformed,
        });
    }

    // ---- our own walk of the answer section ----
    let mut records = Vec::with_capacity(an);
    let mut pos = after_question;
    for _ in 0..an {
        let mut owner = String::new();
        pos = read_name(packet, pos, &mut owner)?;
        let (Some(rtype), Some(class), Some(ttl), Some(rdlen)) = (
            be16(packet, pos),
            be16(packet, pos + 2),
            be32(packet, pos + 4),
            be16(packet, pos + 8),
        ) else {
            return Err(DnsError::Malformed);
        };
        let rdata_at = pos + 10;
        let rdata = packet
            .get(rdata_at..rdata_at + rdlen as usize)
            .ok_or(DnsError::Malformed)?;
        pos = rdata_at + rdlen as usize;
        // RFC 2181 §8: a TTL with the top bit set is treated as zero.
        let ttl = if ttl > i32::MAX as u32 { 0 } else { ttl };
        let data = match (rtype, class & 0x7fff, rdata.len()) {
            (TYPE_A, CLASS_IN, 4) if qtype == QueryType::A => Rdata::Addr(IpAddr::V4(
                Ipv4Addr::new(rdata[0], rdata[1], rdata[2], rdata[3]),
            )),
            (TYPE_AAAA, CLASS_IN, 16) if qtype == QueryType::Aaaa => {
                let mut b = [0u8; 16];
                b.copy_from_slice(rdata);
                Rdata::Addr(IpAddr::V6(Ipv6Addr::from(b)))
            }
            (TYPE_CNAME, CLASS_IN, _) => {
                let mut target = String::new();
                let end = read_name(packet, rdata_at, &mut target)?;
                if end != pos {
                    return Err(DnsError::Malformed);
                }
                Rdata::Cname(target)
            }
            _ => Rdata::Other,
        };
        records.push(Record { owner, ttl, data });
    }
    follow_chain(&records, name)
}

/// Follows CNAMEs from `name` through `records` to the addresses.
fn follow_chain(records: &[Record], name: &str) -> Result<Answer, DnsError> {
    let mut current = name;
    let mut chain: Vec<&str> = vec![name];
    let mut ttl = u32::MAX;
    for hop in 0..=MAX_CNAME_IN_PACKET {
        let mut addrs = Vec::new();
        let mut addr_ttl = u32::MAX;
        let mut cname = None;
        for r in records.iter().filter(|r| r.owner == current) {
            match &r.data {
                Rdata::Addr(a) => {
                    if !addrs.contains(a) {
                        addrs.push(*a);
                    }
                    addr_ttl = addr_ttl.min(r.ttl);
                }
                Rdata::Cname(t) if cname.is_none() => cname = Some((t.as_str(), r.ttl)),
                _ => {}
            }
        }
        if !addrs.is_empty() {
            return Ok(Answer {
                addrs,
                ttl: ttl.min(addr_ttl),
                cname_target: None,
            });
        }
        match cname {
            Some((target, _)) if chain.contains(&target) => return Err(DnsError::CnameChain),
            Some(_) if hop == MAX_CNAME_IN_PACKET => return Err(DnsError::CnameChain),
            Some((target, cname_ttl)) => {
                ttl = ttl.min(cname_ttl);
                chain.push(target);
                current = target;
            }
            None if hop == 0 => return Err(DnsError::NoAddress),
            None => {
                return Ok(Answer {
                    addrs: Vec::new(),
                    ttl,
                    cname_target: Some(current.to_string()),
                })
            }
        }
    }
    Err(DnsError::CnameChain)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Builds response packets by hand: header, our question, then records.
    pub(crate) struct AnswerBuilder {
        buf: Vec<u8>,
        an: u16,
    }

    pub(crate) fn encode_name(name: &str, out: &mut Vec<u8>) {
        for label in name.split('.').filter(|l| !l.is_empty()) {
            out.push(label.len() as u8);
            out.extend_from_slice(label.as_bytes());
        }
        out.push(0);
    }

    impl AnswerBuilder {
        /// A NOERROR response (QR, RD, RA) to `qname`/`qtype`.
        pub(crate) fn new(id: u16, qname: &str, qtype: u16) -> Self {
            Self::with_flags(id, 0x8180, qname, qtype)
        }
        pub(crate) fn with_flags(id: u16, flags: u16, qname: &str, qtype: u16) -> Self {
            let mut buf = Vec::new();
            buf.extend_from_slice(&id.to_be_bytes());
            buf.extend_from_slice(&flags.to_be_bytes());
            buf.extend_from_slice(&[0, 1, 0, 0, 0, 0, 0, 0]);
            encode_name(qname, &mut buf);
            buf.extend_from_slice(&qtype.to_be_bytes());
            buf.extend_from_slice(&1u16.to_be_bytes());
            AnswerBuilder { buf, an: 0 }
        }
        /// Appends an answer record whose owner is given as raw wire bytes.
        pub(crate) fn raw(mut self, owner: &[u8], rtype: u16, ttl: u32, rdata: &[u8]) -> Self {
            self.buf.extend_from_slice(owner);
            self.buf.extend_from_slice(&rtype.to_be_bytes());
            self.buf.extend_from_slice(&1u16.to_be_bytes());
            self.buf.extend_from_slice(&ttl.to_be_bytes());
            self.buf
                .extend_from_slice(&(rdata.len() as u16).to_be_bytes());
            self.buf.extend_from_slice(rdata);
            self.an += 1;
            self
        }
        pub(crate) fn rr(self, owner: &str, rtype: u16, ttl: u32, rdata: &[u8]) -> Self {
            let mut o = Vec::new();
            encode_name(owner, &mut o);
            self.raw(&o, rtype, ttl, rdata)
        }
        pub(crate) fn a(self, owner: &str, ttl: u32, ip: [u8; 4]) -> Self {
            self.rr(owner, TYPE_A, ttl, &ip)
        }
        pub(crate) fn aaaa(self, owner: &str, ttl: u32, ip: Ipv6Addr) -> Self {
            self.rr(owner, TYPE_AAAA, ttl, &ip.octets())
        }
        pub(crate) fn cname(self, owner: &str, ttl: u32, target: &str) -> Self {
            let mut t = Vec::new();
            encode_name(target, &mut t);
            self.rr(owner, TYPE_CNAME, ttl, &t)
        }
        pub(crate) fn build(mut self) -> Vec<u8> {
            self.buf[6..8].copy_from_slice(&self.an.to_be_bytes());
            self.buf
        }
    }

    fn parse(p: &[u8]) -> Result<Answer, DnsError> {
        parse_response(p, 0x1234, "example.com", QueryType::A)
    }

    fn v4(a: u8, b: u8, c: u8, d: u8) -> IpAddr {
        IpAddr::V4(Ipv4Addr::new(a, b, c, d))
    }

    #[test]
    fn normalize_name_table() {
        let l63 = "a".repeat(63);
        let l64 = "a".repeat(64);
        let ok = [
            ("Example.COM", "example.com"),
            ("example.com.", "example.com"),
            ("xn--bcher-kva.example", "xn--bcher-kva.example"),
            ("_dmarc.a-b.c0", "_dmarc.a-b.c0"),
            ("localhost", "localhost"),
        ];
        for (i, o) in ok {
            assert_eq!(normalize_name(i).as_deref(), Ok(o), "{i}");
        }
        assert_eq!(
            normalize_name(&format!("{l63}.com")),
            Ok(format!("{l63}.com"))
        );
        let long = "abcdefghi.".repeat(30); // 300 bytes
        let max = format!("{l63}.{l63}.{l63}.{}", "a".repeat(61)); // 253 bytes
        assert_eq!(max.len(), 253);
        assert!(normalize_name(&max).is_ok());
        for bad in [
            format!("{l64}.com"),
            "a..b".to_string(),
            "example.com..".to_string(),
            ".example.com".to_string(),
            String::new(),
            ".".to_string(),
            long,
            format!("{max}a"),
            "bücher.example".to_string(),
            "exa mple.com".to_string(),
            "exa/mple.com".to_string(),
            "[::1]".to_string(),
        ] {
            assert_eq!(normalize_name(&bad), Err(DnsError::BadName), "{bad:?}");
        }
    }

    #[test]
    fn build_query_round_trips_through_dns_parser() {
        let l63 = "b".repeat(63);
        let max = format!("{l63}.{l63}.{l63}.{}", "c".repeat(61));
        for (name, qtype, dp) in [
            ("example.com", QueryType::A, dns_parser::QueryType::A),
            (
                &*format!("{l63}.com"),
                QueryType::Aaaa,
                dns_parser::QueryType::AAAA,
            ),
            (&*max, QueryType::A, dns_parser::QueryType::A),
        ] {
            let mut out = vec![0xff; 3]; // stale contents must be replaced
            build_query(0xbeef, name, qtype, &mut out);
            let p = dns_parser::Packet::parse(&out).expect("our query parses");
            assert_eq!(p.header.id, 0xbeef);
            assert!(p.header.query && p.header.recursion_desired);
            assert_eq!(p.questions.len(), 1);
            assert_eq!(p.questions[0].qname.to_string(), name);
            assert_eq!(p.questions[0].qtype, dp);
            assert_eq!(p.questions[0].qclass, dns_parser::QueryClass::IN);
        }
    }

    #[test]
    fn answers_a_and_aaaa() {
        let p = AnswerBuilder::new(0x1234, "Example.Com", 1)
            .a("EXAMPLE.com", 300, [192, 0, 2, 1])
            .a("example.com", 60, [192, 0, 2, 2])
            .a("other.com", 10, [6, 6, 6, 6]) // not ours: ignored
            .build();
        let a = parse(&p).unwrap();
        assert_eq!(a.addrs, vec![v4(192, 0, 2, 1), v4(192, 0, 2, 2)]);
        assert_eq!(a.ttl, 60);
        assert_eq!(a.cname_target, None);

        let six: Ipv6Addr = "2001:db8::1".parse().unwrap();
        let p = AnswerBuilder::new(7, "example.com", 28)
            .aaaa("example.com", 5, six)
            .build();
        let a = parse_response(&p, 7, "example.com", QueryType::Aaaa).unwrap();
        assert_eq!(a.addrs, vec![IpAddr::V6(six)]);
    }

    #[test]
    fn cname_chains() {
        // In-packet chain, with a compressed CNAME target pointing at the question name.
        let p = AnswerBuilder::new(0x1234, "example.com", 1)
            .cname("example.com", 100, "www.cdn.net")
            .cname("www.cdn.net", 50, "edge.cdn.net")
            .a("edge.cdn.net", 200, [198, 51, 100, 7])
            .build();
        let a = parse(&p).unwrap();
        assert_eq!(a.addrs, vec![v4(198, 51, 100, 7)]);
        assert_eq!(a.ttl, 50);

        // Chain stops at a name without an address: the resolver must ask for it.
        let p = AnswerBuilder::new(0x1234, "example.com", 1)
            .raw(&[0xc0, 12], TYPE_CNAME, 30, b"\x03www\xc0\x0c")
            .build();
        let a = parse(&p).unwrap();
        assert!(a.addrs.is_empty());
        assert_eq!(a.cname_target.as_deref(), Some("www.example.com"));
        assert_eq!(a.ttl, 30);

        // Loop.
        let p = AnswerBuilder::new(0x1234, "example.com", 1)
            .cname("example.com", 1, "a.example")
            .cname("a.example", 1, "example.com")
            .build();
        assert_eq!(parse(&p), Err(DnsError::CnameChain));

        // Too long.
        let mut b = AnswerBuilder::new(0x1234, "example.com", 1).cname("example.com", 1, "c0.x");
        for i in 0..20 {
            b = b.cname(&format!("c{i}.x"), 1, &format!("c{}.x", i + 1));
        }
        assert_eq!(parse(&b.build()), Err(DnsError::CnameChain));

        // No address and no CNAME: NODATA.
        let p = AnswerBuilder::new(0x1234, "example.com", 1)
            .rr("example.com", 16, 1, b"\x02hi")
            .build();
        assert_eq!(parse(&p), Err(DnsError::NoAddress));
    }

    #[test]
    fn not_ours_is_mismatch() {
        let good = AnswerBuilder::new(0x1234, "example.com", 1).a("example.com", 1, [1, 2, 3, 4]);
        let good = good.build();
        assert!(parse(&good).is_ok());
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("wrong id", {
                let mut p = good.clone();
                p[1] ^= 1;
                p
            }),
            ("QR=0", {
                let mut p = good.clone();
                p[2] &= 0x7f;
                p
            }),
            (
                "wrong question",
                AnswerBuilder::new(0x1234, "example.org", 1)
                    .a("example.org", 1, [1, 2, 3, 4])
                    .build(),
            ),
            (
                "wrong type",
                AnswerBuilder::new(0x1234, "example.com", 28)
                    .a("example.com", 1, [1, 2, 3, 4])
                    .build(),
            ),
            ("wrong class", {
                let mut p = good.clone();
                p[12 + 13 + 3] = 3; // question class CH
                p
            }),
            ("two questions", {
                let mut p = good.clone();
                p[5] = 2;
                p
            }),
            ("short", good[..11].to_vec()),
            ("question cut", good[..20].to_vec()),
            ("empty", Vec::new()),
        ];
        for (what, p) in cases {
            assert_eq!(parse(&p), Err(DnsError::Mismatch), "{what}");
        }
    }

    #[test]
    fn rcodes_and_flags() {
        for (flags, err) in [
            (0x8183, DnsError::NxDomain),
            (0x8182, DnsError::ServFail),
            (0x8185, DnsError::Refused),
            (0x8181, DnsError::Refused),
            (0x8380, DnsError::Truncated),
        ] {
            let p = AnswerBuilder::with_flags(0x1234, flags, "example.com", 1).build();
            assert_eq!(parse(&p), Err(err), "{flags:#x}");
        }
    }

    #[test]
    fn hostile_packets_are_malformed() {
        // Header counts 65535 with nothing behind them.
        let mut p = AnswerBuilder::new(0x1234, "example.com", 1).build();
        p[6..12].fill(0xff);
        assert_eq!(parse(&p), Err(DnsError::Malformed));

        // Compression-pointer loop in the answer's owner name (points at itself).
        let at = AnswerBuilder::new(0x1234, "example.com", 1).build().len() as u8;
        let p = AnswerBuilder::new(0x1234, "example.com", 1)
            .raw(&[0xc0, at], TYPE_A, 1, &[1, 2, 3, 4])
            .build();
        assert_eq!(parse(&p), Err(DnsError::Malformed));
        // Two pointers pointing at each other, in a CNAME target.
        let p = AnswerBuilder::new(0x1234, "example.com", 1)
            .raw(&[0xc0, 12], TYPE_CNAME, 1, &[0xc0, at + 14, 0xc0, at + 12])
            .build();
        assert_eq!(parse(&p), Err(DnsError::Malformed));

        // A record with a 5-byte address.
        let p = AnswerBuilder::new(0x1234, "example.com", 1)
            .rr("example.com", TYPE_A, 1, &[1, 2, 3, 4, 5])
            .build();
        assert_eq!(parse(&p), Err(DnsError::Malformed));

        // Every truncation of a valid answer fails cleanly.
        let good = AnswerBuilder::new(0x1234, "example.com", 1)
            .cname("example.com", 9, "x.example.com")
            .a("x.example.com", 9, [1, 2, 3, 4])
            .build();
        assert!(parse(&good).is_ok());
        for cut in 0..good.len() {
            assert!(parse(&good[..cut]).is_err(), "cut at {cut}");
        }

        // Oversized datagram.
        let mut p = good.clone();
        p.resize(MAX_RESPONSE_LEN + 1, 0);
        assert_eq!(parse(&p), Err(DnsError::Malformed));
    }

    #[test]
    fn unknown_record_types_are_unsupported() {
        // DNAME 39, RRSIG 46, SVCB 64, HTTPS 65, CAA 257.
        for rtype in [39u16, 46, 64, 65, 257] {
            let p = AnswerBuilder::new(0x1234, "example.com", 1)
                .rr("example.com", rtype, 1, &[0, 1, 2, 3])
                .a("example.com", 1, [1, 2, 3, 4])
                .build();
            assert_eq!(parse(&p), Err(DnsError::Unsupported), "type {rtype}");
        }
        // The same type in the authority section does not spoil the answer.
        let mut p = AnswerBuilder::new(0x1234, "example.com", 1)
            .a("example.com", 1, [1, 2, 3, 4])
            .rr("example.com", 46, 1, &[0, 1, 2, 3])
            .build();
        p[7] = 1; // AN=1
        p[9] = 1; // NS=1
        assert_eq!(parse(&p).unwrap().addrs, vec![v4(1, 2, 3, 4)]);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]

        #[test]
        fn never_panics_on_random_bytes(
            bytes in proptest::collection::vec(any::<u8>(), 0..600),
            counts in (0u8..4, 0u8..4, 0u8..4),
        ) {
            let _ = parse(&bytes);
            // Also behind a header and question that look like ours, with small record counts,
            // so the random bytes reach dns-parser and our record walker.
            let mut p = AnswerBuilder::new(0x1234, "example.com", 1).build();
            p[7] = counts.0;
            p[9] = counts.1;
            p[11] = counts.2;
            p.extend_from_slice(&bytes);
            let _ = parse(&p);
        }

        #[test]
        fn never_panics_on_mutated_answers(
            edits in proptest::collection::vec((any::<u16>(), any::<u8>()), 1..8),
            cut in any::<u16>(),
        ) {
            let mut p = AnswerBuilder::new(0x1234, "example.com", 1)
                .raw(&[0xc0, 12], TYPE_CNAME, 9, b"\x01x\xc0\x0c")
                .raw(b"\x01x\xc0\x0c", TYPE_A, 9, &[1, 2, 3, 4])
                .rr("example.com", TYPE_AAAA, 9, &[0; 16])
                .build();
            for (at, byte) in edits {
                let at = at as usize % p.len();
                p[at] = byte;
            }
            let keep = p.len() - (cut as usize % 4).min(p.len());
            p.truncate(keep);
            let _ = parse(&p);
        }
    }
}
