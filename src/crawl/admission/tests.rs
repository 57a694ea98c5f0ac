//! Admission's verdicts on their own (the simulated crawls in `crawl::tests` show them
//! through the whole crawl).

use std::time::Instant;

use super::*;
use crate::crawl::splitter::owner;
use crate::crawl::url_filter::Scope;
use crate::http::ResponseDecoder;
use crate::links::Links;

fn url(s: &str) -> Url {
    Url::parse(s).expect("test URL")
}

/// Admission within the host a.test, page requisites on.
fn admission() -> Admission {
    let mut a = Admission::new(
        FilterConfig {
            scope: Scope::Host,
            max_depth: Some(3),
            ..FilterConfig::default()
        },
        LinkPolicy::default(),
    );
    a.add_to_scope(&url("http://a.test/"));
    a
}

#[test]
fn a_found_url_passes_the_filter_then_the_url_seen_set() {
    let mut a = admission();
    let u = url("http://a.test/x");
    assert_eq!(a.consider(&u, 1, Hop::Link), Verdict::New);
    assert_eq!(a.consider(&u, 1, Hop::Link), Verdict::Seen);
    assert!(a.is_seen(&u));
    let out = url("http://b.test/");
    assert_eq!(a.consider(&out, 1, Hop::Link), Verdict::Refused);
    assert!(!a.is_seen(&out), "a refused URL is not remembered");
    // An embed is fetched out of the scope, the other filters holding.
    assert_eq!(a.consider(&out, 1, Hop::Embed), Verdict::New);
    assert_eq!(
        a.consider(&url("http://a.test/deep"), 9, Hop::Link),
        Verdict::Refused
    );
    assert!(a.passes_embed(&url("http://c.test/sitemap.xml")));
    assert_eq!(a.seen_len(), 2);
    assert!(a.rejections().iter().map(|(_, n)| n).sum::<u64>() >= 2);
}

#[test]
fn an_unpartitioned_crawl_keeps_everything_and_encodes_what_it_admits() {
    let mut a = admission();
    let entry = Entry::new(url("http://a.test/x"), 1, None, 0, Hop::Link);
    let bytes = a.encode(&entry).to_vec();
    let mut input = &bytes[..];
    let back = Entry::decode(&mut input).expect("decodes");
    assert_eq!(back.url, entry.url);
    assert!(a.owns(&entry.url));
    assert_eq!(a.owner_of(&entry.url), 0);
    assert_eq!(a.route(&entry.url, Instant::now()), Route::Here);
    assert!(!a.has_outgoing());
}

#[test]
fn another_partition_s_host_is_forwarded_in_a_batch() {
    let mut a = admission();
    a.partition(SplitterConfig::new(2, 0));
    let theirs = (0..100)
        .map(|i| url(&format!("http://h{i}.a.test/")))
        .find(|u| owner(u.host_str().unwrap(), 2) == 1)
        .expect("some host is partition 1's");
    assert!(!a.owns(&theirs));
    assert_eq!(a.owner_of(&theirs), 1);
    let entry = Entry::new(theirs.clone(), 1, None, 0, Hop::Link);
    let bytes = a.encode(&entry).to_vec();
    let now = Instant::now();
    assert_eq!(a.route(&theirs, now), Route::Forwarded);
    assert!(a.has_outgoing());
    let batch = a.poll_batch(now, true).expect("flushed");
    assert_eq!(batch.entries().collect::<Vec<_>>(), [&bytes[..]]);
    // A resume sends it again as it was journaled.
    a.forward_again(&bytes, &theirs, now);
    let again = a.poll_batch(now, true).expect("flushed");
    assert_eq!(again.entries().collect::<Vec<_>>(), [&bytes[..]]);
}

#[test]
fn a_page_s_links_are_keyed_capped_and_kept_as_outlinks() {
    let mut a = Admission::new(
        FilterConfig {
            scope: Scope::Any,
            ..FilterConfig::default()
        },
        LinkPolicy {
            page_requisites: false,
            ..LinkPolicy::default()
        },
    );
    let base = url("http://a.test/dir/page");
    let mut links = Links::new();
    crate::links::scan(
        br#"<a href="/seen">s</a><a href="new">n</a><img src="/i.png"><a href="http://[">b</a><a href="/late">l</a>"#,
        &mut links,
    );
    assert!(a.first_seen(&url("http://a.test/seen")));
    a.begin_page(Directives::default());
    let mut keys = LinkKeys::new(&base);
    let got: Vec<Link> = links
        .iter()
        .enumerate()
        .map(|(i, (kind, href))| a.link(&mut keys, (kind, href, false), &base, i == 4))
        .collect();
    assert_eq!(
        got,
        [
            Link::Seen,
            Link::Found(url("http://a.test/dir/new"), Hop::Link),
            Link::Ignored,
            Link::Bad,
            Link::OverCap,
        ]
    );
    let mut expected: Vec<u64> = [
        "http://a.test/seen",
        "http://a.test/dir/new",
        "http://a.test/late",
    ]
    .iter()
    .map(|u| a.key(&url(u)))
    .collect();
    expected.sort_unstable();
    assert_eq!(a.outlinks(), Some(&expected[..]), "an image is no outlink");
    a.begin_page(Directives::default());
    assert_eq!(a.outlinks(), None);
}

