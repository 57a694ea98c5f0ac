//! The WARC writer thread (ARCHITECTURE §9): it owns the WARC files (one series per
//! partition), crawl.log and the journal, and writes them in that order, so a journal record
//! never reaches the disk before what it vouches for. [`Output`](super::output::Output) feeds
//! it through a bounded channel and gets byte buffers back for reuse. While records flow
//! it takes them in batches ([`super::linger`]): woken by the page worker once its pages are
//! done, or by the loop once [`WAKE_BACKLOG`] messages wait.

use std::io;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TryRecvError, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::{JoinHandle, Thread};
use std::time::{Duration, Instant, SystemTime};

use super::crawl_log::{self, CrawlLog};
use super::freshen;
use super::linger::{Linger, Wait, LINGER};
use super::page_work::PageResult;
use super::text_sides::{PageText, TextSides};
use super::warc::{self, DeflatedBlock, Exchange, Revisit, RevisitProfile, WarcWriter};
use super::writer_gauges::WriterGauges;
use crate::codec::{get_bytes, put_bytes};
use crate::content::Sketch;
use crate::crawl::revisit::{unix_secs, StoredCopy};
use crate::fetcher::spool::SpoolFile;
use crate::fetcher::{PayloadDigest, SharedBytes, Truncation};
use crate::store::graph::outlinks::OutlinksWriter;
use crate::store::state::commit_mark::CommitMark;
use crate::store::state::crawl_db::{CrawlDb, UrlRecord};
use crate::store::state::crawl_state;
use crate::store::state::journal_side::JournalSide;
use crate::store::state::url_events;

/// What a finished [`Output`](super::output::Output) wrote.
#[derive(Clone, Debug, Default)]
pub struct Written {
    /// WARC files, in order.
    pub warc_files: Vec<PathBuf>,
    /// Their CDXJ indexes (empty when
    /// [`OutputConfig::cdxj`](super::output::OutputConfig::cdxj) is off).
    pub indexes: Vec<PathBuf>,
}

/// The URI of the `resource` record holding a WARC file's crawl.log lines (the form wget
/// uses for its log).
pub const LOG_RECORD_URI: &str = "metadata://spinneret/crawl.log";
/// Log lines gathered before they are written as a record mid-file: bounds the writer's
/// memory (the lines, and their record formatted and compressed) when one file holds very
/// many records. A file then holds its log in several records, in order.
pub(super) const MAX_LOG_RECORD_BYTES: usize = 1 << 20;

/// Messages between two updates of the [`WriterGauges`] (commits update them too): a crawl
/// without a journal commits only at its end.
const GAUGE_EVERY: u64 = 256;

/// Exchanges queued for the writer thread before `record` waits.
pub(super) const WRITER_QUEUE: usize = 64;
/// Messages waiting at which the loop wakes a lingering writer (below the loop's
/// deflate-ahead backlog, which a linger should not reach).
const WAKE_BACKLOG: usize = WRITER_QUEUE / 4;
/// How long the writer lingers: longer than the page worker, whose wake-up once its batch is
/// done (all results ready) should come first.
const WRITER_LINGER: Duration = LINGER.saturating_mul(2);

/// A response's bytes on their way to the writer: the fetcher's own buffer, shared (a whole
/// response, not copied), or a copy (a head alone).
pub(super) enum ResponseBytes {
    Shared(Arc<SharedBytes>),
    Copied(Vec<u8>),
}

impl ResponseBytes {
    /// A copy's buffer, to reuse. A shared one goes back to the fetcher by itself, when its
    /// last holder drops it.
    fn into_buffer(self) -> Option<Vec<u8>> {
        match self {
            ResponseBytes::Copied(v) => Some(v),
            ResponseBytes::Shared(_) => None,
        }
    }
}

impl std::ops::Deref for ResponseBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            ResponseBytes::Shared(shared) => shared,
            ResponseBytes::Copied(v) => v,
        }
    }
}

