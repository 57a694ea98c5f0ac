//! One key per page: the URL-seen key of a URL is taken after canonicalization rules like
//! Heritrix's defaults, so `/p.html`, `/p.html;jsessionid=…`, `/p.html?utm_source=…` and
//! `/p.html?fbclid=…` are one page, fetched once (ARCHITECTURE §7).
//!
//! It owns the rules ([`RULES`], listed by `spinneret help canonicalization`) and the key
//! they give ([`Canon::key_of`]); only the key is canonical: the URL fetched and stored is
//! the first variant found. Rules, all on names compared ASCII case-insensitively:
//! - session IDs, in the query and as path parameters (`;name=value`): `jsessionid`,
//!   `phpsessid`, `aspsessionid…` (ASP's names carry a suffix), `cfid`, `cftoken`, and `sid`
//!   when its value is 32 or more hex digits (a shorter `sid` is too often a real key);
//! - tracking parameters, in the query: `utm_…` and the click and mail IDs of the big ad and
//!   mail platforms ([`TRACKING`], Brave's and Firefox's query-stripping lists' core);
//! - the names `--strip-query-param` adds.
//!
//! A query left empty loses its `?`; a resource nothing is stripped from keeps its bytes (an
//! empty `?` or `&&` included), so its key is the one it always had. Runs for every link, so it is byte-level: a resource
//! with nothing to strip is hashed as it stands (no allocation, one pass over its query),
//! and one with something to strip is hashed piece by piece (XXH3's streaming form gives
//! the one-shot digest of the joined bytes), still without allocating. A crawl's keys are
//! persisted (checkpoints hold them), so a resumed crawl must key the same way: the flags
//! that set it are among the arguments `resume` restores.

use url::{Position, Url};
use xxhash_rust::xxh3::Xxh3;

use super::url_seen::{host_hash, key_of, RESOURCE_MASK};

/// Session-ID names, stripped from the query and from path parameters.
const SESSION: &[&str] = &["jsessionid", "phpsessid", "cfid", "cftoken"];
/// Session-ID name prefix (`ASPSESSIONIDQQGGQGPC`).
const SESSION_PREFIX: &str = "aspsessionid";
/// `sid`, stripped when its value is at least this many hex digits.
const SID_MIN_HEX: usize = 32;
/// Tracking-parameter name prefix.
const TRACKING_PREFIX: &str = "utm_";
/// Tracking parameters: click IDs (Facebook, Google Ads, Microsoft Ads, DoubleClick, Yandex,
/// Twitter, Instagram), mail-campaign IDs (Mailchimp, HubSpot, Marketo, Vero, Olytics).
pub const TRACKING: &[&str] = &[
    "fbclid",
    "gclid",
    "gclsrc",
    "wbraid",
    "gbraid",
    "dclid",
    "msclkid",
    "yclid",
    "twclid",
    "igshid",
    "mc_eid",
    "mc_cid",
    "_hsenc",
    "_hsmi",
    "__hssc",
    "__hstc",
    "__hsfp",
    "mkt_tok",
    "vero_id",
    "vero_conv",
    "oly_anon_id",
    "oly_enc_id",
];

/// The rules, as `spinneret help canonicalization` lists them.
pub const RULES: &[(&str, &str)] = &[
    (
        "jsessionid, phpsessid, aspsessionid*, cfid, cftoken",
        "session IDs (Java, PHP, ASP, ColdFusion): in the query and as ;path parameters",
    ),
    (
        "sid",
        "a session ID when its value is 32 or more hex digits: in the query and as ;path parameters",
    ),
    ("utm_*", "Google Analytics campaign tags (utm_source, utm_medium, …): in the query"),
    (
        "fbclid, gclid, gclsrc, wbraid, gbraid, dclid, msclkid, yclid, twclid, igshid",
        "ad click IDs (Facebook, Google, DoubleClick, Microsoft, Yandex, Twitter, Instagram): in the query",
    ),
    (
        "mc_eid, mc_cid, _hsenc, _hsmi, __hssc, __hstc, __hsfp, mkt_tok, vero_id, vero_conv, oly_anon_id, oly_enc_id",
        "mail-campaign IDs (Mailchimp, HubSpot, Marketo, Vero, Olytics): in the query",
    ),
    ("--strip-query-param NAME", "each name given: in the query"),
];

/// Longest parameter name compared against the lists (longer ones can match only a prefix
/// rule or a name the user added).
const MAX_LISTED_NAME: usize = 16;

/// The canonicalization settings of a crawl.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CanonConfig {
    /// The rules apply (`--no-canonicalize` turns them off).
    pub on: bool,
    /// Query parameters stripped besides the built-in ones (`--strip-query-param`).
    pub strip: Vec<String>,
}

impl Default for CanonConfig {
    fn default() -> Self {
        CanonConfig {
            on: true,
            strip: Vec::new(),
        }
    }
}

/// The key function of a crawl: [`url_key`](super::url_seen::url_key) of the canonical form.
#[derive(Clone, Debug, Default)]
pub struct Canon {
    config: CanonConfig,
}

impl Canon {
    pub fn new(config: CanonConfig) -> Canon {
        Canon { config }
    }

    /// The URL-seen key of `url`, canonicalized.
    pub fn url_key(&self, url: &Url) -> u64 {
        let port = url.port_or_known_default().unwrap_or(0);
        let resource = &url[Position::BeforePath..Position::AfterQuery];
        self.key_of(
            host_hash(url.host_str().unwrap_or(""), port),
            resource.as_bytes(),
        )
    }