#[test]
fn with_page_requisites_an_image_is_an_embed() {
    let mut a = admission();
    let base = url("http://a.test/");
    let mut links = Links::new();
    crate::links::scan(
        br#"<img src="/i.png"><link rel=stylesheet href="/s.css">"#,
        &mut links,
    );
    let mut keys = LinkKeys::new(&base);
    let got: Vec<Link> = links
        .iter()
        .map(|(kind, href)| a.link(&mut keys, (kind, href, false), &base, false))
        .collect();
    assert_eq!(
        got,
        [
            Link::Found(url("http://a.test/i.png"), Hop::Embed),
            Link::Found(url("http://a.test/s.css"), Hop::Embed),
        ]
    );
    assert_eq!(a.outlinks(), None, "requisites are no outlinks");
}

#[test]
fn each_host_s_sitemaps_bring_a_bounded_share() {
    use crate::discovery::sitemap::MAX_SITEMAPS_PER_HOST;
    let mut a = admission();
    for _ in 0..MAX_SITEMAPS_PER_HOST {
        assert!(a.take_sitemap_file("a.test"));
    }
    assert!(!a.take_sitemap_file("a.test"));
    assert!(a.take_sitemap_file("b.test"), "another host has its own");
    assert!(
        a.take_sitemap_url("a.test"),
        "files and URLs are counted apart"
    );
}

/// The links of `html` on `http://a.test/`, with what admission made of each.
fn verdicts(a: &mut Admission, head: Option<&ResponseHead>, html: &str) -> Vec<Link> {
    let base = url("http://a.test/");
    let mut links = Links::new();
    crate::links::scan(html.as_bytes(), &mut links);
    let d = a.directives(head, Some(&links));
    a.begin_page(d);
    let mut keys = LinkKeys::new(&base);
    links
        .iter_rel()
        .map(|l| a.link(&mut keys, l, &base, false))
        .collect()
}

fn head(headers: &str) -> ResponseHead {
    let mut d = ResponseDecoder::new(crate::http::Limits::default());
    d.reset(false);
    d.process(format!("HTTP/1.1 200 OK\r\n{headers}Content-Length: 0\r\n\r\n").as_bytes())
        .unwrap();
    d.head().unwrap().clone()
}

const PAGE: &str = r#"<a href="/next">n</a><img src="/i.png"><a rel="nofollow" href="/ad">ad</a>"#;

#[test]
fn a_nofollow_page_gives_only_its_requisites() {
    let mut a = admission();
    let meta = format!(r#"<meta name="robots" content="noindex, nofollow">{PAGE}"#);
    let embed = Link::Found(url("http://a.test/i.png"), Hop::Embed);
    assert_eq!(
        verdicts(&mut a, None, &meta),
        [Link::NoFollow, embed.clone(), Link::NoFollow]
    );
    // The header alone says so too, for us; not when it names another crawler.
    let mut a = admission();
    let h = head("X-Robots-Tag: spinneret: nofollow\r\n");
    assert!(a.directives(Some(&h), None).nofollow);
    assert_eq!(
        verdicts(&mut a, Some(&h), PAGE),
        [Link::NoFollow, embed.clone(), Link::NoFollow]
    );
    let mut a = admission();
    let h = head("X-Robots-Tag: otherbot: none\r\nX-Robots-Tag: noindex\r\n");
    let d = a.directives(Some(&h), None);
    assert!(d.noindex && !d.nofollow, "several headers add up: {d:?}");
    assert_eq!(
        verdicts(&mut a, Some(&h), PAGE),
        [
            Link::Found(url("http://a.test/next"), Hop::Link),
            embed,
            Link::NoFollow
        ]
    );
}

#[test]
fn rel_nofollow_is_followed_on_request_and_everything_when_directives_are_ignored() {
    let policy = |follow_nofollow_links, robots_directives| {
        let mut a = Admission::new(
            FilterConfig::default(),
            LinkPolicy {
                follow_nofollow_links,
                robots_directives,
                ..LinkPolicy::default()
            },
        );
        a.add_to_scope(&url("http://a.test/"));
        a
    };
    let found = |p: &str| Link::Found(url(&format!("http://a.test{p}")), Hop::Link);
    let embed = Link::Found(url("http://a.test/i.png"), Hop::Embed);
    assert_eq!(
        verdicts(&mut policy(true, true), None, PAGE),
        [found("/next"), embed.clone(), found("/ad")]
    );
    let meta = format!(r#"<meta name="robots" content="none">{PAGE}"#);
    let mut a = policy(false, false);
    let h = head("X-Robots-Tag: none\r\n");
    assert_eq!(a.directives(Some(&h), None), Directives::default());
    assert_eq!(
        verdicts(&mut a, Some(&h), &meta),
        [found("/next"), embed, found("/ad")]
    );
}

#[test]
fn keys_are_canonical_unless_turned_off() {
    let mut a = admission();
    assert!(a.first_seen(&url("http://a.test/p.html?utm_source=x")));
    assert!(a.is_seen(&url("http://a.test/p.html")));
    assert!(!a.first_seen(&url("http://a.test/p.html;jsessionid=1A2B")));
    let mut off = Admission::new(
        FilterConfig::default(),
        LinkPolicy {
            canon: CanonConfig {
                on: false,
                strip: Vec::new(),
            },
            ..LinkPolicy::default()
        },
    );
    assert!(off.first_seen(&url("http://a.test/p.html?utm_source=x")));
    assert!(off.first_seen(&url("http://a.test/p.html")));
}
