use super::record::value_due;
use super::*;
use crate::crawl::revisit::{LastFetch, StoredCopy};
use crate::crawl::schedule::PageHistory;
use crate::crawl::sink::Hop;
use crate::http::Validators;
use crate::store::test_dir::TempDir;
use proptest::prelude::*;
use std::collections::BTreeMap;

fn record(url: &str, due: u64) -> UrlRecord {
    UrlRecord {
        url: url.to_string(),
        depth: 2,
        hop: Hop::Link,
        last: LastFetch {
            fetched_at: 1_700_000_000,
            status: 200,
            payload_len: 12_345,
            validators: Some(Validators {
                etag: Some("\"abc-123\"".into()),
                last_modified: Some("Tue, 14 Nov 2023 22:13:20 GMT".into()),
            }),
            digest: Some([7; 20]),
            copy: Some(StoredCopy {
                uri: None,
                date: 1_700_000_000,
                record_id: Some([3; 16]),
                file: "crawl-00001.warc.gz".into(),
                offset: 123_456,
            }),
            history: PageHistory {
                visits: 3,
                changes: 1,
                observed_secs: 3 * 86_400,
                last_change: Some(1_699_000_000),
                interval: 86_400,
                new_urls: 0,
                ..PageHistory::default()
            },
            due,
        },
    }
}

fn open(dir: &TempDir) -> CrawlDb {
    CrawlDb::open(&dir.0.join("crawl.db")).unwrap()
}

fn due_urls(db: &CrawlDb, before: u64, limit: usize) -> Vec<(u64, String)> {
    db.due(before, limit)
        .unwrap()
        .map(|r| r.map(|r| (r.due(), r.url)).unwrap())
        .collect()
}

fn arb_text() -> impl Strategy<Value = Option<String>> {
    proptest::option::of("[ -~]{0,60}")
}

prop_compose! {
    fn arb_record()(
        url in "https?://[a-z0-9.-]{1,30}/[ -~]{0,60}",
        depth in any::<u32>(),
        hop in proptest::sample::select(vec![Hop::Seed, Hop::Link, Hop::Embed, Hop::Redirect]),
        fetched_at in any::<u64>(),
        status in any::<u16>(),
        payload_len in any::<u64>(),
        etag in arb_text(),
        last_modified in arb_text(),
        digest in proptest::option::of(any::<[u8; 20]>()),
        copy in proptest::option::of((arb_text(), any::<u64>(),
            proptest::option::of(any::<[u8; 16]>()), ".{0,40}", any::<u64>())),
        (visits, changes) in (any::<u32>(), any::<u32>()),
        observed_secs in any::<u64>(),
        last_change in proptest::option::of(any::<u64>()),
        interval in any::<u64>(),
        due in any::<u64>(),
    ) -> UrlRecord {
        UrlRecord {
            url,
            depth,
            hop,
            last: LastFetch {
                fetched_at,
                status,
                payload_len,
                validators: (etag.is_some() || last_modified.is_some())
                    .then_some(Validators { etag, last_modified }),
                digest,
                copy: copy.map(|(uri, date, record_id, file, offset)| StoredCopy {
                    uri, date, record_id, file, offset,
                }),
                history: PageHistory { visits, changes, observed_secs, last_change, interval, new_urls: 0, recent: Default::default() },
                due,
            },
        }
    }
}

