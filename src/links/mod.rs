//! The link scanner (ARCHITECTURE §7): a hand-written byte scanner that pulls link targets out of an
//! HTML body, fast (memchr jumps between the few bytes that matter) and safe on hostile input.
//!
//! It owns extraction only: the values come back decoded and trimmed but otherwise raw. Resolving
//! them against [`Links::base`] or the page URL, normalizing, filtering and the URL-seen check
//! belong to the crawl layer built around the fetcher. [`naive::scan`] is the slow reference for
//! the same spec; tests (and a differential fuzz target) check the two agree on every input.
//!
//! # Spec
//!
//! The scanner follows a subset of the HTML tokenizer, precisely enough that the two
//! implementations agree byte for byte:
//!
//! - **What is extracted**: links to follow — `href` of `a`, `area`, `link` ([`LinkKind::A`],
//!   [`LinkKind::Area`], [`LinkKind::Link`]), `src` of `frame`, `iframe` — and page requisites,
//!   what the page needs to render ([`LinkKind::is_requisite`]): `link href` whose `rel` has
//!   the token `stylesheet`, `icon` or `apple-touch-icon`, `preload` or `modulepreload`
//!   ([`LinkKind::Stylesheet`], [`LinkKind::Icon`], [`LinkKind::Preload`]); a `link href`
//!   with none of those whose `rel` and `type` announce a feed
//!   ([`is_feed_link`]) is a link to follow, [`LinkKind::Feed`]; `img src` and every
//!   `img srcset` candidate; `source src`/`srcset`; `script src`; `video src`, `video poster`,
//!   `audio src`, `track src` ([`LinkKind::Media`]); `object data`, `embed src`; `input src`
//!   when its `type` is `image`; and every `url(…)` / `@import` in a `style` attribute (of any
//!   element) or a `style` element ([`LinkKind::Css`]; see [`css`]). Within one tag, values
//!   come in that order (the element's attribute(s), then `style`), whatever their order in
//!   the tag. The first `base` start tag that has an `href` attribute decides [`Links::base`];
//!   later `base` tags are ignored, and a `base` href is never reported as a link. Tag and
//!   attribute names match ASCII case-insensitively.
//! - **Robots directives**: an `a` or `area` link whose `rel` has the token `nofollow`, `ugc`
//!   or `sponsored` (ASCII case-insensitive) is marked so ([`Links::iter_rel`],
//!   [`is_nofollow_rel`]; `rel` as written, not decoded); the `content` of every `meta` whose
//!   `name` (as written, trimmed, ASCII case-insensitive) is one of [`ROBOTS_META_NAMES`] is kept, decoded and trimmed like a
//!   link's value, in document order ([`Links::robots_meta`], at most [`MAX_ROBOTS_METAS`];
//!   an empty one is not kept). What they mean is `robots::Directives`'s business.
//! - **Markup**: in text, `<` + ASCII letter opens a start tag, `</` + ASCII letter an end tag
//!   (parsed the same way so that quoted `>` inside it is skipped, but nothing is extracted from
//!   it). `<!--` opens a comment, which ends at the first `-->` or `--!>` starting at least four
//!   bytes after the `<` (so `<!---->` closes); `<!-->` and `<!--->` are empty comments, as in
//!   HTML; an unclosed comment hides the rest of the input. Any other `<!`, `<?`, or `</` not
//!   followed by a letter, is skipped to the next `>` (the rest of the input if none). Any other
//!   `<` is text.
//! - **Tags**: the name runs to ASCII whitespace (TAB, LF, FF, CR, SPACE), `/` or `>`. Then,
//!   repeatedly: whitespace and `/` are skipped; `>` ends the tag; anything else starts an
//!   attribute name (even `=`, quotes or `<`), which runs to whitespace, `/`, `>` or `=`. After
//!   the name, whitespace is skipped; if `=` follows, whitespace is skipped again and the value
//!   is `"…"`, `'…'`, or unquoted up to whitespace or `>`; a `>` right after `=` means an empty
//!   value and ends the tag. An attribute without `=` has an empty value. When an attribute
//!   appears twice in a tag the first one wins, even if it is empty. A tag cut off by the end of
//!   the input (in its name, an attribute, an unclosed quote) is dropped, with the rest of the
//!   input.
//! - **Raw text**: after a `script`, `style`, `textarea` or `title` start tag, everything up to
//!   the next ASCII-case-insensitive `</script` (`</style`, `</textarea`, `</title`) is skipped;
//!   if there is none, the rest of the input. (HTML needs the name to be followed by whitespace,
//!   `/` or `>`; we do not check that. `noscript`, `iframe`, `xmp`, `noembed`, `noframes` are
//!   not special: links inside them are kept, which suits a crawler.)
//! - **Values**: character references are decoded first: `&amp; &lt; &gt; &quot; &apos; &nbsp;`
//!   (case-sensitive, the `;` is required; `&nbsp;` becomes U+00A0 in UTF-8), decimal `&#47;`
//!   and hex `&#x2F;`/`&#X2f;` with an optional `;` (0, surrogates and code points above
//!   U+10FFFF become U+FFFD; the windows-1252 remapping HTML applies to 0x80–0x9F is not done).
//!   Anything else after `&` (`&foo;`, `&#;`, `&#x;`) is kept as is. Then TAB, LF and CR are
//!   removed everywhere and leading/trailing ASCII whitespace is trimmed, as URL parsers do.
//!   NUL and invalid UTF-8 are kept as they are. A value that is empty after this is not a
//!   link (and an empty first `base` href means there is no base).
//! - **Lists**: a `srcset` or `style` value is decoded as above, then split into its URLs
//!   (candidates; `url()`s), each trimmed; `data:` URLs are skipped. A `style` element's text
//!   is not decoded (raw text), only stripped of TAB/LF/CR and trimmed per URL.
//! - **Bounds**: a value whose *raw* (undecoded) length exceeds [`MAX_VALUE_BYTES`] is dropped
//!   and counted in [`Links::dropped`] (decoding never lengthens a value, so kept values are
//!   within the bound too). Links after the first [`MAX_LINKS`] non-empty ones are dropped and
//!   counted. Since kept values never overlap and are never longer than their source, the
//!   output buffer is never larger than the input.
//!
//! Every path is linear in the input: each byte is looked at a bounded number of times.

