//! Seeds' lines without a fetch, next to `add_seed` and `finish_unfetched` (the simulated
//! crawls in `tests` cover lines of fetched URLs).

use std::time::{Duration, Instant, SystemTime};

use url::Url;

use super::sink::MemorySink;
use super::url_filter::FilterConfig;
use super::*;

#[test]
fn a_held_crawl_issues_nothing_before_its_time() {
    let now = Instant::now();
    let mut config = CrawlConfig::new(FilterConfig::default(), 12);
    config.ignore_robots = true;
    let mut crawl = Crawl::new(config, MemorySink::default(), now, SystemTime::now());
    crawl
        .add_seed(Url::parse("http://a.test/").unwrap())
        .unwrap();
    let until = now + Duration::from_secs(1);
    crawl.hold_until(until);
    assert!(matches!(crawl.next_fetch(now), Next::Wait(t) if t == until));
    let half = now + Duration::from_millis(500);
    assert!(matches!(crawl.next_fetch(half), Next::Wait(t) if t == until));
    assert!(matches!(crawl.next_fetch(until), Next::Fetch(_)));
}

#[test]
fn every_seed_gets_one_line_refused_or_left_in_the_queue() {
    let filter = FilterConfig {
        allow_domains: vec!["a.test".into()],
        max_url_length: 40,
        ..FilterConfig::default()
    };
    let now = Instant::now();
    let mut crawl = Crawl::new(
        CrawlConfig::new(filter, 12),
        MemorySink::default(),
        now,
        SystemTime::now(),
    );
    let u = |s: &str| Url::parse(s).unwrap();
    assert_eq!(crawl.add_seed(u("http://a.test/")), Ok(()));
    assert_eq!(crawl.add_seed(u("http://a.test/x")), Ok(()));
    assert_eq!(
        crawl.add_seed(u("http://b.test/")),
        Err(ReturnCode::OutOfScope)
    );
    assert_eq!(
        crawl.add_seed(u("http://a.test/0123456789012345678901234567890")),
        Err(ReturnCode::UrlTooLong)
    );
    // Given twice: queued once, one line.
    assert_eq!(crawl.add_seed(u("http://a.test/")), Ok(()));
    crawl.log_rejected_input("not a url", ReturnCode::HttpBadUrlSyntax);
    assert_eq!(crawl.frontier_len(), 2);
    crawl.finish_unfetched(ReturnCode::NotFetched, false);
    assert_eq!(crawl.frontier_len(), 0);
    let lines = &crawl.sink().lines;
    let got: Vec<(ReturnCode, &str)> = lines.iter().map(|l| (l.outcome, l.url.as_str())).collect();
    assert_eq!(
        got,
        vec![
            (ReturnCode::OutOfScope, "http://b.test/"),
            (
                ReturnCode::UrlTooLong,
                "http://a.test/0123456789012345678901234567890"
            ),
            (ReturnCode::HttpBadUrlSyntax, "not a url"),
            (ReturnCode::NotFetched, "http://a.test/"),
            (ReturnCode::NotFetched, "http://a.test/x"),
        ]
    );
    let counted = crawl.counters().url_lines.lines();
    assert_eq!(counted, 5, "the crawl counts every line it logs");
    assert_eq!(crawl.counters().robots_lines.lines(), 0);
}
