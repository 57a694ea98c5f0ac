//! Logging in (README "Logging in"): Basic and Digest pages fetched with `--http-user` /
//! `--http-password` and with a `.netrc`, after a 401 challenge; credentials never sent to
//! another origin (a redirect, a link, its robots.txt), nor `--header` credentials; WARC
//! request records redacted unless `--warc-keep-auth`; a wrong password is a 401, not a loop.
//! The server is `spinneret_tools::auth_gate` in the scripted test server, which records every
//! request's headers.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{read_log, spinneret, temp_dir};
use spinneret::store::archive::crawl_log::ParsedLine;
use spinneret::store::archive::warc::reader::{read_records, Record};
use spinneret_tools::auth_gate::{gate, Protection};
use spinneret_tools::http_server::{
    HttpServer, HttpServerConfig, RequestRecord, Response, Routes, Script,
};

const LIFETIME: Duration = Duration::from_secs(90);
const LIMIT: Duration = Duration::from_secs(60);
const REALM: &str = "spinneret test";
const USER: &str = "Aladdin";
const PASSWORD: &str = "open sesame";
/// `Basic base64(Aladdin:open sesame)` (RFC 7617's example).
const BASIC: &str = "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==";

fn html(body: &str) -> Script {
    Script::Respond(Response::ok(body.to_string(), "text/html"))
}

fn basic(content: Script) -> Script {
    gate(Protection::Basic, REALM, USER, PASSWORD, content)
}

/// A server on 127.0.0.1 (the protected site) and 127.0.0.2 (another site, protected too, so
/// that it would take credentials if they were offered).
fn site() -> (HttpServer, u16) {
    let server = HttpServer::start(HttpServerConfig {
        addrs: vec![[127, 0, 0, 1].into(), [127, 0, 0, 2].into()],
        lifetime: LIFETIME,
        ..HttpServerConfig::default()
    })
    .expect("http server");
    let port = server.port();
    let away = format!("http://127.0.0.2:{port}");
    let mut routes = Routes::new();
    let front = format!(
        r#"<a href="/sha">sha</a> <a href="/md5">md5</a> <a href="/moved">moved</a>
           <a href="{away}/other">other</a>"#
    );
    routes.add("127.0.0.1", "/", basic(html(&front)));
    let digest = |sha256, stale_once, body: &str| {
        let p = Protection::Digest { sha256, stale_once };
        gate(p, REALM, USER, PASSWORD, html(body))
    };
    routes.add(
        "127.0.0.1",
        "/sha",
        digest(true, true, "<p>sha-256 inside</p>"),
    );
    routes.add(
        "127.0.0.1",
        "/md5",
        digest(false, false, "<p>md5 inside</p>"),
    );
    let moved = Script::Respond(Response::redirect(302, &format!("{away}/landing")));
    routes.add("127.0.0.1", "/moved", basic(moved));
    routes.add(
        "127.0.0.1",
        "/header-moved",
        Script::Respond(Response::redirect(302, &format!("{away}/landing"))),
    );
    routes.add("127.0.0.2", "/landing", basic(html("<p>landed</p>")));
    routes.add("127.0.0.2", "/other", basic(html("<p>other</p>")));
    server.set_routes(routes);
    (server, port)
}

fn out_dir(name: &str) -> PathBuf {
    temp_dir(name).join("out")
}

fn run(cmd: &str, out: &Path, extra: &[&str], urls: &[&str]) -> Vec<ParsedLine> {
    let mut args = common::loopback_args(cmd, out, "50");
    args.extend(extra);
    args.extend(urls);
    let res = spinneret(&args, LIMIT);
    let stderr = String::from_utf8_lossy(&res.stderr);
    // 8: some URLs answered 401 (an HTTP error status).
    assert!(
        matches!(res.status.code(), Some(0 | 8)),
        "{args:?}: {stderr}"
    );
    read_log(out)
}

fn answers(log: &[ParsedLine], url: &str) -> Vec<u16> {
    log.iter()
        .filter(|l| l.url == url)
        .map(|l| l.status)
        .collect()
}

fn authorization(r: &RequestRecord) -> Option<&str> {
    r.headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("authorization"))
        .map(|(_, v)| v.as_str())
}

fn header<'a>(r: &'a RequestRecord, name: &str) -> Option<&'a str> {
    r.headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// No request to 127.0.0.2 carried credentials of 127.0.0.1.
