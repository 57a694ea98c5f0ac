//! The bench's test web: the `spinneret-testserver web` child process (the tools crate's
//! binary), found, started, read and stopped.
//!
//! A child process, so the figures the bench prints (CPU per page, peak RSS) are the
//! crawler's alone; a binary of its own, so the shipped `spinneret` carries no test web. It is
//! looked for beside the running `spinneret` (cargo builds both into `target/release/`),
//! unless `--testserver` or `SPINNERET_TESTSERVER` names it.

use std::ffi::OsStr;
use std::fmt;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use crate::app::cli::BenchArgs;

/// The server's file name, looked for beside the running `spinneret`.
pub const SERVER_NAME: &str = "spinneret-testserver";
/// The environment variable naming the server when it is not beside `spinneret`.
pub const SERVER_ENV: &str = "SPINNERET_TESTSERVER";
/// How long the bench waits for the test web to come up (it renders every page first).
const WEB_START_TIMEOUT: Duration = Duration::from_secs(120);
/// The child stops by itself after this even if its stdin stays open (it also stops when its
/// stdin closes, so nothing outlives a crashed bench).
const WEB_LIFETIME_SECS: u64 = 3600;

/// Why the test web's server was not found.
#[derive(Debug, PartialEq, Eq)]
pub enum NoServer {
    /// `--testserver` or `SPINNERET_TESTSERVER` (`by`) names no file.
    Given { path: PathBuf, by: &'static str },
    /// Nothing was named and there is none beside `spinneret`, in `dir`.
    NotBeside { dir: PathBuf },
}

impl fmt::Display for NoServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let build = |release: &str| {
            format!("`cargo build{release} -p spinneret-tools --bin {SERVER_NAME}`")
        };
        match self {
            NoServer::Given { path, by } => write!(
                f,
                "the test web's server {} (given by {by}) is not a file; build it: {}",
                path.display(),
                build(" --release")
            ),
            NoServer::NotBeside { dir } => {
                // Beside a debug spinneret, a debug server: the same profile's directory.
                let release = if dir.ends_with("debug") {
                    ""
                } else {
                    " --release"
                };
                write!(
                    f,
                    "bench runs the test web's server, `{SERVER_NAME}`, which is not beside this \
                     spinneret (in {}): build it with {}, or name it with --testserver PATH or \
                     {SERVER_ENV}",
                    dir.display(),
                    build(release)
                )
            }
        }
    }
}

impl std::error::Error for NoServer {}

/// Where the test web's server is: `flag` (`--testserver`), else `env`
/// (`SPINNERET_TESTSERVER`), else beside `exe` (the running `spinneret`).
pub fn locate(flag: Option<&Path>, env: Option<&OsStr>, exe: &Path) -> Result<PathBuf, NoServer> {
    let given = match (flag, env.filter(|v| !v.is_empty())) {
        (Some(path), _) => Some((path.to_path_buf(), "--testserver")),
        (None, Some(path)) => Some((PathBuf::from(path), SERVER_ENV)),
        (None, None) => None,
    };
    if let Some((path, by)) = given {
        return if path.is_file() {
            Ok(path)
        } else {
            Err(NoServer::Given { path, by })
        };
    }
    let dir = exe.parent().unwrap_or(Path::new("."));
    let beside = dir.join(SERVER_NAME);
    if beside.is_file() {
        Ok(beside)
    } else {
        Err(NoServer::NotBeside {
            dir: dir.to_path_buf(),
        })
    }
}

/// The ready line's `http_port=` and `dns=` (`http_port=PORT dns=IP:PORT pages=N`).
pub fn parse_ready(line: &str) -> Option<(u16, SocketAddr)> {
    let field = |name: &str| line.split_whitespace().find_map(|kv| kv.strip_prefix(name));
    Some((
        field("http_port=")?.parse().ok()?,
        field("dns=")?.parse().ok()?,
    ))
}

/// The running test web child.
pub struct WebChild {
    child: Child,
    stdin: Option<ChildStdin>,
    pub port: u16,
    pub dns: SocketAddr,
}

