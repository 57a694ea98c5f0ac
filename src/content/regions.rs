//! The page's containers as a tree, for the reader's choice of content
//! ([`super::reader`]): which block of text sits in which `div`, `section`, `nav`, list or
//! table, and what each container says of itself — its tag (`nav`, `footer`, `aside`, `main`,
//! `article`) and its `class`, `id` and `role` (`site-footer`, `sidebar`, `entry-content`,
//! `role="navigation"`). The words a template is made of are the web designers', not a
//! site's: trafilatura discards containers by the same vocabulary (its `xpaths.py`),
//! resiliparse and readability weigh them the same way.
//!
//! Built during the extractor's one pass (only when a reader's content is wanted: the
//! fingerprint does not need it): a container is opened at its start tag and closed at its
//! end tag, an end tag closing any unclosed containers opened inside it (as browsers do for
//! `</div>` after an unclosed `<section>`); an end tag with no open match is ignored. No DOM:
//! a node is 20 bytes, and a page's tree at most [`MAX_NODES`] of them, nested at most
//! [`MAX_DEPTH`] deep (deeper containers are folded into the one at that depth).

use std::sync::LazyLock;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};

use super::markup::{is_space, next_attribute};

/// Most containers kept from one page (20 bytes each: 1.3 MiB at most); later ones fold into
/// their open parent.
pub const MAX_NODES: usize = 1 << 16;
/// Deepest nesting tracked; real pages rarely pass 40.
pub const MAX_DEPTH: usize = 256;
/// How far down the open containers an end tag looks for its start tag: mismatched end
/// tags on a hostile page then cost a bounded search each.
const MAX_CLOSE_SEARCH: usize = 16;
/// Longest `class`/`id` value looked at (a hostile one is cut here).
const MAX_ATTR_BYTES: usize = 256;

/// What a container says of itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hint {
    /// Nothing.
    None,
    /// It is template: navigation, header or footer, sidebar, sharing, related links,
    /// cookie notices, hidden parts.
    Boiler,
    /// It is where the page's content is: `main`, `article`, `role="main"`, `entry-content`.
    Main,
    /// It holds readers' comments (`comments`, `comment-list`, `disqus_thread`): an
    /// article's are not its content, a thread's are (the reader decides by their share).
    Comments,
}

/// One container element.
#[derive(Clone, Copy, Debug)]
pub struct Node {
    /// Its parent's index (the root, 0, is its own parent).
    pub parent: u32,
    /// The blocks inside it: `first..end` in the extractor's block list.
    pub first: u32,
    pub end: u32,
    pub hint: Hint,
}

/// The container tree of the last page scanned.
#[derive(Clone, Debug, Default)]
pub struct Regions {
    /// Node 0 is the page itself; every other node comes after its parent.
    pub nodes: Vec<Node>,
    /// Open containers: node index and packed tag name.
    stack: Vec<(u32, u64)>,
    /// Containers opened past [`MAX_DEPTH`] or [`MAX_NODES`] and not yet closed.
    folded: u32,
}

impl Regions {
    /// Starts a page.
    pub fn clear(&mut self) {
        self.nodes.clear();
        self.stack.clear();
        self.folded = 0;
        self.nodes.push(Node {
            parent: 0,
            first: 0,
            end: 0,
            hint: Hint::None,
        });
    }

    /// The innermost open container, where a block ending now belongs.
    pub fn current(&self) -> u32 {
        self.stack.last().map_or(0, |&(n, _)| n)
    }

    /// A start tag `name` with attribute bytes `attrs`, `blocks` blocks recorded so far.
    pub fn open(&mut self, name: &[u8], attrs: &[u8], blocks: usize) {
        let Some(key) = container_key(name) else {
            return;
        };
        if self.stack.len() >= MAX_DEPTH || self.nodes.len() >= MAX_NODES {
            self.folded = self.folded.saturating_add(1);
            return;
        }
        let tag_hint = match key {
            k if k == pack(b"nav")
                || k == pack(b"footer")
                || k == pack(b"aside")
                || k == pack(b"menu")
                || k == pack(b"dialog")
                || k == pack(b"form") =>
            {
                Hint::Boiler
            }
            k if k == pack(b"main") || k == pack(b"article") => Hint::Main,
            // The page's header is template; an article's holds its headline.
            k if k == pack(b"header")
                && !self
                    .stack
                    .iter()
                    .any(|&(n, _)| self.nodes[n as usize].hint == Hint::Main) =>
            {
                Hint::Boiler
            }
            _ => Hint::None,
        };
        let hint = match attr_hint(attrs) {
            Hint::None => tag_hint,
            // `<article class="post author-ann tag-news">`: a CMS's taxonomy on the content.
            // The tag wins (WCXB's dev split: a listing page's F1 0.995 with, 0.371 without).
            Hint::Boiler if tag_hint == Hint::Main => tag_hint,
            // A form that says it is the content is a page built inside one (ASP.NET).
            h => h,
        };
        let index = self.nodes.len() as u32;
        self.nodes.push(Node {
            parent: self.current(),
            first: blocks as u32,
            end: blocks as u32,
            hint,
        });
        self.stack.push((index, key));
    }

