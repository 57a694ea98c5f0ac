//! CDXJ index lines, as pywb and cdxj-indexer write them, and the SURT key they sort by.
//!
//! A line is `SURT-key 14-digit-timestamp {json}`, the JSON fields in cdxj-indexer's order
//! (`url`, `mime`, `status`, `digest`, `length`, `offset`, `filename`), each a string, absent
//! when the record has no value for it, and spelled as Python's `json.dumps` spells it (`", "`
//! and `": "` separators, non-ASCII as `\uXXXX`), so our index and cdxj-indexer's agree byte for
//! byte. Revisit records have `mime` `warc/revisit`. A file is sorted bytewise, as pywb's binary
//! search expects. The [`WarcWriter`](crate::store::warc::WarcWriter) writes these lines as it
//! writes records (`WriterOptions::cdxj`); this module only formats.

use std::time::SystemTime;

use crate::datetime;
use crate::store::warc::{push_sha1_base32, sha1, Digest, RecordType};

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
}

/// Appends one index line (with its `\n`) to `out`.
pub fn format_line(out: &mut Vec<u8>, e: &IndexEntry<'_>) {
    // The URI as a reader gets it back from the record header: controls escaped, trimmed.
    let mut uri = Vec::with_capacity(e.target_uri.len());
    crate::store::warc::push_field_value(&mut uri, e.target_uri);
    let uri = String::from_utf8_lossy(&uri);
    let uri = uri.trim();
    out.extend_from_slice(surt(uri).as_bytes());
    out.push(b' ');
    out.extend_from_slice(datetime::compact_timestamp(e.date).as_bytes());
    out.push(b' ');

    let http = matches!(e.kind, RecordType::Response | RecordType::Revisit);
    let head = if http { parse_http_head(e.block) } else { None };
    let mime: Option<String> = match e.kind {
        RecordType::Revisit => Some("warc/revisit".into()),
        RecordType::Response => head.as_ref().and_then(|h| h.content_type.clone()),
        _ => Some(e.content_type.to_string()),
    }
    .map(|m| mime_token(&m).to_string());
    let status = head.as_ref().and_then(|h| h.status.clone());
    let digest = e.payload_digest.or_else(|| match e.kind {
        RecordType::Response => head.as_ref().map(|h| sha1(&e.block[h.len..])),
        RecordType::Revisit => None,
        _ => Some(sha1(e.block)),
    });

    out.push(b'{');
    let mut first = true;
    let mut field = |out: &mut Vec<u8>, name: &str, value: &[u8]| {
        if !first {
            out.extend_from_slice(b", ");
        }
        first = false;
        out.push(b'"');
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b"\": ");
        push_json_string(out, value);
    };
    field(out, "url", uri.as_bytes());
    if let Some(m) = &mime {
        field(out, "mime", m.as_bytes());
    }
    if let Some(s) = &status {
        field(out, "status", s.as_bytes());
    }
    if let Some(d) = &digest {
        let mut v = Vec::with_capacity(37);
        push_sha1_base32(&mut v, d);
        field(out, "digest", &v);
    }
    field(out, "length", e.length.to_string().as_bytes());
    field(out, "offset", e.offset.to_string().as_bytes());
    field(out, "filename", e.filename.as_bytes());
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
struct HttpHead {
    /// Head length including its blank line: the payload starts here.
    len: usize,
    status: Option<String>,
    content_type: Option<String>,
}

/// Status code (the token after the protocol) and first `Content-Type`, read the lenient way
/// warcio reads them. `None` when the block does not start like an HTTP response.
fn parse_http_head(block: &[u8]) -> Option<HttpHead> {
    if !block.starts_with(b"HTTP/") {
        return None;
    }
    let len = memchr::memmem::find(block, b"\r\n\r\n").map_or(block.len(), |i| i + 4);
    let text = String::from_utf8_lossy(&block[..len]);
    let mut lines = text.split("\r\n");
    let status_line = lines.next()?;
    let status = status_line
        .split_once(' ')
        .map(|(_, rest)| rest.trim().split(' ').next().unwrap_or("").to_string())
        .filter(|s| !s.is_empty());
    let content_type = lines
        .filter_map(|l| l.split_once(':'))
        .find(|(n, _)| n.trim().eq_ignore_ascii_case("content-type"))
        .map(|(_, v)| v.trim().to_string());
    Some(HttpHead {
        len,
        status,
        content_type,
    })
}

