//! The crawl layer: turns the fetcher into a crawler (ARCHITECTURE §7–8).
//!
//! [`Crawl`] is a [`FetchSource`]: the driver asks it for the next URL and hands every
//! finished fetch back with the turn's `now`. It never touches files or reads the clock for
//! its decisions: what it learns goes to a [`sink::Sink`]. Around the fetcher it keeps:
//!
//! ```text
//! fetch_done ─► content seen? ─► sink (WARC, crawl.log) ─► scan links ─► normalize
//!   ─► URL filter ─► URL seen? ─► [host splitter] ─► frontier ─► robots check ─► next_fetch
//! ```
//!
//! robots.txt is checked immediately before a URL is fetched, not when it is queued; a host's
//! robots.txt is fetched through the same loop (as the host's first request, so it is spaced
//! like any other).
//!
//! Every seed and every admitted URL ends in exactly one sink line (before which a URL answered
//! 429 or 503 has a `RetryLater` line per try: `manners`): a fetch, or an outcome without one (refused seed, robots exclusion, blocked host, robots.txt unreachable, and —
//! through [`Crawl::finish_unfetched`] — whatever is still queued when the run stops, unless
//! the crawl is resumable: then a stop ends nothing, and the sink's journal keeps the queue,
//! as the sink is told of every URL entering the frontier ([`Sink::admitted`])). robots.txt
//! fetches have their own lines, counted apart ([`CrawlCounters::robots_lines`]).
//!
//! A partitioned crawl (`--loops`, a cluster node: [`splitter`]) sends a URL whose host
//! another partition owns to that partition instead of queuing it (`partitioned.rs`): the
//! *host splitter* above. Its URL-seen set remembers what it sent, so each URL leaves at most
//! once; the owner's set decides.

mod config;
pub use config::{
    CrawlConfig, DEFAULT_DELAY, DEFAULT_DELAY_FACTOR, DEFAULT_FRONTIER_RAM,
    DEFAULT_MAX_CRAWL_DELAY, DEFAULT_MAX_LINKS_PER_PAGE, MAX_REDIRECTS,
};
mod counters;
pub use counters::{
    CrawlCounters, DiscoveryCounters, FocusCounters, LineTally, RevisitCounters, StageTimes,
};
mod discover;
mod done;
pub mod due;
mod entry;
pub mod focus;
mod focused;
pub mod frontier;
mod host_state;
pub mod link_key;
mod manners;
pub mod revisit;
pub use host_state::{BadHostState, HostsRestored};
pub use manners::{CookieConfig, MannersConfig, DEFAULT_MAX_RETRIES, DEFAULT_MAX_RETRY_AFTER};
mod page_shapes;
pub use page_shapes::PageShapes;
mod partitioned;
mod refresh;
pub use partitioned::partition_key;
pub mod schedule;
pub mod sink;
pub mod spill;
pub mod splitter;
pub mod url_filter;
pub mod url_seen;
pub mod urlnorm;

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use slab::Slab;
use url::Url;

use crate::content::NearDups;
use crate::fetcher::{FetchDone, FetchRequest, FetchSource, Next, PayloadDigest};
use crate::links::Links;
use crate::robots::{Check, FetchResult, RobotsCache};
use crate::ReturnCode;
use due::{DueUrl, DueUrls};
use entry::Entry;
use frontier::{BackQueueId, Frontier, FrontierConfig, Pop};
use manners::Manners;
use revisit::Seen;
use sink::{Hop, Scheduled, Sink, Via};
use spill::{SpillStore, Spillable};
use splitter::Splitter;
use url_filter::{Reject, UrlFilter};
use url_seen::{url_key, UrlSeen};
use urlnorm::origin_key;

/// Redirect hops followed for robots.txt (RFC 9309 asks for at least five).
pub const MAX_ROBOTS_REDIRECTS: u8 = 5;
/// robots.txt fetch failures (5xx, 429, unreachable) after which an origin's URLs are
/// excluded rather than waited for: "disallow all for now" must not stall a crawl forever.
pub const MAX_ROBOTS_FAILURES: u8 = 3;
/// How long robots.txt rules are cached.
pub const ROBOTS_MAX_AGE: Duration = Duration::from_secs(24 * 3600);
/// First retry delay after a failed robots.txt fetch (doubles per failure).
pub const ROBOTS_RETRY: Duration = Duration::from_secs(10);
/// Origins whose robots rules are cached at once.
pub const ROBOTS_CACHE_CAPACITY: usize = 100_000;
/// Front-queue priorities: depth 0 (seeds), 1, 2, and everything deeper.
pub const PRIORITIES: usize = 4;
/// Frontier pops examined in one `next_fetch` call before yielding to the loop (URLs
/// excluded by robots are consumed without a fetch).
const MAX_POPS_PER_CALL: usize = 256;
/// Host names queued for DNS prefetch at once.
const MAX_PREFETCH_QUEUE: usize = 10_000;

