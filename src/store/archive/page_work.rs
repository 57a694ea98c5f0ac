//! Per-page work off the event loop (ARCHITECTURE §9): a worker thread per partition takes
//! what a page's records need and the next fetch does not — the response block's deflate
//! (and block digest) and, for a scanned HTML page, its fingerprint (main text, sketch,
//! near-duplicate lookup: `content::NearDups`) and its text and Markdown for the files beside
//! the WARC file (`text_sides`, from the same main text) — in the order the pages were stored. The
//! writer thread takes each page's result when it reaches that page's message, so records,
//! crawl.log lines and journal records keep their order (and a resume what it relies on)
//! whatever the worker's pace; the event loop hands over pointers.
//!
//! Bounded: at most [`PAGE_QUEUE`] pages, and [`PAGE_QUEUE_BYTES`] of their bytes, wait for
//! the worker (past either the loop waits, as it does for the writer); each holds its
//! response, shared with the writer and not copied, and, for a content-encoded or spooled
//! page, a copy of its decoded content (up to `--max-scan-bytes`). The worker never waits
//! for the writer (each reply has a slot of its own), so neither can stall the other.
//!
//! Wake-ups are batched ([`super::linger`]): while pages flow, the worker that empties its
//! queue lingers rather than being woken by each page; the loop wakes it early once
//! [`WAKE_BACKLOG`] pages wait, and the worker, its queue empty, wakes the writer once for
//! all the pages it has just done.

use std::io;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TryRecvError, TrySendError};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::{JoinHandle, Thread};
use std::time::Instant;

use super::linger::{Linger, Wait, LINGER};
use super::text_sides::{PageText, TextOut};
use super::warc::{BlockDeflater, DeflatedBlock};
use super::writer_gauges::WriterGauges;
use crate::content::{markdown, MainText, NearDups, Sketch};
use crate::fetcher::SharedBytes;

/// Pages queued for the worker before the loop waits: as many as the writer's queue
/// (`writer::WRITER_QUEUE`), so a worker that keeps up never holds the loop back before the
/// writer would.
pub(super) const PAGE_QUEUE: usize = 64;
/// Bytes the queued pages may hold (responses and copied contents): 64 large pages
/// (`--max-scan-bytes` each) from a hostile site must not hold 256 MB. A page larger than
/// this alone is taken once the queue is empty.
pub(super) const PAGE_QUEUE_BYTES: usize = 16 << 20;
/// Pages waiting at which the loop wakes a lingering worker: a fast crawl's pages are not
/// held back by a linger, and the worker still takes them several at a time.
const WAKE_BACKLOG: usize = PAGE_QUEUE / 8;

/// What one page needs done.
pub(super) struct PageJob {
    /// The whole response (head and body) as received.
    pub(super) response: Option<Arc<SharedBytes>>,
    /// Deflate all of `response` into this (reused) buffer...
    pub(super) deflate: Option<Vec<u8>>,
    /// ...storing its payload from here on, compressed already (`warc::compressed_payload`).
    pub(super) stored_from: Option<usize>,
    pub(super) content: Option<ContentJob>,
}

/// An HTML page's main text to take: its fingerprint, its text, or both.
pub(super) struct ContentJob {
    /// Its host, for the template memory.
    pub(super) host: Box<str>,
    pub(super) content: Content,
    /// Sketch it and look it up among the partition's pages (`content::NearDups`).
    pub(super) fingerprint: bool,
    /// Its text and Markdown for the files beside the WARC file (`text_sides`).
    pub(super) text: TextOut,
}

/// Where a page's decoded content is.
pub(super) enum Content {
    /// In the response (no content coding): these bytes of it.
    InResponse(Range<usize>),
    /// Decoded into a buffer of its own (given back in [`PageDone::spare`]).
    Copied(Vec<u8>),
}

/// What the worker made of a page.
#[derive(Default)]
pub(super) struct PageDone {
    /// The main text's sketch (`None`: not asked for, or too little text).
    pub(super) sketch: Option<Sketch>,
    pub(super) deflated: Option<DeflatedBlock>,
    /// A copied content's buffer, to reuse.
    pub(super) spare: Option<Vec<u8>>,
    /// The page's text, when asked for.
    pub(super) text: Option<PageText>,
}

/// The writer's side of one page's result.
pub(super) type PageResult = Receiver<io::Result<PageDone>>;

