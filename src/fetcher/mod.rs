//! The fetcher: one `mio` event loop that moves bytes between sockets and the protocol cores,
//! and owns all timing. It knows nothing of crawling or storage: requests come in through
//! [`Crawler::fetch_push`], and every request comes out exactly once as a [`Completion`] that
//! the driver takes with [`Crawler::poll_completion`].
//!
//! - `event_loop`: the [`Crawler`] and its turn; `pool`: open connections, busy servers and
//!   the keep-alive pool; `fetch`: one URL in flight and its states; `timers`: its named
//!   deadlines and the loop's queue of them; `conn`: the plain/TLS
//!   byte transport; `digest`: the payload digest; `shared_bytes`: a received response
//!   shared with its keepers, back to the loop when they are done; [`tls`]: rustls
//!   configuration; [`addr_policy`]: the SSRF guard; [`stats`]: the loop's counters;
//!   `driver`: the [`Driver`] that runs a [`Loop`] (the crawler, or the crawl tests'
//!   simulated one), feeds a [`FetchSource`] and hands it completions.
//!
//! See `docs/ARCHITECTURE.md` for the turn step by step.

pub mod addr_policy;
mod conn;
// Public only for `benches/cost.rs`, which digests payloads with the very function the fetcher
// uses (so a change to it shows in the CPU cost guard); not an API.
#[doc(hidden)]
pub mod digest;
mod driver;
mod event_loop;
mod fetch;
mod pool;
#[cfg(test)]
mod pool_tests;
mod shared_bytes;
pub mod spool;
pub mod stats;
mod timers;
pub mod tls;

pub use digest::PayloadDigest;
pub use driver::{Driver, FetchSource, Loop, Next, Turn};
pub use event_loop::{
    default_user_agent, Crawler, CrawlerConfig, DEFAULT_CONNECT_TIMEOUT, DEFAULT_HTTP_TIMEOUT,
    DEFAULT_MAX_BUFFER_BYTES, DEFAULT_MAX_CONNS, DEFAULT_MAX_SCAN_BYTES, DEFAULT_MAX_SOCKETS,
};
pub use fetch::{Completion, FetchDone, FetchRequest, Timings, Truncation};
pub use shared_bytes::SharedBytes;
