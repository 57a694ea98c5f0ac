//! The jar against what RFC 6265 promises a site (and its neighbours): matching, expiry,
//! `Secure`, public suffixes, bounds, and cookies.txt in and out.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use proptest::prelude::*;
use url::Url;

use super::*;
use crate::datetime::http_date;

/// When wget wrote `testdata/wget-cookies.txt` (2026-11-25T19:34:31Z).
fn now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_795_635_271)
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

fn u(s: &str) -> Url {
    Url::parse(s).unwrap()
}

fn jar() -> CookieJar {
    CookieJar::new(JarLimits::default())
}

fn set(jar: &mut CookieJar, from: &str, value: &str) -> Result<Stored, Refused> {
    jar.store_one(value.as_bytes(), &u(from), now())
}

fn sent(jar: &CookieJar, to: &str) -> Option<String> {
    jar.header_for(&u(to), now())
}

#[test]
fn a_domain_cookie_goes_to_the_domain_and_below_only() {
    let mut j = jar();
    assert_eq!(
        set(
            &mut j,
            "http://www.example.com/",
            "a=1; Domain=.Example.COM"
        ),
        Ok(Stored::Added)
    );
    for to in [
        "http://example.com/",
        "http://www.example.com/x",
        "http://a.b.example.com/",
        "https://example.com:8443/",
    ] {
        assert_eq!(sent(&j, to).as_deref(), Some("a=1"), "{to}");
    }
    for to in [
        "http://notexample.com/",
        "http://example.org/",
        "http://com/",
    ] {
        assert_eq!(sent(&j, to), None, "{to}");
    }
}

#[test]
fn without_domain_a_cookie_is_host_only() {
    let mut j = jar();
    set(&mut j, "http://www.example.com/", "a=1").unwrap();
    assert_eq!(sent(&j, "http://www.example.com/").as_deref(), Some("a=1"));
    assert_eq!(sent(&j, "http://example.com/"), None);
    assert_eq!(sent(&j, "http://a.www.example.com/"), None);
    // An IP address is only ever itself.
    set(&mut j, "http://127.0.0.1:8080/", "ip=1").unwrap();
    assert_eq!(sent(&j, "http://127.0.0.1/").as_deref(), Some("ip=1"));
    assert_eq!(sent(&j, "http://127.0.0.2/"), None);
    assert_eq!(
        set(&mut j, "http://127.0.0.1/", "d=1; Domain=0.0.1"),
        Err(Refused::ForeignDomain)
    );
}

#[test]
fn paths_match_by_segment_and_default_to_the_directory() {
    let mut j = jar();
    set(&mut j, "http://h.test/", "docs=1; Path=/docs").unwrap();
    set(&mut j, "http://h.test/a/b/page.html", "dir=1").unwrap();
    set(&mut j, "http://h.test/", "root=1; Path=relative").unwrap(); // not absolute: default
    let s = |p: &str| sent(&j, &format!("http://h.test{p}"));
    assert_eq!(s("/docs").as_deref(), Some("docs=1; root=1"));
    assert_eq!(s("/docs/x").as_deref(), Some("docs=1; root=1"));
    assert_eq!(s("/docsx").as_deref(), Some("root=1"));
    assert_eq!(s("/doc").as_deref(), Some("root=1"));
    // Longer paths first, then older cookies.
    assert_eq!(s("/a/b/c").as_deref(), Some("dir=1; root=1"));
    assert_eq!(s("/a/bc").as_deref(), Some("root=1"));
    assert_eq!(default_path("/"), "/");
    assert_eq!(default_path("/x"), "/");
    assert_eq!(default_path("/a/b/"), "/a/b");
}