/// What one queued URL costs in memory (a parsed `Url` with its text, the shared referrer,
/// its queue slot with the queue's slack, allocator overhead): turns `frontier_ram` into a
/// count. Measured: peak RSS grows 54 MB when 126,000 more entries stay in RAM (a crawl of
/// 5 million queued URLs at two budgets, tests/durable.rs), about 430 bytes each.
const ENTRY_RAM_ESTIMATE: usize = 430;

/// What a fetch in flight is for.
enum Job {
    Page {
        entry: Entry,
        queue: BackQueueId,
    },
    Robots {
        origin: String,
        queue: BackQueueId,
        hops: u8,
    },
}

pub struct Crawl<S: Sink> {
    config: CrawlConfig,
    frontier: Frontier<Entry>,
    filter: UrlFilter,
    seen: UrlSeen,
    content_seen: HashSet<PayloadDigest>,
    robots: RobotsCache,
    robots_failures: HashMap<String, u8>,
    /// Hosts the address policy refused: their URLs end at once, without a request.
    blocked_hosts: HashSet<String>,
    /// The first blocked host, until the app takes it to tell the user.
    blocked_notice: Option<String>,
    inflight: Slab<Job>,
    /// Fetches to issue before anything from the frontier (robots.txt redirect hops).
    ready: VecDeque<FetchRequest>,
    links: Links,
    /// Reused: the URL-seen keys of the page being scanned's outlinks, for the sink's link
    /// graph ([`Sink::outlinks`]).
    outlinks: Vec<u64>,
    sink: S,
    prefetch: VecDeque<String>,
    hosts_seen: HashSet<String>,
    counters: CrawlCounters,
    pages_issued: u64,
    deadline: Option<Instant>,
    /// First storage error: the run stops and reports it.
    io_error: Option<std::io::Error>,
    /// Reused: the encoding of an entry given to [`Sink::admitted`].
    entry_buf: Vec<u8>,
    /// No request before this (a resumed crawl's first contact with its hosts).
    hold: Option<Instant>,
    /// A partitioned crawl: where URLs of other partitions' hosts go.
    splitter: Option<Splitter>,
    /// The last clock reading given (`admit` has none of its own; batches need only their age).
    last_now: Instant,
    /// When the per-host state is next saved (with [`CrawlConfig::save_hosts_every`]).
    next_hosts_save: Option<Instant>,
    /// Reused: the per-host state's encoding.
    hosts_buf: Vec<u8>,
    /// Cookies, and what servers that say "later" asked for (`manners`).
    manners: Manners,
    /// A continuous crawl's source of URLs due again, and when it is next asked.
    due_urls: Option<Box<dyn DueUrls>>,
    next_due_check: Instant,
    /// Reused: what one ask returned.
    due_buf: Vec<DueUrl>,
    /// A continuous crawl's revisit budget price (`schedule::budgeted_interval`'s
    /// `marginal`, seconds; 0 otherwise, and the schedule is unpriced): raised while
    /// revisits come late, so the pages that change too fast to catch get fewer visits,
    /// and lowered while they come on time, so the fetches politeness leaves are spent.
    price: f64,
    /// How late revisits are fetched, seconds, a moving average.
    lateness: f64,
    /// When the price last moved (unix seconds).
    price_moved_at: u64,
    /// What each host's sitemaps may still bring (`discover`).
    sitemap_budgets: HashMap<String, crate::discovery::sitemap::HostBudget>,
    /// A focused crawl's topic, and its reused buffers (`focused`).
    focus: Option<focused::Focus>,
    /// Main text, sketch and the partition's sketch index (`content::near_dups`), when
    /// the crawl fingerprints on the loop (not `near_dups_in_sink`, or the trap guard on).
    near_dups: NearDups,
}

