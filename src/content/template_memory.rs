//! Per-site repeated blocks: a block of text that an earlier share of a host's pages also had
//! is that host's template (a footer's legal paragraph, an "about us" box, a newsletter
//! pitch), however many words it has and however few links. The second, optional stage of
//! [`super::main_text`]: the shallow features miss long template text; this catches it once a
//! host has shown it a few times.
//!
//! # Rule
//! A block is template when its text hash was counted on at least [`TEMPLATE_MIN_PAGES`]
//! earlier pages of the host, and on at least one in [`TEMPLATE_SHARE`] of them. The share
//! keeps an article that a host serves under several URLs (tracking parameters, print views)
//! from becoming its template once the host has many pages; the minimum keeps a host's first
//! pages from calling everything template. A host's first few pages keep their template
//! text: the memory learns from what it is shown, in crawl order.
//!
//! # Cost (bounded)
//! Per host, [`SLOTS_PER_HOST`] slots of a 32-bit tag and a 16-bit count: 3 KiB. At most
//! `max_hosts` hosts (the constructor's argument); past it the least recently used host (by
//! the clock algorithm) is forgotten, and learns again from scratch if it comes back. A host
//! whose table fills forgets its rarest blocks (article text, seen once), keeping the
//! frequent ones. So 4,096 hosts cost about 13 MiB; per page, one hash per block and a sort
//! of the page's block hashes (a few hundred).

use std::collections::HashMap;

use xxhash_rust::xxh3::xxh3_64;

/// Block slots per host: a site's template has tens to a couple of hundred blocks; the rest
/// hold recent article blocks until they are evicted.
pub const SLOTS_PER_HOST: usize = 512;
/// Fewest earlier pages of the host a block must have been on to be template.
pub const TEMPLATE_MIN_PAGES: u16 = 4;
/// A template block was on at least one in this many of the host's earlier pages.
pub const TEMPLATE_SHARE: u32 = 8;
/// Fill at which a host's table evicts: open addressing stays fast below three quarters.
const MAX_FILL: usize = SLOTS_PER_HOST * 3 / 4;
/// Fill eviction brings a table back to, so that evictions are rare.
const AFTER_EVICTION: usize = SLOTS_PER_HOST / 2;

/// One host's blocks: an open-addressing table of block tags and page counts.
#[derive(Clone, Debug)]
struct HostBlocks {
    host: u64,
    /// Set on use, cleared by the clock hand: whether the host was used since the hand passed.
    referenced: bool,
    /// Pages observed (counts are halved with it when it would overflow).
    pages: u16,
    len: usize,
    /// Block tags (the hash's high 32 bits, never 0); 0 marks an empty slot.
    tags: Box<[u32]>,
    counts: Box<[u16]>,
}

impl HostBlocks {
    fn new(host: u64) -> Self {
        HostBlocks {
            host,
            referenced: true,
            pages: 0,
            len: 0,
            tags: vec![0; SLOTS_PER_HOST].into_boxed_slice(),
            counts: vec![0; SLOTS_PER_HOST].into_boxed_slice(),
        }
    }

    /// The slot holding `tag`, or the empty slot where it would go.
    fn find(&self, tag: u32) -> usize {
        let mut i = (tag as usize).wrapping_mul(0x9e37_79b9) % SLOTS_PER_HOST;
        // Bound: `increment` evicts before the fill passes MAX_FILL, so the table always has
        // an empty slot to end the probe.
        while self.tags[i] != 0 && self.tags[i] != tag {
            i = (i + 1) % SLOTS_PER_HOST;
        }
        i
    }

    fn count(&self, tag: u32) -> u16 {
        let i = self.find(tag);
        if self.tags[i] == tag {
            self.counts[i]
        } else {
            0
        }
    }

    fn increment(&mut self, tag: u32) {
        if self.len >= MAX_FILL {
            self.evict();
        }
        let i = self.find(tag);
        if self.tags[i] == 0 {
            self.tags[i] = tag;
            self.len += 1;
        }
        self.counts[i] = self.counts[i].saturating_add(1);
    }

