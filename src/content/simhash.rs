//! A 64-bit simhash (Charikar, STOC 2002) of a text's word shingles: texts that share most
//! of their shingles get fingerprints a few bits apart, which [`super::near_dup`] finds.
//!
//! # Spec (fingerprints are compared across pages and runs: changing it changes them all)
//! - **Tokens**: maximal runs of word bytes (ASCII letters and digits, every byte ≥ 0x80),
//!   ASCII letters lowercased; everything else separates tokens.
//! - **Token hash**: XXH3-64 of the lowercased token.
//! - **Shingles**: every run of [`SHINGLE_WORDS`] consecutive tokens; a text with fewer
//!   tokens (but at least one) is one shingle of all of them. A shingle's hash mixes its
//!   tokens' hashes `h₀, h₁, h₂`: `fmix64(h₀ ⊕ rotl(h₁, 21) ⊕ rotl(h₂, 42))`, with
//!   MurmurHash3's 64-bit finalizer (a second XXH3 over 24 bytes cost as much as the rest of
//!   the simhash together).
//! - **Fingerprint**: bit `i` is set when more than half of the shingle hashes have bit `i`
//!   set (every shingle weighs 1, repeats included). No token, no shingle: the hash is 0.
//!
//! Cost: one short hash per token and per shingle, and a per-bit vote done a byte of
//! counters at a time (a table spreads 8 hash bits into 8 byte lanes of a `u64`), so the
//! vote is 8 table loads and adds per shingle instead of 64 increments.

use xxhash_rust::xxh3::{xxh3_64, Xxh3Default};

use super::is_word_byte;

/// Words per shingle: 3 keeps a shingle specific (few shared by chance between distinct
/// texts) while one changed word touches only 3 shingles.
pub const SHINGLE_WORDS: usize = 3;
/// Tokens up to this long are lowercased on the stack; longer ones are hashed in pieces.
const STACK_TOKEN: usize = 64;
/// Shingles voted into the byte lanes before they are added to the wide counters: a byte
/// lane holds 255.
const LANE_FLUSH: u32 = 255;

/// A simhash and how many shingles it was made of (few shingles make a fragile fingerprint:
/// the caller may choose not to index those).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fingerprint {
    pub hash: u64,
    pub shingles: u32,
}

/// The simhash of `text` (see the module's spec).
pub fn simhash(text: &[u8]) -> Fingerprint {
    let mut votes = Votes::default();
    let mut window = [0u64; SHINGLE_WORDS];
    let mut tokens = 0usize;
    let mut i = 0;
    // Bound: each turn consumes one token and the separators before it.
    while i < text.len() {
        while i < text.len() && !is_word_byte(text[i]) {
            i += 1;
        }
        let start = i;
        let mut upper = false;
        while i < text.len() && is_word_byte(text[i]) {
            upper |= text[i].is_ascii_uppercase();
            i += 1;
        }
        if start == i {
            break;
        }
        window.copy_within(1.., 0);
        window[SHINGLE_WORDS - 1] = token_hash(&text[start..i], upper);
        tokens += 1;
        if tokens >= SHINGLE_WORDS {
            votes.add(shingle_hash(&window));
        }
    }
    if (1..SHINGLE_WORDS).contains(&tokens) {
        votes.add(shingle_hash(&window[SHINGLE_WORDS - tokens..]));
    }
    votes.finish()
}

/// XXH3 of the token lowercased; `upper` says whether it has anything to lowercase.
#[inline]
fn token_hash(token: &[u8], upper: bool) -> u64 {
    if !upper {
        return xxh3_64(token);
    }
    if token.len() <= STACK_TOKEN {
        let mut lower = [0u8; STACK_TOKEN];
        let lower = &mut lower[..token.len()];
        lower.copy_from_slice(token);
        lower.make_ascii_lowercase();
        return xxh3_64(lower);
    }
    let mut hasher = Xxh3Default::new();
    let mut piece = [0u8; STACK_TOKEN];
    for chunk in token.chunks(STACK_TOKEN) {
        let piece = &mut piece[..chunk.len()];
        piece.copy_from_slice(chunk);
        piece.make_ascii_lowercase();
        hasher.update(piece);
    }
    hasher.digest()
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

/// Per-bit vote counts: 64 byte lanes in 8 words, added to the wide counters every
/// [`LANE_FLUSH`] shingles.
struct Votes {
    lanes: [u64; 8],
    in_lanes: u32,
    wide: [u32; 64],
    shingles: u32,
}

impl Default for Votes {
    fn default() -> Self {
        Votes {
            lanes: [0; 8],
            in_lanes: 0,
            wide: [0; 64],
            shingles: 0,
        }
    }
}

impl Votes {
    #[inline(always)]
    fn add(&mut self, h: u64) {
        for (g, lane) in self.lanes.iter_mut().enumerate() {
            *lane += SPREAD[((h >> (8 * g)) & 0xff) as usize];
        }
        self.in_lanes += 1;
        self.shingles = self.shingles.saturating_add(1);
        if self.in_lanes == LANE_FLUSH {
            // By value: a pointer to the lanes would keep them in memory, and every
            // shingle's vote would go through the stack.
            add_lanes(&mut self.wide, std::mem::take(&mut self.lanes));
            self.in_lanes = 0;
        }
    }

    fn finish(mut self) -> Fingerprint {
        add_lanes(&mut self.wide, self.lanes);
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

/// Adds the byte lanes' counts to the wide counters.
#[inline(never)]
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
        let hashes: Vec<u64> = tokens.iter().map(|t| xxh3_64(t)).collect();
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
    fn case_and_punctuation_do_not_change_the_fingerprint() {
        let a = simhash(b"The quick brown fox jumps over the lazy dog");
        let b = simhash(b"the QUICK, brown fox -- jumps over the lazy dog!");
        assert_eq!(a, b);
    }

    #[test]
    fn one_changed_word_in_a_long_text_moves_few_bits_and_another_text_many() {
        let words: Vec<String> = (0..400).map(|i| format!("w{}", i * 7919 % 1000)).collect();
        let base = words.join(" ");
        let mut changed = words.clone();
        changed[200] = "different".into();
        let other: Vec<String> = (0..400).map(|i| format!("v{}", i * 7919 % 1000)).collect();
        let fa = simhash(base.as_bytes()).hash;
        let near = (fa ^ simhash(changed.join(" ").as_bytes()).hash).count_ones();
        let far = (fa ^ simhash(other.join(" ").as_bytes()).hash).count_ones();
        assert!(near <= 3, "one word of 400 moved {near} bits");
        assert!(far >= 16, "unrelated texts only {far} bits apart");
    }
}
