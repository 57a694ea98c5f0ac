//! gzip members, one per WARC record (what lets a reader seek to any record): the writer's
//! reusable encoder, and a record's block deflated ahead of the writer ([`BlockDeflater`],
//! on the event loop while the writer is behind) that the writer joins to the record's
//! header without compressing it again.
//!
//! A joined member is one gzip member holding one deflate stream: the header's blocks end
//! with a sync flush (byte-aligned, not final), the block's own blocks follow and end the
//! stream; the CRC-32 of the whole is the header's combined with the block's.

use std::io;

use flate2::{Compress, Compression, FlushCompress, Status};
use sha1::{Digest as _, Sha1};

use super::{Digest, RECORD_END};
use crate::http::{ContentCoding, ResponseHead};

/// Upper bound on deflate calls for one record. Each call gets at least the worst-case output
/// size of the remaining input, so two calls always suffice; the bound guards a broken backend.
const MAX_DEFLATE_ROUNDS: usize = 16;
/// Extra output room beyond the input length: deflate's worst case is stored blocks, 5 bytes per
/// 16 KiB block plus a few bytes of stream end.
const DEFLATE_SLACK: usize = 64;
/// Output a deflate stream may hold back between calls (zlib-rs's pending buffer: four times
/// its 16 KiB literal buffer).
const DEFLATE_PENDING: usize = 64 * 1024;
/// The gzip member header we write: magic, CM=deflate, no flags, MTIME=0 (so output does not
/// depend on the clock), XFL (patched per level), OS=255 (unknown).
const GZIP_HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255];

/// The deflate behind a level: ISA-L for level 1 (its fastest level: faster than zlib-rs's
/// and smaller output, see [`super::isal`]) when built with ISA-L (the system's, or the `isal`
/// feature's), zlib-rs
/// otherwise and for every other level.
enum Engine {
    Zlib(Compress),
    #[cfg(isal_engine)]
    Isal(super::isal::IsalDeflate),
    /// zlib-rs at level 1 without ISA-L: a joined record's header (a few hundred bytes) is
    /// written as a stored block instead of being compressed, which spares a stream reset
    /// (a 128 KiB hash-table clear) per response record — 4 % of the bench's CPU per page
    /// for about 150 bytes more per record. The reset itself is deferred (`stale`) to the
    /// next compressed input for the same reason.
    #[cfg(not(isal_engine))]
    Fast {
        stream: Box<Compress>,
        stale: bool,
    },
}

impl Engine {
    fn new(level: u32) -> Engine {
        if level == 1 {
            #[cfg(isal_engine)]
            return Engine::Isal(super::isal::IsalDeflate::new());
            #[cfg(not(isal_engine))]
            return Engine::Fast {
                stream: Box::new(Compress::new(Compression::new(1), false)),
                stale: false,
            };
        }
        Engine::Zlib(Compress::new(Compression::new(level), false))
    }

    /// Starts a new deflate stream.
    fn reset(&mut self) {
        match self {
            Engine::Zlib(c) => c.reset(),
            #[cfg(isal_engine)]
            Engine::Isal(_) => {}
            #[cfg(not(isal_engine))]
            Engine::Fast { stale, .. } => *stale = true,
        }
    }

    /// Appends the concatenation of `parts` to `out` as one whole deflate stream (each part
    /// deflated in turn, not gathered first); returns its CRC-32 and length.
    fn deflate_stream(&mut self, parts: &[&[u8]], out: &mut Vec<u8>) -> io::Result<Crc> {
        self.reset();
        let mut crc = Crc::new();
        let (last, init): (&[u8], _) = match parts.split_last() {
            Some((last, init)) => (last, init),
            None => (&[], &[]),
        };
        for part in init {
            crc.update(part);
            self.deflate(part, FlushCompress::None, out)?;
        }
        crc.update(last);
        self.deflate(last, FlushCompress::Finish, out)?;
        Ok(crc)
    }

