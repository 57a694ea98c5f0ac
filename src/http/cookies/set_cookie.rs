//! One `Set-Cookie` value read as RFC 6265 §5.2 says: the name-value pair, then the
//! attributes a jar needs (`Expires`, `Max-Age`, `Domain`, `Path`, `Secure`, `HttpOnly`), the
//! last of each winning. Unknown attributes are ignored; what cannot be a cookie is refused.

use std::time::{Duration, SystemTime};

use crate::datetime::parse_http_date;

/// Largest `Set-Cookie` value (name, value and attributes) kept: RFC 6265 §6.1's minimum a
/// user agent must support, and what browsers allow.
pub const MAX_COOKIE_BYTES: usize = 4096;
/// Longest a cookie lives, whatever it asks (RFC 6265bis §5.5: 400 days).
pub const MAX_COOKIE_AGE: Duration = Duration::from_secs(400 * 24 * 3600);
/// Why a `Set-Cookie` was not stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// Not a cookie: no `name=`, control bytes, not UTF-8, a URL without a host or not http(s).
    Syntax,
    /// Longer than [`MAX_COOKIE_BYTES`].
    TooLarge,
    /// `Domain` is a public suffix (`co.uk`, `github.io`) other than the host itself.
    PublicSuffix,
    /// `Domain` does not domain-match the host that sent it (another site's cookie).
    ForeignDomain,
    /// `Secure` sent over plain http.
    InsecureOrigin,
}

/// When a cookie ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Expiry {
    /// No `Max-Age` or `Expires`: kept for the crawl.
    Session,
    /// `Max-Age` or `Expires` (Max-Age wins when both are given).
    At(SystemTime),
}

/// A parsed `Set-Cookie`, before the jar checks it against the URL that sent it.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct SetCookie<'a> {
    pub name: &'a str,
    pub value: &'a str,
    pub expiry: Expiry,
    /// The `Domain` attribute, lowercased, without its leading dot.
    pub domain: Option<String>,
    /// The `Path` attribute when it is an absolute path (otherwise the default path applies).
    pub path: Option<&'a str>,
    pub secure: bool,
    pub http_only: bool,
}

/// A cookie value a jar can keep and send back: nothing that could break a request header
/// or a line of cookies.txt (controls, tabs, DEL), and no more than [`MAX_COOKIE_BYTES`].
pub(super) fn check_text(text: &[u8]) -> Result<&str, Refused> {
    if text.len() > MAX_COOKIE_BYTES {
        return Err(Refused::TooLarge);
    }
    if text.iter().any(|&b| b < 0x20 || b == 0x7f) {
        return Err(Refused::Syntax);
    }
    std::str::from_utf8(text).map_err(|_| Refused::Syntax)
}

/// Reads one `Set-Cookie` value received at `now` (RFC 6265 §5.2).
pub(super) fn parse(value: &[u8], now: SystemTime) -> Result<SetCookie<'_>, Refused> {
    if value.len() > MAX_COOKIE_BYTES {
        return Err(Refused::TooLarge);
    }
    // Tabs may separate attributes; they are refused in the name and value below.
    if value.iter().any(|&b| (b < 0x20 && b != b'\t') || b == 0x7f) {
        return Err(Refused::Syntax);
    }
    let text = std::str::from_utf8(value).map_err(|_| Refused::Syntax)?;
    let (pair, attributes) = text.split_once(';').unwrap_or((text, ""));
    // RFC 6265 ignores a pair without `=` (6265bis would make it a nameless cookie).
    let (name, value) = pair.split_once('=').ok_or(Refused::Syntax)?;
    let (name, value) = (name.trim_matches(is_wsp), value.trim_matches(is_wsp));
    if name.is_empty() || name.contains('\t') || value.contains('\t') {
        return Err(Refused::Syntax);
    }
    let mut cookie = SetCookie {
        name,
        value,
        expiry: Expiry::Session,
        domain: None,
        path: None,
        secure: false,
        http_only: false,
    };
    let mut max_age = None;
    let mut expires = None;
    for attribute in attributes.split(';') {
        let (key, value) = attribute.split_once('=').unwrap_or((attribute, ""));
        let (key, value) = (key.trim_matches(is_wsp), value.trim_matches(is_wsp));
        if value.contains('\t') {
            // Nothing a jar keeps may hold a tab (cookies.txt separates fields with them).
            continue;
        }
        if key.eq_ignore_ascii_case("expires") {
            if let Some(t) = parse_http_date(value.as_bytes()) {
                expires = Some(t);
            }
        } else if key.eq_ignore_ascii_case("max-age") {
            if let Some(t) = parse_max_age(value, now) {
                max_age = Some(t);
            }
        } else if key.eq_ignore_ascii_case("domain") {
            let domain = value.strip_prefix('.').unwrap_or(value);
            // An empty Domain is ignored (the cookie stays host-only), as §5.2.3 says.
            if !domain.is_empty() {
                cookie.domain = Some(domain.to_ascii_lowercase());
            }
        } else if key.eq_ignore_ascii_case("path") {
            cookie.path = value.starts_with('/').then_some(value);
        } else if key.eq_ignore_ascii_case("secure") {
            cookie.secure = true;
        } else if key.eq_ignore_ascii_case("httponly") {
            cookie.http_only = true;
        }
    }
    if let Some(t) = max_age.or(expires) {
        cookie.expiry = Expiry::At(t.min(now + MAX_COOKIE_AGE));
    }
    Ok(cookie)
}

/// `Max-Age` (§5.2.2): digits, perhaps after a `-`; zero or less means "already expired",
/// which is the earliest time there is. Other values are ignored.
fn parse_max_age(value: &str, now: SystemTime) -> Option<SystemTime> {
    let digits = value.strip_prefix('-').unwrap_or(value);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if value.starts_with('-') || digits.bytes().all(|b| b == b'0') {
        return Some(SystemTime::UNIX_EPOCH);
    }
    let secs = digits.bytes().fold(0u64, |n, d| {
        n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
    });
    Some(now + Duration::from_secs(secs).min(MAX_COOKIE_AGE))
}

fn is_wsp(c: char) -> bool {
    c == ' ' || c == '\t'
}
