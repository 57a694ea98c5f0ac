//! Everyday use of the binary, as a new user meets it: exit codes, failures that cannot
//! succeed ending at once, one crawl.log line per URL given or admitted, `--max-time` as a
//! hard bound, the wget/curl flags, and the progress line. Loopback servers only.

use crate::common;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{read_log, spinneret, temp_dir};
use spinneret::ReturnCode;
use spinneret_tools::http_server::{HttpServer, HttpServerConfig, Response, Routes, Script};

const LIFETIME: Duration = Duration::from_secs(60);
const LIMIT: Duration = Duration::from_secs(30);

/// A run of the binary: exit code, stderr, wall time.
struct Run {
    code: Option<i32>,
    stderr: String,
    took: Duration,
}

fn run(args: &[&str]) -> Run {
    let started = Instant::now();
    let res = spinneret(args, LIMIT);
    Run {
        code: res.status.code(),
        stderr: String::from_utf8_lossy(&res.stderr).into_owned(),
        took: started.elapsed(),
    }
}

fn server(routes: Routes) -> HttpServer {
    HttpServer::start(HttpServerConfig {
        routes,
        lifetime: LIFETIME,
        ..HttpServerConfig::default()
    })
    .expect("http server")
}

fn html(body: &str) -> Script {
    Script::Respond(Response::ok(body.to_string(), "text/html"))
}

/// A loopback port nothing listens on (bound, then released).
fn refused_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

