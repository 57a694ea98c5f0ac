//! Bounded memory and honest archives: large bodies go through the spool into valid WARC
//! records, and every response that is not the complete body says so with `WARC-Truncated`
//! (`length`, `time`, `disconnect`), its received bytes intact. Loopback servers only.

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{spinneret, temp_dir, warcio_available};

use spinneret::store::archive::warc::reader::{read_records, Record};
use spinneret_tools::http_server::{After, HttpServer, HttpServerConfig, Routes, Script};

const LIFETIME: Duration = Duration::from_secs(60);
/// `Script::Stream` sends `a..z` repeated, restarting every 64 KiB block.
const STREAM_BLOCK: usize = 64 * 1024;

fn stream_byte(offset: usize) -> u8 {
    b'a' + ((offset % STREAM_BLOCK) % 26) as u8
}

fn server(routes: Routes) -> HttpServer {
    HttpServer::start(HttpServerConfig {
        routes,
        lifetime: LIFETIME,
        ..HttpServerConfig::default()
    })
    .expect("http server")
}

/// Every response record, by target URI.
fn responses(out: &Path) -> Vec<Record> {
    let mut all = Vec::new();
    for f in common::warc_files(out) {
        let recs = read_records(&std::fs::read(&f).unwrap()).expect("our reader reads it");
        all.extend(
            recs.into_iter()
                .filter(|r| r.header("WARC-Type") == Some("response")),
        );
    }
    all
}

fn response_for<'a>(recs: &'a [Record], url: &str) -> &'a Record {
    recs.iter()
        .find(|r| r.header("WARC-Target-URI") == Some(url))
        .unwrap_or_else(|| panic!("no response record for {url}"))
}

/// The HTTP payload of a response record (after the head).
fn payload(r: &Record) -> &[u8] {
    let at = r
        .block
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a head");
    &r.block[at + 4..]
}

fn spool_is_empty(out: &Path) -> bool {
    match std::fs::read_dir(out.join(".spool")) {
        Ok(entries) => entries.count() == 0,
        Err(_) => true,
    }
}

