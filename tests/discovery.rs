//! Discovery beyond links, end to end on a loopback site: a sitemap index that robots.txt
//! names, with a plain and a gzipped sitemap listing pages nothing links to; an Atom feed a
//! page announces with `<link rel=alternate>`; an RSS feed given as a seed; a gzip bomb and a
//! malformed sitemap among them. Every listed page is fetched, the sitemaps are logged with
//! their hop letter and the pages with their sitemap as referrer, and the bad files end as
//! counted outcomes without stopping anything.

use crate::common;

use std::collections::BTreeSet;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

use common::static_site::StaticSite;
use common::{read_log, temp_dir};
use spinneret::app::run_files::json_number;
use spinneret::crawl::sink::Hop;

fn write(root: &Path, path: &str, body: &[u8]) {
    let p = root.join(path.trim_start_matches('/'));
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, body).unwrap();
}

fn gzip(body: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(body).unwrap();
    gz.finish().unwrap()
}

fn urlset(base: &str, paths: &[String]) -> String {
    let mut s = String::from(
        r#"<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">"#,
    );
    for p in paths {
        s.push_str(&format!(
            "<url><loc>{base}{p}</loc><lastmod>2026-01-02</lastmod><changefreq>daily</changefreq></url>"
        ));
    }
    s.push_str("</urlset>");
    s
}

