//! When a URL is due again, and a continuous crawl's revisits ([`RevisitBudget`],
//! ARCHITECTURE §9c): the schedule's decision at each URL's end ([`Decided`]), the budget's
//! price (Cho and Garcia-Molina's one price for all pages, moved by how late revisits come),
//! and the URLs due again, taken from the crawl database behind [`DueUrls`] a batch at a time
//! ([`Due`]) for the frontier's revisit lanes.

use std::io;
use std::time::{Duration, Instant, SystemTime};

use super::counters::RevisitCounters;
use super::due::{DueUrl, DueUrls};
use super::revisit::{self, LastFetch, Seen};
use super::schedule::{change_rate, PageHistory, ScheduleConfig, Visit};
use crate::http::ResponseHead;

/// `budgeted_interval`'s marginal value at which a page is visited once per expected change
/// (`r = 1`: `1 − 2/e`, times the page's mean change interval).
const PRICE_AT_ONE_VISIT_PER_CHANGE: f64 = 0.264;
/// The price's step, at most once a second, while revisits come late (or on time).
const PRICE_STEP: f64 = 1.03;

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

pub(super) struct RevisitBudget {
    schedule: ScheduleConfig,
    continuous: bool,
    /// A continuous crawl's source of URLs due again, and when it is next asked.
    due_urls: Option<Box<dyn DueUrls>>,
    next_due_check: Instant,
    /// Reused: what one ask returned.
    due_buf: Vec<DueUrl>,
    /// A continuous crawl's price (`schedule::budgeted_interval`'s `marginal`, seconds; 0
    /// otherwise, and the schedule is unpriced): raised while revisits come late, so the
    /// pages that change too fast to catch get fewer visits, and lowered while they come on
    /// time, so the fetches politeness leaves are spent.
    price: f64,
    /// How late revisits are fetched, seconds, a moving average.
    lateness: f64,
    /// When the price last moved (unix seconds).
    price_moved_at: u64,
}

