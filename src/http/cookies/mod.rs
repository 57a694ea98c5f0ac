//! A cookie jar (RFC 6265), sans-IO: `Set-Cookie` values and the URL they came from go in,
//! the `Cookie` header for a URL comes out. Wall-clock time is a parameter; nothing here reads
//! a clock or a file.
//!
//! - **Storing** ([`CookieJar::store`]): §5.2's parse (`set_cookie`), then §5.3: a `Domain`
//!   must domain-match the host that set it and must not be a public suffix (the list is the
//!   `psl` crate's, compiled in), or a site could set a cookie for `co.uk` or `github.io`; a
//!   cookie without one is host-only. `Max-Age` beats `Expires`; either is capped at 400 days
//!   (RFC 6265bis). A `Secure` cookie is taken from https only. `HttpOnly` means nothing to a
//!   crawler (no scripts); it is kept only to write it back.
//! - **Sending** ([`CookieJar::header_for`]): §5.4: domain and path match, `Secure` only over
//!   https, unexpired; longer paths first, then older cookies.
//! - **Bounds**: at most [`JarLimits::per_site`] cookies per site (registrable domain: the
//!   unit a server controls) and [`JarLimits::total`] in all; past them the expired go first,
//!   then the oldest. A cookie of more than [`MAX_COOKIE_BYTES`] is refused (§6.1), so the jar
//!   holds at most `total × 4 KiB` and a `Cookie` header at most `per_site × 4 KiB`.
//! - **Files** (`netscape`): the cookies.txt format wget and curl read and write, for
//!   `--load-cookies` and for saving the jar with a crawl's per-host state.
//!
//! Where the jar lives and which responses feed it is the caller's business (`crawl`, the
//! `fetch` command).

mod netscape;
mod set_cookie;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};
use std::time::SystemTime;

use url::Url;

pub use netscape::Loaded;
use set_cookie::Expiry;
pub use set_cookie::{Refused, MAX_COOKIE_AGE, MAX_COOKIE_BYTES};

use super::ResponseHead;

/// Default [`JarLimits::per_site`]: RFC 6265 §6.1 asks for at least 50 per domain.
pub const DEFAULT_PER_SITE: usize = 50;
/// Default [`JarLimits::total`]: far more than a crawl's sites set at once (most set none),
/// and at most 40 MiB.
pub const DEFAULT_TOTAL: usize = 10_000;

/// How many cookies a jar keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JarLimits {
    /// Per site (the registrable domain, or the host when it has none: an IP, `localhost`).
    pub per_site: usize,
    /// In the whole jar.
    pub total: usize,
}

impl Default for JarLimits {
    fn default() -> Self {
        JarLimits {
            per_site: DEFAULT_PER_SITE,
            total: DEFAULT_TOTAL,
        }
    }
}

/// What a stored `Set-Cookie` did to the jar.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stored {
    Added,
    /// Same name, domain and path as a cookie held: that one was replaced (keeping its age).
    Replaced,
    /// Already expired: the cookie held under its name, domain and path was removed.
    Removed,
    /// Already expired, and nothing was held under its name: nothing changed.
    Nothing,
}

/// One cookie held.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Cookie {
    name: Box<str>,
    value: Box<str>,
    /// The host that set it (host-only) or its `Domain` attribute: lowercase, no leading dot.
    domain: Box<str>,
    host_only: bool,
    path: Box<str>,
    expiry: Expiry,
    secure: bool,
    http_only: bool,
    /// Creation order (§5.4's tie-break, and the order of eviction).
    seq: u64,
}

impl Cookie {
    fn expired(&self, now: SystemTime) -> bool {
        matches!(self.expiry, Expiry::At(t) if t <= now)
    }

    /// §5.3 step 11: the cookie this one replaces has the same name, domain and path.
    fn same_slot(&self, other: &Cookie) -> bool {
        self.name == other.name && self.domain == other.domain && self.path == other.path
    }

    fn matches(&self, host: &str, path: &str, https: bool, now: SystemTime) -> bool {
        let domain_ok = if self.host_only {
            host == &*self.domain
        } else {
            domain_match(host, &self.domain)
        };
        domain_ok && path_match(path, &self.path) && (https || !self.secure) && !self.expired(now)
    }
}

