//! The manners the real web expects, end to end: the `spinneret` binary against the scripted
//! loopback server, judged by the server's own request log and by crawl.log. A 429 or 503 is
//! retried after its `Retry-After` (seconds, HTTP date, capped) and the host hears nothing
//! meanwhile; a site behind a cookie-setting redirect is entered, its cookie sent nowhere
//! else; `--load-cookies` reads what wget writes.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::{read_log, spinneret, temp_dir};
use spinneret::datetime::http_date;
use spinneret::store::archive::crawl_log::ParsedLine;
use spinneret::ReturnCode;
use spinneret_tools::http_server::{
    HttpServer, HttpServerConfig, RequestRecord, Response, Routes, Script,
};

const LIFETIME: Duration = Duration::from_secs(90);
const LIMIT: Duration = Duration::from_secs(60);

fn html(body: &str) -> Script {
    Script::Respond(Response::ok(body.to_string(), "text/html"))
}

fn status(code: u16, headers: &[(&str, &str)]) -> Script {
    let mut r = Response::status(code);
    for (name, value) in headers {
        r = r.header(name, value);
    }
    Script::Respond(r)
}

fn server(routes: Routes, addrs: &[[u8; 4]]) -> HttpServer {
    HttpServer::start(HttpServerConfig {
        addrs: addrs.iter().map(|&a| a.into()).collect(),
        routes,
        lifetime: LIFETIME,
        ..HttpServerConfig::default()
    })
    .expect("http server")
}

fn out_dir(name: &str) -> PathBuf {
    temp_dir(name).join("out")
}

/// `spinneret CMD` with the loopback flags and `extra`, into `out`, for `url`; returns
/// crawl.log's lines after checking the exit status is 0.
fn run(cmd: &str, out: &Path, extra: &[&str], url: &str) -> Vec<ParsedLine> {
    let mut args = common::loopback_args(cmd, out, "100");
    args.extend(extra);
    args.push(url);
    let res = spinneret(&args, LIMIT);
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert_eq!(res.status.code(), Some(0), "{args:?}: {stderr}");
    read_log(out)
}

/// (outcome, status) of each line for `url`, in order.
fn answers(log: &[ParsedLine], url: &str) -> Vec<(ReturnCode, u16)> {
    log.iter()
        .filter(|l| l.url == url)
        .map(|l| (l.outcome, l.status))
        .collect()
}

fn requests_to(server: &HttpServer, host: &str, target: &str) -> Vec<RequestRecord> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.host == host && r.target == target)
        .collect()
}

fn cookie_of(r: &RequestRecord) -> Option<&str> {
    r.headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("cookie"))
        .map(|(_, v)| v.as_str())
}

/// Crawls a site whose front page first answers `first`, then a page: returns how long after
/// the first answer the host heard from the crawler again (from the server's own log), after
/// checking crawl.log shows the try and then `Success 200`.
fn retried_after(name: &str, first: Script, extra: &[&str]) -> Duration {
    let mut routes = Routes::new();
    routes.add(
        "127.0.0.1",
        "/",
        Script::in_turn(vec![first, html("<p>at last</p>")]),
    );
    let server = server(routes, &[[127, 0, 0, 1]]);
    let url = format!("http://127.0.0.1:{}/", server.port());
    let log = run("crawl", &out_dir(name), extra, &url);
    let got = answers(&log, &url);
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0].0, ReturnCode::RetryLater);
    assert!(matches!(got[0].1, 429 | 503), "{got:?}");
    assert_eq!(
        got[1],
        (ReturnCode::Success, 200),
        "the final line is the final answer"
    );
    let pages = requests_to(&server, "127.0.0.1", "/");
    assert_eq!(pages.len(), 2);
    let refused = pages[0].answered.expect("answered");
    // Whatever the crawler asked for on this host (robots.txt included), nothing came in
    // between.
    let next = server
        .requests()
        .into_iter()
        .map(|r| r.received)
        .filter(|&t| t > refused)
        .min()
        .expect("asked again");
    assert_eq!(
        next, pages[1].received,
        "the retried URL is the host's next request"
    );
    next.duration_since(refused)
}

