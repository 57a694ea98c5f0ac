//! Names asked for while the resolver already has its fill of names on the wire
//! ([`super::ResolverConfig::max_names_in_flight`]): they wait here, first asked first sent,
//! each until its own deadline.
//!
//! Why a resolver holds names back: a crawl starting from thousands of seeds (or a broad
//! crawl meeting new hosts) would otherwise send an A and an AAAA query for each of them in
//! one burst. A UDP socket's receive buffer (212,992 bytes by default on Linux, ~190 small
//! datagrams) overflows on whichever side reads slower, the server's or ours, and every
//! datagram past it is dropped: the lookup then waits for its retry (a third of a second,
//! then a second, then more), and the hosts behind it wait with it.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// The waiting names, in the order they were asked; each is also in the resolver's
/// `by_name` table (as `Family::Waiting`), so a second caller joins it.
#[derive(Debug)]
pub(super) struct Waiting {
    names: VecDeque<(String, Instant)>,
    /// A name with no more than this left has expired: the resolver's least timer step, so
    /// no answer could be waited for.
    least_wait: Duration,
}

impl Waiting {
    /// An empty queue whose names expire with `least_wait` or less left.
    pub(super) fn new(least_wait: Duration) -> Waiting {
        Waiting {
            names: VecDeque::new(),
            least_wait,
        }
    }

    /// Queues `name`, to be resolved by `deadline` or fail.
    pub(super) fn push(&mut self, name: String, deadline: Instant) {
        self.names.push_back((name, deadline));
    }

    /// The oldest waiting name whose time is up at `now` (see `least_wait`). Every name gets
    /// the same timeout when asked, so deadlines are in queue order and only the front can be
    /// due.
    pub(super) fn pop_expired(&mut self, now: Instant) -> Option<String> {
        match self.names.front() {
            Some(&(_, deadline)) if deadline <= now + self.least_wait => {
                self.names.pop_front().map(|(n, _)| n)
            }
            _ => None,
        }
    }

    /// The oldest waiting name, to be sent now, with its deadline.
    pub(super) fn pop(&mut self) -> Option<(String, Instant)> {
        self.names.pop_front()
    }

    /// When the oldest waiting name times out.
    pub(super) fn next_deadline(&self) -> Option<Instant> {
        self.names.front().map(|&(_, d)| d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_leave_in_order_and_only_the_due_ones_expire() {
        let t0 = Instant::now();
        let least = Duration::from_millis(1);
        let mut w = Waiting::new(least);
        w.push("a.test".into(), t0 + Duration::from_secs(1));
        w.push("b.test".into(), t0 + Duration::from_secs(2));
        assert_eq!(w.next_deadline(), Some(t0 + Duration::from_secs(1)));
        assert_eq!(w.pop_expired(t0), None);
        assert_eq!(
            w.pop_expired(t0 + Duration::from_secs(1)),
            Some("a.test".into())
        );
        assert_eq!(w.pop_expired(t0 + Duration::from_secs(1)), None);
        w.push("c.test".into(), t0 + Duration::from_secs(3));
        assert_eq!(w.pop().map(|(n, _)| n), Some("b.test".into()));
        // Less than a timer's least step left is as good as none.
        let almost = t0 + Duration::from_secs(3) - least / 2;
        assert_eq!(w.pop_expired(almost), Some("c.test".into()));
        assert_eq!((w.pop(), w.next_deadline()), (None, None));
    }
}
