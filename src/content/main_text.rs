//! Main-content extraction: the text a reader would call the page, without its template, from
//! the HTML bytes in one byte-level pass (memchr between tags, as the link scanner does).
//!
//! # How
//!
//! 1. **Blocks** (boilerpipe's text blocks): the text between block-level tags (`p`, `div`,
//!    `li`, `h1`…, `td`, `nav`, `footer`…: the table in `markup`) is one block. Text of `script`,
//!    `style`, `template`, `title`, `textarea`, `select`, `svg` and `math`, and
//!    comments, is skipped; character references are decoded; whitespace runs become one
//!    space. Per block three shallow features are kept: words, words inside `<a>` (link
//!    density, boilerpipe) and tags (Finn's tag tokens).
//! 2. **The article element**: when the page marks its article with `<article>` (most CMSs
//!    do), only the blocks of the top-level `<article>` element with the most words in long
//!    blocks are candidates: the teaser grids, briefings and footers around it cannot join
//!    it, however much text they have.
//! 3. **Kinds**: a block is [`BlockKind::Boilerplate`] when more than a third of its words are
//!    link text (boilerpipe's link-density split: navigation, link lists, ad creatives), or —
//!    on pages without an `<article>` — when it is a teaser: at most 40 words with the nearest
//!    blocks that are not short, before and after, mostly link text (the summary under a
//!    headline link in a grid of cards; boilerpipe's NumWordsRules has the same branch). It is
//!    [`BlockKind::Template`] when the optional [`TemplateMemory`] has seen it on many pages
//!    of the same host; otherwise [`BlockKind::Long`] from [`LONG_BLOCK_WORDS`] words on, else
//!    [`BlockKind::Short`].
//! 4. **The densest run** (Finn's body-text extraction, on blocks): each block weighs
//!    `words − tags` if long, `−tags` if short, `−(words + tags)` if boilerplate or template;
//!    the main content is the contiguous run of candidates with the largest sum (Kadane), and
//!    of it the long blocks. Short blocks — headline, dateline, byline, subheadings, an ad's
//!    label, "3 comments" — are left out even inside the run: they are where two copies of
//!    one article differ (a dateline added, a subheading next to an ad), and every changed word
//!    changes 4 shingles of the sketch. A reader would keep the
//!    headline and subheadings; near-duplicate detection is better without them.
//!
//! 5. **The reader's content** ([`MainText::reader_text`], the Markdown's blocks) is chosen
//!    apart, from the page's containers rather than block by block (`super::reader`, over the
//!    tree `super::regions` records in the same pass): the fingerprint keeps its run of long
//!    blocks, and [`MainText::fingerprint_only`] saves the tree's work when only it is wanted.
//!
//! The main text is the kept blocks joined by `\n`. A page with no long block that is not
//! link text (a home page of teasers, a link list) has an empty main text.
//!
//! # Bounds
//! Only the first `limit` bytes are read (the crawl passes `--max-scan-bytes`); a tag cut by
//! the limit is dropped with the rest. At most [`MAX_BLOCKS`] blocks are kept, the rest of the
//! page is ignored ([`MainText::truncated`]). Decoding never lengthens text, so both texts are
//! at most the bytes read. Every byte is looked at a bounded number of times; buffers are kept
//! across pages, so a crawler keeping one `MainText` allocates only while it grows.

use memchr::memchr;
use xxhash_rust::xxh3::xxh3_64;

use super::blocks::{densest_run, is_link_text, is_short, Block};
pub use super::blocks::{BlockKind, Opener, LONG_BLOCK_WORDS, MAX_BLOCKS};
use super::is_word_byte;
use super::markup::{
    attribute, char_ref, classify, is_space, plain_text, skip_comment, skip_raw_text, tag_end,
    tag_name_end, El,
};
use super::reader::Reader;
use super::regions::Regions;
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
use super::swar::classes16;
use super::swar::{control_lanes, eq_lanes, word_lanes};
use super::template_memory::TemplateMemory;

