//! Which resolved addresses the crawler may connect to: the SSRF guard (ARCHITECTURE §6).
//!
//! A page can link to any host name, and any host name can resolve to anything, so after every
//! resolution (seeds, links and redirect hops alike) the fetcher asks [`AddrPolicy::check`]
//! whether *each* address is allowed, and then connects to exactly the address it checked.
//! Loopback, private, link-local, CGNAT, multicast and otherwise reserved ranges are refused
//! unless `--allow-private` (all of them) or a matching `--allow-net CIDR` says otherwise.
//! IPv6 is judged as IPv4 is: loopback, unique-local, link-local, documentation, multicast and
//! the rest outside global unicast are refused. IPv4-mapped and -compatible forms
//! (`::ffff:a.b.c.d`) are the IPv4 address; NAT64 (`64:ff9b::a.b.c.d`) and 6to4 (`2002:AABB:CCDD::`)
//! addresses are judged, and matched against `--allow-net`, by the IPv4 address they carry,
//! since that is what the translator or relay reaches.
//! This module only classifies addresses; the event loop enforces the verdict.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

/// An address range, `addr/prefix`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    addr: IpAddr,
    prefix: u8,
}

/// Why a `--allow-net` value did not parse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CidrError {
    BadAddress,
    BadPrefix,
}

impl fmt::Display for CidrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CidrError::BadAddress => f.write_str("not an IP address"),
            CidrError::BadPrefix => f.write_str("prefix length out of range"),
        }
    }
}

impl Cidr {
    pub fn new(addr: IpAddr, prefix: u8) -> Result<Cidr, CidrError> {
        let max = if addr.is_ipv4() { 32 } else { 128 };
        if prefix > max {
            return Err(CidrError::BadPrefix);
        }
        Ok(Cidr { addr, prefix })
    }

    /// True when `ip` lies in this range. Mapped IPv6 addresses match IPv4 ranges, and so do
    /// NAT64 and 6to4 addresses by the IPv4 address they carry.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, canonical(ip)) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                prefix_eq(&net.octets(), &ip.octets(), self.prefix)
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                prefix_eq(&net.octets(), &ip.octets(), self.prefix)
            }
            (IpAddr::V4(net), IpAddr::V6(ip)) => embedded_v4(ip)
                .is_some_and(|v4| prefix_eq(&net.octets(), &v4.octets(), self.prefix)),
            _ => false,
        }
    }
}

impl FromStr for Cidr {
    type Err = CidrError;

    /// `a.b.c.d/n`, `x::y/n`, or a bare address (a /32 or /128).
    fn from_str(s: &str) -> Result<Cidr, CidrError> {
        let (addr, prefix) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let addr: IpAddr = addr.parse().map_err(|_| CidrError::BadAddress)?;
        let prefix = match prefix {
            Some(p) => p.parse::<u8>().map_err(|_| CidrError::BadPrefix)?,
            None if addr.is_ipv4() => 32,
            None => 128,
        };
        // `::ffff:10.0.0.0/104` is 10.0.0.0/8; a mapped form with a shorter prefix is a
        // range of IPv6 space and stays one.
        match canonical(addr) {
            IpAddr::V4(v4) if addr.is_ipv6() && (96..=128).contains(&prefix) => {
                Cidr::new(IpAddr::V4(v4), prefix - 96)
            }
            _ => Cidr::new(addr, prefix),
        }
    }
}

fn prefix_eq(a: &[u8], b: &[u8], prefix: u8) -> bool {
    let full = usize::from(prefix / 8);
    if a[..full] != b[..full] {
        return false;
    }
    let rest = prefix % 8;
    if rest == 0 {
        return true;
    }
    let mask = 0xffu8 << (8 - rest);
    a[full] & mask == b[full] & mask
}

/// IPv4-mapped (`::ffff:a.b.c.d`) and IPv4-compatible (`::a.b.c.d`, not `::` or `::1`)
/// addresses are the IPv4 address they carry: that is what a socket would reach.
pub fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return IpAddr::V4(v4);
            }
            let o = v6.octets();
            if o[..12].iter().all(|&b| b == 0)
                && u32::from_be_bytes([o[12], o[13], o[14], o[15]]) > 1
            {
                return IpAddr::V4(Ipv4Addr::new(o[12], o[13], o[14], o[15]));
            }
            IpAddr::V6(v6)
        }
        v4 => v4,
    }
}

