//! Robots directives in pages and one key per page (README "Robots directives in pages",
//! "One key per page"), end to end: the `spinneret` binary against hand-written pages on the
//! scripted loopback server, judged by the server's own request log, crawl.log and the WET
//! file `--text` writes.

use crate::common;

use std::path::PathBuf;
use std::time::Duration;

use common::{read_log, spinneret, temp_dir};
use spinneret::store::archive::crawl_log::ParsedLine;
use spinneret_tools::http_server::{HttpServer, HttpServerConfig, Response, Routes, Script};

const LIFETIME: Duration = Duration::from_secs(90);
const LIMIT: Duration = Duration::from_secs(60);
const HOST: &str = "127.0.0.1";

fn html(body: &str) -> Script {
    Script::Respond(Response::ok(body.to_string(), "text/html"))
}

fn html_with(body: &str, header: &str) -> Script {
    Script::Respond(Response::ok(body.to_string(), "text/html").header("X-Robots-Tag", header))
}

fn server(routes: Routes) -> HttpServer {
    HttpServer::start(HttpServerConfig {
        addrs: vec![[127, 0, 0, 1].into()],
        routes,
        lifetime: LIFETIME,
        ..HttpServerConfig::default()
    })
    .expect("http server")
}

/// Crawls the server's front page with `extra` flags into a fresh directory; returns it and
/// crawl.log's lines, after checking the exit status is 0.
fn crawl(name: &str, server: &HttpServer, extra: &[&str]) -> (PathBuf, Vec<ParsedLine>) {
    let out = temp_dir(name).join("out");
    let url = format!("http://{HOST}:{}/", server.port());
    let mut args = vec![
        "crawl",
        "--allow-net",
        "127.0.0.0/8",
        "--hosts-file",
        "none",
        "-q",
        "--delay-ms",
        "20",
        "--delay-factor",
        "0",
        "-o",
        out.to_str().unwrap(),
    ];
    args.extend(extra);
    args.push(&url);
    let res = spinneret(&args, LIMIT);
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert_eq!(res.status.code(), Some(0), "{args:?}: {stderr}");
    let log = read_log(&out);
    (out, log)
}

/// How many requests the server had for `target`.
fn asked(server: &HttpServer, target: &str) -> usize {
    server
        .requests()
        .iter()
        .filter(|r| r.target == target)
        .count()
}

/// A site of pages that speak to crawlers: a meta nofollow page, a header nofollow page, a
/// header for another crawler, rel marks, and a noindex page.
fn directives_site() -> HttpServer {
    let mut routes = Routes::new();
    routes.add(
        HOST,
        "/",
        html(
            r#"<p>front page text for the index</p><a href="/meta.html">m</a>
            <a href="/header.html">h</a><a href="/other.html">o</a><a href="/rel.html">r</a>
            <a href="/noindex.html">n</a>"#,
        ),
    );
    routes.add(
        HOST,
        "/meta.html",
        html(
            r#"<html><head><META name="Robots" content="NoIndex, NoFollow"></head>
            <body><img src="/m.png"><a href="/m-link.html">not followed</a></body></html>"#,
        ),
    );
    routes.add(
        HOST,
        "/header.html",
        html_with(
            r#"<link rel="stylesheet" href="/h.css"><a href="/h-link.html">not followed</a>"#,
            "spinneret: nofollow",
        ),
    );
    routes.add(
        HOST,
        "/other.html",
        html_with(
            r#"<a href="/o-link.html">followed: the header is for another crawler</a>"#,
            "otherbot: nofollow, noindex",
        ),
    );
    routes.add(
        HOST,
        "/rel.html",
        html(
            r#"<a rel="nofollow" href="/r-link.html">r</a><a rel="external UGC" href="/u-link.html">u</a>
            <a rel="noopener" href="/plain.html">followed</a>"#,
        ),
    );
    routes.add(
        HOST,
        "/noindex.html",
        html(
            r#"<meta name="robots" content="noindex"><p>secret words not for any index</p>
            <a href="/n-link.html">followed</a>"#,
        ),
    );
    for leaf in [
        "/m-link.html",
        "/h-link.html",
        "/o-link.html",
        "/r-link.html",
        "/u-link.html",
        "/plain.html",
        "/n-link.html",
    ] {
        routes.add(HOST, leaf, html("<p>leaf</p>"));
    }
    routes.add(
        HOST,
        "/m.png",
        Script::Respond(Response::ok(b"\x89PNG".to_vec(), "image/png")),
    );
    routes.add(
        HOST,
        "/h.css",
        Script::Respond(Response::ok("p{}".to_string(), "text/css")),
    );
    server(routes)
}