    /// `key_of` (the URL-seen key) of `resource` (path and query) once canonicalized.
    pub fn key_of(&self, host: u64, resource: &[u8]) -> u64 {
        // Most resources have neither a query nor a path parameter: one scan says so.
        if !self.config.on
            || memchr::memchr2(b';', b'?', resource).is_none()
            || !self.strips_any(resource)
        {
            return key_of(host, resource);
        }
        let mut h = Xxh3::with_seed(host);
        self.kept(resource, |piece| h.update(piece));
        (host & !RESOURCE_MASK) | (h.digest() & RESOURCE_MASK)
    }

    /// `resource` canonicalized, as bytes (what [`Canon::key_of`] hashes): as written when
    /// no rule strips anything, else rebuilt from the pieces kept (empty parameters dropped
    /// with the stripped ones).
    pub fn canonical(&self, resource: &[u8]) -> Vec<u8> {
        if !self.config.on || !self.strips_any(resource) {
            return resource.to_vec();
        }
        let mut out = Vec::with_capacity(resource.len());
        self.kept(resource, |piece| out.extend_from_slice(piece));
        out
    }

    /// Whether any rule strips something from `resource`: the cheap test every key takes.
    fn strips_any(&self, resource: &[u8]) -> bool {
        let (path, query) = split_query(resource);
        let path_params = memchr::memchr(b';', path).is_some() && {
            let mut any = false;
            path_pieces(path, |piece, param| any |= param && is_session(&piece[1..]));
            any
        };
        path_params || query.is_some_and(|q| params(q, b'&').any(|p| self.strips(p)))
    }

    /// Hands the pieces of canonical `resource` to `out`, in order.
    fn kept(&self, resource: &[u8], mut out: impl FnMut(&[u8])) {
        let (path, query) = split_query(resource);
        // Path: each `;param` that is a session ID is dropped, up to the next `/` or `;`.
        path_pieces(path, |piece, param| {
            if !(param && is_session(&piece[1..])) {
                out(piece);
            }
        });
        let Some(query) = query else { return };
        let mut first = true;
        for p in params(query, b'&') {
            if self.strips(p) {
                continue;
            }
            out(if first { b"?" } else { b"&" });
            out(p);
            first = false;
        }
    }

    /// Whether the query parameter `param` (`name=value`) is stripped.
    fn strips(&self, param: &[u8]) -> bool {
        let name = name_of(param);
        is_session(param)
            || starts_with_ignore_case(name, TRACKING_PREFIX.as_bytes())
            || listed(name, TRACKING)
            || self
                .config
                .strip
                .iter()
                .any(|s| name.eq_ignore_ascii_case(s.as_bytes()))
    }
}

/// Hands `path` to `f` in pieces, in order: runs without `;`, and each path parameter
/// (`;name=value`, up to the next `;` or `/`, marked `true`).
fn path_pieces(path: &[u8], mut f: impl FnMut(&[u8], bool)) {
    let mut rest = path;
    // Bound: each turn consumes at least the `;` of `rest`.
    while let Some(i) = memchr::memchr(b';', rest) {
        f(&rest[..i], false);
        let end = rest[i + 1..]
            .iter()
            .position(|&b| b == b';' || b == b'/')
            .map_or(rest.len(), |e| i + 1 + e);
        f(&rest[i..end], true);
        rest = &rest[end..];
    }
    f(rest, false);
}

/// Whether `param` (`name=value`) is a session ID.
fn is_session(param: &[u8]) -> bool {
    let name = name_of(param);
    if listed(name, SESSION) || starts_with_ignore_case(name, SESSION_PREFIX.as_bytes()) {
        return true;
    }
    if !name.eq_ignore_ascii_case(b"sid") {
        return false;
    }
    let value = &param[(name.len() + 1).min(param.len())..];
    value.len() >= SID_MIN_HEX && value.iter().all(u8::is_ascii_hexdigit)
}

/// The name of `name=value` (all of it without `=`).
fn name_of(param: &[u8]) -> &[u8] {
    &param[..memchr::memchr(b'=', param).unwrap_or(param.len())]
}

/// Whether `name` is in `list` (lowercase names), ASCII case-insensitively.
fn listed(name: &[u8], list: &[&str]) -> bool {
    if name.is_empty() || name.len() > MAX_LISTED_NAME {
        return false;
    }
    let mut lower = [0u8; MAX_LISTED_NAME];
    for (d, s) in lower.iter_mut().zip(name) {
        *d = s.to_ascii_lowercase();
    }
    let lower = &lower[..name.len()];
    list.iter().any(|l| l.as_bytes() == lower)
}

fn starts_with_ignore_case(name: &[u8], prefix: &[u8]) -> bool {
    name.len() >= prefix.len() && name[..prefix.len()].eq_ignore_ascii_case(prefix)
}

/// The path and (after its `?`) the query of a resource.
fn split_query(resource: &[u8]) -> (&[u8], Option<&[u8]>) {
    match memchr::memchr(b'?', resource) {
        Some(i) => (&resource[..i], Some(&resource[i + 1..])),
        None => (resource, None),
    }
}

/// The non-empty `sep`-separated pieces of `s`.
fn params(s: &[u8], sep: u8) -> impl Iterator<Item = &[u8]> {
    s.split(move |&b| b == sep).filter(|p| !p.is_empty())
}

#[cfg(test)]
mod tests;
