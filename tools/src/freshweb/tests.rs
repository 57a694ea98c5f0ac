//! The changing web's own tests: the schedule, routes and validators (no false 304 for any
//! pair of versions), the log's text form, and the analysis on hand-made logs whose answers
//! are worked out by hand.

use super::analysis::{page_freshness, quantile};
use super::pages::{route, Route, Site};
use super::*;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

fn assert_close(got: Option<f64>, want: f64, what: &str) {
    let got = got.unwrap_or_else(|| panic!("{what}: none"));
    assert!(close(got, want), "{what}: {got} != {want}");
}

#[test]
fn schedule_follows_the_seed_and_the_rates() {
    let cfg = FreshConfig {
        pages: 8,
        mean_change_secs: vec![0.0, 10.0],
        ..FreshConfig::default()
    };
    let a = Schedule::new(&cfg, 100_000.0);
    let b = Schedule::new(&cfg, 50_000.0);
    let c = Schedule::new(
        &FreshConfig {
            seed: 1,
            ..cfg.clone()
        },
        100_000.0,
    );
    for i in 0..8 {
        let ch = a.changes(i);
        if i % 2 == 0 {
            assert!(ch.is_empty());
            assert_eq!(a.mean_change_secs(i), 0.0);
            continue;
        }
        // A shorter horizon is a prefix; another seed, other times.
        assert_eq!(b.changes(i), &ch[..b.changes(i).len()]);
        assert_ne!(c.changes(i), ch);
        assert!(ch.windows(2).all(|w| w[0] <= w[1]) && ch[0] > 0.0);
        assert!(*ch.last().unwrap() <= 100_000.0);
        // About 10 000 changes of mean 10 s: within 5 %.
        let mean = ch.last().unwrap() / ch.len() as f64;
        assert!(
            (9.5..10.5).contains(&mean),
            "page {i}: mean interval {mean}"
        );
        assert_eq!(a.version_at(i, 0.0), 0);
        assert_eq!(a.version_at(i, ch[0]), 1);
        assert_eq!(a.version_at(i, ch[0] - 1e-9), 0);
        assert_eq!(a.version_time(i, 2), Some(ch[1]));
    }
}

#[test]
fn articles_are_published_on_the_grid() {
    let s = Schedule::from_parts(vec![], vec![], 0.1, 100.0);
    assert_eq!(s.articles_at(-1.0), 0);
    assert_eq!(s.articles_at(0.0), 1);
    for k in 0..2000 {
        let t = k as f64 * 0.0137;
        let n = s.articles_at(t);
        assert!(
            s.article_time(n - 1) <= t && s.article_time(n) > t,
            "t={t} n={n}"
        );
    }
    // Exactly at a publication time, it is out.
    assert_eq!(s.articles_at(s.article_time(7)), 8);
}

#[test]
fn config_checks() {
    assert_eq!(FreshConfig::default().check(), Ok(()));
    let bad = |f: fn(&mut FreshConfig)| {
        let mut c = FreshConfig::default();
        f(&mut c);
        c.check().is_err()
    };
    assert!(bad(|c| c.pages = 0));
    assert!(bad(|c| c.mean_change_secs.clear()));
    assert!(bad(|c| c.mean_change_secs = vec![-1.0]));
    assert!(bad(|c| c.mean_change_secs = vec![f64::NAN]));
    assert!(bad(|c| c.article_secs = 0.0));
    assert!(bad(|c| {
        c.pages = 100_000;
        c.mean_change_secs = vec![0.01];
    }));
}

