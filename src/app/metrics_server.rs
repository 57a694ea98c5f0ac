//! The `--metrics ADDR` endpoint: a thread of its own serving `GET /metrics` from the
//! [`MetricsBoard`], one connection at a time. Bounded whatever the peer does: a request head
//! of at most [`MAX_INCOMING_HEAD`] bytes, two seconds to send it and to take the answer,
//! one connection served while at most `BACKLOG_LIMIT` wait (more are closed at once), and
//! every connection closed after one answer. Garbage gets a 4xx, never a crash; the request
//! grammar is `http::incoming`'s (sans-IO, property-tested).
//!
//! It opens nothing unless asked: the address is the user's (`127.0.0.1:9464` keeps it on
//! this machine). Stopping is by a flag the accept loop polls (every 100 ms).

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::app::metrics::{MetricsBoard, CONTENT_TYPE};
use crate::http::{parse_incoming, Incoming, IncomingMethod, MAX_INCOMING_HEAD};

/// Time a peer has to send its request, and to take the answer.
const IO_TIMEOUT: Duration = Duration::from_secs(2);
/// How often the accept loop looks at the stop flag when nobody connects.
const POLL: Duration = Duration::from_millis(100);
/// Connections accepted in one go while serving: the rest are closed unanswered.
const BACKLOG_LIMIT: usize = 8;

/// The running endpoint; stops (and joins its thread) when dropped.
pub struct MetricsServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl MetricsServer {
    /// Binds `addr` and starts serving `board`.
    pub fn start(addr: SocketAddr, board: Arc<MetricsBoard>) -> io::Result<MetricsServer> {
        let listener = TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("metrics".into())
            .spawn(move || serve(listener, &board, &flag))?;
        Ok(MetricsServer {
            addr,
            stop,
            thread: Some(thread),
        })
    }

    /// The bound address (the port, when 0 was asked for).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(listener: TcpListener, board: &Arc<MetricsBoard>, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        let mut batch = 0;
        loop {
            match listener.accept() {
                Ok((stream, _)) if batch < BACKLOG_LIMIT => {
                    batch += 1;
                    // A peer's misbehaviour ends its connection, never the endpoint.
                    let _ = answer(stream, board);
                }
                Ok(_) => {} // over the limit: dropped, closed unanswered
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(_) => break, // e.g. out of file descriptors: try again after a pause
            }
            if stop.load(Ordering::Relaxed) {
                return;
            }
        }
        std::thread::sleep(POLL);
    }
}

/// Reads one request head and answers it.
fn answer(mut stream: TcpStream, board: &Arc<MetricsBoard>) -> io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    let deadline = Instant::now() + IO_TIMEOUT;
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    let verdict = loop {
        match parse_incoming(&buf) {
            Incoming::Partial => {}
            other => break other,
        }
        // A peer trickling a byte at a time still has only IO_TIMEOUT in all.
        if Instant::now() >= deadline {
            return Ok(());
        }
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            return Ok(());
        }
        // Past the bound the parser refuses the head: nothing more needs keeping.
        let room = (MAX_INCOMING_HEAD + 1).saturating_sub(buf.len());
        buf.extend_from_slice(&chunk[..n.min(room)]);
    };
    let (status, body, head_only) = match verdict {
        Incoming::Refused(e) => (e.status(), String::new(), false),
        Incoming::Request(r) => match (r.method, r.path.as_str()) {
            (IncomingMethod::Other, _) => (405, String::new(), false),
            (m, "/metrics") => {
                let text = board.encode();
                board.scraped(Instant::now());
                (200, text, m == IncomingMethod::Head)
            }
            (m, _) => (404, String::new(), m == IncomingMethod::Head),
        },
        Incoming::Partial => return Ok(()),
    };
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        _ => "Request Header Fields Too Large",
    };
    let content_type = if status == 200 {
        CONTENT_TYPE
    } else {
        "text/plain; charset=utf-8"
    };
    let mut out = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Connection: close\r\n",
        body.len()
    );
    if status == 405 {
        out.push_str("Allow: GET, HEAD\r\n");
    }
    out.push_str("\r\n");
    if !head_only {
        out.push_str(&body);
    }
    stream.write_all(out.as_bytes())?;
    stream.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Shutdown;

    fn exchange(addr: SocketAddr, request: &[u8]) -> String {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(request).unwrap();
        let _ = s.shutdown(Shutdown::Write);
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out
    }

    #[test]
    fn serves_metrics_and_refuses_the_rest() {
        let board = MetricsBoard::new(1, None);
        let server = MetricsServer::start("127.0.0.1:0".parse().unwrap(), board.clone()).unwrap();
        let addr = server.addr();
        let ok = exchange(addr, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
        assert!(
            ok.contains("application/openmetrics-text") && ok.ends_with("# EOF\n"),
            "{ok}"
        );
        assert_eq!(board.scrape_count(), 1);
        let head = exchange(addr, b"HEAD /metrics HTTP/1.1\r\n\r\n");
        assert!(
            head.starts_with("HTTP/1.1 200") && head.ends_with("\r\n\r\n"),
            "{head}"
        );
        for (req, status) in [
            (&b"GET / HTTP/1.1\r\n\r\n"[..], "404"),
            (b"POST /metrics HTTP/1.1\r\n\r\n", "405"),
            (b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03 hello", "400"),
        ] {
            let r = exchange(addr, req);
            assert!(
                r.starts_with(&format!("HTTP/1.1 {status} ")),
                "{req:?}: {r}"
            );
        }
        let mut huge = b"GET /metrics HTTP/1.1\r\nX: ".to_vec();
        huge.resize(MAX_INCOMING_HEAD * 3, b'a');
        let r = exchange(addr, &huge);
        assert!(r.is_empty() || r.starts_with("HTTP/1.1 431 "), "{r}");
        // A peer that sends nothing is let go after the timeout; the next is still served.
        let idle = TcpStream::connect(addr).unwrap();
        let started = Instant::now();
        let ok = exchange(addr, b"GET /metrics HTTP/1.0\r\n\r\n");
        assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
        assert!(started.elapsed() < Duration::from_secs(5));
        drop(idle);
        drop(server);
        assert!(TcpStream::connect(addr).is_err(), "stopped when dropped");
    }
}
