//! DNS messages: name validation, query building, answer checking.
//!
//! Queries are written by hand (`dns-parser` 0.8's `Builder` asserts labels are shorter than
//! 63 bytes, so a legal 63-byte label from a hostile link would panic) and carry an EDNS0 OPT
//! pseudo-record (RFC 6891) advertising [`EDNS_UDP_PAYLOAD`] bytes, so a 40-record answer
//! comes back in one datagram. Answers go through guards first (the RFC 5452 checks
//! `dns-parser` does not do: QR bit, ID, question; plausible record counts, since it
//! pre-allocates from them), then our own bounded walk of every section (the OPT record, with
//! the extended RCODE, is in the additional section: `dns-parser` only ever sees the answer
//! section), then `dns_parser::Packet::parse` validates the answer section and classifies
//! unknown record types. Names and addresses are read by our own walker: `dns-parser`'s `Name`
//! `Display` recurses once per compression pointer and rescans each time, which a hostile
//! packet can turn into deep recursion.
//!
//! The same checks serve answers over UDP and over TCP (`dns::tcp` frames them). The resolver
//! state machine that sends these queries and uses these answers is `dns::resolver`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::{DnsError, QueryType};

/// Longest label (RFC 1035 §2.3.4). 63 itself is legal.
pub const MAX_LABEL_LEN: usize = 63;
/// Longest name in dotted text without the trailing dot (255 wire bytes).
pub const MAX_NAME_LEN: usize = 253;
/// Longest answer we look at, over UDP or TCP. A UDP answer is at most [`EDNS_UDP_PAYLOAD`];
/// over TCP 16 KiB holds about 1,000 A records (a CDN answers with tens), and bounding it
/// bounds `dns-parser`'s name rescans (quadratic in the length at worst).
pub const MAX_RESPONSE_LEN: usize = 16 * 1024;
/// The UDP payload size our OPT record advertises: DNS Flag Day 2020's 1232 bytes, which
/// fits the 1280-byte IPv6 minimum MTU without fragmentation (fragments are what spoofers and
/// broken middleboxes feed on). Larger answers come truncated and are asked again over TCP.
pub const EDNS_UDP_PAYLOAD: u16 = 1232;
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
const TYPE_OPT: u16 = 41;
const RCODE_FORMERR: u16 = 1;
const RCODE_SERVFAIL: u16 = 2;
const RCODE_NXDOMAIN: u16 = 3;

/// Whether a query carries the EDNS0 OPT record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Edns {
    /// Advertise [`EDNS_UDP_PAYLOAD`] bytes (version 0, no DNSSEC OK bit).
    Advertise,
    /// A plain RFC 1035 query, for a server that answered FORMERR to EDNS (RFC 6891 §7).
    Plain,
}

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

/// Writes a standard query (RD set, class IN, one question, with or without the OPT record)
/// for `name` into `out`, replacing its contents. `name` must come from [`normalize_name`].
pub fn build_query(id: u16, name: &str, qtype: QueryType, edns: Edns, out: &mut Vec<u8>) {
    debug_assert!(
        normalize_name(name).as_deref() == Ok(name),
        "unnormalized {name:?}"
    );
    out.clear();
    out.extend_from_slice(&id.to_be_bytes());
    out.extend_from_slice(&FLAG_RD.to_be_bytes());
    let ar = u8::from(edns == Edns::Advertise);
    out.extend_from_slice(&[0, 1, 0, 0, 0, 0, 0, ar]); // QD=1, AN=NS=0, AR=0 or 1
    for label in name.split('.') {
        // Normalized labels are 1..=63 bytes, so the length fits the 6-bit field.
        out.push(label.len() as u8);
        out.extend_from_slice(label.as_bytes());
    }
    out.push(0);
    out.extend_from_slice(&qtype.code().to_be_bytes());
    out.extend_from_slice(&CLASS_IN.to_be_bytes());
    if edns == Edns::Advertise {
        // OPT (RFC 6891 §6.1.2): root owner, CLASS = payload size, TTL = extended RCODE 0,
        // version 0, flags 0; no options.
        out.push(0);
        out.extend_from_slice(&TYPE_OPT.to_be_bytes());
        out.extend_from_slice(&EDNS_UDP_PAYLOAD.to_be_bytes());
        out.extend_from_slice(&[0, 0, 0, 0, 0, 0]); // TTL, RDLENGTH
    }
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
    // A truncated answer may stop anywhere: it is not read further (the resolver asks again
    // over TCP).
    if flags & FLAG_TC != 0 {
        return Err(DnsError::Truncated);
    }

    // ---- our own walk of every section: the answer's records, and the OPT record ----
    let mut records = Vec::with_capacity(an);
    let mut ext_rcode = 0u16;
    let mut opt_seen = false;
    let mut owner = String::new();
    let mut pos = after_question;
    for i in 0..an + ns + ar {
        pos = read_name(packet, pos, &mut owner)?;
        let (Some(rtype), Some(class), Some(raw_ttl), Some(rdlen)) = (
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
        if i >= an {
            // Authority records and additional data (glue, signatures) are skipped, except
            // the OPT record: one at most, owned by the root (RFC 6891 §6.1.1). Its TTL field
            // carries the upper 8 bits of a 12-bit RCODE.
            if i >= an + ns && rtype == TYPE_OPT {
                if opt_seen || !owner.is_empty() {
                    return Err(DnsError::Malformed);
                }
                opt_seen = true;
                ext_rcode = (raw_ttl >> 24) as u16;
            }
            continue;
        }
        // RFC 2181 §8: a TTL with the top bit set is treated as zero.
        let ttl = if raw_ttl > i32::MAX as u32 {
            0
        } else {
            raw_ttl
        };
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
        records.push(Record {
            owner: std::mem::take(&mut owner),
            ttl,
            data,
        });
    }
    match (ext_rcode << 4) | (flags & RCODE_MASK) {
        0 => {}
        RCODE_FORMERR => return Err(DnsError::FormErr),
        RCODE_SERVFAIL => return Err(DnsError::ServFail),
        RCODE_NXDOMAIN => return Err(DnsError::NxDomain),
        // REFUSED, NOTIMP, and BADVERS (we only ever send version 0).
        _ => return Err(DnsError::Refused),
    }

    // ---- dns-parser validates the answer section ----
    // Authority and additional sections were walked above; zeroing their counts keeps an
    // unknown type there (RRSIG, NSEC3 in a signed zone's authority) from failing the whole
    // answer, and keeps dns-parser's own OPT handling (which refuses what we skip) out of it.
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
pub(crate) mod tests;
