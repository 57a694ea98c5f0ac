//! Driving a run: the loop that turns the fetcher's [`Driver`] over a source until it is
//! done, Ctrl-C or `--max-time`; the signal handler; and the end of a run (stats.json, the
//! summary, the exit status's reason). `crawl`, `fetch` and `bench` all go through here.

use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::app::exit::{ExitStatus, Failure};
use crate::app::metrics::{CrawlFigures, LoopMetrics};
use crate::app::report::{abbrev, eprint_line, Display, Figures, Progress, URL_IN_MESSAGES};
use crate::crawl::sink::Sink;
use crate::crawl::{Crawl, RevisitCounters};
use crate::fetcher::{Crawler, Driver, FetchSource, Turn};
use crate::store::archive::output::Written;
use crate::store::archive::stats_json;

// ---- Ctrl-C ----

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
    // A second Ctrl-C kills at once, as users expect.
    // SAFETY: signal() is async-signal-safe; restoring the default disposition is always valid.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_DFL);
    }
}

/// Installs the SIGINT (and SIGTERM) handler that asks the run to stop cleanly.
pub fn install_interrupt_handler() {
    // SAFETY: the handler only stores to an atomic and calls signal(), both async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, on_sigint as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_sigint as *const () as libc::sighandler_t);
    }
}

pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

// ---- the drive loop ----

/// A source that stores what it fetches: the run loop needs its first storage error, to
/// flush its output now and then, its queue length and its notices for the user.
pub trait StoringSource: FetchSource {
    fn take_io_error(&mut self) -> Option<io::Error>;
    /// Makes what was stored so far readable (crawl.log, WARC).
    fn flush(&mut self) -> io::Result<()>;
    /// URLs waiting to be fetched.
    fn queued(&self) -> u64;
    /// A message for the user, once per occasion.
    fn take_notice(&mut self) -> Option<String>;
    /// Work may have arrived from elsewhere (another partition): the driver asks again.
    fn has_news(&mut self) -> bool {
        false
    }
    /// What revisits found so far (for the progress line).
    fn revisits(&self) -> RevisitCounters {
        RevisitCounters::default()
    }
    /// A crawl's own figures, for `--metrics`.
    fn crawl_figures(&self) -> CrawlFigures {
        CrawlFigures::default()
    }
}

/// Publishes the loop's figures for `--metrics` when due (or `always`).
fn publish_metrics<S: StoringSource>(
    progress: &mut Progress,
    crawler: &Crawler,
    source: &S,
    always: bool,
) {
    if let Some((slot, now)) = progress.metrics_due(always) {
        let m = LoopMetrics {
            stats: crawler.stats(),
            crawl: source.crawl_figures(),
        };
        slot.publish(now, m);
    }
}

/// Why [`drive`] returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    Finished,
    Interrupted,
    Deadline,
}

/// How [`drive`] ended, and what the source's work cost the loop.
#[derive(Clone, Copy, Debug)]
pub struct Driven {
    pub stop: Stop,
    /// Loop time the source spent on completions ([`Driver::source_time`]).
    pub source_time: Duration,
}

/// Turns the loop until the source is exhausted, Ctrl-C, or `deadline` (in both of the last
/// cases every live fetch ends as `Interrupted`, at once: `--max-time` is a hard bound).
pub fn drive<S: StoringSource>(
    crawler: &mut Crawler,
    source: &mut S,
    progress: &mut Progress,
    deadline: Option<Instant>,
) -> Result<Driven, Failure> {
    install_interrupt_handler();
    let mut driver = Driver::new();
    let stop = loop {
        if interrupted() {
            driver.interrupt(crawler, source);
            break Stop::Interrupted;
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            driver.interrupt(crawler, source);
            break Stop::Deadline;
        }
        if source.has_news() {
            driver.poke();
        }
        let turn = driver.turn(crawler, source).map_err(Failure::runtime)?;
        if let Some(e) = source.take_io_error() {
            return Err(Failure::output(e));
        }
        if turn == Turn::Finished {
            break Stop::Finished;
        }
        while let Some(notice) = source.take_notice() {
            eprint_line(&notice);
        }
        let queued = source.queued();
        let figures = || Figures::of(&crawler.stats(), queued).with_revisits(&source.revisits());
        if progress.tick(figures) {
            source.flush().map_err(Failure::output)?;
        }
        publish_metrics(progress, crawler, source, false);
    };
    // The final figures, for the scrape that comes after the end.
    publish_metrics(progress, crawler, source, true);
    while let Some(notice) = source.take_notice() {
        eprint_line(&notice);
    }
    let queued = source.queued();
    progress.finish(|| Figures::of(&crawler.stats(), queued).with_revisits(&source.revisits()));
    match source.take_io_error() {
        Some(e) => Err(Failure::output(e)),
        None => Ok(Driven {
            stop,
            source_time: driver.source_time(),
        }),
    }
}