use memchr::memchr;

/// Most links kept from one page; the rest are counted in [`Links::dropped`].
pub const MAX_LINKS: usize = 100_000;
/// Longest raw attribute value kept; longer values are counted in [`Links::dropped`].
pub const MAX_VALUE_BYTES: usize = 8 * 1024;

/// `<meta name>`s whose `content` is kept as robots directives: every crawler's, and ours
/// (the crawler's product token, as in robots.txt).
pub const ROBOTS_META_NAMES: [&[u8]; 2] = [b"robots", b"spinneret"];
/// Most robots `<meta>` contents kept from one page; more are counted in [`Links::dropped`].
pub const MAX_ROBOTS_METAS: usize = 16;

/// Longest tag name that means anything to the scanner (`textarea`).
const MAX_INTERESTING_TAG_NAME: usize = 8;

pub mod css;
#[doc(hidden)]
pub mod naive;

pub use css::scan_css;

#[cfg(test)]
mod tests;

/// What a link is: where it came from, and so whether it is a page to follow or something a
/// page needs to render.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LinkKind {
    /// `<a href>`
    A,
    /// `<area href>`
    Area,
    /// `<link href>` with no requisite `rel` (canonical, alternate, next…)
    Link,
    /// `<link rel=alternate type=application/rss+xml | application/atom+xml href>`: a feed
    /// the page announces
    Feed,
    /// `<frame src>`
    Frame,
    /// `<iframe src>`
    Iframe,
    /// `<link rel=stylesheet href>`
    Stylesheet,
    /// `<link rel="icon" | "shortcut icon" | apple-touch-icon href>`
    Icon,
    /// `<link rel=preload | modulepreload href>`
    Preload,
    /// `<img src>`, `<img srcset>`
    Img,
    /// `<source src>`, `<source srcset>`
    Source,
    /// `<script src>`
    Script,
    /// `<video src>`, `<video poster>`, `<audio src>`, `<track src>`
    Media,
    /// `<object data>`, `<embed src>`
    Object,
    /// `<input type=image src>`
    Input,
    /// `url(…)` or `@import` in CSS: a `style` attribute or element, or a stylesheet
    Css,
}

impl LinkKind {
    /// Whether the page needs this to render (an embed, fetched even outside the crawl's
    /// scope) rather than a page to follow.
    pub fn is_requisite(self) -> bool {
        !matches!(
            self,
            LinkKind::A
                | LinkKind::Area
                | LinkKind::Link
                | LinkKind::Feed
                | LinkKind::Frame
                | LinkKind::Iframe
        )
    }