proptest! {
    /// Every field value survives its byte form, and the head-only read agrees on the due
    /// time; every cut of the bytes is a `Corrupt`, never a panic or a wrong record.
    #[test]
    fn a_record_round_trips_through_its_bytes(r in arb_record()) {
        let mut bytes = Vec::new();
        r.encode_value(&mut bytes);
        prop_assert_eq!(UrlRecord::decode(&r.url, &bytes), Ok(r.clone()));
        prop_assert_eq!(value_due(&bytes), Ok(r.due()));
        for cut in 0..bytes.len() {
            prop_assert!(UrlRecord::decode(&r.url, &bytes[..cut]).is_err());
        }
    }

    /// Any bytes at all decode to a record or a `Corrupt`: no panic.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = UrlRecord::decode("http://a.test/", &bytes);
        let _ = value_due(&bytes);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(8))]

    /// Through the database: what a committed batch put is what `get` returns.
    #[test]
    fn records_round_trip_through_the_database(
        records in proptest::collection::vec(arb_record(), 1..20),
    ) {
        let dir = TempDir::new("crawl_db", "prop-roundtrip");
        let db = open(&dir);
        let mut batch = db.write();
        let mut last = BTreeMap::new();
        for r in &records {
            batch.put(r).unwrap();
            last.insert(r.url.clone(), r.clone());
        }
        batch.commit().unwrap();
        prop_assert_eq!(db.len().unwrap(), last.len() as u64);
        for (url, r) in &last {
            prop_assert_eq!(db.get(url).unwrap(), Some(r.clone()));
        }
    }

    /// The due index against a naive model (a map from URL to due time) over random puts in
    /// several batches, some URLs put again with another due time, some twice in a batch:
    /// a scan gives exactly the model's records due by then, earliest first, no stale entry.
    #[test]
    fn the_due_index_follows_every_update(
        batches in proptest::collection::vec(
            proptest::collection::vec((0u8..12, 0u64..50), 0..10),
            1..6,
        ),
        before in 0u64..60,
        limit in 0usize..16,
    ) {
        let dir = TempDir::new("crawl_db", "prop-due");
        let db = open(&dir);
        let mut model: BTreeMap<String, u64> = BTreeMap::new();
        for puts in &batches {
            let mut batch = db.write();
            for &(i, due) in puts {
                let url = format!("http://h{i}.test/p");
                batch.put(&record(&url, due)).unwrap();
                model.insert(url, due);
            }
            batch.commit().unwrap();
        }
        let mut want: Vec<(u64, String)> =
            model.iter().filter(|(_, &d)| d <= before).map(|(u, &d)| (d, u.clone())).collect();
        want.sort();
        want.truncate(limit);
        prop_assert_eq!(due_urls(&db, before, limit), want);
        let all = due_urls(&db, u64::MAX, usize::MAX);
        prop_assert_eq!(all.len(), model.len());
    }
}

#[test]
fn an_update_moves_the_due_entry() {
    let dir = TempDir::new("crawl_db", "moves");
    let db = open(&dir);
    let mut b = db.write();
    b.put(&record("http://a.test/", 100)).unwrap();
    b.put(&record("http://b.test/", 50)).unwrap();
    b.put(&record("http://c.test/", 200)).unwrap();
    b.commit().unwrap();
    let mut b = db.write();
    b.put(&record("http://a.test/", 10)).unwrap();
    b.put(&record("http://c.test/", 250)).unwrap();
    // Twice in one batch: the last one counts, and the first leaves no entry.
    b.put(&record("http://c.test/", 300)).unwrap();
    assert_eq!(b.len(), 3);
    b.commit().unwrap();
    let all = due_urls(&db, u64::MAX, 10);
    let want = [
        (10, "http://a.test/"),
        (50, "http://b.test/"),
        (300, "http://c.test/"),
    ];
    let want: Vec<(u64, String)> = want.iter().map(|&(d, u)| (d, u.to_string())).collect();
    assert_eq!(all, want);
    assert_eq!(due_urls(&db, 50, 10), want[..2]);
    assert_eq!(due_urls(&db, 9, 10), []);
    assert_eq!(due_urls(&db, u64::MAX, 1), want[..1]);
    assert_eq!(db.len().unwrap(), 3);
}

#[test]
fn a_committed_batch_survives_reopening() {
    let dir = TempDir::new("crawl_db", "reopen");
    let r = record("http://a.test/x?y=1", 42);
    {
        let db = open(&dir);
        let mut b = db.write();
        b.put(&r).unwrap();
        b.commit().unwrap();
    }
    let db = open(&dir);
    assert_eq!(db.get(&r.url).unwrap(), Some(r.clone()));
    assert_eq!(due_urls(&db, 42, 10), [(42, r.url.clone())]);
    assert_eq!(db.len().unwrap(), 1);
}

