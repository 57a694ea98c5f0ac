//! When a URL is due again, and a continuous crawl's revisits ([`RevisitBudget`],
//! ARCHITECTURE §9c): the schedule's decision at each URL's end ([`Decided`]), priced in a
//! continuous crawl by its host's fetch budget (`host_budget`: Cho and Garcia-Molina's
//! optimal frequencies with a multiplier per host), and the URLs due again, taken from the
//! crawl database behind [`DueUrls`] a batch at a time ([`Due`]) for the frontier's revisit
//! lanes.

use std::io;
use std::time::{Duration, Instant, SystemTime};

use super::counters::RevisitCounters;
use super::due::{DueUrl, DueUrls};
use super::host_budget::{HostBudgets, ValueClass};
use super::revisit::{self, LastFetch, Seen};
use super::schedule::{change_rate, PageHistory, ScheduleConfig, Visit};
use crate::http::ResponseHead;

/// A continuous crawl asks the crawl database for due URLs this often...
const DUE_CHECK_EVERY: Duration = Duration::from_secs(1);
/// ...at most this many at a time, and only while the frontier holds fewer revisits than
/// `DUE_FRONTIER_ROOM`: what is due waits in the database, not in memory.
const DUE_BATCH: usize = 1024;
/// How far behind the clock a continuous crawl takes due URLs, seconds (see `take_due`).
const DUE_LAG_SECS: u64 = 1;
const DUE_FRONTIER_ROOM: usize = 16 * 1024;

/// The schedule's decision at a URL's end.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Decided {
    /// The page's change history with this visit.
    pub history: PageHistory,
    /// When it is due again, unix seconds.
    pub due: u64,
}

/// URLs due again, taken from the crawl database: give `urls` back with
/// [`RevisitBudget::put_back`] once queued.
pub(super) struct Due {
    pub urls: Vec<DueUrl>,
    /// The database could not be read: the run stops and reports it (what was taken stands).
    pub error: Option<io::Error>,
}

/// What a fetch cost its host and what it found new, for the budget (zero for a URL that
/// ended without a fetch).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct Cost {
    /// Seconds the host's fetch slot took: the fetch's own time plus the politeness gap
    /// after it.
    pub period: f64,
    /// Links new to the crawl the fetch found.
    pub new_urls: u32,
}

/// What a URL's end tells the schedule, beside its response.
#[derive(Clone, Copy, Debug)]
pub(super) struct Ended<'h> {
    /// Its host (the budget's key).
    pub host: &'h str,
    /// Seconds the host's fetch slot took: the politeness gap after it plus the fetch's own
    /// time (what one fetch of the host costs).
    pub period: f64,
    /// Links new to the crawl this fetch found (what a hub's visits buy).
    pub new_urls: u32,
}

pub(super) struct RevisitBudget {
    schedule: ScheduleConfig,
    /// A continuous crawl's per-host budgets; `None` otherwise (the schedule is unpriced).
    budgets: Option<HostBudgets>,
    /// A continuous crawl's source of URLs due again, and when it is next asked.
    due_urls: Option<Box<dyn DueUrls>>,
    next_due_check: Instant,
    /// Reused: what one ask returned.
    due_buf: Vec<DueUrl>,
}

impl RevisitBudget {
    pub fn new(schedule: ScheduleConfig, continuous: bool, now: Instant) -> RevisitBudget {
        RevisitBudget {
            budgets: continuous.then(|| HostBudgets::new(&schedule)),
            schedule,
            due_urls: None,
            next_due_check: now,
            due_buf: Vec::new(),
        }
    }

    /// Where a continuous crawl finds the URLs due again.
    pub fn set_due_urls(&mut self, due: Box<dyn DueUrls>) {
        self.due_urls = Some(due);
    }

    /// When a continuous crawl next asks for due URLs.
    pub fn next_due_check(&self) -> Instant {
        self.next_due_check
    }

