//! The template web's text: a seeded word generator (made-up content words and English
//! function words, Zipf-like, so distinct articles share common words but few 3-word runs),
//! articles, and an article's HTML with what a copy adds (a timestamp, an ad).

use std::fmt::Write;

/// xorshift64*: deterministic, no `rand` dependency.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    pub(crate) fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    pub(crate) fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

pub(super) const FUNCTION_WORDS: [&str; 30] = [
    "the", "of", "and", "to", "in", "a", "is", "that", "for", "on", "was", "with", "as", "by",
    "at", "it", "from", "his", "her", "their", "be", "are", "were", "has", "have", "had", "not",
    "but", "or", "which",
];
pub(crate) const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
pub(crate) const DAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

/// Words to write with: made-up content words and English function words, Zipf-like enough
/// that distinct texts share common words but rarely four in a row.
pub(crate) struct Words {
    pub(super) content: Vec<String>,
}

impl Words {
    pub(crate) fn new(rng: &mut Rng) -> Words {
        let onsets = [
            "b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w",
            "br", "ch", "cl", "dr", "fl", "gr", "pl", "pr", "sh", "st", "th", "tr",
        ];
        let vowels = ["a", "e", "i", "o", "u", "ai", "ea", "ou"];
        let codas = ["", "", "n", "r", "s", "t", "nd", "ck", "ll"];
        let mut seen = std::collections::HashSet::new();
        let mut content = Vec::new();
        while content.len() < 4000 {
            let mut w = String::new();
            for _ in 0..rng.range(1, 3) {
                w.push_str(onsets[rng.below(onsets.len())]);
                w.push_str(vowels[rng.below(vowels.len())]);
            }
            w.push_str(codas[rng.below(codas.len())]);
            if seen.insert(w.clone()) {
                content.push(w);
            }
        }
        Words { content }
    }

    pub(crate) fn word(&self, rng: &mut Rng) -> &str {
        if rng.chance(40) {
            FUNCTION_WORDS[rng.below(FUNCTION_WORDS.len())]
        } else {
            // Lower indexes more often: min of two uniform draws.
            let i = rng
                .below(self.content.len())
                .min(rng.below(self.content.len()));
            &self.content[i]
        }
    }

    /// `n` words, the first capitalized, ending in a full stop.
    pub(crate) fn sentence(&self, rng: &mut Rng, n: usize) -> String {
        let mut s = String::new();
        for i in 0..n {
            let w = self.word(rng);
            if i == 0 {
                s.push_str(&capitalize(w));
            } else {
                s.push(' ');
                s.push_str(w);
                if rng.chance(6) && i + 1 < n {
                    s.push(',');
                }
            }
        }
        s.push('.');
        s
    }

    /// About `lo..=hi` words in sentences of 6 to 18.
    pub(crate) fn prose(&self, rng: &mut Rng, lo: usize, hi: usize) -> String {
        let n = rng.range(lo, hi);
        let mut out = Vec::new();
        let mut left = n;
        while left > 0 {
            let k = rng.range(6, 18).min(left.max(6));
            out.push(self.sentence(rng, k));
            left = left.saturating_sub(k);
        }
        out.join(" ")
    }