#[test]
fn an_uncommitted_batch_leaves_nothing() {
    let dir = TempDir::new("crawl_db", "uncommitted");
    {
        let db = open(&dir);
        let mut b = db.write();
        b.put(&record("http://kept.test/", 1)).unwrap();
        b.commit().unwrap();
        let mut b = db.write();
        b.put(&record("http://dropped.test/", 2)).unwrap();
        b.put(&record("http://kept.test/", 3)).unwrap();
        drop(b);
        assert_eq!(db.get("http://dropped.test/").unwrap(), None);
        assert_eq!(db.get("http://kept.test/").unwrap().unwrap().due(), 1);
    }
    let db = open(&dir);
    assert_eq!(db.get("http://dropped.test/").unwrap(), None);
    assert_eq!(
        due_urls(&db, u64::MAX, 10),
        [(1, "http://kept.test/".to_string())]
    );
    assert_eq!(db.len().unwrap(), 1);
}

/// Bytes that are not a record, under a URL or in the index, come back as `DbError::Corrupt`
/// from every reader, and a put over them does too: never a panic.
#[test]
fn a_corrupt_value_is_an_error() {
    let dir = TempDir::new("crawl_db", "corrupt");
    let db = open(&dir);
    let txn = db.db.begin_write().unwrap();
    {
        let mut urls = txn.open_table(URLS).unwrap();
        urls.insert("http://bad.test/", &[record::FORMAT, 0x80][..])
            .unwrap();
        urls.insert("http://future.test/", &[99u8, 0][..]).unwrap();
        let mut index = txn.open_table(DUE).unwrap();
        let mut key = Vec::new();
        record::due_key(5, "http://missing.test/", &mut key);
        index.insert(key.as_slice(), ()).unwrap();
    }
    txn.commit().unwrap();
    let corrupt = |r: Result<Option<UrlRecord>, DbError>| matches!(r, Err(DbError::Corrupt(_)));
    assert!(corrupt(db.get("http://bad.test/")));
    assert!(matches!(
        db.get("http://future.test/"),
        Err(DbError::Corrupt(Corrupt::Version(99)))
    ));
    let first = db.due(u64::MAX, 10).unwrap().next().unwrap();
    assert!(matches!(first, Err(DbError::Corrupt(Corrupt::DueIndex))));
    let mut b = db.write();
    b.put(&record("http://bad.test/", 1)).unwrap();
    assert!(matches!(b.commit(), Err(DbError::Corrupt(_))));
    // The failed commit applied nothing.
    assert!(corrupt(db.get("http://bad.test/")));
}

#[test]
fn an_oversized_record_is_refused_at_put() {
    let dir = TempDir::new("crawl_db", "large");
    let db = open(&dir);
    let mut r = record("http://a.test/", 1);
    r.last.validators = Some(Validators {
        etag: Some("x".repeat(MAX_RECORD_BYTES)),
        last_modified: None,
    });
    let mut b = db.write();
    assert!(matches!(b.put(&r), Err(DbError::TooLarge { .. })));
    assert!(b.is_empty());
    b.put(&record("http://a.test/", 1)).unwrap();
    b.commit().unwrap();
    assert_eq!(db.len().unwrap(), 1);
}

/// Records per batch in the kill test.
const KILL_BATCH: u64 = 200;

