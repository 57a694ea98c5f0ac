//! A page's main content as Markdown (CommonMark, with GFM tables): the blocks
//! [`MainText::reader_text`] keeps, each rendered from its own HTML by what began it
//! ([`Opener`]): headings, list items (nested, ordered or not), code blocks, quotes, table
//! rows and paragraphs, with links, inline code and emphasis inside them. One pass over each
//! kept block's bytes; no DOM. Relative link targets stay as the page wrote them.

use memchr::memchr;

use super::main_text::{MainText, Opener};
use super::markup::{
    attribute, char_ref, classify, is_space, skip_comment, skip_raw_text, tag_end, tag_name_end, El,
};

/// Appends the Markdown of the last page `main` extracted (`html` is that page) to `out`.
pub fn markdown(main: &MainText, html: &[u8], out: &mut Vec<u8>) {
    let mut r = Renderer::default();
    for b in main.reader_blocks(html) {
        r.block(b.html, b.opener, out);
    }
    r.end_row(out);
    if !out.is_empty() {
        out.push(b'\n');
    }
}

/// What the blocks before the next one left: the table being written, the last opener.
#[derive(Default)]
struct Renderer {
    /// The row of the table cell written last, and whether its table has its separator.
    row: Option<u32>,
    cells: usize,
    separated: bool,
    last: Option<Opener>,
    inline: Vec<u8>,
}

impl Renderer {
    fn block(&mut self, html: &[u8], opener: Opener, out: &mut Vec<u8>) {
        self.inline.clear();
        if opener == Opener::Pre {
            raw_text(html, &mut self.inline);
        } else {
            inline(html, &mut self.inline);
        }
        if self.inline.is_empty() {
            return;
        }
        // Table rows: a cell of the same row continues the line.
        if let Opener::Cell { row, .. } = opener {
            if self.row == Some(row) {
                out.extend_from_slice(b" ");
                push_cell(out, &self.inline);
                out.extend_from_slice(b" |");
                self.cells += 1;
                return;
            }
        }
        self.end_row(out);
        if !out.is_empty() {
            let tight = matches!(
                (self.last, opener),
                (Some(Opener::Item { .. }), Opener::Item { .. })
                    | (Some(Opener::Cell { .. }), Opener::Cell { .. })
            );
            out.extend_from_slice(if tight { b"\n" } else { b"\n\n" });
        }
        match opener {
            Opener::Heading(level) => {
                out.extend(std::iter::repeat_n(b'#', usize::from(level)));
                out.push(b' ');
                push_line(out, &self.inline);
            }
            Opener::Item { ordered, depth } => {
                out.extend(std::iter::repeat_n(b' ', 2 * usize::from(depth - 1)));
                out.extend_from_slice(if ordered { b"1. " } else { b"- " });
                push_line(out, &self.inline);
            }
            Opener::Quote => {
                out.extend_from_slice(b"> ");
                push_line(out, &self.inline);
            }
            Opener::Pre => {
                let fence: &[u8] = if memchr::memmem::find(&self.inline, b"```").is_some() {
                    b"~~~~"
                } else {
                    b"```"
                };
                out.extend_from_slice(fence);
                out.push(b'\n');
                out.extend_from_slice(&self.inline);
                out.push(b'\n');
                out.extend_from_slice(fence);
            }
            Opener::Cell { row, .. } => {
                // A table begins: its first row gets the separator.
                if !matches!(self.last, Some(Opener::Cell { .. })) {
                    self.separated = false;
                }
                out.extend_from_slice(b"| ");
                push_cell(out, &self.inline);
                out.extend_from_slice(b" |");
                self.row = Some(row);
                self.cells = 1;
            }
            Opener::Para => push_line(out, &self.inline),
        }
        self.last = Some(opener);
    }

    /// After a table's first row, its separator (GFM needs one under the header).
    fn end_row(&mut self, out: &mut Vec<u8>) {
        if self.row.take().is_some() && !self.separated {
            out.push(b'\n');
            out.push(b'|');
            for _ in 0..self.cells {
                out.extend_from_slice(b" --- |");
            }
            self.separated = true;
        }
    }
}

/// A paragraph's text: a leading character that would start other Markdown is escaped.
fn push_line(out: &mut Vec<u8>, text: &[u8]) {
    let starts_block = match text {
        [b'#' | b'>' | b'-' | b'+' | b'=', ..] => true,
        [d, ..] if d.is_ascii_digit() => {
            let digits = text.iter().take_while(|b| b.is_ascii_digit()).count();
            matches!(text.get(digits), Some(b'.' | b')'))
        }
        _ => false,
    };
    if starts_block {
        out.push(b'\\');
    }
    out.extend_from_slice(text);
}

/// A table cell's text: `|` escaped.
fn push_cell(out: &mut Vec<u8>, text: &[u8]) {
    for &b in text {
        if b == b'|' {
            out.push(b'\\');
        }
        out.push(b);
    }
}

