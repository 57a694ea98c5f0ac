//! The black hole: a loopback address where connect() stays pending.

use std::net::TcpStream;
use std::time::{Duration, Instant};

#[test]
fn connect_to_black_hole_stays_pending() {
    let hole = spinneret_tools::blackhole::start().unwrap();
    assert!(hole.addr().ip().is_loopback());
    // connect_timeout is a nonblocking connect plus a bounded poll.
    for _ in 0..2 {
        let t = Instant::now();
        let r = TcpStream::connect_timeout(&hole.addr(), Duration::from_millis(1200));
        let err = r.expect_err("connect must not complete");
        assert_eq!(err.kind(), std::io::ErrorKind::TimedOut, "{err:?}");
        assert!(t.elapsed() >= Duration::from_secs(1));
    }
}

#[test]
fn site_and_testserver_binary() {
    let (routes, urls, records) = spinneret_tools::sites::simple_site(3, 10, 8080);
    assert_eq!(urls.len(), 30);
    assert_eq!(routes.len(), 30);
    assert_eq!(records.len(), 3);
    assert!(urls.contains(&"http://h2.test:8080/p9.html".to_string()));
    let exe = env!("CARGO_BIN_EXE_spinneret-testserver");
    let mut child = std::process::Command::new(exe)
        .args([
            "--hosts",
            "2",
            "--pages",
            "3",
            "--lifetime",
            "1",
            "--print-urls",
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    let out = loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success());
            break child.wait_with_output().unwrap();
        }
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "testserver outlived its lifetime"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    let first = lines.next().unwrap();
    assert!(first.starts_with("http_port=") && first.contains(" dns=127.0.0.1:"));
    assert!(first.ends_with(" urls=6"));
    assert_eq!(lines.count(), 6);
}