/// Teasers: a block of at most `TEASER_MAX_WORDS` words whose nearest blocks that are not
/// short, before and after, are both more than 5/9 link text (`TEASER_NEIGHBOUR_LINKS`, as
/// numerator and denominator) is the summary under a headline link in a grid of cards, not a
/// paragraph of the article. boilerpipe's NumWordsRules decides this from the block after
/// being short; looking past short blocks to a link list instead keeps an article's paragraph
/// that follows an ad and precedes a subheading.
const TEASER_MAX_WORDS: u32 = 40;
const TEASER_NEIGHBOUR_LINKS: (u64, u64) = (5, 9);
/// Nested `<a>` depth counted; hostile pages that never close `<a>` saturate here.
const MAX_ANCHOR_DEPTH: u32 = 64;

/// Longest `<html lang>` kept (a language tag is a few letters; this bounds a hostile one).
const MAX_LANG_BYTES: usize = 64;
/// Lists nested deeper than this are rendered at this depth.
const MAX_LIST_DEPTH: u8 = 8;

/// A block of the reader's main content, for Markdown: its HTML and what began it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReaderBlock<'a> {
    pub html: &'a [u8],
    pub opener: Opener,
}

/// A block as [`MainText::blocks`] shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockInfo<'a> {
    pub text: &'a [u8],
    pub words: u32,
    pub link_words: u32,
    pub tags: u32,
    pub kind: BlockKind,
    /// Whether the block is part of the main text.
    pub kept: bool,
}

/// The blocks and main text of the last page extracted. Keep one and reuse it: its buffers
/// are cleared, not freed, per page.
#[derive(Clone, Debug, Default)]
pub struct MainText {
    /// Every block's text, joined by `\n`.
    all: Vec<u8>,
    blocks: Vec<Block>,
    main: Vec<u8>,
    /// The first `<title>`'s text in the HTML, and `<html lang>`.
    title: Option<(usize, usize)>,
    lang: Vec<u8>,
    truncated: bool,
    /// Reused for the template memory: block hashes and its answers.
    hashes: Vec<u64>,
    template: Vec<bool>,
    /// Whether the reader's content is left out (for the fingerprint alone), the
    /// container tree it is chosen from, and the choice.
    fingerprint_only: bool,
    regions: Regions,
    reader: Reader,
}

impl MainText {
    /// Empty buffers; they grow on first use. Each page's reader content is chosen too.
    pub fn new() -> Self {
        Self::default()
    }

    /// For the main text ([`Self::text`]) alone, as the crawl's fingerprint wants it: the
    /// reader's content ([`Self::reader_text`], [`Self::reader_blocks`]) stays empty until
    /// [`Self::set_reader`] asks for it, and the pass saves the container tree's work.
    pub fn fingerprint_only() -> Self {
        Self {
            fingerprint_only: true,
            ..Self::default()
        }
    }

    /// Whether the pages extracted from now on get their reader content chosen.
    pub fn set_reader(&mut self, on: bool) {
        self.fingerprint_only = !on;
    }

    /// Extracts the main text of the first `limit` bytes of `html` from the blocks' shallow
    /// features alone, and returns it.
    pub fn extract(&mut self, html: &[u8], limit: usize) -> &[u8] {
        self.scan(html, limit);
        self.select();
        &self.main
    }

    /// As [`Self::extract`], and also asks `memory` which blocks are the template of `host`
    /// (then teaches it this page's blocks).
    pub fn extract_with_memory(
        &mut self,
        html: &[u8],
        limit: usize,
        memory: &mut TemplateMemory,
        host: &[u8],
    ) -> &[u8] {
        self.scan(html, limit);
        self.hashes.clear();
        self.hashes.extend(
            self.blocks
                .iter()
                .map(|b| xxh3_64(&self.all[b.start..b.end])),
        );
        memory.observe_page(host, &self.hashes, &mut self.template);
        for (b, &t) in self.blocks.iter_mut().zip(&self.template) {
            if t {
                b.kind = BlockKind::Template;
            }
        }
        self.select();
        &self.main
    }