/// The IPv4 address a NAT64 (`64:ff9b::/96`, RFC 6052) or 6to4 (`2002::/16`, RFC 3056)
/// address carries: a connection to it reaches that IPv4 address through a translator or relay.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let o = ip.octets();
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return Some(Ipv4Addr::new(o[12], o[13], o[14], o[15]));
    }
    if s[0] == 0x2002 {
        return Some(Ipv4Addr::new(o[2], o[3], o[4], o[5]));
    }
    None
}

/// True for every address that is not ordinary public unicast.
pub fn is_special(ip: IpAddr) -> bool {
    match canonical(ip) {
        IpAddr::V4(v4) => is_special_v4(v4),
        IpAddr::V6(v6) => match embedded_v4(v6) {
            Some(v4) => is_special_v4(v4),
            None => is_special_v6(v6),
        },
    }
}

fn is_special_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    a == 0 // "this network"
        || a == 10 // private
        || a == 127 // loopback
        || (a == 100 && (64..128).contains(&b)) // CGNAT 100.64/10
        || (a == 169 && b == 254) // link-local (cloud metadata lives here)
        || (a == 172 && (16..32).contains(&b)) // private
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 192 && b == 0 && c == 2) // TEST-NET-1
        || (a == 192 && b == 88 && c == 99) // 6to4 relay anycast
        || (a == 192 && b == 168) // private
        || (a == 198 && (b == 18 || b == 19)) // benchmarking
        || (a == 198 && b == 51 && c == 100) // TEST-NET-2
        || (a == 203 && b == 0 && c == 113) // TEST-NET-3
        || a >= 224 // multicast, reserved, broadcast
}

fn is_special_v6(ip: Ipv6Addr) -> bool {
    let s = ip.segments();
    ip.is_unspecified()
        || ip.is_loopback()
        || (s[0] & 0xfe00) == 0xfc00 // unique local fc00::/7
        || (s[0] & 0xffc0) == 0xfe80 // link-local fe80::/10
        || (s[0] & 0xffc0) == 0xfec0 // site-local (deprecated) fec0::/10
        || (s[0] & 0xff00) == 0xff00 // multicast
        // NAT64 local-use 64:ff9b:1::/48 (RFC 8215) translates into a private network (the
        // well-known /96 is judged by its IPv4 address before we get here).
        || (s[0] == 0x64 && s[1] == 0xff9b)
        || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation
        || (s[0] == 0x2001 && s[1] < 0x200) // 2001::/23 IETF protocol assignments (Teredo etc.)
        || (s[0] == 0x0100 && s[1..4] == [0, 0, 0]) // discard-only 100::/64
        || s[0] & 0xe000 != 0x2000 // outside 2000::/3 global unicast
}

/// The verdict for one resolved host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Allowed,
    /// Some address is special and no rule allows it.
    Blocked(IpAddr),
}

/// Which special addresses are allowed anyway.
#[derive(Clone, Debug, Default)]
pub struct AddrPolicy {
    allow_private: bool,
    allow_nets: Vec<Cidr>,
}

impl AddrPolicy {
    pub fn new(allow_private: bool, allow_nets: Vec<Cidr>) -> AddrPolicy {
        AddrPolicy {
            allow_private,
            allow_nets,
        }
    }

    /// Judges one address.
    pub fn allows(&self, ip: IpAddr) -> bool {
        self.allow_private || !is_special(ip) || self.allow_nets.iter().any(|net| net.contains(ip))
    }

