//! The URL-seen set (`is_url_visited`, ARCHITECTURE §7): has this normalized URL been admitted before?
//!
//! A URL becomes a 64-bit [`url_key`]: 24 high bits from a hash of host and port, 40 low bits
//! from a hash of path+query seeded with the host's (XXH3: stable, specified, cheap on short
//! strings). Keys of one host share their top bits, so one site's links land in the same few
//! leaves of [`UrlSeen`] (locality now, sequential runs for a disk-spilling version later).
//! Normalization is [`crate::crawl::urlnorm`]'s job and scope is [`crate::crawl::url_filter`]'s; this module
//! only remembers keys. [`UrlSeen`]'s surface is kept minimal on purpose: a later version that
//! spills leaves to disk must fit behind it.

use std::collections::BTreeMap;

use url::{Position, Url};
use xxhash_rust::xxh3::xxh3_64_with_seed;

/// Most keys in one leaf; a full leaf splits in half. 512 keys = 4 KiB, one page: inserting
/// moves ≤ 4 KiB, a lookup is one B-tree descent plus a binary search of ≤ 9 steps.
pub const LEAF_CAPACITY: usize = 512;
/// Leaves grow by this many keys at a time (exact reservations), so a leaf's spare capacity
/// stays below `LEAF_GROW` keys instead of up to half the leaf with `Vec`'s doubling.
const LEAF_GROW: usize = 32;
/// How full [`UrlSeen::from_sorted`] packs leaves: room for some growth before the first split.
const LOAD_FILL: usize = LEAF_CAPACITY * 7 / 8;
/// Half-width, in keys, of the window searched around an interpolated guess: 16 keys = two
/// cache lines each side, about 1.5 standard deviations of the guess's error in a 512-key leaf
/// (measured: 4 and 8 were slower on a 1 M-key set; misses fall back to a binary search).
const INTERPOLATION_WINDOW: usize = 16;
/// An over-estimate of `BTreeMap`'s node bytes per entry (std does not expose them): a node
/// holds up to 11 (key, `Vec`) pairs plus edges and a header, and is at least about half full.
const MAP_BYTES_PER_LEAF: usize = 2 * (size_of::<u64>() + size_of::<Leaf>()) + 16;

/// The 64-bit key of a normalized URL: H = XXH3-64 of the host seeded with the port gives
/// the high 24 bits; XXH3-64 of `path["?"query]` seeded with H gives the low 40. Seeding the
/// resource hash with the host's is what keeps two hosts whose 24 bits collide (certain among
/// a few thousand hosts) from sharing every key of a common path (`/`, `/about`): their keys
/// then share a prefix, nothing more. The port is always explicit, so `http://h/` and
/// `http://h:80/` share a key. The scheme is not hashed: `http://h:443/x` and `https://h/x`
/// share a key (a near-nonexistent case, accepted to keep the key per host:port).
/// Checkpoints store these keys: changing the definition needs a new checkpoint format
/// version (`store::state::compaction`).
pub fn url_key(url: &Url) -> u64 {
    let port = url.port_or_known_default().unwrap_or(0);
    // Path and query are one slice of the serialization, with the `?` when there is a query.
    let resource = &url[Position::BeforePath..Position::AfterQuery];
    key_of(
        host_hash(url.host_str().unwrap_or(""), port),
        resource.as_bytes(),
    )
}

/// The low bits of a key, those of its resource.
pub(crate) const RESOURCE_MASK: u64 = (1 << 40) - 1;

/// H of [`url_key`]: what every key of one host:port is made with.
pub(crate) fn host_hash(host: &str, port: u16) -> u64 {
    xxh3_64_with_seed(host.as_bytes(), u64::from(port))
}

/// The key of `resource` (path and query) on the host whose [`host_hash`] is `host`.
pub(crate) fn key_of(host: u64, resource: &[u8]) -> u64 {
    (host & !RESOURCE_MASK) | (xxh3_64_with_seed(resource, host) & RESOURCE_MASK)
}

