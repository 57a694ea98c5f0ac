//! Response decoding: from the bytes a connection delivers to one framed response.
//!
//! [`ResponseDecoder`] is fed every read as it arrives and answers "need more" or "complete",
//! keeping the final response exactly as received in [`ResponseDecoder::raw`] (for the WARC) and
//! the body with chunking removed in [`ResponseDecoder::body`]. Content codings are undone later,
//! by `content::decode_content`, only for the consumers that want decoded text.
//!
//! How the hostile cases are handled (ARCHITECTURE §6):
//! - The head is handed to `httparse` only once a blank line is in the buffer; the search for it
//!   resumes where the last one stopped, so a 1-byte trickle costs linear time, not quadratic.
//! - obs-fold (a header line continued by leading whitespace) is accepted, as RFC 9112 §5.2 asks
//!   of user agents: each line break inside the value is replaced by a space.
//! - `Transfer-Encoding` beats `Content-Length`; such a response is never reusable. A
//!   `Transfer-Encoding` whose last coding is not `chunked` makes the body close-delimited.
//! - Repeated `Content-Length` values (as separate headers or a list) must all be equal.
//! - Interim 1xx responses are read and dropped (bounded count); `101` is an error.
//! - Chunk sizes are unsigned hex with overflow checks; every chunk-size/trailer line and the
//!   framing as a whole are capped; a declared length over the body cap fails at once.
//! - Nothing is buffered past the limits: `raw()` is at most head + body + framing caps.
//!
//! Large bodies need not stay in memory: [`ResponseDecoder::spill`] hands the body bytes
//! received so far (as received, transfer coding intact) to the caller and forgets them, and
//! from then on the body is not kept (`body()` is empty); only framing still being parsed stays.
//! The limits count every byte, spilled or not. A head's fields are parsed in `head`; reading
//! straight into the raw buffer is `receive`.

use memchr::memchr;

use self::head::{parse_head, trim_ows, Parsed, Persistence};
pub use self::head::{ContentCoding, Framing, ResponseHead};
use super::{Headers, HttpError, Limits};

/// A decoder keeps at most this much buffer capacity across `reset()`, so one huge response does
/// not pin its memory to a kept-alive connection for the rest of the crawl.
const RETAINED_CAPACITY: usize = 256 * 1024;

/// Whether a response is finished.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    NeedMore,
    Complete,
}

