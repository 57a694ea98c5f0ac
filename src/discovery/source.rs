//! A body as its decoded bytes, bounded: inflated if it starts with gzip's magic bytes
//! (`1F 8B`, several members as `pigz` writes them), never more than
//! [`MAX_DECODED_BYTES`] in all nor `xml::MAX_EVENT_BYTES` per XML event (the XML reader calls
//! [`Source::limit_event`] before each event), with the start sniffed
//! (byte order mark, UTF-16, markup or text) and a bounded line reader for text sitemaps.
//!
//! A gzip bomb costs the inflater's state and one buffer: bytes are handed on as they
//! inflate, and the bound ends the read as [`ReadError::DecodedTooLarge`].

use std::io::{self, BufRead, BufReader, Read};

use flate2::bufread::MultiGzDecoder;

use super::{ReadError, MAX_DECODED_BYTES, MAX_INPUT_BYTES};

/// Bytes read from an inflating body at a time: large enough that the first read holds the
/// byte order mark and the XML declaration whole.
const GZIP_BUFFER: usize = 32 * 1024;

/// Where the decoded bytes come from: the body itself, or its gzip inflation.
enum Body<'a> {
    Plain(&'a [u8]),
    /// Boxed: the inflater's state is large, and most bodies are plain.
    Gzip(Box<BufReader<MultiGzDecoder<&'a [u8]>>>),
}

/// Why a [`Source`] stopped handing out bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stop {
    Decoded,
    Event,
    Gzip,
}

/// The decoded body as a `BufRead`, refusing to go past [`MAX_DECODED_BYTES`] in all or
/// `xml::MAX_EVENT_BYTES` in one event; it remembers why it refused, so the reader can tell a
/// bomb from broken XML.
pub(crate) struct Source<'a> {
    body: Body<'a>,
    /// Decoded bytes handed over so far.
    pos: u64,
    /// The current event may not read past this.
    event_end: u64,
    stop: Option<Stop>,
}

impl<'a> Source<'a> {
    /// The body as its decoded bytes: inflated if it starts with gzip's magic bytes.
    pub(crate) fn new(body: &'a [u8]) -> Result<Source<'a>, ReadError> {
        if body.len() > MAX_INPUT_BYTES {
            return Err(ReadError::InputTooLarge);
        }
        let body = if body.starts_with(&[0x1f, 0x8b]) {
            Body::Gzip(Box::new(BufReader::with_capacity(
                GZIP_BUFFER,
                MultiGzDecoder::new(body),
            )))
        } else {
            Body::Plain(body)
        };
        Ok(Source {
            body,
            pos: 0,
            event_end: u64::MAX,
            stop: None,
        })
    }

    /// The next `max` bytes are all one event may take.
    pub(crate) fn limit_event(&mut self, max: u64) {
        self.event_end = self.pos.saturating_add(max);
    }

    /// The error a failed read means, if this source caused it.
    pub(crate) fn stopped(&self) -> Option<ReadError> {
        self.stop.map(|s| match s {
            Stop::Decoded => ReadError::DecodedTooLarge,
            Stop::Event => ReadError::ElementTooLarge,
            Stop::Gzip => ReadError::BadGzip,
        })
    }

    /// Reads the start of the body: skips a UTF-8 byte order mark and leading whitespace,
    /// refuses UTF-16 and UTF-32, and says whether markup or text follows.
    pub(crate) fn sniff(&mut self) -> Result<Sniffed, ReadError> {
        let head = self.fill()?;
        if head.starts_with(b"\xEF\xBB\xBF") {
            self.consume(3);
        } else if head.starts_with(b"\xFE\xFF")
            || head.starts_with(b"\xFF\xFE")
            || head.starts_with(b"<\0")
            || head.starts_with(b"\0<")
            || head.starts_with(b"\0\0")
        {
            return Err(ReadError::UnsupportedEncoding);
        }
        // Bound: each turn consumes the whitespace it saw, or returns.
        loop {
            let buf = self.fill()?;
            let ws = buf.iter().take_while(|b| b.is_ascii_whitespace()).count();
            match buf.get(ws) {
                None if ws == 0 => return Ok(Sniffed::Empty),
                None => self.consume(ws),
                Some(&b) => {
                    self.consume(ws);
                    return Ok(if b == b'<' {
                        Sniffed::Markup
                    } else {
                        Sniffed::Text
                    });
                }
            }
        }
    }

    /// [`BufRead::fill_buf`], its failure as a [`ReadError`].
    fn fill(&mut self) -> Result<&[u8], ReadError> {
        if self.fill_buf().is_err() {
            return Err(self.stopped().unwrap_or(ReadError::BadGzip));
        }
        // Filled and not consumed: this hands back the same bytes without reading.
        Ok(self.fill_buf().unwrap_or_default())
    }

    /// Reads the next line (without its end) into `out`, keeping at most `max` bytes of it:
    /// `Ok(None)` at the end, `Ok(Some(false))` if the line was longer and was cut.
    pub(crate) fn read_line(
        &mut self,
        out: &mut Vec<u8>,
        max: usize,
    ) -> Result<Option<bool>, ReadError> {
        out.clear();
        let mut whole = true;
        let mut any = false;
        // Bound: each turn consumes at least one byte, or ends the line or the input.
        loop {
            let buf = self.fill()?;
            if buf.is_empty() {
                return Ok(any.then_some(whole));
            }
            any = true;
            let (chunk, used, eol) = match memchr::memchr(b'\n', buf) {
                Some(n) => (&buf[..n], n + 1, true),
                None => (buf, buf.len(), false),
            };
            let room = max.saturating_sub(out.len());
            if chunk.len() > room {
                whole = false;
            }
            out.extend_from_slice(&chunk[..chunk.len().min(room)]);
            self.consume(used);
            if eol {
                return Ok(Some(whole));
            }
        }
    }
}

/// What a body starts with, after a byte order mark and whitespace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sniffed {
    Markup,
    Text,
    Empty,
}

impl Read for Source<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let buf = self.fill_buf()?;
        let n = buf.len().min(out.len());
        out[..n].copy_from_slice(&buf[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for Source<'_> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        let end = self.event_end.min(MAX_DECODED_BYTES);
        let room = end.saturating_sub(self.pos);
        let available = match &mut self.body {
            Body::Plain(rest) => Ok(&rest[..]),
            Body::Gzip(z) => z.fill_buf(),
        };
        let available = match available {
            Ok(b) => b,
            Err(e) => {
                self.stop.get_or_insert(Stop::Gzip);
                return Err(e);
            }
        };
        if available.is_empty() {
            return Ok(available);
        }
        if room == 0 {
            self.stop.get_or_insert(if end == MAX_DECODED_BYTES {
                Stop::Decoded
            } else {
                Stop::Event
            });
            return Err(io::Error::other("discovery: size bound reached"));
        }
        let n = usize::try_from(room)
            .unwrap_or(usize::MAX)
            .min(available.len());
        Ok(&available[..n])
    }

    fn consume(&mut self, n: usize) {
        match &mut self.body {
            Body::Plain(rest) => *rest = &rest[n.min(rest.len())..],
            Body::Gzip(z) => z.consume(n),
        }
        self.pos += n as u64;
    }
}