    /// Judges every address a host resolved to: one forbidden address blocks the host, so a
    /// name that mixes public and private answers cannot steer a later connection inside.
    pub fn check(&self, addrs: &[IpAddr]) -> Verdict {
        match addrs.iter().find(|&&ip| !self.allows(ip)) {
            Some(&ip) => Verdict::Blocked(ip),
            None => Verdict::Allowed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn special_ranges_are_blocked_by_default() {
        let policy = AddrPolicy::default();
        for s in [
            "127.0.0.1",
            "127.1.2.3",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.255",
            "0.0.0.0",
            "224.0.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "fe80::1",
            "fc00::1",
            "fd12:3456::1",
            "::ffff:127.0.0.1",
            "::ffff:7f00:1",
            "::127.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a9fe:a9fe",
            "2002:7f00:1::",
            "ff02::1",
            "ff0e::1",
            "fec0::1",
            "2001:db8::1",
            "2001:db8:ffff::1",
            "64:ff9b::7f00:1",
            "64:ff9b::a00:1",
            "64:ff9b:1::808:808",
            "2002:a00:1::1",
            "2002:c0a8:101::",
            "2001::1",
            "100::1",
            "::2",
            "4000::1",
        ] {
            assert_eq!(policy.check(&[ip(s)]), Verdict::Blocked(ip(s)), "{s}");
        }
    }

    #[test]
    fn public_addresses_pass() {
        let policy = AddrPolicy::default();
        for s in [
            "8.8.8.8",
            "1.1.1.1",
            "172.32.0.1",
            "100.128.0.1",
            "192.169.0.1",
            "2606:4700::1111",
            "2a00:1450:4001::200e",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::1",
        ] {
            assert_eq!(policy.check(&[ip(s)]), Verdict::Allowed, "{s}");
        }
    }

    #[test]
    fn one_private_address_blocks_the_host() {
        let policy = AddrPolicy::default();
        assert_eq!(
            policy.check(&[ip("8.8.8.8"), ip("10.0.0.1")]),
            Verdict::Blocked(ip("10.0.0.1"))
        );
    }

    #[test]
    fn allow_private_and_allow_net() {
        assert_eq!(
            AddrPolicy::new(true, vec![]).check(&[ip("127.0.0.1"), ip("::1")]),
            Verdict::Allowed
        );
        let policy = AddrPolicy::new(false, vec!["127.0.0.0/8".parse().unwrap()]);
        assert!(policy.allows(ip("127.9.9.9")));
        assert!(
            policy.allows(ip("::ffff:127.0.0.1")),
            "mapped form judged as IPv4"
        );
        assert!(!policy.allows(ip("10.0.0.1")));
        assert!(!policy.allows(ip("::1")));
        let policy = AddrPolicy::new(false, vec!["10.1.0.0/17".parse().unwrap()]);
        assert!(policy.allows(ip("10.1.127.1")));
        assert!(!policy.allows(ip("10.1.128.1")));
    }

    #[test]
    fn allow_net_in_ipv6() {
        let nets = ["fd00::/8", "::1", "2001:db8:1::/48", "10.0.0.0/8"];
        let policy = AddrPolicy::new(false, nets.iter().map(|n| n.parse().unwrap()).collect());
        for s in [
            "fd12:3456::1",
            "::1",
            "2001:db8:1:2::3",
            "::ffff:10.1.1.1",
            "64:ff9b::a00:1",
            "2002:a01:101::",
        ] {
            assert!(policy.allows(ip(s)), "{s}");
        }
        for s in [
            "fc00::1",
            "::2",
            "2001:db8:2::1",
            "fe80::1",
            "64:ff9b::ac10:1",
            "172.16.0.1",
        ] {
            assert!(!policy.allows(ip(s)), "{s}");
        }
    }

    #[test]
    fn cidr_parsing() {
        assert_eq!("fd00::/8".parse::<Cidr>(), Cidr::new(ip("fd00::"), 8));
        assert_eq!("fd00::/129".parse::<Cidr>(), Err(CidrError::BadPrefix));
        assert_eq!("fd00:::/8".parse::<Cidr>(), Err(CidrError::BadAddress));
        assert_eq!(
            "::ffff:10.0.0.0/104".parse::<Cidr>(),
            Cidr::new(ip("10.0.0.0"), 8)
        );
        assert_eq!(
            "::ffff:10.0.0.1".parse::<Cidr>(),
            Cidr::new(ip("10.0.0.1"), 32)
        );
        assert_eq!(
            "::ffff:0:0/80".parse::<Cidr>(),
            Cidr::new(ip("::ffff:0:0"), 80)
        );
        assert_eq!("10.0.0.0/8".parse::<Cidr>(), Cidr::new(ip("10.0.0.0"), 8));
        assert_eq!("::1".parse::<Cidr>(), Cidr::new(ip("::1"), 128));
        assert_eq!("10.0.0.0/33".parse::<Cidr>(), Err(CidrError::BadPrefix));
        assert_eq!("10.0.0/8".parse::<Cidr>(), Err(CidrError::BadAddress));
        assert_eq!("10.0.0.0/x".parse::<Cidr>(), Err(CidrError::BadPrefix));
        assert!("0.0.0.0/0".parse::<Cidr>().unwrap().contains(ip("1.2.3.4")));
    }
}
