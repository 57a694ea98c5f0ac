//! A min-hash sketch of a text's word shingles (Broder 1997; IIR §19.6): the fraction of
//! two sketches' bins that agree estimates the Jaccard coefficient of the two texts' shingle
//! sets — their resemblance — which [`super::near_dup`] looks up by locality-sensitive
//! banding.
//!
//! # Spec (sketches are compared across pages and runs: changing it changes them all)
//! - **Tokens**: maximal runs of word bytes (ASCII letters and digits, every byte ≥ 0x80),
//!   ASCII letters lowercased; everything else separates tokens.
//! - **Token hash** (`token_hash`): the lowercased token read as little-endian 64-bit
//!   words (the last one padded with zero bytes, which no token contains), folded into
//!   `h = len` by `h = (h ⊕ w) · K; h ⊕= h >> 32`. Not a general-purpose hash: the shingle
//!   hash below mixes it fully, and a token of up to 8 bytes (most words) is one multiply.
//! - **Shingles**: every run of [`SHINGLE_WORDS`] (4, IIR's example) consecutive tokens; a
//!   text with fewer tokens (but at least one) is one shingle of all of them. A shingle's
//!   hash mixes its tokens' hashes `h₀ … h₃`: `fmix64(⊕ⱼ rotl(hⱼ, 21·j))`, with MurmurHash3's
//!   64-bit finalizer. The sketch sees the shingles as a set: repeats change nothing.
//! - **Sketch** (one-permutation hashing, Li, Owen and Zhang 2012): a shingle hash's top 7
//!   bits pick one of [`BINS`] (128) bins and the bin keeps the least of its hashes' low
//!   57 bits. A bin no shingle reached takes the value of the first reached bin on its own
//!   probe sequence (optimal densification, Shrivastava 2017: two texts fill their empty
//!   bins alike, so the estimate stays unbiased for short texts). Each bin is then kept as
//!   4 bits, the low bits of its minimum (b-bit min-wise hashing, Li and König 2010): bin `i`
//!   is nibble `i` of [`Sketch`], the high nibble of byte `i / 2` first, 64 bytes in all, and
//!   128 hex digits in crawl.log.
//! - **Resemblance**: with `m` of 128 bins equal, `(m/128 − 1/16) / (15/16)`, clamped to
//!   0..=1 (two different minima share 4 bits one time in 16). Its standard deviation is
//!   about 0.027 at 0.9.
//! - **Bands**: [`BANDS`] (16) bands of 8 bins; band `b` is bytes `4b..4b+4` read as a
//!   big-endian `u32`. Texts at resemblance 0.9 share a band with probability 0.9999, at 0.8
//!   0.97, at 0.5 0.1 (each band agrees with probability `p⁸`, `p = J + (1 − J)/16`).
//!
//! Cost (a 15 KB page's main text is ~2,000 tokens, and this runs on every page the crawl
//! scans): the text is classified 8 bytes at a time (SWAR range tests) into a bitmap of word
//! bytes per 64 bytes, so tokens are found by bit scans, not a mispredicted branch at every
//! word boundary; a token is lowercased and hashed a word at a time; a shingle is one mix,
//! one load, one compare and one store.

#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
use super::swar::word_bytes16;
use super::swar::{lowercase, HIGH, ONES};
#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
use super::swar::{movemask, word_lanes};

/// Words per shingle: IIR's 4 keeps a shingle specific (few shared by chance between
/// distinct texts) while one changed word touches only 4 shingles.
pub const SHINGLE_WORDS: usize = 4;
/// Min-hash bins of a sketch.
pub const BINS: usize = 128;
/// Bits kept per bin.
const BIN_BITS: usize = 4;
/// Bytes of a sketch.
pub const SKETCH_BYTES: usize = BINS * BIN_BITS / 8;
/// Bands a sketch is looked up by.
pub const BANDS: usize = 16;
/// Probes an empty bin makes for a reached one before it takes the next reached bin in
/// order (reached only when very few bins are: one in 128 is left after 1,024 probes with
/// probability 3e-4).
const MAX_PROBES: u64 = 1024;
/// The token hash's multiplier: odd, so multiplying by it loses nothing (the golden ratio's
/// 64-bit constant, as in Fibonacci hashing).
const TOKEN_K: u64 = 0x9e37_79b9_7f4a_7c15;
/// A bin no shingle reached.
const EMPTY: u64 = u64::MAX;
/// The low bits of a shingle hash a bin keeps the least of.
const MIN_MASK: u64 = (1 << 57) - 1;

