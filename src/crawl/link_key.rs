//! URL-seen keys of found links, computed straight from the `href` bytes for the simple
//! forms most links take, so that a link to a URL already seen (most links on most pages)
//! costs a hash and a lookup instead of URL parsing ([`super::urlnorm::normalize`] was ~13 %
//! of the event loop's time, most of it on such links).
//!
//! [`LinkKeys::key`] answers only where the answer is certain: `Some(k)` means `normalize`
//! would accept the link and [`Canon::url_key`] of its result is `k` (the unit tests and the
//! `urlnorm` fuzz target check exactly that). Everything else — dot
//! segments, percent-escapes, uppercase or IDNA hosts, user info, backslashes, spaces,
//! anything unusual — gets `None` and takes the full path.

use url::{Position, Url};

use super::canon::Canon;
use super::url_seen::host_hash;
use super::urlnorm::MAX_URL_BYTES;

/// Longest host the fast path handles (DNS's limit).
const MAX_HOST: usize = 253;
/// Room for `https://`, `:65535` and slack beside host and resource in a URL's length.
const URL_FRAME: usize = 16;

/// The parts of a page's URL that its links resolve against, and a scratch buffer.
pub struct LinkKeys<'a> {
    /// [`host_hash`] of the page's host:port.
    host: u64,
    /// The page's path and query (`/dir/page.html?q=1`, borrowed from its URL), where its
    /// path ends, and where its directory ends (after the last `/` of the path).
    resource: &'a [u8],
    path_len: usize,
    dir_len: usize,
    host_len: usize,
    scratch: Vec<u8>,
}

impl<'a> LinkKeys<'a> {
    /// `None` for a base that is not an `http(s)` URL with a host (its links take the
    /// full path).
    pub fn new(base: &'a Url) -> Option<LinkKeys<'a>> {
        if !matches!(base.scheme(), "http" | "https") {
            return None;
        }
        let host = base.host_str().filter(|h| !h.is_empty())?;
        let port = base.port_or_known_default()?;
        let resource = base[Position::BeforePath..Position::AfterQuery].as_bytes();
        let path_len = base.path().len();
        let dir_len = base.path().rfind('/').map_or(0, |i| i + 1);
        Some(LinkKeys {
            host: host_hash(host, port),
            resource,
            path_len,
            dir_len,
            host_len: host.len(),
            scratch: Vec::new(),
        })
    }

    /// The URL-seen key of `href` resolved against the base (canonicalized by `canon`), when
    /// it is certain without parsing.
    pub fn key(&mut self, href: &[u8], canon: &Canon) -> Option<u64> {
        // `normalize` refuses an href this long, fragment and all.
        if href.len() > MAX_URL_BYTES {
            return None;
        }
        // The fragment is dropped by normalization; its bytes must still be plain.
        let (main, fragment) = match memchr::memchr(b'#', href) {
            Some(i) => (&href[..i], &href[i + 1..]),
            None => (href, &[][..]),
        };
        if main.is_empty() || !fragment.iter().all(|&b| is_query_byte(b)) {
            return None;
        }
        let (host, host_len, resource) = match main {
            [b'/', b'/', ..] => return None, // scheme-relative: an authority follows
            [b'/', ..] => {
                check_resource(main)?;
                (self.host, self.host_len, main)
            }
            [b'?', ..] => {
                check_query(&main[1..])?;
                (self.host, self.host_len, self.join(self.path_len, main))
            }
            _ if main.starts_with(b"http://") || main.starts_with(b"https://") => absolute(main)?,
            // Any other scheme (or `HTTP:`) has a `:`, which `check_resource` refuses.
            [b'.', ..] => return None, // a dot segment
            _ => {
                // A relative path.
                check_resource(main)?;
                (self.host, self.host_len, self.join(self.dir_len, main))
            }
        };
        if host_len + resource.len() + URL_FRAME > MAX_URL_BYTES {
            return None;
        }
        Some(canon.key_of(host, resource))
    }

    /// The first `keep` bytes of the base's resource followed by `rest`, in the scratch
    /// buffer.
    fn join(&mut self, keep: usize, rest: &[u8]) -> &[u8] {
        self.scratch.clear();
        self.scratch.extend_from_slice(&self.resource[..keep]);
        self.scratch.extend_from_slice(rest);
        &self.scratch
    }
}

/// [`host_hash`], the host's length and the resource (path and query) of a link.
type KeyParts<'a> = (u64, usize, &'a [u8]);