impl<S: Sink> Crawl<S> {
    /// A crawl whose frontier stays in memory, made at `now`, which is `wall` on the wall
    /// clock: the crawl reads no clock, and what it needs of the wall clock (cookies, HTTP
    /// dates, due times, the date of a URL ended without a fetch) it carries on `now`.
    pub fn new(config: CrawlConfig, sink: S, now: Instant, wall: SystemTime) -> Crawl<S> {
        let frontier = Frontier::new(&Crawl::<S>::frontier_config(&config));
        Crawl::with_frontier(config, sink, (now, wall), frontier)
    }

    /// A crawl whose frontier keeps about `config.frontier_ram` bytes of URLs in memory and
    /// spills the rest to `store` (the store's segment files); `now` and `wall` as for
    /// [`Crawl::new`].
    pub fn with_spill(
        config: CrawlConfig,
        sink: S,
        now: Instant,
        wall: SystemTime,
        store: Box<dyn SpillStore>,
    ) -> Crawl<S> {
        let frontier = Frontier::with_store(&Crawl::<S>::frontier_config(&config), store);
        Crawl::with_frontier(config, sink, (now, wall), frontier)
    }

    fn frontier_config(config: &CrawlConfig) -> FrontierConfig {
        FrontierConfig {
            // A focused crawl ranks links finer than depth does.
            priorities: if config.focus.is_some() {
                focused::FOCUS_PRIORITIES
            } else {
                PRIORITIES
            },
            back_queues: config.back_queues,
            ram_items: config.frontier_ram / ENTRY_RAM_ESTIMATE,
            // A focused crawl's priorities hold within a host too.
            rank_within_hosts: config.focus.is_some(),
        }
    }

    fn with_frontier(
        config: CrawlConfig,
        sink: S,
        (now, wall): (Instant, SystemTime),
        frontier: Frontier<Entry>,
    ) -> Crawl<S> {
        Crawl {
            frontier,
            filter: UrlFilter::new(config.filter.clone()),
            seen: UrlSeen::new(),
            content_seen: HashSet::new(),
            robots: RobotsCache::new(
                &config.product_token,
                ROBOTS_MAX_AGE,
                ROBOTS_RETRY,
                ROBOTS_CACHE_CAPACITY,
            ),
            robots_failures: HashMap::new(),
            blocked_hosts: HashSet::new(),
            blocked_notice: None,
            inflight: Slab::new(),
            ready: VecDeque::new(),
            links: Links::new(),
            outlinks: Vec::new(),
            sink,
            prefetch: VecDeque::new(),
            hosts_seen: HashSet::new(),
            counters: CrawlCounters::default(),
            pages_issued: 0,
            deadline: config.max_time.map(|t| now + t),
            io_error: None,
            entry_buf: Vec::with_capacity(256),
            hold: None,
            splitter: None,
            last_now: now,
            next_hosts_save: config.save_hosts_every.map(|every| now + every),
            hosts_buf: Vec::new(),
            // The wall clock, carried on `now` (cookie expiry, HTTP dates): see `manners`.
            manners: Manners::new(&config.manners, now, wall).0,
            due_urls: None,
            next_due_check: now,
            due_buf: Vec::new(),
            // Where a page changing once per initial interval keeps that interval.
            price: if config.continuous {
                done::PRICE_AT_ONE_VISIT_PER_CHANGE * config.schedule.initial_interval as f64
            } else {
                0.0
            },
            lateness: 0.0,
            price_moved_at: 0,
            sitemap_budgets: HashMap::new(),
            focus: config.focus.as_deref().and_then(focused::Focus::new),
            near_dups: NearDups::new(config.near_dup_ram).with_threshold(config.near_dup_threshold),
            config,
        }
    }

    /// Where the near-duplicate index spills its runs past `near_dup_ram` (the store's
    /// files; without one they stay in memory). Before the first page.
    pub fn set_near_dup_spill(&mut self, spill: crate::content::near_dups::BoxedSpill) {
        self.near_dups.set_spill(self.config.near_dup_ram, spill);
    }

    /// Adds a seed: it defines the scope and enters the frontier at depth 0. A seed the
    /// filter refuses (domain rules, length, trap guards) gets its line at once, and the
    /// outcome is returned; a seed given twice is queued once.
    pub fn add_seed(&mut self, url: Url) -> Result<(), ReturnCode> {
        self.filter.add_seed(&url);
        if !self.owns(&url) {
            // Its owner checks it (and logs a refusal) when it arrives.
            self.queue(url, 0, None, 0, Hop::Seed);
            return Ok(());
        }
        if let Err(reason) = self.filter.check_seed(&url) {
            let code = reason.return_code();
            self.log_unfetched(url.as_str(), Via::seed(), code, None);
            return Err(code);
        }
        self.queue(url, 0, None, 0, Hop::Seed);
        Ok(())
    }

