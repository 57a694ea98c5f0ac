//! Feeds: the link and date of every item of an RSS 2.0, RSS 1.0 (RDF) or Atom 1.0 document,
//! and which `<link>` of an HTML page announces one.
//!
//! [`FeedReader`] pulls one [`FeedItem`] at a time ([`FeedReader::next_item`]) from a body as
//! fetched (gzip or not; bounds, encodings and entities as the `xml` module says). What an
//! item's link and date are:
//!
//! - RSS 2.0 (`<rss>`, no namespace): `<item><link>`; without one, a `<guid>` not marked
//!   `isPermaLink="false"`, or an `atom:link` as in Atom. Date: `<pubDate>` (RFC 822; a W3C
//!   date is accepted too, as some feeds write one), else `dc:date`.
//! - RSS 1.0 (`<rdf:RDF>`): `<item><link>` in the RSS 1.0 namespace, else the item's
//!   `rdf:about`. Date: `dc:date`.
//! - Atom 1.0 (`<feed>` in the Atom namespace): the first `<link>` of an `<entry>` whose `rel`
//!   is absent or `alternate`, its `href` resolved against the `xml:base` in force (the feed's,
//!   the entry's, the link's own). Date: `<updated>`, else `<published>` (RFC 3339).
//!
//! Relative links are resolved against the feed's URL (and `xml:base`); only http(s) URLs of at
//! most [`MAX_URL_BYTES`](super::MAX_URL_BYTES) are returned, the rest are counted in
//! [`FeedReader::skipped`]. Items are not limited to the feed's host: a feed's links are
//! admitted like a page's, through the crawl's URL filter. The sitemap reader reads feeds with
//! the same parser (`FeedParser`), as search engines accept them as sitemaps.

use std::time::SystemTime;

use url::Url;

use super::date::{parse_rfc822, parse_w3c};
use super::source::{Sniffed, Source};
use super::xml::{Name, Node, Ns, Tag, XmlDoc};
use super::{ReadError, MAX_ITEMS};

/// Which feed format a document is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FeedFormat {
    /// RSS 2.0 (and the 0.9x it grew from): `<rss>`.
    Rss2,
    /// RSS 1.0 (and 0.90): `<rdf:RDF>`.
    Rss1,
    /// Atom 1.0 (and 0.3): `<feed>`.
    Atom,
}

impl FeedFormat {
    /// The format a media type names (`application/rss+xml`, `application/atom+xml`,
    /// `application/rdf+xml`), ignoring case, surrounding whitespace and parameters such as
    /// `; charset=utf-8`. For a `<link type>` or a response's Content-Type.
    pub fn of_media_type(media_type: &[u8]) -> Option<FeedFormat> {
        let essence = media_type
            .split(|&b| b == b';')
            .next()
            .unwrap_or_default()
            .trim_ascii();
        let is = |name: &[u8]| essence.eq_ignore_ascii_case(name);
        if is(b"application/rss+xml") {
            Some(FeedFormat::Rss2)
        } else if is(b"application/atom+xml") {
            Some(FeedFormat::Atom)
        } else if is(b"application/rdf+xml") {
            Some(FeedFormat::Rss1)
        } else {
            None
        }
    }
}

/// One item of a feed: where it links to, and its date if it had a usable one.
#[derive(Clone, Debug, PartialEq)]
pub struct FeedItem {
    pub url: Url,
    /// Last update (Atom `<updated>`) or publication date, for the schedule.
    pub date: Option<SystemTime>,
}

/// What one document node meant to a [`FeedParser`].
#[derive(Debug)]
pub(crate) enum Step {
    /// Nothing yet.
    Nothing,
    /// An item began (it counts toward [`MAX_ITEMS`]).
    Listed,
    /// An item ended with a usable link.
    Item(FeedItem),
    /// An item ended with no usable link.
    Skipped,
}

