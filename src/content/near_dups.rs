//! Near-duplicates page by page: each HTML page gets its main text ([`MainText`], helped by
//! a per-host [`TemplateMemory`]), the min-hash sketch of that text's word 4-shingles, and a
//! look-up in a [`NearDupIndex`] for an earlier page whose estimated resemblance (Jaccard
//! coefficient of the shingle sets) reaches the threshold. One [`NearDups`] serves a
//! partition; who drives it decides where the work runs: the store's page worker, off the
//! event loop, by default; the crawl itself when a page's verdict decides what it follows
//! (`--skip-near-duplicate-links`).
//!
//! Per partition and not shared: a near-duplicate on another partition's host is not found
//! here (`spinneret near-duplicates` finds those afterwards, from the one crawl.log). The
//! index is not checkpointed: a resumed crawl starts with an empty one (its spill files are
//! the store's to clean), so a page's near-duplicate fetched before the stop is not found
//! after it — only a trap guard and a counter depend on it.

use std::io;

use super::minhash::{equal_bins_for, sketch, Sketch};
use super::{MainText, MemoryRuns, NearDupIndex, NearDupSpill, TemplateMemory};

/// RAM for a partition's sketch index before it spills runs (200 bytes a page in RAM:
/// about 42,000 pages; past it runs go to the spill store and RAM keeps 1/128 of them).
pub const DEFAULT_NEAR_DUP_RAM: usize = 8 << 20;
/// Hosts whose template blocks are remembered at once (3 KiB each: 12 MiB).
pub const TEMPLATE_HOSTS: usize = 4096;
/// The resemblance (estimated Jaccard coefficient of word 4-shingle sets) at which a page is
/// a near-duplicate of an earlier one, by default (IIR §19.6's example).
pub const DEFAULT_THRESHOLD: f64 = 0.9;
/// How far under the threshold an estimate may fall and still count: the estimate's
/// standard deviation is about 0.027 at 0.9, so a pair at the threshold is found 19 times
/// in 20, and pairs a few hundredths under it may be reported too.
pub const ESTIMATE_SLACK: f64 = 0.05;
/// Fewest shingles (word 4-grams) a main text needs to be sketched: a fingerprint of a
/// few words matches every other page with the same few words (a "page not found" text, a
/// short caption).
pub const MIN_SHINGLES: u32 = 8;

/// Where spilled index runs go: the store's files, given by the app.
pub type BoxedSpill = Box<dyn NearDupSpill + Send>;

/// Equal bins of 128 two sketches need for a pair at `threshold` (see [`ESTIMATE_SLACK`]).
pub fn min_equal_bins(threshold: f64) -> u32 {
    equal_bins_for((threshold - ESTIMATE_SLACK).max(0.0))
}

/// What sketching one page found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PagePrint {
    pub sketch: Sketch,
    /// An earlier page of this partition resembles it at the threshold.
    pub near_duplicate: bool,
}

/// A partition's main-text buffers, template memory and fingerprint index.
pub struct NearDups {
    text: MainText,
    memory: TemplateMemory,
    index: NearDupIndex<BoxedSpill>,
    /// Pages sketched: the next page's id in the index.
    pages: u64,
    /// [`min_equal_bins`] of the threshold.
    min_equal: u32,
    /// The spill store failed once: the index is no longer asked or grown (a page's
    /// fingerprint is still recorded), and the error waits for the crawl to take it.
    spill_failed: bool,
    error: Option<io::Error>,
}

impl NearDups {
    /// An index in `ram` bytes whose runs past it stay in memory (until the app gives a
    /// spill store with [`NearDups::set_spill`]).
    pub fn new(ram: usize) -> NearDups {
        NearDups::with_index(NearDupIndex::new(ram, Box::new(MemoryRuns::default())))
    }

    /// Near-duplicates from `threshold` on (a resemblance in 0..=1).
    pub fn with_threshold(mut self, threshold: f64) -> NearDups {
        self.min_equal = min_equal_bins(threshold);
        self
    }

    /// Sketches pages into `index` as it is (one a caller filled already, say to
    /// measure a crawl-sized index), their ids following its entries.
    pub fn with_index(index: NearDupIndex<BoxedSpill>) -> NearDups {
        NearDups {
            text: MainText::fingerprint_only(),
            memory: TemplateMemory::new(TEMPLATE_HOSTS),
            pages: index.len(),
            index,
            min_equal: min_equal_bins(DEFAULT_THRESHOLD),
            spill_failed: false,
            error: None,
        }
    }

    /// Spills the index's runs past its budget to `spill`. Before the first page only: the
    /// index starts again empty.
    pub fn set_spill(&mut self, ram: usize, spill: BoxedSpill) {
        self.index = NearDupIndex::new(ram, spill);
        self.pages = 0;
    }