    /// Logs a line for a URL the user gave that could not be used (e.g. does not parse).
    pub fn log_rejected_input(&mut self, text: &str, outcome: ReturnCode) {
        self.log_unfetched(text, Via::seed(), outcome, None);
    }

    /// The instant `max_time` ends, if set.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// Whether `max_pages` fetches were issued.
    pub fn page_limit_reached(&self) -> bool {
        self.config
            .max_pages
            .is_some_and(|max| self.pages_issued >= max)
    }

    /// The first host refused by the address policy, once (the app tells the user how to
    /// allow it).
    pub fn take_blocked_notice(&mut self) -> Option<String> {
        self.blocked_notice.take()
    }

    /// When the run stops with URLs still queued (`--max-time`, `--max-pages`, Ctrl-C): ends
    /// each with its one line, as `outcome`, unless `keep_queued` (a resumable crawl: they
    /// stay queued in its journal, and get their line when a resumed run ends them). Call
    /// after the driver finished or interrupted, so nothing is in flight; robots.txt redirect
    /// hops not yet issued are logged too.
    pub fn finish_unfetched(&mut self, outcome: ReturnCode, keep_queued: bool) {
        if keep_queued && self.config.save_hosts_every.is_some() {
            // Before the robots.txt hops below give their hosts a next contact at `far`.
            self.save_hosts(self.last_now);
        }
        // Later than any host's next contact: every queued URL pops at once.
        let far = self.last_now + Duration::from_secs(100 * 365 * 24 * 3600);
        while let Some(req) = self.ready.pop_front() {
            if let Some(Job::Robots { queue, .. }) = self.inflight.try_remove(req.tag as usize) {
                self.frontier.done(queue, far, Duration::ZERO);
            }
            self.log_robots_unfetched(req.url.as_str(), outcome);
        }
        if keep_queued {
            return;
        }
        // Each pop takes one URL, so this ends within the frontier's length (+1 for the last
        // look); Wait cannot happen at `far`, and Busy only if something were in flight.
        for _ in 0..=self.frontier.len() {
            match self.frontier.pop(far) {
                Pop::Ready { queue, item, .. } => {
                    // A URL whose host's robots.txt failed and waits for a retry was held
                    // back by that, not by the stop: say so.
                    let waiting_on_robots = !self.config.ignore_robots
                        && self.robots_failures.contains_key(&origin_key(&item.url));
                    let outcome = if waiting_on_robots {
                        self.counters.robots_unreachable += 1;
                        ReturnCode::RobotsUnreachable
                    } else {
                        outcome
                    };
                    let at = self.manners.wall(self.last_now);
                    let scheduled = self.scheduled(&item, Seen::Unknown, None, at, false);
                    self.log_unfetched(item.url.as_str(), item.via(), outcome, Some(&scheduled));
                    self.frontier.done(queue, far, Duration::ZERO);
                }
                Pop::Wait(_) | Pop::Busy | Pop::Empty => break,
            }
        }
    }

    /// Logs a line for a URL (not robots.txt) that ended without a fetch.
    fn log_unfetched(
        &mut self,
        url: &str,
        via: Via<'_>,
        outcome: ReturnCode,
        scheduled: Option<&Scheduled<'_>>,
    ) {
        self.counters.url_lines.add(outcome, 0);
        if let Err(e) = self.sink.log_unfetched(url, via, outcome, scheduled) {
            self.io_error.get_or_insert(e);
        }
    }

    fn log_robots_unfetched(&mut self, url: &str, outcome: ReturnCode) {
        self.counters.robots_lines.add(outcome, 0);
        let via = Via::new(None, Hop::Prerequisite);
        if let Err(e) = self.sink.log_unfetched(url, via, outcome, None) {
            self.io_error.get_or_insert(e);
        }
    }

    /// Remembers a host the address policy refused; the first one is reported.
    fn block_host(&mut self, url: &Url) {
        let host = url.host_str().unwrap_or_default();
        if !self.blocked_hosts.contains(host) {
            if self.blocked_hosts.is_empty() {
                self.blocked_notice = Some(host.to_string());
            }
            self.blocked_hosts.insert(host.to_string());
        }
    }

