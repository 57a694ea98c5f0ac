//! WARC/1.1 output (ISO 28500, DESIGN §7): record formatting, record IDs, digests, and the
//! size-rotated `.warc.gz` file writer.
//!
//! [`write_record`] is a pure function from byte slices to the record's uncompressed bytes; the
//! [`WarcWriter`] gzips each record as its own gzip member (so readers can seek to any record)
//! and appends it to the current file. What goes *into* a record (the exact request bytes sent,
//! the exact response bytes received, the payload MD5) is decided by the fetch layer; this
//! module never parses HTTP. [`reader`] reads files back for tests and fuzzing.
//!
//! Files are named `{prefix}-{timestamp}-{seq:05}.warc.gz` from our own clock and counter, never
//! from server data. A file is written as `NAME.open` and renamed to `NAME` when closed, so a
//! finished name is always a complete file.

use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use flate2::{Compress, Compression, Crc, FlushCompress, Status};
use md5::{Digest, Md5};

use crate::datetime;

/// Buffer size of the file writer: records are appended sequentially, so large writes are best.
const FILE_BUFFER_BYTES: usize = 256 * 1024;
/// How many names to try when a file name already exists (same prefix, same second).
const MAX_NAME_ATTEMPTS: u32 = 1000;
/// Upper bound on deflate calls for one record. Each call gets at least the worst-case output
/// size of the remaining input, so two calls always suffice; the bound guards a broken backend.
const MAX_DEFLATE_ROUNDS: usize = 16;
/// Extra output room beyond the input length: deflate's worst case is stored blocks, 5 bytes per
/// 16 KiB block plus a few bytes of stream end.
const DEFLATE_SLACK: usize = 64;
/// Reused record buffers keep at most this much capacity between records, so one huge page
/// does not pin its size in memory for the rest of the crawl.
const RETAIN_BUFFER_BYTES: usize = 4 * 1024 * 1024;

/// The gzip member header we write: magic, CM=deflate, no flags, MTIME=0 (so output does not
/// depend on the clock), XFL (patched per level), OS=255 (unknown).
const GZIP_HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255];

/// `WARC-Type` values this crate writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordType {
    Warcinfo,
    Request,
    Response,
    Metadata,
    Resource,
}