#[test]
fn a_429_with_retry_after_3_is_retried_after_3_s() {
    let wait = retried_after("manners-429", status(429, &[("Retry-After", "3")]), &[]);
    assert!(wait >= Duration::from_secs(3), "asked again after {wait:?}");
    assert!(
        wait < Duration::from_secs(6),
        "and not much later: {wait:?}"
    );
}

#[test]
fn a_503_with_a_retry_after_date_is_retried_at_that_date() {
    // The date is made when the request comes: Date now, Retry-After 3 s on.
    let dated = Script::for_request(|_, _| {
        let now = SystemTime::now();
        // Whole seconds, as HTTP dates have them: Retry-After is exactly 3 s after Date.
        let now =
            UNIX_EPOCH + Duration::from_secs(now.duration_since(UNIX_EPOCH).unwrap().as_secs());
        status(
            503,
            &[
                ("Date", &http_date(now)),
                ("Retry-After", &http_date(now + Duration::from_secs(3))),
            ],
        )
    });
    let wait = retried_after("manners-date", dated, &[]);
    assert!(wait >= Duration::from_secs(2), "asked again after {wait:?}");
    assert!(wait < Duration::from_secs(6), "{wait:?}");
}

#[test]
fn max_retry_after_caps_the_wait() {
    let started = Instant::now();
    let wait = retried_after(
        "manners-cap",
        status(429, &[("Retry-After", "3600")]),
        &["--max-retry-after", "1"],
    );
    assert!(wait >= Duration::from_secs(1), "asked again after {wait:?}");
    assert!(
        wait < Duration::from_secs(3),
        "capped at 1 s, not an hour: {wait:?}"
    );
    assert!(started.elapsed() < LIMIT);
}

/// A site in front of its content: without `gate=open`, each page sets it and redirects to
/// itself.
fn gated(path: &str, content: Script) -> Script {
    let set = Response::redirect(302, path).header("Set-Cookie", "gate=open; Path=/");
    Script::by_cookie("gate=open", content, Script::Respond(set))
}