    pub fn counters(&self) -> &CrawlCounters {
        &self.counters
    }

    pub fn frontier_len(&self) -> usize {
        self.frontier.len()
    }

    /// Of [`Crawl::frontier_len`], the URLs held in memory (the rest are spilled to disk).
    pub fn frontier_in_ram(&self) -> usize {
        self.frontier.in_ram()
    }

    pub fn urls_seen(&self) -> usize {
        self.seen.len()
    }

    pub fn seen_bytes_per_url(&self) -> f64 {
        self.seen.bytes_used() as f64 / self.seen.len().max(1) as f64
    }

    pub fn rejections(&self) -> &[(Reject, u64)] {
        self.filter.rejections()
    }

    pub fn sink(&mut self) -> &mut S {
        &mut self.sink
    }

    /// Whether a storage error stopped the crawl.
    pub fn has_io_error(&self) -> bool {
        self.io_error.is_some()
    }

    /// The first storage error, taken: the run stops and reports it.
    pub fn take_io_error(&mut self) -> Option<std::io::Error> {
        self.io_error.take()
    }

    /// Makes what the sink stored so far readable (see [`Sink::flush`]).
    pub fn flush(&mut self) -> std::io::Result<()> {
        self.sink.flush()
    }

    /// A journal position after everything recorded so far ([`Sink::journal_mark`]).
    pub fn journal_mark(&mut self) -> std::io::Result<u64> {
        self.sink.journal_mark()
    }

    /// How far the sink's journal is committed ([`Sink::committed`]).
    pub fn committed(&self) -> u64 {
        self.sink.committed()
    }

    pub fn into_sink(self) -> S {
        self.sink
    }

    /// A URL found on a page (or a redirect target): filter, de-duplicate, queue. An embed
    /// is fetched even outside the scope and past the depth limit (wget -p, Heritrix's embed
    /// hops); the other filters still apply.
    fn admit(&mut self, url: Url, depth: u32, referrer: Option<Arc<str>>, hops: u8, hop: Hop) {
        self.admit_entry(Entry::new(url, depth, referrer, hops, hop));
    }

    /// [`Crawl::admit`] for an entry made by its finder: a focused crawl's link with its
    /// priority, a sitemap's or feed's URL with its dates as the schedule's priors.
    fn admit_entry(&mut self, entry: Entry) {
        if self.passes_filter(&entry.url, entry.depth, entry.hop) {
            self.queue_new(entry);
        }
    }

    /// The filter's verdict on a URL found at `depth` by `hop` (an embed's is wider);
    /// a refusal is counted by the filter, by reason.
    fn passes_filter(&mut self, url: &Url, depth: u32, hop: Hop) -> bool {
        let verdict = if hop == Hop::Embed {
            self.filter.check_embed(url)
        } else {
            self.filter.check(url, depth)
        };
        verdict.is_ok()
    }

    /// De-duplicates and queues a URL the filter passed, or (a partitioned crawl) forwards it
    /// to the partition owning its host. The URL-seen test comes first: a partition's set
    /// also holds the other partitions' URLs it forwarded (Mercator's cache of them), so each
    /// is sent at most once from here; the owner's set decides.
    fn queue(&mut self, url: Url, depth: u32, referrer: Option<Arc<str>>, hops: u8, hop: Hop) {
        self.queue_new(Entry::new(url, depth, referrer, hops, hop));
    }

    /// Queues (or forwards) an entry whose URL the URL-seen set does not hold yet.
    fn queue_new(&mut self, entry: Entry) {
        if !self.seen.insert(url_key(&entry.url)) {
            self.counters.duplicate_urls += 1;
            return;
        }
        self.enqueue(entry);
    }

    /// Queues (or forwards) a URL past the URL-seen test: a new one, or one fetched again.
    fn enqueue(&mut self, entry: Entry) {
        self.entry_buf.clear();
        entry.encode(&mut self.entry_buf);
        // Journaled here even when forwarded: until the owner has it, it is this partition's.
        self.sink.admitted(entry.url.as_str(), &self.entry_buf);
        if let Some(to) = self.foreign_owner(&entry.url) {
            self.forward(to);
            return;
        }
        self.filter.admitted(&entry.url);
        self.counters.urls_admitted += 1;
        self.push_entry(entry);
    }

    fn push_entry(&mut self, entry: Entry) {
        let priority = entry.priority.map_or(entry.depth as usize, usize::from);
        self.push_entry_at(entry, Some(priority));
    }

