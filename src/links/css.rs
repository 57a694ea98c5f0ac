//! URLs inside CSS (`url(…)`, `@import "…"`) and inside `srcset` candidate lists: what a page
//! needs to render beyond its own tags. Linear, bounded by the input, never panics.
//!
//! CSS: `/* comments */` are skipped; strings are skipped (a backslash escapes the next byte)
//! unless they follow `@import`; `url(` (any case, not preceded by a name character) takes a
//! quoted value or everything up to `)`, trimmed. CSS escapes inside values are not decoded.
//! `data:` URLs are skipped everywhere: there is nothing to fetch.

use super::{LinkKind, Links};

/// Calls `f` with each URL value in `css`, in order.
pub fn css_urls(css: &[u8], f: &mut dyn FnMut(&[u8])) {
    let len = css.len();
    let mut i = 0;
    // Bound: every turn moves `i` forward by at least one byte.
    while i < len {
        match css[i] {
            b'/' if css.get(i + 1) == Some(&b'*') => {
                i = match find(css, i + 2, b"*/") {
                    Some(end) => end + 2,
                    None => len,
                };
            }
            q @ (b'"' | b'\'') => {
                let end = string_end(css, i + 1, q);
                if follows_import(css, i) {
                    emit(&css[i + 1..end.min(len)], f);
                }
                i = end + 1;
            }
            b'u' | b'U'
                if css[i..].len() >= 4
                    && css[i..i + 4].eq_ignore_ascii_case(b"url(")
                    && (i == 0 || !is_name_byte(css[i - 1])) =>
            {
                let mut p = i + 4;
                while p < len && is_ws(css[p]) {
                    p += 1;
                }
                match css.get(p) {
                    Some(&q @ (b'"' | b'\'')) => {
                        let end = string_end(css, p + 1, q);
                        emit(&css[p + 1..end.min(len)], f);
                        i = match css[end.min(len)..].iter().position(|&b| b == b')') {
                            Some(off) => end + off + 1,
                            None => len,
                        };
                    }
                    _ => {
                        let end = css[p..].iter().position(|&b| b == b')').map(|o| p + o);
                        emit(&css[p..end.unwrap_or(len)], f);
                        i = end.map_or(len, |e| e + 1);
                    }
                }
            }
            _ => i += 1,
        }
    }
}

/// Calls `f` with each candidate URL of a `srcset` value (descriptors such as `2x` or `100w`
/// dropped), in order.
pub fn srcset_urls(value: &[u8], f: &mut dyn FnMut(&[u8])) {
    let len = value.len();
    let mut i = 0;
    // Bound: every turn consumes the candidate's URL and descriptors, at least one byte.
    while i < len {
        while i < len && (is_ws(value[i]) || value[i] == b',') {
            i += 1;
        }
        let start = i;
        while i < len && !is_ws(value[i]) {
            i += 1;
        }
        let mut url = &value[start..i];
        // A URL may end in commas that separate it from the next candidate.
        let had_comma = url.last() == Some(&b',');
        while url.last() == Some(&b',') {
            url = &url[..url.len() - 1];
        }
        emit(url, f);
        if !had_comma {
            // Skip descriptors up to the next comma.
            while i < len && value[i] != b',' {
                i += 1;
            }
        }
    }
}

/// Scans a stylesheet (a `text/css` response) and puts its URLs into `out` (cleared first) as
/// [`LinkKind::Css`].
pub fn scan_css(css: &[u8], out: &mut Links) {
    out.clear();
    out.push_css(css);
}

fn emit(value: &[u8], f: &mut dyn FnMut(&[u8])) {
    let v = trim(value);
    if v.is_empty() || (v.len() >= 5 && v[..5].eq_ignore_ascii_case(b"data:")) {
        return;
    }
    f(v)
}

/// Whether the string starting at `quote` comes right after `@import` (and whitespace).
fn follows_import(css: &[u8], quote: usize) -> bool {
    let mut p = quote;
    while p > 0 && is_ws(css[p - 1]) {
        p -= 1;
    }
    p >= 7 && css[p - 7..p].eq_ignore_ascii_case(b"@import")
}

