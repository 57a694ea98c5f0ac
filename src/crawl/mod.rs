//! The crawl layer: turns the fetcher into a crawler (ARCHITECTURE §7–8).
//!
//! [`Crawl`] is a [`FetchSource`]: the driver asks it for the next URL and hands every
//! finished fetch back with the turn's `now`. It never touches files or reads a clock: time
//! comes in as `now` (and the wall clock once, when it is made, and with each fetch as
//! [`FetchDone::at`]); what it learns goes to a [`sink::Sink`]. Around the fetcher it keeps:
//!
//! ```text
//! fetch_done ─► content seen? ─► sink (WARC, crawl.log) ─► scan links ─► normalize
//!   ─► URL filter ─► URL seen? ─► [host splitter] ─► frontier ─► robots check ─► next_fetch
//! ```
//!
//! `Crawl` holds the verbs the driver and the app call, and the frontier and what is in
//! flight; each concern's state is an owner of its own, whose verdicts it acts on:
//! `admission` (what enters the frontier: the URL filter, the URL-seen set, a page's link
//! keys and outlinks, the host splitter), `host_gate` (whether and when a host may be
//! asked: robots.txt, manners, the politeness gap, blocked hosts), `auth` (which origin
//! gets which credentials, and what a 401 means), `page_content` (content
//! seen, near-duplicates, a focused crawl's scores) and `revisit_budget` (when a URL is
//! due again, a continuous crawl's price and due URLs).
//!
//! robots.txt is checked immediately before a URL is fetched, not when it is queued; a host's
//! robots.txt is fetched through the same loop (as the host's first request, so it is spaced
//! like any other).
//!
//! Every seed and every admitted URL ends in exactly one sink line (before which a URL
//! answered 429 or 503 has a `RetryLater` line per try: `manners`): a fetch, or an outcome
//! without one (refused seed, robots exclusion, blocked host, robots.txt unreachable, and —
//! through [`Crawl::finish_unfetched`] — whatever is still queued when the run stops, unless
//! the crawl is resumable: then a stop ends nothing, and the sink's journal keeps the queue,
//! as the sink is told of every URL entering the frontier ([`Sink::admitted`])). robots.txt
//! fetches have their own lines, counted apart ([`CrawlCounters::robots_lines`]).
//!
//! A partitioned crawl (`--loops`, a cluster node: [`splitter`]) sends a URL whose host
//! another partition owns to that partition instead of queuing it (`partitioned.rs`): the
//! *host splitter* above. Its URL-seen set remembers what it sent, so each URL leaves at most
//! once; the owner's set decides.

mod admission;
mod auth;
pub use auth::{Attach, Auth, AuthConfig, AuthVerdict, Credential, MAX_SEED_ORIGINS};
pub mod canon;
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
mod host_budget;
mod host_gate;
pub use host_gate::{
    BadHostState, HostsRestored, MAX_ROBOTS_FAILURES, MAX_ROBOTS_REDIRECTS, ROBOTS_CACHE_CAPACITY,
    ROBOTS_MAX_AGE, ROBOTS_RETRY,
};
pub mod link_key;
mod manners;
pub use manners::{CookieConfig, MannersConfig, DEFAULT_MAX_RETRIES, DEFAULT_MAX_RETRY_AFTER};
mod page_content;
mod page_shapes;
pub use page_shapes::PageShapes;
mod partitioned;
pub use partitioned::partition_key;
pub mod recent_visits;
pub mod revisit;
mod revisit_budget;
mod robots_hops;
pub mod schedule;
pub mod sink;
pub mod spill;
pub mod splitter;
pub mod url_filter;
pub mod url_seen;
pub mod urlnorm;

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use slab::Slab;
use url::Url;

use crate::fetcher::{FetchDone, FetchRequest, FetchSource, Next};
use crate::links::Links;
use crate::ReturnCode;
use admission::{Admission, LinkPolicy, Route, Verdict};
use due::DueUrls;
use entry::Entry;
use frontier::{BackQueueId, Frontier, FrontierConfig, Pop};
use host_gate::{Gate, HostGate};
use page_content::PageContent;
use revisit::{LastFetch, Seen};
use revisit_budget::{Cost, RevisitBudget};
use robots_hops::{HopNext, RobotsHops};
use sink::{Hop, Scheduled, Sink, Via};
use spill::SpillStore;
use url_filter::Reject;
use url_seen::url_key;

