//! A web for judging near-duplicate detection by shingle resemblance (IIR §19.6): three news
//! sites on loopback, `herald.test`, `tribune.test` and `courier.test`, with templateweb's
//! templates (far larger than most articles), carrying articles of 50 to 5,000 words and
//! copies that differ from them by as little as decides whether two pages are near-duplicates.
//!
//! Page kinds ([`ResemblanceKind`]): originals, lengths log-uniform in
//! [`MIN_WORDS`]`..=`[`MAX_WORDS`] (many short ones, some very long); edited copies (0.2–1.5 %
//! of the words substituted, inserted or deleted: word 4-shingle Jaccard mostly 0.85–0.99);
//! dateline copies (an article of about 100 words with a line of 11 words before its headline:
//! the example, Jaccard ≈ 0.9); syndicated copies (verbatim under another site's
//! template: 1.0); and partial-overlap pages (a new article quoting a contiguous 30–45 % of
//! another's words: at most 0.45, for precision). Every page is `/r/{n}.html` on its site (`n`
//! its number in [`ResemblanceWeb::pages`], generation order shuffled, so a copy may come before
//! its original); `/` on each site lists that site's pages in that order. The generator keeps
//! each page's article text as a reader sees it ([`ResemblancePage::article`]), from which
//! [`ResemblanceWeb::truth`] computes the ground truth: exact word 4-shingle Jaccard
//! ([`TRUTH_SHINGLE_WORDS`]). Everything follows from the seed.
//!
//! The text (word generator, [`crate::templateweb`]'s `Rng`) and the templates are
//! templateweb's; this module owns the articles' lengths, the copies' edits, the mix of kinds
//! and the truth. Serving is `http_server`'s job ([`ResemblanceWeb::routes`]), names
//! `dns_server`'s ([`ResemblanceWeb::dns_records`]: every name → 127.0.0.1).

mod article;

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use crate::templateweb::layout::{site_a, site_b, PageContext, Template};
use crate::templateweb::words::{Rng, Words};
use crate::templateweb::{jaccards, Sites};
use article::Article;

/// The sites' host names. The Herald and the Courier use templateweb's news layout (with
/// different text), the Tribune its magazine layout.
pub const HOSTS: [&str; 3] = ["herald.test", "tribune.test", "courier.test"];
/// The seed of the text, the copies and the shuffle (what tests and evaluations use).
pub const SEED: u64 = 0x7265_7365_6d62_6c65;
/// Words per shingle of the ground truth.
pub const TRUTH_SHINGLE_WORDS: usize = 4;
/// Shortest original article, in words (tokens of its article text).
pub const MIN_WORDS: usize = 50;
/// Longest article, in words.
pub const MAX_WORDS: usize = 5000;

/// Percent chances per original article of each copy.
const SYNDICATED_PERCENT: usize = 25;
const EDITED_PERCENT: usize = 35;
/// Of the edited articles, those edited twice (two copies, edited independently).
const EDITED_TWICE_PERCENT: usize = 20;
/// Edited words, per ten thousand: 0.2–1.5 %.
const EDIT_PER_10K: (usize, usize) = (20, 150);
/// Dateline copies are made of short articles only: with 11 more words, `n` words give
/// Jaccard `(n − 3) / (n + 8)`, 0.88 at 85 and 0.93 at 150.
const DATELINE_WORDS: (usize, usize) = (85, 150);
const DATELINE_PERCENT: usize = 80;
const PARTIAL_PERCENT: usize = 12;
/// The quoted share of the source's words, per mille: 30–45 %.
const QUOTE_PERMILLE: (usize, usize) = (300, 450);

/// What a page is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ResemblanceKind {
    Original,
    /// The article with 0.2–1.5 % of its words edited, on its site or another.
    Edited,
    /// A short article with a dateline or an editor's note (11 words) before its headline.
    Dateline,
    /// The article verbatim under another site's template.
    Syndicated,
    /// A new article quoting a contiguous 30–45 % of another's words.
    PartialOverlap,
}

