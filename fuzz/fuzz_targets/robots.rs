//! `robots::Robots::parse` on arbitrary bytes, then `is_allowed` on paths taken from the input
//! (the values of its lines, so they often meet the rules): no panic, and `/robots.txt` is always
//! allowed. `sitemap_lines` on the same bytes: within its bounds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use spinneret::robots::{sitemap_lines, Robots, MAX_SITEMAP_LINES, MAX_SITEMAP_URL_BYTES};

/// Paths tried per input, beyond the fixed ones.
const MAX_PATHS: usize = 8;

fuzz_target!(|body: &[u8]| {
    let robots = Robots::parse(body, "spinneret");
    let _ = robots.crawl_delay();

    let derived = body
        .split(|&b| b == b'\n')
        .filter_map(|line| line.iter().position(|&b| b == b':').map(|c| &line[c + 1..]))
        .map(|v| String::from_utf8_lossy(v.trim_ascii()).into_owned())
        .take(MAX_PATHS);
    for path in ["", "/", "/index.html?a=b"]
        .into_iter()
        .map(String::from)
        .chain(derived)
    {
        let _ = robots.is_allowed(&path);
    }
    assert!(robots.is_allowed("/robots.txt"));
    assert!(robots.is_allowed("/robots.txt?x=1"));

    let sitemaps = sitemap_lines(body);
    assert!(sitemaps.len() <= MAX_SITEMAP_LINES);
    assert!(sitemaps
        .iter()
        .all(|u| u.len() <= MAX_SITEMAP_URL_BYTES && u[..4].eq_ignore_ascii_case("http")));
});
