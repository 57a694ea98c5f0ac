//! `links::scan` on arbitrary bytes: no panic, the spec's bounds hold, and a reused `Links`
//! gives the same answer as a fresh one.
#![no_main]

use std::cell::RefCell;

use libfuzzer_sys::fuzz_target;
use spinneret::links::{scan, Links, MAX_LINKS, MAX_VALUE_BYTES};

thread_local! {
    /// Kept across inputs, as a crawler keeps one: `scan` must clear what the last page left.
    static REUSED: RefCell<Links> = RefCell::new(Links::new());
}

fuzz_target!(|html: &[u8]| {
    let mut fresh = Links::new();
    scan(html, &mut fresh);

    assert!(fresh.len() <= MAX_LINKS);
    let mut total = fresh.base().map_or(0, <[u8]>::len);
    for (_, value) in fresh.iter() {
        assert!(!value.is_empty() && value.len() <= MAX_VALUE_BYTES);
        total += value.len();
    }
    assert!(total <= html.len(), "output larger than input");

    REUSED.with(|r| {
        let mut reused = r.borrow_mut();
        scan(html, &mut reused);
        assert_eq!(reused.base(), fresh.base());
        assert_eq!(reused.dropped(), fresh.dropped());
        assert!(reused.iter().eq(fresh.iter()));
    });
});
