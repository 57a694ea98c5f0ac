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

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use super::crawl_log::{self, CrawlLog, LogLine};
pub use super::output_config::{
    Echo, OutputConfig, OutputError, DEFAULT_CHECKPOINT_SECS, DEFAULT_GZIP_LEVEL,
    DEFAULT_WARC_MAX_SIZE,
};
use super::page_work::{self, Content, ContentJob, PageJob, PageWorker};
use super::revisit_record::{db_record, refers_to_last};
use super::text_sides::{TextOut, TextSides};
use super::warc::{self, BlockDeflater, RevisitProfile, WarcInfo, WarcWriter, WriterOptions};
use super::wet;
pub use super::writer::Written;
use super::writer::{
    DbSide, OwnedExchange, PartWarc, RefersTo, ResponseBytes, ToWriter, WarcThread, WriterSide,
};
use super::writer_gauges::WriterGauges;
use crate::codec::{put_bytes, secure_random};
use crate::content::NearDups;
use crate::crawl::sink::{Hop, Scheduled, Sink, Via};
use crate::fetcher::{FetchDone, PayloadDigest};
use crate::store::graph::outlinks::{self, OutlinksWriter};
use crate::store::state::journal_side::JournalSide;
use crate::store::state::near_dup_runs::NearDupRuns;
use crate::store::state::{crawl_state, url_events};
use crate::ReturnCode;

/// Running totals of what was stored.
#[derive(Clone, Debug, Default)]
pub struct Stored {
    /// Exchanges written to WARC (full responses and revisits).
    pub records: u64,
    /// Of those, revisit records: payloads stored before, written as the HTTP head only.
    pub revisits: u64,
    /// Content bytes of finished fetches.
    pub body_bytes: u64,
    pub log_lines: u64,
    /// Loop time spent storing the crawl's fetches ([`Sink::store`]: WARC records handed to
    /// the writer, the crawl.log line, journal and database records).
    pub time: Duration,
}

/// Payload digests remembered for revisit records. Past this many stored payloads, a
/// duplicate of a payload not remembered is stored in full: memory stays bounded (about
/// 150 bytes an entry) and nothing is lost.
const MAX_REVISIT_DIGESTS: usize = 500_000;

pub struct Output {
    /// The partition's page worker (`page_work`); `None`: all on the loop and the writer.
    worker: Option<PageWorker>,
    warc: WarcThread,
    dir: PathBuf,
    stored: Stored,
    /// Whether URL events go to the journal (a crawl that can be resumed).
    durable: bool,
    /// Journal records (framed) for the next message to the writer: URLs admitted since.
    journal: Vec<u8>,
    /// Reused: one journal record being encoded.
    rec: Vec<u8>,
    /// Payload digest → the URI and date of the response record that holds it.
    stored_payloads: HashMap<PayloadDigest, (Arc<str>, SystemTime)>,
    /// Reused: one crawl.log line.
    line: Vec<u8>,
    /// Deflates responses here, on the loop, while the writer is behind
    /// ([`DEFLATE_AHEAD_BACKLOG`]); made at the first use.
    deflater: Option<BlockDeflater>,
    gzip_level: u32,
    response_block_digest: bool,
    echo: Option<Echo>,
    /// Whether ended URLs get a crawl database record.
    db: bool,
    /// What the writer has written, for watchers.
    gauges: Arc<WriterGauges>,
    /// The next page's outlinks record (`Sink::outlinks`), sent with its WARC records.
    links: Vec<u8>,
    /// The text of HTML pages the writer puts beside the WARC files.
    text: TextOut,
    /// Keep credentials in request records (see [`OutputConfig::keep_auth`]).
    keep_auth: bool,
}

/// Messages waiting for the writer from which the loop deflates responses itself, when no
/// page worker shares the writer's deflate: the writer (deflate is most of its work) is then
/// the slower of the two threads, and sharing its work keeps both cores busy; below it, the
/// loop leaves deflate to the writer. With a page worker the loop never deflates: the loop
/// is the crawl's one serial thread, and taking deflate from the other two made the default
/// crawl both slower and dearer (compare_wget2, 3 alternating rounds: 10,337 against 10,859
/// pages/s, 0.114 against 0.110 ms CPU a page).
const DEFLATE_AHEAD_BACKLOG: usize = super::writer::WRITER_QUEUE / 2;
/// Pages waiting for the page worker below which it is given their deflate too: it keeps
/// up; past it the worker's fingerprints are the slower stream and deflate stays with the
/// writer.
const WORKER_DEFLATE_BACKLOG: usize = page_work::PAGE_QUEUE / 8;

