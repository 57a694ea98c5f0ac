//! The crawl's link graph (ARCHITECTURE §9, README "The link graph"): the pages' outlinks as
//! the writer thread keeps them during the crawl ([`outlinks`]).

pub mod outlinks;
