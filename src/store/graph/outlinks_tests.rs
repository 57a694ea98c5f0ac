use std::fs::{self, OpenOptions};
use std::io::Write;

use proptest::prelude::*;

use super::*;
use crate::store::test_dir::TempDir;

fn record(page: u64, targets: &[u64]) -> Vec<u8> {
    let mut out = Vec::new();
    encode(&mut out, page, targets);
    out
}

fn read(path: &Path) -> (Vec<(u64, Vec<u64>)>, ReadStats) {
    let mut got = Vec::new();
    let stats = for_each(path, |p, t| got.push((p, t.to_vec()))).unwrap();
    (got, stats)
}

#[test]
fn record_round_trips() {
    let mut targets = Vec::new();
    for case in [
        vec![],
        vec![0],
        vec![u64::MAX],
        vec![1, 2, 3, 1 << 40, (1 << 40) + 7, u64::MAX - 1, u64::MAX],
    ] {
        let rec = record(0xdead_beef, &case);
        assert_eq!(decode(&rec, &mut targets), Some(0xdead_beef));
        assert_eq!(targets, case);
    }
}

#[test]
fn malformed_records_are_refused() {
    let mut t = Vec::new();
    let good = record(7, &[1, 5, 9]);
    assert_eq!(decode(&good[..good.len() - 1], &mut t), None, "cut short");
    let mut long = good.clone();
    long.push(0);
    assert_eq!(decode(&long, &mut t), None, "trailing bytes");
    let mut tag = good.clone();
    tag[0] = 2;
    assert_eq!(decode(&tag, &mut t), None, "unknown version");
    // A repeated target (gap 0) is not what `encode` writes.
    let mut dup = Vec::new();
    dup.push(RECORD_V1);
    dup.extend_from_slice(&7u64.to_le_bytes());
    dup.extend_from_slice(&[2, 5, 0]);
    assert_eq!(decode(&dup, &mut t), None);
    // A count far past the bytes is refused before anything is reserved.
    let mut lie = Vec::new();
    lie.push(RECORD_V1);
    lie.extend_from_slice(&7u64.to_le_bytes());
    put_varint(&mut lie, u64::MAX);
    assert_eq!(decode(&lie, &mut t), None);
}

#[test]
fn file_round_trips_and_resume_appends() {
    let dir = TempDir::new("outlinks", "append");
    let mut w = OutlinksWriter::open(&dir.0, 3, false).unwrap();
    w.append(&record(1, &[2, 3])).unwrap();
    w.append(&[]).unwrap();
    w.flush().unwrap();
    drop(w);
    let mut w = OutlinksWriter::open(&dir.0, 3, true).unwrap();
    w.append(&record(2, &[1])).unwrap();
    w.sync().unwrap();
    drop(w);
    assert_eq!(files(&dir.0).unwrap(), vec![path(&dir.0, 3)]);
    let (got, stats) = read(&path(&dir.0, 3));
    assert_eq!(got, vec![(1, vec![2, 3]), (2, vec![1])]);
    assert_eq!(stats.records, 2);
    assert_eq!(stats.dropped_bytes, 0);
    // A fresh crawl in the same directory starts the file empty.
    drop(OutlinksWriter::open(&dir.0, 3, false).unwrap());
    assert_eq!(read(&path(&dir.0, 3)).0, vec![]);
}

#[test]
fn torn_tail_is_left_unread_and_cut_on_reopen() {
    let dir = TempDir::new("outlinks", "torn");
    let mut w = OutlinksWriter::open(&dir.0, 0, false).unwrap();
    // Gaps of 2^40 take 6 bytes: the record spans several 32 KiB blocks.
    let big: Vec<u64> = (0..20_000u64).map(|i| i << 40).collect();
    w.append(&record(1, &[5])).unwrap();
    w.append(&record(2, &big)).unwrap();
    w.flush().unwrap();
    drop(w);
    let p = path(&dir.0, 0);
    let full = fs::metadata(&p).unwrap().len();
    // Every cut inside the second record (it spans blocks) leaves the first readable.
    for cut in [full - 1, full - 100, full / 2, 33_000, 32_768, 20] {
        let bytes = fs::read(&p).unwrap();
        let torn = dir.0.join("torn");
        fs::write(&torn, &bytes[..cut as usize]).unwrap();
        let (got, stats) = read(&torn);
        assert_eq!(got, vec![(1, vec![5])], "cut at {cut}");
        assert!(stats.dropped_bytes > 0);
    }
    fs::write(&p, &fs::read(&p).unwrap()[..(full - 7) as usize]).unwrap();
    let mut w = OutlinksWriter::open(&dir.0, 0, true).unwrap();
    w.append(&record(3, &[1])).unwrap();
    w.flush().unwrap();
    let (got, stats) = read(&p);
    assert_eq!(got, vec![(1, vec![5]), (3, vec![1])]);
    assert_eq!(stats.dropped_bytes, 0);
}

#[test]
fn damage_mid_file_is_set_aside_not_fatal() {
    let dir = TempDir::new("outlinks", "damaged");
    let mut w = OutlinksWriter::open(&dir.0, 0, false).unwrap();
    let big: Vec<u64> = (0..10_000u64).collect();
    for page in 0..8 {
        w.append(&record(page, &big)).unwrap();
    }
    w.flush().unwrap();
    drop(w);
    let p = path(&dir.0, 0);
    let mut f = OpenOptions::new().write(true).open(&p).unwrap();
    std::io::Seek::seek(&mut f, std::io::SeekFrom::Start(100)).unwrap();
    f.write_all(b"garbage").unwrap();
    drop(f);
    let mut w = OutlinksWriter::open(&dir.0, 0, true).unwrap();
    w.append(&record(9, &[1])).unwrap();
    w.flush().unwrap();
    let all = files(&dir.0).unwrap();
    assert_eq!(all.len(), 2, "{all:?}");
    assert_eq!(read(&p).0, vec![(9, vec![1])]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    #[test]
    fn any_bytes_decode_without_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let mut t = Vec::new();
        if decode(&bytes, &mut t).is_some() {
            // Whatever decodes is what encoding it gives back.
            prop_assert!(t.windows(2).all(|w| w[0] < w[1]));
        }
    }

    #[test]
    fn any_sorted_keys_round_trip(page in any::<u64>(), mut keys in proptest::collection::vec(any::<u64>(), 0..300)) {
        keys.sort_unstable();
        keys.dedup();
        let mut t = Vec::new();
        prop_assert_eq!(decode(&record(page, &keys), &mut t), Some(page));
        prop_assert_eq!(t, keys);
    }

    #[test]
    fn any_file_bytes_read_without_panic(bytes in proptest::collection::vec(any::<u8>(), 0..3000)) {
        let dir = TempDir::new("outlinks", "fuzz");
        let p = path(&dir.0, 0);
        fs::write(&p, &bytes).unwrap();
        let _ = for_each(&p, |_, _| {});
        let _ = OutlinksWriter::open(&dir.0, 0, true);
    }
}