impl Output {
    /// Creates DIR if needed, opens `crawl.log` and the first WARC file.
    pub fn create(config: &OutputConfig) -> Result<Output, OutputError> {
        let mut outputs = Output::create_partitioned(config, 1)?;
        outputs.pop().ok_or_else(|| OutputError {
            path: config.dir.clone(),
            err: io::Error::other("no output"),
        })
    }

    /// As [`Output::create`], for a crawl of `partitions` event loops: one output each, all
    /// writing one crawl.log and one journal through one writer thread, each its own WARC
    /// series (`PREFIX-pK-…` when there are several). Finish them all, partition 0's last: it
    /// waits for the writer to close the files.
    pub fn create_partitioned(
        config: &OutputConfig,
        partitions: usize,
    ) -> Result<Vec<Output>, OutputError> {
        let err = |path: &Path, err| OutputError {
            path: path.to_path_buf(),
            err,
        };
        std::fs::create_dir_all(&config.dir).map_err(|e| err(&config.dir, e))?;
        let log_path = config.dir.join("crawl.log");
        let log = if config.resume {
            CrawlLog::open_append(&log_path)
        } else {
            CrawlLog::create(&log_path)
        }
        .map_err(|e| err(&log_path, e))?;
        let first_seq = if config.resume {
            next_warc_seq(&config.dir).map_err(|e| err(&config.dir, e))?
        } else {
            0
        };
        if config.durable.is_some() {
            let state = crawl_state::state_dir(&config.dir);
            std::fs::create_dir_all(&state).map_err(|e| err(&state, e))?;
        }
        let journal = match &config.durable {
            Some(sync_every) => Some(
                JournalSide::open(config.dir.clone(), *sync_every, config.state_keys.clone())
                    .map_err(|e| err(&crawl_state::state_dir(&config.dir), e))?,
            ),
            None => None,
        };
        let mut seed = [0u8; 16];
        if !secure_random(&mut seed) {
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
            command_line: config.command_line.clone(),
            options: config.options.clone(),
        };
        let mut warcs = Vec::new();
        for part in 0..partitions.max(1) {
            let prefix = if partitions > 1 {
                format!("{}-p{part}", config.warc_prefix)
            } else {
                config.warc_prefix.clone()
            };
            // Record IDs stay unique across partitions: each its own seed.
            seed[15] = seed[15].wrapping_add(1);
            let warc = WarcWriter::create_with(
                &config.dir,
                &prefix,
                config.warc_max_size,
                config.gzip_level,
                info.clone(),
                seed,
                WriterOptions {
                    cdxj: config.cdxj,
                    first_seq,
                    response_block_digest: config.response_block_digest,
                },
            )
            .map_err(|e| err(&config.dir, e))?;
            let outlinks = OutlinksWriter::open(&config.dir, part, config.resume)
                .map_err(|e| err(&outlinks::path(&config.dir, part), e))?;
            warcs.push(PartWarc {
                warc,
                file_log: Vec::new(),
                outlinks,
                text: TextSides::new(config.text, &config.dir, info.clone(), config.gzip_level),
            });
        }
        let side = WriterSide {
            warcs,
            log,
            log_records: config.log_records,
            journal,
            handled: 0,
            committed: Arc::new(AtomicU64::new(0)),
            backlog: Arc::new(AtomicUsize::new(0)),
            db: config.crawl_db.clone().map(DbSide::new),
            warc_dirs: std::iter::once(config.dir.clone())
                .chain(config.previous.clone())
                .collect(),
            gauges: Arc::new(WriterGauges::default()),
        };
        let gauges = side.gauges.clone();
        let handles = WarcThread::start(side).map_err(|e| err(&config.dir, e))?;
        let mut workers = Vec::new();
        for (part, handle) in handles.iter().enumerate() {
            workers.push(if config.page_worker || config.text.any() {
                let mut near_dups =
                    NearDups::new(config.near_dup_ram).with_threshold(config.near_dup_threshold);
                // The index past its RAM share spills to unlinked files in DIR.
                let spill = NearDupRuns::in_output(&config.dir, &format!("w{part}"));
                near_dups.set_spill(config.near_dup_ram, Box::new(spill));
                let deflater = BlockDeflater::new(config.gzip_level, config.response_block_digest);
                Some(
                    PageWorker::spawn(
                        part,
                        deflater,
                        near_dups,
                        gauges.clone(),
                        handle.thread.clone(),
                    )
                    .map_err(|e| err(&config.dir, e))?,
                )
            } else {
                None
            });
        }
        Ok(handles
            .into_iter()
            .zip(workers)
            .map(|(warc, worker)| Output {
                worker,
                warc,
                gauges: gauges.clone(),
                dir: config.dir.clone(),
                stored: Stored::default(),
                durable: config.durable.is_some(),
                journal: Vec::new(),
                rec: Vec::with_capacity(512),
                stored_payloads: HashMap::new(),
                line: Vec::with_capacity(512),
                deflater: None,
                gzip_level: config.gzip_level,
                response_block_digest: config.response_block_digest,
                echo: config.echo.clone(),
                db: config.crawl_db.is_some(),
                links: Vec::new(),
                text: config.text,
                keep_auth: config.keep_auth,
            })
            .collect())
    }

