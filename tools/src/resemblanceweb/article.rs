//! The resemblance web's articles, word by word: an article of an exact number of words, and
//! what a copy does to it (a few words edited; a dateline or an editor's note before the
//! headline) or what a new article takes from it (a contiguous passage, quoted). Words are
//! kept as written (capitals and the punctuation after them attached), so that the copies
//! read like text and every word is exactly one token of the ground truth.

use std::fmt::Write;

use crate::templateweb::words::{capitalize, Rng, Words, DAYS, MONTHS};

/// One paragraph of an article's body.
#[derive(Clone)]
pub(super) struct Para {
    /// A subheading before it (part of the article text).
    pub(super) sub: Option<String>,
    pub(super) words: Vec<String>,
    /// Quoted from another article (`<blockquote>`).
    pub(super) quote: bool,
}

/// One article as a page shows it.
#[derive(Clone)]
pub(super) struct Article {
    /// A dateline or an editor's note before the headline (dateline copies only).
    pub(super) dateline: Option<String>,
    pub(super) headline: String,
    /// "By First Last": three words.
    pub(super) byline: String,
    pub(super) body: Vec<Para>,
}

/// Words in a byline.
const BYLINE_WORDS: usize = 3;
/// Paragraph lengths in words (the last may be longer, up to `PARA_WORDS.1 + PARA_MIN_TAIL`).
const PARA_WORDS: (usize, usize) = (25, 90);
/// A paragraph is never shorter than this unless the whole body is.
const PARA_MIN_TAIL: usize = 12;

impl Article {
    /// A new article of exactly `n` words (headline, byline and body; `n` ≥ 20).
    pub(super) fn new(words: &Words, rng: &mut Rng, n: usize) -> Article {
        let headline = words.title(rng, 5, 10);
        let used = headline.split(' ').count() + BYLINE_WORDS;
        Article {
            dateline: None,
            headline,
            byline: byline(words, rng),
            body: body(words, rng, n.saturating_sub(used)),
        }
    }

    /// Words of the article text (the ground truth's tokens: one per word).
    pub(super) fn len(&self) -> usize {
        let sub = |p: &Para| p.sub.as_ref().map_or(0, |s| s.split(' ').count());
        self.dateline.as_ref().map_or(0, |d| tokens_in(d))
            + self.headline.split(' ').count()
            + BYLINE_WORDS
            + self
                .body
                .iter()
                .map(|p| sub(p) + p.words.len())
                .sum::<usize>()
    }

    /// A copy with `per_10k`/10,000 of its words edited (rounded, at least one): substitutions (half),
    /// insertions and deletions (a quarter each), at random body positions. Headline and
    /// byline are kept: an edit is a correction in the text.
    pub(super) fn edited(&self, words: &Words, rng: &mut Rng, per_10k: usize) -> Article {
        let mut a = self.clone();
        let edits = ((self.len() * per_10k + 5000) / 10_000).max(1);
        for _ in 0..edits {
            let total: usize = a.body.iter().map(|p| p.words.len()).sum();
            let mut at = rng.below(total);
            let p = a
                .body
                .iter()
                .position(|p| {
                    if at < p.words.len() {
                        true
                    } else {
                        at -= p.words.len();
                        false
                    }
                })
                .expect("a position in the body");
            let para = &mut a.body[p].words;
            match rng.below(4) {
                0 => insert_after(para, at, words, rng),
                1 if para.len() > 1 => delete(para, at),
                _ => substitute(para, at, words, rng),
            }
        }
        a
    }

    /// The article with a line of about eleven words before its headline: a dateline (place,
    /// date, time, reporter) or an editor's note.
    pub(super) fn with_dateline(&self, words: &Words, rng: &mut Rng) -> Article {
        let line = if rng.chance(50) {
            // 11 words: place, day, date, month, year, hour, minute, "Reporting by A B".
            format!(
                "{}, {} {} {} 2024, {:02}:{:02}. Reporting by {}.",
                words.title(rng, 1, 1),
                DAYS[rng.below(7)],
                rng.range(1, 28),
                MONTHS[rng.below(12)],
                rng.below(24),
                rng.below(60),
                words.title(rng, 2, 2)
            )
        } else {
            // 11 words: "Editor's note" is three.
            format!("Editor's note: {}", words.sentence(rng, 8))
        };
        Article {
            dateline: Some(line),
            ..self.clone()
        }
    }

    /// A new article quoting a contiguous `permille`/1000 of `source`'s words (from its body,
    /// subheadings included) between new paragraphs; its own words number between half and
    /// twice the quote's (at least 30), and the whole at most `max` words.
    pub(super) fn quoting(
        words: &Words,
        rng: &mut Rng,
        source: &Article,
        permille: usize,
        max: usize,
    ) -> Article {
        let flat: Vec<String> = source
            .body
            .iter()
            .flat_map(|p| {
                p.sub
                    .iter()
                    .flat_map(|s| s.split(' ').map(str::to_owned))
                    .chain(p.words.iter().cloned())
                    .collect::<Vec<_>>()
            })
            .collect();
        let k = ((source.len() * permille + 500) / 1000).clamp(1, flat.len());
        let start = rng.below(flat.len() - k + 1);
        let quote = &flat[start..start + k];
        let own = rng
            .range((k / 2).max(30), (2 * k).max(30))
            .min(max.saturating_sub(k))
            .max(20);
        let headline = words.title(rng, 5, 10);
        let new_body = own.saturating_sub(headline.split(' ').count() + BYLINE_WORDS);
        let before = new_body * rng.range(20, 60) / 100;
        let mut body = self::body(words, rng, before);
        for chunk in quote.chunks(PARA_WORDS.1) {
            body.push(Para {
                sub: None,
                words: chunk.to_vec(),
                quote: true,
            });
        }
        body.extend(self::body(words, rng, new_body - before));
        Article {
            dateline: None,
            headline,
            byline: byline(words, rng),
            body,
        }
    }