#[test]
fn max_age_beats_expires_and_expired_cookies_go() {
    let mut j = jar();
    let past = http_date(now() - secs(3600));
    let future = http_date(now() + secs(3600));
    set(
        &mut j,
        "http://h.test/",
        &format!("a=1; Expires={past}; Max-Age=10"),
    )
    .unwrap();
    set(
        &mut j,
        "http://h.test/",
        &format!("b=1; Max-Age=0; Expires={future}"),
    )
    .unwrap();
    set(&mut j, "http://h.test/", &format!("c=1; Expires={future}")).unwrap();
    assert_eq!(sent(&j, "http://h.test/").as_deref(), Some("a=1; c=1"));
    let later = |t: u64| j.header_for(&u("http://h.test/"), now() + secs(t));
    assert_eq!(later(9).as_deref(), Some("a=1; c=1"));
    assert_eq!(
        later(10).as_deref(),
        Some("c=1"),
        "Max-Age=10 is gone at 10 s"
    );
    assert_eq!(later(3600), None);
    // An expired Set-Cookie removes the one held under its name, domain and path.
    assert_eq!(
        set(&mut j, "http://h.test/", &format!("c=; Expires={past}")),
        Ok(Stored::Removed)
    );
    assert_eq!(
        set(&mut j, "http://h.test/", "a=; Max-Age=-1"),
        Ok(Stored::Removed)
    );
    assert_eq!(
        set(&mut j, "http://h.test/", "a=; Max-Age=0"),
        Ok(Stored::Nothing)
    );
    assert!(j.is_empty());
    // No cookie outlives 400 days.
    set(
        &mut j,
        "http://h.test/",
        "long=1; Max-Age=999999999999999999999",
    )
    .unwrap();
    let day = 24 * 3600;
    assert!(j
        .header_for(&u("http://h.test/"), now() + secs(399 * day))
        .is_some());
    assert!(j
        .header_for(&u("http://h.test/"), now() + secs(400 * day))
        .is_none());
}

#[test]
fn a_replaced_cookie_keeps_its_place_and_session_cookies_stay() {
    let mut j = jar();
    set(&mut j, "http://h.test/", "a=1").unwrap();
    set(&mut j, "http://h.test/", "b=2").unwrap();
    assert_eq!(set(&mut j, "http://h.test/", "a=3"), Ok(Stored::Replaced));
    assert_eq!(sent(&j, "http://h.test/").as_deref(), Some("a=3; b=2"));
    // Same name, other path: another cookie.
    assert_eq!(
        set(&mut j, "http://h.test/", "a=4; Path=/x"),
        Ok(Stored::Added)
    );
    assert_eq!(
        sent(&j, "http://h.test/x").as_deref(),
        Some("a=4; a=3; b=2")
    );
    assert_eq!(j.len(), 3);
}

#[test]
fn secure_cookies_come_from_and_go_to_https_only() {
    let mut j = jar();
    assert_eq!(
        set(&mut j, "http://h.test/", "s=1; Secure"),
        Err(Refused::InsecureOrigin)
    );
    assert_eq!(
        set(&mut j, "https://h.test/", "s=1; secure; HttpOnly"),
        Ok(Stored::Added)
    );
    assert_eq!(sent(&j, "https://h.test/").as_deref(), Some("s=1"));
    assert_eq!(sent(&j, "http://h.test/"), None);
}

#[test]
fn a_public_suffix_is_refused_as_a_domain() {
    let mut j = jar();
    for (from, value) in [
        ("http://www.example.co.uk/", "a=1; Domain=co.uk"),
        ("http://www.example.co.uk/", "a=1; Domain=uk"),
        ("http://alice.github.io/", "a=1; Domain=github.io"),
        ("http://a.b.test/", "a=1; Domain=test"),
    ] {
        assert_eq!(
            set(&mut j, from, value),
            Err(Refused::PublicSuffix),
            "{value} from {from}"
        );
    }
    assert!(j.is_empty());
    // One level down is the site's own.
    set(
        &mut j,
        "http://www.example.co.uk/",
        "ok=1; Domain=example.co.uk",
    )
    .unwrap();
    assert_eq!(
        sent(&j, "http://shop.example.co.uk/").as_deref(),
        Some("ok=1")
    );
    assert_eq!(sent(&j, "http://other.co.uk/"), None);
    // A host that is itself a public suffix may set a cookie for itself alone.
    assert_eq!(
        set(&mut j, "http://github.io/", "gh=1; Domain=github.io"),
        Ok(Stored::Added)
    );
    assert_eq!(sent(&j, "http://github.io/").as_deref(), Some("gh=1"));
    assert_eq!(sent(&j, "http://alice.github.io/"), None);
}

