//! The crawl's manners on the simulated web and clock ([`super::sim`]): 429 and 503 retried
//! after `Retry-After` with the whole host held, the cap, the tries bound, the slowdown after
//! 429s, robots.txt answering "later", cookies kept, sent and kept apart, and all of it
//! through a save and restore of the per-host state.

use std::time::Duration;

use super::sim::{response, sim_wall, Reply, Sim, Web};
use super::url_filter::{FilterConfig, Scope};
use super::*;
use crate::datetime::http_date;
use crate::robots::RobotsCache;

const STEPS: usize = 10_000;

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

/// Any scope, 1 s per host, no delay factor (gaps are exactly the delay).
fn config() -> CrawlConfig {
    let filter = FilterConfig {
        scope: Scope::Any,
        ..FilterConfig::default()
    };
    CrawlConfig {
        delay: secs(1),
        delay_factor: 0.0,
        ..CrawlConfig::new(filter, 4)
    }
}

fn raw(status: u16, headers: &[(&str, &str)], body: &str) -> Reply {
    Reply::Raw(response(status, headers, body))
}

fn page(body: &str) -> Reply {
    raw(200, &[("Content-Type", "text/html")], body)
}

fn outcomes(sim: &mut Sim, url: &str) -> Vec<(ReturnCode, u16)> {
    let lines = sim.lines_for(url);
    lines.iter().map(|l| (l.outcome, l.status)).collect()
}

/// Requests to `host` after the one that ended at `end` start `wait` later at least.
fn held_after(sim: &Sim, host: &str, end: Duration, wait: Duration) {
    for r in sim.issued_to(host).iter().filter(|r| r.at >= end) {
        assert!(
            r.at >= end + wait,
            "{} at {:?}, before {end:?} + {wait:?}",
            r.url,
            r.at
        );
    }
}

/// The first request to `url` and when it ended.
fn first_end(sim: &Sim, url: &str) -> Duration {
    let url = url::Url::parse(url).unwrap().to_string();
    let r = sim.issued.iter().find(|r| r.url == url).expect("requested");
    r.end.expect("completed")
}

