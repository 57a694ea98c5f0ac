//! Focused crawling (the issue's `--focus FILE`): how relevant a page is to a topic, and the
//! frontier priority its links get from that.
//!
//! The topic is a text (a description, or example pages' text). [`TopicModel`] turns it and
//! each fetched page's visible text ([`crate::discovery::visible_text`]) into TF-IDF vectors
//! and scores a page by their cosine similarity, in [0, 1]. The inverse document frequencies
//! are learned as the crawl goes: every page scored with [`TopicModel::score_page`] counts as
//! one document, so a word most pages use (the site's boilerplate, the language's common
//! words the stopword list missed) weighs less and less. Anchor texts are scored with the
//! same weights ([`TopicModel::score_text`]) without counting as documents.
//! [`link_score`] mixes a page's score with its anchor's, and [`priority_level`] maps a
//! score to a frontier priority (0 first).
//!
//! Terms: the text is split into words at every character that is not alphanumeric
//! (Unicode), lowercased, and words of fewer than [`MIN_TERM_CHARS`] or more than
//! [`MAX_TERM_CHARS`] characters, words without a letter, and English stopwords are dropped;
//! the rest go through Harman's S-stemmer (plural endings only: light enough never to merge
//! unrelated words). A term is its 64-bit XXH3 hash. Languages written without spaces
//! (Chinese, Japanese) give no terms: scoring them would need character bigrams.
//!
//! Bounds: document frequencies are kept for at most [`MAX_VOCABULARY`] terms (see there),
//! at most [`MAX_TOPIC_TERMS`] topic terms and [`MAX_PAGE_TERMS`] distinct terms per page;
//! each scoring is linear in the text.
//!
//! No I/O: the app reads the topic file; the crawl calls this with page text it already has.

use std::collections::HashMap;

use xxhash_rust::xxh3::xxh3_64;

use crate::discovery::visible_text::VisibleText;

/// Terms whose document frequency is kept. A crawl meets millions of distinct words (names,
/// typos, identifiers), most of them seen once (Heaps' and Zipf's laws), so the map must be
/// capped: 200,000 terms is about 10 MB. When it is full, the rarest terms are forgotten
/// (those in at most the count the bottom quarter of the map has), except the topic's. A
/// forgotten term is taken to be in no document: its idf is the largest, which is what a
/// rare term's idf nearly is anyway, so forgetting rare terms moves scores little, while the
/// frequent terms, whose low idf is what the learning is for, stay.
pub const MAX_VOCABULARY: usize = 200_000;
/// Topic terms kept (the most frequent in the topic text): a topic is a few dozen words to a
/// few example pages.
pub const MAX_TOPIC_TERMS: usize = 2_000;
/// Distinct terms counted per page or anchor text; the rest of a page's words are not
/// counted (a page's text is already cut at `visible_text::MAX_TEXT_BYTES`).
pub const MAX_PAGE_TERMS: usize = 20_000;
/// Topic text read; the rest is ignored.
pub const MAX_TOPIC_BYTES: usize = 1 << 20;
/// Shortest word kept, in characters: shorter ones are mostly function words and noise.
pub const MIN_TERM_CHARS: usize = 3;
/// Longest word kept: longer ones are identifiers, hashes and unsplit scripts.
pub const MAX_TERM_CHARS: usize = 32;
/// How much an anchor's text counts against its page's score in [`link_score`]: anchor
/// text is the best short description of the target (Pant & Menczer's and Diligenti's
/// focused crawlers use it), the page's topic the best prior.
pub const ANCHOR_WEIGHT: f32 = 0.5;