#[test]
fn a_cookie_gated_site_is_crawled_into_and_its_cookie_goes_nowhere_else() {
    let mut routes = Routes::new();
    let server = server(Routes::new(), &[[127, 0, 0, 1], [127, 0, 0, 2]]);
    let port = server.port();
    let front = format!(r#"<a href="/inside">in</a> <a href="http://127.0.0.2:{port}/">away</a>"#);
    routes.add("127.0.0.1", "/", gated("/", html(&front)));
    routes.add(
        "127.0.0.1",
        "/inside",
        gated("/inside", html("<p>content</p>")),
    );
    routes.add("127.0.0.2", "/", html("<p>another site</p>"));
    server.set_routes(routes);
    let url = format!("http://127.0.0.1:{port}/");
    let log = run("crawl", &out_dir("manners-gate"), &[], &url);
    assert_eq!(
        answers(&log, &url),
        [(ReturnCode::Success, 302), (ReturnCode::Success, 200)],
        "set the cookie, then in"
    );
    let inside = format!("http://127.0.0.1:{port}/inside");
    assert_eq!(answers(&log, &inside), [(ReturnCode::Success, 200)]);
    let away = format!("http://127.0.0.2:{port}/");
    assert_eq!(answers(&log, &away), [(ReturnCode::Success, 200)]);
    for r in server.requests() {
        let cookie = cookie_of(&r);
        if r.host == "127.0.0.2" {
            assert_eq!(
                cookie, None,
                "a cookie leaked to another site: {}",
                r.target
            );
        }
    }
    let sent = requests_to(&server, "127.0.0.1", "/inside");
    assert_eq!(cookie_of(&sent[0]), Some("gate=open"));
    // --no-cookies: the gate stays shut (the redirect to itself is a URL already seen).
    let log = run(
        "crawl",
        &out_dir("manners-nocookies"),
        &["--no-cookies"],
        &url,
    );
    assert_eq!(answers(&log, &url), [(ReturnCode::Success, 302)]);
    assert!(answers(&log, &inside).is_empty());
}

#[test]
fn fetch_keeps_cookies_too() {
    let mut routes = Routes::new();
    routes.add("127.0.0.1", "/", gated("/", html("<p>in</p>")));
    let server = server(routes, &[[127, 0, 0, 1]]);
    let url = format!("http://127.0.0.1:{}/", server.port());
    let log = run("fetch", &out_dir("manners-fetch"), &[], &url);
    assert_eq!(
        answers(&log, &url),
        [(ReturnCode::Success, 302), (ReturnCode::Success, 200)]
    );
}

/// A cookie line as wget 1.21 writes it for a host-only cookie from a port other than 80:
/// `host:port`, FALSE, path, FALSE, expiry, name, value; after wget's three comment lines.
fn wget_cookies_file(dir: &Path, port: u16) -> PathBuf {
    let expires = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 86_400;
    let text = format!(
        "# HTTP cookie file.\n# Generated by Wget on 2026-11-25 19:34:31.\n# Edit at your own \
         risk.\n\n127.0.0.1:{port}\tFALSE\t/\tFALSE\t{expires}\tgate\topen\n"
    );
    let path = dir.join("cookies.txt");
    std::fs::write(&path, text).unwrap();
    path
}

/// Crawls the gated site with `--load-cookies file`: the first request is let in.
fn crawl_with_loaded_cookies(name: &str, file: impl FnOnce(&Path, u16) -> PathBuf) {
    let mut routes = Routes::new();
    routes.add("127.0.0.1", "/", gated("/", html("<p>in</p>")));
    let server = server(routes, &[[127, 0, 0, 1]]);
    let dir = temp_dir(name);
    let cookies = file(&dir, server.port());
    let url = format!("http://127.0.0.1:{}/", server.port());
    let out = dir.join("out");
    let log = run(
        "crawl",
        &out,
        &["--load-cookies", cookies.to_str().unwrap()],
        &url,
    );
    assert_eq!(
        answers(&log, &url),
        [(ReturnCode::Success, 200)],
        "in at once"
    );
    let sent = requests_to(&server, "127.0.0.1", "/");
    assert_eq!(sent.len(), 1);
    assert_eq!(cookie_of(&sent[0]), Some("gate=open"));
}

#[test]
fn load_cookies_reads_a_file_in_wget_s_format() {
    crawl_with_loaded_cookies("manners-load", wget_cookies_file);
}

#[test]
fn load_cookies_reads_what_wget_itself_saved() {
    if Command::new("wget").arg("--version").output().is_err() {
        eprintln!("SKIP: wget not installed; the file wget writes is checked by the test above");
        return;
    }
    crawl_with_loaded_cookies("manners-wget", |dir, port| {
        // A route that sets the cookie for a year, and wget saving what it got.
        let mut routes = Routes::new();
        let set = Response::ok("ok", "text/plain")
            .header("Set-Cookie", "gate=open; Path=/; Max-Age=31536000");
        routes.add("127.0.0.1", "/set", Script::Respond(set));
        let setter = server(routes, &[[127, 0, 0, 1]]);
        let path = dir.join("wget-cookies.txt");
        let status = Command::new("wget")
            .args(["-q", "-O", "/dev/null", "--save-cookies"])
            .arg(&path)
            .arg(format!("http://127.0.0.1:{}/set", setter.port()))
            .status()
            .expect("run wget");
        assert!(status.success());
        // wget wrote the setter's port; the cookie is the crawled host's (ports do not
        // separate cookies).
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.contains(&format!("127.0.0.1:{}\t", setter.port())),
            "{text}"
        );
        assert_ne!(setter.port(), port);
        path
    });
}

#[test]
fn a_load_cookies_file_that_holds_no_cookie_is_a_usage_error() {
    let dir = temp_dir("manners-notcookies");
    let file = dir.join("notes.txt");
    std::fs::write(&file, "these are\nnot\tcookies\n").unwrap();
    let out = dir.join("out");
    for cmd in ["fetch", "crawl"] {
        let args = [
            cmd,
            "--load-cookies",
            file.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "http://127.0.0.1:9/",
        ];
        let res = spinneret(&args, LIMIT);
        let stderr = String::from_utf8_lossy(&res.stderr);
        assert_eq!(res.status.code(), Some(2), "{cmd}: {stderr}");
        assert!(stderr.contains("--load-cookies"), "{cmd}: {stderr}");
    }
    assert!(!out.exists(), "nothing was started");
}