/// An exchange with owned bytes, on its way to the writer thread.
pub(super) struct OwnedExchange {
    pub(super) target_uri: String,
    pub(super) date: SystemTime,
    pub(super) ip: Option<IpAddr>,
    pub(super) request: Vec<u8>,
    pub(super) response: ResponseBytes,
    pub(super) payload_digest: Option<PayloadDigest>,
    /// A payload too large for memory: the writer streams it from here.
    pub(super) spooled: Option<Arc<dyn SpoolFile>>,
    pub(super) truncated: Option<Truncation>,
    /// Set for a revisit: `response` is the HTTP head only, and this is the record that
    /// holds the payload.
    pub(super) refers_to: Option<Box<RefersTo>>,
    /// The exchange's crawl.log line, for the file's log record.
    pub(super) log_line: Vec<u8>,
    /// The page's sketch, for its response record's CDXJ line.
    pub(super) sketch: Option<Sketch>,
    /// The response deflated ahead of the writer (by the page worker, or on the loop while
    /// the writer was behind): only `response[..head_len]` is written with it.
    pub(super) deflated: Option<Box<DeflatedBlock>>,
    /// The length of the response's HTTP head.
    pub(super) head_len: usize,
    /// `Some(head_len)` when the payload is compressed already: stored, not deflated again.
    pub(super) stored_from: Option<usize>,
    /// The page worker's result for this exchange (`page_work`): its deflated block and
    /// sketch, taken when the writer reaches it.
    pub(super) pending: Option<PageResult>,
    /// A buffer the page worker is done with, to reuse.
    pub(super) spare: Option<Vec<u8>>,
    /// The URL's crawl database record (an ended URL, with a database): a full response's
    /// record position is filled in once written.
    pub(super) db_record: Option<Box<UrlRecord>>,
    /// The HTTP status, for the text beside the WARC file.
    pub(super) status: u16,
    /// The page's text (from the page worker), for the files beside the WARC file.
    pub(super) text: Option<PageText>,
    /// The page's outlinks record (`store::graph::outlinks`), or empty.
    pub(super) links: Vec<u8>,
}

/// The record a revisit refers to, and why it is a revisit.
#[derive(Clone, Debug)]
pub(super) struct RefersTo {
    pub(super) profile: RevisitProfile,
    /// Its `WARC-Target-URI`, `WARC-Date` and, where known, `WARC-Record-ID`.
    pub(super) uri: Arc<str>,
    pub(super) date: SystemTime,
    pub(super) record: Option<Arc<str>>,
    /// The record's WARC file name and offset, where known: a 304's revisit carries that
    /// record's head, freshened (`freshen`).
    pub(super) at: Option<(Arc<str>, u64)>,
}

// An exchange is most messages, moved once through a channel of `WRITER_QUEUE` slots:
// boxing it would add an allocation per page to save a few KiB of channel.
#[allow(clippy::large_enum_variant)]
pub(super) enum ToWriter {
    /// WARC records, then the crawl.log line, then `journal` (framed journal records).
    Exchange(OwnedExchange, Vec<u8>),
    /// A crawl.log line without WARC records, then `journal`, and the URL's crawl
    /// database record.
    Line(Vec<u8>, Vec<u8>, Option<Box<UrlRecord>>),
    /// Journal records only.
    Journal(Vec<u8>),
    /// The partition's per-host state (the crawl's encoding), saved at this wall-clock time;
    /// it replaces the one saved before (a crawl that is not durable has nowhere to keep it).
    Hosts(SystemTime, Vec<u8>),
    Flush,
}

/// Journal records are committed (handed to the OS after the WARC and crawl.log bytes they
/// vouch for) at least this often while records arrive...
pub(super) const COMMIT_DELAY: Duration = Duration::from_millis(20);
/// ...and after this many messages: with the writer queue, this bounds the fetches a kill can
/// lose (and so fetch again on resume).
pub(super) const COMMIT_MESSAGES: usize = 32;

/// Crawl database records are committed once this many wait...
pub(super) const DB_BATCH: usize = 2048;
/// ...or once the oldest has waited this long (a continuous crawl reads the due index, so
/// a record should not wait long), at a journal commit; durably at the journal's fsyncs.
pub(super) const DB_COMMIT_DELAY: Duration = Duration::from_millis(500);

/// The writer's side of the crawl database: records waiting for their batch. A batch is
/// committed right after the journal commit that holds the records' `U` copies, so the
/// database is never ahead of its log: a kill takes back at most what the journal replays.
pub(crate) struct DbSide {
    db: Arc<CrawlDb>,
    /// Per record waiting: its URL, due time and where its value ends in `values`; each
    /// value is encoded once, for the journal's copy and the database alike.
    pending: Vec<(String, u64, usize)>,
    values: Vec<u8>,
    first_pending: Option<Instant>,
    /// Reused: one record's journal record.
    rec: Vec<u8>,
}

