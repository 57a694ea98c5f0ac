//! The synthetic web over real loopback sockets: every expected URL is served, every link
//! resolves where the generator says, the expected set is exactly what a polite crawl reaches,
//! and the server keeps connections alive, pipelines, routes by Host and stops on time.

use crate::common;

use std::collections::{BTreeSet, HashSet, VecDeque};
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, SocketAddrV4, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use spinneret_tools::testweb::*;
use url::Url;

const LIFETIME: Duration = Duration::from_secs(60);

fn small() -> WebConfig {
    WebConfig {
        hosts: 5,
        pages: 8,
        page_kb: 3,
        ..WebConfig::default()
    }
}

fn serve(cfg: &WebConfig) -> (Arc<TestWeb>, WebServer) {
    let web = Arc::new(TestWeb::generate(cfg));
    let server = WebServer::start(web.clone(), 0, LIFETIME).unwrap();
    (web, server)
}

fn addr(h: usize, port: u16) -> SocketAddr {
    SocketAddr::V4(SocketAddrV4::new(host_ip(h), port))
}

/// Fetches `url` (one of ours) from its host's own address.
fn fetch(url: &Url) -> Resp {
    let host = url.host_str().unwrap();
    let h: usize = host[1..host.len() - 5].parse().unwrap();
    let port = url.port().unwrap();
    let target = match url.query() {
        Some(q) => format!("{}?{q}", url.path()),
        None => url.path().to_string(),
    };
    get(addr(h, port), &format!("{host}:{port}"), &target)
}

/// Every `href=` value, found naively (ASCII case-insensitive), `&amp;` decoded.
fn naive_hrefs(body: &[u8]) -> Vec<String> {
    let lower = body.to_ascii_lowercase();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(p) = lower[i..].windows(5).position(|w| w == b"href=") {
        let start = i + p + 5;
        let (from, end) = match body.get(start) {
            Some(&q @ (b'"' | b'\'')) => {
                let len = body[start + 1..].iter().position(|&b| b == q).unwrap();
                (start + 1, start + 1 + len)
            }
            _ => {
                let len = body[start..]
                    .iter()
                    .position(|&b| b == b'>' || b.is_ascii_whitespace())
                    .unwrap();
                (start, start + len)
            }
        };
        out.push(String::from_utf8_lossy(&body[from..end]).replace("&amp;", "&"));
        i = end;
    }
    out
}

fn without_fragment(mut u: Url) -> Url {
    u.set_fragment(None);
    u
}

fn is_decoy(u: &Url) -> bool {
    u.path() == DECOY_PATH
}

