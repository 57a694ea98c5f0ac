//! Crawl policy driven end to end on a simulated web and clock ([`super::sim`]): politeness,
//! robots.txt, redirects, caps, one log line per URL, duplicate content.

use std::collections::HashMap;
use std::time::Duration;

use super::done::is_html;
use super::sim::{self, Reply, Sim, Web};
use super::url_filter::{FilterConfig, Scope};
use super::*;

const STEPS: usize = 10_000;

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

fn ms(m: u64) -> Duration {
    Duration::from_millis(m)
}

/// Defaults over 4 connections, any scope, 1 s per-host delay.
fn config(delay_factor: f64) -> CrawlConfig {
    let filter = FilterConfig {
        scope: Scope::Any,
        ..FilterConfig::default()
    };
    CrawlConfig {
        delay: secs(1),
        delay_factor,
        ..CrawlConfig::new(filter, 12)
    }
}

/// `host`'s front page linking to `/p1`..`/pN`, each a leaf.
fn site(web: &mut Web, host: &str, n: usize) {
    let links: Vec<String> = (1..=n).map(|i| format!("/p{i}")).collect();
    let refs: Vec<&str> = links.iter().map(String::as_str).collect();
    web.page(&format!("http://{host}/"), &refs);
    for l in &links {
        web.page(&format!("http://{host}{l}"), &[]);
    }
}

/// Asserts that `host` never had two fetches live and that each request came at least `gap`
/// after the previous one completed.
fn assert_spaced(sim: &Sim, host: &str, gap: Duration) {
    let reqs = sim.issued_to(host);
    assert!(reqs.len() > 1, "{host}: too few requests to measure");
    for w in reqs.windows(2) {
        let end = w[0].end.expect("completed");
        assert!(
            w[1].at >= end + gap,
            "{host}: {} at {:?} only {:?} after {} ended at {end:?} (gap {gap:?})",
            w[1].url,
            w[1].at,
            w[1].at.saturating_sub(end),
            w[0].url
        );
    }
}

fn outcomes(sim: &mut Sim, url: &str) -> Vec<ReturnCode> {
    sim.lines_for(url).iter().map(|l| l.outcome).collect()
}

/// Requests issued that are not robots.txt.
fn pages_issued(sim: &Sim) -> Vec<String> {
    sim.issued
        .iter()
        .filter(|i| !i.url.ends_with("/robots.txt"))
        .map(|i| i.url.clone())
        .collect()
}

#[test]
fn html_content_types() {
    assert!(is_html(None));
    assert!(is_html(Some(b"text/html")));
    assert!(is_html(Some(b"Text/HTML; charset=utf-8")));
    assert!(is_html(Some(b"application/xhtml+xml")));
    assert!(!is_html(Some(b"text/plain")));
    assert!(!is_html(Some(b"image/png")));
    assert!(!is_html(Some(b"text/htm")));
}

// ---- 1. politeness ----

#[test]
fn one_host_is_spaced_by_the_delay_while_hosts_overlap() {
    let mut web = Web::default();
    site(&mut web, "a.test", 5);
    site(&mut web, "b.test", 5);
    let mut sim = Sim::new(config(0.0), web, &["http://a.test/", "http://b.test/"]);
    sim.run(STEPS);
    for host in ["a.test", "b.test"] {
        // robots.txt, the front page and five leaves, each once.
        assert_eq!(sim.issued_to(host).len(), 7, "{host}");
        assert_spaced(&sim, host, secs(1));
    }
    let (a, b) = (sim.issued_to("a.test"), sim.issued_to("b.test"));
    let overlapping = a.iter().any(|x| {
        b.iter()
            .any(|y| x.at < y.end.unwrap() && y.at < x.end.unwrap())
    });
    assert!(overlapping, "two hosts are fetched in parallel");
    // Polite but not idle: seven requests one second apart plus 50 ms each.
    assert!(
        sim.now - sim.t0 < ms(6 * 1050 + 100),
        "took {:?}",
        sim.now - sim.t0
    );
}

#[test]
fn delay_factor_and_crawl_delay_widen_the_gap() {
    let mut web = Web::default();
    site(&mut web, "slow.test", 3);
    site(&mut web, "fast.test", 3);
    site(&mut web, "cd.test", 3);
    // 5 × 400 ms = 2 s beats the 1 s delay; the 50 ms host keeps the 1 s delay.
    web.latency("slow.test", ms(400));
    web.robots("http://cd.test", "User-agent: *\nCrawl-delay: 3\n");
    let seeds = ["http://slow.test/", "http://fast.test/", "http://cd.test/"];
    let mut sim = Sim::new(config(5.0), web, &seeds);
    sim.run(STEPS);
    assert_spaced(&sim, "slow.test", secs(2));
    assert_spaced(&sim, "fast.test", secs(1));
    // The gap after robots.txt is already the Crawl-delay it announced.
    assert_spaced(&sim, "cd.test", secs(3));
    for host in ["slow.test", "fast.test", "cd.test"] {
        assert_eq!(sim.issued_to(host).len(), 5, "{host}");
    }
}

