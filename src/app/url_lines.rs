//! The lines of a URL list (`-i FILE` of `fetch` and `crawl`), read in bounded memory.
//!
//! A list is read in pieces of [`PIECE_BYTES`], and a line is kept only up to the longest URL
//! accepted (or [`LOGGED_PREFIX_BYTES`], if more): a longer line is skipped to its end without
//! being stored and comes out as [`Line::TooLong`] with its first [`LOGGED_PREFIX_BYTES`], so
//! a 100 MB line costs no more than a short one. A line that is not UTF-8 comes out as [`Line::NotUtf8`] rather than
//! ending the run. A leading UTF-8 byte-order mark is skipped; whitespace around a line
//! (a Windows `\r` too) is trimmed; blank lines and `#` comments are skipped. What a line
//! means (a URL, and which outcome a bad one is logged with) is the caller's: `app::fetch`
//! for the `fetch` list, `app::config` for a crawl's seeds.

use std::io::{self, Read};

/// Bytes read from the list at a time.
pub const PIECE_BYTES: usize = 64 << 10;
/// Of a line too long to be a URL, this many bytes are kept to name it in crawl.log: enough
/// to recognise it, small beside the longest URL accepted.
pub const LOGGED_PREFIX_BYTES: usize = 256;
/// The UTF-8 encoding of U+FEFF, which some editors put at the start of a text file.
const BOM: &[u8; 3] = b"\xEF\xBB\xBF";

/// One line of a list, as read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Line {
    /// A line with text in it: trimmed, not blank, not a `#` comment.
    Text(String),
    /// Longer than the limit once trimmed: the first bytes of it (lossily decoded), to log.
    /// The rest of the line was skipped, never held.
    TooLong(String),
    /// Not UTF-8: the line lossily decoded, to log.
    NotUtf8(String),
}

/// Reads the lines of a list from any reader, one piece at a time.
pub struct UrlLines<R> {
    input: R,
    piece: Box<[u8]>,
    /// The unread bytes of `piece` are `piece[pos..filled]`.
    pos: usize,
    filled: usize,
    /// The current line from its first non-blank byte, at most `keep` bytes of it.
    line: Vec<u8>,
    /// The current line has a non-blank byte past `keep`: the rest is skipped.
    over: bool,
    max_len: usize,
    /// Bytes of a line kept: `max_len`, or enough to log the start of a longer line.
    keep: usize,
    /// Number (from 1) of the line being read.
    number: u64,
    /// The start of the input was checked for a byte-order mark.
    bom_checked: bool,
    eof: bool,
}

/// ASCII whitespace as `str::trim` sees it (`u8::is_ascii_whitespace` lacks `\x0B`).
fn is_blank(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\x0B' | b'\x0C' | b'\r')
}

impl<R: Read> UrlLines<R> {
    /// Lines of `input`; one longer than `max_len` bytes (trimmed) is [`Line::TooLong`].
    pub fn new(input: R, max_len: usize) -> UrlLines<R> {
        UrlLines::with_piece(input, max_len, PIECE_BYTES)
    }

    /// As [`UrlLines::new`], reading at most `piece` bytes at a time (at least 4, so that the
    /// byte-order mark fits).
    pub fn with_piece(input: R, max_len: usize, piece: usize) -> UrlLines<R> {
        UrlLines {
            input,
            piece: vec![0; piece.max(BOM.len() + 1)].into_boxed_slice(),
            pos: 0,
            filled: 0,
            line: Vec::new(),
            over: false,
            max_len,
            keep: max_len.max(LOGGED_PREFIX_BYTES),
            number: 1,
            bom_checked: false,
            eof: false,
        }
    }

