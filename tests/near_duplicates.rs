//! The evaluation the issue "What a crawl knows: near-duplicates through the template" asks
//! for, run on the cores (`spinneret::content`) in crawl order.
//!
//! A generated web of two sites whose templates (cookie banner, header, navigation, trending
//! bar, sidebars, teaser cards, comments, related links, footer) are far larger than their
//! articles holds: distinct articles under each template; near-duplicates (an article again
//! on its own site, plus a timestamp and an ad); syndicated copies (an article under the
//! other site's template). Ground truth is the 4-shingle Jaccard of the article texts the
//! generator wrote (near-duplicate ≥ 0.8, distinct ≤ 0.3, pairs between are ignored). Every
//! page goes through text → simhash → index (query, then insert), and the reported pairs
//! are scored. The texts compared: the whole page text (template left in), the main text
//! from the shallow features, and the main text with the per-host template memory; then the
//! same two for the same pages with `<article>` turned into `<div>`, as on a site that does
//! not mark its article (printed, not asserted: there the teaser rule also takes the last
//! paragraph after an in-article ad for a teaser, and recall is lower).
//!
//! Run with `--nocapture` to see the table.

use std::collections::HashMap;
use std::fmt::Write;

use spinneret::content::near_dup::MAX_DISTANCE;
use spinneret::content::{simhash, MainText, MemoryRuns, NearDupIndex, TemplateMemory};

/// xorshift64*: deterministic, no `rand` dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