    /// Appends `head` deflated and then `stored` as stored blocks, the last one ending the
    /// stream, to `out` as one whole deflate stream; returns its CRC-32 and length. For a
    /// response whose payload is compressed already: deflating it again costs as much CPU
    /// as a page of text and saves nothing.
    fn deflate_then_store(
        &mut self,
        head: &[u8],
        stored: &[&[u8]],
        out: &mut Vec<u8>,
    ) -> io::Result<Crc> {
        self.reset();
        let mut crc = Crc::new();
        crc.update(head);
        // Byte-aligned and not final (zlib-rs: a sync flush). The stream then ends in stored
        // blocks, never in the compressor again: its window lacks them, so a back-reference
        // it made after them would point at the wrong bytes.
        self.deflate(head, FlushCompress::Sync, out)?;
        match stored.split_last() {
            Some((last, init)) => {
                for part in init {
                    crc.update(part);
                    super::stored::push_stored(part, false, out);
                }
                crc.update(last);
                super::stored::push_stored(last, true, out);
            }
            None => super::stored::push_stored(&[], true, out),
        }
        Ok(crc)
    }

    /// Byte-aligns what was deflated so far without ending the stream, so that stored blocks
    /// can follow (and the compressor is not used again before a reset).
    fn align(&mut self, out: &mut Vec<u8>) -> io::Result<()> {
        match self {
            Engine::Zlib(c) => zlib_deflate(c, &[], FlushCompress::Sync, out),
            #[cfg(isal_engine)]
            Engine::Isal(_) => Ok(()),
            // Its `Sync` is a stored header, not a flush: what it took is still in it.
            #[cfg(not(isal_engine))]
            Engine::Fast { stream, stale } => match stale {
                true => Ok(()),
                false => zlib_deflate(stream, &[], FlushCompress::Sync, out),
            },
        }
    }

    /// Appends all of `data` to `out`, deflated: `Finish` ends the stream, `Sync`
    /// byte-aligns it, `None` only takes the input. ISA-L's pieces are byte-aligned and
    /// independent anyway, so for it `Sync` and `None` are the same.
    fn deflate(&mut self, data: &[u8], flush: FlushCompress, out: &mut Vec<u8>) -> io::Result<()> {
        match self {
            Engine::Zlib(c) => zlib_deflate(c, data, flush, out),
            #[cfg(isal_engine)]
            Engine::Isal(d) => {
                if flush == FlushCompress::Finish && data.len() <= FINISH_STORED {
                    super::stored::finish(data, out);
                    return Ok(());
                }
                d.chunk(data, out)?;
                if flush == FlushCompress::Finish {
                    super::stored::finish(&[], out);
                }
                Ok(())
            }
            #[cfg(not(isal_engine))]
            Engine::Fast { stream, stale } => {
                // Only a joined header is sync-flushed, and it starts its stream.
                if flush == FlushCompress::Sync {
                    super::stored::push_stored(data, false, out);
                    return Ok(());
                }
                if std::mem::take(stale) {
                    stream.reset();
                }
                zlib_deflate(stream, data, flush, out)
            }
        }
    }
}

/// zlib-rs: appends all of `data` to `out`, deflated with `flush`.
fn zlib_deflate(
    c: &mut Compress,
    data: &[u8],
    flush: FlushCompress,
    out: &mut Vec<u8>,
) -> io::Result<()> {
    let mut at = out.len();
    out.resize(at + worst_case(data.len()), 0);
    deflate_at(c, data, flush, out, &mut at)?;
    out.truncate(at);
    Ok(())
}

/// gzip's CRC-32 and the length of the data it covers. With ISA-L (`cfg(isal_engine)`) it is ISA-L's
/// (AVX-512 carry-less multiply: ~0.3 µs for a 15 KB record, a quarter of zlib-rs's); the
/// combination of two is zlib-rs's either way.
#[derive(Clone, Copy, Default)]
pub(super) struct Crc {
    sum: u32,
    len: u64,
}

#[cfg(isal_engine)]
extern "C" {
    /// ISA-L's gzip CRC-32 (in `libisal`, the system's or the one `isal-sys` builds): continues from `init`, the
    /// CRC of the data before `buf` (0 for none), as zlib's `crc32` does.
    fn crc32_gzip_refl(init: u32, buf: *const u8, len: u64) -> u32;
}

impl Crc {
    pub(super) fn new() -> Crc {
        Crc::default()
    }

    pub(super) fn update(&mut self, data: &[u8]) {
        #[cfg(isal_engine)]
        {
            // SAFETY: reads exactly `data.len()` bytes from `data`, keeps no pointer.
            self.sum = unsafe { crc32_gzip_refl(self.sum, data.as_ptr(), data.len() as u64) };
        }
        #[cfg(not(isal_engine))]
        {
            self.sum = zlib_rs::crc32::crc32(self.sum, data);
        }
        self.len += data.len() as u64;
    }

