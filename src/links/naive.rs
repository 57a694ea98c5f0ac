//! The slow reference for [`super::scan`]: the same spec (see the parent module), written as a
//! byte-at-a-time tokenizer state machine that builds every tag and attribute in `Vec`s, with no
//! memchr and no shortcuts. Used only by tests and the differential fuzz target.

use super::{
    is_nofollow_rel, LinkKind, MAX_LINKS, MAX_ROBOTS_METAS, MAX_VALUE_BYTES, ROBOTS_META_NAMES,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Data,
    TagOpen,
    EndTagOpen,
    TagName,
    BeforeAttrName,
    AttrName,
    AfterAttrName,
    BeforeAttrValue,
    ValueDouble,
    ValueSingle,
    ValueUnquoted,
    AfterValueQuoted,
    SelfClosing,
    BogusComment,
}

fn is_ws(c: u8) -> bool {
    c == b'\t' || c == b'\n' || c == 0x0c || c == b'\r' || c == b' '
}

/// Returns (base, links in order, dropped count).
#[allow(clippy::type_complexity)]
pub fn scan(html: &[u8]) -> (Option<Vec<u8>>, Vec<(LinkKind, Vec<u8>)>, usize) {
    let all = scan_all(html);
    let links = all.links.into_iter().map(|(k, v, _)| (k, v)).collect();
    (all.base, links, all.dropped)
}

/// Everything the scanner reports of a page.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Scanned {
    pub base: Option<Vec<u8>>,
    /// Each link with whether its `rel` says not to follow it.
    pub links: Vec<(LinkKind, Vec<u8>, bool)>,
    pub dropped: usize,
    /// Robots `<meta>` contents, decoded and trimmed.
    pub robots_meta: Vec<Vec<u8>>,
}

