//! The journal as the writer thread keeps it: records batched until committed (each commit
//! ending in a [`super::commit_mark`]), generations rotated at each fsync, and the closed
//! ones folded into a checkpoint ([`super::compaction`]) on a thread of their own, so the
//! journal a resume replays stays a fraction of the checkpoint instead of growing with the
//! crawl.

use std::io;
use std::path::PathBuf;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::compaction::{self, StateKeys};
use super::crawl_state::{self, StateError};
use super::journal::JournalWriter;

/// A journal generation is closed (after an fsync) once this large, however recent the last
/// fsync: it bounds what one compaction reads, so its memory (the ended URLs' keys) too.
const ROTATE_BYTES: u64 = 64 << 20;

/// The journal side of the writer thread.
pub(in crate::store) struct JournalSide {
    pub(in crate::store) writer: JournalWriter,
    /// Framed records received and not yet appended.
    pub(in crate::store) pending: Vec<u8>,
    pub(in crate::store) pending_msgs: usize,
    pub(in crate::store) first_pending: Option<Instant>,
    pub(in crate::store) sync_every: Duration,
    pub(in crate::store) last_sync: Instant,
    /// The newest commit mark, encoded: a new generation begins with it.
    pub(in crate::store) mark: Vec<u8>,
    /// The outputs may have grown since the last mark: the next commit writes one even
    /// with no records pending.
    pub(in crate::store) needs_mark: bool,
    dir: PathBuf,
    /// The generation `writer` appends to.
    gen: u64,
    /// Checkpoints are written (the crawl's URL keys are known); else journals only rotate.
    keys: Option<StateKeys>,
    compactor: Option<JoinHandle<Result<u64, StateError>>>,
    /// Size of the newest checkpoint, and of the closed journals not yet given to a compactor.
    checkpoint_bytes: u64,
    closed_bytes: u64,
}

impl JournalSide {
    /// Opens the crawl's journal in `dir` (its newest generation) for appending.
    pub(in crate::store) fn open(
        dir: PathBuf,
        sync_every: Duration,
        keys: Option<StateKeys>,
    ) -> io::Result<JournalSide> {
        let files = crawl_state::state_files(&dir)?;
        let gen = files.append_gen();
        let size = |p: &PathBuf| std::fs::metadata(p).map_or(0, |m| m.len());
        let checkpoint_bytes = files.checkpoint.as_ref().map_or(0, |(_, p)| size(p));
        let closed_bytes = files
            .journals
            .iter()
            .filter(|(g, _)| *g < gen)
            .map(|(_, p)| size(p))
            .sum();
        let writer = JournalWriter::open_append(&crawl_state::journal_path(&dir, gen))?;
        Ok(JournalSide {
            writer,
            pending: Vec::new(),
            pending_msgs: 0,
            first_pending: None,
            sync_every,
            last_sync: Instant::now(),
            mark: Vec::new(),
            needs_mark: true,
            dir,
            gen,
            keys,
            compactor: None,
            checkpoint_bytes,
            closed_bytes,
        })
    }

    /// The crawl's output directory.
    pub(in crate::store) fn out_dir(&self) -> &std::path::Path {
        &self.dir
    }

    /// Whether the files are due an fsync (and the journal a new generation): every
    /// `sync_every`, and when the generation reaches [`ROTATE_BYTES`].
    pub(in crate::store) fn sync_due(&self) -> bool {
        self.last_sync.elapsed() >= self.sync_every || self.writer.len() >= ROTATE_BYTES
    }

    /// After an fsync: later records go to a new generation, and the closed ones are folded
    /// into a checkpoint once they reach half its size (so each byte is rewritten a bounded
    /// number of times) and no compaction is running.
    pub(in crate::store) fn rotate(&mut self) -> io::Result<()> {
        self.reap(false)?;
        if self.writer.is_empty() {
            return Ok(());
        }
        let closed = self.writer.len();
        let mut next =
            JournalWriter::open_append(&crawl_state::journal_path(&self.dir, self.gen + 1))?;
        // The new generation begins with the newest mark, durably, before a compaction may
        // remove the generations holding the older ones: a resume always finds one.
        if !self.mark.is_empty() {
            next.append(&self.mark)?;
            next.sync()?;
        }
        self.writer = next;
        self.gen += 1;
        self.closed_bytes += closed;
        let Some(keys) = &self.keys else {
            return Ok(());
        };
        if self.compactor.is_some() || self.closed_bytes * 2 < self.checkpoint_bytes {
            return Ok(());
        }
        let (dir, upto, keys) = (self.dir.clone(), self.gen - 1, keys.clone());
        self.compactor = Some(
            std::thread::Builder::new()
                .name("compactor".into())
                .spawn(move || compaction::compact(&dir, upto, &*keys.0))?,
        );
        self.closed_bytes = 0;
        Ok(())
    }

    /// Collects a finished compaction (with `wait`, waits for a running one). Its failure
    /// is the writer's: the journals it would have replaced are still there, but a crawl
    /// that cannot write its state should stop rather than grow a journal it cannot fold.
    pub(in crate::store) fn reap(&mut self, wait: bool) -> io::Result<()> {
        if !wait && !self.compactor.as_ref().is_some_and(|h| h.is_finished()) {
            return Ok(());
        }
        let Some(h) = self.compactor.take() else {
            return Ok(());
        };
        match h.join() {
            Ok(Ok(size)) => {
                self.checkpoint_bytes = size;
                Ok(())
            }
            Ok(Err(StateError::Io(e))) => Err(e),
            Ok(Err(e)) => Err(io::Error::other(format!("checkpoint: {e}"))),
            Err(_) => Err(io::Error::other("checkpoint: the compactor panicked")),
        }
    }
}
