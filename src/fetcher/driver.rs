//! The driver: the loop that connects an event loop ([`Loop`]) to whatever has the work (a URL
//! list, or the crawl frontier) through the [`FetchSource`] trait.
//!
//! Each [`Driver::turn`]: hand every queued completion to the source, ask the source for work
//! while the loop has room (and for host names to resolve ahead), decide whether everything
//! is finished, then run one [`Loop::turn`]. The loop never calls the source: it queues
//! completions and the driver delivers them between turns, with the turn's clock reading as
//! `now`. So a completion can never arrive while the source is in the middle of something, and
//! "finished" is decided in one place, after every completion has been delivered.
//!
//! Two loops implement [`Loop`]: the real one (`event_loop::Crawler`, sockets and the OS
//! clock) and the crawl tests' simulated web and clock (`crawl::sim`), so the crawl tests run
//! this very driver. The driver is generic over the loop: no dynamic dispatch on its path.

use std::io;
use std::time::{Duration, Instant};

use super::fetch::{Completion, FetchDone, FetchRequest};

/// Host names taken from [`FetchSource::poll_prefetch`] per turn.
const MAX_PREFETCH_PER_TURN: usize = 32;

/// What a [`FetchSource`] has to offer when the loop has room for another fetch.
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

/// What the driver needs from an event loop. Every request pushed comes back exactly once
/// through [`Loop::poll_completion`]; nothing is delivered from inside [`Loop::turn`].
pub trait Loop {
    /// The clock reading of the last turn: the `now` the driver passes on.
    fn now(&self) -> Instant;
    /// Whether another request would start at once (the cue to ask the source for more).
    fn has_room(&self) -> bool;
    /// Queues a request.
    fn fetch_push(&mut self, req: FetchRequest);
    /// Starts resolving a host name ahead of its URLs; false, doing nothing, when enough
    /// lookups are already outstanding.
    fn prefetch(&mut self, host: &str) -> bool;
    /// Nothing queued, live or waiting to be taken: a turn now could only sleep.
    fn is_idle(&self) -> bool;
    /// Closes idle kept-alive connections (the work is done).
    fn close_idle(&mut self);
    /// Moves time and fetches forward: at most until `wake_at` when the source has work due
    /// then, at once when completions are waiting.
    fn turn(&mut self, wake_at: Option<Instant>) -> io::Result<()>;
    /// Ends every live and queued request as `Interrupted` (queued as completions).
    fn interrupt(&mut self);
    /// The next finished request, oldest first.
    fn poll_completion(&mut self) -> Option<Completion>;
    /// Takes a delivered completion back (its buffers are reused).
    fn recycle(&mut self, c: Completion);
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

/// Drives one loop for one source.
#[derive(Debug)]
pub struct Driver {
    source: SourceState,
    /// Loop time spent in [`FetchSource::fetch_done`], summed: what the source's work on
    /// completions costs (the crawl reads no clock, so its caller times it).
    source_time: Duration,
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
            source_time: Duration::ZERO,
        }
    }

    /// Loop time the source spent on completions so far ([`FetchSource::fetch_done`]).
    pub fn source_time(&self) -> Duration {
        self.source_time
    }

    /// One turn: deliver completions, take work, and run the loop once unless everything
    /// is finished.
    pub fn turn<L: Loop>(&mut self, lp: &mut L, source: &mut dyn FetchSource) -> io::Result<Turn> {
        self.deliver(lp, source);
        let now = lp.now();
        if matches!(self.source, SourceState::Wait(t) if t <= now) {
            self.source = SourceState::Ask;
        }
        let mut idle = false;
        while self.source == SourceState::Ask && lp.has_room() {
            match source.next_fetch(now) {
                Next::Fetch(req) => lp.fetch_push(req),
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
            if !lp.prefetch(&host) {
                break;
            }
        }
        // Every completion is delivered, so a source that is done, or idle with nothing in
        // flight that could change its mind, has nothing more to give.
        let finished = lp.is_idle()
            && (self.source == SourceState::Done || (idle && self.source == SourceState::Ask));
        if finished {
            lp.close_idle();
            return Ok(Turn::Finished);
        }
        let wake_at = match self.source {
            SourceState::Wait(t) => Some(t),
            _ => None,
        };
        lp.turn(wake_at)?;
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
    pub fn interrupt<L: Loop>(&mut self, lp: &mut L, source: &mut dyn FetchSource) {
        lp.interrupt();
        self.deliver(lp, source);
    }

    /// Hands every queued completion to the source now, with the loop's clock reading (the
    /// first thing [`Driver::turn`] does; a stepped test calls it to see a turn's results
    /// before the next one asks for work).
    pub fn deliver<L: Loop>(&mut self, lp: &mut L, source: &mut dyn FetchSource) {
        let now = lp.now();
        while let Some(c) = lp.poll_completion() {
            let done = c.done();
            // Measured, not decided on: the source sees only `now`.
            let started = Instant::now();
            source.fetch_done(&done, now);
            self.source_time += started.elapsed();
            lp.recycle(c);
            // A finished fetch can make work due before the source's last Wait (a host freed,
            // a robots.txt redirect hop queued): ask again.
            if matches!(self.source, SourceState::Wait(_)) {
                self.source = SourceState::Ask;
            }
        }
    }
}