/// The cookie jar of one crawl (or one partition of it: its hosts' cookies).
#[derive(Clone, Debug, Default)]
pub struct CookieJar {
    limits: JarLimits,
    /// Cookies by site: every cookie a host may receive is under the host's site, since a
    /// `Domain` is never a public suffix.
    sites: HashMap<Box<str>, Vec<Cookie>>,
    /// Creation order → site: which cookie is the oldest of all.
    by_age: BTreeMap<u64, Box<str>>,
    next_seq: u64,
}

impl CookieJar {
    pub fn new(limits: JarLimits) -> CookieJar {
        CookieJar {
            limits: JarLimits {
                per_site: limits.per_site.max(1),
                total: limits.total.max(1),
            },
            ..CookieJar::default()
        }
    }

    pub fn limits(&self) -> JarLimits {
        self.limits
    }

    /// Cookies held (expired ones too, until they are evicted or saved).
    pub fn len(&self) -> usize {
        self.by_age.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_age.is_empty()
    }

    /// Stores the `Set-Cookie` values of a response to `url`, received at `now`. Returns how
    /// many changed the jar (added, replaced or removed a cookie); refused ones are dropped.
    pub fn store<'a>(
        &mut self,
        set_cookies: impl IntoIterator<Item = &'a [u8]>,
        url: &Url,
        now: SystemTime,
    ) -> usize {
        set_cookies
            .into_iter()
            .filter(|v| {
                matches!(
                    self.store_one(v, url, now),
                    Ok(Stored::Added | Stored::Replaced | Stored::Removed)
                )
            })
            .count()
    }

    /// Stores the `Set-Cookie` fields of a response `head` to `url`, received at `now` (see
    /// [`CookieJar::store`]).
    pub fn store_response(&mut self, head: &ResponseHead, url: &Url, now: SystemTime) -> usize {
        let values = head
            .headers
            .iter()
            .filter(|(name, _)| *name == "set-cookie")
            .map(|(_, value)| value);
        self.store(values, url, now)
    }

    /// Stores one `Set-Cookie` value (RFC 6265 §5.3).
    pub fn store_one(
        &mut self,
        value: &[u8],
        url: &Url,
        now: SystemTime,
    ) -> Result<Stored, Refused> {
        let host = request_host(url).ok_or(Refused::Syntax)?;
        let parsed = set_cookie::parse(value, now)?;
        let (domain, host_only) = match parsed.domain {
            None => (host.to_string(), true),
            Some(attribute) => {
                let domain = canonical_domain(&attribute).ok_or(Refused::Syntax)?;
                if is_public_suffix(&domain) {
                    // §5.3 step 5: a host that is itself a public suffix may set a cookie
                    // for itself alone.
                    if domain != host {
                        return Err(Refused::PublicSuffix);
                    }
                    (domain, true)
                } else if domain_match(host, &domain) {
                    (domain, false)
                } else {
                    return Err(Refused::ForeignDomain);
                }
            }
        };
        if parsed.secure && url.scheme() != "https" {
            return Err(Refused::InsecureOrigin);
        }
        let path = match parsed.path {
            Some(p) => p.into(),
            None => default_path(url.path()).into(),
        };
        let cookie = Cookie {
            name: parsed.name.into(),
            value: parsed.value.into(),
            domain: domain.into(),
            host_only,
            path,
            expiry: parsed.expiry,
            secure: parsed.secure,
            http_only: parsed.http_only,
            seq: 0,
        };
        Ok(self.put(cookie, now))
    }

    /// The `Cookie` header value for a request to `url` at `now` (RFC 6265 §5.4), or `None`
    /// if no cookie applies.
    pub fn header_for(&self, url: &Url, now: SystemTime) -> Option<String> {
        if self.is_empty() {
            return None; // most crawls meet few cookies: no suffix lookup per request then
        }
        let host = request_host(url)?;
        let cookies = self.sites.get(site_of(host))?;
        let https = url.scheme() == "https";
        let mut sent: Vec<&Cookie> = cookies
            .iter()
            .filter(|c| c.matches(host, url.path(), https, now))
            .collect();
        if sent.is_empty() {
            return None;
        }
        sent.sort_by(|a, b| b.path.len().cmp(&a.path.len()).then(a.seq.cmp(&b.seq)));
        let mut header = String::new();
        for (i, c) in sent.iter().enumerate() {
            if i > 0 {
                header.push_str("; ");
            }
            header.push_str(&c.name);
            header.push('=');
            header.push_str(&c.value);
        }
        Some(header)
    }

    /// Puts a checked cookie in its slot, replacing or removing what was there, then keeps the
    /// bounds.
    fn put(&mut self, mut cookie: Cookie, now: SystemTime) -> Stored {
        let site: Box<str> = site_of(&cookie.domain).into();
        let held = self
            .sites
            .get(&site)
            .and_then(|cs| cs.iter().position(|c| c.same_slot(&cookie)));
        if cookie.expired(now) {
            return match held {
                Some(i) => {
                    self.remove_at(&site, i);
                    Stored::Removed
                }
                None => Stored::Nothing,
            };
        }
        let cookies = self.sites.entry(site.clone()).or_default();
        if let Some(i) = held {
            cookie.seq = cookies[i].seq;
            cookies[i] = cookie;
            return Stored::Replaced;
        }
        cookie.seq = self.next_seq;
        self.next_seq += 1;
        self.by_age.insert(cookie.seq, site.clone());
        cookies.push(cookie);
        if cookies.len() > self.limits.per_site {
            let victim = cookies.iter().position(|c| c.expired(now)).or_else(|| {
                let oldest = cookies.iter().enumerate().min_by_key(|(_, c)| c.seq);
                oldest.map(|(i, _)| i)
            });
            if let Some(i) = victim {
                self.remove_at(&site, i);
            }
        }
        // Bounded: each pass removes one cookie.
        while self.by_age.len() > self.limits.total {
            let Some((&seq, site)) = self.by_age.first_key_value() else {
                break;
            };
            let site = site.clone();
            let i = self.sites[&site].iter().position(|c| c.seq == seq);
            match i {
                Some(i) => self.remove_at(&site, i),
                None => {
                    self.by_age.remove(&seq); // cannot happen: every held cookie is indexed
                }
            }
        }
        Stored::Added
    }

    fn remove_at(&mut self, site: &str, i: usize) {
        let Some(cookies) = self.sites.get_mut(site) else {
            return;
        };
        let gone = cookies.swap_remove(i);
        self.by_age.remove(&gone.seq);
        if cookies.is_empty() {
            self.sites.remove(site);
        }
    }

    /// Every cookie held, oldest first.
    fn oldest_first(&self) -> impl Iterator<Item = &Cookie> {
        self.by_age
            .iter()
            .filter_map(|(seq, site)| self.sites.get(site)?.iter().find(|c| c.seq == *seq))
    }
}

