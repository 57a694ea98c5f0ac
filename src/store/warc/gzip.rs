//! gzip members, one per WARC record (what lets a reader seek to any record): the writer's
//! reusable encoder, and a record's block deflated ahead of the writer ([`BlockDeflater`],
//! on the event loop while the writer is behind) that the writer joins to the record's
//! header without compressing it again.
//!
//! A joined member is one gzip member holding one deflate stream: the header's blocks end
//! with a sync flush (byte-aligned, not final), the block's own blocks follow and end the
//! stream; the CRC-32 of the whole is the header's combined with the block's.

use std::io;

use flate2::{Compress, Compression, Crc, FlushCompress, Status};
use sha1::{Digest as _, Sha1};

use super::Digest;

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

/// Reusable gzip-member encoder: one `Compress`, reset per record.
pub struct GzMember {
    compress: Compress,
    header: [u8; 10],
}

impl GzMember {
    pub(super) fn new(level: u32) -> Self {
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
    pub(super) fn encode(&mut self, data: &[u8], out: &mut Vec<u8>) -> io::Result<()> {
        self.compress.reset();
        out.extend_from_slice(&self.header);
        let mut at = out.len();
        out.resize(at + worst_case(data.len()), 0);
        deflate_at(
            &mut self.compress,
            data,
            FlushCompress::Finish,
            out,
            &mut at,
        )?;
        out.truncate(at);
        let mut crc = Crc::new();
        crc.update(data);
        out.extend_from_slice(&crc.sum().to_le_bytes());
        // ISIZE is the input length modulo 2^32 (RFC 1952).
        out.extend_from_slice(&(data.len() as u32).to_le_bytes());
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
        self.compress.reset();
        out.extend_from_slice(&self.header);
        let mut at = out.len();
        out.resize(at + worst_case(head.len()), 0);
        deflate_at(&mut self.compress, head, FlushCompress::Sync, out, &mut at)?;
        out.truncate(at);
        out.extend_from_slice(&tail.data);
        let mut crc = Crc::new();
        crc.update(head);
        crc.combine(&tail.crc);
        out.extend_from_slice(&crc.sum().to_le_bytes());
        // ISIZE is the input length modulo 2^32 (RFC 1952).
        out.extend_from_slice(&(crc.amount()).to_le_bytes());
        Ok(())
    }

    /// Starts a member whose data comes in parts ([`GzMember::feed`], then
    /// [`GzMember::end`]): a spooled body is compressed without ever being whole in memory.
    pub(super) fn start(&mut self, out: &mut Vec<u8>) -> StreamedMember {
        self.compress.reset();
        out.extend_from_slice(&self.header);
        StreamedMember {
            crc: Crc::new(),
            len: 0,
        }
    }

    pub(super) fn feed(
        &mut self,
        m: &mut StreamedMember,
        data: &[u8],
        out: &mut Vec<u8>,
    ) -> io::Result<()> {
        m.crc.update(data);
        m.len += data.len() as u64;
        let start_in = self.compress.total_in();
        // Bound: each round gets room for the worst case of what is left, so two suffice.
        for _ in 0..MAX_DEFLATE_ROUNDS {
            let consumed = (self.compress.total_in() - start_in) as usize;
            if consumed == data.len() {
                return Ok(());
            }
            let rest = &data[consumed..];
            out.reserve(rest.len() + rest.len() / 1000 + DEFLATE_SLACK);
            self.compress
                .compress_vec(rest, out, FlushCompress::None)
                .map_err(|_| io::Error::other("deflate failed"))?;
        }
        Err(io::Error::other("deflate did not take its input"))
    }

    pub(super) fn end(&mut self, m: StreamedMember, out: &mut Vec<u8>) -> io::Result<()> {
        for _ in 0..MAX_DEFLATE_ROUNDS {
            out.reserve(DEFLATE_SLACK + 64 * 1024);
            let status = self
                .compress
                .compress_vec(&[], out, FlushCompress::Finish)
                .map_err(|_| io::Error::other("deflate failed"))?;
            if status == Status::StreamEnd {
                out.extend_from_slice(&m.crc.sum().to_le_bytes());
                // ISIZE is the input length modulo 2^32 (RFC 1952).
                out.extend_from_slice(&(m.len as u32).to_le_bytes());
                return Ok(());
            }
        }
        Err(io::Error::other("deflate did not finish"))
    }
}

/// A gzip member being streamed: the CRC and length of its data so far.
pub(super) struct StreamedMember {
    crc: Crc,
    len: u64,
}

/// Deflate's worst-case output for `len` bytes of input: stored blocks, 5 bytes per 16 KiB
/// block, plus the stream's end.
fn worst_case(len: usize) -> usize {
    len + len / 1000 + DEFLATE_SLACK
}

/// Deflates all of `data` into `out[*at..]` with `flush` and moves `*at` past the output:
/// `Finish` ends the stream, `Sync` byte-aligns it, `None` only takes the input. Deflate
/// writes into an initialised slice the caller sized with [`worst_case`] (`compress_vec`
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

/// Deflates record blocks for [`GzMember::encode_joined`], at the writer's level, with their
/// block digest when the writer gives response records one
/// ([`super::WriterOptions::response_block_digest`]).
pub struct BlockDeflater {
    compress: Compress,
    block_digest: bool,
}

impl BlockDeflater {
    pub fn new(level: u32, block_digest: bool) -> BlockDeflater {
        BlockDeflater {
            compress: Compress::new(Compression::new(level.min(9)), false),
            block_digest,
        }
    }

    /// Deflates `block` and the record end into `buf` (cleared first, its capacity reused);
    /// digests and checksums it in the same call, while it is in cache.
    pub fn deflate(&mut self, block: &[u8], mut buf: Vec<u8>) -> io::Result<DeflatedBlock> {
        let mut crc = Crc::new();
        crc.update(block);
        crc.update(b"\r\n\r\n");
        let digest = self
            .block_digest
            .then(|| -> Digest { Sha1::digest(block).into() });
        self.compress.reset();
        buf.clear();
        buf.resize(worst_case(block.len() + 4), 0);
        let mut at = 0;
        let c = &mut self.compress;
        deflate_at(c, block, FlushCompress::None, &mut buf, &mut at)?;
        deflate_at(c, b"\r\n\r\n", FlushCompress::Finish, &mut buf, &mut at)?;
        buf.truncate(at);
        Ok(DeflatedBlock {
            data: buf,
            crc,
            block_len: block.len() as u64,
            digest,
        })
    }
}
