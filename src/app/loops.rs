//! Running a crawl on N event loops (`--loops N`, one by default): one thread per partition,
//! each with its own [`Crawler`] and [`Crawl`], exchanging URLs through a [`LocalExchange`],
//! writing through one writer thread (one crawl.log and journal, a WARC series each).
//!
//! One loop is the same path with one partition and no splitter, so `bench` measures what
//! users run.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use url::Url;

use crate::app::cluster;
use crate::app::config::{partition_share, with_spool, ClusterConfig, Setup};
use crate::app::drive::{drive, interrupted, Driven, Stop};
use crate::app::exit::{Failure, RunEnd};
use crate::app::inbox::{self, Inbox};
use crate::app::metrics::MetricsBoard;
use crate::app::metrics_server::MetricsServer;
use crate::app::partition::{Exchange, LocalExchange, PartitionSource};
use crate::app::report::{
    abbrev, eprint_line, CrawlReport, Display, Figures, Progress, ProgressMode, URL_IN_MESSAGES,
};
use crate::app::run_files::{SnapshotWriter, TimelineRecorder};
use crate::crawl::splitter::{SplitterConfig, MAX_PARTITIONS};
use crate::crawl::{self, Crawl, CrawlConfig, CrawlCounters};
use crate::fetcher::stats::LoopStats;
use crate::fetcher::{Crawler, CrawlerConfig, PayloadDigest};
use crate::store::archive::output::{Output, Written};
use crate::store::state::compaction::StateKeys;
use crate::store::state::crawl_db::{self, CrawlDb, DueCursor};
use crate::store::state::crawl_state::{self, StateError};
use crate::store::state::near_dup_runs::NearDupRuns;
use crate::store::state::replay::{replay, ReplaySink};
use crate::store::state::segments::SegmentSpill;
use crate::ReturnCode;

/// Most event loops one process runs.
pub const MAX_LOOPS: usize = 64;

/// A crawl being restored from its journal: each URL to the partition owning its host (a
/// cluster node has one: it sends what it does not own to its owner again).
struct Restore<'a> {
    crawls: &'a mut [Crawl<Output>],
    /// Queued entries that did not decode.
    bad: u64,
    /// The crawl database and the journal's copies of its records, put again in batches.
    db: Option<&'a CrawlDb>,
    records: Vec<(String, Vec<u8>)>,
}

/// Journal copies of database records put again per batch on resume.
const RESTORE_DB_BATCH: usize = 4096;

impl Restore<'_> {
    /// Puts the records gathered so far (durably with `last`).
    fn put_records(&mut self, last: bool) -> Result<(), StateError> {
        let Some(db) = self.db else {
            return Ok(());
        };
        let damaged = |e: crawl_db::DbError| StateError::Damaged(e.to_string());
        let mut batch = db.write();
        for (url, value) in self.records.drain(..) {
            batch.put_value(&url, &value).map_err(damaged)?;
        }
        batch.commit_with(last).map_err(damaged)
    }
}

impl Restore<'_> {
    /// The local partition owning `url` (a cluster node's one crawl owns all it restores).
    fn owner(&self, url: &str) -> usize {
        match (&*self.crawls, Url::parse(url)) {
            ([first, _, ..], Ok(u)) => first.owner_of(&u) as usize,
            _ => 0,
        }
    }
}

impl ReplaySink for Restore<'_> {
    fn seen_sorted(&mut self, part: u32, keys: &[u64]) {
        if let Some(c) = self.crawls.get_mut(part as usize) {
            c.restore_seen_sorted(keys);
        }
    }

    fn seen(&mut self, url: &str) {
        let k = self.owner(url);
        if let Some(c) = self.crawls.get_mut(k) {
            c.restore_seen(url);
        }
    }

    fn queued(&mut self, url: &str, entry: &[u8]) {
        let k = self.owner(url);
        if !self
            .crawls
            .get_mut(k)
            .is_some_and(|c| c.restore_queued(entry))
        {
            self.bad += 1;
        }
    }

    fn digest(&mut self, digest: PayloadDigest) {
        // Content seen is per partition; a digest is not tied to its URL here, so each
        // partition learns all of them (20 bytes each).
        for c in self.crawls.iter_mut() {
            c.restore_digest(digest);
        }
    }

    fn record(&mut self, url: &str, value: &[u8]) -> Result<(), StateError> {
        if self.db.is_some() {
            self.records.push((url.to_string(), value.to_vec()));
            if self.records.len() >= RESTORE_DB_BATCH {
                self.put_records(false)?;
            }
        }
        Ok(())
    }
}