#[test]
fn routes_are_exact_and_canonical() {
    assert_eq!(route("/", 5), Some(Route::Index));
    assert_eq!(route("/p/0", 5), Some(Route::Page(0)));
    assert_eq!(route("/p/4", 5), Some(Route::Page(4)));
    assert_eq!(route("/news/", 5), Some(Route::News));
    assert_eq!(route("/news/feed.xml", 5), Some(Route::Feed));
    assert_eq!(route("/news/a/12", 5), Some(Route::Article(12)));
    assert_eq!(route("/robots.txt", 5), Some(Route::Robots));
    for missing in [
        "/p/5",
        "/p/04",
        "/p/",
        "/p/-1",
        "/p/1?x",
        "/news",
        "/news/a/",
        "/news/a/01",
        "/news/a/99999999999999999999",
        "/index.html",
        "",
    ] {
        assert_eq!(route(missing, 5), None, "{missing}");
    }
}

/// A site over a hand-made page timeline, dates from 1 000 000.
fn site_of<'a>(schedule: &'a Schedule, cfg: &'a FreshConfig) -> Site<'a> {
    Site {
        cfg,
        schedule,
        port: 8080,
        date_base: 1_000_000,
    }
}

#[test]
fn validators_never_allow_a_false_304() {
    // Changes within one second of each other, on a second, and far apart.
    let changes = vec![0.2, 0.5, 1.7, 3.0, 3.9, 10.0, 10.0000001, 20.5];
    let schedule = Schedule::from_parts(vec![1.0], vec![changes.clone()], 1.0, 100.0);
    let cfg = FreshConfig {
        pages: 1,
        ..FreshConfig::default()
    };
    let site = site_of(&schedule, &cfg);
    let mut times: Vec<f64> = changes
        .iter()
        .flat_map(|&c| [c - 1e-6, c, c + 0.3])
        .collect();
    times.push(0.0);
    let states: Vec<_> = times
        .iter()
        .map(|&t| (t, site.state("/p/0", t).unwrap()))
        .collect();
    for (t, s) in &states {
        assert_eq!(s.version as usize, schedule.version_at(0, *t));
        // Never dated before its change.
        let at = schedule.version_time(0, s.version as usize).unwrap();
        assert!(s.validators.last_modified as f64 >= 1_000_000.0 + at);
    }
    for (held_at, held) in &states {
        // A client holds what it got earlier (or at the same instant).
        for (_, now) in states.iter().filter(|(t, _)| t >= held_at) {
            let same = held.version == now.version;
            assert_eq!(held.validators.etag == now.validators.etag, same);
            // A client echoing the date of the version it holds.
            let lm = crate::http_date::format(held.validators.last_modified);
            let headers = [httparse::Header {
                name: "If-Modified-Since",
                value: lm.as_bytes(),
            }];
            let v = &now.validators;
            let date = v.date_trusted.then_some(v.last_modified);
            let not_modified = crate::conditional::is_not_modified(&headers, b"\"x\"", date);
            assert!(
                !not_modified || same,
                "false 304: held {} now {}",
                held.version,
                now.version
            );
        }
    }
    // Where versions are a second or more apart, the date alone does give a 304.
    let v3 = site.state("/p/0", 3.5).unwrap();
    assert!(v3.validators.date_trusted);
    let v2 = site.state("/p/0", 0.6).unwrap();
    assert!(!v2.validators.date_trusted, "0.2 and 0.5 share a second");
}

