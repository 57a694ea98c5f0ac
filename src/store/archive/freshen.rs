//! A 304's revisit block: the stored response's head, freshened by the 304 (RFC 9111
//! §4.3.4: the fields the 304 sends replace the stored ones of the same name).
//!
//! A `304 Not Modified` says the stored payload is still the current one; what a client of
//! the archive should see at the revisit's time is that payload under the stored response's
//! status and fields, updated with the 304's. Replay tools take a revisit's HTTP head as the
//! answer's head and the referred-to record's payload as its body (pywb answers a revisit
//! whose head is a 304 with an empty 304), so the server-not-modified revisit is written
//! with the freshened head: every field the 304 sent is in it; its status line is not.
//!
//! The stored head is read from the referred-to record (a gzip member at a known offset of a
//! WARC file, in this crawl's directory or the previous crawl's), bounded in what is read.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use flate2::read::GzDecoder;

/// Most bytes of a record read to find its HTTP head: a WARC header and a response head are
/// a few KiB; the HTTP decoder bounds heads far below this.
pub const MAX_HEAD_READ: usize = 256 * 1024;

/// Fields of the stored head a 304 does not replace: they describe the stored payload.
const KEPT: [&str; 3] = ["content-length", "content-encoding", "transfer-encoding"];

/// The HTTP head (status line to the blank line, included) of the response record at
/// `offset` in the WARC file at `path`; `None` when the record is not a response with a head
/// (a revisit, a cut record).
pub fn stored_head(path: &Path, offset: u64) -> io::Result<Option<Vec<u8>>> {
    let mut file = File::open(path)?;
    file.seek(SeekFrom::Start(offset))?;
    let mut gz = GzDecoder::new(file).take(MAX_HEAD_READ as u64);
    let mut buf = Vec::with_capacity(8192);
    let mut chunk = [0u8; 8192];
    // Bounded by MAX_HEAD_READ: each read adds bytes or ends.
    loop {
        if let Some(head) = head_of(&buf) {
            return Ok(head);
        }
        let n = gz.read(&mut chunk)?;
        if n == 0 {
            return Ok(head_of(&buf).flatten());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// `Some(head)` once `record` (a WARC record's start) holds its whole HTTP head; `Some(None)`
/// when it is not a response record with one; `None` while more is needed.
fn head_of(record: &[u8]) -> Option<Option<Vec<u8>>> {
    let warc_end = find(record, b"\r\n\r\n")? + 4;
    let warc = &record[..warc_end];
    let is_response = warc
        .split(|&b| b == b'\n')
        .any(|l| l.trim_ascii().eq_ignore_ascii_case(b"WARC-Type: response"));
    if !is_response {
        return Some(None);
    }
    let http = &record[warc_end..];
    let end = find(http, b"\r\n\r\n")? + 4;
    let head = &http[..end];
    Some(head.starts_with(b"HTTP/").then(|| head.to_vec()))
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(hay, needle)
}

/// The stored head with the 304's fields in place of the stored ones of the same name
/// (but for those describing the stored payload), and the stored status line.
pub fn freshen(stored: &[u8], not_modified: &[u8]) -> Vec<u8> {
    let fields = |head: &[u8]| -> Vec<(Vec<u8>, Vec<u8>)> {
        head.split(|&b| b == b'\n')
            .skip(1)
            .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
            .filter(|l| !l.is_empty())
            .filter_map(|l| {
                let colon = l.iter().position(|&b| b == b':')?;
                Some((l[..colon].trim_ascii().to_ascii_lowercase(), l.to_vec()))
            })
            .collect()
    };
    let status_end = find(stored, b"\r\n").unwrap_or(stored.len());
    let new = fields(not_modified);
    let replaced = |name: &[u8]| {
        !KEPT.iter().any(|k| k.as_bytes() == name) && new.iter().any(|(n, _)| n == name)
    };
    let mut out = Vec::with_capacity(stored.len() + not_modified.len());
    out.extend_from_slice(&stored[..status_end]);
    out.extend_from_slice(b"\r\n");
    for (name, line) in fields(stored) {
        if !replaced(&name) {
            out.extend_from_slice(&line);
            out.extend_from_slice(b"\r\n");
        }
    }
    for (name, line) in new {
        if !KEPT.iter().any(|k| k.as_bytes() == name.as_slice()) {
            out.extend_from_slice(&line);
            out.extend_from_slice(b"\r\n");
        }
    }
    out.extend_from_slice(b"\r\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_304s_fields_replace_the_stored_ones_but_for_the_payloads() {
        let stored = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 5\r\n\
                       ETag: \"a\"\r\nDate: Mon, 01 Jan 2024 00:00:00 GMT\r\n\r\n";
        let nm = b"HTTP/1.1 304 Not Modified\r\nDate: Tue, 02 Jan 2024 00:00:00 GMT\r\n\
                   ETag: \"a\"\r\nContent-Length: 0\r\n\r\n";
        let got = String::from_utf8(freshen(stored, nm)).unwrap();
        assert_eq!(
            got,
            "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 5\r\n\
             Date: Tue, 02 Jan 2024 00:00:00 GMT\r\nETag: \"a\"\r\n\r\n"
        );
    }

    #[test]
    fn a_response_records_head_is_found_and_other_records_have_none() {
        let record = b"WARC/1.1\r\nWARC-Type: response\r\nContent-Length: 40\r\n\r\n\
                       HTTP/1.1 200 OK\r\nA: b\r\n\r\nbody";
        assert_eq!(
            head_of(record),
            Some(Some(b"HTTP/1.1 200 OK\r\nA: b\r\n\r\n".to_vec()))
        );
        assert_eq!(head_of(&record[..60]), None, "more is needed");
        let revisit = b"WARC/1.1\r\nWARC-Type: revisit\r\n\r\nHTTP/1.1 200 OK\r\n\r\n";
        assert_eq!(head_of(revisit), Some(None));
    }

    #[test]
    fn a_head_is_read_from_a_gzip_member_at_its_offset() {
        use flate2::write::GzEncoder;
        use std::io::Write;
        let dir = crate::store::test_dir::TempDir::new("freshen", "member");
        let path = dir.0.join("a.warc.gz");
        let mut bytes = Vec::new();
        for body in ["first", "second"] {
            let rec = format!(
                "WARC/1.1\r\nWARC-Type: response\r\n\r\nHTTP/1.1 200 OK\r\nX: {body}\r\n\r\n{body}"
            );
            let mut gz = GzEncoder::new(Vec::new(), flate2::Compression::fast());
            gz.write_all(rec.as_bytes()).unwrap();
            bytes.push(gz.finish().unwrap());
        }
        std::fs::write(&path, bytes.concat()).unwrap();
        let second = bytes[0].len() as u64;
        let head = stored_head(&path, second).unwrap().unwrap();
        assert_eq!(head, b"HTTP/1.1 200 OK\r\nX: second\r\n\r\n");
        assert!(stored_head(&dir.0.join("missing"), 0).is_err());
    }
}
