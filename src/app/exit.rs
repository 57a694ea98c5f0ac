//! The exit status of a run: decided here, from how the run ended and what its crawl.log
//! lines say, and nowhere else. `--help` and README show the table
//! (`cli::EXIT_CODES_HELP`).

use std::fmt;

use crate::app::line_class::ClassCounts;
use crate::crawl::LineTally;
use crate::ReturnCode;

/// A configuration problem, reported to the user with exit code 2.
#[derive(Debug)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// Why the drive loop stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunEnd {
    /// Nothing left to do (or nothing allowed: see `MaxPages`).
    Finished,
    /// Ctrl-C (SIGINT) or SIGTERM.
    Interrupted,
    /// `--max-time` passed.
    MaxTime,
    /// `--max-pages` fetches were made with URLs still queued.
    MaxPages,
}

/// A run's exit status (README and `--help` show the table: `cli::EXIT_CODES_HELP`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitStatus {
    /// Every URL fetched with a 2xx/3xx status, or deliberately not fetched.
    Ok,
    /// The crawler itself failed (no sockets, poll failed).
    Runtime,
    /// Bad flags or input; nothing was started.
    Usage,
    /// The output could not be written.
    Output,
    /// Some URLs got no complete HTTP response.
    Failures,
    /// Some URLs got an HTTP error status or too many redirects.
    HttpErrors,
    /// Ctrl-C or `--max-time` stopped the run before its work was done.
    Stopped,
    /// `stop`: no crawl was running in the directory.
    NotRunning,
}

impl ExitStatus {
    pub fn code(self) -> u8 {
        match self {
            ExitStatus::Ok => 0,
            ExitStatus::Runtime => 1,
            ExitStatus::Usage => 2,
            ExitStatus::Output => 3,
            ExitStatus::Failures => 4,
            ExitStatus::HttpErrors => 8,
            ExitStatus::Stopped => 9,
            ExitStatus::NotRunning => 5,
        }
    }

    /// The status of a run that ended as `end` with these URL lines (robots.txt lines do not
    /// count: a missing robots.txt is no failure, and an unreachable one shows in the URLs
    /// waiting for it). The first that applies wins: a body that could not be spooled to disk
    /// (an output error), stopped, failures, HTTP errors.
    pub fn decide(end: RunEnd, urls: &LineTally) -> ExitStatus {
        let c = ClassCounts::of(urls);
        if urls.outcomes.get(ReturnCode::SpoolFailed) > 0 {
            ExitStatus::Output
        } else if matches!(end, RunEnd::Interrupted | RunEnd::MaxTime) {
            ExitStatus::Stopped
        } else if c.failed > 0 {
            ExitStatus::Failures
        } else if c.http_errors > 0 {
            ExitStatus::HttpErrors
        } else {
            ExitStatus::Ok
        }
    }

    /// The reason, for the last line on stderr.
    /// Why the run ends with this status. `queued`: URLs left in a resumable crawl's
    /// frontier (they have no crawl.log line yet).
    pub fn reason(self, end: RunEnd, urls: &LineTally, queued: u64) -> String {
        let c = ClassCounts::of(urls);
        let unfinished = c.unfinished + queued;
        let resumable = if queued > 0 {
            format!(" ({queued} still queued for `spinneret resume`)")
        } else {
            String::new()
        };
        let what = match self {
            ExitStatus::Ok if c.ok == 0 && urls.lines() > 0 => {
                "nothing fetched and nothing failed (every URL was skipped by robots.txt or a filter)"
                    .to_string()
            }
            ExitStatus::Ok if end == RunEnd::MaxPages => {
                format!("--max-pages reached; {unfinished} URLs not fetched{resumable}")
            }
            ExitStatus::Ok => "every URL fetched".to_string(),
            ExitStatus::Stopped => format!(
                "stopped by {} before the work was done: {unfinished} URLs not fetched{resumable}, \
                 {} failed",
                if end == RunEnd::Interrupted {
                    "Ctrl-C"
                } else {
                    "--max-time"
                },
                c.failed
            ),
            ExitStatus::Failures => format!(
                "{} of {} URLs got no HTTP response (bad URL, network, DNS, address policy, robots.txt)",
                c.failed,
                urls.lines()
            ),
            ExitStatus::HttpErrors => format!(
                "{} of {} URLs got an HTTP error status or too many redirects",
                c.http_errors,
                urls.lines()
            ),
            ExitStatus::Output => format!(
                "{} responses could not be spooled to disk (SpoolFailed: see crawl.log)",
                urls.outcomes.get(ReturnCode::SpoolFailed)
            ),
            ExitStatus::Runtime | ExitStatus::Usage | ExitStatus::NotRunning => String::new(),
        };
        format!("exit {}: {what}", self.code())
    }
}