impl WebChild {
    /// Starts `server` serving the web `args` describe, writing the URLs a full crawl must
    /// fetch to `urls_out`, and waits until it is up.
    pub fn start(
        server: &Path,
        args: &BenchArgs,
        urls_out: &Path,
    ) -> Result<WebChild, Box<dyn std::error::Error>> {
        let mut child = Command::new(server)
            .arg("web")
            .args(["--hosts", &args.hosts.to_string()])
            .args(["--pages", &args.pages.to_string()])
            .args(["--page-kb", &args.page_kb.to_string()])
            .args(["--shape", &args.shape])
            .args(["--latency-ms", &args.latency_ms.to_string()])
            .args(["--lifetime", &WEB_LIFETIME_SECS.to_string()])
            .arg("--until-stdin-closes")
            .arg("--urls-out")
            .arg(urls_out)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("could not start {}: {e}", server.display()))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().ok_or("test web: no stdout")?;
        // Read the ready line on a helper thread so a hung child cannot hang us.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = match rx.recv_timeout(WEB_START_TIMEOUT) {
            Ok(l) if !l.is_empty() => l,
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("the test web ({}) did not start", server.display()).into());
            }
        };
        let (port, dns) =
            parse_ready(&line).ok_or_else(|| format!("test web: bad ready line {line:?}"))?;
        Ok(WebChild {
            child,
            stdin,
            port,
            dns,
        })
    }

    /// CPU time the child has used (Linux /proc), for the "never the bottleneck" figure.
    pub fn cpu(&self) -> Option<Duration> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).ok()?;
        // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
        let rest = &stat[stat.rfind(')')? + 2..];
        let f: Vec<&str> = rest.split_whitespace().collect();
        let ticks: u64 = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
        // SAFETY: sysconf has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        (hz > 0).then(|| Duration::from_secs_f64(ticks as f64 / hz as f64))
    }
}

impl Drop for WebChild {
    fn drop(&mut self) {
        drop(self.stdin.take()); // EOF: the child exits
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch directory holding a `spinneret` and, if asked, a server beside it.
    fn bin_dir(name: &str, with_server: bool) -> PathBuf {
        let dir = std::env::temp_dir()
            .join(format!("spinneret-locate-{name}-{}", std::process::id()))
            .join("release");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("spinneret"), b"").unwrap();
        if with_server {
            std::fs::write(dir.join(SERVER_NAME), b"").unwrap();
        }
        dir
    }

    #[test]
    fn the_server_beside_spinneret_unless_one_is_named() {
        let dir = bin_dir("beside", true);
        let exe = dir.join("spinneret");
        assert_eq!(locate(None, None, &exe), Ok(dir.join(SERVER_NAME)));
        assert_eq!(
            locate(None, Some(OsStr::new("")), &exe),
            Ok(dir.join(SERVER_NAME)),
            "an empty variable names nothing"
        );
        // Named: that one, the flag before the variable, even with one beside.
        let named = dir.join("other-server");
        std::fs::write(&named, b"").unwrap();
        assert_eq!(
            locate(None, Some(named.as_os_str()), &exe),
            Ok(named.clone())
        );
        assert_eq!(
            locate(Some(&named), Some(OsStr::new("/nowhere")), &exe),
            Ok(named.clone())
        );
        let missing = dir.join("missing");
        assert_eq!(
            locate(None, Some(missing.as_os_str()), &exe),
            Err(NoServer::Given {
                path: missing.clone(),
                by: SERVER_ENV
            })
        );
        assert_eq!(
            locate(Some(&missing), None, &exe),
            Err(NoServer::Given {
                path: missing,
                by: "--testserver"
            })
        );
        let _ = std::fs::remove_dir_all(dir.parent().unwrap());
    }

    #[test]
    fn a_missing_server_says_how_to_build_it() {
        let dir = bin_dir("missing", false);
        let err = locate(None, None, &dir.join("spinneret")).unwrap_err();
        assert_eq!(err, NoServer::NotBeside { dir: dir.clone() });
        let text = err.to_string();
        assert!(
            text.contains("cargo build --release -p spinneret-tools --bin spinneret-testserver"),
            "{text}"
        );
        assert!(
            text.contains("--testserver PATH") && text.contains(SERVER_ENV),
            "{text}"
        );
        // A debug spinneret is told to build a debug server, beside it.
        let debug = NoServer::NotBeside {
            dir: PathBuf::from("/src/target/debug"),
        };
        assert!(debug
            .to_string()
            .contains("`cargo build -p spinneret-tools --bin spinneret-testserver`"));
        let _ = std::fs::remove_dir_all(dir.parent().unwrap());
    }

    #[test]
    fn the_ready_line_gives_the_port_and_the_dns_server() {
        assert_eq!(
            parse_ready("http_port=4321 dns=127.0.0.1:5353 pages=22000\n"),
            Some((4321, "127.0.0.1:5353".parse().unwrap()))
        );
        assert_eq!(parse_ready("http_port=4321 pages=1"), None);
        assert_eq!(parse_ready("unknown flag --until-stdin-closes"), None);
    }
}
