//! `timeline.tsv`: the crawl's figures over time, a row every interval (10 s to start), kept
//! beside stats.json so that `spinneret report` can chart what stats.json only totals (the
//! queue, memory, the rates). Bounded however long the crawl runs: past [`MAX_ROWS`] rows the
//! file is rewritten with every other row and the interval doubles, so a crawl of months keeps
//! a coarse whole history in a few hundred KB.
//!
//! Format: `#interval_ms\tN` (the interval rows are now written at), `#` + the column names,
//! then one row of [`COLUMNS`] decimal numbers per line. `run` numbers the runs of a crawl
//! (1, then one more per `resume`): a row's counts are its run's, from zero, so a run boundary
//! is where `run` changes. Rows are appended (a crash can cut the last one: readers ignore
//! it); rewrites go through a temporary file and a rename, so the file loads at any instant.

use std::fmt::Write as _;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

/// The file's name in the crawl's directory.
pub const FILE_NAME: &str = "timeline.tsv";
/// The first interval between rows.
pub const FIRST_INTERVAL_MS: u64 = 10_000;
/// Rows past which the file is halved.
pub const MAX_ROWS: usize = 4096;
/// Most bytes read back (a damaged or foreign file must not make a reader hold gigabytes):
/// [`MAX_ROWS`] rows take well under this.
const READ_LIMIT: u64 = 16 << 20;

/// The columns of a row, in order.
pub const COLUMNS: [&str; 14] = [
    "run",
    "unix_ms",
    "elapsed_ms",
    "fetched",
    "errors",
    "bytes",
    "queued",
    "live",
    "buffered_bytes",
    "spooled_bytes",
    "rss_bytes",
    "revisits",
    "not_modified",
    "changed",
];

/// One row: the whole crawl's figures at one moment of one run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Row {
    pub run: u64,
    pub unix_ms: u64,
    /// Since the run started.
    pub elapsed_ms: u64,
    /// This run's fetches (pages and robots.txt), of them ended without a complete response,
    /// and response bytes received.
    pub fetched: u64,
    pub errors: u64,
    pub bytes: u64,
    pub queued: u64,
    pub live: u64,
    pub buffered_bytes: u64,
    pub spooled_bytes: u64,
    /// The process's resident memory then (0: unknown).
    pub rss_bytes: u64,
    pub revisits: u64,
    pub not_modified: u64,
    pub changed: u64,
}

impl Row {
    fn values(&self) -> [u64; 14] {
        [
            self.run,
            self.unix_ms,
            self.elapsed_ms,
            self.fetched,
            self.errors,
            self.bytes,
            self.queued,
            self.live,
            self.buffered_bytes,
            self.spooled_bytes,
            self.rss_bytes,
            self.revisits,
            self.not_modified,
            self.changed,
        ]
    }

    fn from_values(v: [u64; 14]) -> Row {
        Row {
            run: v[0],
            unix_ms: v[1],
            elapsed_ms: v[2],
            fetched: v[3],
            errors: v[4],
            bytes: v[5],
            queued: v[6],
            live: v[7],
            buffered_bytes: v[8],
            spooled_bytes: v[9],
            rss_bytes: v[10],
            revisits: v[11],
            not_modified: v[12],
            changed: v[13],
        }
    }

    fn push_line(&self, out: &mut String) {
        for (i, v) in self.values().iter().enumerate() {
            if i > 0 {
                out.push('\t');
            }
            let _ = write!(out, "{v}");
        }
        out.push('\n');
    }

    /// A row line (without its newline); `None` unless it is exactly [`COLUMNS`] plain numbers.
    fn parse(line: &[u8]) -> Option<Row> {
        let mut v = [0u64; 14];
        let mut fields = line.split(|&b| b == b'\t');
        for slot in v.iter_mut() {
            let f = fields.next()?;
            if f.is_empty() || f.len() > 20 || !f.iter().all(u8::is_ascii_digit) {
                return None;
            }
            *slot = std::str::from_utf8(f).ok()?.parse().ok()?;
        }
        if fields.next().is_some() {
            return None;
        }
        Some(Row::from_values(v))
    }
}

/// A timeline as read back: its interval and rows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Timeline {
    pub interval_ms: u64,
    pub rows: Vec<Row>,
}