    /// The kind of a `<link>` by its raw `rel` and `type` values: a requisite `rel` decides
    /// first ([`LinkKind::of_link_rel`]), then whether it announces a feed.
    pub fn of_link(rel: &[u8], media_type: &[u8]) -> LinkKind {
        match LinkKind::of_link_rel(rel) {
            LinkKind::Link if is_feed_link(rel, media_type) => LinkKind::Feed,
            kind => kind,
        }
    }

    /// The kind of a `<link>` by its `rel` tokens.
    pub fn of_link_rel(rel: &[u8]) -> LinkKind {
        let mut kind = LinkKind::Link;
        for token in rel.split(|&b| is_ws(b)).filter(|t| !t.is_empty()) {
            let is = |name: &[u8]| token.eq_ignore_ascii_case(name);
            if is(b"stylesheet") {
                return LinkKind::Stylesheet;
            }
            if is(b"icon") || is(b"apple-touch-icon") {
                kind = LinkKind::Icon;
            } else if (is(b"preload") || is(b"modulepreload")) && kind == LinkKind::Link {
                kind = LinkKind::Preload;
            }
        }
        kind
    }
}

/// Whether an HTML `<link>` with these `rel` and `type` values announces a feed: `rel` has the
/// token `alternate` (ASCII case-insensitive, among others: `alternate home` counts) and
/// `type`'s essence (case, surrounding whitespace and parameters aside) is
/// `application/rss+xml` or `application/atom+xml` (what browsers and feed readers look for;
/// RDF is too often not a feed to count). The scanner reports such links as
/// [`LinkKind::Feed`]; `discovery::feed` reads what they lead to.
pub fn is_feed_link(rel: &[u8], media_type: &[u8]) -> bool {
    let alternate = rel
        .split(|b| b.is_ascii_whitespace())
        .any(|t| t.eq_ignore_ascii_case(b"alternate"));
    let essence = media_type
        .split(|&b| b == b';')
        .next()
        .unwrap_or_default()
        .trim_ascii();
    alternate
        && (essence.eq_ignore_ascii_case(b"application/rss+xml")
            || essence.eq_ignore_ascii_case(b"application/atom+xml"))
}

/// Whether a link's `rel` value asks crawlers not to follow it: a token `nofollow`, `ugc`
/// (user-generated content) or `sponsored`, as Google and Bing read them.
pub fn is_nofollow_rel(rel: &[u8]) -> bool {
    rel.split(|&b| is_ws(b)).any(|t| {
        t.eq_ignore_ascii_case(b"nofollow")
            || t.eq_ignore_ascii_case(b"ugc")
            || t.eq_ignore_ascii_case(b"sponsored")
    })
}

/// One kept link: its element, where its decoded value sits in `Links::buf`, and whether
/// its `rel` says not to follow it.
#[derive(Clone, Copy, Debug)]
struct Span {
    kind: LinkKind,
    nofollow: bool,
    start: usize,
    end: usize,
}

/// Where the page's `<base href>` stands.
#[derive(Clone, Copy, Debug, Default)]
enum Base {
    /// No `base` tag with an `href` seen yet.
    #[default]
    NotSeen,
    /// The first one was empty or too long: no base, and later ones do not count.
    Absent,
    /// The first one's decoded value, at `buf[start..end]`.
    At { start: usize, end: usize },
}

/// The links of one page: a reusable buffer of decoded values plus spans, cleared per page, so a
/// crawler keeps one and scanning allocates only while it grows to the largest page seen.
#[derive(Clone, Debug, Default)]
pub struct Links {
    buf: Vec<u8>,
    spans: Vec<Span>,
    base: Base,
    dropped: usize,
    /// Where each robots `<meta>` content sits in `buf`.
    robots: Vec<(usize, usize)>,
    /// Reused for decoding list-valued attributes.
    scratch: Vec<u8>,
}

impl Links {
    /// An empty set; its buffers grow on first use.
    pub fn new() -> Self {
        Self::default()
    }

    /// Forgets the previous page, keeping the allocations.
    pub fn clear(&mut self) {
        self.buf.clear();
        self.spans.clear();
        self.base = Base::NotSeen;
        self.dropped = 0;
        self.robots.clear();
    }