#[test]
fn one_connection_still_serves_every_host() {
    let mut web = Web::default();
    site(&mut web, "a.test", 2);
    site(&mut web, "b.test", 2);
    let mut sim = Sim::new(config(0.0), web, &["http://a.test/", "http://b.test/"]);
    sim.max_live = 1;
    sim.run(STEPS);
    for w in sim.issued.windows(2) {
        assert!(
            w[1].at >= w[0].end.unwrap(),
            "only one fetch live at a time"
        );
    }
    assert_spaced(&sim, "a.test", secs(1));
    assert_eq!(sim.issued.len(), 8);
}

// ---- 2. robots.txt ----

#[test]
fn robots_first_disallowed_never_fetched_missing_allows_all() {
    let mut web = Web::default();
    web.robots("http://a.test", "User-agent: *\nDisallow: /private\n")
        .page(
            "http://a.test/",
            &["/private/x", "/public", "http://b.test/"],
        )
        .page("http://a.test/public", &[])
        .page("http://a.test/private/x", &[])
        // b.test has no robots.txt (404): everything allowed.
        .page("http://b.test/", &["/private/y"])
        .page("http://b.test/private/y", &[]);
    let mut sim = Sim::new(config(0.0), web, &["http://a.test/"]);
    sim.run(STEPS);
    for host in ["a.test", "b.test"] {
        let reqs = sim.issued_to(host);
        assert!(reqs[0].url.ends_with("/robots.txt"), "{host}: {reqs:?}");
        assert_eq!(sim.times_issued(&format!("http://{host}/robots.txt")), 1);
    }
    assert_eq!(sim.times_issued("http://a.test/private/x"), 0);
    let x = sim.lines_for("http://a.test/private/x");
    assert_eq!(x.len(), 1);
    assert_eq!(x[0].outcome, ReturnCode::RobotsExcluded);
    assert_eq!(x[0].referrer.as_deref(), Some("http://a.test/"));
    assert!(!x[0].stored);
    assert_eq!(sim.times_issued("http://a.test/public"), 1);
    assert_eq!(sim.times_issued("http://b.test/private/y"), 1);
    assert_eq!(
        outcomes(&mut sim, "http://b.test/private/y"),
        [ReturnCode::Success]
    );
    assert_eq!(sim.crawl.counters().robots_excluded, 1);
}

#[test]
fn robots_failures_back_off_then_exclude() {
    let failures = [
        Reply::Fail(ReturnCode::HttpConnect),
        Reply::Raw(super::sim::response(503, &[], "busy")),
        Reply::Raw(super::sim::response(429, &[], "slow down")),
    ];
    for failure in failures {
        let mut web = Web::default();
        web.reply("http://a.test/robots.txt", failure.clone());
        web.page("http://a.test/", &["/x"]);
        site(&mut web, "b.test", 3);
        let seeds = ["http://a.test/", "http://a.test/y", "http://b.test/"];
        let mut sim = Sim::new(config(0.0), web, &seeds);
        sim.run(STEPS);
        let a = sim.issued_to("a.test");
        let n = usize::from(MAX_ROBOTS_FAILURES);
        assert_eq!(a.len(), n, "{failure:?}: only robots.txt, {n} times: {a:?}");
        assert!(a.iter().all(|i| i.url == "http://a.test/robots.txt"));
        // Back-off doubles from ROBOTS_RETRY, measured from each failure.
        for (k, w) in a.windows(2).enumerate() {
            let backoff = ROBOTS_RETRY * (1 << k);
            assert!(
                w[1].at >= w[0].end.unwrap() + backoff,
                "{failure:?}: retry {} at {:?}, {backoff:?} after {:?}",
                k + 1,
                w[1].at,
                w[0].end
            );
        }
        // Then the waiting URLs end, once each, without a request, as robots.txt unreachable
        // (RFC 9309's complete disallow, named for what happened).
        for url in ["http://a.test/", "http://a.test/y"] {
            assert_eq!(
                outcomes(&mut sim, url),
                [ReturnCode::RobotsUnreachable],
                "{url}"
            );
        }
        // Another host is not held up by a's back-off.
        let b = sim.issued_to("b.test");
        assert_eq!(b.len(), 5);
        assert!(b.last().unwrap().end.unwrap() < ROBOTS_RETRY);
    }
}

#[test]
fn robots_recovers_after_one_failure() {
    let mut web = Web::default();
    web.reply(
        "http://a.test/robots.txt",
        Reply::Fail(ReturnCode::HttpConnectTimeout),
    );
    web.page("http://a.test/", &[]);
    let mut sim = Sim::new(config(0.0), web, &["http://a.test/"]);
    // Step until the first robots.txt attempt has failed, then let the server recover.
    for _ in 0..100 {
        if sim.issued.first().is_some_and(|i| i.end.is_some()) {
            break;
        }
        sim.step();
    }
    sim.web.robots("http://a.test", "User-agent: *\nAllow: /\n");
    sim.run(STEPS);
    let a = sim.issued_to("a.test");
    let urls: Vec<&str> = a.iter().map(|i| i.url.as_str()).collect();
    assert_eq!(
        urls,
        [
            "http://a.test/robots.txt",
            "http://a.test/robots.txt",
            "http://a.test/"
        ]
    );
    assert!(a[1].at >= a[0].end.unwrap() + ROBOTS_RETRY);
    assert_eq!(outcomes(&mut sim, "http://a.test/"), [ReturnCode::Success]);
}