/// The link graph of the served web (expected URL → the expected URLs its body links to, in
/// order), after checking every body and link; and the BFS from the seeds over it equals the
/// expected set.
fn check_links_and_reachability(cfg: &WebConfig) -> std::collections::HashMap<String, Vec<String>> {
    let (web, server) = serve(cfg);
    let port = server.port();
    let expected: BTreeSet<String> = web.expected_urls(port).into_iter().collect();
    let disallowed: BTreeSet<String> = web.disallowed_urls(port).into_iter().collect();
    assert_eq!(expected.len(), cfg.hosts * (cfg.pages + 1 + LIST_PAGES + 1));
    assert_eq!(disallowed.len(), cfg.hosts * PRIVATE_PAGES);
    assert!(expected.iter().all(|u| !u.ends_with("/robots.txt")));
    let mut sorted = web.expected_urls(port);
    sorted.sort();
    assert_eq!(sorted, web.expected_urls(port), "sorted");

    let mut html_bodies = HashSet::new();
    let mut linked_disallowed = BTreeSet::new();
    let mut graph = std::collections::HashMap::new();
    for u in &expected {
        let url = Url::parse(u).unwrap();
        let resp = fetch(&url);
        assert_eq!(resp.status, 200, "{u}");
        if url.path() == "/style.css" {
            assert_eq!(resp.header("content-type"), Some("text/css"));
            continue;
        }
        assert!(resp
            .header("content-type")
            .unwrap()
            .starts_with("text/html"));
        assert!(html_bodies.insert(resp.body.clone()), "duplicate body: {u}");
        let text = String::from_utf8(resp.body.clone()).unwrap();
        assert!(text.contains(url.host_str().unwrap()), "{u} names its host");
        // The decoy is only ever inside the script body.
        let script = &text[text.find("<script>").unwrap()..text.find("</script>").unwrap()];
        assert!(script.contains(&format!("href=\"{DECOY_PATH}\"")), "{u}");
        assert_eq!(text.matches(DECOY_PATH).count(), 1, "{u}");
        let mut links = Vec::new();
        for href in naive_hrefs(&resp.body) {
            let target =
                without_fragment(url.join(&href).unwrap_or_else(|e| panic!("{href}: {e}")));
            let s = target.as_str().to_string();
            if is_decoy(&target) {
                assert_eq!(target.host_str(), url.host_str());
                continue;
            }
            if disallowed.contains(&s) {
                linked_disallowed.insert(s);
                continue;
            }
            assert!(
                expected.contains(&s),
                "{u} links to {href} = {s}, not a page"
            );
            links.push(s);
        }
        graph.insert(u.clone(), links);
    }
    assert_eq!(
        linked_disallowed, disallowed,
        "every private page is linked"
    );

    // BFS from the seeds over the links, as a polite crawl would go.
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut queue: VecDeque<String> = web.seeds(port).into_iter().collect();
    assert_eq!(queue.len(), cfg.hosts);
    while let Some(u) = queue.pop_front() {
        if !seen.insert(u.clone()) {
            continue;
        }
        for l in graph.get(&u).into_iter().flatten() {
            if !seen.contains(l) {
                queue.push_back(l.clone());
            }
        }
    }
    assert_eq!(seen, expected);

    // Private pages exist (robots is what keeps a crawler out); the decoy is a 404.
    for u in &disallowed {
        assert_eq!(fetch(&Url::parse(u).unwrap()).status, 200, "{u}");
    }
    let decoy = Url::parse(&format!("http://h0001.test:{port}{DECOY_PATH}")).unwrap();
    assert_eq!(fetch(&decoy).status, 404);
    assert!(server.requests() >= (expected.len() + disallowed.len()) as u64);
    graph
}

fn host_of(u: &str) -> String {
    Url::parse(u).unwrap().host_str().unwrap().to_string()
}

/// (links to the page's own host, links to other hosts), over every page.
fn link_counts(graph: &std::collections::HashMap<String, Vec<String>>) -> (usize, usize) {
    let mut own = 0;
    let mut other = 0;
    for (from, links) in graph {
        for l in links {
            if host_of(l) == host_of(from) {
                own += 1;
            } else {
                other += 1;
            }
        }
    }
    (own, other)
}

#[test]
fn every_link_resolves_and_the_expected_set_is_the_polite_crawl() {
    let graph = check_links_and_reachability(&small());
    let (own, other) = link_counts(&graph);
    assert!(
        own > 4 * other,
        "clustered: {own} own-host, {other} cross-host links"
    );
}

