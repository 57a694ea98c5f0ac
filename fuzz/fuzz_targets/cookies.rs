//! The cookie jar (`http::cookies`) and the date readers on arbitrary bytes: no panic; no
//! `Cookie` header that could break a request; the bounds hold; and a jar saved as cookies.txt
//! and loaded back answers every URL as before (what a resumed crawl relies on).
//!
//! Input: lines. Each line's first byte picks the URL that sent it (of `ORIGINS`), the rest is
//! a `Set-Cookie` value. The whole input is also read as a cookies.txt file, as a
//! `Retry-After` value and as an HTTP date.
#![no_main]

use std::time::{Duration, UNIX_EPOCH};

use libfuzzer_sys::fuzz_target;
use spinneret::http::cookies::{CookieJar, JarLimits};
use url::Url;

/// Who sets cookies: names under a public suffix, a public suffix host, an IP, a bare name.
const ORIGINS: [&str; 6] = [
    "http://www.example.com/a/b",
    "https://shop.example.com/",
    "https://alice.github.io/x/",
    "http://a.b.co.uk/",
    "http://127.0.0.1:8080/p/q",
    "http://localhost/",
];

/// Small, so eviction is reached within a few lines.
const LIMITS: JarLimits = JarLimits {
    per_site: 3,
    total: 5,
};

/// Where cookies are asked for.
const ASKED: [&str; 9] = [
    "http://www.example.com/a/b/c",
    "https://example.com/",
    "http://shop.example.com/a",
    "https://alice.github.io/x/y",
    "https://bob.github.io/",
    "http://a.b.co.uk/",
    "http://co.uk/",
    "http://127.0.0.1/p/q",
    "http://localhost/",
];

fn headers(jar: &CookieJar, now: std::time::SystemTime) -> Vec<Option<String>> {
    ASKED
        .iter()
        .map(|u| jar.header_for(&Url::parse(u).unwrap(), now))
        .collect()
}

fn round_trips(jar: &CookieJar, now: std::time::SystemTime) {
    let mut text = String::new();
    jar.save_netscape(&mut text, now);
    let mut back = CookieJar::new(LIMITS);
    back.load_netscape(&text, now);
    assert_eq!(headers(&back, now), headers(jar, now), "{text}");
}

fuzz_target!(|data: &[u8]| {
    // Whole seconds: cookies.txt keeps expiry times to the second.
    let now = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let mut jar = CookieJar::new(LIMITS);
    for line in data.split(|&b| b == b'\n') {
        let Some((&pick, value)) = line.split_first() else {
            continue;
        };
        let origin = Url::parse(ORIGINS[pick as usize % ORIGINS.len()]).unwrap();
        let _ = jar.store_one(value, &origin, now);
        assert!(jar.len() <= LIMITS.total);
    }
    for header in headers(&jar, now).into_iter().flatten() {
        assert!(!header.is_empty());
        assert!(!header.bytes().any(|b| b < 0x20 || b == 0x7f), "{header:?}");
    }
    round_trips(&jar, now);

    let text = String::from_utf8_lossy(data);
    let mut loaded = CookieJar::new(LIMITS);
    loaded.load_netscape(&text, now);
    assert!(loaded.len() <= LIMITS.total);
    round_trips(&loaded, now);

    let _ = spinneret::http::parse_retry_after(data, now, Duration::from_secs(3600));
    let _ = spinneret::datetime::parse_http_date(data);
});