#[test]
fn news_and_articles_follow_the_clock() {
    let schedule = Schedule::from_parts(vec![], vec![vec![]], 2.0, 100.0);
    let cfg = FreshConfig {
        pages: 1,
        article_secs: 2.0,
        ..FreshConfig::default()
    };
    let site = site_of(&schedule, &cfg);
    assert!(site.state("/news/a/3", 5.9).is_none());
    let a3 = site.state("/news/a/3", 6.0).unwrap();
    assert_eq!(a3.validators.last_modified, 1_000_006);
    assert_eq!(site.state("/news/a/3", 50.0), Some(a3));
    let news = site.state("/news/", 61.0).unwrap();
    assert_eq!(news.version, 30);
    let (ct, body) = site.body(&news);
    assert!(ct.starts_with("text/html"));
    let body = String::from_utf8(body).unwrap();
    assert!(body.contains("type=\"application/rss+xml\" href=\"/news/feed.xml\""));
    let first = body.find("/news/a/30\"").unwrap();
    assert!(first < body.find("/news/a/29\"").unwrap(), "newest first");
    assert!(body.contains("/news/a/11\"") && !body.contains("/news/a/10\""));
    let feed = site.state("/news/feed.xml", 61.0).unwrap();
    assert_ne!(feed.validators.etag, news.validators.etag);
    let (ct, xml) = site.body(&feed);
    assert_eq!(ct, "application/rss+xml");
    let xml = String::from_utf8(xml).unwrap();
    assert_eq!(xml.matches("<item>").count(), 20);
    assert!(xml.contains("<link>http://127.0.0.1:8080/news/a/30</link>"));
    assert!(xml.contains("<pubDate>Mon, 12 Jan 1970 13:47:40 GMT</pubDate>"));
    // The page body shows its version, and only a new version changes it.
    let p = |t| site.body(&site.state("/p/0", t).unwrap()).1;
    assert_eq!(p(0.0), p(99.0));
    assert!(String::from_utf8(p(0.0)).unwrap().contains("Version 0"));
}

#[test]
fn log_lines_round_trip() {
    let mut e = LogEntry::new(12.345_678_901_234_5, b"GET", b"/p/3\t\n%");
    e.conditional = true;
    e.status = 304;
    e.version = 5;
    assert_eq!(e.path, "/p/3%09%0A%");
    let line = e.to_line();
    assert_eq!(line, "12.3456789012345\tGET\t/p/3%09%0A%\t1\t304\t0\t5");
    assert_eq!(LogEntry::parse_line(&line), Some(e.clone()));
    let mut text = format!("{LOG_HEADER}\n");
    format_log(&[e.clone(), e.clone()], &mut text);
    text.push_str("# dropped 7\n");
    assert_eq!(parse_log(&text), Ok((vec![e.clone(), e], 7)));
    assert!(parse_log("1\tGET\t/\t2\t200\t0\t0\n").is_err());
    assert!(parse_log("1\tGET\t/\t0\t200\t0\n").is_err());
    assert!(parse_log("x\tGET\t/\t0\t200\t0\t0\n").is_err());
}

fn entry(t: f64, path: &str, status: u16, version: i64, conditional: bool) -> LogEntry {
    LogEntry {
        t,
        method: "GET".into(),
        path: path.into(),
        conditional,
        status,
        body_bytes: if status == 200 { 100 } else { 0 },
        version,
    }
}

#[test]
fn one_page_freshness_and_age_by_hand() {
    let changes = [2.0, 5.0, 9.0];
    // v0 at 1: fresh 1..2, stale 2..6 (age 0..4: 8); v2 at 6: fresh 6..9, stale 9..10 (0.5).
    let f = page_freshness(&changes, &[(1.0, 0), (6.0, 2)], 1.0, 10.0);
    assert!(
        close(f.fresh, 4.0) && close(f.age, 8.5) && close(f.span, 9.0),
        "{f:?}"
    );
    // Counted from 3 on: the fetch at 1 still holds v0 there.
    let f = page_freshness(&changes, &[(1.0, 0), (6.0, 2)], 3.0, 7.0);
    assert!(close(f.fresh, 1.0) && close(f.age, (16.0 - 1.0) / 2.0) && close(f.span, 4.0));
    assert_eq!(quantile(&[1.0, 2.0, 3.0, 4.0], 0.5), Some(2.0));
    assert_eq!(quantile(&[1.0, 2.0, 3.0, 4.0], 0.9), Some(4.0));
    assert_eq!(quantile(&[], 0.5), None);
}