    /// The main text of the last page: its kept blocks, joined by `\n`.
    pub fn text(&self) -> &[u8] {
        &self.main
    }

    /// The last page's main content for a reader, appended to `out`: every block of the
    /// chosen run that is not link text or template — the long blocks of [`Self::text`] and
    /// the headings, bylines, captions and short paragraphs between them — joined by `\n`.
    pub fn reader_text(&self, out: &mut Vec<u8>) {
        for &i in &self.reader.kept {
            let b = &self.blocks[i as usize];
            if !out.is_empty() {
                out.push(b'\n');
            }
            out.extend_from_slice(&self.all[b.start..b.end]);
        }
    }

    /// The blocks [`Self::reader_text`] is made of, with their HTML in `html` (the page the
    /// last extract read).
    pub fn reader_blocks<'a>(&'a self, html: &'a [u8]) -> impl Iterator<Item = ReaderBlock<'a>> {
        self.reader.kept.iter().map(move |&i| {
            let b = &self.blocks[i as usize];
            ReaderBlock {
                html: html.get(b.html.0..b.html.1).unwrap_or_default(),
                opener: b.opener,
            }
        })
    }

    /// The last page's `<title>` (the first one), as plain text, appended to `out` (`html`
    /// is that page).
    pub fn title(&self, html: &[u8], out: &mut Vec<u8>) {
        if let Some((from, to)) = self.title {
            plain_text(html.get(from..to).unwrap_or_default(), out);
        }
    }

    /// The last page's language as its `<html lang>` gives it (`-` and letters, as written),
    /// empty when it gives none.
    pub fn lang(&self) -> &[u8] {
        &self.lang
    }

    /// All the text of the last page, template included: every block, joined by `\n`.
    pub fn page_text(&self) -> &[u8] {
        &self.all
    }

    /// Whether the last page had more than [`MAX_BLOCKS`] blocks (the rest was ignored).
    pub fn truncated(&self) -> bool {
        self.truncated
    }

    /// The blocks of the last page, in document order.
    pub fn blocks(&self) -> impl Iterator<Item = BlockInfo<'_>> {
        self.blocks.iter().map(|b| BlockInfo {
            text: &self.all[b.start..b.end],
            words: b.words,
            link_words: b.link_words,
            tags: b.tags,
            kind: b.kind,
            kept: b.kept,
        })
    }

    fn scan(&mut self, html: &[u8], limit: usize) {
        self.all.clear();
        self.blocks.clear();
        self.main.clear();
        self.regions.clear();
        self.title = None;
        self.lang.clear();
        self.truncated = false;
        let html = &html[..html.len().min(limit)];
        let mut s = Scanner {
            out: self,
            origin: 0,
            start: 0,
            words: 0,
            link_words: 0,
            tags: 0,
            in_word: false,
            space: false,
            anchors: 0,
            article_depth: 0,
            articles: 0,
            html_from: 0,
            html_at: 0,
            opener: Opener::Para,
            lists: 0,
            ordered: 0,
            rows: 0,
        };
        s.run(html);
    }

    /// Decides each block's kind, finds the densest run and builds the main text.
    fn select(&mut self) {
        let blocks = &mut self.blocks;
        let article = article_range(blocks);
        // Two passes, so that finding the nearest block that is not short stays linear.
        let mut after = true;
        for b in blocks.iter_mut().rev() {
            b.links_after = after;
            if !is_short(b) {
                after = mostly_links(b);
            }
        }
        let mut before = false;
        for b in blocks.iter_mut() {
            let links_before = before;
            if !is_short(b) {
                before = mostly_links(b);
            }
            if b.kind == BlockKind::Template {
                continue;
            }
            // Inside a chosen <article> an ad between paragraphs looks like a headline link:
            // the teaser rule is for pages that do not say where their article is.
            let teaser =
                article.is_none() && b.words <= TEASER_MAX_WORDS && links_before && b.links_after;
            b.kind = if is_link_text(b) || teaser {
                BlockKind::Boilerplate
            } else if b.words >= LONG_BLOCK_WORDS {
                BlockKind::Long
            } else {
                BlockKind::Short
            };
        }
        let range = article.unwrap_or((0, blocks.len()));
        let (from, to) = densest_run(blocks, range, |b, words, tags| match b.kind {
            BlockKind::Long => words - tags,
            BlockKind::Short => -tags.max(1),
            BlockKind::Boilerplate | BlockKind::Template => -(words + tags),
        });
        for b in &mut blocks[from..to] {
            b.kept = b.kind == BlockKind::Long;
            if b.kept {
                if !self.main.is_empty() {
                    self.main.push(b'\n');
                }
                self.main.extend_from_slice(&self.all[b.start..b.end]);
            }
        }
        if !self.fingerprint_only {
            self.reader.choose(&self.blocks, &self.regions.nodes);
        } else {
            self.reader.kept.clear();
        }
    }
}

