//! The crawl's durable state in `DIR/crawl.state/`: what `spinneret resume` reads. An
//! append-only checksummed [`journal`] of [`url_events`] (the writer thread's side of it in
//! `journal_side`), atomic [`checkpoint`] files, the state directory's files
//! ([`crawl_state`]), the [`commit_mark`]s that make the journal the crawl's one commit
//! point, [`compaction`] of old journal generations into checkpoints, the [`replay`] that
//! restores a crawl from them, the frontier's spilled [`segments`] and the near-duplicate
//! index's spilled runs ([`near_dup_runs`]); [`crc32c`] is shared
//! by their formats. The [`crawl_db`] keeps, per URL, what a revisit needs (validators,
//! digest, where its record is, its change history and when it is due).
//!
//! The archive ([`super::archive`]: WARC, CDXJ, crawl.log) is written beside it and uses it;
//! the commit marks record how long its files were (their names are opaque here), and the
//! archive's `recover::cut_back` cuts them back to a mark. Nothing here touches its files.

pub mod checkpoint;
pub mod commit_mark;
pub mod compaction;
pub mod crawl_db;
pub mod crawl_state;
pub mod crc32c;
pub mod journal;
pub(in crate::store) mod journal_side;
pub mod near_dup_runs;
pub mod replay;
pub mod segments;
pub mod url_events;

/// Creates `path` (it must not exist), open for reading and writing, and unlinks it at once:
/// a scratch file (a spooled body, a spilled run) that no crash can leave behind.
pub(in crate::store) fn create_unlinked(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(path)?;
    std::fs::remove_file(path)?;
    Ok(file)
}
