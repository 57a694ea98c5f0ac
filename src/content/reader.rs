//! The reader's content: which blocks of a page a reader would call the page — its headline,
//! paragraphs, lists, tables and code, or a thread's posts, a listing's items — chosen from
//! the container tree ([`super::regions`]) rather than block by block.
//!
//! # How
//!
//! 1. **Template containers** are dropped whole: those whose tag or attributes say so (`nav`,
//!    `footer`, `aside`, `role="navigation"`, `class="sidebar"`, hidden ones), unless one holds
//!    most of the page's text (a wrapper with a misleading name). As trafilatura's
//!    `OVERALL_DISCARD_XPATH` and resiliparse's boilerplate rules do. Comment containers
//!    (`comments-area`, `disqus_thread`) go too, unless they hold nearly all the page's
//!    text: then the page is the thread.
//! 2. **The region**: the container the page says holds its content (`main`, `article`,
//!    `entry-content`…, as trafilatura's `BODY_XPATH`) with the most text, if it holds a
//!    fair share of the page's text; repeated `article` cards (a listing) give their parent
//!    instead of one card. Every block of it that is not link text is the reader's, and its
//!    linked headings (an item's title). A region of prose loses its trailer: the short
//!    paragraphs and headings after its last long block (share bars, "Posted in", "Next").
//! 3. **Without a region** the densest run of blocks (Kadane, as for the fingerprint, but with
//!    short blocks free and long ones weighing more), widened by the short blocks around it;
//!    a page with no run of long blocks (short posts, items) gives every block that is not
//!    link text.

use super::blocks::{densest_run, is_link_text, Block, BlockKind, Opener};
use super::regions::{Hint, Node};

/// Words in long blocks below which the reader's run is not the page's main content (the
/// page has none such: short posts, items) and every other block is taken instead.
const MIN_RUN_WORDS: u64 = 40;
/// How much a long block's words weigh in the reader's run against other blocks' (1 in the
/// fingerprint's run).
const LONG_WEIGHT: i64 = 3;
/// A template container holding more than this share of the page's text is not template:
/// a wrapper named for one part of what it holds (tuned on WCXB's dev split: F1 0.770 at
/// 1/2, 0.780 at 1/6, 0.630 with no bound).
const BOILER_MAX_SHARE: (u64, u64) = (1, 6);
/// A region must hold at least this share of the page's text (outside template), and
/// [`MIN_RUN_WORDS`] words.
const REGION_MIN_SHARE: (u64, u64) = (1, 6);
/// Comment containers holding more than this share of the page's text (outside template)
/// are the page, a thread; below it they are an article's comments, left out (WCXB's dev
/// split: article F1 0.933 → 0.938, forum 0.741 → 0.721; 1/2: 0.936 and 0.741; 20/21:
/// 0.939 and 0.693).
const THREAD_SHARE: (u64, u64) = (10, 11);
/// Nor are they left out without an article: fewer words than this in long blocks outside
/// them make the page a thread too (forums that call their posts comments; WCXB's dev split:
/// forum F1 0.721 → 0.739, article unchanged; 50 words: 0.728, 200: 0.731).
const ARTICLE_WORDS: u64 = 100;
/// A region whose long blocks hold at least this share of its words is prose (an
/// article), whose short paragraphs and headings after the last long block are its
/// trailer: share bars, "Posted in", "36 Comments", "Previous / Next" (WCXB's dev split:
/// F1 0.826 → 0.828, snippets leaked 0.109 → 0.087; applied to every region, listing F1
/// fell 0.590 → 0.558: their items are short).
const PROSE_SHARE: (u64, u64) = (1, 2);
/// Sibling `article`-like regions from which their parent is the region (a listing's cards).
const REPEATED_REGIONS: usize = 3;

