//! `crawl --cluster`: nodes in separate processes coordinating through a real redis-server
//! (started here on loopback, AOF on, stopped with the test). The union of the nodes' WARC
//! files is exactly the web's pages, each once; a node killed mid-crawl and resumed loses
//! nothing and fetches again at most what it had in flight. Skipped, saying why, when
//! redis-server is not installed (`.ci/run` installs it).

use crate::common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::crawl_run::{
    check_complete, check_complete_after_kills, crawl_args_with, resume_args, start_web, Run, Web,
    RUN_LIMIT,
};
use common::temp_dir;

/// The redis-server executable: on the PATH (`which`), else /usr/bin's.
fn redis_server() -> Option<PathBuf> {
    let which = Command::new("which")
        .arg("redis-server")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|p| !p.is_empty())
        .map(PathBuf::from);
    which.or_else(|| {
        let p = PathBuf::from("/usr/bin/redis-server");
        p.exists().then_some(p)
    })
}

/// A redis-server for one test (under `timeout 300`), stopped when dropped.
struct Redis {
    child: Child,
    port: u16,
}

impl Redis {
    fn start(dir: &Path) -> Option<Redis> {
        let exe = redis_server();
        let Some(exe) = exe else {
            // CI installs it (.ci/run): there, its absence is a failure, not a skip.
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "redis-server is not installed"
            );
            eprintln!("skipping: redis-server is not installed (apt-get install redis-server)");
            return None;
        };
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        std::fs::create_dir_all(dir).unwrap();
        let child = Command::new("timeout")
            .arg("300")
            .arg(&exe)
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--dir", dir.to_str().unwrap()])
            .args([
                "--appendonly",
                "yes",
                "--save",
                "",
                "--protected-mode",
                "no",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start redis-server");
        let redis = Redis { child, port };
        let start = Instant::now();
        while !redis.pong() {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "redis-server did not answer"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(redis)
    }

    fn pong(&self) -> bool {
        let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(1)));
        let mut buf = [0u8; 7];
        s.write_all(b"PING\r\n").is_ok() && s.read_exact(&mut buf).is_ok() && &buf == b"+PONG\r\n"
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        common::stop_under_timeout(&mut self.child);
    }
}

const NODES: usize = 3;

/// Node `k`'s command: seeds only for node 0 (the others start with none and wait).
fn node_args(web: &Web, redis: &Redis, out: &Path, k: usize, delay_ms: u64) -> Vec<String> {
    let (url, nodes, node) = (redis.url(), NODES.to_string(), k.to_string());
    let cluster = [
        "--cluster",
        &url,
        "--cluster-nodes",
        &nodes,
        "--cluster-node",
        &node,
    ];
    let mut args = crawl_args_with(web, out, delay_ms, &cluster);
    if k != 0 {
        args.retain(|a| !a.starts_with("http://"));
    }
    args
}

fn outs(base: &Path) -> Vec<PathBuf> {
    (0..NODES).map(|k| base.join(format!("node{k}"))).collect()
}

/// `cluster-status` after the crawl: every node listed, the crawl done, and (`pages`) the
/// pages of all nodes together.
fn check_status(redis: &Redis, pages: Option<usize>) {
    let out = common::spinneret(&["cluster-status", "--cluster", &redis.url()], RUN_LIMIT);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "cluster-status: {text}");
    for k in 0..NODES {
        assert!(
            text.lines().any(|l| l.starts_with(&format!("{k} "))),
            "node {k} missing from cluster-status:\n{text}"
        );
    }
    assert!(text.contains("the crawl is done"), "{text}");
    if let Some(pages) = pages {
        let all: Vec<&str> = text
            .lines()
            .find(|l| l.starts_with("all "))
            .unwrap_or_else(|| panic!("no total line:\n{text}"))
            .split_whitespace()
            .collect();
        assert_eq!(all.get(1), Some(&pages.to_string().as_str()), "{text}");
    }
}

/// A redis-server, a test web of 100 hosts and the three nodes crawling it (node 0 given the
/// seeds), `delay_ms` apart per host.
struct Cluster {
    base: PathBuf,
    redis: Redis,
    web: Web,
    outs: Vec<PathBuf>,
    started: Instant,
    runs: Vec<Run>,
}

impl Cluster {
    fn start(name: &str, delay_ms: u64) -> Option<Cluster> {
        let base = temp_dir(name);
        let redis = Redis::start(&base.join("redis"))?;
        let web = start_web(100, 5);
        let outs = outs(&base);
        let started = Instant::now();
        let runs = (0..NODES)
            .map(|k| Run::start(&node_args(&web, &redis, &outs[k], k, delay_ms)))
            .collect();
        Some(Cluster {
            base,
            redis,
            web,
            outs,
            started,
            runs,
        })
    }
}

#[test]
fn three_nodes_store_the_whole_web_once() {
    let Some(Cluster {
        base,
        redis,
        web,
        outs,
        started,
        mut runs,
    }) = Cluster::start("cluster-three", 0)
    else {
        return;
    };
    for (k, run) in runs.iter_mut().enumerate() {
        assert_eq!(run.wait(), Some(0), "node {k}");
    }
    eprintln!("3 nodes: {:?}", started.elapsed());
    drop(runs);
    let dirs: Vec<&Path> = outs.iter().map(PathBuf::as_path).collect();
    assert_eq!(check_complete(&web, &dirs), 0, "pages fetched twice");
    for (k, out) in outs.iter().enumerate() {
        assert!(
            !common::warc_files(out).is_empty(),
            "node {k} stored nothing: the hosts were not shared out"
        );
    }
    let pages = web.web.expected_urls(web.server.port()).len();
    check_status(&redis, Some(pages));
    drop(redis);
    let _ = std::fs::remove_dir_all(&base);
}

#[test]
fn a_node_killed_mid_crawl_and_resumed_loses_nothing() {
    let Some(Cluster {
        base,
        redis,
        web,
        outs,
        started,
        mut runs,
    }) = Cluster::start("cluster-kill", 250)
    else {
        return;
    };
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        runs[1].0.try_wait().unwrap().is_none(),
        "node 1 ended before the kill: the crawl is too short to test"
    );
    runs[1].signal("-KILL");
    runs[1].wait();
    // The others wait for it: the crawl is not done while a node is missing.
    std::thread::sleep(Duration::from_millis(500));
    for k in [0, 2] {
        assert!(
            runs[k].0.try_wait().unwrap().is_none(),
            "node {k} finished while node 1 was dead"
        );
    }
    runs[1] = Run::start(&resume_args(&outs[1]));
    for (k, run) in runs.iter_mut().enumerate() {
        assert_eq!(run.wait(), Some(0), "node {k}");
    }
    eprintln!("3 nodes, one killed and resumed: {:?}", started.elapsed());
    drop(runs);
    let dirs: Vec<&Path> = outs.iter().map(PathBuf::as_path).collect();
    check_complete_after_kills(&web, &dirs, 1);
    // A resumed node counts what its journal says ended, robots.txt included: no exact total.
    check_status(&redis, None);
    drop(redis);
    let _ = std::fs::remove_dir_all(&base);
}
