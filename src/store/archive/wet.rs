//! WET files: the text of a WARC file's pages, as Common Crawl publishes them beside its
//! WARC files. A `warcinfo` record, then one `conversion` record per HTML response, each a
//! gzip member: `WARC-Target-URI` and `WARC-Date` the response's, `WARC-Refers-To` its record
//! ID, `Content-Type: text/plain`, `WARC-Block-Digest` the SHA-1 of the text. warcio, and the
//! tools built on it, read them as they read Common Crawl's.
//!
//! A file is written as `NAME.open` and renamed to NAME when [`WetWriter::finish`] is
//! called ([`OpenFile`]), so a file with the final name is complete.

use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use md5::{Digest as _, Md5};

use super::open_file::OpenFile;
use super::warc::stream::StreamRecord;
use super::warc::{
    push_field, push_sha1_base32, sha1, write_record, GzMember, RecordIdGen, RecordType, WarcInfo,
};
use crate::http::{decode_content, Limits, Progress, ResponseDecoder};

/// Most HTML taken from one page: of a response record, or of an HTML file given to
/// `spinneret extract` (a hostile gzip cannot make the process hold more; the crawl cuts a
/// body far sooner, at `--max-scan-bytes`).
pub const MAX_PAGE_BYTES: u64 = 64 << 20;

/// The HTML page a WARC record holds, into `out`: a `response` record of `application/http`
/// whose response is 2xx with an HTML Content-Type (or none, and markup first); transfer and
/// content codings undone, at most [`MAX_PAGE_BYTES`]. A response cut short (by its writer's
/// size limit, or by the caller keeping only the first bytes) still gives what it holds.
/// Its HTTP status, or `None` (and `out` unspecified) for any other record.
pub fn response_html(rec: &StreamRecord, out: &mut Vec<u8>) -> Option<u16> {
    out.clear();
    // Bytes, not `str` slices: a header value is any producer's bytes, read lossily.
    let is = |name, prefix: &str| {
        rec.header(name).is_some_and(|v| {
            v.as_bytes()
                .get(..prefix.len())
                .is_some_and(|p| p.eq_ignore_ascii_case(prefix.as_bytes()))
        })
    };
    if !is("WARC-Type", "response") || !is("Content-Type", "application/http") {
        return None;
    }
    let limits = Limits {
        max_body_bytes: MAX_PAGE_BYTES,
        max_decoded_bytes: MAX_PAGE_BYTES,
        ..Limits::default()
    };
    let mut http = ResponseDecoder::new(limits);
    if let Ok((Progress::NeedMore, _)) = http.process(&rec.block) {
        let _ = http.process_eof();
    }
    let head = http.head()?;
    let body = http.body();
    if !(200..300).contains(&head.status) || !is_html(head.content_type(), body) {
        return None;
    }
    let page = match decode_content(head, body, &limits, out) {
        Ok(true) => true,
        Ok(false) => {
            out.extend_from_slice(body);
            true
        }
        Err(_) => !out.is_empty(),
    };
    page.then_some(head.status)
}

/// Whether a response of `content_type` whose body is `body` is an HTML page: an HTML
/// Content-Type, or none and markup first.
pub fn is_html(content_type: Option<&[u8]>, body: &[u8]) -> bool {
    let starts = |t: &[u8], p: &[u8]| t.get(..p.len()).is_some_and(|h| h.eq_ignore_ascii_case(p));
    match content_type {
        Some(t) => starts(t, b"text/html") || starts(t, b"application/xhtml"),
        None => body.trim_ascii_start().starts_with(b"<"),
    }
}

/// A WET file being written.
pub struct WetWriter {
    file: OpenFile,
    record: Vec<u8>,
    gzip: GzMember,
    member: Vec<u8>,
    records: u64,
}

impl WetWriter {
    /// Starts `path` (as `path.open`) with a `warcinfo` record of `info`, dated `now`, its
    /// gzip members at `gzip_level` (as the crawl's WARC files: 1, the fastest, by default).
    pub fn create(
        path: &Path,
        info: &WarcInfo,
        now: SystemTime,
        gzip_level: u32,
    ) -> io::Result<WetWriter> {
        let mut w = WetWriter {
            file: OpenFile::create(path)?,
            record: Vec::new(),
            gzip: GzMember::new(gzip_level),
            member: Vec::new(),
            records: 0,
        };
        let id = id_for(path.as_os_str().as_encoded_bytes());
        let block = info.block();
        write_record(
            &mut w.record,
            RecordType::Warcinfo,
            &id,
            now,
            &[],
            "application/warc-fields",
            &[&block],
        );
        w.member()?;
        Ok(w)
    }

