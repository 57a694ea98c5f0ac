//! What becomes of a finished fetch on disk: WARC records, a `crawl.log` line, the counters.
//!
//! Both `fetch` and `crawl` write through an [`Output`], so the two commands store pages the
//! same way. The SHA-1 of the content goes to `crawl.log` (and is the crawl's content-seen
//! fingerprint). warcio digests the WARC payload as the bytes after the HTTP head exactly as
//! received (chunk framing and content coding included), so when those bytes are the content
//! (length-delimited, no content coding: the common page) one hash serves both; otherwise the
//! payload is hashed separately.
//!
//! WARC records are compressed, block-digested and written on a writer thread fed by a
//! bounded channel (ARCHITECTURE §9), so the event loop spends one copy per exchange instead of the
//! gzip and the block digest; byte buffers travel back to be reused. The channel bound is the
//! backpressure: if the disk or the compressor falls behind, the loop waits rather than
//! buffering without limit. A write error stops the writer and is returned by the next call.

use std::fmt;
use std::io;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::SystemTime;

use super::crawl_log::{CrawlLog, LogLine};
use super::warc::{Exchange, WarcInfo, WarcWriter};
use crate::crawl::sink::Sink;
use crate::fetcher::spool::SpoolFile;
use crate::fetcher::{FetchDone, PayloadDigest, Truncation};
use crate::ReturnCode;

/// Why the output directory could not be set up.
#[derive(Debug)]
pub struct OutputError {
    pub path: PathBuf,
    pub err: io::Error,
}

impl fmt::Display for OutputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot write to {}: {}", self.path.display(), self.err)
    }
}

impl std::error::Error for OutputError {}

/// How the WARC files are written.
#[derive(Clone, Debug)]
pub struct OutputConfig {
    pub dir: PathBuf,
    pub warc_prefix: String,
    pub warc_max_size: u64,
    pub gzip_level: u32,
    pub software: String,
}

/// Running totals of what was stored.
#[derive(Clone, Debug, Default)]
pub struct Stored {
    /// Exchanges written to WARC.
    pub records: u64,
    /// Content bytes of finished fetches.
    pub body_bytes: u64,
    pub log_lines: u64,
}

/// Exchanges queued for the writer thread before `record` waits.
const WRITER_QUEUE: usize = 64;

/// An exchange with owned bytes, on its way to the writer thread.
struct OwnedExchange {
    target_uri: String,
    date: SystemTime,
    ip: Option<IpAddr>,
    request: Vec<u8>,
    response: Vec<u8>,
    payload_digest: Option<PayloadDigest>,
    /// A payload too large for memory: the writer streams it from here.
    spooled: Option<Arc<dyn SpoolFile>>,
    truncated: Option<Truncation>,
}

enum ToWriter {
    Exchange(OwnedExchange),
    Flush,
}

/// The WARC writer thread and its channels.
struct WarcThread {
    tx: Option<SyncSender<ToWriter>>,
    /// Byte buffers coming back for reuse.
    recycled: Receiver<Vec<u8>>,
    handle: Option<JoinHandle<io::Result<Vec<PathBuf>>>>,
    /// The writer's first error, kept for the caller once the thread has stopped.
    error: Arc<Mutex<Option<io::Error>>>,
}

impl WarcThread {
    fn start(mut warc: WarcWriter) -> io::Result<WarcThread> {
        let (tx, rx) = mpsc::sync_channel::<ToWriter>(WRITER_QUEUE);
        let (back_tx, recycled) = mpsc::channel::<Vec<u8>>();
        let error = Arc::new(Mutex::new(None));
        let err_slot = error.clone();
        let handle = std::thread::Builder::new()
            .name("warc-writer".into())
            .spawn(move || {
                for msg in rx {
                    let res = match msg {
                        ToWriter::Exchange(ex) => {
                            let res = warc.write_exchange(&Exchange {
                                target_uri: &ex.target_uri,
                                date: ex.date,
                                ip: ex.ip,
                                request: &ex.request,
                                response: &ex.response,
                                payload_digest: ex.payload_digest,
                                spooled: ex.spooled.as_deref(),
                                truncated: ex.truncated.map(Into::into),
                            });
                            let _ = back_tx.send(ex.request);
                            let _ = back_tx.send(ex.response);
                            res.map(drop)
                        }
                        ToWriter::Flush => warc.flush(),
                    };
                    if let Err(e) = res {
                        let kind = e.kind();
                        *err_slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                        // Dropping the receiver makes the loop's next send fail.
                        return Err(io::Error::new(kind, "WARC writer stopped"));
                    }
                }
                warc.finish()
            })?;
        Ok(WarcThread {
            tx: Some(tx),
            recycled,
            handle: Some(handle),
            error,
        })
    }

    fn buffer(&self, bytes: &[u8]) -> Vec<u8> {
        let mut v = self.recycled.try_recv().unwrap_or_default();
        v.clear();
        v.extend_from_slice(bytes);
        v
    }

    fn send(&mut self, msg: ToWriter) -> io::Result<()> {
        let sent = match &self.tx {
            Some(tx) => tx.send(msg).is_ok(),
            None => false,
        };
        if sent {
            Ok(())
        } else {
            Err(self.take_error())
        }
    }

    fn take_error(&mut self) -> io::Error {
        self.error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .unwrap_or_else(|| io::Error::other("WARC writer stopped"))
    }

