//! What the changing web says at a given time: which resource a path names, its version and
//! validators at t, and its body. Pure functions of the config, the schedule, the port and
//! the start's wall-clock second; the server only adds sockets and the log.

use std::fmt::Write;

use super::{FreshConfig, Schedule, NEWS_ITEMS};
use crate::conditional::strong_etag;
use crate::http_date;
use crate::testweb::words::WORDS;
use crate::testweb::Rng;

/// Approximate size of a `/p/{i}` body.
const PAGE_BYTES: usize = 3 * 1024;
/// Approximate size of an article body.
const ARTICLE_BYTES: usize = 1024;
/// Salt of the articles' text draws, apart from the pages'.
const ARTICLE_SALT: u64 = 0xa271_c1e5_0000_0002;

pub(crate) const ROBOTS_TXT: &str = "User-agent: *\nDisallow:\n";
const NOT_FOUND_BODY: &str = "<!DOCTYPE html>\n<html><head><title>Not found</title></head>\
<body><p>Nothing here.</p></body></html>\n";
const HTML: &str = "text/html; charset=utf-8";

/// A resource of the web.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Route {
    Index,
    Page(usize),
    News,
    Feed,
    Article(u64),
    Robots,
}

/// A decimal number written canonically (no sign, no leading zero), so one resource has one
/// path.
fn number(s: &str) -> Option<u64> {
    let canonical = !s.is_empty() && (s == "0" || !s.starts_with('0')) && s.len() <= 19;
    (canonical && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

/// The resource `path` names (exactly: a query makes it another, missing, resource).
pub(crate) fn route(path: &str, pages: usize) -> Option<Route> {
    match path {
        "/" => Some(Route::Index),
        "/news/" => Some(Route::News),
        "/news/feed.xml" => Some(Route::Feed),
        "/robots.txt" => Some(Route::Robots),
        _ => {
            if let Some(n) = path.strip_prefix("/p/") {
                let i = number(n)?;
                (i < pages as u64).then_some(Route::Page(i as usize))
            } else {
                path.strip_prefix("/news/a/")
                    .and_then(number)
                    .map(Route::Article)
            }
        }
    }
}

/// The validators of a resource's current version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Validators {
    pub(crate) etag: String,
    /// `Last-Modified`, Unix seconds.
    pub(crate) last_modified: i64,
    /// Whether `If-Modified-Since` can be trusted: the previous version's date is an earlier
    /// second (see the module doc of `freshweb`).
    pub(crate) date_trusted: bool,
}

/// A resource as it is at some t.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct State {
    pub(crate) route: Route,
    /// Logged as the version served: a page's changes so far, the newest article's number
    /// for the news and feed, 0 for the rest.
    pub(crate) version: u64,
    pub(crate) validators: Validators,
}

/// What the pages need to know about the running server.
pub(crate) struct Site<'a> {
    pub(crate) cfg: &'a FreshConfig,
    pub(crate) schedule: &'a Schedule,
    pub(crate) port: u16,
    /// The wall-clock second at or just after t = 0: dates are this plus whole seconds.
    pub(crate) date_base: i64,
}

