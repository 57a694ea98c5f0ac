//! The crawl database at 5 M URLs: insert (batches of 10,000, one transaction each), random
//! lookups, and a due-time scan, with the process's peak RSS and the database's size on disk
//! after each phase. Target (issue 29): ≤ 128 MB peak RSS at 5 M URLs. A plain `main` that
//! prints figures (`cargo bench --bench crawl_db`); the database goes to
//! `$CRAWL_DB_BENCH_DIR` (default `target/crawl-db-bench`) and is removed at the end.
//! `CRAWL_DB_BENCH_URLS` and `CRAWL_DB_BENCH_BATCH` change the size and the batch (a crawl
//! commits what it stored every few milliseconds: batches of a few hundred).

mod common;

use common::Rng;
use spinneret::crawl::recent_visits::RecentVisits;
use spinneret::crawl::revisit::{LastFetch, StoredCopy};
use spinneret::crawl::schedule::PageHistory;
use spinneret::crawl::sink::Hop;
use spinneret::http::Validators;
use spinneret::store::state::crawl_db::{CrawlDb, UrlRecord};
use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

const URLS: u64 = 5_000_000;
const BATCH: u64 = 10_000;
const LOOKUPS: u64 = 1_000_000;
const SCAN: usize = 1_000_000;

/// `name` from the environment, or `default`.
fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&v| v > 0)
        .unwrap_or(default)
}
const HOSTS: u64 = 200_000;
/// A fixed "now": due times spread over the next 30 days.
const NOW: u64 = 1_780_000_000;

const SECTIONS: &[&str] = &[
    "news",
    "blog",
    "products",
    "articles/2026",
    "docs/reference",
    "t",
];
const SLUGS: &[&str] = &[
    "crawler-politeness",
    "web-archive",
    "fresh-collections",
    "x",
    "index",
];

/// The `i`th URL: about 60–90 bytes, a host of 200,000, hashed so that insertion order is
/// random with respect to key order (as a crawl's is).
fn url(i: u64, out: &mut String) {
    use std::fmt::Write;
    let h = (i.wrapping_mul(0x9e37_79b9_7f4a_7c15)).rotate_left(17);
    out.clear();
    let _ = write!(
        out,
        "https://www.site{}.example.org/{}/{}-{}.html",
        h % HOSTS,
        SECTIONS[(h >> 20) as usize % SECTIONS.len()],
        SLUGS[(h >> 28) as usize % SLUGS.len()],
        i
    );
}

fn record(i: u64, rng: &mut Rng, url: &str) -> UrlRecord {
    let mut digest = [0u8; 20];
    for chunk in digest.chunks_mut(8) {
        let v = rng.next_u64().to_le_bytes();
        chunk.copy_from_slice(&v[..chunk.len()]);
    }
    UrlRecord {
        url: url.to_string(),
        depth: rng.below(8) as u32,
        hop: Hop::Link,
        last: LastFetch {
            fetched_at: NOW - rng.below(86_400),
            status: 200,
            payload_len: rng.below(200_000),
            validators: Some(Validators {
                etag: Some(format!("\"{:x}-{:x}\"", rng.next_u64(), i)),
                last_modified: Some("Wed, 21 Oct 2026 07:28:00 GMT".to_string()),
            }),
            digest: Some(digest),
            copy: Some(StoredCopy {
                uri: None,
                date: NOW - rng.below(86_400),
                record_id: Some([i as u8; 16]),
                file: format!("spinneret-20261125-{:05}.warc.gz", i / 20_000),
                offset: rng.below(1 << 30),
            }),
            history: PageHistory {
                visits: rng.below(64) as u32,
                changes: rng.below(16) as u32,
                observed_secs: rng.below(1 << 24),
                last_change: Some(NOW - rng.below(1 << 22)),
                interval: rng.below(30 * 86_400),
                new_urls: 0,
                recent: {
                    // A continuous crawl's page keeps up to 12 visits.
                    let mut r = RecentVisits::default();
                    for _ in 0..rng.below(13) {
                        r.push(rng.below(86_400), rng.below(2) == 1);
                    }
                    r
                },
            },
            due: NOW + rng.below(30 * 86_400),
        },
    }
}

fn status(field: &str) -> String {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with(field))
        .map(|l| l[field.len()..].trim().to_string())
        .unwrap_or_default()
}

fn disk_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let Ok(m) = e.metadata() else { continue };
            if m.is_dir() {
                stack.push(e.path());
            } else {
                total += m.len();
            }
        }
    }
    total
}

fn report(phase: &str, ops: u64, start: Instant, dir: &Path) {
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{phase:<8} {ops:>9} ops {secs:>8.2} s {:>8.2} µs/op   peak RSS {:>12}   RSS {:>12}   disk {:>7.1} MB",
        secs * 1e6 / ops as f64,
        status("VmHWM:"),
        status("VmRSS:"),
        disk_bytes(dir) as f64 / 1e6
    );
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo bench` asks benches to list their tests
    }
    let dir = std::env::var_os("CRAWL_DB_BENCH_DIR")
        .map(Into::into)
        .unwrap_or_else(|| Path::new("target").join("crawl-db-bench"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = CrawlDb::open(&dir.join("crawl.db")).unwrap();
    println!("before   peak RSS {}", status("VmHWM:"));

    let (urls, batch_size) = (
        setting("CRAWL_DB_BENCH_URLS", URLS),
        setting("CRAWL_DB_BENCH_BATCH", BATCH),
    );
    let (lookups, scan) = (LOOKUPS.min(urls), SCAN.min(urls as usize));
    println!("{urls} URLs in batches of {batch_size}");
    let mut rng = Rng::new(29);
    let mut u = String::new();
    let start = Instant::now();
    for b in 0..urls.div_ceil(batch_size) {
        let mut batch = db.write();
        for i in b * batch_size..((b + 1) * batch_size).min(urls) {
            url(i, &mut u);
            batch.put(&record(i, &mut rng, &u)).unwrap();
        }
        batch.commit().unwrap();
    }
    report("insert", urls, start, &dir);
    assert_eq!(db.len().unwrap(), urls);

    let start = Instant::now();
    let mut found = 0u64;
    for _ in 0..lookups {
        url(rng.below(urls), &mut u);
        found += u64::from(black_box(db.get(&u).unwrap()).is_some());
    }
    report("lookup", lookups, start, &dir);
    assert_eq!(found, lookups);

    let start = Instant::now();
    let mut last = 0;
    let mut n = 0u64;
    for r in db.due(u64::MAX, scan).unwrap() {
        let r = r.unwrap();
        assert!(r.due() >= last);
        last = r.due();
        n += 1;
    }
    report("scan", n, start, &dir);
    assert_eq!(n, scan as u64);
    drop(db);
    let _ = std::fs::remove_dir_all(&dir);
}