/// [`scan`], with the robots directives' data too.
pub fn scan_all(html: &[u8]) -> Scanned {
    let mut base: Option<Option<Vec<u8>>> = None;
    let mut links: Vec<(LinkKind, Vec<u8>, bool)> = Vec::new();
    let mut robots_meta: Vec<Vec<u8>> = Vec::new();
    let mut dropped = 0;

    let mut state = State::Data;
    let mut is_end_tag = false;
    let mut tag_name: Vec<u8> = Vec::new();
    let mut attrs: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();

    let mut i = 0;
    while i < html.len() {
        let c = html[i];
        // Where the next byte comes from: `i + 1` unless a state reconsumes `c` or jumps.
        let mut next = i + 1;
        let mut emit = false;
        match state {
            State::Data => {
                if c == b'<' {
                    state = State::TagOpen;
                }
            }
            State::TagOpen => {
                if c.is_ascii_alphabetic() {
                    is_end_tag = false;
                    tag_name = vec![c.to_ascii_lowercase()];
                    attrs.clear();
                    state = State::TagName;
                } else if c == b'/' {
                    state = State::EndTagOpen;
                } else if c == b'!' && html[i + 1..].starts_with(b"--") {
                    state = State::Data;
                    next = match comment_end(html, i + 3) {
                        Some(end) => end,
                        None => html.len(),
                    };
                } else if c == b'!' || c == b'?' {
                    state = State::BogusComment;
                } else {
                    state = State::Data;
                    next = i;
                }
            }
            State::EndTagOpen => {
                if c.is_ascii_alphabetic() {
                    is_end_tag = true;
                    tag_name = vec![c.to_ascii_lowercase()];
                    attrs.clear();
                    state = State::TagName;
                } else {
                    state = State::BogusComment;
                    next = i;
                }
            }
            State::BogusComment => {
                if c == b'>' {
                    state = State::Data;
                }
            }
            State::TagName => {
                if is_ws(c) {
                    state = State::BeforeAttrName;
                } else if c == b'/' {
                    state = State::SelfClosing;
                } else if c == b'>' {
                    emit = true;
                } else {
                    tag_name.push(c.to_ascii_lowercase());
                }
            }
            State::BeforeAttrName => {
                if is_ws(c) {
                } else if c == b'/' {
                    state = State::SelfClosing;
                } else if c == b'>' {
                    emit = true;
                } else {
                    attrs.push((vec![c.to_ascii_lowercase()], Vec::new()));
                    state = State::AttrName;
                }
            }
            State::AttrName => {
                if is_ws(c) {
                    state = State::AfterAttrName;
                } else if c == b'/' {
                    state = State::SelfClosing;
                } else if c == b'>' {
                    emit = true;
                } else if c == b'=' {
                    state = State::BeforeAttrValue;
                } else if let Some(last) = attrs.last_mut() {
                    last.0.push(c.to_ascii_lowercase());
                }
            }
            State::AfterAttrName => {
                if is_ws(c) {
                } else if c == b'/' {
                    state = State::SelfClosing;
                } else if c == b'=' {
                    state = State::BeforeAttrValue;
                } else if c == b'>' {
                    emit = true;
                } else {
                    attrs.push((vec![c.to_ascii_lowercase()], Vec::new()));
                    state = State::AttrName;
                }
            }
            State::BeforeAttrValue => {
                if is_ws(c) {
                } else if c == b'"' {
                    state = State::ValueDouble;
                } else if c == b'\'' {
                    state = State::ValueSingle;
                } else if c == b'>' {
                    emit = true;
                } else {
                    state = State::ValueUnquoted;
                    next = i;
                }
            }
            State::ValueDouble | State::ValueSingle => {
                let quote = if state == State::ValueDouble {
                    b'"'
                } else {
                    b'\''
                };
                if c == quote {
                    state = State::AfterValueQuoted;
                } else if let Some(last) = attrs.last_mut() {
                    last.1.push(c);
                }
            }
            State::ValueUnquoted => {
                if is_ws(c) {
                    state = State::BeforeAttrName;
                } else if c == b'>' {
                    emit = true;
                } else if let Some(last) = attrs.last_mut() {
                    last.1.push(c);
                }
            }
            State::AfterValueQuoted => {
                if is_ws(c) {
                    state = State::BeforeAttrName;
                } else if c == b'/' {
                    state = State::SelfClosing;
                } else if c == b'>' {
                    emit = true;
                } else {
                    state = State::BeforeAttrName;
                    next = i;
                }
            }
            State::SelfClosing => {
                if c == b'>' {
                    emit = true;
                } else {
                    state = State::BeforeAttrName;
                    next = i;
                }
            }
        }

        if emit {
            state = State::Data;
            if !is_end_tag {
                // The first attribute of each name, raw.
                let attr = |name: &str| {
                    attrs
                        .iter()
                        .find(|(n, _)| n.as_slice() == name.as_bytes())
                        .map(|(_, v)| v.clone())
                };
                let mut out = Out {
                    links: &mut links,
                    dropped: &mut dropped,
                };
                let tag = String::from_utf8_lossy(&tag_name).into_owned();
                let nofollow = attr("rel").is_some_and(|r| is_nofollow_rel(&r));
                match tag.as_str() {
                    "a" => out.value_rel(LinkKind::A, attr("href"), nofollow),
                    "area" => out.value_rel(LinkKind::Area, attr("href"), nofollow),
                    "meta" => {
                        let name = attr("name").unwrap_or_default();
                        let name = String::from_utf8_lossy(&name)
                            .trim_matches(is_ws_char)
                            .to_ascii_lowercase();
                        let robots = ROBOTS_META_NAMES.iter().any(|n| n == &name.as_bytes());
                        if let (true, Some(raw)) = (robots, attr("content")) {
                            if raw.len() > MAX_VALUE_BYTES || robots_meta.len() >= MAX_ROBOTS_METAS
                            {
                                *out.dropped += 1;
                            } else {
                                let v = decode(&raw);
                                if !v.is_empty() {
                                    robots_meta.push(v);
                                }
                            }
                        }
                    }
                    "frame" => out.value(LinkKind::Frame, attr("src")),
                    "iframe" => out.value(LinkKind::Iframe, attr("src")),
                    "link" => {
                        let rel = attr("rel").unwrap_or_default();
                        let ty = attr("type").unwrap_or_default();
                        out.value(LinkKind::of_link(&rel, &ty), attr("href"))
                    }
                    "img" | "source" => {
                        let kind = if tag == "img" {
                            LinkKind::Img
                        } else {
                            LinkKind::Source
                        };
                        out.value(kind, attr("src"));
                        out.list(kind, attr("srcset"), true);
                    }
                    "script" => out.value(LinkKind::Script, attr("src")),
                    "video" => {
                        out.value(LinkKind::Media, attr("src"));
                        out.value(LinkKind::Media, attr("poster"));
                    }
                    "audio" | "track" => out.value(LinkKind::Media, attr("src")),
                    "object" => out.value(LinkKind::Object, attr("data")),
                    "embed" => out.value(LinkKind::Object, attr("src")),
                    "input" => {
                        let ty = attr("type").unwrap_or_default();
                        let ty = String::from_utf8_lossy(&ty)
                            .trim_matches(is_ws_char)
                            .to_ascii_lowercase();
                        if ty == "image" {
                            out.value(LinkKind::Input, attr("src"));
                        }
                    }
                    _ => {}
                }
                out.list(LinkKind::Css, attr("style"), false);
                if tag_name == b"base" && base.is_none() {
                    if let Some(raw) = attr("href") {
                        if raw.len() > MAX_VALUE_BYTES {
                            dropped += 1;
                            base = Some(None);
                        } else {
                            let v = decode(&raw);
                            base = Some(if v.is_empty() { None } else { Some(v) });
                        }
                    }
                }
                let raw_text = ["script", "style", "textarea", "title"]
                    .iter()
                    .find(|n| n.as_bytes() == tag_name.as_slice());
                if let Some(name) = raw_text {
                    next = raw_text_end(html, i + 1, name.as_bytes());
                    if *name == "style" {
                        let text = &html[i + 1..next];
                        let mut urls = Vec::new();
                        super::css::css_urls(text, &mut |u| urls.push(u.to_vec()));
                        let mut out = Out {
                            links: &mut links,
                            dropped: &mut dropped,
                        };
                        for u in urls {
                            out.plain(LinkKind::Css, &u);
                        }
                    }
                }
            }
        }
        i = next;
    }
    Scanned {
        base: base.flatten(),
        links,
        dropped,
        robots_meta,
    }
}

