use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use super::*;
use crate::store::state::crawl_state::{create, journal_path};
use crate::store::state::replay::{replay, ReplaySink, Replayed};
use crate::store::state::url_events::{push_admitted, push_done, push_released};

/// Everything a replay hands out, in comparable form.
#[derive(Default, Debug, PartialEq)]
struct Seen {
    /// (partition, key): from a checkpoint's sorted keys or the journal's URLs.
    keys: BTreeSet<(u32, u64)>,
    queued: Vec<(String, Vec<u8>)>,
    digests: Vec<PayloadDigest>,
}

/// Two local partitions, as `--loops 2`: a URL may be admitted twice.
fn key(url: &str) -> Option<(u32, u64)> {
    crate::crawl::partition_key(url, 2, &crate::crawl::canon::Canon::default())
}

impl ReplaySink for Seen {
    fn seen_sorted(&mut self, part: u32, keys: &[u64]) {
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "keys not increasing");
        if let Some(&(_, last)) = self.keys.iter().rfind(|(p, _)| *p == part) {
            assert!(
                keys.first().is_none_or(|&k| k > last),
                "chunks not increasing"
            );
        }
        self.keys.extend(keys.iter().map(|&k| (part, k)));
    }
    fn seen(&mut self, url: &str) {
        self.keys.insert(key(url).unwrap());
    }
    fn queued(&mut self, url: &str, entry: &[u8]) {
        self.queued.push((url.to_string(), entry.to_vec()));
    }
    fn digest(&mut self, d: PayloadDigest) {
        self.digests.push(d);
    }
}

