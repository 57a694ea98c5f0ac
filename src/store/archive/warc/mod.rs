//! WARC/1.1 output (ISO 28500, DESIGN §7): record formatting, record IDs, digests, and the
//! size-rotated `.warc.gz` file writer.
//!
//! [`write_record`] is a pure function from byte slices to the record's uncompressed bytes; the
//! [`WarcWriter`] gzips each record as its own gzip member (so readers can seek to any record)
//! and appends it to the current file. What goes *into* a record (the exact request bytes sent,
//! the exact response bytes received, the payload SHA-1) is decided by the fetch layer; this
//! module never parses HTTP. [`reader`] reads files back for tests and fuzzing.
//!
//! Files are named `{prefix}-{timestamp}-{seq:05}.warc.gz` from our own clock and counter, never
//! from server data. A file is written as `NAME.open` and renamed to `NAME` when closed, so a
//! finished name is always a complete file.

use std::fmt;
use std::io::Write;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::SystemTime;

use md5::Md5;
use sha1::{Digest as _, Sha1};

use crate::datetime;
use crate::fetcher::spool::SpoolFile;

/// `WARC-Type` values this crate writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordType {
    Warcinfo,
    Request,
    Response,
    Metadata,
    Resource,
    Revisit,
    /// A text derived from another record (a WET file's page text).
    Conversion,
}

impl RecordType {
    pub fn as_str(self) -> &'static str {
        match self {
            RecordType::Warcinfo => "warcinfo",
            RecordType::Request => "request",
            RecordType::Response => "response",
            RecordType::Metadata => "metadata",
            RecordType::Resource => "resource",
            RecordType::Revisit => "revisit",
            RecordType::Conversion => "conversion",
        }
    }
}

/// A record's UUID; displays as `<urn:uuid:xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RecordId(pub [u8; 16]);

impl fmt::Display for RecordId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = [0u8; 36];
        let mut i = 0;
        for (n, b) in self.0.iter().enumerate() {
            if matches!(n, 4 | 6 | 8 | 10) {
                s[i] = b'-';
                i += 1;
            }
            s[i] = HEX[usize::from(b >> 4)];
            s[i + 1] = HEX[usize::from(b & 15)];
            i += 2;
        }
        // Only hex digits and dashes were written.
        let s = std::str::from_utf8(&s).expect("uuid text is ASCII");
        write!(f, "<urn:uuid:{s}>")
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Record IDs without a random-number crate: `id_n = MD5(seed || n)` with the UUIDv4 version
/// and variant bits set. With a random seed per run (the caller's job) IDs are unique across
/// runs; within a run they are unique because `n` never repeats.
#[derive(Clone, Debug)]
pub struct RecordIdGen {
    seed: [u8; 16],
    next: u64,
}

impl RecordIdGen {
    pub fn new(seed: [u8; 16]) -> Self {
        RecordIdGen { seed, next: 0 }
    }

    pub fn next_id(&mut self) -> RecordId {
        let mut h = Md5::new();
        h.update(self.seed);
        h.update(self.next.to_be_bytes());
        self.next = self.next.wrapping_add(1);
        let mut b: [u8; 16] = h.finalize().into();
        b[6] = (b[6] & 0x0f) | 0x40; // version 4
        b[8] = (b[8] & 0x3f) | 0x80; // variant 10xx (RFC 4122)
        RecordId(b)
    }
}

const BASE32: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/// RFC 4648 base32 with padding.
fn base32_into(out: &mut Vec<u8>, data: &[u8]) {
    for chunk in data.chunks(5) {
        let mut buf = [0u8; 5];
        buf[..chunk.len()].copy_from_slice(chunk);
        let v = buf.iter().fold(0u64, |a, &b| (a << 8) | u64::from(b));
        // Output characters carrying at least one input bit; the rest of the 8 are padding.
        let chars = (chunk.len() * 8).div_ceil(5);
        for i in 0..8 {
            if i < chars {
                out.push(BASE32[((v >> (35 - 5 * i)) & 31) as usize]);
            } else {
                out.push(b'=');
            }
        }
    }
}

/// A SHA-1 digest: what `WARC-Block-Digest` and `WARC-Payload-Digest` carry, and what CDXJ
/// indexes and deduplication compare.
pub type Digest = [u8; 20];