impl RecordType {
    pub fn as_str(self) -> &'static str {
        match self {
            RecordType::Warcinfo => "warcinfo",
            RecordType::Request => "request",
            RecordType::Response => "response",
            RecordType::Metadata => "metadata",
            RecordType::Resource => "resource",
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

fn push_md5_base32(out: &mut Vec<u8>, digest: &[u8; 16]) {
    out.extend_from_slice(b"md5:");
    base32_into(out, digest);
}

/// `md5:` + RFC 4648 base32 of the digest (the form warcio verifies), e.g.
/// `md5:2QJHVB6SOU5TRVDIBOMOYCAJ7M======`.
pub fn md5_base32(digest: &[u8; 16]) -> String {
    let mut out = Vec::with_capacity(36);
    push_md5_base32(&mut out, digest);
    // Only base32 alphabet bytes were written.
    String::from_utf8(out).expect("base32 is ASCII")
}

/// Appends a header value, percent-encoding bytes that would break the header line (CR, LF and
/// other controls). Values we write are URLs and our own text, so this is a guard, not a codec.
fn push_field_value(out: &mut Vec<u8>, v: &str) {
    for &b in v.as_bytes() {
        if b < 0x20 || b == 0x7f {
            out.extend_from_slice(&[b'%', HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
        } else {
            out.push(b);
        }
    }
}

fn push_field(out: &mut Vec<u8>, name: &str, value: &str) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    push_field_value(out, value);
    out.extend_from_slice(b"\r\n");
}

/// Appends one uncompressed WARC/1.1 record to `out`:
/// `WARC/1.1`, `WARC-Type`, `WARC-Record-ID`, `WARC-Date` (seconds), `extra_fields` in order,
/// `Content-Type`, `Content-Length`, `WARC-Block-Digest` (MD5 of the block), a blank line, the
/// block (the concatenation of `block`), and the record end `\r\n\r\n`.
pub fn write_record(
    out: &mut Vec<u8>,
    kind: RecordType,
    id: &RecordId,
    date: SystemTime,
    extra_fields: &[(&str, &str)],
    content_type: &str,
    block: &[&[u8]],
) {
    let mut h = Md5::new();
    let mut len: u64 = 0;
    for part in block {
        h.update(part);
        len += part.len() as u64;
    }
    let digest: [u8; 16] = h.finalize().into();

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
    out.extend_from_slice(b"WARC-Block-Digest: ");
    push_md5_base32(out, &digest);
    out.extend_from_slice(b"\r\n\r\n");
    for part in block {
        out.extend_from_slice(part);
    }
    out.extend_from_slice(b"\r\n\r\n");
}

/// Who wrote the file: the `warcinfo` record that opens each file.
#[derive(Clone, Debug)]
pub struct WarcInfo {
    pub software: String,
    pub hostname: String,
    pub operator: Option<String>,
    pub description: Option<String>,
}

impl WarcInfo {
    /// The `application/warc-fields` block.
    fn block(&self) -> Vec<u8> {
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
        b
    }
}

/// One HTTP exchange as it went over the wire.
#[derive(Clone, Copy, Debug)]
pub struct Exchange<'a> {
    pub target_uri: &'a str,
    pub date: SystemTime,
    pub ip: Option<IpAddr>,
    /// The exact request bytes sent.
    pub request: &'a [u8],
    /// The exact response bytes received: head and body, transfer coding intact.
    pub response: &'a [u8],
    /// MD5 of the payload, written as `WARC-Payload-Digest` when `Some`. warcio (and the WARC
    /// readers built like it) check it against the bytes after the response head *as stored*:
    /// chunk framing and content coding included (see the warcio test below).
    pub payload_digest: Option<[u8; 16]>,
}

/// Reusable gzip-member encoder: one `Compress`, reset per record.
struct GzMember {
    compress: Compress,
    header: [u8; 10],
}

impl GzMember {
    fn new(level: u32) -> Self {
        let level = level.min(9);
        let mut header = GZIP_HEADER;
        header[8] = match level {
            9 => 2, // XFL: maximum compression
            1 => 4, // XFL: fastest
            _ => 0,
        };
        GzMember {
            compress: Compress::new(Compression::new(level), false),
            header,
        }
    }

    /// Appends `data` to `out` as one complete gzip member.
    fn encode(&mut self, data: &[u8], out: &mut Vec<u8>) -> io::Result<()> {
        self.compress.reset();
        out.extend_from_slice(&self.header);
        let start_in = self.compress.total_in();
        let mut done = false;
        for _ in 0..MAX_DEFLATE_ROUNDS {
            let consumed = (self.compress.total_in() - start_in) as usize;
            let rest = &data[consumed..];
            out.reserve(rest.len() + rest.len() / 1000 + DEFLATE_SLACK);
            let status = self
                .compress
                .compress_vec(rest, out, FlushCompress::Finish)
                .map_err(|_| io::Error::other("deflate failed"))?;
            if status == Status::StreamEnd {
                done = true;
                break;
            }
        }
        if !done {
            return Err(io::Error::other("deflate did not finish"));
        }
        let mut crc = Crc::new();
        crc.update(data);
        out.extend_from_slice(&crc.sum().to_le_bytes());
        // ISIZE is the input length modulo 2^32 (RFC 1952).
        out.extend_from_slice(&(data.len() as u32).to_le_bytes());
        Ok(())
    }
}

/// The file currently being appended to.
struct OpenFile {
    out: BufWriter<File>,
    /// `NAME.open` while writing.
    open_path: PathBuf,
    /// `NAME`, once closed.
    final_path: PathBuf,
    bytes: u64,
    warcinfo_id: RecordId,
}

/// Where the writer stands. A failed write leaves a file whose end may be a partial record, so
/// the error is sticky: that file keeps its `.open` name and nothing more is written.
enum FileState {
    Open(OpenFile),
    Failed(io::ErrorKind),
    Finished,
}

/// Appends exchanges to size-rotated `.warc.gz` files, one gzip member per record.
pub struct WarcWriter {
    dir: PathBuf,
    prefix: String,
    max_file_bytes: u64,
    info: WarcInfo,
    ids: RecordIdGen,
    gz: GzMember,
    /// Next file sequence number.
    seq: u32,
    state: FileState,
    /// Completed (renamed) files, in order; the open one is added when it closes.
    files: Vec<PathBuf>,
    bytes_written: u64,
    /// Reused per record: uncompressed record bytes, and the compressed members of an exchange.
    record_buf: Vec<u8>,
    gz_buf: Vec<u8>,
    /// Reused per exchange: the text of the generated field values.
    field_text: Vec<u8>,
}

impl WarcWriter {
    /// Opens the first file (writing its `warcinfo` record) in `dir`, which must exist and be
    /// writable. `id_seed` should differ per run (e.g. from the clock, pid and host name).
    pub fn create(
        dir: &Path,
        prefix: &str,
        max_file_bytes: u64,
        gzip_level: u32,
        info: WarcInfo,
        id_seed: [u8; 16],
    ) -> io::Result<Self> {
        if !fs::metadata(dir)?.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                "WARC output path is not a directory",
            ));
        }
        let mut w = WarcWriter {
            dir: dir.to_path_buf(),
            prefix: prefix.to_string(),
            max_file_bytes,
            info,
            ids: RecordIdGen::new(id_seed),
            gz: GzMember::new(gzip_level),
            seq: 0,
            state: FileState::Finished,
            files: Vec::new(),
            bytes_written: 0,
            record_buf: Vec::with_capacity(64 * 1024),
            gz_buf: Vec::with_capacity(64 * 1024),
            field_text: Vec::with_capacity(256),
        };
        w.open_next()?;
        Ok(w)
    }

    /// Picks a fresh name and opens `NAME.open` exclusively, so two runs can never share a file.
    fn open_named(&mut self) -> io::Result<(File, PathBuf, PathBuf)> {
        let stamp = datetime::compact_timestamp(SystemTime::now());
        for _ in 0..MAX_NAME_ATTEMPTS {
            let name = format!("{}-{}-{:05}.warc.gz", self.prefix, stamp, self.seq);
            self.seq = self.seq.wrapping_add(1);
            let final_path = self.dir.join(&name);
            let open_path = self.dir.join(format!("{name}.open"));
            if final_path.exists() {
                continue;
            }
            match OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&open_path)
            {
                Ok(f) => return Ok((f, open_path, final_path)),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "no free WARC file name",
        ))
    }

    /// Opens the next file and writes its `warcinfo` record.
    fn open_next(&mut self) -> io::Result<()> {
        let (file, open_path, final_path) = self.open_named()?;
        let id = self.ids.next_id();
        let block = self.info.block();
        let filename = final_path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        self.record_buf.clear();
        write_record(
            &mut self.record_buf,
            RecordType::Warcinfo,
            &id,
            SystemTime::now(),
            &[("WARC-Filename", &filename)],
            "application/warc-fields",
            &[&block],
        );
        self.gz_buf.clear();
        self.gz.encode(&self.record_buf, &mut self.gz_buf)?;
        let mut f = OpenFile {
            out: BufWriter::with_capacity(FILE_BUFFER_BYTES, file),
            open_path,
            final_path,
            bytes: 0,
            warcinfo_id: id,
        };
        if let Err(e) = f.out.write_all(&self.gz_buf) {
            self.state = FileState::Failed(e.kind());
            return Err(e);
        }
        f.bytes = self.gz_buf.len() as u64;
        self.bytes_written += f.bytes;
        self.state = FileState::Open(f);
        Ok(())
    }

    /// Flushes and renames the open file to its final name.
    fn close_current(&mut self) -> io::Result<()> {
        match std::mem::replace(&mut self.state, FileState::Finished) {
            FileState::Open(f) => {
                let res = f
                    .out
                    .into_inner()
                    .map_err(|e| e.into_error())
                    .and_then(|file| file.sync_all())
                    .and_then(|()| fs::rename(&f.open_path, &f.final_path));
                match res {
                    Ok(()) => {
                        self.files.push(f.final_path);
                        Ok(())
                    }
                    Err(e) => {
                        self.state = FileState::Failed(e.kind());
                        Err(e)
                    }
                }
            }
            FileState::Failed(k) => {
                self.state = FileState::Failed(k);
                Err(failed(k))
            }
            FileState::Finished => Ok(()),
        }
    }

    /// Writes a `request` and a `response` record for `ex`, both in the same file. Rotates first
    /// when the current file has reached `max_file_bytes`.
    pub fn write_exchange(&mut self, ex: &Exchange<'_>) -> io::Result<()> {
        let rotate = match &self.state {
            FileState::Open(f) => f.bytes >= self.max_file_bytes,
            FileState::Failed(k) => return Err(failed(*k)),
            FileState::Finished => true,
        };
        if rotate {
            self.close_current()?;
            self.open_next()?;
        }
        let warcinfo_id = match &self.state {
            FileState::Open(f) => f.warcinfo_id,
            // open_next either set Open or returned an error above.
            _ => return Err(io::Error::other("WARC writer has no open file")),
        };

        let req_id = self.ids.next_id();
        let resp_id = self.ids.next_id();
        // The per-exchange field values, written into one reused buffer instead of a String each.
        let t = &mut self.field_text;
        t.clear();
        write!(t, "{warcinfo_id}")?;
        let info_end = t.len();
        write!(t, "{resp_id}")?;
        let resp_end = t.len();
        if let Some(ip) = ex.ip {
            write!(t, "{ip}")?;
        }
        let ip_end = t.len();
        if let Some(d) = &ex.payload_digest {
            push_md5_base32(t, d);
        }
        // Only ASCII (UUIDs, IP addresses, base32) was written, so every split is a char boundary.
        let text = std::str::from_utf8(t).expect("field text is ASCII");
        let warcinfo_text = &text[..info_end];
        let resp_text = &text[info_end..resp_end];
        let ip_text = &text[resp_end..ip_end];
        let payload_text = &text[ip_end..];

        let mut fields: [(&str, &str); 5] = [("", ""); 5];
        let mut n = 0;
        fields[n] = ("WARC-Target-URI", ex.target_uri);
        n += 1;
        fields[n] = ("WARC-Warcinfo-ID", warcinfo_text);
        n += 1;
        if ex.ip.is_some() {
            fields[n] = ("WARC-IP-Address", ip_text);
            n += 1;
        }
        let common = n;
        fields[n] = ("WARC-Concurrent-To", resp_text);
        n += 1;

        self.gz_buf.clear();
        self.record_buf.clear();
        write_record(
            &mut self.record_buf,
            RecordType::Request,
            &req_id,
            ex.date,
            &fields[..n],
            "application/http;msgtype=request",
            &[ex.request],
        );
        self.gz.encode(&self.record_buf, &mut self.gz_buf)?;

        let mut n = common;
        if ex.payload_digest.is_some() {
            fields[n] = ("WARC-Payload-Digest", payload_text);
            n += 1;
        }
        self.record_buf.clear();
        write_record(
            &mut self.record_buf,
            RecordType::Response,
            &resp_id,
            ex.date,
            &fields[..n],
            "application/http;msgtype=response",
            &[ex.response],
        );
        self.gz.encode(&self.record_buf, &mut self.gz_buf)?;

        let FileState::Open(f) = &mut self.state else {
            return Err(io::Error::other("WARC writer has no open file"));
        };
        let res = f.out.write_all(&self.gz_buf);
        let len = self.gz_buf.len() as u64;
        self.record_buf.clear();
        self.record_buf.shrink_to(RETAIN_BUFFER_BYTES);
        self.gz_buf.clear();
        self.gz_buf.shrink_to(RETAIN_BUFFER_BYTES);
        match res {
            Ok(()) => {
                f.bytes += len;
                self.bytes_written += len;
                Ok(())
            }
            Err(e) => {
                self.state = FileState::Failed(e.kind());
                Err(e)
            }
        }
    }

    /// Pushes buffered bytes to the OS (not a rename: the file stays `.open`).
    pub fn flush(&mut self) -> io::Result<()> {
        match &mut self.state {
            FileState::Open(f) => f.out.flush().inspect_err(|e| {
                self.state = FileState::Failed(e.kind());
            }),
            FileState::Failed(k) => Err(failed(*k)),
            FileState::Finished => Ok(()),
        }
    }

    /// Closes the current file; returns every file written, in order.
    pub fn finish(mut self) -> io::Result<Vec<PathBuf>> {
        self.close_current()?;
        Ok(std::mem::take(&mut self.files))
    }

    /// Compressed bytes written so far, over all files.
    pub fn bytes_written(&self) -> u64 {
        self.bytes_written
    }

    /// Files completed so far (the open one is not listed until it closes).
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }
}