    /// The main text of `html` (already cut at the crawl's scan limit) on `host`, its
    /// sketch, and whether an earlier page resembles it at the threshold; then the page is
    /// added to the index. `None` when the main text is too short to sketch.
    pub fn page(&mut self, html: &[u8], host: &[u8]) -> Option<PagePrint> {
        self.extract(html, host);
        let print = sketch(self.text.text());
        if print.shingles < MIN_SHINGLES {
            return None;
        }
        let (found, same) = if self.spill_failed {
            (None, false)
        } else {
            match self.index.earliest(&print.sketch, self.min_equal) {
                Ok(m) => m,
                Err(e) => {
                    self.failed(e);
                    (None, false)
                }
            }
        };
        // A sketch already in the index adds nothing a later query could need (it finds
        // the earlier copy alike), and a trap of identical pages would otherwise fill the
        // index with one value.
        if !same && !self.spill_failed {
            if let Err(e) = self.index.insert(&print.sketch, self.pages) {
                self.failed(e);
            }
        }
        self.pages += 1;
        Some(PagePrint {
            sketch: print.sketch,
            near_duplicate: found.is_some(),
        })
    }

    /// The main text of `html` on `host` (the template memory learning from it), without a
    /// sketch: for a page whose text is wanted but not its fingerprint. [`Self::main_text`]
    /// then has it.
    pub fn extract(&mut self, html: &[u8], host: &[u8]) {
        self.text
            .extract_with_memory(html, html.len(), &mut self.memory, host);
    }

    /// Whether the pages from now on get their reader content chosen too
    /// ([`MainText::set_reader`]: for a page whose text or Markdown is kept; the fingerprint
    /// alone does without).
    pub fn set_reader(&mut self, on: bool) {
        self.text.set_reader(on);
    }

    /// The last page's main text ([`Self::page`] or [`Self::extract`]): its blocks, reader
    /// text, title and language.
    pub fn main_text(&self) -> &MainText {
        &self.text
    }

    fn failed(&mut self, e: io::Error) {
        self.spill_failed = true;
        self.error = Some(e);
    }

    /// The spill store's error, once: a storage error stops the crawl like any other.
    pub fn take_error(&mut self) -> Option<io::Error> {
        self.error.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_threshold_decides_how_alike_a_copy_must_be() {
        // Every 50th word of 300 edited: 6 words, 24 of 297 shingles, Jaccard about 0.85.
        let article = words(3, 300);
        let edited: String = article
            .split(' ')
            .enumerate()
            .map(|(i, w)| if i % 50 == 25 { "edited" } else { w })
            .collect::<Vec<_>>()
            .join(" ");
        let mut loose = NearDups::new(1 << 20).with_threshold(0.5);
        let mut strict = NearDups::new(1 << 20).with_threshold(0.99);
        for n in [&mut loose, &mut strict] {
            assert!(
                !n.page(page(&article, "").as_bytes(), b"a.test")
                    .unwrap()
                    .near_duplicate
            );
        }
        assert!(
            loose
                .page(page(&edited, "").as_bytes(), b"b.test")
                .unwrap()
                .near_duplicate
        );
        assert!(
            !strict
                .page(page(&edited, "").as_bytes(), b"b.test")
                .unwrap()
                .near_duplicate
        );
    }

    fn page(article: &str, extra: &str) -> String {
        format!(
            "<html><body><nav><a href=/a>Home</a> <a href=/b>World</a></nav>\
             <article><p>{article}</p><p>{extra}</p></article>\
             <footer><a href=/c>Contact us</a></footer></body></html>"
        )
    }

    fn words(seed: u64, n: usize) -> String {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                format!("w{}", x % 5000)
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn a_copy_with_a_small_change_is_a_near_duplicate_and_another_article_is_not() {
        let mut n = NearDups::new(1 << 20);
        let article = words(1, 300);
        let first = n.page(page(&article, "").as_bytes(), b"a.test").unwrap();
        assert!(!first.near_duplicate);
        let copy = n.page(page(&article, "").as_bytes(), b"b.test").unwrap();
        assert!(copy.near_duplicate);
        assert_eq!(copy.sketch, first.sketch);
        let other = n
            .page(page(&words(2, 300), "").as_bytes(), b"a.test")
            .unwrap();
        assert!(!other.near_duplicate);
        // Too little text to fingerprint: no fingerprint at all.
        assert_eq!(n.page(page("Not found.", "").as_bytes(), b"a.test"), None);
        // The identical copy was not indexed twice.
        assert_eq!(n.index.len(), 2);
        assert_eq!(n.pages, 3);
    }
}