/// Where the decoder is in the response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Reading a head (interim or final); `scan_from` is where the blank-line search resumes.
    Head {
        scan_from: usize,
    },
    Body(Body),
    Done,
    /// Sticky: every later call returns the same error.
    Failed(HttpError),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Body {
    Length { remaining: u64 },
    Close,
    Chunked(Chunk),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Chunk {
    /// Reading a framing line that starts at `start` in the raw buffer.
    Line {
        kind: LineKind,
        start: usize,
    },
    Data {
        remaining: u64,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LineKind {
    /// `1*HEXDIG [ext]`.
    Size,
    /// The empty line after chunk data.
    DataEnd,
    /// A trailer field, or the empty line that ends the body.
    Trailer,
}

/// Incremental decoder for one response at a time on a connection. See the module docs.
#[derive(Debug)]
pub struct ResponseDecoder {
    limits: Limits,
    head_request: bool,
    state: State,
    /// The final response as received (interim heads are dropped from the front).
    buf: Vec<u8>,
    /// Chunk data, for chunked bodies only.
    decoded: Vec<u8>,
    head: Option<ResponseHead>,
    /// The last head's header buffers, cleared, for the next head to fill.
    spare_headers: Headers,
    head_len: usize,
    /// False once the body has been spilled: body bytes are then neither kept in `buf` past
    /// the next spill nor copied to `decoded`.
    retain_body: bool,
    /// Raw body bytes handed out by `spill`.
    spilled: u64,
    /// Chunk data bytes seen (kept or not), for the body limit.
    chunk_data_seen: u64,
    persistence: Persistence,
    interim_seen: usize,
    framing_bytes: usize,
    received_any: bool,
    /// How often httparse ran: the trickle test checks it is once per head.
    #[cfg(test)]
    parse_attempts: usize,
}

impl ResponseDecoder {
    pub fn new(limits: Limits) -> Self {
        ResponseDecoder {
            limits,
            head_request: false,
            state: State::Head { scan_from: 0 },
            buf: Vec::new(),
            decoded: Vec::new(),
            head: None,
            spare_headers: Headers::default(),
            head_len: 0,
            retain_body: true,
            spilled: 0,
            chunk_data_seen: 0,
            persistence: Persistence::default(),
            interim_seen: 0,
            framing_bytes: 0,
            received_any: false,
            #[cfg(test)]
            parse_attempts: 0,
        }
    }

    /// Starts a new response (the answer to a HEAD request when `head_request`), keeping buffers.
    pub fn reset(&mut self, head_request: bool) {
        self.head_request = head_request;
        self.state = State::Head { scan_from: 0 };
        self.buf.clear();
        self.buf.shrink_to(RETAINED_CAPACITY);
        self.decoded.clear();
        self.decoded.shrink_to(RETAINED_CAPACITY);
        if let Some(head) = self.head.take() {
            self.spare_headers = head.headers;
            self.spare_headers.clear_and_shrink(RETAINED_CAPACITY);
        }
        self.head_len = 0;
        self.retain_body = true;
        self.spilled = 0;
        self.chunk_data_seen = 0;
        self.persistence = Persistence::default();
        self.interim_seen = 0;
        self.framing_bytes = 0;
        self.received_any = false;
        #[cfg(test)]
        {
            self.parse_attempts = 0;
        }
    }

    /// Takes the next bytes read from the connection. Returns the progress and how many bytes of
    /// `input` belong to this response; bytes after its end are left for the caller.
    pub fn process(&mut self, input: &[u8]) -> Result<(Progress, usize), HttpError> {
        if !input.is_empty() {
            self.received_any = true;
        }
        let mut used = 0;
        // Bound: every pass either consumes at least one byte or moves the state to Done or
        // Failed (a head with no room left fails), so there are at most input.len() + 1 passes.
        loop {
            let rest = &input[used..];
            let step = match self.state {
                State::Failed(e) => return Err(e),
                State::Done => return Ok((Progress::Complete, used)),
                State::Head { scan_from } => self.step_head(scan_from, rest),
                State::Body(body) => self.step_body(body, rest),
            };
            match step {
                Ok(n) => used += n,
                Err(e) => {
                    self.state = State::Failed(e);
                    return Err(e);
                }
            }
            if used == input.len() && self.state != State::Done {
                return Ok((Progress::NeedMore, used));
            }
        }
    }

    /// The peer closed the connection.
    pub fn process_eof(&mut self) -> Result<Progress, HttpError> {
        let outcome = match self.state {
            State::Failed(e) => Err(e),
            State::Done => Ok(Progress::Complete),
            State::Head { .. } if !self.received_any => Err(HttpError::Empty),
            State::Head { .. } => Err(HttpError::HeadIncomplete),
            State::Body(Body::Close) => {
                self.state = State::Done;
                Ok(Progress::Complete)
            }
            State::Body(_) => Err(HttpError::BodyTruncated),
        };
        if let Err(e) = outcome {
            self.state = State::Failed(e);
        }
        outcome
    }

    /// The final response's head, once parsed.
    pub fn head(&self) -> Option<&ResponseHead> {
        self.head.as_ref()
    }

    /// The final response as received: head, then body with transfer coding intact (after a
    /// [`ResponseDecoder::spill`], only the body bytes received since).
    pub fn raw(&self) -> &[u8] {
        &self.buf
    }

    /// Hands the raw body bytes buffered so far to `out` and drops them (a framing line still
    /// being read stays); from now on the body is not kept. Returns how many bytes went out.
    /// Does nothing before the head is parsed.
    pub fn spill(&mut self, out: &mut dyn FnMut(&[u8])) -> usize {
        let end = match self.state {
            State::Body(Body::Chunked(Chunk::Line { start, .. })) => start,
            // After a failure in the body, what came is still the response as far as it went.
            State::Body(_) | State::Done | State::Failed(_) => self.buf.len(),
            State::Head { .. } => return 0,
        };
        if self.head.is_none() || end <= self.head_len {
            self.retain_body = self.head.is_none();
            return 0;
        }
        out(&self.buf[self.head_len..end]);
        let n = end - self.head_len;
        self.buf.drain(self.head_len..end);
        self.buf.shrink_to(RETAINED_CAPACITY);
        if let State::Body(Body::Chunked(Chunk::Line { kind, start })) = self.state {
            self.state = State::Body(Body::Chunked(Chunk::Line {
                kind,
                start: start - n,
            }));
        }
        self.spilled += n as u64;
        self.retain_body = false;
        self.decoded = Vec::new();
        n
    }

    /// Whether the body was spilled (and so is not in `body()` / `raw()`).
    pub fn spilled(&self) -> bool {
        !self.retain_body
    }

    /// Raw body bytes received so far, spilled or not.
    pub fn body_bytes_seen(&self) -> u64 {
        (self.buf.len() - self.head_len.min(self.buf.len())) as u64 + self.spilled
    }

    /// Bytes of memory this decoder holds for the response (buffered raw bytes and chunk data).
    pub fn buffered(&self) -> usize {
        self.buf.len() + self.decoded.len()
    }

    /// Bytes of memory this decoder has allocated (what pooling it keeps).
    pub fn capacity(&self) -> usize {
        self.buf.capacity() + self.decoded.capacity()
    }

    /// Bytes allocated for the raw bytes (0 after [`Self::take_raw`] until
    /// [`Self::give_raw`] or the next response's first bytes).
    pub fn raw_capacity(&self) -> usize {
        self.buf.capacity()
    }

    /// Offset of the body within `raw()` (0 until the head is parsed).
    pub fn head_len(&self) -> usize {
        self.head_len
    }

    /// The body with transfer coding removed (content coding still applied); empty once the
    /// body was spilled.
    pub fn body(&self) -> &[u8] {
        self.body_in(&self.buf)
    }

    /// [`Self::body`] once the raw bytes were taken ([`Self::take_raw`]): `raw` is them.
    pub fn body_in<'a>(&'a self, raw: &'a [u8]) -> &'a [u8] {
        match &self.head {
            _ if !self.retain_body => &[],
            Some(h) if h.framing == Framing::Chunked => &self.decoded,
            Some(_) => raw.get(self.head_len..).unwrap_or(&[]),
            None => &[],
        }
    }

    /// Moves the raw bytes ([`Self::raw`]) out, so that they can be shared without a copy;
    /// the decoder is left with none (the head, `head_len` and chunk data stay).
    pub fn take_raw(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.buf)
    }

    /// Takes back a buffer [`Self::take_raw`] gave out (its last holder is done with it), to
    /// receive the next response into. Between responses only: the raw bytes are empty then.
    pub fn give_raw(&mut self, mut buf: Vec<u8>) {
        debug_assert!(self.buf.is_empty(), "raw bytes not taken");
        if buf.capacity() > self.buf.capacity() {
            buf.clear();
            self.buf = buf;
        }
    }

    /// Whether the connection may carry another request after this response. (If `process`
    /// left bytes unconsumed, the peer sent more than the response: close anyway.)
    pub fn reusable(&self) -> bool {
        let Some(head) = &self.head else { return false };
        self.state == State::Done
            && head.framing != Framing::Close
            && !self.persistence.te_and_cl
            && !head.connection_close
            && (head.version_minor >= 1 || self.persistence.keep_alive)
    }

    #[cfg(test)]
    fn parse_attempts(&self) -> usize {
        self.parse_attempts
    }

    /// Head state: buffer up to the head cap, look for the blank line, parse once found.
    fn step_head(&mut self, scan_from: usize, rest: &[u8]) -> Result<usize, HttpError> {
        let max = self.limits.max_head_bytes;
        let old_len = self.buf.len();
        // Append first, search after: body bytes that came in the same read are copied once
        // more when the body state takes them, at most max_head_bytes per response.
        let take = rest.len().min(max.saturating_sub(old_len));
        // The usual case: the whole head is in this read. Found in place, only the head is
        // copied (the read's body bytes would otherwise be copied twice: here and by the
        // body state).
        if old_len == 0 {
            if let Some(end) = self.whole_head(rest) {
                // Room for the body bytes of this read too: one allocation, not a head-sized
                // one grown by the body (the buffer is often new: the last one was shared).
                self.buf.reserve(rest.len());
                self.buf.extend_from_slice(&rest[..end]);
                self.finish_head()?;
                return Ok(end);
            }
        }
        self.buf.extend_from_slice(&rest[..take]);
        // Reject non-HTTP at once rather than waiting for a blank line that may never come.
        let n = self.buf.len().min(5);
        if self.buf[..n] != b"HTTP/"[..n] {
            return Err(HttpError::StatusLine);
        }
        match find_head_end(&self.buf, scan_from) {
            Err(_) if self.buf.len() >= max => Err(HttpError::HeadTooLarge),
            Err(next) => {
                self.state = State::Head { scan_from: next };
                Ok(take)
            }
            Ok(end) => {
                // The previous scan covered old_len, so the end lies in the new bytes.
                debug_assert!(end > old_len);
                self.buf.truncate(end);
                self.finish_head()?;
                Ok(end - old_len)
            }
        }
    }

    /// Where a head that starts `data` and lies whole in it (within the head limit) ends: the
    /// usual first read of a response, which both entry points take without searching again.
    fn whole_head(&self, data: &[u8]) -> Option<usize> {
        let take = data.len().min(self.limits.max_head_bytes);
        if !data.starts_with(b"HTTP/") {
            return None;
        }
        find_head_end(&data[..take], 0).ok()
    }

    /// `buf` holds exactly one complete head: parse it and choose the next state.
    fn finish_head(&mut self) -> Result<(), HttpError> {
        #[cfg(test)]
        {
            self.parse_attempts += 1;
        }
        let headers = std::mem::take(&mut self.spare_headers);
        let parsed = parse_head(
            &self.buf,
            self.limits.max_headers,
            self.head_request,
            headers,
        )?;
        let Parsed::Final(head, persistence) = parsed else {
            self.interim_seen += 1;
            if self.interim_seen > self.limits.max_interim_responses {
                return Err(HttpError::TooManyInterim);
            }
            self.buf.clear();
            self.state = State::Head { scan_from: 0 };
            return Ok(());
        };
        self.head_len = self.buf.len();
        self.persistence = persistence;
        // An announced length over the limit is not refused here: the head is kept and the
        // body read up to the limit, so the caller still has the status and the first part
        // (a robots.txt over the limit is parsed as far as it goes; the WARC keeps what came).
        self.state = match head.framing {
            Framing::NoBody | Framing::Length(0) => State::Done,
            Framing::Length(n) => State::Body(Body::Length { remaining: n }),
            Framing::Chunked => State::Body(Body::Chunked(Chunk::Line {
                kind: LineKind::Size,
                start: self.buf.len(),
            })),
            Framing::Close => State::Body(Body::Close),
        };
        self.head = Some(head);
        Ok(())
    }

    fn step_body(&mut self, body: Body, rest: &[u8]) -> Result<usize, HttpError> {
        match body {
            Body::Length { remaining } => {
                let take = self.length_take(remaining, rest.len());
                self.buf.extend_from_slice(&rest[..take.kept()]);
                self.length_taken(remaining, take)
            }
            Body::Close => {
                let have = self.body_bytes_seen();
                if have + rest.len() as u64 > self.limits.max_body_bytes {
                    return Err(HttpError::BodyTooLarge);
                }
                self.buf.extend_from_slice(rest);
                Ok(rest.len())
            }
            Body::Chunked(Chunk::Data { remaining }) => {
                let take = clamp(remaining, rest.len());
                self.buf.extend_from_slice(&rest[..take]);
                if self.retain_body {
                    self.decoded.extend_from_slice(&rest[..take]);
                }
                self.chunk_data_seen += take as u64;
                let remaining = remaining - take as u64;
                let next = if remaining == 0 {
                    Chunk::Line {
                        kind: LineKind::DataEnd,
                        start: self.buf.len(),
                    }
                } else {
                    Chunk::Data { remaining }
                };
                self.state = State::Body(Body::Chunked(next));
                Ok(take)
            }
            Body::Chunked(Chunk::Line { kind, start }) => self.step_chunk_line(kind, start, rest),
        }
    }

    /// How much of `available` bytes a `Content-Length` body with `remaining` bytes to come
    /// takes, and whether that stays within the body limit.
    fn length_take(&self, remaining: u64, available: usize) -> LengthTake {
        let take = clamp(remaining, available);
        let room = self
            .limits
            .max_body_bytes
            .saturating_sub(self.body_bytes_seen());
        if take as u64 > room {
            LengthTake::TooLarge {
                kept: clamp(room, take),
            }
        } else {
            LengthTake::Body(take)
        }
    }

    /// The next state once the bytes of `take` are kept: the body's rest, done, or over the
    /// limit (the caller keeps what fits, as received). Returns the bytes taken.
    fn length_taken(&mut self, remaining: u64, take: LengthTake) -> Result<usize, HttpError> {
        let LengthTake::Body(take) = take else {
            return Err(HttpError::BodyTooLarge);
        };
        let remaining = remaining - take as u64;
        self.state = if remaining == 0 {
            State::Done
        } else {
            State::Body(Body::Length { remaining })
        };
        Ok(take)
    }

    /// Accumulates one framing line in the raw buffer; acts on it once its `\n` arrives.
    fn step_chunk_line(
        &mut self,
        kind: LineKind,
        start: usize,
        rest: &[u8],
    ) -> Result<usize, HttpError> {
        let (take, complete) = match memchr(b'\n', rest) {
            Some(p) => (p + 1, true),
            None => (rest.len(), false),
        };
        // Both budgets grow with the same bytes, so the smaller one is always hit first,
        // whatever the read sizes: the error does not depend on how the input was split.
        let line_room = self
            .limits
            .max_chunk_line_bytes
            .saturating_sub(self.buf.len() - start);
        let framing_room = self
            .limits
            .max_framing_bytes
            .saturating_sub(self.framing_bytes);
        if take > line_room.min(framing_room) {
            return Err(if line_room <= framing_room {
                HttpError::ChunkLineTooLong
            } else {
                HttpError::FramingTooLarge
            });
        }
        self.buf.extend_from_slice(&rest[..take]);
        self.framing_bytes += take;
        if !complete {
            return Ok(take);
        }
        let line = strip_line_end(&self.buf[start..]);
        let after = self.buf.len();
        let next = match kind {
            LineKind::Size => {
                let size = parse_chunk_size(line)?;
                if size == 0 {
                    Chunk::Line {
                        kind: LineKind::Trailer,
                        start: after,
                    }
                } else if size
                    > self
                        .limits
                        .max_body_bytes
                        .saturating_sub(self.chunk_data_seen)
                {
                    return Err(HttpError::BodyTooLarge);
                } else {
                    Chunk::Data { remaining: size }
                }
            }
            LineKind::DataEnd if line.is_empty() => Chunk::Line {
                kind: LineKind::Size,
                start: after,
            },
            LineKind::DataEnd => return Err(HttpError::ChunkDataEnd),
            LineKind::Trailer if line.is_empty() => {
                self.state = State::Done;
                return Ok(take);
            }
            LineKind::Trailer => Chunk::Line {
                kind: LineKind::Trailer,
                start: after,
            },
        };
        self.state = State::Body(Body::Chunked(next));
        Ok(take)
    }
}

/// What a read brings to a `Content-Length` body ([`ResponseDecoder::length_take`]).
#[derive(Clone, Copy)]
enum LengthTake {
    /// This many bytes belong to the body.
    Body(usize),
    /// The body outgrows its limit: the first `kept` bytes are kept, then it fails.
    TooLarge { kept: usize },
}

impl LengthTake {
    /// The bytes to keep.
    fn kept(self) -> usize {
        match self {
            LengthTake::Body(n) | LengthTake::TooLarge { kept: n } => n,
        }
    }
}

/// `min(remaining, available)` without truncating a u64 on 32-bit targets.
fn clamp(remaining: u64, available: usize) -> usize {
    usize::try_from(remaining).map_or(available, |r| r.min(available))
}

/// Finds the end of the head (just past the blank line), scanning from `from`. When not found,
/// returns where the next search must resume: at a `\n` whose follower has not arrived yet.
fn find_head_end(buf: &[u8], from: usize) -> Result<usize, usize> {
    let mut i = from;
    while let Some(p) = memchr(b'\n', &buf[i..]) {
        let nl = i + p;
        match (buf.get(nl + 1), buf.get(nl + 2)) {
            (Some(b'\n'), _) => return Ok(nl + 2),
            (Some(b'\r'), Some(b'\n')) => return Ok(nl + 3),
            (None, _) | (Some(b'\r'), None) => return Err(nl),
            _ => i = nl + 1,
        }
    }
    Err(buf.len())
}

/// Drops the `\n` and an optional `\r` before it.
fn strip_line_end(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// `1*HEXDIG [ BWS ";" extensions ]`: unsigned, checked for overflow. Extensions are not
/// interpreted, only checked to hold no control bytes (bar HTAB).
fn parse_chunk_size(line: &[u8]) -> Result<u64, HttpError> {
    let digits = line.iter().take_while(|b| b.is_ascii_hexdigit()).count();
    if digits == 0 {
        return Err(HttpError::ChunkSize);
    }
    let mut size: u64 = 0;
    for &b in &line[..digits] {
        // Invariant: take_while above admitted only hex digits.
        let d = (b as char).to_digit(16).expect("hex digit");
        size = size
            .checked_mul(16)
            .and_then(|s| s.checked_add(u64::from(d)))
            .ok_or(HttpError::ChunkSize)?;
    }
    match trim_ows(&line[digits..]) {
        [] => Ok(size),
        [b';', ext @ ..] if !ext.iter().any(|&b| (b < b' ' && b != b'\t') || b == 0x7f) => Ok(size),
        _ => Err(HttpError::ChunkSize),
    }
}

mod head;
mod receive;
#[cfg(test)]
mod tests;
