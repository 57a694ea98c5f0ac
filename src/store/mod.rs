//! Storage: everything that touches disk. WARC records ([`warc`]: pure formatting, the rotating
//! file writer and a reader), the per-URL log ([`crawl_log`]), `stats.json`
//! ([`stats_json`]), CDXJ indexes ([`cdxj`], sorted by [`line_sort`]), and
//! [`output::Output`], the sink the crawl writes through; the body spool ([`spool`]); and the
//! durable-crawl building blocks: an append-only checksummed [`journal`], atomic
//! [`checkpoint`] files, the resumable crawl's [`crawl_state`] and its [`commit_mark`]s,
//! [`recover`]y of WARC files a crash left `.open`, and frontier [`segments`] (with
//! [`crc32c`] shared by them).

pub mod cdxj;
pub mod checkpoint;
pub mod commit_mark;
pub mod compaction;
pub mod crawl_db;
pub mod crawl_log;
pub mod crawl_state;
pub mod crc32c;
pub mod journal;
mod journal_side;
pub mod line_sort;
pub mod output;
pub mod recover;
pub mod segments;
pub mod spool;
pub mod stats_json;
#[cfg(test)]
mod test_data;
#[cfg(test)]
mod test_dir;
pub mod warc;
mod writer;