#[test]
fn no_cookie_leaks_to_another_site() {
    let mut j = jar();
    assert_eq!(
        set(&mut j, "http://a.test/", "x=1; Domain=b.test"),
        Err(Refused::ForeignDomain)
    );
    assert_eq!(
        set(&mut j, "http://example.com/", "x=1; Domain=www.example.com"),
        Err(Refused::ForeignDomain)
    );
    set(&mut j, "http://a.test/", "mine=1").unwrap();
    set(&mut j, "http://alice.github.io/", "alice=1").unwrap();
    assert_eq!(sent(&j, "http://b.test/"), None);
    assert_eq!(sent(&j, "http://bob.github.io/"), None);
    assert_eq!(
        sent(&j, "http://alice.github.io/").as_deref(),
        Some("alice=1")
    );
    // Other schemes neither set nor get cookies.
    assert_eq!(set(&mut j, "ftp://a.test/", "f=1"), Err(Refused::Syntax));
    assert_eq!(sent(&j, "ftp://a.test/"), None);
}

#[test]
fn what_is_not_a_cookie_is_refused() {
    let mut j = jar();
    for bad in [
        "novalue",
        "=x",
        " =x",
        "a\u{1}=b",
        "a=b\u{7f}",
        "a\tb=c",
        "a=b\tc",
    ] {
        assert_eq!(
            set(&mut j, "http://h.test/", bad),
            Err(Refused::Syntax),
            "{bad:?}"
        );
    }
    let not_utf8 = j.store_one(b"a=\xff", &u("http://h.test/"), now());
    assert_eq!(not_utf8, Err(Refused::Syntax));
    let big = format!("a={}", "v".repeat(MAX_COOKIE_BYTES));
    assert_eq!(set(&mut j, "http://h.test/", &big), Err(Refused::TooLarge));
    // Lenient where browsers are: spaces, tabs between attributes, unknown attributes.
    assert_eq!(
        set(
            &mut j,
            "http://h.test/",
            " a = b c ;\tPath=/ ; SameSite=Lax; x"
        ),
        Ok(Stored::Added)
    );
    assert_eq!(sent(&j, "http://h.test/").as_deref(), Some("a=b c"));
    assert!(
        set(&mut j, "http://h.test/", "e=").is_ok(),
        "an empty value is a value"
    );
    assert_eq!(j.len(), 2);
}

#[test]
fn store_counts_what_changed_the_jar() {
    let mut j = jar();
    let values: [&[u8]; 4] = [b"a=1", b"b=2; Domain=other.test", b"junk", b"c=3"];
    assert_eq!(j.store(values, &u("http://h.test/"), now()), 2);
    assert_eq!(
        j.store([&b"a=1"[..]], &u("http://h.test/"), now()),
        1,
        "replaced"
    );
    assert_eq!(
        j.store([&b"z=; Max-Age=0"[..]], &u("http://h.test/"), now()),
        0
    );
}

#[test]
fn bounds_hold_per_site_and_in_all_evicting_expired_then_oldest() {
    let mut j = CookieJar::new(JarLimits {
        per_site: 3,
        total: 5,
    });
    set(&mut j, "http://a.test/", "short=1; Max-Age=5").unwrap();
    for i in 0..3 {
        set(&mut j, "http://www.a.test/", &format!("w{i}=1")).unwrap();
    }
    let t = now() + secs(10);
    assert_eq!(j.len(), 3, "site a.test holds 3");
    // At 10 s `short` is expired: it goes before an older live cookie.
    j.store_one(b"late=1", &u("http://www.a.test/"), t).unwrap();
    let header = j.header_for(&u("http://www.a.test/"), t);
    assert_eq!(
        header.as_deref(),
        Some("w1=1; w2=1; late=1"),
        "w0 was the oldest"
    );
    for i in 0..4 {
        set(&mut j, "http://b.test/", &format!("b{i}=1")).unwrap();
    }
    assert_eq!(j.len(), 5, "5 in all");
    // b2 made 6: the oldest of all (a.test's w1) went; b3 made 4 on b.test: its oldest went.
    assert_eq!(
        sent(&j, "http://b.test/").as_deref(),
        Some("b1=1; b2=1; b3=1")
    );
    assert_eq!(
        j.header_for(&u("http://www.a.test/"), t).as_deref(),
        Some("w2=1; late=1")
    );
}