/// The linked shape: most links go to other hosts, yet every page is reachable, and from its
/// own index alone (the chain), so the expected set holds whatever the crawl's order.
#[test]
fn linked_web_links_across_hosts_and_every_page_is_reachable() {
    let cfg = WebConfig {
        hosts: 6,
        pages: 8,
        page_kb: 3,
        ..WebConfig::of_shape(Shape::Linked)
    };
    let graph = check_links_and_reachability(&cfg);
    let (own, other) = link_counts(&graph);
    assert!(
        other > own,
        "linked: {own} own-host, {other} cross-host links"
    );
    // Each host's pages, reached from its index through its own pages only.
    for h in 0..cfg.hosts {
        let name = host_name(h);
        let mut seen = BTreeSet::new();
        let mut queue: VecDeque<String> = graph
            .keys()
            .filter(|u| host_of(u) == name && Url::parse(u).unwrap().path() == "/")
            .cloned()
            .collect();
        while let Some(u) = queue.pop_front() {
            if !seen.insert(u.clone()) {
                continue;
            }
            for l in graph.get(&u).into_iter().flatten() {
                if host_of(l) == name {
                    queue.push_back(l.clone());
                }
            }
        }
        let own: BTreeSet<&String> = graph
            .iter()
            .flat_map(|(from, links)| links.iter().chain([from]))
            .filter(|u| host_of(u) == name)
            .collect();
        assert_eq!(seen.iter().collect::<BTreeSet<_>>(), own, "{name}");
    }
    // A host is never handed to a crawl whole: apart from the list pages (at the chain's
    // end), a page names at most three other pages of its host (home, the first, the next).
    for (from, links) in &graph {
        let own: BTreeSet<&String> = links
            .iter()
            .filter(|l| *l != from && host_of(l) == host_of(from) && !l.ends_with("/style.css"))
            .collect();
        if !from.contains("/list.html") {
            assert!(own.len() <= 3, "{from} links {} own-host pages", own.len());
        }
    }
}

