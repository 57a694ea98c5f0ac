//! Storage: everything that touches disk, in two rooms.
//! - [`archive`]: what the crawl produces, for people and replay tools: WARC files, their
//!   CDXJ indexes, `crawl.log`, `stats.json`, the body spool, recovery of WARC files a crash
//!   left `.open`, and [`archive::output::Output`], the sink the crawl writes through, with
//!   its writer thread (which also commits the journal, so the archive sits above the state).
//! - [`state`]: what a crawl keeps so that it can be resumed: the append-only checksummed
//!   journal, atomic checkpoint files, compaction, commit marks, the frontier's spilled
//!   segments. It imports nothing from the archive.
//!
//! - [`graph`]: the link graph: each page's outlinks as the crawl goes, and the BVGraph
//!   `spinneret graph` builds from them after it. It uses the state's record framing.
//!
//! - [`wacz`]: WACZ packages of a crawl (its WARC files, one index, its pages and a
//!   manifest in one ZIP file), written after it from the archive's files.
//!
//! The varint and number codecs both use are [`crate::codec`]'s.

pub mod archive;
pub mod graph;
pub mod state;
#[cfg(test)]
mod test_data;
#[cfg(test)]
pub(crate) mod test_dir;
pub mod wacz;