    /// A URL's end at `at` (unix seconds): what the schedule makes of what this fetch saw
    /// (`head`: its response, if any) after what the last one left. A revisit is counted in
    /// `counted`, by what its host's budget had priced it for. In a continuous crawl the
    /// host's budget decides the interval (`host_budget`); otherwise the unpriced schedule.
    pub fn decide(
        &mut self,
        last: Option<&LastFetch>,
        seen: Seen,
        head: Option<&ResponseHead>,
        at: u64,
        ended: Ended<'_>,
        counted: &mut RevisitCounters,
    ) -> Decided {
        // A sitemap's or feed's priors are no fetch: not a revisit.
        let fetched_before = last.filter(|l| l.fetched_at > 0);
        if head.is_some() {
            match (fetched_before, &self.budgets) {
                (Some(last), budgets) => {
                    count_revisit(counted, last, seen, at);
                    if let Some(b) = budgets {
                        match b.class(ended.host, &last.history) {
                            ValueClass::Learning => counted.learning += 1,
                            ValueClass::Freshness => counted.for_freshness += 1,
                            ValueClass::Discovery => counted.for_discovery += 1,
                            ValueClass::Floor => counted.floor += 1,
                        }
                    }
                }
                (None, Some(_)) => counted.first_fetches += 1,
                (None, None) => {}
            }
        }
        let old = last.map_or_else(PageHistory::default, |l| l.history);
        let mut history = old;
        let last_modified = head
            .and_then(|h| h.header("last-modified"))
            .and_then(crate::datetime::parse_http_date)
            .map(revisit::unix_secs);
        let visit = Visit {
            at,
            seen: seen.observation(),
            last_modified,
        };
        let last_fetch = last.map(|l| l.fetched_at);
        let priced = match self.budgets.as_mut() {
            // Only a fetch that got an answer says what the page is worth: a failure keeps
            // its place in the counts and is tried again at its last interval.
            Some(budgets) if head.is_some() => {
                self.schedule
                    .observe(&mut history, last_fetch, visit, ended.new_urls);
                let old = fetched_before.map(|_| &old);
                budgets.price(ended.host, old, &history, ended.period, at)
            }
            _ => None,
        };
        let due = match priced {
            Some(p) => {
                counted.planned += 1;
                counted.planned_freshness += p.freshness;
                history.interval = p.interval;
                at.saturating_add(p.interval)
            }
            None => {
                history = old;
                self.schedule
                    .schedule_counting(&mut history, last_fetch, visit, ended.new_urls)
            }
        };
        Decided { history, due }
    }

    /// The URLs due by `wall` (the wall clock at `now`), when it is time to ask (every
    /// [`DUE_CHECK_EVERY`], at once after a full batch) and the frontier has fewer than
    /// [`DUE_FRONTIER_ROOM`] revisits `waiting`. They are not journaled: the database is
    /// their record, and a resumed run takes them again.
    pub fn take_due(&mut self, now: Instant, wall: SystemTime, waiting: usize) -> Option<Due> {
        if now < self.next_due_check || waiting >= DUE_FRONTIER_ROOM {
            return None;
        }
        self.next_due_check = now + DUE_CHECK_EVERY;
        let source = self.due_urls.as_mut()?;
        // A second behind the clock: the database's cursor passes each due time once, so a
        // URL fetched again must have its new (later) due time committed before the cursor
        // gets there; the lag gives the writer --revisit-min plus a second to commit it.
        let before = revisit::unix_secs(wall).saturating_sub(DUE_LAG_SECS);
        let mut urls = std::mem::take(&mut self.due_buf);
        urls.clear();
        let error = source.take(before, DUE_BATCH, &mut urls).err();
        if urls.len() == DUE_BATCH {
            self.next_due_check = now; // more are due: ask again at the next call
        }
        Some(Due { urls, error })
    }

    /// The buffer of a [`Due`], for the next ask.
    pub fn put_back(&mut self, urls: Vec<DueUrl>) {
        self.due_buf = urls;
    }
}

