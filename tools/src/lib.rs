//! Loopback test infrastructure for spinneret's integration tests: a scripted HTTP(S) server
//! with virtual hosts (`http_server`), a misbehaving DNS server (`dns_server`), test
//! certificates (`tls`), a TCP black hole (`blackhole`), a generated site (`sites`), a
//! synthetic web at scale served by one `mio` loop (`testweb`), and a web that never ends
//! (`fanout`) for frontiers of millions of URLs, and a web that changes while it is crawled
//! (`freshweb`) for continuous crawls, and two news sites whose templates dwarf their
//! articles (`templateweb`) for near-duplicate detection, and articles of 50 to 5,000 words
//! with edited, datelined, syndicated and partly quoted copies on those templates
//! (`resemblanceweb`) for judging shingle resemblance. `conditional` and `http_date` answer
//! conditional GETs for the servers that send validators. `test_binary` checks that each
//! crate's one integration test binary holds every file in its `tests/`.
//!
//! Plain threads and blocking sockets on purpose: this is test scaffolding, not the crawler
//! (except `testweb`, which must outrun the crawler it benchmarks).
//! Every socket here binds to a loopback address; nothing ever talks to the outside world.

pub mod auth_gate;
pub mod blackhole;
pub mod conditional;
pub mod dns_server;
pub mod fanout;
pub mod freshweb;
pub mod http_date;
pub mod http_server;
pub mod manners_web;
pub mod resemblanceweb;
pub mod sites;
pub mod templateweb;
pub mod test_binary;
pub mod testweb;
pub mod tls;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How often blocked threads wake to check for stop (read timeouts, sleeps).
pub(crate) const POLL_STEP: Duration = Duration::from_millis(25);

/// Sleeps `total`, waking every `POLL_STEP` to check `stop`; returns false if stopped.
pub(crate) fn sleep_unless_stopped(stop: &AtomicBool, total: Duration) -> bool {
    let end = Instant::now() + total;
    loop {
        if stop.load(Ordering::SeqCst) {
            return false;
        }
        let now = Instant::now();
        if now >= end {
            return true;
        }
        std::thread::sleep(POLL_STEP.min(end - now));
    }
}