/// A set of URL keys: a B-tree of sorted leaves. The map's key is each leaf's lower bound (the
/// first leaf's is 0), so every key has exactly one leaf: the one with the greatest bound ≤ it.
/// About 8–10 bytes per key for random insertions (leaves are ≈ 70 % full), versus 20+ for
/// `BTreeSet<u64>`.
#[derive(Debug)]
pub struct UrlSeen {
    leaves: BTreeMap<u64, Leaf>,
    len: usize,
    /// [`LEAF_CAPACITY`], except in tests, which use tiny leaves to exercise splits.
    leaf_capacity: usize,
}

/// One sorted, non-empty run of keys. Its smallest and largest key are kept beside the `Vec`
/// header, in the map node the descent has already loaded, so interpolating a position costs no
/// extra cache miss: a lookup touches the leaf's memory only around the guess.
#[derive(Debug)]
struct Leaf {
    min: u64,
    max: u64,
    keys: Vec<u64>,
}

impl Leaf {
    /// Invariant: `keys` is non-empty and sorted.
    fn new(keys: Vec<u64>) -> Leaf {
        Leaf {
            min: keys[0],
            max: keys[keys.len() - 1],
            keys,
        }
    }

    /// `keys.binary_search(&key)`, but starting from an interpolated guess: keys are hash bits,
    /// so nearly uniform within a leaf, and the guess lands within a cache line or two of the
    /// answer. A plain binary search touched ~6 cache lines (and a TLB entry) of a 4 KiB leaf,
    /// and that, not the B-tree descent, dominated lookups on sets larger than the CPU cache.
    fn search(&self, key: u64) -> Result<usize, usize> {
        let keys = &self.keys[..];
        let n = keys.len();
        if key <= self.min {
            return if key == self.min { Ok(0) } else { Err(0) };
        }
        if key >= self.max {
            return if key == self.max { Ok(n - 1) } else { Err(n) };
        }
        // min < key < max, so the span is non-zero and the guess lies in 0..n-1.
        let span = u128::from(self.max - self.min);
        let guess = (u128::from(key - self.min) * (n - 1) as u128 / span) as usize;
        let lo = guess.saturating_sub(INTERPOLATION_WINDOW);
        let hi = (guess + INTERPOLATION_WINDOW).min(n - 1);
        // Search the window when it brackets the key, else the side the key lies on.
        let (from, part) = if keys[lo] <= key && key <= keys[hi] {
            (lo, &keys[lo..=hi])
        } else if key < keys[lo] {
            (0, &keys[..lo])
        } else {
            (hi + 1, &keys[hi + 1..])
        };
        part.binary_search(&key)
            .map(|i| i + from)
            .map_err(|i| i + from)
    }

    /// Inserts at `pos` (from [`Self::search`]) into a leaf of fewer than `cap` keys, growing it
    /// by at most [`LEAF_GROW`] exact slots so spare capacity stays bounded.
    fn insert_at(&mut self, pos: usize, key: u64, cap: usize) {
        if self.keys.len() == self.keys.capacity() {
            self.keys
                .reserve_exact(LEAF_GROW.min(cap - self.keys.len()).max(1));
        }
        self.keys.insert(pos, key);
        self.min = self.min.min(key);
        self.max = self.max.max(key);
    }

    /// Moves the upper half out into a new leaf; both halves keep exact capacities.
    fn split(&mut self) -> Leaf {
        let half = self.keys.len() / 2;
        let right = Leaf::new(self.keys.split_off(half));
        self.keys.shrink_to_fit();
        self.max = self.keys[half - 1];
        right
    }
}

impl Default for UrlSeen {
    fn default() -> Self {
        Self::new()
    }
}

impl UrlSeen {
    pub fn new() -> Self {
        Self::with_leaf_capacity(LEAF_CAPACITY)
    }

