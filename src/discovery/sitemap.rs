//! Sitemaps (the sitemaps.org protocol, 0.9): what a site says it has, with each page's last
//! change, change frequency and priority, for the frontier and the schedule.
//!
//! A sitemap to read is a [`SitemapRef`]: its URL, the robots.txt that named it (if one did)
//! and how deep in sitemap indexes it was found. [`SitemapReader`] reads the fetched body
//! (plain or gzip, by its magic bytes) one [`SitemapItem`] at a time
//! ([`SitemapReader::next_item`]):
//!
//! - a `<urlset>`: a [`SitemapItem::Page`] per `<url>` with a usable `<loc>`; `<lastmod>` (W3C
//!   datetime), `<changefreq>` ([`ChangeFreq`]) and `<priority>` (clamped to 0.0–1.0) when
//!   present and valid (an invalid one is dropped, not the entry);
//! - a `<sitemapindex>`: a [`SitemapItem::Sitemap`] per `<sitemap>`, a [`SitemapRef`] one
//!   level deeper, to fetch and read the same way;
//! - a text sitemap (the body does not start with markup): one URL per line;
//! - an RSS or Atom feed: its items' links and dates as pages (search engines accept feeds as
//!   sitemaps; [`super::feed`] reads them).
//!
//! Sitemap elements are matched by namespace: the sitemaps.org namespace (and its legacy
//! Google names), or none, as crawler-commons accepts; elements of other namespaces (an image
//! extension's `<image:loc>`) are ignored. The protocol's limits hold: [`MAX_ITEMS`] URLs,
//! [`MAX_DECODED_BYTES`](super::MAX_DECODED_BYTES) decoded, [`MAX_URL_BYTES`] per URL; an
//! entry outside the sitemap's scope ([`allowed`]) is skipped and counted ([`Skipped`]).
//! Per-host totals and index nesting are bounded by [`MAX_INDEX_DEPTH`] and [`HostBudget`].

use std::time::{Duration, SystemTime};

use url::Url;

use super::date::parse_w3c;
use super::feed::{FeedFormat, FeedParser, Step};
use super::source::{Sniffed, Source};
use super::xml::{http_url, Name, Node, Ns, Tag, XmlDoc};
use super::{ReadError, MAX_ITEMS, MAX_URL_BYTES};

/// How deep sitemap indexes are followed: a sitemap named by robots.txt (or given) is depth 0;
/// an index's children are one deeper. The protocol forbids an index listing indexes, but
/// sites do it once; a child deeper than this is skipped ([`Skipped::too_deep`]).
pub const MAX_INDEX_DEPTH: u8 = 2;
/// Most sitemap files read per host: a large news or shop site splits into a few hundred.
/// Past it the host's further sitemaps are not fetched ([`HostBudget`]).
pub const MAX_SITEMAPS_PER_HOST: u32 = 500;
/// Most sitemap URLs admitted per host, over all its sitemaps: ten full files. Past it the
/// host's further entries are dropped ([`HostBudget`]); links still find its pages.
pub const MAX_SITEMAP_URLS_PER_HOST: u64 = 10 * MAX_ITEMS as u64;

/// A sitemap to fetch and read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SitemapRef {
    pub url: Url,
    /// The robots.txt whose `Sitemap:` line named it (inherited by an index's children): its
    /// origin's URLs are in scope whatever the sitemap's own location ([`allowed`]).
    pub named_by_robots: Option<Url>,
    /// Indexes passed through to find it (0: named by robots.txt or given).
    pub depth: u8,
}

impl SitemapRef {
    /// A sitemap given directly (a seed, a command line): no robots.txt, depth 0.
    pub fn new(url: Url) -> SitemapRef {
        SitemapRef {
            url,
            named_by_robots: None,
            depth: 0,
        }
    }