impl DbSide {
    pub(crate) fn new(db: Arc<CrawlDb>) -> DbSide {
        DbSide {
            db,
            pending: Vec::new(),
            values: Vec::new(),
            first_pending: None,
            rec: Vec::new(),
        }
    }

    fn due(&self) -> bool {
        self.pending.len() >= DB_BATCH
            || self
                .first_pending
                .is_some_and(|t| t.elapsed() >= DB_COMMIT_DELAY)
    }

    /// Commits the waiting records: `durable`, for good (fsynced); otherwise visible to
    /// readers now and written for good by a later durable commit.
    fn commit(&mut self, durable: bool) -> io::Result<()> {
        if self.pending.is_empty() && !durable {
            return Ok(());
        }
        let mut batch = self.db.write();
        let mut start = 0;
        for (url, due, end) in &self.pending {
            batch.put_encoded(url, *due, &self.values[start..*end]);
            start = *end;
        }
        batch.commit_with(durable).map_err(io::Error::other)?;
        self.pending.clear();
        self.values.clear();
        self.first_pending = None;
        Ok(())
    }

    /// Adds a record to the next batch; returns where its value bytes begin in `values`.
    fn push(&mut self, record: UrlRecord) -> usize {
        let start = self.values.len();
        record.encode_value(&mut self.values);
        let due = record.due();
        self.pending.push((record.url, due, self.values.len()));
        self.first_pending.get_or_insert_with(Instant::now);
        start
    }
}

/// What the writer thread owns: the WARC writer, crawl.log and the journal, written in that
/// order so that a journal record never reaches the disk before what it says was stored.
pub(super) struct WriterSide {
    /// One WARC series per partition of the crawl (one, unless `--loops`).
    pub(super) warcs: Vec<PartWarc>,
    pub(super) log: CrawlLog,
    pub(super) log_records: bool,
    pub(super) journal: Option<JournalSide>,
    /// Messages handled, and of them those whose journal records are committed (what
    /// [`Output::committed`] reads).
    pub(super) handled: u64,
    pub(super) committed: Arc<AtomicU64>,
    /// Messages sent and not yet handled, over all partitions: how far behind the writer is.
    pub(super) backlog: Arc<AtomicUsize>,
    /// The crawl database, when the crawl keeps one.
    pub(super) db: Option<DbSide>,
    /// Where referred-to records' WARC files are: this crawl's directory, then the previous
    /// crawl's (`--previous`).
    pub(super) warc_dirs: Vec<PathBuf>,
    /// What has been written, for watchers (`--metrics`).
    pub(super) gauges: Arc<WriterGauges>,
}

/// One partition's WARC files.
pub(super) struct PartWarc {
    pub(super) warc: WarcWriter,
    /// The crawl.log lines of the open file's records, with the log's header.
    pub(super) file_log: Vec<u8>,
    /// The partition's outlinks: a page's record is written before its crawl.log line and
    /// reaches the OS before crawl.log's bytes at every commit.
    pub(super) outlinks: OutlinksWriter,
    /// The open WARC file's text companions (`--text`, `--markdown`).
    pub(super) text: TextSides,
}

