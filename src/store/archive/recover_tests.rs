use super::*;
use crate::store::archive::warc::reader::{read_records, Record};
use crate::store::archive::warc::{Exchange, WarcInfo, WarcWriter};
use crate::store::state::commit_mark::find_last;
use crate::store::state::crawl_state;
use crate::store::state::journal::{JournalReader, JournalWriter};
use crate::store::test_data::{encoded, mark, noise};
use crate::store::test_dir::TempDir;
use std::net::IpAddr;
use std::process::Command;
use std::time::{Duration, UNIX_EPOCH};

/// A real WARC file from the crate's writer: warcinfo plus `n` exchanges. Returns its bytes.
fn real_warc(dir: &Path, n: u64) -> Vec<u8> {
    let info = WarcInfo {
        software: "spinneret-test".into(),
        hostname: "h".into(),
        operator: None,
        description: None,
        ..WarcInfo::default()
    };
    let mut w = WarcWriter::create(dir, "rec", 1 << 30, 6, info, [3; 16]).unwrap();
    for i in 0..n {
        let req = format!("GET /{i} HTTP/1.1\r\nHost: a.test\r\n\r\n").into_bytes();
        let mut resp = b"HTTP/1.1 200 OK\r\nContent-Length: 700\r\n\r\n".to_vec();
        resp.extend(noise(i + 1, 700));
        w.write_exchange(&Exchange {
            target_uri: &format!("http://a.test/{i}"),
            date: UNIX_EPOCH + Duration::from_secs(1_795_240_484 + i),
            ip: Some(IpAddr::from([127, 0, 0, 1])),
            request: &req,
            response: &resp,
            payload_digest: None,
            spooled: None,
            deflated: None,
            truncated: None,
            stored_from: None,
        })
        .unwrap();
    }
    let files = w.finish().unwrap();
    assert_eq!(files.len(), 1);
    let bytes = fs::read(&files[0]).unwrap();
    fs::remove_file(&files[0]).unwrap();
    bytes
}

/// End offset of every gzip member, found independently of `scan_members` (the way the
/// crate's reader walks members over a slice).
fn member_ends(b: &[u8]) -> Vec<usize> {
    let mut ends = Vec::new();
    let mut rest = b;
    while !rest.is_empty() {
        let mut dec = GzDecoder::new(rest);
        io::copy(&mut dec, &mut io::sink()).unwrap();
        rest = dec.into_inner();
        ends.push(b.len() - rest.len());
    }
    ends
}

#[test]
fn truncated_open_warc_keeps_every_complete_record() {
    let dir = TempDir::new("recover", "cuts");
    let full = real_warc(&dir.0, 6);
    let ends = member_ends(&full);
    assert_eq!(ends.len(), 13, "warcinfo + 6 request/response pairs");
    let all: Vec<Record> = read_records(&full).unwrap();
    let mut cuts = vec![0, 5, full.len()];
    for &e in &ends {
        // Exactly at a boundary, in the next member's header, mid-member, inside the trailer.
        cuts.extend([e, e + 4, e + 40, e.saturating_sub(3), e.saturating_sub(8)]);
    }
    cuts.retain(|&c| c <= full.len());
    cuts.sort();
    cuts.dedup();
    for cut in cuts {
        let open = dir.0.join("c.warc.gz.open");
        let fin = dir.0.join("c.warc.gz");
        let _ = fs::remove_file(&fin);
        fs::write(&open, &full[..cut]).unwrap();
        let kept = ends.iter().filter(|&&e| e <= cut).count();
        let good = if kept == 0 { 0 } else { ends[kept - 1] };
        let r = recover_open_warc(&open).unwrap();
        assert_eq!(r.records_kept, kept as u64, "cut {cut}");
        assert_eq!(r.bytes_dropped, (cut - good) as u64, "cut {cut}");
        assert!(!open.exists(), "cut {cut}: .open left");
        if kept == 0 {
            assert_eq!(r.final_path, None);
            assert!(!fin.exists());
            continue;
        }
        assert_eq!(r.final_path.as_deref(), Some(fin.as_path()));
        let got = fs::read(&fin).unwrap();
        assert!(
            got[..] == full[..good],
            "cut {cut}: not a prefix at a member end"
        );
        let recs = read_records(&got).unwrap();
        assert!(recs[..] == all[..kept], "cut {cut}");
    }
}