    /// Queues an entry in front queue `priority` (its depth), or, `None`, as a revisit: after
    /// its host's new URLs.
    fn push_entry_at(&mut self, entry: Entry, priority: Option<usize>) {
        let host = entry.url.host_str().unwrap_or_default().to_string();
        if self.hosts_seen.insert(host.clone()) && self.prefetch.len() < MAX_PREFETCH_QUEUE {
            self.prefetch.push_back(host.clone());
        }
        match priority {
            Some(p) => self.frontier.push(&host, p, entry),
            None => self.frontier.push_later(&host, entry),
        }
    }

    /// No request before `until`. A resumed crawl does not know when it last contacted each
    /// host, so it waits out `--delay` before its first request: no host hears from it sooner
    /// than that after the last request before the stop.
    pub fn hold_until(&mut self, until: Instant) {
        self.hold = Some(until);
    }

    fn limits_reached(&self, now: Instant) -> bool {
        self.page_limit_reached() || self.deadline.is_some_and(|d| now >= d)
    }

    /// The gap before the host may be contacted again (ARCHITECTURE §8), longer for a host
    /// that answered 429 (`manners`).
    fn gap(&self, done: &FetchDone<'_>, crawl_delay: Option<Duration>) -> Duration {
        let t = done.timings;
        let server_time = t.connect + t.first_byte + t.receive;
        let by_factor = server_time.mul_f64(self.config.delay_factor.max(0.0));
        let by_robots = crawl_delay
            .map(|d| d.min(self.config.max_crawl_delay))
            .unwrap_or(Duration::ZERO);
        let host = done.request.url.host_str().unwrap_or_default();
        let slowdown = self.manners.slowdown(host);
        self.config
            .delay
            .max(by_factor)
            .max(by_robots)
            .saturating_mul(slowdown)
    }

    /// Ends a popped URL without a request: robots exclusion, robots.txt unreachable, or a
    /// blocked host.
    fn end_unfetched(&mut self, entry: &Entry, outcome: ReturnCode) {
        match outcome {
            ReturnCode::RobotsExcluded => self.counters.robots_excluded += 1,
            ReturnCode::RobotsUnreachable => self.counters.robots_unreachable += 1,
            ReturnCode::PrivateAddressBlocked => self.counters.blocked_without_fetch += 1,
            _ => {}
        }
        self.manners.forget(url_key(&entry.url));
        let at = self.manners.wall(self.last_now);
        let scheduled = self.scheduled(entry, Seen::Unknown, None, at, false);
        self.log_unfetched(entry.url.as_str(), entry.via(), outcome, Some(&scheduled));
    }

    fn issue(&mut self, job: Job, url: Url) -> Next {
        let queue = match &job {
            Job::Page { queue, .. } | Job::Robots { queue, .. } => *queue,
        };
        // A host with more URLs queued keeps its connection while it waits out its delay.
        let more_for_host = self.frontier.has_queued(queue);
        // A revisit asks whether the page changed, when a 304 could be stored: the payload
        // it would refer to is known.
        let validators = match &job {
            Job::Page { entry, .. } => entry
                .last
                .as_ref()
                .filter(|l| l.digest.is_some() && l.copy.is_some())
                .and_then(|l| l.validators.clone())
                .map(Box::new),
            Job::Robots { .. } => None,
        };
        let tag = self.inflight.insert(job) as u64;
        let cookie = self.manners.cookie_for(&url, self.last_now);
        Next::Fetch(FetchRequest {
            cookie,
            more_for_host,
            validators,
            ..FetchRequest::new(url, tag)
        })
    }
}

