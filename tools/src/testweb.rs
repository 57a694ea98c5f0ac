//! A deterministic synthetic web for crawl benchmarks and whole-crawl tests: `hosts` virtual
//! hosts `h0000.test`, `h0001.test`, … each on its own loopback address ([`host_ip`]), each
//! with an index `/`, `pages` HTML pages `/p{j}.html` of about `page_kb` KB, a stylesheet, two
//! query-string list pages, robots.txt and a few `/private/` pages that robots.txt disallows.
//!
//! [`TestWeb::generate`] builds every body in memory from `seed` (splitmix64 over a word list),
//! with the origin (scheme, host, port) of absolute links left as a gap to fill;
//! [`WebServer::start`] (in `server`) binds the listeners, fills the origins in and serves the
//! pre-rendered responses from one `mio` loop; `files` writes them out for a static server
//! (nginx, over HTTP or HTTPS). [`TestWeb::expected_urls`] is the exact set a full polite crawl
//! must fetch. Names for the hosts are served by `dns_server` from [`TestWeb::dns_records`];
//! `load` measures the server.
//!
//! Every page, list page, private page and stylesheet is served with validators: an `ETag`
//! ([`etag`]: a hash of the host, the target and every generator setting, so the same flags
//! give the same tags on every run and port) and one fixed `Last-Modified` ([`LAST_MODIFIED`]).
//! The web never changes, so a conditional GET carrying them is answered `304 Not Modified`.
//!
//! [`Shape`] decides how pages link: hosts as clusters a crawl finds whole after a few fetches,
//! or (`Linked`) pages linking mostly to random pages of other hosts, as on the real web.
//!
//! Pages are built to exercise a link scanner the way real HTML does: a head with meta, a
//! stylesheet `link` and a `script` whose body holds a decoy `<a href="/not-a-link">` (a 404: it
//! must not be followed), a nav menu, text with links in relative, root-relative and absolute
//! form, with and without `#fragments`, upper-case tags, single, double and unquoted attribute
//! values, and `&amp;` in query links.

pub mod files;
pub mod load;
mod server;
pub(crate) mod words;

use std::collections::HashMap;
use std::net::Ipv4Addr;

pub use server::WebServer;

use crate::dns_server::Record;
use words::WORDS;

/// Most hosts: `host_ip` has 254 × 256 addresses in 127.1.0.0/16.
pub const MAX_HOSTS: usize = 254 * 256;
/// Most pages per host (bounds memory: pages × page_kb per host).
pub const MAX_PAGES: usize = 100_000;
/// Largest page size, KB.
pub const MAX_PAGE_KB: usize = 1024;
/// `/private/p{k}.html` pages per host (robots-disallowed, linked from the index and some pages).
pub const PRIVATE_PAGES: usize = 2;
/// `/list.html?sort=name&page={k}` pages per host.
pub const LIST_PAGES: usize = 2;
/// The path in every page's script body that must not be followed (served as 404).
pub const DECOY_PATH: &str = "/not-a-link";
/// robots.txt of every host.
pub const ROBOTS_TXT: &str = "User-agent: *\nDisallow: /private/\n";

/// `Last-Modified` of every resource with validators (Unix seconds): the web never changes,
/// so one fixed date in the past, 2024-01-01T00:00:00Z.
pub const LAST_MODIFIED: i64 = 1_704_067_200;

/// The `ETag` of `target` on host `host` (quoted, strong): a hash of what its body follows
/// from, the host, the target and every `cfg` setting. The port is left out (it changes the
/// absolute links' bytes but is in every URL anyway), so a restart with the same flags
/// serves the same tags.
pub fn etag(cfg: &WebConfig, host: usize, target: &str) -> String {
    let num = |n: usize| (n as u64).to_le_bytes();
    crate::conditional::strong_etag(&[
        b"testweb",
        &num(host),
        target.as_bytes(),
        &cfg.seed.to_le_bytes(),
        &num(cfg.hosts),
        &num(cfg.pages),
        &num(cfg.page_kb),
        &num(cfg.same_host_links),
        &num(cfg.cross_host_links),
        cfg.shape.name().as_bytes(),
    ])
}

