//! A seeded, reproducible random source for the library's tests (xorshift64*): simulated
//! pages, fingerprints, orders. Tests that want arbitrary input use proptest; this is for a
//! long simulated run whose seed must give the same run every time.

/// xorshift64* (Vigna 2016). Seed it with an odd number.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in (0, 1].
    pub(crate) fn unit(&mut self) -> f64 {
        ((self.next() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }
}