    /// Makes this the CRC of its data followed by `other`'s.
    pub(super) fn combine(&mut self, other: &Crc) {
        self.sum = zlib_rs::crc32::crc32_combine(self.sum, other.sum, other.len);
        self.len += other.len;
    }

    /// Appends a gzip member's trailer: the CRC-32, then ISIZE, the length modulo 2^32
    /// (RFC 1952).
    pub(super) fn write_trailer(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.sum.to_le_bytes());
        out.extend_from_slice(&(self.len as u32).to_le_bytes());
    }
}

/// A last piece up to this long (a record's closing `\r\n\r\n`) is stored in the final
/// block instead of being compressed on its own.
#[cfg(isal_engine)]
const FINISH_STORED: usize = 16;

/// Reusable gzip-member encoder: one deflate engine, reset per record.
pub struct GzMember {
    engine: Engine,
    header: [u8; 10],
}

impl GzMember {
    pub(in crate::store::archive) fn new(level: u32) -> Self {
        let level = level.min(9);
        let mut header = GZIP_HEADER;
        header[8] = match level {
            9 => 2, // XFL: maximum compression
            1 => 4, // XFL: fastest
            _ => 0,
        };
        GzMember {
            engine: Engine::new(level),
            header,
        }
    }

    /// Appends `data` to `out` as one complete gzip member.
    pub(in crate::store::archive) fn encode(
        &mut self,
        data: &[u8],
        out: &mut Vec<u8>,
    ) -> io::Result<()> {
        self.encode_parts(&[data], out)
    }

    /// Appends the concatenation of `parts` to `out` as one complete gzip member, without
    /// gathering them into one buffer first (a record's header, its block, its end).
    pub(super) fn encode_parts(&mut self, parts: &[&[u8]], out: &mut Vec<u8>) -> io::Result<()> {
        out.extend_from_slice(&self.header);
        let crc = self.engine.deflate_stream(parts, out)?;
        crc.write_trailer(out);
        Ok(())
    }

    /// Appends the concatenation of `deflated` and then `stored` to `out` as one complete gzip
    /// member: `deflated` compressed, `stored` (a payload compressed already, and the record
    /// end) kept as stored blocks.
    pub(super) fn encode_then_store(
        &mut self,
        deflated: &[u8],
        stored: &[&[u8]],
        out: &mut Vec<u8>,
    ) -> io::Result<()> {
        out.extend_from_slice(&self.header);
        let crc = self.engine.deflate_then_store(deflated, stored, out)?;
        crc.write_trailer(out);
        Ok(())
    }

    /// Appends `head` and then `tail` (deflated ahead) to `out` as one gzip member: `head` is
    /// compressed and sync-flushed, `tail`'s deflate blocks end the stream.
    pub(super) fn encode_joined(
        &mut self,
        head: &[u8],
        tail: &DeflatedBlock,
        out: &mut Vec<u8>,
    ) -> io::Result<()> {
        self.engine.reset();
        out.extend_from_slice(&self.header);
        self.engine.deflate(head, FlushCompress::Sync, out)?;
        out.extend_from_slice(&tail.data);
        let mut crc = Crc::new();
        crc.update(head);
        crc.combine(&tail.crc);
        crc.write_trailer(out);
        Ok(())
    }

    /// Starts a member whose data comes in parts ([`GzMember::feed`], then
    /// [`GzMember::end`]): a spooled body is compressed without ever being whole in memory.
    pub(super) fn start(&mut self, out: &mut Vec<u8>) -> StreamedMember {
        self.engine.reset();
        out.extend_from_slice(&self.header);
        StreamedMember {
            crc: Crc::new(),
            storing: false,
        }
    }

    /// Appends `data`: deflated, or as stored blocks once [`Self::store_from_here`].
    pub(super) fn feed(
        &mut self,
        m: &mut StreamedMember,
        data: &[u8],
        out: &mut Vec<u8>,
    ) -> io::Result<()> {
        m.crc.update(data);
        match m.storing {
            true => {
                super::stored::push_stored(data, false, out);
                Ok(())
            }
            false => self.engine.deflate(data, FlushCompress::None, out),
        }
    }

