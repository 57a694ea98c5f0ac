//! The driver: the loop that connects a [`Crawler`] to whatever has the work (a URL list, or
//! the crawl frontier) through the [`FetchSource`] trait.
//!
//! Each [`Driver::turn`]: hand every queued completion to the source, ask the source for work
//! while the crawler has room (and for host names to resolve ahead), decide whether everything
//! is finished, then run one [`Crawler::turn`]. The crawler never calls the source: it queues
//! completions and the driver delivers them between turns, with the turn's clock reading as
//! `now`. So a completion can never arrive while the source is in the middle of something, and
//! "finished" is decided in one place, after every completion has been delivered.

use std::io;
use std::time::Instant;

use super::event_loop::Crawler;
use super::fetch::{FetchDone, FetchRequest};

/// Host names taken from [`FetchSource::poll_prefetch`] per turn.
const MAX_PREFETCH_PER_TURN: usize = 32;

/// What a [`FetchSource`] has to offer when the crawler has room for another fetch.
#[derive(Debug)]
pub enum Next {
    Fetch(FetchRequest),
    /// Nothing is due before this instant (politeness delays); `now` means "ask again at once".
    Wait(Instant),
    /// Nothing now; more may come when live fetches finish.
    Idle,
    /// Nothing now or ever.
    Done,
}

/// Where the driver gets work and delivers results.
pub trait FetchSource {
    fn next_fetch(&mut self, now: Instant) -> Next;
    /// Called exactly once per request, with its outcome; `now` is the turn's clock reading.
    fn fetch_done(&mut self, done: &FetchDone<'_>, now: Instant);
    /// A host name worth resolving ahead of time (prefetching), if any.
    fn poll_prefetch(&mut self) -> Option<String> {
        None
    }
}

/// Whether there is anything left to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Turn {
    Continue,
    Finished,
}

/// What the driver knows about its source between turns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SourceState {
    /// Ask it whenever there is room for a fetch.
    Ask,
    /// It said nothing is due before this instant; a completion may change that.
    Wait(Instant),
    /// It said it has nothing now or ever.
    Done,
}

/// Drives one crawler for one source.
#[derive(Debug)]
pub struct Driver {
    source: SourceState,
}

impl Default for Driver {
    fn default() -> Self {
        Driver::new()
    }
}

impl Driver {
    pub fn new() -> Driver {
        Driver {
            source: SourceState::Ask,
        }
    }

    /// One turn: deliver completions, take work, and run the crawler once unless everything
    /// is finished.
    pub fn turn(
        &mut self,
        crawler: &mut Crawler,
        source: &mut dyn FetchSource,
    ) -> io::Result<Turn> {
        let now = crawler.now();
        self.deliver(crawler, source, now);
        if matches!(self.source, SourceState::Wait(t) if t <= now) {
            self.source = SourceState::Ask;
        }
        let mut idle = false;
        while self.source == SourceState::Ask && crawler.has_room() {
            match source.next_fetch(now) {
                Next::Fetch(req) => crawler.fetch_push(req),
                Next::Wait(t) => self.source = SourceState::Wait(t.max(now)),
                Next::Idle => {
                    idle = true;
                    break;
                }
                Next::Done => self.source = SourceState::Done,
            }
        }
        for _ in 0..MAX_PREFETCH_PER_TURN {
            let Some(host) = source.poll_prefetch() else {
                break;
            };
            if !crawler.prefetch(&host) {
                break;
            }
        }
        // Every completion is delivered, so a source that is done, or idle with nothing in
        // flight that could change its mind, has nothing more to give.
        let finished = crawler.is_idle()
            && (self.source == SourceState::Done || (idle && self.source == SourceState::Ask));
        if finished {
            crawler.close_idle();
            return Ok(Turn::Finished);
        }
        let wake_at = match self.source {
            SourceState::Wait(t) => Some(t),
            _ => None,
        };
        crawler.turn(wake_at)?;
        Ok(Turn::Continue)
    }

    /// The source has news (work arrived from elsewhere): ask it again on the next turn,
    /// even if it last said nothing was due for a while.
    pub fn poke(&mut self) {
        if matches!(self.source, SourceState::Wait(_)) {
            self.source = SourceState::Ask;
        }
    }

    /// Ctrl-C: ends every live and queued request as `Interrupted` and delivers them.
    pub fn interrupt(&mut self, crawler: &mut Crawler, source: &mut dyn FetchSource) {
        crawler.interrupt();
        let now = crawler.now();
        self.deliver(crawler, source, now);
    }

    fn deliver(&mut self, crawler: &mut Crawler, source: &mut dyn FetchSource, now: Instant) {
        while let Some(c) = crawler.poll_completion() {
            source.fetch_done(&c.done(), now);
            crawler.recycle(c);
            // A finished fetch can make work due before the source's last Wait (a host freed,
            // a robots.txt redirect hop queued): ask again.
            if matches!(self.source, SourceState::Wait(_)) {
                self.source = SourceState::Ask;
            }
        }
    }
}