impl Timeline {
    /// Parses a timeline's bytes. Anything that is not a whole row is skipped (a line a
    /// crash cut short, garbage); never panics.
    pub fn parse(bytes: &[u8]) -> Timeline {
        // Only lines ended by a newline: the last one may have been cut by a crash.
        let whole = match memchr::memrchr(b'\n', bytes) {
            Some(i) => &bytes[..=i],
            None => &[][..],
        };
        let mut t = Timeline {
            interval_ms: FIRST_INTERVAL_MS,
            rows: Vec::new(),
        };
        for line in whole.split(|&b| b == b'\n') {
            if let Some(v) = line.strip_prefix(b"#interval_ms\t") {
                if let Some(ms) = std::str::from_utf8(v).ok().and_then(|s| s.parse().ok()) {
                    t.interval_ms = ms;
                }
            } else if let Some(row) = Row::parse(line) {
                t.rows.push(row);
            }
        }
        t.interval_ms = t.interval_ms.max(1);
        t
    }

    /// Reads `DIR/timeline.tsv` (at most `READ_LIMIT` bytes); `Ok(None)` if there is none.
    pub fn read(dir: &Path) -> io::Result<Option<Timeline>> {
        let mut bytes = Vec::new();
        match std::fs::File::open(dir.join(FILE_NAME)) {
            Ok(f) => f.take(READ_LIMIT).read_to_end(&mut bytes)?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        Ok(Some(Timeline::parse(&bytes)))
    }

    fn text(&self) -> String {
        let mut out = String::with_capacity(64 + self.rows.len() * 80);
        let _ = writeln!(out, "#interval_ms\t{}", self.interval_ms);
        out.push('#');
        out.push_str(&COLUMNS.join("\t"));
        out.push('\n');
        for r in &self.rows {
            r.push_line(&mut out);
        }
        out
    }

    /// Keeps every other row (the first, third, …) and doubles the interval.
    fn halve(&mut self) {
        let kept: Vec<Row> = self.rows.iter().copied().step_by(2).collect();
        self.rows = kept;
        self.interval_ms = self.interval_ms.saturating_mul(2);
    }
}

/// Appends a run's rows to `DIR/timeline.tsv`, one per interval, halving the file when it
/// outgrows [`MAX_ROWS`]. Holds the rows (a few hundred KB at most) to rewrite them.
pub struct TimelineWriter {
    path: PathBuf,
    t: Timeline,
    run: u64,
    /// When (this run's elapsed ms) the next row is due.
    next_ms: u64,
}

impl TimelineWriter {
    /// Opens the timeline in `dir` for a new run: an earlier run's rows are kept (a torn
    /// last line dropped) and this run is numbered after them. The file is rewritten whole
    /// here, so appends start on a line boundary.
    pub fn open(dir: &Path) -> io::Result<TimelineWriter> {
        let t = Timeline::read(dir)?.unwrap_or(Timeline {
            interval_ms: FIRST_INTERVAL_MS,
            rows: Vec::new(),
        });
        let run = t.rows.iter().map(|r| r.run).max().unwrap_or(0) + 1;
        let w = TimelineWriter {
            path: dir.join(FILE_NAME),
            t,
            run,
            next_ms: 0,
        };
        w.rewrite()?;
        Ok(w)
    }

    /// This run's number.
    pub fn run(&self) -> u64 {
        self.run
    }

    /// The interval rows are written at now.
    pub fn interval_ms(&self) -> u64 {
        self.t.interval_ms
    }

    /// Whether a row is due at `elapsed_ms` into the run (the first is due at once).
    pub fn due(&self, elapsed_ms: u64) -> bool {
        elapsed_ms >= self.next_ms
    }

    /// Appends `row` (its `run` set to this run's), halving the file first when full.
    pub fn append(&mut self, mut row: Row) -> io::Result<()> {
        row.run = self.run;
        self.next_ms = row.elapsed_ms.saturating_add(self.t.interval_ms);
        self.t.rows.push(row);
        if self.t.rows.len() > MAX_ROWS {
            self.t.halve();
            self.next_ms = row.elapsed_ms.saturating_add(self.t.interval_ms);
            return self.rewrite();
        }
        let mut line = String::with_capacity(96);
        row.push_line(&mut line);
        let mut f = std::fs::OpenOptions::new().append(true).open(&self.path)?;
        f.write_all(line.as_bytes())
    }

