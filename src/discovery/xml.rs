//! The streaming XML reading sitemaps and feeds share: a body (gzip or not) in, a flat
//! sequence of [`Node`]s out, each element's namespace and local name resolved to the few the
//! readers know, its wanted attributes and text decoded and bounded.
//!
//! quick-xml's `NsReader::read_resolved_event_into` reads one event at a time into one reused
//! buffer; nothing keeps a tree of the document. Memory is bounded by the reader's buffers:
//! the event buffer (at most [`MAX_EVENT_BYTES`], enforced by [`Source`] as it hands bytes
//! over), quick-xml's stacks of open names and namespace bindings (at most [`MAX_DEPTH`] start
//! tags of at most [`MAX_TAG_BYTES`]), the `xml:base` stack (at most [`MAX_DEPTH`] URLs) and a
//! few values of at most [`MAX_VALUE_BYTES`].
//!
//! As the XML spec says: namespaces are resolved (a `loc` in an image-sitemap namespace is not
//! a sitemap `loc`); CDATA is text; the five predefined entities and character references are
//! decoded, and any other entity makes its value unusable (we never expand a DTD's entities:
//! no billion laughs, no external fetches). Where real files break the spec harmlessly we are
//! lenient: a bare `&` (an unescaped query string) is kept as text.
//!
//! Encodings: UTF-8 (with or without its byte order mark) and windows-1252, under its WHATWG
//! labels (ISO-8859-1, latin1, US-ASCII, …), which is what ISO-8859-1 declarations mean on
//! the web; markup is ASCII in both, so the parser reads the bytes as they are and only the
//! values we keep are decoded. A declaration of UTF-16 on a body that is not UTF-16 is read
//! as UTF-8, as browsers do. Anything else (UTF-16 or UTF-32 bodies, Shift_JIS, KOI8-R, …) is
//! refused as [`ReadError::UnsupportedEncoding`]: sitemaps must be UTF-8, and a feed in such an
//! encoding is rare enough not to carry a decoder for.

use quick_xml::events::{BytesStart, Event};
use quick_xml::name::{NamespaceResolver, ResolveResult};
use quick_xml::NsReader;
use url::Url;

use super::source::Source;
use super::{ReadError, MAX_URL_BYTES};

/// Largest single event (a start tag, a run of text, a CDATA section): a feed item's
/// `content:encoded` CDATA is the largest legitimate one, rarely past a few hundred KiB.
/// quick-xml holds one event whole in its buffer, so this bounds that buffer.
pub(crate) const MAX_EVENT_BYTES: u64 = 4 << 20;
/// Largest start tag kept open: a `<urlset>` with a dozen namespace declarations or an Atom
/// `<link>` with a long `href` is under 4 KiB. quick-xml keeps every open element's name and
/// namespace declarations, so this times [`MAX_DEPTH`] bounds those stacks.
pub(crate) const MAX_TAG_BYTES: usize = 16 * 1024;
/// Deepest nesting followed: a sitemap needs 3 levels, a feed 4, an Atom entry's XHTML
/// content rarely 30.
pub(crate) const MAX_DEPTH: u16 = 100;
/// Longest text or attribute value kept: a URL (at most [`MAX_URL_BYTES`]) with room for
/// surrounding whitespace and for escapes; dates and enums are far shorter.
pub(crate) const MAX_VALUE_BYTES: usize = 2 * MAX_URL_BYTES;
/// The namespaces the readers know, by what they mean.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ns {
    /// No namespace (RSS 2.0, and sitemaps that forget theirs).
    None,
    /// sitemaps.org 0.9 and its legacy names (as crawler-commons lists them).
    Sitemap,
    /// Atom 1.0 (and 0.3, whose links are read the same way).
    Atom,
    /// RSS 1.0 (and RSS 0.90, its RDF predecessor).
    Rss1,
    /// RDF syntax (`rdf:RDF`, `rdf:about`).
    Rdf,
    /// Dublin Core elements (`dc:date`).
    Dc,
    /// Any other namespace, or an undeclared prefix.
    Other,
}

