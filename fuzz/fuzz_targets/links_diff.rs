//! Differential: the memchr scanner and the byte-at-a-time reference agree on every input,
//! robots directives' data (links' `rel` marks, robots `<meta>` contents) included.
#![no_main]

use libfuzzer_sys::fuzz_target;
use spinneret::links::{naive, scan, Links};

fuzz_target!(|html: &[u8]| {
    let mut fast = Links::new();
    scan(html, &mut fast);
    let slow = naive::scan_all(html);

    assert_eq!(fast.base(), slow.base.as_deref(), "base");
    let fast_links: Vec<_> = fast
        .iter_rel()
        .map(|(k, v, n)| (k, v.to_vec(), n))
        .collect();
    assert_eq!(fast_links, slow.links, "links");
    assert_eq!(fast.dropped(), slow.dropped, "dropped");
    let fast_meta: Vec<_> = fast.robots_meta().map(<[u8]>::to_vec).collect();
    assert_eq!(fast_meta, slow.robots_meta, "robots meta");
});
