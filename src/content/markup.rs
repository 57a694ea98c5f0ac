//! The markup side of [`super::main_text`]: what a tag name means to the extractor (a
//! compile-time table), where a tag, a comment or a raw-text element ends, and character
//! references. The same HTML tokenizer subset as the link scanner ([`crate::links`]), kept
//! here because the extractor needs different things from it: tag names, not attributes.

use memchr::{memchr, memchr3};

// Tag names, raw text and comments are read as the link scanner reads them.
pub(super) use crate::links::{skip_comment, skip_raw_text, tag_name_end};

/// Longest tag name the classifier knows (`blockquote`, `figcaption`).
const MAX_TAG_NAME: usize = 10;

pub(super) fn is_space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | b'\x0c' | b'\r' | b' ')
}

/// What a tag means to the extractor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum El {
    /// Starts or ends a block of text.
    Block,
    /// `<article>`: a block boundary, and where the page says its article is.
    Article,
    /// `<a>`: its words are link text.
    Anchor,
    /// `<br>`: a space.
    Break,
    /// Text up to `</name` is not page text (scripts, styles, form widgets, vector graphics).
    Skip(&'static [u8]),
    /// Anything else: text flows through it.
    Inline,
}

const BLOCK_TAGS: [&[u8]; 43] = [
    b"address",
    b"aside",
    b"blockquote",
    b"body",
    b"caption",
    b"center",
    b"dd",
    b"details",
    b"dialog",
    b"dir",
    b"div",
    b"dl",
    b"dt",
    b"fieldset",
    b"figcaption",
    b"figure",
    b"footer",
    b"form",
    b"frameset",
    b"h1",
    b"h2",
    b"h3",
    b"h4",
    b"h5",
    b"h6",
    b"head",
    b"header",
    b"hgroup",
    b"hr",
    b"html",
    b"legend",
    b"li",
    b"main",
    b"menu",
    b"nav",
    b"ol",
    b"p",
    b"pre",
    b"section",
    b"summary",
    b"table",
    b"td",
    b"th",
];
const MORE_BLOCK_TAGS: [&[u8]; 5] = [b"tr", b"ul", b"tbody", b"thead", b"tfoot"];
// Not `noscript`: what it holds is what a reader without scripts sees (a forum's whole
// thread, on Discourse), and a crawler is one.
const SKIP_TAGS: [&[u8]; 8] = [
    b"script",
    b"style",
    b"template",
    b"title",
    b"textarea",
    b"select",
    b"svg",
    b"math",
];

/// Tag names packed into a `u64` (lowercase, at most 8 bytes; longer names are matched
/// separately), in an open-addressing table built at compile time: one or two probes per tag
/// instead of a string comparison per known name.
const TABLE_SLOTS: usize = 256;
static TAG_TABLE: [(u64, El); TABLE_SLOTS] = build_table();

const fn pack(name: &[u8]) -> u64 {
    let mut k = 0u64;
    let mut i = 0;
    while i < name.len() {
        k |= (name[i].to_ascii_lowercase() as u64) << (8 * i);
        i += 1;
    }
    k
}

