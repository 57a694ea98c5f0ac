//! CDXJ index lines, as pywb and cdxj-indexer write them, and the SURT key they sort by.
//!
//! A line is `SURT-key 14-digit-timestamp {json}`, the JSON fields in cdxj-indexer's order
//! (`url`, `mime`, `status`, `digest`, `length`, `offset`, `filename`), each a string, absent
//! when the record has no value for it, and spelled as Python's `json.dumps` spells it (`", "`
//! and `": "` separators, non-ASCII as `\uXXXX`), so our index and cdxj-indexer's agree byte for
//! byte; a page's response line may end with our own `sketch` field (the min-hash sketch of
//! its main text, 128 lowercase hex digits, crawl.log's last column), which cdxj-indexer
//! does not write. Revisit records have `mime`
//! `warc/revisit`. A file is sorted bytewise, as pywb's binary
//! search expects. The [`WarcWriter`](crate::store::archive::warc::WarcWriter) writes these lines as it
//! writes records (`WriterOptions::cdxj`); this module only formats.

use std::borrow::Cow;
use std::time::SystemTime;

use crate::codec::push_u64;
use crate::content::Sketch;
use crate::datetime;
use crate::store::archive::warc::{push_sha1_base32, sha1, Digest, RecordType};

/// Hex digits as Python writes them in `\u` escapes and as `surt` writes `%` escapes.
const LOWER_HEX: &[u8; 16] = b"0123456789abcdef";

/// What an index line is made of: one response, revisit or resource record and where it is.
#[derive(Clone, Copy, Debug)]
pub struct IndexEntry<'a> {
    /// `Response`, `Revisit` or `Resource`.
    pub kind: RecordType,
    /// The `WARC-Target-URI` value as the record holds it.
    pub target_uri: &'a str,
    pub date: SystemTime,
    /// The record block: an HTTP response (head and payload as stored) for a response, the
    /// response head for a revisit, the resource itself for a resource.
    pub block: &'a [u8],
    /// The record's `Content-Type`: used as `mime` for resource records only.
    pub content_type: &'a str,
    /// The `WARC-Payload-Digest`; when `None` the digest is computed as warcio does (over the
    /// bytes after the HTTP head, or the whole block of a resource).
    pub payload_digest: Option<Digest>,
    /// The WARC file's name (no directory), the gzip member's offset and compressed length.
    pub filename: &'a str,
    pub offset: u64,
    pub length: u64,
    /// The page's sketch (a scanned HTML page's response record): written as a last field
    /// `"sketch": "128 hex digits"`, after cdxj-indexer's. pywb reads the fields it knows by
    /// name and passes others through, so replay is unchanged.
    pub sketch: Option<Sketch>,
}

/// Appends one index line (with its `\n`) to `out`.
pub fn format_line(out: &mut Vec<u8>, e: &IndexEntry<'_>) {
    // The URI as a reader gets it back from the record header: controls escaped, trimmed.
    // Escaping keeps UTF-8 valid (it only replaces ASCII bytes), and most URIs need none.
    let uri: Cow<'_, str> = if e.target_uri.bytes().any(|b| b < 0x20 || b == 0x7f) {
        let mut v = Vec::with_capacity(e.target_uri.len() + 8);
        crate::store::archive::warc::push_field_value(&mut v, e.target_uri);
        Cow::Owned(String::from_utf8_lossy(&v).into_owned())
    } else {
        Cow::Borrowed(e.target_uri)
    };
    let uri = uri.trim();
    push_surt(out, uri);
    out.push(b' ');
    datetime::push_compact_timestamp(out, e.date);
    out.push(b' ');

    let http = matches!(e.kind, RecordType::Response | RecordType::Revisit);
    let head_text = if http { http_head_text(e.block) } else { None };
    let head = head_text
        .as_ref()
        .map(|(len, text)| head_fields(*len, text));
    let mime = match e.kind {
        RecordType::Revisit => Some("warc/revisit"),
        RecordType::Response => head.as_ref().and_then(|h| h.content_type),
        _ => Some(e.content_type),
    }
    .map(mime_token);
    let status = head.as_ref().and_then(|h| h.status);
    let digest = e.payload_digest.or_else(|| match e.kind {
        RecordType::Response => head.as_ref().map(|h| sha1(&e.block[h.len..])),
        RecordType::Revisit => None,
        _ => Some(sha1(e.block)),
    });

    out.push(b'{');
    let mut first = true;
    // Writes `"name": ` (after `, ` but for the first field); the value follows.
    let mut key = |out: &mut Vec<u8>, name: &str| {
        if !first {
            out.extend_from_slice(b", ");
        }
        first = false;
        out.push(b'"');
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b"\": ");
    };
    key(out, "url");
    push_json_string(out, uri.as_bytes());
    if let Some(m) = mime {
        key(out, "mime");
        push_json_string(out, m.as_bytes());
    }
    if let Some(s) = status {
        key(out, "status");
        push_json_string(out, s.as_bytes());
    }
    // The values below are digits and base32: nothing in them needs escaping.
    if let Some(d) = &digest {
        key(out, "digest");
        out.push(b'"');
        push_sha1_base32(out, d);
        out.push(b'"');
    }
    for (name, v) in [("length", e.length), ("offset", e.offset)] {
        key(out, name);
        out.push(b'"');
        push_u64(out, v);
        out.push(b'"');
    }
    key(out, "filename");
    push_json_string(out, e.filename.as_bytes());
    if let Some(s) = &e.sketch {
        key(out, "sketch");
        out.push(b'"');
        s.push_hex(out);
        out.push(b'"');
    }
    out.extend_from_slice(b"}\n");
}

