use super::*;
use crate::crawl::url_seen::url_key;

fn on() -> Canon {
    Canon::default()
}

fn canon(c: &Canon, resource: &str) -> String {
    String::from_utf8(c.canonical(resource.as_bytes())).unwrap()
}

fn key(c: &Canon, u: &str) -> u64 {
    c.url_key(&Url::parse(u).unwrap())
}

#[test]
fn session_ids_and_tracking_parameters_are_stripped() {
    let c = on();
    let table = [
        ("/p.html", "/p.html"),
        ("/p.html;jsessionid=0A1B2C3D4E", "/p.html"),
        ("/p.html;JSESSIONID=0A1B?x=1", "/p.html?x=1"),
        ("/a;jsessionid=1/b.html", "/a/b.html"),
        ("/a;v=2;jsessionid=1", "/a;v=2"),
        ("/p.html?utm_source=x&utm_medium=y", "/p.html"),
        ("/p.html?UTM_Campaign=x&id=7", "/p.html?id=7"),
        ("/p.html?PHPSESSID=abc", "/p.html"),
        ("/p.html?fbclid=1&gclid=2", "/p.html"),
        ("/p?a=1&fbclid=1&b=2&msclkid=3", "/p?a=1&b=2"),
        ("/p?ASPSESSIONIDQQGGQGPC=ABCD&x", "/p?x"),
        ("/p?cfid=1&cftoken=2&q=3", "/p?q=3"),
        (
            "/p?mc_eid=1&_hsenc=2&_hsmi=3&mkt_tok=4&dclid=5&yclid=6",
            "/p",
        ),
        ("/p?sid=0123456789abcdef0123456789ABCDEF", "/p"),
        ("/p;sid=0123456789abcdef0123456789abcdef0123/x", "/p/x"),
        ("/p?utm_source", "/p"),
        ("/p?&&utm_source=1&&a=1", "/p?a=1"),
    ];
    for (given, want) in table {
        assert_eq!(canon(&c, given), want, "{given}");
    }
}

#[test]
fn lookalikes_are_kept() {
    let c = on();
    for kept in [
        "/p?sid=12345",                            // a short sid is a real key
        "/p?sid=0123456789abcdef0123456789abcdeg", // not hex
        "/p?session=abc",
        "/p?xutm_source=1",
        "/p?id=fbclid",
        "/jsessionid=1/p", // not a path parameter
        "/p;x=1",
        "/p;",
        "/p?",
        "/p?gclidx=1",
    ] {
        assert_eq!(canon(&c, kept), kept, "{kept}");
    }
}

#[test]
fn variants_share_a_key_and_the_plain_url_keeps_its_old_one() {
    let c = on();
    let plain = key(&c, "http://h.test/p.html");
    assert_eq!(plain, url_key(&Url::parse("http://h.test/p.html").unwrap()));
    for v in [
        "http://h.test/p.html;jsessionid=ABCDEF0123",
        "http://h.test/p.html?utm_source=news&utm_medium=mail",
        "http://h.test/p.html?PHPSESSID=5f4dcc3b5aa765d61d8327deb882cf99",
        "http://h.test/p.html?fbclid=IwAR0&gclid=Cj0",
        "http://h.test:80/p.html?fbclid=1#frag",
    ] {
        assert_eq!(key(&c, v), plain, "{v}");
    }
    assert_ne!(key(&c, "http://h.test/p.html?id=2"), plain);
    assert_ne!(key(&c, "http://other.test/p.html?fbclid=1"), plain);
    // A stripped key is the key of the canonical URL written out.
    assert_eq!(
        key(&c, "http://h.test/p?a=1&utm_source=x&b=2"),
        url_key(&Url::parse("http://h.test/p?a=1&b=2").unwrap())
    );
}

#[test]
fn off_keys_every_variant_apart_and_added_names_are_stripped() {
    let off = Canon::new(CanonConfig {
        on: false,
        strip: Vec::new(),
    });
    let a = key(&off, "http://h.test/p.html");
    let b = key(&off, "http://h.test/p.html?fbclid=1");
    assert_ne!(a, b);
    assert_eq!(
        b,
        url_key(&Url::parse("http://h.test/p.html?fbclid=1").unwrap())
    );
    let added = Canon::new(CanonConfig {
        on: true,
        strip: vec!["ref".into(), "Share".into()],
    });
    assert_eq!(canon(&added, "/p?REF=tw&share=1&x=2"), "/p?x=2");
    assert_eq!(canon(&on(), "/p?ref=tw"), "/p?ref=tw");
}

#[test]
fn the_rules_list_names_every_built_in_tracking_parameter() {
    let listed: String = RULES
        .iter()
        .map(|(names, _)| *names)
        .collect::<Vec<_>>()
        .join(", ");
    for name in TRACKING.iter().chain(SESSION) {
        assert!(listed.contains(name), "{name} missing from help");
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
    /// The streamed key is the one-shot key of the canonical bytes, whatever the input.
    #[test]
    fn key_is_the_key_of_the_canonical_resource(
        parts in proptest::collection::vec(proptest::sample::select(vec![
            "/", ";", "?", "&", "=", "a", "sid", "jsessionid", "utm_x", "fbclid", "0123456789abcdef",
            "0123456789ABCDEF", "SID", "x",
        ]), 0..14),
    ) {
        let c = on();
        let resource = format!("/{}", parts.concat());
        let host = host_hash("h.test", 80);
        let canonical = c.canonical(resource.as_bytes());
        proptest::prop_assert_eq!(c.key_of(host, resource.as_bytes()), key_of(host, &canonical));
        // Canonical is a fixed point.
        proptest::prop_assert_eq!(c.canonical(&canonical), canonical);
    }
}
