//! A crawl run as partitions (`--loops N` event loops in one process, or one node of a
//! `--cluster`): each partition owns the hosts the splitter gives it, and an [`Exchange`]
//! carries batches of URLs between partitions and decides when the whole crawl is done.
//!
//! [`PartitionSource`] wraps a partition's [`Crawl`] for the driver: before each question it
//! takes what arrived and sends what is due; when its own crawl has nothing left it flushes
//! its outboxes and tells the exchange it is idle, and it finishes only when the exchange says
//! every partition is idle with no batch in flight. The in-process exchange is
//! [`LocalExchange`]; the Redis one is in `app::cluster`.

use std::io;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::app::drive::StoringSource;
use crate::app::metrics::CrawlFigures;
use crate::crawl::splitter::Batch;
use crate::crawl::{Crawl, RevisitCounters};
use crate::fetcher::{FetchDone, FetchSource, Next};
use crate::store::archive::output::Output;

/// How long an idle partition sleeps before looking again, if nothing wakes it sooner.
const IDLE_RECHECK: Duration = Duration::from_millis(200);

/// A partition's figures, for those watching the whole crawl (`cluster-status`).
#[derive(Clone, Copy, Debug, Default)]
pub struct NodeStats {
    pub pages: u64,
    pub pages_per_sec: f64,
    pub queued: u64,
    pub urls_sent: u64,
    pub urls_received: u64,
}

/// What carries batches between partitions.
pub trait Exchange {
    /// The waker of this partition's loop: the exchange wakes it when something arrives.
    fn set_waker(&mut self, waker: Arc<mio::Waker>);
    /// Sends a batch to its partition.
    fn send(&mut self, batch: Batch) -> io::Result<()>;
    /// A batch that arrived for this partition.
    fn receive(&mut self) -> Option<Batch>;
    /// Whether this partition's received URLs are journaled by it (a node: the sender
    /// releases them once delivered), rather than by their sender (loops sharing a journal).
    fn journals_received(&self) -> bool;
    /// Received batches up to here are handled, their URLs journaled once `mark` is
    /// committed ([`Crawl::journal_mark`]); a cluster acknowledges them then.
    fn received_through(&mut self, _mark: u64) {}
    /// A journal commit reached `committed`: acknowledge what it covers.
    fn committed(&mut self, _committed: u64) {}
    /// Batches sent that are now safely with their owners.
    fn delivered(&mut self) -> Option<Batch> {
        None
    }
    /// This partition has nothing to do (`true`) or has work again. Returns whether the whole
    /// crawl is done.
    fn set_idle(&mut self, idle: bool) -> bool;
    /// This partition stops for good (a limit, an error): others must not wait for it.
    fn stop(&mut self);
    /// This partition was stopped by Ctrl-C.
    fn interrupted(&mut self) {
        self.stop();
    }
    /// A seed given elsewhere in the crawl: it widens the scope here too.
    fn scope_seed(&mut self) -> Option<String> {
        None
    }
    /// Something to tell the user (the exchange's trouble), once per occasion.
    fn take_notice(&mut self) -> Option<String> {
        None
    }
    /// The partition's figures, as often as the driver asks the source (called every turn).
    fn progress(&mut self, _now: Instant, _stats: NodeStats) {}
    /// Whether something arrived since the last look (the driver asks the source again).
    fn has_news(&mut self) -> bool;
}

/// One partition's crawl, as the driver's source.
pub struct PartitionSource<E: Exchange> {
    pub crawl: Crawl<Output>,
    pub exchange: E,
    idle: bool,
    /// The exchange said the whole crawl is done.
    all_done: bool,
    /// Batches sent, and their bytes.
    pub batches_out: u64,
    pub bytes_out: u64,
    /// The exchange's first error: the run stops and reports it.
    io_error: Option<io::Error>,
    /// Seeds added while the crawl runs (`spinneret add`): the first partition's.
    pub inbox: Option<crate::app::inbox::Inbox>,
}

impl<E: Exchange> PartitionSource<E> {
    pub fn new(crawl: Crawl<Output>, exchange: E) -> PartitionSource<E> {
        PartitionSource {
            crawl,
            exchange,
            idle: false,
            all_done: false,
            batches_out: 0,
            bytes_out: 0,
            io_error: None,
            inbox: None,
        }
    }

    /// Adds the seeds `spinneret add` left in the inbox, when a look is due.
    fn take_added(&mut self, now: Instant) {
        let Some(inbox) = self.inbox.as_mut() else {
            return;
        };
        let urls = match inbox.take(now) {
            Ok(urls) => urls,
            Err(e) => {
                self.io_error.get_or_insert(e);
                return;
            }
        };
        for text in urls {
            match crate::crawl::urlnorm::parse_seed(&text) {
                // A refused seed gets its crawl.log line from the crawl.
                Ok(url) => {
                    let _ = self.crawl.add_seed(url);
                }
                Err(_) => self
                    .crawl
                    .log_rejected_input(&text, crate::ReturnCode::HttpBadUrlSyntax),
            }
        }
    }