/// `text/html; charset=utf-8` -> `text/html`: up to the first `;` or whitespace.
fn mime_token(v: &str) -> &str {
    v.split(|c: char| c == ';' || c.is_whitespace())
        .next()
        .unwrap_or("")
        .trim()
}

/// What the index takes from an HTTP response head.
struct HttpHead<'a> {
    /// Head length including its blank line: the payload starts here.
    len: usize,
    status: Option<&'a str>,
    content_type: Option<&'a str>,
}

/// The head of a block that starts like an HTTP response, as text (lossy: warcio reads it
/// that way; borrowed when it is valid UTF-8, as it nearly always is), and its length
/// including the blank line.
fn http_head_text(block: &[u8]) -> Option<(usize, Cow<'_, str>)> {
    if !block.starts_with(b"HTTP/") {
        return None;
    }
    let len = memchr::memmem::find(block, b"\r\n\r\n").map_or(block.len(), |i| i + 4);
    Some((len, String::from_utf8_lossy(&block[..len])))
}

/// Status code (the token after the protocol) and first `Content-Type`, read the lenient way
/// warcio reads them.
fn head_fields(len: usize, text: &str) -> HttpHead<'_> {
    let mut lines = text.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split_once(' '))
        .map(|(_, rest)| rest.trim().split(' ').next().unwrap_or(""))
        .filter(|s| !s.is_empty());
    let content_type = lines
        .filter_map(|l| l.split_once(':'))
        .find(|(n, _)| n.trim().eq_ignore_ascii_case("content-type"))
        .map(|(_, v)| v.trim());
    HttpHead {
        len,
        status,
        content_type,
    }
}