fn is_ws_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\x0c' | '\r' | ' ')
}

/// Where found links go, with the bounds applied.
struct Out<'a> {
    links: &'a mut Vec<(LinkKind, Vec<u8>, bool)>,
    dropped: &'a mut usize,
}

impl Out<'_> {
    fn keep(&mut self, kind: LinkKind, v: Vec<u8>, nofollow: bool) {
        if v.is_empty() {
            return;
        }
        if self.links.len() >= MAX_LINKS {
            *self.dropped += 1;
        } else {
            self.links.push((kind, v, nofollow));
        }
    }

    /// One attribute value: decoded, trimmed.
    fn value(&mut self, kind: LinkKind, raw: Option<Vec<u8>>) {
        self.value_rel(kind, raw, false);
    }

    /// One link's value, marked `nofollow` by its `rel`.
    fn value_rel(&mut self, kind: LinkKind, raw: Option<Vec<u8>>, nofollow: bool) {
        let Some(raw) = raw else { return };
        if raw.len() > MAX_VALUE_BYTES {
            *self.dropped += 1;
            return;
        }
        self.keep(kind, decode(&raw), nofollow);
    }

    /// A value already free of character references: TAB/LF/CR dropped, trimmed.
    fn plain(&mut self, kind: LinkKind, v: &[u8]) {
        if v.len() > MAX_VALUE_BYTES {
            *self.dropped += 1;
            return;
        }
        let mut v: Vec<u8> = v
            .iter()
            .copied()
            .filter(|&b| b != b'\t' && b != b'\n' && b != b'\r')
            .collect();
        let lead = v.iter().take_while(|&&b| is_ws(b)).count();
        v.drain(..lead);
        while v.last().is_some_and(|&b| is_ws(b)) {
            v.pop();
        }
        self.keep(kind, v, false);
    }

    /// A `srcset` or `style` attribute: decoded (not trimmed), then each URL in it.
    fn list(&mut self, kind: LinkKind, raw: Option<Vec<u8>>, srcset: bool) {
        let Some(raw) = raw else { return };
        if raw.len() > MAX_VALUE_BYTES {
            *self.dropped += 1;
            return;
        }
        let text = decode_untrimmed(&raw);
        let mut urls = Vec::new();
        if srcset {
            super::css::srcset_urls(&text, &mut |u| urls.push(u.to_vec()));
        } else {
            super::css::css_urls(&text, &mut |u| urls.push(u.to_vec()));
        }
        for u in urls {
            self.plain(kind, &u);
        }
    }
}

