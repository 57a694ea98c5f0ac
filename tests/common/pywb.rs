//! pywb, the replay tool web archivists use, run on a loopback port over our WARC files: the
//! independent proof that what we write replays. Skipped (with a printed reason) when pywb is
//! not installed; in CI (CI=true) it must be.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long pywb may take to start answering.
const START_TIMEOUT: Duration = Duration::from_secs(60);

pub fn pywb_available() -> bool {
    super::program_available(
        "pywb",
        ("wb-manager", "--help"),
        "pip install pywb",
        "replay",
    )
}

/// A running `wayback` server with one collection, `coll`, holding `warcs` (WARC or WACZ
/// files).
pub struct Pywb {
    child: Child,
    pub port: u16,
    pub dir: PathBuf,
}

/// One replayed response.
pub struct Replayed {
    pub status: u16,
    pub head: String,
    pub body: Vec<u8>,
}

impl Pywb {
    pub fn start(dir: &Path, warcs: &[PathBuf]) -> Pywb {
        std::fs::create_dir_all(dir).unwrap();
        let run = |args: &[&str]| {
            let out = Command::new("wb-manager")
                .args(args)
                .current_dir(dir)
                .output()
                .expect("wb-manager");
            assert!(
                out.status.success(),
                "wb-manager {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        run(&["init", "coll"]);
        let mut add = vec!["add".to_string(), "coll".to_string()];
        // A WACZ is taken apart into the collection (pywb 2.8+), its index merged.
        if warcs
            .iter()
            .any(|p| p.extension().is_some_and(|e| e == "wacz"))
        {
            add.insert(1, "--unpack-wacz".to_string());
        }
        add.extend(warcs.iter().map(|p| p.to_string_lossy().into_owned()));
        run(&add.iter().map(String::as_str).collect::<Vec<_>>());
        let port = {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let child = Command::new("wayback")
            .args(["-b", "127.0.0.1", "-p", &port.to_string()])
            .current_dir(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("wayback");
        let p = Pywb {
            child,
            port,
            dir: dir.to_path_buf(),
        };
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(started.elapsed() < START_TIMEOUT, "pywb did not start");
            std::thread::sleep(Duration::from_millis(100));
        }
        p
    }

    /// `GET /coll/{path}` with `Connection: close`, read to the end within `limit`. A response
    /// that does not end within the limit (pywb waiting for bytes it announced) is an error.
    pub fn get(&self, path: &str, limit: Duration) -> Result<Replayed, String> {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).map_err(|e| e.to_string())?;
        s.set_read_timeout(Some(Duration::from_millis(250)))
            .unwrap();
        write!(
            s,
            "GET /coll/{path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n\r\n",
            self.port
        )
        .map_err(|e| e.to_string())?;
        let started = Instant::now();
        let mut data = Vec::new();
        let mut buf = [0u8; 65536];
        loop {
            if started.elapsed() > limit {
                return Err(format!(
                    "no end of response within {limit:?} ({} bytes so far)",
                    data.len()
                ));
            }
            match s.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => data.extend_from_slice(&buf[..n]),
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(e) => return Err(e.to_string()),
            }
        }
        let at = data
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .ok_or("no response head")?;
        let head = String::from_utf8_lossy(&data[..at]).into_owned();
        let status = head
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or("no status")?;
        let mut body = data[at + 4..].to_vec();
        if head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked")
        {
            body = dechunk(&body)?;
        }
        Ok(Replayed { status, head, body })
    }
}

impl Drop for Pywb {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn dechunk(mut b: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    // Bound: each pass consumes a size line.
    loop {
        let nl = b
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or("chunk line")?;
        let size_text = String::from_utf8_lossy(&b[..nl]);
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
            .map_err(|_| format!("chunk size {size_text:?}"))?;
        b = &b[nl + 2..];
        if size == 0 {
            return Ok(out);
        }
        if b.len() < size + 2 {
            return Err("short chunk".into());
        }
        out.extend_from_slice(&b[..size]);
        b = &b[size + 2..];
    }
}