    /// A page's text: `refers_to` is its response record's `WARC-Record-ID` (with its
    /// `<urn:…>`), `date` that record's `WARC-Date` as written.
    pub fn conversion(
        &mut self,
        target_uri: &str,
        date: &str,
        refers_to: &str,
        text: &[u8],
    ) -> io::Result<()> {
        let r = &mut self.record;
        r.clear();
        r.extend_from_slice(b"WARC/1.1\r\nWARC-Type: conversion\r\n");
        push_field(r, "WARC-Target-URI", target_uri);
        push_field(r, "WARC-Date", date);
        push_field(
            r,
            "WARC-Record-ID",
            &id_for(refers_to.as_bytes()).to_string(),
        );
        push_field(r, "WARC-Refers-To", refers_to);
        r.extend_from_slice(b"WARC-Block-Digest: ");
        push_sha1_base32(r, &sha1(text));
        r.extend_from_slice(b"\r\nContent-Type: text/plain\r\n");
        push_field(r, "Content-Length", &text.len().to_string());
        r.extend_from_slice(b"\r\n");
        r.extend_from_slice(text);
        r.extend_from_slice(b"\r\n\r\n");
        self.member()?;
        self.records += 1;
        Ok(())
    }

    /// Conversion records written.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Bytes written: the file's length once flushed.
    pub fn bytes_written(&self) -> u64 {
        self.file.bytes_written()
    }

    /// Hands what is buffered to the OS (`sync`: and fsyncs it).
    pub fn flush(&mut self, sync: bool) -> io::Result<()> {
        self.file.flush(sync)
    }

    /// Flushes the file to disk and gives it its name.
    pub fn finish(self) -> io::Result<PathBuf> {
        self.file.finish()
    }

    /// Gives up the file: what was written of it is removed.
    pub fn abandon(self) -> io::Result<()> {
        self.file.abandon()
    }

    /// Writes `self.record` as one gzip member.
    fn member(&mut self) -> io::Result<()> {
        self.member.clear();
        self.gzip.encode(&self.record, &mut self.member)?;
        self.file.write_all(&self.member)
    }
}

/// A record ID that follows from `key` (the record it derives from): converting a file again
/// gives the same IDs.
fn id_for(key: &[u8]) -> super::warc::RecordId {
    let seed: [u8; 16] = Md5::digest(key).into();
    RecordIdGen::new(seed).next_id()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::archive::warc::reader::read_records;
    use crate::store::test_dir::TempDir;

    #[test]
    fn a_record_with_any_header_bytes_is_not_a_page_and_no_panic() {
        // Found by the warc_to_wet fuzz target: a multi-byte character where the prefix
        // of a header value is compared.
        let mut rec = StreamRecord {
            headers: vec![
                ("WARC-Type".into(), "respon\u{fffd}".into()),
                ("Content-Type".into(), "applicat\u{fffd}".into()),
            ],
            ..StreamRecord::default()
        };
        let mut out = Vec::new();
        assert_eq!(response_html(&rec, &mut out), None);
        rec.headers[0].1 = "response".into();
        assert_eq!(response_html(&rec, &mut out), None);
    }

    #[test]
    fn a_wet_file_reads_back_with_its_warcinfo_and_conversions() {
        let dir = TempDir::new("wet", "write");
        let path = dir.0.join("x.warc.wet.gz");
        let info = WarcInfo {
            software: "spinneret test".into(),
            ..WarcInfo::default()
        };
        let mut w = WetWriter::create(&path, &info, SystemTime::UNIX_EPOCH, 1).unwrap();
        let refers = "<urn:uuid:12345678-1234-4234-8234-123456789abc>";
        w.conversion(
            "http://a.test/",
            "2024-03-12T10:32:00Z",
            refers,
            b"Hello\nworld",
        )
        .unwrap();
        w.conversion("http://a.test/empty", "2024-03-12T10:33:00Z", refers, b"")
            .unwrap();
        assert!(!path.exists(), "named before it is complete");
        assert_eq!(w.records(), 2);
        w.finish().unwrap();
        let records = read_records(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(records.len(), 3);
        assert_eq!(records[0].header("WARC-Type"), Some("warcinfo"));
        let c = &records[1];
        assert_eq!(c.header("WARC-Type"), Some("conversion"));
        assert_eq!(c.header("WARC-Target-URI"), Some("http://a.test/"));
        assert_eq!(c.header("WARC-Date"), Some("2024-03-12T10:32:00Z"));
        assert_eq!(c.header("WARC-Refers-To"), Some(refers));
        assert_eq!(c.header("Content-Type"), Some("text/plain"));
        assert_eq!(c.block, b"Hello\nworld");
        let mut digest = Vec::new();
        push_sha1_base32(&mut digest, &sha1(b"Hello\nworld"));
        assert_eq!(
            c.header("WARC-Block-Digest").unwrap().as_bytes(),
            &digest[..]
        );
        // The same input, the same record ID.
        assert_eq!(
            c.header("WARC-Record-ID").unwrap(),
            id_for(refers.as_bytes()).to_string()
        );
    }
}
