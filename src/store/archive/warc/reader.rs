//! Reads `.warc.gz` bytes back into records: for tests and fuzzing the writer's output. Strict
//! about the framing we write (one record per gzip member, `\r\n\r\n` after each block) and
//! bounded in every size; never panics.

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
