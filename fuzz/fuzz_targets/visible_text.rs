//! `discovery::visible_text::extract` on arbitrary bytes: no panic, the bounds hold, the text
//! is folded (no leading, trailing or double spaces), a reused `VisibleText` gives the same
//! answer as a fresh one, and each anchor's href is the value the link scanner reports for
//! the same `<a>` (when nothing makes the two differ by design: content of `noscript` or
//! `template`, which we skip and the scanner reads, or a bound reached).
#![no_main]

use std::cell::RefCell;

use libfuzzer_sys::fuzz_target;
use spinneret::discovery::visible_text::{
    extract, VisibleText, MAX_ANCHORS, MAX_ANCHOR_TEXT, MAX_HREF_BYTES, MAX_TEXT_BYTES,
};
use spinneret::links::{scan, LinkKind, Links};

thread_local! {
    /// Kept across inputs, as the crawl keeps one: `extract` must clear what the last page left.
    static REUSED: RefCell<VisibleText> = RefCell::new(VisibleText::new());
}

fn contains_ignore_case(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len())
        .any(|w| w.eq_ignore_ascii_case(needle))
}

fuzz_target!(|html: &[u8]| {
    let mut fresh = VisibleText::new();
    extract(html, &mut fresh);
    let text = fresh.text();
    assert!(text.len() <= MAX_TEXT_BYTES);
    assert!(!text.starts_with(b" ") && !text.ends_with(b" "));
    assert!(!text.windows(2).any(|w| w == b"  "));
    assert!(fresh.anchors().count() <= MAX_ANCHORS);
    for (href, anchor_text) in fresh.anchors() {
        assert!(!href.is_empty() && href.len() <= MAX_HREF_BYTES);
        assert!(anchor_text.len() <= MAX_ANCHOR_TEXT);
    }

    REUSED.with(|r| {
        let mut reused = r.borrow_mut();
        extract(html, &mut reused);
        assert_eq!(reused.text(), fresh.text());
        assert!(reused.anchors().eq(fresh.anchors()));
    });

    let mut links = Links::new();
    scan(html, &mut links);
    let comparable = !fresh.truncated()
        && fresh.anchors().count() < MAX_ANCHORS
        && links.dropped() == 0
        && !contains_ignore_case(html, b"noscript")
        && !contains_ignore_case(html, b"template");
    if comparable {
        let scanned = links
            .iter()
            .filter(|(k, _)| *k == LinkKind::A)
            .map(|(_, v)| v);
        assert!(fresh.anchors().map(|(h, _)| h).eq(scanned));
    }
});