/// The child half of `a_kill_leaves_every_committed_batch`: commits batches to the database
/// named by `SPINNERET_CRAWL_DB_KILL_PATH`, each with `KILL_BATCH` new URLs due at the
/// batch's number and one URL moved to that due time, printing `acked N` after each commit,
/// until killed. Ignored so it runs only when the parent asks for it.
#[test]
#[ignore = "run by a_kill_leaves_every_committed_batch in a child process"]
fn kill_child_writer() {
    let Some(path) = std::env::var_os("SPINNERET_CRAWL_DB_KILL_PATH") else {
        return;
    };
    let db = CrawlDb::open(std::path::Path::new(&path)).unwrap();
    for b in 0..10_000u64 {
        let mut batch = db.write();
        for j in 0..KILL_BATCH {
            batch
                .put(&record(&format!("http://k.test/{b}/{j}"), b))
                .unwrap();
        }
        batch.put(&record("http://k.test/moving", b)).unwrap();
        batch.commit().unwrap();
        println!("acked {b}");
    }
}

/// A writer killed with SIGKILL mid-stream: the database opens with every batch it was told
/// was committed, each batch whole, and the due index agreeing with the records.
#[test]
fn a_kill_leaves_every_committed_batch() {
    use std::io::BufRead;
    use std::process::{Command, Stdio};
    let dir = TempDir::new("crawl_db", "kill");
    let path = dir.0.join("crawl.db");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "store::state::crawl_db::tests::kill_child_writer",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("SPINNERET_CRAWL_DB_KILL_PATH", &path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut acked = None;
    for line in std::io::BufReader::new(child.stdout.take().unwrap()).lines() {
        if let Some(n) = line.unwrap().strip_prefix("acked ") {
            let n: u64 = n.parse().unwrap();
            acked = Some(n);
            if n >= 20 {
                break;
            }
        }
    }
    child.kill().unwrap(); // SIGKILL, while the child keeps committing
    child.wait().unwrap();
    let acked = acked.expect("child acknowledged batches");
    assert!(acked >= 20, "child ended early after {acked} batches");
    let db = open(&dir);
    let len = db.len().unwrap();
    let batches = (len - 1) / KILL_BATCH;
    assert_eq!((len - 1) % KILL_BATCH, 0, "a batch was cut: {len} records");
    assert!(batches > acked, "{batches} batches, {acked} acknowledged");
    let moving = db.get("http://k.test/moving").unwrap().unwrap();
    assert_eq!(moving.due(), batches - 1);
    let due: Vec<(u64, String)> = due_urls(&db, u64::MAX, usize::MAX);
    assert_eq!(due.len() as u64, len);
    let moved: Vec<_> = due.iter().filter(|(_, u)| u.ends_with("/moving")).collect();
    assert_eq!(moved, [&(batches - 1, "http://k.test/moving".to_string())]);
    for b in 0..batches {
        assert!(db.get(&format!("http://k.test/{b}/0")).unwrap().is_some());
    }
}

/// A payload first stored under another URL is found where that URL's record says, and only
/// when that record is the very one named (same date): a later fetch of the other URL has
/// moved its own copy on.
#[test]
fn a_copy_under_another_url_is_located_by_that_urls_record() {
    let dir = TempDir::new("crawl_db", "locate");
    let db = open(&dir);
    let mut b = db.write();
    b.put(&record("http://a.test/first", 10)).unwrap();
    b.commit().unwrap();
    let under_a = |date| LastFetch {
        copy: Some(StoredCopy {
            uri: Some("http://a.test/first".into()),
            date,
            record_id: None,
            file: String::new(),
            offset: 0,
        }),
        ..LastFetch::default()
    };
    let mut last = under_a(1_700_000_000);
    db.locate_copy(&mut last).unwrap();
    let copy = last.copy.unwrap();
    assert_eq!(copy.uri.as_deref(), Some("http://a.test/first"));
    assert_eq!(
        (copy.file.as_str(), copy.offset, copy.record_id),
        ("crawl-00001.warc.gz", 123_456, Some([3; 16]))
    );
    // Another date: not that record; and a URL the database does not hold.
    for mut last in [under_a(1_600_000_000), {
        let mut l = under_a(1_700_000_000);
        l.copy.as_mut().unwrap().uri = Some("http://b.test/".into());
        l
    }] {
        let before = last.clone();
        db.locate_copy(&mut last).unwrap();
        assert_eq!(last, before);
    }
}
