//! A web for near-duplicate detection (spinneret issue 31): two news sites on loopback,
//! `gazette.test` and `ledger.test`, whose templates are far larger than their articles.
//!
//! It holds distinct articles (most on the Gazette: many articles under one template);
//! near-duplicates (an article again on its own site, plus a timestamp and an ad); and
//! syndicated copies (an article under the other site's template). Every page is
//! `/a/{n}.html` on its site (`n` its number in [`TemplateWeb::pages`], generation order,
//! shuffled so a copy may come before its original); `/` on each site lists that site's
//! pages in that order. The generator knows each page's article text as a reader sees it
//! ([`TemplatePage::article`]), from which [`jaccards`] computes the ground truth: the word
//! 3-shingle Jaccard of two pages' article texts. Everything follows from the seed.
//!
//! Serving is `http_server`'s job ([`TemplateWeb::routes`]), names `dns_server`'s
//! ([`TemplateWeb::dns_records`]: both names → 127.0.0.1).

pub(crate) mod layout;
pub(crate) mod words;

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::hash::{Hash, Hasher};
use std::net::Ipv4Addr;

use crate::dns_server::Record;
use crate::http_server::{Response, Routes, Script};
use layout::{site_a, site_b, PageContext, Template};
use words::{article_html, Article, Extra, Page, Rng, Words, DAYS, MONTHS};

/// The two sites' host names.
pub const HOSTS: [&str; 2] = ["gazette.test", "ledger.test"];
/// The seed of [`TemplateWeb::generate`]'s text and shuffle.
pub const SEED: u64 = 0x6e65_6172_6475_7073;
/// Words per shingle of the ground truth (the simhash's too).
pub const TRUTH_SHINGLE_WORDS: usize = 3;

/// What a page is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageKind {
    Original,
    /// The article again on its site, with a timestamp and an ad.
    NearDuplicate,
    /// The article under the other site's template.
    Syndicated,
}

/// One page of the web.
#[derive(Clone, Debug)]
pub struct TemplatePage {
    pub host: &'static str,
    /// `/a/{n}.html`.
    pub path: String,
    pub html: String,
    /// The article text a reader of the page sees (headline, byline, paragraphs, and what
    /// the copy added): the ground truth's text.
    pub article: String,
    pub kind: PageKind,
}

/// The generated web.
pub struct TemplateWeb {
    /// In generation order (page `n` is `/a/{n}.html` on its host).
    pub pages: Vec<TemplatePage>,
}

impl TemplateWeb {
    /// `articles` articles (700 make about 1,150 pages of 20–30 KB), from [`SEED`].
    pub fn generate(articles: usize) -> TemplateWeb {
        generate(articles, SEED)
    }

    /// Pages of each kind: originals, near-duplicates, syndicated copies.
    pub fn kinds(&self) -> [usize; 3] {
        let mut k = [0; 3];
        for p in &self.pages {
            k[p.kind as usize] += 1;
        }
        k
    }

    /// The ground truth: word 3-shingle Jaccard of every pair of pages' article texts that
    /// share a shingle (absent pairs: 0), keyed `(smaller, larger)` page number.
    pub fn truth(&self) -> HashMap<(usize, usize), f64> {
        let sets: Vec<Vec<u64>> = self.pages.iter().map(|p| shingles(&p.article)).collect();
        jaccards(&sets)
    }
}