/// Front-queue priorities: depth 0 (seeds), 1, 2, and everything deeper.
pub const PRIORITIES: usize = 4;
/// Frontier pops examined in one `next_fetch` call before yielding to the loop (URLs
/// excluded by robots are consumed without a fetch).
const MAX_POPS_PER_CALL: usize = 256;

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
        /// The other host this redirect hop holds (`robots_hops`), released when it ends.
        held: Option<String>,
    },
}

/// A crawl: the frontier, what is in flight, and the owners whose verdicts it acts on (see
/// the module's doc), storing through `S`.
pub struct Crawl<S: Sink> {
    config: CrawlConfig,
    frontier: Frontier<Entry>,
    /// What enters the frontier: the URL filter, the URL-seen set, the host splitter.
    admission: Admission,
    /// Whether and when a host may be asked: robots.txt, manners, politeness.
    gate: HostGate,
    /// Credentials per origin: which requests carry them, what a 401 means.
    auth: Auth,
    /// Content seen, near-duplicates, a focused crawl's scores.
    content: PageContent,
    /// When URLs are due again: the schedule, a continuous crawl's price and due URLs.
    revisits: RevisitBudget,
    inflight: Slab<Job>,
    /// Fetches to issue before anything from the frontier (robots.txt redirect hops, a
    /// page fetched again with credentials after a 401).
    ready: VecDeque<FetchRequest>,
    /// robots.txt redirect hops to another host, waiting for that host's turn.
    hops: RobotsHops,
    /// Reused: the links of the page being followed.
    links: Links,
    sink: S,
    counters: CrawlCounters,
    pages_issued: u64,
    deadline: Option<Instant>,
    /// First storage error: the run stops and reports it.
    io_error: Option<std::io::Error>,
    /// The last clock reading given (`admit` has none of its own; batches need only their age).
    last_now: Instant,
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
            admission: Admission::new(
                config.filter.clone(),
                LinkPolicy {
                    page_requisites: config.page_requisites,
                    robots_directives: config.robots_directives,
                    follow_nofollow_links: config.follow_nofollow_links,
                    agent: config.product_token.clone(),
                    canon: config.canon.clone(),
                },
            ),
            gate: HostGate::new(&config, now, wall),
            auth: Auth::new(config.auth.clone()),
            content: PageContent::new(&config),
            revisits: RevisitBudget::new(config.schedule, config.continuous, now),
            inflight: Slab::new(),
            ready: VecDeque::new(),
            hops: RobotsHops::default(),
            links: Links::new(),
            sink,
            counters: CrawlCounters::default(),
            pages_issued: 0,
            deadline: config.max_time.map(|t| now + t),
            io_error: None,
            last_now: now,
            config,
        }
    }

    /// Where the near-duplicate index spills its runs past `near_dup_ram` (the store's
    /// files; without one they stay in memory). Before the first page.
    pub fn set_near_dup_spill(&mut self, spill: crate::content::near_dups::BoxedSpill) {
        self.content.set_near_dup_spill(spill);
    }

    /// Adds a seed: it defines the scope and enters the frontier at depth 0. A seed the
    /// filter refuses (domain rules, length, trap guards) gets its line at once, and the
    /// outcome is returned; a seed given twice is queued once.
    pub fn add_seed(&mut self, url: Url) -> Result<(), ReturnCode> {
        self.admission.add_to_scope(&url);
        self.auth.add_seed(&url);
        if !self.admission.owns(&url) {
            // Its owner checks it (and logs a refusal) when it arrives.
            self.queue(url, 0, None, 0, Hop::Seed);
            return Ok(());
        }
        if let Err(reason) = self.admission.check_seed(&url) {
            let code = reason.return_code();
            self.log_unfetched(url.as_str(), Via::seed(), code, None);
            return Err(code);
        }
        self.queue(url, 0, None, 0, Hop::Seed);
        Ok(())
    }

    /// A seed given again when a crawl resumes: queued if the journal never held it (the run
    /// was killed before the commit that would have), else dropped as seen. A seed the filter
    /// refuses is not logged again: the first run logged it. Neither is counted: a seed the
    /// journal has is no duplicate the crawl found.
    pub fn add_seed_again(&mut self, url: Url) {
        if self.admission.owns(&url) && self.admission.check_seed(&url).is_err() {
            return;
        }
        if self.admission.first_seen(&url) {
            self.enqueue(Entry::new(url, 0, None, 0, Hop::Seed));
        }
    }

    /// Logs a line for a URL the user gave that could not be used (e.g. does not parse).
    pub fn log_rejected_input(&mut self, text: &str, outcome: ReturnCode) {
        self.log_unfetched(text, Via::seed(), outcome, None);
    }

    /// Queues a URL an earlier crawl fetched (`--previous`), with what that fetch left, so
    /// it is asked for with its validators. It was in that crawl's scope: the filter is not
    /// asked again; a URL queued before (a seed, an earlier line) is queued once.
    pub fn add_previous(&mut self, url: Url, depth: u32, hop: Hop, last: LastFetch) {
        self.queue_new(Entry {
            last: Some(Box::new(last)),
            ..Entry::new(url, depth, None, 0, hop)
        });
    }

    /// Where a continuous crawl ([`CrawlConfig::continuous`]) finds the URLs due again.
    pub fn set_due_urls(&mut self, due: Box<dyn DueUrls>) {
        self.revisits.set_due_urls(due);
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
        self.gate.take_blocked_notice()
    }

    /// When the run stops with URLs still queued (`--max-time`, `--max-pages`, Ctrl-C): ends
    /// each with its one line, as `outcome`, unless `keep_queued` (a resumable crawl: they
    /// stay queued in its journal, and get their line when a resumed run ends them). Call
    /// after the driver finished or interrupted, so nothing is in flight; robots.txt redirect
    /// hops not yet issued are logged too, and pages waiting to be fetched again with
    /// credentials are ended (or kept) with the queued ones.
    pub fn finish_unfetched(&mut self, outcome: ReturnCode, keep_queued: bool) {
        if keep_queued && self.config.save_hosts_every.is_some() {
            // Before the robots.txt hops below give their hosts a next contact at `far`.
            self.save_hosts(self.last_now);
        }
        // Later than any host's next contact: every queued URL pops at once.
        let far = self.last_now + Duration::from_secs(100 * 365 * 24 * 3600);
        let unissued: Vec<FetchRequest> = self.ready.drain(..).chain(self.hops.drain()).collect();
        for req in unissued {
            match self.inflight.try_remove(req.tag as usize) {
                Some(Job::Robots { queue, .. }) => {
                    self.frontier.done(queue, far, Duration::ZERO);
                    self.log_robots_unfetched(req.url.as_str(), outcome);
                }
                // A page to fetch again with credentials: queued again, so that it ends
                // below (or stays queued for the resumed run).
                Some(Job::Page { entry, queue }) => {
                    self.auth.forget(url_key(&entry.url));
                    self.frontier.push_front(queue, entry);
                    self.frontier.done(queue, far, Duration::ZERO);
                }
                None => {}
            }
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
                    let outcome = if self.gate.waits_on_robots(&item.url) {
                        self.counters.robots_unreachable += 1;
                        ReturnCode::RobotsUnreachable
                    } else {
                        outcome
                    };
                    let at = self.gate.wall(self.last_now);
                    let scheduled = self.scheduled(&item, Seen::Unknown, None, at, Cost::default());
                    self.log_unfetched(item.url.as_str(), item.via(), outcome, Some(&scheduled));
                    self.frontier.done(queue, far, Duration::ZERO);
                }
                Pop::Wait(_) | Pop::Busy | Pop::Empty => break,
            }
        }
    }

    /// Logs a line for a URL (not robots.txt) that ended without a fetch, now on the
    /// crawl's wall clock (as a `scheduled` has it).
    fn log_unfetched(
        &mut self,
        url: &str,
        via: Via<'_>,
        outcome: ReturnCode,
        scheduled: Option<&Scheduled<'_>>,
    ) {
        self.counters.url_lines.add(outcome, 0);
        let at = self.gate.wall(self.last_now);
        if let Err(e) = self.sink.log_unfetched(url, via, outcome, at, scheduled) {
            self.io_error.get_or_insert(e);
        }
    }

    fn log_robots_unfetched(&mut self, url: &str, outcome: ReturnCode) {
        self.counters.robots_lines.add(outcome, 0);
        let via = Via::new(None, Hop::Prerequisite);
        let at = self.gate.wall(self.last_now);
        if let Err(e) = self.sink.log_unfetched(url, via, outcome, at, None) {
            self.io_error.get_or_insert(e);
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
        self.admission.seen_len()
    }

    pub fn seen_bytes_per_url(&self) -> f64 {
        self.admission.seen_bytes_per_url()
    }

    pub fn rejections(&self) -> &[(Reject, u64)] {
        self.admission.rejections()
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
        match self.admission.consider(&entry.url, entry.depth, entry.hop) {
            Verdict::New => self.enqueue(entry),
            Verdict::Seen => self.counters.duplicate_urls += 1,
            Verdict::Refused => {}
        }
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
        if !self.admission.first_seen(&entry.url) {
            self.counters.duplicate_urls += 1;
            return;
        }
        self.enqueue(entry);
    }

    /// Queues (or forwards) a URL past the URL-seen test: a new one, or one fetched again.
    fn enqueue(&mut self, entry: Entry) {
        // Journaled here even when forwarded: until the owner has it, it is this partition's.
        let encoded = self.admission.encode(&entry);
        self.sink.admitted(entry.url.as_str(), encoded);
        match self.admission.route(&entry.url, self.last_now) {
            Route::Forwarded => self.counters.urls_forwarded += 1,
            Route::Here => {
                self.counters.urls_admitted += 1;
                self.push_entry(entry);
            }
        }
    }

    fn push_entry(&mut self, entry: Entry) {
        let priority = entry.priority.map_or(entry.depth as usize, usize::from);
        self.push_entry_at(entry, Some(priority));
    }

    /// Queues an entry in front queue `priority` (its depth), or, `None`, as a revisit: after
    /// its host's new URLs.
    fn push_entry_at(&mut self, entry: Entry, priority: Option<usize>) {
        let host = entry.url.host_str().unwrap_or_default().to_string();
        self.gate.host_queued(&host);
        match priority {
            Some(p) => self.frontier.push(&host, p, entry),
            None => self.frontier.push_later(&host, entry),
        }
    }

    /// Takes the URLs due by `now` from the crawl database into the frontier's revisit
    /// lanes (a continuous crawl, when its budget says it is time: `RevisitBudget::take_due`).
    fn take_due(&mut self, now: Instant) {
        let wall = self.gate.wall(now);
        let Some(mut due) = self.revisits.take_due(now, wall, self.frontier.later_len()) else {
            return;
        };
        if let Some(e) = due.error {
            self.io_error.get_or_insert(e);
        }
        for d in due.urls.drain(..) {
            let Ok(url) = Url::parse(&d.url) else {
                continue;
            };
            if !self.admission.owns(&url) {
                continue; // another partition's: its own ask takes it
            }
            self.counters.revisits.taken_due += 1;
            // Behind what is new on its host: the links the revisits find go first.
            let entry = Entry {
                last: Some(Box::new(d.last)),
                ..Entry::new(url, d.depth, None, 0, d.hop)
            };
            self.push_entry_at(entry, None);
        }
        self.revisits.put_back(due.urls);
    }

    /// Saves the per-host state now if it is due ([`CrawlConfig::save_hosts_every`]).
    fn save_hosts_if_due(&mut self, now: Instant) {
        if self.gate.save_due(now) {
            self.save_hosts(now);
        }
    }

    /// Hands the per-host state as of `now` to the sink ([`Sink::hosts_saved`]): the host
    /// gate's, with the frontier's next-contact times.
    fn save_hosts(&mut self, now: Instant) {
        let contacts: Vec<(&str, Duration)> = self.frontier.next_contacts(now).collect();
        let state = self.gate.save(now, &contacts);
        if let Err(e) = self.sink.hosts_saved(state) {
            self.io_error.get_or_insert(e);
        }
    }

    /// Restores per-host state saved by an earlier run `elapsed` ago, as of `now` (before
    /// the first `next_fetch`). Refused whole if it does not decode.
    pub fn restore_hosts(
        &mut self,
        state: &[u8],
        now: Instant,
        elapsed: Duration,
    ) -> Result<HostsRestored, BadHostState> {
        let saved = self.gate.restore(state, now, elapsed)?;
        let mut restored = HostsRestored {
            robots: saved.robots,
            next_contacts: 0,
        };
        for (host, left) in saved.contacts {
            if let Some(left) = left.checked_sub(elapsed).filter(|d| !d.is_zero()) {
                self.frontier.not_before(host, now + left);
                restored.next_contacts += 1;
            }
        }
        // Contacted after the save, perhaps just before the stop: a Crawl-delay host waits
        // it out from the restore.
        for (host, delay) in self.gate.crawl_delay_hosts() {
            self.frontier.not_before(host, now + delay);
        }
        Ok(restored)
    }

    /// No request before `until`. A resumed crawl does not know when it last contacted each
    /// host, so it waits out `--delay` before its first request: no host hears from it sooner
    /// than that after the last request before the stop.
    pub fn hold_until(&mut self, until: Instant) {
        self.gate.hold_until(until);
    }

    fn limits_reached(&self, now: Instant) -> bool {
        self.page_limit_reached() || self.deadline.is_some_and(|d| now >= d)
    }

    /// `t`, or the deadline if that is sooner: nothing waited for keeps the run past
    /// `--max-time`.
    fn until(&self, t: Instant) -> Instant {
        self.deadline.map_or(t, |d| t.min(d))
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
        self.gate.forget(url_key(&entry.url));
        let at = self.gate.wall(self.last_now);
        let scheduled = self.scheduled(entry, Seen::Unknown, None, at, Cost::default());
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
        let cookie = self.gate.cookie_for(&url, self.last_now);
        let attach = self.auth.attach(&url);
        Next::Fetch(FetchRequest {
            cookie,
            authorization: attach.authorization,
            origin_headers: attach.origin_headers,
            more_for_host,
            validators,
            ..FetchRequest::new(url, tag)
        })
    }

    /// What the frontier offers at `now` (robots.txt, exclusions and spacing applied).
    fn next_from_frontier(&mut self, now: Instant) -> Next {
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
                Pop::Wait(t) => return Next::Wait(self.until(t)),
                Pop::Busy => return Next::Idle,
                // A continuous crawl never runs out: the next due URLs are asked for then.
                Pop::Empty if self.config.continuous => {
                    let t = self.revisits.next_due_check();
                    return Next::Wait(self.until(t.max(now + Duration::from_millis(1))));
                }
                Pop::Empty if self.inflight.is_empty() => return Next::Done,
                Pop::Empty => return Next::Idle,
            };
            match self.gate.gate(&entry.url, now) {
                Gate::Fetch => {
                    self.pages_issued += 1;
                    let url = entry.url.clone();
                    return self.issue(Job::Page { entry, queue }, url);
                }
                Gate::End(outcome) => {
                    self.end_unfetched(&entry, outcome);
                    // No request was made: the host's spacing is unchanged.
                    self.frontier.done(queue, now, Duration::ZERO);
                }
                Gate::Robots { origin, url } => {
                    self.frontier.push_front(queue, entry);
                    let job = Job::Robots {
                        origin,
                        queue,
                        hops: 0,
                        held: None,
                    };
                    return self.issue(job, url);
                }
                Gate::Later(wait) => {
                    self.frontier.push_front(queue, entry);
                    self.frontier.done(queue, now, wait);
                }
            }
        }
        // Out of pops for this call with more perhaps queued: come back at once.
        Next::Wait(now)
    }
}

