use super::*;
use crate::store::state::journal::JournalWriter;
use crate::store::test_data::{encoded, mark};
use crate::store::test_dir::TempDir;

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

#[test]
fn a_mark_with_text_companions_round_trips() {
    let mut m = mark(7, &[Some(("a-20261123101010-00001.warc.gz", 900)), None]);
    m.texts = vec![(300, 1 << 40), (0, 0)];
    let rec = encoded(&m);
    assert_eq!(CommitMark::decode(&rec[1..]), Some(m.clone()));
    assert_eq!(
        CommitMark::decode(&rec[1..rec.len() - 1]),
        None,
        "cut short"
    );
    // Without companions the record is what older versions wrote.
    m.texts.clear();
    let old = encoded(&m);
    // The count, 300 and 2^40 as varints (2 and 6 bytes), two zeros.
    assert_eq!(old.len() + 1 + 2 + 6 + 2, rec.len());
    assert_eq!(CommitMark::decode(&old[1..]), Some(m));
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
