//! Decoder tests: a table of responses that must decode identically however the input is split
//! (every two-way split, byte at a time, random multi-way splits), plus targeted checks.

use super::*;
use crate::http::decode_content;
use crate::ReturnCode;
use proptest::prelude::*;

/// Everything a caller can observe after feeding one input.
#[derive(Debug, PartialEq)]
struct Outcome {
    result: Result<Progress, HttpError>,
    consumed: usize,
    raw: Vec<u8>,
    head_len: usize,
    body: Vec<u8>,
    head: Option<ResponseHead>,
    reusable: bool,
}

#[derive(Clone, Debug)]
enum Want {
    Done {
        /// Bytes of input that belong to the response (the rest is left over).
        consumed: usize,
        /// Where the final response starts in the input (after interim responses).
        raw_from: usize,
        body: Vec<u8>,
        status: u16,
        framing: Framing,
        reusable: bool,
    },
    Fail(HttpError),
}

#[derive(Clone, Debug)]
struct Case {
    name: &'static str,
    input: Vec<u8>,
    limits: Limits,
    head_request: bool,
    /// Call `process_eof` if the input did not complete the response.
    eof: bool,
    want: Want,
}

fn case(name: &'static str, input: impl AsRef<[u8]>) -> Case {
    let input = input.as_ref().to_vec();
    Case {
        name,
        want: Want::Fail(HttpError::Empty),
        input,
        limits: Limits::default(),
        head_request: false,
        eof: false,
    }
}

impl Case {
    fn eof(mut self) -> Self {
        self.eof = true;
        self
    }
    fn head_request(mut self) -> Self {
        self.head_request = true;
        self
    }
    fn limits(mut self, f: impl FnOnce(&mut Limits)) -> Self {
        f(&mut self.limits);
        self
    }
    fn fail(mut self, e: HttpError) -> Self {
        self.want = Want::Fail(e);
        self
    }
    /// Completes, consuming all input but `leftover` bytes, starting the final response at
    /// `raw_from`.
    fn done(
        mut self,
        leftover: usize,
        raw_from: usize,
        body: &[u8],
        status: u16,
        framing: Framing,
        reusable: bool,
    ) -> Self {
        self.want = Want::Done {
            consumed: self.input.len() - leftover,
            raw_from,
            body: body.to_vec(),
            status,
            framing,
            reusable,
        };
        self
    }
}

fn run(c: &Case, pieces: &[&[u8]]) -> Outcome {
    run_with(c, pieces, Feed::Process)
}

/// How the test hands a decoder the bytes of one read.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Feed {
    /// `process`, as for TLS.
    Process,
    /// Written into `recv_room` wherever it is offered (as large as the piece allows) and
    /// taken with `process_received`; `process` elsewhere: as a plain connection reads.
    InPlace,
}

/// One read's bytes into the decoder by `feed`: what `process` returns for them.
fn feed_piece(
    d: &mut ResponseDecoder,
    piece: &[u8],
    feed: Feed,
) -> Result<(Progress, usize), HttpError> {
    match feed {
        Feed::Process => d.process(piece),
        Feed::InPlace => d.process_as_received(piece),
    }
}