    /// An end tag `name`, `blocks` blocks recorded so far.
    pub fn close(&mut self, name: &[u8], blocks: usize) {
        let Some(key) = container_key(name) else {
            return;
        };
        if self.folded > 0 {
            self.folded -= 1;
            return;
        }
        let depth = self.stack.len();
        let Some(at) = self
            .stack
            .iter()
            .rev()
            .take(MAX_CLOSE_SEARCH)
            .position(|&(_, k)| k == key)
        else {
            return;
        };
        for &(n, _) in &self.stack[depth - 1 - at..] {
            self.nodes[n as usize].end = blocks as u32;
        }
        self.stack.truncate(depth - 1 - at);
    }

    /// Ends the page: containers left open end with it.
    pub fn finish(&mut self, blocks: usize) {
        for &(n, _) in &self.stack {
            self.nodes[n as usize].end = blocks as u32;
        }
        self.stack.clear();
        self.nodes[0].end = blocks as u32;
    }
}

/// Tag names packed into a `u64`, lowercase (names of at most 8 bytes).
const fn pack(name: &[u8]) -> u64 {
    let mut k = 0u64;
    let mut i = 0;
    while i < name.len() && i < 8 {
        k |= (name[i].to_ascii_lowercase() as u64) << (8 * i);
        i += 1;
    }
    k
}

/// The elements that hold blocks rather than being one: the tree's nodes.
const CONTAINERS: [u64; 18] = [
    pack(b"div"),
    pack(b"section"),
    pack(b"main"),
    pack(b"article"),
    pack(b"nav"),
    pack(b"header"),
    pack(b"footer"),
    pack(b"aside"),
    pack(b"form"),
    pack(b"ul"),
    pack(b"ol"),
    pack(b"dl"),
    pack(b"table"),
    pack(b"menu"),
    pack(b"details"),
    pack(b"dialog"),
    pack(b"fieldset"),
    pack(b"figure"),
];

fn container_key(name: &[u8]) -> Option<u64> {
    if name.len() > 8 {
        return None;
    }
    let key = pack(name);
    CONTAINERS.contains(&key).then_some(key)
}

/// Words in `class` and `id` values, and what they say (not `widget`: page builders wrap
/// every piece of content in one). `true`: the word must start at a
/// boundary (the value's start, or after a byte that is not a letter), short words that
/// would otherwise match inside others (`nav` in `canvas`).
const BOILER_WORDS: [(&str, bool); 37] = [
    ("footer", false),
    ("sidebar", false),
    ("side-bar", false),
    ("related", false),
    ("share", true),
    ("sharing", false),
    ("social", false),
    ("newsletter", false),
    ("subscribe", false),
    ("cookie", false),
    ("consent", false),
    ("breadcrumb", false),
    ("bread-crumb", false),
    ("banner", false),
    ("menu", true),
    ("nav", true),
    ("subnav", false),
    ("popup", false),
    ("modal", true),
    ("promo", true),
    ("advert", false),
    ("sponsor", false),
    ("outbrain", false),
    ("taboola", false),
    ("masthead", false),
    ("site-header", false),
    ("skip-link", false),
    ("pagination", false),
    ("toolbar", false),
    ("tag-list", false),
    ("tagcloud", false),
    ("most-popular", false),
    ("recommend", false),
    ("visually-hidden", false),
    ("sr-only", false),
    // The author box and byline (trafilatura's too; WCXB's dev split: article F1 +0.003).
    ("author", false),
    ("byline", false),
];
const MAIN_WORDS: [&str; 27] = [
    "article-body",
    "articlebody",
    "article_body",
    "article-content",
    "article__content",
    "article__body",
    "article-text",
    "articletext",
    "entry-content",
    "post-content",
    "post_content",
    "postcontent",
    "post-body",
    "post-text",
    "post-entry",
    "main-content",
    "maincontent",
    "main_content",
    "content-main",
    "story-body",
    "story-content",
    "content-body",
    "page-content",
    "text-content",
    "body-text",
    "blog-content",
    "single-content",
];

