//! The host gate's verdicts, one answer at a time, on its own (the simulated crawls in
//! `crawl::tests` and `crawl::manners_tests` show them through the whole crawl).

use std::time::{Duration, Instant};

use url::Url;

use super::*;
use crate::crawl::sim::{completion, response, sim_wall, Reply};
use crate::crawl::url_filter::FilterConfig;
use crate::fetcher::{Completion, FetchRequest};

fn config() -> CrawlConfig {
    CrawlConfig::new(FilterConfig::default(), 4)
}

fn url(s: &str) -> Url {
    Url::parse(s).expect("test URL")
}

/// The completion of a fetch of `u` that answered `reply` in `latency`.
fn answer_in(u: &str, reply: Reply, latency: Duration) -> Completion {
    completion(FetchRequest::new(url(u), 0), reply, latency, sim_wall())
}

/// The completion of a fetch of `u` that answered `reply` in a millisecond.
fn answer(u: &str, reply: Reply) -> Completion {
    answer_in(u, reply, Duration::from_millis(1))
}

fn raw(status: u16, headers: &[(&str, &str)], body: &str) -> Reply {
    Reply::Raw(response(status, headers, body))
}

#[test]
fn a_new_origin_s_robots_txt_comes_first_then_its_rules_decide() {
    let t0 = Instant::now();
    let mut g = HostGate::new(&config(), t0, sim_wall());
    let page = url("http://a.test/private/x");
    let robots = url("http://a.test/robots.txt");
    assert_eq!(
        g.gate(&page, t0),
        Gate::Robots {
            origin: "http://a.test:80".into(),
            url: robots.clone()
        }
    );
    let c = answer(
        robots.as_str(),
        raw(
            200,
            &[],
            "User-agent: *\nDisallow: /private\nSitemap: http://a.test/s.xml\n",
        ),
    );
    let done = g.robots_done("http://a.test:80", &c.done(), 0, t0);
    // The gap: --delay (1 s) beats 5 × 1 ms.
    assert_eq!(
        done,
        RobotsDone::Done {
            gap: Duration::from_secs(1),
            sitemaps: true
        }
    );
    assert_eq!(
        rules(&c.done()).map(<[u8]>::len),
        Some(c.done().content.len())
    );
    assert_eq!(g.gate(&page, t0), Gate::End(ReturnCode::RobotsExcluded));
    assert_eq!(g.gate(&url("http://a.test/public"), t0), Gate::Fetch);
    assert!(!g.waits_on_robots(&page));
}

#[test]
fn ignoring_robots_fetches_at_once_but_a_blocked_host_still_ends() {
    let t0 = Instant::now();
    let mut g = HostGate::new(
        &CrawlConfig {
            ignore_robots: true,
            ..config()
        },
        t0,
        sim_wall(),
    );
    let u = url("http://a.test/");
    assert_eq!(g.gate(&u, t0), Gate::Fetch);
    let c = answer(u.as_str(), Reply::Fail(ReturnCode::PrivateAddressBlocked));
    let answered = g.page_done(&u, 1, &c.done(), t0);
    assert_eq!(
        answered,
        Answered {
            gap: Duration::ZERO,
            again: false
        },
        "no request was made"
    );
    assert_eq!(
        g.gate(&url("http://a.test/x"), t0),
        Gate::End(ReturnCode::PrivateAddressBlocked)
    );
    assert_eq!(g.take_blocked_notice().as_deref(), Some("a.test"));
    assert_eq!(g.take_blocked_notice(), None, "told once");
}

#[test]
fn a_failing_robots_txt_is_retried_with_back_off_then_its_origin_is_unreachable() {
    let t0 = Instant::now();
    let mut g = HostGate::new(&config(), t0, sim_wall());
    let origin = "http://a.test:80";
    let page = url("http://a.test/x");
    let robots = "http://a.test/robots.txt";
    let mut now = t0;
    for k in 0..MAX_ROBOTS_FAILURES {
        assert!(matches!(g.gate(&page, now), Gate::Robots { .. }), "try {k}");
        let c = answer(robots, raw(503, &[], ""));
        // A 503 is a try while robots.txt will be asked again; the last one stands.
        let line = g.robots_outcome(origin, &c.done());
        let last = k + 1 == MAX_ROBOTS_FAILURES;
        let expected = if last {
            ReturnCode::Success
        } else {
            ReturnCode::RetryLater
        };
        assert_eq!(line, expected, "try {k}");
        assert!(matches!(
            g.robots_done(origin, &c.done(), 0, now),
            RobotsDone::Done {
                sitemaps: false,
                ..
            }
        ));
        assert!(g.waits_on_robots(&page));
        if !last {
            // Held for the back-off, which doubles from ROBOTS_RETRY.
            let backoff = ROBOTS_RETRY * (1 << k);
            assert_eq!(g.gate(&page, now), Gate::Later(backoff));
            now += backoff;
        }
    }
    assert_eq!(g.gate(&page, now), Gate::End(ReturnCode::RobotsUnreachable));
}