/// A partition's worker thread.
pub(super) struct PageWorker {
    tx: Option<SyncSender<(PageJob, SyncSender<io::Result<PageDone>>)>>,
    handle: Option<JoinHandle<()>>,
    /// The worker thread, to wake it from a linger.
    thread: Thread,
    /// Pages queued and not yet done: how far behind the worker is.
    backlog: Arc<AtomicUsize>,
    bytes: Arc<ByteBudget>,
}

/// The bytes queued pages hold, and a wait for room ([`PAGE_QUEUE_BYTES`]).
#[derive(Default)]
struct ByteBudget {
    held: Mutex<Held>,
    freed: Condvar,
}

/// [`ByteBudget`]'s state under its lock.
#[derive(Default)]
struct Held {
    bytes: usize,
    /// Whether the loop waits for room: only then does a page done wake it (a condvar's
    /// notify is a system call even with nobody waiting, and the worker gives bytes back
    /// for every page).
    waiting: bool,
}

impl ByteBudget {
    /// Waits until `n` more bytes fit (or nothing is held), then holds them; `false`, holding
    /// nothing, once `alive` says the worker that gives bytes back is gone (so a dead worker
    /// cannot hang the loop). `wake` is called before each wait (the worker may linger).
    fn take(&self, n: usize, alive: impl Fn() -> bool, wake: impl Fn()) -> bool {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        while held.bytes > 0 && held.bytes + n > PAGE_QUEUE_BYTES {
            if !alive() {
                held.waiting = false;
                return false;
            }
            wake();
            held.waiting = true;
            held = self
                .freed
                .wait_timeout(held, std::time::Duration::from_millis(100))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        held.waiting = false;
        held.bytes += n;
        true
    }

    fn give_back(&self, n: usize) {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        held.bytes = held.bytes.saturating_sub(n);
        if held.waiting {
            self.freed.notify_all();
        }
    }
}

impl PageJob {
    /// The bytes this job keeps alive while queued.
    fn bytes(&self) -> usize {
        let response = self.response.as_deref().map_or(0, |r| r.len());
        let copied = match &self.content {
            Some(ContentJob {
                content: Content::Copied(v),
                ..
            }) => v.len(),
            _ => 0,
        };
        response + copied
    }
}

impl PageWorker {
    /// Starts the worker: `deflater` at the writer's level, `near_dups` the partition's
    /// fingerprint index, `gauges` where pages fingerprinted and near-duplicates are counted,
    /// `writer` the thread taking the results (woken once the worker's queue is empty).
    pub(super) fn spawn(
        part: usize,
        mut deflater: BlockDeflater,
        mut near_dups: NearDups,
        gauges: Arc<WriterGauges>,
        writer: Option<Thread>,
    ) -> io::Result<PageWorker> {
        let (tx, rx) =
            mpsc::sync_channel::<(PageJob, SyncSender<io::Result<PageDone>>)>(PAGE_QUEUE);
        let backlog = Arc::new(AtomicUsize::new(0));
        let left = backlog.clone();
        let bytes = Arc::new(ByteBudget::default());
        let freed = bytes.clone();
        let handle = std::thread::Builder::new()
            .name(format!("page-work-{part}"))
            .spawn(move || {
                let mut linger = Linger::new(LINGER);
                // Pages done since the writer was last woken.
                let mut done_since_wake = false;
                loop {
                    let (job, reply) = match rx.try_recv() {
                        Ok(m) => m,
                        Err(TryRecvError::Disconnected) => break,
                        Err(TryRecvError::Empty) => {
                            if std::mem::take(&mut done_since_wake) {
                                // One wake-up for the batch (the writer may be lingering
                                // rather than waiting on a result).
                                writer.iter().for_each(Thread::unpark);
                            }
                            match linger.empty(Instant::now()) {
                                Wait::Park(d) => {
                                    std::thread::park_timeout(d);
                                    continue;
                                }
                                Wait::Block => match rx.recv() {
                                    Ok(m) => m,
                                    Err(_) => break,
                                },
                            }
                        }
                    };
                    linger.took(Instant::now());
                    let held = job.bytes();
                    let done = work(job, &mut deflater, &mut near_dups, &gauges);
                    freed.give_back(held);
                    left.fetch_sub(1, Ordering::Relaxed);
                    // The writer gone (it failed): its error is the one reported.
                    let _ = reply.send(done);
                    done_since_wake = true;
                }
                writer.iter().for_each(Thread::unpark);
            })?;
        Ok(PageWorker {
            tx: Some(tx),
            thread: handle.thread().clone(),
            handle: Some(handle),
            backlog,
            bytes,
        })
    }

