//! The real [`Driver`] on the simulated loop, in simulated time: when it asks for work, how
//! many fetches it keeps live, when it sleeps and until when, and when it calls a crawl
//! finished. A scripted source shows the driver's own decisions; the crawl's politeness
//! delays are seen through it as `Next::Wait`.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use url::Url;

use super::{Sim, SimLoop, Web};
use crate::crawl::url_filter::{FilterConfig, Scope};
use crate::crawl::CrawlConfig;
use crate::fetcher::{Driver, FetchDone, FetchRequest, FetchSource, Loop, Next, Turn};
use crate::ReturnCode;

/// Driver turns a test takes at most before it calls the run a livelock.
const MAX_TURNS: usize = 1_000;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn req(url: &str) -> FetchRequest {
    FetchRequest {
        more_for_host: false,
        ..FetchRequest::new(Url::parse(url).expect("test URL"), 0)
    }
}

/// A source that hands out `queue`, then answers `then(now, delivered so far)`; it records
/// what it was told and when.
struct Script<F: FnMut(Instant, usize) -> Next> {
    queue: VecDeque<FetchRequest>,
    then: F,
    delivered: Vec<(String, ReturnCode, Instant)>,
    asked: Vec<Instant>,
}

impl<F: FnMut(Instant, usize) -> Next> Script<F> {
    fn new(urls: &[&str], then: F) -> Script<F> {
        Script {
            queue: urls.iter().map(|u| req(u)).collect(),
            then,
            delivered: Vec::new(),
            asked: Vec::new(),
        }
    }
}

impl<F: FnMut(Instant, usize) -> Next> FetchSource for Script<F> {
    fn next_fetch(&mut self, now: Instant) -> Next {
        self.asked.push(now);
        match self.queue.pop_front() {
            Some(r) => Next::Fetch(r),
            None => (self.then)(now, self.delivered.len()),
        }
    }

    fn fetch_done(&mut self, done: &FetchDone<'_>, now: Instant) {
        let url = done.request.url.to_string();
        self.delivered.push((url, done.outcome, now));
    }
}

/// Turns the driver until it says the work is finished; returns the turns taken.
fn finish(driver: &mut Driver, lp: &mut SimLoop, source: &mut dyn FetchSource) -> usize {
    for turns in 1..=MAX_TURNS {
        if driver.turn(lp, source).expect("no I/O") == Turn::Finished {
            return turns;
        }
    }
    panic!("not finished after {MAX_TURNS} turns");
}

/// a.test answers in 10 ms, b.test in 30 ms, c.test in 20 ms.
fn three_hosts() -> Web {
    let mut web = Web::default();
    web.latency("a.test", ms(10))
        .latency("b.test", ms(30))
        .latency("c.test", ms(20));
    web
}

#[test]
fn finished_only_after_every_completion_is_delivered() {
    let t0 = Instant::now();
    let mut lp = SimLoop::new(three_hosts(), t0);
    let urls = ["http://a.test/", "http://b.test/", "http://c.test/"];
    // Done as soon as the three are handed out, all three still in flight.
    let mut source = Script::new(&urls, |_, _| Next::Done);
    let mut driver = Driver::new();
    assert_eq!(driver.turn(&mut lp, &mut source).unwrap(), Turn::Continue);
    assert_eq!(source.asked.len(), 4, "three fetches, then Done");
    finish(&mut driver, &mut lp, &mut source);
    let got: Vec<(&str, Duration)> = source
        .delivered
        .iter()
        .map(|(u, _, at)| (u.as_str(), *at - t0))
        .collect();
    assert_eq!(
        got,
        [
            ("http://a.test/", ms(10)),
            ("http://c.test/", ms(20)),
            ("http://b.test/", ms(30)),
        ]
    );
    assert!(lp.is_idle());
    assert_eq!(
        lp.now - t0,
        ms(30),
        "finished when the last one was delivered"
    );
    assert_eq!(
        source.asked.len(),
        4,
        "a source that is done is not asked again"
    );
}

#[test]
fn an_idle_source_is_asked_again_after_each_completion_and_finishes_when_none_is_live() {
    let t0 = Instant::now();
    let mut lp = SimLoop::new(three_hosts(), t0);
    // Idle (more may come), and after the first answer one more URL: a link found.
    let mut found = Some(req("http://c.test/"));
    let mut source = Script::new(
        &["http://a.test/", "http://b.test/"],
        move |_, delivered| match found.take_if(|_| delivered == 1) {
            Some(r) => Next::Fetch(r),
            None => Next::Idle,
        },
    );
    let mut driver = Driver::new();
    finish(&mut driver, &mut lp, &mut source);
    let issued: Vec<(&str, Duration)> = lp.issued.iter().map(|i| (i.url.as_str(), i.at)).collect();
    assert_eq!(
        issued,
        [
            ("http://a.test/", ms(0)),
            ("http://b.test/", ms(0)),
            ("http://c.test/", ms(10)),
        ]
    );
    assert_eq!(source.delivered.len(), 3);
    assert_eq!(lp.now - t0, ms(30));
}

