use super::*;
use crate::store::archive::warc::reader::read_records;
use crate::store::test_dir::TempDir;

const BOTH: TextOut = TextOut {
    wet: true,
    markdown: true,
};

fn pos(file: &str, offset: u64) -> RecordPos {
    RecordPos {
        file: file.into(),
        offset,
        length: 100,
    }
}

fn text(words: &str) -> PageText {
    PageText {
        text: words.as_bytes().to_vec(),
        markdown: format!("# {words}").into_bytes(),
        title: b"T".to_vec(),
        lang: b"en".to_vec(),
    }
}

fn sides(dir: &Path) -> TextSides {
    TextSides::new(BOTH, dir, WarcInfo::default(), 1)
}

#[test]
fn companions_are_named_as_extract_names_them() {
    let (wet, jsonl) = companion_names("a-20261123101010-00001.warc.gz.open");
    assert_eq!(wet, "a-20261123101010-00001.warc.wet.gz");
    assert_eq!(jsonl, "a-20261123101010-00001.warc.md.jsonl");
}

/// Each page's text lands beside its own WARC file; a file's companions are named once the
/// next file's first page comes (or at the end), and their lengths are what the mark needs.
#[test]
fn pages_follow_their_warc_file_and_companions_close_with_it() {
    let dir = TempDir::new("text-sides", "follow");
    let d = &dir.0;
    let mut s = sides(d);
    let id = RecordId([7; 16]);
    let t0 = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000);
    s.page(
        "http://a.test/1",
        t0,
        200,
        &pos("x-1-00000.warc.gz", 0),
        &id,
        &text("one"),
    )
    .unwrap();
    s.page(
        "http://a.test/2",
        t0,
        200,
        &pos("x-1-00000.warc.gz", 900),
        &id,
        &text("two"),
    )
    .unwrap();
    s.flush(false).unwrap();
    let (wet_len, jsonl_len) = s.lengths(Some("x-1-00000.warc.gz"));
    assert_eq!(
        wet_len,
        fs::metadata(d.join("x-1-00000.warc.wet.gz.open"))
            .unwrap()
            .len()
    );
    assert_eq!(
        jsonl_len,
        fs::metadata(d.join("x-1-00000.warc.md.jsonl.open"))
            .unwrap()
            .len()
    );
    assert_eq!(
        s.lengths(Some("x-1-00001.warc.gz")),
        (0, 0),
        "not this file's"
    );
    s.page(
        "http://a.test/3",
        t0,
        203,
        &pos("x-1-00001.warc.gz", 0),
        &id,
        &text("three"),
    )
    .unwrap();
    assert!(
        d.join("x-1-00000.warc.wet.gz").exists(),
        "closed with its file"
    );
    s.finish().unwrap();
    let wet = read_records(&fs::read(d.join("x-1-00000.warc.wet.gz")).unwrap()).unwrap();
    assert_eq!(wet.len(), 3, "warcinfo and two conversions");
    assert_eq!(wet[1].header("WARC-Target-URI"), Some("http://a.test/1"));
    assert_eq!(wet[1].header("WARC-Date"), Some("2023-11-14T22:13:20Z"));
    assert_eq!(
        wet[1].header("WARC-Refers-To"),
        Some("<urn:uuid:07070707-0707-0707-0707-070707070707>")
    );
    assert_eq!(wet[2].block, b"two");
    let lines = fs::read_to_string(d.join("x-1-00001.warc.md.jsonl")).unwrap();
    assert_eq!(
        lines,
        "{\"url\": \"http://a.test/3\", \"fetched\": \"2023-11-14T22:13:20Z\", \"status\": 203, \
         \"title\": \"T\", \"lang\": \"en\", \"markdown\": \"# three\", \"warc_file\": \
         \"x-1-00001.warc.gz\", \"warc_offset\": 0}\n"
    );
}

#[test]
fn only_what_is_asked_is_written() {
    let dir = TempDir::new("text-sides", "asked");
    let d = &dir.0;
    let mut s = TextSides::new(
        TextOut {
            wet: false,
            markdown: true,
        },
        d,
        WarcInfo::default(),
        1,
    );
    let id = RecordId([1; 16]);
    let at = SystemTime::UNIX_EPOCH;
    s.page(
        "http://a.test/",
        at,
        200,
        &pos("y-1-00000.warc.gz", 0),
        &id,
        &text("a"),
    )
    .unwrap();
    s.finish().unwrap();
    assert!(d.join("y-1-00000.warc.md.jsonl").exists());
    assert!(!d.join("y-1-00000.warc.wet.gz").exists());
    assert!(!d.join("y-1-00000.warc.wet.gz.open").exists());
}

