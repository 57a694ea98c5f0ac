//! Proxies end to end (`--proxy`, the environment, `no_proxy`): `fetch` and `crawl` through a
//! real HTTP proxy (Debian's tinyproxy: absolute-form requests, CONNECT for https) and a real
//! SOCKS5 proxy (microsocks: the proxy resolves names with `socks5h://`), and each way a proxy
//! fails ending with the outcome that names its step, in time. The proxies are started here on
//! loopback (under `timeout`, so they stop by themselves); a test whose proxy is not installed
//! is skipped with the reason (`.ci/run` installs both; in CI they must be there).
//!
//! The web's only name is `localhost`, and the crawler's own resolver is pointed at a DNS
//! server that knows nothing (`--hosts-file none`): a page fetched by name came through a
//! proxy that resolved it.

use crate::common;

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::temp_dir;
use spinneret::ReturnCode;
use spinneret_tools::dns_server::{DnsServer, DnsServerConfig};
use spinneret_tools::http_server::{HttpServer, HttpServerConfig, Response, Routes, Script};

const LIFETIME: Duration = Duration::from_secs(120);
/// The longest one run of the binary may take.
const RUN_LIMIT: Duration = Duration::from_secs(60);

/// An external program, or the reason the test is skipped (a failure in CI).
fn program(name: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .chain([PathBuf::from("/usr/bin"), PathBuf::from("/usr/sbin")])
        .map(|dir| dir.join(name))
        .find(|p| p.is_file());
    if found.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{name} is required in CI (apt-get install {name})"
        );
        eprintln!("SKIP: {name} is not installed (apt-get install {name})");
    }
    found
}

/// A free loopback port (bound and released: a proxy binds it next).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// A proxy process under `timeout`, stopped when dropped.
struct Proxy {
    child: Child,
    port: u16,
}