/// The item under construction.
#[derive(Debug, Default)]
struct Pending {
    depth: u16,
    link: Option<Url>,
    /// A link of lower rank: `guid`, `rdf:about`, an `atom:link` in RSS.
    fallback: Option<Url>,
    /// `pubDate` or Atom's `updated`.
    date: Option<SystemTime>,
    /// `dc:date` or Atom's `published`.
    other_date: Option<SystemTime>,
}

/// The format-specific half of reading a feed: told each [`Node`] of the document, it says
/// when an item begins and ends.
#[derive(Debug)]
pub(crate) struct FeedParser {
    format: FeedFormat,
    item: Option<Pending>,
}

impl FeedParser {
    /// A parser for the document whose root element is `root`, if it is a feed's.
    pub(crate) fn for_root(root: Tag) -> Option<FeedParser> {
        let format = match (root.ns, root.name) {
            (Ns::None, Name::Rss) => FeedFormat::Rss2,
            (Ns::Rdf, Name::Rdf) => FeedFormat::Rss1,
            (Ns::Atom, Name::Feed) => FeedFormat::Atom,
            _ => return None,
        };
        Some(FeedParser { format, item: None })
    }

    pub(crate) fn format(&self) -> FeedFormat {
        self.format
    }

    /// Whether `tag` is this format's item element.
    fn is_item(&self, tag: Tag) -> bool {
        match self.format {
            FeedFormat::Rss2 => tag.ns == Ns::None && tag.name == Name::Item,
            FeedFormat::Rss1 => tag.ns == Ns::Rss1 && tag.name == Name::Item,
            FeedFormat::Atom => tag.ns == Ns::Atom && tag.name == Name::Entry,
        }
    }

    pub(crate) fn on_node(&mut self, node: Node, doc: &XmlDoc<'_>) -> Step {
        let is_item = matches!(node, Node::Open(tag) if self.is_item(tag));
        match node {
            Node::Open(tag) => match &mut self.item {
                None if is_item => {
                    let mut pending = Pending {
                        depth: tag.depth,
                        ..Pending::default()
                    };
                    if self.format == FeedFormat::Rss1 {
                        pending.fallback = doc.attrs().about.get().and_then(|a| doc.resolve(a));
                    }
                    self.item = Some(pending);
                    Step::Listed
                }
                // Atom's link is an empty element: everything is in its attributes.
                Some(item) if tag.depth == item.depth + 1 && tag.name == Name::Link => {
                    if tag.ns == Ns::Atom && alternate(doc.attrs().rel.get()) {
                        let href = doc.attrs().href.get().and_then(|h| doc.resolve(h));
                        let slot = if self.format == FeedFormat::Atom {
                            &mut item.link
                        } else {
                            &mut item.fallback
                        };
                        if slot.is_none() {
                            *slot = href;
                        }
                    }
                    Step::Nothing
                }
                _ => Step::Nothing,
            },
            Node::Close(tag) => {
                if let Some(item) = self.item.take_if(|i| i.depth == tag.depth) {
                    return match item.link.or(item.fallback) {
                        Some(url) => Step::Item(FeedItem {
                            url,
                            date: item.date.or(item.other_date),
                        }),
                        None => Step::Skipped,
                    };
                }
                if let Some(item) = self.item.as_mut().filter(|i| tag.depth == i.depth + 1) {
                    field(self.format, tag, doc, item);
                }
                Step::Nothing
            }
            Node::End => Step::Nothing,
        }
    }
}

