//! The changing web over real loopback sockets: before a page's change a conditional GET gets
//! 304, after it 200 with the new version; an article appears at its time; the connection
//! survives 304s; the log is what was asked and answered; the binary's `fresh` and
//! `fresh-report` modes work end to end.

use crate::common;

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use common::*;
use spinneret_tools::freshweb::*;

fn addr(web: &FreshWeb) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], web.port()))
}

fn req(target: &str, extra: &str) -> Vec<u8> {
    format!("GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n{extra}\r\n").into_bytes()
}

fn ask(s: &mut TcpStream, buf: &mut Vec<u8>, target: &str, extra: &str) -> Resp {
    s.write_all(&req(target, extra)).unwrap();
    read_response(s, buf).unwrap()
}

/// Sleeps until the server's clock reads `t`.
fn wait_until(web: &FreshWeb, t: f64) {
    let now = web.elapsed();
    if t > now {
        std::thread::sleep(Duration::from_secs_f64(t - now));
    }
}

fn text(r: &Resp) -> String {
    String::from_utf8(r.body.clone()).unwrap()
}

#[test]
fn a_conditional_get_is_304_until_the_page_changes_then_200() {
    let web = FreshWeb::start(FreshConfig {
        pages: 16,
        mean_change_secs: vec![0.0, 2.0],
        lifetime: Duration::from_secs(30),
        ..FreshConfig::default()
    })
    .unwrap();
    let s = web.schedule();
    // A page whose first change leaves time before it, and half a second after it.
    let (page, change) = (1..16)
        .step_by(2)
        .map(|i| (i, s.changes(i)))
        .find(|(_, c)| c.len() >= 2 && (0.7..5.0).contains(&c[0]) && c[1] - c[0] > 0.5)
        .map(|(i, c)| (i, c[0]))
        .expect("some page changes first between 0.7 and 5 s");
    let path = format!("/p/{page}");
    let mut conn = connect(addr(&web));
    let mut buf = Vec::new();
    let v0 = ask(&mut conn, &mut buf, &path, "");
    assert_eq!(v0.status, 200);
    assert!(text(&v0).contains("Version 0"));
    let etag0 = v0.header("etag").unwrap().to_string();
    let lm0 = v0.header("last-modified").unwrap().to_string();
    let inm0 = format!("If-None-Match: {etag0}\r\n");
    let r = ask(&mut conn, &mut buf, &path, &inm0);
    assert_eq!(r.status, 304, "before the change at {change}");
    assert_eq!(r.header("etag"), Some(etag0.as_str()));
    assert_eq!(r.header("content-length"), None);
    assert!(r.body.is_empty());
    // A never-changing page, on the same connection after a 304.
    let never = ask(&mut conn, &mut buf, "/p/0", "");
    assert_eq!(never.status, 200);
    let r = ask(
        &mut conn,
        &mut buf,
        "/p/0",
        &format!("If-Modified-Since: {lm0}\r\n"),
    );
    assert_eq!(r.status, 304, "Last-Modified of a page that never changed");

    wait_until(&web, change + 0.05);
    let v1 = ask(&mut conn, &mut buf, &path, &inm0);
    assert_eq!(v1.status, 200, "after the change");
    assert!(text(&v1).contains("Version 1"));
    let etag1 = v1.header("etag").unwrap().to_string();
    assert_ne!(etag1, etag0);
    let r = ask(
        &mut conn,
        &mut buf,
        &path,
        &format!("If-Modified-Since: {lm0}\r\n"),
    );
    assert_eq!(r.status, 200, "an old date after a change");
    let r = ask(
        &mut conn,
        &mut buf,
        &path,
        &format!("If-None-Match: {etag1}\r\n"),
    );
    assert_eq!(r.status, 304);

    // The log is exactly this conversation.
    let log = web.log();
    let got: Vec<_> = log
        .iter()
        .map(|e| (e.path.as_str(), e.conditional, e.status, e.version))
        .collect();
    let p = path.as_str();
    assert_eq!(
        got,
        [
            (p, false, 200, 0),
            (p, true, 304, 0),
            ("/p/0", false, 200, 0),
            ("/p/0", true, 304, 0),
            (p, true, 200, 1),
            (p, true, 200, 1),
            (p, true, 304, 1),
        ]
    );
    assert!(log.windows(2).all(|w| w[0].t <= w[1].t));
    assert!(log[4].t >= change && log[1].t < change);
    assert_eq!(log[0].body_bytes, v0.body.len() as u64);
    assert_eq!(log[1].body_bytes, 0);
    assert!(log.iter().all(|e| e.method == "GET"));
}