impl Site<'_> {
    /// The date of something that happened at `t`: rounded up to a whole second.
    fn date(&self, t: f64) -> i64 {
        self.date_base + t.max(0.0).ceil() as i64
    }

    fn etag(&self, kind: &str, id: u64, version: u64, dated: bool) -> String {
        let base = if dated { self.date_base } else { 0 };
        strong_etag(&[
            b"freshweb",
            &self.cfg.seed.to_le_bytes(),
            &(self.cfg.pages as u64).to_le_bytes(),
            kind.as_bytes(),
            &id.to_le_bytes(),
            &version.to_le_bytes(),
            &base.to_le_bytes(),
        ])
    }

    /// `path` at `t`: None when there is no such resource (yet).
    pub(crate) fn state(&self, path: &str, t: f64) -> Option<State> {
        let route = route(path, self.cfg.pages)?;
        // (version, its time, the previous version's time, ETag kind and id, dated body)
        let (version, at, before, kind, id, dated) = match route {
            Route::Index => (0, 0.0, None, "index", 0, false),
            Route::Robots => (0, 0.0, None, "robots", 0, false),
            Route::Page(i) => {
                let v = self.schedule.version_at(i, t);
                let at = self.schedule.version_time(i, v).unwrap_or(0.0);
                let before = v
                    .checked_sub(1)
                    .and_then(|p| self.schedule.version_time(i, p));
                (v as u64, at, before, "page", i as u64, false)
            }
            Route::News | Route::Feed => {
                let newest = self.schedule.articles_at(t).checked_sub(1)?;
                let at = self.schedule.article_time(newest);
                let before = newest.checked_sub(1).map(|p| self.schedule.article_time(p));
                let kind = if route == Route::News { "news" } else { "feed" };
                (newest, at, before, kind, 0, true)
            }
            Route::Article(n) => {
                if self.schedule.articles_at(t) <= n {
                    return None;
                }
                (0, self.schedule.article_time(n), None, "article", n, true)
            }
        };
        let last_modified = self.date(at);
        Some(State {
            route,
            version,
            validators: Validators {
                etag: self.etag(kind, id, version, dated),
                last_modified,
                date_trusted: before.is_none_or(|b| self.date(b) < last_modified),
            },
        })
    }

    /// The content type and body of `state`.
    pub(crate) fn body(&self, state: &State) -> (&'static str, Vec<u8>) {
        match state.route {
            Route::Index => (HTML, self.index().into_bytes()),
            Route::Robots => ("text/plain", ROBOTS_TXT.as_bytes().to_vec()),
            Route::Page(i) => (HTML, self.page(i, state.version).into_bytes()),
            Route::News => (HTML, self.news(state.version).into_bytes()),
            Route::Feed => ("application/rss+xml", self.feed(state.version).into_bytes()),
            Route::Article(n) => (HTML, self.article(n).into_bytes()),
        }
    }

    fn index(&self) -> String {
        let mut s = head("freshweb", "");
        s.push_str("<h1>A web that changes</h1>\n<p><a href=\"/news/\">News</a></p>\n<ul>\n");
        for i in 0..self.cfg.pages {
            // Writing into a String cannot fail.
            let _ = writeln!(s, "<li><a href=\"/p/{i}\">Page {i}</a></li>");
        }
        s.push_str("</ul>\n</body>\n</html>\n");
        s
    }

    fn page(&self, i: usize, version: u64) -> String {
        let pages = self.cfg.pages;
        let mut s = head(
            &format!("Page {i}, version {version}"),
            &format!("<meta name=\"fresh-version\" content=\"{version}\">\n"),
        );
        let _ = write!(
            s,
            "<h1>Page {i}</h1>\n<p class=\"version\">Version {version}</p>\n<nav><a href=\"/\">\
             Home</a> <a href=\"/p/{}\">Next</a> <a href=\"/p/{}\">Elsewhere</a></nav>\n",
            (i + 1) % pages,
            (i.wrapping_mul(7) + 3) % pages
        );
        text(
            &mut s,
            Rng::new(self.cfg.seed, i, version as usize),
            PAGE_BYTES,
        );
        s.push_str("</body>\n</html>\n");
        s
    }

    /// The newest `NEWS_ITEMS` article numbers, newest first.
    fn newest(newest: u64) -> impl Iterator<Item = u64> {
        (newest.saturating_sub(NEWS_ITEMS - 1)..=newest).rev()
    }

    fn headline(&self, n: u64) -> String {
        let mut rng = Rng::new(self.cfg.seed ^ ARTICLE_SALT, n as usize, 1);
        let a = WORDS[rng.below(WORDS.len())];
        let b = WORDS[rng.below(WORDS.len())];
        format!("Article {n}: {a} {b}")
    }

    fn news(&self, newest: u64) -> String {
        let mut s = head(
            "freshweb news",
            "<link rel=\"alternate\" type=\"application/rss+xml\" href=\"/news/feed.xml\">\n",
        );
        s.push_str("<h1>News</h1>\n<p><a href=\"/\">Home</a></p>\n<ul>\n");
        for n in Self::newest(newest) {
            let date = http_date::format(self.date(self.schedule.article_time(n)));
            let _ = writeln!(
                s,
                "<li><a href=\"/news/a/{n}\">{}</a> <time>{date}</time></li>",
                self.headline(n)
            );
        }
        s.push_str("</ul>\n</body>\n</html>\n");
        s
    }

    fn feed(&self, newest: u64) -> String {
        let origin = format!("http://127.0.0.1:{}", self.port);
        let built = http_date::format(self.date(self.schedule.article_time(newest)));
        let mut s = format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<rss version=\"2.0\">\n<channel>\n\
             <title>freshweb news</title>\n<link>{origin}/news/</link>\n\
             <description>A new article every {} s</description>\n\
             <lastBuildDate>{built}</lastBuildDate>\n",
            self.cfg.article_secs
        );
        for n in Self::newest(newest) {
            let date = http_date::format(self.date(self.schedule.article_time(n)));
            let _ = writeln!(
                s,
                "<item><title>{}</title><link>{origin}/news/a/{n}</link>\
                 <guid>{origin}/news/a/{n}</guid><pubDate>{date}</pubDate></item>",
                self.headline(n)
            );
        }
        s.push_str("</channel>\n</rss>\n");
        s
    }

    fn article(&self, n: u64) -> String {
        let date = http_date::format(self.date(self.schedule.article_time(n)));
        let title = self.headline(n);
        let mut s = head(&title, "");
        let _ = write!(
            s,
            "<h1>{title}</h1>\n<p>Published <time>{date}</time>. <a href=\"/news/\">News</a> \
             <a href=\"/\">Home</a></p>\n"
        );
        text(
            &mut s,
            Rng::new(self.cfg.seed ^ ARTICLE_SALT, n as usize, 0),
            ARTICLE_BYTES,
        );
        s.push_str("</body>\n</html>\n");
        s
    }
}

pub(crate) fn not_found_body() -> &'static [u8] {
    NOT_FOUND_BODY.as_bytes()
}

fn head(title: &str, extra: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>{title}</title>\n{extra}</head>\n<body>\n"
    )
}

/// Paragraphs of words from `rng` until `s` has grown by about `bytes`.
fn text(s: &mut String, mut rng: Rng, bytes: usize) {
    let end = s.len() + bytes;
    // Each turn adds at least one word.
    while s.len() < end {
        s.push_str("<p>");
        for w in 0..40 + rng.below(40) {
            if w > 0 {
                s.push(' ');
            }
            s.push_str(WORDS[rng.below(WORDS.len())]);
        }
        s.push_str(".</p>\n");
    }
}
