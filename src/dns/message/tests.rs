use super::*;
use proptest::prelude::*;

/// Builds response packets by hand: header, our question, then records.
pub(crate) struct AnswerBuilder {
    buf: Vec<u8>,
    an: u16,
    /// Records appended with `additional`/`opt` (after every answer record).
    ar: u16,
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
        AnswerBuilder { buf, an: 0, ar: 0 }
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
    /// Appends a record to the additional section; answer records must all come first.
    pub(crate) fn additional(mut self, owner: &[u8], rtype: u16, class: u16, ttl: u32) -> Self {
        self.buf.extend_from_slice(owner);
        self.buf.extend_from_slice(&rtype.to_be_bytes());
        self.buf.extend_from_slice(&class.to_be_bytes());
        self.buf.extend_from_slice(&ttl.to_be_bytes());
        self.buf.extend_from_slice(&0u16.to_be_bytes());
        self.ar += 1;
        self
    }
    /// Appends an OPT record (root owner) advertising `udp` bytes with this extended RCODE.
    pub(crate) fn opt(self, udp: u16, ext_rcode: u8) -> Self {
        self.additional(&[0], TYPE_OPT, udp, u32::from(ext_rcode) << 24)
    }
    pub(crate) fn build(mut self) -> Vec<u8> {
        self.buf[6..8].copy_from_slice(&self.an.to_be_bytes());
        self.buf[10..12].copy_from_slice(&self.ar.to_be_bytes());
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
        build_query(0xbeef, name, qtype, Edns::Advertise, &mut out);
        let p = dns_parser::Packet::parse(&out).expect("our query parses");
        let opt = p.opt.as_ref().expect("an OPT record");
        assert_eq!((opt.udp, opt.version, opt.flags), (EDNS_UDP_PAYLOAD, 0, 0));
        let mut plain = Vec::new();
        build_query(0xbeef, name, qtype, Edns::Plain, &mut plain);
        assert_eq!(plain[..10], out[..10]);
        assert_eq!(plain[10..12], [0, 0], "ARCOUNT 0");
        assert_eq!(
            plain[12..],
            out[12..out.len() - 11],
            "the same question, no OPT"
        );
        assert!(dns_parser::Packet::parse(&plain).unwrap().opt.is_none());
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
        (0x8181, DnsError::FormErr),
        (0x8184, DnsError::Refused), // NOTIMP
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

#[test]
fn opt_record_in_the_query_is_exactly_rfc6891() {
    let mut q = Vec::new();
    build_query(1, "a.b", QueryType::A, Edns::Advertise, &mut q);
    assert_eq!(q[10..12], [0, 1], "ARCOUNT 1");
    // Root owner, TYPE 41, CLASS = 1232, TTL 0 (RCODE 0, version 0, DO clear), RDLENGTH 0.
    assert_eq!(q[q.len() - 11..], [0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0, 0, 0]);
}

#[test]
fn forty_a_records_in_one_edns_answer() {
    let mut b = AnswerBuilder::new(0x1234, "example.com", 1);
    for i in 0..40 {
        b = b.a("example.com", 60, [192, 0, 2, i]);
    }
    let without_opt = b.build();
    let mut b = AnswerBuilder::new(0x1234, "example.com", 1);
    for i in 0..40 {
        b = b.a("example.com", 60, [192, 0, 2, i]);
    }
    let with_opt = b.opt(EDNS_UDP_PAYLOAD, 0).build();
    assert!(with_opt.len() > 512, "{} bytes", with_opt.len());
    let want: Vec<IpAddr> = (0..40).map(|i| v4(192, 0, 2, i)).collect();
    for p in [&with_opt, &without_opt] {
        let a = parse(p).unwrap();
        assert_eq!(a.addrs, want);
        assert_eq!(a.ttl, 60);
    }
}

#[test]
fn opt_and_other_additional_records_do_not_spoil_the_answer() {
    // Glue and a signature (an unknown type to dns-parser) beside the OPT, in either order.
    let glue = |b: AnswerBuilder| b.additional(b"\x02ns\x00", TYPE_A, 1, 60);
    let rrsig = |b: AnswerBuilder| b.additional(&[0xc0, 12], 46, 1, 60);
    let base = || AnswerBuilder::new(0x1234, "example.com", 1).a("example.com", 9, [8, 8, 8, 8]);
    for p in [
        base().opt(4096, 0).build(),
        glue(rrsig(base())).opt(1232, 0).build(),
        glue(base().opt(512, 0)).build(),
        rrsig(base()).build(),
    ] {
        assert_eq!(parse(&p).unwrap().addrs, vec![v4(8, 8, 8, 8)]);
    }
}

#[test]
fn opt_rules_and_the_extended_rcode() {
    let base = || AnswerBuilder::new(0x1234, "example.com", 1).a("example.com", 9, [8, 8, 8, 8]);
    // BADVERS (16) is OPT 1 over header 0; NXDOMAIN with OPT 0 stays NXDOMAIN.
    assert_eq!(parse(&base().opt(1232, 1).build()), Err(DnsError::Refused));
    let nx = AnswerBuilder::with_flags(0x1234, 0x8183, "example.com", 1).opt(1232, 0);
    assert_eq!(parse(&nx.build()), Err(DnsError::NxDomain));
    let formerr = AnswerBuilder::with_flags(0x1234, 0x8181, "example.com", 1);
    assert_eq!(parse(&formerr.build()), Err(DnsError::FormErr));
    // Two OPT records, or an OPT not owned by the root, is malformed (RFC 6891 §6.1.1).
    assert_eq!(
        parse(&base().opt(1232, 0).opt(1232, 0).build()),
        Err(DnsError::Malformed)
    );
    let owned = base().additional(&[0xc0, 12], TYPE_OPT, 1232, 0).build();
    assert_eq!(parse(&owned), Err(DnsError::Malformed));
    // An OPT record cut short.
    let p = base().opt(1232, 0).build();
    assert_eq!(parse(&p[..p.len() - 1]), Err(DnsError::Malformed));
}

#[test]
fn aaaa_only_answers() {
    let (one, two): (Ipv6Addr, Ipv6Addr) = ("2001:db8::1".parse().unwrap(), "::1".parse().unwrap());
    let p = AnswerBuilder::new(7, "v6.example", 28)
        .aaaa("v6.example", 30, one)
        .aaaa("v6.example", 20, two)
        .opt(1232, 0)
        .build();
    let a = parse_response(&p, 7, "v6.example", QueryType::Aaaa).unwrap();
    assert_eq!(a.addrs, vec![IpAddr::V6(one), IpAddr::V6(two)]);
    assert_eq!(a.ttl, 20);
    // AAAA records in an answer to an A question are not addresses of the asked type.
    let p = AnswerBuilder::new(7, "v6.example", 1)
        .aaaa("v6.example", 30, one)
        .build();
    let got = parse_response(&p, 7, "v6.example", QueryType::A);
    assert_eq!(got, Err(DnsError::NoAddress));
}

#[test]
fn truncated_answers_stop_at_the_tc_bit() {
    // TC with the records cut anywhere (even mid-record), with or without OPT.
    let full = AnswerBuilder::with_flags(0x1234, 0x8380, "example.com", 1)
        .a("example.com", 9, [1, 2, 3, 4])
        .a("example.com", 9, [1, 2, 3, 5])
        .opt(1232, 0)
        .build();
    assert_eq!(parse(&full), Err(DnsError::Truncated));
    let cut = &full[..full.len() - 20];
    assert_eq!(parse(cut), Err(DnsError::Truncated));
    let empty = AnswerBuilder::with_flags(0x1234, 0x8380, "example.com", 1).build();
    assert_eq!(parse(&empty), Err(DnsError::Truncated));
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
