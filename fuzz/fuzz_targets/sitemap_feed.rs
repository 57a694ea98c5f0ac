//! `discovery::sitemap::SitemapReader` and `discovery::feed::FeedReader` on arbitrary bytes,
//! as sent and gzip'd: no panic, every read ends, errors are sticky, and what comes out keeps
//! the readers' promises (item count, URL length and scheme, the scope rule, priorities in
//! range, index depth). Memory is bounded by the readers' constants: run with libFuzzer's
//! `-rss_limit_mb` / `-malloc_limit_mb` to hold them to it.
//!
//! Input: the first byte chooses the form (bit 0: gzip the rest; bit 1: the sitemap was
//! named by robots.txt; bit 2: the sitemap is one index deep), the rest is the body.
#![no_main]

use std::io::Write;

use flate2::write::GzEncoder;
use flate2::Compression;
use libfuzzer_sys::fuzz_target;
use spinneret::discovery::feed::FeedReader;
use spinneret::discovery::sitemap::{
    allowed, child_allowed, SitemapItem, SitemapReader, SitemapRef, MAX_INDEX_DEPTH,
};
use spinneret::discovery::{MAX_ITEMS, MAX_URL_BYTES};
use url::Url;

fn check_url(url: &Url) {
    assert!(matches!(url.scheme(), "http" | "https"));
    assert!(url.as_str().len() <= MAX_URL_BYTES);
}

fuzz_target!(|input: &[u8]| {
    let Some((&form, rest)) = input.split_first() else {
        return;
    };
    let gzipped;
    let body = if form & 1 != 0 {
        let mut z = GzEncoder::new(Vec::new(), Compression::fast());
        z.write_all(rest).unwrap();
        gzipped = z.finish().unwrap();
        &gzipped[..]
    } else {
        rest
    };
    let location = Url::parse("http://s.example/maps/sitemap.xml").unwrap();
    let robots = Url::parse("https://s.example/robots.txt").unwrap();
    let sitemap = SitemapRef {
        url: location.clone(),
        named_by_robots: (form & 2 != 0).then(|| robots.clone()),
        depth: u8::from(form & 4 != 0),
    };

    let mut reader = SitemapReader::new(body, &sitemap);
    let mut n = 0;
    let end = loop {
        match reader.next_item() {
            Ok(Some(SitemapItem::Page(page))) => {
                check_url(&page.url);
                assert!(allowed(
                    &location,
                    &page.url,
                    sitemap.named_by_robots.as_ref()
                ));
                assert!(page.priority.is_none_or(|p| (0.0..=1.0).contains(&p)));
            }
            Ok(Some(SitemapItem::Sitemap { sitemap: child, .. })) => {
                check_url(&child.url);
                assert!(child.depth == sitemap.depth + 1 && child.depth <= MAX_INDEX_DEPTH);
                assert_eq!(child.named_by_robots, sitemap.named_by_robots);
                assert!(child_allowed(
                    &location,
                    &child.url,
                    sitemap.named_by_robots.as_ref()
                ));
            }
            Ok(None) => break Ok(()),
            Err(e) => break Err(e),
        }
        n += 1;
        assert!(n <= MAX_ITEMS);
    };
    match end {
        Ok(()) => assert_eq!(reader.next_item(), Ok(None)),
        Err(e) => assert_eq!(reader.next_item(), Err(e)),
    }

    let mut feed = FeedReader::new(body, &location);
    let mut n = 0;
    loop {
        match feed.next_item() {
            Ok(Some(item)) => check_url(&item.url),
            Ok(None) => break,
            Err(e) => {
                assert_eq!(feed.next_item(), Err(e));
                break;
            }
        }
        n += 1;
        assert!(n <= MAX_ITEMS);
    }
});
