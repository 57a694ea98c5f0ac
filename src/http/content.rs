//! Content decoding: undoing `Content-Encoding` (gzip, x-gzip, deflate, identity) on a body the
//! `ResponseDecoder` has already de-chunked.
//!
//! Inflation is incremental into a buffer grown by hand, never past `max_decoded_bytes + 1`
//! bytes, so a decompression bomb costs about the limit in memory and stops there (Scrapy and
//! curl both shipped bombs). Stacked codings ping-pong between the output and one scratch buffer.

use flate2::{Decompress, FlushDecompress, Status};

use super::{ContentCoding, HttpError, Limits, ResponseHead};

/// First output window; later windows double the buffer, capped at the limit.
const FIRST_WINDOW: usize = 32 * 1024;
/// gzip/zlib window size (the largest; servers may use any up to it).
const WINDOW_BITS: u8 = 15;

/// What to keep of a decoded body, and whether the body given is all of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodeOptions {
    /// Keep at most this many decoded bytes in `out`; the rest is only counted (against
    /// `max_decoded_bytes`), so a decompression bomb costs CPU but not memory.
    pub keep: usize,
    /// False when `body` is only the first part of the body (the rest was spilled): running
    /// out of input is then the end of what can be decoded, not an error.
    pub input_complete: bool,
}

/// Decodes `body` per `head.content_encodings` into `out` (cleared first).
///
/// Returns `Ok(false)` when there is nothing to undo (no codings, only `identity`, or an empty
/// body, as from HEAD or 204): use `body` as it is. On error, `out` holds a partial result.
/// A gzip member is decoded through its CRC check; bytes after it (padding, further members)
/// are ignored, as browsers do. `deflate` is zlib-wrapped if its first two bytes form a valid
/// zlib header, raw deflate otherwise (and also when a zlib-looking stream fails at once).
pub fn decode_content(
    head: &ResponseHead,
    body: &[u8],
    limits: &Limits,
    out: &mut Vec<u8>,
) -> Result<bool, HttpError> {
    let all = DecodeOptions {
        keep: usize::MAX,
        input_complete: true,
    };
    decode_content_with(head, body, limits, all, out).map(|d| d.is_some())
}

/// As [`decode_content`], keeping at most `opts.keep` bytes. Returns `Ok(None)` when there is
/// nothing to undo, else `Ok(Some(n))` with `n` the decoded length counted (all of it for the
/// last coding; with stacked codings the inner ones see only what the outer ones kept).
pub fn decode_content_with(
    head: &ResponseHead,
    body: &[u8],
    limits: &Limits,
    opts: DecodeOptions,
    out: &mut Vec<u8>,
) -> Result<Option<u64>, HttpError> {
    let codings = &head.content_encodings;
    // Nothing to decode (HEAD, 204, 304, empty page), whatever the header claims.
    if body.is_empty() {
        return Ok(None);
    }
    if codings.len() > limits.max_encodings {
        return Err(HttpError::TooManyEncodings);
    }
    if codings.contains(&ContentCoding::Unknown) {
        return Err(HttpError::UnknownContentEncoding);
    }
    // Undone last-applied first.
    let mut stages = codings
        .iter()
        .rev()
        .copied()
        .filter(|&c| c != ContentCoding::Identity);
    let Some(first) = stages.next() else {
        return Ok(None);
    };
    let limit = usize::try_from(limits.max_decoded_bytes).unwrap_or(usize::MAX);
    let mut sink = Sink {
        out,
        keep: opts.keep,
        counted: 0,
    };
    sink.out.clear();
    let mut complete = opts.input_complete;
    inflate(first, body, limit, complete, &mut sink)?;
    let mut total = sink.counted;
    let mut scratch = Vec::new();
    for coding in stages {
        // The next stage reads what this one kept: complete only if nothing was dropped.
        complete &= total == sink.out.len();
        std::mem::swap(sink.out, &mut scratch);
        sink.out.clear();
        sink.counted = 0;
        inflate(coding, &scratch, limit, complete, &mut sink)?;
        total = sink.counted;
    }
    Ok(Some(total as u64))
}

/// Where inflated bytes go: the first `keep` into `out`, the rest only counted.
struct Sink<'a> {
    out: &'a mut Vec<u8>,
    keep: usize,
    counted: usize,
}

