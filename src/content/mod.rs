//! What a page says, apart from its template: a protocol core (sans-IO: bytes in, text and
//! sketches out; no sockets, no clock, no files) for near-duplicate detection.
//!
//! The pipeline, per HTML page, in the order the crawl layer calls it:
//!
//! 1. [`main_text`]: the page's main content — the text a reader would call the page, without
//!    navigation, header, footer and sidebars — from the HTML bytes, in one byte-level pass
//!    bounded by a byte limit (the crawl's `--max-scan-bytes`). Blocks are classified from a
//!    few shallow features (word count, link density, tag density: boilerpipe, Finn's body
//!    text extraction), optionally helped by [`template_memory`], a bounded per-host memory of
//!    blocks repeated across a site's pages.
//! 2. [`minhash`]: a min-hash sketch (one-permutation hashing, 128 bins of 4 bits) of the
//!    main text's word 4-shingles, whose agreeing bins estimate two texts' resemblance
//!    (IIR §19.6).
//! 3. [`near_dup`]: the banded index (locality-sensitive hashing: 16 bands of 8 bins) that
//!    finds earlier sketches at a resemblance threshold, in a RAM budget, spilling sorted
//!    runs to a [`near_dup::NearDupSpill`] store past it.
//!
//! [`near_dups`] strings the three together for a partition's pages.
//!
//! A reader's content (the `extract` command, `--text`, `--markdown`) comes from the same
//! pass: `regions` records the page's containers (`div`, `nav`, `main`…) and what their tags
//! and class names say, and `reader` chooses the content from them.
//!
//! Where the neighbours' jobs live: fetching and cutting the body at `--max-scan-bytes` is the
//! fetcher's; deciding which pages to fingerprint, the page ids and what to record (crawl.log,
//! CDXJ) is the crawl layer's; the files behind [`near_dup::NearDupSpill`] are the store's.
//! This module does not decode charsets (bytes ≥ 0x80 are word bytes whatever the encoding)
//! and does not build a DOM.

mod blocks;
pub mod main_text;
pub mod markdown;
mod markup;
pub mod minhash;
pub mod near_dup;
pub mod near_dups;
mod reader;
mod regions;
mod swar;
pub mod template_memory;

pub use main_text::MainText;
pub use markdown::markdown;
pub use minhash::{sketch, Shingled, Sketch};
pub use near_dup::{Match, MemoryRuns, NearDupIndex, NearDupSpill};
pub use near_dups::{NearDups, PagePrint};
pub use template_memory::TemplateMemory;

/// Bytes that make up words, for counting words in blocks and for the sketch's tokens: ASCII
/// letters and digits, and every byte ≥ 0x80 (so a UTF-8 word in any script stays whole).
static WORD_BYTE: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 256 {
        let b = i as u8;
        t[i] = b.is_ascii_alphanumeric() || b >= 0x80;
        i += 1;
    }
    t
};

/// Whether `b` is part of a word (see [`WORD_BYTE`]).
#[inline]
pub(crate) fn is_word_byte(b: u8) -> bool {
    WORD_BYTE[b as usize]
}
