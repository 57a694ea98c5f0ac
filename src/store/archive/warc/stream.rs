//! WARC files read record by record in bounded memory, from any producer (ours, wget,
//! Heritrix, warcio): gzip one member per record (the usual `.warc.gz`), the whole file one
//! gzip stream, or not compressed at all — told by the first two bytes, not the name.
//! WARC/1.0 and WARC/1.1. A record's block is kept up to a limit the caller gives and the
//! rest skipped, so a 1 GiB record costs a read, not memory. Each record comes with its
//! offset in the file: where its gzip member starts (what CDXJ indexes and replay tools
//! seek to), or where it starts in a plain file. Never panics on a file's bytes.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use flate2::bufread::GzDecoder;

/// Longest header block of a record (a real one is under 2 KiB).
pub const MAX_HEADER_BYTES: usize = 64 * 1024;
/// Most header fields in one record.
pub const MAX_FIELDS: usize = 256;
/// Blank lines skipped between records at most (some writers put a few).
const MAX_BLANK_LINES: usize = 16;

/// What went wrong in a file (the records before it were read).
#[derive(Debug)]
pub enum StreamError {
    Io(io::Error),
    /// A record does not start with `WARC/1.0` or `WARC/1.1`: not a WARC file, or its
    /// framing is broken here.
    NotWarc,
    /// No blank line within [`MAX_HEADER_BYTES`], or more than [`MAX_FIELDS`] fields.
    HeaderTooLarge,
    /// A header line without `:`.
    BadField,
    MissingContentLength,
    /// The file ends inside a record.
    Truncated,
}

impl std::fmt::Display for StreamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StreamError::Io(e) => write!(f, "{e}"),
            StreamError::NotWarc => write!(f, "not a WARC record (no WARC/1.0 or WARC/1.1 line)"),
            StreamError::HeaderTooLarge => write!(f, "a record's header is too large"),
            StreamError::BadField => write!(f, "a record header line has no ':'"),
            StreamError::MissingContentLength => write!(f, "a record has no Content-Length"),
            StreamError::Truncated => write!(f, "the file ends inside a record"),
        }
    }
}

impl From<io::Error> for StreamError {
    fn from(e: io::Error) -> Self {
        match e.kind() {
            io::ErrorKind::UnexpectedEof => StreamError::Truncated,
            _ => StreamError::Io(e),
        }
    }
}

/// One record: its header fields and the first bytes of its block.
#[derive(Debug, Default)]
pub struct StreamRecord {
    /// Where the record starts in the file: its gzip member's first byte (or the member it
    /// begins in, in a file gzipped whole), or its own first byte in a plain file.
    pub offset: u64,
    pub headers: Vec<(String, String)>,
    /// At most the `keep` bytes given to [`WarcStream::next_record`].
    pub block: Vec<u8>,
    /// The block's whole length (its Content-Length).
    pub block_len: u64,
}

impl StreamRecord {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A WARC file being read.
pub struct WarcStream {
    input: Box<dyn Offsets>,
    line: Vec<u8>,
}

/// A buffered input that knows the file offset of what it will give next.
pub trait Offsets: BufRead {
    /// The offset to report for a record whose first byte is the next one read.
    fn offset(&mut self) -> io::Result<u64>;
}

/// Bytes consumed from a buffered input.
struct Counting<R> {
    inner: R,
    count: u64,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count += n as u64;
        Ok(n)
    }
}

impl<R: BufRead> BufRead for Counting<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.inner.fill_buf()
    }
    fn consume(&mut self, n: usize) {
        self.count += n as u64;
        self.inner.consume(n);
    }
}

impl<R: BufRead> Offsets for Counting<R> {
    fn offset(&mut self) -> io::Result<u64> {
        Ok(self.count)
    }
}

/// A file of gzip members, inflated member after member (as `MultiGzDecoder` would), with
/// the compressed offset where the member being read began.
struct Members<R: BufRead> {
    /// The member being inflated, or the input between members.
    state: MemberState<R>,
    buf: Vec<u8>,
    pos: usize,
    len: usize,
    member_start: u64,
}

enum MemberState<R: BufRead> {
    In(Box<GzDecoder<Counting<R>>>),
    Between(Counting<R>),
    /// Only while moving from one to the other.
    Moving,
}

impl<R: BufRead> Members<R> {
    fn new(inner: R) -> Self {
        Members {
            state: MemberState::Between(Counting { inner, count: 0 }),
            buf: vec![0; 64 * 1024],
            pos: 0,
            len: 0,
            member_start: 0,
        }
    }
}

impl<R: BufRead> Read for Members<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = {
            let avail = self.fill_buf()?;
            let n = avail.len().min(out.len());
            out[..n].copy_from_slice(&avail[..n]);
            n
        };
        self.consume(n);
        Ok(n)
    }
}