const STYLE_CSS: &str = "body { font-family: sans-serif; margin: 0 auto; max-width: 50em; }\n\
nav a { margin-right: 1em; }\nfooter { color: #666; font-size: small; }\n\
p { line-height: 1.5; }\nh1, h2 { font-weight: normal; }\n";

/// How pages link, which decides when a crawl learns of each host's URLs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Shape {
    /// Each host a cluster (the shape of every figure measured before `Linked` existed): a
    /// page links to about `same_host_links` pages of its own host, and its nav to the host's
    /// list pages, which name every page; so a crawl knows a host's URLs after its first few
    /// fetches and then works through the host on one connection. `cross_host_links` per page
    /// lead elsewhere.
    #[default]
    Clustered,
    /// Pages link mostly to random pages of other hosts, as real pages do: a page's own-host
    /// links are its nav (home, first page) and the next page (the chain that keeps every
    /// page reachable from its host's index; the last page links the list pages), and
    /// `cross_host_links` go to random pages of the other hosts. A host's URLs then reach a
    /// crawl one or two at a time, from anywhere in the web, over the whole crawl.
    Linked,
}

impl Shape {
    /// The name on command lines.
    pub fn name(self) -> &'static str {
        match self {
            Shape::Clustered => "clustered",
            Shape::Linked => "linked",
        }
    }

    /// `clustered` or `linked`.
    pub fn parse(s: &str) -> Option<Shape> {
        [Shape::Clustered, Shape::Linked]
            .into_iter()
            .find(|sh| sh.name() == s)
    }
}

/// The scheme absolute links (and the expected URLs) are written with: the bodies are the
/// same bytes otherwise, so one web can be served by our server (HTTP) or by nginx over TLS.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Scheme {
    #[default]
    Http,
    Https,
}

impl Scheme {
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }
}

/// Links from each `Linked` page to random pages of other hosts: most of its links, as on
/// the real web, and enough that most pages are found from other hosts before their own
/// host's chain reaches them.
pub const LINKED_CROSS_HOST_LINKS: usize = 12;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebConfig {
    pub hosts: usize,
    /// `/p{j}.html` pages per host.
    pub pages: usize,
    /// Approximate size of each page body, KB.
    pub page_kb: usize,
    /// Links from each page to pages of its own host (approximate).
    pub same_host_links: usize,
    /// Links from each page to pages of other hosts.
    pub cross_host_links: usize,
    /// Everything (text, link targets, link forms) follows from this.
    pub seed: u64,
    pub shape: Shape,
}

impl WebConfig {
    /// The default web of `shape`: the link counts that make the shape (see [`Shape`]).
    pub fn of_shape(shape: Shape) -> WebConfig {
        match shape {
            Shape::Clustered => WebConfig::default(),
            Shape::Linked => WebConfig {
                same_host_links: FIXED_SAME_HOST_LINKS,
                cross_host_links: LINKED_CROSS_HOST_LINKS,
                shape,
                ..WebConfig::default()
            },
        }
    }
}

impl Default for WebConfig {
    fn default() -> Self {
        WebConfig {
            hosts: 500,
            pages: 40,
            page_kb: 15,
            same_host_links: 20,
            cross_host_links: 3,
            seed: 0x5eed_5eed,
            shape: Shape::Clustered,
        }
    }
}

/// `h0000.test`, `h0001.test`, … (more digits from `h10000.test` on).
pub fn host_name(i: usize) -> String {
    format!("h{i:04}.test")
}

/// `host_name(i).len()`, without building it.
fn host_name_len(i: usize) -> usize {
    let digits = i.checked_ilog10().map_or(1, |d| d as usize + 1);
    1 + digits.max(4) + ".test".len()
}

