//! Where a continuous crawl finds the URLs due again: [`DueUrls`], which the store's crawl
//! database implements (the crawl never touches files), as the frontier's spill is a
//! `SpillStore` the app gives it.

use std::io;

use super::revisit::LastFetch;
use super::sink::Hop;

/// A URL due again, with what its last fetch left.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DueUrl {
    pub url: String,
    pub depth: u32,
    pub hop: Hop,
    pub last: LastFetch,
}

/// The URLs due again, earliest first.
pub trait DueUrls: Send {
    /// Appends to `out` at most `max` URLs due at or before `before` (unix seconds) that it
    /// has not handed out before, earliest due first. A URL comes back once its record
    /// changes: fetched again, it is due at a later time.
    fn take(&mut self, before: u64, max: usize, out: &mut Vec<DueUrl>) -> io::Result<()>;
}