impl<S: Sink> StoringSource for Crawl<S> {
    fn take_io_error(&mut self) -> Option<io::Error> {
        Crawl::take_io_error(self)
    }

    fn flush(&mut self) -> io::Result<()> {
        Crawl::flush(self)
    }

    fn queued(&self) -> u64 {
        self.frontier_len() as u64
    }

    fn take_notice(&mut self) -> Option<String> {
        self.take_blocked_notice().map(|h| blocked_notice(&h))
    }

    fn revisits(&self) -> RevisitCounters {
        self.counters().revisits.clone()
    }

    fn crawl_figures(&self) -> CrawlFigures {
        let c = self.counters();
        let mut status_classes = c.url_lines.status_classes;
        for (a, b) in status_classes.iter_mut().zip(c.robots_lines.status_classes) {
            *a += b;
        }
        let queued = self.frontier_len() as u64;
        let in_ram = (self.frontier_in_ram() as u64).min(queued);
        CrawlFigures {
            pages: c.pages_fetched,
            robots: c.robots_fetched,
            status_classes,
            queued_ram: in_ram,
            queued_disk: queued - in_ram,
            urls_seen: self.urls_seen() as u64,
            revisits: c.revisits.clone(),
        }
    }
}

/// What the app tells the user the first time a host is refused by the address policy.
pub fn blocked_notice(host: &str) -> String {
    format!(
        "spinneret: {} is a loopback, private or reserved address, refused by default: its URLs \
         end as PrivateAddressBlocked. Pass --allow-private (or --allow-net CIDR) to fetch it.",
        abbrev(host, URL_IN_MESSAGES)
    )
}

// ---- the end of a run ----

/// The end of a command: stats.json, the summary and the reason for the exit status.
pub fn conclude(
    dir: &Path,
    json: String,
    summary: String,
    status: ExitStatus,
    reason: String,
    written: &Written,
    display: Display,
) -> Result<ExitStatus, Failure> {
    stats_json::write(dir, &json).map_err(|e| {
        Failure::Output(format!(
            "cannot write {}: {e}",
            dir.join("stats.json").display()
        ))
    })?;
    if !display.quiet {
        eprint_line(&summary);
        if let Some(hint) = replay_hint(dir, written) {
            eprint_line(&hint);
        }
    }
    if !display.quiet || status != ExitStatus::Ok {
        eprint_line(&format!("spinneret: {reason}"));
    }
    Ok(status)
}

/// Where the archive is and how to replay it with pywb.
fn replay_hint(dir: &Path, written: &Written) -> Option<String> {
    let first = written.warc_files.first()?;
    let n = written.warc_files.len();
    let files = if n == 1 {
        first.display().to_string()
    } else {
        format!("{} (and {} more)", first.display(), n - 1)
    };
    let index = if written.indexes.is_empty() {
        String::new()
    } else {
        format!(", CDXJ index beside each ({})", written.indexes.len())
    };
    Some(format!(
        "spinneret: WARC: {files}{index}\n  replay: wb-manager init mycoll && wb-manager add \
         mycoll {}/*.warc.gz && wayback  (then http://localhost:8080/mycoll/)",
        dir.display()
    ))
}