/// Why a command could not run or finish: each has its exit status.
#[derive(Debug)]
pub enum Failure {
    Usage(String),
    Output(String),
    Runtime(String),
}

impl Failure {
    pub fn status(&self) -> ExitStatus {
        match self {
            Failure::Usage(_) => ExitStatus::Usage,
            Failure::Output(_) => ExitStatus::Output,
            Failure::Runtime(_) => ExitStatus::Runtime,
        }
    }

    pub(crate) fn output(e: impl fmt::Display) -> Failure {
        Failure::Output(e.to_string())
    }

    pub(crate) fn runtime(e: impl fmt::Display) -> Failure {
        Failure::Runtime(e.to_string())
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Usage(m) | Failure::Runtime(m) => f.write_str(m),
            Failure::Output(m) => write!(f, "output error: {m}"),
        }
    }
}

impl std::error::Error for Failure {}

impl From<UsageError> for Failure {
    fn from(e: UsageError) -> Failure {
        Failure::Usage(e.0)
    }
}

/// A usage error with this message.
pub(crate) fn usage(msg: impl Into<String>) -> Failure {
    Failure::Usage(msg.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tally(items: &[(ReturnCode, u16)]) -> LineTally {
        let mut t = LineTally::default();
        for &(c, s) in items {
            t.add(c, s);
        }
        t
    }

    #[test]
    fn exit_status_precedence() {
        use ReturnCode::*;
        let ok = tally(&[(Success, 200), (Success, 301), (RobotsExcluded, 0)]);
        assert_eq!(ExitStatus::decide(RunEnd::Finished, &ok), ExitStatus::Ok);
        assert_eq!(ExitStatus::decide(RunEnd::MaxPages, &ok), ExitStatus::Ok);
        assert_eq!(
            ExitStatus::decide(RunEnd::Finished, &tally(&[(Success, 200), (Success, 404)])),
            ExitStatus::HttpErrors
        );
        assert_eq!(
            ExitStatus::decide(RunEnd::Finished, &tally(&[(TooManyRedirects, 0)])),
            ExitStatus::HttpErrors
        );
        let mixed = tally(&[(Success, 404), (DnsNxDomain, 0)]);
        assert_eq!(
            ExitStatus::decide(RunEnd::Finished, &mixed),
            ExitStatus::Failures
        );
        assert_eq!(
            ExitStatus::decide(RunEnd::Interrupted, &mixed),
            ExitStatus::Stopped
        );
        assert_eq!(
            ExitStatus::decide(RunEnd::MaxTime, &ok),
            ExitStatus::Stopped
        );
        assert_eq!(
            ExitStatus::decide(
                RunEnd::Finished,
                &tally(&[(PrivateAddressBlocked, 0), (RobotsUnreachable, 0)])
            ),
            ExitStatus::Failures
        );
        assert_eq!(
            ExitStatus::decide(RunEnd::Finished, &tally(&[(HttpBadUrlSyntax, 0)])),
            ExitStatus::Failures
        );
        let codes: Vec<u8> = [
            ExitStatus::Ok,
            ExitStatus::Runtime,
            ExitStatus::Usage,
            ExitStatus::Output,
            ExitStatus::Failures,
            ExitStatus::HttpErrors,
            ExitStatus::Stopped,
            ExitStatus::NotRunning,
        ]
        .iter()
        .map(|s| s.code())
        .collect();
        assert_eq!(codes, vec![0, 1, 2, 3, 4, 8, 9, 5]);
        // Our own disk failing is an output error, whatever else happened.
        assert_eq!(
            ExitStatus::decide(
                RunEnd::Interrupted,
                &tally(&[(SpoolFailed, 0), (Success, 404)])
            ),
            ExitStatus::Output
        );
        assert!(ExitStatus::Failures
            .reason(RunEnd::Finished, &mixed, 0)
            .starts_with("exit 4: 1 of 2 URLs"));
    }
}