/// warcio reads every record of every file, checks the digests, and reads each response's
/// payload to its end (a truncated record must not make it fail or hang).
fn warcio_reads_all(out: &Path) {
    if !warcio_available() {
        return;
    }
    for f in common::warc_files(out) {
        common::warcio_check(&f);
        let script = "import sys\nfrom warcio.archiveiterator import ArchiveIterator\n\
                      n = 0\n\
                      with open(sys.argv[1], 'rb') as s:\n\
                      \x20   for r in ArchiveIterator(s):\n\
                      \x20       if r.rec_type == 'response':\n\
                      \x20           body = r.content_stream().read()\n\
                      \x20           print(r.rec_headers.get_header('WARC-Target-URI'), \
                      r.rec_headers.get_header('WARC-Truncated') or '-', len(body))\n";
        let mut child = Command::new("python3")
            .args(["-c", script])
            .arg(&f)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let started = Instant::now();
        loop {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "warcio hangs reading {}",
                f.display()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "warcio read {}: {}",
            f.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// pywb replays each record, truncated ones included, and every replay ends (bounded) with
/// exactly the payload stored: pywb announces a truncated response's original Content-Length
/// (it does not read `WARC-Truncated`), so a client asking for keep-alive would wait for the
/// rest; with `Connection: close` pywb ends the response after the bytes it has.
fn replay_ends(out: &Path, urls: &[String]) {
    if !common::pywb::pywb_available() {
        return;
    }
    let recs = responses(out);
    let pywb = common::pywb::Pywb::start(&out.join("../pywb"), &common::warc_files(out));
    for url in urls {
        let got = pywb
            .get(&format!("2026id_/{url}"), Duration::from_secs(20))
            .unwrap_or_else(|e| panic!("replay of {url}: {e}"));
        assert_eq!(got.status, 200, "{url}: {}", got.head);
        assert_eq!(got.body, payload(response_for(&recs, url)), "{url}");
    }
}

#[test]
fn cut_responses_are_marked_truncated_with_their_bytes_intact() {
    let mut routes = Routes::new();
    let host = "127.0.0.1";
    // 1.5 MiB: over the spill threshold, under the body limit, complete.
    let big = 3 << 19;
    routes.add(
        host,
        "/big",
        Script::Stream {
            head: format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {big}\r\n\r\n"
            )
            .into_bytes(),
            body_len: big as u64,
        },
    );
    // 4 MiB against --max-body-bytes 2M: cut by our limit.
    routes.add(
        host,
        "/length",
        Script::Stream {
            head: b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 4194304\r\n\r\n"
                .to_vec(),
            body_len: 4 << 20,
        },
    );
    // 100 of 10,000 announced bytes, then silence: cut by the deadline.
    let part = [
        b"HTTP/1.1 200 OK\r\nContent-Length: 10000\r\n\r\n".as_slice(),
        &[b't'; 100],
    ]
    .concat();
    routes.add(
        host,
        "/time",
        Script::Raw {
            bytes: part.clone(),
            then: After::KeepOpen,
        },
    );
    // The same, then the server closes: cut by the peer.
    let part_d = [
        b"HTTP/1.1 200 OK\r\nContent-Length: 10000\r\n\r\n".as_slice(),
        &[b'd'; 100],
    ]
    .concat();
    routes.add(
        host,
        "/disconnect",
        Script::Raw {
            bytes: part_d,
            then: After::Close,
        },
    );
    let srv = server(routes);
    let base = format!("http://127.0.0.1:{}", srv.port());
    let out = temp_dir("truncated").join("out");
    let urls: Vec<String> = ["/big", "/length", "/time", "/disconnect"]
        .iter()
        .map(|p| format!("{base}{p}"))
        .collect();
    let mut args = vec!["fetch"];
    args.extend(urls.iter().map(String::as_str));
    args.extend([
        "--out",
        out.to_str().unwrap(),
        "--allow-private",
        "--hosts-file",
        "none",
        "--max-body-bytes",
        "2M",
        "--http-timeout-ms",
        "1500",
    ]);
    let res = spinneret(&args, Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&res.stderr);
    let recs = responses(&out);

    let r = response_for(&recs, &urls[0]);
    assert_eq!(r.header("WARC-Truncated"), None, "{stderr}");
    let p = payload(r);
    assert_eq!(p.len(), big);
    assert!(p.iter().enumerate().all(|(i, &b)| b == stream_byte(i)));

    let r = response_for(&recs, &urls[1]);
    assert_eq!(r.header("WARC-Truncated"), Some("length"));
    let p = payload(r);
    assert_eq!(p.len(), 2 << 20, "exactly the body limit is kept");
    assert!(p.iter().enumerate().all(|(i, &b)| b == stream_byte(i)));

    let r = response_for(&recs, &urls[2]);
    assert_eq!(r.header("WARC-Truncated"), Some("time"));
    assert_eq!(payload(r), &[b't'; 100]);

    let r = response_for(&recs, &urls[3]);
    assert_eq!(r.header("WARC-Truncated"), Some("disconnect"));
    assert_eq!(payload(r), &[b'd'; 100]);

    assert!(spool_is_empty(&out), "spool files left behind");
    warcio_reads_all(&out);
    replay_ends(&out, &urls);
    let stats = std::fs::read_to_string(out.join("stats.json")).unwrap();
    assert!(
        stats.contains("\"spilled_responses\": 2"),
        "the 3 MiB and the cut 2 MiB bodies went through the spool: {stats}"
    );
}

#[test]
fn ctrl_c_marks_a_body_in_flight_as_cut_and_leaves_no_spool() {
    let mut routes = Routes::new();
    // 4 MiB at 64 KiB per 25 ms (about 1.6 s): mid-body, and spilled, at Ctrl-C.
    let body: Vec<u8> = (0..4 << 20).map(stream_byte).collect();
    routes.add(
        "127.0.0.1",
        "/endless",
        Script::Trickle {
            bytes: [
                b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 4194304\r\n\r\n"
                    .as_slice(),
                &body,
            ]
            .concat(),
            chunk: 64 << 10,
            interval: Duration::from_millis(25),
        },
    );
    let srv = server(routes);
    let url = format!("http://127.0.0.1:{}/endless", srv.port());
    let out = temp_dir("interrupted").join("out");
    let mut child = common::spinneret_command()
        .args(["fetch", &url, "--out", out.to_str().unwrap()])
        .args(["--allow-private", "--hosts-file", "none"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait (bounded) until the body is past the spill threshold, then Ctrl-C.
    let started = Instant::now();
    loop {
        assert!(started.elapsed() < Duration::from_secs(20), "never spilled");
        std::thread::sleep(Duration::from_millis(100));
        let warcs: u64 = std::fs::read_dir(&out)
            .map(|d| d.count() as u64)
            .unwrap_or(0);
        if warcs > 0 && started.elapsed() > Duration::from_millis(900) {
            break;
        }
    }
    // SAFETY: kill() with a valid pid and signal number has no memory effects.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    let waited = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(
            waited.elapsed() < Duration::from_secs(30),
            "no exit after Ctrl-C"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let recs = responses(&out);
    let r = response_for(&recs, &url);
    assert_eq!(r.header("WARC-Truncated"), Some("disconnect"));
    let p = payload(r);
    assert!(
        p.len() > 256 << 10 && p.len() < 4 << 20,
        "got {} bytes",
        p.len()
    );
    assert!(p.iter().enumerate().all(|(i, &b)| b == stream_byte(i)));
    assert!(spool_is_empty(&out), "spool files left behind");
    let log = std::fs::read_to_string(out.join("crawl.log")).unwrap();
    assert!(log.contains("\tInterrupted\t"), "{log}");
    warcio_reads_all(&out);
}
