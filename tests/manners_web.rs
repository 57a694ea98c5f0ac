//! A crawl of a web with the real web's manners mixed across many hosts
//! (`spinneret_tools::manners_web`): 40-record answers over a DNS server that does not honour
//! EDNS (so they come over TCP), AAAA-only hosts on `[::1]`, CNAME chains, 429/503 storms
//! with `Retry-After`, cookie gates. Every page must end `Success 200`, each storm page after
//! its two tries, a gated page after at most its redirect to itself, and nothing else may be
//! fetched.

use crate::common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::{read_log, spinneret, temp_dir};
use spinneret::ReturnCode;

#[test]
fn every_url_of_the_mixed_web_ends_with_the_right_outcome() {
    if std::net::TcpListener::bind("[::1]:0").is_err() {
        eprintln!("SKIPPED: no IPv6 loopback here; the mixed web has AAAA-only hosts");
        return;
    }
    let web = spinneret_tools::manners_web::start(3, false, Duration::from_secs(120))
        .expect("manners web");
    let out = temp_dir("manners-web").join("out");
    let dns = web.dns.addr().to_string();
    let mut args = vec![
        "crawl",
        &web.seed,
        "--out",
        out.to_str().unwrap(),
        "--dns-server",
        &dns,
        "--allow-net",
        "::1/128",
        "--delay-ms",
        "0",
        "-q",
    ];
    args.extend(common::crawl_run::TEST_WEB_FLAGS);
    let res = spinneret(&args, Duration::from_secs(120));
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert_eq!(res.status.code(), Some(0), "{stderr}");
    let mut by_url: BTreeMap<String, Vec<(ReturnCode, u16)>> = BTreeMap::new();
    for line in read_log(&out) {
        if line.url.ends_with("/robots.txt") {
            continue;
        }
        by_url
            .entry(line.url)
            .or_default()
            .push((line.outcome, line.status));
    }
    let urls: Vec<&String> = by_url.keys().collect();
    let pages: Vec<&String> = web.pages.iter().collect();
    assert_eq!(urls, pages, "exactly the web's pages");
    for (url, lines) in &by_url {
        assert_eq!(
            lines.last(),
            Some(&(ReturnCode::Success, 200)),
            "{url}: {lines:?}"
        );
        if web.storm_pages.contains(url) {
            assert_eq!(
                lines[..lines.len() - 1],
                [(ReturnCode::RetryLater, 429), (ReturnCode::RetryLater, 503)],
                "{url}"
            );
        } else if url.contains("cookiegate") {
            // The gate's redirect to itself is the first answer the host gives; later pages
            // carry the cookie and are let in at once.
            let gate = &lines[..lines.len() - 1];
            assert!(
                gate.is_empty() || gate == [(ReturnCode::Success, 302)],
                "{url}: {lines:?}"
            );
        } else {
            assert_eq!(lines.len(), 1, "{url}: {lines:?}");
        }
    }
}