impl Proxy {
    /// Starts `program args` under `timeout` and waits (bounded) until it listens on `port`.
    fn start(program: &Path, args: &[String], port: u16, log: &Path) -> Proxy {
        let log = std::fs::File::create(log).expect("proxy log");
        let child = Command::new("timeout")
            .arg(LIFETIME.as_secs().to_string())
            .arg(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("start the proxy");
        let proxy = Proxy { child, port };
        let start = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "{program:?} did not listen on {port}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        proxy
    }

    fn url(&self, scheme: &str, credentials: &str) -> String {
        format!("{scheme}://{credentials}127.0.0.1:{}", self.port)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        common::stop_under_timeout(&mut self.child);
    }
}

/// tinyproxy on a free port, allowing CONNECT to `connect_port`, asking for `auth` if given.
fn tinyproxy(dir: &Path, connect_port: u16, auth: Option<(&str, &str)>) -> Option<Proxy> {
    let exe = program("tinyproxy")?;
    let port = free_port();
    let mut conf = format!(
        "Port {port}\nListen 127.0.0.1\nTimeout 30\nAllow 127.0.0.1\nConnectPort {connect_port}\n\
         MaxClients 32\nLogFile \"{}\"\nLogLevel Info\n",
        dir.join("tinyproxy.log").display()
    );
    if let Some((user, pass)) = auth {
        conf.push_str(&format!("BasicAuth {user} {pass}\n"));
    }
    let path = dir.join("tinyproxy.conf");
    std::fs::write(&path, conf).expect("tinyproxy.conf");
    let args = ["-d".to_string(), "-c".into(), path.display().to_string()];
    Some(Proxy::start(&exe, &args, port, &dir.join("tinyproxy.out")))
}

/// microsocks on a free port, asking for `auth` if given.
fn microsocks(dir: &Path, auth: Option<(&str, &str)>) -> Option<Proxy> {
    let exe = program("microsocks")?;
    let port = free_port();
    let mut args = vec![
        "-i".into(),
        "127.0.0.1".into(),
        "-p".into(),
        port.to_string(),
    ];
    if let Some((user, pass)) = auth {
        args.extend(["-u".into(), user.into(), "-P".into(), pass.into()]);
    }
    Some(Proxy::start(&exe, &args, port, &dir.join("microsocks.out")))
}

/// The web: three pages on `localhost`, over http, and the same over https with a test CA.
struct Web {
    http: HttpServer,
    https: HttpServer,
    /// A DNS server that knows no name: the crawler's own resolver finds nothing.
    dns: DnsServer,
    ca_pem: PathBuf,
}

fn routes() -> Routes {
    let mut routes = Routes::new();
    let page = |body: &str| Script::Respond(Response::ok(body.to_string(), "text/html"));
    routes.add(
        "localhost",
        "/",
        page("<a href=\"/a.html\">a</a> <a href=\"/b.html\">b</a>"),
    );
    routes.add(
        "localhost",
        "/a.html",
        page("<p>a</p><a href=\"/\">home</a>"),
    );
    routes.add("localhost", "/b.html", page("<p>b</p>"));
    routes.add("127.0.0.1", "/", page("<p>by address</p>"));
    routes
}

fn start_web(dir: &Path) -> Web {
    let ca = spinneret_tools::tls::TestCa::new();
    let ca_pem = dir.join("ca.pem");
    ca.write_ca_pem(&ca_pem).expect("write CA");
    // The proxies resolve `localhost` with getaddrinfo, which may put ::1 first (microsocks
    // tries only the first address): the web listens there too where it can.
    let also_v6 = TcpListener::bind("[::1]:0").is_ok();
    let server = |tls| {
        let s = HttpServer::start(HttpServerConfig {
            tls,
            also_v6,
            lifetime: LIFETIME,
            ..HttpServerConfig::default()
        })
        .expect("http server");
        s.set_routes(routes());
        s
    };
    Web {
        http: server(None),
        https: server(Some(ca.issue(&["localhost"]))),
        dns: DnsServer::start(DnsServerConfig {
            lifetime: LIFETIME,
            ..DnsServerConfig::default()
        })
        .expect("dns server"),
        ca_pem,
    }
}

impl Web {
    fn http_url(&self, path: &str) -> String {
        format!("http://localhost:{}{path}", self.http.port())
    }