    /// Drops the least counted blocks until at most [`AFTER_EVICTION`] remain.
    fn evict(&mut self) {
        let mut kept: Vec<(u16, u32)> = (0..SLOTS_PER_HOST)
            .filter(|&i| self.tags[i] != 0)
            .map(|i| (self.counts[i], self.tags[i]))
            .collect();
        kept.sort_unstable_by(|a, b| b.cmp(a));
        kept.truncate(AFTER_EVICTION);
        self.tags.fill(0);
        self.counts.fill(0);
        self.len = kept.len();
        for (count, tag) in kept {
            let i = self.find(tag);
            self.tags[i] = tag;
            self.counts[i] = count;
        }
    }

    fn next_page(&mut self) {
        if self.pages == u16::MAX {
            self.pages /= 2;
            for c in self.counts.iter_mut() {
                *c /= 2;
            }
        }
        self.pages += 1;
    }
}

/// Template blocks per host, learned from the pages observed, within a host cap.
#[derive(Debug)]
pub struct TemplateMemory {
    max_hosts: usize,
    index: HashMap<u64, usize>,
    hosts: Vec<HostBlocks>,
    /// The clock hand: the next host considered for eviction.
    hand: usize,
    /// Reused: this page's distinct block tags.
    page_tags: Vec<u32>,
}

impl TemplateMemory {
    /// A memory for at most `max_hosts` hosts (at least one).
    pub fn new(max_hosts: usize) -> Self {
        TemplateMemory {
            max_hosts: max_hosts.max(1),
            index: HashMap::new(),
            hosts: Vec::new(),
            hand: 0,
            page_tags: Vec::new(),
        }
    }

    /// Hosts remembered now.
    pub fn hosts(&self) -> usize {
        self.hosts.len()
    }

    /// Bytes held: the per-host tables and the host index (an estimate of the map's share).
    pub fn memory_bytes(&self) -> usize {
        let per_host = size_of::<HostBlocks>() + SLOTS_PER_HOST * (size_of::<u32>() + 2);
        self.hosts.capacity() * per_host + self.index.capacity() * 2 * size_of::<(u64, usize)>()
    }

    /// Tells, for each of a page's block hashes (`blocks`, in page order), whether it is
    /// `host`'s template (`template[i]`, cleared first), then counts the page's distinct
    /// blocks for the host.
    pub fn observe_page(&mut self, host: &[u8], blocks: &[u64], template: &mut Vec<bool>) {
        let slot = self.host_slot(xxh3_64(host));
        let table = &mut self.hosts[slot];
        table.referenced = true;
        let pages = u32::from(table.pages);
        template.clear();
        template.extend(blocks.iter().map(|&b| {
            let count = table.count(tag(b));
            count >= TEMPLATE_MIN_PAGES && u32::from(count) * TEMPLATE_SHARE >= pages
        }));
        self.page_tags.clear();
        self.page_tags.extend(blocks.iter().map(|&b| tag(b)));
        self.page_tags.sort_unstable();
        self.page_tags.dedup();
        table.next_page();
        for &t in &self.page_tags {
            table.increment(t);
        }
    }

    /// The slot of `host`'s table, made (or taken from the least recently used host) if new.
    fn host_slot(&mut self, host: u64) -> usize {
        if let Some(&slot) = self.index.get(&host) {
            return slot;
        }
        if self.hosts.len() < self.max_hosts {
            self.hosts.push(HostBlocks::new(host));
            self.index.insert(host, self.hosts.len() - 1);
            return self.hosts.len() - 1;
        }
        // Bound: one sweep clears every referenced bit, so the second finds a victim.
        loop {
            let i = self.hand;
            self.hand = (self.hand + 1) % self.hosts.len();
            let victim = &mut self.hosts[i];
            if victim.referenced {
                victim.referenced = false;
                continue;
            }
            self.index.remove(&victim.host);
            *victim = HostBlocks::new(host);
            self.index.insert(host, i);
            return i;
        }
    }
}