fn out_dir(name: &str) -> PathBuf {
    temp_dir(name).join("out")
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The number after `key` in `text` (e.g. `"urls": 12`, or `done: 12 URLs`).
fn number_after(text: &str, key: &str) -> u64 {
    let at = text
        .find(key)
        .unwrap_or_else(|| panic!("{key:?} not in {text}"));
    text[at + key.len()..]
        .trim_start_matches([' ', ':'])
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap_or_else(|_| panic!("no number after {key:?} in {text}"))
}

/// The summary line and stats.json agree with crawl.log: URL lines plus robots.txt lines
/// are all the lines, and the classes add up to the URL lines.
fn assert_counts_add_up(out: &Path, stderr: &str) {
    let lines = read_log(out).len() as u64;
    let stats = std::fs::read_to_string(out.join("stats.json")).unwrap();
    let urls = number_after(&stats, "\"urls\"");
    let robots = number_after(&stats, "\"robots_lines\"");
    assert_eq!(urls + robots, lines, "stats.json vs crawl.log: {stats}");
    assert_eq!(number_after(&stats, "\"log_lines\""), lines);
    let classes: u64 = [
        "\"ok\"",
        "\"http_errors\"",
        "\"failed_total\"",
        "\"skipped\"",
        "\"not_fetched\"",
    ]
    .iter()
    .map(|k| number_after(&stats, k))
    .sum();
    assert_eq!(classes, urls, "classes add up: {stats}");
    assert_eq!(number_after(stderr, "done:"), urls, "{stderr}");
    if robots > 0 {
        assert!(
            stderr.contains(&format!("+ {robots} robots.txt = {lines} crawl.log lines")),
            "{stderr}"
        );
    }
}

fn outcomes_of(out: &Path) -> Vec<(ReturnCode, String)> {
    read_log(out)
        .into_iter()
        .map(|l| (l.outcome, l.url))
        .collect()
}

// ---- exit codes ----

#[test]
fn exit_0_when_every_url_is_fetched() {
    let mut routes = Routes::new();
    routes.add("127.0.0.1", "/a", html("a"));
    routes.add("127.0.0.1", "/b", html("b"));
    let http = server(routes);
    let out = out_dir("exit0");
    let a = format!("http://127.0.0.1:{}/a", http.port());
    let b = format!("http://127.0.0.1:{}/b", http.port());
    let r = run(&["fetch", &a, &b, "-o", s(&out), "--allow-private"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stderr.contains("done: 2 URLs, 2 ok"), "{}", r.stderr);
    assert!(
        r.stderr.contains("spinneret: exit 0: every URL fetched"),
        "{}",
        r.stderr
    );
    assert_counts_add_up(&out, &r.stderr);
}

#[test]
fn exit_8_when_a_url_gets_an_http_error() {
    let mut routes = Routes::new();
    routes.add("127.0.0.1", "/a", html("a"));
    let http = server(routes);
    let out = out_dir("exit8");
    let a = format!("http://127.0.0.1:{}/a", http.port());
    let missing = format!("http://127.0.0.1:{}/missing", http.port());
    let r = run(&["fetch", &a, &missing, "-o", s(&out), "--allow-private"]);
    assert_eq!(r.code, Some(8), "{}", r.stderr);
    assert!(r.stderr.contains("exit 8: 1 of 2 URLs"), "{}", r.stderr);
    let stats = std::fs::read_to_string(out.join("stats.json")).unwrap();
    assert_eq!(number_after(&stats, "\"http_errors\""), 1);
    assert_eq!(number_after(&stats, "\"exit_status\""), 8);
    assert_counts_add_up(&out, &r.stderr);
}

#[test]
fn exit_4_when_a_url_gets_no_response_and_it_beats_http_errors() {
    let http = server(Routes::new()); // everything 404
    let out = out_dir("exit4");
    let missing = format!("http://127.0.0.1:{}/missing", http.port());
    let refused = format!("http://127.0.0.1:{}/", refused_port());
    let r = run(&[
        "fetch",
        &missing,
        &refused,
        "-o",
        s(&out),
        "--allow-private",
    ]);
    assert_eq!(r.code, Some(4), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("exit 4: 1 of 2 URLs got no HTTP response"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("HttpConnect 1"), "{}", r.stderr);
    let got = outcomes_of(&out);
    assert!(got.contains(&(ReturnCode::HttpConnect, refused)), "{got:?}");
    assert_counts_add_up(&out, &r.stderr);
}

#[test]
fn exit_2_for_bad_input_and_nothing_starts() {
    let dir = temp_dir("exit2");
    let out = dir.join("out");
    let o = s(&out);
    let cases: &[(&[&str], &str)] = &[
        (
            &[
                "fetch",
                "http://a.test/",
                "-o",
                o,
                "--user-agent",
                "bad\r\nX: 1",
            ],
            "--user-agent",
        ),
        (
            &["fetch", "http://a.test/", "-o", o, "--header", "X-Bad"],
            "--header X-Bad",
        ),
        (
            &["fetch", "http://a.test/", "-o", o, "--header", "X: a\nb"],
            "control character",
        ),
        (
            &["fetch", "http://a.test/", "-o", o, "--header", "Host: evil"],
            "--header Host",
        ),
        (
            &[
                "crawl",
                "http://a.test/",
                "-o",
                o,
                "--accept-regex",
                "(unclosed",
            ],
            "--accept-regex",
        ),
        (
            &[
                "crawl",
                "http://a.test/",
                "-o",
                o,
                "--reject-regex",
                "[z-a]",
            ],
            "--reject-regex",
        ),
        (
            &["crawl", "http://a.test/", "-o", o, "--max-time", "0"],
            "--max-time",
        ),
        (
            &["crawl", "http://a.test/", "-o", o, "--max-pages", "0"],
            "--max-pages",
        ),
        (
            &[
                "crawl",
                "http://a.test/",
                "-o",
                o,
                "--max-pages-per-host",
                "0",
            ],
            "--max-pages-per-host",
        ),
        (
            &["fetch", "http://a.test/", "-o", o, "--http-timeout-ms", "0"],
            "--http-timeout-ms",
        ),
        (
            &["crawl", "http://a.test/", "-o", o, "--delay=-1"],
            "--delay",
        ),
        (
            &[
                "crawl",
                "http://a.test/",
                "-o",
                o,
                "-w",
                "1",
                "--delay-ms",
                "5",
            ],
            "--delay",
        ),
        (
            &["crawl", "http://a.test/", "-o", o, "--max-redirect=300"],
            "--max-redirect",
        ),
        (&["crawl", "http://a.test/", "-o", o, "-q", "-v"], "--quiet"),
        (&["crawl", "-o", o], "no usable seed"),
        (
            &[
                "crawl",
                "http://a.test/",
                "-o",
                o,
                "--dns-names-in-flight",
                "0",
            ],
            "--dns-names-in-flight",
        ),
    ];
    for (args, says) in cases {
        let r = run(args);
        assert_eq!(r.code, Some(2), "{args:?}: {}", r.stderr);
        assert!(
            r.stderr.contains(says),
            "{args:?} should mention {says:?}: {}",
            r.stderr
        );
        assert!(!out.exists(), "{args:?} created the output");
    }
}

#[test]
fn exit_3_when_the_output_cannot_be_written() {
    let dir = temp_dir("exit3");
    let file = dir.join("a-file");
    std::fs::write(&file, "x").unwrap();
    let r = run(&["crawl", "http://127.0.0.1:9/", "-o", s(&file.join("out"))]);
    assert_eq!(r.code, Some(3), "{}", r.stderr);
    assert!(r.stderr.contains("output error"), "{}", r.stderr);
}

// ---- failures that cannot succeed, and --max-time ----

#[test]
fn private_address_blocked_at_once_with_a_hint() {
    let mut routes = Routes::new();
    routes.add("127.0.0.1", "/", html("<a href=/x>x</a>"));
    let http = server(routes);
    let out = out_dir("blocked");
    let a = format!("http://127.0.0.1:{}/", http.port());
    let b = format!("http://127.0.0.1:{}/other", http.port());
    let r = run(&["crawl", &a, &b, "-o", s(&out)]);
    assert!(r.took < Duration::from_secs(2), "took {:?}", r.took);
    assert_eq!(r.code, Some(4), "{}", r.stderr);
    assert_eq!(
        r.stderr.matches("--allow-private").count(),
        1,
        "the hint, once: {}",
        r.stderr
    );
    assert_eq!(http.request_count(), 0, "nothing was sent");
    let got = outcomes_of(&out);
    assert_eq!(got.len(), 3, "robots.txt and both seeds: {got:?}");
    assert!(
        got.iter()
            .all(|(c, _)| *c == ReturnCode::PrivateAddressBlocked),
        "robots.txt is not retried and the seeds end at once: {got:?}"
    );
    assert_counts_add_up(&out, &r.stderr);

    // `fetch` says the same.
    let out = out_dir("blocked-fetch");
    let r = run(&["fetch", &a, "-o", s(&out)]);
    assert_eq!(r.code, Some(4), "{}", r.stderr);
    assert!(r.stderr.contains("--allow-private"), "{}", r.stderr);
}

#[test]
fn max_time_bounds_a_crawl_waiting_on_an_unreachable_robots_txt() {
    let port = refused_port();
    let a = format!("http://127.0.0.1:{port}/");
    let b = format!("http://127.0.0.1:{port}/b");
    let out = out_dir("maxtime-refused");
    let r = run(&[
        "crawl",
        &a,
        &b,
        "-o",
        s(&out),
        "--allow-private",
        "--max-time",
        "2",
    ]);
    assert!(r.took <= Duration::from_secs(3), "took {:?}", r.took);
    assert_eq!(r.code, Some(9), "{}", r.stderr);
    assert!(r.stderr.contains("stopped by --max-time"), "{}", r.stderr);
    let got = outcomes_of(&out);
    let robots: Vec<_> = got
        .iter()
        .filter(|(_, u)| u.ends_with("/robots.txt"))
        .collect();
    assert!(!robots.is_empty() && robots.iter().all(|(c, _)| *c == ReturnCode::HttpConnect));
    let seeds: Vec<_> = got
        .iter()
        .filter(|(_, u)| !u.ends_with("/robots.txt"))
        .collect();
    // The seeds wait on robots.txt: still queued for `resume`, so no line yet, and the
    // summary counts them.
    assert!(seeds.is_empty(), "{seeds:?}");
    assert!(
        r.stderr
            .contains("2 URLs not fetched (2 still queued for `spinneret resume`)"),
        "{}",
        r.stderr
    );
    assert_counts_add_up(&out, &r.stderr);
}

#[test]
fn max_time_cuts_fetches_in_flight() {
    let http = HttpServer::start(HttpServerConfig {
        lifetime: LIFETIME,
        fallback: Script::Silence,
        ..HttpServerConfig::default()
    })
    .unwrap();
    let seed = format!("http://127.0.0.1:{}/", http.port());
    let out = out_dir("maxtime-hang");
    let r = run(&[
        "crawl",
        &seed,
        "-o",
        s(&out),
        "--allow-private",
        "--max-time",
        "2",
    ]);
    assert!(r.took <= Duration::from_secs(3), "took {:?}", r.took);
    assert_eq!(r.code, Some(9), "{}", r.stderr);
    let got = outcomes_of(&out);
    // The seed stays queued for `resume`: it gets its line when a resumed run ends it.
    assert_eq!(
        got,
        vec![(ReturnCode::Interrupted, format!("{seed}robots.txt"))]
    );
    assert!(r.stderr.contains("1 still queued"), "{}", r.stderr);
    assert_counts_add_up(&out, &r.stderr);
}

// ---- one line per URL given or admitted ----

#[test]
fn every_seed_has_one_line_even_when_refused() {
    let mut routes = Routes::new();
    routes.add("127.0.0.1", "/", html("<p>home</p>"));
    let http = server(routes);
    let port = http.port();
    let dir = temp_dir("seedlines");
    let out = dir.join("out");
    let good = format!("http://127.0.0.1:{port}/");
    let other = format!("http://127.0.0.2:{port}/");
    let long = format!("http://127.0.0.1:{port}/{}", "x".repeat(200));
    let list = dir.join("seeds.txt");
    std::fs::write(
        &list,
        format!("# seeds\n{good}\n{other}\n{long}\nhttp://bad seed/\n"),
    )
    .unwrap();
    let r = run(&[
        "crawl",
        "-i",
        s(&list),
        "-o",
        s(&out),
        "--allow-private",
        "--allow-domain",
        "127.0.0.1",
        "--max-url-length",
        "100",
        "-w",
        "0",
    ]);
    assert_eq!(
        r.code,
        Some(4),
        "the malformed line is a failure: {}",
        r.stderr
    );
    let got = outcomes_of(&out);
    for want in [
        (ReturnCode::Success, good.clone()),
        (ReturnCode::OutOfScope, other.clone()),
        (ReturnCode::UrlTooLong, long.clone()),
    ] {
        assert_eq!(
            got.iter().filter(|g| **g == want).count(),
            1,
            "{want:?} in {got:?}"
        );
    }
    assert_eq!(
        got.iter()
            .filter(|(c, _)| *c == ReturnCode::HttpBadUrlSyntax)
            .count(),
        1,
        "{got:?}"
    );
    assert!(
        r.stderr.contains("OutOfScope") && r.stderr.contains("UrlTooLong"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("line 5"),
        "the malformed line is named: {}",
        r.stderr
    );
    assert_counts_add_up(&out, &r.stderr);
}

#[test]
fn malformed_urls_in_a_fetch_list_are_counted_as_failed() {
    let dir = temp_dir("fetchbad");
    let out = dir.join("out");
    let list = dir.join("urls.txt");
    std::fs::write(&list, "not a url\nhttp://[::1\n::\n").unwrap();
    let r = run(&["fetch", "-i", s(&list), "-o", s(&out)]);
    assert_eq!(r.code, Some(4), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("done: 3 URLs, 0 ok, 0 HTTP errors, 3 failed"),
        "{}",
        r.stderr
    );
    assert_eq!(read_log(&out).len(), 3);
    assert_counts_add_up(&out, &r.stderr);
}

#[test]
fn max_pages_leaves_the_rest_queued_for_resume() {
    let mut routes = Routes::new();
    let links: String = (0..6).map(|i| format!("<a href=/p{i}>p</a>")).collect();
    routes.add("127.0.0.1", "/", html(&links));
    for i in 0..6 {
        routes.add("127.0.0.1", &format!("/p{i}"), html(&format!("leaf {i}")));
    }
    let http = server(routes);
    let seed = format!("http://127.0.0.1:{}/", http.port());
    let out = out_dir("maxpages");
    let r = run(&[
        "crawl",
        &seed,
        "-o",
        s(&out),
        "--allow-private",
        "-w",
        "0",
        "--max-pages",
        "3",
    ]);
    assert_eq!(
        r.code,
        Some(0),
        "a limit the user set is no failure: {}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("--max-pages reached; 4 URLs not fetched (4 still queued"),
        "{}",
        r.stderr
    );
    let got = outcomes_of(&out);
    let ok = got
        .iter()
        .filter(|(c, u)| *c == ReturnCode::Success && !u.ends_with("robots.txt"));
    assert_eq!(ok.count(), 3);
    // The rest stay queued for `resume`: no line until a resumed run ends them.
    assert_eq!(
        got.iter()
            .filter(|(c, _)| *c == ReturnCode::NotFetched)
            .count(),
        0
    );
    assert_counts_add_up(&out, &r.stderr);
}

// ---- flags people know ----

#[test]
fn header_user_agent_and_verbose() {
    let mut routes = Routes::new();
    routes.add("127.0.0.1", "/a", html("a"));
    let http = server(routes);
    let a = format!("http://127.0.0.1:{}/a", http.port());
    let out = out_dir("header");
    let r = run(&[
        "fetch",
        &a,
        "-o",
        s(&out),
        "--allow-private",
        "--header",
        "X-Test: yes please",
        "--header",
        "Accept-Language:fr",
        "--user-agent",
        "tester/1.0",
        "-v",
    ]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let reqs = http.requests();
    assert_eq!(reqs.len(), 1);
    let header = |name: &str| {
        reqs[0]
            .headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    };
    assert_eq!(header("x-test").as_deref(), Some("yes please"));
    assert_eq!(header("accept-language").as_deref(), Some("fr"));
    assert_eq!(header("user-agent").as_deref(), Some("tester/1.0"));
    assert!(
        r.stderr
            .lines()
            .any(|l| l.starts_with("Success") && l.contains("200") && l.ends_with("/a")),
        "-v echoes each line: {}",
        r.stderr
    );
}

#[test]
fn quiet_prints_nothing_on_success() {
    let mut routes = Routes::new();
    routes.add("127.0.0.1", "/a", html("a"));
    let http = server(routes);
    let a = format!("http://127.0.0.1:{}/a", http.port());
    let out = out_dir("quiet");
    let r = run(&["fetch", &a, "-o", s(&out), "--allow-private", "-q"]);
    assert_eq!(r.code, Some(0));
    assert_eq!(r.stderr, "", "-q is quiet");
    assert_eq!(read_log(&out).len(), 1);
}

#[test]
fn fetch_follows_redirects_unless_told_not_to() {
    let mut routes = Routes::new();
    routes.add(
        "127.0.0.1",
        "/old",
        Script::Respond(Response::redirect(301, "/new")),
    );
    routes.add("127.0.0.1", "/new", html("new"));
    routes.add(
        "127.0.0.1",
        "/loop",
        Script::Respond(Response::redirect(302, "/loop2")),
    );
    routes.add(
        "127.0.0.1",
        "/loop2",
        Script::Respond(Response::redirect(302, "/loop")),
    );
    let http = server(routes);
    let old = format!("http://127.0.0.1:{}/old", http.port());
    let new = format!("http://127.0.0.1:{}/new", http.port());

    let out = out_dir("redir-follow");
    let r = run(&["fetch", &old, "-o", s(&out), "--allow-private"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let lines = read_log(&out);
    assert_eq!(lines.len(), 2);
    assert_eq!(
        (lines[0].status, lines[0].url.as_str()),
        (301, old.as_str())
    );
    assert_eq!(
        (lines[1].status, lines[1].url.as_str()),
        (200, new.as_str())
    );
    assert_eq!(lines[1].referrer.as_deref(), Some(old.as_str()));

    let out = out_dir("redir-nofollow");
    let r = run(&[
        "fetch",
        &old,
        "-o",
        s(&out),
        "--allow-private",
        "--no-follow-redirects",
    ]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(read_log(&out).len(), 1);

    let lp = format!("http://127.0.0.1:{}/loop", http.port());
    let out = out_dir("redir-loop");
    let r = run(&[
        "fetch",
        &lp,
        "-o",
        s(&out),
        "--allow-private",
        "--max-redirect",
        "3",
    ]);
    assert_eq!(r.code, Some(8), "{}", r.stderr);
    let lines = read_log(&out);
    assert_eq!(
        lines.len(),
        5,
        "the URL, 3 hops, and the target not followed"
    );
    assert_eq!(lines[4].outcome, ReturnCode::TooManyRedirects);
    assert_counts_add_up(&out, &r.stderr);
}

#[test]
fn crawl_filters_depth_delay_and_redirect_flags() {
    let mut routes = Routes::new();
    routes.add(
        "127.0.0.1",
        "/",
        html(
            "<a href=/docs/a>a</a> <a href=/blog/b>b</a> <a href=/docs/c.PDF>c</a> \
             <a href=/docs/print?x=1>p</a> <a href=/docs/r1>r</a>",
        ),
    );
    routes.add(
        "127.0.0.1",
        "/docs/a",
        html("<a href=/docs/deep>deeper</a>"),
    );
    routes.add("127.0.0.1", "/docs/deep", html("too deep for -l 1"));
    routes.add(
        "127.0.0.1",
        "/docs/r1",
        Script::Respond(Response::redirect(302, "/docs/r2")),
    );
    routes.add(
        "127.0.0.1",
        "/docs/r2",
        Script::Respond(Response::redirect(302, "/docs/r3")),
    );
    routes.add("127.0.0.1", "/docs/r3", html("three hops"));
    let http = server(routes);
    let seed = format!("http://127.0.0.1:{}/", http.port());
    let dir = temp_dir("crawlflags");
    let list = dir.join("seeds.txt");
    std::fs::write(&list, format!("{seed}\n")).unwrap();
    let out = dir.join("out");
    let r = run(&[
        "crawl",
        "-i",
        s(&list),
        "-o",
        s(&out),
        "--allow-private",
        "-l",
        "1",
        "-w",
        "0.2",
        "--accept-regex",
        "/docs/",
        "--reject-regex",
        r"print\?",
        "--reject-ext",
        "pdf,zip",
        "--max-redirect",
        "1",
    ]);
    assert_eq!(r.code, Some(8), "too many redirects: {}", r.stderr);
    let reqs = http.requests();
    let mut targets: Vec<&str> = reqs.iter().map(|r| r.target.as_str()).collect();
    targets.sort();
    assert_eq!(
        targets,
        vec!["/", "/docs/a", "/docs/r1", "/docs/r2", "/robots.txt"],
        "filters, depth and the hop limit"
    );
    // -w 0.2: at least 200 ms between the end of one request and the next.
    common::assert_spaced(&reqs, Duration::from_millis(200), "the one host");
    let got = outcomes_of(&out);
    assert!(
        got.contains(&(ReturnCode::TooManyRedirects, format!("{seed}docs/r3"))),
        "{got:?}"
    );
    let stats = std::fs::read_to_string(out.join("stats.json")).unwrap();
    assert_eq!(
        number_after(&stats, "\"rejected_by_pattern\""),
        3,
        "{stats}"
    );
    assert_counts_add_up(&out, &r.stderr);

    // The old names still work.
    let out2 = dir.join("out2");
    let r = run(&[
        "crawl",
        "--seeds",
        s(&list),
        "--out",
        s(&out2),
        "--allow-private",
        "--delay-ms",
        "0",
        "--max-depth",
        "0",
    ]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
}

// ---- help ----

#[test]
fn help_lists_outcomes_and_exit_codes() {
    let res = spinneret(&["help", "outcomes"], LIMIT);
    assert!(res.status.success());
    let text = String::from_utf8_lossy(&res.stdout);
    for c in ReturnCode::ALL {
        assert!(
            text.lines().any(|l| l.trim_start().starts_with(c.name())),
            "{} listed",
            c.name()
        );
    }
    for cmd in [&["--help"][..], &["crawl", "--help"], &["help", "fetch"]] {
        let res = spinneret(cmd, LIMIT);
        assert!(res.status.success(), "{cmd:?}");
        let text = String::from_utf8_lossy(&res.stdout);
        assert!(text.contains("Exit status"), "{cmd:?}: {text}");
        assert!(text.contains("9  stopped"), "{cmd:?}: {text}");
    }
    let res = spinneret(&["help", "nonsense"], LIMIT);
    assert_eq!(res.status.code(), Some(2));
}

#[test]
fn long_urls_are_abbreviated_in_messages() {
    let long = format!("http://[bad/{}", "x".repeat(10_000));
    let out = out_dir("longurl");
    let r = run(&["fetch", &long, "-o", s(&out)]);
    assert_eq!(r.code, Some(4));
    assert!(r.stderr.len() < 1000, "{} bytes of stderr", r.stderr.len());
    assert!(r.stderr.contains("(10012 bytes)"), "{}", r.stderr);
}

// ---- progress ----

/// A site of `n` chained pages, so a crawl with a delay lasts a while.
fn chain_site(n: usize) -> HttpServer {
    let mut routes = Routes::new();
    for i in 0..n {
        routes.add(
            "127.0.0.1",
            &format!("/p{i}"),
            html(&format!("<a href=/p{}>next</a>", i + 1)),
        );
    }
    routes.add("127.0.0.1", &format!("/p{n}"), html("end"));
    server(routes)
}

#[test]
fn progress_is_plain_lines_when_stderr_is_not_a_terminal() {
    let http = chain_site(6);
    let seed = format!("http://127.0.0.1:{}/p0", http.port());
    let out = out_dir("progress-pipe");
    let r = run(&[
        "crawl",
        &seed,
        "-o",
        s(&out),
        "--allow-private",
        "-w",
        "0.5",
    ]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        !r.stderr.contains('\r') && !r.stderr.contains("\x1b["),
        "{:?}",
        r.stderr
    );
    assert!(
        r.stderr
            .lines()
            .any(|l| l.contains(" fetched | ") && l.contains("queue")),
        "{}",
        r.stderr
    );
}

#[test]
fn progress_is_one_line_redrawn_in_place_on_a_terminal() {
    let script_ok = Command::new("script")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !script_ok {
        eprintln!("SKIP: util-linux `script` not available to run under a pseudo-terminal");
        return;
    }
    let http = chain_site(6);
    let seed = format!("http://127.0.0.1:{}/p0", http.port());
    let out = out_dir("progress-tty");
    let cmd = format!(
        "{} crawl {seed} -o {} --allow-private -w 0.4 --max-pages 7",
        env!("CARGO_BIN_EXE_spinneret"),
        s(&out)
    );
    let mut script = Command::new("script");
    for var in common::PROXY_VARS {
        script.env_remove(var);
    }
    let mut child = script
        .args(["-q", "-e", "-c", &cmd, "/dev/null"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > LIMIT {
            let _ = child.kill();
            panic!("script did not finish");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let res = child.wait_with_output().unwrap();
    assert_eq!(res.status.code(), Some(0));
    let text = String::from_utf8_lossy(&res.stdout);
    let redraws = text.matches("\r\x1b[2K").count();
    assert!(redraws >= 3, "the line is redrawn in place: {text:?}");
    let progress_newlines = text
        .split('\n')
        .filter(|l| l.contains(" fetched | "))
        .count();
    assert!(
        progress_newlines <= 1,
        "progress adds no lines (only the last one may share a line): {text:?}"
    );
    assert!(text.contains("ETA"), "--max-pages gives an ETA: {text:?}");
    assert!(text.contains("done: "), "{text:?}");
}

/// `spinneret extract`: each HTML file's main content as text (gzip or not, whatever its
/// name), the article's heading and paragraphs without the navigation and the footer; a
/// file that is missing or is a WARC file is reported and the rest go on (exit 1); one file
/// without `-o` goes to stdout, several without it are a usage error.
#[test]
fn extract_writes_each_files_main_text_and_goes_on_past_a_bad_one() {
    use std::io::Write as _;
    let dir = temp_dir("extract");
    let para = "The council met on Tuesday to discuss the new bridge, which has been delayed \
                for three years by disputes over its cost and its route.";
    let page = format!(
        "<html><body><nav><a href=/>Home</a> <a href=/news>News</a> <a href=/sport>Sport</a>\
         </nav><article><h1>Bridge work to resume</h1><p>{para}</p><h2>Costs</h2>\
         <p>{para} Again.</p></article><footer><a href=/terms>Terms</a> \
         <a href=/privacy>Privacy</a></footer></body></html>"
    );
    std::fs::write(dir.join("a.html"), &page).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(page.as_bytes()).unwrap();
    std::fs::write(dir.join("b.html.gz"), gz.finish().unwrap()).unwrap();
    std::fs::write(
        dir.join("c.warc"),
        "WARC/1.1\r\nWARC-Type: warcinfo\r\n\r\n",
    )
    .unwrap();
    let out = dir.join("text");
    let files = ["a.html", "b.html.gz", "c.warc", "missing.html"].map(|f| dir.join(f));
    let mut args = vec!["extract", "-o", s(&out)];
    args.extend(files.iter().map(|f| s(f)));
    let r = run(&args);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    // A WARC file is read as one (this one is broken: no Content-Length).
    assert!(
        r.stderr.contains("c.warc: a record has no Content-Length"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("missing.html: "), "{}", r.stderr);
    assert!(
        r.stderr.contains("2 of 4 files gave no text"),
        "{}",
        r.stderr
    );
    let want = format!("Bridge work to resume\n{para}\nCosts\n{para} Again.\n");
    for name in ["a.txt", "b.txt"] {
        assert_eq!(
            std::fs::read_to_string(out.join(name)).unwrap(),
            want,
            "{name}"
        );
    }
    assert!(!out.join("c.txt").exists());
    let left: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        left.len(),
        2,
        "nothing of the broken WARC is left: {left:?}"
    );

    // Markdown: the headings marked, the navigation still out.
    let md = dir.join("md");
    let r = run(&["extract", "--markdown", "-o", s(&md), s(&files[0])]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(
        std::fs::read_to_string(md.join("a.md")).unwrap(),
        format!("# Bridge work to resume\n\n{para}\n\n## Costs\n\n{para} Again.\n")
    );

    let one = spinneret(&["extract", s(&files[1])], LIMIT);
    assert_eq!(one.status.code(), Some(0));
    assert_eq!(String::from_utf8(one.stdout).unwrap(), want);
    let two = run(&["extract", s(&files[0]), s(&files[1])]);
    assert_eq!(two.code, Some(2), "{}", two.stderr);
    assert!(two.stderr.contains("-o DIR"), "{}", two.stderr);
    let _ = std::fs::remove_dir_all(&dir);
}

/// One WARC record, as any producer writes it.
fn warc_record(kind: &str, id: &str, uri: &str, content_type: &str, block: &[u8]) -> Vec<u8> {
    let mut r = format!(
        "WARC/1.0\r\nWARC-Type: {kind}\r\nWARC-Record-ID: <urn:uuid:{id}>\r\n\
         WARC-Date: 2024-03-12T10:32:00Z\r\nWARC-Target-URI: {uri}\r\n\
         Content-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
        block.len()
    )
    .into_bytes();
    r.extend_from_slice(block);
    r.extend_from_slice(b"\r\n\r\n");
    r
}

/// `spinneret extract` of WARC files from other producers (gzip a member per record, and
/// not compressed): a WET file beside each (`X.warc.gz` → `X.warc.wet.gz`), one
/// `conversion` record per HTML response (chunked and gzip undone), none for an image, a
/// 404, a request or a revisit; warcio reads it. A broken WARC file is reported.
#[test]
fn extract_turns_warc_files_into_wet_files() {
    use std::io::Write as _;
    let dir = temp_dir("extract-warc");
    let para = "The council met on Tuesday to discuss the new bridge, which has been delayed \
                for three years by disputes over its cost and its route.";
    let page = format!(
        "<html lang=en><head><title>Bridge &amp; road</title></head><body><nav><a href=/>Home\
         </a> <a href=/news>News</a></nav><article><h1>Bridge work</h1><p>{para}</p></article>\
         </body></html>"
    );
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(page.as_bytes()).unwrap();
    let gzipped = gz.finish().unwrap();
    // Chunked, and gzip as the content coding: as the server sent it.
    let mut chunked = b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\
                        Content-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n"
        .to_vec();
    for piece in gzipped.chunks(40) {
        chunked.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
        chunked.extend_from_slice(piece);
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    let plain = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\r\n{page}",
        page.len()
    );
    let not_found = "HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\n\r\n<p>Gone</p>";
    let image = "HTTP/1.1 200 OK\r\nContent-Type: image/png\r\n\r\n\u{89}PNG";
    let http = "application/http; msgtype=response";
    let records = [
        warc_record(
            "warcinfo",
            "00000000-0000-4000-8000-000000000001",
            "",
            "application/warc-fields",
            b"software: other\r\n",
        ),
        warc_record(
            "request",
            "00000000-0000-4000-8000-000000000002",
            "http://a.test/",
            "application/http; msgtype=request",
            b"GET / HTTP/1.1\r\n\r\n",
        ),
        warc_record(
            "response",
            "00000000-0000-4000-8000-000000000003",
            "http://a.test/",
            http,
            &chunked,
        ),
        warc_record(
            "response",
            "00000000-0000-4000-8000-000000000004",
            "http://a.test/plain",
            http,
            plain.as_bytes(),
        ),
        warc_record(
            "response",
            "00000000-0000-4000-8000-000000000005",
            "http://a.test/gone",
            http,
            not_found.as_bytes(),
        ),
        warc_record(
            "response",
            "00000000-0000-4000-8000-000000000006",
            "http://a.test/i.png",
            http,
            image.as_bytes(),
        ),
        warc_record(
            "revisit",
            "00000000-0000-4000-8000-000000000007",
            "http://a.test/",
            http,
            b"HTTP/1.1 200 OK\r\n\r\n",
        ),
    ];
    let mut members = Vec::new();
    for r in &records {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(r).unwrap();
        members.extend(gz.finish().unwrap());
    }
    std::fs::write(dir.join("crawl.warc.gz"), &members).unwrap();
    std::fs::write(dir.join("other.warc"), records.concat()).unwrap();
    let mut broken = records[..3].concat();
    broken.extend_from_slice(b"WARC/1.0\r\nno colon here\r\n\r\n");
    std::fs::write(dir.join("broken.warc"), broken).unwrap();

    let files = ["crawl.warc.gz", "other.warc", "broken.warc"].map(|f| dir.join(f));
    let r = run(&["extract", s(&files[0]), s(&files[1]), s(&files[2])]);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("broken.warc: a record header line has no ':'"),
        "{}",
        r.stderr
    );
    assert!(
        !dir.join("broken.warc.wet.gz").exists(),
        "a half file under its final name"
    );
    assert!(
        !dir.join("broken.warc.wet.gz.open").exists(),
        "a half file left"
    );
    for wet in ["crawl.warc.wet.gz", "other.warc.wet.gz"] {
        let path = dir.join(wet);
        let read =
            spinneret::store::archive::warc::reader::read_records(&std::fs::read(&path).unwrap())
                .unwrap();
        let kinds: Vec<&str> = read
            .iter()
            .map(|r| r.header("WARC-Type").unwrap())
            .collect();
        assert_eq!(kinds, ["warcinfo", "conversion", "conversion"], "{wet}");
        for (c, (uri, id)) in read[1..].iter().zip([
            ("http://a.test/", "00000000-0000-4000-8000-000000000003"),
            (
                "http://a.test/plain",
                "00000000-0000-4000-8000-000000000004",
            ),
        ]) {
            assert_eq!(c.header("WARC-Target-URI"), Some(uri));
            assert_eq!(
                c.header("WARC-Refers-To"),
                Some(&format!("<urn:uuid:{id}>")[..])
            );
            assert_eq!(c.header("WARC-Date"), Some("2024-03-12T10:32:00Z"));
            assert_eq!(c.header("Content-Type"), Some("text/plain"));
            assert_eq!(
                String::from_utf8_lossy(&c.block),
                format!("Bridge work\n{para}")
            );
        }
        if common::warcio_available() {
            common::warcio_check(&path);
        }
    }

    // --markdown: a JSON line per page too, leading back to its record's gzip member.
    let md = dir.join("md");
    let r = run(&["extract", "--markdown", "-o", s(&md), s(&files[0])]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(md.join("crawl.warc.wet.gz").exists());
    let lines = std::fs::read_to_string(md.join("crawl.warc.md.jsonl")).unwrap();
    let offset = |n: usize| -> usize {
        records[..n]
            .iter()
            .map(|r| {
                let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                gz.write_all(r).unwrap();
                gz.finish().unwrap().len()
            })
            .sum()
    };
    let line = |url: &str, n: usize| {
        format!(
            "{{\"url\": \"{url}\", \"fetched\": \"2024-03-12T10:32:00Z\", \"status\": 200, \
             \"title\": \"Bridge & road\", \"lang\": \"en\", \"markdown\": \
             \"# Bridge work\\n\\n{para}\\n\", \"warc_file\": \"crawl.warc.gz\", \
             \"warc_offset\": {}}}\n",
            offset(n)
        )
    };
    assert_eq!(
        lines,
        line("http://a.test/", 2) + &line("http://a.test/plain", 3)
    );
    let parsed = std::process::Command::new("python3")
        .args([
            "-c",
            "import json,sys; [json.loads(l) for l in open(sys.argv[1])]; print('ok')",
        ])
        .arg(md.join("crawl.warc.md.jsonl"))
        .output();
    if let Ok(p) = parsed {
        assert_eq!(String::from_utf8_lossy(&p.stdout).trim(), "ok", "{p:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