    fn https_url(&self, path: &str) -> String {
        format!("https://localhost:{}{path}", self.https.port())
    }
}

/// One run of the binary: `command` (fetch or crawl) of `urls` into a fresh directory, with
/// `flags` and the proxy variables `env` (all others cleared). Returns the crawl.log's
/// outcomes by URL (robots.txt left out), stats.json, and the run's output.
struct Run {
    outcomes: Vec<(String, ReturnCode)>,
    stats: String,
    output: Output,
    took: Duration,
}

fn run(
    web: &Web,
    name: &str,
    command: &str,
    urls: &[String],
    flags: &[&str],
    env: &[(&str, &str)],
) -> Run {
    let out = temp_dir(name).join("out");
    let dns = web.dns.addr().to_string();
    let ca = web.ca_pem.display().to_string();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_spinneret"));
    cmd.arg(command)
        .args(urls)
        .args(["--out", out.to_str().unwrap(), "-q"])
        .args([
            "--dns-server",
            &dns,
            "--hosts-file",
            "none",
            "--allow-private",
        ])
        .args(["--ca-file", &ca, "--connect-timeout-ms", "1500"])
        .args(["--http-timeout-ms", "8000", "--dns-timeout-ms", "1500"])
        .args(flags)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if command == "crawl" {
        cmd.args(["--delay-ms", "0"]);
    }
    for var in common::PROXY_VARS {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let start = Instant::now();
    let mut child = cmd.spawn().expect("spawn spinneret");
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > RUN_LIMIT {
            let _ = child.kill();
            panic!("{name}: ran longer than {RUN_LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().expect("output");
    let took = start.elapsed();
    let outcomes = if out.join("crawl.log").exists() {
        common::read_log(&out)
            .into_iter()
            .filter(|l| !l.url.ends_with("/robots.txt"))
            .map(|l| (l.url, l.outcome))
            .collect()
    } else {
        Vec::new()
    };
    let stats = std::fs::read_to_string(out.join("stats.json")).unwrap_or_default();
    Run {
        outcomes,
        stats,
        output,
        took,
    }
}

impl Run {
    fn outcome(&self, url: &str) -> ReturnCode {
        let stderr = String::from_utf8_lossy(&self.output.stderr);
        match self.outcomes.iter().find(|(u, _)| u == url) {
            Some((_, code)) => *code,
            None => panic!("{url} not in the log {:?}; stderr: {stderr}", self.outcomes),
        }
    }

    /// Every URL logged (robots.txt aside) ended as `code`; returns how many.
    fn all(&self, code: ReturnCode) -> usize {
        let stderr = String::from_utf8_lossy(&self.output.stderr);
        assert!(
            !self.outcomes.is_empty(),
            "nothing logged; stderr: {stderr}"
        );
        for (url, got) in &self.outcomes {
            assert_eq!(*got, code, "{url}; stderr: {stderr}");
        }
        self.outcomes.len()
    }

    /// A whole-number field of stats.json.
    fn stat(&self, key: &str) -> u64 {
        let at = self.stats.find(&format!("\"{key}\": ")).expect(key) + key.len() + 4;
        self.stats[at..]
            .split(|c: char| !c.is_ascii_digit())
            .next()
            .and_then(|n| n.parse().ok())
            .expect(key)
    }
}

/// A port nothing listens on.
fn closed_port() -> u16 {
    free_port()
}

/// A proxy that accepts and never answers: holds what it accepts until stopped (or its
/// lifetime ends).
struct Stall {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
}

impl Stall {
    fn start() -> Stall {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("addr");
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        std::thread::spawn(move || {
            let start = Instant::now();
            let mut held = Vec::new();
            while !stopped.load(Ordering::Relaxed) && start.elapsed() < LIFETIME {
                if let Ok((s, _)) = listener.accept() {
                    held.push(s);
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        });
        Stall { addr, stop }
    }
}

impl Drop for Stall {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// tinyproxy: `fetch` of http URLs in absolute form (`--proxy`), `crawl` of https URLs
/// through CONNECT (`https_proxy`) with the tunnel kept for the site's next requests, `crawl`
/// of http URLs (`http_proxy`), and `no_proxy` / `--no-proxy` sending URLs direct.
#[test]
fn an_http_proxy_carries_fetch_and_crawl_for_http_and_https() {
    let dir = temp_dir("proxy-http");
    let web = start_web(&dir);
    let Some(proxy) = tinyproxy(&dir, web.https.port(), None) else {
        return;
    };
    let pages = [web.http_url("/"), web.http_url("/a.html")];
    let r = run(
        &web,
        "proxy-http-fetch",
        "fetch",
        &pages,
        &["--proxy", &proxy.url("http", "")],
        &[],
    );
    assert_eq!(r.all(ReturnCode::Success), 2);
    // The site saw the proxy's requests, in origin form.
    let seen = web.http.requests();
    assert!(seen.iter().any(|q| q.target == "/a.html"), "{seen:?}");

    let https_proxy = proxy.url("http", "");
    let env = [("https_proxy", https_proxy.as_str())];
    let r = run(
        &web,
        "proxy-https-crawl",
        "crawl",
        &[web.https_url("/")],
        &[],
        &env,
    );
    assert_eq!(
        r.all(ReturnCode::Success),
        3,
        "the https site crawled through CONNECT"
    );
    // Pooled per (proxy, site): robots.txt and three pages do not need four tunnels.
    let tunnels = r.stat("proxy_tunnels");
    assert!((1..4).contains(&tunnels), "tunnels: {tunnels}");

    let env = [("http_proxy", https_proxy.as_str())];
    let r = run(
        &web,
        "proxy-http-crawl",
        "crawl",
        &[web.http_url("/")],
        &[],
        &env,
    );
    assert_eq!(r.all(ReturnCode::Success), 3);
    assert_eq!(
        r.stat("proxy_tunnels"),
        0,
        "http URLs go in absolute form, no tunnel"
    );

    // no_proxy: 127.0.0.1 goes direct while localhost goes to a proxy that is not there.
    let dead = format!("http://127.0.0.1:{}", closed_port());
    let direct = format!("http://127.0.0.1:{}/", web.http.port());
    let urls = [direct.clone(), web.http_url("/")];
    let env = [("http_proxy", dead.as_str()), ("no_proxy", "127.0.0.1")];
    let r = run(&web, "proxy-no-proxy", "fetch", &urls, &[], &env);
    assert_eq!(r.outcome(&direct), ReturnCode::Success);
    assert_eq!(r.outcome(&web.http_url("/")), ReturnCode::ProxyConnect);
    // --no-proxy: the environment is ignored.
    let env = [("http_proxy", dead.as_str())];
    let r = run(
        &web,
        "proxy-ignored",
        "fetch",
        &[direct],
        &["--no-proxy"],
        &env,
    );
    assert_eq!(r.all(ReturnCode::Success), 1);
}

/// microsocks with `socks5h://`: names only the proxy can resolve, http and https, `fetch`
/// and `crawl`; with `socks5://` the crawler resolves (and so cannot, for `localhost` here)
/// and sends the address.
#[test]
fn a_socks5_proxy_resolves_names_with_socks5h_only() {
    let dir = temp_dir("proxy-socks");
    let web = start_web(&dir);
    let Some(proxy) = microsocks(&dir, None) else {
        return;
    };
    let socks5h = proxy.url("socks5h", "");
    let r = run(
        &web,
        "proxy-socks-crawl",
        "crawl",
        &[web.http_url("/")],
        &["--proxy", &socks5h],
        &[],
    );
    assert_eq!(r.all(ReturnCode::Success), 3);
    assert!(r.stat("proxy_tunnels") >= 1);
    let env = [("all_proxy", socks5h.as_str())];
    let r = run(
        &web,
        "proxy-socks-https",
        "fetch",
        &[web.https_url("/a.html")],
        &[],
        &env,
    );
    assert_eq!(
        r.all(ReturnCode::Success),
        1,
        "TLS to the site inside the SOCKS tunnel"
    );

    let socks5 = proxy.url("socks5", "");
    let by_address = format!("http://127.0.0.1:{}/", web.http.port());
    let urls = [by_address.clone(), web.http_url("/")];
    let r = run(
        &web,
        "proxy-socks-local",
        "fetch",
        &urls,
        &["--proxy", &socks5],
        &[],
    );
    assert_eq!(r.outcome(&by_address), ReturnCode::Success);
    assert_eq!(r.outcome(&web.http_url("/")), ReturnCode::DnsNxDomain);
}

/// Each way through a proxy fails ends with the outcome naming its step, within the step's
/// deadline: nothing listening (`ProxyConnect`), a SOCKS5 refusal (`ProxyRefused`), missing
/// or wrong credentials, SOCKS5 and HTTP (`ProxyAuth`), and a proxy that never answers
/// (`ProxyTimeout`). The right credentials get through.
#[test]
fn proxy_failures_name_their_step_in_time() {
    let dir = temp_dir("proxy-fail");
    let web = start_web(&dir);
    let page = [web.http_url("/")];

    let dead = format!("socks5h://127.0.0.1:{}", closed_port());
    let r = run(&web, "proxy-dead", "fetch", &page, &["--proxy", &dead], &[]);
    assert_eq!(r.all(ReturnCode::ProxyConnect), 1);

    let stall = Stall::start();
    for scheme in ["socks5h", "http"] {
        let url = format!("{scheme}://{}", stall.addr);
        let target = [web.https_url("/")];
        let r = run(
            &web,
            "proxy-stall",
            "fetch",
            &target,
            &["--proxy", &url],
            &[],
        );
        assert_eq!(r.all(ReturnCode::ProxyTimeout), 1, "{scheme}");
        assert!(r.took < Duration::from_secs(8), "{scheme}: {:?}", r.took);
    }

    if let Some(socks) = microsocks(&dir, Some(("crawler", "s3cret"))) {
        let refused = [format!("http://127.0.0.1:{}/", closed_port())];
        let good = socks.url("socks5h", "crawler:s3cret@");
        let r = run(
            &web,
            "proxy-socks-refused",
            "fetch",
            &refused,
            &["--proxy", &good],
            &[],
        );
        assert_eq!(r.all(ReturnCode::ProxyRefused), 1);
        for creds in ["", "crawler:wrong@"] {
            let url = socks.url("socks5h", creds);
            let r = run(
                &web,
                "proxy-socks-auth",
                "fetch",
                &page,
                &["--proxy", &url],
                &[],
            );
            assert_eq!(r.all(ReturnCode::ProxyAuth), 1, "{creds:?}");
        }
        let r = run(
            &web,
            "proxy-socks-login",
            "fetch",
            &page,
            &["--proxy", &good],
            &[],
        );
        assert_eq!(r.all(ReturnCode::Success), 1);
    }

    if let Some(http) = tinyproxy(&dir, web.https.port(), Some(("crawler", "s3cret"))) {
        let (plain, tls) = (web.http_url("/"), web.https_url("/"));
        let both = [plain.clone(), tls.clone()];
        let r = run(
            &web,
            "proxy-http-noauth",
            "fetch",
            &both,
            &["--proxy", &http.url("http", "")],
            &[],
        );
        assert_eq!(
            r.all(ReturnCode::ProxyAuth),
            2,
            "407, to CONNECT and to a request"
        );
        // Wrong credentials: tinyproxy answers 401 (with WWW-Authenticate). To CONNECT that
        // is the proxy's answer; to an absolute-form request it cannot be told from the
        // site's own 401, so it is logged as the response it is.
        let wrong = http.url("http", "crawler:wrong@");
        let r = run(
            &web,
            "proxy-http-wrong",
            "fetch",
            &both,
            &["--proxy", &wrong],
            &[],
        );
        assert_eq!(r.outcome(&tls), ReturnCode::ProxyAuth);
        assert_eq!(r.outcome(&plain), ReturnCode::Success);
        let good = http.url("http", "crawler:s3cret@");
        let r = run(
            &web,
            "proxy-http-login",
            "fetch",
            &both,
            &["--proxy", &good],
            &[],
        );
        assert_eq!(r.all(ReturnCode::Success), 2);
    }
}

/// A proxy setting that cannot work is a usage error naming where it came from, before
/// anything is fetched.
#[test]
fn a_bad_proxy_setting_is_refused_with_its_source() {
    let dir = temp_dir("proxy-bad");
    let web = start_web(&dir);
    let page = [web.http_url("/")];
    for (flags, env, says) in [
        (vec!["--proxy", "https://127.0.0.1:1"], vec![], "--proxy"),
        (
            vec![],
            vec![("https_proxy", "socks4://127.0.0.1:1")],
            "https_proxy",
        ),
        (
            vec![],
            vec![("all_proxy", "http://127.0.0.1:99999")],
            "all_proxy",
        ),
    ] {
        let r = run(&web, "proxy-bad-run", "fetch", &page, &flags, &env);
        let stderr = String::from_utf8_lossy(&r.output.stderr);
        assert_eq!(r.output.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
    }
}
