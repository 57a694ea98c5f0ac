//! What each crawl.log line counts as (ok, HTTP error, failed, skipped, unfinished): one
//! classification, read by the exit status ([`super::exit`]) and the summary
//! ([`super::report`]).

use crate::crawl::LineTally;
use crate::ReturnCode;

/// What one crawl.log line counts as in the summary and the exit status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineClass {
    /// A complete response with a 1xx–3xx status (a duplicate too).
    Ok,
    /// A complete response with a 4xx/5xx status, or too many redirects.
    HttpError,
    /// No complete HTTP response: bad URL, DNS, blocked address, connection, TLS, timeout,
    /// malformed response, robots.txt unreachable.
    Failed,
    /// Deliberately not fetched: robots.txt, scope and the other URL filters.
    Skipped,
    /// Not fetched because the run stopped (Ctrl-C, --max-time, --max-pages).
    Unfinished,
}

impl LineClass {
    /// The class of an outcome other than a complete response (whose class is by status).
    pub fn of(code: ReturnCode) -> LineClass {
        use ReturnCode::*;
        match code {
            Success | DuplicateContent => LineClass::Ok,
            TooManyRedirects => LineClass::HttpError,
            RobotsExcluded | OutOfScope | UrlTooLong | UrlTrap | HostPageLimit | UrlRejected => {
                LineClass::Skipped
            }
            Interrupted | NotFetched => LineClass::Unfinished,
            _ => LineClass::Failed,
        }
    }
}

/// Lines counted by class.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClassCounts {
    pub ok: u64,
    pub http_errors: u64,
    pub failed: u64,
    pub skipped: u64,
    pub unfinished: u64,
}

impl ClassCounts {
    pub fn of(t: &LineTally) -> ClassCounts {
        let mut c = ClassCounts::default();
        for &code in ReturnCode::ALL {
            let n = t.outcomes.get(code);
            match LineClass::of(code) {
                LineClass::Ok => c.ok += n,
                LineClass::HttpError => c.http_errors += n,
                LineClass::Failed => c.failed += n,
                LineClass::Skipped => c.skipped += n,
                LineClass::Unfinished => c.unfinished += n,
            }
        }
        // Complete responses with an error status were counted as ok above.
        c.ok -= t.http_errors.min(c.ok);
        c.http_errors += t.http_errors;
        c
    }

    pub fn total(&self) -> u64 {
        self.ok + self.http_errors + self.failed + self.skipped + self.unfinished
    }
}
