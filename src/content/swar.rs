//! SWAR (SIMD within a register) tests on 8 bytes at once, for the content cores' per-byte
//! paths: the main-text scanner and the sketch tokenizer look at every byte of a page's
//! text, and a branch or a table load per byte was most of their cost. Plain `u64`
//! arithmetic: no target features, the same on every platform. On x86-64 the same tests
//! run on 16 bytes with SSE2 (part of every x86-64 CPU, so nothing is detected at run time):
//! [`classes16`].

/// A byte of 1, the high bit of every byte, the low seven bits of every byte.
pub(super) const ONES: u64 = 0x0101_0101_0101_0101;
pub(super) const HIGH: u64 = 0x8080_8080_8080_8080;
pub(super) const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;

/// The high bit of each byte of `x7` (bytes below 0x80) that is above `c`: the sum stays
/// below 0x100, so no byte carries into the next.
#[inline(always)]
pub(super) fn above(x7: u64, c: u8) -> u64 {
    (x7 + u64::from(0x7f - c) * ONES) & HIGH
}

/// The high bit of each byte of `w` that is a word byte (`super::is_word_byte`).
#[inline(always)]
pub(super) fn word_lanes(w: u64) -> u64 {
    let low = w & LOW7;
    let digit = above(low, b'0' - 1) & !above(low, b'9');
    // ASCII letters with the case bit set; nothing else lands in `a..=z` by it.
    let folded = low | (0x20 * ONES);
    let letter = above(folded, b'a' - 1) & !above(folded, b'z');
    (w & HIGH) | digit | letter
}

/// `w` with its ASCII capitals lowercased (0x20 added to each: no byte carries).
#[inline(always)]
pub(super) fn lowercase(w: u64) -> u64 {
    let low = w & LOW7;
    let upper = above(low, b'A' - 1) & !above(low, b'Z') & !(w & HIGH);
    w + (upper >> 2)
}

/// The high bits of the 8 bytes of `m` (each 0x80 or 0) gathered into a byte: the multiply
/// moves byte `i`'s bit to bit `56 + i`, and no other product reaches those bits.
/// (x86-64 gathers with SSE2's own `movemask` instead; this is the other targets'.)
#[cfg_attr(all(target_arch = "x86_64", target_feature = "sse2"), allow(dead_code))]
#[inline(always)]
pub(super) fn movemask(m: u64) -> u64 {
    ((m >> 7).wrapping_mul(0x0102_0408_1020_4080)) >> 56
}

/// The high bit of each byte of `w` equal to `c` (exact: no false positives from borrows).
#[inline(always)]
pub(super) fn eq_lanes(w: u64, c: u8) -> u64 {
    let y = w ^ (u64::from(c) * ONES);
    !((((y & LOW7) + LOW7) | y) & HIGH) & HIGH
}

/// The high bit of each byte of `w` below 0x20 (ASCII controls: HTML's whitespace but the
/// space, and other bytes the scanner's fast path leaves to the byte-at-a-time one).
#[inline(always)]
pub(super) fn control_lanes(w: u64) -> u64 {
    !above(w & LOW7, 0x1f) & !(w & HIGH) & HIGH
}

/// Three masks of 16 bytes (bit `i` for byte `i`): the bytes that are `&` or below 0x20
/// (where the main-text scanner's byte loop decides), the spaces, and the word bytes
/// ([`word_lanes`]'s test).
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
pub(super) fn classes16(bytes: &[u8; 16]) -> (u32, u32, u32) {
    use std::arch::x86_64::{
        _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };
    // SAFETY: SSE2 is enabled (the `cfg` above), and the 16 bytes read are `bytes`.
    unsafe {
        let v = _mm_loadu_si128(bytes.as_ptr().cast());
        let control = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v);
        let stop = _mm_or_si128(control, _mm_cmpeq_epi8(v, _mm_set1_epi8(b'&' as i8)));
        let spaces = _mm_cmpeq_epi8(v, _mm_set1_epi8(b' ' as i8));
        let mask = |m| _mm_movemask_epi8(m) as u32;
        (mask(stop), mask(spaces), mask(word_bytes16(v)))
    }
}

/// The high bit of each of the 16 bytes of `v` that is a word byte. A byte `b` is in
/// `lo..lo + n` when `b + (0x80 - lo)`, wrapping, is below `-128 + n` as a signed byte;
/// bytes from 0x80 on are word bytes, and their high bit is set already.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
pub(super) fn word_bytes16(v: std::arch::x86_64::__m128i) -> std::arch::x86_64::__m128i {
    use std::arch::x86_64::{_mm_add_epi8, _mm_cmplt_epi8, _mm_or_si128, _mm_set1_epi8};
    // SAFETY: SSE2 is enabled (the `cfg` above); these only compute on registers.
    unsafe {
        let digit = _mm_cmplt_epi8(
            _mm_add_epi8(v, _mm_set1_epi8((0x80u8 - b'0') as i8)),
            _mm_set1_epi8(-128 + 10),
        );
        let folded = _mm_or_si128(v, _mm_set1_epi8(0x20));
        let letter = _mm_cmplt_epi8(
            _mm_add_epi8(folded, _mm_set1_epi8((0x80u8 - b'a') as i8)),
            _mm_set1_epi8(-128 + 26),
        );
        _mm_or_si128(v, _mm_or_si128(digit, letter))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_agree_with_the_byte_tests() {
        for b in 0..=255u8 {
            for lane in 0..8 {
                // Byte `b` in one lane, among bytes of other classes around it.
                for fill in [0x20u8, 0x41, 0x00, 0xff, 0x26] {
                    let mask = 0xffu64 << (8 * lane);
                    let w = (u64::from(b) << (8 * lane)) | ((u64::from(fill) * ONES) & !mask);
                    let at = |m: u64| m & mask != 0;
                    assert_eq!(at(word_lanes(w)), super::super::is_word_byte(b), "{b:#x}");
                    assert_eq!(at(eq_lanes(w, b'&')), b == b'&', "{b:#x} {fill:#x}");
                    assert_eq!(at(eq_lanes(w, b' ')), b == b' ', "{b:#x} {fill:#x}");
                    assert_eq!(at(control_lanes(w)), b < 0x20, "{b:#x}");
                    let lower = (lowercase(w) & mask) >> (8 * lane);
                    assert_eq!(lower, u64::from(b.to_ascii_lowercase()), "{b:#x}");
                }
            }
        }
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        for b in 0..=255u8 {
            for lane in 0..16 {
                for fill in [0x20u8, 0x41, 0x00, 0xff, 0x26] {
                    let mut bytes = [fill; 16];
                    bytes[lane] = b;
                    let (stop, spaces, words) = classes16(&bytes);
                    let at = |m: u32| m >> lane & 1 == 1;
                    assert_eq!(at(stop), b == b'&' || b < 0x20, "{b:#x}");
                    assert_eq!(at(spaces), b == b' ', "{b:#x}");
                    assert_eq!(at(words), super::super::is_word_byte(b), "{b:#x}");
                }
            }
        }
        for b in 0..=255u64 {
            let spread = (0..8).fold(0, |m, i| m | ((b >> i & 1) << (8 * i + 7)));
            assert_eq!(movemask(spread), b);
        }
    }
}