#[test]
fn robots_redirect_is_followed_before_the_hosts_pages() {
    let mut web = Web::default();
    // http → https, as many sites do: the rules found there govern the http origin.
    web.redirect("http://a.test/robots.txt", 301, "https://a.test/robots.txt")
        .robots("https://a.test", "User-agent: *\nDisallow: /no\n")
        .page("http://a.test/", &["/no", "/yes"])
        .page("http://a.test/yes", &[]);
    let mut sim = Sim::new(config(0.0), web, &["http://a.test/"]);
    sim.run(STEPS);
    let urls: Vec<String> = sim.issued.iter().map(|i| i.url.clone()).collect();
    assert_eq!(
        urls,
        [
            "http://a.test/robots.txt",
            "https://a.test/robots.txt",
            "http://a.test/",
            "http://a.test/yes"
        ]
    );
    assert_eq!(
        outcomes(&mut sim, "http://a.test/no"),
        [ReturnCode::RobotsExcluded]
    );
    assert_spaced(&sim, "a.test", Duration::ZERO);
}

#[test]
fn many_excluded_urls_do_not_stall_the_crawl() {
    // More exclusions than one `next_fetch` call examines: the source says "ask again now".
    let mut web = Web::default();
    web.robots("http://a.test", "User-agent: *\nDisallow: /\n");
    let n = 3 * MAX_POPS_PER_CALL;
    let seeds: Vec<String> = (0..n).map(|i| format!("http://a.test/{i}")).collect();
    let seeds: Vec<&str> = seeds.iter().map(String::as_str).collect();
    let mut sim = Sim::new(config(0.0), web, &seeds);
    sim.run(100);
    assert_eq!(sim.issued.len(), 1, "only robots.txt");
    assert_eq!(sim.crawl.counters().robots_excluded, n as u64);
    assert_eq!(sim.lines().len(), n + 1);
}

/// A robots.txt redirect to another host is a request to that host: it waits for that
/// host's gap and holds it (`robots_hops`), so its pages stay spaced around it.
#[test]
fn robots_redirect_to_another_host_keeps_its_spacing() {
    let mut web = Web::default();
    web.redirect("http://a.test/robots.txt", 301, "http://b.test/robots.txt")
        .page("http://a.test/", &[]);
    site(&mut web, "b.test", 3);
    web.latency("b.test", ms(500));
    let mut sim = Sim::new(config(0.0), web, &["http://b.test/", "http://a.test/"]);
    sim.run(STEPS);
    assert_eq!(outcomes(&mut sim, "http://a.test/"), [ReturnCode::Success]);
    assert_spaced(&sim, "b.test", secs(1));
}

/// A hop answered 429 slows its host down like any 429 from it: the host's next request
/// waits twice the delay.
#[test]
fn a_robots_hop_answered_429_slows_its_host_down() {
    let mut web = Web::default();
    web.redirect("http://a.test/robots.txt", 301, "http://b.test/robots.txt")
        // b.test's own robots.txt fetch comes first (the hop waits for b.test's turn).
        .in_turn(
            "http://b.test/robots.txt",
            vec![
                sim::Reply::Raw(sim::response(200, &[], "")),
                sim::Reply::Raw(sim::response(429, &[], "")),
            ],
        )
        .page("http://a.test/", &[]);
    site(&mut web, "b.test", 4);
    let mut sim = Sim::new(config(0.0), web, &["http://b.test/", "http://a.test/"]);
    sim.run(STEPS);
    let b = sim.issued_to("b.test");
    // The second robots.txt request is the hop (answered 429).
    let hop = (0..b.len())
        .filter(|&i| b[i].url.ends_with("/robots.txt"))
        .nth(1)
        .expect("the hop to b.test/robots.txt");
    let next = b.get(hop + 1).expect("a request to b.test after the hop");
    let gap = next.at - b[hop].end.expect("completed");
    assert!(gap >= secs(2), "{} came {gap:?} after the 429", next.url);
}