const FIXTURE: &str = include_str!("testdata/wget-cookies.txt");

#[test]
fn loads_what_wget_saves() {
    let mut j = jar();
    // wget --save-cookies --keep-session-cookies, after www.example.com and
    // gated.example.org:8080 set cookies (a domain cookie, a session cookie, a port).
    assert_eq!(
        j.load_netscape(FIXTURE, now()),
        Loaded {
            cookies: 4,
            skipped: 0
        }
    );
    assert_eq!(
        sent(&j, "http://www.example.com/").as_deref(),
        Some("pref=dark mode; sess=1; sid=abc123")
    );
    assert_eq!(
        sent(&j, "http://example.com/").as_deref(),
        Some("pref=dark mode")
    );
    assert_eq!(
        sent(&j, "http://gated.example.org/").as_deref(),
        Some("gate=open")
    );
    assert_eq!(sent(&j, "http://example.org/"), None);
    // A year later wget's persistent cookies have expired; the session one lives on.
    let later = now() + secs(366 * 24 * 3600);
    let mut j = jar();
    assert_eq!(
        j.load_netscape(FIXTURE, later),
        Loaded {
            cookies: 2,
            skipped: 2
        }
    );
}

#[test]
fn loads_curl_s_format_and_skips_what_is_not_a_cookie() {
    let text = "# Netscape HTTP Cookie File\r\n\
        #HttpOnly_.shop.test\tTRUE\t/\tTRUE\t0\tsecret\tv\r\n\
        h.test\tFALSE\t/\tFALSE\t0\tempty\n\
        \n\
        # a comment\n\
        .co.uk\tTRUE\t/\tFALSE\t0\tsuffix\tv\n\
        h.test\tMAYBE\t/\tFALSE\t0\tflag\tv\n\
        h.test\tFALSE\tnoslash\tFALSE\t0\tpath\tv\n\
        h.test\tFALSE\t/\tFALSE\tsoon\ttime\tv\n\
        h.test\tFALSE\t/\tFALSE\t0\n\
        h.test\tFALSE\t/\tFALSE\t0\tn\tv\textra\n\
        [::1]:8080\tFALSE\t/\tFALSE\t0\tv6\t1\n";
    let mut j = jar();
    assert_eq!(
        j.load_netscape(text, now()),
        Loaded {
            cookies: 3,
            skipped: 6
        }
    );
    assert_eq!(
        sent(&j, "https://www.shop.test/").as_deref(),
        Some("secret=v")
    );
    assert_eq!(sent(&j, "http://www.shop.test/"), None, "secure");
    assert_eq!(sent(&j, "http://h.test/").as_deref(), Some("empty="));
    assert_eq!(sent(&j, "http://[::1]/").as_deref(), Some("v6=1"));
}

