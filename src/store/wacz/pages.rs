//! `pages/pages.jsonl`: the package's entry points. Every stored HTML page is one: a
//! `response` record with a 2xx status and an HTML type (`text/html`,
//! `application/xhtml+xml`), as its WARC file's CDXJ says; redirects, errors, revisits and
//! other types are not pages. A line has `id`, `url`, `ts` (RFC 3339, from the index's
//! timestamp), `title` when the crawl kept it (`--markdown`'s lines) and `text` when it kept
//! the text (`--text`'s WET records), after the `json-pages-1.0` header line.
//!
//! One WARC file at a time: its pages are read from its index and put in record order
//! (by offset), then joined with its companions, which hold the same pages in the same order
//! (a noindex page has no text: the join is by offset for the Markdown lines, by URL and
//! date for the WET records). Memory is one WARC file's pages (URL and timestamp each) and
//! one page's text.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::path::Path;

use super::inputs::WarcInput;
use super::WaczError;
use crate::store::archive::cdxj::push_json_string;
use crate::store::archive::warc::stream::{StreamRecord, WarcStream};

/// Most of a page's text taken into its line.
pub const MAX_TEXT_BYTES: usize = 4 << 20;
/// Longest index or Markdown line read (a Markdown line holds the page's whole Markdown).
const MAX_LINE_BYTES: usize = 64 << 20;

/// A page as its index line gives it.
#[derive(Debug, PartialEq, Eq)]
struct Page {
    offset: u64,
    /// 14 digits.
    ts: String,
    url: String,
}

/// The header line; `has_text` when any WARC file has its text beside it.
pub fn header(has_text: bool) -> Vec<u8> {
    let mut h =
        b"{\"format\": \"json-pages-1.0\", \"id\": \"pages\", \"title\": \"All Pages\"".to_vec();
    if has_text {
        h.extend_from_slice(b", \"hasText\": true");
    }
    h.extend_from_slice(b"}\n");
    h
}

/// Writes the lines of `warc`'s pages (`file_no`: its place in the package, for the ids);
/// how many.
pub fn write_pages(
    file_no: usize,
    warc: &WarcInput,
    out: &mut impl Write,
) -> Result<u64, WaczError> {
    let mut pages = read_pages(&warc.cdxj)?;
    pages.sort_unstable_by_key(|p| p.offset);
    let mut titles = match &warc.markdown {
        Some(path) => Some(Titles::open(path)?),
        None => None,
    };
    let mut texts = match &warc.wet {
        Some(path) => Some(Texts::open(path, &pages)?),
        None => None,
    };
    let mut line = Vec::new();
    let io = |e| WaczError::Io(warc.path.clone(), e);
    for (i, p) in pages.iter().enumerate() {
        line.clear();
        line.extend_from_slice(
            format!("{{\"id\": \"{file_no:x}-{:x}\", \"url\": ", p.offset).as_bytes(),
        );
        push_json_string(&mut line, p.url.as_bytes());
        line.extend_from_slice(b", \"ts\": \"");
        push_rfc3339(&mut line, &p.ts);
        line.push(b'"');
        if let Some(t) = titles.as_mut() {
            if let Some(title) = t.at(p.offset)? {
                line.extend_from_slice(b", \"title\": ");
                push_json_string(&mut line, title.as_bytes());
            }
        }
        if let Some(t) = texts.as_mut() {
            if let Some(text) = t.of(i)? {
                line.extend_from_slice(b", \"text\": ");
                push_json_string(&mut line, text);
            }
        }
        line.extend_from_slice(b"}\n");
        out.write_all(&line).map_err(io)?;
    }
    Ok(pages.len() as u64)
}

/// `YYYYMMDDhhmmss` as `YYYY-MM-DDThh:mm:ssZ`.
fn push_rfc3339(out: &mut Vec<u8>, ts: &str) {
    let d = ts.as_bytes();
    for (i, &b) in d.iter().take(14).enumerate() {
        match i {
            4 | 6 => out.push(b'-'),
            8 => out.push(b'T'),
            10 | 12 => out.push(b':'),
            _ => {}
        }
        out.push(b);
    }
    out.push(b'Z');
}

/// Reads one line (with at most [`MAX_LINE_BYTES`]); false at the end.
fn next_line<R: BufRead>(r: &mut R, line: &mut Vec<u8>) -> io::Result<bool> {
    line.clear();
    let n = io::Read::take(&mut *r, MAX_LINE_BYTES as u64).read_until(b'\n', line)?;
    Ok(n > 0)
}

