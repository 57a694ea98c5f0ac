//! The `spinneret fetch` command end to end: the binary against loopback test servers.

use crate::common;

use std::net::Ipv4Addr;
use std::process::Command;
use std::time::Duration;

use common::{spinneret, temp_dir, warcio_available};
use spinneret::ReturnCode;
use spinneret_tools::dns_server::{DnsServer, DnsServerConfig, Record};
use spinneret_tools::http_server::{HttpServer, HttpServerConfig, Script};
use spinneret_tools::sites;

const LIFETIME: Duration = Duration::from_secs(120);

#[test]
fn fetches_1000_urls_over_100_hosts_into_valid_warc() {
    // 100 virtual hosts on 10 loopback IPs (one port), names from the test DNS server.
    let ips: Vec<Ipv4Addr> = (1..=10).map(|i| Ipv4Addr::new(127, 0, 0, i)).collect();
    let server = HttpServer::start(HttpServerConfig {
        addrs: ips.clone(),
        lifetime: LIFETIME,
        ..HttpServerConfig::default()
    })
    .expect("http server");
    let (routes, urls, _) = sites::simple_site(100, 10, server.port());
    server.set_routes(routes);
    let records = (0..100)
        .map(|h| (sites::host_name(h), vec![Record::A(ips[h % ips.len()])]))
        .collect();
    let dns = DnsServer::start(DnsServerConfig {
        records,
        lifetime: LIFETIME,
        ..DnsServerConfig::default()
    })
    .expect("dns server");
    assert_eq!(urls.len(), 1000);

    let dir = temp_dir("fetch1000");
    let list = dir.join("urls.txt");
    std::fs::write(&list, format!("# test list\n\n{}\n", urls.join("\n"))).unwrap();
    let out = dir.join("out");
    let dns_arg = dns.addr().to_string();
    let res = spinneret(
        &[
            "fetch",
            "--urls",
            list.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--dns-server",
            &dns_arg,
            "--hosts-file",
            "none",
            "--allow-private",
            "--warc-max-size",
            "256K",
            // Response records with a block digest, as asked (the default has none).
            "--warc-block-digest",
        ],
        Duration::from_secs(120),
    );
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert!(res.status.success(), "exit {:?}: {stderr}", res.status);

    let lines = common::read_log(&out);
    assert_eq!(lines.len(), 1000);
    assert!(lines
        .iter()
        .all(|l| l.outcome == ReturnCode::Success && l.status == 200));
    assert!(lines
        .iter()
        .all(|l| l.digest.is_some() && l.referrer.is_none()));
    let mut logged: Vec<&str> = lines.iter().map(|l| l.url.as_str()).collect();
    logged.sort();
    let mut expected: Vec<&str> = urls.iter().map(String::as_str).collect();
    expected.sort();
    assert_eq!(logged, expected, "each URL exactly once");

    let files = common::warc_files(&out);
    assert!(files.len() > 1, "--warc-max-size 256K rotates files");
    let mut responses = 0;
    let mut requests = 0;
    for f in &files {
        let bytes = std::fs::read(f).unwrap();
        let records =
            spinneret::store::archive::warc::reader::read_records(&bytes).expect("readable WARC");
        let ty = |r: &spinneret::store::archive::warc::reader::Record| {
            r.headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case("WARC-Type"))
                .map(|(_, v)| v.clone())
                .unwrap_or_default()
        };
        assert_eq!(
            ty(&records[0]),
            "warcinfo",
            "every file opens with warcinfo"
        );
        for r in records.iter().filter(|r| ty(r) == "response") {
            let want = spinneret::store::archive::warc::sha1(&r.block);
            assert_eq!(
                r.header("WARC-Block-Digest"),
                Some(spinneret::store::archive::warc::sha1_base32(&want).as_str()),
                "--warc-block-digest"
            );
        }
        responses += records.iter().filter(|r| ty(r) == "response").count();
        requests += records.iter().filter(|r| ty(r) == "request").count();
    }
    assert_eq!((responses, requests), (1000, 1000));

    let stats = std::fs::read_to_string(out.join("stats.json")).unwrap();
    assert!(stats.contains("\"urls\": 1000"), "{stats}");
    assert!(stats.contains("\"ok\": 1000"), "{stats}");
    assert!(stderr.contains("done: 1000 URLs, 1000 ok"), "{stderr}");

    // Politeness, server side: never two requests in flight to one IP.
    let reqs = server.requests();
    assert_eq!(reqs.len(), 1000);
    for ip in &ips {
        let to_ip = reqs
            .iter()
            .filter(|r| r.local_addr.ip() == std::net::IpAddr::V4(*ip));
        common::assert_spaced(to_ip, Duration::ZERO, &ip.to_string());
    }

    if warcio_available() {
        for f in &files {
            common::warcio_check(f);
            let index = Command::new("python3")
                .args(["-m", "warcio.cli", "index"])
                .arg(f)
                .output()
                .unwrap();
            assert!(index.status.success());
            let text = String::from_utf8_lossy(&index.stdout);
            assert!(text.lines().count() >= 3, "warcio index lists the records");
        }
    }
}

