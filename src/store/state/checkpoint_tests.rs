use super::*;
use crate::store::test_dir::TempDir;

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

#[test]
fn save_load_round_trip_and_replace() {
    let dir = TempDir::new("checkpoint", "roundtrip");
    let path = dir.0.join("frontier.ckpt");
    assert!(load(&path).unwrap().is_none());
    save(&path, 3, b"first").unwrap();
    assert_eq!(
        load(&path).unwrap(),
        Some(Checkpoint {
            version: 3,
            body: b"first".to_vec()
        })
    );
    let big: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    save(&path, 4, &big).unwrap();
    let c = load(&path).unwrap().unwrap();
    assert_eq!(c.version, 4);
    assert!(c.body == big);
    save(&path, 5, b"").unwrap();
    assert_eq!(load(&path).unwrap().unwrap().body, b"");
    assert_eq!(names(&dir.0), vec!["frontier.ckpt"], "no .tmp left behind");
}

#[test]
fn crash_before_rename_leaves_old_content_and_load_cleans_the_tmp() {
    let dir = TempDir::new("checkpoint", "crash");
    let path = dir.0.join("state");
    save(&path, 1, b"old state").unwrap();
    let new = encode(1, b"new state, longer than the old one");
    // A crash at any point of writing the .tmp (cut short), or after writing it completely
    // but before the rename: the committed file is the old one.
    for cut in [0, 1, 10, HEADER_BYTES, new.len() - 1, new.len()] {
        fs::write(tmp_path(&path), &new[..cut]).unwrap();
        assert_eq!(
            load(&path).unwrap().unwrap().body,
            b"old state",
            "cut {cut}"
        );
        assert!(
            !tmp_path(&path).exists(),
            "cut {cut}: stale .tmp not removed"
        );
    }
    // A stale .tmp with no committed checkpoint at all.
    let other = dir.0.join("never");
    fs::write(tmp_path(&other), &new).unwrap();
    assert!(load(&other).unwrap().is_none());
    assert!(!tmp_path(&other).exists());
    // Saving over a stale .tmp works.
    fs::write(tmp_path(&path), b"junk").unwrap();
    save(&path, 2, b"newer").unwrap();
    assert_eq!(load(&path).unwrap().unwrap().body, b"newer");
    assert_eq!(names(&dir.0), vec!["state"]);
}

#[test]
fn every_single_byte_flip_and_every_truncation_is_detected() {
    let good = encode(7, b"a small body: queue heads, counters");
    for i in 0..good.len() {
        for bit in [0x01u8, 0x80] {
            let mut b = good.clone();
            b[i] ^= bit;
            assert!(decode(&b).is_err(), "flip at {i} undetected");
        }
    }
    for cut in 0..good.len() {
        assert!(decode(&good[..cut]).is_err(), "cut at {cut}");
    }
    let mut longer = good.clone();
    longer.push(0);
    assert!(matches!(
        decode(&longer),
        Err(LoadError::BadLength { expected, actual }) if expected + 1 == actual
    ));
    assert_eq!(decode(&good).unwrap().version, 7);
}

#[test]
fn load_returns_typed_errors_from_disk() {
    let dir = TempDir::new("checkpoint", "errors");
    let path = dir.0.join("c");
    save(&path, 1, b"body bytes").unwrap();
    let good = fs::read(&path).unwrap();

    let mut b = good.clone();
    *b.last_mut().unwrap() ^= 1;
    fs::write(&path, &b).unwrap();
    assert!(matches!(load(&path), Err(LoadError::Checksum)));

    fs::write(&path, b"not a checkpoint at all, just text").unwrap();
    assert!(matches!(load(&path), Err(LoadError::BadMagic)));

    fs::write(&path, &good[..good.len() - 3]).unwrap();
    assert!(matches!(load(&path), Err(LoadError::BadLength { .. })));

    fs::write(&path, &good[..5]).unwrap();
    assert!(matches!(load(&path), Err(LoadError::BadLength { .. })));

    let mut b = good.clone();
    b[8] = 9; // envelope version
    fs::write(&path, &b).unwrap();
    assert!(matches!(
        load(&path),
        Err(LoadError::UnsupportedEnvelope(9))
    ));

    // A huge length field is refused before any allocation.
    let mut b = good.clone();
    b[14..22].copy_from_slice(&u64::MAX.to_le_bytes());
    fs::write(&path, &b).unwrap();
    assert!(matches!(load(&path), Err(LoadError::TooLarge(u64::MAX))));

    let e = load(&path).unwrap_err();
    assert!(e.to_string().contains("too large"), "{e}");
}

#[test]
fn save_into_a_missing_directory_fails_cleanly() {
    let dir = TempDir::new("checkpoint", "missing");
    let path = dir.0.join("no").join("such").join("c");
    assert!(save(&path, 1, b"x").is_err());
    assert!(names(&dir.0).is_empty());
}