#[test]
fn articles_appear_at_their_time_in_news_and_feed() {
    let web = FreshWeb::start(FreshConfig {
        pages: 4,
        article_secs: 0.4,
        lifetime: Duration::from_secs(30),
        ..FreshConfig::default()
    })
    .unwrap();
    let s = web.schedule().clone();
    let next = s.articles_at(web.elapsed()) + 1;
    let path = format!("/news/a/{next}");
    let mut conn = connect(addr(&web));
    let mut buf = Vec::new();
    assert_eq!(ask(&mut conn, &mut buf, &path, "").status, 404);
    wait_until(&web, s.article_time(next) + 0.05);
    let a = ask(&mut conn, &mut buf, &path, "");
    assert_eq!(a.status, 200);
    assert!(text(&a).contains(&format!("Article {next}:")));
    let news = ask(&mut conn, &mut buf, "/news/", "");
    let body = text(&news);
    // The log says which article was newest when the front page was served.
    let newest = web.log().last().unwrap().version as u64;
    assert!(newest >= next);
    let first_link = body.find("href=\"/news/a/").unwrap();
    assert!(body[first_link..].starts_with(&format!("href=\"/news/a/{newest}\"")));
    assert!(body.contains(&format!("href=\"{path}\"")));
    assert!(body.contains("<link rel=\"alternate\" type=\"application/rss+xml\""));
    let feed = ask(&mut conn, &mut buf, "/news/feed.xml", "");
    assert_eq!(feed.header("content-type"), Some("application/rss+xml"));
    let xml = text(&feed);
    assert!(xml.contains(&format!("<link>{}</link>", web.url(&path))));
    assert!(xml.contains("<pubDate>") && xml.contains(" GMT</pubDate>"));
    // The front page's validators follow the newest article.
    let inm = format!("If-None-Match: {}\r\n", news.header("etag").unwrap());
    let again = ask(&mut conn, &mut buf, "/news/", &inm).status;
    let same = web.log().last().unwrap().version as u64 == newest;
    assert_eq!(again, if same { 304 } else { 200 });
    wait_until(&web, s.article_time(s.articles_at(web.elapsed())) + 0.05);
    assert_eq!(ask(&mut conn, &mut buf, "/news/", &inm).status, 200);

    let robots = get(addr(&web), "127.0.0.1", "/robots.txt");
    assert_eq!(
        (robots.status, text(&robots).as_str()),
        (200, "User-agent: *\nDisallow:\n")
    );
    for missing in ["/p/4", "/p/01", "/other", "/news/a/99999"] {
        assert_eq!(
            get(addr(&web), "127.0.0.1", missing).status,
            404,
            "{missing}"
        );
    }
    let index = text(&get(addr(&web), "127.0.0.1", "/"));
    assert!((0..4).all(|i| index.contains(&format!("href=\"/p/{i}\""))));
    assert!(index.contains("href=\"/news/\""));
    assert_eq!(web.seeds(), vec![web.url("/")]);
}

#[test]
fn stops_on_stop_and_after_its_lifetime() {
    let web = FreshWeb::start(FreshConfig {
        lifetime: Duration::from_millis(300),
        ..FreshConfig::default()
    })
    .unwrap();
    let a = addr(&web);
    assert_eq!(get(a, "127.0.0.1", "/").status, 200);
    let deadline = Instant::now() + Duration::from_secs(5);
    while !web.is_stopped() {
        assert!(Instant::now() < deadline, "still running past its lifetime");
        std::thread::sleep(Duration::from_millis(20));
    }
    web.stop();
    assert!(TcpStream::connect_timeout(&a, IO_TIMEOUT).is_err());

    let web = FreshWeb::start(FreshConfig::default()).unwrap();
    let a = addr(&web);
    // An idle keep-alive connection does not hold the stop up.
    let _idle = connect(a);
    let t = Instant::now();
    web.stop();
    assert!(t.elapsed() < Duration::from_secs(2));
    assert!(TcpStream::connect_timeout(&a, IO_TIMEOUT).is_err());
    let bad = FreshConfig {
        mean_change_secs: vec![],
        ..FreshConfig::default()
    };
    assert!(FreshWeb::start(bad).is_err());
}

