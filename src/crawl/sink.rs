//! Where the crawl puts what it learns: the [`Sink`] trait. The crawl layer never touches
//! files; the app gives it the store's WARC/log sink, tests give it a [`MemorySink`].

use std::io;

use crate::fetcher::{FetchDone, PayloadDigest};
use crate::ReturnCode;

/// Receives every URL's one outcome.
pub trait Sink {
    /// Stores a finished fetch (its WARC records, when a response head arrived) and logs it
    /// with `outcome` (which may differ from the fetch's, e.g. `DuplicateContent`) and the
    /// content digest.
    fn store(
        &mut self,
        done: &FetchDone<'_>,
        referrer: Option<&str>,
        outcome: ReturnCode,
        digest: Option<PayloadDigest>,
    ) -> io::Result<()>;

    /// Logs a URL that ended without a fetch (robots exclusion, too many redirects,
    /// interrupted in the queue).
    fn log_unfetched(
        &mut self,
        url: &str,
        referrer: Option<&str>,
        outcome: ReturnCode,
    ) -> io::Result<()>;
}

/// One line of what a [`MemorySink`] was told.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Logged {
    pub url: String,
    pub referrer: Option<String>,
    pub outcome: ReturnCode,
    /// HTTP status, 0 without a response.
    pub status: u16,
    /// Whether a response was stored (a WARC record would have been written).
    pub stored: bool,
}

/// A sink that keeps every line in memory, for tests of crawl policy without files.
#[derive(Debug, Default)]
pub struct MemorySink {
    pub lines: Vec<Logged>,
}

impl Sink for MemorySink {
    fn store(
        &mut self,
        done: &FetchDone<'_>,
        referrer: Option<&str>,
        outcome: ReturnCode,
        _digest: Option<PayloadDigest>,
    ) -> io::Result<()> {
        self.lines.push(Logged {
            url: done.request.url.to_string(),
            referrer: referrer.map(str::to_string),
            outcome,
            status: done.status(),
            stored: done.head.is_some(),
        });
        Ok(())
    }

    fn log_unfetched(
        &mut self,
        url: &str,
        referrer: Option<&str>,
        outcome: ReturnCode,
    ) -> io::Result<()> {
        self.lines.push(Logged {
            url: url.to_string(),
            referrer: referrer.map(str::to_string),
            outcome,
            status: 0,
            stored: false,
        });
        Ok(())
    }
}
