//! `spinneret crawl` end to end against a generated multi-host site on loopback: the exact
//! reachable, allowed URL set is fetched, each URL once; traps stay bounded; politeness is
//! proven from the server's request log.

use crate::common;

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::net::Ipv4Addr;
use std::time::Duration;

use common::{spinneret, temp_dir};
use spinneret::ReturnCode;
use spinneret_tools::dns_server::{DnsServer, DnsServerConfig, Record};
use spinneret_tools::http_server::{HttpServer, HttpServerConfig, Response, Routes, Script};

const LIFETIME: Duration = Duration::from_secs(120);
const HOSTS: usize = 4;
/// A URL's depth is the depth at which it was first discovered, and the frontier is not a
/// strict BFS, so a page reachable by several paths may be found via a longer one. The limit
/// sits above the longest simple path to any regular page (11: three hosts' article chains
/// joined by the cross-host links), so only the calendar, whose pages each have one way in,
/// is cut by it: deterministically.
const MAX_DEPTH: u32 = 12;

/// One page of the generated site: its links (as written in the HTML) and body.
struct Page {
    links: Vec<String>,
    body: String,
}

fn host(i: usize) -> String {
    format!("site{i}.test")
}

/// The site graph. Per host: a home page, a chain of articles, a robots-disallowed directory,
/// the same content under two URLs, an endless calendar and a self-nesting directory.
fn site(port: u16) -> HashMap<(String, String), Page> {
    let mut pages = HashMap::new();
    for h in 0..HOSTS {
        let next = host((h + 1) % HOSTS);
        let add = |pages: &mut HashMap<_, _>, path: &str, links: Vec<String>| {
            let mut body = format!(
                "<html><head><title>{} {path}</title></head><body>\n",
                host(h)
            );
            for l in &links {
                body.push_str(&format!("<a href=\"{l}\">x</a>\n"));
            }
            body.push_str("</body></html>\n");
            pages.insert((host(h), path.to_string()), Page { links, body });
        };
        add(
            &mut pages,
            "/",
            vec![
                "/article/1.html".into(),
                "/private/secret.html".into(),
                "/dup-a.html".into(),
                "/dup-b.html#frag".into(),
                "/cal/?m=1".into(),
                "/loop/".into(),
                format!("http://{next}:{port}/"),
                "mailto:someone@example.com".into(),
                "javascript:void(0)".into(),
            ],
        );
        for a in 1..=5 {
            let mut links = vec![format!("/article/{}.html", a % 5 + 1)];
            if a == 3 {
                links.push(format!(
                    "HTTP://{}:{port}/article/2.html",
                    next.to_uppercase()
                ));
            }
            add(&mut pages, &format!("/article/{a}.html"), links);
        }
        add(
            &mut pages,
            "/private/secret.html",
            vec!["/private/more.html".into()],
        );
        add(&mut pages, "/private/more.html", vec![]);
        // Identical bytes under two URLs: the second's links must not be followed.
        for dup in ["/dup-a.html", "/dup-b.html"] {
            let body = format!(
                "<html><body>{}: <a href=\"/only-from-dup.html\">same</a></body></html>\n",
                host(h)
            );
            let links = vec!["/only-from-dup.html".into()];
            pages.insert((host(h), dup.to_string()), Page { links, body });
        }
        add(&mut pages, "/only-from-dup.html", vec![]);
        // An endless calendar: every month links to the next. Only --max-depth ends it.
        for m in 1..=40 {
            add(
                &mut pages,
                &format!("/cal/?m={m}"),
                vec![format!("/cal/?m={}", m + 1)],
            );
        }
        // /loop/ links to loop/ relatively: /loop/loop/, /loop/loop/loop/… (a repeated-segment trap).
        let mut p = "/loop/".to_string();
        for _ in 0..6 {
            add(&mut pages, &p, vec!["loop/".into()]);
            p.push_str("loop/");
        }
    }
    pages
}