const SITEMAP_NAMESPACES: [&[u8]; 10] = [
    b"http://www.sitemaps.org/schemas/sitemap/0.9",
    b"https://www.sitemaps.org/schemas/sitemap/0.9",
    b"http://www.sitemaps.org/schemas/sitemap/0.9/",
    b"https://www.sitemaps.org/schemas/sitemap/0.9/",
    b"https://sitemaps.org/schemas/sitemap/0.9",
    b"http://www.google.com/schemas/sitemap/0.9",
    b"https://www.google.com/schemas/sitemap/0.9",
    b"http://www.google.com/schemas/sitemap/0.84",
    b"https://www.google.com/schemas/sitemap/0.84",
    b"http://www.google.com/schemas/sitemap/0.90",
];

impl Ns {
    fn of(r: &ResolveResult<'_>) -> Ns {
        let uri = match r {
            ResolveResult::Unbound => return Ns::None,
            ResolveResult::Unknown(_) => return Ns::Other,
            ResolveResult::Bound(ns) => ns.0,
        };
        match uri {
            b"http://www.w3.org/2005/Atom" | b"http://purl.org/atom/ns#" => Ns::Atom,
            b"http://purl.org/rss/1.0/" | b"http://my.netscape.com/rdf/simple/0.9/" => Ns::Rss1,
            b"http://www.w3.org/1999/02/22-rdf-syntax-ns#" => Ns::Rdf,
            b"http://purl.org/dc/elements/1.1/" => Ns::Dc,
            _ if SITEMAP_NAMESPACES.contains(&uri) => Ns::Sitemap,
            _ => Ns::Other,
        }
    }
}

/// The local names the readers act on; everything else is [`Name::Other`] and its text is
/// never decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Name {
    Urlset,
    SitemapIndex,
    Url,
    Sitemap,
    Loc,
    Lastmod,
    Changefreq,
    Priority,
    Rss,
    Channel,
    Item,
    Link,
    Guid,
    PubDate,
    Rdf,
    Feed,
    Entry,
    Updated,
    Published,
    Date,
    Other,
}

impl Name {
    fn of(local: &[u8]) -> Name {
        match local {
            b"urlset" => Name::Urlset,
            b"sitemapindex" => Name::SitemapIndex,
            b"url" => Name::Url,
            b"sitemap" => Name::Sitemap,
            b"loc" => Name::Loc,
            b"lastmod" => Name::Lastmod,
            b"changefreq" => Name::Changefreq,
            b"priority" => Name::Priority,
            b"rss" => Name::Rss,
            b"channel" => Name::Channel,
            b"item" => Name::Item,
            b"link" => Name::Link,
            b"guid" => Name::Guid,
            b"pubDate" => Name::PubDate,
            b"RDF" => Name::Rdf,
            b"feed" => Name::Feed,
            b"entry" => Name::Entry,
            b"updated" => Name::Updated,
            b"published" => Name::Published,
            b"date" => Name::Date,
            _ => Name::Other,
        }
    }
}

/// One element as the readers see it; `depth` is 1 for the root.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Tag {
    pub ns: Ns,
    pub name: Name,
    pub depth: u16,
}

/// What [`XmlDoc::next`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Node {
    /// A start tag (or an empty element, whose `Close` follows at once). Its wanted
    /// attributes are in [`XmlDoc::attrs`].
    Open(Tag),
    /// An end tag. The element's text (after its last child element) is in
    /// [`XmlDoc::text`].
    Close(Tag),
    /// The document ended well-formed.
    End,
}

/// The encodings read (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Encoding {
    Utf8,
    Windows1252,
}

impl Encoding {
    /// The encoding a declaration's label names, by the WHATWG Encoding labels for UTF-8 and
    /// windows-1252; `None` for anything we do not read.
    fn of_label(label: &[u8]) -> Option<Encoding> {
        const UTF8: [&[u8]; 6] = [
            b"utf-8",
            b"utf8",
            b"unicode-1-1-utf-8",
            // A UTF-16 label on a body that is not UTF-16 (we looked) is a mislabel: browsers
            // read such a document as UTF-8.
            b"utf-16",
            b"utf-16le",
            b"utf-16be",
        ];
        const WINDOWS_1252: [&[u8]; 17] = [
            b"windows-1252",
            b"x-cp1252",
            b"cp1252",
            b"iso-8859-1",
            b"iso8859-1",
            b"iso88591",
            b"iso_8859-1",
            b"iso_8859-1:1987",
            b"iso-ir-100",
            b"l1",
            b"latin1",
            b"csisolatin1",
            b"ibm819",
            b"cp819",
            b"us-ascii",
            b"ascii",
            b"ansi_x3.4-1968",
        ];
        let label = trim_ascii(label);
        let is = |names: &[&[u8]]| names.iter().any(|n| label.eq_ignore_ascii_case(n));
        if is(&UTF8) {
            Some(Encoding::Utf8)
        } else if is(&WINDOWS_1252) {
            Some(Encoding::Windows1252)
        } else {
            None
        }
    }