/// Logs the input lines that are not URLs, then gives every seed to partition 0, which
/// forwards those of hosts it does not own.
fn add_seeds(crawls: &mut [Crawl<Output>], seeds: Vec<Url>, bad_inputs: &[(String, ReturnCode)]) {
    let Some(first) = crawls.first_mut() else {
        return;
    };
    for (text, outcome) in bad_inputs {
        first.log_rejected_input(text, *outcome);
    }
    for seed in seeds {
        let text = abbrev(seed.as_str(), URL_IN_MESSAGES);
        if let Err(code) = first.add_seed(seed) {
            eprint_line(&format!(
                "spinneret: seed {text} not crawled: {code} ({})",
                code.meaning()
            ));
        }
    }
}

/// Opens (or creates) the crawl database in `out`.
fn open_db(path: &std::path::Path) -> Result<Arc<CrawlDb>, Failure> {
    CrawlDb::open(path)
        .map(Arc::new)
        .map_err(|e| Failure::Output(format!("{}: {e}", path.display())))
}

/// Queues every URL the crawl in `old` holds, with what its last fetch left, and gives its
/// seeds to every partition's scope. Returns how many URLs were read.
fn load_previous(old: &std::path::Path, crawls: &mut [Crawl<Output>]) -> Result<u64, Failure> {
    let path = old.join(crawl_db::FILE_NAME);
    let db = open_db(&path)?;
    let bad = |e: crawl_db::DbError| Failure::Output(format!("{}: {e}", path.display()));
    let mut n = 0;
    // Earliest due first: what the old crawl's schedule says is stalest goes first.
    for record in db.due(u64::MAX, usize::MAX).map_err(bad)? {
        let record = record.map_err(bad)?;
        let Ok(url) = Url::parse(&record.url) else {
            continue;
        };
        if record.hop == crawl::sink::Hop::Seed {
            for c in crawls.iter_mut() {
                c.add_scope_seed(&url);
            }
        }
        let mut last = record.last;
        db.locate_copy(&mut last).map_err(bad)?;
        if let Some(first) = crawls.first_mut() {
            // Partition 0 forwards what it does not own, as with seeds.
            first.add_previous(url, record.depth, record.hop, last);
        }
        n += 1;
    }
    Ok(n)
}

/// What a crawl starts from: its seeds, the input lines that are not URLs (each logged with
/// its outcome), and `--previous`'s crawl directory, whose URLs are fetched again.
#[derive(Debug, Default)]
pub struct Inputs {
    pub seeds: Vec<Url>,
    pub bad_inputs: Vec<(String, ReturnCode)>,
    pub previous: Option<std::path::PathBuf>,
    /// `--sitemap` URLs: fetched as sitemaps, their hosts in the scope.
    pub sitemaps: Vec<Url>,
}

/// How a crawl is partitioned: event loops in this process, or one node of a cluster.
#[derive(Debug, Default)]
pub struct Partitions {
    pub loops: usize,
    pub cluster: Option<ClusterConfig>,
}

/// What one partition's run left.
struct PartEnd {
    stop: Stop,
    /// Loop time the crawl spent on completions.
    source_time: Duration,
    crawl: Crawl<Output>,
    stats: LoopStats,
    /// Batches sent to other partitions, and their bytes.
    batches_out: u64,
    bytes_out: u64,
}

/// How a partition's run ended, given how its driver stopped.
fn run_end(stop: Stop, crawl: &Crawl<Output>, now: Instant) -> RunEnd {
    match stop {
        Stop::Interrupted => RunEnd::Interrupted,
        Stop::Deadline => RunEnd::MaxTime,
        Stop::Finished if crawl.frontier_len() == 0 && !crawl.has_outgoing() => RunEnd::Finished,
        Stop::Finished if crawl.deadline().is_some_and(|d| now >= d) => RunEnd::MaxTime,
        Stop::Finished if crawl.page_limit_reached() => RunEnd::MaxPages,
        Stop::Finished => RunEnd::Finished,
    }
}