/// What a full crawl must fetch: BFS from the seed with the crawler's rules (depth limit,
/// robots exclusion, repeated-segment guard, URL de-duplication, content de-duplication).
fn expected(pages: &HashMap<(String, String), Page>) -> BTreeSet<(String, String)> {
    let mut fetched = BTreeSet::new();
    let mut seen = BTreeSet::new();
    let mut queue = VecDeque::new();
    let seed = (host(0), "/".to_string());
    seen.insert(seed.clone());
    queue.push_back((seed, 0u32));
    let mut content_seen = BTreeSet::new();
    while let Some(((h, path), depth)) = queue.pop_front() {
        if path.starts_with("/private/") {
            continue; // robots.txt: Disallow: /private/
        }
        fetched.insert((h.clone(), path.clone()));
        let Some(page) = pages.get(&(h.clone(), path.clone())) else {
            continue; // 404
        };
        if !content_seen.insert(page.body.clone()) {
            continue;
        }
        for l in &page.links {
            let base = url::Url::parse(&format!("http://{h}{path}")).unwrap();
            let Ok(mut u) = base.join(l) else { continue };
            if u.scheme() != "http" {
                continue;
            }
            u.set_fragment(None);
            let target_path = match u.query() {
                Some(q) => format!("{}?{q}", u.path()),
                None => u.path().to_string(),
            };
            let segs: Vec<&str> = u.path().split('/').collect();
            let repeated = segs
                .windows(3)
                .any(|w| w[0] == w[1] && w[1] == w[2] && !w[0].is_empty());
            if depth + 1 > MAX_DEPTH || repeated {
                continue;
            }
            let key = (u.host_str().unwrap().to_string(), target_path);
            if seen.insert(key.clone()) {
                queue.push_back((key, depth + 1));
            }
        }
    }
    fetched
}

struct Web {
    http: HttpServer,
    dns: DnsServer,
    pages: HashMap<(String, String), Page>,
}

/// The site on HOSTS loopback IPs (one per host) with names from the test DNS server.
fn start_web() -> Web {
    let ips: Vec<Ipv4Addr> = (0..HOSTS)
        .map(|i| Ipv4Addr::new(127, 0, 1, i as u8 + 1))
        .collect();
    let http = HttpServer::start(HttpServerConfig {
        addrs: ips.clone(),
        lifetime: LIFETIME,
        ..HttpServerConfig::default()
    })
    .expect("http server");
    let pages = site(http.port());
    let mut routes = Routes::new();
    for ((h, path), page) in &pages {
        routes.add(
            h,
            path,
            Script::Respond(Response::ok(page.body.clone(), "text/html")),
        );
    }
    for h in 0..HOSTS {
        routes.add(
            &host(h),
            "/robots.txt",
            Script::Respond(Response::ok(
                "User-agent: *\nDisallow: /private/\n",
                "text/plain",
            )),
        );
    }
    http.set_routes(routes);
    let dns = DnsServer::start(DnsServerConfig {
        records: (0..HOSTS)
            .map(|h| (host(h), vec![Record::A(ips[h])]))
            .collect(),
        lifetime: LIFETIME,
        ..DnsServerConfig::default()
    })
    .expect("dns server");
    Web { http, dns, pages }
}

fn crawl(web: &Web, extra: &[&str], name: &str) -> (std::path::PathBuf, String) {
    let dir = temp_dir(name);
    let out = dir.join("out");
    let seeds = dir.join("seeds.txt");
    std::fs::write(
        &seeds,
        format!(
            "# seeds\n\nhttp://{}:{}/\nhttp://bad seed with spaces/\n",
            host(0),
            web.http.port()
        ),
    )
    .unwrap();
    let dns = web.dns.addr().to_string();
    let mut args = vec![
        "crawl",
        "--seeds",
        seeds.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--dns-server",
        &dns,
        "--hosts-file",
        "none",
        "--allow-private",
        "--scope",
        "any",
        "--allow-domain",
        "test",
    ];
    args.extend_from_slice(extra);
    let res = spinneret(&args, Duration::from_secs(120));
    let stderr = String::from_utf8_lossy(&res.stderr).to_string();
    // The malformed seed line is a URL that got no HTTP response: exit 4, with its own
    // crawl.log line (HttpBadUrlSyntax).
    assert_eq!(res.status.code(), Some(4), "{stderr}");
    assert!(stderr.contains("spinneret: exit 4"), "{stderr}");
    let lines = common::read_log(&out);
    let bad: Vec<_> = lines
        .iter()
        .filter(|l| l.outcome == ReturnCode::HttpBadUrlSyntax)
        .collect();
    assert_eq!(bad.len(), 1, "the malformed seed has its line");
    assert!(bad[0].url.contains("bad"), "{:?}", bad[0].url);
    (out, stderr)
}