    /// Appends `raw` decoded to `out`. Invalid UTF-8 becomes U+FFFD, as in browsers.
    fn decode_into(self, raw: &[u8], out: &mut String) {
        match self {
            Encoding::Utf8 => out.push_str(&String::from_utf8_lossy(raw)),
            Encoding::Windows1252 => out.extend(raw.iter().map(|&b| windows_1252(b))),
        }
    }
}

/// windows-1252 as the WHATWG Encoding standard maps it: Latin-1, except 0x80–0x9F.
fn windows_1252(b: u8) -> char {
    const HIGH: [u16; 32] = [
        0x20AC, 0x0081, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160,
        0x2039, 0x0152, 0x008D, 0x017D, 0x008F, 0x0090, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022,
        0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x009D, 0x017E, 0x0178,
    ];
    match b {
        0x80..=0x9F => char::from_u32(u32::from(HIGH[usize::from(b - 0x80)])).unwrap_or('\u{FFFD}'),
        _ => char::from(b),
    }
}

fn trim_ascii(mut v: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = v {
        if !first.is_ascii_whitespace() {
            break;
        }
        v = rest;
    }
    while let [rest @ .., last] = v {
        if !last.is_ascii_whitespace() {
            break;
        }
        v = rest;
    }
    v
}

/// A decoded text or attribute value, bounded; reused across elements.
#[derive(Debug, Default)]
pub(crate) struct Value {
    s: String,
    /// Something was pushed since the last clear.
    set: bool,
    /// Too long, or it held an entity we do not expand: unusable.
    bad: bool,
}

impl Value {
    fn clear(&mut self) {
        self.s.clear();
        self.set = false;
        self.bad = false;
    }

    /// The value, trimmed, if one was set and is usable.
    pub(crate) fn get(&self) -> Option<&str> {
        (self.set && !self.bad).then(|| self.s.trim())
    }

    fn spoil(&mut self) {
        self.bad = true;
        self.s.clear();
    }

    /// Appends raw text (no references in it) in `enc`.
    fn push_raw(&mut self, raw: &[u8], enc: Encoding) {
        self.set = true;
        if self.bad {
            return;
        }
        // Decoding at most triples a byte; check before, so a huge run is never decoded.
        if self.s.len() + raw.len() > MAX_VALUE_BYTES {
            return self.spoil();
        }
        enc.decode_into(raw, &mut self.s);
        if self.s.len() > MAX_VALUE_BYTES {
            self.spoil();
        }
    }

    /// Appends the character an entity or character reference names (`name` is what stands
    /// between `&` and `;`), or spoils the value if it names none we decode.
    fn push_ref(&mut self, name: &[u8]) {
        self.set = true;
        match reference(name) {
            Some(c) if !self.bad && self.s.len() + 4 <= MAX_VALUE_BYTES => self.s.push(c),
            Some(_) if self.bad => {}
            _ => self.spoil(),
        }
    }

    /// Appends an attribute's raw value, decoding its references. A `&` that starts no
    /// reference (no `;` close by) is kept, as quick-xml keeps it in text.
    fn push_escaped(&mut self, raw: &[u8], enc: Encoding) {
        /// Longest reference name looked for: `#x10FFFF` and `quot` are far shorter.
        const MAX_REF: usize = 16;
        self.set = true;
        let mut rest = raw;
        // Bound: each turn consumes at least the `&` it stops at, or ends.
        while let Some(amp) = memchr::memchr(b'&', rest) {
            self.push_raw(&rest[..amp], enc);
            let after = &rest[amp + 1..];
            match after.iter().take(MAX_REF + 1).position(|&b| b == b';') {
                Some(semi) => {
                    self.push_ref(&after[..semi]);
                    rest = &after[semi + 1..];
                }
                None => {
                    self.push_raw(b"&", enc);
                    rest = after;
                }
            }
        }
        self.push_raw(rest, enc);
    }
}

