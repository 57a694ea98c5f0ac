//! URL normalization: turns a link's raw bytes into the one canonical `url::Url` the rest of the
//! page → frontier path (ARCHITECTURE §7) works on.
//!
//! This module owns resolution against the page's base, the http/https-only rule, fragment
//! removal, the hard length cap, and the wget-like seed syntax. The `url` crate does the WHATWG
//! work (lowercasing scheme and host, default-port removal, dot-segment removal, IDN → punycode,
//! percent-encoding). Scope and trap rules live in [`crate::crawl::url_filter`]; deduplication in
//! [`crate::crawl::url_seen`]; extracting hrefs from pages (and entity decoding) in the link scanner.

use std::borrow::Cow;

use url::{ParseError, Url};

/// Hard cap on a normalized URL (and on the raw href before parsing), independent of the user's
/// `--max-url-length`: bounds the work and memory any one hostile link can cost.
pub const MAX_URL_BYTES: usize = 8 * 1024;

/// Why a link or seed was not turned into a crawlable URL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NormError {
    /// Nothing left after trimming whitespace.
    Empty,
    /// The `url` crate could not parse it (bad port, bad host characters, ...).
    Syntax,
    /// A scheme other than http/https (javascript:, mailto:, data:, ftp:, file:, tel:, ...).
    Scheme,
    /// An http(s) URL with an empty host (`http:///x`, `http://`).
    NoHost,
    /// A C0 control character or DEL other than the tab/CR/LF the URL standard strips.
    ControlChar,
    /// Longer than [`MAX_URL_BYTES`], raw or normalized.
    TooLong,
}

/// Resolves `href` (raw bytes from a page, already entity-decoded) against `base` and normalizes
/// it. Invalid UTF-8 bytes are percent-encoded rather than rejected, as browsers do.
pub fn normalize(base: &Url, href: &[u8]) -> Result<Url, NormError> {
    let text = prepare(href)?;
    if let Some(scheme) = leading_scheme(&text) {
        check_scheme_and_authority(scheme, &text[scheme.len() + 1..])?;
    }
    finish(Url::options().base_url(Some(base)).parse(&text))
}

/// Parses a seed URL the way wget reads its command line: text without a `scheme://` (and
/// without a known non-web scheme such as `mailto:`) gets `http://` prepended, so
/// `example.com/x` and `localhost:8080/` work. Otherwise the same rules as [`normalize`].
pub fn parse_seed(s: &str) -> Result<Url, NormError> {
    let text = prepare(s.as_bytes())?;
    let absolute = match leading_scheme(&text) {
        Some(scheme) => {
            let rest = &text[scheme.len() + 1..];
            rest.starts_with("//")
                || NON_WEB_SCHEMES
                    .iter()
                    .any(|s| s.eq_ignore_ascii_case(scheme))
        }
        None => false,
    };
    let text: Cow<'_, str> = if absolute {
        text
    } else {
        Cow::Owned(format!("http://{text}"))
    };
    if let Some(scheme) = leading_scheme(&text) {
        check_scheme_and_authority(scheme, &text[scheme.len() + 1..])?;
    }
    finish(Url::parse(&text))
}

/// `scheme://host:port` with the port always explicit (the default filled in): the key of the
/// robots cache and of politeness bookkeeping, so `http://h/` and `http://h:80/` share one entry.
pub fn origin_key(url: &Url) -> String {
    let host = url.host_str().unwrap_or("");
    match url.port_or_known_default() {
        Some(port) => format!("{}://{}:{}", url.scheme(), host, port),
        None => format!("{}://{}", url.scheme(), host),
    }
}

/// Schemes that mean "not a web page" even without `//`; a seed written with one of them is
/// rejected instead of being read as `http://mailto:...`.
const NON_WEB_SCHEMES: &[&str] = &[
    "javascript",
    "mailto",
    "data",
    "tel",
    "file",
    "about",
    "blob",
    "sms",
    "news",
    "urn",
];

