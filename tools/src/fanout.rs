//! A web that never ends: every page `/p/N` links `fanout` new pages
//! (`/p/{N*fanout+1}` … `/p/{N*fanout+fanout}`), spread over `hosts` host names, so a crawl's
//! frontier grows by `fanout - 1` URLs per page fetched. For testing a frontier of millions of
//! queued URLs. One thread per connection (keep-alive), on 127.0.0.1; it stops when dropped
//! and by itself after its lifetime.

use std::io::{self, BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::dns_server::Record;
use crate::POLL_STEP;

/// Requests one connection may make (keep-alive), and the longest request line read.
const MAX_REQUESTS_PER_CONN: usize = 100_000;
const MAX_LINE: usize = 8 * 1024;

#[derive(Clone, Debug)]
pub struct FanoutConfig {
    /// Host names `f0.test` … `f{hosts-1}.test`.
    pub hosts: usize,
    /// New links per page.
    pub fanout: u64,
    pub lifetime: Duration,
}

pub struct FanoutServer {
    port: u16,
    stop: Arc<AtomicBool>,
    requests: Arc<AtomicU64>,
    handle: Option<JoinHandle<()>>,
}

/// `f{i}.test`.
pub fn host_name(i: u64) -> String {
    format!("f{i}.test")
}

impl FanoutServer {
    pub fn start(cfg: FanoutConfig) -> io::Result<FanoutServer> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let port = listener.local_addr()?.port();
        let stop = Arc::new(AtomicBool::new(false));
        let requests = Arc::new(AtomicU64::new(0));
        let (flag, count) = (stop.clone(), requests.clone());
        let handle = std::thread::spawn(move || {
            let end = Instant::now() + cfg.lifetime;
            while !flag.load(Ordering::SeqCst) && Instant::now() < end {
                match listener.accept() {
                    Ok((s, _)) => {
                        let (cfg, flag, count) = (cfg.clone(), flag.clone(), count.clone());
                        std::thread::spawn(move || serve(s, port, &cfg, &flag, &count, end));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(1)),
                }
            }
            flag.store(true, Ordering::SeqCst);
        });
        Ok(FanoutServer {
            port,
            stop,
            requests,
            handle: Some(handle),
        })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `http://f0.test:PORT/p/0`: the one page every other is reached from.
    pub fn seed(&self) -> String {
        format!("http://{}:{}/p/0", host_name(0), self.port)
    }

    /// Requests answered so far.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::SeqCst)
    }

    /// Every host name → 127.0.0.1, for `dns_server::DnsServer`.
    pub fn dns_records(hosts: usize) -> std::collections::HashMap<String, Vec<Record>> {
        (0..hosts as u64)
            .map(|h| (host_name(h), vec![Record::A([127, 0, 0, 1].into())]))
            .collect()
    }
}

impl Drop for FanoutServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// The page `/p/n`: `fanout` links to its children, each on host `child % hosts`.
pub fn page(n: u64, port: u16, cfg: &FanoutConfig) -> Vec<u8> {
    let mut body = format!("<html><head><title>p{n}</title></head><body>\n").into_bytes();
    for k in 1..=cfg.fanout {
        let child = n.saturating_mul(cfg.fanout).saturating_add(k);
        let host = host_name(child % cfg.hosts.max(1) as u64);
        let _ = writeln!(
            body,
            "<a href=\"http://{host}:{port}/p/{child}\">{child}</a>"
        );
    }
    body.extend_from_slice(b"</body></html>\n");
    body
}

fn serve(
    s: TcpStream,
    port: u16,
    cfg: &FanoutConfig,
    stop: &AtomicBool,
    count: &AtomicU64,
    end: Instant,
) {
    let _ = s.set_nonblocking(false);
    let _ = s.set_read_timeout(Some(POLL_STEP));
    let mut out = match s.try_clone() {
        Ok(o) => o,
        Err(_) => return,
    };
    let mut r = BufReader::new(s);
    let mut line = String::new();
    for _ in 0..MAX_REQUESTS_PER_CONN {
        // The request line, then headers to the blank line; bounded by MAX_LINE and time.
        let mut target = None;
        loop {
            if stop.load(Ordering::SeqCst) || Instant::now() >= end {
                return;
            }
            line.clear();
            match r.read_line(&mut line) {
                Ok(0) => return,
                Ok(_) if line.len() > MAX_LINE => return,
                Ok(_) => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    continue
                }
                Err(_) => return,
            }
            if target.is_none() {
                target = Some(line.split_whitespace().nth(1).unwrap_or("").to_string());
            } else if line == "\r\n" || line == "\n" {
                break;
            }
        }
        let target = target.unwrap_or_default();
        let n = target
            .strip_prefix("/p/")
            .and_then(|n| n.parse::<u64>().ok());
        let reply = match n {
            Some(n) => {
                let body = page(n, port, cfg);
                let mut head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\r\n",
                    body.len()
                )
                .into_bytes();
                head.extend_from_slice(&body);
                head
            }
            None => b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".to_vec(),
        };
        count.fetch_add(1, Ordering::SeqCst);
        if out.write_all(&reply).is_err() {
            return;
        }
    }
}