/// The character `&name;` stands for: the five predefined entities and character references
/// (never NUL, a surrogate or past U+10FFFF).
fn reference(name: &[u8]) -> Option<char> {
    match name {
        b"lt" => return Some('<'),
        b"gt" => return Some('>'),
        b"amp" => return Some('&'),
        b"apos" => return Some('\''),
        b"quot" => return Some('"'),
        _ => {}
    }
    let num = name.strip_prefix(b"#")?;
    let (digits, radix) = match num {
        [b'x', hex @ ..] => (hex, 16),
        _ => (num, 10),
    };
    if digits.is_empty() || digits.len() > 8 {
        return None;
    }
    let text = std::str::from_utf8(digits).ok()?;
    let cp = u32::from_str_radix(text, radix).ok()?;
    char::from_u32(cp).filter(|&c| c != '\0')
}

/// The attributes the readers use, decoded; cleared at each wanted start tag.
#[derive(Debug, Default)]
pub(crate) struct Attrs {
    pub href: Value,
    pub rel: Value,
    /// `rdf:about`
    pub about: Value,
    /// `isPermaLink` (RSS `<guid>`)
    pub perma: Value,
    /// `xml:base`
    pub base: Value,
}

impl Attrs {
    fn clear(&mut self) {
        for v in [
            &mut self.href,
            &mut self.rel,
            &mut self.about,
            &mut self.perma,
            &mut self.base,
        ] {
            v.clear();
        }
    }

    fn capture(&mut self, resolver: &NamespaceResolver, start: &BytesStart<'_>, enc: Encoding) {
        self.clear();
        // A broken attribute ends the list: what came before it is kept (lenient, and quick-xml
        // reports the broken tag's own problems through the next event if they matter).
        for attr in start.attributes().with_checks(false).map_while(Result::ok) {
            let (ns, local) = resolver.resolve_attribute(attr.key);
            let xml_ns = matches!(ns, ResolveResult::Bound(n) if n.0 == b"http://www.w3.org/XML/1998/namespace");
            let slot = match (Ns::of(&ns), local.as_ref()) {
                (Ns::None, b"href") => &mut self.href,
                (Ns::None, b"rel") => &mut self.rel,
                (Ns::None, b"isPermaLink") => &mut self.perma,
                (Ns::Rdf, b"about") => &mut self.about,
                (_, b"base") if xml_ns => &mut self.base,
                _ => continue,
            };
            // The first of a repeated attribute wins.
            if !slot.set {
                slot.push_escaped(&attr.value, enc);
            }
        }
    }
}

/// An XML document read as [`Node`]s (see the module doc).
pub(crate) struct XmlDoc<'a> {
    reader: NsReader<Source<'a>>,
    /// The one event buffer, reused for every event.
    buf: Vec<u8>,
    encoding: Encoding,
    /// Open elements.
    depth: u16,
    /// The innermost open element is a [`Name`] we act on: its text is decoded.
    capture: bool,
    text: Value,
    attrs: Attrs,
    /// An empty element's `Close`, due on the next call.
    pending_close: Option<Tag>,
    /// The document's URL, and the `xml:base` in force for each element that set one.
    location: Url,
    bases: Vec<(u16, Url)>,
    /// An event has been read (a declaration after that is not the document's).
    started: bool,
}