    /// Takes what arrived and sends what is due (all of it with `flush`).
    fn pump(&mut self, now: Instant, flush: bool) {
        // Bounded by the seeds given to the crawl.
        while let Some(seed) = self.exchange.scope_seed() {
            if let Ok(url) = crate::crawl::urlnorm::parse_seed(&seed) {
                self.crawl.add_scope_seed(&url);
            }
        }
        let journal = self.exchange.journals_received();
        let mut got = false;
        // Bounded: a turn takes at most this many batches, the rest the next turn.
        for _ in 0..64 {
            let Some(batch) = self.exchange.receive() else {
                break;
            };
            self.crawl.receive(&batch, journal);
            got = true;
        }
        if got && journal {
            match self.crawl.journal_mark() {
                Ok(mark) => self.exchange.received_through(mark),
                Err(e) => {
                    self.io_error.get_or_insert(e);
                }
            }
        }
        if journal {
            let committed = self.crawl.committed();
            self.exchange.committed(committed);
        }
        while let Some(batch) = self.exchange.delivered() {
            self.crawl.batch_delivered(&batch);
        }
        while let Some(batch) = self.crawl.poll_batch(now, flush) {
            self.batches_out += 1;
            self.bytes_out += batch.bytes.len() as u64;
            if let Err(e) = self.exchange.send(batch) {
                self.io_error.get_or_insert(e);
                break;
            }
        }
        let c = self.crawl.counters();
        let stats = NodeStats {
            pages: c.pages_fetched,
            pages_per_sec: 0.0,
            queued: self.crawl.queued(),
            urls_sent: c.urls_forwarded,
            urls_received: c.urls_received,
        };
        self.exchange.progress(now, stats);
    }

    fn set_idle(&mut self, idle: bool) {
        // Busy is told once; idle every time, as the answer (whether all is done) changes.
        if idle || self.idle {
            self.idle = idle;
            self.all_done = self.exchange.set_idle(idle);
        }
    }

    /// Whether this partition stopped on its own account (limit, error): it does not wait
    /// for the others.
    fn stopped_for_good(&self, now: Instant) -> bool {
        self.io_error.is_some()
            || self.crawl.has_io_error()
            || self.crawl.page_limit_reached()
            || self.crawl.deadline().is_some_and(|d| now >= d)
    }
}

impl<E: Exchange> FetchSource for PartitionSource<E> {
    fn next_fetch(&mut self, now: Instant) -> Next {
        self.take_added(now);
        self.pump(now, false);
        match self.crawl.next_fetch(now) {
            Next::Fetch(req) => {
                self.set_idle(false);
                Next::Fetch(req)
            }
            Next::Done if self.stopped_for_good(now) => {
                self.pump(now, true);
                self.exchange.stop();
                Next::Done
            }
            Next::Done => {
                // Nothing here: send everything waiting, then see whether anyone has work.
                self.pump(now, true);
                self.set_idle(true);
                if self.all_done {
                    Next::Done
                } else {
                    Next::Wait(now + IDLE_RECHECK)
                }
            }
            Next::Wait(t) => {
                self.set_idle(false);
                Next::Wait(self.crawl.next_batch_due().map_or(t, |due| due.min(t)))
            }
            Next::Idle => {
                self.set_idle(false);
                match self.crawl.next_batch_due() {
                    Some(due) => Next::Wait(due),
                    None => Next::Idle,
                }
            }
        }
    }

    fn fetch_done(&mut self, done: &FetchDone<'_>, now: Instant) {
        self.crawl.fetch_done(done, now);
    }

    fn poll_prefetch(&mut self) -> Option<String> {
        self.crawl.poll_prefetch()
    }
}

impl<E: Exchange> StoringSource for PartitionSource<E> {
    fn take_io_error(&mut self) -> Option<io::Error> {
        self.io_error.take().or_else(|| self.crawl.take_io_error())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.crawl.flush()
    }

    fn queued(&self) -> u64 {
        self.crawl.queued()
    }

    fn take_notice(&mut self) -> Option<String> {
        self.crawl
            .take_notice()
            .or_else(|| self.exchange.take_notice())
    }

    fn has_news(&mut self) -> bool {
        self.exchange.has_news()
    }

    fn revisits(&self) -> RevisitCounters {
        self.crawl.counters().revisits.clone()
    }

    fn crawl_figures(&self) -> CrawlFigures {
        self.crawl.crawl_figures()
    }
}

/// Who is idle and how many batches are on their way: the in-process termination test. A
/// partition is marked busy in the same step that takes a batch off the count, so "all
/// idle, none in flight" is never seen while work is being handed over.
#[derive(Debug)]
struct Board {
    idle: Vec<bool>,
    stopped: Vec<bool>,
    in_flight: u64,
    done: bool,
}

/// The exchange of `--loops N` partitions in one process: channels, and each loop's waker.
pub struct LocalExchange {
    me: usize,
    inbox: Receiver<Batch>,
    peers: Vec<Sender<Batch>>,
    wakers: Arc<Mutex<Vec<Option<Arc<mio::Waker>>>>>,
    board: Arc<Mutex<Board>>,
    /// The board said done last time this partition looked.
    done_seen: bool,
}

