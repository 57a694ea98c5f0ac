//! A response record whose payload is in a spool file (too large for memory): streamed into
//! its gzip member a chunk at a time, so a record of any size costs a fixed amount of memory.

use std::io::{self, Write};
use std::time::SystemTime;

use sha1::{Digest as _, Sha1};

use super::gzip::GzMember;
use super::{write_record_header, Digest, RecordId, RecordType, RECORD_END};
use crate::fetcher::spool::SpoolFile;

/// Spool bytes read per step when streaming a spooled body into its record.
const SPOOL_CHUNK: usize = 64 * 1024;
/// Compressed bytes gathered before they go to the file while a record streams.
const STREAM_FLUSH_BYTES: usize = 1 << 20;

/// A response record whose payload is in a spool file.
pub(super) struct SpooledRecord<'a> {
    pub(super) kind: RecordType,
    pub(super) id: &'a RecordId,
    pub(super) date: SystemTime,
    pub(super) fields: &'a [(&'a str, &'a str)],
    /// The HTTP response head, as received.
    pub(super) head: &'a [u8],
    pub(super) spool: &'a dyn SpoolFile,
    /// Give it a `WARC-Block-Digest` (a pass over the spool of its own).
    pub(super) block_digest: bool,
    /// The payload is compressed already (`gzip::compressed_payload`): stored, not deflated.
    pub(super) stored: bool,
}

/// Writes a response record whose payload is spooled: one pass over the spool for the block
/// digest if it has one (it precedes the block), one to compress it, `SPOOL_CHUNK` bytes at a
/// time. The compressed bytes go to `file` as they pass `STREAM_FLUSH_BYTES`; whatever is left
/// at the end stays in `gz_buf` for the caller to write. Returns the bytes already written to
/// `file`.
pub(super) fn stream_spooled_record(
    gz: &mut GzMember,
    header: &mut Vec<u8>,
    gz_buf: &mut Vec<u8>,
    file: &mut impl Write,
    r: SpooledRecord<'_>,
) -> io::Result<u64> {
    let mut chunk = vec![0u8; SPOOL_CHUNK];
    let mut digest = None;
    if r.block_digest {
        let mut block = Sha1::new();
        block.update(r.head);
        for_each_chunk(r.spool, &mut chunk, |part| {
            block.update(part);
            Ok(())
        })?;
        digest = Some(Digest::from(block.finalize()));
    }
    let len = r.head.len() as u64 + r.spool.len();
    header.clear();
    write_record_header(
        header,
        r.kind,
        r.id,
        r.date,
        r.fields,
        "application/http;msgtype=response",
        len,
        digest.as_ref(),
    );
    let mut written = 0u64;
    let mut member = gz.start(gz_buf);
    gz.feed(&mut member, header, gz_buf)?;
    gz.feed(&mut member, r.head, gz_buf)?;
    if r.stored {
        gz.store_from_here(&mut member, gz_buf)?;
    }
    for_each_chunk(r.spool, &mut chunk, |part| {
        gz.feed(&mut member, part, gz_buf)?;
        if gz_buf.len() >= STREAM_FLUSH_BYTES {
            file.write_all(gz_buf)?;
            written += gz_buf.len() as u64;
            gz_buf.clear();
        }
        Ok(())
    })?;
    gz.feed(&mut member, RECORD_END, gz_buf)?;
    gz.end(member, gz_buf)?;
    Ok(written)
}

/// Calls `f` with the spool's bytes in order, `buf.len()` at a time.
fn for_each_chunk(
    spool: &dyn SpoolFile,
    buf: &mut [u8],
    mut f: impl FnMut(&[u8]) -> io::Result<()>,
) -> io::Result<()> {
    let mut offset = 0u64;
    // Bound: each pass reads at least one byte, up to the spool's fixed length.
    while offset < spool.len() {
        let n = spool.read_at(offset, buf)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "spool file shorter than written",
            ));
        }
        f(&buf[..n])?;
        offset += n as u64;
    }
    Ok(())
}
