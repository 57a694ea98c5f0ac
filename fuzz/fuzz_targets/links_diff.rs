//! Differential: the memchr scanner and the byte-at-a-time reference agree on every input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use spinneret::links::{naive, scan, Links};

fuzz_target!(|html: &[u8]| {
    let mut fast = Links::new();
    scan(html, &mut fast);
    let (base, links, dropped) = naive::scan(html);

    assert_eq!(fast.base(), base.as_deref(), "base");
    let fast_links: Vec<_> = fast.iter().map(|(k, v)| (k, v.to_vec())).collect();
    assert_eq!(fast_links, links, "links");
    assert_eq!(fast.dropped(), dropped, "dropped");
});
