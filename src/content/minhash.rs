//! A 64-bit simhash (Charikar, STOC 2002) of a text's word shingles: texts that share most
//! of their shingles get fingerprints a few bits apart, which [`super::near_dup`] finds.
//!
//! # Spec (fingerprints are compared across pages and runs: changing it changes them all)
//! - **Tokens**: maximal runs of word bytes (ASCII letters and digits, every byte ≥ 0x80),
//!   ASCII letters lowercased; everything else separates tokens.
//! - **Token hash** ([`token_hash`]): the lowercased token read as little-endian 64-bit
//!   words (the last one padded with zero bytes, which no token contains), folded into
//!   `h = len` by `h = (h ⊕ w) · K; h ⊕= h >> 32`. Not a general-purpose hash: the shingle
//!   hash below mixes it fully, and a token of up to 8 bytes (most words) is one multiply,
//!   where XXH3 cost more than the rest of the simhash.
//! - **Shingles**: every run of [`SHINGLE_WORDS`] consecutive tokens; a text with fewer
//!   tokens (but at least one) is one shingle of all of them. A shingle's hash mixes its
//!   tokens' hashes `h₀, h₁, h₂`: `fmix64(h₀ ⊕ rotl(h₁, 21) ⊕ rotl(h₂, 42))`, with
//!   MurmurHash3's 64-bit finalizer.
//! - **Fingerprint**: bit `i` is set when more than half of the shingle hashes have bit `i`
//!   set (every shingle weighs 1, repeats included). No token, no shingle: the hash is 0.
//!
//! Cost (a 15 KB page's main text is ~2,000 tokens, and this runs on every page the crawl
//! scans): the text is classified 8 bytes at a time (SWAR range tests) into a bitmap of word
//! bytes per 64 bytes, so tokens are found by bit scans, not a mispredicted branch at every
//! word boundary; a token is lowercased and hashed a word at a time; and the per-bit vote is
//! done a byte of counters at a time (a table spreads 8 hash bits into 8 byte lanes of a
//! `u64`): 8 table loads and adds per shingle instead of 64 increments.

use super::swar::{lowercase, movemask, word_lanes};

/// Words per shingle: 3 keeps a shingle specific (few shared by chance between distinct
/// texts) while one changed word touches only 3 shingles.
pub const SHINGLE_WORDS: usize = 3;
/// Shingles voted into the byte lanes before they are added to the wide counters: a byte
/// lane holds 255.
const LANE_FLUSH: u32 = 255;
/// The token hash's multiplier: odd, so multiplying by it loses nothing (the golden ratio's
/// 64-bit constant, as in Fibonacci hashing).
const TOKEN_K: u64 = 0x9e37_79b9_7f4a_7c15;

/// A simhash and how many shingles it was made of (few shingles make a fragile fingerprint:
/// the caller may choose not to index those).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fingerprint {
    pub hash: u64,
    pub shingles: u32,
}

/// The simhash of `text` (see the module's spec).
pub fn simhash(text: &[u8]) -> Fingerprint {
    let mut s = Shingles::default();
    s.feed(text);
    s.finish()
}

/// The simhash of the text `parts` joined by a separator (`\n`, or any other byte that is
/// not a word byte): what [`simhash`] of the joined text gives, without joining it.
pub fn simhash_parts<'a>(parts: impl IntoIterator<Item = &'a [u8]>) -> Fingerprint {
    let mut s = Shingles::default();
    for p in parts {
        s.feed(p);
    }
    s.finish()
}

/// The shingling state across a text's parts: the last tokens' hashes and the votes.
#[derive(Default)]
struct Shingles {
    window: [u64; SHINGLE_WORDS],
    tokens: usize,
    votes: Votes,
}

impl Shingles {
    /// Adds the tokens of `text`; its ends are token boundaries.
    fn feed(&mut self, text: &[u8]) {
        // The open token's start, or `usize::MAX` between tokens.
        let mut start = usize::MAX;
        // Whether the byte before the current 64 was a word byte (1 or 0).
        let mut carry = 0u64;
        for (c, chunk) in text.chunks(64).enumerate() {
            let words = word_bits(chunk);
            // Bit i: byte i is the first of a token or the first after one.
            let mut edges = words ^ ((words << 1) | carry);
            carry = words >> 63;
            // Bound: every turn clears one bit of `edges`.
            while edges != 0 {
                let i = 64 * c + edges.trailing_zeros() as usize;
                edges &= edges - 1;
                if start == usize::MAX {
                    start = i;
                } else {
                    self.token(token_hash(text, start, i));
                    start = usize::MAX;
                }
            }
        }
        if start != usize::MAX {
            self.token(token_hash(text, start, text.len()));
        }
    }

    #[inline(always)]
    fn token(&mut self, h: u64) {
        self.window = [self.window[1], self.window[2], h];
        self.tokens += 1;
        if self.tokens >= SHINGLE_WORDS {
            self.votes.add(shingle_hash(&self.window));
        }
    }

    fn finish(mut self) -> Fingerprint {
        if (1..SHINGLE_WORDS).contains(&self.tokens) {
            let h = shingle_hash(&self.window[SHINGLE_WORDS - self.tokens..]);
            self.votes.add(h);
        }
        self.votes.finish()
    }
}

