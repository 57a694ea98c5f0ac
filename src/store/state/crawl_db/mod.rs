//! The crawl database: per URL, the facts a revisit needs (`UrlRecord`: last fetch, status,
//! validators, payload digest, where its WARC record is, change history, next due time), on
//! disk, with an index by due time.
//!
//! It owns the facts, not the decisions: the crawl decides what to fetch when
//! (`crawl::schedule` turns a visit into the next due time, the frontier orders hosts and
//! keeps politeness) and writes the result here; the WARC writer says where records went.
//!
//! Storage is `redb` (a copy-on-write B-tree in one file): two tables, `urls` (URL → the
//! record's bytes, `record`) and `due` (due time ‖ URL → nothing). A `Batch` writes both in
//! one write transaction, so the index can never disagree with a record that committed:
//! `put` replaces a URL's old index entry (the old record comes back from the insert) in the
//! same transaction that adds the new one. Chosen over `fjall` by measurement
//! (`benches/crawl_db.rs`, 5 M URLs of 60–90 bytes, batches of 10,000): redb held 45 MB peak
//! RSS (fjall 194–222 MB, over the 128 MB budget), looked up in 8.9 µs and scanned by due
//! time in 8.4 µs a record (fjall 14.6 and 15.3); fjall inserted 5x faster (13.5 against
//! 74 µs a URL) in a quarter of the disk (1.0 against 4.3 GB). Memory is the bound the
//! crawl cannot exceed; 74 µs is ~13,000 URLs/s, above any rate one loop fetches at.
//!
//! Durability: `Batch::commit` is `Durability::Immediate` — redb fsyncs the data, then flips
//! the header's commit slot and fsyncs again — so a kill or a power cut at any instant
//! leaves the last committed batch, whole, and nothing of an uncommitted one.
//! `Batch::commit_with(false)` is `Durability::None`: visible to readers at once, written for
//! good by the next durable commit, taken back by a kill before it. The crawl's writer uses
//! it between the journal's fsyncs, as its journal holds a copy of every record until then
//! (ARCHITECTURE §9c), and commits durably at each fsync.
//!
//! Memory: redb's page cache is bounded at `CACHE_BYTES`; a `Batch` holds its encoded
//! records until it commits, so the caller bounds it by committing every few thousand puts.

mod due_cursor;
mod record;

pub use due_cursor::DueCursor;
pub use record::{Corrupt, UrlRecord, MAX_RECORD_BYTES};

use crate::crawl::revisit::LastFetch;
use record::{due_key, split_due_key, value_due};
use redb::{ReadableTableMetadata, TableDefinition};
use std::path::Path;

/// redb's page cache (reads and writes together). 5 M URLs make a file of about a gigabyte;
/// the crawl's lookups are random, so a cache cannot hold the working set whatever its size,
/// and this bound is what keeps the database inside the crawl's memory budget (the frontier's
/// 128 MB for 5 M URLs) rather than redb's 1 GiB default. A crawl's own writes fill it (each
/// commit copies the pages it touches): at 32 MB the 5-million-URL frontier test
/// (tests/durable.rs) peaked at 141 MB, at 4 MB at 123 MB, and the bench crawl's pages/s and
/// CPU per page did not move (8,338 against 8,505 pages/s, 0.123 against 0.126 ms).
pub const CACHE_BYTES: usize = 4 * 1024 * 1024;

const URLS: TableDefinition<&str, &[u8]> = TableDefinition::new("urls");
const DUE: TableDefinition<&[u8], ()> = TableDefinition::new("due");

/// Why a database call failed. redb's errors are boxed: the largest is 160 bytes, and every
/// `Result` of this module would carry that much.
#[derive(Debug)]
pub enum DbError {
    /// The file could not be opened or created (locked by another process, not a database,
    /// an I/O error).
    Open(Box<redb::DatabaseError>),
    /// A transaction could not be begun.
    Transaction(Box<redb::TransactionError>),
    /// A table could not be opened.
    Table(Box<redb::TableError>),
    /// Reading or writing the file failed, or redb found its own structures corrupt.
    Storage(Box<redb::StorageError>),
    /// A commit failed: nothing of the batch is in the database.
    Commit(Box<redb::CommitError>),
    /// A stored record or index entry does not decode.
    Corrupt(Corrupt),
    /// A record to put is larger than `MAX_RECORD_BYTES`.
    TooLarge { url: String },
}