/// 127.1.(i/254).(i%254+1): every host on its own loopback address, so per-IP politeness is
/// exercised. Meaningful for `i < MAX_HOSTS`.
pub fn host_ip(i: usize) -> Ipv4Addr {
    Ipv4Addr::new(127, 1, (i / 254) as u8, (i % 254 + 1) as u8)
}

/// The host index of a `Host` header value (port stripped, ASCII case-insensitive), if it is one
/// of ours: `h` + decimal digits + `.test`.
pub(crate) fn parse_host(value: &[u8]) -> Option<usize> {
    let name = match memrchr_colon(value) {
        Some(i) => &value[..i],
        None => value,
    };
    if name.len() < 7 || !name[0].eq_ignore_ascii_case(&b'h') {
        return None;
    }
    let (digits, suffix) = name[1..].split_at(name.len() - 6);
    if !suffix.eq_ignore_ascii_case(b".test") || digits.len() < 4 || digits.len() > 6 {
        return None;
    }
    let mut n = 0usize;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        n = n * 10 + usize::from(d - b'0');
    }
    // "h0001.test" and "h00001.test" are not the same name: only the canonical width routes.
    (format!("{n:04}").len() == digits.len()).then_some(n)
}

fn memrchr_colon(v: &[u8]) -> Option<usize> {
    v.iter().rposition(|&b| b == b':')
}

/// splitmix64: tiny, fast, and good enough to vary text and links (`freshweb` draws its
/// change times and text from it too).
#[derive(Clone, Debug)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64, host: usize, page: usize) -> Rng {
        let mut r = Rng(seed ^ (host as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        r.0 ^= (page as u64).wrapping_mul(0xc2b2_ae3d_27d4_eb4f);
        r.next();
        r
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform-enough in `0..n` (n > 0).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// A body with gaps where an absolute link's origin (`scheme://host:port`) goes, filled when
/// it is served (`WebServer::start`) or written out (`files`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Template {
    pub(crate) bytes: Vec<u8>,
    /// (offset into `bytes`, host index), offsets ascending: where an origin is inserted.
    pub(crate) origins: Vec<(u32, u32)>,
}

impl Template {
    fn push(&mut self, s: &str) {
        self.bytes.extend_from_slice(s.as_bytes());
    }

    fn push_origin(&mut self, host: usize) {
        self.origins.push((self.bytes.len() as u32, host as u32));
    }

    /// The body with every origin filled in.
    pub(crate) fn render(&self, scheme: Scheme, port: u16, out: &mut Vec<u8>) {
        use std::io::Write;
        let mut from = 0;
        for &(at, host) in &self.origins {
            out.extend_from_slice(&self.bytes[from..at as usize]);
            // Writing into a Vec cannot fail.
            let _ = write!(
                out,
                "{}://{}:{port}",
                scheme.as_str(),
                host_name(host as usize)
            );
            from = at as usize;
        }
        out.extend_from_slice(&self.bytes[from..]);
    }

    /// `render`'s length, for a port of `port_digits` digits.
    fn rendered_len(&self, scheme: Scheme, port_digits: usize) -> u64 {
        let fixed = scheme.as_str().len() + "://".len() + ":".len() + port_digits;
        let origins: usize = self
            .origins
            .iter()
            .map(|&(_, h)| fixed + host_name_len(h as usize))
            .sum();
        (self.bytes.len() + origins) as u64
    }
}

/// What a URL is, for the expected and disallowed sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// HTML page a crawl must fetch.
    Page,
    /// The stylesheet (a `link href`: a crawl fetches it too).
    Style,
    /// Exists, but robots.txt disallows it.
    Private,
    Robots,
}

impl Kind {
    /// Whether it is served with validators: everything but robots.txt, which a crawler
    /// fetches unconditionally.
    pub(crate) fn has_validators(self) -> bool {
        self != Kind::Robots
    }