impl<S: Sink> FetchSource for Crawl<S> {
    fn next_fetch(&mut self, now: Instant) -> Next {
        self.last_now = now;
        self.save_hosts_if_due(now);
        if let Some(t) = self.gate.held(now) {
            return Next::Wait(self.until(t));
        }
        if let Some(req) = self.ready.pop_front() {
            return Next::Fetch(req);
        }
        let hop_due = match self.hops.next(&mut self.frontier, now) {
            HopNext::Go(req, held) => {
                if let Some(Job::Robots { held: h, .. }) = self.inflight.get_mut(req.tag as usize) {
                    *h = held;
                }
                return Next::Fetch(req);
            }
            HopNext::Wait(t) => t,
        };
        // A hop waiting for its host's turn is asked again by then at the latest.
        match (self.next_from_frontier(now), hop_due) {
            (Next::Wait(t), Some(h)) => Next::Wait(self.until(t.min(h))),
            (Next::Idle, Some(h)) => Next::Wait(self.until(h)),
            (next, _) => next,
        }
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
        let cookies_set = self.gate.take_cookies(done, now);
        match job {
            Job::Page { entry, queue } => self.page_done(done, entry, queue, now, cookies_set),
            Job::Robots {
                origin,
                queue,
                hops,
                held,
            } => {
                // First: the answer may slow the hop's host down (a 429).
                self.robots_done(done, origin, queue, hops, now);
                if let Some(host) = held {
                    let gap = self.gate.hop_gap(done, now);
                    self.frontier.release(&host, now, gap);
                }
            }
        }
    }

    fn poll_prefetch(&mut self) -> Option<String> {
        self.gate.poll_prefetch()
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
