//! How a hand-off thread (the page worker, the WARC writer) waits once its queue is empty.
//!
//! Blocking on the channel wakes the thread for every message. When pages come one at a
//! time (one big host, a polite crawl, anything the network paces), each page then costs
//! the worker and the writer a wake-up and a context switch each, and on a VM a switch with
//! its wake-up IPI costs ~10 µs: a one-host crawl spent a fifth of its CPU switching.
//!
//! So while messages keep coming, a thread that empties its queue parks for [`LINGER`]
//! instead, where sends do not wake it, and then takes all that came in one turn. Messages
//! "keep coming" when the last one came less than half a linger after the thread started
//! waiting for it, so a linger can expect two or more (at one message a linger, it would find
//! none a third of the time and cost a wake-up of its own). When a linger finds nothing, the
//! flow has stopped and the thread blocks again: an idle crawl costs no wake-ups.
//! Producers wake a lingering thread early when its queue is filling (see the callers'
//! wake-up backlogs), so a fast crawl never waits on a linger.
//!
//! [`Linger`] decides; the thread parks. Time comes in as `now`.

use std::time::{Duration, Instant};

/// How long a thread lingers for more messages: the most a lingering page's record waits,
/// under the journal's commit delay, and long enough to gather a few pages of a host
/// fetched ~1,000 times a second.
pub(super) const LINGER: Duration = Duration::from_millis(5);

/// How a thread that found its queue empty waits for the next message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Wait {
    /// Park for this long (or until woken), then look again; messages sent meanwhile do not
    /// wake the thread.
    Park(Duration),
    /// Block on the channel: the next message wakes the thread.
    Block,
}

/// One consumer's waiting policy (see the module doc).
#[derive(Debug)]
pub(super) struct Linger {
    period: Duration,
    state: State,
}

/// Where a consumer is between messages.
#[derive(Clone, Copy, Debug)]
enum State {
    /// Taking messages; `flowing`: the last came within half a period of the wait for it.
    Taking { flowing: bool },
    /// Parked until this instant.
    Lingering { until: Instant },
    /// Blocked on the channel since this instant (to tell, when a message comes, whether
    /// they flow).
    Blocked { since: Instant },
}

impl Linger {
    pub(super) fn new(period: Duration) -> Linger {
        Linger {
            period,
            state: State::Taking { flowing: false },
        }
    }

    /// The queue was found empty at `now`.
    pub(super) fn empty(&mut self, now: Instant) -> Wait {
        let (state, wait) = match self.state {
            // Woken early with nothing to take (a stale wake-up): park out the rest.
            State::Lingering { until } if now < until => return Wait::Park(until - now),
            State::Taking { flowing: true } => {
                let until = now + self.period;
                (State::Lingering { until }, Wait::Park(self.period))
            }
            // A whole linger brought nothing (the flow has stopped), or none was flowing.
            _ => (State::Blocked { since: now }, Wait::Block),
        };
        self.state = state;
        wait
    }

    /// A message was taken at `now`.
    pub(super) fn took(&mut self, now: Instant) {
        let flowing = match self.state {
            // Found by a linger: they still flow.
            State::Lingering { .. } => true,
            State::Blocked { since } => now.saturating_duration_since(since) < self.period / 2,
            State::Taking { flowing } => flowing,
        };
        self.state = State::Taking { flowing };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn a_lone_message_wakes_a_blocked_thread_and_the_next_empty_queue_blocks() {
        let t0 = Instant::now();
        let mut l = Linger::new(5 * MS);
        assert_eq!(l.empty(t0), Wait::Block);
        // A message 100 ms later: messages do not flow.
        l.took(t0 + 100 * MS);
        assert_eq!(l.empty(t0 + 101 * MS), Wait::Block);
    }

    #[test]
    fn messages_that_flow_are_gathered_by_lingers_until_one_finds_nothing() {
        let t0 = Instant::now();
        let mut l = Linger::new(5 * MS);
        assert_eq!(l.empty(t0), Wait::Block);
        l.took(t0 + MS);
        // The next came 1 ms after the wait began: linger.
        assert_eq!(l.empty(t0 + 2 * MS), Wait::Park(5 * MS));
        // The linger ends with three messages waiting.
        for _ in 0..3 {
            l.took(t0 + 7 * MS);
        }
        assert_eq!(l.empty(t0 + 8 * MS), Wait::Park(5 * MS));
        // This linger finds nothing: block.
        assert_eq!(l.empty(t0 + 13 * MS), Wait::Block);
        // A message long after: no linger.
        l.took(t0 + 50 * MS);
        assert_eq!(l.empty(t0 + 51 * MS), Wait::Block);
        // Nor one more than half a linger after: a linger would often find nothing.
        l.took(t0 + 54 * MS);
        assert_eq!(l.empty(t0 + 54 * MS), Wait::Block);
        // Within half a linger: linger.
        l.took(t0 + 56 * MS);
        assert_eq!(l.empty(t0 + 56 * MS), Wait::Park(5 * MS));
    }

    #[test]
    fn a_thread_woken_early_with_nothing_to_take_parks_out_the_rest() {
        let t0 = Instant::now();
        let mut l = Linger::new(5 * MS);
        l.empty(t0);
        l.took(t0);
        assert_eq!(l.empty(t0 + MS), Wait::Park(5 * MS));
        assert_eq!(l.empty(t0 + 3 * MS), Wait::Park(3 * MS));
        assert_eq!(l.empty(t0 + 6 * MS), Wait::Block);
    }

    #[test]
    fn a_message_taken_mid_linger_keeps_the_flow() {
        let t0 = Instant::now();
        let mut l = Linger::new(5 * MS);
        l.empty(t0);
        l.took(t0);
        assert_eq!(l.empty(t0), Wait::Park(5 * MS));
        // Woken early (a producer's queue filling) with messages.
        l.took(t0 + 2 * MS);
        assert_eq!(l.empty(t0 + 3 * MS), Wait::Park(5 * MS));
    }
}