    /// The article's HTML (`<article class="{class}">`), and the article text a reader sees:
    /// dateline, headline, byline, subheadings and paragraphs, in order.
    pub(super) fn render(&self, class: &str) -> (String, String) {
        let mut h = String::new();
        let mut truth = String::new();
        let _ = write!(h, "<article class=\"{class}\"><header>");
        if let Some(d) = &self.dateline {
            let cls = if d.starts_with("Editor") {
                "editors-note"
            } else {
                "dateline"
            };
            let _ = write!(h, "<p class={cls}>{d}</p>");
            let _ = write!(truth, "{d} ");
        }
        let _ = write!(
            h,
            "<h1>{}</h1><p class=byline><a href=\"/authors/{}\">{}</a></p></header><div class=body>",
            self.headline,
            self.byline.len(),
            self.byline
        );
        let _ = write!(truth, "{} {}", self.headline, self.byline);
        for p in &self.body {
            if let Some(sub) = &p.sub {
                let _ = write!(h, "<h2>{sub}</h2>");
                let _ = write!(truth, " {sub}");
            }
            let text = p.words.join(" ");
            if p.quote {
                let _ = writeln!(h, "<blockquote><p>{text}</p></blockquote>");
            } else {
                let _ = writeln!(h, "<p>{text}</p>");
            }
            let _ = write!(truth, " {text}");
        }
        h.push_str("</div></article>");
        (h, truth)
    }
}

/// Tokens of a generated line: its words, and "Editor's" is two.
fn tokens_in(line: &str) -> usize {
    line.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|t| !t.is_empty())
        .count()
}

fn byline(words: &Words, rng: &mut Rng) -> String {
    format!("By {}", words.title(rng, 2, 2))
}

/// Exactly `n` words of paragraphs (sentences of 6 to 18 words), some after a subheading
/// of 2 to 4 words (counted in `n`).
fn body(words: &Words, rng: &mut Rng, n: usize) -> Vec<Para> {
    let mut paras = Vec::new();
    let mut left = n;
    while left > 0 {
        let sub = if !paras.is_empty() && left > 3 * PARA_WORDS.0 && rng.chance(12) {
            let s = words.title(rng, 2, 4);
            left -= s.split(' ').count();
            Some(s)
        } else {
            None
        };
        let mut k = rng.range(PARA_WORDS.0, PARA_WORDS.1).min(left);
        if left - k < PARA_MIN_TAIL {
            k = left;
        }
        left -= k;
        let mut para = Vec::with_capacity(k);
        let mut s_left = k;
        while s_left > 0 {
            let mut s = rng.range(6, 18).min(s_left);
            if s_left - s < 4 {
                s = s_left;
            }
            s_left -= s;
            para.extend(words.sentence(rng, s).split(' ').map(str::to_owned));
        }
        paras.push(Para {
            sub,
            words: para,
            quote: false,
        });
    }
    paras
}

/// A word's letters and what follows them (punctuation).
fn split_core(w: &str) -> (&str, &str) {
    let end = w
        .find(|c: char| !c.is_ascii_alphanumeric())
        .unwrap_or(w.len());
    w.split_at(end)
}

/// Another word in place of `para[at]`, with its capital and punctuation.
fn substitute(para: &mut [String], at: usize, words: &Words, rng: &mut Rng) {
    let (core, tail) = split_core(&para[at]);
    let mut new = words.word(rng);
    while new.eq_ignore_ascii_case(core) {
        new = words.word(rng);
    }
    let capital = core.starts_with(|c: char| c.is_ascii_uppercase());
    let new = if capital {
        capitalize(new)
    } else {
        new.to_owned()
    };
    para[at] = format!("{new}{tail}");
}

/// A new word after `para[at]`, taking over its punctuation.
fn insert_after(para: &mut Vec<String>, at: usize, words: &Words, rng: &mut Rng) {
    let (core, tail) = split_core(&para[at]);
    let new = format!("{}{tail}", words.word(rng));
    para[at] = core.to_owned();
    para.insert(at + 1, new);
}

/// `para[at]` removed (`para` has another word): its punctuation passes to the word before,
/// its capital to the word after.
fn delete(para: &mut Vec<String>, at: usize) {
    let w = para.remove(at);
    let (core, tail) = split_core(&w);
    if !tail.is_empty() && at > 0 && split_core(&para[at - 1]).1.is_empty() {
        para[at - 1].push_str(tail);
    }
    if core.starts_with(|c: char| c.is_ascii_uppercase()) && at < para.len() {
        para[at] = capitalize(&para[at]);
    }
}
