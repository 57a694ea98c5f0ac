use super::*;
use crate::store::state::journal::JournalWriter;
use crate::store::test_dir::TempDir;

fn mark(log_len: u64, warcs: &[Option<(&str, u64)>]) -> CommitMark {
    CommitMark {
        log_len,
        warcs: warcs
            .iter()
            .map(|w| w.map(|(n, l)| (n.to_string(), l)))
            .collect(),
    }
}

fn encoded(m: &CommitMark) -> Vec<u8> {
    let mut v = Vec::new();
    m.encode(&mut v);
    v
}

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

#[test]
fn a_mark_round_trips_and_nothing_else_decodes_as_one() {
    let m = mark(
        12_345,
        &[
            Some(("crawl-p0-20261123101010-00007.warc.gz", 1 << 33)),
            None,
        ],
    );
    let rec = encoded(&m);
    assert_eq!(rec[0], TAG);
    assert_eq!(CommitMark::decode(&rec[1..]), Some(m));
    let mut longer = rec[1..].to_vec();
    longer.push(0);
    assert_eq!(CommitMark::decode(&longer), None, "trailing bytes");
    assert_eq!(
        CommitMark::decode(&rec[1..rec.len() - 1]),
        None,
        "cut short"
    );
    assert_eq!(CommitMark::decode(&[]), None);
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

#[test]
fn journals_without_marks_have_none_to_cut_to() {
    let dir = TempDir::new("commit-mark", "none");
    let out = &dir.0;
    assert!(find_last(out).unwrap().is_none(), "no state directory");
    fs::create_dir_all(crawl_state::state_dir(out)).unwrap();
    let mut w = JournalWriter::open_append(&crawl_state::journal_path(out, 0)).unwrap();
    w.append(b"Ahttp://a/").unwrap();
    w.flush().unwrap();
    drop(w);
    assert!(find_last(out).unwrap().is_none());
}

#[test]
fn a_damaged_mark_is_an_error_not_a_cut() {
    let dir = TempDir::new("commit-mark", "bad");
    let out = &dir.0;
    fs::create_dir_all(crawl_state::state_dir(out)).unwrap();
    let mut w = JournalWriter::open_append(&crawl_state::journal_path(out, 0)).unwrap();
    w.append(&[TAG, 0xff]).unwrap();
    w.flush().unwrap();
    drop(w);
    assert!(matches!(find_last(out), Err(StateError::Damaged(_))));
}