/// Two hosts whose robots.txt redirect to each other's: each hop waits for a host the other
/// job keeps busy, so neither would go; each goes unheld once it has waited
/// `robots_hops::MAX_WAIT_FOR_BUSY`, and both hosts' URLs end (as robots.txt unreachable:
/// the loop runs past the redirect limit).
#[test]
fn robots_redirects_to_each_others_host_do_not_stall_the_crawl() {
    let mut web = Web::default();
    web.redirect("http://a.test/robots.txt", 301, "http://b.test/robots.txt")
        .redirect("http://b.test/robots.txt", 301, "http://a.test/robots.txt")
        .page("http://a.test/", &[])
        .page("http://b.test/", &[]);
    let mut sim = Sim::new(config(0.0), web, &["http://a.test/", "http://b.test/"]);
    sim.run(STEPS);
    for url in ["http://a.test/", "http://b.test/"] {
        assert_eq!(
            outcomes(&mut sim, url),
            [ReturnCode::RobotsUnreachable],
            "{url}"
        );
    }
    // Every hop was issued: the first request and five hops a host, for each of the
    // tries robots.txt gets before it counts as unreachable.
    let robots = sim.issued.iter().filter(|i| i.url.ends_with("/robots.txt"));
    let per_try = 2 * (1 + usize::from(MAX_ROBOTS_REDIRECTS));
    assert_eq!(robots.count(), per_try * MAX_ROBOTS_FAILURES as usize);
    // Each hop waited at most MAX_WAIT_FOR_BUSY: the last request came after 301 s (with
    // no bound on the wait, after 270,000,030 s of simulated time).
    let last = sim.issued.iter().map(|i| i.at).max().unwrap();
    assert!(last < secs(600), "last request at {last:?}");
}

/// A hop still waiting for its host when the run stops is logged unfetched, as its origin's
/// queued URLs are.
#[test]
fn a_robots_hop_waiting_when_the_run_stops_gets_its_line() {
    let mut web = Web::default();
    web.redirect("http://a.test/robots.txt", 301, "http://b.test/robots.txt")
        .page("http://a.test/", &[])
        .page("http://b.test/", &[]);
    web.latency("b.test", secs(5));
    let config = CrawlConfig {
        max_time: Some(secs(2)),
        ..config(0.0)
    };
    let mut sim = Sim::new(config, web, &["http://b.test/", "http://a.test/"]);
    sim.run(STEPS);
    sim.crawl.finish_unfetched(ReturnCode::NotFetched, false);
    assert_eq!(sim.times_issued("http://a.test/robots.txt"), 1);
    assert_eq!(
        outcomes(&mut sim, "http://a.test/"),
        [ReturnCode::NotFetched]
    );
    let hop = sim
        .lines()
        .into_iter()
        .filter(|l| l.url.ends_with("b.test/robots.txt"))
        .map(|l| l.outcome)
        .collect::<Vec<_>>();
    assert!(hop.contains(&ReturnCode::NotFetched), "{hop:?}");
}

// ---- 3. redirects ----

#[test]
fn redirect_chain_stops_after_max_redirects() {
    let mut web = Web::default();
    let n = usize::from(MAX_REDIRECTS);
    for i in 0..=n + 1 {
        web.redirect(&format!("http://a.test/r{i}"), 301, &format!("/r{}", i + 1));
    }
    let mut sim = Sim::new(config(0.0), web, &["http://a.test/r0"]);
    sim.run(STEPS);
    // The URL first queued and MAX_REDIRECTS hops are fetched, each once.
    for i in 0..=n {
        let url = format!("http://a.test/r{i}");
        assert_eq!(sim.times_issued(&url), 1, "{url}");
        let lines = sim.lines_for(&url);
        assert_eq!(lines.len(), 1, "{url}");
        assert_eq!(
            (lines[0].outcome, lines[0].status),
            (ReturnCode::Success, 301)
        );
        let referrer = (i > 0).then(|| format!("http://a.test/r{}", i - 1));
        assert_eq!(lines[0].referrer, referrer, "{url}");
    }
    // The next hop is logged, not fetched.
    let next = format!("http://a.test/r{}", n + 1);
    assert_eq!(sim.times_issued(&next), 0);
    let lines = sim.lines_for(&next);
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0].outcome, ReturnCode::TooManyRedirects);
    assert_eq!(lines[0].referrer, Some(format!("http://a.test/r{n}")));
    assert_eq!(sim.crawl.counters().too_many_redirects, 1);
    assert_eq!(
        sim.crawl.counters().redirects_followed,
        u64::from(MAX_REDIRECTS)
    );
}

#[test]
fn redirect_to_a_seen_url_is_not_fetched_again() {
    let mut web = Web::default();
    web.page("http://a.test/", &["/a", "/b", "/c"])
        .page("http://a.test/a", &[])
        .redirect("http://a.test/b", 301, "/a")
        // A redirect loop ends too: /c → /d → /c.
        .redirect("http://a.test/c", 302, "http://a.test/d")
        .redirect("http://a.test/d", 307, "/c");
    let mut sim = Sim::new(config(0.0), web, &["http://a.test/"]);
    sim.run(STEPS);
    for url in ["/", "/a", "/b", "/c", "/d"] {
        let url = format!("http://a.test{url}");
        assert_eq!(sim.times_issued(&url), 1, "{url}");
        assert_eq!(sim.lines_for(&url).len(), 1, "{url}");
    }
    assert_eq!(
        sim.lines_for("http://a.test/d")[0].referrer.as_deref(),
        Some("http://a.test/c")
    );
}