impl Drop for WarcWriter {
    /// A writer dropped without `finish` (an early return on error elsewhere) still holds only
    /// whole records, so close the file properly rather than leave a `.open` behind.
    fn drop(&mut self) {
        let _ = self.close_current();
    }
}

fn failed(kind: io::ErrorKind) -> io::Error {
    io::Error::new(kind, "WARC writer failed earlier; file left as .open")
}

/// Reads `.warc.gz` bytes back into records: for tests and fuzzing the writer's output. Strict
/// about the framing we write (one record per gzip member, `\r\n\r\n` after each block) and
/// bounded in every size; never panics.
pub mod reader {
    use std::io::Read;

    use flate2::bufread::GzDecoder;

    /// Largest decompressed record accepted.
    pub const MAX_RECORD_BYTES: usize = 256 * 1024 * 1024;
    /// Largest record header block.
    pub const MAX_HEADER_BYTES: usize = 64 * 1024;
    /// Most header fields in one record.
    pub const MAX_FIELDS: usize = 256;
    /// Most records in one file.
    pub const MAX_RECORDS: usize = 1_000_000;
    /// Most decompressed bytes over the whole file (what the returned records may hold).
    pub const MAX_TOTAL_BYTES: usize = 1024 * 1024 * 1024;

    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct Record {
        pub headers: Vec<(String, String)>,
        pub block: Vec<u8>,
    }