    /// The decoded value of the first `<base href>`, if it was non-empty and not too long.
    pub fn base(&self) -> Option<&[u8]> {
        match self.base {
            Base::At { start, end } => Some(&self.buf[start..end]),
            Base::NotSeen | Base::Absent => None,
        }
    }

    /// The links in document order, values decoded and trimmed.
    pub fn iter(&self) -> impl Iterator<Item = (LinkKind, &[u8])> {
        self.spans
            .iter()
            .map(move |s| (s.kind, &self.buf[s.start..s.end]))
    }

    /// The links in document order with, for each, whether its `rel` says not to follow it
    /// ([`is_nofollow_rel`]; only `a` and `area` links can say so).
    pub fn iter_rel(&self) -> impl Iterator<Item = (LinkKind, &[u8], bool)> {
        self.spans
            .iter()
            .map(move |s| (s.kind, &self.buf[s.start..s.end], s.nofollow))
    }

    /// The `content` of each robots `<meta>` ([`ROBOTS_META_NAMES`]), decoded and trimmed, in
    /// document order.
    pub fn robots_meta(&self) -> impl Iterator<Item = &[u8]> {
        self.robots.iter().map(move |&(s, e)| &self.buf[s..e])
    }

    /// How many links were kept (at most [`MAX_LINKS`]).
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// Whether no link was kept.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// How many values were dropped: too long, or beyond [`MAX_LINKS`] (or, for robots
    /// `<meta>` contents, [`MAX_ROBOTS_METAS`]).
    pub fn dropped(&self) -> usize {
        self.dropped
    }

    fn push_link(&mut self, kind: LinkKind, raw: &[u8]) {
        self.push_link_rel(kind, raw, false);
    }

    fn push_link_rel(&mut self, kind: LinkKind, raw: &[u8], nofollow: bool) {
        if raw.len() > MAX_VALUE_BYTES {
            self.dropped += 1;
            return;
        }
        let mark = self.buf.len();
        let Some((start, end)) = self.decode(raw) else {
            return;
        };
        if self.spans.len() >= MAX_LINKS {
            self.buf.truncate(mark);
            self.dropped += 1;
            return;
        }
        self.spans.push(Span {
            kind,
            nofollow,
            start,
            end,
        });
    }

    fn commit(&mut self, kind: LinkKind, mark: usize, start: usize, end: usize) {
        if self.spans.len() >= MAX_LINKS {
            self.buf.truncate(mark);
            self.dropped += 1;
            return;
        }
        self.spans.push(Span {
            kind,
            nofollow: false,
            start,
            end,
        });
    }

    /// A robots `<meta>`'s `content`, bounded like a link's value.
    fn push_robots(&mut self, raw: &[u8]) {
        if raw.len() > MAX_VALUE_BYTES || self.robots.len() >= MAX_ROBOTS_METAS {
            self.dropped += 1;
            return;
        }
        if let Some(span) = self.decode(raw) {
            self.robots.push(span);
        }
    }

    /// Pushes a value that needs no character-reference decoding (a URL taken from decoded
    /// text or from raw CSS): TAB/LF/CR removed, trimmed, bounded like any value.
    fn push_plain(&mut self, kind: LinkKind, value: &[u8]) {
        if value.len() > MAX_VALUE_BYTES {
            self.dropped += 1;
            return;
        }
        let mark = self.buf.len();
        self.buf.extend(
            value
                .iter()
                .filter(|&&b| !matches!(b, b'\t' | b'\n' | b'\r')),
        );
        let Some((start, end)) = self.trim_from(mark) else {
            return;
        };
        self.commit(kind, mark, start, end);
    }

    /// Decodes a list-valued attribute (`srcset`, `style`) and pushes each of its URLs.
    fn push_list(&mut self, kind: LinkKind, raw: &[u8], srcset: bool) {
        if raw.len() > MAX_VALUE_BYTES {
            self.dropped += 1;
            return;
        }
        let mut text = std::mem::take(&mut self.scratch);
        text.clear();
        decode_value(raw, &mut text);
        let mut urls: Vec<(usize, usize)> = Vec::new();
        let base = text.as_ptr() as usize;
        let mut note = |u: &[u8]| {
            let s = u.as_ptr() as usize - base;
            urls.push((s, s + u.len()));
        };
        if srcset {
            css::srcset_urls(&text, &mut note);
        } else {
            css::css_urls(&text, &mut note);
        }
        for (s, e) in urls {
            self.push_plain(kind, &text[s..e]);
        }
        self.scratch = text;
    }