    /// The request record's block: the request as sent, its credentials redacted unless
    /// kept. Only a request that carried some is scanned (the crawl says so), and the record
    /// is made of the redacted bytes, so its digest is theirs.
    fn request_record(&self, done: &FetchDone<'_>) -> Vec<u8> {
        let carried = done.request.authorization.is_some() || done.request.origin_headers;
        if !carried || self.keep_auth {
            return self.warc.buffer(done.request_bytes);
        }
        let mut out = self.warc.empty_buffer();
        crate::http::auth::redact_credentials(done.request_bytes, &mut out);
        out
    }

    /// `outcome status url` to the echo, if there is one (an echo that fails is let be: it
    /// is a view of crawl.log, which has the line).
    fn echo(&self, outcome: ReturnCode, status: u16, url: &str) {
        if let Some(Echo(to)) = &self.echo {
            let mut to = to.lock().unwrap_or_else(|p| p.into_inner());
            let _ = writeln!(to, "{:<22} {status:>3} {url}", outcome.name());
        }
    }

    /// Hands the journal records gathered so far to the writer and returns a mark:
    /// [`Output::committed`] reaches it once they are committed (survive a kill). Meant for
    /// an output of one partition (a cluster node).
    pub fn journal_mark(&mut self) -> io::Result<u64> {
        if !self.journal.is_empty() {
            let journal = std::mem::take(&mut self.journal);
            self.warc.send(ToWriter::Journal(journal))?;
        }
        Ok(self.warc.sent)
    }

