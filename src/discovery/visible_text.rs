//! The visible text of an HTML page, and the text of each of its anchors: what the focused
//! crawl (`crawl::focus`) scores against its topic.
//!
//! One pass over the bytes, no tree, output bounded: [`extract`] fills a reusable
//! [`VisibleText`] with the page's text (tags become word breaks, whitespace runs become one
//! space) and, for each `<a href>`, its href and the span of text it holds. Left out: the
//! contents of `script`, `style`, `noscript`, `template` and `textarea` (not prose), comments,
//! `<!…>` and `<?…>`. `title` is kept (the best single hint of a page's topic), read as raw
//! text as the scanner reads it.
//!
//! Markup is read as the link scanner reads it (`crate::links`' spec: tag and attribute
//! syntax, comments, raw-text ends at `</name`), and an href is decoded by the scanner's value
//! rules (the same character references, TAB/LF/CR removed, trimmed), so an anchor's href is
//! byte for byte the value the scanner reports for that `<a>` and the crawl can match the two
//! (a test checks it). Text decodes the same character references; `&nbsp;` becomes a space.
//!
//! Bounds: at most [`MAX_TEXT_BYTES`] of text (the rest of the page is not read, and
//! [`VisibleText::truncated`] says so), [`MAX_ANCHORS`] anchors, [`MAX_ANCHOR_TEXT`] bytes of
//! text and [`MAX_HREF_BYTES`] of href per anchor. Every byte is looked at a bounded number of
//! times.

use memchr::{memchr, memchr2};

// The link scanner's own readers of tag names, raw text, comments and references: this
// extractor must see exactly the hrefs the scanner sees.
use crate::links::{
    char_ref, decode_value, parse_attrs, skip_comment, skip_raw_text, tag_name_end, MAX_WANTED,
};

/// Text kept from one page: the topic of a page shows in its first few thousand words; past
/// 256 KiB a page is mostly lists, tables or data, and scoring it costs more than it tells.
pub const MAX_TEXT_BYTES: usize = 256 * 1024;
/// Anchors kept from one page (the crawl admits far fewer links per page than this).
pub const MAX_ANCHORS: usize = 10_000;
/// Text kept per anchor: an anchor's words that matter are its first few.
pub const MAX_ANCHOR_TEXT: usize = 256;
/// Longest href kept for an anchor: the link scanner's bound on a value.
pub const MAX_HREF_BYTES: usize = crate::links::MAX_VALUE_BYTES;

/// Elements whose content is never shown as prose; skipped up to their end tag.
const SKIPPED: [&[u8]; 5] = [b"script", b"style", b"noscript", b"template", b"textarea"];
/// Longest tag name that means anything here (`noscript`, `template`, `textarea`).
const MAX_NAME: usize = 8;

/// One anchor: its href in `hrefs`, its text in `text`.
#[derive(Clone, Copy, Debug)]
struct Anchor {
    href: (usize, usize),
    text: (usize, usize),
}

/// A page's visible text and anchors; reusable, cleared by [`extract`].
#[derive(Clone, Debug, Default)]
pub struct VisibleText {
    text: Vec<u8>,
    hrefs: Vec<u8>,
    anchors: Vec<Anchor>,
    /// The `<a>` whose text is being collected: its index in `anchors`.
    open: Option<usize>,
    truncated: bool,
}

impl VisibleText {
    pub fn new() -> VisibleText {
        VisibleText::default()
    }

    /// The text: words separated by single spaces (UTF-8 where the page was).
    pub fn text(&self) -> &[u8] {
        &self.text
    }

    /// Each `<a href>` in order: its decoded href and the text it holds.
    pub fn anchors(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        // The text may have lost a trailing space after an anchor was closed.
        let len = self.text.len();
        self.anchors.iter().map(move |a| {
            let text = &self.text[a.text.0.min(len)..a.text.1.min(len)];
            (&self.hrefs[a.href.0..a.href.1], trim(text))
        })
    }

    /// The page had more text than [`MAX_TEXT_BYTES`]; the rest was not read.
    pub fn truncated(&self) -> bool {
        self.truncated
    }

    fn clear(&mut self) {
        self.text.clear();
        self.hrefs.clear();
        self.anchors.clear();
        self.open = None;
        self.truncated = false;
    }

    /// Appends text, whitespace runs folded into one space; false once the bound is reached.
    fn push_text(&mut self, run: &[u8]) -> bool {
        for &b in run {
            if is_ws(b) {
                self.space();
            } else if self.text.len() < MAX_TEXT_BYTES {
                self.text.push(b);
            } else {
                self.truncated = true;
                return false;
            }
        }
        true
    }

    /// A word break (a tag, or whitespace): one space, never two, none at the start.
    fn space(&mut self) {
        if self.text.last().is_some_and(|&b| b != b' ') && self.text.len() < MAX_TEXT_BYTES {
            self.text.push(b' ');
        }
    }

    /// Appends the text the character reference after a `&` stands for (`&nbsp;` as a
    /// space; a `&` that starts none as itself); returns whether the bound still holds and
    /// the bytes used after the `&`.
    fn push_reference(&mut self, after: &[u8]) -> (bool, usize) {
        match char_ref(after) {
            Some(('\u{A0}', used)) => (self.push_text(b" "), used),
            Some((c, used)) => (
                self.push_text(c.encode_utf8(&mut [0u8; 4]).as_bytes()),
                used,
            ),
            None => (self.push_text(b"&"), 0),
        }
    }