/// A generated web of news sites on loopback: its hosts and pages, and what serving it
/// needs (URLs, seeds, routes, DNS records), the same for every such web.
pub trait Sites {
    /// The sites' host names.
    fn hosts(&self) -> &[&'static str];
    /// Pages in generation order.
    fn len(&self) -> usize;
    /// Page `n`: its host, path and HTML.
    fn page(&self, n: usize) -> (&str, &str, &str);

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The URL of page `n` on a server at `port`.
    fn url(&self, n: usize, port: u16) -> String {
        let (host, path, _) = self.page(n);
        format!("http://{host}:{port}{path}")
    }

    /// Page numbers by URL (as [`Sites::url`] spells them).
    fn numbers(&self, port: u16) -> HashMap<String, usize> {
        (0..self.len()).map(|n| (self.url(n, port), n)).collect()
    }

    /// Each site's front page.
    fn seeds(&self, port: u16) -> Vec<String> {
        self.hosts()
            .iter()
            .map(|h| format!("http://{h}:{port}/"))
            .collect()
    }

    /// Every page, and each site's `/` listing its pages in order.
    fn routes(&self) -> Routes {
        site_routes(self.hosts(), (0..self.len()).map(|n| self.page(n)))
    }

    /// Every name on 127.0.0.1.
    fn dns_records(&self) -> HashMap<String, Vec<Record>> {
        self.hosts()
            .iter()
            .map(|h| (h.to_string(), vec![Record::A(Ipv4Addr::LOCALHOST)]))
            .collect()
    }
}

impl Sites for TemplateWeb {
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

/// Routes for `pages` (host, path, HTML), and a `/` on each of `hosts` listing its pages in
/// the order given (a page on another host goes on the first one's list).
fn site_routes<'a>(
    hosts: &[&str],
    pages: impl Iterator<Item = (&'a str, &'a str, &'a str)>,
) -> Routes {
    let mut routes = Routes::new();
    let mut index: Vec<String> = hosts
        .iter()
        .map(|h| {
            format!(
                "<!DOCTYPE html><html><head><title>{h}</title></head><body><h1>All stories</h1><ul>"
            )
        })
        .collect();
    for (host, path, html) in pages {
        routes.add(
            host,
            path,
            Script::Respond(Response::ok(html.to_string(), "text/html; charset=utf-8")),
        );
        let site = hosts.iter().position(|h| *h == host).unwrap_or(0);
        let _ = write!(index[site], "<li><a href=\"{path}\">story</a></li>");
    }
    for (h, mut index) in hosts.iter().zip(index) {
        index.push_str("</ul></body></html>");
        routes.add(
            h,
            "/",
            Script::Respond(Response::ok(index, "text/html; charset=utf-8")),
        );
    }
    routes
}

fn generate(n_articles: usize, seed: u64) -> TemplateWeb {
    let mut rng = Rng(seed);
    let words = Words::new(&mut rng);
    let templates = [
        Template::new(&words, &mut rng, "The Riverside Gazette"),
        Template::new(&words, &mut rng, "The Northern Ledger"),
    ];
    let articles: Vec<Article> = (0..n_articles)
        .map(|_| Article::new(&words, &mut rng))
        .collect();
    let headlines: Vec<String> = articles.iter().map(|a| a.headline.clone()).collect();
    let teasers: Vec<(String, String)> = articles
        .iter()
        .map(|a| (a.headline.clone(), words.prose(&mut rng, 14, 30)))
        .collect();
    let ads: Vec<String> = (0..20).map(|_| words.prose(&mut rng, 6, 14)).collect();

    let mut pages: Vec<(Page, PageKind)> = Vec::new();
    for (i, a) in articles.iter().enumerate() {
        // Most articles are on the Gazette: many distinct articles under one template.
        let home = usize::from(rng.chance(35));
        let plain = Extra {
            timestamp: None,
            ad: None,
        };
        pages.push((
            Page {
                article: i,
                site: home,
                extra: plain.clone(),
            },
            PageKind::Original,
        ));
        if rng.chance(30) {
            for _ in 0..rng.range(1, 2) {
                let stamp = format!(
                    "Updated {} {} {} 2024, {:02}:{:02}",
                    DAYS[rng.below(7)],
                    rng.range(1, 28),
                    MONTHS[rng.below(12)],
                    rng.below(24),
                    rng.below(60)
                );
                let extra = Extra {
                    timestamp: Some((rng.chance(50), stamp)),
                    ad: Some((
                        rng.below(a.paragraphs.len()),
                        ads[rng.below(ads.len())].clone(),
                    )),
                };
                pages.push((
                    Page {
                        article: i,
                        site: home,
                        extra,
                    },
                    PageKind::NearDuplicate,
                ));
            }
        }
        if rng.chance(20) {
            pages.push((
                Page {
                    article: i,
                    site: 1 - home,
                    extra: plain,
                },
                PageKind::Syndicated,
            ));
        }
    }
    // Shuffled: a copy may come before its original.
    for i in (1..pages.len()).rev() {
        let j = rng.below(i + 1);
        pages.swap(i, j);
    }
    let pages = pages
        .iter()
        .enumerate()
        .map(|(n, (p, kind))| {
            let a = &articles[p.article];
            let mut truth = String::new();
            let body = article_html(a, &p.extra, p.site, &mut truth);
            let ctx = PageContext {
                headlines: &headlines,
                teasers: &teasers,
                page_no: n,
            };
            let t = &templates[p.site];
            let html = if p.site == 0 {
                site_a(t, &ctx, &mut rng, &a.headline, &body)
            } else {
                site_b(t, &ctx, &mut rng, &a.headline, &body)
            };
            TemplatePage {
                host: HOSTS[p.site],
                path: format!("/a/{n}.html"),
                html,
                article: truth,
                kind: *kind,
            }
        })
        .collect();
    TemplateWeb { pages }
}

/// Lowercased alphanumeric tokens, as the simhash sees them.
pub fn tokens(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Sorted, distinct word-shingle hashes of a text ([`TRUTH_SHINGLE_WORDS`] words each).
pub fn shingles(text: &str) -> Vec<u64> {
    let t = tokens(text);
    let mut s: Vec<u64> = t
        .windows(TRUTH_SHINGLE_WORDS)
        .map(|w| {
            let mut h = DefaultHasher::new();
            w.hash(&mut h);
            h.finish()
        })
        .collect();
    s.sort_unstable();
    s.dedup();
    s
}

/// Jaccard of every pair of sets sharing an element (others are 0), via an inverted index,
/// keyed `(i, j)` with `i < j`.
pub fn jaccards(sets: &[Vec<u64>]) -> HashMap<(usize, usize), f64> {
    let mut postings: HashMap<u64, Vec<usize>> = HashMap::new();
    for (i, s) in sets.iter().enumerate() {
        for &h in s {
            postings.entry(h).or_default().push(i);
        }
    }
    let mut common: HashMap<(usize, usize), usize> = HashMap::new();
    for docs in postings.values() {
        for (x, &i) in docs.iter().enumerate() {
            for &j in &docs[x + 1..] {
                *common.entry((i, j)).or_default() += 1;
            }
        }
    }
    common
        .into_iter()
        .map(|((i, j), c)| {
            let union = sets[i].len() + sets[j].len() - c;
            ((i, j), c as f64 / union as f64)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_are_near_and_distinct_articles_far() {
        let web = TemplateWeb::generate(120);
        let jac = web.truth();
        let k = web.kinds();
        assert!(k[1] > 10 && k[2] > 5, "{k:?}");
        // Nearly every copy has its original at Jaccard ≥ 0.8 (a short article with a long
        // ad may fall between 0.3 and 0.8: such pairs are judged neither way).
        let copies = web.pages.len() - k[0];
        let near = (0..web.pages.len())
            .filter(|&n| web.pages[n].kind != PageKind::Original)
            .filter(|&n| {
                (0..web.pages.len())
                    .filter(|&m| m != n)
                    .any(|m| jac.get(&(m.min(n), m.max(n))).is_some_and(|&j| j >= 0.8))
            })
            .count();
        assert!(near * 10 >= copies * 9, "{near} of {copies}");
        // Distinct articles share few shingles.
        let far = jac.values().filter(|&&j| j > 0.3 && j < 0.8).count();
        assert!(far * 10 < copies, "{far} pairs between 0.3 and 0.8");
        // Templates are far larger than articles.
        let html: usize = web.pages.iter().map(|p| p.html.len()).sum();
        let article: usize = web.pages.iter().map(|p| p.article.len()).sum();
        assert!(html > 5 * article, "{html} vs {article}");
    }
}