/// A text's min-hash sketch: 128 bins of 4 bits (see the module's spec).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Sketch(pub [u8; SKETCH_BYTES]);

impl std::fmt::Debug for Sketch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut hex = Vec::with_capacity(2 * SKETCH_BYTES);
        self.push_hex(&mut hex);
        write!(f, "Sketch({})", String::from_utf8_lossy(&hex))
    }
}

impl Sketch {
    /// Bin `i`'s 4 bits.
    pub fn bin(&self, i: usize) -> u8 {
        (self.0[i / 2] >> (4 * (1 - i % 2))) & 0xf
    }

    /// The [`BANDS`] band keys.
    pub fn bands(&self) -> [u32; BANDS] {
        std::array::from_fn(|b| {
            u32::from_be_bytes(self.0[4 * b..4 * b + 4].try_into().expect("4 bytes"))
        })
    }

    /// Bins equal in both sketches (0..=128).
    pub fn equal_bins(&self, other: &Sketch) -> u32 {
        let mut differ = 0;
        for (a, b) in self.0.chunks_exact(8).zip(other.0.chunks_exact(8)) {
            let x = u64::from_le_bytes(a.try_into().expect("8 bytes"))
                ^ u64::from_le_bytes(b.try_into().expect("8 bytes"));
            // A nibble's low bit is set when any of its bits is.
            let any = (x | x >> 1 | x >> 2 | x >> 3) & 0x1111_1111_1111_1111;
            differ += any.count_ones();
        }
        BINS as u32 - differ
    }

    /// The estimated Jaccard coefficient of the two texts' shingle sets.
    pub fn resemblance(&self, other: &Sketch) -> f64 {
        resemblance_of(self.equal_bins(other))
    }

    /// Appends the sketch as 128 lowercase hex digits, bin 0 first.
    pub fn push_hex(&self, out: &mut Vec<u8>) {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        for &b in &self.0 {
            out.push(HEX[usize::from(b >> 4)]);
            out.push(HEX[usize::from(b & 0xf)]);
        }
    }

    /// Reads what [`Sketch::push_hex`] writes (exactly 128 lowercase hex digits).
    pub fn from_hex(s: &[u8]) -> Option<Sketch> {
        if s.len() != 2 * SKETCH_BYTES {
            return None;
        }
        let digit = |c: u8| match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            _ => None,
        };
        let mut out = [0u8; SKETCH_BYTES];
        for (o, pair) in out.iter_mut().zip(s.chunks_exact(2)) {
            *o = digit(pair[0])? << 4 | digit(pair[1])?;
        }
        Some(Sketch(out))
    }
}

/// The resemblance estimate of two sketches with `equal` bins alike.
pub fn resemblance_of(equal: u32) -> f64 {
    let p = f64::from(equal) / BINS as f64;
    ((p - 1.0 / 16.0) * 16.0 / 15.0).clamp(0.0, 1.0)
}

/// The fewest equal bins whose estimate reaches `resemblance`.
pub fn equal_bins_for(resemblance: f64) -> u32 {
    (0..=BINS as u32)
        .find(|&m| resemblance_of(m) >= resemblance)
        .unwrap_or(BINS as u32)
}

/// A sketch and how many distinct-or-not shingles it was made of (few shingles make a
/// fragile sketch: the caller may choose not to index those).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shingled {
    pub sketch: Sketch,
    pub shingles: u32,
}

/// The sketch of `text` (see the module's spec).
pub fn sketch(text: &[u8]) -> Shingled {
    let mut s = Shingles::default();
    s.feed(text);
    s.finish()
}

/// The shingling state across a text's parts: the last tokens' hashes and the bins.
struct Shingles {
    window: [u64; SHINGLE_WORDS],
    /// The window's tokens mixed as the spec's shingle hash mixes them before `fmix64`
    /// (kept rolling: a token in and one out are two rotations, not four).
    mixed: u64,
    tokens: usize,
    shingles: u32,
    bins: [u64; BINS],
}

