//! robots.txt redirect hops to another host, waiting for that host's turn.
//!
//! A robots.txt fetch that redirects keeps its own host busy (the rules found at the end
//! govern it), so a hop to the same host goes at once. A hop to another host is a request to
//! that host: it waits until the frontier can hold the host ([`Frontier::hold`]: not being
//! fetched, its gap waited out), so the hop is never live beside that host's own fetch and
//! is spaced like one of its pages; the hop's end releases the host with its gap.
//!
//! Two robots.txt fetches that redirect to each other's host would each wait for the other's
//! host, which their own jobs keep busy; so a hop that has waited [`MAX_WAIT_FOR_BUSY`] in all
//! and finds its host busy goes without holding it (as one request beside the other, which
//! the fetcher's one connection per server IP still serializes on the wire). A host waiting
//! out its gap is always waited for: hops are asked before the frontier, so when the gap
//! ends the hop holds the host before its next page can be popped.
//!
//! A partition holds hosts in its own frontier only: a hop to a host another partition owns
//! (`--loops`, a cluster) is spaced against this partition's requests alone.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::frontier::{Frontier, Hold};
use super::spill::Spillable;
use crate::fetcher::FetchRequest;

/// How long a hop waits in all before it goes without holding a host it finds busy.
pub const MAX_WAIT_FOR_BUSY: Duration = Duration::from_secs(30);

/// A hop waiting for its host.
struct Waiting {
    req: FetchRequest,
    host: String,
    since: Instant,
}

/// The hops waiting for their hosts, oldest first.
#[derive(Default)]
pub(super) struct RobotsHops {
    waiting: VecDeque<Waiting>,
}

/// What [`RobotsHops::next`] found.
pub(super) enum HopNext {
    /// Issue this hop; it holds `Some(host)` until its fetch ends.
    Go(FetchRequest, Option<String>),
    /// None may go yet: ask again at this instant (or after a fetch ends), `None` when no
    /// hop waits.
    Wait(Option<Instant>),
}

impl RobotsHops {
    /// Queues `req`, a hop to `host` (not the host whose robots.txt it is), at `now`.
    pub(super) fn push(&mut self, req: FetchRequest, host: String, now: Instant) {
        self.waiting.push_back(Waiting {
            req,
            host,
            since: now,
        });
    }

    /// The first waiting hop whose host `frontier` holds for it at `now`, or one that has
    /// waited [`MAX_WAIT_FOR_BUSY`] for a busy host; else when to ask again.
    pub(super) fn next<T: Spillable>(
        &mut self,
        frontier: &mut Frontier<T>,
        now: Instant,
    ) -> HopNext {
        let mut again: Option<Instant> = None;
        let mut sooner = |t: Instant| again = Some(again.map_or(t, |a| a.min(t)));
        // Bound: one look at each waiting hop.
        for i in 0..self.waiting.len() {
            let w = &self.waiting[i];
            let held = match frontier.hold(&w.host, now) {
                Hold::Held => true,
                Hold::Wait(t) => {
                    sooner(t);
                    continue;
                }
                Hold::Busy => {
                    let give_up = w.since + MAX_WAIT_FOR_BUSY;
                    if now < give_up {
                        sooner(give_up);
                        continue;
                    }
                    false
                }
            };
            let Some(w) = self.waiting.remove(i) else {
                break;
            };
            return HopNext::Go(w.req, held.then_some(w.host));
        }
        HopNext::Wait(again)
    }

    /// Takes every waiting hop (the run stops).
    pub(super) fn drain(&mut self) -> impl Iterator<Item = FetchRequest> + '_ {
        self.waiting.drain(..).map(|w| w.req)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crawl::frontier::{FrontierConfig, Pop};

    fn frontier() -> Frontier<String> {
        Frontier::new(&FrontierConfig {
            priorities: 1,
            back_queues: 4,
            ram_items: usize::MAX,
            rank_within_hosts: false,
        })
    }

    fn hop(url: &str) -> FetchRequest {
        FetchRequest::new(url::Url::parse(url).unwrap(), 0)
    }

    /// A hop waits out its host's gap, goes holding the host, and one to a host that stays
    /// busy goes unheld after [`MAX_WAIT_FOR_BUSY`].
    #[test]
    fn a_hop_waits_for_its_host_and_not_forever_for_a_busy_one() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut f = frontier();
        f.push("b.test", 0, "http://b.test/".into());
        f.push("b.test", 0, "http://b.test/x".into());
        let Pop::Ready { queue, .. } = f.pop(t0) else {
            panic!("b is due");
        };
        let mut hops = RobotsHops::default();
        hops.push(hop("http://b.test/robots.txt"), "b.test".into(), t0);
        // b is being fetched.
        assert!(
            matches!(hops.next(&mut f, t0), HopNext::Wait(Some(t)) if t == t0 + MAX_WAIT_FOR_BUSY)
        );
        f.done(queue, t0 + ms(100), ms(1000));
        assert!(
            matches!(hops.next(&mut f, t0 + ms(100)), HopNext::Wait(Some(t)) if t == t0 + ms(1100))
        );
        let HopNext::Go(req, Some(host)) = hops.next(&mut f, t0 + ms(1100)) else {
            panic!("b may be contacted");
        };
        assert_eq!(req.url.as_str(), "http://b.test/robots.txt");
        assert!(matches!(
            hops.next(&mut f, t0 + ms(1100)),
            HopNext::Wait(None)
        ));
        // b's own URL waits for the hop, then for its gap.
        assert!(matches!(f.pop(t0 + ms(1100)), Pop::Busy));
        f.release(&host, t0 + ms(1200), ms(1000));
        assert!(matches!(f.pop(t0 + ms(1200)), Pop::Wait(t) if t == t0 + ms(2200)));
        let Pop::Ready { .. } = f.pop(t0 + ms(2200)) else {
            panic!("b is due again");
        };
        // Busy for good (say, its own robots.txt job waits on a hop to us): the hop goes
        // once it has waited long enough, holding nothing.
        let t1 = t0 + ms(2200);
        hops.push(hop("http://b.test/robots.txt"), "b.test".into(), t1);
        assert!(matches!(
            hops.next(&mut f, t1 + ms(1)),
            HopNext::Wait(Some(_))
        ));
        assert!(matches!(
            hops.next(&mut f, t1 + MAX_WAIT_FOR_BUSY),
            HopNext::Go(_, None)
        ));
        assert_eq!(hops.drain().count(), 0);
    }
}