#[test]
fn the_whole_report_by_hand() {
    // Pages: A changes at 5; B changing but not before 100; C never changes.
    let schedule = Schedule::from_parts(
        vec![50.0, 50.0, 0.0],
        vec![vec![5.0], vec![100.0], vec![]],
        2.0,
        200.0,
    );
    let log = vec![
        entry(0.0, "/", 200, 0, false),
        entry(0.0, "/p/0", 200, 0, false),
        entry(0.0, "/p/1", 200, 0, false),
        entry(1.0, "/news/a/0", 200, 0, false),
        entry(1.0, "/p/2", 200, 0, false),
        entry(2.0, "/p/2", 200, 0, true),
        entry(2.5, "/news/a/1", 200, 0, false),
        entry(3.9, "/news/a/2", 404, -1, false),
        entry(4.5, "/news/a/2", 200, 0, false),
        entry(5.0, "/", 304, 0, true),
        entry(6.0, "/p/0", 200, 1, true),
        entry(7.0, "/", 200, 0, false),
        entry(9.0, "/news/a/3", 200, 0, false),
        entry(9.5, "/news/a/3", 200, 0, false),
        entry(10.0, "/robots.txt", 200, 0, false),
    ];
    let r = analyze_schedule(&schedule, &log, None);
    assert_eq!((r.window_start, r.window_end), (0.0, 10.0));
    assert_eq!((r.changing_pages, r.changing_pages_fetched), (2, 2));
    assert_eq!(r.changing_fetches, 3);
    // A: fresh 0..5 and 6..10, age 0.5; B fresh throughout: 19 of 20.
    assert_close(r.freshness, 0.95, "freshness");
    assert_close(r.mean_age_secs, 0.025, "age");
    // Round robin over A, B and C with the 5 page fetches, 2 s apart: A at 0, B at 2, C at
    // 4, A at 6, B at 8. A is stale 5..6 (age 1²/2); B counts from 2.
    assert_eq!(r.page_fetches, 5);
    assert_close(r.round_robin_freshness, 17.0 / 18.0, "rr freshness");
    assert_close(r.round_robin_mean_age_secs, 0.5 / 18.0, "rr age");
    // Articles 0..=5 published at 0, 2, …, 10; 0-3 fetched, 1, 0.5, 0.5 and 3 s late.
    assert_eq!((r.articles_published, r.articles_captured), (6, 4));
    assert_close(r.capture_latency_median_secs, 0.5, "median");
    assert_close(r.capture_latency_p90_secs, 3.0, "p90");
    // `/` twice after its first fetch (one conditional, a 304); C once, conditional.
    assert_eq!(r.static_pages, 2);
    assert_eq!(r.static_refetches, 3);
    assert_eq!(r.static_refetches_conditional, 2);
    assert_eq!(r.static_not_modified, 1);
    assert_eq!((r.requests, r.status_200, r.status_304), (15, 13, 1));
    assert_eq!(r.body_bytes, 1300);

    // A window from 5.5: A holds v0 (stale since 5) until 6, B is fresh; articles 3..=5.
    let r = analyze_schedule(&schedule, &log, Some((5.5, 10.0)));
    assert_close(r.freshness, 8.5 / 9.0, "windowed freshness");
    assert_close(r.mean_age_secs, (1.0 - 0.25) / 2.0 / 9.0, "windowed age");
    assert_eq!(r.changing_fetches, 1);
    assert_eq!((r.articles_published, r.articles_captured), (3, 1));
    assert_eq!(r.static_refetches, 1);
    let keys: Vec<_> = r.key_values().into_iter().map(|(k, _)| k).collect();
    assert_eq!(keys.len(), 22);
    assert!(keys.contains(&"rr_freshness") && keys.contains(&"capture_latency_p90_secs"));

    // An empty log: nothing to average.
    let r = analyze_schedule(&schedule, &[], None);
    assert_eq!(r.freshness, None);
    assert_eq!(r.round_robin_freshness, None);
    assert_eq!(r.key_values()[5], ("freshness", "none".to_string()));
}