/// SHA-1 of `data`.
pub fn sha1(data: &[u8]) -> Digest {
    Sha1::digest(data).into()
}

pub(crate) fn push_sha1_base32(out: &mut Vec<u8>, digest: &Digest) {
    out.extend_from_slice(b"sha1:");
    base32_into(out, digest);
}

/// `sha1:` + RFC 4648 base32 of the digest (32 characters, no padding for 20 bytes): the form
/// warcio verifies and pywb indexes, e.g. `sha1:VL2MMHO4YXUKFWV63YHTWSBM3GXKSQ2N` for `hello`.
pub fn sha1_base32(digest: &Digest) -> String {
    let mut out = Vec::with_capacity(37);
    push_sha1_base32(&mut out, digest);
    // Only base32 alphabet bytes were written.
    String::from_utf8(out).expect("base32 is ASCII")
}

/// Parses what [`sha1_base32`] writes (`sha1:` and 32 base32 characters, upper case).
pub fn parse_sha1_base32(s: &str) -> Option<Digest> {
    let b = s.strip_prefix("sha1:")?.as_bytes();
    if b.len() != 32 {
        return None;
    }
    let mut out = [0u8; 20];
    // 32 characters of 5 bits = 160 bits, in four groups of 8 characters (40 bits, 5 bytes).
    for (g, chunk) in b.chunks_exact(8).enumerate() {
        let mut v: u64 = 0;
        for &c in chunk {
            let d = BASE32.iter().position(|&a| a == c)? as u64;
            v = (v << 5) | d;
        }
        for i in 0..5 {
            out[g * 5 + i] = (v >> (32 - 8 * i)) as u8;
        }
    }
    Some(out)
}

/// Appends a header value, percent-encoding bytes that would break the header line (CR, LF and
/// other controls). Values we write are URLs and our own text, so this is a guard, not a codec.
pub(crate) fn push_field_value(out: &mut Vec<u8>, v: &str) {
    for &b in v.as_bytes() {
        if b < 0x20 || b == 0x7f {
            out.extend_from_slice(&[b'%', HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
        } else {
            out.push(b);
        }
    }
}

pub(crate) fn push_field(out: &mut Vec<u8>, name: &str, value: &str) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    push_field_value(out, value);
    out.extend_from_slice(b"\r\n");
}

/// Appends one uncompressed WARC/1.1 record to `out`:
/// `WARC/1.1`, `WARC-Type`, `WARC-Record-ID`, `WARC-Date` (seconds), `extra_fields` in order,
/// `Content-Type`, `Content-Length`, `WARC-Block-Digest` (SHA-1 of the block), a blank line, the
/// block (the concatenation of `block`), and the record end `\r\n\r\n`. Returns the block
/// digest.
pub fn write_record(
    out: &mut Vec<u8>,
    kind: RecordType,
    id: &RecordId,
    date: SystemTime,
    extra_fields: &[(&str, &str)],
    content_type: &str,
    block: &[&[u8]],
) -> Digest {
    let mut h = Sha1::new();
    let mut len: u64 = 0;
    for part in block {
        h.update(part);
        len += part.len() as u64;
    }
    let digest: Digest = h.finalize().into();
    write_record_header(
        out,
        kind,
        id,
        date,
        extra_fields,
        content_type,
        len,
        Some(&digest),
    );
    for part in block {
        out.extend_from_slice(part);
    }
    out.extend_from_slice(RECORD_END);
    digest
}

/// What ends every WARC record, after its block.
pub(super) const RECORD_END: &[u8] = b"\r\n\r\n";

/// The header of a record whose block (`len` bytes, SHA-1 `block_digest`, if given) the caller
/// writes after it, followed by `\r\n\r\n`: for blocks too large to hold in memory, and for
/// records without `WARC-Block-Digest`.
#[allow(clippy::too_many_arguments)]
pub fn write_record_header(
    out: &mut Vec<u8>,
    kind: RecordType,
    id: &RecordId,
    date: SystemTime,
    extra_fields: &[(&str, &str)],
    content_type: &str,
    len: u64,
    block_digest: Option<&Digest>,
) {
    out.extend_from_slice(b"WARC/1.1\r\n");
    push_field(out, "WARC-Type", kind.as_str());
    out.extend_from_slice(b"WARC-Record-ID: ");
    // Writing into a Vec cannot fail.
    write!(out, "{id}").expect("write to Vec");
    out.extend_from_slice(b"\r\nWARC-Date: ");
    datetime::write_rfc3339(out, date, false);
    out.extend_from_slice(b"\r\n");
    for (name, value) in extra_fields {
        push_field(out, name, value);
    }
    push_field(out, "Content-Type", content_type);
    write!(out, "Content-Length: {len}\r\n").expect("write to Vec");
    if let Some(d) = block_digest {
        out.extend_from_slice(b"WARC-Block-Digest: ");
        push_sha1_base32(out, d);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

/// Who wrote the file, and how: the `warcinfo` record that opens each file.
#[derive(Clone, Debug, Default)]
pub struct WarcInfo {
    pub software: String,
    pub hostname: String,
    pub operator: Option<String>,
    pub description: Option<String>,
    /// The command line that started the crawl, written as `command-line`.
    pub command_line: Option<String>,
    /// Settings in force (`max-pages`, `user-agent`, ...), one field each, in order. Names are
    /// reduced to letters, digits, `-`, `_` and `.` so they stay field names.
    pub options: Vec<(String, String)>,
}

impl WarcInfo {
    /// The `application/warc-fields` block.
    pub(crate) fn block(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(256);
        push_field(&mut b, "software", &self.software);
        push_field(&mut b, "hostname", &self.hostname);
        push_field(&mut b, "format", "WARC File Format 1.1");
        push_field(
            &mut b,
            "conformsTo",
            "http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/",
        );
        if let Some(op) = &self.operator {
            push_field(&mut b, "operator", op);
        }
        if let Some(d) = &self.description {
            push_field(&mut b, "description", d);
        }
        if let Some(c) = &self.command_line {
            push_field(&mut b, "command-line", c);
        }
        for (name, value) in &self.options {
            let name: String = name
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                        c
                    } else {
                        '-'
                    }
                })
                .collect();
            let name = if name.is_empty() { "option" } else { &name };
            push_field(&mut b, name, value);
        }
        b
    }
}

