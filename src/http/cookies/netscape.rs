//! The Netscape cookies.txt format, as wget (`--save-cookies`, `--load-cookies`) and curl
//! (`-c`, `-b`) write and read it: one cookie per line, seven tab-separated fields
//!
//! ```text
//! domain  include-subdomains  path  secure  expires  name  value
//! .example.com  TRUE  /  FALSE  1767225600  session  abc
//! ```
//!
//! `domain` has a leading dot when subdomains are included, and (wget) `:port` when the
//! cookie came from a port other than 80 or 443; cookies are not kept per port (RFC 6265
//! §8.5), so the port is dropped. `expires` is seconds since the epoch, 0 for a session
//! cookie. A line starting `#HttpOnly_` (curl) is a cookie with that flag; other `#` lines are
//! comments. A value with no field after the name (curl writes six fields for an empty value)
//! is empty.
//!
//! The jar saves itself in this format too (a crawl's per-host state, for `resume`), so what it
//! writes is what it reads, oldest cookie first (the order is the cookies' age).

use std::fmt::Write as _;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::set_cookie::{check_text, Expiry};
use super::{canonical_domain, is_public_suffix, Cookie, CookieJar, MAX_COOKIE_AGE};

/// What a load did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Loaded {
    /// Cookies put in the jar.
    pub cookies: usize,
    /// Cookie lines left out: expired, or not a cookie (wrong field count, bad flag, bad
    /// number, a path not starting with `/`, a public suffix as a domain).
    pub skipped: usize,
}

const HTTP_ONLY_PREFIX: &str = "#HttpOnly_";

impl CookieJar {
    /// Adds the cookies of a cookies.txt text, as of `now` (expired ones are skipped).
    pub fn load_netscape(&mut self, text: &str, now: SystemTime) -> Loaded {
        let mut loaded = Loaded::default();
        for line in text.lines() {
            let (line, http_only) = match line.strip_prefix(HTTP_ONLY_PREFIX) {
                Some(rest) => (rest, true),
                None => (line, false),
            };
            let line = line.trim_end_matches('\r');
            if line.trim().is_empty() || line.starts_with('#') {
                continue;
            }
            match parse_line(line, http_only, now) {
                Some(cookie) => {
                    self.put(cookie, now);
                    loaded.cookies += 1;
                }
                None => loaded.skipped += 1,
            }
        }
        loaded
    }

    /// Appends the unexpired cookies as cookies.txt text, oldest first, with curl's header
    /// line (which wget and curl both accept).
    pub fn save_netscape(&self, out: &mut String, now: SystemTime) {
        out.push_str("# Netscape HTTP Cookie File\n");
        for c in self.oldest_first().filter(|c| !c.expired(now)) {
            if c.http_only {
                out.push_str(HTTP_ONLY_PREFIX);
            }
            let dot = if c.host_only { "" } else { "." };
            let flag = |b: bool| if b { "TRUE" } else { "FALSE" };
            let expires = match c.expiry {
                Expiry::Session => 0,
                // At least 1: 0 would read back as a session cookie.
                Expiry::At(t) => t
                    .duration_since(UNIX_EPOCH)
                    .map_or(1, |d| d.as_secs().max(1)),
            };
            // Writing to a String cannot fail.
            let _ = writeln!(
                out,
                "{dot}{}\t{}\t{}\t{}\t{expires}\t{}\t{}",
                c.domain,
                flag(!c.host_only),
                c.path,
                flag(c.secure),
                c.name,
                c.value
            );
        }
    }
}

/// One cookie line (without a `#HttpOnly_` prefix), or `None` if it is not a usable cookie.
fn parse_line(line: &str, http_only: bool, now: SystemTime) -> Option<Cookie> {
    let mut fields = line.split('\t');
    let mut next = || fields.next();
    let (domain, subdomains, path, secure, expires, name) =
        (next()?, next()?, next()?, next()?, next()?, next()?);
    let value = next().unwrap_or("");
    if next().is_some() {
        return None;
    }
    let domain = domain.strip_prefix('.').unwrap_or(domain);
    let domain = canonical_domain(strip_port(domain))?;
    let host_only = !flag(subdomains)?;
    if !host_only && is_public_suffix(&domain) {
        return None;
    }
    if !path.starts_with('/') {
        return None;
    }
    let secure = flag(secure)?;
    let expiry = match expires.trim().parse::<u64>().ok()? {
        0 => Expiry::Session,
        secs => Expiry::At((UNIX_EPOCH + Duration::from_secs(secs)).min(now + MAX_COOKIE_AGE)),
    };
    let name = check_text(name.trim().as_bytes()).ok()?;
    let value = check_text(value.as_bytes()).ok()?;
    if name.is_empty() {
        return None;
    }
    let cookie = Cookie {
        name: name.into(),
        value: value.into(),
        domain: domain.into(),
        host_only,
        path: check_text(path.as_bytes()).ok()?.into(),
        expiry,
        secure,
        http_only,
        seq: 0,
    };
    (!cookie.expired(now)).then_some(cookie)
}

/// `TRUE` or `FALSE`, in any case.
fn flag(field: &str) -> Option<bool> {
    if field.eq_ignore_ascii_case("TRUE") {
        Some(true)
    } else if field.eq_ignore_ascii_case("FALSE") {
        Some(false)
    } else {
        None
    }
}

/// `host:port` → `host` (wget writes the port of a cookie from a non-default port); an IPv6
/// literal keeps its brackets.
fn strip_port(domain: &str) -> &str {
    if domain.starts_with('[') {
        return domain.find(']').map_or(domain, |i| &domain[..=i]);
    }
    match domain.rsplit_once(':') {
        Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
        _ => domain,
    }
}