#[test]
fn a_seed_given_again_on_resume_is_queued_only_if_unseen_and_never_counted() {
    let mut web = Web::default();
    web.page("http://a.test/", &["/a"])
        .page("http://a.test/a", &[])
        .page("http://a.test/lost", &[]);
    // The crawl as resumed: the journal gave it `/`; `resume` offers every seed again,
    // `/lost` among them (its admission was lost to a kill).
    let mut sim = Sim::new(config(0.0), web, &["http://a.test/"]);
    for seed in ["http://a.test/", "http://a.test/lost"] {
        sim.crawl.add_seed_again(Url::parse(seed).unwrap());
    }
    sim.run(STEPS);
    for url in ["http://a.test/", "http://a.test/a", "http://a.test/lost"] {
        assert_eq!(sim.times_issued(url), 1, "{url}");
    }
    // The seed the crawl had is no duplicate it found.
    assert_eq!(sim.crawl.counters().duplicate_urls, 0);
}

#[test]
fn a_sitemap_given_again_on_resume_is_fetched_only_if_the_journal_lacked_it() {
    let sitemap = |page: &str| {
        let body = format!(
            "<?xml version=\"1.0\"?><urlset \
             xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\"><url><loc>{page}</loc></url></urlset>"
        );
        Reply::Raw(sim::response(
            200,
            &[("Content-Type", "application/xml")],
            &body,
        ))
    };
    let mut web = Web::default();
    web.page("http://a.test/", &[])
        .reply("http://a.test/kept.xml", sitemap("http://a.test/x"))
        .reply("http://a.test/lost.xml", sitemap("http://a.test/y"))
        .page("http://a.test/x", &[])
        .page("http://a.test/y", &[]);
    let mut sim = Sim::new(config(0.0), web, &["http://a.test/"]);
    // The journal had `kept.xml` (and its page): as if given at the start and admitted.
    sim.crawl
        .add_sitemap(Url::parse("http://a.test/kept.xml").unwrap());
    for s in ["http://a.test/kept.xml", "http://a.test/lost.xml"] {
        sim.crawl.add_sitemap_again(Url::parse(s).unwrap());
    }
    sim.run(STEPS);
    for url in [
        "http://a.test/kept.xml",
        "http://a.test/lost.xml",
        "http://a.test/y",
    ] {
        assert_eq!(sim.times_issued(url), 1, "{url}");
    }
    assert_eq!(sim.crawl.counters().discovery.sitemaps_over_budget, 0);
    assert_eq!(sim.crawl.counters().duplicate_urls, 0);
}

// ---- 4. caps ----

#[test]
fn max_pages_stops_issuing() {
    let mut web = Web::default();
    site(&mut web, "a.test", 20);
    site(&mut web, "b.test", 20);
    let mut sim = Sim::new(
        CrawlConfig {
            max_pages: Some(5),
            ..config(0.0)
        },
        web,
        &["http://a.test/", "http://b.test/"],
    );
    sim.run(STEPS);
    assert_eq!(pages_issued(&sim).len(), 5);
    assert_eq!(sim.crawl.counters().pages_fetched, 5);
    // What was admitted but never issued is still in the frontier, unlogged.
    let admitted = sim.crawl.counters().urls_admitted as usize;
    assert_eq!(sim.crawl.frontier_len(), admitted - 5);
}

#[test]
fn max_pages_per_host_and_max_depth_limit_admission() {
    let mut web = Web::default();
    site(&mut web, "a.test", 10);
    let mut sim = Sim::new(
        CrawlConfig {
            filter: FilterConfig {
                max_pages_per_host: Some(3),
                ..config(0.0).filter
            },
            ..config(0.0)
        },
        web,
        &["http://a.test/"],
    );
    sim.run(STEPS);
    assert_eq!(
        pages_issued(&sim),
        ["http://a.test/", "http://a.test/p1", "http://a.test/p2"]
    );
    assert_eq!(sim.crawl.counters().urls_admitted, 3);

    let mut web = Web::default();
    web.page("http://a.test/", &["/d1"])
        .page("http://a.test/d1", &["/d2"])
        .page("http://a.test/d2", &["/d3"])
        .page("http://a.test/d3", &[]);
    let mut sim = Sim::new(
        CrawlConfig {
            filter: FilterConfig {
                max_depth: Some(1),
                ..config(0.0).filter
            },
            ..config(0.0)
        },
        web,
        &["http://a.test/"],
    );
    sim.run(STEPS);
    assert_eq!(pages_issued(&sim), ["http://a.test/", "http://a.test/d1"]);
    assert!(sim.lines_for("http://a.test/d2").is_empty());
}

#[test]
fn max_time_stops_issuing_at_the_deadline() {
    let mut web = Web::default();
    site(&mut web, "a.test", 20);
    let limit = secs(5);
    let mut sim = Sim::new(
        CrawlConfig {
            max_time: Some(limit),
            ..config(0.0)
        },
        web,
        &["http://a.test/"],
    );
    sim.run(STEPS);
    assert!(sim.issued.iter().all(|i| i.at < limit), "{:?}", sim.issued);
    // One request a second: robots.txt, then pages, until the deadline.
    assert_eq!(sim.issued.len(), 5);
    assert!(sim.crawl.frontier_len() > 0);
    assert!(sim.now - sim.t0 <= limit + secs(1));
}