#[test]
fn a_429_is_retried_after_its_retry_after_and_the_whole_host_waits() {
    let mut web = Web::default();
    web.in_turn(
        "http://a.test/",
        vec![
            raw(429, &[("Retry-After", "3")], ""),
            page(r#"<a href="/x">x</a>"#),
        ],
    );
    web.page("http://a.test/x", &[]);
    web.page("http://a.test/y", &[]);
    let mut sim = Sim::new(config(), web, &["http://a.test/", "http://a.test/y"]);
    sim.run(STEPS);
    assert_eq!(
        outcomes(&mut sim, "http://a.test/"),
        [(ReturnCode::RetryLater, 429), (ReturnCode::Success, 200)],
        "each try has its line; the last is the answer"
    );
    assert_eq!(
        outcomes(&mut sim, "http://a.test/x"),
        [(ReturnCode::Success, 200)]
    );
    // Not only the URL: nothing on the host is asked for within 3 s of the 429 (and after
    // it, the host is slowed down: 2 s gaps).
    let end = first_end(&sim, "http://a.test/");
    held_after(&sim, "a.test", end, secs(3));
    let reqs = sim.issued_to("a.test");
    let after: Vec<_> = reqs.iter().filter(|r| r.at > end).collect();
    assert_eq!(after[0].url, "http://a.test/", "the retried URL goes first");
    for w in after.windows(2) {
        assert!(w[1].at >= w[0].end.unwrap() + secs(2), "slowed: {w:?}");
    }
    let c = sim.crawl.counters();
    assert_eq!((c.url_lines.tries, c.url_lines.lines()), (1, 3));
    assert_eq!(c.url_lines.http_errors, 0, "a try is no HTTP error");
}

#[test]
fn a_retry_after_date_is_read_against_the_response_s_date() {
    // The server's clock is a day behind ours: its Date and Retry-After still mean 5 s.
    let server_now = sim_wall() - secs(86_400);
    let (date, after) = (http_date(server_now), http_date(server_now + secs(5)));
    let mut web = Web::default();
    web.in_turn(
        "http://a.test/",
        vec![
            raw(503, &[("Date", &date), ("Retry-After", &after)], ""),
            page("ok"),
        ],
    );
    let mut sim = Sim::new(config(), web, &["http://a.test/"]);
    sim.run(STEPS);
    assert_eq!(
        outcomes(&mut sim, "http://a.test/"),
        [(ReturnCode::RetryLater, 503), (ReturnCode::Success, 200)]
    );
    let end = first_end(&sim, "http://a.test/");
    held_after(&sim, "a.test", end, secs(5));
    let again = sim.issued_to("a.test").last().unwrap().at;
    assert!(again < end + secs(6), "waited 5 s, not a day: {again:?}");
}

#[test]
fn the_cap_holds_and_a_host_is_not_held_longer() {
    let mut web = Web::default();
    web.in_turn(
        "http://a.test/",
        vec![raw(429, &[("Retry-After", "3600")], ""), page("ok")],
    );
    let mut config = config();
    config.manners.max_retry_after = secs(1);
    let mut sim = Sim::new(config, web, &["http://a.test/"]);
    sim.run(STEPS);
    assert_eq!(
        outcomes(&mut sim, "http://a.test/").last(),
        Some(&(ReturnCode::Success, 200))
    );
    let end = first_end(&sim, "http://a.test/");
    let again = sim.issued_to("a.test").last().unwrap().at;
    // The cap (1 s) or the slowed gap (2 × 1 s), whichever is longer: not an hour.
    assert!(
        again >= end + secs(2) && again < end + secs(3),
        "{again:?} after {end:?}"
    );
}

#[test]
fn after_max_retries_the_last_answer_stands() {
    let mut web = Web::default();
    web.reply("http://a.test/", raw(503, &[], "down"));
    web.page("http://b.test/", &[]);
    let mut config = config();
    config.manners.max_retries = 2;
    let mut sim = Sim::new(config, web, &["http://a.test/", "http://b.test/"]);
    sim.run(STEPS);
    assert_eq!(
        outcomes(&mut sim, "http://a.test/"),
        [
            (ReturnCode::RetryLater, 503),
            (ReturnCode::RetryLater, 503),
            (ReturnCode::Success, 503)
        ]
    );
    // No Retry-After: 5 s, then 10 s (doubling). A 503 does not slow the host down.
    let reqs = sim.issued_to("a.test");
    let pages: Vec<_> = reqs.iter().filter(|r| r.url == "http://a.test/").collect();
    assert!(pages[1].at >= pages[0].end.unwrap() + secs(5), "{pages:?}");
    assert!(pages[2].at >= pages[1].end.unwrap() + secs(10), "{pages:?}");
    assert_eq!(sim.crawl.gate.slowdown("a.test"), 1);
    // Other hosts go on meanwhile.
    let b = sim.issued_to("b.test");
    assert!(b.iter().all(|r| r.end.unwrap() < pages[1].at), "{b:?}");
    assert_eq!(
        sim.crawl.counters().url_lines.http_errors,
        1,
        "the standing 503"
    );
}

#[test]
fn repeated_429s_slow_a_host_down_for_good_within_a_bound() {
    let mut web = Web::default();
    let too_many = || raw(429, &[("Retry-After", "0")], "");
    let links: Vec<String> = (1..=4).map(|i| format!("/p{i}")).collect();
    let refs: Vec<&str> = links.iter().map(String::as_str).collect();
    let front = super::sim::html(&refs);
    let mut replies = vec![too_many(); 5];
    replies.push(page(&front));
    web.in_turn("http://a.test/", replies);
    for l in &links {
        web.page(&format!("http://a.test{l}"), &[]);
    }
    let mut config = config();
    config.manners.max_retries = 5;
    let mut sim = Sim::new(config, web, &["http://a.test/"]);
    sim.run(STEPS);
    assert_eq!(sim.times_issued("http://a.test/"), 6);
    // Five 429s: 2^5, bounded at 8.
    assert_eq!(sim.crawl.gate.slowdown("a.test"), 8);
    let leaves: Vec<_> = sim
        .issued_to("a.test")
        .into_iter()
        .filter(|r| r.url.contains("/p"))
        .collect();
    assert_eq!(leaves.len(), 4);
    for w in leaves.windows(2) {
        let gap = w[1].at - w[0].end.unwrap();
        assert!(gap >= secs(8) && gap < secs(9), "gap {gap:?}");
    }
}

#[test]
fn robots_txt_answering_429_is_asked_again_after_its_retry_after() {
    let mut web = Web::default();
    web.in_turn(
        "http://a.test/robots.txt",
        vec![
            raw(429, &[("Retry-After", "30")], ""),
            raw(
                200,
                &[("Content-Type", "text/plain")],
                "User-agent: *\nDisallow: /private\n",
            ),
        ],
    );
    web.page("http://a.test/", &["/private", "/public"]);
    web.page("http://a.test/public", &[]);
    let mut sim = Sim::new(config(), web, &["http://a.test/"]);
    sim.run(STEPS);
    assert_eq!(
        outcomes(&mut sim, "http://a.test/robots.txt"),
        [(ReturnCode::RetryLater, 429), (ReturnCode::Success, 200)]
    );
    // The robots back-off is 10 s; the server asked for 30: nothing before that.
    let end = first_end(&sim, "http://a.test/robots.txt");
    held_after(&sim, "a.test", end, secs(30));
    assert_eq!(
        outcomes(&mut sim, "http://a.test/"),
        [(ReturnCode::Success, 200)]
    );
    assert_eq!(
        outcomes(&mut sim, "http://a.test/private"),
        [(ReturnCode::RobotsExcluded, 0)],
        "the rules fetched on the retry apply"
    );
    let robots = &sim.crawl.counters().robots_lines;
    assert_eq!((robots.tries, robots.lines()), (1, 1));
}

/// A site in front of its content: without the cookie every page sets it and redirects to
/// itself.
fn gated_site(web: &mut Web, host: &str, paths: &[(&str, &[&str])]) {
    for (path, links) in paths {
        let url = format!("http://{host}{path}");
        let content = page(&super::sim::html(links));
        let set = raw(
            302,
            &[("Set-Cookie", "gate=open; Path=/"), ("Location", path)],
            "",
        );
        web.gated(&url, "gate=open", content, set);
    }
}

#[test]
fn a_site_that_sets_a_cookie_and_redirects_to_itself_is_entered() {
    let mut web = Web::default();
    gated_site(
        &mut web,
        "a.test",
        &[("/", &["/in", "http://b.test/"]), ("/in", &[])],
    );
    web.page("http://b.test/", &[]);
    let mut sim = Sim::new(config(), web, &["http://a.test/"]);
    sim.run(STEPS);
    assert_eq!(
        outcomes(&mut sim, "http://a.test/"),
        [(ReturnCode::Success, 302), (ReturnCode::Success, 200)]
    );
    assert_eq!(
        outcomes(&mut sim, "http://a.test/in"),
        [(ReturnCode::Success, 200)]
    );
    let cookies: Vec<Option<String>> = sim
        .issued_to("a.test")
        .iter()
        .map(|r| r.cookie.clone())
        .collect();
    assert_eq!(
        cookies[..2],
        [None, None],
        "robots.txt, then the first request"
    );
    assert!(cookies[2..]
        .iter()
        .all(|c| c.as_deref() == Some("gate=open")));
    assert!(
        sim.issued_to("b.test").iter().all(|r| r.cookie.is_none()),
        "no leak"
    );
    assert_eq!(sim.crawl.counters().urls_readmitted, 1);
}

#[test]
fn without_cookies_the_gate_stays_shut_and_a_cookie_loop_is_bounded() {
    let mut web = Web::default();
    gated_site(&mut web, "a.test", &[("/", &["/in"])]);
    let mut config = config();
    config.manners.cookies.enabled = false;
    let mut sim = Sim::new(config, web, &["http://a.test/"]);
    sim.run(STEPS);
    assert_eq!(
        outcomes(&mut sim, "http://a.test/"),
        [(ReturnCode::Success, 302)]
    );
    // A site that sets a new cookie and redirects to itself forever: the hop bound ends it.
    let mut web = Web::default();
    let replies = (0..20)
        .map(|i| {
            let cookie = format!("n={i}");
            raw(302, &[("Set-Cookie", &cookie), ("Location", "/")], "")
        })
        .collect();
    web.in_turn("http://a.test/", replies);
    let config = CrawlConfig {
        max_redirects: 3,
        ..self::config()
    };
    let mut sim = Sim::new(config, web, &["http://a.test/"]);
    sim.run(STEPS);
    assert_eq!(
        sim.times_issued("http://a.test/"),
        4,
        "the first fetch and 3 hops"
    );
    let mut got = outcomes(&mut sim, "http://a.test/");
    got.sort();
    let want = [(ReturnCode::Success, 302); 4];
    assert_eq!(got[..4], want);
    assert_eq!(got[4..], [(ReturnCode::TooManyRedirects, 0)]);
}

#[test]
fn loaded_cookies_open_the_gate_from_the_first_request() {
    let mut web = Web::default();
    gated_site(&mut web, "a.test", &[("/", &[])]);
    let mut config = config();
    config.manners.cookies.load = Some("a.test\tFALSE\t/\tFALSE\t0\tgate\topen\n".into());
    let mut sim = Sim::new(config, web, &["http://a.test/"]);
    sim.run(STEPS);
    assert_eq!(
        outcomes(&mut sim, "http://a.test/"),
        [(ReturnCode::Success, 200)]
    );
}

#[test]
fn slowdown_cookies_and_a_wait_survive_a_save_and_restore() {
    let mut web = Web::default();
    web.in_turn(
        "http://a.test/",
        vec![
            raw(429, &[("Retry-After", "600"), ("Set-Cookie", "s=1")], ""),
            page("ok"),
        ],
    );
    let mut sim = Sim::new(config(), web, &["http://a.test/"]);
    // Until the 429 is in: robots.txt, then the page.
    while sim.issued.len() < 2 || sim.issued[1].end.is_none() {
        assert!(!sim.step(), "finished early");
    }
    let now = sim.now;
    sim.crawl.save_hosts(now);
    let state = sim.crawl.sink().hosts.clone().expect("saved");
    let wall = sim_wall() + (now - sim.t0) + secs(60);
    let mut resumed = Crawl::new(config(), sink::MemorySink::default(), now, wall);
    let restored = resumed.restore_hosts(&state, now, secs(60)).unwrap();
    assert!(restored.next_contacts >= 1);
    assert_eq!(resumed.gate.slowdown("a.test"), 2);
    let url = url::Url::parse("http://a.test/").unwrap();
    assert_eq!(resumed.gate.cookie_for(&url, now).as_deref(), Some("s=1"));
    // The host still waits what is left of its 600 s.
    resumed.add_seed(url).unwrap();
    match resumed.next_fetch(now) {
        Next::Wait(t) => assert!(
            t >= now + secs(530) && t <= now + secs(540),
            "{:?}",
            t - now
        ),
        _ => panic!("the host must wait"),
    }
}

#[test]
fn per_host_state_of_version_1_is_still_read() {
    // What a crawl saved before cookies: version 1, nothing after the contacts.
    let mut v1 = Vec::new();
    crate::codec::put_varint(&mut v1, 1);
    let mut robots = Vec::new();
    let now = std::time::Instant::now();
    RobotsCache::new("x", ROBOTS_MAX_AGE, ROBOTS_RETRY, 10).save(now, &mut robots);
    crate::codec::put_bytes(&mut v1, &robots);
    for _ in 0..3 {
        crate::codec::put_varint(&mut v1, 0);
    }
    let mut crawl = Crawl::new(config(), sink::MemorySink::default(), now, sim_wall());
    assert!(crawl.restore_hosts(&v1, now, secs(1)).is_ok());
    v1.push(0);
    assert!(
        crawl.restore_hosts(&v1, now, secs(1)).is_err(),
        "trailing bytes"
    );
}