#[test]
fn robots_txt_redirects_are_followed_within_their_bound() {
    let t0 = Instant::now();
    let mut g = HostGate::new(&config(), t0, sim_wall());
    let origin = "http://a.test:80";
    let c = answer(
        "http://a.test/robots.txt",
        raw(301, &[("Location", "http://b.test/robots.txt")], ""),
    );
    assert_eq!(
        g.robots_done(origin, &c.done(), 0, t0),
        RobotsDone::Redirect(url("http://b.test/robots.txt"))
    );
    // One hop too many: no rules, the origin unreachable for now.
    let done = g.robots_done(origin, &c.done(), MAX_ROBOTS_REDIRECTS, t0);
    assert!(matches!(
        done,
        RobotsDone::Done {
            sitemaps: false,
            ..
        }
    ));
    assert!(g.waits_on_robots(&url("http://a.test/")));
    // Interrupted: says nothing of the server.
    let cut = answer(
        "http://c.test/robots.txt",
        Reply::Fail(ReturnCode::Interrupted),
    );
    assert_eq!(
        g.robots_done("http://c.test:80", &cut.done(), 0, t0),
        RobotsDone::Done {
            gap: Duration::ZERO,
            sitemaps: false
        }
    );
    assert!(!g.waits_on_robots(&url("http://c.test/")));
}

#[test]
fn a_429_asks_for_a_try_after_its_retry_after_and_slows_the_host_down() {
    let t0 = Instant::now();
    let mut g = HostGate::new(&config(), t0, sim_wall());
    let u = url("http://a.test/x");
    let c = answer(u.as_str(), raw(429, &[("Retry-After", "30")], ""));
    let answered = g.page_done(&u, 7, &c.done(), t0);
    assert_eq!(
        answered,
        Answered {
            gap: Duration::from_secs(30),
            again: true
        }
    );
    assert_eq!(g.slowdown("a.test"), 2);
    // The host's next gap is doubled: 2 × --delay.
    let ok = answer(u.as_str(), raw(200, &[], "fine"));
    assert_eq!(
        g.page_done(&u, 7, &ok.done(), t0),
        Answered {
            gap: Duration::from_secs(2),
            again: false
        }
    );
}

#[test]
fn the_gap_is_the_longest_of_delay_factor_and_crawl_delay_capped() {
    let t0 = Instant::now();
    let mut g = HostGate::new(
        &CrawlConfig {
            delay: Duration::from_millis(100),
            delay_factor: 10.0,
            max_crawl_delay: Duration::from_secs(5),
            ..config()
        },
        t0,
        sim_wall(),
    );
    let u = url("http://a.test/x");
    let slow = answer_in(u.as_str(), raw(200, &[], "x"), Duration::from_millis(50));
    assert_eq!(
        g.page_done(&u, 1, &slow.done(), t0).gap,
        Duration::from_millis(500)
    );
    let robots = answer(
        "http://a.test/robots.txt",
        raw(200, &[], "User-agent: *\nCrawl-delay: 60\n"),
    );
    let done = g.robots_done("http://a.test:80", &robots.done(), 0, t0);
    assert_eq!(
        done,
        RobotsDone::Done {
            gap: Duration::from_secs(5),
            sitemaps: true
        },
        "Crawl-delay capped"
    );
}

#[test]
fn a_hold_is_lifted_once_past_and_each_host_is_resolved_ahead_once() {
    let t0 = Instant::now();
    let mut g = HostGate::new(&config(), t0, sim_wall());
    assert_eq!(g.held(t0), None);
    g.hold_until(t0 + Duration::from_secs(1));
    assert_eq!(g.held(t0), Some(t0 + Duration::from_secs(1)));
    assert_eq!(g.held(t0 + Duration::from_secs(1)), None);
    assert_eq!(g.held(t0), None, "lifted for good");
    for h in ["a.test", "b.test", "a.test"] {
        g.host_queued(h);
    }
    assert_eq!(g.poll_prefetch().as_deref(), Some("a.test"));
    assert_eq!(g.poll_prefetch().as_deref(), Some("b.test"));
    assert_eq!(g.poll_prefetch(), None);
}

#[test]
fn the_state_saved_is_the_state_restored() {
    let t0 = Instant::now();
    let every = Duration::from_secs(60);
    let config = CrawlConfig {
        save_hosts_every: Some(every),
        ..config()
    };
    let mut g = HostGate::new(&config, t0, sim_wall());
    assert!(!g.save_due(t0));
    assert!(g.save_due(t0 + every));
    assert!(!g.save_due(t0 + every), "next due a period later");
    let robots = answer(
        "http://a.test/robots.txt",
        raw(200, &[], "User-agent: *\nDisallow: /private\n"),
    );
    g.robots_done("http://a.test:80", &robots.done(), 0, t0);
    let failed = answer("http://b.test/robots.txt", raw(500, &[], ""));
    g.robots_done("http://b.test:80", &failed.done(), 0, t0);
    let blocked = answer(
        "http://c.test/",
        Reply::Fail(ReturnCode::PrivateAddressBlocked),
    );
    g.page_done(&url("http://c.test/"), 1, &blocked.done(), t0);
    let contacts = [("a.test", Duration::from_secs(9))];
    let state = g.save(t0, &contacts).to_vec();

    let mut back = HostGate::new(&config, t0, sim_wall());
    let restored = back.restore(&state, t0, Duration::ZERO).expect("decodes");
    assert_eq!(restored.robots, 2);
    assert_eq!(restored.contacts, contacts);
    assert_eq!(
        back.gate(&url("http://a.test/private"), t0),
        Gate::End(ReturnCode::RobotsExcluded)
    );
    assert!(back.waits_on_robots(&url("http://b.test/")));
    assert_eq!(
        back.gate(&url("http://c.test/"), t0),
        Gate::End(ReturnCode::PrivateAddressBlocked)
    );
    assert_eq!(back.take_blocked_notice(), None, "only a new block is told");
    assert!(back.restore(b"\x09junk", t0, Duration::ZERO).is_err());
}