// ---- 5. one line per URL ----

#[test]
fn every_admitted_url_ends_in_exactly_one_line() {
    let mut web = Web::default();
    web.robots("http://a.test", "User-agent: *\nDisallow: /no\n")
        .page(
            "http://a.test/",
            &[
                "/ok",
                "/missing",
                "/no/1",
                "/no/2",
                "/moved",
                "/plain",
                "/dup1",
                "/dup2",
                "/down",
                "http://b.test/",
                "http://c.test/x",
                "/ok#frag",
                "/ok",
            ],
        )
        .page("http://a.test/ok", &["/", "/ok"])
        .redirect("http://a.test/moved", 301, "/ok")
        .reply(
            "http://a.test/plain",
            Reply::Raw(super::sim::response(
                200,
                &[("Content-Type", "text/plain")],
                "<a href=/z>",
            )),
        )
        .html("http://a.test/dup1", "same")
        .html("http://a.test/dup2", "same")
        .reply("http://a.test/down", Reply::Fail(ReturnCode::HttpReceive))
        .page("http://b.test/", &["http://a.test/ok", "/b2"])
        .reply(
            "http://c.test/robots.txt",
            Reply::Fail(ReturnCode::DnsNxDomain),
        );
    let mut sim = Sim::new(config(0.0), web, &["http://a.test/"]);
    sim.run(STEPS);
    let mut per_url: HashMap<String, usize> = HashMap::new();
    let lines = sim.lines();
    for l in lines.iter().filter(|l| !l.url.ends_with("/robots.txt")) {
        *per_url.entry(l.url.clone()).or_default() += 1;
    }
    let twice: Vec<_> = per_url.iter().filter(|(_, &n)| n != 1).collect();
    assert!(twice.is_empty(), "URLs with more than one line: {twice:?}");
    let counters = sim.crawl.counters();
    assert_eq!(per_url.len() as u64, counters.urls_admitted);
    assert_eq!(sim.crawl.frontier_len(), 0);
    // Every page request made has its line, and nothing was requested twice.
    let issued = pages_issued(&sim);
    assert!(issued.iter().all(|u| per_url.contains_key(u)));
    let mut unique = issued.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), issued.len());
    let expect = [
        ("http://a.test/missing", ReturnCode::Success, 404),
        ("http://a.test/no/1", ReturnCode::RobotsExcluded, 0),
        ("http://a.test/dup2", ReturnCode::DuplicateContent, 200),
        ("http://a.test/down", ReturnCode::HttpReceive, 0),
        ("http://c.test/x", ReturnCode::RobotsUnreachable, 0),
        ("http://b.test/b2", ReturnCode::Success, 404),
    ];
    for (url, outcome, status) in expect {
        let l = &sim.lines_for(url)[0];
        assert_eq!((l.outcome, l.status), (outcome, status), "{url}");
    }
}

// ---- 6. duplicate content ----

#[test]
fn duplicate_content_is_logged_and_its_links_not_followed() {
    let mut web = Web::default();
    // Same bytes, different base: the relative link points elsewhere on each page.
    let body = super::sim::html(&["child"]);
    web.page("http://a.test/", &["/d1/page", "/d2/page"])
        .html("http://a.test/d1/page", &body)
        .html("http://a.test/d2/page", &body)
        .page("http://a.test/d1/child", &[]);
    let mut sim = Sim::new(config(0.0), web, &["http://a.test/"]);
    sim.run(STEPS);
    assert_eq!(
        outcomes(&mut sim, "http://a.test/d1/page"),
        [ReturnCode::Success]
    );
    let dup = sim.lines_for("http://a.test/d2/page");
    assert_eq!(dup.len(), 1);
    assert_eq!(
        (dup[0].outcome, dup[0].status),
        (ReturnCode::DuplicateContent, 200)
    );
    assert!(dup[0].stored, "a duplicate is still stored");
    assert_eq!(sim.times_issued("http://a.test/d1/child"), 1);
    assert_eq!(sim.times_issued("http://a.test/d2/child"), 0);
    assert!(sim.lines_for("http://a.test/d2/child").is_empty());
    assert_eq!(sim.crawl.counters().duplicate_content, 1);
}

// ---- 7. page requisites ----