#[test]
fn crawl_fetches_exactly_the_reachable_allowed_set_once() {
    let web = start_web();
    let max_depth = MAX_DEPTH.to_string();
    let (out, stderr) = crawl(
        &web,
        &[
            "--delay-ms",
            "0",
            "--delay-factor",
            "0",
            "--max-depth",
            &max_depth,
        ],
        "crawl-exact",
    );
    assert!(
        stderr.contains("line 4") && stderr.contains("bad seed with spaces"),
        "a malformed seed is reported with its line: {stderr}"
    );

    let want = expected(&web.pages);
    let reqs = web.http.requests();
    let mut got = BTreeSet::new();
    let mut robots = HashMap::<String, usize>::new();
    for r in &reqs {
        if r.target == "/robots.txt" {
            *robots.entry(r.host.clone()).or_default() += 1;
            continue;
        }
        assert!(
            got.insert((r.host.clone(), r.target.clone())),
            "{} {} fetched twice",
            r.host,
            r.target
        );
    }
    let missing: Vec<_> = want.difference(&got).collect();
    let extra: Vec<_> = got.difference(&want).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "missing {missing:?}\nextra {extra:?}"
    );
    assert_eq!(robots.len(), HOSTS, "robots.txt fetched for every host");
    assert!(
        robots.values().all(|&n| n == 1),
        "and once each: {robots:?}"
    );

    // The traps stayed bounded: the calendar by depth, the nesting by repeated segments.
    let cal = got.iter().filter(|(_, p)| p.starts_with("/cal/")).count();
    assert!(cal <= HOSTS * MAX_DEPTH as usize, "{cal} calendar pages");
    assert!(!got.iter().any(|(_, p)| p.contains("loop/loop/loop/")));

    // The log: one line per fetch, robots exclusions logged, referrers filled in.
    let lines = common::read_log(&out);
    let excluded: Vec<_> = lines
        .iter()
        .filter(|l| l.outcome == ReturnCode::RobotsExcluded)
        .collect();
    assert_eq!(
        excluded.len(),
        HOSTS,
        "one /private/ link per host, never fetched"
    );
    assert!(excluded
        .iter()
        .all(|l| l.url.contains("/private/secret.html")));
    assert!(!reqs.iter().any(|r| r.target.starts_with("/private/")));
    let dups: Vec<_> = lines
        .iter()
        .filter(|l| l.outcome == ReturnCode::DuplicateContent)
        .collect();
    assert_eq!(
        dups.len(),
        HOSTS,
        "the second of each identical pair is logged as such"
    );
    assert!(dups.iter().all(|l| l.url.contains("/dup-")));
    let fetched_lines = lines
        .iter()
        .filter(|l| {
            l.outcome != ReturnCode::RobotsExcluded && l.outcome != ReturnCode::HttpBadUrlSyntax
        })
        .count();
    assert_eq!(fetched_lines, reqs.len());
    let port = web.http.port();
    let article = lines
        .iter()
        .find(|l| l.url == format!("http://site0.test:{port}/article/1.html"))
        .expect("article logged");
    assert_eq!(
        article.referrer.as_deref(),
        Some(format!("http://site0.test:{port}/").as_str())
    );

    let stats = std::fs::read_to_string(out.join("stats.json")).unwrap();
    for key in [
        "\"frontier_size\": 0",
        "\"duplicate_content\": 4",
        "\"robots_excluded\": 4",
        "\"urls_seen\":",
        "\"seen_bytes_per_url\":",
        "\"repeated_segments\":",
    ] {
        assert!(stats.contains(key), "{key} in {stats}");
    }
}

#[test]
fn politeness_per_host_no_overlap_and_delay_between_requests() {
    let web = start_web();
    let (_out, _) = crawl(
        &web,
        &[
            "--delay-ms",
            "150",
            "--delay-factor",
            "0",
            "--max-pages",
            "24",
            "--max-depth",
            "2",
        ],
        "crawl-polite",
    );
    let reqs = web.http.requests();
    assert!(reqs.len() >= 12, "enough requests to judge: {}", reqs.len());
    for h in 0..HOSTS {
        let name = host(h);
        let to_host = reqs.iter().filter(|r| r.host == name);
        common::assert_spaced(to_host, Duration::from_millis(150), &name);
    }
}