/// A resume cuts the companions to the commit's lengths (removing those begun after it),
/// then closes them: what a kill left past the last whole record or line goes.
#[test]
fn cut_to_the_mark_then_recovered_whole() {
    let dir = TempDir::new("text-sides", "cut");
    let d = &dir.0;
    let mut s = sides(d);
    let id = RecordId([2; 16]);
    let at = SystemTime::UNIX_EPOCH;
    let warc = "z-1-00000.warc.gz";
    s.page("http://a.test/1", at, 200, &pos(warc, 0), &id, &text("one"))
        .unwrap();
    s.flush(false).unwrap();
    let (wet, jsonl) = s.lengths(Some(warc));
    s.page(
        "http://a.test/2",
        at,
        200,
        &pos(warc, 500),
        &id,
        &text("two"),
    )
    .unwrap();
    s.flush(false).unwrap();
    // Killed here: the open files hold two pages; the mark vouches for one.
    std::mem::forget(s);
    let warc_open = d.join(format!("{warc}.open"));
    assert!(cut_to_mark(&warc_open, wet, jsonl).unwrap() > 0);
    recover_open(&warc_open, true).unwrap();
    let records = read_records(&fs::read(d.join("z-1-00000.warc.wet.gz")).unwrap()).unwrap();
    assert_eq!(records.len(), 2, "warcinfo and the committed page");
    let lines = fs::read_to_string(d.join("z-1-00000.warc.md.jsonl")).unwrap();
    assert_eq!(lines.lines().count(), 1);
    assert!(!d.join("z-1-00000.warc.md.jsonl.open").exists());

    // Without a mark (a torn tail), each is cut to its last whole record or line.
    let warc = "z-1-00001.warc.gz";
    let (wet, jsonl) = companion_names(warc);
    killed_with_torn_tails(d, warc);
    recover_orphans(d).unwrap();
    // Its WARC file is gone: so are they.
    assert!(!d.join(&wet).exists() && !d.join(format!("{wet}.open")).exists());
    // With the WARC file there, they are cut and named.
    killed_with_torn_tails(d, warc);
    fs::write(d.join(warc), b"").unwrap();
    recover_orphans(d).unwrap();
    let lines = fs::read_to_string(d.join(&jsonl)).unwrap();
    assert_eq!(lines.lines().count(), 1);
    assert!(lines.ends_with("}\n"));
    assert_eq!(
        read_records(&fs::read(d.join(&wet)).unwrap())
            .unwrap()
            .len(),
        2
    );
}

/// One page's companions of `warc`, left open by a kill, with half a record and half a line
/// after it.
fn killed_with_torn_tails(d: &Path, warc: &str) {
    let mut s = sides(d);
    let at = SystemTime::UNIX_EPOCH;
    let page = text("three");
    s.page(
        "http://a.test/3",
        at,
        200,
        &pos(warc, 0),
        &RecordId([2; 16]),
        &page,
    )
    .unwrap();
    s.flush(false).unwrap();
    std::mem::forget(s);
    let (wet, jsonl) = companion_names(warc);
    let torn: [(&str, &[u8]); 2] = [(&wet, &[0x1f, 0x8b, 8, 0, 0]), (&jsonl, b"{\"url\": \"ht")];
    for (name, tail) in torn {
        let mut f = OpenOptions::new()
            .append(true)
            .open(d.join(format!("{name}.open")))
            .unwrap();
        std::io::Write::write_all(&mut f, tail).unwrap();
    }
}

#[test]
fn a_companion_begun_after_the_mark_is_removed() {
    let dir = TempDir::new("text-sides", "after");
    let d = &dir.0;
    let mut s = sides(d);
    let warc = "w-1-00000.warc.gz";
    let at = SystemTime::UNIX_EPOCH;
    s.page(
        "http://a.test/",
        at,
        200,
        &pos(warc, 0),
        &RecordId([3; 16]),
        &text("a"),
    )
    .unwrap();
    s.flush(false).unwrap();
    std::mem::forget(s);
    cut_to_mark(&d.join(format!("{warc}.open")), 0, 0).unwrap();
    assert!(!d.join("w-1-00000.warc.wet.gz.open").exists());
    assert!(!d.join("w-1-00000.warc.md.jsonl.open").exists());
}