/// `body` is the index just after `<!--`; returns the index after the comment's end.
fn comment_end(html: &[u8], body: usize) -> Option<usize> {
    if html.get(body) == Some(&b'>') {
        return Some(body + 1);
    }
    if html.get(body) == Some(&b'-') && html.get(body + 1) == Some(&b'>') {
        return Some(body + 2);
    }
    let mut j = body;
    while j < html.len() {
        if html[j..].starts_with(b"-->") {
            return Some(j + 3);
        }
        if html[j..].starts_with(b"--!>") {
            return Some(j + 4);
        }
        j += 1;
    }
    None
}

/// The index of the first `</name` at or after `from` (any case), or the end of the input.
fn raw_text_end(html: &[u8], from: usize, name: &[u8]) -> usize {
    let mut j = from;
    while j < html.len() {
        if html[j] == b'<' && html.get(j + 1) == Some(&b'/') {
            let candidate = html.get(j + 2..j + 2 + name.len());
            if let Some(candidate) = candidate {
                let lower: Vec<u8> = candidate.iter().map(|b| b.to_ascii_lowercase()).collect();
                if lower == name {
                    return j;
                }
            }
        }
        j += 1;
    }
    html.len()
}

/// Decodes character references, removes TAB/LF/CR, trims ASCII whitespace.
fn decode(raw: &[u8]) -> Vec<u8> {
    let mut out = decode_untrimmed(raw);
    let lead = out.iter().take_while(|&&b| is_ws(b)).count();
    out.drain(..lead);
    while out.last().is_some_and(|&b| is_ws(b)) {
        out.pop();
    }
    out
}

/// Decodes character references and removes TAB/LF/CR.
fn decode_untrimmed(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < raw.len() {
        let c = raw[i];
        if c == b'&' {
            if let Some((ch, used)) = char_ref(&raw[i + 1..]) {
                if ch != '\t' && ch != '\n' && ch != '\r' {
                    out.extend_from_slice(ch.to_string().as_bytes());
                }
                i += 1 + used;
                continue;
            }
        }
        if c != b'\t' && c != b'\n' && c != b'\r' {
            out.push(c);
        }
        i += 1;
    }
    out
}

/// The character and byte count of the reference after a `&`, if it is one.
fn char_ref(s: &[u8]) -> Option<(char, usize)> {
    for (name, ch) in [
        ("amp;", '&'),
        ("lt;", '<'),
        ("gt;", '>'),
        ("quot;", '"'),
        ("apos;", '\''),
        ("nbsp;", '\u{A0}'),
    ] {
        if s.starts_with(name.as_bytes()) {
            return Some((ch, name.len()));
        }
    }
    if s.first() != Some(&b'#') {
        return None;
    }
    let hex = matches!(s.get(1), Some(b'x') | Some(b'X'));
    let digits_start = if hex { 2 } else { 1 };
    let mut digits = String::new();
    let mut j = digits_start;
    while j < s.len()
        && (if hex {
            s[j].is_ascii_hexdigit()
        } else {
            s[j].is_ascii_digit()
        })
    {
        digits.push(s[j] as char);
        j += 1;
    }
    if digits.is_empty() {
        return None;
    }
    if s.get(j) == Some(&b';') {
        j += 1;
    }
    let significant = digits.trim_start_matches('0');
    let value = if significant.len() > 8 {
        None
    } else if significant.is_empty() {
        Some(0)
    } else {
        u32::from_str_radix(significant, if hex { 16 } else { 10 }).ok()
    };
    let ch = match value.and_then(char::from_u32) {
        Some(ch) if ch != '\0' => ch,
        _ => '\u{FFFD}',
    };
    Some((ch, j))
}