#[test]
fn garbage_after_the_last_member_is_cut_and_damage_stops_the_scan() {
    let dir = TempDir::new("recover", "garbage");
    let full = real_warc(&dir.0, 3);
    let ends = member_ends(&full);
    let open = dir.0.join("g.warc.gz.open");
    // Zeros (unwritten blocks after a power loss) after a complete file.
    let mut b = full.clone();
    b.extend([0u8; 4096]);
    fs::write(&open, &b).unwrap();
    let r = recover_open_warc(&open).unwrap();
    assert_eq!((r.records_kept, r.bytes_dropped), (ends.len() as u64, 4096));
    fs::remove_file(r.final_path.unwrap()).unwrap();
    // A flipped byte in member 3's compressed data: members 0..3 kept, the rest dropped.
    let mut b = full.clone();
    b[ends[2] + 30] ^= 0x55;
    fs::write(&open, &b).unwrap();
    let r = recover_open_warc(&open).unwrap();
    assert_eq!(r.records_kept, 3);
    assert_eq!(r.bytes_dropped, (full.len() - ends[2]) as u64);
    assert_eq!(fs::read(r.final_path.unwrap()).unwrap(), full[..ends[2]]);
}

#[test]
fn a_non_warc_gzip_member_is_not_kept() {
    let dir = TempDir::new("recover", "nonwarc");
    let full = real_warc(&dir.0, 1);
    let mut b = full.clone();
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(b"not a WARC record").unwrap();
    b.extend(e.finish().unwrap());
    let s = scan_members(&b[..]).unwrap();
    assert_eq!(s.members, 3);
    assert_eq!(s.good_len, full.len() as u64);
    assert!(s.damaged_tail);
    let clean = scan_members(&full[..]).unwrap();
    assert!(!clean.damaged_tail && clean.good_len == full.len() as u64);
}

#[test]
fn refuses_to_clobber_or_to_touch_other_names() {
    let dir = TempDir::new("recover", "refuse");
    let full = real_warc(&dir.0, 1);
    let open = dir.0.join("x.warc.gz.open");
    let fin = dir.0.join("x.warc.gz");
    fs::write(&open, &full).unwrap();
    fs::write(&fin, b"someone else's").unwrap();
    let e = recover_open_warc(&open).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
    assert_eq!(fs::read(&fin).unwrap(), b"someone else's");
    assert_eq!(fs::read(&open).unwrap(), full);
    for bad in ["x.warc.gz", "x.open", "x.txt.open"] {
        let p = dir.0.join(bad);
        fs::write(&p, &full).unwrap();
        let e = recover_open_warc(&p).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{bad}");
    }
}

#[test]
fn find_open_warcs_lists_only_open_warc_files() {
    let dir = TempDir::new("recover", "find");
    for n in [
        "b.warc.gz.open",
        "a.warc.gz.open",
        "c.warc.gz",
        "d.open",
        ".warc.gz.open",
        "e.warc.gz.open.tmp",
    ] {
        fs::write(dir.0.join(n), b"").unwrap();
    }
    fs::create_dir(dir.0.join("f.warc.gz.open")).unwrap();
    let found = find_open_warcs(&dir.0).unwrap();
    assert_eq!(
        found,
        vec![dir.0.join("a.warc.gz.open"), dir.0.join("b.warc.gz.open")]
    );
}

