//! Deflate's stored blocks (RFC 1951 §3.2.4): byte-aligned pieces that need no compressor.
//! Engines that compress in independent pieces (ISA-L) join them with these, and zlib-rs's
//! level 1 writes a joined record's header as one (see `gzip::Engine::Fast`).
//! (Ending a stream and sizing pieces are ISA-L's needs only.)

/// Largest stored block (its length field is 16 bits).
pub(super) const MAX_STORED: usize = 0xffff;
/// A final block that holds nothing (fixed code, end-of-block only): ends a stream.
#[cfg(isal_engine)]
const FINAL_EMPTY_BLOCK: [u8; 2] = [0x03, 0x00];

/// Output bytes of `len` input bytes as stored blocks, the most a piece may take.
#[cfg(isal_engine)]
pub(super) fn stored_size(len: usize) -> usize {
    len + 5 * len.div_ceil(MAX_STORED).max(1)
}

/// Appends `data` as stored blocks, the last one final if `last`.
pub(super) fn push_stored(data: &[u8], last: bool, out: &mut Vec<u8>) {
    if data.is_empty() {
        out.extend_from_slice(&[u8::from(last), 0, 0, 0xff, 0xff]);
        return;
    }
    let blocks = data.len().div_ceil(MAX_STORED);
    for (i, block) in data.chunks(MAX_STORED).enumerate() {
        let len = block.len() as u16;
        // BFINAL, BTYPE=00 (stored), then padding to the byte.
        out.push(u8::from(last && i + 1 == blocks));
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(block);
    }
}

/// Ends a stream whose pieces so far were byte-aligned and not final: `tail` (a few bytes, such
/// as a record's closing `\r\n\r\n`) goes into the final block, stored.
#[cfg(isal_engine)]
pub(super) fn finish(tail: &[u8], out: &mut Vec<u8>) {
    if tail.is_empty() {
        out.extend_from_slice(&FINAL_EMPTY_BLOCK);
    } else {
        push_stored(tail, true, out);
    }
}