impl<'a> XmlDoc<'a> {
    /// Reads `source` (sniffed as markup) as the document at `location`.
    pub(crate) fn new(source: Source<'a>, location: &Url) -> XmlDoc<'a> {
        let mut reader = NsReader::from_reader(source);
        let config = reader.config_mut();
        config.allow_dangling_amp = true;
        config.check_end_names = true;
        XmlDoc {
            reader,
            buf: Vec::new(),
            encoding: Encoding::Utf8,
            depth: 0,
            capture: false,
            text: Value::default(),
            attrs: Attrs::default(),
            pending_close: None,
            location: location.clone(),
            bases: Vec::new(),
            started: false,
        }
    }

    /// Bytes held by the event buffer (for tests of the memory bound).
    #[cfg(test)]
    pub(crate) fn held_bytes(&self) -> usize {
        self.buf.capacity()
    }

    /// The wanted attributes of the last `Open` element.
    pub(crate) fn attrs(&self) -> &Attrs {
        &self.attrs
    }

    /// The text of the element just closed (after its last child element), trimmed, if it
    /// was usable.
    pub(crate) fn text(&self) -> Option<&str> {
        self.text.get()
    }

    /// `href` resolved against the `xml:base` in force (or the document's URL): an absolute
    /// http(s) URL of at most [`MAX_URL_BYTES`], or `None`.
    pub(crate) fn resolve(&self, href: &str) -> Option<Url> {
        let base = self.bases.last().map_or(&self.location, |(_, u)| u);
        http_url(base.join(href).ok()?)
    }

    /// The next element boundary.
    pub(crate) fn next(&mut self) -> Result<Node, ReadError> {
        if let Some(tag) = self.pending_close.take() {
            self.closed(tag.depth);
            return Ok(Node::Close(tag));
        }
        // Bound: every turn reads one event, and the input ends (its size is bounded).
        loop {
            self.buf.clear();
            self.reader.get_mut().limit_event(MAX_EVENT_BYTES);
            let (ns, event) = match self.reader.read_resolved_event_into(&mut self.buf) {
                Ok((ns, event)) => (Ns::of(&ns), event),
                Err(_) => return Err(self.failed()),
            };
            let first = !self.started;
            self.started = true;
            let (start, empty) = match event {
                Event::Start(start) => (start, false),
                Event::Empty(start) => (start, true),
                Event::End(end) => {
                    let tag = Tag {
                        ns,
                        name: Name::of(end.local_name().as_ref()),
                        depth: self.depth,
                    };
                    self.closed(self.depth);
                    self.depth = self.depth.saturating_sub(1);
                    return Ok(Node::Close(tag));
                }
                Event::Text(text) if self.capture => {
                    self.text.push_raw(&text, self.encoding);
                    continue;
                }
                Event::CData(text) if self.capture => {
                    self.text.push_raw(&text, self.encoding);
                    continue;
                }
                Event::GeneralRef(name) if self.capture => {
                    self.text.push_ref(&name);
                    continue;
                }
                Event::Decl(decl) if first => {
                    if let Some(label) = decl.encoding() {
                        let label = label.map_err(|_| ReadError::Malformed {
                            at: self.reader.buffer_position(),
                        })?;
                        self.encoding =
                            Encoding::of_label(&label).ok_or(ReadError::UnsupportedEncoding)?;
                    }
                    continue;
                }
                Event::Eof if self.depth == 0 => return Ok(Node::End),
                Event::Eof => {
                    return Err(ReadError::Malformed {
                        at: self.reader.buffer_position(),
                    })
                }
                // Text we do not want, comments, processing instructions, a DOCTYPE (whose
                // entities are never expanded), a late declaration.
                _ => continue,
            };
            if start.len() > MAX_TAG_BYTES {
                return Err(ReadError::ElementTooLarge);
            }
            let depth = self.depth + 1;
            if depth > MAX_DEPTH {
                return Err(ReadError::TooDeep);
            }
            let tag = Tag {
                ns,
                name: Name::of(start.local_name().as_ref()),
                depth,
            };
            self.capture = tag.name != Name::Other;
            self.text.clear();
            if self.capture {
                self.attrs
                    .capture(self.reader.resolver(), &start, self.encoding);
                if let Some(base) = self.attrs.base.get() {
                    let current = self.bases.last().map_or(&self.location, |(_, u)| u);
                    if let Some(url) = current.join(base).ok().and_then(http_url) {
                        self.bases.push((depth, url));
                    }
                }
            } else {
                self.attrs.clear();
            }
            if empty {
                self.pending_close = Some(tag);
            } else {
                self.depth = depth;
            }
            return Ok(Node::Open(tag));
        }
    }

    /// The error a failed read means: a bound the source hit, or broken XML.
    fn failed(&self) -> ReadError {
        self.reader
            .get_ref()
            .stopped()
            .unwrap_or(ReadError::Malformed {
                at: self.reader.error_position(),
            })
    }

    /// Ends an element at `depth`: its `xml:base` (if it set one) no longer applies.
    fn closed(&mut self, depth: u16) {
        if self.bases.last().is_some_and(|(d, _)| *d == depth) {
            self.bases.pop();
        }
        self.capture = false;
    }
}

/// `url` if it is http or https and not too long.
pub(crate) fn http_url(url: Url) -> Option<Url> {
    (matches!(url.scheme(), "http" | "https") && url.as_str().len() <= MAX_URL_BYTES).then_some(url)
}