/// Takes a closed child element of an item into `item`, if it is one of its fields.
fn field(format: FeedFormat, tag: Tag, doc: &XmlDoc<'_>, item: &mut Pending) {
    let text = doc.text();
    let url = || text.and_then(|t| doc.resolve(t));
    match (format, tag.ns, tag.name) {
        (FeedFormat::Rss2, Ns::None, Name::Link) | (FeedFormat::Rss1, Ns::Rss1, Name::Link)
            if item.link.is_none() =>
        {
            item.link = url();
        }
        (FeedFormat::Rss2, Ns::None, Name::Guid) => {
            let perma = doc.attrs().perma.get().unwrap_or("true");
            if item.fallback.is_none() && !perma.eq_ignore_ascii_case("false") {
                item.fallback = url();
            }
        }
        (FeedFormat::Rss2, Ns::None, Name::PubDate) => {
            item.date = text.and_then(|t| parse_rfc822(t).or_else(|| parse_w3c(t)));
        }
        (FeedFormat::Atom, Ns::Atom, Name::Updated) => item.date = text.and_then(parse_w3c),
        (FeedFormat::Atom, Ns::Atom, Name::Published) | (_, Ns::Dc, Name::Date) => {
            item.other_date = text.and_then(parse_w3c);
        }
        _ => {}
    }
}

/// Whether an Atom `rel` names the alternate version (absent means alternate, RFC 4287
/// §4.2.7.2).
fn alternate(rel: Option<&str>) -> bool {
    match rel {
        None | Some("") => true,
        Some(r) => {
            r.eq_ignore_ascii_case("alternate")
                || r == "http://www.iana.org/assignments/relation/alternate"
        }
    }
}

/// Reads a feed's items, one at a time (see the module doc).
pub struct FeedReader<'a> {
    /// The document, until it ends or fails.
    doc: Option<XmlDoc<'a>>,
    /// Known once the root element was read.
    parser: Option<FeedParser>,
    /// Sticky: once set, every call returns it.
    error: Option<ReadError>,
    items: usize,
    skipped: u64,
}

impl<'a> FeedReader<'a> {
    /// A reader of `body`, the document fetched from `location` (relative links resolve
    /// against it).
    pub fn new(body: &'a [u8], location: &Url) -> FeedReader<'a> {
        let (doc, error) = match Source::new(body).and_then(|mut s| Ok((s.sniff()?, s))) {
            Ok((Sniffed::Markup, source)) => (Some(XmlDoc::new(source, location)), None),
            Ok((Sniffed::Text | Sniffed::Empty, _)) => (None, Some(ReadError::UnknownFormat)),
            Err(e) => (None, Some(e)),
        };
        FeedReader {
            doc,
            parser: None,
            error,
            items: 0,
            skipped: 0,
        }
    }

    /// The feed's format, once the root element has been read.
    pub fn format(&self) -> Option<FeedFormat> {
        self.parser.as_ref().map(FeedParser::format)
    }

    /// Items without a usable link (none, relative to nothing, not http(s), too long).
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// The next item: `Ok(None)` once the feed has ended well. An error ends the read (see
    /// [`ReadError`]); the items returned before it stand.
    pub fn next_item(&mut self) -> Result<Option<FeedItem>, ReadError> {
        let result = self.step();
        if let Err(e) = result {
            self.error = Some(e);
            self.doc = None;
        }
        result
    }

    fn step(&mut self) -> Result<Option<FeedItem>, ReadError> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let Some(doc) = &mut self.doc else {
            return Ok(None);
        };
        // Bound: each turn reads one node of a bounded document.
        loop {
            let node = doc.next()?;
            let Some(parser) = &mut self.parser else {
                let Node::Open(root) = node else {
                    return Err(ReadError::UnknownFormat);
                };
                self.parser = Some(FeedParser::for_root(root).ok_or(ReadError::UnknownFormat)?);
                continue;
            };
            match parser.on_node(node, doc) {
                Step::Nothing if node == Node::End => {
                    self.doc = None;
                    return Ok(None);
                }
                Step::Nothing => {}
                Step::Listed => {
                    self.items += 1;
                    if self.items > MAX_ITEMS {
                        return Err(ReadError::TooManyItems);
                    }
                }
                Step::Item(item) => return Ok(Some(item)),
                Step::Skipped => self.skipped += 1,
            }
        }
    }
}

#[cfg(test)]
#[path = "feed_tests.rs"]
pub(crate) mod tests;