/// Runs one partition to its end; its exchange is told it stopped whatever happens, so the
/// other partitions do not wait for it.
fn run_partition<E: Exchange>(
    crawl: Crawl<Output>,
    mut exchange: E,
    config: CrawlerConfig,
    mut progress: Progress,
    inbox: Option<Inbox>,
) -> Result<PartEnd, Failure> {
    let mut crawler = match Crawler::new(config).and_then(|c| c.waker().map(|w| (c, w))) {
        Ok((c, waker)) => {
            exchange.set_waker(waker);
            c
        }
        Err(e) => {
            exchange.stop();
            return Err(Failure::runtime(e));
        }
    };
    let mut source = PartitionSource::new(crawl, exchange);
    source.inbox = inbox;
    let deadline = source.crawl.deadline();
    let driven = drive(&mut crawler, &mut source, &mut progress, deadline);
    match driven {
        Ok(Driven {
            stop: Stop::Interrupted,
            ..
        }) => source.exchange.interrupted(),
        _ => source.exchange.stop(),
    }
    let driven = driven?;
    Ok(PartEnd {
        stop: driven.stop,
        source_time: driven.source_time,
        stats: crawler.stats(),
        batches_out: source.batches_out,
        bytes_out: source.bytes_out,
        crawl: source.crawl,
    })
}