/// The HTML pages an index lists.
fn read_pages(cdxj: &Path) -> Result<Vec<Page>, WaczError> {
    let io = |e| WaczError::Io(cdxj.to_path_buf(), e);
    let mut r = BufReader::with_capacity(1 << 16, File::open(cdxj).map_err(io)?);
    let mut pages = Vec::new();
    let mut line = Vec::new();
    let html = memchr::memmem::Finder::new(b"\"mime\": \"text/html\"");
    let xhtml = memchr::memmem::Finder::new(b"\"mime\": \"application/xhtml+xml\"");
    // Bounded by the file: each pass reads a line.
    while next_line(&mut r, &mut line).map_err(io)? {
        // Most lines are not pages: a byte search before any parsing.
        if html.find(&line).is_none() && xhtml.find(&line).is_none() {
            continue;
        }
        let mut fields = line.splitn(3, |&b| b == b' ');
        let (Some(_key), Some(ts), Some(json)) = (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let Ok(v) = serde_json::from_slice::<serde_json::Value>(json) else {
            return Err(WaczError::BadIndexLine(cdxj.to_path_buf()));
        };
        let status = v["status"].as_str().unwrap_or("");
        let (Some(url), Some(offset)) = (
            v["url"].as_str(),
            v["offset"].as_str().and_then(|o| o.parse::<u64>().ok()),
        ) else {
            return Err(WaczError::BadIndexLine(cdxj.to_path_buf()));
        };
        if !status.starts_with('2') || status.len() != 3 {
            continue;
        }
        pages.push(Page {
            offset,
            ts: String::from_utf8_lossy(ts).into_owned(),
            url: url.to_string(),
        });
    }
    Ok(pages)
}

/// The titles of `X.warc.md.jsonl`, read in step with the pages (both in record order).
struct Titles {
    path: std::path::PathBuf,
    r: BufReader<File>,
    line: Vec<u8>,
    /// The line read ahead: its offset and title.
    next: Option<(u64, String)>,
}

impl Titles {
    fn open(path: &Path) -> Result<Titles, WaczError> {
        let f = File::open(path).map_err(|e| WaczError::Io(path.to_path_buf(), e))?;
        let mut t = Titles {
            path: path.to_path_buf(),
            r: BufReader::with_capacity(1 << 16, f),
            line: Vec::new(),
            next: None,
        };
        t.advance()?;
        Ok(t)
    }

    fn advance(&mut self) -> Result<(), WaczError> {
        let io = |e| WaczError::Io(self.path.clone(), e);
        self.next = None;
        // Bounded by the file: each pass reads a line; blank or foreign lines are skipped.
        while next_line(&mut self.r, &mut self.line).map_err(io)? {
            let Ok(v) = serde_json::from_slice::<serde_json::Value>(&self.line) else {
                continue;
            };
            if let Some(offset) = v["warc_offset"].as_u64() {
                let title = v["title"].as_str().unwrap_or("").to_string();
                self.next = Some((offset, title));
                return Ok(());
            }
        }
        Ok(())
    }

    /// The title of the page at `offset`, if its line says one (pages asked in order).
    fn at(&mut self, offset: u64) -> Result<Option<String>, WaczError> {
        // Bounded by the file's lines: each pass moves one on.
        while let Some((o, _)) = &self.next {
            if *o >= offset {
                break;
            }
            self.advance()?;
        }
        match self.next.take() {
            Some((o, title)) if o == offset => {
                self.advance()?;
                Ok(Some(title).filter(|t| !t.is_empty()))
            }
            other => {
                self.next = other;
                Ok(None)
            }
        }
    }
}

/// The texts of `X.warc.wet.gz`, read in step with the pages.
struct Texts {
    path: std::path::PathBuf,
    wet: WarcStream,
    rec: StreamRecord,
    /// Which page each `(timestamp, URL)` is (the last of several).
    index: HashMap<(String, String), usize>,
    /// The page the record read ahead belongs to; `None` at the end.
    next: Option<usize>,
    /// The text last handed out.
    held: Vec<u8>,
}

impl Texts {
    fn open(path: &Path, pages: &[Page]) -> Result<Texts, WaczError> {
        let wet = WarcStream::open(path).map_err(|e| WaczError::Io(path.to_path_buf(), e))?;
        let index = pages
            .iter()
            .enumerate()
            .map(|(i, p)| ((p.ts.clone(), p.url.clone()), i))
            .collect();
        let mut t = Texts {
            path: path.to_path_buf(),
            wet,
            rec: StreamRecord::default(),
            index,
            next: None,
            held: Vec::new(),
        };
        t.advance(0)?;
        Ok(t)
    }

    /// Reads on to the next conversion record of a page at or after `from`.
    fn advance(&mut self, from: usize) -> Result<(), WaczError> {
        self.next = None;
        // Bounded by the file: each pass reads a record.
        loop {
            let more = self
                .wet
                .next_record(MAX_TEXT_BYTES, &mut self.rec)
                .map_err(|e| WaczError::Wet(self.path.clone(), e.to_string()))?;
            if !more {
                return Ok(());
            }
            if self.rec.header("WARC-Type") != Some("conversion") {
                continue;
            }
            let (Some(uri), Some(date)) = (
                self.rec.header("WARC-Target-URI"),
                self.rec.header("WARC-Date"),
            ) else {
                continue;
            };
            let ts: String = date
                .bytes()
                .filter(u8::is_ascii_digit)
                .take(14)
                .map(char::from)
                .collect();
            if let Some(&i) = self.index.get(&(ts, uri.trim().to_string())) {
                if i >= from {
                    self.next = Some(i);
                    return Ok(());
                }
            }
        }
    }

    /// The text of page `i` (pages asked in order), if the WET file has it.
    fn of(&mut self, i: usize) -> Result<Option<&[u8]>, WaczError> {
        if matches!(self.next, Some(n) if n < i) {
            self.advance(i)?;
        }
        if self.next != Some(i) {
            return Ok(None);
        }
        std::mem::swap(&mut self.held, &mut self.rec.block);
        self.advance(i + 1)?;
        Ok(Some(&self.held))
    }
}
