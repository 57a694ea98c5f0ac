//! Storage: everything that touches disk. WARC records ([`warc`]: pure formatting, the rotating
//! file writer and a reader), the per-URL log ([`crawl_log`]), `stats.json`
//! ([`stats_json`]), CDXJ indexes ([`cdxj`]), and [`output::Output`], the sink the crawl writes through.

pub mod cdxj;
pub mod crawl_log;
pub mod output;
pub mod stats_json;
pub mod warc;