/// An HTTP server on the hosts' addresses (its routes to be set) and a DNS server naming
/// them.
fn serve_hosts(hosts: &[(&str, Ipv4Addr)]) -> (HttpServer, DnsServer) {
    let http = HttpServer::start(HttpServerConfig {
        addrs: hosts.iter().map(|&(_, ip)| ip).collect(),
        lifetime: LIFETIME,
        ..HttpServerConfig::default()
    })
    .expect("http server");
    let dns = DnsServer::start(DnsServerConfig {
        records: hosts
            .iter()
            .map(|&(h, ip)| (h.to_string(), vec![Record::A(ip)]))
            .collect(),
        lifetime: LIFETIME,
        ..DnsServerConfig::default()
    })
    .expect("dns server");
    (http, dns)
}

/// Crawls one host (`name` → 127.0.0.1 via the test DNS) served by `routes`, with no delays;
/// returns the server (for its request log) and the output directory.
fn crawl_one_host(
    name: &str,
    routes: Routes,
    extra: &[&str],
    tag: &str,
) -> (HttpServer, std::path::PathBuf, Option<i32>) {
    let (http, dns) = serve_hosts(&[(name, Ipv4Addr::LOCALHOST)]);
    http.set_routes(routes);
    let out = temp_dir(tag).join("out");
    let seed = format!("http://{name}:{}/", http.port());
    let dns_addr = dns.addr().to_string();
    let mut args = vec![
        "crawl",
        &seed,
        "--out",
        out.to_str().unwrap(),
        "--dns-server",
        &dns_addr,
        "--hosts-file",
        "none",
        "--allow-private",
        "--delay-ms",
        "0",
        "--delay-factor",
        "0",
    ];
    args.extend_from_slice(extra);
    let res = spinneret(&args, Duration::from_secs(60));
    let code = res.status.code();
    assert!(
        matches!(code, Some(0 | 8)),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
    (http, out, code)
}

#[test]
fn redirects_are_followed_with_a_hop_limit() {
    let mut routes = Routes::new();
    routes.add(
        "r.test",
        "/",
        Script::Respond(Response::ok(
            "<a href=/old>old</a> <a href=/chain/0>chain</a> <a href=/ftp>ftp</a>",
            "text/html",
        )),
    );
    routes.add(
        "r.test",
        "/old",
        Script::Respond(Response::redirect(301, "/new")),
    );
    routes.add(
        "r.test",
        "/new",
        Script::Respond(Response::ok("<p>new</p>", "text/html")),
    );
    routes.add(
        "r.test",
        "/ftp",
        Script::Respond(Response::redirect(302, "ftp://r.test/file")),
    );
    for i in 0..50 {
        routes.add(
            "r.test",
            &format!("/chain/{i}"),
            Script::Respond(Response::redirect(302, &format!("/chain/{}", i + 1))),
        );
    }
    let (http, out, code) = crawl_one_host("r.test", routes, &[], "crawl-redirect");
    assert_eq!(code, Some(8), "too many redirects is an HTTP error");
    let targets: BTreeSet<String> = http.requests().iter().map(|r| r.target.clone()).collect();
    assert!(targets.contains("/new"), "301 followed");
    assert!(
        targets.contains("/chain/10") && !targets.contains("/chain/11"),
        "10 hops: {targets:?}"
    );
    let lines = common::read_log(&out);
    let too_many: Vec<_> = lines
        .iter()
        .filter(|l| l.outcome == ReturnCode::TooManyRedirects)
        .collect();
    assert_eq!(too_many.len(), 1);
    assert!(too_many[0].url.ends_with("/chain/11"));
    assert!(
        !lines.iter().any(|l| l.url.starts_with("ftp:")),
        "non-http targets dropped"
    );
}

#[test]
fn robots_txt_over_the_body_limit_still_has_its_first_part_obeyed() {
    // RFC 9309: at least 500 KiB must be parsed. A 3 MiB robots.txt against a 1 MiB body
    // limit is cut, not "unreachable" (which would exclude the whole site).
    let mut robots = String::from("User-agent: *\nDisallow: /private/\n");
    while robots.len() < 3 << 20 {
        robots.push_str("# padding padding padding padding padding padding padding padding\n");
    }
    let mut routes = Routes::new();
    routes.add(
        "big.test",
        "/robots.txt",
        Script::Respond(Response::ok(robots, "text/plain")),
    );
    routes.add(
        "big.test",
        "/",
        Script::Respond(Response::ok(
            "<a href=/public.html>p</a> <a href=/private/x.html>x</a>",
            "text/html",
        )),
    );
    routes.add(
        "big.test",
        "/public.html",
        Script::Respond(Response::ok("ok", "text/html")),
    );
    routes.add(
        "big.test",
        "/private/x.html",
        Script::Respond(Response::ok("no", "text/html")),
    );
    let (http, out, code) = crawl_one_host(
        "big.test",
        routes,
        &["--max-body-bytes", "1M"],
        "crawl-bigrobots",
    );
    let targets: BTreeSet<String> = http.requests().iter().map(|r| r.target.clone()).collect();
    assert!(
        targets.contains("/") && targets.contains("/public.html"),
        "{targets:?}"
    );
    assert!(!targets.contains("/private/x.html"));
    assert_eq!(code, Some(0));
    let lines = common::read_log(&out);
    assert!(lines
        .iter()
        .any(|l| l.outcome == ReturnCode::RobotsExcluded && l.url.ends_with("/private/x.html")));
}

/// A robots.txt that redirects to another host (on its own address, so nothing serializes
/// the two on the wire): the rules found there govern the site that redirected, and the hop
/// is spaced with the other host's own requests, as one of them.
#[test]
fn a_robots_redirect_to_another_host_is_spaced_with_that_hosts_requests() {
    let (ra, rb) = ("ra.test", "rb.test");
    let (http, dns) = serve_hosts(&[
        (ra, Ipv4Addr::new(127, 0, 2, 1)),
        (rb, Ipv4Addr::new(127, 0, 2, 2)),
    ]);
    let port = http.port();
    let page = |body: &str| Script::Respond(Response::ok(body.to_string(), "text/html"));
    let mut routes = Routes::new();
    routes.add(
        ra,
        "/robots.txt",
        Script::Respond(Response::redirect(
            301,
            &format!("http://{rb}:{port}/robots.txt"),
        )),
    );
    routes.add(ra, "/", page("<a href=/ok>ok</a> <a href=/private/x>x</a>"));
    routes.add(ra, "/ok", page("<p>ok</p>"));
    routes.add(ra, "/private/x", page("<p>private</p>"));
    routes.add(
        rb,
        "/robots.txt",
        Script::Respond(Response::ok(
            "User-agent: *\nDisallow: /private/\n",
            "text/plain",
        )),
    );
    routes.add(
        rb,
        "/",
        page("<a href=/p1>1</a> <a href=/p2>2</a> <a href=/p3>3</a>"),
    );
    for p in ["/p1", "/p2", "/p3"] {
        routes.add(rb, p, page("<p>leaf</p>"));
    }
    http.set_routes(routes);
    let out = temp_dir("crawl-robots-hop").join("out");
    let (seed_b, seed_a) = (
        format!("http://{rb}:{port}/"),
        format!("http://{ra}:{port}/"),
    );
    let dns_addr = dns.addr().to_string();
    let mut args = common::loopback_args("crawl", &out, "300");
    args.extend([seed_b.as_str(), &seed_a, "--dns-server", &dns_addr]);
    let res = spinneret(&args, Duration::from_secs(60));
    assert_eq!(
        res.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
    let reqs = http.requests();
    let paths = |host: &str| -> Vec<String> {
        reqs.iter()
            .filter(|r| r.host == host)
            .map(|r| r.target.clone())
            .collect()
    };
    // rb.test's rules govern ra.test: its /private/ is not fetched, the rest is.
    let a = paths(ra);
    assert!(a.contains(&"/ok".to_string()), "{a:?}");
    assert!(!a.iter().any(|p| p.starts_with("/private/")), "{a:?}");
    // rb.test: its own robots.txt, the hop for ra.test's, and its four pages, all spaced.
    let b = paths(rb);
    assert_eq!(
        b.iter().filter(|p| p.as_str() == "/robots.txt").count(),
        2,
        "{b:?}"
    );
    assert_eq!(b.len(), 6, "{b:?}");
    common::assert_spaced(
        reqs.iter().filter(|r| r.host == rb),
        Duration::from_millis(300),
        rb,
    );
}