#[test]
fn bad_arguments_get_clear_errors() {
    let dir = temp_dir("badargs");
    let out = dir.join("out");
    let o = out.to_str().unwrap();
    let res = spinneret(&["fetch", "--out", o], Duration::from_secs(10));
    assert_eq!(res.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&res.stderr).contains("no URLs given"));

    let res = spinneret(
        &[
            "fetch",
            "http://a.test/",
            "--out",
            o,
            "--dns-server",
            "nonsense",
        ],
        Duration::from_secs(10),
    );
    assert_eq!(res.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&res.stderr).contains("--dns-server nonsense"));

    let res = spinneret(
        &[
            "fetch",
            "http://a.test/",
            "--out",
            o,
            "--allow-net",
            "10.0.0.0/99",
        ],
        Duration::from_secs(10),
    );
    assert_eq!(res.status.code(), Some(2));

    let res = spinneret(
        &["fetch", "--urls", "/nonexistent/urls.txt", "--out", o],
        Duration::from_secs(10),
    );
    assert_eq!(res.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&res.stderr).contains("/nonexistent/urls.txt"));

    // An output path that cannot be a directory.
    let file = dir.join("a-file");
    std::fs::write(&file, "x").unwrap();
    let res = spinneret(
        &[
            "fetch",
            "http://a.test/",
            "--out",
            file.to_str().unwrap(),
            "--hosts-file",
            "none",
        ],
        Duration::from_secs(10),
    );
    // An output that cannot be written is exit 3 (output error), not a usage error.
    assert_eq!(res.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&res.stderr).contains("cannot write"));
}

#[test]
fn unparsable_urls_are_logged_and_the_run_goes_on() {
    let dir = temp_dir("badurl");
    let out = dir.join("out");
    let res = spinneret(
        &[
            "fetch",
            "not a url",
            "ftp://127.0.0.1/",
            "--out",
            out.to_str().unwrap(),
            "--hosts-file",
            "none",
        ],
        Duration::from_secs(20),
    );
    // Neither URL got an HTTP response: exit 4, and the summary counts them as failed.
    assert_eq!(res.status.code(), Some(4));
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert!(
        stderr.contains("done: 2 URLs, 0 ok, 0 HTTP errors, 2 failed"),
        "{stderr}"
    );
    let lines = common::read_log(&out);
    let outcomes: Vec<ReturnCode> = lines.iter().map(|l| l.outcome).collect();
    assert_eq!(
        outcomes,
        vec![
            ReturnCode::HttpBadUrlSyntax,
            ReturnCode::HttpUnsupportedScheme
        ]
    );
}

#[test]
fn ctrl_c_ends_live_fetches_and_flushes_output() {
    let server = HttpServer::start(HttpServerConfig {
        lifetime: LIFETIME,
        fallback: Script::Silence,
        ..HttpServerConfig::default()
    })
    .expect("server");
    let mut ok = spinneret_tools::http_server::Routes::new();
    ok.add(
        "127.0.0.2",
        "/ok",
        Script::Respond(spinneret_tools::http_server::Response::ok(
            "fine",
            "text/plain",
        )),
    );
    let fast = HttpServer::start(HttpServerConfig {
        addrs: vec![Ipv4Addr::new(127, 0, 0, 2)],
        routes: ok,
        lifetime: LIFETIME,
        ..HttpServerConfig::default()
    })
    .expect("server");
    let dir = temp_dir("sigint");
    let out = dir.join("out");
    let mut args: Vec<String> = vec!["fetch".into()];
    args.push(format!("http://127.0.0.2:{}/ok", fast.port()));
    for i in 0..5 {
        args.push(format!("http://127.0.0.1:{}/hang{i}", server.port()));
    }
    args.extend(
        [
            "--out",
            out.to_str().unwrap(),
            "--allow-private",
            "--hosts-file",
            "none",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    let mut child = common::spinneret_command()
        .args(&args)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the fast page is logged, then interrupt.
    let start = std::time::Instant::now();
    while !std::fs::read_to_string(out.join("crawl.log"))
        .map(|s| s.contains("/ok"))
        .unwrap_or(false)
    {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "fast page never logged"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: sending SIGINT to our own child process.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "did not stop after SIGINT"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    // Stopped by Ctrl-C before the work was done: exit 9.
    assert_eq!(status.code(), Some(9));
    let lines = common::read_log(&out);
    assert_eq!(lines.len(), 6, "every URL has its one line");
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.outcome == ReturnCode::Success)
            .count(),
        1
    );
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.outcome == ReturnCode::Interrupted)
            .count(),
        5
    );
    let files = common::warc_files(&out);
    assert_eq!(
        files.len(),
        1,
        "the WARC file was closed under its final name"
    );
    let records =
        spinneret::store::archive::warc::reader::read_records(&std::fs::read(&files[0]).unwrap())
            .unwrap();
    let types: Vec<&str> = records
        .iter()
        .map(|r| r.header("WARC-Type").unwrap_or(""))
        .collect();
    assert_eq!(
        types,
        ["warcinfo", "request", "response", "resource"],
        "warcinfo, the fetched page's request and response, and the file's crawl.log lines"
    );
    assert!(out.join("stats.json").exists());
}

