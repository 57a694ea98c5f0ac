use std::time::{Duration, UNIX_EPOCH};

use super::*;

fn url(s: &str) -> Url {
    Url::parse(s).unwrap()
}

fn at(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(secs)
}

/// What a whole read gave: the items, how it ended, the format and the skipped count.
struct Read {
    items: Vec<(String, Option<SystemTime>)>,
    end: Result<(), ReadError>,
    format: Option<FeedFormat>,
    skipped: u64,
}

/// Reads every item of `body` (fetched from `location`).
fn read(body: &str, location: &str) -> Read {
    let mut r = FeedReader::new(body.as_bytes(), &url(location));
    let mut items = Vec::new();
    // Bound: MAX_ITEMS items plus the end.
    for _ in 0..=MAX_ITEMS + 1 {
        let end = match r.next_item() {
            Ok(Some(it)) => {
                items.push((it.url.to_string(), it.date));
                continue;
            }
            Ok(None) => Ok(()),
            Err(e) => {
                assert_eq!(r.next_item(), Err(e), "errors are sticky");
                Err(e)
            }
        };
        return Read {
            items,
            end,
            format: r.format(),
            skipped: r.skipped(),
        };
    }
    panic!("reader did not end");
}

/// Any bytes: the reader ends, without panic, within its bounds.
pub(crate) fn read_feed_bounded(body: &[u8]) {
    let mut r = FeedReader::new(body, &url("http://f.com/feed"));
    let mut n = 0;
    while let Ok(Some(_)) = r.next_item() {
        n += 1;
        assert!(n <= MAX_ITEMS);
    }
}