    fn set_base(&mut self, raw: &[u8]) {
        if !matches!(self.base, Base::NotSeen) {
            return;
        }
        if raw.len() > MAX_VALUE_BYTES {
            self.dropped += 1;
            self.base = Base::Absent;
            return;
        }
        self.base = match self.decode(raw) {
            Some((start, end)) => Base::At { start, end },
            None => Base::Absent,
        };
    }

    /// Appends the decoded, trimmed value to `buf` and returns its span, or leaves `buf` as it
    /// was and returns `None` if the value is empty.
    fn decode(&mut self, raw: &[u8]) -> Option<(usize, usize)> {
        let mark = self.buf.len();
        decode_value(raw, &mut self.buf);
        self.trim_from(mark)
    }

    /// Trims the value appended to `buf` since `mark`; `None` (and `buf` restored) if empty.
    fn trim_from(&mut self, mark: usize) -> Option<(usize, usize)> {
        let value = &self.buf[mark..];
        let Some(lead) = value.iter().position(|&b| !is_ws(b)) else {
            self.buf.truncate(mark);
            return None;
        };
        // A non-whitespace byte exists, so `rposition` finds one too.
        let end = mark + value.iter().rposition(|&b| !is_ws(b)).unwrap_or(lead) + 1;
        self.buf.truncate(end);
        Some((mark + lead, end))
    }
}

/// Scans `html` and puts its links into `out` (cleared first).
pub fn scan(html: &[u8], out: &mut Links) {
    out.clear();
    let mut pos = 0;
    // Bound: every turn moves `pos` forward by at least one byte, or ends the scan.
    while let Some(off) = memchr(b'<', &html[pos..]) {
        let lt = pos + off;
        let next = match html.get(lt + 1) {
            Some(b) if b.is_ascii_alphabetic() => start_tag(html, lt + 1, out),
            Some(b'/') => match html.get(lt + 2) {
                Some(b) if b.is_ascii_alphabetic() => {
                    let name_end = tag_name_end(html, lt + 2);
                    parse_attrs(html, name_end, &[], &mut [None; MAX_WANTED])
                }
                _ => skip_past_gt(html, lt + 2),
            },
            Some(b'!') if html[lt + 2..].starts_with(b"--") => skip_comment(html, lt + 4),
            Some(b'!' | b'?') => skip_past_gt(html, lt + 2),
            // A run of `<`: only its last one can start anything, so step over the run in one
            // tight loop rather than one memchr call per byte (1 MB of `<` ran at 189 MiB/s).
            Some(b'<') => {
                let run = html[lt + 1..].iter().take_while(|&&b| b == b'<').count();
                Some(lt + run)
            }
            _ => Some(lt + 1),
        };
        match next {
            Some(p) => pos = p,
            None => return,
        }
    }
}

/// The start tags the scanner knows, by what it wants from them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum El {
    A,
    Area,
    Link,
    Frame,
    Iframe,
    Base,
    Img,
    Source,
    Script,
    Video,
    Audio,
    Track,
    Object,
    Embed,
    Input,
    Style,
    Textarea,
    Title,
    Meta,
    Other,
}

/// Attributes wanted from one tag at most: the element's own (three at most) and `style`.
pub(crate) const MAX_WANTED: usize = 4;

impl El {
    fn classify(name: &[u8]) -> El {
        if name.len() > MAX_INTERESTING_TAG_NAME {
            return El::Other;
        }
        let mut lower = [0u8; MAX_INTERESTING_TAG_NAME];
        for (d, s) in lower.iter_mut().zip(name) {
            *d = s.to_ascii_lowercase();
        }
        match &lower[..name.len()] {
            b"a" => El::A,
            b"area" => El::Area,
            b"link" => El::Link,
            b"frame" => El::Frame,
            b"iframe" => El::Iframe,
            b"base" => El::Base,
            b"img" => El::Img,
            b"source" => El::Source,
            b"script" => El::Script,
            b"video" => El::Video,
            b"audio" => El::Audio,
            b"track" => El::Track,
            b"object" => El::Object,
            b"embed" => El::Embed,
            b"input" => El::Input,
            b"style" => El::Style,
            b"textarea" => El::Textarea,
            b"title" => El::Title,
            b"meta" => El::Meta,
            _ => El::Other,
        }
    }

