use super::*;

struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let d =
            std::env::temp_dir().join(format!("spinneret-segments-{}-{tag}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        TempDir(d)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn seg_files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

/// Batch `i`: a few URL-like items of varying size, including an empty one.
fn batch(i: u64) -> Vec<Vec<u8>> {
    (0..(i % 5))
        .map(|k| {
            if k == 1 {
                Vec::new()
            } else {
                format!(
                    "http://host{i}.test/{}",
                    "p".repeat((i * 7 + k * 13) as usize % 300)
                )
                .into_bytes()
            }
        })
        .collect()
}

#[test]
fn round_trip_across_queues_and_ref_encoding() {
    let dir = TempDir::new("roundtrip");
    let mut s = SegmentStore::open(&dir.0).unwrap();
    let mut refs = Vec::new();
    for i in 0..200u64 {
        let r = s.append(i % 7, &batch(i)).unwrap();
        assert_eq!(r.queue_id, i % 7);
        assert_eq!(r.count as usize, batch(i).len());
        refs.push(r);
    }
    s.sync().unwrap();
    for (i, r) in refs.iter().enumerate().rev() {
        assert_eq!(s.read(r).unwrap(), batch(i as u64), "batch {i}");
        let e = r.encode();
        assert_eq!(SegmentRef::decode(&e), Some(*r));
        assert_eq!(SegmentRef::decode(&e[1..]), None);
    }
    assert_eq!(seg_files(&dir.0).len(), 1);
    // Big items near the limit.
    let big = vec![vec![0xAB; MAX_BATCH_BYTES - BATCH_HEADER_BYTES - 4]];
    let r = s.append(9, &big).unwrap();
    assert_eq!(s.read(&r).unwrap(), big);
    let too_big = vec![vec![0u8; MAX_BATCH_BYTES]];
    assert_eq!(
        s.append(9, &too_big).unwrap_err().kind(),
        io::ErrorKind::InvalidInput
    );
}

#[test]
fn rotation_and_deletion_once_every_batch_is_released() {
    let dir = TempDir::new("rotate");
    let mut s = SegmentStore::open_with(&dir.0, 4096).unwrap();
    let refs: Vec<SegmentRef> = (0..100).map(|i| s.append(i, &batch(i)).unwrap()).collect();
    let files = seg_files(&dir.0);
    assert!(files.len() >= 4, "{files:?}");
    let segs: Vec<u64> = refs.iter().map(|r| r.segment).collect();
    assert!(segs.windows(2).all(|w| w[0] <= w[1]));
    for r in &refs {
        assert!(r.offset + u64::from(r.len) <= 4096 || r.offset == 0);
    }
    let first = segs[0];
    let first_refs: Vec<_> = refs.iter().filter(|r| r.segment == first).collect();
    // All but one batch of the first segment released: nothing to delete.
    for r in &first_refs[1..] {
        s.release(r).unwrap();
    }
    assert_eq!(s.delete_released().unwrap(), 0);
    assert!(s.path_of(first).exists());
    assert_eq!(
        s.read(first_refs[0]).unwrap(),
        batch(first_refs[0].queue_id)
    );
    s.release(first_refs[0]).unwrap();
    // Released, but deletion waits for delete_released (after the next checkpoint).
    assert!(s.path_of(first).exists());
    assert_eq!(s.delete_released().unwrap(), 1);
    assert!(!s.path_of(first).exists());
    // Double release is refused.
    assert_eq!(
        s.release(first_refs[0]).unwrap_err().kind(),
        io::ErrorKind::InvalidData
    );
    // Release everything else, including the current segment's batches: all files go.
    for r in refs.iter().filter(|r| r.segment != first) {
        s.release(r).unwrap();
    }
    assert_eq!(s.delete_released().unwrap() as usize, files.len() - 1);
    assert!(seg_files(&dir.0).is_empty());
    assert_eq!(s.segment_files(), 0);
    // And the store keeps working in a fresh segment.
    let r = s.append(1, &batch(3)).unwrap();
    assert_eq!(s.read(&r).unwrap(), batch(3));
    assert!(r.segment > segs[segs.len() - 1]);
}

#[test]
fn corruption_and_mismatched_refs_are_detected() {
    let dir = TempDir::new("corrupt");
    let mut s = SegmentStore::open(&dir.0).unwrap();
    let a = s.append(1, &batch(3)).unwrap();
    let b = s.append(2, &batch(4)).unwrap();
    s.sync().unwrap();
    let path = s.path_of(a.segment);
    let good = fs::read(&path).unwrap();
    for i in 0..a.len as usize {
        let mut bytes = good.clone();
        bytes[i] ^= 0x10;
        fs::write(&path, &bytes).unwrap();
        let e = s.read(&a).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData, "flip at {i}");
        assert_eq!(
            s.read(&b).unwrap(),
            batch(4),
            "flip at {i} hit the next batch"
        );
    }
    fs::write(&path, &good).unwrap();
    let wrong = [
        SegmentRef { queue_id: 9, ..a },
        SegmentRef { count: 1, ..a },
        SegmentRef { offset: 1, ..a },
        SegmentRef {
            len: a.len - 1,
            ..a
        },
        SegmentRef { len: 3, ..a },
        SegmentRef {
            offset: a.offset,
            len: a.len + b.len,
            ..a
        },
    ];
    for w in wrong {
        assert_eq!(
            s.read(&w).unwrap_err().kind(),
            io::ErrorKind::InvalidData,
            "{w:?}"
        );
    }
    let unknown = SegmentRef { segment: 77, ..a };
    assert_eq!(
        s.read(&unknown).unwrap_err().kind(),
        io::ErrorKind::NotFound
    );
    // Cut short: reading past the end is an error, not a short batch.
    fs::write(&path, &good[..good.len() - 1]).unwrap();
    assert!(s.read(&b).is_err());
    assert_eq!(s.read(&a).unwrap(), batch(3));
}

#[test]
fn restart_restores_live_batches_and_deletes_the_rest() {
    let dir = TempDir::new("restart");
    let (keep, drop_refs) = {
        let mut s = SegmentStore::open_with(&dir.0, 2048).unwrap();
        let refs: Vec<SegmentRef> = (0..60).map(|i| s.append(i, &batch(i)).unwrap()).collect();
        s.sync().unwrap();
        // The "checkpoint" keeps the batches of the last two segments only.
        let last = refs.last().unwrap().segment;
        let (keep, gone): (Vec<_>, Vec<_>) = refs.into_iter().partition(|r| r.segment + 1 >= last);
        // A half-written batch at the end of the current segment, as a kill would leave it.
        let mut f = OpenOptions::new()
            .append(true)
            .open(s.path_of(last))
            .unwrap();
        std::io::Write::write_all(&mut f, b"SGB1\x01\x02").unwrap();
        (keep, gone)
    };
    let before = seg_files(&dir.0).len();
    let mut s = SegmentStore::open_with(&dir.0, 2048).unwrap();
    assert_eq!(s.segment_files(), before);
    // Old files stay until restore, even if new batches arrive first.
    let fresh = s.append(500, &batch(2)).unwrap();
    assert!(fresh.segment > keep.last().unwrap().segment);
    let kept_segments: std::collections::BTreeSet<u64> = keep.iter().map(|r| r.segment).collect();
    assert_eq!(
        s.restore(&keep).unwrap() as usize,
        before - kept_segments.len()
    );
    for r in &drop_refs {
        if !kept_segments.contains(&r.segment) {
            assert!(!s.path_of(r.segment).exists());
        }
    }
    for r in &keep {
        assert_eq!(s.read(r).unwrap(), batch(r.queue_id));
    }
    assert_eq!(s.read(&fresh).unwrap(), batch(2));
    for r in &keep {
        s.release(r).unwrap();
    }
    assert_eq!(s.delete_released().unwrap() as usize, kept_segments.len());
    assert_eq!(
        seg_files(&dir.0),
        vec![format!("{:016}.seg", fresh.segment)]
    );
}

#[test]
fn restore_refuses_refs_to_missing_or_short_files() {
    let dir = TempDir::new("restore-bad");
    let r = {
        let mut s = SegmentStore::open(&dir.0).unwrap();
        let r = s.append(1, &batch(4)).unwrap();
        s.sync().unwrap();
        r
    };
    fs::write(dir.0.join("notes.txt"), b"not a segment").unwrap();
    let mut s = SegmentStore::open(&dir.0).unwrap();
    let missing = SegmentRef { segment: 5, ..r };
    assert_eq!(
        s.restore(&[missing]).unwrap_err().kind(),
        io::ErrorKind::NotFound
    );
    let past_end = SegmentRef {
        offset: 10_000,
        ..r
    };
    assert_eq!(
        s.restore(&[past_end]).unwrap_err().kind(),
        io::ErrorKind::InvalidData
    );
    // Nothing was deleted by the failed attempts.
    assert!(s.path_of(r.segment).exists());
    assert_eq!(s.restore(&[r]).unwrap(), 0);
    assert_eq!(s.read(&r).unwrap(), batch(4));
    assert!(dir.0.join("notes.txt").exists());
}
