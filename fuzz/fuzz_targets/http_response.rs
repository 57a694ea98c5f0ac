//! `http::ResponseDecoder` on arbitrary bytes fed in arbitrary pieces, then EOF and content
//! decoding: no panic, and the outcome does not depend on how the bytes were split.
//!
//! Input: `[flags, n, n split bytes..., response bytes...]`. Flags bit 0 picks tight limits,
//! bit 1 a HEAD request, bit 2 feeds the split pieces as a plain connection reads them (into
//! `recv_room` wherever it is offered, then `process_received`), which must not change the
//! outcome either. Piece lengths cycle through `split byte + 1`; `n = 0` feeds it whole.
#![no_main]

use libfuzzer_sys::fuzz_target;
use spinneret::http::{decode_content, HttpError, Limits, Progress, ResponseDecoder, ResponseHead};

/// Small enough that every cap is reachable by a fuzz input of a few hundred bytes.
const TIGHT: Limits = Limits {
    max_head_bytes: 256,
    max_headers: 8,
    max_body_bytes: 512,
    max_decoded_bytes: 1024,
    max_framing_bytes: 64,
    max_chunk_line_bytes: 16,
    max_interim_responses: 2,
    max_encodings: 2,
};

/// Everything a caller can observe after feeding one response.
#[derive(Debug, PartialEq)]
struct Outcome {
    result: Result<Progress, HttpError>,
    consumed: usize,
    raw: Vec<u8>,
    head: Option<ResponseHead>,
    head_len: usize,
    body: Vec<u8>,
    reusable: bool,
    content: Option<(Result<bool, HttpError>, Vec<u8>)>,
}

/// One read's bytes: through `process`, or (`in_place`) as a plain connection's read into
/// `recv_room` brings them.
fn feed(
    dec: &mut ResponseDecoder,
    piece: &[u8],
    in_place: bool,
) -> Result<(Progress, usize), HttpError> {
    if in_place {
        dec.process_as_received(piece)
    } else {
        dec.process(piece)
    }
}

fn run<'a>(
    limits: Limits,
    head_request: bool,
    in_place: bool,
    pieces: impl Iterator<Item = &'a [u8]>,
) -> (Outcome, ResponseDecoder) {
    let mut dec = ResponseDecoder::new(limits);
    dec.reset(head_request);
    let mut consumed = 0;
    let mut result = Ok(Progress::NeedMore);
    for piece in pieces {
        match feed(&mut dec, piece, in_place) {
            Ok((Progress::NeedMore, used)) => {
                assert_eq!(used, piece.len(), "NeedMore must take every byte");
                consumed += used;
            }
            Ok((Progress::Complete, used)) => {
                assert!(used <= piece.len());
                consumed += used;
                result = Ok(Progress::Complete);
                break;
            }
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    if result == Ok(Progress::NeedMore) {
        result = dec.process_eof();
    }
    let max_raw =
        limits.max_head_bytes as u64 + limits.max_body_bytes + limits.max_framing_bytes as u64;
    assert!(dec.raw().len() as u64 <= max_raw, "raw() past its bound");
    let content = match (result, dec.head()) {
        (Ok(Progress::Complete), Some(head)) => {
            let mut out = Vec::new();
            let r = decode_content(head, dec.body(), &limits, &mut out);
            assert!(out.len() as u64 <= limits.max_decoded_bytes + 1);
            Some((r, out))
        }
        _ => None,
    };
    if result.is_err() {
        // How much was buffered when an error was noticed may differ by split; the error may not.
        let outcome = Outcome {
            result,
            consumed: 0,
            raw: Vec::new(),
            head: None,
            head_len: 0,
            body: Vec::new(),
            reusable: false,
            content: None,
        };
        return (outcome, dec);
    }
    let outcome = Outcome {
        result,
        consumed,
        raw: dec.raw().to_vec(),
        head: dec.head().cloned(),
        head_len: dec.head_len(),
        body: dec.body().to_vec(),
        reusable: dec.reusable(),
        content,
    };
    (outcome, dec)
}

fuzz_target!(|input: &[u8]| {
    let Some((&flags, rest)) = input.split_first() else {
        return;
    };
    let Some((&n, rest)) = rest.split_first() else {
        return;
    };
    let n = usize::from(n % 16).min(rest.len());
    let (splits, data) = rest.split_at(n);
    let limits = if flags & 1 == 1 {
        TIGHT
    } else {
        Limits::default()
    };
    let head_request = flags & 2 == 2;
    let in_place = flags & 4 == 4;

    let (whole, _) = run(
        limits,
        head_request,
        false,
        std::iter::once(data).filter(|d| !d.is_empty()),
    );

    let mut pieces = Vec::new();
    let mut at = 0;
    let mut i = 0;
    while at < data.len() {
        let len = splits
            .get(i % splits.len().max(1))
            .map_or(data.len(), |&b| usize::from(b) + 1);
        let end = (at + len).min(data.len());
        pieces.push(&data[at..end]);
        at = end;
        i += 1;
    }
    let (split, mut dec) = run(limits, head_request, in_place, pieces.into_iter());
    assert_eq!(whole, split, "outcome depends on the split");

    // A kept-alive connection: the bytes after the response start the next one.
    if split.result == Ok(Progress::Complete) {
        dec.reset(false);
        let _ = dec.process(&data[split.consumed..]);
        let _ = dec.process_eof();
    }
});