    /// The attributes wanted, in the order their values are reported; `style` always last.
    fn wanted(self) -> &'static [&'static [u8]] {
        match self {
            El::A | El::Area => &[b"href", b"rel", b"style"],
            El::Base => &[b"href", b"style"],
            El::Meta => &[b"name", b"content", b"style"],
            El::Link => &[b"href", b"rel", b"type", b"style"],
            El::Frame | El::Iframe | El::Script | El::Audio | El::Track | El::Embed => {
                &[b"src", b"style"]
            }
            El::Img | El::Source => &[b"src", b"srcset", b"style"],
            El::Video => &[b"src", b"poster", b"style"],
            El::Object => &[b"data", b"style"],
            El::Input => &[b"src", b"type", b"style"],
            El::Style | El::Textarea | El::Title | El::Other => &[b"style"],
        }
    }

    /// For raw-text elements, the (lowercase) name that ends their content.
    fn raw_text(self) -> Option<&'static [u8]> {
        match self {
            El::Script => Some(b"script"),
            El::Style => Some(b"style"),
            El::Textarea => Some(b"textarea"),
            El::Title => Some(b"title"),
            _ => None,
        }
    }
}

/// Reports what one start tag holds: `vals[i]` is the raw value of `el.wanted()[i]`.
fn emit(el: El, vals: &[Option<&[u8]>], out: &mut Links) {
    let v = |i: usize| vals.get(i).copied().flatten();
    match el {
        El::A | El::Area => v(0).map(|r| {
            let kind = if el == El::A {
                LinkKind::A
            } else {
                LinkKind::Area
            };
            out.push_link_rel(kind, r, v(1).is_some_and(is_nofollow_rel))
        }),
        El::Meta => v(1)
            .filter(|_| v(0).is_some_and(is_robots_meta_name))
            .map(|r| out.push_robots(r)),
        El::Frame => v(0).map(|r| out.push_link(LinkKind::Frame, r)),
        El::Iframe => v(0).map(|r| out.push_link(LinkKind::Iframe, r)),
        El::Base => v(0).map(|r| out.set_base(r)),
        El::Link => v(0).map(|r| {
            let kind = LinkKind::of_link(v(1).unwrap_or(b""), v(2).unwrap_or(b""));
            out.push_link(kind, r)
        }),
        El::Img | El::Source => {
            let kind = if el == El::Img {
                LinkKind::Img
            } else {
                LinkKind::Source
            };
            if let Some(r) = v(0) {
                out.push_link(kind, r);
            }
            v(1).map(|r| out.push_list(kind, r, true))
        }
        El::Script => v(0).map(|r| out.push_link(LinkKind::Script, r)),
        El::Video => {
            if let Some(r) = v(0) {
                out.push_link(LinkKind::Media, r);
            }
            v(1).map(|r| out.push_link(LinkKind::Media, r))
        }
        El::Audio | El::Track => v(0).map(|r| out.push_link(LinkKind::Media, r)),
        El::Object | El::Embed => v(0).map(|r| out.push_link(LinkKind::Object, r)),
        El::Input => {
            let image = v(1).is_some_and(|t| trim_ws(t).eq_ignore_ascii_case(b"image"));
            v(0).filter(|_| image)
                .map(|r| out.push_link(LinkKind::Input, r))
        }
        El::Style | El::Textarea | El::Title | El::Other => None,
    };
    let style = el.wanted().len() - 1;
    if let Some(r) = v(style) {
        out.push_list(LinkKind::Css, r, false);
    }
}

/// Whether a `<meta name>` value (raw) is one of [`ROBOTS_META_NAMES`].
fn is_robots_meta_name(raw: &[u8]) -> bool {
    let name = trim_ws(raw);
    ROBOTS_META_NAMES
        .iter()
        .any(|n| name.eq_ignore_ascii_case(n))
}

fn trim_ws(mut v: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = v {
        if !is_ws(*first) {
            break;
        }
        v = rest;
    }
    while let [rest @ .., last] = v {
        if !is_ws(*last) {
            break;
        }
        v = rest;
    }
    v
}

