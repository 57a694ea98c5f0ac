use std::io::Write;
use std::time::{Duration, UNIX_EPOCH};

use flate2::write::GzEncoder;
use flate2::Compression;
use proptest::prelude::*;

use super::*;
use crate::discovery::{MAX_DECODED_BYTES, MAX_INPUT_BYTES};

const NS: &str = "http://www.sitemaps.org/schemas/sitemap/0.9";

fn url(s: &str) -> Url {
    Url::parse(s).unwrap()
}

fn at(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(secs)
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut z = GzEncoder::new(Vec::new(), Compression::fast());
    z.write_all(data).unwrap();
    z.finish().unwrap()
}

/// Reads everything: the items, then how it ended.
fn read_all(
    body: &[u8],
    sitemap: &SitemapRef,
) -> (Vec<SitemapItem>, Result<(), ReadError>, Skipped) {
    let mut r = SitemapReader::new(body, sitemap);
    let mut items = Vec::new();
    // Bound: MAX_ITEMS items plus the end.
    for _ in 0..=MAX_ITEMS + 1 {
        match r.next_item() {
            Ok(Some(item)) => items.push(item),
            Ok(None) => return (items, Ok(()), r.skipped()),
            Err(e) => {
                // Sticky: asked again, the same answer, and no more items.
                assert_eq!(r.next_item(), Err(e));
                return (items, Err(e), r.skipped());
            }
        }
    }
    panic!("reader did not end");
}

fn pages(body: &[u8], at_url: &str) -> (Vec<UrlEntry>, Result<(), ReadError>) {
    let (items, end, _) = read_all(body, &SitemapRef::new(url(at_url)));
    let pages = items
        .into_iter()
        .map(|i| match i {
            SitemapItem::Page(p) => p,
            other => panic!("not a page: {other:?}"),
        })
        .collect();
    (pages, end)
}

fn locs(body: &[u8], at_url: &str) -> Vec<String> {
    let (pages, end) = pages(body, at_url);
    assert_eq!(end, Ok(()), "{}", String::from_utf8_lossy(body));
    pages.into_iter().map(|p| p.url.to_string()).collect()
}