fn assert_nothing_leaked(server: &HttpServer) {
    let away: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.host == "127.0.0.2")
        .collect();
    assert!(!away.is_empty(), "the other site was asked");
    for r in &away {
        for name in ["authorization", "cookie", "proxy-authorization"] {
            assert_eq!(header(r, name), None, "{name} leaked to {}", r.target);
        }
    }
}

fn requests_to(server: &HttpServer, host: &str, target: &str) -> Vec<RequestRecord> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.host == host && r.target == target)
        .collect()
}

fn request_records(out: &Path) -> Vec<Record> {
    let mut all = Vec::new();
    for f in common::warc_files(out) {
        let bytes = std::fs::read(&f).unwrap();
        all.extend(read_records(&bytes).expect("readable WARC"));
        if common::warcio_available() {
            common::warcio_check(&f);
        }
    }
    all.retain(|r| r.header("WARC-Type") == Some("request"));
    all
}

#[test]
fn a_crawl_logs_in_with_basic_and_digest_and_sends_nothing_to_another_site() {
    let (server, port) = site();
    let out = out_dir("auth-crawl");
    let seed = format!("http://127.0.0.1:{port}/");
    let log = run(
        "crawl",
        &out,
        &[
            "--no-netrc",
            "--http-user",
            USER,
            "--http-password",
            PASSWORD,
        ],
        &[&seed],
    );
    // Each page's one line is its answer with credentials: the challenges are not lines.
    assert_eq!(answers(&log, &seed), [200]);
    assert_eq!(
        answers(&log, &format!("{seed}sha")),
        [200],
        "SHA-256, stale nonce"
    );
    assert_eq!(answers(&log, &format!("{seed}md5")), [200], "MD5");
    assert_eq!(answers(&log, &format!("{seed}moved")), [302]);
    // The other site challenges too, and its 401 stands: one request each, no credentials.
    let away = format!("http://127.0.0.2:{port}");
    assert_eq!(answers(&log, &format!("{away}/landing")), [401]);
    assert_eq!(answers(&log, &format!("{away}/other")), [401]);
    assert_eq!(requests_to(&server, "127.0.0.2", "/landing").len(), 1);
    assert_nothing_leaked(&server);
    // The front page: asked without, challenged, asked with.
    let front = requests_to(&server, "127.0.0.1", "/");
    assert_eq!(front.len(), 2);
    assert_eq!(authorization(&front[0]), None);
    assert_eq!(authorization(&front[1]), Some(BASIC));
    // SHA-256 chosen over the Basic offered beside it; the stale nonce answered once.
    let sha = requests_to(&server, "127.0.0.1", "/sha");
    let last = authorization(sha.last().unwrap()).unwrap();
    assert!(
        last.starts_with("Digest ") && last.contains("algorithm=SHA-256"),
        "{last}"
    );
    assert!(last.contains("nonce=\"second-nonce\""), "{last}");
    assert!(sha.len() <= 4, "{} requests", sha.len());
    // robots.txt of the other site carried nothing either (checked above); the stats count
    // the challenges answered.
    let stats = std::fs::read_to_string(out.join("stats.json")).unwrap();
    assert!(!stats.contains("\"auth_retries\": 0"), "{stats}");

    // The WARC request records: the header is there, its secret is not.
    let requests = request_records(&out);
    let text: Vec<String> = requests
        .iter()
        .map(|r| String::from_utf8_lossy(&r.block).into_owned())
        .collect();
    assert!(text
        .iter()
        .any(|t| t.contains("Authorization: Basic [redacted]\r\n")));
    assert!(text
        .iter()
        .any(|t| t.contains("Authorization: Digest [redacted]\r\n")));
    assert!(!text
        .iter()
        .any(|t| t.contains("QWxhZGRpbjpvcGVuIHNlc2FtZQ")));
    for r in &requests {
        // The record is valid: its block digest is the digest of what it holds.
        let want = spinneret::store::archive::warc::sha1(&r.block);
        assert_eq!(
            r.header("WARC-Block-Digest"),
            Some(spinneret::store::archive::warc::sha1_base32(&want).as_str())
        );
    }
    // Nor is the password in the warcinfo record.
    let all = std::fs::read(common::warc_files(&out)[0].clone()).unwrap();
    for r in read_records(&all).unwrap() {
        assert!(!String::from_utf8_lossy(&r.block).contains(PASSWORD));
    }
}