    fn rewrite(&self) -> io::Result<()> {
        let mut tmp = self.path.as_os_str().to_owned();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        std::fs::write(&tmp, self.t.text())?;
        std::fs::rename(&tmp, &self.path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::test_dir::TempDir;

    fn row(elapsed_ms: u64) -> Row {
        Row {
            unix_ms: 1_700_000_000_000 + elapsed_ms,
            elapsed_ms,
            fetched: elapsed_ms / 10,
            queued: 7,
            ..Row::default()
        }
    }

    #[test]
    fn rows_round_trip_and_a_resumed_run_is_numbered_after() {
        let tmp = TempDir::new("timeline", "round-trip");
        let dir = tmp.0.as_path();
        let mut w = TimelineWriter::open(dir).unwrap();
        assert!(w.due(0));
        w.append(row(0)).unwrap();
        assert!(!w.due(5_000));
        assert!(w.due(10_000));
        w.append(row(10_000)).unwrap();
        let t = Timeline::read(dir).unwrap().unwrap();
        assert_eq!(t.rows.len(), 2);
        assert_eq!(
            t.rows[1],
            Row {
                run: 1,
                ..row(10_000)
            }
        );

        let mut w = TimelineWriter::open(dir).unwrap();
        assert_eq!(w.run(), 2);
        w.append(row(0)).unwrap();
        let t = Timeline::read(dir).unwrap().unwrap();
        let runs: Vec<u64> = t.rows.iter().map(|r| r.run).collect();
        assert_eq!(runs, [1, 1, 2]);
    }

    #[test]
    fn a_full_timeline_keeps_every_other_row_and_doubles_its_interval() {
        let tmp = TempDir::new("timeline", "halve");
        let dir = tmp.0.as_path();
        let mut w = TimelineWriter::open(dir).unwrap();
        // Three halvings' worth: the file stays bounded and spans the whole run.
        let mut elapsed = 0;
        let mut appended = 0;
        while appended < 3 * MAX_ROWS {
            if w.due(elapsed) {
                w.append(row(elapsed)).unwrap();
                appended += 1;
            }
            elapsed += FIRST_INTERVAL_MS;
        }
        let t = Timeline::read(dir).unwrap().unwrap();
        assert!(t.rows.len() <= MAX_ROWS, "{}", t.rows.len());
        assert!(t.rows.len() > MAX_ROWS / 4);
        assert_eq!(t.rows[0].elapsed_ms, 0, "the start is kept");
        assert_eq!(t.interval_ms, w.interval_ms());
        assert!(t.interval_ms >= 4 * FIRST_INTERVAL_MS);
        let gaps: Vec<u64> = t
            .rows
            .windows(2)
            .map(|p| p[1].elapsed_ms - p[0].elapsed_ms)
            .collect();
        assert!(gaps.iter().all(|&g| g > 0), "in order");
        let len = std::fs::metadata(dir.join(FILE_NAME)).unwrap().len();
        assert!(len < 600_000, "{len} bytes");
        let names: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, [FILE_NAME], "no temporary file left");
    }

    #[test]
    fn a_torn_last_line_is_ignored_and_dropped_on_resume() {
        let tmp = TempDir::new("timeline", "torn");
        let dir = tmp.0.as_path();
        let mut w = TimelineWriter::open(dir).unwrap();
        w.append(row(0)).unwrap();
        w.append(row(10_000)).unwrap();
        let path = dir.join(FILE_NAME);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.extend_from_slice(b"1\t17000000");
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(Timeline::read(dir).unwrap().unwrap().rows.len(), 2);
        let mut w = TimelineWriter::open(dir).unwrap();
        w.append(row(0)).unwrap();
        let t = Timeline::read(dir).unwrap().unwrap();
        assert_eq!(
            t.rows.len(),
            3,
            "the torn line does not swallow the next row"
        );
    }

    #[test]
    fn any_bytes_parse_without_panic() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for n in 0..2000usize {
            let len = n % 300;
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    // Mostly digits, tabs and newlines, so some lines almost parse.
                    b"0123456789\t\n#x\xff-"[(seed % 16) as usize]
                })
                .collect();
            let t = Timeline::parse(&bytes);
            assert!(t.interval_ms >= 1);
        }
        let t = Timeline::parse(b"#interval_ms\t0\n99999999999999999999999\t1\n");
        assert_eq!((t.interval_ms, t.rows.len()), (1, 0));
    }
}