fn urlset(entries: &str) -> String {
    format!(r#"<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="{NS}">{entries}</urlset>"#)
}

#[test]
fn urlset_with_every_field() {
    let body = urlset(
        r#"
  <url>
    <loc> http://example.com/a?x=1&amp;y=2 </loc>
    <lastmod>2005-01-01</lastmod>
    <changefreq>Monthly</changefreq>
    <priority>0.8</priority>
  </url>
  <url><loc><![CDATA[http://example.com/b?x=1&y=<2>]]></loc></url>
  <url><loc>http://example.com/&#99;</loc><priority>1.5</priority><changefreq>often</changefreq></url>
  <url><loc>http://example.com/d</loc><priority>-3</priority><lastmod>last week</lastmod></url>
  <url><loc>http://example.com/e</loc><priority>high</priority></url>"#,
    );
    let (got, end) = pages(body.as_bytes(), "http://example.com/sitemap.xml");
    assert_eq!(end, Ok(()));
    let want = [
        (
            "http://example.com/a?x=1&y=2",
            Some(at(1_104_537_600)),
            Some(ChangeFreq::Monthly),
            Some(0.8),
        ),
        ("http://example.com/b?x=1&y=%3C2%3E", None, None, None),
        ("http://example.com/c", None, None, Some(1.0)),
        ("http://example.com/d", None, None, Some(0.0)),
        ("http://example.com/e", None, None, None),
    ];
    assert_eq!(got.len(), want.len());
    for (g, (loc, lastmod, freq, prio)) in got.iter().zip(want) {
        assert_eq!(g.url.as_str(), loc);
        assert_eq!(g.lastmod, lastmod, "{loc}");
        assert_eq!(g.changefreq, freq, "{loc}");
        assert_eq!(g.priority, prio, "{loc}");
    }
    assert_eq!(got[1].priority_or_default(), 0.5);
}

#[test]
fn namespaces_decide_what_is_a_sitemap_element() {
    // No namespace is accepted (crawler-commons does too); so is a prefixed sitemap namespace
    // and a legacy Google one.
    let plain = "<urlset><url><loc>http://x.org/a</loc></url></urlset>";
    assert_eq!(
        locs(plain.as_bytes(), "http://x.org/s.xml"),
        ["http://x.org/a"]
    );
    let prefixed = format!(
        r#"<s:urlset xmlns:s="{NS}"><s:url><s:loc>http://x.org/b</s:loc></s:url></s:urlset>"#
    );
    assert_eq!(
        locs(prefixed.as_bytes(), "http://x.org/s.xml"),
        ["http://x.org/b"]
    );
    let google = r#"<urlset xmlns="http://www.google.com/schemas/sitemap/0.84"><url><loc>http://x.org/c</loc></url></urlset>"#;
    assert_eq!(
        locs(google.as_bytes(), "http://x.org/s.xml"),
        ["http://x.org/c"]
    );

    // An extension's `loc` is not the page's, wherever it stands.
    let images = format!(
        r#"<urlset xmlns="{NS}" xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">
        <url><image:loc>http://x.org/img1.png</image:loc><loc>http://x.org/page</loc>
          <image:image><image:loc>http://x.org/img2.png</image:loc></image:image></url>
        <url><image:image><image:loc>http://x.org/img3.png</image:loc></image:image></url></urlset>"#
    );
    let (items, end, skipped) = read_all(
        images.as_bytes(),
        &SitemapRef::new(url("http://x.org/s.xml")),
    );
    assert_eq!(end, Ok(()));
    assert_eq!(items.len(), 1);
    assert!(matches!(&items[0], SitemapItem::Page(p) if p.url.as_str() == "http://x.org/page"));
    assert_eq!(
        skipped.bad_url, 1,
        "the <url> with only an image has no loc"
    );

    // A urlset in some other namespace is not a sitemap.
    let other =
        r#"<urlset xmlns="http://example.com/mine"><url><loc>http://x.org/a</loc></url></urlset>"#;
    assert_eq!(
        pages(other.as_bytes(), "http://x.org/s.xml").1,
        Err(ReadError::UnknownFormat)
    );
}

#[test]
fn the_first_loc_counts_and_nested_elements_are_not_fields() {
    let body = urlset(
        "<url><loc>http://x.org/1</loc><loc>http://x.org/2</loc></url>\
         <url><loc>http://x.org/3</loc><wrapper><priority>0.9</priority></wrapper></url>",
    );
    let (got, _) = pages(body.as_bytes(), "http://x.org/s.xml");
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].url.as_str(), "http://x.org/1");
    assert_eq!(got[1].priority, None);
}

#[test]
fn scope_rule() {
    let sm = url("http://example.com/catalog/sitemap.xml");
    let robots = url("http://example.com/robots.txt");
    let cases = [
        ("http://example.com/catalog/a", None, true),
        ("http://example.com/catalog/", None, true),
        ("https://example.com/catalog/a", None, true),
        ("http://example.com/catalogue", None, false),
        ("http://example.com/images/a", None, false),
        ("http://www.example.com/catalog/a", None, false),
        ("http://example.com:8080/catalog/a", None, false),
        ("ftp://example.com/catalog/a", None, false),
        // Named by robots.txt: anything on the robots.txt's origin.
        ("http://example.com/images/a", Some(&robots), true),
        ("https://example.com/images/a", Some(&robots), false),
        ("http://other.com/images/a", Some(&robots), false),
    ];
    for (entry, named, want) in cases {
        assert_eq!(
            allowed(&sm, &url(entry), named),
            want,
            "{entry} named={named:?}"
        );
    }
    // A sitemap at the root may list the whole host; one on a CDN named by the site's
    // robots.txt may list the site's pages.
    assert!(allowed(
        &url("http://a.com/s.xml"),
        &url("http://a.com/x/y"),
        None
    ));
    let cdn = url("http://cdn.net/maps/a.xml");
    let site_robots = url("https://a.com/robots.txt");
    assert!(allowed(&cdn, &url("https://a.com/x"), Some(&site_robots)));
    assert!(!allowed(&cdn, &url("https://a.com/x"), None));
    // Children of an index: the same site, any directory.
    assert!(child_allowed(
        &url("http://a.com/blog/index.xml"),
        &url("https://a.com/s1.xml"),
        None
    ));
    assert!(!child_allowed(
        &url("http://a.com/index.xml"),
        &url("http://b.com/s1.xml"),
        None
    ));
    assert!(child_allowed(
        &cdn,
        &url("https://a.com/s1.xml"),
        Some(&site_robots)
    ));
}

#[test]
fn out_of_scope_entries_are_skipped_and_counted() {
    let body = urlset(
        "<url><loc>http://x.org/blog/a</loc></url><url><loc>http://x.org/shop/b</loc></url>\
         <url><loc>http://evil.org/blog/c</loc></url><url><loc>/blog/relative</loc></url>\
         <url><loc>mailto:me@x.org</loc></url><url><loc></loc></url>",
    );
    let (items, end, skipped) = read_all(
        body.as_bytes(),
        &SitemapRef::new(url("http://x.org/blog/sitemap.xml")),
    );
    assert_eq!(end, Ok(()));
    let got: Vec<_> = items
        .iter()
        .map(|i| match i {
            SitemapItem::Page(p) => p.url.as_str(),
            _ => panic!(),
        })
        .collect();
    // A relative loc breaks the protocol but means one thing: it is resolved.
    assert_eq!(got, ["http://x.org/blog/a", "http://x.org/blog/relative"]);
    assert_eq!(
        skipped,
        Skipped {
            bad_url: 2,
            out_of_scope: 2,
            too_deep: 0
        }
    );
}

#[test]
fn robots_named_sitemaps() {
    let robots = url("https://a.com/robots.txt");
    let sm = SitemapRef::from_robots(&robots, "  https://cdn.net/a.com/sitemap.xml ").unwrap();
    assert_eq!(sm.url.as_str(), "https://cdn.net/a.com/sitemap.xml");
    assert_eq!(sm.named_by_robots.as_ref(), Some(&robots));
    assert_eq!(sm.depth, 0);
    assert_eq!(
        SitemapRef::from_robots(&robots, "/s.xml")
            .unwrap()
            .url
            .as_str(),
        "https://a.com/s.xml"
    );
    assert_eq!(SitemapRef::from_robots(&robots, "ftp://a.com/s.xml"), None);
    assert_eq!(SitemapRef::from_robots(&robots, "http://[bad"), None);

    let body = urlset(
        "<url><loc>https://a.com/page</loc></url><url><loc>https://cdn.net/a.com/x</loc></url>",
    );
    let (items, end, skipped) = read_all(body.as_bytes(), &sm);
    assert_eq!(end, Ok(()));
    assert_eq!(
        items.len(),
        2,
        "the robots.txt's site and the sitemap's own directory"
    );
    assert_eq!(skipped, Skipped::default());
}

fn index(children: &[&str]) -> String {
    let mut body = format!(r#"<sitemapindex xmlns="{NS}">"#);
    for c in children {
        body.push_str(&format!(
            "<sitemap><loc>{c}</loc><lastmod>2005-01-01T00:00:00Z</lastmod></sitemap>"
        ));
    }
    body.push_str("</sitemapindex>");
    body
}

#[test]
fn an_index_lists_plain_and_gzip_children_which_read_alike() {
    let idx =
        SitemapRef::from_robots(&url("http://s.com/robots.txt"), "http://s.com/index.xml").unwrap();
    let body = index(&[
        "http://s.com/a.xml",
        "http://s.com/b.xml.gz",
        "http://other.com/c.xml",
    ]);
    let mut r = SitemapReader::new(body.as_bytes(), &idx);
    let mut children = Vec::new();
    while let Some(item) = r.next_item().unwrap() {
        match item {
            SitemapItem::Sitemap { sitemap, lastmod } => {
                assert_eq!(sitemap.depth, 1);
                assert_eq!(sitemap.named_by_robots, idx.named_by_robots);
                assert_eq!(lastmod, Some(at(1_104_537_600)));
                children.push(sitemap);
            }
            SitemapItem::Page(p) => panic!("an index lists no pages: {p:?}"),
        }
    }
    assert_eq!(r.format(), Some(Format::Index));
    assert_eq!(r.skipped().out_of_scope, 1);
    assert_eq!(children.len(), 2);

    // The "fetch": a plain body and a gzip one (two gzip members, as pigz writes).
    let a = urlset("<url><loc>http://s.com/1</loc></url>");
    let b_xml = urlset("<url><loc>http://s.com/2</loc></url><url><loc>http://s.com/3</loc></url>");
    let (head, tail) = b_xml.as_bytes().split_at(b_xml.len() / 2);
    let mut b = gzip(head);
    b.extend(gzip(tail));
    let mut found = Vec::new();
    for (child, body) in children.iter().zip([a.as_bytes().to_vec(), b]) {
        let (items, end, _) = read_all(&body, child);
        assert_eq!(end, Ok(()));
        found.extend(items.into_iter().map(|i| match i {
            SitemapItem::Page(p) => p.url.to_string(),
            _ => panic!(),
        }));
    }
    assert_eq!(
        found,
        ["http://s.com/1", "http://s.com/2", "http://s.com/3"]
    );
}

#[test]
fn indexes_nest_only_so_deep() {
    let body = index(&["http://s.com/deeper.xml"]);
    for depth in 0..=MAX_INDEX_DEPTH {
        let sm = SitemapRef {
            depth,
            ..SitemapRef::new(url("http://s.com/index.xml"))
        };
        let (items, end, skipped) = read_all(body.as_bytes(), &sm);
        assert_eq!(end, Ok(()));
        let followed = depth < MAX_INDEX_DEPTH;
        assert_eq!(items.len(), usize::from(followed), "depth {depth}");
        assert_eq!(skipped.too_deep, u64::from(!followed), "depth {depth}");
    }
}

#[test]
fn text_sitemaps() {
    let long = format!("http://t.com/{}", "x".repeat(MAX_URL_BYTES));
    let body = format!(
        "\u{FEFF}http://t.com/a\r\n\n   \nhttp://t.com/b  \nnot a url\n{long}\nhttp://other.com/c\nftp://t.com/d\nhttp://t.com/e"
    );
    let (items, end, skipped) = read_all(
        body.as_bytes(),
        &SitemapRef::new(url("http://t.com/sitemap.txt")),
    );
    assert_eq!(end, Ok(()));
    let got: Vec<_> = items
        .iter()
        .map(|i| match i {
            SitemapItem::Page(p) => p.url.as_str(),
            _ => panic!(),
        })
        .collect();
    assert_eq!(got, ["http://t.com/a", "http://t.com/b", "http://t.com/e"]);
    assert_eq!(skipped.bad_url, 3);
    assert_eq!(skipped.out_of_scope, 1);
    let mut r = SitemapReader::new(body.as_bytes(), &SitemapRef::new(url("http://t.com/s.txt")));
    assert_eq!(r.format(), Some(Format::Text));
    assert!(r.next_item().is_ok());
    // gzip'd text reads the same.
    let gz = gzip(body.as_bytes());
    assert_eq!(
        read_all(&gz, &SitemapRef::new(url("http://t.com/sitemap.txt"))).0,
        items
    );
}

#[test]
fn an_empty_body_lists_nothing() {
    for body in [&b""[..], b"  \n\t", b"\xEF\xBB\xBF"] {
        assert_eq!(pages(body, "http://x.org/s.xml"), (vec![], Ok(())));
    }
    assert_eq!(pages(&gzip(b""), "http://x.org/s.xml"), (vec![], Ok(())));
}

#[test]
fn feeds_read_as_sitemaps() {
    let rss = r#"<rss version="2.0"><channel><link>http://f.com/</link>
      <item><link>http://f.com/post/1</link><pubDate>Tue, 10 Jun 2003 04:00:00 GMT</pubDate></item>
      <item><title>no link</title></item>
      <item><link>http://elsewhere.com/post</link></item></channel></rss>"#;
    let (items, end, skipped) = read_all(
        rss.as_bytes(),
        &SitemapRef::new(url("http://f.com/feed.xml")),
    );
    assert_eq!(end, Ok(()));
    assert_eq!(
        items,
        [SitemapItem::Page(UrlEntry {
            url: url("http://f.com/post/1"),
            lastmod: Some(at(1_055_217_600)),
            changefreq: None,
            priority: None,
        })]
    );
    assert_eq!((skipped.bad_url, skipped.out_of_scope), (1, 1));
    let mut r = SitemapReader::new(
        rss.as_bytes(),
        &SitemapRef::new(url("http://f.com/feed.xml")),
    );
    r.next_item().unwrap();
    assert_eq!(r.format(), Some(Format::Feed(FeedFormat::Rss2)));
}

#[test]
fn what_is_no_sitemap_is_an_unknown_format() {
    for body in [
        "<!DOCTYPE html><html><body><a href=/x>x</a></body></html>",
        "<?xml version='1.0'?><root/>",
        "</urlset>",
    ] {
        let (_, end) = pages(body.as_bytes(), "http://x.org/s.xml");
        assert!(
            matches!(
                end,
                Err(ReadError::UnknownFormat | ReadError::Malformed { .. })
            ),
            "{body}: {end:?}"
        );
    }
    assert_eq!(
        pages(b"<root/>", "http://x.org/s.xml").1,
        Err(ReadError::UnknownFormat)
    );
}

#[test]
fn more_than_the_protocol_allows_ends_the_read_after_50000() {
    let mut body = format!(r#"<urlset xmlns="{NS}">"#);
    for i in 0..=MAX_ITEMS {
        body.push_str(&format!("<url><loc>http://big.com/{i}</loc></url>"));
    }
    body.push_str("</urlset>");
    let (items, end, _) = read_all(
        body.as_bytes(),
        &SitemapRef::new(url("http://big.com/sitemap.xml")),
    );
    assert_eq!(items.len(), MAX_ITEMS);
    assert_eq!(end, Err(ReadError::TooManyItems));
    // Skipped entries count toward the limit too: the work is bounded either way.
    let bad = body.replace("http://big.com/", "http://other.com/");
    let (items, end, skipped) = read_all(
        bad.as_bytes(),
        &SitemapRef::new(url("http://big.com/sitemap.xml")),
    );
    assert_eq!((items.len(), end), (0, Err(ReadError::TooManyItems)));
    assert_eq!(skipped.out_of_scope, MAX_ITEMS as u64);
    // Exactly the limit is fine.
    let exact = body.replacen(
        &format!("<url><loc>http://big.com/{MAX_ITEMS}</loc></url>"),
        "",
        1,
    );
    let (items, end, _) = read_all(
        exact.as_bytes(),
        &SitemapRef::new(url("http://big.com/sitemap.xml")),
    );
    assert_eq!((items.len(), end), (MAX_ITEMS, Ok(())));
}

/// A gzip stream of `prefix`, then `chunk` repeated until `total` bytes, then `suffix`.
fn gzip_repeated(prefix: &[u8], chunk: &[u8], total: u64, suffix: &[u8]) -> Vec<u8> {
    let mut z = GzEncoder::new(Vec::new(), Compression::best());
    z.write_all(prefix).unwrap();
    let mut written = prefix.len() as u64;
    while written < total {
        z.write_all(chunk).unwrap();
        written += chunk.len() as u64;
    }
    z.write_all(suffix).unwrap();
    z.finish().unwrap()
}

#[test]
fn a_gzip_bomb_ends_as_an_outcome() {
    // 60 MB of small comments after one good entry: compressed, well under a megabyte.
    let prefix = urlset("<url><loc>http://b.com/ok</loc></url>").replace("</urlset>", "");
    let comment = format!("<!--{}-->", "z".repeat(1000));
    let bomb = gzip_repeated(
        prefix.as_bytes(),
        comment.as_bytes(),
        MAX_DECODED_BYTES + (8 << 20),
        b"</urlset>",
    );
    assert!(bomb.len() < 1 << 20, "{}", bomb.len());
    let (items, end) = pages(&bomb, "http://b.com/sitemap.xml");
    assert_eq!(items.len(), 1, "what came before the bound stands");
    assert_eq!(end, Err(ReadError::DecodedTooLarge));
    // Read through, it held one comment's worth of buffer, never the 50 MB.
    let mut r = SitemapReader::new(&bomb, &SitemapRef::new(url("http://b.com/sitemap.xml")));
    let mut most = 0;
    while let Ok(Some(_)) = r.next_item() {
        most = most.max(r.held_bytes().unwrap_or(0));
    }
    assert!(most < 16 << 10, "{most}");

    // One endless text run: the per-element bound ends it long before the total one.
    let (items, end) = pages(
        &gzip_repeated(
            b"<urlset><url><loc>http://b.com/",
            &[b'a'; 4096],
            64 << 20,
            b"</loc></url></urlset>",
        ),
        "http://b.com/sitemap.xml",
    );
    assert_eq!((items.len(), end), (0, Err(ReadError::ElementTooLarge)));
    // The same for a start tag.
    let (_, end) = pages(
        &gzip_repeated(
            b"<urlset><url a=\"",
            &[b'a'; 4096],
            8 << 20,
            b"\"/></urlset>",
        ),
        "http://b.com/sitemap.xml",
    );
    assert_eq!(end, Err(ReadError::ElementTooLarge));
    let tag = format!("<urlset><url {}/></urlset>", "a=\"b\" ".repeat(5000));
    assert_eq!(
        pages(tag.as_bytes(), "http://b.com/s.xml").1,
        Err(ReadError::ElementTooLarge)
    );
}

#[test]
fn oversized_input_and_broken_gzip_are_refused() {
    let huge = vec![b' '; MAX_INPUT_BYTES + 1];
    assert_eq!(
        pages(&huge, "http://x.org/s.xml").1,
        Err(ReadError::InputTooLarge)
    );
    let mut broken = gzip(urlset("<url><loc>http://x.org/a</loc></url>").as_bytes());
    let n = broken.len();
    broken[12..n - 8].iter_mut().for_each(|b| *b = !*b);
    assert_eq!(
        pages(&broken, "http://x.org/s.xml").1,
        Err(ReadError::BadGzip)
    );
    assert_eq!(
        pages(b"\x1f\x8b", "http://x.org/s.xml").1,
        Err(ReadError::BadGzip)
    );
    // Cut short: what inflated before the cut is read.
    let whole = gzip(
        urlset("<url><loc>http://x.org/a</loc></url><url><loc>http://x.org/b</loc></url>")
            .as_bytes(),
    );
    let (_, end) = pages(&whole[..whole.len() - 12], "http://x.org/s.xml");
    assert!(end.is_err());
}

#[test]
fn malformed_xml_ends_the_read_after_what_came_before() {
    let cases = [
        // Cut off inside an entry.
        (urlset("<url><loc>http://m.com/1</loc></url><url><loc>http://m.com/2").replace("</urlset>", ""), 1),
        // Unclosed elements at the end.
        ("<urlset><url><loc>http://m.com/1</loc></url><url>".to_string(), 1),
        // A mismatched end tag.
        ("<urlset><url><loc>http://m.com/1</loc></url><url><loc>http://m.com/2</lock></url></urlset>".to_string(), 1),
        // Broken markup.
        ("<urlset><url><loc>http://m.com/1</loc></url><url <<>></urlset>".to_string(), 1),
        ("<urlset><url><loc>http://m.com/1</loc></url><url><loc a=\"1></loc></url></urlset>".to_string(), 1),
    ];
    for (body, before) in cases {
        let (got, end) = pages(body.as_bytes(), "http://m.com/s.xml");
        assert_eq!(got.len(), before, "{body}");
        assert!(
            matches!(end, Err(ReadError::Malformed { .. })),
            "{body}: {end:?}"
        );
    }
}

#[test]
fn entities_we_do_not_expand_spoil_only_their_value() {
    // `&nbsp;` is HTML, not XML; a DOCTYPE's own entities are never expanded.
    let body = r#"<!DOCTYPE urlset [<!ENTITY e "http://evil.com/">]><urlset>
      <url><loc>http://e.com/a&nbsp;b</loc></url>
      <url><loc>&e;x</loc></url>
      <url><loc>http://e.com/ok?a=1&b=2&amp;c=&#x33;</loc></url>
      <url><loc>http://e.com/bad&#0;</loc></url>
    </urlset>"#;
    let (items, end, skipped) =
        read_all(body.as_bytes(), &SitemapRef::new(url("http://e.com/s.xml")));
    assert_eq!(end, Ok(()));
    assert_eq!(items.len(), 1);
    assert!(
        matches!(&items[0], SitemapItem::Page(p) if p.url.as_str() == "http://e.com/ok?a=1&b=2&c=3")
    );
    assert_eq!(skipped.bad_url, 3);
}

#[test]
fn deep_nesting_is_bounded() {
    // Deeper than we follow, and deeper than quick-xml's 16-bit level counter could count.
    for depth in [200, 70_000] {
        let body = format!("<urlset>{}{}", "<a>".repeat(depth), "</a>".repeat(depth));
        let (_, end) = pages(body.as_bytes(), "http://d.com/s.xml");
        assert_eq!(end, Err(ReadError::TooDeep), "{depth}");
    }
    // As deep as allowed is fine.
    let ok = format!(
        "<urlset><url><loc>http://d.com/1</loc>{}{}</url></urlset>",
        "<a>".repeat(usize::from(crate::discovery::xml::MAX_DEPTH) - 2),
        "</a>".repeat(usize::from(crate::discovery::xml::MAX_DEPTH) - 2)
    );
    assert_eq!(
        locs(ok.as_bytes(), "http://d.com/s.xml"),
        ["http://d.com/1"]
    );
}

#[test]
fn declared_encodings() {
    // ISO-8859-1 (read as windows-1252): é is 0xE9, € is 0x80 in windows-1252.
    for label in ["ISO-8859-1", "latin1", "windows-1252", "us-ascii"] {
        let mut body = format!(
            "<?xml version=\"1.0\" encoding=\"{label}\"?><urlset><url><loc>http://e.com/caf"
        )
        .into_bytes();
        body.extend_from_slice(b"\xE9\x80</loc></url></urlset>");
        assert_eq!(
            locs(&body, "http://e.com/s.xml"),
            ["http://e.com/caf%C3%A9%E2%82%AC"],
            "{label}"
        );
    }
    // UTF-8, declared or not, with or without its byte order mark.
    let utf8 = "<urlset><url><loc>http://e.com/café</loc></url></urlset>";
    let want = ["http://e.com/caf%C3%A9"];
    assert_eq!(locs(utf8.as_bytes(), "http://e.com/s.xml"), want);
    assert_eq!(
        locs(format!("\u{FEFF}{utf8}").as_bytes(), "http://e.com/s.xml"),
        want
    );
    let declared = format!("<?xml version='1.0' encoding='utf-8'?>{utf8}");
    assert_eq!(locs(declared.as_bytes(), "http://e.com/s.xml"), want);
    // A UTF-16 label on bytes that are not UTF-16 is a mislabel: read as UTF-8.
    let mislabel = format!("<?xml version='1.0' encoding='UTF-16'?>{utf8}");
    assert_eq!(locs(mislabel.as_bytes(), "http://e.com/s.xml"), want);

    // Refused: other declared encodings, UTF-16 bodies (with a byte order mark or without).
    let sjis = format!("<?xml version='1.0' encoding='Shift_JIS'?>{utf8}");
    assert_eq!(
        pages(sjis.as_bytes(), "http://e.com/s.xml").1,
        Err(ReadError::UnsupportedEncoding)
    );
    let utf16: Vec<u8> = utf8.encode_utf16().flat_map(u16::to_le_bytes).collect();
    assert_eq!(
        pages(&utf16, "http://e.com/s.xml").1,
        Err(ReadError::UnsupportedEncoding)
    );
    let mut bom = vec![0xFF, 0xFE];
    bom.extend(&utf16);
    assert_eq!(
        pages(&bom, "http://e.com/s.xml").1,
        Err(ReadError::UnsupportedEncoding)
    );
    assert_eq!(
        pages(&gzip(&bom), "http://e.com/s.xml").1,
        Err(ReadError::UnsupportedEncoding)
    );
}

#[test]
fn change_frequencies() {
    assert_eq!(ChangeFreq::parse("daily"), Some(ChangeFreq::Daily));
    assert_eq!(ChangeFreq::parse("NEVER"), Some(ChangeFreq::Never));
    assert_eq!(ChangeFreq::parse("fortnightly"), None);
    assert_eq!(ChangeFreq::Always.period(), Some(Duration::ZERO));
    assert_eq!(ChangeFreq::Hourly.period(), Some(Duration::from_secs(3600)));
    assert_eq!(ChangeFreq::Never.period(), None);
    let order = [
        ChangeFreq::Always,
        ChangeFreq::Hourly,
        ChangeFreq::Daily,
        ChangeFreq::Weekly,
        ChangeFreq::Monthly,
        ChangeFreq::Yearly,
    ];
    assert!(order.windows(2).all(|w| w[0].period() < w[1].period()));
}

#[test]
fn host_budget() {
    let mut b = HostBudget::default();
    assert!((0..MAX_SITEMAPS_PER_HOST).all(|_| b.take_file()));
    assert!(!b.take_file());
    assert!((0..MAX_SITEMAP_URLS_PER_HOST).all(|_| b.take_url()));
    assert!(!b.take_url());
}

/// Pieces of sitemaps and feeds, and markup that breaks them, for the soup strategy.
const TOKENS: &[&str] = &[
    "<urlset>",
    "</urlset>",
    "<sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">",
    "<url>",
    "</url>",
    "<sitemap>",
    "</sitemap>",
    "<loc>",
    "</loc>",
    "http://s.com/a",
    "<lastmod>2005-01-01</lastmod>",
    "<priority>0.3</priority>",
    "<rss>",
    "<channel>",
    "<item>",
    "</item>",
    "<link>",
    "</link>",
    "<feed xmlns=\"http://www.w3.org/2005/Atom\">",
    "<entry>",
    "</entry>",
    "<link href=\"/x\"/>",
    "xml:base=\"http://s.com/b/\"",
    "<![CDATA[",
    "]]>",
    "&amp;",
    "&#",
    "&",
    "<!--",
    "-->",
    "<?xml version=\"1.0\" encoding=\"latin1\"?>",
    "<",
    ">",
    "/>",
    "\"",
    " ",
    "\n",
    "\u{e9}",
    "\x1f\u{8b}",
];

fn read_bounded(body: &[u8]) {
    for sm in [
        SitemapRef::new(url("http://s.com/sitemap.xml")),
        SitemapRef::from_robots(&url("http://s.com/robots.txt"), "http://s.com/x/s.xml").unwrap(),
    ] {
        let mut r = SitemapReader::new(body, &sm);
        let mut n = 0;
        while let Ok(Some(_)) = r.next_item() {
            n += 1;
            assert!(n <= MAX_ITEMS);
            if let Some(held) = r.held_bytes() {
                assert!(
                    held as u64 <= 2 * crate::discovery::xml::MAX_EVENT_BYTES,
                    "{held}"
                );
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    #[test]
    fn any_bytes_end_without_panic(body in proptest::collection::vec(any::<u8>(), 0..600)) {
        read_bounded(&body);
        read_bounded(&gzip(&body));
        crate::discovery::feed::tests::read_feed_bounded(&body);
    }

    #[test]
    fn any_token_soup_ends_without_panic(
        picks in proptest::collection::vec(0..TOKENS.len(), 0..80),
    ) {
        let body: String = picks.iter().map(|&i| TOKENS[i]).collect();
        read_bounded(body.as_bytes());
        read_bounded(&gzip(body.as_bytes()));
        crate::discovery::feed::tests::read_feed_bounded(body.as_bytes());
    }
}