/// The key parts of `main`, an absolute URL starting with `http://` or `https://`
/// (lowercase), when it is plain.
fn absolute(main: &[u8]) -> Option<KeyParts<'_>> {
    let (rest, default_port) = match main.strip_prefix(b"http://") {
        Some(r) => (r, 80),
        None => (main.strip_prefix(b"https://")?, 443),
    };
    let end = rest
        .iter()
        .position(|&b| b == b'/' || b == b'?')
        .unwrap_or(rest.len());
    let (authority, resource) = rest.split_at(end);
    let (host, port) = match memchr::memchr(b':', authority) {
        Some(i) => (&authority[..i], Some(&authority[i + 1..])),
        None => (authority, None),
    };
    let host = plain_host(host)?;
    let port = match port {
        None => default_port,
        Some(digits) => parse_port(digits)?,
    };
    // `http://h` and `http://h?q` have the path `/`: the key needs the serialization's bytes.
    if !resource.starts_with(b"/") {
        return None;
    }
    check_resource(resource)?;
    Some((host_hash(host, port), host.len(), resource))
}

/// A host the URL standard leaves exactly as written: lowercase ASCII letters, digits, `-`
/// and dots between non-empty labels, the last label starting with a letter (so it is not
/// an IPv4 address), no IDNA label (`xn--`).
fn plain_host(host: &[u8]) -> Option<&str> {
    if host.is_empty() || host.len() > MAX_HOST {
        return None;
    }
    let mut last_start = 0;
    for label in host.split(|&b| b == b'.') {
        if label.is_empty()
            || label.starts_with(b"xn--")
            || !label
                .iter()
                .all(|&b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        {
            return None;
        }
        last_start = label[0];
    }
    if !last_start.is_ascii_lowercase() {
        return None;
    }
    std::str::from_utf8(host).ok()
}

/// A port of one to five digits, 1–65535.
fn parse_port(digits: &[u8]) -> Option<u16> {
    if digits.is_empty() || digits.len() > 5 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n = digits
        .iter()
        .fold(0u32, |n, &d| n * 10 + u32::from(d - b'0'));
    u16::try_from(n).ok().filter(|&p| p != 0)
}

/// A path (then maybe `?` and a query) that parsing leaves as written: plain bytes, no dot
/// segment (no `/.` at all, which also keeps out `..`).
fn check_resource(resource: &[u8]) -> Option<()> {
    let (path, query) = match memchr::memchr(b'?', resource) {
        Some(i) => (&resource[..i], Some(&resource[i + 1..])),
        None => (resource, None),
    };
    if !path.iter().all(|&b| is_path_byte(b)) || memchr::memmem::find(path, b"/.").is_some() {
        return None;
    }
    match query {
        Some(q) => check_query(q),
        None => Some(()),
    }
}

fn check_query(query: &[u8]) -> Option<()> {
    query.iter().all(|&b| is_query_byte(b)).then_some(())
}

/// Bytes a path keeps as they are (unreserved, and `/`).
fn is_path_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/')
}