/// One page of the web.
#[derive(Clone, Debug)]
pub struct ResemblancePage {
    pub host: &'static str,
    /// `/r/{n}.html`.
    pub path: String,
    pub html: String,
    /// The article text a reader of the page sees (dateline, headline, byline, subheadings,
    /// paragraphs): the ground truth's text.
    pub article: String,
    pub kind: ResemblanceKind,
    /// The page number of the original this page copies (or, for a partial overlap, quotes);
    /// `None` for originals.
    pub original: Option<usize>,
}

/// The generated web.
pub struct ResemblanceWeb {
    /// In generation order, shuffled (page `n` is `/r/{n}.html` on its host).
    pub pages: Vec<ResemblancePage>,
}

impl ResemblanceWeb {
    /// `articles` original articles and their copies: about 1.9 pages per article, 18 KB on
    /// average (400 articles: 766 pages, 14 MB of HTML, 0.76 million article words).
    pub fn generate(articles: usize, seed: u64) -> ResemblanceWeb {
        generate(articles, seed)
    }

    /// Pages of each kind, in [`ResemblanceKind`] order.
    pub fn kinds(&self) -> [usize; 5] {
        let mut k = [0; 5];
        for p in &self.pages {
            k[p.kind as usize] += 1;
        }
        k
    }

    /// The ground truth: exact word 4-shingle Jaccard ([`shingles`]) of the article texts of
    /// every pair of pages sharing at least one shingle (absent pairs: 0), keyed `(i, j)` with
    /// `i < j`; computed through an inverted index, never all N² pairs.
    pub fn truth(&self) -> HashMap<(usize, usize), f64> {
        let sets: Vec<Vec<u64>> = self
            .pages
            .iter()
            .map(|p| shingles(&p.article, TRUTH_SHINGLE_WORDS))
            .collect();
        jaccards(&sets)
    }
}

impl Sites for ResemblanceWeb {
    fn hosts(&self) -> &[&'static str] {
        &HOSTS
    }
    fn len(&self) -> usize {
        self.pages.len()
    }
    fn page(&self, n: usize) -> (&str, &str, &str) {
        let p = &self.pages[n];
        (p.host, &p.path, &p.html)
    }
}

/// Tokens as the crawler's shingling sees them: maximal runs of ASCII letters and digits and
/// bytes ≥ 0x80 (a UTF-8 word in any script stays whole), ASCII letters lowercased;
/// everything else separates. (The generated text is ASCII: there this is templateweb's
/// `tokens`.)
pub fn tokens(text: &str) -> Vec<String> {
    text.as_bytes()
        .split(|&b| !(b.is_ascii_alphanumeric() || b >= 0x80))
        .filter(|t| !t.is_empty())
        .map(|t| String::from_utf8_lossy(&t.to_ascii_lowercase()).into_owned())
        .collect()
}

/// Sorted, distinct hashes of a text's word shingles: every run of `width` consecutive
/// [`tokens`]; a text of 1 to `width − 1` tokens is one shingle of them all, an empty text
/// none.
pub fn shingles(text: &str, width: usize) -> Vec<u64> {
    let t = tokens(text);
    let hash = |w: &[String]| {
        let mut h = DefaultHasher::new();
        w.hash(&mut h);
        h.finish()
    };
    let mut s: Vec<u64> = if t.len() < width {
        t.chunks(width).map(hash).collect()
    } else {
        t.windows(width).map(hash).collect()
    };
    s.sort_unstable();
    s.dedup();
    s
}

/// A length log-uniform in `lo..=hi`: `lo · (hi/lo)^u` with `u` of 20 random bits, the power
/// a product of repeated square roots (correctly rounded, so the same on every platform,
/// which `powf` need not be).
fn log_uniform(rng: &mut Rng, lo: usize, hi: usize) -> usize {
    let bits = rng.next() >> 44;
    let mut x = lo as f64;
    let mut root = hi as f64 / lo as f64;
    for i in (0..20).rev() {
        root = root.sqrt();
        if (bits >> i) & 1 == 1 {
            x *= root;
        }
    }
    (x.round() as usize).clamp(lo, hi)
}