/// Bit `i` set when `chunk[i]` (at most 64 bytes) is a word byte.
#[inline(always)]
fn word_bits(chunk: &[u8]) -> u64 {
    let mut padded = [0u8; 64];
    let bytes: &[u8; 64] = match chunk.try_into() {
        Ok(full) => full,
        Err(_) => {
            // Zero bytes are not word bytes: the padding ends the last token.
            padded[..chunk.len()].copy_from_slice(chunk);
            &padded
        }
    };
    let mut bits = 0u64;
    for (j, w) in bytes.chunks_exact(8).enumerate() {
        let w = u64::from_le_bytes(w.try_into().expect("8 bytes"));
        bits |= movemask(word_lanes(w)) << (8 * j);
    }
    bits
}

/// The token `text[start..end]`'s hash (see the module's spec).
#[inline(always)]
fn token_hash(text: &[u8], start: usize, end: usize) -> u64 {
    let mut h = (end - start) as u64;
    let mut i = start;
    // Bound: every turn moves `i` 8 bytes on, and the last returns.
    loop {
        let left = end - i;
        let mut w = match text.get(i..i + 8) {
            Some(b) => u64::from_le_bytes(b.try_into().expect("8 bytes")),
            None => {
                let mut b = [0u8; 8];
                b[..text.len() - i].copy_from_slice(&text[i..]);
                u64::from_le_bytes(b)
            }
        };
        if left < 8 {
            w &= u64::MAX >> (64 - 8 * left);
        }
        h = (h ^ lowercase(w)).wrapping_mul(TOKEN_K);
        h ^= h >> 32;
        if left <= 8 {
            return h;
        }
        i += 8;
    }
}

#[inline]
fn shingle_hash(tokens: &[u64]) -> u64 {
    let mut x = 0u64;
    for (j, t) in tokens.iter().enumerate() {
        x ^= t.rotate_left(SHINGLE_ROTATION * j as u32);
    }
    fmix64(x)
}

/// Each token of a shingle is rotated by its position times this, so that order counts.
const SHINGLE_ROTATION: u32 = 21;

/// MurmurHash3's 64-bit finalizer: every input bit reaches every output bit.
#[inline]
fn fmix64(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^ (k >> 33)
}

/// `SPREAD[b]` has byte `j` equal to bit `j` of `b`.
static SPREAD: [u64; 256] = {
    let mut t = [0u64; 256];
    let mut b = 0;
    while b < 256 {
        let mut j = 0;
        while j < 8 {
            t[b] |= ((b as u64 >> j) & 1) << (8 * j);
            j += 1;
        }
        b += 1;
    }
    t
};

/// Per-bit vote counts. Shingle hashes wait in a batch of [`LANE_FLUSH`] and are voted in
/// one tight loop whose byte lanes are locals (registers): voted one at a time as they
/// were made, the lanes lived in memory and every vote waited on the last one's store.
struct Votes {
    batch: [u64; LANE_FLUSH as usize],
    in_batch: usize,
    wide: [u32; 64],
    shingles: u32,
}

impl Default for Votes {
    fn default() -> Self {
        Votes {
            batch: [0; LANE_FLUSH as usize],
            in_batch: 0,
            wide: [0; 64],
            shingles: 0,
        }
    }
}

impl Votes {
    #[inline(always)]
    fn add(&mut self, h: u64) {
        self.batch[self.in_batch] = h;
        self.in_batch += 1;
        self.shingles = self.shingles.saturating_add(1);
        if self.in_batch == self.batch.len() {
            vote(&mut self.wide, &self.batch);
            self.in_batch = 0;
        }
    }

    fn finish(mut self) -> Fingerprint {
        vote(&mut self.wide, &self.batch[..self.in_batch]);
        let mut hash = 0u64;
        for (i, &ones) in self.wide.iter().enumerate() {
            if u64::from(ones) * 2 > u64::from(self.shingles) {
                hash |= 1 << i;
            }
        }
        Fingerprint {
            hash,
            shingles: self.shingles,
        }
    }
}

/// Adds the bits of at most [`LANE_FLUSH`] hashes to the per-bit counters: a byte lane per
/// bit, 8 lanes to a `u64`, so a hash is 8 table loads and adds.
#[inline(never)]
fn vote(wide: &mut [u32; 64], hashes: &[u64]) {
    debug_assert!(hashes.len() <= LANE_FLUSH as usize);
    let mut lanes = [0u64; 8];
    for &h in hashes {
        for (g, lane) in lanes.iter_mut().enumerate() {
            *lane += SPREAD[((h >> (8 * g)) & 0xff) as usize];
        }
    }
    add_lanes(wide, lanes);
}

