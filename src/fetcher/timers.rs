//! A fetch's deadlines, by name. Each stage of a fetch has its own [`Timer`]; the ones armed
//! for a fetch are its [`TimerTable`] (a few words, kept inline: nothing is allocated per
//! fetch), and [`FetchTimers`] files every live fetch under its earliest deadline, so the loop
//! polls until the first one and [`FetchTimers::pop_expired`] says which fetch's timer fired,
//! by name. When each timer is armed and what its firing means are the loop's: a state arms
//! its timers as the fetch enters it (`event_loop/states.rs`), as quinn-proto's `TimerTable`
//! is armed by the connection that reads it.

use std::collections::BTreeSet;
use std::time::Instant;

/// A named deadline of a fetch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timer {
    /// The DNS stage's safety net: the resolver's own total timeout and a grace (the resolver
    /// should always answer first).
    Dns,
    /// Connecting to the host's first address while one of the other family waits its turn
    /// (Happy Eyeballs' connection attempt delay): the fetch falls back when it fires.
    HappyEyeballs,
    /// The TCP connect, inside the HTTP stage's deadline.
    Connect,
    /// One step of a proxy's handshake (SOCKS5 greeting, login, connect; HTTP CONNECT),
    /// armed anew for each step, inside the HTTP stage's deadline.
    Proxy,
    /// The whole HTTP stage (connect, send, receive), from the moment a connection slot is
    /// assigned.
    Http,
}

impl Timer {
    /// Which timer counts when several have passed by one reading of the clock (a turn may
    /// come late): falling back first, since the other address gets an HTTP stage of its own;
    /// then the overall deadline, which the connect and proxy deadlines lie inside.
    const BY_PRECEDENCE: [Timer; 5] = [
        Timer::HappyEyeballs,
        Timer::Http,
        Timer::Connect,
        Timer::Proxy,
        Timer::Dns,
    ];

    fn slot(self) -> usize {
        self as usize
    }
}

/// When each of one fetch's timers fires, if armed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimerTable {
    at: [Option<Instant>; Timer::BY_PRECEDENCE.len()],
}

impl TimerTable {
    pub fn set(&mut self, timer: Timer, at: Instant) {
        self.at[timer.slot()] = Some(at);
    }

    pub fn stop(&mut self, timer: Timer) {
        self.at[timer.slot()] = None;
    }

    pub fn stop_all(&mut self) {
        self.at = Default::default();
    }

    pub fn get(&self, timer: Timer) -> Option<Instant> {
        self.at[timer.slot()]
    }

    /// The earliest armed deadline.
    pub fn next(&self) -> Option<Instant> {
        self.at.iter().flatten().min().copied()
    }

    /// The timer that fired by `now`: of those at or before it, the first by precedence.
    pub fn expired(&self, now: Instant) -> Option<Timer> {
        Timer::BY_PRECEDENCE
            .into_iter()
            .find(|t| self.get(*t).is_some_and(|at| at <= now))
    }
}

/// Every live fetch's timers, by its key in the loop's slab, and the fetches in order of their
/// earliest deadline.
#[derive(Debug, Default)]
pub struct FetchTimers {
    tables: Vec<TimerTable>,
    /// `(tables[key].next(), key)` for each fetch with a timer armed.
    queue: BTreeSet<(Instant, usize)>,
}

impl FetchTimers {
    /// Room for keys below `fetches` (the live-fetch bound), so arming never allocates.
    pub fn with_capacity(fetches: usize) -> FetchTimers {
        FetchTimers {
            tables: vec![TimerTable::default(); fetches],
            queue: BTreeSet::new(),
        }
    }

    /// Changes fetch `key`'s timers with `change`, keeping its place in the queue.
    pub fn update(&mut self, key: usize, change: impl FnOnce(&mut TimerTable)) {
        if key >= self.tables.len() {
            self.tables.resize(key + 1, TimerTable::default());
        }
        let table = &mut self.tables[key];
        let before = table.next();
        change(table);
        let after = table.next();
        if before != after {
            if let Some(t) = before {
                self.queue.remove(&(t, key));
            }
            if let Some(t) = after {
                self.queue.insert((t, key));
            }
        }
    }

    /// A fetch ended (its key may be reused): none of its timers fires.
    pub fn clear(&mut self, key: usize) {
        if key < self.tables.len() {
            self.update(key, TimerTable::stop_all);
        }
    }

