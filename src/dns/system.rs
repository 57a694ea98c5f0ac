//! Parsers for the system's resolver files, given as text (`/etc/hosts`, `/etc/resolv.conf`).
//!
//! Reading the files is the caller's job (`cli` / `event_loop`); these only turn their text
//! into a hosts table and a server list for `dns::resolver::ResolverConfig`.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};

use super::normalize_name;

/// DNS port used for every `nameserver` line.
const DNS_PORT: u16 = 53;
/// At most this many servers are taken from resolv.conf (glibc reads 3; we allow more).
pub const MAX_NAMESERVERS: usize = 16;
/// At most this many addresses are kept per host name in the hosts table.
pub const MAX_HOSTS_ADDRS: usize = 16;

/// Parses an address as written in these files; an IPv6 zone (`fe80::1%eth0`) is dropped.
fn parse_addr(text: &str) -> Option<IpAddr> {
    let text = text.split('%').next().unwrap_or(text);
    text.parse().ok()
}

/// Parses `/etc/hosts` text: `ADDRESS NAME [ALIAS...]` per line, `#` comments. Keys are
/// normalized names (invalid names are skipped); each name keeps its addresses in file order.
pub fn parse_hosts(text: &str) -> HashMap<String, Vec<IpAddr>> {
    let mut table: HashMap<String, Vec<IpAddr>> = HashMap::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("");
        let mut fields = line.split_ascii_whitespace();
        let Some(addr) = fields.next().and_then(parse_addr) else {
            continue;
        };
        for name in fields {
            let Ok(name) = normalize_name(name) else {
                continue;
            };
            let addrs = table.entry(name).or_default();
            if !addrs.contains(&addr) && addrs.len() < MAX_HOSTS_ADDRS {
                addrs.push(addr);
            }
        }
    }
    table
}

/// Parses `/etc/resolv.conf` text: the `nameserver ADDRESS` lines, in order, on port 53.
/// Comments start with `#` or `;`; other directives are ignored.
pub fn parse_resolv_conf(text: &str) -> Vec<SocketAddr> {
    let mut servers = Vec::new();
    for line in text.lines() {
        let line = line.split(['#', ';']).next().unwrap_or("");
        let mut fields = line.split_ascii_whitespace();
        if fields.next() != Some("nameserver") {
            continue;
        }
        let Some(addr) = fields.next().and_then(parse_addr) else {
            continue;
        };
        let server = SocketAddr::new(addr, DNS_PORT);
        if !servers.contains(&server) && servers.len() < MAX_NAMESERVERS {
            servers.push(server);
        }
    }
    servers
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_file() {
        let text = "# comment\n\
                    127.0.0.1\tlocalhost Localhost.Localdomain.  # trailing comment\n\
                    ::1 localhost ip6-localhost\n\
                    fe80::1%lo0 linklocal\n\
                    \n\
                    not-an-ip name\n\
                    10.0.0.1 bad..name good.example\n\
                    #10.0.0.2 commented.example\n";
        let t = parse_hosts(text);
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert_eq!(t["localhost"], vec![ip("127.0.0.1"), ip("::1")]);
        assert_eq!(t["localhost.localdomain"], vec![ip("127.0.0.1")]);
        assert_eq!(t["ip6-localhost"], vec![ip("::1")]);
        assert_eq!(t["linklocal"], vec![ip("fe80::1")]);
        assert_eq!(t["good.example"], vec![ip("10.0.0.1")]);
        assert!(!t.contains_key("name"));
        assert!(!t.contains_key("commented.example"));
        assert_eq!(t.len(), 5);
    }

    #[test]
    fn resolv_conf() {
        let text = "; generated\n\
                    search example.com\n\
                    nameserver 127.0.0.53\n\
                    nameserver ::1 # v6\n\
                    nameserver fe80::1%eth0\n\
                    nameserver\n\
                    nameserver bogus\n\
                    #nameserver 1.1.1.1\n\
                    options edns0 trust-ad\n";
        let s = parse_resolv_conf(text);
        let sa = |s: &str| s.parse::<SocketAddr>().unwrap();
        assert_eq!(
            s,
            vec![sa("127.0.0.53:53"), sa("[::1]:53"), sa("[fe80::1]:53")]
        );
    }
}