/// English stopwords, sorted (for the binary search): words too common to say anything
/// about a topic.
const STOPWORDS: [&str; 112] = [
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "also",
    "and",
    "any",
    "are",
    "aren",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "can",
    "cannot",
    "could",
    "did",
    "does",
    "doing",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "into",
    "its",
    "itself",
    "just",
    "may",
    "might",
    "more",
    "most",
    "must",
    "myself",
    "nor",
    "not",
    "now",
    "off",
    "once",
    "only",
    "other",
    "ought",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "same",
    "shall",
    "she",
    "should",
    "some",
    "such",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "too",
    "under",
    "until",
    "upon",
    "very",
    "was",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "yet",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

fn is_stopword(word: &str) -> bool {
    STOPWORDS.binary_search(&word).is_ok()
}

/// Harman's S-stemmer (JASIS 1991), in place: `-ies` → `-y` (not `-eies`, `-aies`), `-es` →
/// `-e` (not `-aes`, `-ees`, `-oes`), `-s` → `` (not `-us`, `-ss`). The last two both drop
/// the `s`, and an `-es` the second one spares the third takes, so they are one rule here.
fn s_stem(word: &mut String) {
    let ends = |s: &str| word.ends_with(s);
    if ends("ies") && !ends("eies") && !ends("aies") {
        word.truncate(word.len() - 3);
        word.push('y');
    } else if ends("s") && !ends("us") && !ends("ss") {
        word.truncate(word.len() - 1);
    }
}

/// Splits `text` into terms (see the module doc), calling `f` with each term's hash.
/// `scratch` is reused for lowercasing.
fn terms(text: &[u8], scratch: &mut String, mut f: impl FnMut(u64)) {
    let text = String::from_utf8_lossy(text);
    for word in text.split(|c: char| !c.is_alphanumeric()) {
        let chars = word.chars().count();
        if !(MIN_TERM_CHARS..=MAX_TERM_CHARS).contains(&chars)
            || !word.chars().any(char::is_alphabetic)
        {
            continue;
        }
        scratch.clear();
        scratch.extend(word.chars().flat_map(char::to_lowercase));
        if is_stopword(scratch) {
            continue;
        }
        s_stem(scratch);
        f(xxh3_64(scratch.as_bytes()));
    }
}

/// Sublinear term frequency: a word said ten times is not ten times as telling.
fn tf_weight(count: u32) -> f32 {
    1.0 + (count as f32).ln()
}

/// A topic, and the document frequencies learned from the pages scored against it.
#[derive(Debug)]
pub struct TopicModel {
    /// Topic terms and their tf weights, sorted by term.
    topic: Vec<(u64, f32)>,
    /// Document frequency per term, at most [`MAX_VOCABULARY`] entries.
    df: HashMap<u64, u32>,
    /// Pages learned from.
    docs: u64,
    /// Reused per page: term counts, and the lowercasing buffer.
    counts: HashMap<u64, u32>,
    word: String,
}

impl TopicModel {
    /// A model of the topic `text` describes (its first [`MAX_TOPIC_BYTES`]); `None` if it
    /// holds no usable term.
    pub fn new(text: &[u8]) -> Option<TopicModel> {
        let text = &text[..text.len().min(MAX_TOPIC_BYTES)];
        let mut counts: HashMap<u64, u32> = HashMap::new();
        let mut word = String::new();
        terms(text, &mut word, |t| {
            if counts.len() < MAX_PAGE_TERMS || counts.contains_key(&t) {
                *counts.entry(t).or_insert(0) += 1;
            }
        });
        let mut topic: Vec<(u64, u32)> = counts.drain().collect();
        if topic.is_empty() {
            return None;
        }
        // The most frequent terms, ties by hash so the choice does not depend on map order.
        topic.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        topic.truncate(MAX_TOPIC_TERMS);
        let mut topic: Vec<(u64, f32)> =
            topic.into_iter().map(|(t, c)| (t, tf_weight(c))).collect();
        topic.sort_unstable_by_key(|&(t, _)| t);
        Some(TopicModel {
            topic,
            df: HashMap::new(),
            docs: 0,
            counts,
            word,
        })
    }

    /// Pages learned from so far.
    pub fn documents(&self) -> u64 {
        self.docs
    }

    /// Terms whose document frequency is kept (at most [`MAX_VOCABULARY`]).
    pub fn vocabulary(&self) -> usize {
        self.df.len()
    }

    /// Learns from a page's visible text (one more document, its terms' frequencies up) and
    /// scores it against the topic: cosine similarity in [0, 1]. The page counts in its own
    /// idf, as a corpus's documents do in theirs.
    pub fn score_page(&mut self, text: &[u8]) -> f32 {
        self.count(text);
        self.docs += 1;
        if self.df.len() + self.counts.len() > MAX_VOCABULARY {
            self.forget_rare(self.counts.len());
        }
        for &t in self.counts.keys() {
            // After `forget_rare`, a new term finds room unless the page alone overflows
            // the cap; then its remaining new terms stay unknown (idf as if unseen).
            if let Some(n) = self.df.get_mut(&t) {
                *n += 1;
            } else if self.df.len() < MAX_VOCABULARY {
                self.df.insert(t, 1);
            }
        }
        self.cosine()
    }

    /// Scores a text (an anchor's) against the topic with the idf learned so far, without
    /// learning from it; `None` if it holds no usable term.
    pub fn score_text(&mut self, text: &[u8]) -> Option<f32> {
        self.count(text);
        (!self.counts.is_empty()).then(|| self.cosine())
    }

    /// Scores every anchor of a page into `out` as (hash of the href, score), sorted by
    /// hash, so [`anchor_score`] finds a link's by its href; an href met twice keeps its
    /// better anchor. Anchors without a usable term are left out.
    pub fn score_anchors(&mut self, page: &VisibleText, out: &mut Vec<(u64, f32)>) {
        out.clear();
        for (href, text) in page.anchors() {
            if let Some(s) = self.score_text(text) {
                out.push((xxh3_64(href), s));
            }
        }
        out.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)));
        out.dedup_by_key(|e| e.0);
    }

    /// Counts `text`'s terms into `self.counts` (cleared first).
    fn count(&mut self, text: &[u8]) {
        let counts = &mut self.counts;
        counts.clear();
        terms(text, &mut self.word, |t| {
            if counts.len() < MAX_PAGE_TERMS || counts.contains_key(&t) {
                *counts.entry(t).or_insert(0) += 1;
            }
        });
    }

    /// Smoothed inverse document frequency: `ln((1 + N) / (1 + df)) + 1`, at least 1, so a
    /// term in every page still counts a little and an unseen one the most.
    fn idf(&self, term: u64) -> f32 {
        let df = self.df.get(&term).copied().unwrap_or(0) as f32;
        ((1.0 + self.docs as f32) / (1.0 + df)).ln() + 1.0
    }

    /// The cosine of `self.counts` and the topic, both weighted by tf × idf.
    fn cosine(&self) -> f32 {
        let mut dot = 0.0f64;
        let mut page_norm = 0.0f64;
        for (&t, &c) in &self.counts {
            let w = f64::from(tf_weight(c) * self.idf(t));
            page_norm += w * w;
            if let Ok(i) = self.topic.binary_search_by_key(&t, |&(k, _)| k) {
                dot += w * f64::from(self.topic[i].1 * self.idf(t));
            }
        }
        let topic_norm: f64 = self
            .topic
            .iter()
            .map(|&(t, w)| f64::from(w * self.idf(t)).powi(2))
            .sum();
        if dot == 0.0 || page_norm == 0.0 || topic_norm == 0.0 {
            return 0.0;
        }
        (dot / (page_norm.sqrt() * topic_norm.sqrt())).clamp(0.0, 1.0) as f32
    }

    /// Makes room for `incoming` new terms: forgets the rarest quarter of the vocabulary
    /// (at least), never a topic term (see [`MAX_VOCABULARY`]).
    fn forget_rare(&mut self, incoming: usize) {
        /// Counts at or above this share the top bucket of the histogram.
        const BUCKETS: usize = 64;
        let goal = (self.df.len() / 4).max(incoming.min(MAX_VOCABULARY));
        let mut histogram = [0usize; BUCKETS];
        for &n in self.df.values() {
            histogram[(n as usize).min(BUCKETS - 1)] += 1;
        }
        let mut threshold = 0;
        let mut freed = 0;
        while freed < goal && threshold < BUCKETS - 1 {
            threshold += 1;
            freed += histogram[threshold];
        }
        let topic = &self.topic;
        let limit = threshold as u32;
        self.df
            .retain(|t, n| *n > limit || topic.binary_search_by_key(t, |&(k, _)| k).is_ok());
    }
}

