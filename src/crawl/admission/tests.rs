//! Admission's verdicts on their own (the simulated crawls in `crawl::tests` show them
//! through the whole crawl).

use std::time::Instant;

use super::*;
use crate::crawl::splitter::owner;
use crate::crawl::url_filter::Scope;
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
        true,
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
        false,
    );
    let base = url("http://a.test/dir/page");
    let mut links = Links::new();
    crate::links::scan(
        br#"<a href="/seen">s</a><a href="new">n</a><img src="/i.png"><a href="http://[">b</a><a href="/late">l</a>"#,
        &mut links,
    );
    assert!(a.first_seen(&url("http://a.test/seen")));
    a.clear_outlinks();
    let mut keys = LinkKeys::new(&base);
    let got: Vec<Link> = links
        .iter()
        .enumerate()
        .map(|(i, (kind, href))| a.link(&mut keys, kind, href, &base, i == 4))
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
    .map(|u| url_key(&url(u)))
    .collect();
    expected.sort_unstable();
    assert_eq!(a.outlinks(), Some(&expected[..]), "an image is no outlink");
    a.clear_outlinks();
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
        .map(|(kind, href)| a.link(&mut keys, kind, href, &base, false))
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