fn inflate(
    coding: ContentCoding,
    input: &[u8],
    limit: usize,
    complete: bool,
    sink: &mut Sink<'_>,
) -> Result<(), HttpError> {
    match coding {
        ContentCoding::Gzip => inflate_with(
            Decompress::new_gzip(WINDOW_BITS),
            input,
            limit,
            complete,
            sink,
        ),
        ContentCoding::Deflate if looks_like_zlib(input) => {
            match inflate_with(Decompress::new(true), input, limit, complete, sink) {
                // Browsers retry raw deflate when the zlib reading fails before any output.
                Err(HttpError::BadContentEncoding) if sink.counted == 0 => {
                    inflate_with(Decompress::new(false), input, limit, complete, sink)
                }
                other => other,
            }
        }
        ContentCoding::Deflate => {
            inflate_with(Decompress::new(false), input, limit, complete, sink)
        }
        // Filtered out or rejected by the caller.
        ContentCoding::Identity | ContentCoding::Unknown => Err(HttpError::BadContentEncoding),
    }
}

/// RFC 1950 header: method 8, window <= 32 KiB, check bits, no preset dictionary.
fn looks_like_zlib(input: &[u8]) -> bool {
    match input {
        [cmf, flg, ..] => {
            cmf & 0x0f == 8
                && cmf >> 4 <= 7
                && (u16::from(*cmf) << 8 | u16::from(*flg)) % 31 == 0
                && flg & 0x20 == 0
        }
        _ => false,
    }
}