    impl Record {
        /// The first value of header `name` (case-insensitive).
        pub fn header(&self, name: &str) -> Option<&str> {
            self.headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.as_str())
        }
    }

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum ReadError {
        /// A gzip member was malformed or truncated.
        Gzip,
        /// A decompressed record exceeded `MAX_RECORD_BYTES`.
        RecordTooLarge,
        /// More than `MAX_RECORDS` records, or more than `MAX_TOTAL_BYTES` in all.
        TooManyRecords,
        /// The record does not start with `WARC/1.1` or `WARC/1.0`.
        BadVersion,
        /// No blank line within `MAX_HEADER_BYTES`.
        HeaderTooLarge,
        TooManyFields,
        /// A header line without `:` or not UTF-8.
        BadField,
        MissingContentLength,
        BadContentLength,
        /// The block is shorter than its Content-Length.
        Truncated,
        /// The block is not followed by `\r\n\r\n`.
        MissingRecordEnd,
        /// A gzip member held bytes after its record.
        TrailingData,
    }

    /// Reads every record of a `.warc.gz` file (one record per gzip member).
    pub fn read_records(gz_bytes: &[u8]) -> Result<Vec<Record>, ReadError> {
        let mut rest = gz_bytes;
        let mut records = Vec::new();
        let mut buf = Vec::new();
        let mut total: usize = 0;
        while !rest.is_empty() {
            if records.len() >= MAX_RECORDS {
                return Err(ReadError::TooManyRecords);
            }
            buf.clear();
            let mut dec = GzDecoder::new(rest);
            let n = (&mut dec)
                .take(MAX_RECORD_BYTES as u64 + 1)
                .read_to_end(&mut buf)
                .map_err(|_| ReadError::Gzip)?;
            if n > MAX_RECORD_BYTES {
                return Err(ReadError::RecordTooLarge);
            }
            total += n;
            if total > MAX_TOTAL_BYTES {
                return Err(ReadError::TooManyRecords);
            }
            let after = dec.into_inner();
            if after.len() >= rest.len() {
                // No progress: would loop forever.
                return Err(ReadError::Gzip);
            }
            rest = after;
            records.push(parse_record(&buf)?);
        }
        Ok(records)
    }

    /// Parses one uncompressed record that must fill `b` exactly.
    pub fn parse_record(b: &[u8]) -> Result<Record, ReadError> {
        let head_end = memchr::memmem::find(&b[..b.len().min(MAX_HEADER_BYTES)], b"\r\n\r\n")
            .ok_or(ReadError::HeaderTooLarge)?;
        let head = std::str::from_utf8(&b[..head_end]).map_err(|_| ReadError::BadField)?;
        let mut lines = head.split("\r\n");
        match lines.next() {
            Some("WARC/1.1") | Some("WARC/1.0") => {}
            _ => return Err(ReadError::BadVersion),
        }
        let mut headers = Vec::new();
        for line in lines {
            if headers.len() >= MAX_FIELDS {
                return Err(ReadError::TooManyFields);
            }
            let (name, value) = line.split_once(':').ok_or(ReadError::BadField)?;
            headers.push((name.trim().to_string(), value.trim().to_string()));
        }
        let mut rec = Record {
            headers,
            block: Vec::new(),
        };
        let len: usize = rec
            .header("Content-Length")
            .ok_or(ReadError::MissingContentLength)?
            .parse()
            .map_err(|_| ReadError::BadContentLength)?;
        let body = &b[head_end + 4..];
        if body.len() < len {
            return Err(ReadError::Truncated);
        }
        let (block, tail) = body.split_at(len);
        match tail.strip_prefix(b"\r\n\r\n") {
            None => return Err(ReadError::MissingRecordEnd),
            Some(t) if !t.is_empty() => return Err(ReadError::TrailingData),
            Some(_) => {}
        }
        rec.block = block.to_vec();
        Ok(rec)
    }
}

