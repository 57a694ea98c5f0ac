//! A block of text — the unit the extractor classifies and selects — and the features and
//! weights both selections (the fingerprint's run, the reader's content) read from it.

/// Words from which a block that is not link text counts as long: more than a dateline or a
/// byline ("By A. Writer, Tuesday 12 March 2024 10:32 GMT" is 10), fewer than most paragraphs.
pub const LONG_BLOCK_WORDS: u32 = 12;
/// Most blocks kept from one page (64 bytes each with their HTML range and opener: 4 MiB at
/// most). Real pages have hundreds.
pub const MAX_BLOCKS: usize = 1 << 16;
/// A block is link text when more than `1 / LINK_DENSITY_DIVISOR` of its words are inside
/// `<a>` (boilerpipe's 0.33 split between content and navigation).
pub(super) const LINK_DENSITY_DIVISOR: u64 = 3;

/// What the selection made of a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockKind {
    /// At least [`LONG_BLOCK_WORDS`] words, not link text.
    Long,
    /// Fewer words, not link text.
    Short,
    /// More than a third of its words are link text.
    Boilerplate,
    /// Seen on many pages of the host ([`TemplateMemory`](super::TemplateMemory)).
    Template,
}

/// The block-level element a block of text began in, for Markdown (`super::markdown`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Opener {
    /// A paragraph, a `div`, or text after a closing tag.
    Para,
    /// `h1`…`h6`.
    Heading(u8),
    /// `li` at list depth `depth` (1 for a top-level list).
    Item {
        ordered: bool,
        depth: u8,
    },
    Pre,
    Quote,
    /// `td` or `th` of the `row`-th `tr` of the page.
    Cell {
        header: bool,
        row: u32,
    },
}

/// One block of text and its features.
#[derive(Clone, Copy, Debug)]
pub(super) struct Block {
    pub(super) start: usize,
    pub(super) end: usize,
    /// Where its HTML is: after the tag that began it, up to the tag that ended it.
    pub(super) html: (usize, usize),
    pub(super) opener: Opener,
    pub(super) words: u32,
    pub(super) link_words: u32,
    pub(super) tags: u32,
    pub(super) kind: BlockKind,
    pub(super) kept: bool,
    /// Whether the nearest later block that is not short is mostly links (or there is none).
    pub(super) links_after: bool,
    /// The number of the top-level `<article>` element holding the block, 0 for none.
    pub(super) article: u32,
    /// The innermost container holding it (`super::regions`; 0 when not recorded).
    pub(super) node: u32,
}

// Feature tests in u64: a hostile page's counts times these factors may not fit a u32.

/// More than a third of the block's words are link text.
pub(super) fn is_link_text(b: &Block) -> bool {
    u64::from(b.link_words) * LINK_DENSITY_DIVISOR > u64::from(b.words)
}

/// Fewer than [`LONG_BLOCK_WORDS`] words and not link text: a heading, a byline, a label.
pub(super) fn is_short(b: &Block) -> bool {
    b.words < LONG_BLOCK_WORDS && !is_link_text(b)
}

/// The run of `blocks` within `lo..hi` whose weights sum highest (Kadane), `weight` given a
/// block, its words and its tags.
pub(super) fn densest_run(
    blocks: &[Block],
    (lo, hi): (usize, usize),
    weight: impl Fn(&Block, i64, i64) -> i64,
) -> (usize, usize) {
    let mut best = (0i64, 0usize, 0usize);
    let (mut sum, mut start) = (0i64, lo);
    for (i, b) in blocks.iter().enumerate().take(hi).skip(lo) {
        if sum <= 0 {
            (sum, start) = (0, i);
        }
        sum += weight(b, i64::from(b.words), i64::from(b.tags));
        if sum > best.0 {
            best = (sum, start, i + 1);
        }
    }
    (best.1, best.2)
}