/// A deterministic shuffle (xorshift), so a failure can be replayed.
fn shuffle<T>(v: &mut [T], mut seed: u64) {
    for i in (1..v.len()).rev() {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        v.swap(i, (seed % (i as u64 + 1)) as usize);
    }
}

#[test]
fn a_shuffled_list_is_fetched_host_by_host_one_request_at_a_time() {
    // 40 hosts, each on its own loopback address (so a connection serves one host), 10 URLs
    // each, listed in random order: what a list as users have it looks like.
    const HOSTS: usize = 40;
    const PER_HOST: usize = 10;
    let ips: Vec<Ipv4Addr> = (0..HOSTS)
        .map(|h| Ipv4Addr::new(127, 0, 3, 1 + h as u8))
        .collect();
    let server = HttpServer::start(HttpServerConfig {
        addrs: ips.clone(),
        lifetime: LIFETIME,
        ..HttpServerConfig::default()
    })
    .expect("http server");
    let records = (0..HOSTS)
        .map(|h| (sites::host_name(h), vec![Record::A(ips[h])]))
        .collect();
    let dns = DnsServer::start(DnsServerConfig {
        records,
        lifetime: LIFETIME,
        ..DnsServerConfig::default()
    })
    .expect("dns server");
    let mut urls: Vec<String> = (0..HOSTS)
        .flat_map(|h| (0..PER_HOST).map(move |p| (h, p)))
        .map(|(h, p)| sites::page_url(h, p, server.port()))
        .collect();
    shuffle(&mut urls, 0x5eed);

    let dir = temp_dir("shuffled");
    let list = dir.join("urls.txt");
    std::fs::write(&list, urls.join("\n")).unwrap();
    let out = dir.join("out");
    let dns_arg = dns.addr().to_string();
    let delay = Duration::from_millis(30);
    let res = spinneret(
        &[
            "fetch",
            "-i",
            list.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--dns-server",
            &dns_arg,
            "--hosts-file",
            "none",
            "--allow-private",
            "--max-conns",
            "64",
            "--delay-ms",
            &delay.as_millis().to_string(),
        ],
        Duration::from_secs(60),
    );
    let stderr = String::from_utf8_lossy(&res.stderr);
    // Every URL is a 404 here (no routes): exit 8, and each has its one line.
    assert_eq!(res.status.code(), Some(8), "{stderr}");
    let mut logged: Vec<String> = common::read_log(&out)
        .into_iter()
        .map(|l| {
            assert_eq!((l.outcome, l.status), (ReturnCode::Success, 404), "{l:?}");
            l.url
        })
        .collect();
    logged.sort();
    urls.sort();
    assert_eq!(logged, urls, "each URL exactly once");
    assert!(
        !out.join(".fetch-frontier").exists(),
        "no spill directory is left"
    );

    // Politeness, server side: one request at a time per host, --delay apart.
    let reqs = server.requests();
    assert_eq!(reqs.len(), HOSTS * PER_HOST);
    let mut conns_per_host = Vec::new();
    for h in 0..HOSTS {
        let name = sites::host_name(h);
        let of_host: Vec<_> = reqs.iter().filter(|r| r.host == name).collect();
        assert_eq!(of_host.len(), PER_HOST, "{name}");
        // Less a little: the loop reads the clock once a turn, which may be just before the
        // server notes the answer it is still writing.
        let slack = Duration::from_millis(5);
        common::assert_spaced(of_host.iter().copied(), delay - slack, &name);
        let mut conns: Vec<u64> = of_host.iter().map(|r| r.conn_id).collect();
        conns.sort_unstable();
        conns.dedup();
        conns_per_host.push(conns.len());
    }
    // A host's requests follow one another on its connection: with fewer hosts than
    // connections nothing takes it away between them.
    let most = *conns_per_host.iter().max().unwrap();
    eprintln!(
        "connections: {} for {HOSTS} hosts, at most {most} for one",
        conns_per_host.iter().sum::<usize>(),
    );
    assert!(most <= 2, "{conns_per_host:?}");
}