#[test]
fn saved_and_loaded_back_it_is_the_same_jar() {
    let mut j = jar();
    set(
        &mut j,
        "http://www.example.com/",
        "a=1; Domain=example.com; Max-Age=3600",
    )
    .unwrap();
    set(
        &mut j,
        "https://www.example.com/app/x",
        "b=2; Secure; HttpOnly",
    )
    .unwrap();
    set(&mut j, "http://h.test/", "c=3; Max-Age=1").unwrap();
    set(&mut j, "http://www.example.com/", "a0=0").unwrap();
    let mut text = String::new();
    j.save_netscape(&mut text, now() + secs(2));
    assert_eq!(
        text,
        "# Netscape HTTP Cookie File\n\
         .example.com\tTRUE\t/\tFALSE\t1795638871\ta\t1\n\
         #HttpOnly_www.example.com\tFALSE\t/app\tTRUE\t0\tb\t2\n\
         www.example.com\tFALSE\t/\tFALSE\t0\ta0\t0\n",
        "c=3 expired; oldest first"
    );
    let mut back = jar();
    assert_eq!(back.load_netscape(&text, now()).cookies, 3);
    for to in [
        "https://www.example.com/app/y",
        "http://www.example.com/",
        "http://example.com/",
    ] {
        assert_eq!(
            back.header_for(&u(to), now()),
            j.header_for(&u(to), now()),
            "{to}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// Whatever hosts set, the bounds hold and a host gets only cookies it could have been
    /// given: set by itself, or for a domain it is under that is not a public suffix.
    #[test]
    fn bounds_and_sites_hold_under_any_sequence(
        ops in proptest::collection::vec((0usize..6, 0usize..4, 0u8..12, 0usize..3), 1..200)
    ) {
        const HOSTS: [&str; 6] = ["a.x.test", "b.x.test", "x.test", "y.co.uk", "z.co.uk", "10.0.0.1"];
        const DOMAINS: [&str; 4] = ["", "; Domain=x.test", "; Domain=co.uk", "; Domain=test"];
        let mut j = CookieJar::new(JarLimits { per_site: 4, total: 7 });
        for (host, domain, name, path) in ops {
            let from = u(&format!("http://{}/p{path}/q", HOSTS[host]));
            let value = format!("n{name}={host}{}", DOMAINS[domain]);
            let _ = j.store_one(value.as_bytes(), &from, now());
            prop_assert!(j.len() <= 7);
            prop_assert!(j.sites.values().all(|cs| cs.len() <= 4 && !cs.is_empty()));
            prop_assert_eq!(j.sites.values().map(Vec::len).sum::<usize>(), j.len());
        }
        for (i, to) in HOSTS.iter().enumerate() {
            let Some(header) = j.header_for(&u(&format!("http://{to}/p0/q")), now()) else {
                continue;
            };
            for pair in header.split("; ") {
                let setter: usize = pair.split_once('=').unwrap().1.parse().unwrap();
                let same_site = i < 3 && setter < 3;
                prop_assert!(setter == i || same_site, "{} got {}", to, pair);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]
    /// A jar saved as cookies.txt and loaded back answers every URL as before: what a resumed
    /// crawl relies on (the `cookies` fuzz target checks the same on arbitrary bytes).
    #[test]
    fn a_saved_jar_loads_back_the_same(
        sets in proptest::collection::vec(
            (0usize..5, 0usize..3, "[ -:<-~]{0,6}", proptest::collection::vec(0usize..12, 0..4)),
            0..40,
        )
    ) {
        const FROM: [&str; 5] = [
            "http://www.example.com/a/b",
            "https://shop.example.com/",
            "https://alice.github.io/x/",
            "http://127.0.0.1:8080/p/q",
            "http://localhost/",
        ];
        const ATTRIBUTES: [&str; 12] = [
            "Domain=example.com", "Domain=github.io", "Domain=alice.github.io", "Path=/",
            "Path=/a", "Path=/x/ y", "Max-Age=60", "Max-Age=0", "Secure", "HttpOnly",
            "Expires=Wed, 01 Jan 2098 00:00:00 GMT", "Expires=Sun, 06 Nov 1994 08:49:37 GMT",
        ];
        let limits = JarLimits { per_site: 3, total: 6 };
        let mut j = CookieJar::new(limits);
        for (from, name, value, attributes) in sets {
            let mut text = format!("n{name}={value}");
            for a in attributes {
                text.push_str("; ");
                text.push_str(ATTRIBUTES[a]);
            }
            let _ = j.store_one(text.as_bytes(), &u(FROM[from]), now());
        }
        let mut saved = String::new();
        j.save_netscape(&mut saved, now());
        let mut back = CookieJar::new(limits);
        back.load_netscape(&saved, now());
        prop_assert_eq!(back.len(), j.len());
        for to in [
            "http://www.example.com/a/b/c", "https://example.com/x/ y", "https://shop.example.com/a",
            "https://alice.github.io/x/", "http://127.0.0.1/p/q", "http://localhost/",
        ] {
            prop_assert_eq!(back.header_for(&u(to), now()), j.header_for(&u(to), now()), "{}", to);
        }
    }
}