impl std::fmt::Display for DbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DbError::Open(e) => write!(f, "crawl database: open: {e}"),
            DbError::Transaction(e) => write!(f, "crawl database: transaction: {e}"),
            DbError::Table(e) => write!(f, "crawl database: table: {e}"),
            DbError::Storage(e) => write!(f, "crawl database: storage: {e}"),
            DbError::Commit(e) => write!(f, "crawl database: commit: {e}"),
            DbError::Corrupt(c) => write!(f, "crawl database: corrupt record ({c:?})"),
            DbError::TooLarge { url } => write!(f, "crawl database: record too large: {url}"),
        }
    }
}

impl std::error::Error for DbError {}

macro_rules! from_error {
    ($($variant:ident($ty:ty)),*) => {$(
        impl From<$ty> for DbError {
            fn from(e: $ty) -> DbError {
                DbError::$variant(Box::new(e))
            }
        }
    )*};
}

from_error!(
    Open(redb::DatabaseError),
    Transaction(redb::TransactionError),
    Table(redb::TableError),
    Storage(redb::StorageError),
    Commit(redb::CommitError)
);

impl From<Corrupt> for DbError {
    fn from(e: Corrupt) -> DbError {
        DbError::Corrupt(e)
    }
}

/// An open crawl database (one file). One process at a time: redb locks the file.
pub struct CrawlDb {
    db: redb::Database,
}

impl std::fmt::Debug for CrawlDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CrawlDb")
    }
}

/// The crawl database's file in a crawl's output directory.
pub const FILE_NAME: &str = "crawl.db";

impl CrawlDb {
    /// Opens the database at `path`, creating it (and its tables) if absent. A database a
    /// crash left mid-commit opens at its last committed batch.
    pub fn open(path: &Path) -> Result<CrawlDb, DbError> {
        let db = redb::Builder::new()
            .set_cache_size(CACHE_BYTES)
            .create(path)?;
        // Both tables exist from the start, so readers never meet a missing one.
        let txn = db.begin_write()?;
        txn.open_table(URLS)?;
        txn.open_table(DUE)?;
        txn.commit()?;
        Ok(CrawlDb { db })
    }

    /// A batch of puts, applied together by `Batch::commit` (or not at all).
    pub fn write(&self) -> Batch<'_> {
        Batch {
            db: self,
            puts: Vec::new(),
            values: Vec::new(),
        }
    }

    /// The record of `url`, if it has one.
    pub fn get(&self, url: &str) -> Result<Option<UrlRecord>, DbError> {
        let txn = self.db.begin_read()?;
        let urls = txn.open_table(URLS)?;
        let Some(value) = urls.get(url)? else {
            return Ok(None);
        };
        Ok(Some(UrlRecord::decode(url, value.value())?))
    }

    /// Where a payload first stored under another URL lies. Such a URL's record (its fetch
    /// was stored as an identical-payload revisit) knows the response only by that URL and
    /// date; that URL's own record says where it is, which a 304's revisit needs to carry the
    /// stored head (`archive::freshen`) and the record's ID. Only the very record named is
    /// taken (same URL, same date): the other URL may have been fetched again since.
    pub fn locate_copy(&self, last: &mut LastFetch) -> Result<(), DbError> {
        let Some(copy) = last.copy.as_mut().filter(|c| c.file.is_empty()) else {
            return Ok(());
        };
        let Some(other) = copy.uri.as_deref() else {
            return Ok(());
        };
        let own = self.get(other)?.and_then(|r| r.last.copy);
        if let Some(own) =
            own.filter(|o| o.uri.is_none() && o.date == copy.date && !o.file.is_empty())
        {
            copy.record_id = own.record_id;
            copy.file = own.file;
            copy.offset = own.offset;
        }
        Ok(())
    }

    /// The records due at or before `before` (unix seconds), earliest first, at most
    /// `limit` of them, read from one snapshot as the iterator is advanced. Drain it and
    /// drop it before long: while a snapshot is held, redb cannot reuse the pages later
    /// commits free, and the file grows.
    pub fn due(&self, before: u64, limit: usize) -> Result<Due, DbError> {
        self.due_after(None, before, limit)
    }

    /// As [`CrawlDb::due`], past the due-index key `after` (a [`DueCursor`]'s position).
    pub fn due_after(
        &self,
        after: Option<&[u8]>,
        before: u64,
        limit: usize,
    ) -> Result<Due, DbError> {
        use std::ops::Bound;
        let txn = self.db.begin_read()?;
        let urls = txn.open_table(URLS)?;
        let index = txn.open_table(DUE)?;
        let end_key = before.checked_add(1).map(u64::to_be_bytes);
        let start = after.map_or(Bound::Unbounded, Bound::Excluded);
        let end = end_key
            .as_ref()
            .map_or(Bound::Unbounded, |e| Bound::Excluded(&e[..]));
        let range = index.range::<&[u8]>((start, end))?;
        Ok(Due {
            urls,
            range,
            left: limit,
        })
    }

    /// How many URLs have a record.
    pub fn len(&self) -> Result<u64, DbError> {
        let txn = self.db.begin_read()?;
        Ok(txn.open_table(URLS)?.len()?)
    }

    pub fn is_empty(&self) -> Result<bool, DbError> {
        Ok(self.len()? == 0)
    }
}