/// The inline Markdown of a block's HTML: text with whitespace collapsed and character
/// references decoded, Markdown's own characters escaped, `<a href>` as `[text](href)`,
/// `<code>` as backticks, `<strong>`/`<b>` and `<em>`/`<i>` as `**` and `*`.
fn inline(html: &[u8], out: &mut Vec<u8>) {
    let mut space = false;
    let mut link: Option<Vec<u8>> = None;
    let mut link_start = 0;
    let mut p = 0;
    // Bound: every turn moves `p` forward by at least one byte, or ends.
    while p < html.len() {
        let Some(off) = memchr(b'<', &html[p..]) else {
            text(&html[p..], out, &mut space, true);
            break;
        };
        text(&html[p..p + off], out, &mut space, true);
        let lt = p + off;
        let close = html.get(lt + 1) == Some(&b'/');
        let name_at = lt + 1 + usize::from(close);
        if !html.get(name_at).is_some_and(u8::is_ascii_alphabetic) {
            if html[lt + 1..].starts_with(b"!--") {
                match skip_comment(html, lt + 4) {
                    Some(next) => p = next,
                    None => break,
                }
                continue;
            }
            if matches!(html.get(lt + 1), Some(b'!' | b'?' | b'/')) {
                match memchr(b'>', &html[lt + 1..]) {
                    Some(o) => p = lt + 2 + o,
                    None => break,
                }
                continue;
            }
            text(b"<", out, &mut space, true);
            p = lt + 1;
            continue;
        }
        let name_end = tag_name_end(html, name_at);
        let name = &html[name_at..name_end];
        let Some(end) = tag_end(html, name_end) else {
            break;
        };
        if let (El::Skip(raw), false) = (classify(name), close) {
            match skip_raw_text(html, end, raw) {
                Some(next) => p = next,
                None => break,
            }
            continue;
        }
        let mark = |out: &mut Vec<u8>, space: &mut bool, m: &[u8]| {
            if *space && !out.is_empty() {
                out.push(b' ');
            }
            *space = false;
            out.extend_from_slice(m);
        };
        // The names that matter are short: lowercased on the stack, not per tag on the heap.
        let mut lower = [0u8; 8];
        let n = name.len().min(lower.len());
        lower[..n].copy_from_slice(&name[..n]);
        lower.make_ascii_lowercase();
        let name = if name.len() <= lower.len() {
            &lower[..n]
        } else {
            b"" as &[u8]
        };
        match (name, close) {
            (b"a", false) => {
                if let Some(href) = attribute(&html[name_end..end], b"href") {
                    mark(out, &mut space, b"[");
                    link_start = out.len();
                    link = Some(href);
                }
            }
            (b"a", true) => {
                if let Some(href) = link.take() {
                    if out.len() == link_start {
                        out.pop();
                    } else {
                        out.extend_from_slice(b"](");
                        for &b in &href {
                            match b {
                                b' ' => out.extend_from_slice(b"%20"),
                                b'(' => out.extend_from_slice(b"%28"),
                                b')' => out.extend_from_slice(b"%29"),
                                _ => out.push(b),
                            }
                        }
                        out.push(b')');
                    }
                }
            }
            (b"code" | b"kbd" | b"samp" | b"tt", _) => mark(out, &mut space, b"`"),
            (b"strong" | b"b", _) => mark(out, &mut space, b"**"),
            (b"em" | b"i", _) => mark(out, &mut space, b"*"),
            (b"br", _) => space = true,
            _ => {}
        }
        p = end;
    }
    if let Some(_open) = link {
        // An `<a>` never closed: its text stays, without the bracket.
        out.remove(link_start - 1);
    }
    // Marks around nothing ("** **") and trailing spaces are left as they are: harmless.
}

/// A `<pre>` block's text: tags dropped, character references decoded, whitespace kept,
/// blank lines at either end trimmed.
fn raw_text(html: &[u8], out: &mut Vec<u8>) {
    let mut p = 0;
    let mut space = false;
    // Bound: every turn moves `p` forward by at least one byte, or ends.
    while p < html.len() {
        let Some(off) = memchr(b'<', &html[p..]) else {
            text(&html[p..], out, &mut space, false);
            break;
        };
        text(&html[p..p + off], out, &mut space, false);
        match tag_end(html, p + off + 1) {
            Some(end) => p = end,
            None => break,
        }
    }
    let first = out
        .iter()
        .position(|&b| b != b'\n' && b != b'\r')
        .unwrap_or(out.len());
    out.drain(..first);
    while out.last().is_some_and(|b| b.is_ascii_whitespace()) {
        out.pop();
    }
}

/// Appends text with character references decoded; with `collapse`, whitespace runs become
/// one space (written before the next text) and Markdown's inline characters are escaped.
fn text(t: &[u8], out: &mut Vec<u8>, space: &mut bool, collapse: bool) {
    let mut i = 0;
    // Bound: every turn consumes at least one byte of `t`.
    while i < t.len() {
        // The run up to the next `&` goes in one piece.
        let amp = memchr::memchr(b'&', &t[i..]).map_or(t.len(), |p| i + p);
        push_text(&t[i..amp], out, space, collapse);
        i = amp;
        if i == t.len() {
            break;
        }
        match char_ref(&t[i + 1..]) {
            Some((c, used)) => {
                let mut utf8 = [0u8; 4];
                push_text(c.encode_utf8(&mut utf8).as_bytes(), out, space, collapse);
                i += 1 + used;
            }
            None => {
                push_text(b"&", out, space, collapse);
                i += 1;
            }
        }
    }
}