/// Bytes a query keeps as they are: a path's, and `=`, `&`, `?`.
fn is_query_byte(b: u8) -> bool {
    is_path_byte(b) || matches!(b, b'=' | b'&' | b'?')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crawl::canon::CanonConfig;
    use crate::crawl::urlnorm::normalize;
    use proptest::prelude::*;

    const BASES: &[&str] = &[
        "http://example.com/dir/page.html?q=1#frag",
        "https://example.com/",
        "http://h.test:8080/a/b/",
        "https://ex.org:443/x?y",
        "http://127.0.0.1:9000/p/3.html",
        "http://example.com/%7Euser/.well-known/x",
    ];

    /// The module's promise: a fast key is the key of what `normalize` makes of the link,
    /// canonicalized or not.
    fn agrees(base: &Url, href: &[u8]) -> bool {
        [true, false].into_iter().all(|on| {
            let canon = Canon::new(CanonConfig {
                on,
                strip: Vec::new(),
            });
            let Some(k) = LinkKeys::new(base).and_then(|mut l| l.key(href, &canon)) else {
                return true;
            };
            match normalize(base, href) {
                Ok(u) => canon.url_key(&u) == k,
                Err(_) => false,
            }
        })
    }

    fn url_key(u: &Url) -> u64 {
        Canon::default().url_key(u)
    }

    #[test]
    fn the_common_forms_take_the_fast_path_and_agree() {
        let base = Url::parse("http://example.com/dir/page.html?q=1").unwrap();
        let mut keys = LinkKeys::new(&base).unwrap();
        for href in [
            &b"/p/12.html"[..],
            b"p/12.html",
            b"other.html#section-2",
            b"?sort=name&page=0",
            b"/list.html?sort=name&page=0",
            b"http://host-7.test:8080/p/3.html",
            b"https://example.com/",
            b"http://example.com:80/dir/page.html?q=1",
            b"http://a-b.example/x?y=1#top",
        ] {
            let k = keys.key(href, &Canon::default());
            let want = url_key(&normalize(&base, href).unwrap());
            assert_eq!(k, Some(want), "{}", String::from_utf8_lossy(href));
        }
    }

    #[test]
    fn unusual_forms_take_the_full_path() {
        let base = Url::parse("http://example.com/dir/page.html").unwrap();
        let mut keys = LinkKeys::new(&base).unwrap();
        for href in [
            &b"../up"[..],
            b"./here",
            b"a/./b",
            b"/a/../b",
            b"/x/.",
            b"//proto.rel/x",
            b"HTTP://EXAMPLE.ORG/Path",
            b"http://Example.com/",
            b"http://xn--nxasmq6b.example/",
            b"http://1.2.3.4/",
            b"http://0x7f.1/",
            b"http://h:0/",
            b"http://h:65536/",
            b"http://h:/x",
            b"http://user@h/",
            b"http://h",
            b"http://h?q",
            b"/a%20b",
            b"/a b",
            b" /a",
            b"/a\\b",
            b"mailto:x@y",
            b"javascript:void(0)",
            b"#only",
            b"",
            b"/caf\xc3\xa9",
            b"/x#frag ment",
        ] {
            assert_eq!(
                keys.key(href, &Canon::default()),
                None,
                "{}",
                String::from_utf8_lossy(href)
            );
        }
        // Too long for `normalize` because of its fragment alone.
        let long = [&b"/a#"[..], &[b'f'; MAX_URL_BYTES]].concat();
        assert!(normalize(&base, &long).is_err());
        assert_eq!(keys.key(&long, &Canon::default()), None);
    }

    #[test]
    fn every_base_agrees_on_a_table_of_links() {
        let hrefs: &[&[u8]] = &[
            b"/a",
            b"a",
            b"a/b/c.html",
            b"?",
            b"?a=1&b",
            b"/?x",
            b"x?y?z",
            b"http://other.example/",
            b"https://other.example:444/p?q#f",
            b"http://o.example:80/",
            b"https://o.example:443/",
            b"https://o.example:80/",
            b"/a//b",
            b"/.well-known/x",
            b"~user/x",
            b"/p.html?utm_source=a&utm_medium=b",
            b"p.html?fbclid=1&x=2#f",
            b"?PHPSESSID=1",
        ];
        for base in BASES {
            let base = Url::parse(base).unwrap();
            for href in hrefs {
                assert!(
                    agrees(&base, href),
                    "{base} + {}",
                    String::from_utf8_lossy(href)
                );
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]
        /// Links made of the characters that matter to parsing, against every base.
        #[test]
        fn fast_keys_agree_with_normalize(
            parts in prop::collection::vec(prop::sample::select(vec![
                "/", ".", "..", "a", "B", "0", "-", "_", "~", "?", "#", "=", "&", ":", "@", "%",
                "%2e", " ", "\\", "//", "utm_a=", "fbclid", "http://", "https://", "h.test", "x.", "1", "9", "xn--",
                "\t", "é", ":80", ":0", ":99999",
            ]), 0..10),
            base in 0..BASES.len(),
        ) {
            let href = parts.concat();
            let base = Url::parse(BASES[base]).unwrap();
            prop_assert!(agrees(&base, href.as_bytes()), "{} + {:?}", base, href);
        }
    }
}
