//! Sorting lines bytewise in bounded memory, as `sort(1)` does: lines are gathered in runs of
//! at most [`RUN_BYTES`], each run is sorted in memory and, when there is more than one,
//! written to a temporary file; the runs are then merged ([`FAN_IN`] at a time, through a heap
//! of their first lines) into the output. The CDXJ index of a WARC file is sorted this way
//! when the file closes (`warc::writer`) or is recovered (`recover`), whatever the file holds.
//!
//! The output is exactly what sorting all the lines in memory would give: lines are split at
//! `\n`, empty ones dropped, each written with its `\n`. Memory is one run, plus a read buffer
//! and a line per run being merged.
//!
//! Run files are made under the name of the output file being written and unlinked at once:
//! only their descriptors name them, so they are gone when the sort ends or the process
//! dies, and the one name a crash between creating and unlinking one can leave is the one
//! the caller's own crash handling already removes or rewrites (`NAME.cdxj.tmp`). The output
//! is created only once every run file is unlinked.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufReader, BufWriter, Seek, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};

/// Bytes of lines sorted in memory at a time: a few MB sorts in milliseconds, and a 1 GiB
/// WARC file's index (a few hundred MB at most) makes a few hundred runs.
pub const RUN_BYTES: usize = 4 << 20;
/// Runs merged at once: the open files and read buffers of a merge. More runs are merged in
/// passes, so each byte is rewritten about log_FAN_IN(runs) times.
pub const FAN_IN: usize = 16;
/// Read and write buffer per run file.
const RUN_BUFFER_BYTES: usize = 64 << 10;

/// A sorted run on disk, and how many merges made it (0: written from memory).
struct Run {
    file: File,
    level: u32,
}

/// Lines being sorted: the current run in memory, the earlier ones in files.
pub struct LineSorter {
    /// The name each run file is made under (and unlinked from at once).
    scratch: PathBuf,
    run_bytes: usize,
    fan_in: usize,
    /// The current run's lines, each followed by `\n`.
    text: Vec<u8>,
    lines: Vec<Range<usize>>,
    runs: Vec<Run>,
}

impl LineSorter {
    /// A sorter whose run files are made as `scratch`: the output's path, or beside it.
    pub fn new(scratch: &Path) -> LineSorter {
        LineSorter::with_limits(scratch, RUN_BYTES, FAN_IN)
    }

    /// As [`LineSorter::new`] with other run and merge sizes (tests use tiny ones).
    pub fn with_limits(scratch: &Path, run_bytes: usize, fan_in: usize) -> LineSorter {
        LineSorter {
            scratch: scratch.to_path_buf(),
            run_bytes: run_bytes.max(1),
            fan_in: fan_in.max(2),
            text: Vec::new(),
            lines: Vec::new(),
            runs: Vec::new(),
        }
    }

    /// Adds one line (without its `\n`; an empty one is dropped).
    pub fn push(&mut self, line: &[u8]) -> io::Result<()> {
        if line.is_empty() {
            return Ok(());
        }
        if !self.text.is_empty() && self.text.len() + line.len() + 1 > self.run_bytes {
            self.spill()?;
        }
        let start = self.text.len();
        self.text.extend_from_slice(line);
        self.lines.push(start..self.text.len());
        self.text.push(b'\n');
        Ok(())
    }

    /// Adds every line of `input`, a line at a time.
    pub fn push_lines(&mut self, mut input: impl BufRead) -> io::Result<()> {
        let mut line = Vec::new();
        // Bounded by the input: each pass consumes at least one byte or ends it.
        loop {
            line.clear();
            if input.read_until(b'\n', &mut line)? == 0 {
                return Ok(());
            }
            if line.last() == Some(&b'\n') {
                line.pop();
            }
            self.push(&line)?;
        }
    }

    /// Writes the lines, sorted, to `path` (created, or truncated), and fsyncs it. `path`
    /// may be the scratch name: it is created only after the last run file is unlinked.
    pub fn write_to_file(mut self, path: &Path) -> io::Result<()> {
        if !self.runs.is_empty() {
            self.spill()?;
            // The last merge reads at most `fan_in` runs: merge the most recent (the
            // smallest) until it does.
            while self.runs.len() > self.fan_in {
                let at = self.runs.len() - self.fan_in;
                self.merge_tail(at)?;
            }
        }
        let mut out = BufWriter::with_capacity(RUN_BUFFER_BYTES, File::create(path)?);
        if self.runs.is_empty() {
            self.sort_run();
            for r in &self.lines {
                out.write_all(&self.text[r.start..=r.end])?;
            }
        } else {
            merge(std::mem::take(&mut self.runs), &mut out)?;
        }
        out.into_inner().map_err(|e| e.into_error())?.sync_all()
    }

    fn sort_run(&mut self) {
        let text = &self.text;
        self.lines
            .sort_unstable_by(|a, b| text[a.clone()].cmp(&text[b.clone()]));
    }