/// Runs every partition to its end: one inline, several on a thread each.
/// `inbox`: the seeds added while the crawl runs, which the first partition takes.
fn run_all<E: Exchange + Send>(
    crawls: Vec<Crawl<Output>>,
    exchanges: Vec<E>,
    config: &CrawlerConfig,
    progress_of: &(dyn Fn(usize) -> Progress + Sync),
    mut inbox: Option<Inbox>,
) -> Vec<Result<PartEnd, Failure>> {
    let parts = crawls.into_iter().zip(exchanges).enumerate();
    if parts.len() == 1 {
        return parts
            .map(|(k, (c, x))| run_partition(c, x, config.clone(), progress_of(k), inbox.take()))
            .collect();
    }
    std::thread::scope(|scope| {
        let handles: Vec<_> = parts
            .map(|(k, (c, x))| {
                let (cfg, progress, inbox) = (config.clone(), progress_of(k), inbox.take());
                std::thread::Builder::new()
                    .name(format!("loop-{k}"))
                    .spawn_scoped(scope, move || run_partition(c, x, cfg, progress, inbox))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| match h {
                Ok(h) => h
                    .join()
                    .unwrap_or_else(|_| Err(Failure::Runtime("an event loop panicked".into()))),
                Err(e) => Err(Failure::runtime(e)),
            })
            .collect()
    })
}

/// Runs a crawl from `seeds` on `loops` event loops to completion (or Ctrl-C, or its time
/// limit) and closes its output. `bad_inputs` are given lines that are not URLs, with the
/// outcome each is logged with, first. With `resume`, the crawl continues from its journal (the seeds then define
/// the scope only). A crawl whose output is durable leaves the URLs still queued at a stop in
/// its journal, for `resume`, instead of logging them.
pub fn execute(
    setup: Setup,
    config: CrawlConfig,
    inputs: Inputs,
    display: Display,
    resume: bool,
    parts: Partitions,
) -> Result<CrawlReport, Failure> {
    let Inputs {
        seeds,
        bad_inputs,
        previous,
        sitemaps,
    } = inputs;
    let previous = previous.as_deref();
    let Partitions { loops, cluster } = parts;
    let n = if cluster.is_some() {
        1
    } else {
        loops.clamp(1, MAX_LOOPS.min(MAX_PARTITIONS as usize))
    };
    // A node joins first: nothing is written if its cluster cannot be reached. Its seeds go to
    // every node's scope (a resumed node's were published when it started).
    let published: Vec<String> = if resume {
        Vec::new()
    } else {
        seeds.iter().map(|u| u.to_string()).collect()
    };
    let mut node = match &cluster {
        Some(c) => Some(cluster::join(c, &published).map_err(Failure::Runtime)?),
        None => None,
    };
    let durable = setup.output.durable.is_some();
    let resume_delay = config.delay;
    let mut setup = setup;
    if let Some(c) = &cluster {
        // Node K's files are PREFIX-nK-…: the nodes' outputs can be gathered in one place.
        setup.output.warc_prefix = format!("{}-n{}", setup.output.warc_prefix, c.node);
    }
    if durable {
        // The journal is folded into checkpoints that file each URL-seen key under the
        // partition the restore gives it to.
        let parts = n as u32;
        // Keyed as the crawl keys them (canonicalized by its settings).
        let canon = crawl::canon::Canon::new(config.canon.clone());
        setup.output.state_keys = Some(StateKeys(Arc::new(move |url: &str| {
            crawl::partition_key(url, parts, &canon)
        })));
    }
    // A durable crawl keeps its crawl database (ARCHITECTURE §9c): what a re-crawl or the
    // next revisit of each URL needs.
    let db = if durable {
        std::fs::create_dir_all(&setup.output.dir).map_err(Failure::output)?;
        Some(open_db(&setup.output.dir.join(crawl_db::FILE_NAME))?)
    } else {
        None
    };
    setup.output.crawl_db = db.clone();
    // Revisits refer to its records (a resumed re-crawl has its URLs in the journal already).
    setup.output.previous = previous.map(std::path::Path::to_path_buf);
    // Each partition's page worker fingerprints its pages, in its share of the RAM.
    setup.output.near_dup_ram = config.near_dup_ram / n;
    setup.output.near_dup_threshold = config.near_dup_threshold;
    let outputs = Output::create_partitioned(&setup.output, n).map_err(Failure::output)?;
    let out_dir = setup.output.dir.clone();
    // `--metrics`: the endpoint serves from the start (a resume's replay included).
    let metrics = match display.metrics {
        Some(addr) => {
            let board = MetricsBoard::new(n, cluster.as_ref().map(|c| c.node.to_string()));
            if let Some(first) = outputs.first() {
                board.set_writer(first.gauges());
            }
            let server = MetricsServer::start(addr, board.clone())
                .map_err(|e| Failure::Runtime(format!("cannot serve metrics at {addr}: {e}")))?;
            Some((board, server))
        }
        None => None,
    };
    let crawler_config = with_spool(partition_share(&setup.crawler, &config, n, 0).0, &out_dir)
        .map_err(Failure::output)?;
    let started = Instant::now();
    // The crawl carries the wall clock on its monotonic one from here (cookies, HTTP dates).
    let wall = SystemTime::now();
    let max_pages = config.max_pages;
    let mut crawls = Vec::with_capacity(n);
    for (k, sink) in outputs.into_iter().enumerate() {
        let (_, part) = partition_share(&setup.crawler, &config, n, k);
        let mut crawl = if durable {
            // The frontier past its RAM budget goes to segment files in the state directory.
            let name = if n > 1 {
                format!("frontier-p{k}")
            } else {
                "frontier".into()
            };
            let dir = crawl_state::state_dir(&out_dir).join(name);
            let spill = SegmentSpill::create(&dir)
                .map_err(|e| Failure::Output(format!("cannot write to {}: {e}", dir.display())))?;
            Crawl::with_spill(part, sink, started, wall, Box::new(spill))
        } else {
            Crawl::new(part, sink, started, wall)
        };
        // The near-duplicate index past its RAM share spills to unlinked files in OUT.
        crawl.set_near_dup_spill(Box::new(NearDupRuns::in_output(&out_dir, &format!("p{k}"))));
        if let Some(c) = &cluster {
            crawl.partition(SplitterConfig::new(c.nodes, c.node));
        } else if n > 1 {
            crawl.partition(SplitterConfig::new(n as u32, k as u32));
        }
        if resume || k > 0 {
            for seed in seeds.iter().chain(&sitemaps) {
                crawl.add_scope_seed(seed);
            }
        }
        if let (true, Some(db)) = (config.continuous, &db) {
            crawl.set_due_urls(Box::new(DueCursor::new(db.clone())));
        }
        crawls.push(crawl);
    }
    if resume {
        let mut restore = Restore {
            crawls: &mut crawls,
            bad: 0,
            db: db.as_deref(),
            records: Vec::new(),
        };
        let state_failure = |e: StateError| Failure::Output(e.to_string());
        let r = replay(&out_dir, &mut restore, n as u32).map_err(state_failure)?;
        restore.put_records(true).map_err(state_failure)?;
        let bad = restore.bad;
        if let Some(x) = node.as_mut() {
            x.done_before = r.done;
        }
        // Seeds added while it ran are in the scope too.
        for text in inbox::added(&out_dir) {
            if let Ok(url) = crate::crawl::urlnorm::parse_seed(&text) {
                for c in crawls.iter_mut() {
                    c.add_scope_seed(&url);
                }
            }
        }
        // The seeds and `--sitemap`s again: a run killed before the commit that held them
        // left a journal without them, and the crawl would end at once with nothing. Those
        // the journal has are dropped as seen; partition 0 forwards the rest, as at the
        // start.
        if let Some(first) = crawls.first_mut() {
            for seed in seeds {
                first.add_seed_again(seed);
            }
            for sitemap in sitemaps {
                first.add_sitemap_again(sitemap);
            }
        }
        let mut robots_known = 0;
        for (k, c) in crawls.iter_mut().enumerate() {
            c.hold_until(started + resume_delay);
            match crawl_state::load_hosts(&out_dir, k, SystemTime::now()) {
                Ok(Some((age, state))) => match c.restore_hosts(&state, started, age) {
                    Ok(r) => robots_known += r.robots,
                    Err(_) => eprint_line(&format!(
                        "spinneret: the saved host state of event loop {k} could not be read: \
                         its robots.txt files are fetched again"
                    )),
                },
                Ok(None) => {}
                Err(e) => eprint_line(&format!(
                    "spinneret: {e}: robots.txt files are fetched again"
                )),
            }
        }
        if bad > 0 {
            eprint_line(&format!(
                "spinneret: {bad} queued URLs in the journal could not be read and are dropped"
            ));
        }
        if !display.quiet {
            eprint_line(&format!(
                "spinneret: resuming the crawl in {}: {} URLs done, {} still queued, \
                 robots.txt of {robots_known} origins kept",
                out_dir.display(),
                r.done,
                r.queued
            ));
        }
    } else {
        // The previous crawl's URLs first, with what their last fetch left: a seed among
        // them is then queued once, as a revisit.
        if let Some(old) = previous {
            let n = load_previous(old, &mut crawls)?;
            if !display.quiet {
                eprint_line(&format!(
                    "spinneret: re-crawling {n} URLs of the crawl in {}",
                    old.display()
                ));
            }
        }
        add_seeds(&mut crawls, seeds, &bad_inputs);
        if let Some(first) = crawls.first_mut() {
            for sitemap in sitemaps {
                first.add_sitemap(sitemap);
            }
        }
    }

    // One progress line, partition 0's, with the figures of all.
    let board = Arc::new(Mutex::new(vec![Figures::default(); n]));
    let progress_of = |k: usize| {
        let mode = if k == 0 {
            display.progress
        } else {
            ProgressMode::Off
        };
        let mut p = Progress::new(started, mode, max_pages);
        if n > 1 {
            p = p.with_board(board.clone(), k);
        }
        if let Some((metrics, _)) = &metrics {
            p = p.with_metrics(metrics.slot(k));
        }
        if k == 0 {
            // `spinneret status` reads the whole crawl's figures from here.
            let mut snapshots = SnapshotWriter::new(&out_dir, started);
            // `spinneret report` charts the figures over time from here.
            let mut timeline = TimelineRecorder::open(&out_dir, started);
            p = p.with_flush_hook(Box::new(move |now, f, last| {
                if !last {
                    snapshots.write(now, f);
                }
                timeline.record(now, f, last);
            }));
        }
        p
    };
    let cfg = &crawler_config;
    // Seeds added with `spinneret add` (a durable crawl's: the inbox is in its state).
    let inbox = durable.then(|| Inbox::new(&out_dir, started));
    let results = match node.take() {
        Some(node) => run_all(crawls, vec![node], cfg, &progress_of, inbox),
        None => run_all(crawls, LocalExchange::group(n), cfg, &progress_of, inbox),
    };
    let report = conclude(results, durable, started, out_dir);
    if let (Some((board, server)), Ok(r)) = (metrics, &report) {
        if r.end != RunEnd::Interrupted {
            await_final_scrape(&board);
        }
        drop(server);
    }
    report
}

/// Gives whoever scrapes `board` the chance to see a run's final figures: waits until the
/// next scrape, at most [`MetricsBoard::final_wait`] (nothing if nobody has scraped). A
/// Ctrl-C ends the wait.
fn await_final_scrape(board: &MetricsBoard) {
    let seen = board.scrape_count();
    let until = Instant::now() + board.final_wait();
    while board.scrape_count() == seen && Instant::now() < until && !interrupted() {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Ends every partition's run (what is still queued gets its line, or stays journaled),
/// closes the output and adds the partitions' figures up.
fn conclude(
    results: Vec<Result<PartEnd, Failure>>,
    durable: bool,
    started: Instant,
    out_dir: std::path::PathBuf,
) -> Result<CrawlReport, Failure> {
    let now = Instant::now();
    let mut parts = Vec::new();
    let mut first_failure = None;
    for r in results {
        match r {
            Ok(p) => parts.push(p),
            Err(f) => {
                first_failure.get_or_insert(f);
            }
        }
    }
    // The worst end of any partition is the crawl's.
    let end = parts
        .iter()
        .map(|p| run_end(p.stop, &p.crawl, now))
        .max_by_key(|e| match e {
            RunEnd::Finished => 0,
            RunEnd::MaxPages => 1,
            RunEnd::MaxTime => 2,
            RunEnd::Interrupted => 3,
        })
        .unwrap_or(RunEnd::Finished);
    let outcome = if end == RunEnd::Interrupted {
        ReturnCode::Interrupted
    } else {
        ReturnCode::NotFetched
    };
    let mut stats = LoopStats::default();
    let mut counters = CrawlCounters::default();
    let mut frontier_left = 0;
    let mut urls_seen = 0u64;
    let mut seen_bytes = 0f64;
    let mut rejections: Vec<(&'static str, u64)> = Vec::new();
    let (mut body_bytes, mut revisits) = (0, 0);
    let (mut batches, mut batch_bytes) = (0, 0);
    let (mut source_time, mut store_time) = (Duration::ZERO, Duration::ZERO);
    let mut outputs = Vec::new();
    for p in parts {
        source_time += p.source_time;
        let mut crawl = p.crawl;
        frontier_left += crawl.frontier_len() as u64 + crawl.counters().left_for_resume;
        crawl.finish_unfetched(outcome, durable);
        if let Some(e) = crawl.take_io_error() {
            first_failure.get_or_insert(Failure::output(e));
        }
        stats.merge(&p.stats);
        counters.merge(crawl.counters());
        urls_seen += crawl.urls_seen() as u64;
        seen_bytes += crawl.seen_bytes_per_url() * crawl.urls_seen() as f64;
        for &(r, count) in crawl.rejections() {
            match rejections.iter_mut().find(|(name, _)| *name == r.name()) {
                Some((_, c)) => *c += count,
                None => rejections.push((r.name(), count)),
            }
        }
        batches += p.batches_out;
        batch_bytes += p.bytes_out;
        let output = crawl.into_sink();
        body_bytes += output.stored().body_bytes;
        revisits += output.stored().revisits;
        store_time += output.stored().time;
        outputs.push(output);
    }
    // The page workers' fingerprints (every partition's: one writer), final once finished.
    let gauges = outputs.first().map(Output::gauges);
    // Partition 0's output closes the files and says what was written: it goes last.
    let mut written = Written::default();
    while let Some(output) = outputs.pop() {
        match output.finish() {
            Ok(w) => written = w,
            Err(e) => {
                first_failure.get_or_insert(Failure::output(e));
            }
        }
    }
    if let Some(g) = gauges.map(|g| g.read()) {
        counters.pages_fingerprinted += g.pages_fingerprinted;
        counters.near_duplicates += g.near_duplicates;
    }
    if let Some(f) = first_failure {
        return Err(f);
    }
    if durable {
        // The journal is final and holds what the added seeds became.
        inbox::clean(&out_dir);
    }
    Ok(CrawlReport {
        stats,
        counters,
        frontier_left,
        urls_seen,
        seen_bytes_per_url: seen_bytes / urls_seen.max(1) as f64,
        rejections,
        body_bytes,
        revisits,
        warc_files: written.warc_files,
        indexes: written.indexes,
        out_dir,
        elapsed: started.elapsed(),
        end,
        exchange: (batches, batch_bytes),
        source_time,
        store_time,
    })
}

/// Runs a crawl from `seeds` on `loops` event loops to completion (or Ctrl-C, or its time
/// limit) and closes its output: [`execute`] for a new crawl in one process (`bench`).
pub fn execute_crawl(
    setup: Setup,
    config: CrawlConfig,
    seeds: Vec<Url>,
    bad_inputs: Vec<(String, ReturnCode)>,
    display: Display,
    loops: usize,
) -> Result<CrawlReport, Failure> {
    let parts = Partitions {
        loops,
        cluster: None,
    };
    let inputs = Inputs {
        seeds,
        bad_inputs,
        previous: None,
        sitemaps: Vec::new(),
    };
    execute(setup, config, inputs, display, false, parts)
}