/// Words of comment containers: the thread's (`comments-area`, `comment-list`), not one
/// comment's (`comment-body`, a forum post's), nor other words (`commenting`).
const COMMENT_WORDS: [&str; 6] = [
    "comments",
    "comment-list",
    "commentlist",
    "comment_list",
    "disqus",
    "wpdiscuz",
];

/// The first of the comment patterns in [`WORDS`].
const COMMENT_PATTERN: usize = BOILER_WORDS.len() + MAIN_WORDS.len();

/// One automaton for the three lists: patterns `0..BOILER_WORDS.len()` are boilerplate,
/// from [`COMMENT_PATTERN`] on comments.
static WORDS: LazyLock<AhoCorasick> = LazyLock::new(|| {
    let patterns = BOILER_WORDS
        .iter()
        .map(|(w, _)| *w)
        .chain(MAIN_WORDS.iter().copied())
        .chain(COMMENT_WORDS.iter().copied());
    AhoCorasickBuilder::new()
        .ascii_case_insensitive(true)
        .match_kind(MatchKind::Standard)
        .build(patterns)
        .expect("fixed patterns build")
});

/// What a container's attributes say of it.
fn attr_hint(attrs: &[u8]) -> Hint {
    let mut hint = Hint::None;
    let mut p = 0;
    // Bound: every turn moves `p` past one attribute, or ends.
    while p < attrs.len() {
        let (name, value, next) = next_attribute(attrs, p);
        p = next;
        let h = if name.eq_ignore_ascii_case(b"class") || name.eq_ignore_ascii_case(b"id") {
            words_hint(value)
        } else if name.eq_ignore_ascii_case(b"role") {
            role_hint(value)
        } else if name.eq_ignore_ascii_case(b"itemprop") {
            match value.eq_ignore_ascii_case(b"articleBody") {
                true => Hint::Main,
                false => Hint::None,
            }
        } else if name.eq_ignore_ascii_case(b"style") && hides(value) {
            // Not `aria-hidden` or `hidden`: carousels and tabs hide content that way until
            // a script shows it (WCXB's dev split: F1 0.799 with them, 0.801 without).
            Hint::Boiler
        } else {
            Hint::None
        };
        // Boilerplate wins: `post-content-sidebar` is a sidebar; then comments:
        // `comments-area entry-content` holds a thread.
        match h {
            Hint::Boiler => return Hint::Boiler,
            Hint::Comments => hint = Hint::Comments,
            Hint::Main if hint != Hint::Comments => hint = Hint::Main,
            Hint::Main | Hint::None => {}
        }
    }
    hint
}

/// The hint of a `class` or `id` value.
fn words_hint(value: &[u8]) -> Hint {
    let value = &value[..value.len().min(MAX_ATTR_BYTES)];
    let mut hint = Hint::None;
    for m in WORDS.find_overlapping_iter(value) {
        let i = m.pattern().as_usize();
        match BOILER_WORDS.get(i) {
            Some(&(_, bounded)) => {
                let at_boundary = m.start() == 0 || !value[m.start() - 1].is_ascii_alphabetic();
                if !bounded || at_boundary {
                    return Hint::Boiler;
                }
            }
            None if i >= COMMENT_PATTERN => hint = Hint::Comments,
            None if hint == Hint::None => hint = Hint::Main,
            None => {}
        }
    }
    hint
}

/// The ARIA landmark roles of template and of content.
fn role_hint(value: &[u8]) -> Hint {
    const BOILER: [&[u8]; 5] = [
        b"navigation",
        b"banner",
        b"contentinfo",
        b"complementary",
        b"menu",
    ];
    if BOILER.iter().any(|r| value.eq_ignore_ascii_case(r)) {
        Hint::Boiler
    } else if value.eq_ignore_ascii_case(b"main") || value.eq_ignore_ascii_case(b"article") {
        Hint::Main
    } else {
        Hint::None
    }
}

/// Whether a `style` value hides the element (`display:none`, `visibility: hidden`).
fn hides(style: &[u8]) -> bool {
    let mut compact = [0u8; 64];
    let mut n = 0;
    for &b in style.iter().take(MAX_ATTR_BYTES) {
        if !is_space(b) && n < compact.len() {
            compact[n] = b.to_ascii_lowercase();
            n += 1;
        }
    }
    let s = &compact[..n];
    s.windows(12).any(|w| w == b"display:none") || s.windows(17).any(|w| w == b"visibility:hidden")
}