/// Trims, bounds, rejects control characters, and makes the bytes a `str` (percent-encoding
/// invalid UTF-8). Borrows in the common all-valid case.
fn prepare(raw: &[u8]) -> Result<Cow<'_, str>, NormError> {
    let trimmed = raw.trim_ascii();
    if trimmed.is_empty() {
        return Err(NormError::Empty);
    }
    if trimmed.len() > MAX_URL_BYTES {
        return Err(NormError::TooLong);
    }
    // The URL standard strips tab, LF and CR anywhere; every other C0 control and DEL is refused
    // so that no NUL or escape sequence reaches logs or request lines.
    if trimmed
        .iter()
        .any(|&b| (b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r')) || b == 0x7f)
    {
        return Err(NormError::ControlChar);
    }
    match std::str::from_utf8(trimmed) {
        Ok(s) => Ok(Cow::Borrowed(s)),
        Err(_) => Ok(Cow::Owned(percent_encode_invalid(trimmed))),
    }
}

/// Copies `bytes` into a `String`, replacing each byte of an invalid UTF-8 sequence by `%XX`.
/// Loops at most once per invalid byte plus once per valid run, so at most `bytes.len()` times.
fn percent_encode_invalid(mut bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = String::with_capacity(bytes.len() + 16);
    loop {
        match std::str::from_utf8(bytes) {
            Ok(s) => {
                out.push_str(s);
                return out;
            }
            Err(e) => {
                let (valid, rest) = bytes.split_at(e.valid_up_to());
                // Invariant: `valid_up_to` marks the end of a valid UTF-8 prefix.
                out.push_str(std::str::from_utf8(valid).unwrap_or(""));
                let bad = e.error_len().unwrap_or(rest.len());
                for &b in &rest[..bad] {
                    out.push('%');
                    out.push(HEX[usize::from(b >> 4)] as char);
                    out.push(HEX[usize::from(b & 0xf)] as char);
                }
                bytes = &rest[bad..];
            }
        }
    }
}

/// The scheme at the start of `text` (`ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":"`), if any.
fn leading_scheme(text: &str) -> Option<&str> {
    let bytes = text.as_bytes();
    if !bytes.first()?.is_ascii_alphabetic() {
        return None;
    }
    let end = bytes
        .iter()
        .position(|&b| !(b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.')))?;
    (bytes[end] == b':').then(|| &text[..end])
}

/// Early, cheap classification of an explicit scheme: non-web schemes are `Scheme`, and an
/// http(s) URL whose authority is empty (`http:///x`) is `NoHost` (the URL standard would
/// silently read `x` as the host; a crawler should not guess).
fn check_scheme_and_authority(scheme: &str, rest: &str) -> Result<(), NormError> {
    if !(scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https")) {
        return Err(NormError::Scheme);
    }
    let rest = rest.as_bytes();
    let is_slash = |b: &u8| matches!(b, b'/' | b'\\');
    if rest.len() >= 2 && rest[..2].iter().all(is_slash) {
        match rest.get(2) {
            None | Some(b'/' | b'\\' | b'?' | b'#') => return Err(NormError::NoHost),
            Some(_) => {}
        }
    }
    Ok(())
}

/// The checks every parsed URL goes through, whatever its origin.
fn finish(parsed: Result<Url, ParseError>) -> Result<Url, NormError> {
    let mut url = parsed.map_err(|e| match e {
        ParseError::EmptyHost => NormError::NoHost,
        _ => NormError::Syntax,
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(NormError::Scheme);
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(NormError::NoHost);
    }
    url.set_fragment(None);
    if url.as_str().len() > MAX_URL_BYTES {
        return Err(NormError::TooLong);
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Url {
        Url::parse("http://example.com/dir/page.html?q=1#frag").unwrap()
    }

    fn norm(href: &[u8]) -> Result<String, NormError> {
        normalize(&base(), href).map(|u| u.to_string())
    }

    #[test]
    fn normalize_table() {
        let ok: &[(&[u8], &str)] = &[
            (b"other.html", "http://example.com/dir/other.html"),
            (b"sub/x", "http://example.com/dir/sub/x"),
            (b"/root", "http://example.com/root"),
            (b"http://other.org/a", "http://other.org/a"),
            (b"https://other.org/a", "https://other.org/a"),
            (b"//proto.rel/x", "http://proto.rel/x"),
            (b"../../../../up", "http://example.com/up"),
            (b"./here", "http://example.com/dir/here"),
            (b"a/./b/../c", "http://example.com/dir/a/c"),
            (b"http://h:80/x", "http://h/x"),
            (b"https://h:443/x", "https://h/x"),
            (b"http://h:443/x", "http://h:443/x"),
            (b"https://h:80/x", "https://h:80/x"),
            (b"HTTP://EXAMPLE.ORG/Path", "http://example.org/Path"),
            (b"HtTpS://WwW.Ex.COM", "https://www.ex.com/"),
            (b"page#section", "http://example.com/dir/page"),
            (b"#only-fragment", "http://example.com/dir/page.html?q=1"),
            (b"?a=1&b=2", "http://example.com/dir/page.html?a=1&b=2"),
            (b"x?a=b#c", "http://example.com/dir/x?a=b"),
            (b"  \t\n/trimmed \r\n", "http://example.com/trimmed"),
            (b"/a b/c d?e f", "http://example.com/a%20b/c%20d?e%20f"),
            (b"/in\nside\t", "http://example.com/inside"),
            (b"/bad\xff\xfeutf8", "http://example.com/bad%FF%FEutf8"),
            (b"/caf\xc3\xa9", "http://example.com/caf%C3%A9"),
            (b"/trunc\xe2\x82", "http://example.com/trunc%E2%82"),
            ("http://bücher.de/x".as_bytes(), "http://xn--bcher-kva.de/x"),
            (
                "http://例え.テスト/".as_bytes(),
                "http://xn--r8jz45g.xn--zckzah/",
            ),
            (b"http://[::1]:8080/", "http://[::1]:8080/"),
            (b"http://127.0.0.1:8080/a", "http://127.0.0.1:8080/a"),
            (b"http:rel", "http://example.com/dir/rel"),
        ];
        for (href, want) in ok {
            assert_eq!(
                norm(href).as_deref(),
                Ok(*want),
                "{:?}",
                String::from_utf8_lossy(href)
            );
        }
    }

    #[test]
    fn normalize_rejections() {
        let bad: &[(&[u8], NormError)] = &[
            (b"", NormError::Empty),
            (b"  \t\r\n ", NormError::Empty),
            (b"javascript:alert(1)", NormError::Scheme),
            (b"JavaScript:void(0)", NormError::Scheme),
            (b"java\nscript:alert(1)", NormError::Scheme),
            (b"mailto:a@b.c", NormError::Scheme),
            (b"data:text/html,<b>x</b>", NormError::Scheme),
            (b"ftp://ftp.example.com/f", NormError::Scheme),
            (b"file:///etc/passwd", NormError::Scheme),
            (b"tel:+15551234", NormError::Scheme),
            (b"http:///x", NormError::NoHost),
            (b"https:///x", NormError::NoHost),
            (b"http://", NormError::NoHost),
            (b"http://?q", NormError::NoHost),
            (b"/a\x00b", NormError::ControlChar),
            (b"/a\x1bb", NormError::ControlChar),
            (b"/a\x7fb", NormError::ControlChar),
            (b"http://h:99999/", NormError::Syntax),
            (b"http://a b/", NormError::Syntax),
            (b"http://[::1/", NormError::Syntax),
        ];
        for (href, want) in bad {
            assert_eq!(
                norm(href),
                Err(*want),
                "{:?}",
                String::from_utf8_lossy(href)
            );
        }
    }

    #[test]
    fn too_long_raw_and_after_resolution() {
        let mut long = b"/".to_vec();
        long.resize(MAX_URL_BYTES + 1, b'a');
        assert_eq!(norm(&long), Err(NormError::TooLong));
        // Fits raw, but not once resolved against the base.
        let mut rel = b"/".to_vec();
        rel.resize(MAX_URL_BYTES - 5, b'a');
        assert_eq!(norm(&rel), Err(NormError::TooLong));
        // Percent-encoding triples invalid bytes past the cap.
        let invalid = vec![0xffu8; MAX_URL_BYTES / 2];
        assert_eq!(norm(&invalid), Err(NormError::TooLong));
        let mut fits = b"/".to_vec();
        fits.resize(MAX_URL_BYTES - "http://example.com".len(), b'a');
        assert!(norm(&fits).is_ok());
    }

    #[test]
    fn parse_seed_table() {
        let ok: &[(&str, &str)] = &[
            ("example.com", "http://example.com/"),
            ("example.com/x", "http://example.com/x"),
            ("  Example.COM/x#f ", "http://example.com/x"),
            ("localhost:8080/a", "http://localhost:8080/a"),
            ("127.0.0.1:8080", "http://127.0.0.1:8080/"),
            ("[::1]:8080/", "http://[::1]:8080/"),
            ("http://example.com:80/a/../b", "http://example.com/b"),
            ("https://example.com/", "https://example.com/"),
            ("bücher.de", "http://xn--bcher-kva.de/"),
        ];
        for (seed, want) in ok {
            assert_eq!(
                parse_seed(seed).map(|u| u.to_string()).as_deref(),
                Ok(*want),
                "{seed}"
            );
        }
        let bad: &[(&str, NormError)] = &[
            ("", NormError::Empty),
            ("   ", NormError::Empty),
            ("ftp://example.com/", NormError::Scheme),
            ("mailto:me@example.com", NormError::Scheme),
            ("javascript:alert(1)", NormError::Scheme),
            ("file:///etc/passwd", NormError::Scheme),
            ("http:///x", NormError::NoHost),
            ("/just/a/path", NormError::NoHost),
            ("exa mple.com", NormError::Syntax),
            ("example.com/\u{0}", NormError::ControlChar),
        ];
        for (seed, want) in bad {
            assert_eq!(parse_seed(seed), Err(*want), "{seed:?}");
        }
    }

    #[test]
    fn origin_key_has_explicit_port() {
        let key = |s: &str| origin_key(&Url::parse(s).unwrap());
        assert_eq!(key("http://Example.com/x?y"), "http://example.com:80");
        assert_eq!(key("https://example.com/"), "https://example.com:443");
        assert_eq!(key("http://example.com:8080/"), "http://example.com:8080");
        assert_eq!(key("http://[::1]:81/"), "http://[::1]:81");
        assert_eq!(key("http://h/"), key("http://h:80/"));
    }
}