    /// The sitemap a robots.txt `Sitemap:` line's `value` names, `robots` being that
    /// robots.txt's URL. The value should be absolute (RFC 9309 §2.2.4); a relative one is
    /// resolved against `robots`. `None` if it is no http(s) URL of at most
    /// [`MAX_URL_BYTES`].
    pub fn from_robots(robots: &Url, value: &str) -> Option<SitemapRef> {
        let url = http_url(robots.join(value.trim()).ok()?)?;
        Some(SitemapRef {
            url,
            named_by_robots: Some(robots.clone()),
            depth: 0,
        })
    }
}

/// The sitemaps.org scope rule: may a sitemap at `sitemap` list `entry`?
///
/// - If a robots.txt named the sitemap (`named_by_robots`, that robots.txt's URL), every URL of
///   the robots.txt's origin is in scope, wherever the sitemap lives (the protocol's
///   cross-submission through robots.txt).
/// - Otherwise `entry` must be on the sitemap's host (and explicit port) and under its
///   directory: a sitemap at `/catalog/sitemap.xml` may list `/catalog/…` but not `/images/…`.
///   `http` and `https` count as the same site (sites that moved to https keep listing, or
///   being listed at, the other), other schemes never.
pub fn allowed(sitemap: &Url, entry: &Url, named_by_robots: Option<&Url>) -> bool {
    if named_by_robots.is_some_and(|r| r.origin() == entry.origin()) {
        return true;
    }
    let path = sitemap.path();
    let dir = &path[..path.rfind('/').map_or(0, |i| i + 1)];
    same_site(sitemap, entry) && entry.path().starts_with(dir)
}

/// May the index at `index` list the sitemap `child`? The protocol asks for the same site,
/// not the same directory; a robots.txt-named index may also list sitemaps of the robots.txt's
/// site.
pub fn child_allowed(index: &Url, child: &Url, named_by_robots: Option<&Url>) -> bool {
    same_site(index, child) || named_by_robots.is_some_and(|r| same_site(r, child))
}

fn same_site(a: &Url, b: &Url) -> bool {
    let web = |u: &Url| matches!(u.scheme(), "http" | "https");
    web(a) && web(b) && a.host() == b.host() && a.port() == b.port()
}

/// How often a page changes, as its sitemap says (a hint, not a promise).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChangeFreq {
    Always,
    Hourly,
    Daily,
    Weekly,
    Monthly,
    Yearly,
    Never,
}

impl ChangeFreq {
    /// The protocol's values, ASCII case-insensitive.
    pub fn parse(s: &str) -> Option<ChangeFreq> {
        const ALL: [(&str, ChangeFreq); 7] = [
            ("always", ChangeFreq::Always),
            ("hourly", ChangeFreq::Hourly),
            ("daily", ChangeFreq::Daily),
            ("weekly", ChangeFreq::Weekly),
            ("monthly", ChangeFreq::Monthly),
            ("yearly", ChangeFreq::Yearly),
            ("never", ChangeFreq::Never),
        ];
        ALL.iter()
            .find(|(name, _)| s.eq_ignore_ascii_case(name))
            .map(|&(_, f)| f)
    }

    /// The revisit interval it suggests: `Always` is zero (every visit sees a change),
    /// `Never` is `None` (archived: no revisit).
    pub fn period(self) -> Option<Duration> {
        const HOUR: u64 = 3600;
        let secs = match self {
            ChangeFreq::Always => 0,
            ChangeFreq::Hourly => HOUR,
            ChangeFreq::Daily => 24 * HOUR,
            ChangeFreq::Weekly => 7 * 24 * HOUR,
            ChangeFreq::Monthly => 30 * 24 * HOUR,
            ChangeFreq::Yearly => 365 * 24 * HOUR,
            ChangeFreq::Never => return None,
        };
        Some(Duration::from_secs(secs))
    }
}

/// A page a sitemap lists.
#[derive(Clone, Debug, PartialEq)]
pub struct UrlEntry {
    pub url: Url,
    pub lastmod: Option<SystemTime>,
    pub changefreq: Option<ChangeFreq>,
    /// 0.0–1.0 relative to the site's other pages; `None` if absent or not a number.
    pub priority: Option<f32>,
}