impl WriterSide {
    /// Writes one message; its crawl database record is taken out of it (the rest goes back
    /// to the loop's pools).
    fn handle(&mut self, part: usize, msg: &mut ToWriter) -> io::Result<()> {
        let rotates = self.warcs.get(part).is_some_and(|p| p.warc.rotation_due());
        if matches!(msg, ToWriter::Exchange(..)) && rotates {
            // A WARC file is closed only with all it holds committed: on resume a closed
            // file is kept whole (see `commit_mark`). Its text companions close first.
            self.commit_marked()?;
            if let Some(p) = self.warcs.get_mut(part) {
                p.text.finish()?;
            }
        }
        self.handled += 1;
        let mut record = None;
        let journal: &[u8] = match msg {
            ToWriter::Exchange(ex, journal) => {
                take_page_work(ex)?;
                let p = self
                    .warcs
                    .get_mut(part)
                    .ok_or_else(|| io::Error::other("no such partition"))?;
                p.outlinks.append(&ex.links)?;
                let dirs = &self.warc_dirs;
                let written =
                    write_exchange(&mut p.warc, &mut p.file_log, self.log_records, ex, dirs)?;
                if let Some(text) = &ex.text {
                    let (uri, at, pos) = (&ex.target_uri, ex.date, &written.response);
                    p.text
                        .page(uri, at, ex.status, pos, &written.response_id, text)?;
                }
                self.log.write_line(&ex.log_line)?;
                if let Some(mut r) = ex.db_record.take() {
                    if ex.refers_to.is_none() && r.last.copy.is_none() && r.last.digest.is_some() {
                        // A full response with what the record keeps: this record holds the
                        // payload now. (A server error keeps the last fetch's, and its copy.)
                        r.last.copy = Some(StoredCopy {
                            uri: None,
                            date: unix_secs(ex.date),
                            record_id: Some(written.response_id.0),
                            file: written.response.file.to_string(),
                            offset: written.response.offset,
                        });
                    }
                    record = Some(r);
                }
                journal
            }
            ToWriter::Line(line, journal, r) => {
                self.log.write_line(line)?;
                record = r.take();
                journal
            }
            ToWriter::Journal(journal) => journal,
            ToWriter::Hosts(at, state) => {
                if let Some(j) = &self.journal {
                    crawl_state::save_hosts(j.out_dir(), part, *at, state)?;
                }
                &[]
            }
            ToWriter::Flush => {
                for p in &mut self.warcs {
                    p.outlinks.flush()?;
                    p.warc.flush()?;
                    p.text.flush(false)?;
                }
                self.log.flush()?;
                return self.commit(false);
            }
        };
        if let Some(j) = &mut self.journal {
            if !journal.is_empty() {
                j.pending.extend_from_slice(journal);
                j.pending_msgs += 1;
                j.first_pending.get_or_insert_with(Instant::now);
            }
        }
        if let (Some(db), Some(r)) = (&mut self.db, record) {
            let start = db.push(*r);
            if let (Some(j), Some((url, _, _))) = (&mut self.journal, db.pending.last()) {
                // The record's copy in the journal, committed before the database's.
                db.rec.clear();
                url_events::push_record(&mut db.rec, url, &db.values[start..]);
                put_bytes(&mut j.pending, &db.rec);
                j.pending_msgs += 1;
                j.first_pending.get_or_insert_with(Instant::now);
            }
            if self.journal.is_none() && db.due() {
                db.commit(false)?;
            }
        }
        if !self.uncommitted() {
            // Nothing of this message waits for a commit.
            self.committed.store(self.handled, Ordering::Release);
        }
        Ok(())
    }

    /// Commits now, with a mark even if no journal records wait.
    fn commit_marked(&mut self) -> io::Result<()> {
        if let Some(j) = &mut self.journal {
            j.needs_mark = true;
        }
        self.commit(false)
    }

    fn uncommitted(&self) -> bool {
        self.journal.as_ref().is_some_and(|j| j.pending_msgs > 0)
    }

    fn commit_due(&self) -> bool {
        self.journal.as_ref().is_some_and(|j| {
            j.pending_msgs >= COMMIT_MESSAGES
                || j.first_pending.is_some_and(|t| t.elapsed() >= COMMIT_DELAY)
        })
    }