impl<R: BufRead> BufRead for Members<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        // Bound: each turn reads inflated bytes (and returns), or ends a member, or starts
        // one (which consumes its header from the input), or finds the input's end.
        while self.pos == self.len {
            match std::mem::replace(&mut self.state, MemberState::Moving) {
                MemberState::In(mut dec) => {
                    let n = dec.read(&mut self.buf)?;
                    if n == 0 {
                        self.state = MemberState::Between(dec.into_inner());
                    } else {
                        self.state = MemberState::In(dec);
                        (self.pos, self.len) = (0, n);
                    }
                }
                MemberState::Between(mut input) => {
                    if input.fill_buf()?.is_empty() {
                        self.state = MemberState::Between(input);
                        return Ok(&[]);
                    }
                    self.member_start = input.count;
                    self.state = MemberState::In(Box::new(GzDecoder::new(input)));
                }
                MemberState::Moving => {
                    return Err(io::Error::other("gzip reader used after an error"));
                }
            }
        }
        Ok(&self.buf[self.pos..self.len])
    }

    fn consume(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.len);
    }
}

impl<R: BufRead> Offsets for Members<R> {
    fn offset(&mut self) -> io::Result<u64> {
        // The next byte's member: start it if it has not begun.
        self.fill_buf()?;
        Ok(self.member_start)
    }
}

impl WarcStream {
    /// Opens `path`, gzip or not.
    pub fn open(path: &Path) -> io::Result<WarcStream> {
        let mut file = BufReader::with_capacity(64 * 1024, File::open(path)?);
        let gzip = file.fill_buf()?.starts_with(&[0x1f, 0x8b]);
        let input: Box<dyn Offsets> = if gzip {
            Box::new(Members::new(file))
        } else {
            Box::new(Counting {
                inner: file,
                count: 0,
            })
        };
        Ok(WarcStream {
            input,
            line: Vec::new(),
        })
    }

    /// Reads records from `input`, gzip or not (told by its first bytes).
    pub fn new(mut input: Box<dyn BufRead>) -> WarcStream {
        let gzip = input.fill_buf().is_ok_and(|b| b.starts_with(&[0x1f, 0x8b]));
        let input: Box<dyn Offsets> = if gzip {
            Box::new(Members::new(input))
        } else {
            Box::new(Counting {
                inner: input,
                count: 0,
            })
        };
        WarcStream {
            input,
            line: Vec::new(),
        }
    }

    /// Reads the next record into `rec`, keeping at most `keep` bytes of its block; `false`
    /// at the end of the file.
    pub fn next_record(
        &mut self,
        keep: usize,
        rec: &mut StreamRecord,
    ) -> Result<bool, StreamError> {
        rec.headers.clear();
        rec.block.clear();
        // The version line, after any blank lines.
        let mut blanks = 0;
        loop {
            rec.offset = self.input.offset()?;
            if !self.read_line()? {
                return Ok(false);
            }
            if !self.line.is_empty() {
                break;
            }
            blanks += 1;
            if blanks > MAX_BLANK_LINES {
                return Err(StreamError::NotWarc);
            }
        }
        if self.line != b"WARC/1.0" && self.line != b"WARC/1.1" {
            return Err(StreamError::NotWarc);
        }
        let mut header_bytes = 0;
        // Bound: MAX_FIELDS lines, MAX_HEADER_BYTES in all.
        loop {
            if !self.read_line()? {
                return Err(StreamError::Truncated);
            }
            header_bytes += self.line.len() + 2;
            if header_bytes > MAX_HEADER_BYTES || rec.headers.len() >= MAX_FIELDS {
                return Err(StreamError::HeaderTooLarge);
            }
            if self.line.is_empty() {
                break;
            }
            let text = String::from_utf8_lossy(&self.line);
            let (name, value) = text.split_once(':').ok_or(StreamError::BadField)?;
            rec.headers
                .push((name.trim().to_string(), value.trim().to_string()));
        }
        rec.block_len = rec
            .header("Content-Length")
            .and_then(|v| v.parse().ok())
            .ok_or(StreamError::MissingContentLength)?;
        let kept = rec.block_len.min(keep as u64);
        (&mut self.input).take(kept).read_to_end(&mut rec.block)?;
        if (rec.block.len() as u64) < kept {
            return Err(StreamError::Truncated);
        }
        let skip = rec.block_len - kept;
        if io::copy(&mut (&mut self.input).take(skip), &mut io::sink())? < skip {
            return Err(StreamError::Truncated);
        }
        Ok(true)
    }