    /// Appends text in which character references are decoded (a `title`'s content).
    fn push_decoded(&mut self, mut run: &[u8]) -> bool {
        // Bound: each turn consumes the run up to and including one `&`.
        while let Some(amp) = memchr(b'&', run) {
            if !self.push_text(&run[..amp]) {
                return false;
            }
            let (ok, used) = self.push_reference(&run[amp + 1..]);
            if !ok {
                return false;
            }
            run = &run[amp + 1 + used..];
        }
        self.push_text(run)
    }

    fn open_anchor(&mut self, href: &[u8]) {
        self.close_anchor();
        if self.anchors.len() >= MAX_ANCHORS || href.len() > MAX_HREF_BYTES {
            return;
        }
        let start = self.hrefs.len();
        decode_value(href, &mut self.hrefs);
        let value = &self.hrefs[start..];
        let Some(lead) = value.iter().position(|&b| !is_ws(b)) else {
            self.hrefs.truncate(start);
            return;
        };
        let end = value
            .iter()
            .rposition(|&b| !is_ws(b))
            .map_or(lead, |e| e + 1);
        self.hrefs.truncate(start + end);
        self.anchors.push(Anchor {
            href: (start + lead, start + end),
            text: (self.text.len(), self.text.len()),
        });
        self.open = Some(self.anchors.len() - 1);
    }

    fn close_anchor(&mut self) {
        if let Some(i) = self.open.take() {
            let a = &mut self.anchors[i];
            a.text.1 = self.text.len().min(a.text.0 + MAX_ANCHOR_TEXT);
        }
    }
}

/// Fills `out` with the visible text and anchors of `html` (see the module doc).
pub fn extract(html: &[u8], out: &mut VisibleText) {
    out.clear();
    let mut pos = 0;
    // Bound: every turn moves `pos` forward by at least one byte, or ends.
    while pos < html.len() {
        let Some(off) = memchr2(b'<', b'&', &html[pos..]) else {
            out.push_text(&html[pos..]);
            break;
        };
        if !out.push_text(&html[pos..pos + off]) {
            break;
        }
        let at = pos + off;
        if html[at] == b'&' {
            let (ok, used) = out.push_reference(&html[at + 1..]);
            if !ok {
                break;
            }
            pos = at + 1 + used;
            continue;
        }
        let next = match html.get(at + 1) {
            Some(b) if b.is_ascii_alphabetic() => start_tag(html, at + 1, out),
            Some(b'/') if html.get(at + 2).is_some_and(u8::is_ascii_alphabetic) => {
                let name_end = tag_name_end(html, at + 2);
                if html[at + 2..name_end].eq_ignore_ascii_case(b"a") {
                    out.close_anchor();
                }
                out.space();
                parse_attrs(html, name_end, &[], &mut [None; MAX_WANTED])
            }
            Some(b'!') if html[at + 2..].starts_with(b"--") => skip_comment(html, at + 4),
            Some(b'!' | b'?' | b'/') => memchr(b'>', &html[at + 2..]).map(|o| at + 2 + o + 1),
            _ => {
                if !out.push_text(b"<") {
                    break;
                }
                Some(at + 1)
            }
        };
        match next {
            Some(p) => pos = p,
            None => break,
        }
    }
    out.close_anchor();
    while out.text.last() == Some(&b' ') {
        out.text.pop();
    }
}

/// A start tag whose name begins at `p`: records an anchor, skips a non-prose element's
/// content; returns where reading resumes (`None`: the input ended inside).
fn start_tag(html: &[u8], p: usize, out: &mut VisibleText) -> Option<usize> {
    let end_of_name = tag_name_end(html, p);
    let name = &html[p..end_of_name];
    out.space();
    // Attributes are read as the link scanner reads them.
    let mut found = [None; MAX_WANTED];
    let want: &[&[u8]] = if name.eq_ignore_ascii_case(b"a") {
        &[b"href"]
    } else {
        &[]
    };
    let end = parse_attrs(html, end_of_name, want, &mut found)?;
    if !want.is_empty() {
        if let Some((s, e)) = found[0] {
            out.open_anchor(&html[s..e]);
        }
        return Some(end);
    }
    if name.eq_ignore_ascii_case(b"title") {
        // Raw text, as the scanner reads it: no tags inside, references decoded.
        let close = skip_raw_text(html, end, b"title");
        out.push_decoded(&html[end..close.unwrap_or(html.len())]);
        out.space();
        return close;
    }
    let skipped = (name.len() <= MAX_NAME)
        .then(|| SKIPPED.iter().find(|s| name.eq_ignore_ascii_case(s)))
        .flatten();
    match skipped {
        Some(s) => skip_raw_text(html, end, s),
        None => Some(end),
    }
}

fn is_ws(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | b'\x0c' | b'\r' | b' ')
}

fn trim(v: &[u8]) -> &[u8] {
    let start = v.iter().position(|&b| !is_ws(b)).unwrap_or(v.len());
    let end = v.iter().rposition(|&b| !is_ws(b)).map_or(start, |e| e + 1);
    &v[start..end]
}

#[cfg(test)]
#[path = "visible_text_tests.rs"]
mod tests;
