use std::io::Write;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::*;
use crate::store::test_dir::TempDir;

const GIB4: u64 = 1 << 32;

fn record(name: &str, size: u64, offset: u64, zip64: bool) -> EntryRecord {
    EntryRecord {
        name: name.to_string(),
        crc32: 0x1234_5678,
        size,
        offset,
        zip64,
        dos_time: (0, 0x21),
    }
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// The ZIP64 extra field of a header whose fixed part is `fixed` bytes: its 64-bit values.
fn zip64_values(h: &[u8], fixed: usize, name_len: usize) -> Vec<u64> {
    let extra = &h[fixed + name_len..];
    assert_eq!(u16_at(extra, 0), 1, "ZIP64 extra field id");
    let len = usize::from(u16_at(extra, 2));
    assert_eq!(extra.len(), 4 + len);
    (0..len / 8).map(|i| u64_at(extra, 4 + 8 * i)).collect()
}

#[test]
fn a_size_below_4_gib_fits_the_32_bit_fields_and_one_at_it_needs_zip64() {
    let small = local_header(&record("archive/a.warc.gz", MAX_32 - 1, 0, false));
    assert_eq!(u32_at(&small, 18), (MAX_32 - 1) as u32);
    assert_eq!(u32_at(&small, 22), (MAX_32 - 1) as u32);
    assert_eq!(u16_at(&small, 28), 0, "no extra field");
    assert_eq!(u16_at(&small, 4), 20);
    // A writer asked for a known size decides ZIP64 from it.
    for (size, zip64) in [(MAX_32 - 1, false), (MAX_32, true), (5 * GIB4, true)] {
        let dir = TempDir::new("wacz-zip", &format!("known-{size}"));
        let file = File::create(dir.0.join("z.zip")).unwrap();
        let mut zip = ZipWriter::new(file, UNIX_EPOCH);
        let e = zip.entry("x", Some(size)).unwrap();
        assert_eq!(e.record.zip64, zip64, "size {size}");
    }
    let big = local_header(&record("archive/a.warc.gz", 5 * GIB4, 0, true));
    assert_eq!(u32_at(&big, 18), u32::MAX);
    assert_eq!(u32_at(&big, 22), u32::MAX);
    assert_eq!(u16_at(&big, 4), 45);
    assert_eq!(zip64_values(&big, 30, 17), vec![5 * GIB4, 5 * GIB4]);
}

#[test]
fn the_central_header_marks_exactly_the_fields_past_4_gib() {
    // Small everything: no extra field.
    let h = central_header(&record("a", 10, 20, false));
    assert_eq!(u16_at(&h, 30), 0);
    assert_eq!(u32_at(&h, 20), 10);
    assert_eq!(u32_at(&h, 42), 20);
    // An offset past 4 GiB alone: the offset in the extra field, sizes as they are.
    let h = central_header(&record("a", 10, 6 * GIB4, false));
    assert_eq!(u32_at(&h, 20), 10);
    assert_eq!(u32_at(&h, 42), u32::MAX);
    assert_eq!(zip64_values(&h, 46, 1), vec![6 * GIB4]);
    assert_eq!(u16_at(&h, 6), 45);
    // A size past it: both sizes, then (only if marked) the offset.
    let h = central_header(&record("a", 5 * GIB4, 100, false));
    assert_eq!(u32_at(&h, 20), u32::MAX);
    assert_eq!(u32_at(&h, 24), u32::MAX);
    assert_eq!(u32_at(&h, 42), 100);
    assert_eq!(zip64_values(&h, 46, 1), vec![5 * GIB4, 5 * GIB4]);
    let h = central_header(&record("a", 5 * GIB4, 7 * GIB4, true));
    assert_eq!(zip64_values(&h, 46, 1), vec![5 * GIB4, 5 * GIB4, 7 * GIB4]);
    // An entry ZIP64 in its local header (size unknown when it began) is ZIP64 here too,
    // however small it came out.
    let h = central_header(&record("a", 3, 0, true));
    assert_eq!(u32_at(&h, 20), u32::MAX);
    assert_eq!(zip64_values(&h, 46, 1), vec![3, 3]);
    // The offset boundary: 0xFFFFFFFF itself is the mark, so it goes to the extra field.
    let h = central_header(&record("a", 1, MAX_32, false));
    assert_eq!(zip64_values(&h, 46, 1), vec![MAX_32]);
    let h = central_header(&record("a", 1, MAX_32 - 1, false));
    assert_eq!(u16_at(&h, 30), 0);
}

#[test]
fn end_records_go_zip64_for_many_entries_or_a_far_directory() {
    let plain = end_records(3, 1000, 200);
    assert_eq!(plain.len(), 22);
    assert_eq!(u32_at(&plain, 0), 0x0605_4b50);
    assert_eq!(u16_at(&plain, 10), 3);
    assert_eq!(u32_at(&plain, 12), 200);
    assert_eq!(u32_at(&plain, 16), 1000);
    for (entries, at, size) in [(MAX_16, 1000, 200), (3, 9 * GIB4, 200), (3, 0, GIB4 * 2)] {
        let r = end_records(entries, at, size);
        assert_eq!(r.len(), 56 + 20 + 22, "{entries} {at} {size}");
        assert_eq!(u32_at(&r, 0), 0x0606_4b50);
        assert_eq!(u64_at(&r, 24), entries);
        assert_eq!(u64_at(&r, 32), entries);
        assert_eq!(u64_at(&r, 40), size);
        assert_eq!(u64_at(&r, 48), at);
        // The locator points at the ZIP64 end record, right after the directory.
        assert_eq!(u32_at(&r, 56), 0x0706_4b50);
        assert_eq!(u64_at(&r, 64), at + size);
        let end = &r[76..];
        assert_eq!(u32_at(end, 0), 0x0605_4b50);
        assert_eq!(u64::from(u16_at(end, 10)), entries.min(MAX_16));
        assert_eq!(u64::from(u32_at(end, 12)), size.min(MAX_32));
        assert_eq!(u64::from(u32_at(end, 16)), at.min(MAX_32));
    }
}

#[test]
fn dos_time_is_utc_with_two_second_steps() {
    // 2026-11-29T11:52:37Z
    let t = UNIX_EPOCH + Duration::from_secs(1_795_953_157);
    let (time, date) = dos_time(t);
    assert_eq!(time >> 11, 11);
    assert_eq!((time >> 5) & 63, 52);
    assert_eq!(time & 31, 18);
    assert_eq!(date >> 9, 2026 - 1980);
    assert_eq!((date >> 5) & 15, 11);
    assert_eq!(date & 31, 29);
    // Before 1980 is clamped to 1980, not wrapped.
    assert_eq!(dos_time(UNIX_EPOCH).1 >> 9, 0);
}

/// Reads back a file written by the writer: each entry's name, data and local-header CRC
/// and sizes, found through the central directory.
fn read_back(bytes: &[u8]) -> Vec<(String, Vec<u8>, u32)> {
    let end = bytes.len() - 22;
    assert_eq!(u32_at(bytes, end), 0x0605_4b50);
    let n = usize::from(u16_at(bytes, end + 10));
    let mut at = u32_at(bytes, end + 16) as usize;
    let mut out = Vec::new();
    for _ in 0..n {
        assert_eq!(u32_at(bytes, at), 0x0201_4b50);
        let name_len = usize::from(u16_at(bytes, at + 28));
        let extra_len = usize::from(u16_at(bytes, at + 30));
        let name = String::from_utf8(bytes[at + 46..at + 46 + name_len].to_vec()).unwrap();
        let crc = u32_at(bytes, at + 16);
        let mut size = u64::from(u32_at(bytes, at + 24));
        if size == MAX_32 {
            size = zip64_values(&bytes[at..at + 46 + name_len + extra_len], 46, name_len)[0];
        }
        let local = u32_at(bytes, at + 42) as usize;
        assert_eq!(u32_at(bytes, local), 0x0403_4b50);
        assert_eq!(u32_at(bytes, local + 14), crc, "local CRC patched");
        let l_name = usize::from(u16_at(bytes, local + 26));
        let l_extra = usize::from(u16_at(bytes, local + 28));
        if l_extra > 0 {
            let sizes = zip64_values(&bytes[local..local + 30 + l_name + l_extra], 30, l_name);
            assert_eq!(sizes, vec![size, size], "local ZIP64 sizes patched");
        } else {
            assert_eq!(u64::from(u32_at(bytes, local + 22)), size);
        }
        let data = local + 30 + l_name + l_extra;
        out.push((name, bytes[data..data + size as usize].to_vec(), crc));
        at += 46 + name_len + extra_len;
    }
    out
}

#[test]
fn entries_are_stored_whole_with_their_crc_sizes_and_sha256() {
    let dir = TempDir::new("wacz-zip", "zip-roundtrip");
    let path = dir.0.join("t.zip");
    let file = File::create(&path).unwrap();
    let mut zip = ZipWriter::new(file, SystemTime::now());
    let warc = vec![7u8; 3_000_000];
    let mut e = zip
        .entry("archive/a.warc.gz", Some(warc.len() as u64))
        .unwrap();
    e.write_all(&warc).unwrap();
    let w = e.finish().unwrap();
    assert_eq!(w.size, 3_000_000);
    assert_eq!(w.sha256, hex(&Sha256::digest(&warc)));
    let mut e = zip.entry("indexes/index.cdx", None).unwrap();
    e.write_all(b"com,example)/ 2026 {}\n").unwrap();
    let w2 = e.finish().unwrap();
    assert_eq!(w2.size, 22);
    let mut e = zip.entry("empty", Some(0)).unwrap();
    e.flush().unwrap();
    e.finish().unwrap();
    drop(zip.finish().unwrap());
    let bytes = std::fs::read(&path).unwrap();
    let entries = read_back(&bytes);
    let names: Vec<&str> = entries.iter().map(|e| e.0.as_str()).collect();
    assert_eq!(names, ["archive/a.warc.gz", "indexes/index.cdx", "empty"]);
    assert_eq!(entries[0].1, warc);
    assert_eq!(entries[0].2, crc32fast::hash(&warc));
    assert_eq!(entries[1].1, b"com,example)/ 2026 {}\n");
    assert!(entries[2].1.is_empty());
}

#[test]
fn an_entry_shorter_or_longer_than_announced_is_an_error() {
    let dir = TempDir::new("wacz-zip", "zip-mismatch");
    let file = File::create(dir.0.join("t.zip")).unwrap();
    let mut zip = ZipWriter::new(file, SystemTime::now());
    let mut e = zip.entry("archive/a.warc.gz", Some(10)).unwrap();
    e.write_all(b"12345").unwrap();
    let err = e.finish().unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    assert!(err.to_string().contains("did it change"), "{err}");
}