/// Counts what a revisit found.
fn count_revisit(r: &mut RevisitCounters, last: &LastFetch, seen: Seen, at: u64) {
    r.fetched += 1;
    match seen {
        Seen::NotModified => {
            r.not_modified += 1;
            r.bytes_saved += last.payload_len;
        }
        Seen::Unchanged => r.unchanged += 1,
        Seen::Changed => {
            r.changed += 1;
            let t = at.saturating_sub(last.fetched_at) as f64;
            if let Some(rate) = change_rate(&last.history).filter(|&x| x > 0.0) {
                r.age_secs += (t - (1.0 - (-rate * t).exp()) / rate).max(0.0);
            }
        }
        Seen::Unknown => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crawl::sim::ok_head;
    use crate::crawl::sink::Hop;

    const T0: u64 = 1_800_000_000;

    fn schedule() -> ScheduleConfig {
        ScheduleConfig {
            min_interval: 60,
            max_interval: 86_400,
            initial_interval: 3_600,
            ..ScheduleConfig::default()
        }
    }

    /// A page fetched at `fetched_at` and due at `due`.
    fn last(fetched_at: u64, due: u64) -> LastFetch {
        LastFetch {
            fetched_at,
            due,
            ..LastFetch::default()
        }
    }

    #[test]
    fn a_first_fetch_is_no_revisit_and_is_due_after_the_initial_interval() {
        let mut b = RevisitBudget::new(schedule(), false, Instant::now());
        let mut counted = RevisitCounters::default();
        let d = b.decide(
            None,
            Seen::Unknown,
            Some(&ok_head()),
            T0,
            ended(1.0, 0),
            &mut counted,
        );
        assert_eq!(counted.fetched, 0);
        assert!(d.due > T0 && d.due <= T0 + 86_400, "{d:?}");
        // A sitemap's priors (no fetch) are no revisit either.
        let prior = last(0, 0);
        b.decide(
            Some(&prior),
            Seen::Unknown,
            Some(&ok_head()),
            T0,
            ended(1.0, 0),
            &mut counted,
        );
        assert_eq!(counted.fetched, 0);
    }

    #[test]
    fn a_revisit_is_counted_by_what_it_found() {
        let mut b = RevisitBudget::new(schedule(), false, Instant::now());
        let mut counted = RevisitCounters::default();
        let l = LastFetch {
            payload_len: 100,
            ..last(T0 - 3_600, T0)
        };
        let h = ok_head();
        for seen in [Seen::NotModified, Seen::Unchanged, Seen::Changed] {
            b.decide(Some(&l), seen, Some(&h), T0, ended(1.0, 0), &mut counted);
        }
        assert_eq!(counted.fetched, 3);
        assert_eq!(
            (counted.not_modified, counted.unchanged, counted.changed),
            (1, 1, 1)
        );
        assert_eq!(counted.bytes_saved, 100);
        // Without a response (a URL ended unfetched), nothing is counted.
        b.decide(
            Some(&l),
            Seen::Unknown,
            None,
            T0,
            ended(1.0, 0),
            &mut counted,
        );
        assert_eq!(counted.fetched, 3);
    }

    const HOST: &str = "a.test";

    /// A fetch of a.test costing `period` seconds that found `new_urls` new links.
    fn ended(period: f64, new_urls: u32) -> Ended<'static> {
        Ended {
            host: HOST,
            period,
            new_urls,
        }
    }

    #[test]
    fn a_continuous_crawl_prices_revisits_by_class_and_counts_discovery() {
        let h = ok_head();
        let mut b = RevisitBudget::new(schedule(), true, Instant::now());
        let mut counted = RevisitCounters::default();
        // The revisit of `d`, fetched at `at`, seeing `seen` and finding `new_urls` links.
        let mut again =
            |d: Decided, at: u64, seen: Seen, new_urls: u32, c: &mut RevisitCounters| {
                let l = LastFetch {
                    history: d.history,
                    ..last(at, d.due)
                };
                b.decide(Some(&l), seen, Some(&h), d.due, ended(1.0, new_urls), c)
            };
        // A first fetch: discovery.
        let first = RevisitBudget::new(schedule(), true, Instant::now()).decide(
            None,
            Seen::Unknown,
            Some(&ok_head()),
            T0,
            ended(1.0, 0),
            &mut counted,
        );
        assert_eq!(counted.first_fetches, 1);
        // Its first two revisits are learning ones; both find the page unchanged.
        let second = again(first, T0, Seen::NotModified, 0, &mut counted);
        let third = again(second, first.due, Seen::NotModified, 0, &mut counted);
        assert_eq!(counted.learning, 2);
        // Never seen changing: on the floor, priced as changing half a time over the time
        // it was seen unchanged, within a twentieth of the host's budget (alone on its host
        // with a fetch a second to spare: at --revisit-min).
        assert_eq!(third.due - second.due, 60, "{third:?}");
        let fourth = again(third, second.due, Seen::NotModified, 0, &mut counted);
        assert_eq!(counted.floor, 1);
        // A revisit that found new links makes a hub: its next revisit is for discovery.
        let hub = again(fourth, third.due, Seen::Changed, 5, &mut counted);
        assert_eq!(hub.history.new_urls, 5);
        again(hub, fourth.due, Seen::Changed, 0, &mut counted);
        assert_eq!(counted.for_discovery, 1);
        assert_eq!(counted.fetched, 5);
        let share = counted.discovery_share().expect("fetches");
        assert!((share - 2.0 / 6.0).abs() < 1e-9, "{share}");
        assert!(counted.planned_freshness().is_some());
    }

    #[test]
    fn without_continuous_the_schedule_is_unpriced() {
        let h = ok_head();
        let mut b = RevisitBudget::new(schedule(), false, Instant::now());
        let mut counted = RevisitCounters::default();
        let l = last(T0 - 3_600, T0);
        let d = b.decide(
            Some(&l),
            Seen::NotModified,
            Some(&h),
            T0,
            ended(1.0, 0),
            &mut counted,
        );
        // Never seen changing: the interval doubles (from the initial hour), unpriced.
        assert_eq!(d.due, T0 + 7_200);
        assert_eq!((counted.first_fetches, counted.planned), (0, 0));
    }

    /// Hands out `n` due URLs per ask, counting the asks.
    struct Source {
        n: usize,
        asks: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    }

    impl DueUrls for Source {
        fn take(&mut self, before: u64, max: usize, out: &mut Vec<DueUrl>) -> io::Result<()> {
            assert_eq!(before, T0 - DUE_LAG_SECS, "a second behind the clock");
            self.asks.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            out.extend((0..self.n.min(max)).map(|i| DueUrl {
                url: format!("http://a.test/{i}"),
                depth: 1,
                hop: Hop::Link,
                last: LastFetch::default(),
            }));
            Ok(())
        }
    }

    #[test]
    fn due_urls_are_asked_for_once_a_second_or_at_once_after_a_full_batch() {
        let t0 = Instant::now();
        let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(T0);
        let asks = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let mut b = RevisitBudget::new(schedule(), true, t0);
        assert!(b.take_due(t0, wall, 0).is_none(), "no source: nothing");
        b.next_due_check = t0;
        b.set_due_urls(Box::new(Source {
            n: 3,
            asks: asks.clone(),
        }));
        let due = b.take_due(t0, wall, 0).expect("asked");
        assert_eq!(due.urls.len(), 3);
        b.put_back(due.urls);
        assert!(b
            .take_due(t0 + Duration::from_millis(500), wall, 0)
            .is_none());
        assert_eq!(b.next_due_check(), t0 + DUE_CHECK_EVERY);
        let t1 = t0 + DUE_CHECK_EVERY;
        assert!(
            b.take_due(t1, wall, DUE_FRONTIER_ROOM).is_none(),
            "the frontier is full of revisits"
        );
        let mut full = RevisitBudget::new(schedule(), true, t0);
        full.set_due_urls(Box::new(Source {
            n: DUE_BATCH,
            asks: asks.clone(),
        }));
        let due = full.take_due(t0, wall, 0).expect("asked");
        assert_eq!(due.urls.len(), DUE_BATCH);
        assert_eq!(full.next_due_check(), t0, "more are due: ask again at once");
        assert_eq!(asks.load(std::sync::atomic::Ordering::Relaxed), 2);
    }
}