/// The score a link gets: its page's, mixed with its anchor text's when that had usable
/// terms ([`ANCHOR_WEIGHT`]). The square root spreads the low range where the cosine of a
/// page and a short topic sits (rarely above 0.5), so the levels of [`priority_level`] are
/// used.
pub fn link_score(page: f32, anchor: Option<f32>) -> f32 {
    let s = match anchor {
        Some(a) => (1.0 - ANCHOR_WEIGHT) * page + ANCHOR_WEIGHT * a,
        None => page,
    };
    s.clamp(0.0, 1.0).sqrt()
}

/// The anchor score [`TopicModel::score_anchors`] found for `href`, if any.
pub fn anchor_score(scores: &[(u64, f32)], href: &[u8]) -> Option<f32> {
    let h = xxh3_64(href);
    scores
        .binary_search_by_key(&h, |&(k, _)| k)
        .ok()
        .map(|i| scores[i].1)
}

/// A score in [0, 1] (a link's, or a sitemap's `<priority>`) as one of `levels` frontier
/// priorities, 0 first: equal slices, the best score in level 0, zero in the last.
pub fn priority_level(score: f32, levels: usize) -> usize {
    let levels = levels.max(1);
    let score = if score.is_nan() {
        0.0
    } else {
        score.clamp(0.0, 1.0)
    };
    (((1.0 - score) * levels as f32) as usize).min(levels - 1)
}

#[cfg(test)]
#[path = "focus_tests.rs"]
mod tests;