    fn with_leaf_capacity(leaf_capacity: usize) -> Self {
        debug_assert!(
            leaf_capacity >= 2,
            "a leaf must split into two non-empty halves"
        );
        UrlSeen {
            leaves: BTreeMap::new(),
            len: 0,
            leaf_capacity,
        }
    }

    /// Adds `key`; true if it was not there before.
    pub fn insert(&mut self, key: u64) -> bool {
        let cap = self.leaf_capacity;
        let Some((_, leaf)) = self.leaves.range_mut(..=key).next_back() else {
            // Empty set (the first leaf's bound is 0, so any key finds it otherwise).
            let mut keys = Vec::with_capacity(LEAF_GROW.min(cap));
            keys.push(key);
            self.leaves.insert(0, Leaf::new(keys));
            self.len = 1;
            return true;
        };
        let pos = match leaf.search(key) {
            Ok(_) => return false,
            Err(pos) => pos,
        };
        self.len += 1;
        if leaf.keys.len() < cap {
            leaf.insert_at(pos, key, cap);
            return true;
        }
        let half = leaf.keys.len() / 2;
        let mut right = leaf.split();
        if pos <= half && key < right.min {
            leaf.insert_at(pos, key, cap);
        } else {
            right.insert_at(pos - half, key, cap);
        }
        self.leaves.insert(right.min, right);
        true
    }

    pub fn contains(&self, key: u64) -> bool {
        self.leaves
            .range(..=key)
            .next_back()
            .is_some_and(|(_, leaf)| leaf.search(key).is_ok())
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Heap bytes held: every leaf's allocated capacity, plus an over-estimate of the map's nodes.
    pub fn bytes_used(&self) -> usize {
        let keys: usize = self
            .leaves
            .values()
            .map(|l| l.keys.capacity() * size_of::<u64>())
            .sum();
        keys + self.leaves.len() * MAP_BYTES_PER_LEAF
    }

    /// All keys in increasing order (for checkpoints).
    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.leaves
            .values()
            .flat_map(|leaf| leaf.keys.iter().copied())
    }

    /// Rebuilds a set from keys in increasing order, packing leaves densely. Keys out of order or
    /// repeated (a damaged checkpoint) are still added, by ordinary insertion, never a panic.
    pub fn from_sorted(keys: impl IntoIterator<Item = u64>) -> Self {
        let mut set = Self::new();
        let mut stragglers = Vec::new();
        let mut run: Vec<u64> = Vec::with_capacity(LOAD_FILL);
        let mut prev: Option<u64> = None;
        for key in keys {
            if prev.is_some_and(|p| key <= p) {
                stragglers.push(key);
                continue;
            }
            prev = Some(key);
            run.push(key);
            if run.len() == LOAD_FILL {
                set.push_leaf(std::mem::replace(&mut run, Vec::with_capacity(LOAD_FILL)));
            }
        }
        if !run.is_empty() {
            run.shrink_to_fit();
            set.push_leaf(run);
        }
        for key in stragglers {
            set.insert(key);
        }
        set
    }

    /// Adds keys given in increasing order (a checkpoint's, in chunks): while they lie above
    /// every key in the set they are packed into leaves as [`Self::from_sorted`] packs them;
    /// any other key is inserted as usual.
    pub fn extend_sorted(&mut self, keys: &[u64]) {
        let fill = LOAD_FILL.min(self.leaf_capacity);
        for &key in keys {
            match self.leaves.last_entry() {
                Some(mut last) if key > last.get().max && last.get().keys.len() < fill => {
                    let leaf = last.get_mut();
                    // One reallocation to the packed size (a no-op for a leaf begun here).
                    leaf.keys.reserve_exact(fill - leaf.keys.len());
                    leaf.keys.push(key);
                    leaf.max = key;
                    self.len += 1;
                }
                Some(last) if key <= last.get().max => {
                    self.insert(key);
                }
                _ => {
                    let mut run = Vec::with_capacity(fill);
                    run.push(key);
                    self.push_leaf(run);
                }
            }
        }
    }

