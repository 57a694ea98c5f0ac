//! What the app gives an [`super::output::Output`]: where and how to write (the output
//! directory, WARC naming and size, gzip level, which files and records), and why setting
//! it up failed.

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::text_sides::TextOut;
use crate::store::state::compaction::StateKeys;
use crate::store::state::crawl_db::CrawlDb;

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
    /// Give response records a `WARC-Block-Digest` (see
    /// [`super::warc::WriterOptions::response_block_digest`]).
    pub response_block_digest: bool,
    pub software: String,
    /// Write `NAME.cdxj` (pywb's index) beside each WARC file.
    pub cdxj: bool,
    /// Close each WARC file with a `resource` record of the crawl.log lines of its records.
    pub log_records: bool,
    /// The command line, for the warcinfo record.
    pub command_line: Option<String>,
    /// The effective options (name, value), for the warcinfo record.
    pub options: Vec<(String, String)>,
    /// Journal URL events in `DIR/crawl.state` so the crawl can be resumed, fsyncing WARC,
    /// crawl.log and journal this often (power-cut safety; a kill needs no fsync).
    pub durable: Option<Duration>,
    /// A durable crawl's URL → (local partition, URL-seen key): with it, the journal is
    /// folded into checkpoints as it rotates; without, it only grows.
    pub state_keys: Option<StateKeys>,
    /// Continue an earlier run's output: append to crawl.log, number WARC files after the
    /// existing ones.
    pub resume: bool,
    /// Also write each crawl.log line's outcome, status and URL here, a line each (`-v`:
    /// the app gives stderr).
    pub echo: Option<Echo>,
    /// Keep each ended URL's record here (ARCHITECTURE §9c): the writer thread puts it when
    /// the URL's WARC records are written, and journals it as the database's log.
    pub crawl_db: Option<Arc<CrawlDb>>,
    /// The previous crawl's directory (`--previous`), whose records revisits refer to.
    pub previous: Option<PathBuf>,
    /// Deflate response blocks and fingerprint pages on a worker thread per partition
    /// (`page_work`), off the event loop and the writer.
    pub page_worker: bool,
    /// RAM for each partition's near-duplicate index before it spills runs to `DIR`.
    pub near_dup_ram: usize,
    /// The resemblance from which a page is a near-duplicate.
    pub near_dup_threshold: f64,
    /// The text of HTML pages to write beside each WARC file (`text_sides`).
    pub text: TextOut,
    /// Keep `Authorization` and `Proxy-Authorization` values in request records
    /// (`--warc-keep-auth`); by default they are redacted (`http::auth::redact_credentials`).
    pub keep_auth: bool,
}

/// Where [`OutputConfig::echo`] writes: shared by the partitions of a crawl.
#[derive(Clone)]
pub struct Echo(pub Arc<std::sync::Mutex<dyn io::Write + Send>>);

impl fmt::Debug for Echo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Echo")
    }
}

/// Default [`OutputConfig::warc_max_size`]: WARC files of 1 GiB, as Heritrix writes.
pub const DEFAULT_WARC_MAX_SIZE: u64 = 1 << 30;
/// Default [`OutputConfig::gzip_level`]: the fastest, as the crawl's CPU is what binds it.
pub const DEFAULT_GZIP_LEVEL: u32 = 1;
/// Default [`OutputConfig::durable`] interval (`--checkpoint-secs`).
pub const DEFAULT_CHECKPOINT_SECS: u64 = 60;

impl OutputConfig {
    /// The defaults every command uses: CDXJ indexes and log records on.
    pub fn new(dir: PathBuf, warc_prefix: &str) -> OutputConfig {
        OutputConfig {
            dir,
            warc_prefix: warc_prefix.to_string(),
            warc_max_size: DEFAULT_WARC_MAX_SIZE,
            gzip_level: DEFAULT_GZIP_LEVEL,
            response_block_digest: false,
            software: format!("spinneret/{}", env!("CARGO_PKG_VERSION")),
            cdxj: true,
            log_records: true,
            command_line: None,
            options: Vec::new(),
            durable: None,
            state_keys: None,
            resume: false,
            echo: None,
            crawl_db: None,
            previous: None,
            page_worker: true,
            near_dup_ram: crate::content::near_dups::DEFAULT_NEAR_DUP_RAM,
            near_dup_threshold: crate::content::near_dups::DEFAULT_THRESHOLD,
            text: TextOut::default(),
            keep_auth: false,
        }
    }
}