/// The reference reader accepts a recovered file (skipped, with a printed reason, when
/// warcio is not installed).
#[test]
fn warcio_checks_a_recovered_file() {
    let probe = Command::new("python3")
        .args(["-c", "import warcio"])
        .output();
    if !matches!(probe, Ok(ref o) if o.status.success()) {
        let _ = writeln!(
            io::stderr(),
            "SKIPPED recover::tests::warcio_checks_a_recovered_file: \
             `python3 -c 'import warcio'` failed (pip install warcio)"
        );
        return;
    }
    let dir = TempDir::new("recover", "warcio");
    let full = real_warc(&dir.0, 4);
    let ends = member_ends(&full);
    let open = dir.0.join("w.warc.gz.open");
    fs::write(&open, &full[..ends[6] + 100]).unwrap();
    let r = recover_open_warc(&open).unwrap();
    assert_eq!(r.records_kept, 7);
    let fin = r.final_path.unwrap();
    let out = Command::new("python3")
        .args(["-m", "warcio.cli", "check", "-v"])
        .arg(&fin)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "warcio check failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new("python3")
        .args(["-m", "warcio.cli", "index"])
        .arg(&fin)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 7);
}

#[test]
fn an_index_left_unsorted_beside_a_closed_file_is_rebuilt_or_removed() {
    let dir = TempDir::new("recover", "orphan-index");
    let d = &dir.0;
    let line = |off: u64, len: u64| {
        format!("com,a)/ 20261123000000 {{\"url\": \"http://a.com/\", \"offset\": \"{off}\", \"length\": \"{len}\"}}\n")
    };
    // Killed after the rename, before the sort: the lines inside the file are kept.
    fs::write(d.join("a.warc.gz"), vec![0u8; 100]).unwrap();
    fs::write(d.join("a.cdxj.open"), line(0, 50) + &line(90, 20)).unwrap();
    // The file itself is gone (e.g. cut back to a commit): so is its index.
    fs::write(d.join("b.cdxj.open"), line(0, 10)).unwrap();
    // Still open: recover_open_warc's business, not this one's.
    fs::write(d.join("c.warc.gz.open"), b"x").unwrap();
    fs::write(d.join("c.cdxj.open"), line(0, 1)).unwrap();
    assert_eq!(recover_orphan_indexes(d).unwrap(), 2);
    assert_eq!(fs::read_to_string(d.join("a.cdxj")).unwrap(), line(0, 50));
    for gone in ["a.cdxj.open", "b.cdxj.open", "b.cdxj"] {
        assert!(!d.join(gone).exists(), "{gone}");
    }
    assert!(d.join("c.cdxj.open").exists());
    assert_eq!(recover_orphan_indexes(d).unwrap(), 0, "nothing left to do");
}

// Cutting back to a commit mark.

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n != crawl_state::STATE_DIR)
        .collect();
    v.sort();
    v
}

fn journal_records(path: &Path) -> Vec<Vec<u8>> {
    JournalReader::read_all(path).unwrap().records
}