    fn finish(&mut self) -> io::Result<Vec<PathBuf>> {
        drop(self.tx.take());
        let Some(handle) = self.handle.take() else {
            return Err(io::Error::other("WARC writer already finished"));
        };
        match handle.join() {
            Ok(Ok(files)) => Ok(files),
            Ok(Err(_)) => Err(self.take_error()),
            Err(_) => Err(io::Error::other("WARC writer thread panicked")),
        }
    }
}

impl Drop for WarcThread {
    fn drop(&mut self) {
        // Records already queued are written and the file closed even on an early return.
        if self.handle.is_some() {
            let _ = self.finish();
        }
    }
}

pub struct Output {
    warc: WarcThread,
    log: CrawlLog,
    dir: PathBuf,
    stored: Stored,
}

impl Output {
    /// Creates DIR if needed, opens `crawl.log` and the first WARC file.
    pub fn create(config: &OutputConfig) -> Result<Output, OutputError> {
        let err = |path: &Path, err| OutputError {
            path: path.to_path_buf(),
            err,
        };
        std::fs::create_dir_all(&config.dir).map_err(|e| err(&config.dir, e))?;
        let log_path = config.dir.join("crawl.log");
        let log = CrawlLog::create(&log_path).map_err(|e| err(&log_path, e))?;
        let mut seed = [0u8; 16];
        if !crate::fetcher::tls::secure_random(&mut seed) {
            // Record IDs need only be unique, not secret: fall back to time and pid.
            let t = SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0);
            seed[..16].copy_from_slice(&t.to_le_bytes());
            seed[12..].copy_from_slice(&std::process::id().to_le_bytes());
        }
        let info = WarcInfo {
            software: config.software.clone(),
            hostname: hostname(),
            operator: None,
            description: None,
            ..WarcInfo::default()
        };
        let warc = WarcWriter::create(
            &config.dir,
            &config.warc_prefix,
            config.warc_max_size,
            config.gzip_level,
            info,
            seed,
        )
        .map_err(|e| err(&config.dir, e))?;
        let warc = WarcThread::start(warc).map_err(|e| err(&config.dir, e))?;
        Ok(Output {
            warc,
            log,
            dir: config.dir.clone(),
            stored: Stored::default(),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn stored(&self) -> &Stored {
        &self.stored
    }

    /// Stores one finished fetch: WARC request/response records when a response head arrived
    /// (whatever the outcome, so nothing received is lost), and its log line.
    pub fn record(&mut self, done: &FetchDone<'_>, referrer: Option<&str>) -> io::Result<()> {
        self.record_as(done, referrer, done.outcome, done.payload_digest())
    }

    /// As [`Output::record`], with the outcome to log and the content digest decided by the
    /// caller (the crawl logs a content duplicate as `DuplicateContent`).
    pub fn record_as(
        &mut self,
        done: &FetchDone<'_>,
        referrer: Option<&str>,
        outcome: ReturnCode,
        md5: Option<PayloadDigest>,
    ) -> io::Result<()> {
        if done.head.is_some() {
            // The caller's digest is the payload digest (FetchDone::payload_digest).
            let payload_digest = md5;
            let ex = OwnedExchange {
                target_uri: done.request.url.as_str().to_string(),
                date: done.sent_at.unwrap_or_else(SystemTime::now),
                ip: done.peer.map(|p| p.ip()),
                request: self.warc.buffer(done.request_bytes),
                response: self.warc.buffer(done.response),
                payload_digest,
                spooled: done.spooled.map(|(spool, _)| spool.clone()),
                truncated: done.truncation(),
            };
            self.warc.send(ToWriter::Exchange(ex))?;
            self.stored.records += 1;
        }
        self.stored.body_bytes += done.payload_len();
        self.log.write(&LogLine {
            time: SystemTime::now(),
            outcome,
            status: done.status(),
            body_bytes: done.payload_len(),
            fetch_ms: done.timings.total.as_millis() as u64,
            url: done.request.url.as_str(),
            referrer,
            digest: md5,
        })?;
        self.stored.log_lines += 1;
        Ok(())
    }

    /// Logs a URL that never became a fetch (unparsable seed, interrupted before issue).
    pub fn record_unfetched(
        &mut self,
        url: &str,
        referrer: Option<&str>,
        outcome: ReturnCode,
    ) -> io::Result<()> {
        self.log.write(&LogLine {
            time: SystemTime::now(),
            outcome,
            status: 0,
            body_bytes: 0,
            fetch_ms: 0,
            url,
            referrer,
            digest: None,
        })?;
        self.stored.log_lines += 1;
        Ok(())
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.warc.send(ToWriter::Flush)?;
        self.log.flush()
    }

    /// Closes the current WARC file and flushes the log; returns the WARC files written.
    pub fn finish(mut self) -> io::Result<Vec<PathBuf>> {
        self.log.flush()?;
        self.warc.finish()
    }
}

impl Sink for Output {
    fn store(
        &mut self,
        done: &FetchDone<'_>,
        referrer: Option<&str>,
        outcome: ReturnCode,
        digest: Option<PayloadDigest>,
    ) -> io::Result<()> {
        self.record_as(done, referrer, outcome, digest)
    }

    fn log_unfetched(
        &mut self,
        url: &str,
        referrer: Option<&str>,
        outcome: ReturnCode,
    ) -> io::Result<()> {
        self.record_unfetched(url, referrer, outcome)
    }
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "localhost".to_string())
}
