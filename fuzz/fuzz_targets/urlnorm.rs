//! `urlnorm::normalize` on arbitrary hrefs against a few bases, then the filter and the URL key
//! on the result: no panic, results are http(s) within the length cap, and normalizing is
//! idempotent. A link's fast key (`link_key::LinkKeys`), when there is one, is the URL key of
//! what normalizing makes of it, canonicalized (`crawl::canon`) or not; a canonical key is
//! the one-shot key of the canonical resource.
#![no_main]

use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use spinneret::crawl::canon::{Canon, CanonConfig};
use spinneret::crawl::link_key::LinkKeys;
use spinneret::crawl::url_filter::{FilterConfig, Scope, UrlFilter};
use spinneret::crawl::url_seen::url_key;
use spinneret::crawl::urlnorm::{normalize, origin_key, parse_seed, MAX_URL_BYTES};
use url::Position;
use url::Url;

/// Parsed once: URL parsing dominates this target's cost.
static BASES: LazyLock<Vec<Url>> = LazyLock::new(|| {
    // The bases are valid URLs.
    BASE_TEXTS.iter().map(|b| Url::parse(b).unwrap()).collect()
});

const BASE_TEXTS: &[&str] = &[
    "http://example.com/dir/page.html?q=1",
    "https://www.example.org:8443/a/b/c/",
    "http://[::1]:8080/",
    "http://xn--bcher-kva.example/%7Euser/index.php",
];

fuzz_target!(|href: &[u8]| {
    let _ = parse_seed(&String::from_utf8_lossy(href));
    for base in BASES.iter() {
        let off = Canon::new(CanonConfig {
            on: false,
            strip: Vec::new(),
        });
        let canon = Canon::default();
        let fast = LinkKeys::new(base).and_then(|mut k| k.key(href, &off));
        let fast_canon = LinkKeys::new(base).and_then(|mut k| k.key(href, &canon));
        let Ok(url) = normalize(base, href) else {
            assert_eq!(fast, None, "a fast key for a link normalize refuses");
            assert_eq!(fast_canon, None, "a fast key for a link normalize refuses");
            continue;
        };
        if let Some(k) = fast {
            assert_eq!(k, url_key(&url), "fast key differs from {url}");
        }
        if let Some(k) = fast_canon {
            assert_eq!(
                k,
                canon.url_key(&url),
                "fast canonical key differs from {url}"
            );
        }
        // The streamed canonical key is the key of the canonical URL written out.
        let resource = url[Position::BeforePath..Position::AfterQuery].as_bytes();
        let canonical = String::from_utf8(canon.canonical(resource)).unwrap();
        let written = Url::parse(&format!("{}{canonical}", &url[..Position::BeforePath]));
        // (Unless parsing rewrites it: a dot segment that a stripped parameter uncovered.)
        if let Some(w) = written
            .ok()
            .filter(|w| w[Position::BeforePath..Position::AfterQuery] == canonical)
        {
            assert_eq!(canon.url_key(&url), url_key(&w), "{url} as {w}");
        }
        assert!(matches!(url.scheme(), "http" | "https"), "{url}");
        assert!(url.host_str().is_some_and(|h| !h.is_empty()), "{url}");
        assert!(url.as_str().len() <= MAX_URL_BYTES);
        assert_eq!(url.fragment(), None, "{url}");
        assert_eq!(
            normalize(base, url.as_str().as_bytes()),
            Ok(url.clone()),
            "not idempotent"
        );
        assert_eq!(
            normalize(&url, url.as_str().as_bytes()),
            Ok(url.clone()),
            "not idempotent"
        );

        let mut filter = UrlFilter::new(FilterConfig {
            scope: Scope::Prefix,
            allow_domains: vec!["example.com".into(), ".org".into()],
            deny_domains: vec!["bad.example.com".into()],
            max_pages_per_host: Some(1),
            max_depth: Some(3),
            ..FilterConfig::default()
        });
        filter.add_seed(base);
        for depth in [0, 5] {
            if filter.check(&url, depth).is_ok() {
                filter.admitted(&url);
            }
        }
        let _ = url_key(&url);
        let _ = origin_key(&url);
    }
});