/// The index of the closing `q` of a string whose body starts at `from` (backslash escapes the
/// next byte), or the input's length if unclosed.
fn string_end(css: &[u8], from: usize, q: u8) -> usize {
    let mut p = from;
    while p < css.len() {
        match css[p] {
            b'\\' => p += 2,
            b if b == q => return p,
            _ => p += 1,
        }
    }
    css.len()
}

fn find(hay: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(&hay[from..], needle).map(|o| from + o)
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_'
}

fn is_ws(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | b'\x0c' | b'\r' | b' ')
}

fn trim(mut v: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = v {
        if !is_ws(*first) {
            break;
        }
        v = rest;
    }
    while let [rest @ .., last] = v {
        if !is_ws(*last) {
            break;
        }
        v = rest;
    }
    v
}

impl Links {
    /// Pushes every URL of `css` (raw CSS text) as [`LinkKind::Css`].
    pub(super) fn push_css(&mut self, css: &[u8]) {
        let mut urls: Vec<(usize, usize)> = Vec::new();
        css_urls(css, &mut |u| {
            // Slices of `css`: record where, push after (the closure cannot borrow self).
            let start = u.as_ptr() as usize - css.as_ptr() as usize;
            urls.push((start, start + u.len()));
        });
        for (s, e) in urls {
            self.push_plain(LinkKind::Css, &css[s..e]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn css(s: &str) -> Vec<String> {
        let mut v = Vec::new();
        css_urls(s.as_bytes(), &mut |u| {
            v.push(String::from_utf8_lossy(u).into_owned())
        });
        v
    }

    fn srcset(s: &str) -> Vec<String> {
        let mut v = Vec::new();
        srcset_urls(s.as_bytes(), &mut |u| {
            v.push(String::from_utf8_lossy(u).into_owned())
        });
        v
    }

    #[test]
    fn url_forms_imports_comments_and_strings() {
        assert_eq!(
            css("a{background:url(a.png)} b{background: URL( 'b c.png' )} c{x:url(\"d.png\")}"),
            ["a.png", "b c.png", "d.png"]
        );
        assert_eq!(
            css("@import \"s1.css\"; @import url(s2.css) screen; @IMPORT 's3.css';"),
            ["s1.css", "s2.css", "s3.css"]
        );
        assert_eq!(css("/* url(no.png) */ a{b:url(yes.png)}"), ["yes.png"]);
        assert_eq!(
            css("a{content:\"url(no.png)\"} b{c:url(yes.png)}"),
            ["yes.png"]
        );
        assert_eq!(
            css("a{b:myurl(no.png) c:url(data:image/png;base64,xx)}"),
            Vec::<String>::new()
        );
        assert_eq!(css("a{b:url('x\\'y.png')}"), ["x\\'y.png"]);
        assert_eq!(css("a{b:url()} c{d:url(  )}"), Vec::<String>::new());
        // Cut off: whatever came is taken, nothing panics.
        assert_eq!(css("a{b:url(cut.png"), ["cut.png"]);
        assert_eq!(css("a{b:url('cut"), ["cut"]);
        assert_eq!(css("/* never closed url(x)"), Vec::<String>::new());
        assert_eq!(css("@import"), Vec::<String>::new());
    }

    #[test]
    fn srcset_candidates() {
        assert_eq!(srcset("a.png 1x, b.png 2x"), ["a.png", "b.png"]);
        assert_eq!(
            srcset(" a.png, b.png , c.png 100w "),
            ["a.png", "b.png", "c.png"]
        );
        // As in HTML: a comma inside a URL is part of it.
        assert_eq!(srcset("a.png,b.png 2x"), ["a.png,b.png"]);
        assert_eq!(srcset("a.png"), ["a.png"]);
        assert_eq!(srcset(",,, a.png 1x,,"), ["a.png"]);
        assert_eq!(srcset("data:image/png;base64,xx 1x, b.png"), ["b.png"]);
        assert_eq!(srcset(""), Vec::<String>::new());
    }

    #[test]
    fn hostile_css_is_linear() {
        let soup = "url(".repeat(100_000) + &"/*".repeat(100_000) + &"'".repeat(100_000);
        let started = std::time::Instant::now();
        let n = css(&soup).len();
        assert!(n <= 100_000);
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        let commas = ",".repeat(300_000) + &" x".repeat(100_000);
        assert_eq!(srcset(&commas).len(), 1);
    }
}