/// A JSON string as Python's `json.dumps` (ensure_ascii) writes it. Invalid UTF-8 becomes
/// U+FFFD.
pub(crate) fn push_json_string(out: &mut Vec<u8>, v: &[u8]) {
    out.push(b'"');
    if v.iter()
        .all(|&b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\')
    {
        // Printable ASCII with nothing to escape: the common case, as it is.
        out.extend_from_slice(v);
        out.push(b'"');
        return;
    }
    // Invalid UTF-8 becomes U+FFFD, as `String::from_utf8_lossy` makes it (one per maximal
    // invalid sequence). Valid text (a page's Markdown, nearly always) is checked by
    // `from_utf8`, which reads ASCII a word at a time: `utf8_chunks` decodes byte by byte.
    match std::str::from_utf8(v) {
        Ok(s) => push_json_chars(out, s),
        Err(_) => {
            for chunk in v.utf8_chunks() {
                push_json_chars(out, chunk.valid());
                if !chunk.invalid().is_empty() {
                    push_u16_escape(out, 0xfffd);
                }
            }
        }
    }
    out.push(b'"');
}

/// `s` escaped for a JSON string: runs of printable ASCII are copied whole.
fn push_json_chars(out: &mut Vec<u8>, s: &str) {
    let b = s.as_bytes();
    let (mut i, mut run) = (0, 0);
    // Bound: every turn moves `i` on by at least one byte.
    while i < b.len() {
        i = plain_json_run(b, i);
        let Some(&c) = b.get(i) else {
            break;
        };
        if (0x20..0x7f).contains(&c) && c != b'"' && c != b'\\' {
            i += 1;
            continue;
        }
        out.extend_from_slice(&b[run..i]);
        match c {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            _ => {
                // `i` is at a char's start: runs and escapes end at char ends.
                let Some(ch) = s[i..].chars().next() else {
                    break;
                };
                let mut buf = [0u16; 2];
                for u in ch.encode_utf16(&mut buf) {
                    push_u16_escape(out, *u);
                }
                i += ch.len_utf8();
                run = i;
                continue;
            }
        }
        i += 1;
        run = i;
    }
    out.extend_from_slice(&b[run..]);
}

/// `\uXXXX`, lowercase hex.
fn push_u16_escape(out: &mut Vec<u8>, u: u16) {
    out.extend_from_slice(b"\\u");
    for shift in [12, 8, 4, 0] {
        out.push(LOWER_HEX[usize::from((u >> shift) & 15)]);
    }
}

/// Where the run of bytes a JSON string copies as they are (printable ASCII but `"` and `\`)
/// from `from` may end, 16 bytes at a time: a page's Markdown line is mostly such runs, and a
/// test per byte was most of its cost. SSE2 is part of every x86-64 CPU.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
fn plain_json_run(bytes: &[u8], from: usize) -> usize {
    // SAFETY: the build targets SSE2 (the `cfg` above).
    unsafe { plain_json_run_sse2(bytes, from) }
}

#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[target_feature(enable = "sse2")]
fn plain_json_run_sse2(bytes: &[u8], mut from: usize) -> usize {
    use std::arch::x86_64::{
        _mm_and_si128, _mm_cmpeq_epi8, _mm_cmpgt_epi8, _mm_cmplt_epi8, _mm_loadu_si128,
        _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };
    let (below, above) = (_mm_set1_epi8(0x1f), _mm_set1_epi8(0x7f));
    let (quote, backslash) = (_mm_set1_epi8(b'"' as i8), _mm_set1_epi8(b'\\' as i8));
    // Bound: every turn moves `from` on by 16 or returns.
    while from + 16 <= bytes.len() {
        // SAFETY: `from + 16 <= bytes.len()`: the 16 bytes read are inside `bytes`.
        let v = unsafe { _mm_loadu_si128(bytes.as_ptr().add(from).cast()) };
        // Signed: bytes from 0x80 are negative, so below 0x20 as well as outside.
        let printable = _mm_and_si128(_mm_cmpgt_epi8(v, below), _mm_cmplt_epi8(v, above));
        let escaped = _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash));
        let stop =
            !(_mm_movemask_epi8(printable) as u32) & 0xffff | _mm_movemask_epi8(escaped) as u32;
        if stop != 0 {
            return from + stop.trailing_zeros() as usize;
        }
        from += 16;
    }
    from
}

/// Elsewhere the byte loop does it all.
#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
fn plain_json_run(_bytes: &[u8], from: usize) -> usize {
    from
}

/// Sorts index text bytewise by line (what pywb's binary search needs), in memory: the
/// reference the bounded-memory sort ([`super::line_sort`]) is tested against.
#[cfg(test)]
pub(crate) fn sort_lines(text: &[u8]) -> Vec<u8> {
    let mut lines: Vec<&[u8]> = text
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    lines.sort_unstable();
    let mut out = Vec::with_capacity(text.len() + 1);
    for l in lines {
        out.extend_from_slice(l);
        out.push(b'\n');
    }
    out
}