#[cfg(test)]
mod tests {
    use super::reader::{read_records, ReadError, Record};
    use super::*;
    use proptest::prelude::*;
    use std::process::Command;
    use std::time::{Duration, UNIX_EPOCH};

    const T0: u64 = 1_795_240_484; // 2026-11-21T05:54:44Z

    fn md5(b: &[u8]) -> [u8; 16] {
        Md5::digest(b).into()
    }

    /// A fresh, empty directory for one test (removed at the end of the test).
    fn temp_dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("spinneret-warc-{}-{tag}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).expect("create temp dir");
        d
    }

    fn info() -> WarcInfo {
        WarcInfo {
            software: "spinneret/0.1.0".into(),
            hostname: "crawler1".into(),
            operator: Some("ops@example.org".into()),
            description: None,
        }
    }

    /// Deterministic incompressible-ish bytes (xorshift), so rotation sizes are predictable.
    fn noise(seed: u64, len: usize) -> Vec<u8> {
        let mut x = seed | 1;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    #[test]
    fn write_record_golden_bytes() {
        let id = RecordId([
            0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x46, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd,
            0xee, 0xff,
        ]);
        let mut out = b"prev".to_vec();
        write_record(
            &mut out,
            RecordType::Response,
            &id,
            UNIX_EPOCH + Duration::from_millis(T0 * 1000 + 999),
            &[("WARC-Target-URI", "http://example.com/")],
            "application/http;msgtype=response",
            &[b"hel", b"", b"lo"],
        );
        let want = "prevWARC/1.1\r\n\
            WARC-Type: response\r\n\
            WARC-Record-ID: <urn:uuid:00112233-4455-4677-8899-aabbccddeeff>\r\n\
            WARC-Date: 2026-11-21T05:54:44Z\r\n\
            WARC-Target-URI: http://example.com/\r\n\
            Content-Type: application/http;msgtype=response\r\n\
            Content-Length: 5\r\n\
            WARC-Block-Digest: md5:LVAUAKV4JMVHNOLRTWIRAF6FSI======\r\n\
            \r\n\
            hello\r\n\r\n";
        assert_eq!(String::from_utf8(out).unwrap(), want);
    }

    #[test]
    fn field_values_cannot_inject_headers() {
        let mut out = Vec::new();
        let id = RecordIdGen::new([0; 16]).next_id();
        write_record(
            &mut out,
            RecordType::Metadata,
            &id,
            UNIX_EPOCH,
            &[("WARC-Target-URI", "http://a/\r\nWARC-Type: evil\x7f")],
            "text/plain",
            &[],
        );
        let rec = reader::parse_record(&out).unwrap();
        assert_eq!(
            rec.header("WARC-Target-URI"),
            Some("http://a/%0d%0aWARC-Type: evil%7f")
        );
        assert_eq!(
            rec.headers.iter().filter(|(n, _)| n == "WARC-Type").count(),
            1
        );
        assert_eq!(rec.header("Content-Length"), Some("0"));
        assert!(rec.block.is_empty());
    }

    #[test]
    fn base32_rfc4648_vectors() {
        let cases: &[(&[u8], &str)] = &[
            (b"", ""),
            (b"f", "MY======"),
            (b"fo", "MZXQ===="),
            (b"foo", "MZXW6==="),
            (b"foob", "MZXW6YQ="),
            (b"fooba", "MZXW6YTB"),
            (b"foobar", "MZXW6YTBOI======"),
        ];
        for &(input, want) in cases {
            let mut out = Vec::new();
            base32_into(&mut out, input);
            assert_eq!(String::from_utf8(out).unwrap(), want);
        }
        // md5("hello") = 5d41402abc4b2a76b9719d911017c592; base32 from Python's base64.b32encode.
        assert_eq!(
            md5_base32(&md5(b"hello")),
            "md5:LVAUAKV4JMVHNOLRTWIRAF6FSI======"
        );
    }

    #[test]
    fn record_ids_are_uuid_v4_and_unique() {
        let mut g = RecordIdGen::new(*b"0123456789abcdef");
        let mut seen = std::collections::HashSet::new();
        for _ in 0..10_000 {
            let id = g.next_id();
            let s = id.to_string();
            let b = s.as_bytes();
            assert_eq!(s.len(), 47, "{s}");
            assert!(s.starts_with("<urn:uuid:") && s.ends_with('>'), "{s}");
            let u = &b[10..46];
            for (i, &c) in u.iter().enumerate() {
                if matches!(i, 8 | 13 | 18 | 23) {
                    assert_eq!(c, b'-', "{s}");
                } else {
                    assert!(c.is_ascii_digit() || (b'a'..=b'f').contains(&c), "{s}");
                }
            }
            assert_eq!(u[14], b'4', "version nibble: {s}");
            assert!(b"89ab".contains(&u[19]), "variant nibble: {s}");
            assert!(seen.insert(id), "duplicate {s}");
        }
        // Deterministic per seed; a different seed gives different IDs.
        let a: Vec<_> = (0..3)
            .map(|_| RecordIdGen::new([1; 16]).next_id())
            .collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        assert_ne!(RecordIdGen::new([2; 16]).next_id(), a[0]);
    }

    #[test]
    fn gzip_members_are_standard_gzip() {
        for level in [0, 1, 6, 9] {
            let mut gz = GzMember::new(level);
            let mut out = Vec::new();
            let a = noise(7, 300_000);
            let b = b"abc".repeat(10_000);
            gz.encode(&a, &mut out).unwrap();
            gz.encode(&b, &mut out).unwrap();
            gz.encode(b"", &mut out).unwrap();
            let mut all = Vec::new();
            std::io::Read::read_to_end(&mut flate2::read::MultiGzDecoder::new(&out[..]), &mut all)
                .unwrap();
            assert_eq!(all.len(), a.len() + b.len(), "level {level}");
            assert!(
                all[..a.len()] == a[..] && all[a.len()..] == b[..],
                "level {level}"
            );
        }
    }

    /// Every record of `dir`'s files, checking the file-level invariants on the way.
    fn read_dir_checked(files: &[PathBuf], dir: &Path) -> Vec<Vec<Record>> {
        let mut names: Vec<_> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        names.sort();
        assert_eq!(names, files, "only finished files, no .open left");
        files
            .iter()
            .map(|p| {
                let recs = read_records(&fs::read(p).unwrap()).unwrap();
                let name = p.file_name().unwrap().to_str().unwrap();
                assert_eq!(recs[0].header("WARC-Type"), Some("warcinfo"));
                assert_eq!(recs[0].header("WARC-Filename"), Some(name));
                let info_id = recs[0].header("WARC-Record-ID").unwrap();
                for r in &recs {
                    let want = md5_base32(&md5(&r.block));
                    assert_eq!(r.header("WARC-Block-Digest"), Some(want.as_str()));
                    if r.header("WARC-Type") != Some("warcinfo") {
                        assert_eq!(r.header("WARC-Warcinfo-ID"), Some(info_id));
                    }
                }
                recs
            })
            .collect()
    }

    #[test]
    fn rotation_writes_complete_files_each_opened_by_warcinfo() {
        let dir = temp_dir("rotate");
        let max = 4000;
        let mut w = WarcWriter::create(&dir, "crawl", max, 1, info(), [9; 16]).unwrap();
        let mut sent = Vec::new();
        for i in 0..30u64 {
            let req = format!("GET /{i} HTTP/1.1\r\nHost: a.test\r\n\r\n").into_bytes();
            let mut resp = b"HTTP/1.1 200 OK\r\nContent-Length: 900\r\n\r\n".to_vec();
            resp.extend(noise(i + 1, 900));
            let ex = Exchange {
                target_uri: &format!("http://a.test/{i}"),
                date: UNIX_EPOCH + Duration::from_secs(T0 + i),
                ip: Some(IpAddr::from([127, 0, 0, 1])),
                request: &req,
                response: &resp,
                payload_digest: Some(md5(&resp[resp.len() - 900..])),
            };
            w.write_exchange(&ex).unwrap();
            sent.push((ex.target_uri.to_string(), req, resp));
        }
        w.flush().unwrap();
        let written = w.bytes_written();
        let files = w.finish().unwrap();
        assert!(files.len() >= 4, "expected rotation, got {files:?}");
        let sizes: Vec<u64> = files
            .iter()
            .map(|p| fs::metadata(p).unwrap().len())
            .collect();
        assert_eq!(sizes.iter().sum::<u64>(), written);
        for s in &sizes[..sizes.len() - 1] {
            assert!(*s >= max, "rotated early: {sizes:?}");
        }
        for (i, p) in files.iter().enumerate() {
            let name = p.file_name().unwrap().to_str().unwrap();
            let (stem, seq) = name
                .strip_suffix(".warc.gz")
                .unwrap()
                .rsplit_once('-')
                .unwrap();
            assert_eq!(seq, format!("{i:05}"));
            let (prefix, stamp) = stem.split_once('-').unwrap();
            assert_eq!(prefix, "crawl");
            assert!(stamp.len() == 14 && stamp.bytes().all(|b| b.is_ascii_digit()));
        }

        let mut got = Vec::new();
        for recs in read_dir_checked(&files, &dir) {
            assert!(
                recs.len() >= 3 && recs.len() % 2 == 1,
                "warcinfo + whole exchanges"
            );
            for pair in recs[1..].chunks(2) {
                let (req, resp) = (&pair[0], &pair[1]);
                assert_eq!(req.header("WARC-Type"), Some("request"));
                assert_eq!(resp.header("WARC-Type"), Some("response"));
                assert_eq!(
                    req.header("WARC-Concurrent-To"),
                    resp.header("WARC-Record-ID")
                );
                assert_eq!(req.header("WARC-IP-Address"), Some("127.0.0.1"));
                assert_eq!(
                    req.header("WARC-Target-URI"),
                    resp.header("WARC-Target-URI")
                );
                assert_eq!(
                    resp.header("Content-Type"),
                    Some("application/http;msgtype=response")
                );
                let uri = resp.header("WARC-Target-URI").unwrap().to_string();
                got.push((uri, req.block.clone(), resp.block.clone()));
            }
        }
        assert_eq!(got, sent);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn create_rejects_missing_or_non_directory() {
        let dir = temp_dir("baddir");
        assert!(WarcWriter::create(&dir.join("nope"), "x", 1, 1, info(), [0; 16]).is_err());
        let file = dir.join("plain");
        fs::write(&file, b"").unwrap();
        assert!(WarcWriter::create(&file, "x", 1, 1, info(), [0; 16]).is_err());
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn open_file_is_renamed_only_when_closed_and_names_never_collide() {
        let dir = temp_dir("names");
        let mut a = WarcWriter::create(&dir, "c", 1 << 20, 1, info(), [1; 16]).unwrap();
        // A second writer in the same second must not reuse (or clobber) the first one's name.
        let b = WarcWriter::create(&dir, "c", 1 << 20, 1, info(), [2; 16]).unwrap();
        let open: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(open.len(), 2);
        assert!(open
            .iter()
            .all(|p| p.to_str().unwrap().ends_with(".warc.gz.open")));
        a.flush().unwrap();
        let fa = a.finish().unwrap();
        let fb = b.finish().unwrap();
        assert_ne!(fa, fb);
        for f in fa.iter().chain(&fb) {
            assert!(f.exists());
            assert_eq!(read_records(&fs::read(f).unwrap()).unwrap().len(), 1);
        }
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn reader_rejects_bad_framing() {
        let id = RecordIdGen::new([0; 16]).next_id();
        let mut rec = Vec::new();
        write_record(
            &mut rec,
            RecordType::Resource,
            &id,
            UNIX_EPOCH,
            &[],
            "x/y",
            &[b"body"],
        );
        assert!(reader::parse_record(&rec).is_ok());
        assert_eq!(
            reader::parse_record(&rec[..rec.len() - 1]),
            Err(ReadError::MissingRecordEnd)
        );
        let mut extra = rec.clone();
        extra.extend_from_slice(b"WARC/1.1\r\n");
        assert_eq!(reader::parse_record(&extra), Err(ReadError::TrailingData));
        let mut v10 = rec.clone();
        v10[5..8].copy_from_slice(b"2.0");
        assert_eq!(reader::parse_record(&v10), Err(ReadError::BadVersion));
        assert_eq!(read_records(b"\x1f\x8b\x08garbage"), Err(ReadError::Gzip));
        assert_eq!(read_records(b""), Ok(vec![]));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// The reader is fed hostile bytes in the fuzz round-trip: it must return, not panic.
        #[test]
        fn reader_never_panics_on_corruption(pos in 0usize..2000, byte in any::<u8>(),
                                             cut in 0usize..2000) {
            let mut gz = GzMember::new(1);
            let mut file = Vec::new();
            let mut rec = Vec::new();
            let id = RecordIdGen::new([3; 16]).next_id();
            write_record(&mut rec, RecordType::Resource, &id, UNIX_EPOCH, &[], "x/y", &[b"0123456789"]);
            gz.encode(&rec, &mut file).unwrap();
            gz.encode(&rec, &mut file).unwrap();
            let i = pos % file.len();
            file[i] ^= byte;
            file.truncate(cut.max(1));
            let _ = read_records(&file);
            let _ = reader::parse_record(&rec[..cut.min(rec.len())]);
        }
    }

    /// Says a test was skipped, straight to stderr so the harness's capture does not hide it.
    fn skip(test: &str) {
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED warc::tests::{test}: `python3 -c 'import warcio'` failed (pip install warcio)"
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]
        /// Whatever bytes and URI go in, the reader gives back the same block and fields.
        #[test]
        fn records_round_trip(blocks in proptest::collection::vec(
                                  proptest::collection::vec(any::<u8>(), 0..1000), 1..4),
                              uri in "\\PC{0,60}", level in 0u32..10) {
            let mut gz = GzMember::new(level);
            let mut ids = RecordIdGen::new([4; 16]);
            let mut file = Vec::new();
            let mut rec = Vec::new();
            for b in &blocks {
                rec.clear();
                let id = ids.next_id();
                write_record(&mut rec, RecordType::Resource, &id, UNIX_EPOCH,
                             &[("WARC-Target-URI", &uri)], "application/octet-stream", &[b]);
                gz.encode(&rec, &mut file).unwrap();
            }
            let got = read_records(&file).unwrap();
            prop_assert_eq!(got.len(), blocks.len());
            for (r, b) in got.iter().zip(&blocks) {
                prop_assert_eq!(&r.block, b);
                let want = md5_base32(&md5(b));
                prop_assert_eq!(r.header("WARC-Block-Digest"), Some(want.as_str()));
                // Control bytes are escaped; everything else comes back as given (minus the
                // surrounding whitespace a header value cannot keep).
                if !uri.bytes().any(|c| c < 0x20 || c == 0x7f) {
                    prop_assert_eq!(r.header("WARC-Target-URI"), Some(uri.trim()));
                }
            }
        }
    }

    /// Runs `python3 -m warcio.cli ARGS`; `None` when warcio is not importable.
    fn warcio(args: &[&str]) -> Option<std::process::Output> {
        let probe = Command::new("python3")
            .args(["-c", "import warcio"])
            .output();
        if !matches!(probe, Ok(ref o) if o.status.success()) {
            return None;
        }
        Some(
            Command::new("python3")
                .args(["-m", "warcio.cli"])
                .args(args)
                .output()
                .expect("run python3"),
        )
    }

    const CHUNKED_HEAD: &[u8] =
        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n";
    const CHUNKED_BODY: &[u8] = b"5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\n\r\n";

    /// (target URI, response bytes, payload digest)
    type TestExchange = (String, Vec<u8>, Option<[u8; 16]>);

    fn write_file(dir: &Path, exchanges: &[TestExchange]) -> PathBuf {
        let mut w = WarcWriter::create(dir, "t", 1 << 30, 6, info(), [5; 16]).unwrap();
        for (i, (uri, resp, digest)) in exchanges.iter().enumerate() {
            let req = format!("GET / HTTP/1.1\r\nHost: {i}.test\r\n\r\n").into_bytes();
            w.write_exchange(&Exchange {
                target_uri: uri,
                date: UNIX_EPOCH + Duration::from_secs(T0),
                ip: Some(if i % 2 == 0 {
                    IpAddr::from([127, 0, 0, 1])
                } else {
                    "::1".parse().unwrap()
                }),
                request: &req,
                response: resp,
                payload_digest: *digest,
            })
            .unwrap();
        }
        let files = w.finish().unwrap();
        assert_eq!(files.len(), 1);
        files[0].clone()
    }

    /// The digest choice proved against the reference reader: `warcio check` verifies every
    /// block digest and payload digest, and `warcio index` reads every record.
    #[test]
    fn warcio_check_and_index_accept_our_files() {
        let dir = temp_dir("warcio");
        let plain_body = b"<html><body>plain</body></html>".repeat(20);
        let mut plain = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\r\n",
            plain_body.len()
        )
        .into_bytes();
        plain.extend_from_slice(&plain_body);

        let chunked = [CHUNKED_HEAD, CHUNKED_BODY].concat();

        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(&b"gzip content coding ".repeat(50)).unwrap();
        let gz_body = enc.finish().unwrap();
        let mut gzipped = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Encoding: gzip\r\n\
             Content-Length: {}\r\n\r\n",
            gz_body.len()
        )
        .into_bytes();
        gzipped.extend_from_slice(&gz_body);

        let path = write_file(
            &dir,
            &[
                ("http://0.test/plain".into(), plain, Some(md5(&plain_body))),
                // Payload digest over the stored bytes after the head: chunk framing intact.
                (
                    "http://1.test/chunked".into(),
                    chunked,
                    Some(md5(CHUNKED_BODY)),
                ),
                // ... and content coding intact.
                (
                    "http://2.test/gzip".into(),
                    gzipped.clone(),
                    Some(md5(&gz_body)),
                ),
                ("http://3.test/nodigest".into(), gzipped, None),
            ],
        );
        let p = path.to_str().unwrap();
        let Some(check) = warcio(&["check", "-v", p]) else {
            skip("warcio_check_and_index_accept_our_files");
            let _ = fs::remove_dir_all(&dir);
            return;
        };
        let out = String::from_utf8_lossy(&check.stdout);
        assert!(
            check.status.success(),
            "warcio check failed:\n{out}\n{}",
            String::from_utf8_lossy(&check.stderr)
        );
        assert!(!out.contains("failed"), "{out}");
        // 3 response records with a payload digest plus every block digest: all verified.
        assert_eq!(out.matches("digest pass").count(), 9, "{out}");

        let index = warcio(&[
            "index",
            "-f",
            "warc-type,warc-target-uri,warc-payload-digest",
            p,
        ])
        .expect("warcio was importable a moment ago");
        let out = String::from_utf8_lossy(&index.stdout);
        assert!(
            index.status.success(),
            "warcio index failed: {}",
            String::from_utf8_lossy(&index.stderr)
        );
        assert_eq!(out.lines().count(), 9, "{out}");
        assert_eq!(out.matches("\"response\"").count(), 4, "{out}");
        assert!(out.contains("http://1.test/chunked"), "{out}");
        let _ = fs::remove_dir_all(&dir);
    }

    /// The finding reported to the fetch layer: a payload digest over the *de-chunked* body is
    /// rejected by `warcio check`; it must be taken over the raw bytes after the head.
    #[test]
    fn warcio_rejects_dechunked_payload_digest() {
        let dir = temp_dir("warcio-dechunked");
        let chunked = [CHUNKED_HEAD, CHUNKED_BODY].concat();
        let path = write_file(
            &dir,
            &[(
                "http://1.test/chunked".into(),
                chunked,
                Some(md5(b"hello world")),
            )],
        );
        let Some(check) = warcio(&["check", "-v", path.to_str().unwrap()]) else {
            skip("warcio_rejects_dechunked_payload_digest");
            let _ = fs::remove_dir_all(&dir);
            return;
        };
        let out = String::from_utf8_lossy(&check.stdout);
        assert!(!check.status.success(), "{out}");
        assert!(out.contains("payload digest failed"), "{out}");
        let _ = fs::remove_dir_all(&dir);
    }
}