    /// Byte-aligns what was deflated so far; what is fed from here on (compressed already) is
    /// kept as stored blocks.
    pub(super) fn store_from_here(
        &mut self,
        m: &mut StreamedMember,
        out: &mut Vec<u8>,
    ) -> io::Result<()> {
        if !m.storing {
            self.engine.align(out)?;
            m.storing = true;
        }
        Ok(())
    }

    pub(super) fn end(&mut self, m: StreamedMember, out: &mut Vec<u8>) -> io::Result<()> {
        match m.storing {
            true => super::stored::push_stored(&[], true, out),
            false => self.engine.deflate(&[], FlushCompress::Finish, out)?,
        }
        m.crc.write_trailer(out);
        Ok(())
    }
}

/// A gzip member being streamed: the CRC and length of its data so far, and whether stored
/// blocks have begun.
pub(super) struct StreamedMember {
    crc: Crc,
    storing: bool,
}

/// Deflate's worst-case output for `len` bytes of input: stored blocks, 5 bytes per 16 KiB
/// block, plus the stream's end.
fn worst_case(len: usize) -> usize {
    len + len / 1000 + DEFLATE_SLACK
}

/// Deflates all of `data` into `out[*at..]` with `flush` and moves `*at` past the output:
/// `Finish` ends the stream, `Sync` byte-aligns it, `None` only takes the input. Deflate
/// writes into an initialised slice sized with [`worst_case`] (`compress_vec`
/// would zero the buffer's whole spare capacity on every call: megabytes, once a large
/// record grew it, which cost more than the compression); it grows only as a guard. The
/// caller truncates `out` at `*at` when done.
fn deflate_at(
    c: &mut Compress,
    data: &[u8],
    flush: FlushCompress,
    out: &mut Vec<u8>,
    at: &mut usize,
) -> io::Result<()> {
    let (in0, out0) = (c.total_in(), c.total_out());
    // Bounded: each round has room for the worst case of what is left, so two suffice.
    for _ in 0..MAX_DEFLATE_ROUNDS {
        let consumed = (c.total_in() - in0) as usize;
        let here = *at + (c.total_out() - out0) as usize;
        if here + DEFLATE_SLACK > out.len() {
            // Room for the worst case of this input (level 1's fixed-code literals take up
            // to 9 bits a byte) and for what deflate still holds from earlier calls: a short
            // input after a long incompressible one has a whole pending buffer to flush.
            out.resize(
                out.len() + DEFLATE_SLACK + data.len() / 8 + DEFLATE_PENDING,
                0,
            );
        }
        let status = c
            .compress(&data[consumed..], &mut out[here..], flush)
            .map_err(|_| io::Error::other("deflate failed"))?;
        let consumed = (c.total_in() - in0) as usize;
        let end = *at + (c.total_out() - out0) as usize;
        let done = match flush {
            FlushCompress::Finish => status == Status::StreamEnd,
            // Flushed once all input is in and the output was not filled to the end.
            FlushCompress::Sync => consumed == data.len() && end < out.len(),
            _ => consumed == data.len(),
        };
        if done {
            *at = end;
            return Ok(());
        }
    }
    Err(io::Error::other("deflate did not finish"))
}

/// The block of a record (its HTTP response), deflated ahead of the writer.
#[derive(Default)]
pub struct DeflatedBlock {
    /// Raw deflate blocks of the block and the record end `\r\n\r\n`, the last one final.
    pub(super) data: Vec<u8>,
    /// CRC-32 and length of what `data` holds uncompressed.
    pub(super) crc: Crc,
    /// The block's length and SHA-1 (`Content-Length`, `WARC-Block-Digest`: only when the
    /// deflater was asked for it).
    pub(super) block_len: u64,
    pub(super) digest: Option<Digest>,
}

impl DeflatedBlock {
    /// The compressed bytes' buffer, to reuse.
    pub fn into_buffer(self) -> Vec<u8> {
        self.data
    }
}

/// Whether a response's payload is compressed already, so that a record stores it rather
/// than deflating it again (ISA-L spends ~6 µs on 5 KB of gzip for no gain, as much per byte
/// as on text): a gzip or deflate content coding (what the crawler asks for, and most
/// servers send for HTML), or a media type that is compressed in itself.
pub fn compressed_payload(head: &ResponseHead) -> bool {
    if head
        .content_encodings
        .iter()
        .any(|c| matches!(c, ContentCoding::Gzip | ContentCoding::Deflate))
    {
        return true;
    }
    let Some(t) = head.content_type() else {
        return false;
    };
    let t = t.trim_ascii_start();
    let is = |p: &[u8]| t.get(..p.len()).is_some_and(|h| h.eq_ignore_ascii_case(p));
    COMPRESSED_TYPES.iter().any(|p| is(p))
}