/// The SURT form of an http(s) URL, as the Python `surt` package (pywb, cdxj-indexer) makes it
/// by default: scheme, user info and fragment dropped; host lowercased, a leading `www`,
/// `www1`, ... label dropped, labels reversed and comma-joined, then `)`; the default port
/// dropped; path and query percent-decoded where that is safe, lowercased; runs of `/`
/// collapsed and a trailing `/` dropped (but for `/` alone); query parameters sorted. Other
/// schemes come back unchanged. Not done (yet): session-ID parameter stripping and `.`/`..`
/// segment resolution (URLs from the `url` crate have none).
pub fn surt(url: &str) -> String {
    let mut out = Vec::with_capacity(url.len());
    push_surt(&mut out, url);
    // Only bytes of `url` and ASCII are pushed, a whole UTF-8 sequence at a time.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Appends [`surt`]`(url)` to `out`. Allocates only for what needs it: percent escapes to
/// decode, several query parameters to sort.
fn push_surt(out: &mut Vec<u8>, url: &str) {
    let url = url.split('#').next().unwrap_or("");
    let Some((scheme, rest)) = url.split_once("://") else {
        out.extend_from_slice(url.as_bytes());
        return;
    };
    let default_port = if scheme.eq_ignore_ascii_case("http") {
        "80"
    } else if scheme.eq_ignore_ascii_case("https") {
        "443"
    } else {
        out.extend_from_slice(url.as_bytes());
        return;
    };
    let auth_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, path_query) = rest.split_at(auth_end);
    let hostport = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
        match v6.split_once(']') {
            Some((h, p)) => (h, p.strip_prefix(':')),
            None => (v6, None),
        }
    } else {
        match hostport.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (hostport, None),
        }
    };
    let host = host.trim_end_matches('.');
    let lower = |out: &mut Vec<u8>, s: &str| out.extend(s.bytes().map(|b| b.to_ascii_lowercase()));
    if hostport.starts_with('[') {
        lower(out, host);
    } else {
        // Labels reversed and comma-joined, a leading `www` label dropped.
        let labels = host.split('.').count();
        let drop_www = labels > 1 && host.split('.').next().is_some_and(is_www);
        for (i, label) in host.rsplit('.').enumerate() {
            if drop_www && i + 1 == labels {
                break;
            }
            if i > 0 {
                out.push(b',');
            }
            lower(out, label);
        }
    }
    if let Some(p) = port.filter(|p| !p.is_empty() && *p != default_port) {
        out.push(b':');
        out.extend_from_slice(p.as_bytes());
    }
    out.push(b')');

    let (path, query) = match path_query.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (path_query, None),
    };
    // Re-escaping (`push_canonical`) never makes a `/`: runs of `/` are the decoded path's.
    let path = percent_decoded(path);
    let path_start = out.len();
    let mut last_slash = false;
    if path.first() != Some(&b'/') {
        out.push(b'/');
        last_slash = true;
    }
    for &b in path.iter() {
        if b == b'/' && last_slash {
            continue;
        }
        last_slash = b == b'/';
        push_canonical(out, b);
    }
    // A trailing `/` goes, unless the path is `/` alone (`path_strip_trailing_slash_unless_
    // empty`): the key pywb computes for `/docs/` is that of `/docs`.
    if out.len() - path_start > 1 && out.last() == Some(&b'/') {
        out.pop();
    }
    if let Some(q) = query.filter(|q| !q.is_empty()) {
        out.push(b'?');
        let q = percent_decoded(q);
        if q.contains(&b'&') {
            let mut canonical = Vec::with_capacity(q.len());
            for &b in q.iter() {
                push_canonical(&mut canonical, b);
            }
            let mut params: Vec<&[u8]> = canonical.split(|&b| b == b'&').collect();
            params.sort_unstable();
            out.extend_from_slice(&params.join(&b'&'));
        } else {
            for &b in q.iter() {
                push_canonical(out, b);
            }
        }
    }
}

/// Percent-decoded, repeatedly (as Google's canonicalizer does); borrowed when there is
/// nothing to decode.
fn percent_decoded(s: &str) -> Cow<'_, [u8]> {
    if !s.contains('%') {
        return Cow::Borrowed(s.as_bytes());
    }
    let mut bytes = s.as_bytes().to_vec();
    // Each round shrinks the bytes or stops; a bound guards pathological nesting anyway.
    for _ in 0..16 {
        let decoded = percent_decode(&bytes);
        if decoded == bytes {
            break;
        }
        bytes = decoded;
    }
    Cow::Owned(bytes)
}

/// Appends one decoded byte of a path or query: controls, space, non-ASCII, `#` and `%`
/// escaped again, the rest lowercased.
fn push_canonical(out: &mut Vec<u8>, b: u8) {
    if b <= 0x20 || b >= 0x7f || b == b'#' || b == b'%' {
        out.extend_from_slice(&[
            b'%',
            LOWER_HEX[usize::from(b >> 4)],
            LOWER_HEX[usize::from(b & 15)],
        ]);
    } else {
        out.push(b.to_ascii_lowercase());
    }
}

/// `www`, `www1`, `www22` in any case: the label surt drops.
fn is_www(label: &str) -> bool {
    let b = label.as_bytes();
    b.len() >= 3 && b[..3].eq_ignore_ascii_case(b"www") && b[3..].iter().all(u8::is_ascii_digit)
}

fn percent_decode(b: &[u8]) -> Vec<u8> {
    let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push(h * 16 + l);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests;