/// `files` writes what the server serves, for either scheme.
#[test]
fn files_are_the_served_bodies() {
    let cfg = WebConfig {
        hosts: 3,
        pages: 4,
        page_kb: 2,
        ..WebConfig::of_shape(Shape::Linked)
    };
    let (web, server) = serve(&cfg);
    let port = server.port();
    let dir = std::env::temp_dir().join(format!("testweb-files-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for scheme in [Scheme::Http, Scheme::Https] {
        let n = files::write_tree(&web, scheme, port, &dir).unwrap();
        assert_eq!(n, cfg.hosts * (cfg.pages + 3 + LIST_PAGES + PRIVATE_PAGES));
        let expected = web.expected_urls_as(scheme, port);
        assert_eq!(expected.len(), web.expected_urls(port).len());
        for u in expected.iter().chain(&web.disallowed_urls(port)) {
            let url = Url::parse(u).unwrap();
            let target = match url.query() {
                Some(q) => format!("{}?{q}", url.path()),
                None => url.path().to_string(),
            };
            let path = dir
                .join(url.host_str().unwrap())
                .join(files::file_name(&target));
            let on_disk = std::fs::read(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
            let http_url = Url::parse(&u.replacen("https:", "http:", 1)).unwrap();
            let served = String::from_utf8(fetch(&http_url).body).unwrap();
            let want = match scheme {
                Scheme::Http => served,
                Scheme::Https => served.replace("http://h0", "https://h0"),
            };
            assert_eq!(String::from_utf8(on_disk).unwrap(), want, "{u}");
        }
        let robots = std::fs::read_to_string(dir.join("h0002.test/robots.txt")).unwrap();
        assert_eq!(robots, ROBOTS_TXT);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn pages_are_roughly_page_kb_and_carry_the_link_variety() {
    let cfg = WebConfig {
        hosts: 3,
        pages: 6,
        page_kb: 15,
        ..WebConfig::default()
    };
    let (_web, server) = serve(&cfg);
    let port = server.port();
    let mut all = String::new();
    for j in 0..cfg.pages {
        let body = get(addr(1, port), "h0001.test", &format!("/p{j}.html")).body;
        assert!(
            (12 * 1024..24 * 1024).contains(&body.len()),
            "p{j}: {} bytes",
            body.len()
        );
        all.push_str(&String::from_utf8(body).unwrap());
    }
    for needle in [
        "<A HREF=",
        "href='",
        "href=\"/p",
        "href=\"p",
        &format!("href=\"http://h0001.test:{port}/"),
        "#section-2",
        "href=\"#top\"",
        "&amp;page=",
        "<link rel=stylesheet href=\"/style.css\">",
        "<meta charset=\"utf-8\">",
        "<nav>",
        "<footer>",
    ] {
        assert!(all.contains(needle), "no {needle}");
    }
}

#[test]
fn robots_txt_and_404() {
    let (web, server) = serve(&small());
    let port = server.port();
    let r = get(addr(2, port), "h0002.test", "/robots.txt");
    assert_eq!(r.status, 200);
    assert_eq!(r.body, ROBOTS_TXT.as_bytes());
    assert_eq!(r.body, b"User-agent: *\nDisallow: /private/\n");
    for (h, host, target) in [
        (0, "h0000.test", "/nope.html"),
        (0, "h0000.test", "/p8.html"),     // one past the last page
        (0, "h9999.test", "/p0.html"),     // not one of our hosts
        (0, "h00001.test", "/p0.html"),    // not the canonical name
        (0, "example.com", "/robots.txt"), // not ours either
        (1, "h0001.test", "/P0.html"),     // paths are case-sensitive
    ] {
        let r = get(addr(h, port), host, target);
        assert_eq!(r.status, 404, "{host}{target}");
        assert_eq!(
            r.header("content-length").unwrap(),
            r.body.len().to_string()
        );
    }
    assert_eq!(web.config().hosts, 5);
}

#[test]
fn host_header_routes_case_insensitively_with_or_without_port() {
    let (_web, server) = serve(&small());
    let port = server.port();
    // Asked on host 0's address, answered by host 3: the Host header decides.
    for host in [
        "h0003.test".to_string(),
        "H0003.TEST".to_string(),
        format!("h0003.Test:{port}"),
    ] {
        let r = get(addr(0, port), &host, "/p1.html");
        assert_eq!(r.status, 200, "{host}");
        assert!(String::from_utf8(r.body)
            .unwrap()
            .contains("<title>h0003.test page 1"));
    }
    // No Host header at all: the address decides.
    let mut s = connect(addr(4, port));
    s.write_all(b"GET /p1.html HTTP/1.1\r\n\r\n").unwrap();
    let r = read_response(&mut s, &mut Vec::new()).unwrap();
    assert!(String::from_utf8(r.body)
        .unwrap()
        .contains("<title>h0004.test page 1"));
}

#[test]
fn every_host_has_its_own_address_on_one_port() {
    let cfg = WebConfig {
        hosts: 300, // past 254: the third octet moves on
        pages: 1,
        page_kb: 1,
        ..WebConfig::default()
    };
    let (_web, server) = serve(&cfg);
    let port = server.port();
    assert_eq!(host_ip(253).octets(), [127, 1, 0, 254]);
    assert_eq!(host_ip(254).octets(), [127, 1, 1, 1]);
    for h in [0, 1, 253, 254, 299] {
        let s = connect(addr(h, port));
        assert_eq!(s.peer_addr().unwrap(), addr(h, port));
        let r = get(addr(h, port), &host_name(h), "/");
        assert_eq!(r.status, 200);
        assert!(String::from_utf8(r.body)
            .unwrap()
            .contains(&format!("Welcome to {}", host_name(h))));
    }
    // Nothing listens on the next address.
    let none = TcpStream::connect_timeout(&addr(300, port), IO_TIMEOUT);
    assert!(none.is_err());
}

#[test]
fn keep_alive_with_pipelined_and_split_requests() {
    let (_web, server) = serve(&small());
    let port = server.port();
    let mut s = connect(addr(0, port));
    let one = |t: &str| request("h0000.test", t);
    // Three requests in one write: answered in order on the same connection.
    let mut burst = one("/p0.html");
    burst.extend(one("/missing"));
    burst.extend(one("/robots.txt"));
    s.write_all(&burst).unwrap();
    let mut buf = Vec::new();
    let r0 = read_response(&mut s, &mut buf).unwrap();
    let r1 = read_response(&mut s, &mut buf).unwrap();
    let r2 = read_response(&mut s, &mut buf).unwrap();
    assert_eq!((r0.status, r1.status, r2.status), (200, 404, 200));
    assert!(String::from_utf8(r0.body)
        .unwrap()
        .contains("h0000.test page 0"));
    assert_eq!(r2.body, ROBOTS_TXT.as_bytes());
    // A head split across writes (and across reads on the server).
    let req = one("/p1.html");
    s.write_all(&req[..10]).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    s.write_all(&req[10..]).unwrap();
    let r = read_response(&mut s, &mut buf).unwrap();
    assert!(String::from_utf8(r.body)
        .unwrap()
        .contains("h0000.test page 1"));
    // HEAD: the head alone; the next response follows it directly.
    s.write_all(b"HEAD /p2.html HTTP/1.1\r\nHost: h0000.test\r\n\r\n")
        .unwrap();
    s.write_all(&one("/p3.html")).unwrap();
    let mut all = Vec::new();
    let deadline = Instant::now() + IO_TIMEOUT;
    let mut tmp = [0u8; 65536];
    while !String::from_utf8_lossy(&all).contains("</html>") && Instant::now() < deadline {
        let n = s.read(&mut tmp).unwrap();
        assert!(n > 0);
        all.extend_from_slice(&tmp[..n]);
    }
    let text = String::from_utf8(all).unwrap();
    let second = text.find("HTTP/1.1 200 OK").unwrap();
    let second = second + 1 + text[second + 1..].find("HTTP/1.1 200 OK").unwrap();
    assert!(text[..second].ends_with("\r\n\r\n"));
    assert!(!text[..second].contains("<html"));
    assert!(text[second..].contains("h0000.test page 3"));
    assert_eq!(server.requests(), 6);
    // Connection: close is honoured after the response.
    s.write_all(b"GET /p4.html HTTP/1.1\r\nHost: h0000.test\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut rest = Vec::new();
    read_to_end(&mut s, &mut rest).unwrap();
    assert!(String::from_utf8(rest)
        .unwrap()
        .contains("h0000.test page 4"));
}

#[test]
fn slow_reader_gets_every_pipelined_response_whole() {
    let cfg = WebConfig {
        hosts: 1,
        pages: 40,
        page_kb: 60,
        ..WebConfig::default()
    };
    let (_web, server) = serve(&cfg);
    let port = server.port();
    let singles: Vec<Vec<u8>> = (0..cfg.pages)
        .map(|j| get(addr(0, port), "h0000.test", &format!("/p{j}.html")).body)
        .collect();
    // ~2.4 MB of responses queued at once: far more than the socket buffers, so the server
    // has to stop on partial writes and resume from its offset.
    let mut s = connect(addr(0, port));
    let burst: Vec<u8> = (0..cfg.pages)
        .flat_map(|j| request("h0000.test", &format!("/p{j}.html")))
        .collect();
    s.write_all(&burst).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let mut buf = Vec::new();
    for (j, want) in singles.iter().enumerate() {
        let r = read_response(&mut s, &mut buf).unwrap();
        assert_eq!(&r.body, want, "p{j}");
    }
}

#[test]
fn garbage_request_closes_the_connection() {
    let (_web, server) = serve(&small());
    let mut s = connect(addr(0, server.port()));
    s.write_all(b"\x00\x01 not http\r\n\r\n").unwrap();
    let mut rest = Vec::new();
    read_to_end(&mut s, &mut rest).unwrap();
    assert!(rest.is_empty());
    // The server still serves others.
    assert_eq!(get(addr(0, server.port()), "h0000.test", "/").status, 200);
}

#[test]
fn stops_after_its_lifetime_and_on_stop() {
    let web = Arc::new(TestWeb::generate(&small()));
    let server = WebServer::start(web.clone(), 0, Duration::from_millis(300)).unwrap();
    let port = server.port();
    assert_eq!(get(addr(0, port), "h0000.test", "/").status, 200);
    let deadline = Instant::now() + Duration::from_secs(5);
    while !server.is_stopped() {
        assert!(Instant::now() < deadline, "still running past its lifetime");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(50));
    let err = TcpStream::connect_timeout(&addr(0, port), IO_TIMEOUT).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ConnectionRefused);
    server.stop();

    let server = WebServer::start(web, 0, LIFETIME).unwrap();
    let port = server.port();
    let t = Instant::now();
    server.stop();
    assert!(t.elapsed() < Duration::from_secs(2));
    assert!(TcpStream::connect_timeout(&addr(1, port), IO_TIMEOUT).is_err());
}

#[test]
fn load_client_measures_a_running_server() {
    let cfg = small();
    let (_web, server) = serve(&cfg);
    let r = load::run(&load::LoadConfig {
        port: server.port(),
        hosts: cfg.hosts,
        pages: cfg.pages,
        conns: 4,
        duration: Duration::from_millis(300),
    });
    assert!(r.requests > 0);
    assert_eq!(r.errors, 0);
    assert!(r.bytes > r.requests * 3 * 1024);
    assert!(server.requests() >= r.requests);
}

#[test]
fn binary_web_and_load_modes() {
    use std::io::BufRead;
    use std::process::{Command, Stdio};
    let exe = env!("CARGO_BIN_EXE_spinneret-testserver");
    let urls_out = std::env::temp_dir().join(format!("testweb-urls-{}.txt", std::process::id()));
    let mut child = Command::new(exe)
        .args(["web", "--hosts", "3", "--pages", "4", "--page-kb", "2"])
        .args(["--lifetime", "3", "--urls-out"])
        .arg(&urls_out)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let field = |k: &str| {
        line.split_whitespace()
            .find_map(|f| f.strip_prefix(k))
            .unwrap()
            .to_string()
    };
    let port: u16 = field("http_port=").parse().unwrap();
    let _dns: SocketAddr = field("dns=").parse().unwrap();
    let pages: usize = field("pages=").parse().unwrap();
    let web = TestWeb::generate(&WebConfig {
        hosts: 3,
        pages: 4,
        page_kb: 2,
        ..WebConfig::default()
    });
    let expected = web.expected_urls(port);
    assert_eq!(pages, expected.len());
    let written = std::fs::read_to_string(&urls_out).unwrap();
    assert_eq!(written.lines().collect::<Vec<_>>(), expected);
    let _ = std::fs::remove_file(&urls_out);
    // Same seed, same bytes: the child serves what this process generates.
    let direct = Arc::new(web);
    let here = WebServer::start(direct, 0, LIFETIME).unwrap();
    let there = get(addr(1, port), "h0001.test", "/p2.html").body;
    let mine = get(addr(1, here.port()), "h0001.test", "/p2.html").body;
    let strip = |b: Vec<u8>, p: u16| {
        String::from_utf8(b)
            .unwrap()
            .replace(&format!(":{p}/"), ":PORT/")
    };
    assert_eq!(strip(there, port), strip(mine, here.port()));

    let load = Command::new(exe)
        .args([
            "load",
            "--port",
            &port.to_string(),
            "--hosts",
            "3",
            "--pages",
            "4",
        ])
        .args(["--conns", "2", "--seconds", "0.3"])
        .output()
        .unwrap();
    assert!(load.status.success());
    let report = String::from_utf8(load.stdout).unwrap();
    assert!(report.contains("req/s=") && report.contains("MB/s=") && report.contains("errors=0"));
    // It exits by itself once its lifetime is over.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success());
            break;
        }
        assert!(Instant::now() < deadline, "web mode outlived --lifetime");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// How `spinneret bench` runs the web: a child that stops when its parent closes its stdin,
/// long before its lifetime, and says how many requests it served.
#[test]
fn binary_web_mode_stops_when_its_stdin_closes() {
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_spinneret-testserver"))
        .args(["web", "--shape", "linked", "--hosts", "2", "--pages", "2"])
        .args(["--page-kb", "1", "--latency-ms", "1", "--lifetime", "600"])
        .arg("--until-stdin-closes")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (_, port) = ready_line(&mut child);
    assert_eq!(get(addr(0, port), "h0000.test", "/").status, 200);
    drop(child.stdin.take());
    let deadline = Instant::now() + Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "web mode outlived its stdin");
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("test web: served 1 requests"), "{stderr}");
}

#[test]
fn binary_files_mode_writes_the_shape_and_scheme_asked_for() {
    use std::process::Command;
    let exe = env!("CARGO_BIN_EXE_spinneret-testserver");
    let dir = std::env::temp_dir().join(format!("testweb-files-bin-{}", std::process::id()));
    let urls_out = dir.join("urls.txt");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // The size flags given before --shape still apply to the linked web.
    let out = Command::new(exe)
        .args(["files", "--hosts", "2", "--pages", "3", "--page-kb", "2"])
        .args(["--shape", "linked", "--https", "--port", "8443", "--dir"])
        .arg(dir.join("site"))
        .arg("--urls-out")
        .arg(&urls_out)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let web = TestWeb::generate(&WebConfig {
        hosts: 2,
        pages: 3,
        page_kb: 2,
        ..WebConfig::of_shape(Shape::Linked)
    });
    let expected = web.expected_urls_as(Scheme::Https, 8443);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        stdout.trim(),
        format!(
            "files={} pages={}",
            2 * (3 + 3 + LIST_PAGES + PRIVATE_PAGES),
            expected.len()
        )
    );
    let written = std::fs::read_to_string(&urls_out).unwrap();
    assert_eq!(written.lines().collect::<Vec<_>>(), expected);
    let p2 = std::fs::read_to_string(dir.join("site/h0001.test/p2.html")).unwrap();
    assert!(p2.contains("https://h0000.test:8443/"));
    assert!(!p2.contains("http://"));
    let _ = std::fs::remove_dir_all(&dir);
    let bad = Command::new(exe)
        .args(["files", "--dir", "x"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2), "files without --port");
}

/// Reads one response with a Content-Length from `s` (bounded by the read timeout).
fn read_one(s: &mut TcpStream) -> Vec<u8> {
    let mut got = Vec::new();
    let mut buf = [0u8; 64 * 1024];
    loop {
        if let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&got[..end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length: "))
                .and_then(|v| v.trim().parse().ok())
                .unwrap();
            if got.len() >= end + 4 + len {
                return got;
            }
        }
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "connection closed mid-response");
        got.extend_from_slice(&buf[..n]);
    }
}

