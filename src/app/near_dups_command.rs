//! `spinneret near-duplicates DIR`: the near-duplicate pairs of a finished (or stopped)
//! crawl, from the sketches in its crawl.log's last column (README, "Near-duplicates").
//!
//! Every partition's lines are in the one crawl.log, so this finds what the crawl's
//! per-partition indexes could not: copies across partitions, and across a resume. In log
//! order, each page with a sketch is looked up in a `NearDupIndex` of the pages before it;
//! the earliest whose estimated resemblance reaches `--near-duplicate-threshold` is the
//! page it duplicates, and the pair is printed `URL<TAB>URL it duplicates<TAB>resemblance`
//! (URLs as logged, the resemblance with two decimals). A page whose earliest match is an
//! earlier fetch of its own URL (a revisit) is not printed.
//!
//! Bounded memory whatever the log's size: a page's id in the index is its line's byte
//! offset in crawl.log (so no URL is kept; a pair's earlier URL is read back from there), the
//! index keeps `--index-ram` bytes and spills sorted runs past it to unlinked files in a
//! temporary directory under DIR, removed at the end. A sketch already in the index is not
//! added again: a later page finds the earlier copy alike, and a trap of identical pages
//! stays one entry; a look-up reads at most 8 candidates a band whatever the crawl.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::app::cli::NearDupsArgs;
use crate::app::exit::{usage, ExitStatus, Failure};
use crate::content::near_dups::min_equal_bins;
use crate::content::NearDupIndex;
use crate::store::archive::crawl_log::{self, parse_line, MAX_LINE_BYTES};
use crate::store::state::near_dup_runs::NearDupRuns;

/// One reported pair: the later page, the earlier one it duplicates, their estimated
/// resemblance.
#[derive(Clone, Debug, PartialEq)]
pub struct Pair {
    pub url: String,
    pub duplicates: String,
    pub resemblance: f64,
}

/// The temporary directory for spilled runs, removed when dropped (on every return).
struct TempRuns(PathBuf);

impl Drop for TempRuns {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn run(args: &NearDupsArgs) -> Result<ExitStatus, Failure> {
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut line = Vec::new();
    let budget = usize::try_from(args.index_ram.0).unwrap_or(usize::MAX);
    let mut write_err = None;
    near_duplicates(&args.dir, budget, args.near_duplicate_threshold.0, |p| {
        line.clear();
        line.extend_from_slice(p.url.as_bytes());
        line.push(b'\t');
        line.extend_from_slice(p.duplicates.as_bytes());
        line.push(b'\t');
        line.extend_from_slice(format!("{:.2}", p.resemblance).as_bytes());
        line.push(b'\n');
        if let Err(e) = out.write_all(&line) {
            write_err.get_or_insert(e);
        }
    })?;
    out.flush()
        .map_err(|e| Failure::Output(format!("stdout: {e}")))?;
    if let Some(e) = write_err {
        return Err(Failure::Output(format!("stdout: {e}")));
    }
    Ok(ExitStatus::Ok)
}

/// Calls `each` with every pair of the crawl in `dir` at `threshold`, in log order, with an
/// index of `budget` bytes of RAM. Returns the pages with a sketch read.
pub fn near_duplicates(
    dir: &Path,
    budget: usize,
    threshold: f64,
    mut each: impl FnMut(&Pair),
) -> Result<u64, Failure> {
    if !dir.is_dir() {
        return Err(usage(format!("{}: no such directory", dir.display())));
    }
    let log_path = dir.join("crawl.log");
    if !log_path.is_file() {
        return Err(usage(format!(
            "{} holds no crawl.log (is it a crawl's --out directory?)",
            dir.display()
        )));
    }
    let read_err = |e: io::Error| Failure::Runtime(format!("{}: {e}", log_path.display()));
    let file = File::open(&log_path).map_err(read_err)?;
    let mut back = File::open(&log_path).map_err(read_err)?;
    let tmp = TempRuns(dir.join(format!(".near-dups-{}", std::process::id())));
    let mut index = NearDupIndex::new(budget, NearDupRuns::new(&tmp.0, "cmd"));
    let spill_err = |e: io::Error| Failure::Output(format!("{}: {e}", tmp.0.display()));

    let mut reader = BufReader::new(file);
    let mut text = String::new();
    let min_equal = min_equal_bins(threshold);
    let mut earlier = Vec::new();
    let (mut offset, mut pages) = (0u64, 0u64);
    // Bounded by the file's length: each pass consumes a line.
    loop {
        text.clear();
        let n = reader.read_line(&mut text).map_err(read_err)?;
        if n == 0 {
            break;
        }
        let at = offset;
        offset += n as u64;
        let Some(page) = parse_line(&text) else {
            continue;
        };
        let Some(sketch) = page.sketch else {
            continue;
        };
        pages += 1;
        let (first, same) = index.earliest(&sketch, min_equal).map_err(spill_err)?;
        if let Some(m) = first {
            let other = url_at(&mut back, m.id, &mut earlier).map_err(read_err)?;
            if other != page.url {
                each(&Pair {
                    url: page.url.clone(),
                    duplicates: other,
                    resemblance: m.resemblance(),
                });
            }
        }
        if !same {
            index.insert(&sketch, at).map_err(spill_err)?;
        }
    }
    Ok(pages)
}

/// The URL of the crawl.log line at `offset` (a line read before, so it parses).
fn url_at(log: &mut File, offset: u64, buf: &mut Vec<u8>) -> io::Result<String> {
    log.seek(SeekFrom::Start(offset))?;
    buf.clear();
    let mut r = BufReader::with_capacity(4096, Read::take(&mut *log, MAX_LINE_BYTES as u64 + 1));
    r.read_until(b'\n', buf)?;
    let text = String::from_utf8_lossy(buf);
    crawl_log::parse_line(&text)
        .map(|l| l.url)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "crawl.log changed while read"))
}