/// A page on a.test (host scope) using an image on a CDN, a stylesheet whose url()s point at
/// a font elsewhere, and a script; the image is HTML-looking but must not be scanned.
fn requisite_web() -> Web {
    let mut web = Web::default();
    web.html(
        "http://a.test/",
        r#"<html><head><link rel=stylesheet href="/s.css"><script src="http://cdn.test/app.js"></script></head>
<body><img src="http://cdn.test/logo.png" srcset="http://cdn.test/logo2.png 2x"><a href="/next">n</a>
<a href="http://b.test/away">away</a></body></html>"#,
    )
    .page("http://a.test/next", &[])
    .reply(
        "http://a.test/s.css",
        Reply::Raw(super::sim::response(
            200,
            &[("Content-Type", "text/css")],
            "@import url(http://fonts.test/f.css); body{background:url(bg.png)}",
        )),
    )
    .reply(
        "http://cdn.test/logo.png",
        Reply::Raw(super::sim::response(
            200,
            &[("Content-Type", "text/html")],
            "<a href=\"/never\">not scanned</a>",
        )),
    );
    web
}

fn host_scope() -> CrawlConfig {
    CrawlConfig {
        filter: FilterConfig {
            scope: Scope::Host,
            ..FilterConfig::default()
        },
        ..config(0.0)
    }
}

#[test]
fn requisites_are_fetched_outside_scope_and_not_scanned() {
    let mut sim = Sim::new(host_scope(), requisite_web(), &["http://a.test/"]);
    sim.run(STEPS);
    for url in [
        "http://a.test/s.css",
        "http://cdn.test/app.js",
        "http://cdn.test/logo.png",
        "http://cdn.test/logo2.png",
        "http://fonts.test/f.css",
        "http://a.test/bg.png",
        "http://a.test/next",
    ] {
        assert_eq!(sim.times_issued(url), 1, "{url}");
    }
    // Out of scope as links, and links inside an embed are not followed.
    assert_eq!(sim.times_issued("http://b.test/away"), 0);
    assert_eq!(sim.times_issued("http://cdn.test/never"), 0);
    // Embeds are spaced like any fetch: robots.txt first on each new host.
    assert_eq!(sim.times_issued("http://cdn.test/robots.txt"), 1);
}

#[test]
fn without_page_requisites_only_links_are_followed() {
    let config = CrawlConfig {
        page_requisites: false,
        ..host_scope()
    };
    let mut sim = Sim::new(config, requisite_web(), &["http://a.test/"]);
    sim.run(STEPS);
    // The stylesheet is a <link>: followed in scope as before, but not scanned for url()s.
    assert_eq!(sim.times_issued("http://a.test/s.css"), 1);
    assert_eq!(sim.times_issued("http://a.test/next"), 1);
    for url in [
        "http://cdn.test/app.js",
        "http://cdn.test/logo.png",
        "http://fonts.test/f.css",
        "http://a.test/bg.png",
    ] {
        assert_eq!(sim.times_issued(url), 0, "{url}");
    }
}

// ---- per-host state across a resume ----

/// a.test asks for a 3 s Crawl-delay and disallows /p2; b.test answers in 400 ms.
fn polite_web() -> Web {
    let mut web = Web::default();
    site(&mut web, "a.test", 4);
    web.robots(
        "http://a.test",
        "User-agent: *\nDisallow: /p2\nCrawl-delay: 3\n",
    );
    site(&mut web, "b.test", 9);
    web.latency("b.test", ms(400));
    web
}

#[test]
fn a_restored_crawl_keeps_robots_rules_and_each_host_s_spacing() {
    let web = polite_web();
    let b_seed = ["http://b.test/p1"];
    let mut first = Sim::new(config(5.0), web, &["http://a.test/"]);
    let _ = first.crawl.add_seed(Url::parse(b_seed[0]).unwrap());
    // Bounded: the clock moves at every step.
    for _ in 0..STEPS {
        if first.now - first.t0 >= ms(3_000) || first.step() {
            break;
        }
    }
    first.crawl.save_hosts(first.now);
    let saved_at = first.now - first.t0;
    let state = first.crawl.sink().hosts.clone().expect("state saved");
    // b.test: robots.txt, then p1 two seconds (5 × 400 ms) after it ended; no URL left,
    // so the host is parked with its next contact 2 s after its last fetch ended.
    let b_last_end = first.issued_to("b.test").last().unwrap().end.unwrap();
    assert_eq!(first.issued_to("b.test").len(), 2);

    let web = polite_web();
    let seeds = ["http://a.test/p3", "http://a.test/p2", "http://b.test/p9"];
    let mut second = Sim::new(config(5.0), web, &seeds);
    let elapsed = ms(500);
    let restored = second
        .crawl
        .restore_hosts(&state, second.t0, elapsed)
        .expect("state decodes");
    assert_eq!(restored.robots, 2);
    second.run(STEPS);
    assert!(
        second
            .issued
            .iter()
            .all(|i| !i.url.ends_with("/robots.txt")),
        "robots.txt fetched again: {:?}",
        second.issued
    );
    assert_eq!(second.times_issued("http://a.test/p2"), 0);
    assert_eq!(
        outcomes(&mut second, "http://a.test/p2"),
        [ReturnCode::RobotsExcluded]
    );
    // a.test may have been contacted just before the stop: its Crawl-delay runs from the
    // restore.
    let a = second.issued_to("a.test");
    assert!(a[0].at >= secs(3), "a.test contacted at {:?}", a[0].at);
    // b.test waits out what was left of its gap at the save, less the time stopped (times
    // are saved to the millisecond).
    let b_due = (b_last_end + secs(2)).saturating_sub(saved_at + elapsed);
    let b = second.issued_to("b.test");
    assert!(
        b[0].at + ms(1) >= b_due && b_due > Duration::ZERO,
        "b.test contacted at {:?}, due {b_due:?}",
        b[0].at
    );
}