/// The reader's choice for the last page, and its buffers (kept across pages).
#[derive(Clone, Debug, Default)]
pub struct Reader {
    /// Per node: words of blocks that are not link text, in its subtree (and later only
    /// outside template).
    words: Vec<u64>,
    /// Per node: whether it is (inside) template.
    boiler: Vec<bool>,
    /// Per node: regions among its children.
    regions: Vec<u32>,
    /// Per node: whether it is (inside) a comments container.
    comments: Vec<bool>,
    /// The blocks chosen, in document order.
    pub kept: Vec<u32>,
}

impl Reader {
    /// Chooses the reader's blocks among `blocks` (their kinds decided), in the container
    /// tree `nodes`, into [`Self::kept`].
    pub fn choose(&mut self, blocks: &[Block], nodes: &[Node]) {
        self.kept.clear();
        if blocks.is_empty() {
            return;
        }
        self.template(blocks, nodes);
        match self.region(nodes) {
            Some(n) => {
                let node = &nodes[n];
                let (from, to) = (node.first as usize, node.end as usize);
                for (i, b) in blocks.iter().enumerate().take(to).skip(from) {
                    if !self.boiler[b.node as usize] && for_reader(b, true) {
                        self.kept.push(i as u32);
                    }
                }
                self.trim_tail(blocks);
            }
            None => self.densest(blocks),
        }
    }

    /// Words per node, and which nodes are template (whole subtrees).
    fn template(&mut self, blocks: &[Block], nodes: &[Node]) {
        self.words.clear();
        self.words.resize(nodes.len(), 0);
        for b in blocks {
            if !is_link_text(b) && b.kind != BlockKind::Template {
                self.words[b.node as usize] += u64::from(b.words);
            }
        }
        // Children come after their parents: a reverse pass sums subtrees.
        for n in (1..nodes.len()).rev() {
            let w = self.words[n];
            self.words[nodes[n].parent as usize] += w;
        }
        let total = self.words[0];
        // Comments: the words of the outermost comment containers against the rest.
        self.comments.clear();
        self.comments.resize(nodes.len(), false);
        let mut comment_words = 0;
        for (n, node) in nodes.iter().enumerate().skip(1) {
            let inside = self.comments[node.parent as usize];
            if node.hint == Hint::Comments && !inside {
                comment_words += self.words[n];
            }
            self.comments[n] = inside || node.hint == Hint::Comments;
        }
        // And the article they would be the comments of: long blocks outside them.
        let mut prose = 0u64;
        for b in blocks {
            if b.kind == BlockKind::Long && !self.comments[b.node as usize] {
                prose += u64::from(b.words);
            }
        }
        let drop_comments =
            comment_words * THREAD_SHARE.1 <= total * THREAD_SHARE.0 && prose >= ARTICLE_WORDS;
        self.boiler.clear();
        self.boiler.resize(nodes.len(), false);
        for (n, node) in nodes.iter().enumerate().skip(1) {
            let own = node.hint == Hint::Boiler
                && self.words[n] * BOILER_MAX_SHARE.1 <= total * BOILER_MAX_SHARE.0;
            self.boiler[n] =
                own || self.boiler[node.parent as usize] || (drop_comments && self.comments[n]);
        }
        // Words again, now outside template only.
        self.words.iter_mut().for_each(|w| *w = 0);
        for b in blocks {
            if !is_link_text(b) && b.kind != BlockKind::Template && !self.boiler[b.node as usize] {
                self.words[b.node as usize] += u64::from(b.words);
            }
        }
        for n in (1..nodes.len()).rev() {
            let w = self.words[n];
            self.words[nodes[n].parent as usize] += w;
        }
    }

    /// The region the page names for its content, if one holds enough of its text.
    fn region(&mut self, nodes: &[Node]) -> Option<usize> {
        let is_region = |n: usize| nodes[n].hint == Hint::Main && !self.boiler[n];
        let mut best: Option<usize> = None;
        for n in 1..nodes.len() {
            if is_region(n) && best.is_none_or(|b| self.words[n] > self.words[b]) {
                best = Some(n);
            }
        }
        let mut best = best?;
        // Repeated cards: the parent of several regions, when it holds them.
        self.regions.clear();
        self.regions.resize(nodes.len(), 0);
        for (n, node) in nodes.iter().enumerate().skip(1) {
            if is_region(n) {
                self.regions[node.parent as usize] += 1;
            }
        }
        let parent = nodes[best].parent as usize;
        if self.regions[parent] as usize >= REPEATED_REGIONS {
            best = parent;
        }
        let (w, total) = (self.words[best], self.words[0]);
        (w >= MIN_RUN_WORDS && w * REGION_MIN_SHARE.1 >= total * REGION_MIN_SHARE.0).then_some(best)
    }