    /// Hands WARC, crawl.log and then the pending journal records and a commit mark (their
    /// lengths, see `commit_mark`) to the OS (enough for a kill); every `sync_every`, fsyncs
    /// them in the same order (enough for a power cut).
    /// `last`: the run is ending: everything is synced, and the journal stays where it is
    /// (folding it now would only delay the exit; a resume reads it as it is).
    fn commit(&mut self, last: bool) -> io::Result<()> {
        self.publish_gauges();
        let Some(j) = &mut self.journal else {
            if let Some(db) = &mut self.db {
                db.commit(last)?;
            }
            return Ok(());
        };
        let sync = last || j.sync_due();
        if j.pending.is_empty() && !sync && !j.needs_mark {
            self.committed.store(self.handled, Ordering::Release);
            return Ok(());
        }
        for p in &mut self.warcs {
            if sync {
                p.outlinks.sync()?;
                p.warc.sync()?;
            } else {
                p.outlinks.flush()?;
                p.warc.flush()?;
            }
            p.text.flush(sync)?;
        }
        if sync {
            self.log.sync()?;
        } else {
            self.log.flush()?;
        }
        let mut input = j.pending.as_slice();
        // Bounded by the pending bytes: each step consumes one framed record.
        while let Some(rec) = get_bytes(&mut input) {
            j.writer.append(rec)?;
        }
        j.pending.clear();
        j.pending_msgs = 0;
        j.first_pending = None;
        let warcs: Vec<_> = self
            .warcs
            .iter()
            .map(|p| p.warc.open_file().map(|(n, len)| (n.to_string(), len)))
            .collect();
        let texts: Vec<_> = self
            .warcs
            .iter()
            .zip(&warcs)
            .map(|(p, w)| p.text.lengths(w.as_ref().map(|(n, _)| n.as_str())))
            .collect();
        let mark = CommitMark {
            log_len: self.log.bytes_written(),
            warcs,
            // Left out (the mark as older versions wrote it) when no partition has any.
            texts: match texts.iter().any(|&t| t != (0, 0)) {
                true => texts,
                false => Vec::new(),
            },
        };
        j.mark.clear();
        mark.encode(&mut j.mark);
        j.writer.append(&j.mark)?;
        j.needs_mark = false;
        if sync {
            j.writer.sync()?;
        } else {
            j.writer.flush()?;
        }
        // The database after its log: durably before the journal generation closes (a
        // compaction may delete it then), otherwise when a batch is due.
        if let Some(db) = &mut self.db {
            if sync || db.due() {
                db.commit(sync)?;
            }
        }
        if sync {
            j.last_sync = Instant::now();
            if !last {
                j.rotate()?;
            }
        }
        self.committed.store(self.handled, Ordering::Release);
        self.gauges.set_committed(SystemTime::now());
        Ok(())
    }

    /// Tells watchers what has been written (files, bytes).
    fn publish_gauges(&self) {
        let (files, bytes) = self.warcs.iter().fold((0, 0), |(f, b), p| {
            (f + p.warc.files().len() as u64, b + p.warc.bytes_written())
        });
        self.gauges
            .set_written(files, bytes, self.log.bytes_written());
    }

    /// The writer thread's loop: until the channel closes, then closes the files.
    fn run(
        mut self,
        rx: Receiver<(usize, ToWriter)>,
        back_tx: Vec<SyncSender<Vec<u8>>>,
        err_slot: &Mutex<Option<io::Error>>,
    ) -> io::Result<Written> {
        let fail = |e: io::Error| {
            let kind = e.kind();
            *err_slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
            // Dropping the receiver makes the loop's next send fail.
            io::Error::new(kind, "WARC writer stopped")
        };
        // The first mark: what this run starts from (a resume cuts back to no earlier).
        self.commit_marked().map_err(fail)?;
        let mut linger = Linger::new(WRITER_LINGER);
        loop {
            let (part, mut msg) = match rx.try_recv() {
                Ok(m) => m,
                Err(TryRecvError::Disconnected) => break,
                Err(TryRecvError::Empty) => match linger.empty(Instant::now()) {
                    Wait::Park(d) => {
                        if self.commit_due() {
                            self.commit(false).map_err(fail)?;
                        }
                        std::thread::park_timeout(d);
                        continue;
                    }
                    Wait::Block if self.uncommitted() => match rx.recv_timeout(COMMIT_DELAY) {
                        Ok(m) => m,
                        Err(RecvTimeoutError::Timeout) => {
                            self.commit(false).map_err(fail)?;
                            continue;
                        }
                        Err(RecvTimeoutError::Disconnected) => break,
                    },
                    Wait::Block => match rx.recv() {
                        Ok(m) => m,
                        Err(_) => break,
                    },
                },
            };
            linger.took(Instant::now());
            self.handle(part, &mut msg).map_err(fail)?;
            self.backlog.fetch_sub(1, Ordering::Relaxed);
            if self.handled % GAUGE_EVERY == 0 {
                self.publish_gauges();
            }
            if self.commit_due() {
                self.commit(false).map_err(fail)?;
            }
            let Some(back_tx) = back_tx.get(part) else {
                continue;
            };
            match msg {
                ToWriter::Exchange(ex, journal) => {
                    let response = ex.response.into_buffer();
                    let (req, log, links) = (ex.request, ex.log_line, ex.links);
                    for b in [Some(req), response, Some(log), Some(journal), Some(links)] {
                        b.into_iter().for_each(|b| recycle(back_tx, b));
                    }
                    if let Some(d) = ex.deflated {
                        recycle(back_tx, d.into_buffer());
                    }
                    if let Some(b) = ex.spare {
                        recycle(back_tx, b);
                    }
                }
                ToWriter::Line(line, journal, _) => {
                    recycle(back_tx, line);
                    recycle(back_tx, journal);
                }
                ToWriter::Journal(journal) => recycle(back_tx, journal),
                ToWriter::Hosts(_, state) => recycle(back_tx, state),
                ToWriter::Flush => {}
            }
        }
        self.commit(true).map_err(fail)?;
        if let Some(j) = &mut self.journal {
            j.reap(true).map_err(fail)?;
        }
        let mut written = Written::default();
        for mut p in self.warcs {
            p.outlinks.sync().map_err(fail)?;
            p.text.finish().map_err(fail)?;
            let mut warc = p.warc;
            if !p.file_log.is_empty() {
                warc.write_log_record(LOG_RECORD_URI, "text/plain", &p.file_log)
                    .map_err(fail)?;
            }
            let (files, indexes) = warc.finish_indexed().map_err(fail)?;
            written.warc_files.extend(files);
            written.indexes.extend(indexes);
        }
        self.log.sync().map_err(fail)?;
        Ok(written)
    }
}