#[test]
fn no_more_than_max_live_fetches_and_no_fewer_while_work_waits() {
    let t0 = Instant::now();
    let mut web = Web::default();
    let urls: Vec<String> = (0..20).map(|i| format!("http://h{i}.test/")).collect();
    for (i, u) in urls.iter().enumerate() {
        let host = Url::parse(u).unwrap().host_str().unwrap().to_string();
        web.latency(&host, ms(5 + (i as u64 * 7) % 11));
    }
    let mut lp = SimLoop::new(web, t0);
    lp.max_live = 3;
    let refs: Vec<&str> = urls.iter().map(String::as_str).collect();
    let mut source = Script::new(&refs, |_, _| Next::Done);
    finish(&mut Driver::new(), &mut lp, &mut source);
    assert_eq!(source.delivered.len(), 20);
    // At each instant a fetch started, count the fetches live just after it.
    for i in &lp.issued {
        let live = lp
            .issued
            .iter()
            .filter(|j| j.at <= i.at && j.end.is_some_and(|e| e > i.at))
            .count();
        let queued = lp.issued.iter().any(|j| j.at > i.at);
        assert!(live <= 3, "{live} live at {:?}", i.at);
        assert!(live == 3 || !queued, "room left idle at {:?}", i.at);
    }
}

#[test]
fn a_wait_is_slept_until_its_instant_or_cut_short_by_a_completion() {
    let t0 = Instant::now();
    let mut lp = SimLoop::new(three_hosts(), t0);
    // After b.test: nothing due for 10 s, until b.test's answer makes a.test/x due; after
    // that, something due every 500 ms that is never more than a wait.
    let mut sent_x = false;
    let mut source = Script::new(&["http://b.test/"], move |now, delivered| {
        if delivered == 0 {
            Next::Wait(t0 + Duration::from_secs(10))
        } else if !sent_x {
            sent_x = true;
            Next::Fetch(req("http://a.test/x"))
        } else {
            Next::Wait(now + ms(500))
        }
    });
    let mut driver = Driver::new();
    while lp.now - t0 < ms(2_000) {
        assert!(source.asked.len() < MAX_TURNS, "livelock");
        driver.turn(&mut lp, &mut source).unwrap();
    }
    let asked: Vec<u64> = source
        .asked
        .iter()
        .map(|&t| (t - t0).as_millis() as u64)
        .collect();
    // 0: b.test, then Wait 10 s; 30: b.test's answer cut the wait short, a.test/x, then a
    // wait; 40: a.test/x answered, then a wait; then exactly every 500 ms, never between.
    assert_eq!(asked, [0, 0, 30, 30, 40, 540, 1040, 1540]);
    let issued: Vec<Duration> = lp.issued.iter().map(|i| i.at).collect();
    assert_eq!(issued, [ms(0), ms(30)]);
}

#[test]
fn interrupt_ends_live_fetches_and_delivers_every_one() {
    let t0 = Instant::now();
    let mut lp = SimLoop::new(three_hosts(), t0);
    let urls = ["http://a.test/", "http://b.test/", "http://c.test/"];
    let mut source = Script::new(&urls, |_, _| Next::Idle);
    let mut driver = Driver::new();
    // One turn: all three issued, the clock at a.test's answer (10 ms).
    assert_eq!(driver.turn(&mut lp, &mut source).unwrap(), Turn::Continue);
    driver.interrupt(&mut lp, &mut source);
    let got: Vec<(&str, ReturnCode)> = source
        .delivered
        .iter()
        .map(|(u, code, _)| (u.as_str(), *code))
        .collect();
    assert_eq!(
        got,
        [
            ("http://a.test/", ReturnCode::Success),
            ("http://b.test/", ReturnCode::Interrupted),
            ("http://c.test/", ReturnCode::Interrupted),
        ]
    );
    assert!(lp.is_idle());
}

#[test]
fn a_host_s_next_fetch_starts_when_its_delay_has_passed_not_before() {
    let mut web = Web::default();
    web.page("http://a.test/", &["/p1", "/p2"])
        .page("http://a.test/p1", &[])
        .page("http://a.test/p2", &[])
        .latency("a.test", ms(40));
    let config = CrawlConfig {
        delay: Duration::from_secs(1),
        delay_factor: 0.0,
        ..CrawlConfig::new(
            FilterConfig {
                scope: Scope::Any,
                ..FilterConfig::default()
            },
            12,
        )
    };
    let mut sim = Sim::new(config, web, &["http://a.test/"]);
    sim.run(MAX_TURNS);
    let a = sim.issued_to("a.test");
    let urls: Vec<&str> = a.iter().map(|i| i.url.as_str()).collect();
    assert_eq!(
        urls,
        [
            "http://a.test/robots.txt",
            "http://a.test/",
            "http://a.test/p1",
            "http://a.test/p2"
        ]
    );
    // The crawl said Wait until the delay had passed; the driver slept exactly that long.
    for w in a.windows(2) {
        let end = w[0].end.expect("completed");
        assert_eq!(w[1].at, end + Duration::from_secs(1), "{}", w[1].url);
    }
}