    /// How many of this output's messages have their journal records committed.
    pub fn committed(&self) -> u64 {
        self.warc.committed.load(Ordering::Acquire)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// What the writer thread has written so far (shared by every partition's output).
    pub fn gauges(&self) -> Arc<WriterGauges> {
        self.gauges.clone()
    }

    pub fn stored(&self) -> &Stored {
        &self.stored
    }

    /// Stores one finished fetch: WARC records when a response head arrived (whatever the
    /// outcome, so nothing received is lost), and its log line. The caller gives the outcome
    /// to log (the crawl logs a content duplicate as `DuplicateContent`) and the payload
    /// digest ([`FetchDone::payload_digest`]). A try (`RetryLater`) is stored and logged, but
    /// its URL has not ended: the journal records no end for it. The log line and the WARC
    /// records are dated by the fetch's one wall time ([`FetchDone::at`]), as the crawl
    /// dates its database record.
    ///
    /// A complete 2xx response whose payload digest matches one already stored becomes a
    /// `revisit` record (identical-payload-digest profile) holding only the HTTP head.
    ///
    /// A revisit (`scheduled` with what the URL's last fetch left) that got a `304`, or the
    /// same payload in full, becomes a `revisit` record referring to the last fetch's
    /// payload record (server-not-modified and identical-payload-digest profiles).
    pub fn record_as(
        &mut self,
        done: &FetchDone<'_>,
        via: Via<'_>,
        outcome: ReturnCode,
        digest: Option<PayloadDigest>,
        scheduled: Option<&Scheduled<'_>>,
    ) -> io::Result<()> {
        self.echo(outcome, done.status(), done.request.url.as_str());
        self.line.clear();
        crawl_log::format_line(
            &mut self.line,
            &LogLine {
                time: done.at,
                outcome,
                status: done.status(),
                body_bytes: done.payload_len(),
                fetch_ms: done.timings.total.as_millis() as u64,
                url: done.request.url.as_str(),
                referrer: via.referrer,
                hop: Some(via.hop),
                digest,
                revisit: scheduled.map(|s| s.seen),
                relevance: scheduled.and_then(|s| s.relevance),
                sketch: scheduled.and_then(|s| s.sketch),
                noindex: scheduled.is_some_and(|s| s.noindex),
            },
        );
        if done.head.is_some() {
            // The fetch's one wall time, as its crawl.log line and database record have it.
            let date = done.at;
            let refers_to = match scheduled.and_then(|s| refers_to_last(done, s)) {
                Some(last) => Some(last),
                None => self.refers_to(done, digest, date),
            };
            let head_len = done.response.len() - done.payload.len();
            // A payload compressed already is stored in the record, not deflated again.
            let stored_from = done
                .head
                .filter(|h| warc::compressed_payload(h))
                .map(|_| head_len);
            let pending = self.page_work(done, scheduled, refers_to.is_none(), stored_from)?;
            // Only without a page worker (see DEFLATE_AHEAD_BACKLOG).
            let deflated = if refers_to.is_none()
                && done.spooled.is_none()
                && self.worker.is_none()
                && self.warc.backlog() >= DEFLATE_AHEAD_BACKLOG
            {
                let (level, digest) = (self.gzip_level, self.response_block_digest);
                let deflater = self
                    .deflater
                    .get_or_insert_with(|| BlockDeflater::new(level, digest));
                Some(Box::new(deflater.deflate(
                    done.response,
                    stored_from,
                    self.warc.empty_buffer(),
                )?))
            } else {
                None
            };
            let response = match done.shared_response {
                // The head alone: the payload is in the record referred to, or deflated.
                // (Deflated by the worker, it is shared whole: the writer takes the head.)
                _ if refers_to.is_some() || deflated.is_some() => {
                    ResponseBytes::Copied(self.warc.buffer(&done.response[..head_len]))
                }
                Some(shared) => ResponseBytes::Shared(shared.clone()),
                None => ResponseBytes::Copied(self.warc.buffer(done.response)),
            };
            let db_record = scheduled.filter(|_| self.db).map(|s| {
                Box::new(db_record(
                    done.request.url.as_str(),
                    s,
                    Some(done),
                    digest,
                    refers_to.as_deref(),
                ))
            });
            let ex = OwnedExchange {
                target_uri: done.request.url.as_str().to_string(),
                date,
                ip: done.peer.map(|p| p.ip()),
                request: self.request_record(done),
                response,
                payload_digest: digest,
                spooled: match refers_to {
                    None => done.spooled.map(|(spool, _)| spool.clone()),
                    Some(_) => None,
                },
                truncated: done.truncation(),
                log_line: self.warc.buffer(&self.line),
                sketch: scheduled.and_then(|s| s.sketch),
                refers_to,
                deflated,
                head_len,
                stored_from,
                pending,
                spare: None,
                db_record,
                links: std::mem::take(&mut self.links),
                status: done.status(),
                text: None,
            };
            self.stored.revisits += u64::from(ex.refers_to.is_some());
            let ends = outcome != ReturnCode::RetryLater;
            let journal =
                self.journal_with_done(done.request.url.as_str(), via, digest.as_ref(), ends);
            self.warc.send(ToWriter::Exchange(ex, journal))?;
            self.stored.records += 1;
        } else {
            // Only a scanned page has outlinks, and it has a response.
            self.links.clear();
            let line = self.warc.buffer(&self.line);
            let ends = outcome != ReturnCode::RetryLater;
            let journal = self.journal_with_done(done.request.url.as_str(), via, None, ends);
            let url = done.request.url.as_str();
            let db_record = scheduled
                .filter(|_| self.db)
                .map(|s| Box::new(db_record(url, s, None, None, None)));
            self.warc.send(ToWriter::Line(line, journal, db_record))?;
        }
        self.stored.body_bytes += done.payload_len();
        self.stored.log_lines += 1;
        Ok(())
    }

    /// Hands a page's fingerprint (when the crawl asks for it), its text (an HTML response
    /// when the files beside the WARC file want it: `text_sides`) and its deflate (a full
    /// response held in memory, `full`) to the partition's page worker. Returns where the
    /// writer takes the result, with the deflated block when the worker had the deflate.
    /// Deflate goes to the worker while it keeps up ([`WORKER_DEFLATE_BACKLOG`]), else it
    /// stays the writer's, so the two threads beside the loop share the work whichever of
    /// them a page's kind makes the slower. (The writer's own backlog says nothing here: it
    /// waits for the worker's results in order.)
    fn page_work(
        &mut self,
        done: &FetchDone<'_>,
        scheduled: Option<&Scheduled<'_>>,
        full: bool,
        stored_from: Option<usize>,
    ) -> io::Result<Option<page_work::PageResult>> {
        let Some(worker) = &self.worker else {
            return Ok(None);
        };
        let shared = done.shared_response.filter(|_| done.spooled.is_none());
        let deflate = full && shared.is_some() && worker.backlog() < WORKER_DEFLATE_BACKLOG;
        let in_response = shared.and_then(|r| page_work::range_in(r, done.content));
        let fingerprint = scheduled.is_some_and(|s| s.fingerprint);
        // A response record's page (not a revisit's) of HTML, as `spinneret extract` takes;
        // not a page whose robots directives say `noindex` (stored, but not for an index).
        let noindex = scheduled.is_some_and(|s| s.noindex);
        let text = match done.head {
            Some(h)
                if full
                    && !noindex
                    && (200..300).contains(&h.status)
                    && wet::is_html(h.content_type(), done.content) =>
            {
                self.text
            }
            _ => TextOut::default(),
        };
        let content = (fingerprint || text.any()).then(|| ContentJob {
            host: done.request.url.host_str().unwrap_or_default().into(),
            content: match in_response.clone() {
                Some(range) => Content::InResponse(range),
                None => Content::Copied(self.warc.buffer(done.content)),
            },
            fingerprint,
            text,
        });
        if !deflate && content.is_none() {
            return Ok(None);
        }
        let needs_response = deflate || content.is_some() && in_response.is_some();
        let job = PageJob {
            response: shared.filter(|_| needs_response).cloned(),
            deflate: deflate.then(|| self.warc.empty_buffer()),
            stored_from,
            content,
        };
        Ok(Some(worker.submit(job)?))
    }

    /// The journal records due with the next message: the URLs admitted since the last one,
    /// then (for a URL of the crawl, not robots.txt, that `ends`: not a try) this one's end.
    fn journal_with_done(
        &mut self,
        url: &str,
        via: Via<'_>,
        digest: Option<&PayloadDigest>,
        ends: bool,
    ) -> Vec<u8> {
        if !self.durable {
            return Vec::new();
        }
        if ends && via.hop != Hop::Prerequisite {
            self.rec.clear();
            url_events::push_done(&mut self.rec, url, digest);
            put_bytes(&mut self.journal, &self.rec);
        }
        let next = self.warc.empty_buffer();
        std::mem::replace(&mut self.journal, next)
    }

    /// Journals a URL entering the frontier (`entry`: the crawl's encoding of it). It goes to
    /// the writer with the next message, ahead of the end of the page that linked it.
    pub fn record_admitted(&mut self, url: &str, entry: &[u8]) {
        if self.durable {
            self.rec.clear();
            url_events::push_admitted(&mut self.rec, url, entry);
            put_bytes(&mut self.journal, &self.rec);
        }
    }

    /// Journals that a URL recorded as admitted here is held elsewhere now (see
    /// [`Sink::released`]).
    pub fn record_released(&mut self, url: &str) {
        if self.durable {
            self.rec.clear();
            url_events::push_released(&mut self.rec, url);
            put_bytes(&mut self.journal, &self.rec);
        }
    }

    /// For a complete 2xx payload stored before: where. Otherwise remembers this one (up to
    /// [`MAX_REVISIT_DIGESTS`]) and returns `None`.
    fn refers_to(
        &mut self,
        done: &FetchDone<'_>,
        digest: Option<PayloadDigest>,
        date: SystemTime,
    ) -> Option<Box<RefersTo>> {
        let digest = digest?;
        let complete_ok = done.outcome.is_success()
            && (200..300).contains(&done.status())
            && done.truncation().is_none()
            && done.payload_len() > 0;
        if !complete_ok {
            return None;
        }
        if let Some((uri, date)) = self.stored_payloads.get(&digest) {
            return Some(Box::new(RefersTo {
                profile: RevisitProfile::IdenticalPayload,
                uri: uri.clone(),
                date: *date,
                record: None,
                at: None,
            }));
        }
        if self.stored_payloads.len() < MAX_REVISIT_DIGESTS {
            self.stored_payloads
                .insert(digest, (Arc::from(done.request.url.as_str()), date));
        }
        None
    }

    /// Logs a URL that never became a fetch (unparsable seed, interrupted before issue),
    /// dated `at` (as its database record is).
    pub fn record_unfetched(
        &mut self,
        url: &str,
        via: Via<'_>,
        outcome: ReturnCode,
        at: SystemTime,
        scheduled: Option<&Scheduled<'_>>,
    ) -> io::Result<()> {
        self.echo(outcome, 0, url);
        self.line.clear();
        crawl_log::format_line(
            &mut self.line,
            &LogLine {
                time: at,
                outcome,
                status: 0,
                body_bytes: 0,
                fetch_ms: 0,
                url,
                referrer: via.referrer,
                hop: Some(via.hop),
                digest: None,
                revisit: None,
                relevance: None,
                sketch: None,
                noindex: false,
            },
        );
        let line = self.warc.buffer(&self.line);
        let journal = self.journal_with_done(url, via, None, true);
        let db_record = scheduled
            .filter(|_| self.db)
            .map(|s| Box::new(db_record(url, s, None, None, None)));
        self.warc.send(ToWriter::Line(line, journal, db_record))?;
        self.stored.log_lines += 1;
        Ok(())
    }

    /// Hands what is buffered to the OS (WARC, crawl.log, then the journal).
    pub fn flush(&mut self) -> io::Result<()> {
        if !self.journal.is_empty() {
            let journal = std::mem::take(&mut self.journal);
            self.warc.send(ToWriter::Journal(journal))?;
        }
        self.warc.send(ToWriter::Flush)
    }

    /// Hands this partition's per-host state (the crawl's encoding) to the writer, to replace
    /// the one saved before; stamped with the wall clock, as a restore needs its age.
    pub fn record_hosts(&mut self, state: &[u8]) -> io::Result<()> {
        if !self.durable {
            return Ok(());
        }
        let state = self.warc.buffer(state);
        self.warc.send(ToWriter::Hosts(SystemTime::now(), state))
    }

    /// Closes the current WARC file and syncs the log and the journal; says what was written.
    pub fn finish(mut self) -> io::Result<Written> {
        if let Some(w) = &mut self.worker {
            w.finish()?;
        }
        if !self.journal.is_empty() {
            let journal = std::mem::take(&mut self.journal);
            self.warc.send(ToWriter::Journal(journal))?;
        }
        self.warc.finish()
    }
}

impl Sink for Output {
    fn store(
        &mut self,
        done: &FetchDone<'_>,
        via: Via<'_>,
        outcome: ReturnCode,
        digest: Option<PayloadDigest>,
        scheduled: Option<&Scheduled<'_>>,
    ) -> io::Result<()> {
        // The crawl reads no clock: what storing costs the loop is measured here.
        let started = Instant::now();
        let stored = self.record_as(done, via, outcome, digest, scheduled);
        self.stored.time += started.elapsed();
        stored
    }