#[test]
fn a_damaged_host_state_is_refused_whole() {
    let mut web = Web::default();
    site(&mut web, "a.test", 1);
    let mut sim = Sim::new(config(0.0), web, &["http://a.test/"]);
    sim.run(STEPS);
    sim.crawl.save_hosts(sim.now);
    let state = sim.crawl.sink().hosts.clone().unwrap();
    let fresh = || Sim::new(config(0.0), Web::default(), &[]);
    assert!(fresh()
        .crawl
        .restore_hosts(&state, sim.now, secs(0))
        .is_ok());
    for cut in 0..state.len() {
        let mut s = fresh();
        let r = s.crawl.restore_hosts(&state[..cut], s.now, secs(0));
        assert_eq!(r, Err(BadHostState), "cut at {cut}");
    }
}

/// A page's `<base href>` is what its relative links resolve against, while their referrer
/// stays the page itself; a stylesheet's url()s resolve against the stylesheet.
#[test]
fn links_resolve_against_the_base_and_name_the_page_as_referrer() {
    let mut web = Web::default();
    let css = "a { background: url(img/y.png) }";
    web.html(
        "http://a.test/",
        "<html><head><base href=\"/dir/\"><link rel=stylesheet href=\"s.css\"></head>\
         <a href=\"x\">x</a></html>",
    )
    .page("http://a.test/dir/x", &[])
    .reply(
        "http://a.test/dir/s.css",
        Reply::Raw(sim::response(200, &[("Content-Type", "text/css")], css)),
    )
    .page("http://a.test/dir/img/y.png", &[]);
    let mut cfg = config(0.0);
    cfg.page_requisites = true;
    let mut sim = Sim::new(cfg, web, &["http://a.test/"]);
    sim.run(STEPS);
    assert_eq!(
        sim.times_issued("http://a.test/x"),
        0,
        "not against the page"
    );
    for (url, referrer) in [
        ("http://a.test/dir/x", "http://a.test/"),
        ("http://a.test/dir/s.css", "http://a.test/"),
        ("http://a.test/dir/img/y.png", "http://a.test/dir/s.css"),
    ] {
        assert_eq!(sim.times_issued(url), 1, "{url}");
        let lines = sim.lines_for(url);
        assert_eq!(lines[0].referrer.as_deref(), Some(referrer), "{url}");
    }
}

// ---- the link graph's outlinks ----

#[test]
fn a_page_s_outlinks_are_its_followed_links_keyed_once_before_its_line() {
    let mut web = Web::default();
    web.html(
        "http://a.test/dir/",
        r#"<html><head><link rel=stylesheet href="/s.css"><link rel=canonical href="/dir/">
<script src="/app.js"></script></head><body><img src="/i.png">
<a href="x">x</a><a href="x#again">x again</a><a href="/y?q=1">y</a>
<a href="../dir/./w">dots: the full path</a><a href="HTTP://B.TEST/z">b</a>
<iframe src="/f"></iframe><a href="http://[bad">bad</a><a href="mailto:m@a.test">m</a></body></html>"#,
    )
    .page("http://a.test/dir/x", &["/dir/"])
    .page("http://a.test/y?q=1", &[])
    .page("http://a.test/dir/w", &[])
    .page("http://a.test/f", &[]);
    let mut sim = Sim::new(config(0.0), web, &["http://a.test/dir/"]);
    sim.run(STEPS);
    let key = |u: &str| url_seen::url_key(&url::Url::parse(u).unwrap());
    let sink = sim.crawl.sink();
    let (at, page, targets) = sink
        .outlinks
        .iter()
        .find(|(_, p, _)| *p == key("http://a.test/dir/"))
        .expect("the page's outlinks")
        .clone();
    let mut expected: Vec<u64> = [
        "http://a.test/dir/", // the canonical link: the page itself (dropped by `graph`)
        "http://a.test/dir/x",
        "http://a.test/y?q=1",
        "http://a.test/dir/w",
        "http://b.test/z",
        "http://a.test/f",
    ]
    .iter()
    .map(|u| key(u))
    .collect();
    expected.sort_unstable();
    assert_eq!(targets, expected, "anchors, frames, <link>s; no requisites");
    assert_eq!(page, key("http://a.test/dir/"));
    assert_eq!(
        sink.lines[at].url, "http://a.test/dir/",
        "given before the page's line"
    );
    // A page already seen is still an outlink: x links back to the first page.
    assert!(sink
        .outlinks
        .iter()
        .any(|(_, p, t)| *p == key("http://a.test/dir/x") && t == &[key("http://a.test/dir/")]));
}