/// Media types (or their prefixes) whose bytes are compressed in themselves.
const COMPRESSED_TYPES: &[&[u8]] = &[
    b"image/jpeg",
    b"image/png",
    b"image/gif",
    b"image/webp",
    b"image/avif",
    b"video/",
    b"audio/mpeg",
    b"audio/mp4",
    b"audio/aac",
    b"audio/ogg",
    b"audio/webm",
    b"audio/flac",
    b"audio/opus",
    b"font/woff",
    b"application/zip",
    b"application/gzip",
    b"application/x-gzip",
    b"application/zstd",
    b"application/x-xz",
    b"application/x-bzip2",
    b"application/x-7z-compressed",
    b"application/font-woff",
];

/// Deflates record blocks for `GzMember::encode_joined`, at the writer's level, with their
/// block digest when the writer gives response records one
/// ([`super::WriterOptions::response_block_digest`]).
pub struct BlockDeflater {
    engine: Engine,
    block_digest: bool,
}

impl BlockDeflater {
    pub fn new(level: u32, block_digest: bool) -> BlockDeflater {
        BlockDeflater {
            engine: Engine::new(level.min(9)),
            block_digest,
        }
    }

    /// Deflates `block` and the record end into `buf` (cleared first, its capacity reused);
    /// digests and checksums it in the same call, while it is in cache. `stored_from`: the
    /// block's bytes from there on are compressed already ([`compressed_payload`]) and are
    /// stored, not deflated.
    pub fn deflate(
        &mut self,
        block: &[u8],
        stored_from: Option<usize>,
        mut buf: Vec<u8>,
    ) -> io::Result<DeflatedBlock> {
        let digest = self
            .block_digest
            .then(|| -> Digest { Sha1::digest(block).into() });
        buf.clear();
        let crc = match stored_from.and_then(|at| block.split_at_checked(at)) {
            Some((head, payload)) => {
                self.engine
                    .deflate_then_store(head, &[payload, RECORD_END], &mut buf)?
            }
            None => self.engine.deflate_stream(&[block, RECORD_END], &mut buf)?,
        };
        Ok(DeflatedBlock {
            data: buf,
            crc,
            block_len: block.len() as u64,
            digest,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{compressed_payload, BlockDeflater, Crc, GzMember};
    use crate::http::{Limits, ResponseDecoder};
    use crate::store::test_data::noise;
    use flate2::read::MultiGzDecoder;
    use std::io::Read;

    fn gunzip(member: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        MultiGzDecoder::new(member)
            .read_to_end(&mut out)
            .expect("a valid gzip member");
        out
    }

    /// A payload compressed already is kept as it is (its bytes appear verbatim in the
    /// member), and the member still holds the exact record, CRC and length checked: written
    /// whole by the writer's encoder, or deflated ahead and joined to its header, at the
    /// fastest level (ISA-L's pieces where built with it) and at zlib-rs's level 6; for a
    /// payload of no bytes, and one over a stored block's 64 KiB.
    #[test]
    fn a_stored_payload_is_kept_verbatim_in_a_valid_member() {
        let header = b"WARC/1.1\r\nWARC-Type: response\r\nContent-Length: 9\r\n\r\n".repeat(3);
        let head = b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Type: text/html\r\n\r\n";
        for level in [1, 6] {
            for len in [0, 1, 5_000, 70_000, 140_000] {
                // Text that deflate would shrink: found verbatim only if stored.
                let payload: Vec<u8> = b"as if compressed "
                    .iter()
                    .cycle()
                    .zip(noise(len as u64 + 1, len))
                    .map(|(&t, n)| if n % 61 == 0 { b'#' } else { t })
                    .collect();
                let block = [&head[..], &payload].concat();
                let record = [&header[..], &block, b"\r\n\r\n"].concat();

                let mut gz = GzMember::new(level);
                let mut whole = Vec::new();
                let with_head = [&header[..], head].concat();
                gz.encode_then_store(&with_head, &[&payload, b"\r\n\r\n"], &mut whole)
                    .unwrap();

                let mut deflater = BlockDeflater::new(level, false);
                let ahead = deflater
                    .deflate(&block, Some(head.len()), Vec::new())
                    .unwrap();
                assert_eq!(ahead.block_len, block.len() as u64);
                let mut joined = Vec::new();
                gz.encode_joined(&header, &ahead, &mut joined).unwrap();

                for (how, member) in [("whole", &whole), ("joined", &joined)] {
                    assert_eq!(gunzip(member), record, "level {level}, {len} B, {how}");
                    if len > 0 {
                        let at = memchr::memmem::find(member, &payload[..len.min(60_000)]);
                        assert!(at.is_some(), "level {level}, {len} B, {how}: not stored");
                    }
                    // Stored costs 5 bytes a 64 KiB block, beside a header deflated.
                    assert!(
                        member.len() < record.len() + 64,
                        "level {level}, {len} B, {how}"
                    );
                }
                // Deflated ahead without a stored part, the same block still round-trips.
                let plain = deflater.deflate(&block, None, Vec::new()).unwrap();
                let mut joined = Vec::new();
                gz.encode_joined(&header, &plain, &mut joined).unwrap();
                assert_eq!(
                    gunzip(&joined),
                    record,
                    "level {level}, {len} B, not stored"
                );
            }
        }
    }

    /// Which payloads are stored: a gzip or deflate content coding, or a compressed media
    /// type; not HTML sent as is, nor media types that are text or raw samples.
    #[test]
    fn compressed_payloads_are_the_coded_and_the_compressed_media() {
        let head = |fields: &str| {
            let bytes = format!("HTTP/1.1 200 OK\r\n{fields}Content-Length: 0\r\n\r\n");
            let mut d = ResponseDecoder::new(Limits::default());
            let _ = d.process(bytes.as_bytes());
            d.head().expect("a head").clone()
        };
        for (fields, stored) in [
            (
                "Content-Type: text/html\r\nContent-Encoding: gzip\r\n",
                true,
            ),
            (
                "Content-Type: text/html\r\nContent-Encoding: x-gzip\r\n",
                true,
            ),
            (
                "Content-Type: text/html\r\nContent-Encoding: deflate\r\n",
                true,
            ),
            (
                "Content-Type: text/html\r\nContent-Encoding: identity\r\n",
                false,
            ),
            // A server's misused header says nothing of the bytes.
            (
                "Content-Type: text/html\r\nContent-Encoding: utf-8\r\n",
                false,
            ),
            ("Content-Type: text/html; charset=utf-8\r\n", false),
            ("Content-Type: IMAGE/JPEG\r\n", true),
            ("Content-Type: image/png\r\n", true),
            ("Content-Type: video/mp4\r\n", true),
            ("Content-Type: font/woff2\r\n", true),
            ("Content-Type: image/svg+xml\r\n", false),
            ("Content-Type: image/bmp\r\n", false),
            ("Content-Type: audio/wav\r\n", false),
            ("", false),
        ] {
            assert_eq!(compressed_payload(&head(fields)), stored, "{fields:?}");
        }
    }

    /// Whatever computes it, the CRC is gzip's: equal to zlib-rs's one-shot CRC of the whole,
    /// however the data is cut into updates or combined from parts.
    #[test]
    fn crc_in_parts_and_combined_is_the_crc_of_the_whole() {
        for (seed, len) in [(1, 0), (2, 1), (3, 63), (4, 64), (5, 15_000), (6, 70_001)] {
            let data = noise(seed, len);
            let whole = zlib_rs::crc32::crc32(0, &data);
            for cut in [0, len / 3, len / 2, len] {
                let (a, b) = data.split_at(cut);
                let mut updated = Crc::new();
                updated.update(a);
                updated.update(b);
                let mut combined = Crc::new();
                combined.update(a);
                let mut tail = Crc::new();
                tail.update(b);
                combined.combine(&tail);
                for crc in [updated, combined] {
                    let mut trailer = Vec::new();
                    crc.write_trailer(&mut trailer);
                    assert_eq!(trailer[..4], whole.to_le_bytes(), "len {len} cut {cut}");
                    assert_eq!(trailer[4..], (len as u32).to_le_bytes());
                }
            }
        }
    }
}