/// Buffers waiting to be reused: more are dropped, so the pool never grows with the crawl
/// (the writer hands back more buffers than the loop takes: messages carry up to four).
pub(super) const RECYCLED_BUFFERS: usize = 32;
/// A buffer larger than this is freed rather than pooled: one huge page must not stay.
pub(super) const RECYCLE_MAX_CAPACITY: usize = 256 * 1024;
/// Only buffers at least this large are pooled, and only copies at least this long take one:
/// malloc serves small ones from its per-thread cache, and a small pooled buffer handed a
/// page would be grown by `realloc`, which copies its whole old capacity.
pub(super) const RECYCLE_MIN_CAPACITY: usize = 4096;

/// Offers a buffer back to the loop; a small or huge one, or one the pool has no room for,
/// is freed.
pub(super) fn recycle(back: &SyncSender<Vec<u8>>, b: Vec<u8>) {
    if (RECYCLE_MIN_CAPACITY..=RECYCLE_MAX_CAPACITY).contains(&b.capacity()) {
        let _ = back.try_send(b);
    }
}

/// One partition's handle on the WARC writer thread and its channels.
pub(super) struct WarcThread {
    pub(super) tx: Option<SyncSender<(usize, ToWriter)>>,
    /// This handle's partition (its WARC series).
    pub(super) part: usize,
    /// Byte buffers coming back for reuse.
    pub(super) recycled: Receiver<Vec<u8>>,
    /// The thread, on partition 0's handle.
    pub(super) handle: Option<JoinHandle<io::Result<Written>>>,
    /// The thread, to wake it from a linger (on every handle).
    pub(super) thread: Option<Thread>,
    /// The writer's first error, kept for the caller once the thread has stopped.
    pub(super) error: Arc<Mutex<Option<io::Error>>>,
    /// Messages sent, and (from the writer) those whose journal records are committed.
    pub(super) sent: u64,
    pub(super) committed: Arc<AtomicU64>,
    pub(super) backlog: Arc<AtomicUsize>,
}

impl WarcThread {
    /// Starts the writer with one handle per partition of `side`.
    pub(super) fn start(mut side: WriterSide) -> io::Result<Vec<WarcThread>> {
        let (tx, rx) = mpsc::sync_channel::<(usize, ToWriter)>(WRITER_QUEUE);
        let error = Arc::new(Mutex::new(None));
        let committed = Arc::new(AtomicU64::new(0));
        side.committed = committed.clone();
        let backlog = side.backlog.clone();
        let mut back = Vec::new();
        let mut handles = Vec::new();
        for part in 0..side.warcs.len() {
            let (back_tx, recycled) = mpsc::sync_channel::<Vec<u8>>(RECYCLED_BUFFERS);
            back.push(back_tx);
            handles.push(WarcThread {
                tx: Some(tx.clone()),
                part,
                recycled,
                handle: None,
                thread: None,
                error: error.clone(),
                sent: 0,
                committed: committed.clone(),
                backlog: backlog.clone(),
            });
        }
        let err_slot = error.clone();
        let handle = std::thread::Builder::new()
            .name("warc-writer".into())
            .spawn(move || side.run(rx, back, &err_slot))?;
        for h in &mut handles {
            h.thread = Some(handle.thread().clone());
        }
        if let Some(first) = handles.first_mut() {
            first.handle = Some(handle);
        }
        Ok(handles)
    }