#[test]
fn rss2_items() {
    let body = r#"<?xml version="1.0"?>
<rss version="2.0" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:atom="http://www.w3.org/2005/Atom">
 <channel>
  <title>News</title><link>http://f.com/</link>
  <atom:link href="http://f.com/feed" rel="self"/>
  <item><title>One</title><link>http://f.com/1?a=1&amp;b=2</link>
    <pubDate>Tue, 10 Jun 2003 04:00:00 GMT</pubDate></item>
  <item><link><![CDATA[ http://f.com/2?a=1&b=2 ]]></link><dc:date>2005-01-01T00:00:00Z</dc:date></item>
  <item><link>/3</link><pubDate>2005-01-01T00:00:00Z</pubDate></item>
  <item><guid>http://f.com/4</guid><pubDate>not a date</pubDate></item>
  <item><guid isPermaLink="false">tag:f.com,2003:5</guid></item>
  <item><guid isPermaLink="false">http://f.com/6-guid</guid><link>http://f.com/6</link></item>
  <item><atom:link href="http://f.com/7"/></item>
  <item><description>&lt;a href="http://f.com/no"&gt;</description></item>
 </channel>
</rss>"#;
    let r = read(body, "http://f.com/feed");
    assert_eq!(r.end, Ok(()));
    assert_eq!(r.format, Some(FeedFormat::Rss2));
    assert_eq!(
        r.items,
        [
            ("http://f.com/1?a=1&b=2".into(), Some(at(1_055_217_600))),
            ("http://f.com/2?a=1&b=2".into(), Some(at(1_104_537_600))),
            ("http://f.com/3".into(), Some(at(1_104_537_600))),
            ("http://f.com/4".into(), None),
            ("http://f.com/6".into(), None),
            ("http://f.com/7".into(), None),
        ]
    );
    assert_eq!(r.skipped, 2, "a non-permalink guid and no link at all");
}

#[test]
fn rss1_items() {
    let body = r#"<?xml version="1.0"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/"
         xmlns:dc="http://purl.org/dc/elements/1.1/">
  <channel rdf:about="http://r.org/"><link>http://r.org/</link>
    <items><rdf:Seq><rdf:li resource="http://r.org/1"/></rdf:Seq></items></channel>
  <item rdf:about="http://r.org/1-about"><title>1</title><link>http://r.org/1</link>
    <dc:date>2005-01-01T01:00:00+01:00</dc:date></item>
  <item rdf:about="http://r.org/2"><title>2</title></item>
  <item><title>3</title></item>
</rdf:RDF>"#;
    let r = read(body, "http://r.org/index.rdf");
    assert_eq!(r.end, Ok(()));
    assert_eq!(r.format, Some(FeedFormat::Rss1));
    assert_eq!(
        r.items,
        [
            ("http://r.org/1".into(), Some(at(1_104_537_600))),
            ("http://r.org/2".into(), None),
        ]
    );
    assert_eq!(r.skipped, 1);
}

#[test]
fn atom_entries_with_xml_base() {
    let body = r#"<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom" xml:base="http://a.org/blog/">
  <link href="http://a.org/" rel="alternate"/>
  <entry>
    <link rel="edit" href="edit/1"/><link rel="enclosure" href="1.mp3"/>
    <link href="posts/1"/><link href="posts/1-again"/>
    <updated>2005-01-01T00:00:00Z</updated><published>2004-01-01T00:00:00Z</published>
  </entry>
  <entry xml:base="2005/">
    <link rel="alternate" type="text/html" href="post-2"/>
    <published>2005-01-01T00:00:00Z</published>
  </entry>
  <entry>
    <link rel="http://www.iana.org/assignments/relation/alternate" xml:base="/other/" href="3"/>
    <content type="xhtml"><div xmlns="http://www.w3.org/1999/xhtml"><a href="no">x</a><link href="no"/></div></content>
    <source><link href="http://elsewhere.org/"/></source>
  </entry>
  <entry><link rel="self" href="4"/></entry>
  <entry><link href="javascript:alert(1)"/></entry>
</feed>"#;
    let r = read(body, "http://a.org/atom.xml");
    assert_eq!(r.end, Ok(()));
    assert_eq!(r.format, Some(FeedFormat::Atom));
    assert_eq!(
        r.items,
        [
            ("http://a.org/blog/posts/1".into(), Some(at(1_104_537_600))),
            (
                "http://a.org/blog/2005/post-2".into(),
                Some(at(1_104_537_600))
            ),
            ("http://a.org/other/3".into(), None),
        ]
    );
    assert_eq!(r.skipped, 2);
}

#[test]
fn atom_with_a_prefix_and_atom_0_3() {
    let body = r#"<a:feed xmlns:a="http://www.w3.org/2005/Atom"><a:entry><a:link href="http://p.org/1"/></a:entry></a:feed>"#;
    assert_eq!(
        read(body, "http://p.org/f").items,
        [("http://p.org/1".to_string(), None)]
    );
    let old = r#"<feed xmlns="http://purl.org/atom/ns#"><entry><link rel="alternate" href="http://p.org/2"/></entry></feed>"#;
    assert_eq!(
        read(old, "http://p.org/f").items,
        [("http://p.org/2".to_string(), None)]
    );
    // A feed element in no namespace is not Atom.
    assert_eq!(
        read("<feed><entry/></feed>", "http://p.org/f").end,
        Err(ReadError::UnknownFormat)
    );
}

#[test]
fn a_windows_1252_feed() {
    let raw = b"<?xml version='1.0' encoding='ISO-8859-1'?><rss><channel><item>\
<link>http://w.org/\xE9t\xE9</link></item></channel></rss>";
    let mut r = FeedReader::new(raw, &url("http://w.org/feed"));
    let item = r.next_item().unwrap().unwrap();
    assert_eq!(item.url.as_str(), "http://w.org/%C3%A9t%C3%A9");
}

#[test]
fn what_is_no_feed() {
    for body in [
        "<urlset><url><loc>http://x/</loc></url></urlset>",
        "plain text",
        "",
        "<html></html>",
    ] {
        assert_eq!(
            read(body, "http://x.org/f").end,
            Err(ReadError::UnknownFormat),
            "{body}"
        );
    }
}

#[test]
fn broken_feeds_keep_what_came_first() {
    let body =
        "<rss><channel><item><link>http://b.org/1</link></item><item><link>http://b.org/2</link>";
    let r = read(body, "http://b.org/f");
    assert_eq!(r.items.len(), 1);
    assert!(matches!(r.end, Err(ReadError::Malformed { .. })));
}

#[test]
fn feed_items_are_bounded() {
    let mut body = String::from("<rss><channel>");
    for i in 0..=MAX_ITEMS {
        body.push_str(&format!("<item><link>http://b.org/{i}</link></item>"));
    }
    body.push_str("</channel></rss>");
    let r = read(&body, "http://b.org/f");
    assert_eq!(
        (r.items.len(), r.end),
        (MAX_ITEMS, Err(ReadError::TooManyItems))
    );
}

#[test]
fn feed_media_types() {
    assert_eq!(
        FeedFormat::of_media_type(b"application/rss+xml"),
        Some(FeedFormat::Rss2)
    );
    assert_eq!(
        FeedFormat::of_media_type(b"application/rdf+xml"),
        Some(FeedFormat::Rss1)
    );
    assert_eq!(FeedFormat::of_media_type(b"application/xml"), None);
}
