//! A load generator for the synthetic web's server: `conns` threads, each a blocking keep-alive
//! HTTP/1.1 client on its own host address cycling through that host's pages, one request at a
//! time. It measures the server (`server`), so it does as little as it can per response: parse
//! the head, skip `Content-Length` bytes.

use std::io::{self, Read, Write};
use std::net::{SocketAddrV4, TcpStream};
use std::time::{Duration, Instant};

use super::{host_ip, host_name};

/// Read buffer per client; response heads must fit.
const READ_BUF: usize = 64 * 1024;
/// Headers parsed per response.
const MAX_HEADERS: usize = 32;
/// Client socket timeout: a stalled server ends the connection, not the run.
const IO_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Clone, Debug)]
pub struct LoadConfig {
    pub port: u16,
    pub hosts: usize,
    pub pages: usize,
    pub conns: usize,
    pub duration: Duration,
}

#[derive(Clone, Copy, Debug, Default)]
pub struct LoadReport {
    /// Complete 200 responses.
    pub requests: u64,
    /// Response bytes, heads included.
    pub bytes: u64,
    /// Failed connections or responses (each ends its connection; the client reconnects).
    pub errors: u64,
    pub elapsed: Duration,
}

impl LoadReport {
    pub fn requests_per_sec(&self) -> f64 {
        self.requests as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    pub fn mb_per_sec(&self) -> f64 {
        self.bytes as f64 / 1e6 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// Runs `conns` clients for `duration` and sums what they got.
pub fn run(cfg: &LoadConfig) -> LoadReport {
    let start = Instant::now();
    let deadline = start + cfg.duration;
    let threads: Vec<_> = (0..cfg.conns.max(1))
        .map(|t| {
            let cfg = cfg.clone();
            std::thread::spawn(move || client(&cfg, t % cfg.hosts.max(1), deadline))
        })
        .collect();
    let mut total = LoadReport::default();
    for t in threads {
        if let Ok(r) = t.join() {
            total.requests += r.requests;
            total.bytes += r.bytes;
            total.errors += r.errors;
        }
    }
    total.elapsed = start.elapsed();
    total
}

fn client(cfg: &LoadConfig, host: usize, deadline: Instant) -> LoadReport {
    let mut report = LoadReport::default();
    let addr = SocketAddrV4::new(host_ip(host), cfg.port);
    let requests: Vec<Vec<u8>> = (0..cfg.pages.max(1))
        .map(|j| {
            format!(
                "GET /p{j}.html HTTP/1.1\r\nHost: {}:{}\r\nUser-Agent: spinneret-load\r\n\r\n",
                host_name(host),
                cfg.port
            )
            .into_bytes()
        })
        .collect();
    let mut buf = vec![0u8; READ_BUF];
    let mut next = 0;
    while Instant::now() < deadline {
        let Ok(mut stream) = TcpStream::connect(addr) else {
            report.errors += 1;
            std::thread::sleep(Duration::from_millis(10));
            continue;
        };
        let _ = stream.set_nodelay(true);
        let _ = stream.set_read_timeout(Some(IO_TIMEOUT));
        while Instant::now() < deadline {
            match exchange(&mut stream, &requests[next], &mut buf) {
                Ok(n) => {
                    report.requests += 1;
                    report.bytes += n;
                    next = (next + 1) % requests.len();
                }
                Err(_) => {
                    report.errors += 1;
                    break;
                }
            }
        }
    }
    report
}

/// Sends one request and reads its whole 200 response; returns the response's size.
fn exchange(stream: &mut TcpStream, request: &[u8], buf: &mut [u8]) -> io::Result<u64> {
    stream.write_all(request)?;
    let mut filled = 0;
    let (head_len, body_len) = loop {
        let n = stream.read(&mut buf[filled..])?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        filled += n;
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut resp = httparse::Response::new(&mut headers);
        match resp.parse(&buf[..filled]) {
            Ok(httparse::Status::Complete(h)) => {
                if resp.code != Some(200) {
                    return Err(io::Error::other("status not 200"));
                }
                let len = resp
                    .headers
                    .iter()
                    .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                    .and_then(|h| std::str::from_utf8(h.value).ok()?.parse::<u64>().ok())
                    .ok_or_else(|| io::Error::other("no content-length"))?;
                break (h, len);
            }
            Ok(httparse::Status::Partial) if filled < buf.len() => {}
            _ => return Err(io::Error::other("bad response head")),
        }
    };
    let total = head_len as u64 + body_len;
    let mut got = filled as u64;
    // One request in flight: nothing follows this response.
    while got < total {
        let n = stream.read(buf)?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        got += n as u64;
    }
    if got > total {
        return Err(io::Error::other("bytes past the response"));
    }
    Ok(total)
}