/// Records to write in one transaction: encoded as they are put, written by `commit`.
/// Dropped without `commit`, it leaves the database as it was.
pub struct Batch<'db> {
    db: &'db CrawlDb,
    /// Per put: the URL, its due time, and where its value ends in `values`.
    puts: Vec<(String, u64, usize)>,
    /// Every value, end to end.
    values: Vec<u8>,
}

impl Batch<'_> {
    /// Sets `record` as its URL's record, replacing any earlier one (in the database or
    /// earlier in this batch) and its due-index entry.
    pub fn put(&mut self, record: &UrlRecord) -> Result<(), DbError> {
        let start = self.values.len();
        record.encode_value(&mut self.values);
        if self.values.len() - start > MAX_RECORD_BYTES {
            self.values.truncate(start);
            return Err(DbError::TooLarge {
                url: record.url.clone(),
            });
        }
        self.puts
            .push((record.url.clone(), record.due(), self.values.len()));
        Ok(())
    }

    /// Puts a record already encoded (`UrlRecord::encode_value`, due time `due`) by its
    /// writer, which vouches for the bytes (no decode).
    pub fn put_encoded(&mut self, url: &str, due: u64, value: &[u8]) {
        self.values.extend_from_slice(value);
        self.puts.push((url.to_string(), due, self.values.len()));
    }

    /// Puts a record given as its value bytes (a journal's copy, see `url_events`), checked
    /// to decode first.
    pub fn put_value(&mut self, url: &str, value: &[u8]) -> Result<(), DbError> {
        let record = UrlRecord::decode(url, value)?;
        self.put(&record)
    }

    /// How many puts the batch holds.
    pub fn len(&self) -> usize {
        self.puts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.puts.is_empty()
    }

    /// Writes every put and the due index in one transaction and makes it durable before
    /// returning (see the module doc). On an error nothing of the batch is applied.
    pub fn commit(self) -> Result<(), DbError> {
        self.commit_with(true)
    }

    /// As [`Batch::commit`]; with `durable` false the transaction is visible at once but
    /// not written for good until a later durable commit (a kill takes it back): for a
    /// writer whose own log holds the records until then (the crawl's journal).
    pub fn commit_with(self, durable: bool) -> Result<(), DbError> {
        let mut txn = self.db.db.begin_write()?;
        txn.set_durability(if durable {
            redb::Durability::Immediate
        } else {
            redb::Durability::None
        });
        {
            let mut urls = txn.open_table(URLS)?;
            let mut index = txn.open_table(DUE)?;
            let mut key = Vec::new();
            let mut start = 0;
            for (url, due, end) in &self.puts {
                let value = &self.values[start..*end];
                start = *end;
                let old_due = match urls.insert(url.as_str(), value)? {
                    Some(old) => Some(value_due(old.value())?),
                    None => None,
                };
                if let Some(old_due) = old_due {
                    due_key(old_due, url, &mut key);
                    index.remove(key.as_slice())?;
                }
                due_key(*due, url, &mut key);
                index.insert(key.as_slice(), ())?;
            }
        }
        txn.commit()?;
        Ok(())
    }
}

/// The records of `CrawlDb::due`, earliest due first.
pub struct Due {
    urls: redb::ReadOnlyTable<&'static str, &'static [u8]>,
    range: redb::Range<'static, &'static [u8], ()>,
    left: usize,
}

impl Iterator for Due {
    type Item = Result<UrlRecord, DbError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let entry = self.range.next()?;
        Some(self.read(entry))
    }
}

impl Due {
    fn read(
        &self,
        entry: Result<
            (
                redb::AccessGuard<'static, &'static [u8]>,
                redb::AccessGuard<'static, ()>,
            ),
            redb::StorageError,
        >,
    ) -> Result<UrlRecord, DbError> {
        let (key, _) = entry?;
        let (due, url) = split_due_key(key.value())?;
        let value = self.urls.get(url)?.ok_or(Corrupt::DueIndex)?;
        let record = UrlRecord::decode(url, value.value())?;
        if record.due() != due {
            return Err(Corrupt::DueIndex.into());
        }
        Ok(record)
    }
}

#[cfg(test)]
mod tests;