    pub(crate) fn content_type(self) -> &'static str {
        match self {
            Kind::Page | Kind::Private => "text/html; charset=utf-8",
            Kind::Style => "text/css",
            Kind::Robots => "text/plain",
        }
    }
}

#[derive(Clone, Debug)]
pub(crate) struct Resource {
    pub(crate) host: usize,
    /// Request target: path and query, as requested on the wire.
    pub(crate) target: String,
    pub(crate) kind: Kind,
    pub(crate) body: Template,
}

/// The whole synthetic web, in memory; see the module doc.
pub struct TestWeb {
    cfg: WebConfig,
    /// Host-major, in a fixed order per host.
    pub(crate) resources: Vec<Resource>,
}

impl TestWeb {
    /// Deterministic for a given `cfg`. Sizes are clamped: hosts to `1..=MAX_HOSTS`, pages to
    /// `1..=MAX_PAGES`, page_kb to `MAX_PAGE_KB` ([`TestWeb::config`] shows the result).
    pub fn generate(cfg: &WebConfig) -> TestWeb {
        let cfg = WebConfig {
            hosts: cfg.hosts.clamp(1, MAX_HOSTS),
            pages: cfg.pages.clamp(1, MAX_PAGES),
            page_kb: cfg.page_kb.min(MAX_PAGE_KB),
            ..cfg.clone()
        };
        let per_host = cfg.pages + 3 + PRIVATE_PAGES + LIST_PAGES;
        let mut resources = Vec::with_capacity(cfg.hosts * per_host);
        for h in 0..cfg.hosts {
            let res = |target: String, kind, body| Resource {
                host: h,
                target,
                kind,
                body,
            };
            resources.push(res("/".into(), Kind::Page, index_page(&cfg, h)));
            for j in 0..cfg.pages {
                resources.push(res(page_path(j), Kind::Page, content_page(&cfg, h, j)));
            }
            for k in 0..LIST_PAGES {
                resources.push(res(list_target(k), Kind::Page, list_page(&cfg, h, k)));
            }
            resources.push(res("/style.css".into(), Kind::Style, plain(STYLE_CSS)));
            resources.push(res("/robots.txt".into(), Kind::Robots, plain(ROBOTS_TXT)));
            for k in 0..PRIVATE_PAGES {
                resources.push(res(private_path(k), Kind::Private, private_page(h, k)));
            }
        }
        TestWeb { cfg, resources }
    }

    pub fn config(&self) -> &WebConfig {
        &self.cfg
    }

    /// `http://h0000.test:PORT/` for every host.
    pub fn seeds(&self, port: u16) -> Vec<String> {
        (0..self.cfg.hosts)
            .map(|h| format!("http://{}:{port}/", host_name(h)))
            .collect()
    }

    /// Exactly the URLs a full polite crawl (robots obeyed, any scope within `.test`, no depth
    /// or page limits) fetches, sorted; robots.txt not included.
    pub fn expected_urls(&self, port: u16) -> Vec<String> {
        self.expected_urls_as(Scheme::Http, port)
    }

    /// [`TestWeb::expected_urls`] of the web served with `scheme` (see `files`).
    pub fn expected_urls_as(&self, scheme: Scheme, port: u16) -> Vec<String> {
        self.urls_of(scheme, port, |k| matches!(k, Kind::Page | Kind::Style))
    }

    /// URLs that pages link to but robots.txt disallows (they exist; they must not be fetched).
    pub fn disallowed_urls(&self, port: u16) -> Vec<String> {
        self.urls_of(Scheme::Http, port, |k| k == Kind::Private)
    }

    fn urls_of(&self, scheme: Scheme, port: u16, want: impl Fn(Kind) -> bool) -> Vec<String> {
        let scheme = scheme.as_str();
        let mut v: Vec<String> = self
            .resources
            .iter()
            .filter(|r| want(r.kind))
            .map(|r| format!("{scheme}://{}:{port}{}", host_name(r.host), r.target))
            .collect();
        v.sort_unstable();
        v
    }