#[test]
fn sitemaps_and_feeds_bring_pages_no_link_leads_to() {
    let root = temp_dir("discovery-site");
    let site = StaticSite::start(&root, Duration::from_secs(120));
    let base = site.url("");
    let page = |p: &str| format!("<html><body><h1>{p}</h1></body></html>");
    let listed = |prefix: &str, n: usize| -> Vec<String> {
        (1..=n).map(|i| format!("/{prefix}{i}.html")).collect()
    };
    let (a, b) = (listed("s/a", 5), listed("s/b", 5));
    let (atom, rss) = (listed("f/atom", 3), listed("f/rss", 3));
    for p in a.iter().chain(&b).chain(&atom).chain(&rss) {
        write(&root, p, page(p).as_bytes());
    }
    write(
        &root,
        "robots.txt",
        format!("User-agent: *\nDisallow:\nSitemap: {base}/sitemaps/index.xml\n").as_bytes(),
    );
    write(
        &root,
        "index.html",
        br#"<html><head><link rel="alternate" type="application/atom+xml" href="/feed.atom"><link rel="alternate" type="application/rss+xml" href="/broken.rss"></head><body>home</body></html>"#,
    );
    let index = format!(
        r#"<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
        <sitemap><loc>{base}/sitemaps/a.xml</loc></sitemap>
        <sitemap><loc>{base}/sitemaps/b.xml.gz</loc></sitemap>
        <sitemap><loc>{base}/sitemaps/bomb.xml.gz</loc></sitemap>
        <sitemap><loc>{base}/sitemaps/broken.xml</loc></sitemap>
        <sitemap><loc>{base}/sitemaps/huge.xml</loc></sitemap>
        </sitemapindex>"#
    );
    write(&root, "sitemaps/index.xml", index.as_bytes());
    write(&root, "sitemaps/a.xml", urlset(&base, &a).as_bytes());
    write(
        &root,
        "sitemaps/b.xml.gz",
        &gzip(urlset(&base, &b).as_bytes()),
    );
    // 64 MB of one byte: past the protocol's 50 MB once inflated.
    write(&root, "sitemaps/bomb.xml.gz", &gzip(&vec![b' '; 64 << 20]));
    write(
        &root,
        "sitemaps/broken.xml",
        format!("<urlset><url><loc>{base}/s/before-the-break.html</loc></url><url><loc>")
            .as_bytes(),
    );
    write(&root, "s/before-the-break.html", page("before").as_bytes());
    // 6 MB of entries: past what the crawl reads of a body (--max-scan-bytes, 4 MiB), so
    // the file is read cut, and ends as an outcome. They name another site, which a
    // sitemap may not list: nothing of it is fetched.
    let huge: Vec<String> = (0..60_000)
        .map(|i| format!("/s/huge/{i:06}.html"))
        .collect();
    write(
        &root,
        "sitemaps/huge.xml",
        urlset("http://elsewhere.invalid", &huge).as_bytes(),
    );
    // A feed that breaks off, announced by the home page too.
    write(
        &root,
        "broken.rss",
        format!("<rss version=\"2.0\"><channel><item><link>{base}/f/rss1.html</link></item><item><link>")
            .as_bytes(),
    );
    let mut feed = String::from(
        r#"<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><title>t</title>"#,
    );
    for p in &atom {
        feed.push_str(&format!(
            r#"<entry><title>x</title><link href="{base}{p}"/><updated>2026-11-01T00:00:00Z</updated></entry>"#
        ));
    }
    feed.push_str("</feed>");
    write(&root, "feed.atom", feed.as_bytes());
    let mut rss_doc =
        String::from(r#"<?xml version="1.0"?><rss version="2.0"><channel><title>t</title>"#);
    for p in &rss {
        rss_doc.push_str(&format!(
            "<item><title>x</title><link>{base}{p}</link><pubDate>Sun, 01 Nov 2026 00:00:00 GMT</pubDate></item>"
        ));
    }
    rss_doc.push_str("</channel></rss>");
    write(&root, "news.rss", rss_doc.as_bytes());

    let out = temp_dir("discovery-crawl").join("crawl");
    let (home, rss_seed) = (site.url("/"), site.url("/news.rss"));
    let args = [
        "crawl",
        "--allow-net",
        "127.0.0.0/8",
        "--delay-ms",
        "0",
        "-q",
        "-o",
        out.to_str().unwrap(),
        &home,
        &rss_seed,
    ];
    let r = common::spinneret(&args, Duration::from_secs(90));
    assert_eq!(
        r.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
    let log = read_log(&out);
    let fetched: BTreeSet<String> = log
        .iter()
        .filter(|l| l.status == 200)
        .map(|l| l.url.clone())
        .collect();
    for p in a.iter().chain(&b).chain(&atom).chain(&rss) {
        assert!(fetched.contains(&format!("{base}{p}")), "{p} not fetched");
    }
    // What a broken sitemap listed before the break stands.
    assert!(fetched.contains(&format!("{base}/s/before-the-break.html")));
    // Sitemaps have their own hop letter; what they list names them as referrer.
    let sitemaps: Vec<_> = log.iter().filter(|l| l.hop == Some(Hop::Sitemap)).collect();
    assert_eq!(sitemaps.len(), 6, "the index and its five sitemaps");
    let from_b = log
        .iter()
        .find(|l| l.url == format!("{base}{}", b[0]))
        .unwrap();
    assert_eq!(
        from_b.referrer.as_deref(),
        Some(format!("{base}/sitemaps/b.xml.gz").as_str())
    );
    let stats = std::fs::read_to_string(out.join("stats.json")).unwrap();
    let number = |key: &str| json_number(&stats, key).expect(key) as u64;
    assert_eq!(number("sitemaps_read"), 6);
    assert_eq!(number("feeds_read"), 3);
    assert!(number("feed_items") >= 6, "{stats}");
    assert_eq!(
        number("discovery_unreadable"),
        4,
        "the bomb, the broken and the huge sitemap, the broken feed: {stats}"
    );
}

#[test]
fn no_sitemaps_leaves_robots_sitemaps_alone() {
    let root = temp_dir("discovery-off");
    let site = StaticSite::start(&root, Duration::from_secs(60));
    let base = site.url("");
    write(
        &root,
        "robots.txt",
        format!("User-agent: *\nSitemap: {base}/sitemap.xml\n").as_bytes(),
    );
    write(&root, "index.html", b"<html><body>home</body></html>");
    write(&root, "hidden.html", b"<html><body>hidden</body></html>");
    write(
        &root,
        "sitemap.xml",
        urlset(&base, &["/hidden.html".into()]).as_bytes(),
    );
    let out = temp_dir("discovery-off-crawl").join("crawl");
    let home = site.url("/");
    let args = [
        "crawl",
        "--allow-net",
        "127.0.0.0/8",
        "--delay-ms",
        "0",
        "--no-sitemaps",
        "-q",
        "-o",
        out.to_str().unwrap(),
        &home,
    ];
    let r = common::spinneret(&args, Duration::from_secs(60));
    assert_eq!(r.status.code(), Some(0));
    let log = read_log(&out);
    assert!(log.iter().all(|l| !l.url.ends_with("sitemap.xml")));
    assert!(log.iter().all(|l| !l.url.ends_with("hidden.html")));
}