/// Why a response record holds less than the whole response (`WARC-Truncated`, ISO 28500
/// §5.13): the fetch layer stopped reading at a size cap, a time limit, or the peer went away.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Truncated {
    /// The size limit was reached.
    Length,
    /// The time limit was reached.
    Time,
    /// The network connection was lost.
    Disconnect,
    /// Some other reason.
    Unspecified,
}

impl Truncated {
    /// The field value: `length`, `time`, `disconnect` or `unspecified`.
    pub fn as_str(self) -> &'static str {
        match self {
            Truncated::Length => "length",
            Truncated::Time => "time",
            Truncated::Disconnect => "disconnect",
            Truncated::Unspecified => "unspecified",
        }
    }
}

/// One HTTP exchange as it went over the wire.
#[derive(Clone, Copy)]
pub struct Exchange<'a> {
    pub target_uri: &'a str,
    pub date: SystemTime,
    pub ip: Option<IpAddr>,
    /// The exact request bytes sent.
    pub request: &'a [u8],
    /// The exact response bytes received: head and body, transfer coding intact.
    pub response: &'a [u8],
    /// SHA-1 of the payload, written as `WARC-Payload-Digest` when `Some`. warcio (and the WARC
    /// readers built like it) check it against the bytes after the response head *as stored*:
    /// chunk framing and content coding included (see the warcio test below).
    pub payload_digest: Option<Digest>,
    /// Written as `WARC-Truncated` on the response record when the response is incomplete.
    pub truncated: Option<Truncated>,
    /// The payload, when it is in a spool file rather than in `response` (which is then the
    /// head alone): the writer streams it into the record.
    pub spooled: Option<&'a dyn SpoolFile>,
    /// The whole response, deflated ahead (`response` is then the head alone, for the index).
    pub deflated: Option<&'a DeflatedBlock>,
    /// Where in `response` its payload starts, when the payload is compressed already
    /// ([`compressed_payload`]): the record stores it instead of deflating it again. (With
    /// `spooled`, `response.len()`: the payload is all in the spool.)
    pub stored_from: Option<usize>,
}