/// A page before rendering: which text, on which site, of which kind, copying which plan.
struct Plan {
    text: usize,
    site: usize,
    kind: ResemblanceKind,
    original: Option<usize>,
}

/// A site other than `home`.
fn other_site(rng: &mut Rng, home: usize) -> usize {
    (home + rng.range(1, HOSTS.len() - 1)) % HOSTS.len()
}

fn generate(n_articles: usize, seed: u64) -> ResemblanceWeb {
    let mut rng = Rng(seed);
    let words = Words::new(&mut rng);
    let templates = [
        Template::new(&words, &mut rng, "The Harbour Herald"),
        Template::new(&words, &mut rng, "The Valley Tribune"),
        Template::new(&words, &mut rng, "The County Courier"),
    ];
    let mut texts: Vec<Article> = Vec::new();
    let mut plans: Vec<Plan> = Vec::new();
    for _ in 0..n_articles {
        let n = log_uniform(&mut rng, MIN_WORDS, MAX_WORDS);
        let a = Article::new(&words, &mut rng, n);
        // Half the articles on the Herald, the rest on the other two.
        let home = match rng.below(10) {
            0..=4 => 0,
            5..=7 => 1,
            _ => 2,
        };
        let original = plans.len();
        let mut page = |text: Article, site: usize, kind: ResemblanceKind| {
            texts.push(text);
            plans.push(Plan {
                text: texts.len() - 1,
                site,
                kind,
                original: (kind != ResemblanceKind::Original).then_some(original),
            });
        };
        page(a.clone(), home, ResemblanceKind::Original);
        if rng.chance(SYNDICATED_PERCENT) {
            let site = other_site(&mut rng, home);
            page(a.clone(), site, ResemblanceKind::Syndicated);
        }
        if rng.chance(EDITED_PERCENT) {
            let copies = if rng.chance(EDITED_TWICE_PERCENT) {
                2
            } else {
                1
            };
            for _ in 0..copies {
                let per_10k = rng.range(EDIT_PER_10K.0, EDIT_PER_10K.1);
                let site = if rng.chance(50) {
                    home
                } else {
                    other_site(&mut rng, home)
                };
                let e = a.edited(&words, &mut rng, per_10k);
                page(e, site, ResemblanceKind::Edited);
            }
        }
        if (DATELINE_WORDS.0..=DATELINE_WORDS.1).contains(&n) && rng.chance(DATELINE_PERCENT) {
            let site = if rng.chance(50) {
                home
            } else {
                other_site(&mut rng, home)
            };
            let d = a.with_dateline(&words, &mut rng);
            page(d, site, ResemblanceKind::Dateline);
        }
        if rng.chance(PARTIAL_PERCENT) {
            let permille = rng.range(QUOTE_PERMILLE.0, QUOTE_PERMILLE.1);
            let q = Article::quoting(&words, &mut rng, &a, permille, MAX_WORDS);
            let site = rng.below(HOSTS.len());
            page(q, site, ResemblanceKind::PartialOverlap);
        }
    }
    // Shuffled: a copy may come before its original.
    let mut order: Vec<usize> = (0..plans.len()).collect();
    for i in (1..order.len()).rev() {
        let j = rng.below(i + 1);
        order.swap(i, j);
    }
    let mut number = vec![0; plans.len()];
    for (n, &p) in order.iter().enumerate() {
        number[p] = n;
    }
    // What the templates list around an article: every distinct article's headline.
    let headlines: Vec<String> = plans
        .iter()
        .filter(|p| p.original.is_none() || p.kind == ResemblanceKind::PartialOverlap)
        .map(|p| texts[p.text].headline.clone())
        .collect();
    let teasers: Vec<(String, String)> = headlines
        .iter()
        .map(|h| (h.clone(), words.prose(&mut rng, 14, 30)))
        .collect();
    let pages = order
        .iter()
        .enumerate()
        .map(|(n, &p)| {
            let plan = &plans[p];
            let a = &texts[plan.text];
            let (body, article) =
                a.render(["story", "tribune-article", "courier-story"][plan.site]);
            let ctx = PageContext {
                headlines: &headlines,
                teasers: &teasers,
                page_no: n,
            };
            let t = &templates[plan.site];
            let html = if plan.site == 1 {
                site_b(t, &ctx, &mut rng, &a.headline, &body)
            } else {
                site_a(t, &ctx, &mut rng, &a.headline, &body)
            };
            ResemblancePage {
                host: HOSTS[plan.site],
                path: format!("/r/{n}.html"),
                html,
                article,
                kind: plan.kind,
                original: plan.original.map(|o| number[o]),
            }
        })
        .collect();
    ResemblanceWeb { pages }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::OnceLock;
    use ResemblanceKind::*;

    type Truth = HashMap<(usize, usize), f64>;

    /// `generate(400, SEED)`, made once for every test.
    fn web() -> &'static (ResemblanceWeb, Truth) {
        static WEB: OnceLock<(ResemblanceWeb, Truth)> = OnceLock::new();
        WEB.get_or_init(|| {
            let web = ResemblanceWeb::generate(400, SEED);
            let truth = web.truth();
            (web, truth)
        })
    }

    fn jaccard(truth: &Truth, a: usize, b: usize) -> f64 {
        truth.get(&(a.min(b), a.max(b))).copied().unwrap_or(0.0)
    }

    /// The article a page's text is (its original's page number, or its own).
    fn root(web: &ResemblanceWeb, n: usize) -> usize {
        match web.pages[n].kind {
            Original | PartialOverlap => n,
            _ => web.pages[n].original.expect("a copy has an original"),
        }
    }

    #[test]
    fn deterministic_for_a_seed() {
        let a = ResemblanceWeb::generate(30, 7);
        let b = ResemblanceWeb::generate(30, 7);
        assert_eq!(a.pages.len(), b.pages.len());
        for (p, q) in a.pages.iter().zip(&b.pages) {
            assert_eq!(
                (p.host, &p.path, &p.html, &p.article, p.kind, p.original),
                (q.host, &q.path, &q.html, &q.article, q.kind, q.original)
            );
        }
        let c = ResemblanceWeb::generate(30, 8);
        assert_ne!(a.pages[0].article, c.pages[0].article);
    }

    #[test]
    fn articles_have_exactly_their_length() {
        let mut rng = Rng(3);
        let words = Words::new(&mut rng);
        for n in [MIN_WORDS, 51, 97, 100, 999, MAX_WORDS] {
            let a = Article::new(&words, &mut rng, n);
            assert_eq!(a.len(), n);
            assert_eq!(tokens(&a.render("x").1).len(), n);
            let d = a.with_dateline(&words, &mut rng);
            assert_eq!(tokens(&d.render("x").1).len(), n + 11, "{:?}", d.dateline);
            let e = a.edited(&words, &mut rng, 150);
            let t = tokens(&e.render("x").1).len();
            assert!(t.abs_diff(n) <= n * 15 / 1000 + 1, "{n} {t}");
            assert_eq!(tokens(&e.render("x").1).len(), e.len());
            let q = Article::quoting(&words, &mut rng, &a, 400, MAX_WORDS);
            assert_eq!(tokens(&q.render("x").1).len(), q.len());
            assert!(q.len() <= MAX_WORDS);
        }
    }

    #[test]
    fn shingles_of_short_and_long_texts() {
        assert_eq!(
            tokens("Caf\u{e9} au-lait, ÉTÉ 3x"),
            ["café", "au", "lait", "ÉtÉ", "3x"]
        );
        assert!(shingles("", 4).is_empty());
        assert_eq!(shingles("one two", 4).len(), 1);
        assert_eq!(shingles("a b c d", 4).len(), 1);
        assert_eq!(shingles("a b c d e", 4).len(), 2);
        // Repeats once; case and punctuation do not matter.
        assert_eq!(shingles("a b c d a b c d", 4).len(), 4);
        assert_eq!(shingles("A, b. C d", 4), shingles("a b c d", 4));
    }

    #[test]
    fn lengths_span_50_to_5000_log_uniformly() {
        let (web, _) = web();
        let lens: Vec<usize> = web
            .pages
            .iter()
            .filter(|p| p.kind == Original)
            .map(|p| tokens(&p.article).len())
            .collect();
        assert_eq!(lens.len(), 400);
        let (min, max) = (*lens.iter().min().unwrap(), *lens.iter().max().unwrap());
        assert!((MIN_WORDS..60).contains(&min), "{min}");
        assert!((4000..=MAX_WORDS).contains(&max), "{max}");
        // Log-uniform: as many in 50–500 as in 500–5,000 (half each; loose).
        let short = lens.iter().filter(|&&n| n < 500).count();
        assert!(
            (150..=250).contains(&short),
            "{short} of 400 under 500 words"
        );
        // No page runs far past the longest article (edits insert a few words).
        for p in &web.pages {
            assert!(tokens(&p.article).len() <= MAX_WORDS + 100, "{}", p.path);
        }
    }

    #[test]
    fn copies_are_near_their_originals() {
        let (web, truth) = web();
        let mut near = HashMap::new();
        for kind in [Edited, Dateline, Syndicated] {
            let js: Vec<f64> = (0..web.pages.len())
                .filter(|&n| web.pages[n].kind == kind)
                .map(|n| jaccard(truth, n, web.pages[n].original.unwrap()))
                .collect();
            assert!(js.len() >= 20, "{kind:?}: {}", js.len());
            let sane = js.iter().filter(|&&j| j >= 0.85).count();
            let ninety = js.iter().filter(|&&j| j >= 0.9).count();
            println!(
                "{kind:?}: {} copies, {sane} ≥ 0.85, {ninety} ≥ 0.9",
                js.len()
            );
            near.insert(kind, ninety);
            match kind {
                Syndicated => assert!(js.iter().all(|&j| j == 1.0)),
                _ => {
                    assert!(
                        sane * 10 >= js.len() * 9,
                        "{kind:?}: {sane} of {}",
                        js.len()
                    );
                    assert!(js.iter().all(|&j| j > 0.7 && j < 1.0), "{kind:?}: {js:?}");
                }
            }
        }
        // The example straddles 0.9: some dateline copies above, some below.
        let d = web.kinds()[Dateline as usize];
        assert!(near[&Dateline] > 0 && near[&Dateline] < d, "{near:?}");
        let pairs = truth.values().filter(|&&j| j >= 0.9).count();
        println!("{pairs} pairs ≥ 0.9");
        assert!((200..=600).contains(&pairs), "{pairs}");
    }

    #[test]
    fn partial_overlaps_and_distinct_articles_are_far() {
        let (web, truth) = web();
        let mut partial = 0;
        for (&(i, j), &jac) in truth {
            let (ri, rj) = (root(web, i), root(web, j));
            if ri == rj {
                continue;
            }
            let quotes = |a: usize, b: usize| {
                web.pages[a].kind == PartialOverlap && web.pages[a].original == Some(b)
            };
            if quotes(i, rj) || quotes(j, ri) {
                partial += 1;
                assert!(jac <= 0.5 && jac > 0.1, "{i} {j}: {jac}");
            } else {
                assert!(jac <= 0.1, "distinct {i} {j}: {jac}");
            }
        }
        println!("{partial} partial-overlap pairs");
        assert!(partial >= 24, "{partial}");
        // Every partial-overlap page shares shingles with what it quotes.
        for (n, p) in web.pages.iter().enumerate() {
            if p.kind == PartialOverlap {
                assert!(jaccard(truth, n, p.original.unwrap()) > 0.1, "{}", p.path);
            }
        }
    }

    #[test]
    fn sizes_are_bounded_and_templates_large() {
        let (web, _) = web();
        let total: usize = web.pages.iter().map(|p| p.html.len()).sum();
        assert!(total <= 30 << 20, "{total} bytes");
        for p in &web.pages {
            assert!(p.html.len() <= 100 << 10, "{}: {}", p.path, p.html.len());
            // The article text is what the page's <article> shows.
            let at = p.html.find("<article").unwrap();
            let end = p.html.find("</article>").unwrap();
            let mut text = String::new();
            let mut in_tag = false;
            for c in p.html[at..end].chars() {
                match c {
                    '<' => in_tag = true,
                    '>' => {
                        in_tag = false;
                        text.push(' ');
                    }
                    _ if !in_tag => text.push(c),
                    _ => {}
                }
            }
            assert_eq!(tokens(&text), tokens(&p.article), "{}", p.path);
        }
        // A short article is a small part of its page.
        let short = web
            .pages
            .iter()
            .filter(|p| tokens(&p.article).len() < 100)
            .count();
        assert!(short > 20, "{short}");
        let k = web.kinds();
        assert!(
            k[Original as usize] * 2 >= web.pages.len() * 9 / 10,
            "{k:?}"
        );
    }

    #[test]
    fn serves_every_page_and_an_index_per_site() {
        let (web, _) = web();
        let routes = web.routes();
        assert_eq!(routes.len(), web.pages.len() + HOSTS.len());
        for h in HOSTS {
            assert!(routes.get(h, "/").is_some());
        }
        assert!(routes.get(web.pages[5].host, "/r/5.html").is_some());
        let numbers = web.numbers(8080);
        assert_eq!(numbers[&web.url(7, 8080)], 7);
        assert_eq!(web.seeds(8080).len(), HOSTS.len());
        assert_eq!(web.dns_records().len(), HOSTS.len());
        // Every site carries pages; copies may come before their originals.
        for h in HOSTS {
            assert!(web.pages.iter().filter(|p| p.host == h).count() > 50);
        }
        assert!((0..web.pages.len()).any(|n| web.pages[n].original.is_some_and(|o| o > n)));
    }

    /// The figures of `generate(400, SEED)` (`--nocapture` to read them).
    #[test]
    fn figures() {
        let (web, truth) = web();
        let k = web.kinds();
        let bytes: usize = web.pages.iter().map(|p| p.html.len()).sum();
        let words: usize = web.pages.iter().map(|p| tokens(&p.article).len()).sum();
        println!(
            "{} pages {k:?} (original, edited, dateline, syndicated, partial), {bytes} bytes of HTML, {words} article words",
            web.pages.len()
        );
        let near = truth.values().filter(|&&j| j >= 0.9).count();
        let mid = truth.values().filter(|&&j| j > 0.5 && j < 0.9).count();
        let far = truth.values().filter(|&&j| j <= 0.5).count();
        println!("pairs: {near} ≥ 0.9, {mid} in (0.5, 0.9), {far} ≤ 0.5");
        let mut hist = [0usize; 12];
        let bins = [
            "<0.80", "0.80", "0.82", "0.84", "0.86", "0.88", "0.90", "0.92", "0.94", "0.96",
            "0.98", "1.00",
        ];
        for (n, p) in web.pages.iter().enumerate() {
            if matches!(p.kind, Edited | Dateline | Syndicated) {
                let j = jaccard(truth, n, p.original.unwrap());
                let b = if j >= 1.0 {
                    11
                } else if j < 0.8 {
                    0
                } else {
                    1 + ((j - 0.8) / 0.02) as usize
                };
                hist[b.min(10)] += usize::from(j < 1.0);
                hist[11] += usize::from(j >= 1.0);
            }
        }
        for (b, c) in bins.iter().zip(hist) {
            println!("  {b:>5} {c}");
        }
    }
}
