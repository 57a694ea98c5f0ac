//! WARC round trip: a record built by `warc::write_record` from arbitrary bytes, gzipped by hand
//! and (when flag bits 0 and 1 are set) also through a `WarcWriter` in a temp dir, reads back with
//! `warc::reader::read_records` with the same block, URI and digest. The writer pass also writes
//! a revisit and checks every reported record position (and, with flag bit 3, the CDXJ index);
//! the lowest bit of the first date byte gives its response records a block digest.
//! Then the raw input goes to the reader: no panic.
//!
//! Input: `[flags, 5 date bytes, uri bytes, 0, block bytes (split at the first 0 again)]`; the
//! high nibble of flags is the gzip level.
#![no_main]

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, UNIX_EPOCH};

use flate2::write::GzEncoder;
use flate2::Compression;
use libfuzzer_sys::fuzz_target;
use spinneret::store::archive::warc::reader::{parse_record, read_records, Record};
use spinneret::store::archive::warc::{
    sha1, sha1_base32, write_record, Exchange, RecordId, RecordType, Revisit, RevisitProfile,
    Truncated, WarcInfo, WarcWriter, WriterOptions,
};

/// What the writer makes of a field value and the reader gives back: controls percent-encoded,
/// then trimmed.
fn field_as_read(v: &str) -> String {
    let mut out = String::new();
    for c in v.chars() {
        if (c as u32) < 0x20 || c == '\x7f' {
            out.push_str(&format!("%{:02x}", c as u32));
        } else {
            out.push(c);
        }
    }
    out.trim().to_string()
}

/// `digest`: the record has a `WARC-Block-Digest` (else it has none).
fn check_block(rec: &Record, uri: &str, block: &[u8], digest: bool) {
    assert_eq!(rec.block, block, "block");
    assert_eq!(
        rec.header("WARC-Target-URI"),
        Some(field_as_read(uri).as_str())
    );
    assert_eq!(
        rec.header("WARC-Block-Digest"),
        digest.then(|| sha1_base32(&sha1(block))).as_deref()
    );
    assert_eq!(rec.header("WARC-Date").map(str::len), Some(20), "WARC-Date");
}

/// One scratch directory per fuzzing process, on tmpfs when there is one: the writer fsyncs each
/// file it closes, which on a disk would make this target crawl.
fn scratch_dir() -> PathBuf {
    let shm = PathBuf::from("/dev/shm");
    let root = if shm.is_dir() {
        shm
    } else {
        std::env::temp_dir()
    };
    let dir = root.join(format!("spinneret-fuzz-warc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fuzz_target!(|data: &[u8]| {
    let _ = read_records(data);
    let _ = parse_record(data);

    if data.len() < 6 {
        return;
    }
    let flags = data[0];
    let secs = data[1..6]
        .iter()
        .fold(0u64, |acc, &b| acc << 8 | u64::from(b));
    let date = UNIX_EPOCH + Duration::from_secs(secs);
    let rest = &data[6..];
    let (uri, block) = match rest.iter().position(|&b| b == 0) {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, &[][..]),
    };
    let uri = String::from_utf8_lossy(uri);
    let cut = block.iter().position(|&b| b == 0).unwrap_or(block.len());
    let (first, second) = block.split_at(cut);

    let mut record = Vec::new();
    let id = RecordId([flags; 16]);
    write_record(
        &mut record,
        RecordType::Response,
        &id,
        date,
        &[("WARC-Target-URI", &uri)],
        "application/http;msgtype=response",
        &[first, second],
    );
    let mut gz = GzEncoder::new(Vec::new(), Compression::new(u32::from(flags >> 4) % 10));
    gz.write_all(&record).unwrap();
    let gz = gz.finish().unwrap();
    let records = read_records(&gz).expect("our own record reads back");
    assert_eq!(records.len(), 1);
    check_block(&records[0], &uri, block, true);

    // One input in four: a writer per exec (a file, a rename, a fresh deflate state) is slow.
    if flags & 3 == 3 {
        let dir = scratch_dir();
        let info = WarcInfo {
            software: "spinneret-fuzz".into(),
            hostname: "localhost".into(),
            command_line: Some(uri.to_string()),
            ..WarcInfo::default()
        };
        let cdxj = flags & 8 != 0;
        // The date's lowest bit picks whether responses get a block digest.
        let response_block_digest = data[1] & 1 != 0;
        let mut w = WarcWriter::create_with(
            &dir,
            "fuzz",
            1 << 30,
            u32::from(flags >> 4),
            info,
            [7; 16],
            WriterOptions {
                cdxj,
                response_block_digest,
                ..WriterOptions::default()
            },
        )
        .unwrap();
        let exchange = w
            .write_exchange(&Exchange {
                target_uri: &uri,
                date,
                ip: None,
                request: first,
                response: second,
                payload_digest: Some([flags; 20]),
                spooled: None,
                deflated: None,
                truncated: (flags & 4 != 0).then_some(Truncated::Disconnect),
                // Any offset, in the block or past it: the block reads back the same.
                stored_from: (data[1] & 2 != 0).then_some(usize::from(data[2])),
            })
            .unwrap();
        let revisit = w
            .write_revisit(&Revisit {
                // Either profile; the record's framing is what is checked.
                profile: if flags & 32 != 0 {
                    RevisitProfile::ServerNotModified
                } else {
                    RevisitProfile::IdenticalPayload
                },
                target_uri: &uri,
                date,
                ip: None,
                request: first,
                response_head: second,
                payload_digest: [flags; 20],
                refers_to_uri: &uri,
                refers_to_date: date,
                refers_to_record: (flags & 16 != 0)
                    .then_some("<urn:uuid:00000000-0000-4000-8000-000000000000>"),
            })
            .unwrap();
        let (files, indexes) = w.finish_indexed().unwrap();
        assert_eq!(files.len(), 1);
        let bytes = std::fs::read(&files[0]).unwrap();
        std::fs::remove_file(&files[0]).unwrap();
        let records = read_records(&bytes).expect("the writer's file reads back");
        assert_eq!(
            records.len(),
            5,
            "warcinfo, request, response, request, revisit"
        );
        check_block(&records[1], &uri, first, true);
        check_block(&records[2], &uri, second, response_block_digest);
        check_block(&records[4], &uri, second, true);
        // Every reported position is exactly one record, the one written there.
        for (pos, want) in [
            (&exchange.request, 1),
            (&exchange.response, 2),
            (&revisit.request, 3),
            (&revisit.response, 4),
        ] {
            let (start, len) = (pos.offset as usize, pos.length as usize);
            let one = read_records(&bytes[start..start + len]).expect("record at its offset");
            assert_eq!(one, [records[want].clone()]);
        }
        assert_eq!(indexes.len(), usize::from(cdxj));
        for index in indexes {
            let text = std::fs::read(&index).unwrap();
            std::fs::remove_file(&index).unwrap();
            assert_eq!(
                text.iter().filter(|&&b| b == b'\n').count(),
                2,
                "response, revisit"
            );
            // Sorted bytewise by line, as pywb's binary search needs.
            let lines: Vec<&[u8]> = text
                .split(|&b| b == b'\n')
                .filter(|l| !l.is_empty())
                .collect();
            assert!(lines.windows(2).all(|w| w[0] <= w[1]), "index sorted");
        }
    }
});
