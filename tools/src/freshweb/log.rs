//! The changing web's request log: one [`LogEntry`] per request, and its text form, one
//! line per request (the `--log` file of `spinneret-testserver fresh`), seven fields
//! separated by tabs, after a header comment ([`LOG_HEADER`]):
//!
//! ```text
//! t  method  path  conditional  status  body_bytes  version
//! 12.503118  GET  /p/3  1  304  0  5
//! ```
//!
//! `t` is seconds since the server's start (the same clock as the change times), written
//! so it reads back to the same f64; `path` has every byte outside `!`..`~` written `%XX`;
//! `conditional` is 1 when the request sent `If-None-Match` or `If-Modified-Since`; `version`
//! is the version served (of a 200 or 304), -1 for none. Lines starting `#` are comments; a
//! `# dropped N` comment says N requests past the in-memory cap were counted, not logged.

use std::fmt::Write;

/// The first line of a log file.
pub const LOG_HEADER: &str = "# t\tmethod\tpath\tconditional\tstatus\tbody_bytes\tversion";
/// Longest method and path kept in an entry (longer ones are cut).
const MAX_METHOD: usize = 16;
const MAX_PATH: usize = 1024;

/// One request as the server answered it.
#[derive(Clone, Debug, PartialEq)]
pub struct LogEntry {
    /// Seconds since the server's start: when the request was answered for (its version).
    pub t: f64,
    pub method: String,
    /// The request target as sent (bytes outside `!`..`~` as `%XX`).
    pub path: String,
    /// It sent `If-None-Match` or `If-Modified-Since`.
    pub conditional: bool,
    pub status: u16,
    /// Body bytes sent (0 for a 304 or HEAD).
    pub body_bytes: u64,
    /// The version served, -1 for none (404, errors).
    pub version: i64,
}

/// `s` cut to `max` bytes with every byte outside `!`..`~` as `%XX`, so a field never holds
/// a tab or a line break.
pub(crate) fn clean(s: &[u8], max: usize) -> String {
    let mut out = String::with_capacity(s.len().min(max));
    for &b in s.iter().take(max) {
        if (b'!'..=b'~').contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

impl LogEntry {
    pub(crate) fn new(t: f64, method: &[u8], path: &[u8]) -> LogEntry {
        LogEntry {
            t,
            method: clean(method, MAX_METHOD),
            path: clean(path, MAX_PATH),
            conditional: false,
            status: 0,
            body_bytes: 0,
            version: -1,
        }
    }

    /// The entry as a log line, without the line end.
    pub fn to_line(&self) -> String {
        format!(
            "{}\t{}\t{}\t{}\t{}\t{}\t{}",
            self.t,
            self.method,
            self.path,
            u8::from(self.conditional),
            self.status,
            self.body_bytes,
            self.version
        )
    }

    /// A log line back into an entry; None if it is not one.
    pub fn parse_line(line: &str) -> Option<LogEntry> {
        let mut f = line.trim_end_matches(['\r', '\n']).split('\t');
        let entry = LogEntry {
            t: f.next()?.parse().ok().filter(|t: &f64| t.is_finite())?,
            method: f.next()?.to_string(),
            path: f.next()?.to_string(),
            conditional: match f.next()? {
                "0" => false,
                "1" => true,
                _ => return None,
            },
            status: f.next()?.parse().ok()?,
            body_bytes: f.next()?.parse().ok()?,
            version: f.next()?.parse().ok()?,
        };
        f.next().is_none().then_some(entry)
    }
}

/// Appends `entries` as log lines, each ending in a newline.
pub fn format_log(entries: &[LogEntry], out: &mut String) {
    for e in entries {
        out.push_str(&e.to_line());
        out.push('\n');
    }
}

/// A log file's entries and its `# dropped` count; an error names the first bad line.
pub fn parse_log(text: &str) -> Result<(Vec<LogEntry>, u64), String> {
    let mut entries = Vec::new();
    let mut dropped = 0;
    for (i, line) in text.lines().enumerate() {
        if let Some(comment) = line.strip_prefix('#') {
            if let Some(n) = comment.trim().strip_prefix("dropped ") {
                dropped = n.trim().parse().map_err(|_| format!("line {}", i + 1))?;
            }
            continue;
        }
        if line.trim().is_empty() {
            continue;
        }
        entries.push(LogEntry::parse_line(line).ok_or_else(|| format!("line {}", i + 1))?);
    }
    Ok((entries, dropped))
}
