//! Differential: `url_seen::UrlSeen` against `BTreeSet<u64>` under a sequence of operations
//! decoded from the input. Same answers, same length, same sorted iteration.
//!
//! Each operation is a tag byte and its operands. Tag bit 0: insert or lookup; bits 1..=3 pick
//! how the key is made, so that collisions, extremes and dense runs (which split leaves) are all
//! common.
#![no_main]

use std::collections::BTreeSet;

use libfuzzer_sys::fuzz_target;
use spinneret::crawl::url_seen::UrlSeen;

/// Longest run of consecutive keys one operation inserts.
const MAX_RUN: u64 = 640;
/// Most keys one input inserts (runs included), so an exec stays in the milliseconds.
const MAX_INSERTS: usize = 4 * 1024;

fn take<const N: usize>(data: &mut &[u8]) -> Option<[u8; N]> {
    let (head, rest) = data.split_first_chunk::<N>()?;
    *data = rest;
    Some(*head)
}

fuzz_target!(|input: &[u8]| {
    let mut seen = UrlSeen::new();
    let mut model = BTreeSet::new();
    let mut data = input;
    let mut inserts = 0;
    while let Some([tag]) = take::<1>(&mut data) {
        if inserts >= MAX_INSERTS {
            break;
        }
        let key = match (tag >> 1) & 7 {
            0 => take::<1>(&mut data).map(|[b]| u64::from(b)),
            1 => take::<8>(&mut data).map(u64::from_le_bytes),
            2 => take::<1>(&mut data).map(|[b]| u64::MAX - u64::from(b)),
            3 => take::<2>(&mut data).map(|b| u64::from(u16::from_le_bytes(b)) << 48),
            4 => take::<2>(&mut data)
                .map(|b| u64::from(u16::from_le_bytes(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15)),
            5 => take::<3>(&mut data)
                .map(|[a, b, c]| u64::from(a) << 40 | u64::from(b) << 8 | u64::from(c)),
            _ => {
                // A dense run: start from 2 bytes spread over the key space, length from 1 byte.
                let Some([a, b, n]) = take::<3>(&mut data) else {
                    break;
                };
                let start = u64::from(u16::from_le_bytes([a, b])) << 40;
                let run = (u64::from(n) * 4).min(MAX_RUN);
                inserts += run as usize;
                for k in start..start + run {
                    assert_eq!(seen.insert(k), model.insert(k), "insert run {k}");
                }
                continue;
            }
        };
        let Some(key) = key else { break };
        if tag & 1 == 0 {
            inserts += 1;
            assert_eq!(seen.insert(key), model.insert(key), "insert {key}");
        } else {
            assert_eq!(seen.contains(key), model.contains(&key), "contains {key}");
        }
    }
    assert_eq!(seen.len(), model.len());
    assert!(seen.iter().eq(model.iter().copied()), "iteration order");
    let packed = UrlSeen::from_sorted(model.iter().copied());
    assert_eq!(packed.len(), model.len());
    assert!(packed.iter().eq(model.iter().copied()));
});