#[test]
fn bad_lines_of_a_list_each_get_their_line_and_the_good_ones_are_fetched() {
    let mut routes = spinneret_tools::http_server::Routes::new();
    for p in ["/a", "/b", "/c"] {
        routes.add(
            "127.0.0.1",
            p,
            Script::Respond(spinneret_tools::http_server::Response::ok(
                "fine",
                "text/plain",
            )),
        );
    }
    let server = HttpServer::start(HttpServerConfig {
        routes,
        lifetime: LIFETIME,
        ..HttpServerConfig::default()
    })
    .expect("http server");
    let base = format!("http://127.0.0.1:{}", server.port());
    // A byte-order mark, then a good URL; a line that is not UTF-8; a 10 MB line; a line
    // that is not a URL; and good URLs after them all.
    let mut list = b"\xEF\xBB\xBF".to_vec();
    list.extend_from_slice(format!("{base}/a\r\n").as_bytes());
    list.extend_from_slice(format!("{base}/caf").as_bytes());
    list.extend_from_slice(b"\xE9\n");
    list.extend_from_slice(b"http://127.0.0.1/caf\xE9-latin1\n");
    list.extend_from_slice(format!("{base}/").as_bytes());
    list.extend(std::iter::repeat_n(b'x', 10 << 20));
    list.extend_from_slice(b"\nnot a url\n");
    list.extend_from_slice(format!("{base}/b\n\n# done\n{base}/c").as_bytes());
    let dir = temp_dir("badlines");
    let file = dir.join("urls.txt");
    std::fs::write(&file, &list).unwrap();
    let out = dir.join("out");
    let started = std::time::Instant::now();
    let res = spinneret(
        &[
            "fetch",
            "-i",
            file.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--allow-private",
            "--hosts-file",
            "none",
            "--delay-ms",
            "0",
        ],
        Duration::from_secs(60),
    );
    let stderr = String::from_utf8_lossy(&res.stderr);
    // Lines without a response: exit 4.
    assert_eq!(res.status.code(), Some(4), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(30));
    let lines = common::read_log(&out);
    let got: Vec<(ReturnCode, &str)> = lines.iter().map(|l| (l.outcome, l.url.as_str())).collect();
    let ok = |p: &str| (ReturnCode::Success, format!("{base}{p}"));
    for want in [ok("/a"), ok("/b"), ok("/c")] {
        assert!(
            got.contains(&(want.0, want.1.as_str())),
            "{want:?} in {got:?}"
        );
    }
    let bad: Vec<&(ReturnCode, &str)> = got
        .iter()
        .filter(|(o, _)| *o != ReturnCode::Success)
        .collect();
    assert_eq!(bad.len(), 4, "{bad:?}");
    assert_eq!(bad[0].0, ReturnCode::HttpBadUrlSyntax);
    // Lossily decoded (crawl.log escapes what it logs).
    assert!(bad[0].1.ends_with("/caf%EF%BF%BD"), "{bad:?}");
    assert_eq!(bad[1].0, ReturnCode::HttpBadUrlSyntax);
    assert_eq!(bad[2].0, ReturnCode::UrlTooLong);
    assert!(bad[2].1.starts_with(&format!("{base}/xxx")), "{bad:?}");
    assert!(
        bad[2].1.len() < 1024,
        "only the start of the line is logged"
    );
    assert_eq!(*bad[3], (ReturnCode::HttpBadUrlSyntax, "not%20a%20url"));
    assert_eq!(lines.len(), 7, "one line per line with a URL or an error");
    // The long line was never sent.
    assert!(server.requests().iter().all(|r| r.target.len() < 100));
    assert!(
        stderr.contains("line 4: longer than --max-url-length"),
        "{stderr}"
    );
}
