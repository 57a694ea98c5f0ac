//! The WARC-to-WET path of `spinneret extract` on arbitrary bytes: the streaming WARC reader
//! (`warc::stream`), the page a response record holds (`wet::response_html`: HTTP framing,
//! transfer and content codings) and its reader text. No panic, a bounded number of records,
//! no record's kept block over the limit, no text longer than its page.
#![no_main]

use std::io::Cursor;

use libfuzzer_sys::fuzz_target;
use spinneret::content::MainText;
use spinneret::store::archive::warc::stream::{StreamRecord, WarcStream};
use spinneret::store::archive::wet::response_html;

/// Bytes kept of a record's block: small, so that cut responses are exercised too.
const KEEP: usize = 4096;

fuzz_target!(|data: &[u8]| {
    let mut stream = WarcStream::new(Box::new(Cursor::new(data.to_vec())));
    let mut rec = StreamRecord::default();
    let (mut html, mut text, mut main) = (Vec::new(), Vec::new(), MainText::new());
    // Every record takes at least a version line and a blank line of the input.
    for _ in 0..=data.len() / 12 {
        match stream.next_record(KEEP, &mut rec) {
            Ok(true) => {}
            Ok(false) | Err(_) => return,
        }
        assert!(rec.block.len() <= KEEP);
        assert!(rec.block.len() as u64 <= rec.block_len);
        if response_html(&rec, &mut html).is_some() {
            main.extract(&html, html.len());
            text.clear();
            main.reader_text(&mut text);
            assert!(text.len() <= html.len());
        }
    }
    panic!("more records than the input can hold");
});