/// A JSON string as Python's `json.dumps` (ensure_ascii) writes it. Invalid UTF-8 becomes
/// U+FFFD.
fn push_json_string(out: &mut Vec<u8>, v: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let u16_escape = |out: &mut Vec<u8>, u: u16| {
        out.extend_from_slice(b"\\u");
        for shift in [12, 8, 4, 0] {
            out.push(HEX[usize::from((u >> shift) & 15)]);
        }
    };
    out.push(b'"');
    for c in String::from_utf8_lossy(v).chars() {
        match c {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            '\n' => out.extend_from_slice(b"\\n"),
            '\r' => out.extend_from_slice(b"\\r"),
            '\t' => out.extend_from_slice(b"\\t"),
            '\u{8}' => out.extend_from_slice(b"\\b"),
            '\u{c}' => out.extend_from_slice(b"\\f"),
            c if (c as u32) < 0x20 || (c as u32) > 0x7e => {
                let mut buf = [0u16; 2];
                for u in c.encode_utf16(&mut buf) {
                    u16_escape(out, *u);
                }
            }
            c => out.push(c as u8),
        }
    }
    out.push(b'"');
}

/// Sorts index text bytewise by line (what pywb's binary search needs).
pub fn sort_lines(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() + 1);
    write_sorted_lines(text, &mut out).expect("write to Vec");
    out
}

/// As [`sort_lines`], written to `out` as it goes (no second copy of the index in memory).
pub fn write_sorted_lines(text: &[u8], out: &mut impl std::io::Write) -> std::io::Result<()> {
    let mut lines: Vec<&[u8]> = text
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    lines.sort_unstable();
    for l in lines {
        out.write_all(l)?;
        out.write_all(b"\n")?;
    }
    Ok(())
}

/// The SURT form of an http(s) URL, as the Python `surt` package (pywb, cdxj-indexer) makes it
/// by default: scheme, user info and fragment dropped; host lowercased, a leading `www`,
/// `www1`, ... label dropped, labels reversed and comma-joined, then `)`; the default port
/// dropped; path and query percent-decoded where that is safe, lowercased; runs of `/`
/// collapsed; query parameters sorted. Other schemes come back unchanged. Not done (yet):
/// session-ID parameter stripping and `.`/`..` segment resolution (URLs from the `url` crate
/// have none).
pub fn surt(url: &str) -> String {
    let url = url.split('#').next().unwrap_or("");
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let default_port = match scheme.to_ascii_lowercase().as_str() {
        "http" => "80",
        "https" => "443",
        _ => return url.to_string(),
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
    let host = host.to_ascii_lowercase();
    let host = host.trim_end_matches('.');
    let mut out = String::with_capacity(url.len());
    if hostport.starts_with('[') {
        out.push_str(host);
    } else {
        let mut labels: Vec<&str> = host.split('.').collect();
        if labels.len() > 1 && is_www(labels[0]) {
            labels.remove(0);
        }
        labels.reverse();
        out.push_str(&labels.join(","));
    }
    if let Some(p) = port.filter(|p| !p.is_empty() && *p != default_port) {
        out.push(':');
        out.push_str(p);
    }
    out.push(')');

    let (path, query) = match path_query.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (path_query, None),
    };
    let path = canonical_component(path);
    let mut last_slash = false;
    if !path.starts_with('/') {
        out.push('/');
        last_slash = true;
    }
    for c in path.chars() {
        if c == '/' && last_slash {
            continue;
        }
        last_slash = c == '/';
        out.push(c);
    }
    if let Some(q) = query.filter(|q| !q.is_empty()) {
        let q = canonical_component(q);
        let mut params: Vec<&str> = q.split('&').collect();
        params.sort_unstable();
        out.push('?');
        out.push_str(&params.join("&"));
    }
    out
}

/// `www`, `www1`, `www22`: the label surt drops.
fn is_www(label: &str) -> bool {
    label
        .strip_prefix("www")
        .is_some_and(|d| d.bytes().all(|b| b.is_ascii_digit()))
}

/// Percent-decodes (repeatedly, as Google's canonicalizer does), re-escapes controls, space,
/// non-ASCII, `#` and `%`, then lowercases.
fn canonical_component(s: &str) -> String {
    let mut bytes = s.as_bytes().to_vec();
    // Each round shrinks the bytes or stops; a bound guards pathological nesting anyway.
    for _ in 0..16 {
        let decoded = percent_decode(&bytes);
        if decoded == bytes {
            break;
        }
        bytes = decoded;
    }
    let mut out = String::with_capacity(bytes.len());
    for b in bytes {
        if b <= 0x20 || b >= 0x7f || b == b'#' || b == b'%' {
            out.push_str(&format!("%{b:02x}"));
        } else {
            out.push(char::from(b.to_ascii_lowercase()));
        }
    }
    out
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
