//! Inputs shared by the benches: a generated page in the style of a real site, and a small
//! deterministic PRNG (no `rand` crate). Each bench uses a subset, hence the allow below.
#![allow(dead_code)]

use std::fmt::Write;

/// Size the realistic page is grown to (about a typical article page's HTML).
pub const PAGE_BYTES: usize = 15 * 1024;

/// xorshift64*: deterministic, fast, good enough to spread keys and pick inputs.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

const WORDS: &[&str] = &[
    "crawler",
    "politeness",
    "the",
    "a",
    "of",
    "server",
    "archive",
    "request",
    "page",
    "link",
    "and",
    "response",
    "with",
    "latency",
    "is",
    "to",
    "frontier",
    "host",
    "in",
    "budget",
];

fn sentence(rng: &mut Rng, out: &mut String, words: usize) {
    for i in 0..words {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
    }
    out.push('.');
}

/// A ~15 KB page in the style of a news/blog site: head with meta/link/script/style, a nav, an
/// article of paragraphs with inline links (relative, root-relative, absolute, with query and
/// entities), a footer; mixed-case tags and quoted, single-quoted and unquoted attributes.
pub fn realistic_page() -> Vec<u8> {
    page_from_seed(0x5eed)
}

/// A page like [`realistic_page`] whose article text (and so its length, links and hashes)
/// comes from `seed`: many distinct pages of one site, for benches that need a crawl's mix.
pub fn page_from_seed(seed: u64) -> Vec<u8> {
    let mut rng = Rng::new(seed);
    let mut s = String::with_capacity(PAGE_BYTES + 2048);
    s.push_str(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<HEAD>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta property=\"og:title\" content=\"Crawling at scale &amp; politely\">\n\
         <title>Crawling at scale &lt;2024&gt; | Example News</title>\n\
         <link rel=\"stylesheet\" href=\"/static/css/main.3f9a1c.css\">\n\
         <link rel=canonical href=https://www.example.com/news/2024/crawling-at-scale>\n\
         <LINK REL=\"icon\" HREF='/favicon.ico' type=\"image/x-icon\">\n\
         <link rel=\"alternate\" type=\"application/rss+xml\" href=\"/feeds/news.xml\">\n\
         <script async src=\"https://cdn.example.net/analytics.js\"></script>\n\
         <script>\n  window.dataLayer = window.dataLayer || [];\n\
           function gtag(){dataLayer.push(arguments);}\n\
           if (a < b && c > d) { document.write('<a href=\"/not-a-link\">x</a>'); }\n\
           gtag('config', 'UA-000000-1');\n</script>\n\
         <style>\n  body { font: 16px/1.5 sans-serif; }\n  .nav a:hover { color: #c00; }\n\
           .card > .title { margin: 0 0 .5em; }\n</style>\n</HEAD>\n<Body class=\"article\">\n",
    );
    s.push_str("<nav class=\"nav\" id=main-nav>\n<ul>\n");
    let sections = [
        "world", "business", "tech", "science", "health", "sport", "culture", "opinion",
    ];
    for sec in sections {
        let _ = writeln!(s, "  <li><a href=\"/{sec}/\" class=nav-link>{sec}</a></li>");
    }
    s.push_str("  <li><A HREF='/search?q=&amp;lang=en'>Search</A></li>\n</ul>\n</nav>\n");
    s.push_str("<main>\n<article>\n<h1>Crawling at scale</h1>\n");
    let mut n = 0u32;
    // Paragraphs with inline links until the article reaches its share of the page.
    while s.len() < PAGE_BYTES - 1800 {
        s.push_str("<p>");
        for _ in 0..3 {
            let words = 8 + rng.below(10) as usize;
            sentence(&mut rng, &mut s, words);
            s.push(' ');
            n += 1;
            match n % 5 {
                0 => {
                    let _ = write!(s, "<a href=\"related-{n}.html\">related story {n}</a> ");
                }
                1 => {
                    let _ = write!(
                        s,
                        "<a href=\"/news/2024/{n:04}/story?utm_source=home&amp;ref=p{n}#c\" \
                         title='Story {n}'>story</a> "
                    );
                }
                2 => {
                    let _ = write!(
                        s,
                        "<a class=ext href=https://other{}.example.org/page/{n} rel=nofollow>\
                         source</a> ",
                        n % 7
                    );
                }
                3 => {
                    let _ = write!(s, "<em>emphasis</em> <img src=\"/img/{n}.jpg\" alt=\"\"> ");
                }
                _ => {
                    let _ = write!(s, "<A Href='../archive/{n}/'>archive</A> ");
                }
            }
        }
        s.push_str("</p>\n");
    }
    s.push_str("</article>\n<!-- related: <a href=\"/hidden\">hidden</a> -->\n</main>\n");
    s.push_str("<footer>\n<p>&copy; 2024 Example News.</p>\n<ul class=\"footer-links\">\n");
    for (i, f) in [
        "about",
        "contact",
        "privacy",
        "terms",
        "careers",
        "advertise",
    ]
    .iter()
    .enumerate()
    {
        let _ = writeln!(s, "  <li><a href=\"/{f}\" data-i={i}>{f}</a></li>");
    }
    s.push_str(
        "</ul>\n<iframe src=\"https://www.example.com/embed/newsletter\" width=300></iframe>\n\
         </footer>\n<script src=\"/static/js/app.91bc.js\" defer></script>\n</Body>\n</html>\n",
    );
    s.into_bytes()
}

/// A 200 response head as a server would send it; `framing` holds the framing (and coding)
/// header lines, each ending in CRLF.
pub fn response_head(framing: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 200 OK\r\nDate: Tue, 02 Apr 2024 10:00:00 GMT\r\nServer: nginx\r\n\
         Content-Type: text/html; charset=utf-8\r\n{framing}\
         Cache-Control: max-age=60\r\nVary: Accept-Encoding\r\n\r\n"
    )
    .into_bytes()
}
