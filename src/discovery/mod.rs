//! Discovery beyond links (ARCHITECTURE §7a): sitemaps, feeds, and the visible text of a page.
//!
//! Sans-IO protocol cores, like [`crate::links`]: a body's bytes (and the URL it came from) in,
//! URLs with their dates and hints out, one at a time through a pull API. Nothing here fetches,
//! reads the clock or touches files; which sitemaps to fetch, how many per host, what priority
//! an entry gets and when it is due are the crawl's decisions (`crawl::focus` for topic
//! scores).
//!
//! - [`sitemap`]: sitemaps.org files (urlset, sitemapindex, plain text; RSS and Atom read as
//!   sitemaps, as search engines accept them), gzip or not, and the protocol's scope rule
//!   ([`sitemap::allowed`]).
//! - [`feed`]: RSS 2.0, RSS 1.0 (RDF) and Atom 1.0 item links with their dates, and which
//!   `<link>` of a page names a feed ([`crate::links::is_feed_link`]).
//! - [`visible_text`]: the words a reader sees in an HTML page, and the text of its anchors,
//!   for the focused crawl's relevance score.
//! - `xml` (private): the streaming XML reading both readers share: quick-xml's
//!   `read_event_into` with one reused buffer (never a tree of the document), namespaces,
//!   the declared encoding, entities and CDATA.
//! - `source` (private): the body as decoded bytes: gzip by magic bytes, the size bounds.
//! - `date`: W3C datetime (sitemaps, `dc:date`), RFC 3339 (Atom) and RFC 822 (RSS) dates.
//!
//! Every input is bounded ([`MAX_INPUT_BYTES`], [`MAX_DECODED_BYTES`], [`MAX_ITEMS`], and the
//! per-element bounds in `xml`), and hostile input ends as a [`ReadError`], never a panic or
//! unbounded memory.

mod date;
pub mod feed;
pub mod sitemap;
mod source;
pub mod visible_text;
mod xml;

pub use date::{parse_rfc822, parse_w3c};

/// Largest body read, as fetched (gzip or not): the protocol's 50 MB (52,428,800 bytes) per
/// file. A longer body is refused whole ([`ReadError::InputTooLarge`]).
pub const MAX_INPUT_BYTES: usize = 52_428_800;
/// Largest decoded body read: the protocol's limit is on the uncompressed file. Past it, a
/// read ends with [`ReadError::DecodedTooLarge`] (a gzip bomb ends there, having held only the
/// reader's buffers).
pub const MAX_DECODED_BYTES: u64 = 52_428_800;
/// Most URLs (`<url>`, `<sitemap>`, feed items, text lines) one file may list: the protocol's
/// 50,000. The next one ends the read with [`ReadError::TooManyItems`]; those before it stand.
pub const MAX_ITEMS: usize = 50_000;
/// Longest URL kept: sitemaps.org asks for fewer than 2,048 characters, and browsers and
/// servers commonly stop near there. Longer ones are skipped and counted.
pub const MAX_URL_BYTES: usize = 2048;

/// Why a sitemap or feed read ended early. Items already returned stand: a cut or broken file
/// still yields what came before the break. Once returned, the same error is returned by
/// every later call (it is sticky).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReadError {
    /// The body is longer than [`MAX_INPUT_BYTES`]; nothing was read.
    InputTooLarge,
    /// The decoded body passed [`MAX_DECODED_BYTES`] (a gzip bomb, or an oversized file).
    DecodedTooLarge,
    /// The body starts with gzip's magic bytes but does not inflate.
    BadGzip,
    /// One start tag, text run or CDATA section is larger than the per-element bound.
    ElementTooLarge,
    /// Elements nest deeper than the reader follows.
    TooDeep,
    /// The document declares (or its byte order mark says) an encoding we do not read: only
    /// UTF-8 and windows-1252 (with its labels ISO-8859-1, latin1, US-ASCII) are.
    UnsupportedEncoding,
    /// The XML is not well-formed (unclosed or mismatched tags, broken markup, cut short) at
    /// about this byte offset of the decoded body.
    Malformed { at: u64 },
    /// The root element is not one this reader knows.
    UnknownFormat,
    /// More than [`MAX_ITEMS`] items were listed.
    TooManyItems,
}
