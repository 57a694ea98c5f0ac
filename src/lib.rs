//! spinneret: a web crawler built around one nonblocking `mio` event loop.
//!
//! The crate is split the way `../shared/DESIGN.md` is. Protocol cores are sans-IO: they take
//! bytes and `now`, and give back bytes to send, events and the next deadline; they open no
//! sockets, read no clock and touch no files:
//! - [`dns`]: DNS query building, answer checking, and the resolver state machine with its cache.
//! - [`http`]: HTTP/1.1 request writing and response decoding (framing, content codings, limits).
//! - [`warc`]: WARC/1.1 record writing; [`crawl_log`]: the per-fetch log line.
//! - [`addr_policy`]: which resolved addresses may be connected to (the SSRF guard).
//!
//! The driver owns every socket, file and clock:
//! - [`event_loop`]: the `Crawler`, one `mio::Poll` loop over [`fetch`] state machines.
//! - [`tls`]: rustls configuration and the per-connection TLS glue.
//! - [`cli`]: the `spinneret` command line.
//!
//! What it does not do: run JavaScript, speak HTTP/2, or follow links inside `fetch` (that is
//! the crawl layer's job, built around the fetcher, not inside it).

pub mod addr_policy;
pub mod bench;
pub mod cli;
pub mod conn;
pub mod crawl;
pub mod crawl_log;
pub mod datetime;
pub mod dns;
pub mod event_loop;
pub mod fetch;
pub mod frontier;
pub mod http;
pub mod links;
pub mod output;
pub mod return_code;
pub mod robots;
pub mod stats;
pub mod tls;
pub mod url_filter;
pub mod url_seen;
pub mod urlnorm;
pub mod warc;

pub use return_code::ReturnCode;