impl From<crate::fetcher::Truncation> for Truncated {
    fn from(t: crate::fetcher::Truncation) -> Truncated {
        use crate::fetcher::Truncation;
        match t {
            Truncation::Length => Truncated::Length,
            Truncation::Time => Truncated::Time,
            Truncation::Disconnect => Truncated::Disconnect,
            Truncation::Unspecified => Truncated::Unspecified,
        }
    }
}

/// `WARC-Profile` of a revisit record whose payload is identical (by digest) to one stored
/// earlier.
pub const REVISIT_PROFILE_IDENTICAL_PAYLOAD: &str =
    "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest";

/// `WARC-Profile` of a revisit record for a `304 Not Modified` answer to a conditional
/// request: the server says the copy stored earlier is current.
pub const REVISIT_PROFILE_SERVER_NOT_MODIFIED: &str =
    "http://netpreserve.org/warc/1.1/revisit/server-not-modified";

/// Why a fetch is written as a revisit record (WARC 1.1 §6.7.2 and §6.7.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RevisitProfile {
    /// The payload's digest equals one stored before.
    IdenticalPayload,
    /// The server answered a conditional request with 304.
    ServerNotModified,
}

impl RevisitProfile {
    pub fn uri(self) -> &'static str {
        match self {
            RevisitProfile::IdenticalPayload => REVISIT_PROFILE_IDENTICAL_PAYLOAD,
            RevisitProfile::ServerNotModified => REVISIT_PROFILE_SERVER_NOT_MODIFIED,
        }
    }
}

/// A fetch whose payload was stored before: written as a `revisit` record holding the
/// response head only, plus the `request` record.
#[derive(Clone, Copy, Debug)]
pub struct Revisit<'a> {
    pub profile: RevisitProfile,
    pub target_uri: &'a str,
    pub date: SystemTime,
    pub ip: Option<IpAddr>,
    /// The exact request bytes sent.
    pub request: &'a [u8],
    /// The response head as received, through its blank line.
    pub response_head: &'a [u8],
    /// SHA-1 of the payload (the same digest as the original's `WARC-Payload-Digest`).
    pub payload_digest: Digest,
    /// `WARC-Target-URI` and `WARC-Date` of the record that holds the payload.
    pub refers_to_uri: &'a str,
    pub refers_to_date: SystemTime,
    /// `WARC-Refers-To`: that record's `WARC-Record-ID` (`<urn:uuid:…>`), where known.
    pub refers_to_record: Option<&'a str>,
}

/// Where one record landed: the file's final name (no directory; the file is `NAME.open`
/// until it closes), the offset of the record's gzip member and its compressed length.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordPos {
    pub file: Arc<str>,
    pub offset: u64,
    pub length: u64,
}

/// Where an exchange's two records landed (`response` is the revisit record for a revisit).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Written {
    pub request: RecordPos,
    pub response: RecordPos,
    /// The response (or revisit) record's `WARC-Record-ID`.
    pub response_id: RecordId,
}

/// A WARC file's name: `{prefix}-{stamp}-{seq:05}.warc.gz`.
pub fn file_name(prefix: &str, stamp: &str, seq: u32) -> String {
    format!("{prefix}-{stamp}-{seq:05}.warc.gz")
}

/// The prefix and sequence number of a name [`file_name`] made (with `.open` or not); `None`
/// for any other name. Read from the right, so a prefix may hold `-`.
pub fn parse_file_name(name: &str) -> Option<(&str, u32)> {
    let stem = name.strip_suffix(".open").unwrap_or(name);
    let stem = stem.strip_suffix(".warc.gz")?;
    let (head, seq) = stem.rsplit_once('-')?;
    let (prefix, stamp) = head.rsplit_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if prefix.is_empty() || !digits(stamp) || !digits(seq) {
        return None;
    }
    Some((prefix, seq.parse().ok()?))
}

mod gzip;
#[cfg(isal_engine)]
mod isal;
pub mod reader;
mod spooled;
mod stored;
pub mod stream;
mod writer;

pub use gzip::{compressed_payload, BlockDeflater, DeflatedBlock, GzMember};

pub use writer::{WarcWriter, WriterOptions};

#[cfg(test)]
mod tests;