    /// Pages queued and not yet done.
    pub(super) fn backlog(&self) -> usize {
        self.backlog.load(Ordering::Relaxed)
    }

    /// Queues a page (waiting while [`PAGE_QUEUE`] are queued); the writer takes the result
    /// from the returned receiver.
    pub(super) fn submit(&self, job: PageJob) -> io::Result<PageResult> {
        let (reply, result) = mpsc::sync_channel(1);
        let stopped = || io::Error::other("page worker stopped");
        let tx = self.tx.as_ref().ok_or_else(stopped)?;
        let alive = || self.handle.as_ref().is_some_and(|h| !h.is_finished());
        if !self.bytes.take(job.bytes(), alive, || self.thread.unpark()) {
            return Err(stopped());
        }
        // Counted before it is sent, so the worker's decrement never comes first.
        let waiting = self.backlog.fetch_add(1, Ordering::Relaxed) + 1;
        match tx.try_send((job, reply)) {
            Ok(()) => {}
            Err(TrySendError::Full(m)) => {
                // The queue is full: wake the worker before waiting for room.
                self.thread.unpark();
                tx.send(m).map_err(|_| stopped())?;
            }
            Err(TrySendError::Disconnected(_)) => return Err(stopped()),
        }
        if waiting >= WAKE_BACKLOG {
            self.thread.unpark();
        }
        Ok(result)
    }