#[test]
fn latency_delays_the_connect_answer_and_each_response() {
    let web = Arc::new(TestWeb::generate(&small()));
    let latency = Duration::from_millis(150);
    let server = WebServer::start_with_latency(web, 0, LIFETIME, latency).unwrap();
    let mut s = TcpStream::connect(addr(0, server.port())).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let req = format!(
        "GET / HTTP/1.1\r\nHost: {}:{}\r\n\r\n",
        host_name(0),
        server.port()
    );
    let start = Instant::now();
    s.write_all(req.as_bytes()).unwrap();
    let first = read_one(&mut s);
    let took = start.elapsed();
    assert!(first.starts_with(b"HTTP/1.1 200"));
    // The connect answer and the response: two latencies.
    assert!(took >= 2 * latency, "first response after {took:?}");
    assert!(
        took < Duration::from_secs(2),
        "first response after {took:?}"
    );
    // On the same connection, one latency per response.
    let start = Instant::now();
    s.write_all(req.as_bytes()).unwrap();
    read_one(&mut s);
    let took = start.elapsed();
    assert!(
        took >= latency && took < 2 * latency,
        "second response after {took:?}"
    );
    // Many connections wait at once: the delay is per connection, not serialized.
    let start = Instant::now();
    let mut conns: Vec<TcpStream> = (0..20)
        .map(|_| {
            let mut c = TcpStream::connect(addr(0, server.port())).unwrap();
            c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            c.write_all(req.as_bytes()).unwrap();
            c
        })
        .collect();
    for c in &mut conns {
        read_one(c);
    }
    let took = start.elapsed();
    assert!(took < 4 * latency, "20 connections took {took:?}");
}