fn replayed(out: &Path) -> (Seen, Replayed) {
    let mut s = Seen::default();
    let r = replay(out, &mut s, 2).unwrap();
    s.digests.sort();
    (s, r)
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("spinneret-compact-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    create(&d, &["crawl".into()]).unwrap();
    d
}

/// xorshift64*.
fn rng(mut s: u64) -> impl FnMut(u64) -> u64 {
    move |n| {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        s.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

/// A random crawl's journal records: URLs admitted (some twice, as two loops forwarding
/// one URL do), then done (with or without a digest) or released, in a random interleaving.
fn random_records(seed: u64, n: usize) -> Vec<Vec<u8>> {
    let mut r = rng(seed);
    let mut recs = Vec::new();
    let mut live: Vec<String> = Vec::new();
    let mut next = 0;
    for _ in 0..n {
        let mut rec = Vec::new();
        if !live.is_empty() && r(10) == 0 {
            let url = &live[r(live.len() as u64) as usize];
            push_admitted(&mut rec, url, b"again");
        } else if live.is_empty() || r(3) > 0 {
            let url = format!("http://h{}.test/p{next}", r(7));
            next += 1;
            push_admitted(&mut rec, &url, format!("entry{next}").as_bytes());
            live.push(url);
        } else {
            let url = live.swap_remove(r(live.len() as u64) as usize);
            match r(3) {
                0 => push_released(&mut rec, &url),
                1 => push_done(&mut rec, &url, None),
                _ => push_done(&mut rec, &url, Some(&[r(250) as u8; 20])),
            }
        }
        recs.push(rec);
    }
    recs
}

fn append(out: &Path, gen: u64, recs: &[Vec<u8>]) {
    let mut j = JournalWriter::open_append(&journal_path(out, gen)).unwrap();
    for r in recs {
        j.append(r).unwrap();
    }
    j.sync().unwrap();
}

#[test]
fn checkpoints_and_later_journals_replay_as_the_whole_journal_did() {
    for seed in 1..40u64 {
        let whole = tmp("whole");
        let split = tmp("split");
        let recs = random_records(seed, 400);
        append(&whole, 0, &recs);
        let mut r = rng(seed * 7919);
        let mut gen = 0;
        let mut at = 0;
        // Bounded: each step writes at least one record.
        while at < recs.len() {
            let take = (1 + r(120) as usize).min(recs.len() - at);
            append(&split, gen, &recs[at..at + take]);
            at += take;
            if r(3) > 0 {
                compact(&split, gen, &key).unwrap();
            }
            gen += 1;
        }
        let (want, want_r) = replayed(&whole);
        let (got, got_r) = replayed(&split);
        assert_eq!(got_r, want_r, "seed {seed}");
        assert_eq!(got, want, "seed {seed}");
        let files = crawl_state::state_files(&split).unwrap();
        assert!(files.stale.is_empty(), "covered files removed: {files:?}");
        let _ = fs::remove_dir_all(&whole);
        let _ = fs::remove_dir_all(&split);
    }
}

#[test]
fn a_crash_mid_compaction_or_before_the_removals_leaves_the_same_state() {
    let out = tmp("crash");
    let recs = random_records(99, 600);
    append(&out, 0, &recs[..200]);
    compact(&out, 0, &key).unwrap();
    append(&out, 1, &recs[200..400]);
    append(&out, 2, &recs[400..]);
    let before = replayed(&out);
    // A compaction killed before its rename leaves a partial `.tmp`.
    fs::write(
        crawl_state::checkpoint_path(&out, 1).with_extension("1.tmp"),
        b"partial",
    )
    .unwrap();
    assert_eq!(replayed(&out), before);
    // Killed after the rename, before removing journal 1 and checkpoint 0: both are stale.
    let saved: Vec<u8> = fs::read(journal_path(&out, 1)).unwrap();
    let old_cp = fs::read(crawl_state::checkpoint_path(&out, 0)).unwrap();
    compact(&out, 1, &key).unwrap();
    fs::write(journal_path(&out, 1), saved).unwrap();
    fs::write(crawl_state::checkpoint_path(&out, 0), old_cp).unwrap();
    let files = crawl_state::state_files(&out).unwrap();
    assert_eq!(files.checkpoint.as_ref().map(|c| c.0), Some(1));
    assert_eq!(files.stale.len(), 2, "{files:?}");
    assert_eq!(files.append_gen(), 2);
    assert_eq!(replayed(&out), before);
    let _ = fs::remove_dir_all(&out);
}

#[test]
fn a_checkpoint_without_its_end_is_refused() {
    let out = tmp("torn");
    append(&out, 0, &random_records(5, 100));
    compact(&out, 0, &key).unwrap();
    let cp = crawl_state::checkpoint_path(&out, 0);
    let bytes = fs::read(&cp).unwrap();
    fs::write(&cp, &bytes[..bytes.len() - 8]).unwrap();
    let err = replay(&out, &mut Seen::default(), 2).unwrap_err();
    assert!(err.to_string().contains("checkpoint.0"), "{err}");
    let _ = fs::remove_dir_all(&out);
}

#[test]
fn a_checkpoint_of_an_older_format_is_refused_with_the_reason() {
    let out = tmp("v1");
    append(&out, 0, &random_records(6, 10));
    compact(&out, 0, &key).unwrap();
    // The same checkpoint as an older version wrote it (other URL keys): its first record
    // says so.
    let cp = crawl_state::checkpoint_path(&out, 0);
    let mut items = Vec::new();
    let mut reader = JournalReader::new(fs::File::open(&cp).unwrap()).unwrap();
    while let Some(rec) = reader.next_record().unwrap() {
        items.push(rec.to_vec());
    }
    assert_eq!(items[0], [TAG_VERSION, VERSION as u8]);
    for older in 1..VERSION as u8 {
        items[0] = vec![TAG_VERSION, older];
        fs::remove_file(&cp).unwrap();
        let mut j = JournalWriter::open_append(&cp).unwrap();
        for r in &items {
            j.append(r).unwrap();
        }
        j.sync().unwrap();
        let err = replay(&out, &mut Seen::default(), 2).unwrap_err();
        assert!(err.to_string().contains("older spinneret"), "{err}");
    }
    let _ = fs::remove_dir_all(&out);
}