    /// Messages waiting for the writer, over all partitions.
    pub(super) fn backlog(&self) -> usize {
        self.backlog.load(Ordering::Relaxed)
    }

    /// A buffer back from the writer, or a new one.
    pub(super) fn empty_buffer(&self) -> Vec<u8> {
        let mut v = self.recycled.try_recv().unwrap_or_default();
        v.clear();
        v
    }

    /// `bytes` in a buffer of their own: a pooled one if it is large enough to be pooled.
    pub(super) fn buffer(&self, bytes: &[u8]) -> Vec<u8> {
        if bytes.len() < RECYCLE_MIN_CAPACITY {
            return bytes.to_vec();
        }
        let mut v = self.empty_buffer();
        if v.capacity() < bytes.len() {
            // A fresh one: growing this would copy its stale contents.
            v = Vec::with_capacity(bytes.len());
        }
        v.extend_from_slice(bytes);
        v
    }

    pub(super) fn send(&mut self, msg: ToWriter) -> io::Result<()> {
        // Counted before it is sent, so the writer's decrement never comes first.
        let waiting = self.backlog.fetch_add(1, Ordering::Relaxed) + 1;
        let urgent = matches!(msg, ToWriter::Flush);
        let sent = match &self.tx {
            Some(tx) => match tx.try_send((self.part, msg)) {
                Ok(()) => true,
                Err(TrySendError::Full(m)) => {
                    // Full: wake the writer before waiting for room.
                    self.wake();
                    tx.send(m).is_ok()
                }
                Err(TrySendError::Disconnected(_)) => false,
            },
            None => false,
        };
        if urgent || waiting >= WAKE_BACKLOG {
            self.wake();
        }
        if sent {
            self.sent += 1;
            Ok(())
        } else {
            Err(self.take_error())
        }
    }

    pub(super) fn take_error(&mut self) -> io::Error {
        self.error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .unwrap_or_else(|| io::Error::other("WARC writer stopped"))
    }

    /// Wakes the writer from a linger.
    fn wake(&self) {
        if let Some(t) = &self.thread {
            t.unpark();
        }
    }

