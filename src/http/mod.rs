//! HTTP/1.1 client core, sans-IO (ARCHITECTURE §6): request writing and response decoding.
//!
//! This module owns the bytes of one exchange: [`write_request`] appends a request to a buffer,
//! [`ResponseDecoder`] takes whatever the socket produced and finds the response in it (head,
//! framing, body), [`decode_content`] undoes `Content-Encoding`, [`retry_after`] reads how
//! long a 429 or 503 asks us to wait, and [`Validators`] are what a conditional request sends
//! back; [`cookies`] is the cookie jar; [`auth`] reads 401 challenges and computes the Basic and
//! Digest answers; [`parse_incoming`] reads the head of a request sent to
//! us (the `--metrics` endpoint). Every size it handles is
//! bounded by [`Limits`], and every failure is an [`HttpError`] that maps onto one
//! [`ReturnCode`].
//!
//! It opens no sockets and reads no clock: the event loop (`event_loop`, `fetch`) owns the
//! connection, the timeouts (a trickling server is stopped by the fetch deadline there, not here)
//! and the decision to reuse a connection, guided by [`ResponseDecoder::reusable`]. TLS lives in
//! `tls`, and the WARC record built from [`ResponseDecoder::raw`] in `warc`.

pub mod auth;
mod content;
pub mod cookies;
mod headers;
mod incoming;
mod request;
mod response;
mod retry_after;
mod validators;

pub use content::{decode_content, decode_content_with, DecodeOptions};
pub use headers::Headers;
pub use incoming::{
    parse_incoming, Incoming, IncomingError, IncomingMethod, IncomingRequest, MAX_INCOMING_HEAD,
};
pub use request::{host_and_port, path_and_query, write_request, Method, Request, RequestError};
pub use response::{ContentCoding, Framing, Progress, ResponseDecoder, ResponseHead};
pub use retry_after::{parse_retry_after, retry_after};
pub use validators::{Validators, MAX_VALIDATOR_BYTES};

use crate::ReturnCode;

/// Default cap on the response head (status line + headers + blank line), per response.
pub const DEFAULT_MAX_HEAD_BYTES: usize = 64 * 1024;
/// Default cap on header lines in one head.
pub const DEFAULT_MAX_HEADERS: usize = 100;
/// Default cap on the raw body (chunk data only for chunked bodies; framing is capped apart).
pub const DEFAULT_MAX_BODY_BYTES: u64 = 64 * 1024 * 1024;
/// Default cap on the body after content decoding.
pub const DEFAULT_MAX_DECODED_BYTES: u64 = 64 * 1024 * 1024;
/// Default cap on all chunked framing bytes of one body (size lines, CRLFs, trailers).
pub const DEFAULT_MAX_FRAMING_BYTES: usize = 1024 * 1024;
/// Default cap on one chunk-size or trailer line, extensions and line ending included.
pub const DEFAULT_MAX_CHUNK_LINE_BYTES: usize = 4 * 1024;
/// Default cap on interim (1xx) responses before the final one.
pub const DEFAULT_MAX_INTERIM_RESPONSES: usize = 8;
/// Default cap on stacked content codings.
pub const DEFAULT_MAX_ENCODINGS: usize = 4;

/// Every bound the decoder enforces. `raw()` never exceeds
/// `max_head_bytes + max_body_bytes + max_framing_bytes`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub max_head_bytes: usize,
    pub max_headers: usize,
    pub max_body_bytes: u64,
    pub max_decoded_bytes: u64,
    pub max_framing_bytes: usize,
    pub max_chunk_line_bytes: usize,
    pub max_interim_responses: usize,
    pub max_encodings: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_head_bytes: DEFAULT_MAX_HEAD_BYTES,
            max_headers: DEFAULT_MAX_HEADERS,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_decoded_bytes: DEFAULT_MAX_DECODED_BYTES,
            max_framing_bytes: DEFAULT_MAX_FRAMING_BYTES,
            max_chunk_line_bytes: DEFAULT_MAX_CHUNK_LINE_BYTES,
            max_interim_responses: DEFAULT_MAX_INTERIM_RESPONSES,
            max_encodings: DEFAULT_MAX_ENCODINGS,
        }
    }
}

/// Why a response could not be read, named by where it failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HttpError {
    /// The peer closed before sending any byte.
    Empty,
    /// The first bytes are not `HTTP/`, or the status line is malformed.
    StatusLine,
    /// The status line names a version other than HTTP/1.0 or HTTP/1.1.
    Version,
    /// The peer closed inside the response head.
    HeadIncomplete,
    /// A header line is malformed (bad name, NUL or control byte in a value, bad line end).
    HeaderSyntax,
    /// `Content-Length` is not a number, or repeated with different values.
    ContentLength,
    /// A `101 Switching Protocols` arrived though we never ask to upgrade.
    UnexpectedUpgrade,
    /// More interim (1xx) responses than `max_interim_responses`.
    TooManyInterim,
    /// The head is longer than `max_head_bytes`.
    HeadTooLarge,
    /// The head has more than `max_headers` header lines.
    TooManyHeaders,
    /// A chunk-size line is not unsigned hex, overflows u64, or has junk after the size.
    ChunkSize,
    /// Chunk data is not followed by a line end.
    ChunkDataEnd,
    /// One chunk-size or trailer line is longer than `max_chunk_line_bytes`.
    ChunkLineTooLong,
    /// The chunked framing as a whole is longer than `max_framing_bytes`.
    FramingTooLarge,
    /// The peer closed before the end of a length- or chunk-delimited body.
    BodyTruncated,
    /// The raw body exceeds `max_body_bytes`.
    BodyTooLarge,
    /// The content-decoded body exceeds `max_decoded_bytes`.
    DecodedTooLarge,
    /// The body does not decode under its `Content-Encoding` (bad data, bad checksum, truncated).
    BadContentEncoding,
    /// A `Content-Encoding` we do not implement.
    UnknownContentEncoding,
    /// More stacked content codings than `max_encodings`.
    TooManyEncodings,
}

impl HttpError {
    /// The user-visible outcome for this failure.
    pub fn return_code(self) -> ReturnCode {
        use HttpError::*;
        match self {
            Empty => ReturnCode::MimePageEmpty,
            StatusLine => ReturnCode::MimeNoStatusLine,
            Version => ReturnCode::MimeUnsupportedHttpVersion,
            HeadIncomplete => ReturnCode::MimeMissing,
            HeaderSyntax | ContentLength | UnexpectedUpgrade => ReturnCode::MimeBadHeader,
            HeadTooLarge => ReturnCode::HttpHeadTooLarge,
            // An interim-response flood is "too many header lines" spread over several heads.
            TooManyHeaders | TooManyInterim => ReturnCode::HttpTooManyHeaders,
            ChunkSize | ChunkDataEnd | ChunkLineTooLong | FramingTooLarge => {
                ReturnCode::MimeBadChunkEncoding
            }
            BodyTruncated => ReturnCode::HttpPageTruncated,
            BodyTooLarge => ReturnCode::HttpBodyTooLarge,
            DecodedTooLarge => ReturnCode::HttpDecodedTooLarge,
            BadContentEncoding | UnknownContentEncoding => ReturnCode::HttpBadContentEncoding,
            TooManyEncodings => ReturnCode::HttpTooManyEncodings,
        }
    }
}