/// A crawl directory as a crash leaves it: a closed WARC file, the marked one still `.open`
/// and grown past the mark, a file begun after the mark (with its index), another series'
/// file, crawl.log grown past the mark, a journal with records after the mark and a newer
/// generation without a mark.
#[test]
fn cut_back_removes_exactly_what_the_mark_does_not_vouch_for() {
    let dir = TempDir::new("commit-mark", "cut");
    let out = &dir.0;
    fs::create_dir_all(crawl_state::state_dir(out)).unwrap();
    let file = |name: &str, len: usize| fs::write(out.join(name), vec![b'x'; len]).unwrap();
    file("c-20261123101010-00000.warc.gz", 500);
    file("c-20261123101010-00000.cdxj", 50);
    file("c-20261123101011-00001.warc.gz.open", 900);
    file("c-20261123101011-00001.cdxj.open", 90);
    file("c-20261123101012-00002.warc.gz.open", 300);
    file("c-20261123101012-00002.cdxj.open", 30);
    file("c-p1-20261123101012-00009.warc.gz.open", 70);
    file("crawl.log", 1000);
    file("notes.txt", 10);

    let j0 = crawl_state::journal_path(out, 0);
    let the_mark = mark(800, &[Some(("c-20261123101011-00001.warc.gz", 600))]);
    let mut w = JournalWriter::open_append(&j0).unwrap();
    w.append(b"Dbefore").unwrap();
    w.append(&encoded(&the_mark)).unwrap();
    let end = w.len();
    w.append(b"Dafter, not vouched for").unwrap();
    w.flush().unwrap();
    drop(w);
    let j1 = crawl_state::journal_path(out, 1);
    let mut w = JournalWriter::open_append(&j1).unwrap();
    w.append(b"Ain a generation with no mark").unwrap();
    w.flush().unwrap();
    drop(w);

    let j0_len = fs::metadata(&j0).unwrap().len();
    let last = find_last(out).unwrap().expect("a mark");
    assert_eq!(last.mark, the_mark);
    assert_eq!((last.journal.clone(), last.end), (j0.clone(), end));
    assert_eq!(last.newer, vec![j1.clone()]);

    let cut = cut_back(out, &last).unwrap();
    assert_eq!(
        cut,
        Cut {
            files_removed: 1,
            warc_bytes: 300,
            log_bytes: 200,
            journal_bytes: j0_len - end,
        }
    );
    assert_eq!(
        names(out),
        [
            "c-20261123101010-00000.cdxj",
            "c-20261123101010-00000.warc.gz",
            "c-20261123101011-00001.cdxj.open",
            "c-20261123101011-00001.warc.gz.open",
            "c-p1-20261123101012-00009.warc.gz.open",
            "crawl.log",
            "notes.txt",
        ]
    );
    let len = |n: &str| fs::metadata(out.join(n)).unwrap().len();
    assert_eq!(
        len("c-20261123101010-00000.warc.gz"),
        500,
        "closed: kept whole"
    );
    assert_eq!(len("c-20261123101011-00001.warc.gz.open"), 600);
    assert_eq!(
        len("c-p1-20261123101012-00009.warc.gz.open"),
        70,
        "no mark: kept"
    );
    assert_eq!(len("crawl.log"), 800);
    assert_eq!(fs::metadata(&j0).unwrap().len(), end);
    assert!(!j1.exists());
    let recs = journal_records(&j0);
    assert_eq!(recs.len(), 2);
    assert_eq!(recs[0], b"Dbefore");

    // A crash during the cut changes nothing: cutting again finds the same mark, cuts nothing.
    let again = find_last(out).unwrap().expect("the mark is still there");
    assert_eq!(again.mark, the_mark);
    assert_eq!(cut_back(out, &again).unwrap(), Cut::default());
}

#[test]
fn the_newest_mark_wins_and_outputs_shorter_than_it_are_left_alone() {
    let dir = TempDir::new("commit-mark", "newest");
    let out = &dir.0;
    fs::create_dir_all(crawl_state::state_dir(out)).unwrap();
    fs::write(out.join("crawl.log"), vec![b'l'; 100]).unwrap();
    let name = "c-20261123101011-00003.warc.gz";
    fs::write(out.join(format!("{name}.open")), vec![b'w'; 100]).unwrap();
    let j2 = crawl_state::journal_path(out, 2);
    let mut w = JournalWriter::open_append(&j2).unwrap();
    w.append(&encoded(&mark(50, &[Some((name, 40))]))).unwrap();
    w.append(b"Dx").unwrap();
    // A power cut lost what the newest mark vouches for: nothing to cut, nothing grows.
    let newest = mark(150, &[Some((name, 400))]);
    w.append(&encoded(&newest)).unwrap();
    w.flush().unwrap();
    drop(w);
    let last = find_last(out).unwrap().unwrap();
    assert_eq!(last.mark, newest);
    let cut = cut_back(out, &last).unwrap();
    assert_eq!(cut, Cut::default());
    assert_eq!(fs::metadata(out.join("crawl.log")).unwrap().len(), 100);
}