    /// Writes the current run to a file, then merges runs while the newest `fan_in` are of
    /// one level (a counter in base `fan_in`: files stay few, each byte is rewritten once a
    /// level).
    fn spill(&mut self) -> io::Result<()> {
        if self.lines.is_empty() {
            return Ok(());
        }
        self.sort_run();
        let mut out = BufWriter::with_capacity(RUN_BUFFER_BYTES, self.run_file()?);
        for r in &self.lines {
            out.write_all(&self.text[r.start..=r.end])?;
        }
        let file = out.into_inner().map_err(|e| e.into_error())?;
        self.runs.push(Run { file, level: 0 });
        self.text.clear();
        self.lines.clear();
        loop {
            let n = self.runs.len();
            if n < self.fan_in {
                return Ok(());
            }
            let level = self.runs[n - 1].level;
            if self.runs[n - self.fan_in..]
                .iter()
                .any(|r| r.level != level)
            {
                return Ok(());
            }
            self.merge_tail(n - self.fan_in)?;
        }
    }

    /// Merges the runs from index `at` on into one run that takes their place.
    fn merge_tail(&mut self, at: usize) -> io::Result<()> {
        let runs = self.runs.split_off(at);
        let level = runs.iter().map(|r| r.level).max().unwrap_or(0) + 1;
        let mut out = BufWriter::with_capacity(RUN_BUFFER_BYTES, self.run_file()?);
        merge(runs, &mut out)?;
        let file = out.into_inner().map_err(|e| e.into_error())?;
        self.runs.push(Run { file, level });
        Ok(())
    }

    /// A new, empty, unlinked file for a run.
    fn run_file(&self) -> io::Result<File> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&self.scratch)?;
        fs::remove_file(&self.scratch)?;
        Ok(file)
    }
}

/// One run being merged: its reader and its current (smallest unwritten) line, with `\n`.
struct Head {
    line: Vec<u8>,
    run: usize,
}

impl PartialEq for Head {
    fn eq(&self, other: &Head) -> bool {
        self.cmp(other) == std::cmp::Ordering::Equal
    }
}

impl Eq for Head {}

impl PartialOrd for Head {
    fn partial_cmp(&self, other: &Head) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Head {
    fn cmp(&self, other: &Head) -> std::cmp::Ordering {
        // Lines compare without their `\n` (a line is less than any longer one it begins).
        let a = &self.line[..self.line.len() - 1];
        let b = &other.line[..other.line.len() - 1];
        a.cmp(b).then(self.run.cmp(&other.run))
    }
}

/// Reads the next line of a run into `line` (cleared first), with its `\n`; false at the end.
fn next_line(reader: &mut impl BufRead, line: &mut Vec<u8>) -> io::Result<bool> {
    line.clear();
    if reader.read_until(b'\n', line)? == 0 {
        return Ok(false);
    }
    if line.last() != Some(&b'\n') {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "sorted run cut short",
        ));
    }
    Ok(true)
}

/// Merges sorted runs (every line ends with `\n`) into `out`.
fn merge(runs: Vec<Run>, out: &mut impl Write) -> io::Result<()> {
    let mut readers = Vec::with_capacity(runs.len());
    let mut heap = BinaryHeap::with_capacity(runs.len());
    for (run, r) in runs.into_iter().enumerate() {
        let mut file = r.file;
        file.rewind()?;
        let mut reader = BufReader::with_capacity(RUN_BUFFER_BYTES, file);
        let mut line = Vec::new();
        if next_line(&mut reader, &mut line)? {
            heap.push(Reverse(Head { line, run }));
        }
        readers.push(reader);
    }
    // Each pass writes one line: bounded by the runs' lines.
    while let Some(Reverse(mut head)) = heap.pop() {
        out.write_all(&head.line)?;
        if next_line(&mut readers[head.run], &mut head.line)? {
            heap.push(Reverse(head));
        }
    }
    Ok(())
}

/// Merges files whose lines are each sorted already (every line ending in `\n`) into `out`,
/// as one sorted stream: a WACZ's index from the CDXJ of each WARC file. At most `fan_in`
/// files are read at once; more are first merged `fan_in` at a time into run files made as
/// `scratch` (unlinked at once), so memory is `fan_in` read buffers whatever the count.
pub fn merge_sorted_files(
    files: Vec<File>,
    scratch: &Path,
    fan_in: usize,
    out: &mut impl Write,
) -> io::Result<()> {
    let sorter = LineSorter::with_limits(scratch, RUN_BYTES, fan_in);
    let mut runs: Vec<Run> = files
        .into_iter()
        .map(|file| Run { file, level: 0 })
        .collect();
    // Each pass divides the runs by `fan_in` (at least 2): bounded by log(files) passes.
    while runs.len() > sorter.fan_in {
        let mut merged = Vec::with_capacity(runs.len() / sorter.fan_in + 1);
        let mut rest = runs.into_iter().peekable();
        while rest.peek().is_some() {
            let group: Vec<Run> = rest.by_ref().take(sorter.fan_in).collect();
            let level = group.iter().map(|r| r.level).max().unwrap_or(0) + 1;
            let mut w = BufWriter::with_capacity(RUN_BUFFER_BYTES, sorter.run_file()?);
            merge(group, &mut w)?;
            let file = w.into_inner().map_err(|e| e.into_error())?;
            merged.push(Run { file, level });
        }
        runs = merged;
    }
    merge(runs, out)
}

/// Sorts the lines of the file `input` into `output` (fsynced), in bounded memory; run files
/// are made as `output` and unlinked at once.
pub fn sort_file(input: &Path, output: &Path) -> io::Result<()> {
    let mut sorter = LineSorter::new(output);
    sorter.push_lines(BufReader::with_capacity(
        RUN_BUFFER_BYTES,
        File::open(input)?,
    ))?;
    sorter.write_to_file(output)
}

#[cfg(test)]
#[path = "line_sort_tests.rs"]
mod tests;