    /// The earliest deadline of all.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.queue.first().map(|&(t, _)| t)
    }

    /// A fetch whose earliest deadline is at or before `now`, and which of its timers fired.
    /// All its timers are stopped: whatever the fetch does next arms its own.
    pub fn pop_expired(&mut self, now: Instant) -> Option<(usize, Timer)> {
        loop {
            let &(at, key) = self.queue.first()?;
            if at > now {
                return None;
            }
            self.queue.pop_first();
            // The queue holds each table's earliest deadline, so one fired: the other arms
            // only keep a broken invariant from stopping the loop.
            let Some(table) = self.tables.get_mut(key) else {
                continue;
            };
            let fired = table.expired(now);
            table.stop_all();
            if let Some(timer) = fired {
                return Some((key, timer));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[test]
    fn a_table_names_the_timer_that_fired() {
        let t0 = Instant::now();
        let mut table = TimerTable::default();
        assert_eq!((table.next(), table.expired(t0 + secs(99))), (None, None));
        table.set(Timer::Http, t0 + secs(30));
        table.set(Timer::Connect, t0 + secs(10));
        assert_eq!(table.next(), Some(t0 + secs(10)));
        assert_eq!(table.expired(t0 + secs(9)), None);
        assert_eq!(table.expired(t0 + secs(10)), Some(Timer::Connect));
        // Both passed by a late reading: the overall deadline is the verdict.
        assert_eq!(table.expired(t0 + secs(30)), Some(Timer::Http));
        table.stop(Timer::Connect);
        assert_eq!(table.next(), Some(t0 + secs(30)));
        assert_eq!(table.expired(t0 + secs(10)), None);
        table.stop_all();
        assert_eq!(table, TimerTable::default());
    }

    #[test]
    fn falling_back_comes_before_any_deadline() {
        let t0 = Instant::now();
        let mut table = TimerTable::default();
        table.set(Timer::Http, t0 + secs(1));
        table.set(Timer::Connect, t0 + secs(1));
        table.set(Timer::HappyEyeballs, t0 + secs(1));
        assert_eq!(table.expired(t0 + secs(1)), Some(Timer::HappyEyeballs));
        table.stop(Timer::HappyEyeballs);
        assert_eq!(table.expired(t0 + secs(1)), Some(Timer::Http));
        let mut dns = TimerTable::default();
        dns.set(Timer::Dns, t0);
        assert_eq!(dns.expired(t0), Some(Timer::Dns));
    }

    #[test]
    fn fetches_fire_in_deadline_order_and_once() {
        let t0 = Instant::now();
        let mut timers = FetchTimers::with_capacity(2);
        timers.update(0, |t| t.set(Timer::Http, t0 + secs(30)));
        // A key past the capacity is taken too.
        timers.update(5, |t| {
            t.set(Timer::Http, t0 + secs(30));
            t.set(Timer::Connect, t0 + secs(10));
        });
        timers.update(1, |t| t.set(Timer::Dns, t0 + secs(12)));
        assert_eq!(timers.next_deadline(), Some(t0 + secs(10)));
        assert_eq!(timers.pop_expired(t0 + secs(9)), None);
        assert_eq!(timers.pop_expired(t0 + secs(12)), Some((5, Timer::Connect)));
        assert_eq!(timers.pop_expired(t0 + secs(12)), Some((1, Timer::Dns)));
        assert_eq!(timers.pop_expired(t0 + secs(12)), None);
        // A fired fetch has no timer left: its Http deadline does not fire later.
        assert_eq!(timers.next_deadline(), Some(t0 + secs(30)));
        assert_eq!(timers.pop_expired(t0 + secs(40)), Some((0, Timer::Http)));
        assert_eq!(timers.pop_expired(t0 + secs(40)), None);
        assert_eq!(timers.next_deadline(), None);
    }

    #[test]
    fn a_fetch_is_filed_under_its_earliest_deadline_as_it_changes() {
        let t0 = Instant::now();
        let mut timers = FetchTimers::with_capacity(4);
        timers.update(3, |t| {
            t.set(Timer::Http, t0 + secs(30));
            t.set(Timer::Connect, t0 + secs(10));
        });
        // Connected: the connect deadline goes, the overall one stays.
        timers.update(3, |t| t.stop(Timer::Connect));
        assert_eq!(timers.next_deadline(), Some(t0 + secs(30)));
        assert_eq!(timers.pop_expired(t0 + secs(29)), None);
        // An ended fetch's timers go with it; clearing an unknown key is harmless.
        timers.clear(3);
        timers.clear(99);
        assert_eq!(timers.next_deadline(), None);
        assert_eq!(timers.pop_expired(t0 + secs(99)), None);
    }
}
