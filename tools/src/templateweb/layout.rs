//! The two sites' templates, far larger than their articles: a news layout (cookie banner,
//! header, navigation, trending bar, comments, related links, a long sidebar and footer) and
//! a magazine layout (mega menu, a briefing of teasers, a grid of cards, a long footer).

use std::fmt::Write;

use super::words::{Rng, Words};

/// One site's fixed template text, made once.
pub(crate) struct Template {
    pub(super) name: String,
    pub(super) tagline: String,
    pub(super) cookie: String,
    pub(super) sections: Vec<String>,
    pub(super) subsections: Vec<String>,
    pub(super) about: String,
    pub(super) newsletter: String,
    pub(super) comment_policy: String,
    pub(super) footer_links: Vec<(String, Vec<String>)>,
    pub(super) legal: String,
}

impl Template {
    pub(crate) fn new(words: &Words, rng: &mut Rng, name: &str) -> Template {
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
pub(crate) struct PageContext<'a> {
    pub(crate) headlines: &'a [String],
    pub(crate) teasers: &'a [(String, String)],
    pub(crate) page_no: usize,
}

pub(super) fn links(h: &mut String, items: impl Iterator<Item = String>, class: &str) {
    let _ = write!(h, "<ul class=\"{class}\">");
    for (i, t) in items.enumerate() {
        let _ = write!(h, "<li><a href=\"/{class}/{i}-{}\">{t}</a></li>", t.len());
    }
    h.push_str("</ul>");
}

pub(super) fn pick<'a>(rng: &mut Rng, from: &'a [String], n: usize) -> Vec<&'a String> {
    (0..n).map(|_| &from[rng.below(from.len())]).collect()
}

/// Site 0: a classic news layout, the article between a long header and a long sidebar.
pub(crate) fn site_a(
    t: &Template,
    ctx: &PageContext,
    rng: &mut Rng,
    title: &str,
    article: &str,
) -> String {
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
pub(crate) fn site_b(
    t: &Template,
    ctx: &PageContext,
    rng: &mut Rng,
    title: &str,
    article: &str,
) -> String {
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