    /// `host_name(i)` → A `host_ip(i)` for every host, for `dns_server::DnsServer`.
    pub fn dns_records(&self) -> HashMap<String, Vec<Record>> {
        (0..self.cfg.hosts)
            .map(|h| (host_name(h), vec![Record::A(host_ip(h))]))
            .collect()
    }

    /// Sum of every body (pages, stylesheets, robots.txt, private pages) as served on a
    /// five-digit port, heads excluded.
    pub fn total_bytes(&self) -> u64 {
        self.resources
            .iter()
            .map(|r| r.body.rendered_len(Scheme::Http, 5))
            .sum()
    }
}

fn page_path(j: usize) -> String {
    format!("/p{j}.html")
}

fn private_path(k: usize) -> String {
    format!("/private/p{k}.html")
}

/// As requested (a raw `&`); pages write it `&amp;`.
fn list_target(k: usize) -> String {
    format!("/list.html?sort=name&page={k}")
}

fn plain(s: &str) -> Template {
    Template {
        bytes: s.as_bytes().to_vec(),
        origins: Vec::new(),
    }
}

/// Where a link points.
#[derive(Clone, Copy)]
enum Target {
    Page(usize, usize),
    Index(usize),
    Private(usize, usize),
    List(usize, usize),
}

/// How a link is written relative to the page holding it (on host `from`).
#[derive(Clone, Copy)]
enum Form {
    Relative,
    RootRelative,
    Absolute,
}

/// Quoting and case of the `<a>` tag.
#[derive(Clone, Copy)]
enum Style {
    Double,
    Single,
    UpperUnquoted,
}

fn push_href(t: &mut Template, from: usize, target: Target, form: Form, fragment: Option<&str>) {
    let (host, path) = match target {
        Target::Page(h, j) => (h, page_path(j)),
        Target::Index(h) => (h, "/".to_string()),
        Target::Private(h, k) => (h, private_path(k)),
        Target::List(h, k) => (h, list_target(k).replace('&', "&amp;")),
    };
    // Other hosts can only be reached by absolute URLs.
    let form = if host != from { Form::Absolute } else { form };
    match form {
        // "./" for the index: an empty href is no link at all.
        Form::Relative if path == "/" => t.push("./"),
        Form::Relative => t.push(path.strip_prefix('/').unwrap_or(&path)),
        Form::RootRelative => t.push(&path),
        Form::Absolute => {
            t.push_origin(host);
            t.push(&path);
        }
    }
    if let Some(f) = fragment {
        t.push("#");
        t.push(f);
    }
}

fn push_link(t: &mut Template, from: usize, target: Target, rng: &mut Rng, text: &str) {
    let form = match rng.below(3) {
        0 => Form::Relative,
        1 => Form::RootRelative,
        _ => Form::Absolute,
    };
    let style = match rng.below(4) {
        0 => Style::Single,
        1 => Style::UpperUnquoted,
        _ => Style::Double,
    };
    let fragment = (rng.below(6) == 0).then_some("section-2");
    let (open, close, end) = match style {
        Style::Double => ("<a href=\"", "\">", "</a>"),
        Style::Single => ("<a class='x' href='", "'>", "</a>"),
        Style::UpperUnquoted => ("<A HREF=", ">", "</A>"),
    };
    t.push(open);
    push_href(t, from, target, form, fragment);
    t.push(close);
    t.push(text);
    t.push(end);
}

