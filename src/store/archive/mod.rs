//! The archive: what a crawl produces. WARC records ([`warc`]: pure formatting, the rotating
//! file writer and a reader), their CDXJ indexes ([`cdxj`], sorted in bounded memory by
//! [`line_sort`]), the per-URL log ([`crawl_log`]), `stats.json` ([`stats_json`]) and the
//! figures over time beside it ([`timeline`]), large bodies spooled to disk while they are
//! fetched ([`spool`]), [`recover`]y of WARC files a crash left `.open`, and the head a 304's
//! revisit record carries ([`freshen`]).
//!
//! [`output::Output`] is the sink the crawl writes through: it formats on the event loop and
//! hands WARC records, crawl.log lines and journal records to a writer thread (`writer`),
//! which commits them together. The journal, its commit marks and everything else a resume
//! reads are [`super::state`]'s; the archive uses them, never the reverse.

pub mod cdxj;
pub mod crawl_log;
pub mod freshen;
pub mod line_sort;
mod linger;
pub mod open_file;
pub mod output;
pub mod output_config;
pub mod page_lines;
mod page_work;
pub mod recover;
mod revisit_record;
pub mod spool;
pub mod stats_json;
pub mod text_sides;
pub mod timeline;
pub mod warc;
pub mod wet;
mod writer;
pub mod writer_gauges;