    /// Lets the worker finish what is queued, and waits for it.
    pub(super) fn finish(&mut self) -> io::Result<()> {
        drop(self.tx.take());
        // A lingering worker sees the end at once.
        self.thread.unpark();
        match self.handle.take().map(JoinHandle::join) {
            Some(Err(_)) => Err(io::Error::other("page worker panicked")),
            _ => Ok(()),
        }
    }
}

impl Drop for PageWorker {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

/// One page's work: its main text first (so a copied content's buffer is free), then its
/// deflate.
fn work(
    job: PageJob,
    deflater: &mut BlockDeflater,
    near_dups: &mut NearDups,
    gauges: &WriterGauges,
) -> io::Result<PageDone> {
    let mut done = PageDone::default();
    let response: &[u8] = job.response.as_deref().map_or(&[], |r| r);
    if let Some(c) = job.content {
        let html = match &c.content {
            Content::InResponse(range) => response.get(range.clone()).unwrap_or_default(),
            Content::Copied(v) => v,
        };
        near_dups.set_reader(c.text.any());
        if c.fingerprint {
            let print = near_dups.page(html, c.host.as_bytes());
            if let Some(e) = near_dups.take_error() {
                return Err(e);
            }
            if let Some(p) = print {
                gauges.count_fingerprint(p.near_duplicate);
                done.sketch = Some(p.sketch);
            }
        } else if c.text.any() {
            near_dups.extract(html, c.host.as_bytes());
        }
        if c.text.any() {
            done.text = Some(page_text(near_dups.main_text(), html, c.text));
        }
        if let Content::Copied(v) = c.content {
            done.spare = Some(v);
        }
    }
    if let Some(buf) = job.deflate {
        done.deflated = Some(deflater.deflate(response, job.stored_from, buf)?);
    }
    Ok(done)
}

/// What of `main` (the main text of `html`) the files beside the WARC file take.
fn page_text(main: &MainText, html: &[u8], want: TextOut) -> PageText {
    let mut t = PageText::default();
    // Sized once: the text of a text-heavy page is nearly the page, and growing from empty
    // copied it a dozen times.
    if want.wet {
        t.text.reserve(html.len());
        main.reader_text(&mut t.text);
    }
    if want.markdown {
        t.markdown.reserve(html.len());
        markdown(main, html, &mut t.markdown);
        main.title(html, &mut t.title);
        t.lang.extend_from_slice(main.lang());
    }
    t
}

/// Where `inner` lies in `outer`, when it is a part of it (the same memory, not equal bytes).
pub(super) fn range_in(outer: &[u8], inner: &[u8]) -> Option<Range<usize>> {
    let (o, i) = (outer.as_ptr() as usize, inner.as_ptr() as usize);
    (i >= o && i + inner.len() <= o + outer.len()).then(|| i - o..i - o + inner.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content::near_dups::DEFAULT_NEAR_DUP_RAM;
    use flate2::read::DeflateDecoder;
    use std::io::Read;

    fn page(article: &str) -> Vec<u8> {
        let words: String = (0..200).map(|i| format!("{article}{} ", i % 37)).collect();
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<html><body><nav>Home</nav>\
             <article><p>{words}</p></article></body></html>"
        )
        .into_bytes()
    }

    /// A page whose response block is to be deflated, and nothing else.
    fn deflate_only(response: &Arc<SharedBytes>) -> PageJob {
        PageJob {
            response: Some(response.clone()),
            deflate: Some(Vec::new()),
            content: None,
            stored_from: None,
        }
    }

    fn worker() -> (PageWorker, Arc<WriterGauges>) {
        let gauges = Arc::new(WriterGauges::default());
        let w = PageWorker::spawn(
            0,
            BlockDeflater::new(1, false),
            NearDups::new(DEFAULT_NEAR_DUP_RAM),
            gauges.clone(),
            None,
        )
        .unwrap();
        (w, gauges)
    }

    /// Results come back per page, whatever is asked of each; the deflated block inflates
    /// to the response, and a copy of a page is found a near-duplicate of it.
    #[test]
    fn each_page_gets_its_own_result_in_order() {
        let (w, gauges) = worker();
        let a = Arc::new(SharedBytes::new(page("alpha"), None));
        let body = a.iter().position(|&b| b == b'<').unwrap();
        let in_response = |r: &Arc<SharedBytes>| ContentJob {
            host: "a.test".into(),
            content: Content::InResponse(body..r.len()),
            fingerprint: true,
            text: TextOut::default(),
        };
        let first = w
            .submit(PageJob {
                response: Some(a.clone()),
                deflate: Some(Vec::new()),
                content: Some(in_response(&a)),
                stored_from: None,
            })
            .unwrap();
        let copy = w
            .submit(PageJob {
                response: None,
                deflate: None,
                content: Some(ContentJob {
                    host: "b.test".into(),
                    content: Content::Copied(a[body..].to_vec()),
                    fingerprint: true,
                    text: TextOut {
                        wet: true,
                        markdown: true,
                    },
                }),
                stored_from: None,
            })
            .unwrap();
        let text_only = w
            .submit(PageJob {
                response: Some(a.clone()),
                deflate: None,
                content: Some(ContentJob {
                    fingerprint: false,
                    text: TextOut {
                        wet: true,
                        markdown: false,
                    },
                    ..in_response(&a)
                }),
                stored_from: None,
            })
            .unwrap();
        let plain = w.submit(deflate_only(&a)).unwrap();
        let first = first.recv().unwrap().unwrap();
        let copy = copy.recv().unwrap().unwrap();
        let text_only = text_only.recv().unwrap().unwrap();
        let plain = plain.recv().unwrap().unwrap();
        assert!(first.sketch.is_some());
        assert!(first.text.is_none(), "no text asked");
        assert_eq!(copy.sketch, first.sketch);
        assert!(copy.spare.is_some(), "a copied content's buffer comes back");
        let text = copy.text.unwrap();
        assert!(text.text.starts_with(b"alpha0 alpha1"), "{text:?}");
        assert!(
            !text.text.windows(4).any(|w| w == b"Home"),
            "the menu is not main text"
        );
        assert!(text.markdown.starts_with(b"alpha0 alpha1"), "{text:?}");
        assert_eq!(text_only.sketch, None, "no fingerprint asked");
        assert_eq!(text_only.text.unwrap().text, text.text);
        assert_eq!(plain.sketch, None, "no fingerprint asked");
        let block = plain.deflated.unwrap().into_buffer();
        let mut inflated = Vec::new();
        DeflateDecoder::new(&block[..])
            .read_to_end(&mut inflated)
            .unwrap();
        assert_eq!(
            &inflated[..a.len()],
            &a[..],
            "the response, then the record's end"
        );
        let figures = gauges.read();
        assert_eq!(
            (figures.pages_fingerprinted, figures.near_duplicates),
            (2, 1)
        );
    }

    #[test]
    fn range_in_finds_a_part_and_not_an_equal_copy() {
        let outer = b"0123456789".to_vec();
        assert_eq!(range_in(&outer, &outer[3..7]), Some(3..7));
        assert_eq!(range_in(&outer, &outer[10..]), Some(10..10));
        let copy = outer[3..7].to_vec();
        assert_eq!(range_in(&outer, &copy), None);
    }

    /// Past the byte budget a page waits for room; a page larger than the budget alone is
    /// taken once nothing is held; with the worker gone nothing waits for ever.
    #[test]
    fn queued_bytes_are_bounded_and_a_dead_worker_does_not_hang_the_queue() {
        let budget = ByteBudget::default();
        assert!(budget.take(PAGE_QUEUE_BYTES - 10, || true, || {}));
        assert!(budget.take(10, || true, || {}), "fits exactly");
        // Full: with the worker gone the wait ends, holding nothing more.
        assert!(!budget.take(1, || false, || {}));
        assert_eq!(budget.held.lock().unwrap().bytes, PAGE_QUEUE_BYTES);
        budget.give_back(PAGE_QUEUE_BYTES);
        assert!(
            budget.take(3 * PAGE_QUEUE_BYTES, || true, || {}),
            "alone, any size"
        );
        // Room freed by another thread wakes the wait.
        let budget = Arc::new(budget);
        let freer = budget.clone();
        let t = std::thread::spawn(move || freer.give_back(3 * PAGE_QUEUE_BYTES));
        assert!(budget.take(PAGE_QUEUE_BYTES, || true, || {}));
        t.join().unwrap();
    }

    #[test]
    fn a_finished_worker_refuses_work() {
        let (mut w, _) = worker();
        w.finish().unwrap();
        let job = PageJob {
            response: None,
            deflate: None,
            content: None,
            stored_from: None,
        };
        assert!(w.submit(job).is_err());
    }

    /// Pages handed over one at a time, as one host's are: each result comes back although
    /// the worker lingers between them (no wake-up is lost), the thread taking the results is
    /// woken once the worker's queue is empty, and a lingering worker stops when told.
    #[test]
    fn pages_one_at_a_time_each_come_back_and_wake_the_writer() {
        use std::sync::atomic::AtomicBool;
        use std::time::Duration;
        // The writer's stand-in counts its wake-ups (it waits on no channel, whose own
        // parking could take a wake-up meant for it).
        let wakes = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (count, halt) = (wakes.clone(), stop.clone());
        let writer = std::thread::spawn(move || {
            // Bound: at most 60 s.
            let started = Instant::now();
            while !halt.load(Ordering::SeqCst) && started.elapsed() < Duration::from_secs(60) {
                std::thread::park_timeout(Duration::from_secs(60));
                count.fetch_add(1, Ordering::SeqCst);
            }
        });
        let mut w = PageWorker::spawn(
            0,
            BlockDeflater::new(1, false),
            NearDups::new(DEFAULT_NEAR_DUP_RAM),
            Arc::new(WriterGauges::default()),
            Some(writer.thread().clone()),
        )
        .unwrap();
        let a = Arc::new(SharedBytes::new(page("alpha"), None));
        // Bound: 20 pages, each result and wake-up waited for at most 10 s.
        for i in 0..20 {
            let before = wakes.load(Ordering::SeqCst);
            let result = w.submit(deflate_only(&a)).unwrap();
            let done = result
                .recv_timeout(Duration::from_secs(10))
                .unwrap_or_else(|e| panic!("page {i}: {e}"))
                .unwrap();
            assert!(done.deflated.is_some());
            // The batch (this page) done, the writer is woken.
            let waited = Instant::now();
            while wakes.load(Ordering::SeqCst) == before {
                assert!(
                    waited.elapsed() < Duration::from_secs(10),
                    "page {i}: the writer was not woken"
                );
                std::thread::sleep(Duration::from_millis(1));
            }
            // A gap shorter than the linger: the worker lingers for the next.
            std::thread::sleep(Duration::from_millis(i % 3));
        }
        let stopping = Instant::now();
        w.finish().unwrap();
        assert!(stopping.elapsed() < Duration::from_secs(5));
        stop.store(true, Ordering::SeqCst);
        writer.thread().unpark();
        writer.join().unwrap();
    }
}