fn head(t: &mut Template, shape: Shape, title: &str, h: usize, rng: &mut Rng) {
    t.push("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    t.push("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    t.push("<meta name=\"description\" content=\"");
    t.push(title);
    t.push("\">\n<title>");
    t.push(title);
    t.push("</title>\n<link rel=stylesheet href=\"/style.css\">\n<script>\n");
    t.push("  // The menu template below is script text, not markup: never a link.\n");
    t.push("  var tpl = '<a href=\"");
    t.push(DECOY_PATH);
    t.push("\">menu</a>';\n  document.addEventListener('DOMContentLoaded', function () {});\n");
    t.push("</script>\n</head>\n<body id=\"top\">\n<nav>\n");
    push_link(t, h, Target::Index(h), rng, "Home");
    t.push("\n");
    push_link(t, h, Target::Page(h, 0), rng, "Start");
    t.push("\n");
    // A link to the list of every page would hand a crawl the whole host at once.
    if shape == Shape::Clustered {
        t.push("<a href=\"/list.html?sort=name&amp;page=0\">All pages</a>\n");
    }
    t.push("</nav>\n");
}

fn footer(t: &mut Template, h: usize, label: &str) {
    t.push("<footer>\n<p><a href=\"#top\">Back to top</a> &middot; ");
    t.push(label);
    t.push(" &middot; served by ");
    t.push(&host_name(h));
    t.push("</p>\n</footer>\n</body>\n</html>\n");
}

/// A paragraph of about `words` words, then up to three of `links` (taken from the end).
fn paragraph(t: &mut Template, from: usize, rng: &mut Rng, words: usize, links: &mut Vec<Link>) {
    t.push("<p>");
    let mut cap = true;
    for w in 0..words {
        let word = WORDS[rng.below(WORDS.len())];
        if w > 0 {
            t.push(" ");
        }
        if cap {
            let (first, rest) = word.split_at(1);
            t.push(&first.to_ascii_uppercase());
            t.push(rest);
            cap = false;
        } else {
            t.push(word);
        }
        if w + 1 < words && rng.below(12) == 0 {
            cap = rng.below(2) == 0;
            t.push(if cap { "." } else { "," });
        }
    }
    t.push(".");
    let n = links.len().min(1 + rng.below(3));
    for _ in 0..n {
        if let Some(Link(target, text)) = links.pop() {
            t.push(" See ");
            push_link(t, from, target, rng, &text);
            t.push(".");
        }
    }
    t.push("</p>\n");
}

struct Link(Target, String);

fn anchor_text(rng: &mut Rng) -> String {
    let a = WORDS[rng.below(WORDS.len())];
    let b = WORDS[rng.below(WORDS.len())];
    format!("{a} {b}")
}

/// A full HTML page on host `h`: head, nav, `heading`, text of about `page_kb` KB carrying every
/// one of `links` (the last one first), footer. `title` makes the body unique.
fn html_page(
    cfg: &WebConfig,
    h: usize,
    rng: &mut Rng,
    title: &str,
    mut links: Vec<Link>,
) -> Template {
    let target = cfg.page_kb * 1024;
    let mut t = Template {
        bytes: Vec::with_capacity(target + 2048),
        origins: Vec::with_capacity(links.len() + 4),
    };
    head(&mut t, cfg.shape, title, h, rng);
    t.push("<main>\n<h1>");
    t.push(title);
    t.push("</h1>\n");
    let mut n = 0usize;
    // Ends once the size is reached and every link is placed: each turn adds a paragraph of
    // at least 30 words and places at least one link.
    while t.bytes.len() + 200 < target || !links.is_empty() {
        if n % 5 == 4 {
            t.push("<h2>");
            t.push(&anchor_text(rng));
            t.push("</h2>\n");
        }
        let words = 30 + rng.below(90);
        paragraph(&mut t, h, rng, words, &mut links);
        n += 1;
    }
    t.push("</main>\n");
    footer(&mut t, h, title);
    t
}

/// A random page of another host (or of `h` if it is the only one), sometimes its index.
fn cross_target(cfg: &WebConfig, h: usize, rng: &mut Rng) -> Target {
    let other = if cfg.hosts > 1 {
        (h + 1 + rng.below(cfg.hosts - 1)) % cfg.hosts
    } else {
        h
    };
    if rng.below(8) == 0 {
        Target::Index(other)
    } else {
        Target::Page(other, rng.below(cfg.pages))
    }
}

/// Random same-host, cross-host and (sometimes) private links, shuffled.
fn random_links(cfg: &WebConfig, h: usize, rng: &mut Rng, same: usize) -> Vec<Link> {
    let mut links = Vec::with_capacity(same + cfg.cross_host_links + 1);
    for _ in 0..same {
        links.push(Link(
            Target::Page(h, rng.below(cfg.pages)),
            anchor_text(rng),
        ));
    }
    for _ in 0..cfg.cross_host_links {
        links.push(Link(cross_target(cfg, h, rng), anchor_text(rng)));
    }
    if rng.below(4) == 0 {
        links.push(Link(
            Target::Private(h, rng.below(PRIVATE_PAGES)),
            "members only".into(),
        ));
    }
    for i in (1..links.len()).rev() {
        links.swap(i, rng.below(i + 1));
    }
    links
}

/// Nav and the chain link account for three of the same-host links.
const FIXED_SAME_HOST_LINKS: usize = 3;

fn content_page(cfg: &WebConfig, h: usize, j: usize) -> Template {
    let mut rng = Rng::new(cfg.seed, h, j);
    let same = cfg.same_host_links.saturating_sub(FIXED_SAME_HOST_LINKS);
    let mut links = random_links(cfg, h, &mut rng, same);
    // The chain p0 → p1 → … makes every page reachable from `/`; placed first.
    if j + 1 < cfg.pages {
        links.push(Link(Target::Page(h, j + 1), "next page".into()));
    } else if cfg.shape == Shape::Linked {
        // Where a linked host's list pages are found: at the end of its chain.
        links.push(Link(Target::List(h, 0), "all pages".into()));
    }
    let title = format!("{} page {j}: {}", host_name(h), anchor_text(&mut rng));
    html_page(cfg, h, &mut rng, &title, links)
}

fn index_page(cfg: &WebConfig, h: usize) -> Template {
    let mut rng = Rng::new(cfg.seed, h, usize::MAX);
    let same = cfg.same_host_links.saturating_sub(FIXED_SAME_HOST_LINKS);
    let mut links = random_links(cfg, h, &mut rng, same);
    for k in 0..PRIVATE_PAGES {
        links.push(Link(Target::Private(h, k), format!("private {k}")));
    }
    if cfg.shape == Shape::Clustered {
        for k in 0..LIST_PAGES {
            links.push(Link(Target::List(h, k), format!("list {k}")));
        }
    }
    let title = format!("Welcome to {}", host_name(h));
    html_page(cfg, h, &mut rng, &title, links)
}

/// Links to the pages j with j % LIST_PAGES == k, relative, and to the next list page.
fn list_page(cfg: &WebConfig, h: usize, k: usize) -> Template {
    let mut rng = Rng::new(cfg.seed, h, usize::MAX - 1 - k);
    let mut links: Vec<Link> = (k..cfg.pages)
        .step_by(LIST_PAGES)
        .map(|j| Link(Target::Page(h, j), format!("page {j}")))
        .collect();
    links.push(Link(Target::List(h, (k + 1) % LIST_PAGES), "more".into()));
    let title = format!("{} list {k}", host_name(h));
    html_page(cfg, h, &mut rng, &title, links)
}

fn private_page(h: usize, k: usize) -> Template {
    let mut t = Template::default();
    t.push("<!DOCTYPE html>\n<html><head><title>Private</title></head><body>\n<p>Private page ");
    t.push(&format!("{k} of {}", host_name(h)));
    t.push(": robots.txt asks crawlers to stay out.</p>\n<a href=\"/\">home</a>\n</body></html>\n");
    t
}

#[cfg(test)]
mod tests;