    /// `lo..=hi` capitalized words.
    pub(crate) fn title(&self, rng: &mut Rng, lo: usize, hi: usize) -> String {
        (0..rng.range(lo, hi))
            .map(|_| capitalize(&self.content[rng.below(self.content.len())]))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

pub(crate) fn capitalize(w: &str) -> String {
    let mut c = w.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// One article as its author wrote it.
pub(super) struct Article {
    pub(super) headline: String,
    pub(super) byline: String,
    /// Paragraphs, each optionally after a subheading; some carry an inline link.
    pub(super) paragraphs: Vec<(Option<String>, String, Option<String>)>,
    pub(super) figure: Option<(usize, String)>,
}

impl Article {
    pub(super) fn new(words: &Words, rng: &mut Rng) -> Article {
        let headline = words.title(rng, 5, 10);
        let byline = format!("By {}", words.title(rng, 2, 2));
        let n = rng.range(3, 8);
        let paragraphs = (0..n)
            .map(|i| {
                let sub = (i > 0 && rng.chance(20)).then(|| words.title(rng, 2, 5));
                let text = words.prose(rng, 18, 60);
                let link = rng.chance(25).then(|| words.title(rng, 2, 4));
                (sub, text, link)
            })
            .collect();
        let figure = rng
            .chance(30)
            .then(|| (rng.range(1, n - 1), words.prose(rng, 8, 16)));
        Article {
            headline,
            byline,
            paragraphs,
            figure,
        }
    }
}

/// What one page holds besides its template.
#[derive(Clone)]
pub(super) struct Extra {
    /// "Updated …", before the first paragraph or after the last.
    pub(super) timestamp: Option<(bool, String)>,
    /// An ad creative, and the paragraph it follows.
    pub(super) ad: Option<(usize, String)>,
}

/// A page: which article, on which site, with what extra.
pub(super) struct Page {
    pub(super) article: usize,
    pub(super) site: usize,
    pub(super) extra: Extra,
}

/// Renders the article part of a page, and appends to `truth` the article text a reader of
/// that page sees (what the ground truth compares).
pub(super) fn article_html(a: &Article, extra: &Extra, site: usize, truth: &mut String) -> String {
    let mut h = String::new();
    let cls = ["story", "ledger-article"][site];
    let _ = write!(
        h,
        "<article class=\"{cls}\"><header><h1>{}</h1><p class=byline><a href=\"/authors/{}\">{}</a></p>",
        a.headline,
        a.byline.len(),
        a.byline
    );
    let _ = write!(truth, "{} {} ", a.headline, a.byline);
    if let Some((true, ts)) = &extra.timestamp {
        let _ = write!(h, "<p class=dateline><time>{ts}</time></p>");
        let _ = write!(truth, "{ts} ");
    }
    h.push_str("</header><div class=body>");
    for (i, (sub, text, link)) in a.paragraphs.iter().enumerate() {
        if let Some(sub) = sub {
            let _ = write!(h, "<h2>{sub}</h2>");
            let _ = write!(truth, "{sub} ");
        }
        match link {
            Some(l) => {
                // The link goes in the middle of the paragraph.
                let cut = text[..text.len() / 2].rfind(' ').unwrap_or(0);
                let _ = writeln!(
                    h,
                    "<p>{} <a href=\"/topics/{}\">{l}</a>{}</p>",
                    &text[..cut],
                    l.len(),
                    &text[cut..]
                );
                let _ = write!(truth, "{} {l}{} ", &text[..cut], &text[cut..]);
            }
            None => {
                let _ = writeln!(h, "<p>{text}</p>");
                let _ = write!(truth, "{text} ");
            }
        }
        if let Some((at, caption)) = &a.figure {
            if *at == i {
                let _ = write!(
                    h,
                    "<figure><img src=\"/img/{}.jpg\" alt=\"\"><figcaption>{caption}</figcaption></figure>",
                    caption.len()
                );
                let _ = write!(truth, "{caption} ");
            }
        }
        if let Some((at, ad)) = &extra.ad {
            if *at == i {
                let _ = write!(
                    h,
                    "<div class=\"ad-slot\"><span class=label>Advertisement</span>\
                     <a href=\"https://ads.example.net/click?cr={}&amp;site={site}\" rel=sponsored>\
                     <img src=\"https://ads.example.net/cr/{}.png\" alt=\"\"><span>{ad}</span></a></div>",
                    ad.len(),
                    ad.len()
                );
                let _ = write!(truth, "Advertisement {ad} ");
            }
        }
    }
    h.push_str("</div>");
    if let Some((false, ts)) = &extra.timestamp {
        let _ = write!(h, "<p class=updated>{ts}</p>");
        let _ = write!(truth, "{ts} ");
    }
    h.push_str("</article>");
    h
}
