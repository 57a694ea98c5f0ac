//! `--metrics ADDR`, watched from outside: a real Prometheus (Debian's `prometheus`, started
//! here on loopback; the test skips with a reason when it is not installed) scrapes a crawl of
//! the loopback test web, and afterwards its HTTP API shows the target was up and the page
//! counter equal to the crawl's page count; a crawl on two loops serves each loop's figures.

use crate::common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::crawl_run::{crawl_args_with, start_web, Run};
use common::temp_dir;
use spinneret::app::run_files::json_number;

/// A free loopback port (bound, then let go: the crawl binds it a moment later).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `GET path` on `addr`, HTTP/1.0: (status, body). `None` if nothing answers.
fn get(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let status = text.get(9..12)?.parse().ok()?;
    let body = text.split_once("\r\n\r\n")?.1.to_string();
    Some((status, body))
}

/// The value of `series` (a whole line's name and labels) in OpenMetrics `text`.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

/// Prometheus on loopback, stopped when dropped.
struct Prometheus {
    child: Child,
    addr: SocketAddr,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Prometheus {
    /// Starts Prometheus scraping `target` every second; waits (bounded) until it is ready.
    fn start(dir: &Path, target: SocketAddr) -> Prometheus {
        let config = dir.join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  \
                 - job_name: spinneret\n    static_configs:\n      - targets: ['{target}']\n"
            ),
        )
        .unwrap();
        let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address={addr}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn prometheus");
        let p = Prometheus { child, addr };
        let start = Instant::now();
        while get(addr, "/-/ready").map(|r| r.0) != Some(200) {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "prometheus not ready"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        p
    }

    /// An instant query's one value at unix time `at`.
    fn query(&self, expr: &str, at: f64) -> Option<f64> {
        let expr: String = expr
            .bytes()
            .map(|b| match b {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' => (b as char).to_string(),
                _ => format!("%{b:02X}"),
            })
            .collect();
        let (status, body) = get(
            self.addr,
            &format!("/api/v1/query?query={expr}&time={at:.3}"),
        )?;
        assert_eq!(status, 200, "{body}");
        // {"status":"success","data":{"resultType":"vector","result":[{"metric":{…},"value":[t,"v"]}]}}
        let value = body.split("\"value\":[").nth(1)?;
        value.split('"').nth(1)?.parse().ok()
    }
}

fn now_secs() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

fn prometheus_installed() -> bool {
    Command::new("prometheus")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn prometheus_scrapes_a_crawl_and_sees_its_final_page_count() {
    if !prometheus_installed() {
        eprintln!("SKIPPED: `prometheus` is not installed (Debian: apt-get install prometheus)");
        return;
    }
    let dir = temp_dir("metrics-prometheus");
    let metrics: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let prometheus = Prometheus::start(&dir, metrics);
    // Prometheus applies its targets a few seconds after it is ready: the crawl starts once
    // it has tried the endpoint (down until then).
    let start = Instant::now();
    while prometheus.query("up", now_secs()).is_none() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "prometheus never scraped"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    let web = start_web(12, 20);
    let out = dir.join("crawl");
    // Spaced requests: the crawl lasts several scrape intervals.
    let metrics_flag = metrics.to_string();
    let mut run = Run::start(&crawl_args_with(
        &web,
        &out,
        300,
        &["--metrics", &metrics_flag],
    ));
    assert_eq!(run.wait(), Some(0), "{}", run.stderr());
    let ended = now_secs();
    let stats = std::fs::read_to_string(out.join("stats.json")).unwrap();
    let pages = json_number(&stats, "pages_fetched").expect("pages_fetched");
    assert!(pages > 200.0, "{stats}");

    // As of the crawl's end: the target was up and its last scrape saw every page.
    let up = prometheus.query("up{job=\"spinneret\"}", ended);
    assert_eq!(up, Some(1.0), "the target was up at the end");
    let scraped = prometheus.query("sum(spinneret_pages_total)", ended);
    assert_eq!(
        scraped,
        Some(pages),
        "the page counter as Prometheus last saw it"
    );
    // More than one scrape came while the crawl ran.
    let scrapes = prometheus.query("count_over_time(up{job=\"spinneret\"}[5m])", ended);
    assert!(scrapes.is_some_and(|n| n >= 2.0), "scrapes: {scrapes:?}");
}

#[test]
fn a_crawl_on_two_loops_serves_each_loops_figures_while_it_runs() {
    let dir = temp_dir("metrics-loops");
    let metrics: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let web = start_web(8, 15);
    let out = dir.join("crawl");
    let metrics_flag = metrics.to_string();
    let mut run = Run::start(&crawl_args_with(
        &web,
        &out,
        200,
        &["--loops", "2", "--metrics", &metrics_flag],
    ));
    let start = Instant::now();
    let text = loop {
        if let Some((200, body)) = get(metrics, "/metrics") {
            if sample(&body, r#"spinneret_pages_total{loop="1"}"#).is_some_and(|n| n > 0.0)
                && sample(&body, r#"spinneret_pages_total{loop="0"}"#).is_some_and(|n| n > 0.0)
            {
                break body;
            }
        }
        assert!(
            run.0.try_wait().unwrap().is_none(),
            "the crawl ended before both loops were seen: {}",
            run.stderr()
        );
        assert!(start.elapsed() < Duration::from_secs(30), "no figures");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(text.ends_with("# EOF\n"));
    assert_eq!(sample(&text, "spinneret_loops"), Some(2.0), "{text}");
    for series in [
        r#"spinneret_responses_total{loop="0",class="2xx"}"#,
        r#"spinneret_received_bytes_total{loop="1"}"#,
        r#"spinneret_queued_urls{loop="0",where="ram"}"#,
        "process_resident_memory_bytes",
        "spinneret_warc_written_bytes_total",
        "spinneret_warc_files_total",
        // The crawl journals: the writer has committed by now.
        "spinneret_checkpoint_age_seconds",
    ] {
        assert!(sample(&text, series).is_some(), "{series} in\n{text}");
    }
    // Anything but GET /metrics gets an error, and the endpoint keeps serving.
    assert_eq!(get(metrics, "/").map(|r| r.0), Some(404));
    assert_eq!(get(metrics, "/metrics").map(|r| r.0), Some(200));
    assert_eq!(run.wait(), Some(0), "{}", run.stderr());
    assert!(
        TcpStream::connect(metrics).is_err(),
        "the endpoint stops with the crawl"
    );
}
