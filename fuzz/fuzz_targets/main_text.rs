//! Main-text extraction, its min-hash sketch and its Markdown on arbitrary bytes: no panic, both texts within the
//! bytes read, only long blocks kept, and a reused `MainText` (with or without a template
//! memory) gives the same page text as a fresh one. Input layout: the first byte picks the
//! limit (`byte × 64` bytes, 255 for none), the rest is the page.
#![no_main]

use std::cell::RefCell;

use libfuzzer_sys::fuzz_target;
use spinneret::content::main_text::BlockKind;
use spinneret::content::{markdown, sketch, MainText, Sketch, TemplateMemory};

thread_local! {
    /// Kept across inputs, as a crawler keeps them: each page must forget the last one.
    static REUSED: RefCell<(MainText, TemplateMemory)> =
        RefCell::new((MainText::new(), TemplateMemory::new(4)));
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, html)) = data.split_first() else {
        return;
    };
    let limit = if first == 255 {
        usize::MAX
    } else {
        usize::from(first) * 64
    };
    let read = html.len().min(limit);

    let mut fresh = MainText::new();
    let text = fresh.extract(html, limit).to_vec();
    assert!(
        fresh.page_text().len() <= read,
        "page text longer than the bytes read"
    );
    assert!(text.len() <= fresh.page_text().len());
    assert!(fresh
        .blocks()
        .all(|b| b.words > 0 && b.link_words <= b.words && (!b.kept || b.kind == BlockKind::Long)));
    let s = sketch(&text);
    assert!(s.shingles as usize <= text.len());
    assert!(s.shingles > 0 || s.sketch == Sketch([0; 64]), "a sketch without shingles");
    assert_eq!(s.sketch.equal_bins(&s.sketch), 128);
    // The reader's text and its Markdown: every block's HTML within the bytes read.
    let mut reader = Vec::new();
    fresh.reader_text(&mut reader);
    assert!(reader.len() <= read + fresh.blocks().count());
    for b in fresh.reader_blocks(html) {
        assert!(b.html.len() <= read);
    }
    let mut md = Vec::new();
    markdown(&fresh, html, &mut md);

    REUSED.with(|r| {
        let (reused, memory) = &mut *r.borrow_mut();
        let learned = reused
            .extract_with_memory(html, limit, memory, b"fuzz.example")
            .to_vec();
        assert!(learned.len() <= reused.page_text().len());
        assert_eq!(reused.page_text(), fresh.page_text());
        sketch(&learned);
        assert_eq!(reused.extract(html, limit), &text[..]);
    });
});