impl UrlEntry {
    /// The protocol's default priority when none is given.
    pub const DEFAULT_PRIORITY: f32 = 0.5;

    /// The priority, or the protocol's default.
    pub fn priority_or_default(&self) -> f32 {
        self.priority.unwrap_or(Self::DEFAULT_PRIORITY)
    }
}

/// What a sitemap lists.
#[derive(Clone, Debug, PartialEq)]
pub enum SitemapItem {
    /// A page (urlset, text sitemap, feed item).
    Page(UrlEntry),
    /// A sitemap an index lists, with the `<lastmod>` the index gives it (a revisit may skip
    /// a child that has not changed).
    Sitemap {
        sitemap: SitemapRef,
        lastmod: Option<SystemTime>,
    },
}

/// What kind of file a sitemap turned out to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Urlset,
    Index,
    Text,
    Feed(FeedFormat),
}

/// Listed URLs not returned, by reason.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Skipped {
    /// No `<loc>`, or one that is not an http(s) URL of at most [`MAX_URL_BYTES`].
    pub bad_url: u64,
    /// Outside the sitemap's scope ([`allowed`], [`child_allowed`]).
    pub out_of_scope: u64,
    /// A child sitemap deeper than [`MAX_INDEX_DEPTH`].
    pub too_deep: u64,
}

/// The `<url>` or `<sitemap>` being read.
#[derive(Debug, Default)]
struct Pending {
    loc: Option<Url>,
    lastmod: Option<SystemTime>,
    changefreq: Option<ChangeFreq>,
    priority: Option<f32>,
}

/// Where the reader is.
enum Parse {
    /// The root element is next.
    Root,
    /// In a `<urlset>` (`index: false`) or `<sitemapindex>`; `item` is the entry being read.
    Sitemap {
        index: bool,
        item: Option<Pending>,
    },
    Feed(FeedParser),
}

enum Body<'a> {
    /// Boxed: the XML reader's state is three times a text reader's.
    Xml(Box<XmlDoc<'a>>, Parse),
    Text(Source<'a>),
}

/// Reads one sitemap file (see the module doc).
pub struct SitemapReader<'a> {
    sitemap: SitemapRef,
    /// The document, until it ends or fails.
    body: Option<Body<'a>>,
    format: Option<Format>,
    /// Sticky: once set, every call returns it.
    error: Option<ReadError>,
    /// URLs listed so far, returned or skipped (at most [`MAX_ITEMS`]).
    listed: usize,
    skipped: Skipped,
    /// A text sitemap's current line.
    line: Vec<u8>,
}

