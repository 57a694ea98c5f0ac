//! A tiny blocking HTTP/1.1 client for the server tests; every read is bounded by a timeout.
//! And the ready line of a `spinneret-testserver` child.
#![allow(dead_code)]

use std::io::{self, BufRead, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

pub const IO_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest response a test reads.
const MAX_RESPONSE: usize = 64 * 1024 * 1024;

/// A `spinneret-testserver` child's first stdout line (`http_port=PORT …`), and its port.
pub fn ready_line(child: &mut std::process::Child) -> (String, u16) {
    let mut line = String::new();
    io::BufReader::new(child.stdout.take().expect("piped stdout"))
        .read_line(&mut line)
        .unwrap();
    let port = line
        .split_whitespace()
        .find_map(|f| f.strip_prefix("http_port="))
        .unwrap_or_else(|| panic!("no http_port= in {line:?}"))
        .parse()
        .unwrap();
    (line, port)
}

pub fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect_timeout(&addr, IO_TIMEOUT).expect("connect to test server");
    s.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    s.set_write_timeout(Some(IO_TIMEOUT)).unwrap();
    s
}

pub fn request(host: &str, target: &str) -> Vec<u8> {
    format!("GET {target} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: tools-test\r\n\r\n").into_bytes()
}

#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Reads one response to a GET (Content-Length, chunked, close-delimited or none) from `s`.
pub fn read_response<S: Read>(s: &mut S, buf: &mut Vec<u8>) -> io::Result<Resp> {
    let mut tmp = [0u8; 16384];
    let (status, headers, head_len) = loop {
        let mut hs = [httparse::EMPTY_HEADER; 64];
        let mut r = httparse::Response::new(&mut hs);
        if let httparse::Status::Complete(n) = r.parse(buf).map_err(io::Error::other)? {
            let headers = r
                .headers
                .iter()
                .map(|h| {
                    (
                        h.name.to_string(),
                        String::from_utf8_lossy(h.value).into_owned(),
                    )
                })
                .collect::<Vec<_>>();
            break (r.code.unwrap(), headers, n);
        }
        let n = s.read(&mut tmp)?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&tmp[..n]);
    };
    buf.drain(..head_len);
    let find = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    };
    // A 204 or 304 ends at its head, whatever its headers say (RFC 9112 §6.3).
    let body = if status == 204 || status == 304 {
        Vec::new()
    } else if let Some(len) = find("content-length") {
        let len: usize = len.trim().parse().unwrap();
        while buf.len() < len {
            let n = s.read(&mut tmp)?;
            if n == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            buf.extend_from_slice(&tmp[..n]);
        }
        buf.drain(..len).collect()
    } else if find("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        let mut body = Vec::new();
        loop {
            let line_end = loop {
                if let Some(p) = buf.windows(2).position(|w| w == b"\r\n") {
                    break p;
                }
                let n = s.read(&mut tmp)?;
                if n == 0 {
                    return Err(io::ErrorKind::UnexpectedEof.into());
                }
                buf.extend_from_slice(&tmp[..n]);
            };
            let size =
                usize::from_str_radix(std::str::from_utf8(&buf[..line_end]).unwrap().trim(), 16)
                    .unwrap();
            buf.drain(..line_end + 2);
            while buf.len() < size + 2 {
                let n = s.read(&mut tmp)?;
                if n == 0 {
                    return Err(io::ErrorKind::UnexpectedEof.into());
                }
                buf.extend_from_slice(&tmp[..n]);
            }
            body.extend_from_slice(&buf[..size]);
            buf.drain(..size + 2);
            if size == 0 {
                break body;
            }
        }
    } else {
        read_to_end(s, buf)?;
        std::mem::take(buf)
    };
    Ok(Resp {
        status,
        headers,
        body,
    })
}

/// Reads until EOF into `buf` (bounded by MAX_RESPONSE).
pub fn read_to_end<S: Read>(s: &mut S, buf: &mut Vec<u8>) -> io::Result<()> {
    let mut tmp = [0u8; 65536];
    loop {
        let n = s.read(&mut tmp)?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&tmp[..n]);
        assert!(buf.len() <= MAX_RESPONSE, "response too large for a test");
    }
}

pub fn get(addr: SocketAddr, host: &str, target: &str) -> Resp {
    let mut s = connect(addr);
    s.write_all(&request(host, target)).unwrap();
    read_response(&mut s, &mut Vec::new()).unwrap()
}