impl LocalExchange {
    /// The exchanges of `n` partitions, in partition order. Give each its loop's waker with
    /// [`LocalExchange::set_waker`] before its loop runs.
    pub fn group(n: usize) -> Vec<LocalExchange> {
        let (senders, receivers): (Vec<_>, Vec<_>) = (0..n).map(|_| mpsc::channel()).unzip();
        let wakers = Arc::new(Mutex::new(vec![None; n]));
        let board = Arc::new(Mutex::new(Board {
            idle: vec![false; n],
            stopped: vec![false; n],
            in_flight: 0,
            done: false,
        }));
        receivers
            .into_iter()
            .enumerate()
            .map(|(me, inbox)| LocalExchange {
                me,
                inbox,
                peers: senders.clone(),
                wakers: wakers.clone(),
                board: board.clone(),
                done_seen: false,
            })
            .collect()
    }

    fn wake(&self, k: usize) {
        if let Some(Some(w)) = lock(&self.wakers).get(k) {
            let _ = w.wake();
        }
    }

    fn wake_all(&self) {
        for w in lock(&self.wakers).iter().flatten() {
            let _ = w.wake();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Exchange for LocalExchange {
    fn set_waker(&mut self, waker: Arc<mio::Waker>) {
        if let Some(slot) = lock(&self.wakers).get_mut(self.me) {
            *slot = Some(waker);
        }
    }

    fn send(&mut self, batch: Batch) -> io::Result<()> {
        let to = batch.to as usize;
        {
            let mut b = lock(&self.board);
            if b.stopped.get(to).copied().unwrap_or(true) {
                // It stopped for good: its URLs stay in the journal for a resume.
                return Ok(());
            }
            b.in_flight += 1;
        }
        if let Some(tx) = self.peers.get(to) {
            if tx.send(batch).is_err() {
                lock(&self.board).in_flight -= 1;
                return Ok(());
            }
        }
        self.wake(to);
        Ok(())
    }

    fn receive(&mut self) -> Option<Batch> {
        let batch = self.inbox.try_recv().ok()?;
        let mut b = lock(&self.board);
        b.in_flight = b.in_flight.saturating_sub(1);
        if let Some(i) = b.idle.get_mut(self.me) {
            *i = false;
        }
        Some(batch)
    }

    fn journals_received(&self) -> bool {
        false
    }

    fn set_idle(&mut self, idle: bool) -> bool {
        let done = {
            let mut b = lock(&self.board);
            if let Some(i) = b.idle.get_mut(self.me) {
                *i = idle;
            }
            if !b.done && b.in_flight == 0 && b.idle.iter().zip(&b.stopped).all(|(&i, &s)| i || s) {
                b.done = true;
            }
            b.done
        };
        if done && !self.done_seen {
            self.done_seen = true;
            self.wake_all();
        }
        done
    }

    fn stop(&mut self) {
        {
            let mut b = lock(&self.board);
            if let Some(s) = b.stopped.get_mut(self.me) {
                *s = true;
            }
            // Batches already sent to it will not be taken: their URLs stay journaled.
            let pending = self.inbox.try_iter().count() as u64;
            b.in_flight = b.in_flight.saturating_sub(pending);
        }
        self.wake_all();
    }

    fn has_news(&mut self) -> bool {
        // A waker only ends the poll; whether it was for us is not known. Asking the source
        // again is cheap (one turn per wake), so: whenever a batch is on its way anywhere, or
        // the crawl is done. A single loop has no one to hear from (and no lock to take).
        if self.peers.len() == 1 {
            return false;
        }
        let b = lock(&self.board);
        b.in_flight > 0 || b.done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(to: u32) -> Batch {
        Batch { to, bytes: vec![0] }
    }

    #[test]
    fn the_crawl_is_done_only_when_every_partition_is_idle_and_nothing_is_in_flight() {
        let mut x = LocalExchange::group(2);
        let (mut b, mut a) = (x.pop().unwrap(), x.pop().unwrap());
        a.send(batch(1)).unwrap();
        assert!(!a.set_idle(true), "a batch is on its way to b");
        assert!(b.has_news());
        assert!(!b.set_idle(true), "b has not taken its batch yet");
        assert!(b.receive().is_some());
        assert!(
            !a.set_idle(true),
            "b took work: it is busy until it says otherwise"
        );
        assert!(b.set_idle(true), "both idle, nothing in flight");
        assert!(a.set_idle(true));
    }

    #[test]
    fn a_stopped_partition_is_not_waited_for_and_its_batches_are_not_counted() {
        let mut x = LocalExchange::group(2);
        let (mut b, mut a) = (x.pop().unwrap(), x.pop().unwrap());
        a.send(batch(1)).unwrap();
        b.stop();
        assert!(
            a.set_idle(true),
            "b stopped: what was sent to it stays journaled"
        );
        a.send(batch(1)).unwrap();
        assert!(
            b.receive().is_none(),
            "nothing is delivered to a stopped partition"
        );
    }
}