    /// Partition 0's handle waits for the writer to close every file (after the other
    /// handles are finished or dropped); another's just lets go.
    pub(super) fn finish(&mut self) -> io::Result<Written> {
        drop(self.tx.take());
        // A lingering writer sees the end at once.
        self.wake();
        let Some(handle) = self.handle.take() else {
            return Ok(Written::default());
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

/// Waits for the page worker's result for `ex`, if it has one coming, and puts it in: the
/// deflated block, and the sketch into the exchange and its crawl.log line.
fn take_page_work(ex: &mut OwnedExchange) -> io::Result<()> {
    let Some(result) = ex.pending.take() else {
        return Ok(());
    };
    let done = result
        .recv()
        .map_err(|_| io::Error::other("page worker stopped"))??;
    if let Some(h) = done.sketch {
        crawl_log::set_sketch(&mut ex.log_line, &h);
        ex.sketch = Some(h);
    }
    if let Some(d) = done.deflated {
        ex.deflated = Some(Box::new(d));
    }
    ex.spare = done.spare;
    ex.text = done.text;
    Ok(())
}

/// Writes one exchange (or revisit), after closing the open file's log record when the
/// exchange will start a new file.
pub(super) fn write_exchange(
    warc: &mut WarcWriter,
    log: &mut Vec<u8>,
    log_records: bool,
    ex: &OwnedExchange,
    warc_dirs: &[PathBuf],
) -> io::Result<warc::Written> {
    if log_records && !log.is_empty() && (warc.rotation_due() || log.len() >= MAX_LOG_RECORD_BYTES)
    {
        warc.write_log_record(LOG_RECORD_URI, "text/plain", log)?;
        log.clear();
    }
    let written = match &ex.refers_to {
        None => warc.write_exchange_with_sketch(
            &Exchange {
                target_uri: &ex.target_uri,
                date: ex.date,
                ip: ex.ip,
                request: &ex.request,
                response: match ex.deflated {
                    Some(_) => ex.response.get(..ex.head_len).unwrap_or(&ex.response),
                    None => &ex.response,
                },
                payload_digest: ex.payload_digest,
                spooled: ex.spooled.as_deref(),
                truncated: ex.truncated.map(Into::into),
                deflated: ex.deflated.as_deref(),
                stored_from: ex.stored_from,
            },
            ex.sketch,
        )?,
        Some(to) => warc.write_revisit(&Revisit {
            profile: to.profile,
            target_uri: &ex.target_uri,
            date: ex.date,
            ip: ex.ip,
            request: &ex.request,
            response_head: freshened(to, &ex.response, warc_dirs)
                .as_deref()
                .unwrap_or(&ex.response),
            payload_digest: ex.payload_digest.unwrap_or_default(),
            refers_to_uri: &to.uri,
            refers_to_date: to.date,
            refers_to_record: to.record.as_deref(),
        })?,
    };
    if log_records {
        if log.is_empty() {
            log.extend_from_slice(crawl_log::HEADER.as_bytes());
        }
        log.extend_from_slice(&ex.log_line);
    }
    Ok(written)
}

/// For a 304's revisit, the referred-to record's head freshened by the 304 (`freshen`);
/// `None` (the 304's head is written as it came) when that record cannot be read.
fn freshened(to: &RefersTo, head: &[u8], dirs: &[PathBuf]) -> Option<Vec<u8>> {
    if to.profile != RevisitProfile::ServerNotModified {
        return None;
    }
    let (file, offset) = to.at.as_ref()?;
    let path = dirs.iter().find_map(|d| {
        [d.join(&**file), d.join(format!("{file}.open"))]
            .into_iter()
            .find(|p| p.is_file())
    })?;
    let stored = freshen::stored_head(&path, *offset).ok()??;
    Some(freshen::freshen(&stored, head))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn handle() -> (WarcThread, SyncSender<Vec<u8>>) {
        let (back, recycled) = mpsc::sync_channel(RECYCLED_BUFFERS);
        let thread = WarcThread {
            tx: None,
            part: 0,
            recycled,
            handle: None,
            thread: None,
            error: Arc::new(Mutex::new(None)),
            sent: 0,
            committed: Arc::new(AtomicU64::new(0)),
            backlog: Arc::new(AtomicUsize::new(0)),
        };
        (thread, back)
    }

    /// A shared response reads as its bytes and is never taken into the writer's pool: it
    /// goes back to the fetcher that received it, from its last holder (the writer here).
    #[test]
    fn shared_response_goes_back_to_the_fetcher_not_to_the_pool() {
        let page = crate::store::test_data::noise(3, 15_000);
        let (home, returned) = mpsc::sync_channel(1);
        let shared = Arc::new(SharedBytes::new(page.clone(), Some(home)));
        let at = shared.as_ptr();
        let held = ResponseBytes::Shared(shared.clone());
        assert_eq!(&*held, &page[..]);
        drop(shared);
        assert!(held.into_buffer().is_none(), "not the writer's to reuse");
        let back = returned.try_recv().expect("sent home");
        assert_eq!(back.as_ptr(), at);
        let copied = ResponseBytes::Copied(page.clone());
        assert_eq!(&*copied, &page[..]);
        assert_eq!(copied.into_buffer(), Some(page));
    }

    /// The pool holds page-sized buffers only, a page's copy reuses one that fits and never
    /// grows one that does not, and every copy holds exactly its bytes.
    #[test]
    fn pool_keeps_page_sized_buffers_and_copies_exactly() {
        let (thread, back) = handle();
        recycle(&back, Vec::with_capacity(100));
        recycle(&back, Vec::with_capacity(RECYCLE_MAX_CAPACITY + 1));
        assert!(
            thread.recycled.try_recv().is_err(),
            "small and huge are freed"
        );

        let page = crate::store::test_data::noise(7, 15_000);
        let mut pooled = Vec::with_capacity(20_000);
        let pooled_at = pooled.as_ptr();
        pooled.extend_from_slice(b"stale");
        recycle(&back, pooled);
        let small = thread.buffer(b"GET / HTTP/1.1\r\n\r\n");
        assert_eq!(small, b"GET / HTTP/1.1\r\n\r\n");
        let copy = thread.buffer(&page);
        assert_eq!(copy, page);
        assert_eq!(copy.as_ptr(), pooled_at, "the pooled buffer was reused");

        recycle(&back, Vec::with_capacity(RECYCLE_MIN_CAPACITY));
        let bigger = thread.buffer(&page);
        assert_eq!(bigger, page);
        assert!(
            thread.recycled.try_recv().is_err(),
            "the too-small one was taken"
        );
        assert!(thread.empty_buffer().is_empty());
    }
}