#[test]
fn fetch_logs_in_from_a_netrc_and_keeps_the_header_with_warc_keep_auth() {
    let (server, port) = site();
    let dir = temp_dir("auth-netrc");
    let netrc = dir.join("netrc");
    std::fs::write(
        &netrc,
        format!("# test\nmachine 127.0.0.1\n  login {USER}\n  password \"{PASSWORD}\"\n"),
    )
    .unwrap();
    let out = dir.join("out");
    let page = format!("http://127.0.0.1:{port}/");
    let sha = format!("http://127.0.0.1:{port}/sha");
    let moved = format!("http://127.0.0.1:{port}/moved");
    let log = run(
        "fetch",
        &out,
        &["--netrc-file", netrc.to_str().unwrap(), "--warc-keep-auth"],
        &[&page, &sha, &moved],
    );
    assert_eq!(answers(&log, &page), [200]);
    assert_eq!(answers(&log, &sha), [200]);
    assert_eq!(answers(&log, &moved), [302]);
    assert_eq!(
        answers(&log, &format!("http://127.0.0.2:{port}/landing")),
        [401]
    );
    assert_nothing_leaked(&server);
    let text: Vec<String> = request_records(&out)
        .iter()
        .map(|r| String::from_utf8_lossy(&r.block).into_owned())
        .collect();
    assert!(
        text.iter()
            .any(|t| t.contains(&format!("Authorization: {BASIC}\r\n"))),
        "--warc-keep-auth keeps it"
    );
    // A netrc file that cannot be read is a usage error naming it.
    let res = spinneret(
        &[
            "fetch",
            "-o",
            out.to_str().unwrap(),
            "--netrc-file",
            "/nonexistent/netrc",
            &page,
        ],
        LIMIT,
    );
    assert_eq!(res.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&res.stderr).contains("/nonexistent/netrc"));
}

#[test]
fn header_credentials_stay_with_the_seeds_origin() {
    let (server, port) = site();
    let out = out_dir("auth-header");
    let url = format!("http://127.0.0.1:{port}/header-moved");
    let log = run(
        "fetch",
        &out,
        &[
            "--no-netrc",
            "--header",
            &format!("Authorization: {BASIC}"),
            "--header",
            "Cookie: session=s3cret",
            "--header",
            "X-Everywhere: yes",
        ],
        &[&url],
    );
    assert_eq!(answers(&log, &url), [302]);
    let sent = requests_to(&server, "127.0.0.1", "/header-moved");
    assert_eq!(authorization(&sent[0]), Some(BASIC));
    assert_eq!(header(&sent[0], "cookie"), Some("session=s3cret"));
    assert_nothing_leaked(&server);
    // Other headers still go everywhere.
    let landing = requests_to(&server, "127.0.0.2", "/landing");
    assert_eq!(header(&landing[0], "x-everywhere"), Some("yes"));
    // Redacted in the archive by default.
    let text: Vec<String> = request_records(&out)
        .iter()
        .map(|r| String::from_utf8_lossy(&r.block).into_owned())
        .collect();
    assert!(text
        .iter()
        .any(|t| t.contains("Authorization: Basic [redacted]\r\n")));
}

#[test]
fn a_wrong_password_is_a_401_not_a_loop_and_auth_no_challenge_sends_at_once() {
    let (server, port) = site();
    let page = format!("http://127.0.0.1:{port}/");
    let log = run(
        "fetch",
        &out_dir("auth-wrong"),
        &[
            "--no-netrc",
            "--http-user",
            USER,
            "--http-password",
            "wrong",
        ],
        &[&page],
    );
    assert_eq!(answers(&log, &page), [401]);
    assert_eq!(
        requests_to(&server, "127.0.0.1", "/").len(),
        2,
        "asked once more, then no more"
    );
    let log = run(
        "fetch",
        &out_dir("auth-no-challenge"),
        &[
            "--no-netrc",
            "--http-user",
            USER,
            "--http-password",
            PASSWORD,
            "--auth-no-challenge",
        ],
        &[&page],
    );
    assert_eq!(answers(&log, &page), [200]);
    let all = requests_to(&server, "127.0.0.1", "/");
    assert_eq!(all.len(), 3, "the credentials went with the first request");
    assert_eq!(authorization(&all[2]), Some(BASIC));
}
