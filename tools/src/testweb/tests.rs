//! The generator's own tests: determinism, names, Host parsing, origins, clamping.

use super::*;

fn small(seed: u64) -> WebConfig {
    WebConfig {
        hosts: 4,
        pages: 6,
        page_kb: 2,
        seed,
        ..WebConfig::default()
    }
}

fn bodies(web: &TestWeb) -> Vec<(String, Template)> {
    web.resources
        .iter()
        .map(|r| (format!("{}{}", host_name(r.host), r.target), r.body.clone()))
        .collect()
}

#[test]
fn generation_is_deterministic_and_follows_the_seed() {
    let a = TestWeb::generate(&small(1));
    let b = TestWeb::generate(&small(1));
    assert_eq!(bodies(&a), bodies(&b));
    assert_eq!(a.total_bytes(), b.total_bytes());
    let c = TestWeb::generate(&small(2));
    assert_eq!(a.expected_urls(80), c.expected_urls(80));
    assert_ne!(bodies(&a), bodies(&c));
}

#[test]
fn names_addresses_and_dns_records() {
    assert_eq!(host_name(0), "h0000.test");
    assert_eq!(host_name(42), "h0042.test");
    assert_eq!(host_name(12345), "h12345.test");
    assert_eq!(host_ip(0), Ipv4Addr::new(127, 1, 0, 1));
    assert_eq!(host_ip(254), Ipv4Addr::new(127, 1, 1, 1));
    assert_eq!(host_ip(MAX_HOSTS - 1), Ipv4Addr::new(127, 1, 255, 254));
    let web = TestWeb::generate(&small(0));
    let dns = web.dns_records();
    assert_eq!(dns.len(), 4);
    assert_eq!(dns["h0003.test"], vec![Record::A(host_ip(3))]);
}

#[test]
fn host_header_parsing() {
    assert_eq!(parse_host(b"h0000.test"), Some(0));
    assert_eq!(parse_host(b"H0042.TEST:8080"), Some(42));
    assert_eq!(parse_host(b"h12345.test"), Some(12345));
    for bad in [
        &b""[..],
        b"h.test",
        b"h000.test",
        b"h00001.test",
        b"h0001.tes",
        b"x0001.test",
        b"h00a1.test",
        b"h0001.test.",
        b"127.1.0.1:80",
    ] {
        assert_eq!(parse_host(bad), None, "{}", String::from_utf8_lossy(bad));
    }
}

#[test]
fn origin_is_filled_into_absolute_links_only() {
    let mut t = Template::default();
    t.push("<a href=\"");
    t.push_origin(1);
    t.push("/p1.html\">x</a> <a href=\"/p2.html\">y</a> <a href=");
    t.push_origin(12345);
    t.push("/>");
    for (scheme, port, want) in [
        (Scheme::Http, 8080, "http://h0001.test:8080/p1.html"),
        (Scheme::Https, 443, "https://h0001.test:443/p1.html"),
    ] {
        let mut out = Vec::new();
        t.render(scheme, port, &mut out);
        let text = String::from_utf8(out).unwrap();
        let other = format!("{}://h12345.test:{port}/", scheme.as_str());
        assert_eq!(
            text,
            format!("<a href=\"{want}\">x</a> <a href=\"/p2.html\">y</a> <a href={other}>")
        );
        let digits = port.to_string().len();
        assert_eq!(t.rendered_len(scheme, digits), text.len() as u64);
    }
}

#[test]
fn host_name_len_is_the_names_length() {
    for i in [0, 9, 10, 999, 1000, 9999, 10_000, 65_023, 100_000] {
        assert_eq!(host_name_len(i), host_name(i).len(), "{i}");
    }
}

#[test]
fn shapes_differ_only_in_links_and_parse_by_name() {
    for shape in [Shape::Clustered, Shape::Linked] {
        assert_eq!(Shape::parse(shape.name()), Some(shape));
    }
    assert_eq!(Shape::parse("random"), None);
    let linked = WebConfig::of_shape(Shape::Linked);
    assert_eq!(WebConfig::of_shape(Shape::Clustered), WebConfig::default());
    let a = TestWeb::generate(&WebConfig {
        hosts: 4,
        pages: 6,
        page_kb: 2,
        ..linked.clone()
    });
    let b = TestWeb::generate(&small(linked.seed));
    // The same resources (so the same expected set), different bodies.
    assert_eq!(a.expected_urls(80), b.expected_urls(80));
    assert_eq!(a.disallowed_urls(80), b.disallowed_urls(80));
    assert_ne!(bodies(&a), bodies(&b));
}

#[test]
fn sizes_are_clamped() {
    let web = TestWeb::generate(&WebConfig {
        hosts: 0,
        pages: 0,
        page_kb: 0,
        ..WebConfig::default()
    });
    assert_eq!((web.config().hosts, web.config().pages), (1, 1));
    assert_eq!(web.seeds(81), vec!["http://h0000.test:81/".to_string()]);
    assert!(web
        .expected_urls(81)
        .contains(&"http://h0000.test:81/p0.html".to_string()));
}
