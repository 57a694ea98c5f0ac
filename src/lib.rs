//! spinneret: a web crawler built around one nonblocking `mio` event loop.
//!
//! Layers, each importing only the ones below it (`docs/ARCHITECTURE.md` tells the whole
//! story; module docs cite its sections as "ARCHITECTURE §n"):
//! - protocol cores, sans-IO (bytes and `now` in; bytes to send, events and deadlines out; no
//!   sockets, no clock, no files): [`dns`], [`http`], [`links`], [`robots`], [`discovery`],
//!   [`content`] (main text, simhash, near-duplicate index);
//! - [`fetcher`]: the event loop, connections, TLS and the address policy; it moves bytes
//!   between sockets and cores and owns timing;
//! - [`crawl`]: policy: frontier, URL-seen, URL filter, normalization, robots cache use; it
//!   writes what it learns through a sink trait and never touches files;
//! - [`store`]: WARC, crawl.log, stats.json: everything on disk;
//! - [`app`]: the command line, running a command, progress and reports, `bench`.
//!
//! [`ReturnCode`], [`datetime`] and [`codec`] (varints, decimal numbers, secure randomness)
//! are shared by every layer.
//!
//! What it does not do: run JavaScript, speak HTTP/2, or follow links inside the fetcher (that
//! is the crawl layer's job, built around the fetcher, not inside it).

pub mod app;
pub mod codec;
pub mod content;
pub mod crawl;
pub mod datetime;
pub mod discovery;
pub mod dns;
pub mod fetcher;
pub mod http;
pub mod links;
pub mod proxy;
pub mod return_code;
pub mod robots;
pub mod store;
#[cfg(test)]
mod test_rng;

pub use return_code::ReturnCode;