impl<'a> SitemapReader<'a> {
    /// A reader of `body`, as fetched from `sitemap.url`.
    pub fn new(body: &'a [u8], sitemap: &SitemapRef) -> SitemapReader<'a> {
        let mut reader = SitemapReader {
            sitemap: sitemap.clone(),
            body: None,
            format: None,
            error: None,
            listed: 0,
            skipped: Skipped::default(),
            line: Vec::new(),
        };
        match Source::new(body).and_then(|mut s| Ok((s.sniff()?, s))) {
            Ok((Sniffed::Markup, source)) => {
                reader.body = Some(Body::Xml(
                    Box::new(XmlDoc::new(source, &sitemap.url)),
                    Parse::Root,
                ));
            }
            Ok((Sniffed::Text, source)) => {
                reader.format = Some(Format::Text);
                reader.body = Some(Body::Text(source));
            }
            // An empty file lists nothing: not an error.
            Ok((Sniffed::Empty, _)) => {}
            Err(e) => reader.error = Some(e),
        }
        reader
    }

    /// What the file is, once its first element (or line) has been read.
    pub fn format(&self) -> Option<Format> {
        self.format
    }

    /// Bytes held by the XML reader's event buffer (for tests of the memory bound).
    #[cfg(test)]
    fn held_bytes(&self) -> Option<usize> {
        match &self.body {
            Some(Body::Xml(doc, _)) => Some(doc.held_bytes()),
            _ => None,
        }
    }

    /// Listed URLs not returned so far, by reason.
    pub fn skipped(&self) -> Skipped {
        self.skipped
    }

    /// The next page or child sitemap: `Ok(None)` once the file has ended well. An error ends
    /// the read (see [`ReadError`]); the items returned before it stand.
    pub fn next_item(&mut self) -> Result<Option<SitemapItem>, ReadError> {
        let result = self.step();
        if let Err(e) = result {
            self.error = Some(e);
            self.body = None;
        }
        result
    }

    fn step(&mut self) -> Result<Option<SitemapItem>, ReadError> {
        if let Some(e) = self.error {
            return Err(e);
        }
        // Bound: each turn takes one listed URL (at most MAX_ITEMS of them) or ends.
        loop {
            let found = match &mut self.body {
                None => return Ok(None),
                Some(Body::Text(source)) => next_line(source, &mut self.line)?,
                Some(Body::Xml(doc, parse)) => next_xml(doc, parse, &mut self.format)?,
            };
            let Some(found) = found else {
                self.body = None;
                return Ok(None);
            };
            self.listed += 1;
            if self.listed > MAX_ITEMS {
                return Err(ReadError::TooManyItems);
            }
            if let Some(item) = self.check(found) {
                return Ok(Some(item));
            }
        }
    }

    /// Applies the scope rule and the index depth to what the file listed.
    fn check(&mut self, found: Found) -> Option<SitemapItem> {
        let here = &self.sitemap;
        let robots = here.named_by_robots.as_ref();
        match found {
            Found::Bad => self.skipped.bad_url += 1,
            Found::Page(entry) if allowed(&here.url, &entry.url, robots) => {
                return Some(SitemapItem::Page(entry));
            }
            Found::Child { .. } if here.depth >= MAX_INDEX_DEPTH => self.skipped.too_deep += 1,
            Found::Child { loc, lastmod } if child_allowed(&here.url, &loc, robots) => {
                let sitemap = SitemapRef {
                    url: loc,
                    named_by_robots: here.named_by_robots.clone(),
                    depth: here.depth + 1,
                };
                return Some(SitemapItem::Sitemap { sitemap, lastmod });
            }
            Found::Page(_) | Found::Child { .. } => self.skipped.out_of_scope += 1,
        }
        None
    }
}

/// What the file listed, before the scope rule.
enum Found {
    Page(UrlEntry),
    Child {
        loc: Url,
        lastmod: Option<SystemTime>,
    },
    /// A listed URL that is missing or unusable.
    Bad,
}

/// Room for whitespace around a text sitemap's URL before a line counts as too long.
const LINE_SLACK: usize = 64;

/// The next non-blank line of a text sitemap, or `None` at its end.
fn next_line(source: &mut Source<'_>, line: &mut Vec<u8>) -> Result<Option<Found>, ReadError> {
    // Bound: each turn consumes one line of a bounded body.
    loop {
        let Some(whole) = source.read_line(line, MAX_URL_BYTES + LINE_SLACK)? else {
            return Ok(None);
        };
        let text = String::from_utf8_lossy(line);
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        let url = Url::parse(text).ok().filter(|_| whole).and_then(http_url);
        return Ok(Some(url.map_or(Found::Bad, |url| {
            Found::Page(UrlEntry {
                url,
                lastmod: None,
                changefreq: None,
                priority: None,
            })
        })));
    }
}

/// Whether a sitemap element is in a namespace we read sitemaps in.
fn sitemap_ns(tag: Tag) -> bool {
    matches!(tag.ns, Ns::Sitemap | Ns::None)
}

/// The next URL an XML sitemap (or a feed read as one) lists, or `None` at its end.
fn next_xml(
    doc: &mut XmlDoc<'_>,
    parse: &mut Parse,
    format: &mut Option<Format>,
) -> Result<Option<Found>, ReadError> {
    // Bound: each turn reads one node of a bounded document.
    loop {
        let node = doc.next()?;
        match parse {
            Parse::Root => {
                let Node::Open(root) = node else {
                    return Err(ReadError::UnknownFormat);
                };
                let (next, kind) = match root.name {
                    Name::Urlset if sitemap_ns(root) => (
                        Parse::Sitemap {
                            index: false,
                            item: None,
                        },
                        Format::Urlset,
                    ),
                    Name::SitemapIndex if sitemap_ns(root) => (
                        Parse::Sitemap {
                            index: true,
                            item: None,
                        },
                        Format::Index,
                    ),
                    _ => {
                        let feed = FeedParser::for_root(root).ok_or(ReadError::UnknownFormat)?;
                        let kind = Format::Feed(feed.format());
                        (Parse::Feed(feed), kind)
                    }
                };
                *parse = next;
                *format = Some(kind);
            }
            Parse::Sitemap { index, item } => match node {
                Node::End => return Ok(None),
                Node::Open(tag) if tag.depth == 2 && sitemap_ns(tag) => {
                    let want = if *index { Name::Sitemap } else { Name::Url };
                    if tag.name == want {
                        *item = Some(Pending::default());
                    }
                }
                Node::Close(tag) if tag.depth == 2 => {
                    if let Some(p) = item.take() {
                        return Ok(Some(match (p.loc, *index) {
                            (None, _) => Found::Bad,
                            (Some(loc), true) => Found::Child {
                                loc,
                                lastmod: p.lastmod,
                            },
                            (Some(url), false) => Found::Page(UrlEntry {
                                url,
                                lastmod: p.lastmod,
                                changefreq: p.changefreq,
                                priority: p.priority,
                            }),
                        }));
                    }
                }
                Node::Close(tag) if tag.depth == 3 && sitemap_ns(tag) => {
                    if let Some(p) = item {
                        field(p, tag, doc);
                    }
                }
                _ => {}
            },
            Parse::Feed(feed) => match feed.on_node(node, doc) {
                Step::Item(it) => {
                    return Ok(Some(Found::Page(UrlEntry {
                        url: it.url,
                        lastmod: it.date,
                        changefreq: None,
                        priority: None,
                    })))
                }
                Step::Skipped => return Ok(Some(Found::Bad)),
                Step::Nothing if node == Node::End => return Ok(None),
                Step::Nothing | Step::Listed => {}
            },
        }
    }
}

/// Takes a closed child of `<url>` or `<sitemap>` into the entry. The first `<loc>` counts;
/// an unusable date, frequency or priority is left out, the entry kept.
fn field(p: &mut Pending, tag: Tag, doc: &XmlDoc<'_>) {
    let Some(text) = doc.text() else {
        return;
    };
    match tag.name {
        Name::Loc if p.loc.is_none() => p.loc = doc.resolve(text),
        Name::Lastmod => p.lastmod = parse_w3c(text),
        Name::Changefreq => p.changefreq = ChangeFreq::parse(text),
        Name::Priority => {
            p.priority = text
                .parse::<f32>()
                .ok()
                .filter(|v| v.is_finite())
                .map(|v| v.clamp(0.0, 1.0));
        }
        _ => {}
    }
}

/// Per-host bounds on sitemap reading, kept by the crawl for each host it reads sitemaps of:
/// [`MAX_SITEMAPS_PER_HOST`] files and [`MAX_SITEMAP_URLS_PER_HOST`] pages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostBudget {
    files: u32,
    urls: u64,
}

impl HostBudget {
    /// Whether another sitemap file of the host may be fetched; counts it if so.
    pub fn take_file(&mut self) -> bool {
        let ok = self.files < MAX_SITEMAPS_PER_HOST;
        self.files += u32::from(ok);
        ok
    }

    /// Whether another page from the host's sitemaps may be admitted; counts it if so.
    pub fn take_url(&mut self) -> bool {
        let ok = self.urls < MAX_SITEMAP_URLS_PER_HOST;
        self.urls += u64::from(ok);
        ok
    }
}

#[cfg(test)]
#[path = "sitemap_tests.rs"]
mod tests;