    fn log_unfetched(
        &mut self,
        url: &str,
        via: Via<'_>,
        outcome: ReturnCode,
        at: SystemTime,
        scheduled: Option<&Scheduled<'_>>,
    ) -> io::Result<()> {
        self.record_unfetched(url, via, outcome, at, scheduled)
    }

    fn outlinks(&mut self, page: u64, targets: &[u64]) {
        self.links.clear();
        outlinks::encode(&mut self.links, page, targets);
    }

    fn admitted(&mut self, url: &str, entry: &[u8]) {
        self.record_admitted(url, entry);
    }

    fn released(&mut self, url: &str) {
        self.record_released(url);
    }

    fn hosts_saved(&mut self, state: &[u8]) -> io::Result<()> {
        self.record_hosts(state)
    }

    fn flush(&mut self) -> io::Result<()> {
        Output::flush(self)
    }

    fn journal_mark(&mut self) -> io::Result<u64> {
        Output::journal_mark(self)
    }

    fn committed(&self) -> u64 {
        Output::committed(self)
    }
}

/// One past the highest sequence number of the WARC files in `dir` (any prefix): a resumed
/// crawl's files come after every earlier one, which is how a resume tells the files begun
/// after a commit mark (see `commit_mark::cut_back`).
fn next_warc_seq(dir: &Path) -> io::Result<u32> {
    let mut next = 0u32;
    for e in std::fs::read_dir(dir)? {
        if let Some((_, seq)) = e?.file_name().to_str().and_then(warc::parse_file_name) {
            next = next.max(seq.saturating_add(1));
        }
    }
    Ok(next)
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "localhost".to_string())
}

#[cfg(test)]
#[path = "output_tests.rs"]
mod tests;