impl RevisitBudget {
    pub fn new(schedule: ScheduleConfig, continuous: bool, now: Instant) -> RevisitBudget {
        RevisitBudget {
            // Where a page changing once per initial interval keeps that interval.
            price: if continuous {
                PRICE_AT_ONE_VISIT_PER_CHANGE * schedule.initial_interval as f64
            } else {
                0.0
            },
            schedule,
            continuous,
            due_urls: None,
            next_due_check: now,
            due_buf: Vec::new(),
            lateness: 0.0,
            price_moved_at: 0,
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
    /// `counted`, and moves the price by how late it came. `hub`: the page led to new URLs,
    /// so its visits buy discovery and are not rationed by the price.
    pub fn decide(
        &mut self,
        last: Option<&LastFetch>,
        seen: Seen,
        head: Option<&ResponseHead>,
        at: u64,
        hub: bool,
        counted: &mut RevisitCounters,
    ) -> Decided {
        // A sitemap's or feed's priors are no fetch: not a revisit.
        if let Some(last) = last.filter(|l| head.is_some() && l.fetched_at > 0) {
            count_revisit(counted, last, seen, at);
            self.came(last, at);
        }
        let mut history = last.map_or_else(PageHistory::default, |l| l.history);
        let last_modified = head
            .and_then(|h| h.header("last-modified"))
            .and_then(crate::datetime::parse_http_date)
            .map(revisit::unix_secs);
        let visit = Visit {
            at,
            seen: seen.observation(),
            last_modified,
        };
        let due = self.schedule.schedule_priced(
            &mut history,
            last.map(|l| l.fetched_at),
            visit,
            if hub { 0.0 } else { self.price },
        );
        Decided { history, due }
    }

    /// Adjusts the price by how late a revisit came: fetched later than due means more is
    /// due than politeness lets the crawl fetch (Cho & Garcia-Molina's one price for all
    /// pages). It moves at most once a second, so a step has time to show before the next.
    fn came(&mut self, last: &LastFetch, at: u64) {
        if !self.continuous || last.due == 0 {
            return;
        }
        // Not counting the second a continuous crawl takes due URLs behind the clock.
        let late = at.saturating_sub(last.due.saturating_add(DUE_LAG_SECS)) as f64;
        self.lateness = 0.9 * self.lateness + 0.1 * late;
        if at <= self.price_moved_at {
            return;
        }
        self.price_moved_at = at;
        let schedule = &self.schedule;
        let min = schedule.min_interval.max(1) as f64;
        // Where a page changing once per interval I keeps that interval.
        let price_for = |interval: u64| PRICE_AT_ONE_VISIT_PER_CHANGE * interval as f64;
        if self.lateness > min / 2.0 {
            self.price = (self.price * PRICE_STEP).min(price_for(schedule.max_interval));
        } else if self.lateness < min / 8.0 {
            // On time: politeness leaves fetches over, which buy freshness when spent.
            self.price = (self.price / PRICE_STEP).max(price_for(schedule.min_interval) / 4.0);
        }
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

    fn head() -> ResponseHead {
        let mut d = crate::http::ResponseDecoder::new(crate::http::Limits::default());
        d.reset(false);
        d.process(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
            .expect("decodes");
        d.head().expect("a head").clone()
    }

    #[test]
    fn a_first_fetch_is_no_revisit_and_is_due_after_the_initial_interval() {
        let mut b = RevisitBudget::new(schedule(), false, Instant::now());
        let mut counted = RevisitCounters::default();
        let d = b.decide(None, Seen::Unknown, Some(&head()), T0, false, &mut counted);
        assert_eq!(counted.fetched, 0);
        assert!(d.due > T0 && d.due <= T0 + 86_400, "{d:?}");
        // A sitemap's priors (no fetch) are no revisit either.
        let prior = last(0, 0);
        b.decide(
            Some(&prior),
            Seen::Unknown,
            Some(&head()),
            T0,
            false,
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
        let h = head();
        for seen in [Seen::NotModified, Seen::Unchanged, Seen::Changed] {
            b.decide(Some(&l), seen, Some(&h), T0, false, &mut counted);
        }
        assert_eq!(counted.fetched, 3);
        assert_eq!(
            (counted.not_modified, counted.unchanged, counted.changed),
            (1, 1, 1)
        );
        assert_eq!(counted.bytes_saved, 100);
        // Without a response (a URL ended unfetched), nothing is counted.
        b.decide(Some(&l), Seen::Unknown, None, T0, false, &mut counted);
        assert_eq!(counted.fetched, 3);
    }

    /// The price a continuous crawl starts from, and where it is after a revisit a second
    /// for 50 s, each fetched `late` seconds after it was due.
    fn price_after(late: u64) -> (f64, f64) {
        let (h, mut counted) = (head(), RevisitCounters::default());
        let mut b = RevisitBudget::new(schedule(), true, Instant::now());
        let start = b.price;
        for s in 0..50 {
            let l = last(T0 - 7_200, T0 + s - late);
            b.decide(
                Some(&l),
                Seen::Changed,
                Some(&h),
                T0 + s,
                false,
                &mut counted,
            );
        }
        (start, b.price)
    }

    #[test]
    fn late_revisits_raise_the_price_and_timely_ones_lower_it() {
        let (start, late) = price_after(3_600);
        assert!(late > start, "{late} after {start}");
        let (start, timely) = price_after(0);
        assert!(timely < start, "{timely} after {start}");
        let h = head();
        let mut counted = RevisitCounters::default();
        // At most one step a second.
        let mut once = RevisitBudget::new(schedule(), true, Instant::now());
        let start = once.price;
        for _ in 0..10 {
            let l = last(T0 - 7_200, T0 - 3_600);
            once.decide(Some(&l), Seen::Changed, Some(&h), T0, false, &mut counted);
        }
        assert!((once.price - start * PRICE_STEP).abs() < 1e-9);
        // Not continuous: no price at all, whatever the revisits.
        let mut unpriced = RevisitBudget::new(schedule(), false, Instant::now());
        let l = last(T0 - 7_200, T0 - 3_600);
        unpriced.decide(Some(&l), Seen::Changed, Some(&h), T0, false, &mut counted);
        assert_eq!(unpriced.price, 0.0);
    }

    #[test]
    fn a_hub_is_scheduled_without_the_price() {
        let h = head();
        let mut b = RevisitBudget::new(schedule(), true, Instant::now());
        b.price = 1e9;
        let mut counted = RevisitCounters::default();
        let l = last(T0 - 3_600, T0);
        let priced = b.decide(Some(&l), Seen::Changed, Some(&h), T0, false, &mut counted);
        let hub = b.decide(Some(&l), Seen::Changed, Some(&h), T0, true, &mut counted);
        assert!(hub.due < priced.due, "{hub:?} {priced:?}");
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