/// Handles a start tag whose name begins at `name_start`; returns where scanning resumes, or
/// `None` if the input ends first.
fn start_tag(html: &[u8], name_start: usize, out: &mut Links) -> Option<usize> {
    let name_end = tag_name_end(html, name_start);
    let el = El::classify(&html[name_start..name_end]);
    let wanted = el.wanted();
    let mut spans = [None; MAX_WANTED];
    let end = parse_attrs(html, name_end, wanted, &mut spans)?;
    let mut vals: [Option<&[u8]>; MAX_WANTED] = [None; MAX_WANTED];
    for (v, s) in vals.iter_mut().zip(spans) {
        *v = s.map(|(a, b)| &html[a..b]);
    }
    emit(el, &vals[..wanted.len()], out);
    let Some(name) = el.raw_text() else {
        return Some(end);
    };
    let close = skip_raw_text(html, end, name);
    if el == El::Style {
        out.push_css(&html[end..close.unwrap_or(html.len())]);
    }
    close
}

pub(crate) fn tag_name_end(html: &[u8], mut p: usize) -> usize {
    while p < html.len() && !TAG_NAME_END[html[p] as usize] {
        p += 1;
    }
    p
}

/// Parses attributes from `p` (just after the tag name) to the closing `>`. Returns the position
/// after `>`, with `found[i]` the raw value span of the first attribute named `want[i]` (empty
/// if it has no value), or `None` if the input ends inside the tag. (`discovery::visible_text`
/// reads tags with it too, so both see the same attributes.)
pub(crate) fn parse_attrs(
    html: &[u8],
    mut p: usize,
    want: &[&[u8]],
    found: &mut [Option<(usize, usize)>; MAX_WANTED],
) -> Option<usize> {
    let len = html.len();
    // Bound: every turn consumes at least the attribute name's first byte, or returns.
    loop {
        while p < len && BETWEEN_ATTRS[html[p] as usize] {
            p += 1;
        }
        if *html.get(p)? == b'>' {
            return Some(p + 1);
        }
        // The first byte belongs to the name whatever it is, `=` included (as in HTML).
        let name_start = p;
        p += 1;
        while p < len && !ATTR_NAME_END[html[p] as usize] {
            p += 1;
        }
        let name_end = p;
        while p < len && is_ws(html[p]) {
            p += 1;
        }
        let value = if html.get(p) == Some(&b'=') {
            p += 1;
            while p < len && is_ws(html[p]) {
                p += 1;
            }
            match *html.get(p)? {
                q @ (b'"' | b'\'') => {
                    let close = p + 1 + memchr(q, &html[p + 1..])?;
                    let v = (p + 1, close);
                    p = close + 1;
                    v
                }
                // `a=>`: an empty value; the `>` ends the tag on the next turn.
                b'>' => (p, p),
                _ => {
                    let s = p;
                    while p < len && !UNQUOTED_END[html[p] as usize] {
                        p += 1;
                    }
                    (s, p)
                }
            }
        } else {
            (p, p)
        };
        let name = &html[name_start..name_end];
        for (slot, w) in found.iter_mut().zip(want) {
            if slot.is_none() && name.eq_ignore_ascii_case(w) {
                *slot = Some(value);
            }
        }
    }
}

/// Skips raw text from `p` to the next `</name` (ASCII case-insensitive) and returns its
/// position, or `None` if there is none.
pub(crate) fn skip_raw_text(html: &[u8], mut p: usize, name: &[u8]) -> Option<usize> {
    // Bound: `p` moves past each `<` once; each check looks at `name.len() + 1` bytes.
    while let Some(off) = memchr(b'<', &html[p..]) {
        let lt = p + off;
        let rest = &html[lt + 1..];
        if rest.first() == Some(&b'/')
            && rest
                .get(1..1 + name.len())
                .is_some_and(|n| n.eq_ignore_ascii_case(name))
        {
            return Some(lt);
        }
        p = lt + 1;
    }
    None
}

/// Skips a comment whose body starts at `body` (just after `<!--`); returns the position after
/// its end, or `None` if it is unclosed.
pub(crate) fn skip_comment(html: &[u8], body: usize) -> Option<usize> {
    let rest = &html[body..];
    if rest.first() == Some(&b'>') {
        return Some(body + 1);
    }
    if rest.starts_with(b"->") {
        return Some(body + 2);
    }
    let mut p = body;
    // Bound: each turn moves `p` past one `>`; each check looks back at most three bytes.
    loop {
        let gt = p + memchr(b'>', &html[p..])?;
        if (gt >= body + 2 && &html[gt - 2..gt] == b"--")
            || (gt >= body + 3 && &html[gt - 3..gt] == b"--!")
        {
            return Some(gt + 1);
        }
        p = gt + 1;
    }
}