    /// The next line with something in it, and its number; `None` at the end of the input.
    /// A read error is returned once; the lines end there (the line it cut is dropped).
    pub fn next_line(&mut self) -> io::Result<Option<(u64, Line)>> {
        loop {
            if self.pos == self.filled {
                if self.eof {
                    return Ok(self.end_line(true));
                }
                self.fill()?;
                continue;
            }
            let avail = &self.piece[self.pos..self.filled];
            match memchr::memchr(b'\n', avail) {
                Some(i) => {
                    Self::take(&mut self.line, &mut self.over, self.keep, &avail[..i]);
                    self.pos += i + 1;
                    if let Some(line) = self.end_line(false) {
                        return Ok(Some(line));
                    }
                }
                None => {
                    Self::take(&mut self.line, &mut self.over, self.keep, avail);
                    self.pos = self.filled;
                }
            }
        }
    }

    /// Reads the next piece (the first one with at least the byte-order mark's length, if
    /// the input is that long, and without the mark).
    fn fill(&mut self) -> io::Result<()> {
        self.pos = 0;
        self.filled = 0;
        let want = if self.bom_checked { 1 } else { BOM.len() };
        // Bounded: each pass reads at least one byte or ends the input.
        while self.filled < want {
            match self.input.read(&mut self.piece[self.filled..]) {
                Ok(0) => {
                    self.eof = true;
                    break;
                }
                Ok(n) => self.filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    // What the line would have been is not known: it is dropped with the rest.
                    self.eof = true;
                    self.line.clear();
                    return Err(e);
                }
            }
        }
        if !self.bom_checked {
            self.bom_checked = true;
            if self.piece[..self.filled].starts_with(BOM) {
                self.pos = BOM.len();
            }
        }
        Ok(())
    }

    /// Adds `bytes` (no newline among them) to the current line: blanks before its first
    /// byte are dropped, and past `keep` only blanks may follow (trailing ones, trimmed
    /// anyway); anything else makes the line too long.
    fn take(line: &mut Vec<u8>, over: &mut bool, keep: usize, mut bytes: &[u8]) {
        if *over {
            return;
        }
        if line.is_empty() {
            let start = bytes
                .iter()
                .position(|&b| !is_blank(b))
                .unwrap_or(bytes.len());
            bytes = &bytes[start..];
        }
        let room = keep - line.len();
        if bytes.len() <= room {
            line.extend_from_slice(bytes);
        } else {
            line.extend_from_slice(&bytes[..room]);
            *over = bytes[room..].iter().any(|&b| !is_blank(b));
        }
    }

    /// The line just ended (at a newline, or at the end of the input), unless it is blank or
    /// a comment; the next one starts empty.
    fn end_line(&mut self, at_eof: bool) -> Option<(u64, Line)> {
        let number = self.number;
        let over = std::mem::take(&mut self.over);
        if !at_eof {
            self.number += 1;
        }
        if self.line.is_empty() || self.line[0] == b'#' {
            self.line.clear();
            return None;
        }
        // Where the line's text ends, trailing blanks left out.
        let end = self
            .line
            .iter()
            .rposition(|&b| !is_blank(b))
            .map_or(0, |i| i + 1);
        let line = if over || end > self.max_len {
            let head = &self.line[..end.min(LOGGED_PREFIX_BYTES)];
            let head = &head[..head
                .iter()
                .rposition(|&b| !is_blank(b))
                .map_or(0, |i| i + 1)];
            Some(Line::TooLong(String::from_utf8_lossy(head).into_owned()))
        } else {
            match std::str::from_utf8(&self.line) {
                // Unicode blanks too, as `str::trim` (leading ASCII ones are gone already).
                Ok(text) => match text.trim() {
                    "" => None,
                    t if t.starts_with('#') => None,
                    t => Some(Line::Text(t.to_string())),
                },
                Err(_) => Some(Line::NotUtf8(
                    String::from_utf8_lossy(&self.line).trim().to_string(),
                )),
            }
        };
        self.line.clear();
        line.map(|line| (number, line))
    }
}

#[cfg(test)]
#[path = "url_lines_tests.rs"]
mod tests;
