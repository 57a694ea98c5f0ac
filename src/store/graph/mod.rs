//! The crawl's link graph (ARCHITECTURE §9, README "The link graph"): the pages' outlinks as
//! the writer thread keeps them during the crawl ([`outlinks`]), and the graph built from
//! them and crawl.log after it, in WebGraph's BVGraph format, with its figures ([`build`],
//! [`rank`]).

#[cfg(feature = "graph")]
pub mod build;
pub mod outlinks;
#[cfg(feature = "graph")]
pub mod rank;
