//! Which proxy a URL goes through: a proxy URL parsed (`--proxy`, the environment), curl's
//! rule for the environment variables, and `no_proxy`'s list. Pure: the caller reads the
//! environment and resolves the proxy's host name (see the README's "Proxies").

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

/// The port a proxy URL without one gets: curl's default for every proxy kind.
pub const DEFAULT_PROXY_PORT: u16 = 1080;
/// RFC 1929 sends each of the user name and password behind a one-byte length.
const MAX_SOCKS_CREDENTIAL: usize = 255;

/// How the crawler talks to a proxy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProxyKind {
    /// `http://`: absolute-form requests for http URLs, a `CONNECT` tunnel for https ones.
    Http,
    /// `socks5://`: the crawler resolves the name and sends the address (RFC 1928).
    Socks5,
    /// `socks5h://`: the proxy resolves the name.
    Socks5h,
}

impl ProxyKind {
    /// Whether the proxy, not the crawler, resolves the site's name (curl lets an HTTP proxy
    /// resolve; so do we).
    pub fn resolves_names(self) -> bool {
        !matches!(self, ProxyKind::Socks5)
    }
}

/// A user name and password from a proxy URL (percent-decoded).
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub user: String,
    pub password: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // A password is never printed, not even in a debug dump.
        write!(f, "Credentials({:?}, ***)", self.user)
    }
}

/// One proxy: its kind, where it is, and the credentials to give it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Proxy {
    pub kind: ProxyKind,
    /// As written in the URL (an IPv6 address without its brackets).
    pub host: String,
    pub port: u16,
    pub credentials: Option<Credentials>,
    /// Where to connect: the host itself when it is an address, else what the caller
    /// resolved it to ([`Proxy::set_addrs`]); empty until then.
    pub addrs: Vec<SocketAddr>,
}

impl Proxy {
    /// Parses `[scheme://][user[:password]@]host[:port][/]`; no scheme means `http://`, as
    /// for curl. `https://` (TLS to the proxy) and SOCKS4 are refused with a reason.
    pub fn parse(text: &str) -> Result<Proxy, String> {
        let text = text.trim();
        let (scheme, rest) = match text.find("://") {
            Some(i) => (text[..i].to_ascii_lowercase(), &text[i + 3..]),
            None => ("http".to_string(), text),
        };
        let kind = match scheme.as_str() {
            "http" => ProxyKind::Http,
            "socks5" => ProxyKind::Socks5,
            "socks5h" => ProxyKind::Socks5h,
            "https" => {
                return Err("https:// proxies (TLS to the proxy) are not supported; \
                            http:// proxies tunnel https URLs with CONNECT"
                    .into())
            }
            "socks4" | "socks4a" => {
                return Err("SOCKS4 proxies are not supported; use socks5:// or socks5h://".into())
            }
            other => return Err(format!("unknown proxy scheme {other:?}")),
        };
        let authority = rest.strip_suffix('/').unwrap_or(rest);
        if authority.contains(['/', '?', '#']) {
            return Err("a proxy URL has no path, query or fragment".into());
        }
        let (userinfo, hostport) = match authority.rfind('@') {
            Some(i) => (Some(&authority[..i]), &authority[i + 1..]),
            None => (None, authority),
        };
        let (host, port) = split_host_port(hostport)?;
        let credentials = match userinfo {
            None => None,
            Some(info) => {
                let (user, password) = info.split_once(':').unwrap_or((info, ""));
                let user = decode(user)?;
                let password = decode(password)?;
                if kind != ProxyKind::Http
                    && (user.len() > MAX_SOCKS_CREDENTIAL || password.len() > MAX_SOCKS_CREDENTIAL)
                {
                    return Err("SOCKS5 user names and passwords are at most 255 bytes".into());
                }
                Some(Credentials { user, password })
            }
        };
        let addrs = match host.parse::<IpAddr>() {
            Ok(ip) => vec![SocketAddr::new(ip, port)],
            Err(_) => Vec::new(),
        };
        Ok(Proxy {
            kind,
            host,
            port,
            credentials,
            addrs,
        })
    }

    /// The URL without its password, for logs and the warcinfo record.
    pub fn redacted(&self) -> String {
        let scheme = match self.kind {
            ProxyKind::Http => "http",
            ProxyKind::Socks5 => "socks5",
            ProxyKind::Socks5h => "socks5h",
        };
        let user = match &self.credentials {
            Some(c) => format!("{}:***@", c.user),
            None => String::new(),
        };
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        format!("{scheme}://{user}{host}:{}", self.port)
    }