fn run_with(c: &Case, pieces: &[&[u8]], feed: Feed) -> Outcome {
    let mut d = ResponseDecoder::new(c.limits);
    d.reset(c.head_request);
    let mut consumed = 0;
    let mut result = Ok(Progress::NeedMore);
    for piece in pieces {
        match feed_piece(&mut d, piece, feed) {
            Ok((Progress::NeedMore, n)) => {
                assert_eq!(n, piece.len(), "{}: NeedMore must consume all", c.name);
                consumed += n;
            }
            Ok((Progress::Complete, n)) => {
                consumed += n;
                result = Ok(Progress::Complete);
                break;
            }
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    if result == Ok(Progress::NeedMore) && c.eof {
        result = d.process_eof();
    }
    let l = c.limits;
    assert!(
        d.raw().len() <= l.max_head_bytes + l.max_body_bytes as usize + l.max_framing_bytes,
        "{}: raw over the limits",
        c.name
    );
    if result.is_err() {
        // After an error only the error is meaningful (and it must be sticky).
        assert_eq!(d.process(b"more").err(), result.err(), "{}", c.name);
        return Outcome {
            result,
            consumed: 0,
            raw: Vec::new(),
            head_len: 0,
            body: Vec::new(),
            head: None,
            reusable: false,
        };
    }
    Outcome {
        result,
        consumed,
        raw: d.raw().to_vec(),
        head_len: d.head_len(),
        body: d.body().to_vec(),
        head: d.head().cloned(),
        reusable: d.reusable(),
    }
}

fn check_expected(c: &Case, o: &Outcome) {
    match &c.want {
        Want::Fail(e) => assert_eq!(o.result, Err(*e), "{}", c.name),
        Want::Done {
            consumed,
            raw_from,
            body,
            status,
            framing,
            reusable,
        } => {
            assert_eq!(o.result, Ok(Progress::Complete), "{}", c.name);
            assert_eq!(o.consumed, *consumed, "{}: consumed", c.name);
            assert_eq!(o.raw, &c.input[*raw_from..*consumed], "{}: raw", c.name);
            assert_eq!(o.body, *body, "{}: body", c.name);
            let head = o.head.as_ref().expect("complete implies a head");
            assert_eq!(head.status, *status, "{}", c.name);
            assert_eq!(head.framing, *framing, "{}", c.name);
            assert_eq!(o.reusable, *reusable, "{}: reusable", c.name);
            assert!(o.head_len <= o.raw.len(), "{}", c.name);
        }
    }
}

const OK_HEAD: &str = "HTTP/1.1 200 OK\r\n";

fn gzip(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// A complete head of exactly `n` bytes (n >= 60).
fn head_of_len(n: usize) -> String {
    let fixed = format!("{OK_HEAD}X-Pad: \r\nContent-Length: 0\r\n\r\n").len();
    let pad = "p".repeat(n - fixed);
    format!("{OK_HEAD}X-Pad: {pad}\r\nContent-Length: 0\r\n\r\n")
}

fn cases() -> Vec<Case> {
    use Framing::*;
    use HttpError as E;
    let interim = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n";
    let gz = gzip(b"compressed page");
    let mut gz_resp = format!(
        "{OK_HEAD}Content-Encoding: gzip\r\nContent-Length: {}\r\n\r\n",
        gz.len()
    )
    .into_bytes();
    gz_resp.extend_from_slice(&gz);
    let chunked = |body: &str| format!("{OK_HEAD}Transfer-Encoding: chunked\r\n\r\n{body}");
    vec![
        // ---- complete responses ----
        case("length", format!("{OK_HEAD}Content-Length: 5\r\nContent-Type: text/html\r\n\r\nhello"))
            .done(0, 0, b"hello", 200, Length(5), true),
        case("length_leftover", format!("{OK_HEAD}Content-Length: 5\r\n\r\nhelloHTTP/1.1 200"))
            .done(12, 0, b"hello", 200, Length(5), true),
        case("length_zero", format!("{OK_HEAD}Content-Length: 0\r\n\r\nextra"))
            .done(5, 0, b"", 200, Length(0), true),
        case(
            "chunked_ext_trailers",
            chunked("5;name=val\r\nhello\r\n6 ; a=\"b\"\r\n world\r\n0\r\nX-Sum: abc\r\nX-B: c\r\n\r\nXYZ"),
        )
        .done(3, 0, b"hello world", 200, Chunked, true),
        case(
            "chunked_lf_only_leading_zeros",
            "HTTP/1.1 200 OK\nTransfer-Encoding: Chunked\n\n0003\nabc\n00000000000000000001\nd\n0\n\n",
        )
        .done(0, 0, b"abcd", 200, Chunked, true),
        case(
            "chunked_beats_length_not_reusable",
            format!("{OK_HEAD}Content-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n"),
        )
        .done(0, 0, b"hi", 200, Chunked, false),
        case("close_delimited", format!("{OK_HEAD}\r\nall of it"))
            .eof()
            .done(0, 0, b"all of it", 200, Close, false),
        case(
            "te_not_chunked_is_close",
            format!("{OK_HEAD}Transfer-Encoding: chunked, gzip\r\nContent-Length: 3\r\n\r\nabcdef"),
        )
        .eof()
        .done(0, 0, b"abcdef", 200, Close, false),
        case("interim_then_final", format!("{interim}{OK_HEAD}Content-Length: 2\r\n\r\nok"))
            .done(0, interim.len(), b"ok", 200, Length(2), true),
        case("no_content_204", "HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\nhello")
            .done(5, 0, b"", 204, NoBody, true),
        case("not_modified_304", "HTTP/1.1 304 Not Modified\r\nContent-Length: 100\r\n\r\n")
            .done(0, 0, b"", 304, NoBody, true),
        case("head_request", format!("{OK_HEAD}Content-Length: 1000\r\n\r\n"))
            .head_request()
            .done(0, 0, b"", 200, NoBody, true),
        case("no_reason_phrase", "HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n")
            .done(0, 0, b"", 200, Length(0), true),
        case("status_599", "HTTP/1.1 599 Custom\r\nContent-Length: 0\r\n\r\n")
            .done(0, 0, b"", 599, Length(0), true),
        case("http10_default_close", "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok")
            .done(0, 0, b"ok", 200, Length(2), false),
        case(
            "http10_keep_alive",
            "HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 2\r\n\r\nok",
        )
        .done(0, 0, b"ok", 200, Length(2), true),
        case("connection_close", format!("{OK_HEAD}Connection: close\r\nContent-Length: 2\r\n\r\nok"))
            .done(0, 0, b"ok", 200, Length(2), false),
        case(
            "obs_fold",
            format!("{OK_HEAD}X-Long: a\r\n  b\r\nContent-Length: 1\r\n\r\nz"),
        )
        .done(0, 0, b"z", 200, Length(1), true),
        case(
            "repeated_identical_length",
            format!("{OK_HEAD}Content-Length: 3\r\nContent-Length: 3, 3\r\n\r\nabc"),
        )
        .done(0, 0, b"abc", 200, Length(3), true),
        case("gzip_body", &gz_resp).done(0, 0, &gz, 200, Length(gz.len() as u64), true),
        case("head_exactly_at_limit", head_of_len(100))
            .limits(|l| l.max_head_bytes = 100)
            .done(0, 0, b"", 200, Length(0), true),
        case("body_exactly_at_limit", format!("{OK_HEAD}Content-Length: 5\r\n\r\nhello"))
            .limits(|l| l.max_body_bytes = 5)
            .done(0, 0, b"hello", 200, Length(5), true),
        case("close_body_exactly_at_limit", format!("{OK_HEAD}\r\nhello"))
            .limits(|l| l.max_body_bytes = 5)
            .eof()
            .done(0, 0, b"hello", 200, Close, false),
        case("interim_at_limit", format!("{}{OK_HEAD}Content-Length: 0\r\n\r\n", "HTTP/1.1 100 Continue\r\n\r\n".repeat(8)))
            .done(0, 8 * 25, b"", 200, Length(0), true),
        // ---- errors ----
        case("empty", "").eof().fail(E::Empty),
        case("not_http", "<html>hello</html>").fail(E::StatusLine),
        case("lowercase_http", "http/1.1 200 OK\r\n\r\n").fail(E::StatusLine),
        case("http2", "HTTP/2 200\r\n\r\n").fail(E::Version),
        case("http12", "HTTP/1.2 200 OK\r\n\r\n").fail(E::Version),
        case("http09_like", "HTTP/0.9 200 OK\r\n\r\n").fail(E::Version),
        case("bad_status", "HTTP/1.1 2x0 OK\r\n\r\n").fail(E::StatusLine),
        case("status_below_100", "HTTP/1.1 099 Odd\r\n\r\n").fail(E::StatusLine),
        case("head_incomplete", format!("{OK_HEAD}Content-Le")).eof().fail(E::HeadIncomplete),
        case("status_line_incomplete", "HTTP/1.").eof().fail(E::HeadIncomplete),
        case("nul_in_value", format!("{OK_HEAD}X-A: a\0b\r\n\r\n")).fail(E::HeaderSyntax),
        case("nul_in_name", format!("{OK_HEAD}X\0A: ab\r\n\r\n")).fail(E::HeaderSyntax),
        case("no_colon", format!("{OK_HEAD}Broken header\r\n\r\n")).fail(E::HeaderSyntax),
        case("conflicting_length", format!("{OK_HEAD}Content-Length: 3\r\nContent-Length: 4\r\n\r\nabcd"))
            .fail(E::ContentLength),
        case("length_list_conflict", format!("{OK_HEAD}Content-Length: 3, 4\r\n\r\nabcd"))
            .fail(E::ContentLength),
        case("negative_length", format!("{OK_HEAD}Content-Length: -1\r\n\r\n")).fail(E::ContentLength),
        case("overflowing_length", format!("{OK_HEAD}Content-Length: 18446744073709551616\r\n\r\n"))
            .fail(E::ContentLength),
        case("empty_length", format!("{OK_HEAD}Content-Length:\r\n\r\n")).fail(E::ContentLength),
        case("upgrade_101", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n")
            .fail(E::UnexpectedUpgrade),
        case("interim_flood", "HTTP/1.1 100 Continue\r\n\r\n".repeat(9)).fail(E::TooManyInterim),
        case("head_too_large_unterminated", format!("{OK_HEAD}X-Pad: {}", "a".repeat(200)))
            .limits(|l| l.max_head_bytes = 100)
            .fail(E::HeadTooLarge),
        case("head_one_over_limit", head_of_len(101))
            .limits(|l| l.max_head_bytes = 100)
            .fail(E::HeadTooLarge),
        case("too_many_headers", format!("{OK_HEAD}A: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n"))
            .limits(|l| l.max_headers = 3)
            .fail(E::TooManyHeaders),
        case("chunk_negative", chunked("-1\r\n")).fail(E::ChunkSize),
        case("chunk_overflow_17_digits", chunked("10000000000000000\r\nx")).fail(E::ChunkSize),
        case("chunk_non_hex", chunked("zz\r\n")).fail(E::ChunkSize),
        case("chunk_junk_after_size", chunked("5x\r\nhello\r\n")).fail(E::ChunkSize),
        case("chunk_empty_size", chunked("\r\n")).fail(E::ChunkSize),
        case("chunk_control_in_ext", chunked("5;a\x01b\r\n")).fail(E::ChunkSize),
        case("chunk_data_end_missing", chunked("3\r\nabcX\r\n0\r\n\r\n")).fail(E::ChunkDataEnd),
        case("chunk_line_too_long", chunked(&format!("5;{}\r\nhello\r\n", "e".repeat(40))))
            .limits(|l| l.max_chunk_line_bytes = 16)
            .fail(E::ChunkLineTooLong),
        case("trailers_too_large", chunked(&format!("0\r\n{}\r\n", "X-T: 0123456789\r\n".repeat(10))))
            .limits(|l| l.max_framing_bytes = 64)
            .fail(E::FramingTooLarge),
        case("truncated_length", format!("{OK_HEAD}Content-Length: 10\r\n\r\nhello"))
            .eof()
            .fail(E::BodyTruncated),
        case("truncated_chunked", chunked("5\r\nhel")).eof().fail(E::BodyTruncated),
        case("truncated_before_trailers_end", chunked("0\r\nX-A: b\r\n")).eof().fail(E::BodyTruncated),
        case("length_over_body_limit", format!("{OK_HEAD}Content-Length: 6\r\n\r\nhello!"))
            .limits(|l| l.max_body_bytes = 5)
            .fail(E::BodyTooLarge),
        case("close_over_body_limit", format!("{OK_HEAD}\r\nhello!"))
            .limits(|l| l.max_body_bytes = 5)
            .eof()
            .fail(E::BodyTooLarge),
        case("chunks_over_body_limit", chunked("3\r\nabc\r\n3\r\ndef\r\n0\r\n\r\n"))
            .limits(|l| l.max_body_bytes = 5)
            .fail(E::BodyTooLarge),
    ]
}

#[test]
fn table_gives_the_same_result_for_every_split() {
    for c in cases() {
        let whole = run(&c, &[&c.input]);
        check_expected(&c, &whole);
        for feed in [Feed::Process, Feed::InPlace] {
            let all = run_with(&c, &[&c.input], feed);
            assert_eq!(all, whole, "{}: {feed:?} in one read", c.name);
            for at in 0..=c.input.len() {
                let (a, b) = c.input.split_at(at);
                let split = run_with(&c, &[a, b], feed);
                assert_eq!(split, whole, "{}: {feed:?}, split at {at}", c.name);
            }
            let bytes: Vec<&[u8]> = c.input.chunks(1).collect();
            let trickled = run_with(&c, &bytes, feed);
            assert_eq!(trickled, whole, "{}: {feed:?}, byte at a time", c.name);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]
    #[test]
    fn random_multiway_splits_agree(index in 0usize..1000, cuts in prop::collection::vec(0usize..10_000, 0..12)) {
        let all = cases();
        let c = &all[index % all.len()];
        let mut cuts: Vec<usize> = cuts.into_iter().map(|x| x % (c.input.len() + 1)).collect();
        cuts.sort_unstable();
        let mut pieces = Vec::new();
        let mut from = 0;
        for cut in cuts {
            pieces.push(&c.input[from..cut]);
            from = cut;
        }
        pieces.push(&c.input[from..]);
        let whole = run(c, &[&c.input]);
        prop_assert_eq!(&run(c, &pieces), &whole, "{}", c.name);
        prop_assert_eq!(run_with(c, &pieces, Feed::InPlace), whole, "{} in place", c.name);
    }
}

#[test]
fn trickled_60k_head_is_parsed_once() {
    // 50 headers of ~1.2 KB: a 60 KB head fed one byte per read.
    let mut head = String::from(OK_HEAD);
    for i in 0..50 {
        head.push_str(&format!("X-H{i}: {}\r\n", "v".repeat(1200)));
    }
    head.push_str("Content-Length: 2\r\n\r\nok");
    assert!(head.len() > 60_000 && head.len() < 64 * 1024);
    let mut d = ResponseDecoder::new(Limits::default());
    d.reset(false);
    let mut result = None;
    for (i, b) in head.as_bytes().iter().enumerate() {
        let (p, n) = d.process(std::slice::from_ref(b)).unwrap();
        assert_eq!(n, 1);
        if p == Progress::Complete {
            assert_eq!(i, head.len() - 1);
            result = Some(p);
        }
    }
    assert_eq!(result, Some(Progress::Complete));
    assert_eq!(d.parse_attempts(), 1);
    assert_eq!(d.body(), b"ok");
    assert_eq!(d.head().unwrap().headers.len(), 51);
}

#[test]
fn head_fields_and_lookups() {
    let input = "HTTP/1.1 301 Moved\r\nLocation: /next\r\nContent-Type: text/html\r\n\
                 X-Long: a\r\n\tb\r\nContent-Encoding: x-gzip, identity, br\r\n\
                 Content-Length: 0\r\n\r\n";
    let mut d = ResponseDecoder::new(Limits::default());
    d.reset(false);
    assert_eq!(
        d.process(input.as_bytes()),
        Ok((Progress::Complete, input.len()))
    );
    let h = d.head().unwrap();
    assert_eq!((h.version_minor, h.status), (1, 301));
    assert_eq!(h.location(), Some(&b"/next"[..]));
    assert_eq!(h.content_type(), Some(&b"text/html"[..]));
    assert_eq!(
        h.header("X-LONG"),
        Some(&b"a  \tb"[..]),
        "obs-fold becomes spaces"
    );
    assert_eq!(h.headers.get(0).unwrap().0, "location");
    assert_eq!(
        h.content_encodings,
        [
            ContentCoding::Gzip,
            ContentCoding::Identity,
            ContentCoding::Unknown
        ]
    );
    assert_eq!(h.content_length, Some(0));
    assert!(!h.connection_close);
}

#[test]
fn keep_alive_sequence_reuses_the_decoder() {
    let first = format!("{OK_HEAD}Content-Length: 3\r\n\r\none");
    let second = format!("{OK_HEAD}Transfer-Encoding: chunked\r\n\r\n3\r\ntwo\r\n0\r\n\r\n");
    let stream = format!("{first}{second}");
    let mut d = ResponseDecoder::new(Limits::default());
    d.reset(false);
    let (p, n) = d.process(stream.as_bytes()).unwrap();
    assert_eq!((p, n), (Progress::Complete, first.len()));
    assert_eq!(d.body(), b"one");
    assert!(d.reusable());
    // Further calls after completion consume nothing.
    assert_eq!(d.process(b"xx"), Ok((Progress::Complete, 0)));
    d.reset(false);
    assert!(!d.reusable());
    assert_eq!(d.head(), None);
    let (p, n) = d.process(&stream.as_bytes()[first.len()..]).unwrap();
    assert_eq!((p, n), (Progress::Complete, second.len()));
    assert_eq!(d.body(), b"two");
    assert_eq!(d.raw(), second.as_bytes());
    assert!(d.reusable());
}

#[test]
fn gzip_response_body_decodes() {
    let page = b"<html>compressed page</html>".repeat(50);
    let gz = gzip(&page);
    let mut input =
        format!("{OK_HEAD}Content-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n")
            .into_bytes();
    for part in gz.chunks(100) {
        input.extend_from_slice(format!("{:x}\r\n", part.len()).as_bytes());
        input.extend_from_slice(part);
        input.extend_from_slice(b"\r\n");
    }
    input.extend_from_slice(b"0\r\n\r\n");
    let mut d = ResponseDecoder::new(Limits::default());
    d.reset(false);
    assert_eq!(d.process(&input), Ok((Progress::Complete, input.len())));
    assert_eq!(d.raw(), &input[..]);
    assert_eq!(d.body(), &gz[..]);
    let mut out = Vec::new();
    let decoded = decode_content(d.head().unwrap(), d.body(), &Limits::default(), &mut out);
    assert_eq!(decoded, Ok(true));
    assert_eq!(out, page);
}

#[test]
fn eof_outcomes() {
    let mut d = ResponseDecoder::new(Limits::default());
    d.reset(false);
    assert_eq!(d.process(b""), Ok((Progress::NeedMore, 0)));
    assert_eq!(d.process_eof(), Err(HttpError::Empty));
    // Sticky after eof errors too.
    assert_eq!(d.process_eof(), Err(HttpError::Empty));
    d.reset(false);
    let interim = b"HTTP/1.1 100 Continue\r\n\r\n";
    assert_eq!(d.process(interim), Ok((Progress::NeedMore, interim.len())));
    assert_eq!(d.process_eof(), Err(HttpError::HeadIncomplete));
}

#[test]
fn errors_map_onto_return_codes() {
    use HttpError as E;
    use ReturnCode as R;
    let table = [
        (E::Empty, R::MimePageEmpty),
        (E::StatusLine, R::MimeNoStatusLine),
        (E::Version, R::MimeUnsupportedHttpVersion),
        (E::HeadIncomplete, R::MimeMissing),
        (E::HeaderSyntax, R::MimeBadHeader),
        (E::ContentLength, R::MimeBadHeader),
        (E::UnexpectedUpgrade, R::MimeBadHeader),
        (E::TooManyInterim, R::HttpTooManyHeaders),
        (E::HeadTooLarge, R::HttpHeadTooLarge),
        (E::TooManyHeaders, R::HttpTooManyHeaders),
        (E::ChunkSize, R::MimeBadChunkEncoding),
        (E::ChunkDataEnd, R::MimeBadChunkEncoding),
        (E::ChunkLineTooLong, R::MimeBadChunkEncoding),
        (E::FramingTooLarge, R::MimeBadChunkEncoding),
        (E::BodyTruncated, R::HttpPageTruncated),
        (E::BodyTooLarge, R::HttpBodyTooLarge),
        (E::DecodedTooLarge, R::HttpDecodedTooLarge),
        (E::BadContentEncoding, R::HttpBadContentEncoding),
        (E::UnknownContentEncoding, R::HttpBadContentEncoding),
        (E::TooManyEncodings, R::HttpTooManyEncodings),
    ];
    for (e, r) in table {
        assert_eq!(e.return_code(), r, "{e:?}");
    }
}

#[test]
fn chunk_size_parser_reference() {
    assert_eq!(parse_chunk_size(b"ffffffffffffffff"), Ok(u64::MAX));
    assert_eq!(parse_chunk_size(b"0000000000000000000a"), Ok(10));
    assert_eq!(parse_chunk_size(b"1a;x=y"), Ok(26));
    assert_eq!(parse_chunk_size(b"1A \t; x"), Ok(26));
    for bad in [
        &b"10000000000000000"[..],
        b"-1",
        b"+1",
        b" 1",
        b"0x10",
        b"1 2",
        b"",
    ] {
        assert_eq!(parse_chunk_size(bad), Err(HttpError::ChunkSize), "{bad:?}");
    }
}

/// Pieces that hostile or broken servers combine; random sequences of them hit every state.
const TOKENS: &[&str] = &[
    "HTTP/1.1 200 OK\r\n",
    "HTTP/1.0 204 No\r\n",
    "HTTP/1.1 100 Continue\r\n",
    "HTTP/1.1 304 X\r\n",
    "HTTP/1.1 101 Up\r\n",
    "HTTP/2 200\r\n",
    "Content-Length: 5\r\n",
    "Content-Length: 3, 3\r\n",
    "Content-Length: 7\r\n",
    "Transfer-Encoding: chunked\r\n",
    "Transfer-Encoding: gzip\r\n",
    "Connection: close\r\n",
    "Connection: keep-alive\r\n",
    "X: \0\r\n",
    " folded\r\n",
    "\r\n",
    "\n",
    "\r",
    "5\r\n",
    "0\r\n",
    "3;ext=1\r\n",
    "-1\r\n",
    "fffffffffffffffff\r\n",
    "abc",
    "hello",
    "0123456789abcdef",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    /// Any byte soup: never a panic, never over the limits, and the outcome does not depend on
    /// how the bytes were split.
    #[test]
    fn token_soup_is_split_invariant(
        first in prop::sample::select(&[0usize, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5][..]),
        headers in prop::collection::vec(prop::sample::select(&[6usize, 7, 8, 9, 9, 9, 10, 11, 12, 13, 14][..]), 0..4),
        body in prop::collection::vec(0..TOKENS.len(), 0..20),
        cuts in prop::collection::vec(0usize..10_000, 0..8),
        head_request in prop::bool::weighted(0.1),
        eof: bool,
    ) {
        // Shaped like a response (status, headers, blank line, body) so most cases get past the
        // head and into framing; the tokens themselves stay hostile.
        let input: Vec<u8> = std::iter::once(first)
            .chain(headers)
            .chain(std::iter::once(15))
            .chain(body)
            .flat_map(|t| TOKENS[t].bytes())
            .collect();
        let mut c = case("soup", &input).limits(|l| {
            *l = Limits {
                max_head_bytes: 160,
                max_headers: 4,
                max_body_bytes: 12,
                max_decoded_bytes: 12,
                max_framing_bytes: 40,
                max_chunk_line_bytes: 12,
                max_interim_responses: 2,
                max_encodings: 2,
            }
        });
        c.head_request = head_request;
        c.eof = eof;
        let mut cuts: Vec<usize> = cuts.into_iter().map(|x| x % (input.len() + 1)).collect();
        cuts.sort_unstable();
        let mut pieces = Vec::new();
        let mut from = 0;
        for cut in cuts {
            pieces.push(&input[from..cut]);
            from = cut;
        }
        pieces.push(&input[from..]);
        let whole = run(&c, &[&input]);
        prop_assert_eq!(&run(&c, &pieces), &whole);
        prop_assert_eq!(run_with(&c, &pieces, Feed::InPlace), whole);
    }
}

/// Feeds `pieces`, spilling after each one; returns the result, the raw response rebuilt from
/// the head, every spilled byte and what stayed buffered, and the most the decoder held.
fn run_spilling(c: &Case, pieces: &[&[u8]]) -> (Result<Progress, HttpError>, Vec<u8>, usize) {
    let mut d = ResponseDecoder::new(c.limits);
    d.reset(c.head_request);
    let mut spilled = Vec::new();
    let mut result = Ok(Progress::NeedMore);
    let mut held = 0;
    for piece in pieces {
        let r = d.process(piece);
        held = held.max(d.buffered());
        d.spill(&mut |b: &[u8]| spilled.extend_from_slice(b));
        match r {
            Ok((Progress::NeedMore, _)) => {}
            Ok((Progress::Complete, _)) => {
                result = Ok(Progress::Complete);
                break;
            }
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    if result == Ok(Progress::NeedMore) && c.eof {
        result = d.process_eof();
    }
    let mut raw = d.raw()[..d.head_len()].to_vec();
    raw.extend_from_slice(&spilled);
    raw.extend_from_slice(&d.raw()[d.head_len()..]);
    if result.is_ok() && d.head().is_some() {
        assert_eq!(d.body_bytes_seen() as usize, raw.len() - d.head_len());
        assert_eq!(d.body(), b"", "{}: a spilled body is not kept", c.name);
    }
    (result, raw, held)
}

#[test]
fn spilling_never_changes_the_result_or_the_bytes() {
    for c in cases() {
        let whole = run(&c, &[&c.input]);
        for at in 0..=c.input.len() {
            let (a, b) = c.input.split_at(at);
            let (result, raw, _) = run_spilling(&c, &[a, b]);
            assert_eq!(result, whole.result, "{}: split at {at}", c.name);
            if result.is_ok() {
                assert_eq!(raw, whole.raw, "{}: split at {at}", c.name);
            }
        }
        let bytes: Vec<&[u8]> = c.input.chunks(1).collect();
        let (result, raw, _) = run_spilling(&c, &bytes);
        assert_eq!(result, whole.result, "{}: byte at a time", c.name);
        if result.is_ok() {
            assert_eq!(raw, whole.raw, "{}: byte at a time", c.name);
        }
    }
}

#[test]
fn a_spilled_body_is_not_kept_and_memory_stays_small() {
    // 4 MiB of chunked body in 64 KiB reads: spilled after each read, the decoder never holds
    // more than one read plus the head, yet the limit still counts every byte.
    let mut input = format!("{OK_HEAD}Transfer-Encoding: chunked\r\n\r\n").into_bytes();
    for _ in 0..64 {
        input.extend_from_slice(format!("{:x}\r\n", 65536).as_bytes());
        input.extend_from_slice(&[b'x'; 65536]);
        input.extend_from_slice(b"\r\n");
    }
    input.extend_from_slice(b"0\r\n\r\n");
    let c = case("big_chunked", &input);
    let pieces: Vec<&[u8]> = input.chunks(65536).collect();
    let (result, raw, held) = run_spilling(&c, &pieces);
    assert_eq!(result, Ok(Progress::Complete));
    assert_eq!(raw, input);
    assert!(held <= 2 * 65536 + 1024, "held {held}");
    let c = case("big_chunked_over_limit", &input).limits(|l| l.max_body_bytes = 1 << 20);
    let (result, _, _) = run_spilling(&c, &pieces);
    assert_eq!(result, Err(HttpError::BodyTooLarge));
}

#[test]
fn header_limits_above_and_below_the_stack_slots() {
    let head = |n: usize| {
        let mut h = String::from("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n");
        for i in 1..n {
            h.push_str(&format!("X-{i}: v\r\n"));
        }
        h + "\r\nok"
    };
    for (max_headers, n, ok) in [(100, 100, true), (100, 101, false), (300, 300, true)] {
        let mut d = ResponseDecoder::new(Limits {
            max_headers,
            ..Limits::default()
        });
        d.reset(false);
        let got = d.process(head(n).as_bytes());
        if ok {
            assert_eq!(got.unwrap().0, Progress::Complete, "{max_headers}: {n}");
            assert_eq!(d.head().unwrap().headers.len(), n);
        } else {
            assert_eq!(got, Err(HttpError::TooManyHeaders), "{max_headers}: {n}");
        }
    }
}

/// Raw bytes taken out leave the body readable through `body_in`, and a buffer given back
/// is received into when it has more room.
#[test]
fn raw_bytes_taken_and_given_back() {
    let input = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
    let mut d = ResponseDecoder::new(Limits::default());
    d.process(input).unwrap();
    let raw = d.take_raw();
    assert_eq!(raw, input);
    assert!(d.raw().is_empty() && d.body().is_empty());
    assert_eq!(d.body_in(&raw), b"hello");
    let room = raw.capacity().max(4096) * 2;
    let mut back = raw;
    back.reserve(room);
    let cap = back.capacity();
    d.give_raw(back);
    d.reset(false);
    assert!(d.raw().is_empty());
    d.process(input).unwrap();
    assert_eq!(d.body(), b"hello");
    assert!(
        cap < RETAINED_CAPACITY && d.capacity() >= cap,
        "the larger buffer is kept"
    );
}

/// Reading in place never takes more reads than the scratch buffer did: a response's first
/// read gets all the room asked for, a `Content-Length` body its rest and one byte (to see
/// bytes past the response) up to that, and framing that is not kept as it comes gets none.
#[test]
fn receive_room_is_as_large_as_a_scratch_read() {
    let max = 64 * 1024;
    let mut d = ResponseDecoder::new(Limits::default());
    d.reset(false);
    assert_eq!(d.recv_room(max).map(|r| r.len()), Some(max));
    assert!(d.recv_room(0).is_none());
    d.process(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\nabc")
        .unwrap();
    assert_eq!(d.recv_room(max).map(|r| r.len()), Some(max));
    d.process(&[b'x'; 99_000]).unwrap();
    assert_eq!(
        d.recv_room(max).map(|r| r.len()),
        Some(100_000 - 3 - 99_000 + 1)
    );
    d.reset(false);
    d.process(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        .unwrap();
    assert!(
        d.recv_room(max).is_none(),
        "chunk framing goes through process"
    );
}