/// The host of an http(s) URL, as the URL parser canonicalized it (lowercase, punycode).
fn request_host(url: &Url) -> Option<&str> {
    match url.scheme() {
        "http" | "https" => url.host_str().filter(|h| !h.is_empty()),
        _ => None,
    }
}

/// A `Domain` attribute (or a cookies.txt domain) as the URL parser would write the host:
/// lowercase, punycode for an international name, an IP address as an IP.
fn canonical_domain(domain: &str) -> Option<String> {
    match url::Host::parse(domain).ok()? {
        url::Host::Domain(d) if !d.is_empty() => Some(d),
        url::Host::Domain(_) => None,
        ip => Some(ip.to_string()),
    }
}

fn is_ip(host: &str) -> bool {
    host.starts_with('[') || host.parse::<std::net::Ipv4Addr>().is_ok()
}

/// Whether `domain` is a public suffix. With no rule matching, the list's implicit `*` rule
/// makes any single label one (`localhost`, `test`).
fn is_public_suffix(domain: &str) -> bool {
    !is_ip(domain) && psl::suffix_str(domain) == Some(domain)
}

/// The site a host belongs to: its registrable domain, or the host itself when it has none.
fn site_of(host: &str) -> &str {
    if is_ip(host) {
        return host;
    }
    psl::domain_str(host).unwrap_or(host)
}

/// RFC 6265 §5.1.3: `host` is `domain`, or a name (not an IP) ending in `.domain`.
fn domain_match(host: &str, domain: &str) -> bool {
    host == domain
        || (host.len() > domain.len()
            && host.ends_with(domain)
            && host.as_bytes()[host.len() - domain.len() - 1] == b'.'
            && !is_ip(host))
}

/// RFC 6265 §5.1.4: the path is the cookie's, or below it.
fn path_match(request: &str, cookie: &str) -> bool {
    request == cookie
        || (request.starts_with(cookie)
            && (cookie.ends_with('/') || request.as_bytes()[cookie.len()] == b'/'))
}

/// RFC 6265 §5.1.4: the directory of the request path (`/a/b/c` → `/a/b`; `/`, `/x` → `/`).
fn default_path(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}