    /// Where to connect, as the caller resolved the proxy's name.
    pub fn set_addrs(&mut self, addrs: Vec<SocketAddr>) {
        self.addrs = addrs;
    }
}

fn split_host_port(hostport: &str) -> Result<(String, u16), String> {
    let (host, port) = if let Some(rest) = hostport.strip_prefix('[') {
        let (h, after) = rest
            .split_once(']')
            .ok_or("an IPv6 proxy address lacks its closing ']'")?;
        h.parse::<std::net::Ipv6Addr>()
            .map_err(|_| format!("{h:?} is not an IPv6 address"))?;
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':').ok_or("junk after the IPv6 address")?),
        };
        (h.to_string(), port)
    } else {
        match hostport.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (hostport.to_string(), None),
        }
    };
    if host.is_empty() {
        return Err("the proxy URL has no host".into());
    }
    if host
        .bytes()
        .any(|b| b.is_ascii_control() || b == b' ' || b == b'@' || b == b'[' || b == b']')
    {
        return Err(format!("{host:?} is not a host name"));
    }
    let port = match port {
        None | Some("") => DEFAULT_PROXY_PORT,
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 => n,
            _ => return Err(format!("{p:?} is not a port")),
        },
    };
    Ok((host.to_ascii_lowercase(), port))
}

fn decode(part: &str) -> Result<String, String> {
    percent_encoding::percent_decode_str(part)
        .decode_utf8()
        .map(|s| s.into_owned())
        .map_err(|_| "the proxy credentials are not UTF-8 once percent-decoded".into())
}

/// `no_proxy`: hosts reached directly. curl's reading: entries separated by commas (or
/// white space); `*` alone means every host; a name matches itself and every name under it
/// (a leading dot changes nothing); an address or a CIDR range matches URLs whose host is
/// such an address. Names are not resolved to match ranges.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NoProxy {
    all: bool,
    names: Vec<String>,
    nets: Vec<(IpAddr, u8)>,
}

impl NoProxy {
    pub fn parse(list: &str) -> NoProxy {
        let mut n = NoProxy::default();
        for entry in list.split(|c: char| c == ',' || c.is_whitespace()) {
            let entry = entry.trim().trim_matches('.').to_ascii_lowercase();
            if entry.is_empty() {
                continue;
            }
            if entry == "*" {
                n.all = true;
                continue;
            }
            let bare = entry.replace(['[', ']'], "");
            let (addr, bits) = match bare.split_once('/') {
                Some((a, b)) => (a, b.parse::<u8>().ok()),
                None => (bare.as_str(), None),
            };
            match addr.parse::<IpAddr>() {
                Ok(ip) => {
                    let max = if ip.is_ipv4() { 32 } else { 128 };
                    n.nets.push((ip, bits.unwrap_or(max).min(max)));
                }
                Err(_) => n.names.push(entry),
            }
        }
        n
    }

    /// Whether `host` (a URL's, lowercased; an address without brackets) is reached directly.
    pub fn matches(&self, host: &str) -> bool {
        if self.all {
            return true;
        }
        let host = host.trim_end_matches('.');
        match host.parse::<IpAddr>() {
            Ok(ip) => self.nets.iter().any(|&(net, bits)| in_net(ip, net, bits)),
            Err(_) => self.names.iter().any(|n| {
                host == n
                    || (host.len() > n.len()
                        && host.ends_with(n.as_str())
                        && host.as_bytes()[host.len() - n.len() - 1] == b'.')
            }),
        }
    }
}

fn in_net(ip: IpAddr, net: IpAddr, bits: u8) -> bool {
    let (a, b, len) = match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(b)) => (u128::from(u32::from(a)), u128::from(u32::from(b)), 32),
        (IpAddr::V6(a), IpAddr::V6(b)) => (u128::from(a), u128::from(b), 128),
        _ => return false,
    };
    let shift = len - u32::from(bits);
    bits == 0 || (a >> shift) == (b >> shift)
}

/// The proxies of a run: one for http URLs, one for https ones, and the hosts that bypass
/// them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProxySettings {
    pub http: Option<Arc<Proxy>>,
    pub https: Option<Arc<Proxy>>,
    pub no_proxy: NoProxy,
}

