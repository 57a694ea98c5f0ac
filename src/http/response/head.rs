//! Parsing a complete response head (httparse) into a [`ResponseHead`]: the framing, the
//! connection's persistence and the content codings it announces.

use std::mem::MaybeUninit;

use crate::http::{Headers, HttpError};

/// A head is either interim (skipped) or final.
pub(super) enum Parsed {
    Interim,
    Final(ResponseHead, Persistence),
}

/// How the body's end is found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// HEAD response, 204, 304: the head is the whole response.
    NoBody,
    /// `Content-Length`.
    Length(u64),
    /// `Transfer-Encoding: ..., chunked`.
    Chunked,
    /// The body runs until the peer closes.
    Close,
}

/// One `Content-Encoding` element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ContentCoding {
    /// `gzip` or `x-gzip`.
    Gzip,
    Deflate,
    Identity,
    /// Anything else (`br`, `compress`, `zstd`, junk).
    Unknown,
}

/// The parsed head of the final response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResponseHead {
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    pub version_minor: u8,
    pub status: u16,
    /// In order received; names lowercased; obs-fold line breaks replaced by spaces.
    pub headers: Headers,
    /// The `Content-Length` value, if present (also when `Transfer-Encoding` overrides it).
    pub content_length: Option<u64>,
    pub framing: Framing,
    /// `Content-Encoding` elements in the order applied by the server.
    pub content_encodings: Vec<ContentCoding>,
    /// `Connection: close` was sent.
    pub connection_close: bool,
}

impl ResponseHead {
    /// The first value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    }

    pub fn content_type(&self) -> Option<&[u8]> {
        self.header("content-type")
    }

    pub fn location(&self) -> Option<&[u8]> {
        self.header("location")
    }
}

/// What the head says beyond `ResponseHead`, needed for `reusable()`.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Persistence {
    pub(super) keep_alive: bool,
    pub(super) te_and_cl: bool,
}

/// Header slots [`parse_head`] keeps on the stack (the default limit, `DEFAULT_MAX_HEADERS`,
/// fits).
const STACK_HEADERS: usize = 128;

/// Parses a complete head into `headers` (cleared first: a previous head's buffers).
pub(super) fn parse_head(
    buf: &[u8],
    max_headers: usize,
    head_request: bool,
    mut headers: Headers,
) -> Result<Parsed, HttpError> {
    // Header slots on the stack (uninitialised: httparse writes the ones it fills) unless the
    // limit is unusually high: no allocation per response.
    let mut on_stack = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; STACK_HEADERS];
    let mut on_heap = Vec::new();
    let slots = if max_headers <= STACK_HEADERS {
        &mut on_stack[..max_headers]
    } else {
        on_heap.resize_with(max_headers, MaybeUninit::uninit);
        &mut on_heap[..]
    };
    let mut resp = httparse::Response::new(&mut []);
    let mut config = httparse::ParserConfig::default();
    config
        .allow_obsolete_multiline_headers_in_responses(true)
        .allow_multiple_spaces_in_response_status_delimiters(true);
    match config.parse_response_with_uninit_headers(&mut resp, buf, slots) {
        Ok(httparse::Status::Complete(n)) if n == buf.len() => {}
        // We only call with a buffer ending in its first blank line; anything else means
        // httparse saw the line structure differently (e.g. a stray CR): malformed.
        Ok(_) => return Err(HttpError::HeaderSyntax),
        Err(httparse::Error::Version) => return Err(HttpError::Version),
        Err(httparse::Error::Status | httparse::Error::Token) => return Err(HttpError::StatusLine),
        Err(httparse::Error::TooManyHeaders) => return Err(HttpError::TooManyHeaders),
        Err(
            httparse::Error::HeaderName | httparse::Error::HeaderValue | httparse::Error::NewLine,
        ) => return Err(HttpError::HeaderSyntax),
    }
    let (Some(version_minor), Some(status)) = (resp.version, resp.code) else {
        return Err(HttpError::StatusLine);
    };
    match status {
        0..=99 => return Err(HttpError::StatusLine),
        101 => return Err(HttpError::UnexpectedUpgrade),
        100..=199 => return Ok(Parsed::Interim),
        _ => {}
    }

    headers.clear();
    let mut content_length: Option<u64> = None;
    let mut te_seen = false;
    let mut te_last_chunked = false;
    let mut connection_close = false;
    let mut keep_alive = false;
    let mut content_encodings = Vec::new();
    for h in resp.headers.iter() {
        let (name, value) = headers.push(h.name, h.value);
        match name {
            "content-length" => {
                for element in value.split(|&b| b == b',') {
                    let n = parse_decimal(trim_ows(element)).ok_or(HttpError::ContentLength)?;
                    if content_length.is_some_and(|c| c != n) {
                        return Err(HttpError::ContentLength);
                    }
                    content_length = Some(n);
                }
            }
            "transfer-encoding" => {
                te_seen = true;
                for element in list_elements(value) {
                    te_last_chunked = element.eq_ignore_ascii_case(b"chunked");
                }
            }
            "connection" => {
                for element in list_elements(value) {
                    connection_close |= element.eq_ignore_ascii_case(b"close");
                    keep_alive |= element.eq_ignore_ascii_case(b"keep-alive");
                }
            }
            "content-encoding" => {
                content_encodings.extend(list_elements(value).map(content_coding));
            }
            _ => {}
        }
    }

    let framing = if head_request || status == 204 || status == 304 {
        Framing::NoBody
    } else if te_seen && te_last_chunked {
        Framing::Chunked
    } else if te_seen {
        Framing::Close
    } else if let Some(n) = content_length {
        Framing::Length(n)
    } else {
        Framing::Close
    };
    let head = ResponseHead {
        version_minor,
        status,
        headers,
        content_length,
        framing,
        content_encodings,
        connection_close,
    };
    let persistence = Persistence {
        keep_alive,
        te_and_cl: te_seen && content_length.is_some(),
    };
    Ok(Parsed::Final(head, persistence))
}

fn content_coding(element: &[u8]) -> ContentCoding {
    if element.eq_ignore_ascii_case(b"gzip") || element.eq_ignore_ascii_case(b"x-gzip") {
        ContentCoding::Gzip
    } else if element.eq_ignore_ascii_case(b"deflate") {
        ContentCoding::Deflate
    } else if element.eq_ignore_ascii_case(b"identity") {
        ContentCoding::Identity
    } else {
        ContentCoding::Unknown
    }
}

/// Non-empty elements of a comma-separated header list, whitespace-trimmed.
fn list_elements(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value
        .split(|&b| b == b',')
        .map(trim_ows)
        .filter(|e| !e.is_empty())
}

pub(super) fn trim_ows(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

/// `1*DIGIT` as u64; None when empty, not all digits, or overflowing.
fn parse_decimal(s: &[u8]) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    s.iter().try_fold(0u64, |acc, &b| {
        let d = (b as char).to_digit(10)?;
        acc.checked_mul(10)?.checked_add(u64::from(d))
    })
}
