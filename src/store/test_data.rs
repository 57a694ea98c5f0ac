//! Deterministic test bytes shared by the store's tests.

/// Incompressible-looking bytes (xorshift64) from `seed`: rotation sizes and compressed
/// lengths are predictable, and deflate cannot shrink them.
pub(crate) fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}