/// Where a proxy setting came from, for error messages.
fn named(source: &str, text: &str) -> Result<Proxy, String> {
    Proxy::parse(text).map_err(|e| format!("{source} {text:?}: {e}"))
}

impl ProxySettings {
    /// The proxies for `--proxy` (`flag`) and the environment (`env` looks a variable up;
    /// give one that finds nothing for `--no-proxy`). curl's rule, which wget shares for the
    /// lower-case names: http URLs take `http_proxy` (lower case only: a CGI program's
    /// environment carries a request's `Proxy:` header as `HTTP_PROXY`), https URLs
    /// `https_proxy` or `HTTPS_PROXY`, both fall back to `all_proxy` or `ALL_PROXY`; bypass
    /// with `no_proxy` or `NO_PROXY`; the lower-case name wins and an empty value is unset.
    /// The flag wins over the variables for both schemes (`--proxy ""`: no proxy), and
    /// `no_proxy` still applies to it, as for curl.
    pub fn new(
        flag: Option<&str>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<ProxySettings, String> {
        let var = |names: &[&'static str]| {
            names
                .iter()
                .find_map(|n| env(n).filter(|v| !v.trim().is_empty()).map(|v| (*n, v)))
        };
        let no_proxy = var(&["no_proxy", "NO_PROXY"])
            .map(|(_, v)| NoProxy::parse(&v))
            .unwrap_or_default();
        if let Some(flag) = flag {
            let proxy = match flag.trim() {
                "" => None,
                text => Some(Arc::new(named("--proxy", text)?)),
            };
            return Ok(ProxySettings {
                http: proxy.clone(),
                https: proxy,
                no_proxy,
            });
        }
        let all = var(&["all_proxy", "ALL_PROXY"]);
        let pick = |own: Option<(&str, String)>| match own.or_else(|| all.clone()) {
            Some((name, text)) => named(name, &text).map(|p| Some(Arc::new(p))),
            None => Ok(None),
        };
        Ok(ProxySettings {
            http: pick(var(&["http_proxy"]))?,
            https: pick(var(&["https_proxy", "HTTPS_PROXY"]))?,
            no_proxy,
        })
    }

    /// No proxy for any URL.
    pub fn is_empty(&self) -> bool {
        self.http.is_none() && self.https.is_none()
    }

    /// The proxy a URL of this scheme (`tls`: https) and host goes through, if any.
    pub fn for_host(&self, tls: bool, host: &str) -> Option<&Arc<Proxy>> {
        let proxy = if tls { &self.https } else { &self.http };
        proxy.as_ref().filter(|_| !self.no_proxy.matches(host))
    }

    /// Whether the crawler may look `host` up itself: no proxy that resolves names takes it,
    /// whatever the scheme (prefetching must not ask DNS for names the proxy resolves).
    pub fn resolves_locally(&self, host: &str) -> bool {
        [false, true]
            .into_iter()
            .filter_map(|tls| self.for_host(tls, host))
            .all(|p| !p.kind.resolves_names())
    }

    /// Gives each proxy named by a host name the addresses `resolve` finds for it (the
    /// caller's lookup: the system's, as curl does); an error names the proxy.
    pub fn resolve(
        &mut self,
        mut resolve: impl FnMut(&str, u16) -> Result<Vec<SocketAddr>, String>,
    ) -> Result<(), String> {
        for proxy in self.http.iter_mut().chain(self.https.iter_mut()) {
            if proxy.addrs.is_empty() {
                let addrs = resolve(&proxy.host, proxy.port)
                    .map_err(|e| format!("proxy {}: {e}", proxy.redacted()))?;
                if addrs.is_empty() {
                    return Err(format!("proxy {}: no address", proxy.redacted()));
                }
                Arc::make_mut(proxy).set_addrs(addrs);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn proxy_urls_parse_as_curl_reads_them() {
        let p = Proxy::parse("proxy.example:3128").unwrap();
        assert_eq!(
            (p.kind, p.host.as_str(), p.port),
            (ProxyKind::Http, "proxy.example", 3128)
        );
        assert!(p.addrs.is_empty() && p.credentials.is_none());
        let p = Proxy::parse("http://127.0.0.1/").unwrap();
        assert_eq!(p.port, DEFAULT_PROXY_PORT);
        assert_eq!(p.addrs, vec!["127.0.0.1:1080".parse().unwrap()]);
        let p = Proxy::parse("SOCKS5H://us%40er:p%3Ass@[::1]:9050").unwrap();
        assert_eq!(p.kind, ProxyKind::Socks5h);
        assert_eq!(p.addrs, vec!["[::1]:9050".parse().unwrap()]);
        let c = p.credentials.clone().unwrap();
        assert_eq!((c.user.as_str(), c.password.as_str()), ("us@er", "p:ss"));
        assert_eq!(p.redacted(), "socks5h://us@er:***@[::1]:9050");
        assert!(!format!("{p:?}").contains("p:ss"));
        let p = Proxy::parse("socks5://u@h:1").unwrap();
        assert_eq!(p.credentials.unwrap().password, "");
        for bad in [
            "https://p:1",
            "socks4://p:1",
            "ftp://p",
            "http://p:0",
            "http://p:x",
            "http://:80",
            "http://p/path",
            "http://[::1",
            "http://a b",
        ] {
            assert!(Proxy::parse(bad).is_err(), "{bad}");
        }
        let long = format!("socks5://{}:p@h", "u".repeat(256));
        assert!(Proxy::parse(&long).is_err());
    }

    #[test]
    fn no_proxy_matches_names_below_and_addresses_in_ranges() {
        let n = NoProxy::parse(".example.com, localhost 10.0.0.0/8,::1,[fd00::]/8");
        for yes in [
            "example.com",
            "www.example.com",
            "localhost",
            "10.1.2.3",
            "::1",
            "fd12::1",
        ] {
            assert!(n.matches(yes), "{yes}");
        }
        for no in [
            "badexample.com",
            "example.org",
            "11.0.0.1",
            "::2",
            "localhost.evil",
        ] {
            assert!(!n.matches(no), "{no}");
        }
        assert!(NoProxy::parse(" * ").matches("anything"));
        assert!(!NoProxy::parse("").matches("a"));
    }

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn the_environment_follows_curl_and_the_flag_wins() {
        // HTTP_PROXY (upper case) is not read; HTTPS_PROXY is; lower case wins.
        let s = ProxySettings::new(
            None,
            env(&[
                ("HTTP_PROXY", "http://upper:1"),
                ("https_proxy", "http://lower:2"),
                ("HTTPS_PROXY", "http://upper:3"),
                ("no_proxy", "direct.example"),
            ]),
        )
        .unwrap();
        assert!(s.http.is_none());
        assert_eq!(s.for_host(true, "a.example").unwrap().host, "lower");
        assert!(s.for_host(true, "direct.example").is_none());
        // all_proxy is the fallback for both; an empty value is unset.
        let s = ProxySettings::new(
            None,
            env(&[("ALL_PROXY", "socks5h://all:4"), ("http_proxy", "")]),
        )
        .unwrap();
        assert_eq!(s.for_host(false, "a").unwrap().kind, ProxyKind::Socks5h);
        assert_eq!(s.for_host(true, "a").unwrap().port, 4);
        assert!(!s.resolves_locally("a"));
        // The flag wins for both schemes; no_proxy still applies; "" means none.
        let vars = env(&[("http_proxy", "http://env:5"), ("no_proxy", "skip")]);
        let s = ProxySettings::new(Some("socks5://flag:6"), &vars).unwrap();
        assert_eq!(s.for_host(false, "a").unwrap().host, "flag");
        assert!(s.for_host(true, "skip").is_none());
        assert!(s.resolves_locally("a"));
        assert!(ProxySettings::new(Some(""), &vars).unwrap().is_empty());
        // Names are resolved by the caller's lookup; addresses need none.
        let mut s = ProxySettings::new(Some("http://proxy.example:3"), &vars).unwrap();
        let found = "192.0.2.7:3".parse().unwrap();
        s.resolve(|host, port| {
            assert_eq!((host, port), ("proxy.example", 3));
            Ok(vec![found])
        })
        .unwrap();
        assert_eq!(s.for_host(true, "a").unwrap().addrs, vec![found]);
        let mut s = ProxySettings::new(Some("http://nowhere:3"), &vars).unwrap();
        let e = s.resolve(|_, _| Err("no such name".into())).unwrap_err();
        assert_eq!(e, "proxy http://nowhere:3: no such name");
        // A bad value names its source.
        let e = ProxySettings::new(None, env(&[("https_proxy", "https://x")])).unwrap_err();
        assert!(e.starts_with("https_proxy \"https://x\""), "{e}");
        let e = ProxySettings::new(Some("socks4://x"), env(&[])).unwrap_err();
        assert!(e.starts_with("--proxy"), "{e}");
    }
}