    /// Appends a non-empty sorted run whose keys are all above every key in the set.
    fn push_leaf(&mut self, keys: Vec<u64>) {
        let leaf = Leaf::new(keys);
        let bound = if self.leaves.is_empty() { 0 } else { leaf.min };
        self.len += leaf.keys.len();
        self.leaves.insert(bound, leaf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashSet;

    fn key(s: &str) -> u64 {
        url_key(&Url::parse(s).unwrap())
    }

    /// xorshift64*: deterministic keys without a dependency.
    fn rng(mut state: u64) -> impl FnMut() -> u64 {
        move || {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            state.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
    }

    /// Structural invariants: leaves non-empty, sorted, within capacity, within their bounds.
    fn check_invariants(set: &UrlSeen) {
        let bounds: Vec<u64> = set.leaves.keys().copied().collect();
        if let Some(&first) = bounds.first() {
            assert_eq!(first, 0);
        }
        let mut total = 0;
        for (i, (bound, leaf)) in set.leaves.iter().enumerate() {
            let keys = &leaf.keys;
            assert!(!keys.is_empty() && keys.len() <= set.leaf_capacity);
            assert!(keys.windows(2).all(|w| w[0] < w[1]));
            assert_eq!((leaf.min, leaf.max), (keys[0], keys[keys.len() - 1]));
            assert!(keys[0] >= *bound);
            if let Some(&next) = bounds.get(i + 1) {
                assert!(leaf.max < next);
            }
            total += keys.len();
        }
        assert_eq!(total, set.len());
    }

    #[test]
    fn url_key_layout() {
        let a = key("http://example.com/a");
        let b = key("http://example.com/b?x=1");
        let c = key("http://other.example/a");
        assert_eq!(a >> 40, b >> 40, "same host, same prefix");
        assert_ne!(a >> 40, c >> 40);
        assert_ne!(a, b);
        assert_eq!(a, key("http://example.com:80/a"));
        assert_eq!(key("https://h/x"), key("https://h:443/x"));
        assert_ne!(key("http://h/x") >> 40, key("http://h:8080/x") >> 40);
        assert_ne!(key("http://h/x"), key("http://h/x?"));
        assert_ne!(key("http://h/x?a"), key("http://h/x?b"));
        // The definition, spelled out: the key is stored in checkpoints, so it must not drift.
        let h = xxh3_64_with_seed(b"example.com", 80);
        let r = xxh3_64_with_seed(b"/a", h);
        assert_eq!(a, (h & !((1 << 40) - 1)) | (r & ((1 << 40) - 1)));
        // Python's xxhash: h = xxh3_64(b"example.com", seed=80), then xxh3_64(b"/a", seed=h).
        assert_eq!(a, 0xb4be_19ec_3fdf_4527);
        assert_eq!(key("http://example.com/x?"), {
            let r = xxh3_64_with_seed(b"/x?", h);
            (h & !((1 << 40) - 1)) | (r & ((1 << 40) - 1))
        });
    }

    /// Two hosts whose 24 key bits collide (a pair is found among a few thousand names) still
    /// have different keys for the same paths: with the resource hashed alone, every common
    /// path of the second host was taken for already seen and never fetched (the bench lost
    /// a host's pages once in ~50 runs).
    #[test]
    fn hosts_sharing_key_bits_share_no_keys() {
        let mut by_prefix = std::collections::HashMap::new();
        let (a, b) = (0..1_000_000)
            .find_map(|i| {
                let host = format!("h{i:05}.test");
                let prefix = host_hash(&host, 80) >> 40;
                by_prefix
                    .insert(prefix, host.clone())
                    .map(|other| (other, host))
            })
            .expect("24-bit collisions among a million names");
        for path in ["/", "/robots.txt", "/p1.html", "/list.html?page=0"] {
            let (ka, kb) = (
                key(&format!("http://{a}{path}")),
                key(&format!("http://{b}{path}")),
            );
            assert_eq!(ka >> 40, kb >> 40, "{a} and {b} share the prefix");
            assert_ne!(ka, kb, "{a} and {b} share the key of {path}");
        }
    }

    #[test]
    fn empty_set() {
        let set = UrlSeen::new();
        assert!(set.is_empty() && !set.contains(0) && !set.contains(u64::MAX));
        assert_eq!(set.iter().count(), 0);
        assert_eq!(set.bytes_used(), 0);
        assert!(UrlSeen::from_sorted([]).is_empty());
    }

    #[test]
    fn extremes_and_duplicates() {
        let mut set = UrlSeen::with_leaf_capacity(4);
        for k in [u64::MAX, 0, 5, u64::MAX, 0, 1, 2, 3, 4] {
            set.insert(k);
        }
        assert_eq!(set.iter().collect::<Vec<_>>(), [0, 1, 2, 3, 4, 5, u64::MAX]);
        check_invariants(&set);
    }

    #[test]
    fn from_sorted_tolerates_disorder() {
        let set = UrlSeen::from_sorted([5, 3, 9, 9, 1, 10]);
        assert_eq!(set.iter().collect::<Vec<_>>(), [1, 3, 5, 9, 10]);
        assert_eq!(set.len(), 5);
        check_invariants(&set);
    }

    #[test]
    fn memory_per_key_for_a_million_random_keys() {
        let mut next = rng(0x5eed);
        let mut set = UrlSeen::new();
        for _ in 0..1_000_000 {
            set.insert(next());
        }
        assert_eq!(set.len(), 1_000_000);
        let per_key = set.bytes_used() as f64 / set.len() as f64;
        assert!(per_key <= 16.0, "{per_key} bytes per key");
        // A reload packs tighter still.
        let reloaded = UrlSeen::from_sorted(set.iter());
        assert_eq!(reloaded.len(), set.len());
        assert!(reloaded.bytes_used() as f64 / reloaded.len() as f64 <= 10.0);
        assert!(set.iter().eq(reloaded.iter()));
    }

    #[test]
    fn a_checkpoint_restored_in_chunks_packs_as_tight_as_from_sorted_and_takes_later_keys() {
        let mut next = rng(0xc4ec);
        let mut keys: Vec<u64> = (0..300_000).map(|_| next()).collect();
        keys.sort_unstable();
        keys.dedup();
        let mut set = UrlSeen::new();
        for chunk in keys.chunks(4096) {
            set.extend_sorted(chunk);
        }
        assert_eq!(set.len(), keys.len());
        assert!(set.iter().eq(keys.iter().copied()));
        assert!(set.bytes_used() as f64 / set.len() as f64 <= 10.0);
        check_invariants(&set);
        // Then keys out of order (a journal's, after the checkpoint) and repeats.
        let later = [keys[7] + 1, 3, keys[0], u64::MAX];
        set.extend_sorted(&later);
        for k in later {
            assert!(set.contains(k));
        }
        assert_eq!(set.len(), keys.len() + 3, "keys[0] was there");
        check_invariants(&set);
    }

    #[test]
    fn memory_per_key_for_one_host_in_sequence() {
        // One host's URLs arriving in increasing key order: the worst case for half-empty leaves.
        let mut set = UrlSeen::new();
        for k in 0..200_000u64 {
            set.insert((7 << 40) | (k * 3));
        }
        assert!(
            set.bytes_used() / set.len() <= 16,
            "{}",
            set.bytes_used() / set.len()
        );
    }

    /// Keys mostly inside a few host prefixes, so small leaves split many times in one prefix.
    fn clustered_keys(max_len: usize) -> impl Strategy<Value = Vec<u64>> {
        prop::collection::vec(
            (0u64..4, 0u64..(1 << 40), 0u8..10).prop_map(|(host, low, pick)| match pick {
                0 => low.wrapping_mul(0x9e37_79b9_7f4a_7c15), // anywhere
                1 => low % 64,                                // dense, duplicate-heavy
                _ => (host << 40) | (low % 5000),
            }),
            0..max_len,
        )
    }

    fn check_against_reference(set: &mut UrlSeen, keys: &[u64]) {
        let mut reference = HashSet::new();
        for &k in keys {
            assert_eq!(set.insert(k), reference.insert(k), "insert {k:#x}");
            assert!(set.contains(k));
        }
        assert_eq!(set.len(), reference.len());
        for &k in keys {
            assert!(set.contains(k));
            assert!(set.contains(k ^ 1) == reference.contains(&(k ^ 1)));
            assert!(set.contains(k.wrapping_add(7)) == reference.contains(&k.wrapping_add(7)));
        }
        let mut sorted: Vec<u64> = reference.into_iter().collect();
        sorted.sort_unstable();
        assert!(set.iter().eq(sorted.iter().copied()));
        check_invariants(set);
        let reloaded = UrlSeen::from_sorted(set.iter());
        assert!(reloaded.iter().eq(sorted.iter().copied()));
        assert_eq!(reloaded.len(), sorted.len());
        check_invariants(&reloaded);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn leaf_search_matches_binary_search(
            mut keys in prop::collection::vec(
                prop_oneof![any::<u64>(), 0u64..1000, (0u64..50).prop_map(|k| u64::MAX - k)],
                1..600,
            ),
            probes in prop::collection::vec(any::<u64>(), 0..50),
        ) {
            keys.sort_unstable();
            keys.dedup();
            let leaf = Leaf::new(keys.clone());
            let near = keys.iter().flat_map(|&k| [k, k.wrapping_sub(1), k.wrapping_add(1)]);
            for probe in probes.into_iter().chain(near).chain([0, u64::MAX]) {
                prop_assert_eq!(leaf.search(probe), keys.binary_search(&probe), "{:#x}", probe);
            }
        }

        #[test]
        fn small_leaves_match_hashset(keys in clustered_keys(400)) {
            check_against_reference(&mut UrlSeen::with_leaf_capacity(4), &keys);
        }

        #[test]
        fn odd_leaves_match_hashset(keys in clustered_keys(400)) {
            check_against_reference(&mut UrlSeen::with_leaf_capacity(7), &keys);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn real_leaves_match_hashset(keys in clustered_keys(4000)) {
            check_against_reference(&mut UrlSeen::new(), &keys);
        }

        #[test]
        fn urls_match_hashset_of_normalized_strings(
            links in prop::collection::vec(
                (0usize..3, 0usize..2, 0usize..4, 0usize..6, 0usize..4, 0usize..3),
                0..300,
            )
        ) {
            let hosts = ["a.test", "B.test", "c.example"];
            let ports = ["", ":8080"];
            let dirs = ["/", "/x/", "/x/../", "/y/./"];
            let files = ["", "index.html", "a", "A", "a%20b", "caf\u{e9}"];
            let queries = ["", "?", "?q=1", "?q=2"];
            let frags = ["", "#top", "#x"];
            let base = Url::parse("http://base.test/").unwrap();
            let mut set = UrlSeen::with_leaf_capacity(8);
            let mut reference: HashSet<String> = HashSet::new();
            for (h, p, d, f, q, fr) in links {
                let href = format!(
                    "http://{}{}{}{}{}{}",
                    hosts[h], ports[p], dirs[d], files[f], queries[q], frags[fr]
                );
                let url = crate::crawl::urlnorm::normalize(&base, href.as_bytes()).unwrap();
                let new = reference.insert(url.to_string());
                prop_assert_eq!(set.insert(url_key(&url)), new, "{}", href);
            }
            prop_assert_eq!(set.len(), reference.len());
            check_invariants(&set);
        }
    }
}