impl Default for Shingles {
    fn default() -> Self {
        Shingles {
            window: [0; SHINGLE_WORDS],
            mixed: 0,
            tokens: 0,
            shingles: 0,
            bins: [EMPTY; BINS],
        }
    }
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
        // The oldest token leaves at rotation 0, every other one moves down a place (one
        // rotation right by `SHINGLE_ROTATION`), and the new one comes in at the top place.
        // Before the window is full the missing tokens are zeros, which change nothing.
        let top = SHINGLE_ROTATION * (SHINGLE_WORDS as u32 - 1);
        self.mixed =
            (self.mixed ^ self.window[0]).rotate_right(SHINGLE_ROTATION) ^ h.rotate_left(top);
        self.window = [self.window[1], self.window[2], self.window[3], h];
        self.tokens += 1;
        if self.tokens >= SHINGLE_WORDS {
            self.add(fmix64(self.mixed));
        }
    }

    #[inline(always)]
    fn add(&mut self, h: u64) {
        let bin = &mut self.bins[(h >> 57) as usize];
        *bin = (*bin).min(h & MIN_MASK);
        self.shingles = self.shingles.saturating_add(1);
    }

    fn finish(mut self) -> Shingled {
        if (1..SHINGLE_WORDS).contains(&self.tokens) {
            let h = shingle_hash(&self.window[SHINGLE_WORDS - self.tokens..]);
            self.add(h);
        }
        let mut out = [0u8; SKETCH_BYTES];
        if self.shingles > 0 {
            for i in 0..BINS {
                let v = match self.bins[i] {
                    EMPTY => self.bins[densify(&self.bins, i)],
                    v => v,
                };
                out[i / 2] |= ((v & 0xf) as u8) << (4 * (1 - i % 2));
            }
        }
        Shingled {
            sketch: Sketch(out),
            shingles: self.shingles,
        }
    }
}

/// The reached bin empty bin `i` takes its value from: the first reached one on `i`'s probe
/// sequence, else the next reached one after `i` (at least one bin is reached).
fn densify(bins: &[u64; BINS], i: usize) -> usize {
    for attempt in 0..MAX_PROBES {
        let j = (fmix64((i as u64) << 32 | attempt) >> 57) as usize;
        if bins[j] != EMPTY {
            return j;
        }
    }
    (1..BINS)
        .map(|k| (i + k) % BINS)
        .find(|&j| bins[j] != EMPTY)
        .unwrap_or(i)
}

/// `w`'s word bytes lowercased, for a `w` whose bytes are all word bytes (its other bytes
/// change): an ASCII letter or digit with the case bit set is lowercase (digits have it
/// already), so that bit is set in every byte but those from 0x80 on.
#[inline(always)]
fn lowercase_word(w: u64) -> u64 {
    w | ((0x20 * ONES) & !((w & HIGH) >> 2))
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
    word_bits_64(bytes)
}

/// Bit `i` set when `bytes[i]` is a word byte, 16 bytes at a time with SSE2 (part of every
/// x86-64 CPU): the SWAR test below costs four times the instructions, on every byte of
/// every page's main text.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
fn word_bits_64(bytes: &[u8; 64]) -> u64 {
    use std::arch::x86_64::{_mm_loadu_si128, _mm_movemask_epi8};
    let mut bits = 0u64;
    for (k, lanes) in bytes.chunks_exact(16).enumerate() {
        // SAFETY: SSE2 is enabled (the `cfg` above), and the 16 bytes read are `lanes`.
        let mask =
            unsafe { _mm_movemask_epi8(word_bytes16(_mm_loadu_si128(lanes.as_ptr().cast()))) }
                as u16;
        bits |= u64::from(mask) << (16 * k);
    }
    bits
}

/// Elsewhere, 8 bytes at a time in a `u64`.
#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
#[inline(always)]
fn word_bits_64(bytes: &[u8; 64]) -> u64 {
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
    let len = end - start;
    // Most tokens are words of up to 8 bytes with 8 bytes of text from their start: one
    // load, and a lowercasing that may assume word bytes.
    if len <= 8 {
        if let Some(b) = text.get(start..start + 8) {
            let w = u64::from_le_bytes(b.try_into().expect("8 bytes"));
            let w = lowercase_word(w) & (u64::MAX >> (64 - 8 * len));
            let h = (len as u64 ^ w).wrapping_mul(TOKEN_K);
            return h ^ (h >> 32);
        }
    }
    let mut h = len as u64;
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

#[cfg(test)]
#[path = "minhash_tests.rs"]
mod tests;