/// A block's tag: the high half of its hash, never 0 (0 marks an empty slot).
fn tag(hash: u64) -> u32 {
    (hash >> 32) as u32 | 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(memory: &mut TemplateMemory, host: &str, blocks: &[u64]) -> Vec<bool> {
        let mut t = Vec::new();
        memory.observe_page(host.as_bytes(), blocks, &mut t);
        t
    }

    /// Distinct hashes whose tags differ (tags keep the high 32 bits).
    fn h(i: u64) -> u64 {
        (i + 1) << 33
    }

    #[test]
    fn a_block_on_every_page_becomes_template_after_the_minimum() {
        let mut m = TemplateMemory::new(4);
        let footer = h(0);
        for p in 0..20u64 {
            let t = page(&mut m, "a.example", &[footer, h(100 + p)]);
            // The footer was counted on `p` earlier pages; the article block on none.
            assert_eq!(t, [p >= u64::from(TEMPLATE_MIN_PAGES), false], "page {p}");
        }
        // Another host has its own memory.
        assert_eq!(page(&mut m, "b.example", &[footer]), [false]);
    }

    #[test]
    fn an_article_served_a_few_times_on_a_big_host_is_not_template() {
        let mut m = TemplateMemory::new(4);
        for p in 0..200 {
            page(&mut m, "a.example", &[h(0), h(1000 + p)]);
        }
        // The same article five times: counted 4 times before the fifth, but on fewer
        // than one in TEMPLATE_SHARE of the host's pages.
        for _ in 0..5 {
            assert_eq!(page(&mut m, "a.example", &[h(0), h(7)]), [true, false]);
        }
    }

    #[test]
    fn a_block_twice_on_one_page_counts_once() {
        let mut m = TemplateMemory::new(1);
        for _ in 0..TEMPLATE_MIN_PAGES - 1 {
            page(&mut m, "a", &[h(1), h(1), h(1), h(1), h(1)]);
        }
        assert_eq!(page(&mut m, "a", &[h(1)]), [false]);
        assert_eq!(page(&mut m, "a", &[h(1)]), [true]);
    }

    #[test]
    fn full_tables_keep_the_frequent_blocks() {
        let mut m = TemplateMemory::new(1);
        // 100 template blocks and 100 new article blocks per page: the table evicts often.
        let template: Vec<u64> = (0..100).map(h).collect();
        for p in 0..50u64 {
            let mut blocks = template.clone();
            blocks.extend((0..100).map(|i| h(10_000 + p * 100 + i)));
            let t = page(&mut m, "a", &blocks);
            if p > u64::from(TEMPLATE_MIN_PAGES) + 4 {
                assert!(t[..100].iter().all(|&x| x), "page {p}: template forgotten");
                assert!(
                    t[100..].iter().all(|&x| !x),
                    "page {p}: article taken for template"
                );
            }
            assert!(m.hosts[0].len <= MAX_FILL);
        }
    }

    #[test]
    fn hosts_past_the_cap_evict_the_least_recently_used() {
        let mut m = TemplateMemory::new(3);
        for host in ["a", "b", "c"] {
            for _ in 0..=TEMPLATE_MIN_PAGES {
                page(&mut m, host, &[h(1)]);
            }
        }
        let bytes = m.memory_bytes();
        // `a` used again, then a new host `d`: the clock passes over `a` and evicts `b`.
        assert_eq!(page(&mut m, "a", &[h(1)]), [true]);
        for host in ["b", "c"] {
            m.hosts[m.index[&xxh3_64(host.as_bytes())]].referenced = false;
        }
        page(&mut m, "d", &[h(1)]);
        assert_eq!(m.hosts(), 3);
        assert!(m.memory_bytes() <= bytes, "memory grew past the cap");
        assert!(!m.index.contains_key(&xxh3_64(b"b")), "b was kept");
        assert_eq!(page(&mut m, "a", &[h(1)]), [true], "a was evicted");
        // b comes back with nothing learned.
        assert_eq!(page(&mut m, "b", &[h(1)]), [false]);
    }
}