const FUNCTION_WORDS: [&str; 30] = [
    "the", "of", "and", "to", "in", "a", "is", "that", "for", "on", "was", "with", "as", "by",
    "at", "it", "from", "his", "her", "their", "be", "are", "were", "has", "have", "had", "not",
    "but", "or", "which",
];
const MONTHS: [&str; 12] = [
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
const DAYS: [&str; 7] = [
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
struct Words {
    content: Vec<String>,
}

impl Words {
    fn new(rng: &mut Rng) -> Words {
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

    fn word(&self, rng: &mut Rng) -> &str {
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
    fn sentence(&self, rng: &mut Rng, n: usize) -> String {
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
    fn prose(&self, rng: &mut Rng, lo: usize, hi: usize) -> String {
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
    fn title(&self, rng: &mut Rng, lo: usize, hi: usize) -> String {
        (0..rng.range(lo, hi))
            .map(|_| capitalize(&self.content[rng.below(self.content.len())]))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

fn capitalize(w: &str) -> String {
    let mut c = w.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// One article as its author wrote it.
struct Article {
    headline: String,
    byline: String,
    /// Paragraphs, each optionally after a subheading; some carry an inline link.
    paragraphs: Vec<(Option<String>, String, Option<String>)>,
    figure: Option<(usize, String)>,
}

impl Article {
    fn new(words: &Words, rng: &mut Rng) -> Article {
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
struct Extra {
    /// "Updated …", before the first paragraph or after the last.
    timestamp: Option<(bool, String)>,
    /// An ad creative, and the paragraph it follows.
    ad: Option<(usize, String)>,
}

/// A page: which article, on which site, with what extra.
struct Page {
    article: usize,
    site: usize,
    extra: Extra,
}

/// Renders the article part of a page, and appends to `truth` the article text a reader of
/// that page sees (what the ground truth compares).
fn article_html(a: &Article, extra: &Extra, site: usize, truth: &mut String) -> String {
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

/// One site's fixed template text, made once.
struct Template {
    name: String,
    tagline: String,
    cookie: String,
    sections: Vec<String>,
    subsections: Vec<String>,
    about: String,
    newsletter: String,
    comment_policy: String,
    footer_links: Vec<(String, Vec<String>)>,
    legal: String,
}

impl Template {
    fn new(words: &Words, rng: &mut Rng, name: &str) -> Template {
        Template {
            name: name.to_owned(),
            tagline: words.sentence(rng, 9),
            cookie: words.prose(rng, 40, 40),
            sections: (0..30).map(|_| words.title(rng, 1, 2)).collect(),
            subsections: (0..14).map(|_| words.title(rng, 1, 3)).collect(),
            about: words.prose(rng, 80, 80),
            newsletter: words.prose(rng, 28, 28),
            comment_policy: words.prose(rng, 30, 30),
            footer_links: (0..5)
                .map(|_| {
                    let links = (0..12).map(|_| words.title(rng, 1, 3)).collect();
                    (words.title(rng, 1, 1), links)
                })
                .collect(),
            legal: words.prose(rng, 85, 85),
        }
    }
}

/// What changes from page to page in a template: lists of other articles, counts.
struct PageContext<'a> {
    headlines: &'a [String],
    teasers: &'a [(String, String)],
    page_no: usize,
}

fn links(h: &mut String, items: impl Iterator<Item = String>, class: &str) {
    let _ = write!(h, "<ul class=\"{class}\">");
    for (i, t) in items.enumerate() {
        let _ = write!(h, "<li><a href=\"/{class}/{i}-{}\">{t}</a></li>", t.len());
    }
    h.push_str("</ul>");
}

fn pick<'a>(rng: &mut Rng, from: &'a [String], n: usize) -> Vec<&'a String> {
    (0..n).map(|_| &from[rng.below(from.len())]).collect()
}

/// Site 0: a classic news layout, the article between a long header and a long sidebar.
fn site_a(t: &Template, ctx: &PageContext, rng: &mut Rng, title: &str, article: &str) -> String {
    let mut h = String::with_capacity(32 * 1024);
    let _ = write!(
        h,
        "<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>{title} | {}</title>\
         <link rel=stylesheet href=/static/site.css><script>window.dataLayer=window.dataLayer||[];\
         function gtag(){{dataLayer.push(arguments)}} if (a < b) {{ gtag('js', new Date()); }}</script>\
         <style>.nav li{{display:inline}} .ad-slot{{margin:1em 0}}</style></head><body>",
        t.name
    );
    let _ = write!(
        h,
        "<div id=cookie-banner><p>{}</p><button>Accept all</button><button>Manage choices</button></div>",
        t.cookie
    );
    h.push_str("<header><div class=top>");
    for s in [
        "Subscribe",
        "Sign in",
        "Newsletters",
        "Jobs",
        "Puzzles",
        "Events",
    ] {
        let _ = write!(h, "<a href=\"/{}\">{s}</a> ", s.len());
    }
    let _ = write!(
        h,
        "</div><div class=logo><a href=/>{}</a></div><p class=tagline>{}</p><nav>",
        t.name, t.tagline
    );
    links(&mut h, t.sections.iter().cloned(), "nav");
    links(&mut h, t.subsections.iter().cloned(), "subnav");
    h.push_str("</nav></header><div class=trending><span>Trending:</span> ");
    for hl in pick(rng, ctx.headlines, 5) {
        let _ = write!(h, "<a href=\"/t/{}\">{hl}</a> ", hl.len());
    }
    let section = &t.sections[rng.below(t.sections.len())];
    let _ = write!(
        h,
        "</div><div class=breadcrumb><a href=/>Home</a> &rsaquo; <a href=/s>{section}</a></div><main>"
    );
    h.push_str(article);
    h.push_str("<section class=share>Share this story <a href=#f>Facebook</a> <a href=#t>Twitter</a> <a href=#e>Email</a> <a href=#w>WhatsApp</a></section>");
    let _ = write!(
        h,
        "<section class=comments><h3>Comments ({})</h3><p>{}</p><a href=/login>Sign in to comment</a></section>",
        rng.below(400),
        t.comment_policy
    );
    h.push_str("<section class=related><h3>Related stories</h3>");
    links(
        &mut h,
        pick(rng, ctx.headlines, 5).into_iter().cloned(),
        "related",
    );
    h.push_str("</section></main><aside><section><h3>Most read</h3>");
    // The most-read list changes every 30 pages.
    let mut day = Rng(ctx.page_no as u64 / 30 + 1);
    links(
        &mut h,
        pick(&mut day, ctx.headlines, 10).into_iter().cloned(),
        "most-read",
    );
    let _ = write!(
        h,
        "</section><section class=about><h3>About {}</h3><p>{}</p></section>\
         <section class=newsletter><h3>Morning briefing</h3><p>{}</p><form><input type=email \
         placeholder=\"Your email\"><button>Sign up</button></form></section><section class=follow>",
        t.name, t.about, t.newsletter
    );
    for s in [
        "Facebook",
        "Twitter",
        "Instagram",
        "YouTube",
        "LinkedIn",
        "RSS",
    ] {
        let _ = write!(h, "<a href=\"https://{s}.example/\">{s}</a> ");
    }
    h.push_str("</section></aside><footer>");
    for (head, ls) in &t.footer_links {
        let _ = write!(h, "<div class=col><h4>{head}</h4>");
        links(&mut h, ls.iter().cloned(), "footer");
        h.push_str("</div>");
    }
    let _ = write!(
        h,
        "<p class=legal>{}</p><p>&copy; 2024 {}. All rights reserved.</p></footer>\
         <script src=/static/app.js defer></script></body></html>",
        t.legal, t.name
    );
    h
}

/// Site 1: a magazine layout: a mega menu, a briefing of teasers before the article, a grid
/// of teaser cards after it, and a long footer.
fn site_b(t: &Template, ctx: &PageContext, rng: &mut Rng, title: &str, article: &str) -> String {
    let mut h = String::with_capacity(32 * 1024);
    let _ = write!(
        h,
        "<!doctype html>\n<HTML>\n<HEAD>\n<TITLE>{title} - {}</TITLE>\n\
         <meta name=viewport content=\"width=device-width\">\n<script async src=\"https://cdn.example.org/tag.js\"></script>\n\
         <script>\nvar cfg = {{ \"site\": \"ledger\", \"ads\": true }};\n</script>\n</HEAD>\n<BODY class=ledger>\n",
        t.name
    );
    let _ = write!(
        h,
        "<div class=\"gdpr\">\n  <p>{}</p>\n  <a href=/privacy>Privacy settings</a>\n</div>\n",
        t.cookie
    );
    let _ = write!(
        h,
        "<div class=masthead>\n  <a class=brand href=/>{}</a>\n  <span>{}</span>\n</div>\n<div class=menu>\n",
        t.name, t.tagline
    );
    for (i, s) in t.sections.iter().enumerate() {
        let _ = writeln!(
            h,
            "  <div class=menu-item><a href=\"/c/{i}\">{s}</a><div class=sub><a href=\"/c/{i}/a\">{}</a> <a href=\"/c/{i}/b\">{}</a></div></div>",
            t.subsections[i % t.subsections.len()],
            t.subsections[(i + 5) % t.subsections.len()]
        );
    }
    h.push_str("</div>\n<div class=briefing><h3>Today&rsquo;s briefing</h3>\n");
    // The briefing changes every 25 pages.
    let day = ctx.page_no / 25;
    for k in 0..3 {
        let (hl, summary) = &ctx.teasers[(day * 3 + k) % ctx.teasers.len()];
        let _ = writeln!(
            h,
            "<div class=teaser><h4><a href=\"/b/{k}\">{hl}</a></h4><p>{summary} <a href=\"/b/{k}\">Read more</a></p></div>"
        );
    }
    h.push_str("</div>\n<div class=\"content-wrap\">\n");
    h.push_str(article);
    h.push_str("\n<div class=cards><h3>More from the Ledger</h3>\n");
    for _ in 0..8 {
        let (hl, summary) = &ctx.teasers[rng.below(ctx.teasers.len())];
        let _ = writeln!(
            h,
            "<div class=card><h4><a href=\"/card/{}\">{hl}</a></h4><p>{summary}</p></div>",
            hl.len()
        );
    }
    h.push_str("</div></div>\n<div class=footer>\n");
    for (head, ls) in &t.footer_links {
        let _ = write!(h, "<div class=fcol><b>{head}</b><br>");
        for l in ls {
            let _ = write!(h, "<a href=\"/f/{}\">{l}</a><br>", l.len());
        }
        h.push_str("</div>\n");
    }
    let _ = write!(
        h,
        "<div class=about-ledger><p>{}</p></div>\n<div class=fine-print><p>{}</p><p>{}</p></div>\n\
         <p>&copy; {} 2024</p></div>\n</BODY>\n</HTML>\n",
        t.about, t.legal, t.newsletter, t.name
    );
    h
}

/// The generated web, in crawl order: each page's host, HTML and article text.
struct Web {
    pages: Vec<(&'static str, String, String)>,
    /// Pages per kind: originals, near-duplicates, syndicated copies.
    kinds: [usize; 3],
}

fn generate() -> Web {
    let mut rng = Rng(0x6e65_6172_6475_7073);
    let words = Words::new(&mut rng);
    let templates = [
        Template::new(&words, &mut rng, "The Riverside Gazette"),
        Template::new(&words, &mut rng, "The Northern Ledger"),
    ];
    let articles: Vec<Article> = (0..700).map(|_| Article::new(&words, &mut rng)).collect();
    let headlines: Vec<String> = articles.iter().map(|a| a.headline.clone()).collect();
    let teasers: Vec<(String, String)> = articles
        .iter()
        .map(|a| (a.headline.clone(), words.prose(&mut rng, 14, 30)))
        .collect();
    let ads: Vec<String> = (0..20).map(|_| words.prose(&mut rng, 6, 14)).collect();

    let mut pages: Vec<Page> = Vec::new();
    let mut kinds = [0; 3];
    for (i, a) in articles.iter().enumerate() {
        // Most articles are on the Gazette: many distinct articles under one template.
        let home = usize::from(rng.chance(35));
        let plain = Extra {
            timestamp: None,
            ad: None,
        };
        pages.push(Page {
            article: i,
            site: home,
            extra: plain.clone(),
        });
        kinds[0] += 1;
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
                pages.push(Page {
                    article: i,
                    site: home,
                    extra,
                });
                kinds[1] += 1;
            }
        }
        if rng.chance(20) {
            pages.push(Page {
                article: i,
                site: 1 - home,
                extra: plain,
            });
            kinds[2] += 1;
        }
    }
    // Crawl order: shuffled (a copy may come before its original).
    for i in (1..pages.len()).rev() {
        let j = rng.below(i + 1);
        pages.swap(i, j);
    }
    let hosts = ["gazette.example", "ledger.example"];
    let pages = pages
        .iter()
        .enumerate()
        .map(|(n, p)| {
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
            (hosts[p.site], html, truth)
        })
        .collect();
    Web { pages, kinds }
}

/// Lowercased alphanumeric tokens, as the simhash sees them.
fn tokens(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Sorted, distinct 4-shingle hashes of a text.
fn shingles(text: &str) -> Vec<u64> {
    let t = tokens(text);
    let mut s: Vec<u64> = t
        .windows(4)
        .map(|w| xxhash_rust::xxh3::xxh3_64(w.join(" ").as_bytes()))
        .collect();
    s.sort_unstable();
    s.dedup();
    s
}

/// Jaccard of every pair of pages sharing a shingle (others are 0), via an inverted index.
fn jaccards(sets: &[Vec<u64>]) -> HashMap<(usize, usize), f64> {
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

#[derive(Debug)]
struct Score {
    reported: usize,
    true_pos: usize,
    false_pos: usize,
    between: usize,
    unindexed: usize,
    precision: f64,
    recall: f64,
}

/// Runs the pages' texts through simhash and the index in crawl order and scores the
/// pairs it reports against the truth.
fn evaluate(texts: &[Vec<u8>], jac: &HashMap<(usize, usize), f64>, near_total: usize) -> Score {
    // A small budget, so that runs spill and merge as they would in a long crawl.
    let mut index = NearDupIndex::new(16 * 1024, MemoryRuns::default());
    let mut out = Vec::new();
    let mut pairs = Vec::new();
    let mut unindexed = 0;
    for (id, text) in texts.iter().enumerate() {
        let fp = simhash(text);
        if fp.shingles == 0 {
            unindexed += 1;
            continue;
        }
        out.clear();
        index.within(fp.hash, usize::MAX, &mut out).unwrap();
        for m in &out {
            assert!(m.distance <= MAX_DISTANCE);
            pairs.push((m.id as usize, id));
        }
        index.insert(fp.hash, id as u64).unwrap();
    }
    let (mut tp, mut fp, mut between) = (0, 0, 0);
    for (i, j) in &pairs {
        let key = (*i.min(j), *i.max(j));
        let jaccard = jac.get(&key).copied().unwrap_or(0.0);
        if jaccard >= 0.8 {
            tp += 1;
        } else if jaccard <= 0.3 {
            fp += 1;
        } else {
            between += 1;
        }
    }
    Score {
        reported: pairs.len(),
        true_pos: tp,
        false_pos: fp,
        between,
        unindexed,
        precision: if tp + fp == 0 {
            1.0
        } else {
            tp as f64 / (tp + fp) as f64
        },
        recall: tp as f64 / near_total.max(1) as f64,
    }
}

#[test]
fn main_content_finds_near_duplicates_through_the_template() {
    let web = generate();
    let n = web.pages.len();
    let sets: Vec<Vec<u64>> = web.pages.iter().map(|(_, _, t)| shingles(t)).collect();
    let jac = jaccards(&sets);
    let near_total = jac.values().filter(|&&j| j >= 0.8).count();
    let between_total = jac.values().filter(|&&j| j > 0.3 && j < 0.8).count();
    let html_bytes: usize = web.pages.iter().map(|(_, h, _)| h.len()).sum();

    let mut mt = MainText::new();
    let mut memory = TemplateMemory::new(64);
    let mut memory_divs = TemplateMemory::new(64);
    let (mut whole, mut shallow, mut learned) = (Vec::new(), Vec::new(), Vec::new());
    let (mut shallow_divs, mut learned_divs) = (Vec::new(), Vec::new());
    let (mut page_words, mut article_words) = (0usize, 0usize);
    for (host, html, truth) in &web.pages {
        shallow.push(mt.extract(html.as_bytes(), usize::MAX).to_vec());
        whole.push(mt.page_text().to_vec());
        learned.push(
            mt.extract_with_memory(html.as_bytes(), usize::MAX, &mut memory, host.as_bytes())
                .to_vec(),
        );
        page_words += tokens(&String::from_utf8_lossy(mt.page_text())).len();
        // The same pages as a site that does not mark its article: <article> becomes <div>.
        let divs = html
            .replace("<article", "<div")
            .replace("</article>", "</div>");
        shallow_divs.push(mt.extract(divs.as_bytes(), usize::MAX).to_vec());
        learned_divs.push(
            mt.extract_with_memory(
                divs.as_bytes(),
                usize::MAX,
                &mut memory_divs,
                host.as_bytes(),
            )
            .to_vec(),
        );
        article_words += tokens(truth).len();
    }

    let runs = [
        ("whole page text (template in)", &whole),
        ("main text, shallow features", &shallow),
        ("main text + template memory", &learned),
        ("no <article>: main text, shallow", &shallow_divs),
        ("no <article>: + template memory", &learned_divs),
    ]
    .map(|(name, texts)| (name, evaluate(texts, &jac, near_total)));
    println!(
        "near-duplicate evaluation: {n} pages ({} articles, {} near-duplicates, {} syndicated \
         copies), {:.1} KB of HTML a page, {} words a page of which {} article; truth: {near_total} \
         pairs with Jaccard ≥ 0.8, {between_total} between 0.3 and 0.8 (ignored), k = {MAX_DISTANCE}",
        web.kinds[0],
        web.kinds[1],
        web.kinds[2],
        html_bytes as f64 / n as f64 / 1024.0,
        page_words / n,
        article_words / n,
    );
    println!(
        "{:<34} {:>8} {:>6} {:>6} {:>8} {:>10} {:>7}",
        "text hashed", "reported", "TP", "FP", "between", "precision", "recall"
    );
    for (name, s) in &runs {
        println!(
            "{name:<34} {:>8} {:>6} {:>6} {:>8} {:>10} {:>7.3}{}",
            s.reported,
            s.true_pos,
            s.false_pos,
            s.between,
            // No pair judged, no precision.
            if s.true_pos + s.false_pos == 0 {
                "n/a".to_owned()
            } else {
                format!("{:.3}", s.precision)
            },
            s.recall,
            if s.unindexed > 0 {
                format!("  ({} pages without text)", s.unindexed)
            } else {
                String::new()
            }
        );
    }

    assert!(
        near_total >= 200,
        "too few near pairs to judge: {near_total}"
    );
    let [(_, whole), _, (_, learned), ..] = &runs;
    assert!(
        learned.precision >= 0.95 && learned.recall >= 0.90,
        "main text + template memory: {learned:?}"
    );
    // The main-content step is what makes it work: with the template left in, the figures
    // fall clearly short.
    assert!(
        whole.recall < learned.recall - 0.2 || whole.precision < learned.precision - 0.2,
        "whole page text did about as well: {whole:?}"
    );
}