#[test]
fn nofollow_pages_give_only_their_requisites_and_rel_nofollow_is_not_followed() {
    let server = directives_site();
    let (out, log) = crawl("robots-meta-default", &server, &["--text"]);
    for not in [
        "/m-link.html",
        "/h-link.html",
        "/r-link.html",
        "/u-link.html",
    ] {
        assert_eq!(asked(&server, not), 0, "{not} fetched");
    }
    for fetched in [
        "/m.png",
        "/h.css",
        "/o-link.html",
        "/plain.html",
        "/n-link.html",
    ] {
        assert_eq!(asked(&server, fetched), 1, "{fetched} not fetched once");
    }
    // noindex: stored and marked, and only there.
    let mut marked: Vec<&str> = log
        .iter()
        .filter(|l| l.noindex)
        .map(|l| l.url.rsplit('/').next().unwrap())
        .collect();
    marked.sort_unstable();
    assert_eq!(marked, ["meta.html", "noindex.html"], "the noindex lines");
    let noindex = log
        .iter()
        .find(|l| l.url.ends_with("/noindex.html"))
        .unwrap();
    assert_eq!((noindex.status, noindex.digest.is_some()), (200, true));
    // …and left out of the WET file, where the front page's text is.
    let mut wet_text = String::new();
    for warc in common::warc_files(&out) {
        let name = warc.file_name().unwrap().to_str().unwrap().to_string();
        let (wet, _) = spinneret::store::archive::text_sides::companion_names(&name);
        if let Ok(bytes) = std::fs::read(out.join(&wet)) {
            for r in spinneret::store::archive::warc::reader::read_records(&bytes).unwrap() {
                wet_text.push_str(r.header("WARC-Target-URI").unwrap_or(""));
                wet_text.push_str(&String::from_utf8_lossy(&r.block));
            }
        }
    }
    assert!(wet_text.contains("front page text"), "{wet_text}");
    assert!(!wet_text.contains("secret words"), "{wet_text}");
    assert!(!wet_text.contains("noindex.html"), "{wet_text}");
}

#[test]
fn follow_nofollow_links_follows_marked_links_but_not_nofollow_pages() {
    let server = directives_site();
    crawl("robots-meta-follow", &server, &["--follow-nofollow-links"]);
    for fetched in ["/r-link.html", "/u-link.html", "/plain.html"] {
        assert_eq!(asked(&server, fetched), 1, "{fetched}");
    }
    for not in ["/m-link.html", "/h-link.html"] {
        assert_eq!(asked(&server, not), 0, "{not} fetched");
    }
}

#[test]
fn ignore_robots_meta_follows_everything_and_marks_nothing() {
    let server = directives_site();
    let (_, log) = crawl("robots-meta-ignored", &server, &["--ignore-robots-meta"]);
    for fetched in [
        "/m-link.html",
        "/h-link.html",
        "/r-link.html",
        "/u-link.html",
        "/m.png",
    ] {
        assert_eq!(asked(&server, fetched), 1, "{fetched}");
    }
    assert!(log.iter().all(|l| !l.noindex), "no line marked noindex");
}

/// The variants of /p.html, as a page links them.
const VARIANTS: [&str; 5] = [
    "/p.html",
    "/p.html;jsessionid=0A1B2C3D4E5F",
    "/p.html?utm_source=news&utm_medium=mail",
    "/p.html?PHPSESSID=5f4dcc3b5aa765d61d8327deb882cf99",
    "/p.html?fbclid=IwAR0x&gclid=Cj0Kx",
];

fn variants_site() -> HttpServer {
    let mut routes = Routes::new();
    let mut front: String = VARIANTS
        .iter()
        .map(|v| format!(r#"<a href="{v}">p</a>"#))
        .collect();
    front.push_str(r#"<a href="/q.html?ref=tw">q</a><a href="/q.html">q</a>"#);
    routes.add(HOST, "/", html(&front));
    for target in VARIANTS
        .iter()
        .copied()
        .chain(["/q.html?ref=tw", "/q.html"])
    {
        routes.add(HOST, target, html("<p>one page</p>"));
    }
    server(routes)
}

fn p_requests(server: &HttpServer) -> Vec<String> {
    server
        .requests()
        .into_iter()
        .map(|r| r.target)
        .filter(|t| t.starts_with("/p.html"))
        .collect()
}

#[test]
fn a_page_linked_under_session_and_tracking_variants_is_fetched_once() {
    let server = variants_site();
    let (_, log) = crawl("canon-default", &server, &[]);
    assert_eq!(
        p_requests(&server),
        ["/p.html"],
        "fetched once, under the first form found"
    );
    let p_lines = log.iter().filter(|l| l.url.contains("/p.html")).count();
    assert_eq!(p_lines, 1, "one line");
    assert_eq!(
        asked(&server, "/q.html?ref=tw") + asked(&server, "/q.html"),
        2,
        "ref is not a built-in rule"
    );

    let server = variants_site();
    crawl("canon-strip", &server, &["--strip-query-param", "REF"]);
    assert_eq!(
        asked(&server, "/q.html?ref=tw") + asked(&server, "/q.html"),
        1,
        "--strip-query-param adds a rule"
    );
    assert_eq!(asked(&server, "/q.html?ref=tw"), 1, "the first form found");
}

#[test]
fn no_canonicalize_fetches_each_variant() {
    let server = variants_site();
    crawl("canon-off", &server, &["--no-canonicalize"]);
    let mut got = p_requests(&server);
    got.sort();
    let mut want: Vec<String> = VARIANTS.iter().map(|v| v.to_string()).collect();
    want.sort();
    assert_eq!(got, want);
}

#[test]
fn help_lists_the_canonicalization_rules() {
    let res = spinneret(&["help", "canonicalization"], LIMIT);
    assert!(res.status.success());
    let text = String::from_utf8_lossy(&res.stdout);
    for name in [
        "jsessionid",
        "utm_*",
        "fbclid",
        "gclid",
        "--strip-query-param",
    ] {
        assert!(text.contains(name), "{name} missing: {text}");
    }
    let bad = spinneret(
        &["crawl", "--strip-query-param", "a=b", "http://127.0.0.1:9/"],
        LIMIT,
    );
    assert_eq!(bad.status.code(), Some(2), "a bad name is a usage error");
}
