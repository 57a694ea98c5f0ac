//! What becomes of a finished fetch on disk: WARC records, a `crawl.log` line, the counters.
//!
//! Both `fetch` and `crawl` write through an [`Output`], so the two commands store pages the
//! same way. The MD5 of the content goes to `crawl.log` (and is the crawl's content-seen
//! fingerprint). warcio digests the WARC payload as the bytes after the HTTP head exactly as
//! received (chunk framing and content coding included), so when those bytes are the content
//! (length-delimited, no content coding: the common page) one hash serves both; otherwise the
//! payload is hashed separately.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use md5::{Digest, Md5};

use crate::crawl_log::{CrawlLog, LogLine};
use crate::fetch::FetchDone;
use crate::warc::{Exchange, WarcInfo, WarcWriter};
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

pub struct Output {
    warc: WarcWriter,
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
        if !crate::tls::secure_random(&mut seed) {
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
    /// (whatever the outcome, so nothing received is lost), and its log line. Returns the MD5
    /// of the content when there was a response.
    pub fn record(
        &mut self,
        done: &FetchDone<'_>,
        referrer: Option<&str>,
    ) -> io::Result<Option<[u8; 16]>> {
        let md5 = content_digest(done);
        self.record_as(done, referrer, done.outcome, md5)?;
        Ok(md5)
    }

    /// As [`Output::record`], with the outcome to log and the content digest decided by the
    /// caller (the crawl logs a content duplicate as `DuplicateContent`).
    pub fn record_as(
        &mut self,
        done: &FetchDone<'_>,
        referrer: Option<&str>,
        outcome: ReturnCode,
        md5: Option<[u8; 16]>,
    ) -> io::Result<()> {
        if done.head.is_some() {
            let payload_digest = if done.payload == done.content {
                md5
            } else {
                Some(Md5::digest(done.payload).into())
            };
            self.warc.write_exchange(&Exchange {
                target_uri: done.request.url.as_str(),
                date: done.sent_at.unwrap_or_else(SystemTime::now),
                ip: done.peer.map(|p| p.ip()),
                request: done.request_bytes,
                response: done.response,
                payload_digest,
            })?;
            self.stored.records += 1;
        }
        self.stored.body_bytes += done.content.len() as u64;
        self.log.write(&LogLine {
            time: SystemTime::now(),
            outcome,
            status: done.status(),
            body_bytes: done.content.len() as u64,
            fetch_ms: done.timings.total.as_millis() as u64,
            url: done.request.url.as_str(),
            referrer,
            md5,
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
            md5: None,
        })?;
        self.stored.log_lines += 1;
        Ok(())
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.warc.flush()?;
        self.log.flush()
    }

    /// Closes the current WARC file and flushes the log; returns the WARC files written.
    pub fn finish(mut self) -> io::Result<Vec<PathBuf>> {
        self.log.flush()?;
        self.warc.finish()
    }
}

/// MD5 of a fetch's content, when a response head arrived.
pub fn content_digest(done: &FetchDone<'_>) -> Option<[u8; 16]> {
    done.head.map(|_| Md5::digest(done.content).into())
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "localhost".to_string())
}