impl<S: Sink> FetchSource for Crawl<S> {
    fn next_fetch(&mut self, now: Instant) -> Next {
        self.last_now = now;
        self.save_hosts_if_due(now);
        match self.hold {
            Some(t) if now < t => return Next::Wait(self.deadline.map_or(t, |d| t.min(d))),
            Some(_) => self.hold = None,
            None => {}
        }
        if let Some(req) = self.ready.pop_front() {
            return Next::Fetch(req);
        }
        if let Some(e) = self.frontier.take_error() {
            self.io_error.get_or_insert(e);
        }
        if self.io_error.is_some() || self.limits_reached(now) {
            return Next::Done;
        }
        if self.config.continuous {
            self.take_due(now);
        }
        for _ in 0..MAX_POPS_PER_CALL {
            let (queue, entry) = match self.frontier.pop(now) {
                Pop::Ready { queue, item, .. } => (queue, item),
                // Wake at the deadline at the latest: a host waiting for a robots.txt retry
                // must not keep the run past --max-time.
                Pop::Wait(t) => return Next::Wait(self.deadline.map_or(t, |d| t.min(d))),
                Pop::Busy => return Next::Idle,
                // A continuous crawl never runs out: the next due URLs are asked for then.
                Pop::Empty if self.config.continuous => {
                    let t = self.next_due_check.max(now + Duration::from_millis(1));
                    return Next::Wait(self.deadline.map_or(t, |d| t.min(d)));
                }
                Pop::Empty if self.inflight.is_empty() => return Next::Done,
                Pop::Empty => return Next::Idle,
            };
            if self
                .blocked_hosts
                .contains(entry.url.host_str().unwrap_or_default())
            {
                self.end_unfetched(&entry, ReturnCode::PrivateAddressBlocked);
                self.frontier.done(queue, now, Duration::ZERO);
                continue;
            }
            if self.config.ignore_robots {
                self.pages_issued += 1;
                let url = entry.url.clone();
                return self.issue(Job::Page { entry, queue }, url);
            }
            let origin = origin_key(&entry.url);
            if self.robots_failures.get(&origin).copied().unwrap_or(0) >= MAX_ROBOTS_FAILURES {
                self.end_unfetched(&entry, ReturnCode::RobotsUnreachable);
                self.frontier.done(queue, now, Duration::ZERO);
                continue;
            }
            match self
                .robots
                .check(&origin, crate::http::path_and_query(&entry.url), now)
            {
                Check::Allowed => {
                    self.pages_issued += 1;
                    let url = entry.url.clone();
                    return self.issue(Job::Page { entry, queue }, url);
                }
                Check::Disallowed => {
                    self.end_unfetched(&entry, ReturnCode::RobotsExcluded);
                    // No request was made: the host's spacing is unchanged.
                    self.frontier.done(queue, now, Duration::ZERO);
                }
                Check::NeedFetch => {
                    let robots_url = entry.url.join("/robots.txt");
                    self.frontier.push_front(queue, entry);
                    match robots_url {
                        Ok(url) => {
                            let job = Job::Robots {
                                origin,
                                queue,
                                hops: 0,
                            };
                            return self.issue(job, url);
                        }
                        Err(_) => {
                            // Unreachable for an http(s) URL with a host; treat as unreachable.
                            self.robots
                                .fetch_done(&origin, FetchResult::Unreachable, now);
                            self.frontier.done(queue, now, Duration::ZERO);
                        }
                    }
                }
                Check::Pending => {
                    // In back-off after a failed robots.txt fetch: come back when it may retry.
                    self.frontier.push_front(queue, entry);
                    let retry = self
                        .robots
                        .next_retry(&origin)
                        .map_or(ROBOTS_RETRY, |t| t.saturating_duration_since(now));
                    self.frontier
                        .done(queue, now, retry.max(Duration::from_millis(1)));
                }
            }
        }
        // Out of pops for this call with more perhaps queued: come back at once.
        Next::Wait(now)
    }

    fn fetch_done(&mut self, done: &FetchDone<'_>, now: Instant) {
        self.last_now = now;
        let t = done.timings;
        let stages = &mut self.counters.stages;
        stages.dns += t.dns;
        stages.wait += t.wait;
        stages.connect += t.connect;
        stages.first_byte += t.first_byte;
        stages.receive += t.receive;
        let key = done.request.tag as usize;
        let Some(job) = self.inflight.try_remove(key) else {
            return; // not ours: cannot happen, since every request we issue carries its key
        };
        // Every response feeds the jar: robots.txt, redirects, errors.
        let cookies_set = self.manners.take_cookies(done, now) > 0;
        match job {
            Job::Page { entry, queue } => self.page_done(done, entry, queue, now, cookies_set),
            Job::Robots {
                origin,
                queue,
                hops,
            } => self.robots_done(done, origin, queue, hops, now),
        }
    }

    fn poll_prefetch(&mut self) -> Option<String> {
        self.prefetch.pop_front()
    }
}

#[cfg(test)]
mod manners_tests;
#[cfg(test)]
mod seed_line_tests;
#[cfg(test)]
mod sim;
#[cfg(test)]
mod tests;
