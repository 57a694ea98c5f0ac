//! Where the near-duplicate index's spilled runs live (`content::NearDupSpill`): one file per
//! run in a directory of the crawl's output, each unlinked as soon as it is created, as the
//! body spool's are (`archive::spool`).
//!
//! The index is not checkpointed (a resumed crawl starts a new one, `content::near_dups`), so
//! a run is worth nothing once its process ends: unlinked, its space returns to the file
//! system when the descriptor closes — at a merge, at the crawl's end, or at a kill -9 — and
//! a resume finds nothing to clean up. The directory is made at the first spill, so a crawl
//! whose index stays in RAM leaves no trace.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::content::NearDupSpill;

/// The directory under a crawl's output that holds the runs (empty, as they are unlinked).
pub const DIR_NAME: &str = ".near-dups";

/// Runs as unlinked files in one directory.
#[derive(Debug)]
pub struct NearDupRuns {
    dir: PathBuf,
    /// Distinguishes the file names of several partitions (or commands) at once.
    tag: String,
    runs: HashMap<u64, Run>,
    next: u64,
}

#[derive(Debug)]
struct Run {
    file: File,
    len: u64,
}

impl NearDupRuns {
    /// Runs in `dir` (made at the first run); `tag` (a partition's name) keeps file names
    /// apart while they briefly exist.
    pub fn new(dir: &Path, tag: &str) -> NearDupRuns {
        NearDupRuns {
            dir: dir.to_path_buf(),
            tag: tag.to_string(),
            runs: HashMap::new(),
            next: 0,
        }
    }

    /// Runs in `out_dir/.near-dups`.
    pub fn in_output(out_dir: &Path, tag: &str) -> NearDupRuns {
        NearDupRuns::new(&out_dir.join(DIR_NAME), tag)
    }

    /// Runs held now.
    pub fn runs(&self) -> usize {
        self.runs.len()
    }

    fn run(&mut self, run: u64) -> io::Result<&mut Run> {
        self.runs
            .get_mut(&run)
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no such near-duplicate run"))
    }
}

impl NearDupSpill for NearDupRuns {
    fn create_run(&mut self) -> io::Result<u64> {
        fs::create_dir_all(&self.dir)?;
        let n = self.next;
        let path = self
            .dir
            .join(format!("{}-{}-{n}.run", std::process::id(), self.tag));
        let file = super::create_unlinked(&path)?;
        self.next += 1;
        self.runs.insert(n, Run { file, len: 0 });
        Ok(n)
    }

    fn append(&mut self, run: u64, bytes: &[u8]) -> io::Result<()> {
        // At the run's length, not the file's cursor: an append that fails part way leaves
        // the run as it was, and the next one writes over what it left.
        let r = self.run(run)?;
        r.file.write_all_at(bytes, r.len)?;
        r.len += bytes.len() as u64;
        Ok(())
    }

    fn read_at(&mut self, run: u64, offset: u64, out: &mut [u8]) -> io::Result<()> {
        let r = self.run(run)?;
        if offset.saturating_add(out.len() as u64) > r.len {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "read past a near-duplicate run's end",
            ));
        }
        r.file.read_exact_at(out, offset)
    }

    fn remove_run(&mut self, run: u64) -> io::Result<()> {
        // Closing the descriptor frees the unlinked file.
        self.runs.remove(&run);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content::{NearDupIndex, Sketch};
    use crate::store::test_dir::TempDir;

    #[test]
    fn an_index_past_its_budget_spills_to_unlinked_files_and_still_finds() {
        let dir = TempDir::new("near-dup-runs", "spill");
        let runs = NearDupRuns::in_output(dir.0.as_path(), "p0");
        // A budget of a few runs: most sketches end up on disk.
        let mut index = NearDupIndex::new(32 * 1024, runs);
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut prints = Vec::new();
        for id in 0..10_000u64 {
            let mut s = [0u8; 64];
            for chunk in s.chunks_exact_mut(8) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                chunk.copy_from_slice(&x.to_le_bytes());
            }
            prints.push(Sketch(s));
            index.insert(&Sketch(s), id).unwrap();
        }
        assert!(index.spilled_runs() > 0);
        assert!(index.spill().runs() > 0);
        // Nothing is left with a name: the runs are unlinked.
        let names = fs::read_dir(dir.0.join(DIR_NAME)).unwrap().count();
        assert_eq!(names, 0);
        for (id, p) in prints.iter().enumerate().step_by(97) {
            // Two bins changed: still found, from the file, with 126 bins equal.
            let mut q = *p;
            q.0[7] ^= 0x11;
            let (m, same) = index.earliest(&q, 120).unwrap();
            let m = m.expect("found");
            assert_eq!((m.id, m.equal_bins, same), (id as u64, 126, false));
        }
    }
}