/// Inflates `input` into the sink (emptied first), failing once the count would pass `limit`.
fn inflate_with(
    mut d: Decompress,
    input: &[u8],
    limit: usize,
    complete: bool,
    sink: &mut Sink<'_>,
) -> Result<(), HttpError> {
    sink.out.clear();
    sink.counted = 0;
    let cap = limit.saturating_add(1);
    let keep = sink.keep.min(cap);
    let out = &mut *sink.out;
    // Past `keep`, output goes to this window and is only counted.
    let mut discard: Vec<u8> = Vec::new();
    let mut filled = 0;
    let mut consumed = 0;
    // Bound: each pass consumes input or produces output (a pass doing neither ends the loop),
    // and output stops at `cap`, so passes <= input.len() + cap.
    let result = loop {
        let (buf, at): (&mut Vec<u8>, usize) = if filled < keep {
            if filled == out.len() {
                let grow = out.len().max(FIRST_WINDOW).min(keep - out.len());
                out.reserve_exact(grow);
                out.resize(out.len() + grow, 0);
            }
            (&mut *out, filled)
        } else {
            if sink.counted >= cap {
                break Err(HttpError::DecodedTooLarge);
            }
            if discard.is_empty() {
                discard.resize(FIRST_WINDOW, 0);
            }
            (&mut discard, 0)
        };
        let room = if filled < keep {
            buf.len() - at
        } else {
            buf.len().min(cap - sink.counted)
        };
        let (in_before, out_before) = (d.total_in(), d.total_out());
        let status = d.decompress(
            &input[consumed..],
            &mut buf[at..at + room],
            FlushDecompress::None,
        );
        // Both deltas are bounded by the slice lengths just passed in.
        let used = (d.total_in() - in_before) as usize;
        let made = (d.total_out() - out_before) as usize;
        consumed += used;
        if filled < keep {
            filled += made;
        }
        sink.counted += made;
        match status {
            Err(_) if !complete && consumed == input.len() => break Ok(()),
            Err(_) => break Err(HttpError::BadContentEncoding),
            Ok(Status::StreamEnd) if sink.counted > limit => break Err(HttpError::DecodedTooLarge),
            Ok(Status::StreamEnd) => break Ok(()),
            Ok(Status::Ok | Status::BufError) if sink.counted > limit => {
                break Err(HttpError::DecodedTooLarge)
            }
            // No progress with room to write: the input ran out.
            Ok(Status::Ok | Status::BufError) if used == 0 && made == 0 => {
                break if complete {
                    Err(HttpError::BadContentEncoding)
                } else {
                    Ok(())
                };
            }
            Ok(Status::Ok | Status::BufError) => {}
        }
    };
    out.truncate(filled);
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::Framing;
    use flate2::write::{DeflateEncoder, GzEncoder, ZlibEncoder};
    use flate2::Compression;
    use std::io::Write;

    fn head(codings: &[ContentCoding]) -> ResponseHead {
        ResponseHead {
            version_minor: 1,
            status: 200,
            headers: crate::http::Headers::default(),
            content_length: None,
            framing: Framing::Close,
            content_encodings: codings.to_vec(),
            connection_close: false,
        }
    }

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = GzEncoder::new(Vec::new(), Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }
    fn zlib(data: &[u8]) -> Vec<u8> {
        let mut e = ZlibEncoder::new(Vec::new(), Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }
    fn raw_deflate(data: &[u8]) -> Vec<u8> {
        let mut e = DeflateEncoder::new(Vec::new(), Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn sample() -> Vec<u8> {
        (0..200_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect()
    }

    fn decode(codings: &[ContentCoding], body: &[u8]) -> Result<(bool, Vec<u8>), HttpError> {
        let mut out = Vec::new();
        decode_content(&head(codings), body, &Limits::default(), &mut out).map(|b| (b, out))
    }

    use ContentCoding::*;

    #[test]
    fn gzip_and_both_deflate_forms_round_trip() {
        let data = sample();
        assert_eq!(decode(&[Gzip], &gzip(&data)), Ok((true, data.clone())));
        assert_eq!(decode(&[Deflate], &zlib(&data)), Ok((true, data.clone())));
        assert_eq!(
            decode(&[Deflate], &raw_deflate(&data)),
            Ok((true, data.clone()))
        );
        // Trailing bytes after the gzip member are ignored.
        let mut padded = gzip(b"hi");
        padded.extend_from_slice(b"\0\0junk");
        assert_eq!(decode(&[Gzip], &padded), Ok((true, b"hi".to_vec())));
    }

    #[test]
    fn identity_and_empty_bodies_are_left_alone() {
        assert_eq!(decode(&[], b"plain"), Ok((false, Vec::new())));
        assert_eq!(decode(&[Identity], b"plain"), Ok((false, Vec::new())));
        assert_eq!(decode(&[Gzip], b""), Ok((false, Vec::new())));
        assert_eq!(decode(&[Unknown], b""), Ok((false, Vec::new())));
    }

    #[test]
    fn stacked_codings_are_undone_in_reverse_order() {
        let data = sample();
        // Server applied deflate (zlib), then gzip.
        let body = gzip(&zlib(&data));
        assert_eq!(
            decode(&[Deflate, Identity, Gzip], &body),
            Ok((true, data.clone()))
        );
        // Wrong order fails instead of producing garbage.
        assert_eq!(
            decode(&[Gzip, Deflate], &body),
            Err(HttpError::BadContentEncoding)
        );
    }

    #[test]
    fn too_many_and_unknown_codings() {
        let body = gzip(b"x");
        assert_eq!(decode(&[Gzip; 5], &body), Err(HttpError::TooManyEncodings));
        assert_eq!(
            decode(&[Unknown], &body),
            Err(HttpError::UnknownContentEncoding)
        );
        assert_eq!(
            HttpError::UnknownContentEncoding.return_code(),
            crate::ReturnCode::HttpBadContentEncoding
        );
    }

    #[test]
    fn bad_data_bad_crc_and_truncation_are_errors() {
        let data = sample();
        let good = gzip(&data);
        let mut bad_crc = good.clone();
        let crc_at = bad_crc.len() - 8;
        bad_crc[crc_at] ^= 0xff;
        assert_eq!(
            decode(&[Gzip], &bad_crc),
            Err(HttpError::BadContentEncoding)
        );
        let truncated = &good[..good.len() / 2];
        assert_eq!(
            decode(&[Gzip], truncated),
            Err(HttpError::BadContentEncoding)
        );
        assert_eq!(
            decode(&[Gzip], b"not gzip at all"),
            Err(HttpError::BadContentEncoding)
        );
        assert_eq!(
            decode(&[Deflate], &[0xff; 64]),
            Err(HttpError::BadContentEncoding)
        );
    }

    /// A hand-made gzip bomb: one fixed-Huffman deflate block of a literal 0 followed by
    /// `matches` copies of (length 258, distance 1): 13 bits per 258 output bytes. Building it
    /// by bits is instant where compressing the same output with an encoder takes minutes in a
    /// debug build. The gzip trailer is bogus: inflation must stop long before reaching it.
    fn gzip_bomb(matches: usize) -> Vec<u8> {
        let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
        let (mut acc, mut n) = (0u64, 0u32);
        let mut put = |out: &mut Vec<u8>, value: u32, bits: u32| {
            acc |= u64::from(value) << n;
            n += bits;
            while n >= 8 {
                out.push(acc as u8);
                acc >>= 8;
                n -= 8;
            }
        };
        // Huffman codes go most-significant bit first.
        let huff = |code: u32, len: u32| code.reverse_bits() >> (32 - len);
        put(&mut out, 1, 1); // BFINAL
        put(&mut out, 1, 2); // BTYPE = fixed Huffman
        put(&mut out, huff(0b0011_0000, 8), 8); // literal 0
        for _ in 0..matches {
            put(&mut out, huff(0b1100_0101, 8), 8); // length code 285 = 258
            put(&mut out, 0, 5); // distance code 0 = 1
        }
        put(&mut out, 0, 7); // end of block
        put(&mut out, 0, 7); // flush the last partial byte
        out.extend_from_slice(&[0; 8]);
        out
    }

    #[test]
    fn bomb_stops_at_the_limit_without_growing_past_it() {
        let limit = 256 * 1024;
        let limits = Limits {
            max_decoded_bytes: limit as u64,
            ..Limits::default()
        };
        // 6.8 MB that inflate to 1 GiB, 4096 times the limit.
        let bomb = gzip_bomb(4 * 1024 * 1024);
        assert!(bomb.len() < 7 * 1024 * 1024);
        for codings in [&[Gzip][..], &[Identity, Gzip]] {
            let mut out = Vec::new();
            let r = decode_content(&head(codings), &bomb, &limits, &mut out);
            assert_eq!(r, Err(HttpError::DecodedTooLarge));
            assert!(out.capacity() <= limit + 1, "cap {}", out.capacity());
        }
        // Stacked bomb: each stage is bounded the same way.
        let double = gzip(&gzip_bomb(256 * 1024));
        let mut out = Vec::new();
        let r = decode_content(&head(&[Gzip, Gzip]), &double, &limits, &mut out);
        assert_eq!(r, Err(HttpError::DecodedTooLarge));
        assert!(out.capacity() <= limit + 1);
        // Exactly at the limit is fine.
        let exact = gzip(&vec![7u8; limit]);
        let r = decode_content(&head(&[Gzip]), &exact, &limits, &mut out);
        assert_eq!(r, Ok(true));
        assert_eq!(out, vec![7u8; limit]);
    }

    fn decode_with(
        codings: &[ContentCoding],
        body: &[u8],
        keep: usize,
        input_complete: bool,
        limits: &Limits,
    ) -> (Result<Option<u64>, HttpError>, Vec<u8>) {
        let mut out = Vec::new();
        let opts = DecodeOptions {
            keep,
            input_complete,
        };
        let r = decode_content_with(&head(codings), body, limits, opts, &mut out);
        (r, out)
    }

    #[test]
    fn only_the_kept_part_is_held_but_every_byte_is_counted() {
        let data = sample();
        let (r, out) = decode_with(&[Gzip], &gzip(&data), 1000, true, &Limits::default());
        assert_eq!(r, Ok(Some(data.len() as u64)));
        assert_eq!(out, data[..1000]);
        assert!(out.capacity() <= 32 * 1024, "{}", out.capacity());
        // A bomb: 16 MiB of zeros against an 8 MiB limit fails, holding only what was kept.
        let bomb = gzip(&vec![0u8; 16 << 20]);
        let limits = Limits {
            max_decoded_bytes: 8 << 20,
            ..Limits::default()
        };
        let (r, out) = decode_with(&[Gzip], &bomb, 4096, true, &limits);
        assert_eq!(r, Err(HttpError::DecodedTooLarge));
        assert!(out.len() <= 4096 && out.capacity() <= 32 * 1024);
    }

    #[test]
    fn a_prefix_of_the_body_decodes_as_far_as_it_goes() {
        let data = sample();
        let body = gzip(&data);
        let cut = &body[..body.len() / 2];
        let (r, out) = decode_with(&[Gzip], cut, usize::MAX, false, &Limits::default());
        let n = r.unwrap().unwrap() as usize;
        assert!(n > 0 && n < data.len());
        assert_eq!(out, data[..n]);
        // The same prefix given as the whole body is a truncated stream.
        let (r, _) = decode_with(&[Gzip], cut, usize::MAX, true, &Limits::default());
        assert_eq!(r, Err(HttpError::BadContentEncoding));
    }
}