/// The blocks of the `<article>` element with the most words in long blocks (by features),
/// if any has one: `lo..hi`, contiguous since each top-level article element gets its own
/// number.
fn article_range(blocks: &[Block]) -> Option<(usize, usize)> {
    let mut best: Option<(u64, usize, usize)> = None;
    let mut i = 0;
    // Bound: every turn moves `i` past one run of blocks with the same article number.
    while i < blocks.len() {
        let (id, start) = (blocks[i].article, i);
        let mut words = 0u64;
        while i < blocks.len() && blocks[i].article == id {
            if !is_link_text(&blocks[i]) && blocks[i].words >= LONG_BLOCK_WORDS {
                words += u64::from(blocks[i].words);
            }
            i += 1;
        }
        if id != 0 && words > 0 && best.is_none_or(|(w, _, _)| words > w) {
            best = Some((words, start, i));
        }
    }
    best.map(|(_, lo, hi)| (lo, hi))
}

/// More than 5/9 of the block's words are link text (boilerpipe's threshold for "after a
/// link list").
fn mostly_links(b: &Block) -> bool {
    u64::from(b.link_words) * TEASER_NEIGHBOUR_LINKS.1
        > u64::from(b.words) * TEASER_NEIGHBOUR_LINKS.0
}

/// The pass over one page: the block being built and the inline state around it.
struct Scanner<'a> {
    out: &'a mut MainText,
    /// The length of `out.all` when the current block began (before its `\n` separator).
    origin: usize,
    /// Where the current block's text starts in `out.all`.
    start: usize,
    words: u32,
    link_words: u32,
    /// Tags since the last block was recorded (tags between blocks go to the next one).
    tags: u32,
    in_word: bool,
    /// Whitespace seen since the last text byte: one space before the next one.
    space: bool,
    anchors: u32,
    /// Open `<article>` elements, and how many top-level ones began so far.
    article_depth: u32,
    articles: u32,
    /// The current block's HTML begins at `html_from`; the tag ending it is at `html_at`.
    html_from: usize,
    html_at: usize,
    /// What began the current block, the open lists (depth, and which are `ol`: a bit per
    /// depth) and the `tr`s so far.
    opener: Opener,
    lists: u8,
    ordered: u64,
    rows: u32,
}