#[test]
fn binary_fresh_and_fresh_report() {
    use std::process::{Command, Stdio};
    let exe = env!("CARGO_BIN_EXE_spinneret-testserver");
    let log_path = std::env::temp_dir().join(format!("freshweb-log-{}.tsv", std::process::id()));
    let flags = [
        "--pages",
        "6",
        "--seed",
        "9",
        "--mean-change-secs",
        "0,0.5",
        "--article-secs",
        "0.25",
        "--lifetime",
        "2",
    ];
    let mut child = Command::new(exe)
        .arg("fresh")
        .args(flags)
        .arg("--log")
        .arg(&log_path)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let (line, port) = ready_line(&mut child);
    assert!(line.contains(&format!("seed=http://127.0.0.1:{port}/")));
    let a = SocketAddr::from(([127, 0, 0, 1], port));
    let mut conn = connect(a);
    let mut buf = Vec::new();
    // A crawler of sorts: every page twice, the second time conditionally; the news in
    // between, and then the article published after it.
    let mut etags = vec![String::new(); 6];
    let mut next_article = 0;
    for round in 0..2 {
        for (i, etag) in etags.iter_mut().enumerate() {
            let extra = if round == 0 {
                String::new()
            } else {
                format!("If-None-Match: {etag}\r\n")
            };
            let r = ask(&mut conn, &mut buf, &format!("/p/{i}"), &extra);
            *etag = r.header("etag").unwrap().to_string();
        }
        if round == 0 {
            let news = String::from_utf8(ask(&mut conn, &mut buf, "/news/", "").body).unwrap();
            let at = news.find("href=\"/news/a/").unwrap() + "href=\"/news/a/".len();
            let len = news[at..].find('"').unwrap();
            next_article = news[at..at + len].parse::<u64>().unwrap() + 1;
            std::thread::sleep(Duration::from_millis(600));
        } else {
            let r = ask(&mut conn, &mut buf, &format!("/news/a/{next_article}"), "");
            assert_eq!(r.status, 200);
        }
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success());
            break;
        }
        assert!(Instant::now() < deadline, "fresh outlived --lifetime");
        std::thread::sleep(Duration::from_millis(50));
    }
    let text = std::fs::read_to_string(&log_path).unwrap();
    assert!(text.starts_with(LOG_HEADER));
    let (log, dropped) = parse_log(&text).unwrap();
    assert_eq!((log.len(), dropped), (14, 0));
    // Pages 0, 2 and 4 never change: the second round is three 304s.
    let static_304 = log
        .iter()
        .filter(|e| e.status == 304 && ["/p/0", "/p/2", "/p/4"].contains(&e.path.as_str()))
        .count();
    assert_eq!(static_304, 3);

    let out = Command::new(exe)
        .arg("fresh-report")
        .args(flags)
        .arg("--log")
        .arg(&log_path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = String::from_utf8(out.stdout).unwrap();
    let value = |k: &str| {
        report
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{k}=")))
            .unwrap_or_else(|| panic!("no {k} in {report}"))
            .to_string()
    };
    assert_eq!(value("requests"), "14");
    assert_eq!(value("changing_pages"), "3");
    assert_eq!(value("changing_fetches"), "6");
    assert_eq!(value("static_refetches"), "3");
    assert_eq!(value("static_not_modified"), "3");
    assert_eq!(value("articles_captured"), "1");
    assert_eq!(value("log_dropped"), "0");
    let freshness: f64 = value("freshness").parse().unwrap();
    assert!((0.0..=1.0).contains(&freshness));
    // The same figures as the library's, from the same log.
    let cfg = FreshConfig {
        pages: 6,
        seed: 9,
        mean_change_secs: vec![0.0, 0.5],
        article_secs: 0.25,
        lifetime: Duration::from_secs(2),
        port: 0,
    };
    let lib = analyze(&cfg, &log, None);
    assert_eq!(value("freshness"), format!("{:.6}", lib.freshness.unwrap()));
    let _ = std::fs::remove_file(&log_path);

    let bad = Command::new(exe)
        .args(["fresh-report", "--pages", "3"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2), "fresh-report without --log");
}