/// Adds the byte lanes' counts to the wide counters.
#[inline(always)]
fn add_lanes(wide: &mut [u32; 64], lanes: [u64; 8]) {
    for (g, lane) in lanes.iter().enumerate() {
        for j in 0..8 {
            wide[8 * g + j] += ((lane >> (8 * j)) & 0xff) as u32;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The spec, written the slow way: strings, vectors, one counter per bit.
    fn naive(text: &[u8]) -> Fingerprint {
        let tokens: Vec<Vec<u8>> = text
            .split(|&b| !(b.is_ascii_alphanumeric() || b >= 0x80))
            .filter(|t| !t.is_empty())
            .map(|t| t.to_ascii_lowercase())
            .collect();
        let token_hash = |t: &[u8]| {
            let mut h = t.len() as u64;
            for piece in t.chunks(8) {
                let mut w = [0u8; 8];
                w[..piece.len()].copy_from_slice(piece);
                h = (h ^ u64::from_le_bytes(w)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                h ^= h >> 32;
            }
            h
        };
        let hashes: Vec<u64> = tokens.iter().map(|t| token_hash(t)).collect();
        let shingle = |ts: &[u64]| {
            let mut x = 0u64;
            for (j, t) in ts.iter().enumerate() {
                x ^= t.rotate_left(21 * j as u32);
            }
            // MurmurHash3's fmix64, spelled out.
            x = (x ^ (x >> 33)).wrapping_mul(0xff51afd7ed558ccd);
            x = (x ^ (x >> 33)).wrapping_mul(0xc4ceb9fe1a85ec53);
            x ^ (x >> 33)
        };
        let shingles: Vec<u64> = if hashes.is_empty() {
            Vec::new()
        } else if hashes.len() < SHINGLE_WORDS {
            vec![shingle(&hashes)]
        } else {
            hashes.windows(SHINGLE_WORDS).map(shingle).collect()
        };
        let mut hash = 0u64;
        for bit in 0..64 {
            let ones = shingles.iter().filter(|&&s| s >> bit & 1 == 1).count();
            if ones * 2 > shingles.len() {
                hash |= 1 << bit;
            }
        }
        Fingerprint {
            hash,
            shingles: shingles.len() as u32,
        }
    }

    /// Texts made of a small alphabet so that words repeat, cases mix, tokens run long (past
    /// the stack buffer) and separators include non-ASCII bytes.
    fn text() -> impl Strategy<Value = Vec<u8>> {
        let piece = prop_oneof![
            4 => proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'B'), Just(b'7')], 1..6),
            1 => proptest::collection::vec(Just(b'Q'), 60..140),
            2 => Just(b" ".to_vec()),
            1 => Just(b"\xc3\xa9t\xc3\xa9".to_vec()),
            1 => Just(b", ".to_vec()),
            1 => Just(b"\n-".to_vec()),
        ];
        proptest::collection::vec(piece, 0..600).prop_map(|ps| ps.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        #[test]
        fn matches_the_naive_reference(t in text()) {
            prop_assert_eq!(simhash(&t), naive(&t));
        }
    }

    #[test]
    fn edge_cases_match_the_naive_reference() {
        let long_upper = "W".repeat(1000);
        for t in [
            "",
            " ,. ",
            "one",
            "one Two",
            "a b c",
            "A b C d",
            &long_upper,
        ] {
            assert_eq!(simhash(t.as_bytes()), naive(t.as_bytes()), "{t:?}");
        }
        assert_eq!(simhash(b"").hash, 0);
        assert_eq!(simhash(b"x y").shingles, 1);
    }

    #[test]
    fn parts_fingerprint_as_the_text_joined_by_newlines() {
        let parts: [&[u8]; 4] = [b"One two Three", b"four", b"", b"five six, seven"];
        assert_eq!(simhash_parts(parts), simhash(&parts.join(&b'\n')));
        assert_eq!(simhash_parts([&b"a b"[..], b"c"]), simhash(b"a b\nc"));
    }

    #[test]
    fn case_and_punctuation_do_not_change_the_fingerprint() {
        let a = simhash(b"The quick brown fox jumps over the lazy dog");
        let b = simhash(b"the QUICK, brown fox -- jumps over the lazy dog!");
        assert_eq!(a, b);
    }

    #[test]
    fn one_changed_word_in_a_long_text_moves_few_bits_and_another_text_many() {
        // How many bits one changed word moves depends on how close each bit's vote was in
        // the original (3 of 398 shingles change): a property of the text and the hash
        // together, so it is checked on average over 20 positions, not at one.
        let words: Vec<String> = (0..400).map(|i| format!("w{}", i * 7919 % 1000)).collect();
        let fa = simhash(words.join(" ").as_bytes()).hash;
        let mut moved = Vec::new();
        for pos in (0..400).step_by(20) {
            let mut changed = words.clone();
            changed[pos] = "different".into();
            moved.push((fa ^ simhash(changed.join(" ").as_bytes()).hash).count_ones());
        }
        let mean = f64::from(moved.iter().sum::<u32>()) / moved.len() as f64;
        assert!(mean <= 3.0, "one word of 400 moved {moved:?} bits");
        let other: Vec<String> = (0..400).map(|i| format!("v{}", i * 7919 % 1000)).collect();
        let far = (fa ^ simhash(other.join(" ").as_bytes()).hash).count_ones();
        assert!(far >= 16, "unrelated texts only {far} bits apart");
    }
}