impl Scanner<'_> {
    fn run(&mut self, html: &[u8]) {
        self.out.all.reserve(html.len());
        let mut pos = 0;
        // Bound: every turn moves `pos` forward by at least one byte, or ends the scan.
        while pos < html.len() {
            let Some(off) = memchr(b'<', &html[pos..]) else {
                self.text(&html[pos..]);
                break;
            };
            let lt = pos + off;
            self.text(&html[pos..lt]);
            match self.markup(html, lt) {
                Some(next) => pos = next,
                None => break,
            }
            if self.out.truncated {
                return;
            }
        }
        self.html_at = html.len();
        self.end_block();
        let blocks = self.out.blocks.len();
        self.out.regions.finish(blocks);
    }

    /// What a block-level tag `name` (opening, or closing when `close`) means for the
    /// blocks after it.
    fn open_block(&mut self, name: &[u8], close: bool) {
        let lower = |i: usize| name.get(i).map(u8::to_ascii_lowercase);
        let list_depth = self.lists.min(MAX_LIST_DEPTH);
        self.opener = match (name.len(), lower(0), lower(1)) {
            (2, Some(b'u' | b'o'), Some(b'l')) => {
                if close {
                    self.lists = self.lists.saturating_sub(1);
                } else {
                    self.lists = self.lists.saturating_add(1);
                    let bit = 1u64 << self.lists.min(63);
                    if lower(0) == Some(b'o') {
                        self.ordered |= bit;
                    } else {
                        self.ordered &= !bit;
                    }
                }
                Opener::Para
            }
            _ if close => Opener::Para,
            (2, Some(b'h'), Some(d @ b'1'..=b'6')) => Opener::Heading(d - b'0'),
            (2, Some(b'l'), Some(b'i')) => Opener::Item {
                ordered: self.ordered >> self.lists.min(63) & 1 == 1,
                depth: list_depth.max(1),
            },
            (2, Some(b't'), Some(b'r')) => {
                self.rows = self.rows.saturating_add(1);
                Opener::Para
            }
            (2, Some(b't'), Some(c @ (b'd' | b'h'))) => Opener::Cell {
                header: c == b'h',
                row: self.rows,
            },
            (3, Some(b'p'), Some(b'r')) => Opener::Pre,
            (10, Some(b'b'), Some(b'l')) => Opener::Quote,
            _ => Opener::Para,
        };
    }

    /// Handles the markup at `lt` (a `<`); returns where text resumes, or `None` if the input
    /// ends inside it.
    fn markup(&mut self, html: &[u8], lt: usize) -> Option<usize> {
        match html.get(lt + 1) {
            Some(b) if b.is_ascii_alphabetic() => {
                let name_end = tag_name_end(html, lt + 1);
                let el = classify(&html[lt + 1..name_end]);
                let end = tag_end(html, name_end)?;
                self.tags = self.tags.saturating_add(1);
                self.html_at = lt;
                match el {
                    El::Block => {
                        self.end_block();
                        let name = &html[lt + 1..name_end];
                        if name.eq_ignore_ascii_case(b"html") && self.out.lang.is_empty() {
                            if let Some(lang) = attribute(&html[name_end..end], b"lang") {
                                self.out.lang = lang;
                                self.out.lang.truncate(MAX_LANG_BYTES);
                            }
                        }
                        self.open_block(name, false);
                        self.html_from = end;
                        if !self.out.fingerprint_only {
                            let blocks = self.out.blocks.len();
                            self.out.regions.open(name, &html[name_end..end], blocks);
                        }
                    }
                    El::Article => {
                        self.end_block();
                        self.html_from = end;
                        if !self.out.fingerprint_only {
                            let blocks = self.out.blocks.len();
                            self.out
                                .regions
                                .open(b"article", &html[name_end..end], blocks);
                        }
                        if self.article_depth == 0 {
                            self.articles = self.articles.saturating_add(1);
                        }
                        self.article_depth = self.article_depth.saturating_add(1);
                    }
                    El::Anchor => self.anchors = (self.anchors + 1).min(MAX_ANCHOR_DEPTH),
                    El::Break => self.line_break(),
                    El::Skip(name) => {
                        let next = skip_raw_text(html, end, name);
                        if name == b"title" && self.out.title.is_none() {
                            let to = next.map_or(html.len(), |n| {
                                memchr::memrchr(b'<', &html[end..n]).map_or(n, |o| end + o)
                            });
                            self.out.title = Some((end, to));
                        }
                        return next;
                    }
                    El::Inline => {}
                }
                Some(end)
            }
            Some(b'/') if html.get(lt + 2).is_some_and(u8::is_ascii_alphabetic) => {
                let name_end = tag_name_end(html, lt + 2);
                let el = classify(&html[lt + 2..name_end]);
                let end = tag_end(html, name_end)?;
                self.tags = self.tags.saturating_add(1);
                self.html_at = lt;
                match el {
                    El::Block => {
                        self.end_block();
                        self.open_block(&html[lt + 2..name_end], true);
                        self.html_from = end;
                        if !self.out.fingerprint_only {
                            let blocks = self.out.blocks.len();
                            self.out.regions.close(&html[lt + 2..name_end], blocks);
                        }
                    }
                    El::Article => {
                        self.end_block();
                        self.html_from = end;
                        self.article_depth = self.article_depth.saturating_sub(1);
                        if !self.out.fingerprint_only {
                            let blocks = self.out.blocks.len();
                            self.out.regions.close(b"article", blocks);
                        }
                    }
                    El::Anchor => self.anchors = self.anchors.saturating_sub(1),
                    El::Break => self.line_break(),
                    El::Skip(_) | El::Inline => {}
                }
                Some(end)
            }
            Some(b'!') if html[lt + 2..].starts_with(b"--") => skip_comment(html, lt + 4),
            Some(b'!' | b'?' | b'/') => memchr(b'>', &html[lt + 2..]).map(|o| lt + 2 + o + 1),
            _ => {
                self.text(b"<");
                Some(lt + 1)
            }
        }
    }

    /// Appends text: whitespace collapsed, character references decoded, words counted.
    /// Appends a text segment: whitespace runs collapsed into one space (written eagerly; a
    /// block's trailing one is cut when it ends), character references decoded, words counted.
    /// The per-byte path of the whole extractor, so it has no branch that depends on the text
    /// except the rare `&`: mispredicted branches at every word boundary cost more than the
    /// rest of the work together.
    fn text(&mut self, t: &[u8]) {
        let all = &mut self.out.all;
        let base = all.len();
        // Room for the text plus a separator: decoding and collapsing never lengthen it.
        all.resize(base + t.len() + 1, 0);
        let buf = &mut all[..];
        let mut w = base;
        let (mut space, mut in_word, mut starts) = (self.space, self.in_word, 0u32);
        let mut i = 0;
        // Bound: every turn of either loop consumes at least one byte of `t`.
        while i < t.len() {
            if w == self.start {
                // The block's first byte: leading whitespace is dropped, a separator goes
                // before it if another block came first.
                let b = t[i];
                if is_space(b) {
                    i += 1;
                    continue;
                }
                if self.start == self.origin && self.start > 0 {
                    buf[w] = b'\n';
                    w += 1;
                    self.start += 1;
                }
                space = false;
            }
            while i < t.len() {
                // 16 bytes at once (8 off x86-64) when they hold no `&`, no control byte
                // (whitespace but the space) and no space after a space: copied as they are,
                // words counted from the word-byte lanes. Prose is mostly that; the rest goes
                // a byte at a time.
                #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
                if let Some(x) = t.get(i..i + 16) {
                    let x: &[u8; 16] = x.try_into().expect("16 bytes");
                    let (stop, spaces, words) = classes16(x);
                    let after_space = (spaces << 1) | u32::from(space);
                    if stop | (spaces & after_space) == 0 {
                        buf[w..w + 16].copy_from_slice(x);
                        let after_word = (words << 1) | u32::from(in_word);
                        starts += (words & !after_word).count_ones();
                        (space, in_word) = (spaces >> 15 != 0, words >> 15 != 0);
                        (w, i) = (w + 16, i + 16);
                        continue;
                    }
                }
                if let Some(x) = t.get(i..i + 8) {
                    let x = u64::from_le_bytes(x.try_into().expect("8 bytes"));
                    let spaces = eq_lanes(x, b' ');
                    let after_space = (spaces << 8) | (u64::from(space) << 7);
                    if eq_lanes(x, b'&') | control_lanes(x) | (spaces & after_space) == 0 {
                        buf[w..w + 8].copy_from_slice(&x.to_le_bytes());
                        let words = word_lanes(x);
                        let after_word = (words << 8) | (u64::from(in_word) << 7);
                        starts += (words & !after_word).count_ones();
                        (space, in_word) = (spaces >> 63 != 0, words >> 63 != 0);
                        (w, i) = (w + 8, i + 8);
                        continue;
                    }
                }
                let b = t[i];
                if b == b'&' {
                    break;
                }
                let ws = is_space(b);
                buf[w] = if ws { b' ' } else { b };
                w += usize::from(!(ws & space));
                space = ws;
                let word = is_word_byte(b);
                starts += u32::from(word & !in_word);
                in_word = word;
                i += 1;
            }
            if i == t.len() {
                break;
            }
            let (decoded, used) = match char_ref(&t[i + 1..]) {
                Some((c, used)) => (c, 1 + used),
                None => ('&', 1),
            };
            i += used;
            if decoded.is_whitespace() {
                // A space, unless the block is empty or ends in one (as for a space byte).
                buf[w] = b' ';
                w += usize::from(!space && w > self.start);
                space = true;
                in_word = false;
                continue;
            }
            if w == self.start && self.start == self.origin && self.start > 0 {
                buf[w] = b'\n';
                w += 1;
                self.start += 1;
            }
            let mut utf8 = [0u8; 4];
            for &d in decoded.encode_utf8(&mut utf8).as_bytes() {
                buf[w] = d;
                w += 1;
                let word = is_word_byte(d);
                starts += u32::from(word & !in_word);
                in_word = word;
            }
            space = false;
        }
        all.truncate(w);
        (self.space, self.in_word) = (space, in_word);
        self.words = self.words.saturating_add(starts);
        if self.anchors > 0 {
            self.link_words = self.link_words.saturating_add(starts);
        }
    }

    /// `<br>`: a space, unless the block is empty or already ends in one.
    fn line_break(&mut self) {
        let all = &mut self.out.all;
        if all.len() > self.start && !self.space {
            all.push(b' ');
            self.space = true;
        }
        self.in_word = false;
    }

    /// Ends the current block: recorded if it has a word, dropped otherwise.
    fn end_block(&mut self) {
        let out = &mut *self.out;
        if self.space && out.all.len() > self.start {
            // The eagerly written space after the block's last word.
            out.all.pop();
        }
        if self.words > 0 && !out.truncated {
            if out.blocks.len() == MAX_BLOCKS {
                out.truncated = true;
                out.all.truncate(self.origin);
            } else {
                out.blocks.push(Block {
                    start: self.start,
                    end: out.all.len(),
                    html: (self.html_from, self.html_at.max(self.html_from)),
                    opener: self.opener,
                    words: self.words,
                    link_words: self.link_words,
                    tags: self.tags,
                    kind: BlockKind::Short,
                    kept: false,
                    links_after: false,
                    node: out.regions.current(),
                    article: if self.article_depth > 0 {
                        self.articles
                    } else {
                        0
                    },
                });
                self.tags = 0;
            }
        } else {
            out.all.truncate(self.origin);
        }
        self.origin = out.all.len();
        self.start = self.origin;
        self.words = 0;
        self.link_words = 0;
        self.in_word = false;
        self.space = false;
    }
}

#[cfg(test)]
#[path = "main_text_tests.rs"]
mod tests;