/// The bytes [`push_text`] stops at: whitespace, Markdown's inline characters (escaped), and
/// the lead byte of U+00A0; the rest it copies a run at a time.
static SPECIAL: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    // Bound: 256 turns.
    while b < 256 {
        t[b] = matches!(
            b as u8,
            b'\t'
                | b'\n'
                | b'\x0c'
                | b'\r'
                | b' '
                | 0xc2
                | b'\\'
                | b'`'
                | b'*'
                | b'_'
                | b'['
                | b']'
        );
        b += 1;
    }
    t
};

fn push_text(bytes: &[u8], out: &mut Vec<u8>, space: &mut bool, collapse: bool) {
    if !collapse {
        out.extend(bytes.iter().map(|&b| if b == b'\r' { b'\n' } else { b }));
        return;
    }
    let special = |b: u8| SPECIAL[usize::from(b)];
    let mut i = 0;
    // Bound: every turn consumes at least one byte.
    while i < bytes.len() {
        let b = bytes[i];
        // U+00A0 (no-break space, UTF-8 C2 A0) collapses as a space does.
        let nbsp = b == 0xc2 && bytes.get(i + 1) == Some(&0xa0);
        if is_space(b) || nbsp {
            *space = true;
            i += 1 + usize::from(nbsp);
            continue;
        }
        if *space && !out.is_empty() && !out.ends_with(b"[") {
            out.push(b' ');
        }
        *space = false;
        if special(b) && b != 0xc2 {
            out.push(b'\\');
            out.push(b);
            i += 1;
            continue;
        }
        // The run goes on through single spaces between words: each is written as it is,
        // as collapsing would write it.
        let mut end = i + 1;
        // Bound: every turn moves `end` on or ends the run.
        loop {
            end = run_goes_on(bytes, end);
            let Some(&c) = bytes.get(end) else {
                break;
            };
            if !special(c) {
                end += 1;
            } else if c == b' ' && bytes.get(end + 1).is_some_and(|&n| !special(n)) {
                end += 2;
            } else {
                break;
            }
        }
        out.extend_from_slice(&bytes[i..end]);
        i = end;
    }
}

/// Where a run of text from `from` may stop, 16 bytes at a time (the byte loop in
/// [`push_text`] decides there): at a byte [`SPECIAL`] may hold — any byte up to the space,
/// `*`, `[` to `` ` ``, 0xC2 (a superset: the loop goes on past the extra ones) — unless it is
/// a space before a byte that is none of those. On a text-heavy page the main text is most of
/// the page, and a table test per byte was Markdown's whole cost. SSE2 is part of every x86-64
/// CPU, so nothing is detected at run time.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
fn run_goes_on(bytes: &[u8], from: usize) -> usize {
    // SAFETY: the build targets SSE2 (the `cfg` above; every x86-64 CPU has it).
    unsafe { run_goes_on_sse2(bytes, from) }
}

#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[target_feature(enable = "sse2")]
fn run_goes_on_sse2(bytes: &[u8], mut from: usize) -> usize {
    use std::arch::x86_64::{
        _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8, _mm_sub_epi8,
    };
    let (space, star, nbsp) = (_mm_set1_epi8(0x20), _mm_set1_epi8(0x2a), _mm_set1_epi8(-62));
    let (bracket, five) = (_mm_set1_epi8(0x5b), _mm_set1_epi8(5));
    // Bound: every turn moves `from` on by 16 or returns.
    while from + 16 <= bytes.len() {
        // SAFETY: `from + 16 <= bytes.len()`: the 16 bytes read are inside `bytes`.
        let v = unsafe { _mm_loadu_si128(bytes.as_ptr().add(from).cast()) };
        let up_to_space = _mm_cmpeq_epi8(_mm_min_epu8(v, space), v);
        let from_bracket = _mm_sub_epi8(v, bracket);
        let bracket_to_tick = _mm_cmpeq_epi8(_mm_min_epu8(from_bracket, five), from_bracket);
        let stops = _mm_or_si128(
            _mm_or_si128(up_to_space, bracket_to_tick),
            _mm_or_si128(_mm_cmpeq_epi8(v, star), _mm_cmpeq_epi8(v, nbsp)),
        );
        let stops = _mm_movemask_epi8(stops) as u32;
        let spaces = _mm_movemask_epi8(_mm_cmpeq_epi8(v, space)) as u32;
        // The byte after lane 15 is not looked at: a space there stops.
        let next_stops = (stops >> 1) | 0x8000;
        let stop = stops & !(spaces & !next_stops);
        if stop != 0 {
            return from + stop.trailing_zeros() as usize;
        }
        from += 16;
    }
    from
}

/// Elsewhere the byte loop does it all.
#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
fn run_goes_on(_bytes: &[u8], from: usize) -> usize {
    from
}

#[cfg(test)]
#[path = "markdown_tests.rs"]
mod tests;
