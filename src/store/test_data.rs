//! Deterministic test data shared by the store's tests.

use crate::store::state::commit_mark::CommitMark;

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

/// A commit mark: crawl.log's length and each partition's open WARC file and length.
pub(crate) fn mark(log_len: u64, warcs: &[Option<(&str, u64)>]) -> CommitMark {
    CommitMark {
        log_len,
        warcs: warcs
            .iter()
            .map(|w| w.map(|(n, l)| (n.to_string(), l)))
            .collect(),
        texts: Vec::new(),
    }
}

/// `m` as the journal stores it.
pub(crate) fn encoded(m: &CommitMark) -> Vec<u8> {
    let mut v = Vec::new();
    m.encode(&mut v);
    v
}