const fn slot(key: u64) -> usize {
    (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as usize
}

const fn insert(table: &mut [(u64, El); TABLE_SLOTS], name: &[u8], el: El) {
    if name.len() > 8 {
        return;
    }
    let key = pack(name);
    let mut i = slot(key);
    while table[i].0 != 0 {
        i = (i + 1) % TABLE_SLOTS;
    }
    table[i] = (key, el);
}

const fn build_table() -> [(u64, El); TABLE_SLOTS] {
    let mut t = [(0u64, El::Inline); TABLE_SLOTS];
    let mut i = 0;
    while i < BLOCK_TAGS.len() {
        insert(&mut t, BLOCK_TAGS[i], El::Block);
        i += 1;
    }
    i = 0;
    while i < MORE_BLOCK_TAGS.len() {
        insert(&mut t, MORE_BLOCK_TAGS[i], El::Block);
        i += 1;
    }
    i = 0;
    while i < SKIP_TAGS.len() {
        insert(&mut t, SKIP_TAGS[i], El::Skip(SKIP_TAGS[i]));
        i += 1;
    }
    insert(&mut t, b"a", El::Anchor);
    insert(&mut t, b"article", El::Article);
    insert(&mut t, b"br", El::Break);
    t
}

pub(super) fn classify(name: &[u8]) -> El {
    if name.len() > 8 {
        if name.len() <= MAX_TAG_NAME
            && (name.eq_ignore_ascii_case(b"blockquote")
                || name.eq_ignore_ascii_case(b"figcaption"))
        {
            return El::Block;
        }
        return El::Inline;
    }
    let key = pack(name);
    let mut i = slot(key);
    // Bound: the table is at most a third full, so a probe run ends at an empty slot.
    loop {
        let (k, el) = TAG_TABLE[i];
        if k == key {
            return el;
        }
        if k == 0 {
            return El::Inline;
        }
        i = (i + 1) % TABLE_SLOTS;
    }
}

/// The position after the `>` that ends a tag whose attributes start at `p`, skipping `>`
/// inside attribute values quoted after `=`; `None` if the input ends first.
pub(super) fn tag_end(html: &[u8], mut p: usize) -> Option<usize> {
    let from = p;
    // Bound: every turn moves `p` past a `>`, a quote or a quoted value.
    loop {
        let q = p + memchr3(b'>', b'"', b'\'', &html[p..])?;
        if html[q] == b'>' {
            return Some(q + 1);
        }
        let before = html[from..q].iter().rposition(|&b| !is_space(b));
        if before.is_some_and(|i| html[from + i] == b'=') {
            p = q + 1 + memchr(html[q], &html[q + 1..])? + 1;
        } else {
            p = q + 1;
        }
    }
}

/// The link scanner's references plus the typographic ones running text is full of.
const NAMED_REFS: [(&[u8], char); 21] = [
    (b"amp;", '&'),
    (b"lt;", '<'),
    (b"gt;", '>'),
    (b"quot;", '"'),
    (b"apos;", '\''),
    (b"nbsp;", '\u{A0}'),
    (b"copy;", '©'),
    (b"reg;", '®'),
    (b"trade;", '™'),
    (b"mdash;", '—'),
    (b"ndash;", '–'),
    (b"lsquo;", '‘'),
    (b"rsquo;", '’'),
    (b"ldquo;", '“'),
    (b"rdquo;", '”'),
    (b"hellip;", '…'),
    (b"laquo;", '«'),
    (b"raquo;", '»'),
    (b"middot;", '·'),
    (b"euro;", '€'),
    (b"pound;", '£'),
];

/// Decodes the character reference after a `&`: the character and the bytes it used. Named
/// references need their `;`; numeric ones (`&#47;`, `&#x2F;`) take it if present; 0,
/// surrogates and values above U+10FFFF become U+FFFD. No reference is shorter than what it
/// decodes to, so decoded text is never longer than its source.
pub(super) fn char_ref(s: &[u8]) -> Option<(char, usize)> {
    crate::links::char_ref_named(s, &NAMED_REFS)
}

/// The value of attribute `name` in a tag's attribute bytes (quoted or not), character
/// references decoded; `None` when it is absent or empty.
pub(super) fn attribute(attrs: &[u8], name: &[u8]) -> Option<Vec<u8>> {
    let mut p = 0;
    // Bound: every turn moves `p` past one attribute, or ends.
    while p < attrs.len() {
        let (this, value, next) = next_attribute(attrs, p);
        p = next;
        if this.eq_ignore_ascii_case(name) {
            let mut out = Vec::with_capacity(value.len());
            plain_text(value, &mut out);
            return (!out.is_empty()).then_some(out);
        }
    }
    None
}

/// The attribute starting at or after `p` in a tag's attribute bytes: its name, its raw
/// value (quotes removed, references not decoded: the words looked for have none) and where
/// the next one starts.
pub(super) fn next_attribute(attrs: &[u8], mut p: usize) -> (&[u8], &[u8], usize) {
    while p < attrs.len() && (is_space(attrs[p]) || attrs[p] == b'/') {
        p += 1;
    }
    let start = p;
    while p < attrs.len() && !is_space(attrs[p]) && !matches!(attrs[p], b'=' | b'>' | b'/') {
        p += 1;
    }
    let name = &attrs[start..p];
    while p < attrs.len() && is_space(attrs[p]) {
        p += 1;
    }
    let mut value: &[u8] = b"";
    if attrs.get(p) == Some(&b'=') {
        p += 1;
        while p < attrs.len() && is_space(attrs[p]) {
            p += 1;
        }
        match attrs.get(p) {
            Some(&q @ (b'"' | b'\'')) => {
                let end = memchr(q, &attrs[p + 1..]).map_or(attrs.len(), |o| p + 1 + o);
                value = &attrs[p + 1..end];
                p = end + 1;
            }
            _ => {
                let s = p;
                while p < attrs.len() && !is_space(attrs[p]) && attrs[p] != b'>' {
                    p += 1;
                }
                value = &attrs[s..p];
            }
        }
    }
    if start == p {
        p += 1;
    }
    (name, value, p)
}

/// Appends `t` as plain text: character references decoded, whitespace runs one space,
/// none at either end.
pub(super) fn plain_text(t: &[u8], out: &mut Vec<u8>) {
    let base = out.len();
    let mut space = false;
    let mut i = 0;
    // Bound: every turn consumes at least one byte of `t`.
    while i < t.len() {
        let (c, used) = match t[i] {
            b'&' => match char_ref(&t[i + 1..]) {
                Some((c, used)) => (Some(c), 1 + used),
                None => (None, 1),
            },
            _ => (None, 1),
        };
        let mut utf8 = [0u8; 4];
        let bytes = match c {
            Some(c) => c.encode_utf8(&mut utf8).as_bytes(),
            None => &t[i..i + 1],
        };
        for &b in bytes {
            if is_space(b) {
                space = true;
            } else {
                if space && out.len() > base {
                    out.push(b' ');
                }
                space = false;
                out.push(b);
            }
        }
        i += used;
    }
}