    /// Reads one line without its `\r\n` (or `\n`) into `self.line`; `false` at the end of
    /// the input. A line is at most [`MAX_HEADER_BYTES`].
    fn read_line(&mut self) -> Result<bool, StreamError> {
        self.line.clear();
        let n = (&mut self.input)
            .take(MAX_HEADER_BYTES as u64 + 1)
            .read_until(b'\n', &mut self.line)?;
        if n == 0 {
            return Ok(false);
        }
        if self.line.len() > MAX_HEADER_BYTES {
            return Err(StreamError::HeaderTooLarge);
        }
        if self.line.last() == Some(&b'\n') {
            self.line.pop();
            if self.line.last() == Some(&b'\r') {
                self.line.pop();
            }
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(kind: &str, block: &[u8]) -> Vec<u8> {
        let mut r = format!(
            "WARC/1.0\r\nWARC-Type: {kind}\r\nWARC-Record-ID: <urn:uuid:1>\r\nContent-Length: {}\r\n\r\n",
            block.len()
        )
        .into_bytes();
        r.extend_from_slice(block);
        r.extend_from_slice(b"\r\n\r\n");
        r
    }

    fn stream(bytes: Vec<u8>) -> WarcStream {
        WarcStream::new(Box::new(io::Cursor::new(bytes)))
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(bytes).unwrap();
        gz.finish().unwrap()
    }

    #[test]
    fn offsets_are_each_records_gzip_member_or_its_first_byte() {
        let records = [
            record("warcinfo", b"software: x\r\n"),
            record("response", &[b'y'; 70_000]),
            record("resource", b"last"),
        ];
        let members: Vec<Vec<u8>> = records.iter().map(|r| gzip(r)).collect();
        let starts = |parts: &[Vec<u8>]| -> Vec<u64> {
            parts
                .iter()
                .scan(0u64, |at, p| {
                    let here = *at;
                    *at += p.len() as u64;
                    Some(here)
                })
                .collect()
        };
        let mut rec = StreamRecord::default();
        for (bytes, want) in [
            (members.concat(), starts(&members)),
            (records.concat(), starts(&records)),
            // Gzipped whole: every record is in the one member at 0.
            (gzip(&records.concat()), vec![0, 0, 0]),
        ] {
            let mut s = stream(bytes);
            let mut got = Vec::new();
            while s.next_record(10, &mut rec).unwrap() {
                got.push(rec.offset);
            }
            assert_eq!(got, want);
        }
        // A broken member is an error, not a panic or a loop.
        let mut broken = members.concat();
        broken.truncate(broken.len() - members[2].len() / 2);
        let mut s = stream(broken);
        let mut n = 0;
        while let Ok(true) = s.next_record(10, &mut rec) {
            n += 1;
        }
        assert_eq!(n, 2);
    }

    #[test]
    fn reads_records_keeping_the_first_bytes_of_each_block() {
        let mut bytes = record("warcinfo", b"software: x\r\n");
        bytes.extend(record("response", &[b'x'; 5000]));
        bytes.extend_from_slice(b"\r\n");
        bytes.extend(record("resource", b"last"));
        let mut s = stream(bytes);
        let mut rec = StreamRecord::default();
        assert!(s.next_record(100, &mut rec).unwrap());
        assert_eq!(rec.header("warc-type"), Some("warcinfo"));
        assert!(s.next_record(100, &mut rec).unwrap());
        assert_eq!((rec.block.len(), rec.block_len), (100, 5000));
        assert!(s.next_record(100, &mut rec).unwrap());
        assert_eq!(rec.block, b"last");
        assert!(!s.next_record(100, &mut rec).unwrap());
    }

    #[test]
    fn broken_input_is_an_error_not_a_panic() {
        let mut rec = StreamRecord::default();
        let mut err = |bytes: &[u8]| {
            stream(bytes.to_vec())
                .next_record(10, &mut rec)
                .unwrap_err()
        };
        assert!(matches!(err(b"<html>"), StreamError::NotWarc));
        assert!(matches!(
            err(b"WARC/1.1\r\nWARC-Type: x\r\n\r\n"),
            StreamError::MissingContentLength
        ));
        assert!(matches!(
            err(b"WARC/1.1\r\nContent-Length: 50\r\n\r\nshort"),
            StreamError::Truncated
        ));
        assert!(matches!(
            err(b"WARC/1.1\r\nno colon\r\n\r\n"),
            StreamError::BadField
        ));
        let mut long = b"WARC/1.1\r\nX: ".to_vec();
        long.extend(std::iter::repeat_n(b'a', MAX_HEADER_BYTES + 10));
        assert!(matches!(err(&long), StreamError::HeaderTooLarge));
        let mut rec2 = StreamRecord::default();
        let mut all = stream(b"\r\n".repeat(100));
        assert!(matches!(
            all.next_record(1, &mut rec2),
            Err(StreamError::NotWarc)
        ));
    }
}