    /// A prose region's trailer: the short paragraphs and headings after its last long
    /// block, dropped from [`Self::kept`]. A closing list, table or quote stays (a recipe's
    /// last steps, a footnote table).
    fn trim_tail(&mut self, blocks: &[Block]) {
        let (mut long, mut all) = (0u64, 0u64);
        for &i in &self.kept {
            let b = &blocks[i as usize];
            all += u64::from(b.words);
            if b.kind == BlockKind::Long {
                long += u64::from(b.words);
            }
        }
        if long * PROSE_SHARE.1 < all * PROSE_SHARE.0 {
            return;
        }
        let Some(last) = self
            .kept
            .iter()
            .rposition(|&i| blocks[i as usize].kind == BlockKind::Long)
        else {
            return;
        };
        let mut out = last + 1;
        for k in last + 1..self.kept.len() {
            let b = &blocks[self.kept[k] as usize];
            if !matches!(b.opener, Opener::Para | Opener::Heading(_)) {
                self.kept[out] = self.kept[k];
                out += 1;
            }
        }
        self.kept.truncate(out);
    }

    /// No region: the densest run of blocks outside template.
    fn densest(&mut self, blocks: &[Block]) {
        let boiler = &self.boiler;
        let kind = |b: &Block| match boiler[b.node as usize] {
            true => BlockKind::Boilerplate,
            false => b.kind,
        };
        let range = (0, blocks.len());
        let (mut start, mut end) = densest_run(blocks, range, |b, words, tags| match kind(b) {
            BlockKind::Long => LONG_WEIGHT * words - tags,
            BlockKind::Short => 0,
            BlockKind::Boilerplate | BlockKind::Template => -(words + tags),
        });
        // And the short blocks right before it (the headline, the byline, the dateline) and
        // right after it (a closing list, a last short paragraph).
        while end > start && start > range.0 && kind(&blocks[start - 1]) == BlockKind::Short {
            start -= 1;
        }
        while end > start && end < range.1 && kind(&blocks[end]) == BlockKind::Short {
            end += 1;
        }
        // A page of short posts or items (a forum thread, a listing) has no run worth the
        // name: the reader gets every block that is not link text or template instead.
        let run_words: u64 = blocks[start..end]
            .iter()
            .filter(|b| kind(b) == BlockKind::Long)
            .map(|b| u64::from(b.words))
            .sum();
        let all = run_words < MIN_RUN_WORDS;
        if all {
            (start, end) = range;
        }
        for (i, b) in blocks.iter().enumerate().take(end).skip(start) {
            if !boiler[b.node as usize] && for_reader(b, all) {
                self.kept.push(i as u32);
            }
        }
    }
}

/// Whether block `b` of the reader's run or region is the reader's (`all`: the run is the
/// whole page for want of one, or the page named the region: short blocks between link lists,
/// teasers, a thread's posts count; WCXB's dev split: F1 0.812 without the region's, 0.822
/// with).
fn for_reader(b: &Block, all: bool) -> bool {
    match b.kind {
        BlockKind::Long | BlockKind::Short => true,
        // A linked heading is an item's title (a listing's, a collection's, a thread's
        // index), not navigation (WCXB's dev split: F1 0.801 without, 0.812 with).
        BlockKind::Boilerplate if matches!(b.opener, Opener::Heading(_)) => true,
        BlockKind::Boilerplate => all && !is_link_text(b),
        BlockKind::Template => false,
    }
}

#[cfg(test)]
#[path = "reader_tests.rs"]
mod tests;
