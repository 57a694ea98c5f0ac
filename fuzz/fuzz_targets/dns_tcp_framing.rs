//! DNS over TCP framing on arbitrary bytes cut at arbitrary places: byte 0 sets the decoder's
//! bound (times 64), byte 1 seeds the cut points, the rest is the stream. The pieces must
//! decode to what the whole stream decodes to (a naive reference), the decoder must never hold
//! more than its bound and a prefix, and nothing may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use spinneret::dns::tcp::{FrameDecoder, FrameError, Status, LEN_PREFIX};

/// Whole messages of `stream` and how it ended: by an over-long length, or (None) by running
/// out of bytes.
fn naive(stream: &[u8], max: usize) -> (Vec<&[u8]>, Option<FrameError>) {
    let mut out = Vec::new();
    let mut pos = 0;
    while let Some(b) = stream.get(pos..pos + 2) {
        let len = u16::from_be_bytes([b[0], b[1]]);
        if usize::from(len) > max {
            return (out, Some(FrameError::Oversized(len)));
        }
        let Some(m) = stream.get(pos + 2..pos + 2 + usize::from(len)) else {
            break;
        };
        out.push(m);
        pos += 2 + usize::from(len);
    }
    (out, None)
}

fuzz_target!(|data: &[u8]| {
    let [scale, seed, stream @ ..] = data else {
        return;
    };
    let max = usize::from(*scale) * 64;
    let mut d = FrameDecoder::new(max);
    let mut got: Vec<Vec<u8>> = Vec::new();
    let mut failed = None;
    let mut rng = u32::from(*seed) | 1;
    let mut rest = stream;
    // Bounded: every piece is at least one byte of the stream.
    'pieces: while !rest.is_empty() {
        rng = rng.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        let n = ((rng >> 16) as usize % 97 + 1).min(rest.len());
        let (mut piece, after) = rest.split_at(n);
        rest = after;
        // Bounded: each Complete takes at least the two prefix bytes of the piece.
        loop {
            match d.decode(piece) {
                Ok(Status::Complete { consumed }) => {
                    assert!((1..=piece.len()).contains(&consumed));
                    got.push(d.message().expect("a whole message").to_vec());
                    piece = &piece[consumed..];
                }
                Ok(Status::Partial) => break,
                Err(e) => {
                    failed = Some(e);
                    break 'pieces;
                }
            }
            assert!(d.buffered() <= LEN_PREFIX + max);
            if piece.is_empty() {
                break;
            }
        }
        assert!(d.buffered() <= LEN_PREFIX + max);
    }
    let (want, want_err) = naive(stream, max);
    assert_eq!(got.len(), want.len());
    assert!(got.iter().zip(&want).all(|(g, w)| g == w));
    assert_eq!(failed, want_err);
});