/// Returns the position after the next `>` at or after `p`, or `None` if there is none.
fn skip_past_gt(html: &[u8], p: usize) -> Option<usize> {
    memchr(b'>', &html[p..]).map(|off| p + off + 1)
}

/// Appends `raw` with character references decoded and TAB/LF/CR removed.
pub(crate) fn decode_value(raw: &[u8], out: &mut Vec<u8>) {
    let mut i = 0;
    // Bound: every turn consumes at least one byte of `raw`.
    while i < raw.len() {
        let run = raw[i..]
            .iter()
            .position(|&b| VALUE_SPECIAL[b as usize])
            .unwrap_or(raw.len() - i);
        out.extend_from_slice(&raw[i..i + run]);
        i += run;
        match raw.get(i) {
            None => break,
            Some(b'&') => match char_ref(&raw[i + 1..]) {
                Some((c, used)) => {
                    if !matches!(c, '\t' | '\n' | '\r') {
                        let mut utf8 = [0u8; 4];
                        out.extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
                    }
                    i += 1 + used;
                }
                None => {
                    out.push(b'&');
                    i += 1;
                }
            },
            // TAB, LF, CR: removed.
            Some(_) => i += 1,
        }
    }
}

const NAMED_REFS: [(&[u8], char); 6] = [
    (b"amp;", '&'),
    (b"lt;", '<'),
    (b"gt;", '>'),
    (b"quot;", '"'),
    (b"apos;", '\''),
    (b"nbsp;", '\u{A0}'),
];

/// Decodes the character reference after a `&`: the character and the bytes it used.
pub(crate) fn char_ref(s: &[u8]) -> Option<(char, usize)> {
    char_ref_named(s, &NAMED_REFS)
}

/// [`char_ref`] with another table of named references (each name with its `;`): a reader
/// of running text knows more names than the scanner needs for URLs.
pub(crate) fn char_ref_named(s: &[u8], names: &[(&[u8], char)]) -> Option<(char, usize)> {
    let Some(num) = s.strip_prefix(b"#") else {
        return names
            .iter()
            .find(|(name, _)| s.starts_with(name))
            .map(|&(name, c)| (c, name.len()));
    };
    numeric_ref(num)
}

/// Decodes a numeric character reference after its `&#` (decimal, or hex after `x`/`X`;
/// `;` optional): the character and the bytes it used, the `#` included. NUL, surrogates and
/// values past U+10FFFF become U+FFFD.
fn numeric_ref(num: &[u8]) -> Option<(char, usize)> {
    let (radix, prefix) = match num.first() {
        Some(b'x' | b'X') => (16, 1),
        _ => (10, 0),
    };
    let digits = &num[prefix..];
    let mut cp: u32 = 0;
    let mut n = 0;
    // Bound: one turn per digit; `cp` saturates just above the Unicode range.
    while let Some(d) = digits.get(n).and_then(|&b| (b as char).to_digit(radix)) {
        cp = (cp * radix + d).min(0x11_0000);
        n += 1;
    }
    if n == 0 {
        return None;
    }
    let semi = usize::from(digits.get(n) == Some(&b';'));
    let c = char::from_u32(cp)
        .filter(|&c| c != '\0')
        .unwrap_or('\u{FFFD}');
    Some((c, 1 + prefix + n + semi))
}

fn is_ws(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | b'\x0c' | b'\r' | b' ')
}

/// A 256-entry membership table, so the per-byte loops are one load and one branch.
const fn byte_set(bytes: &[u8]) -> [bool; 256] {
    let mut t = [false; 256];
    let mut i = 0;
    while i < bytes.len() {
        t[bytes[i] as usize] = true;
        i += 1;
    }
    t
}

static TAG_NAME_END: [bool; 256] = byte_set(b"\t\n\x0c\r />");
static BETWEEN_ATTRS: [bool; 256] = byte_set(b"\t\n\x0c\r /");
static ATTR_NAME_END: [bool; 256] = byte_set(b"\t\n\x0c\r />=");
static UNQUOTED_END: [bool; 256] = byte_set(b"\t\n\x0c\r >");
static VALUE_SPECIAL: [bool; 256] = byte_set(b"&\t\n\r");
