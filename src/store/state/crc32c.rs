//! CRC-32C (Castagnoli, reflected polynomial `0x82F63B78`), table-driven slicing-by-8, plus
//! LevelDB's masking. Shared by the durable formats ([`super::journal`],
//! [`super::checkpoint`], [`super::segments`]); no I/O.
//!
//! Masking (LevelDB `crc32c::Mask`): a CRC stored next to the bytes it covers is rotated and
//! offset, so that computing the CRC of a string that itself contains embedded CRCs stays
//! well-behaved.

/// The eight 256-entry tables of slicing-by-8, built at compile time.
const TABLES: [[u32; 256]; 8] = build_tables();

const fn build_tables() -> [[u32; 256]; 8] {
    let mut t = [[0u32; 256]; 8];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0x82F6_3B78
            } else {
                c >> 1
            };
            k += 1;
        }
        t[0][i] = c;
        i += 1;
    }
    let mut s = 1;
    while s < 8 {
        let mut i = 0;
        while i < 256 {
            let prev = t[s - 1][i];
            t[s][i] = (prev >> 8) ^ t[0][(prev & 0xff) as usize];
            i += 1;
        }
        s += 1;
    }
    t
}

/// CRC-32C of `data`.
pub fn crc32c(data: &[u8]) -> u32 {
    extend(0, data)
}

/// Continues `crc` (the CRC-32C of some prefix) over `data`: `extend(crc32c(a), b)` equals
/// `crc32c(a ++ b)`.
pub fn extend(crc: u32, data: &[u8]) -> u32 {
    let mut c = !crc;
    let mut chunks = data.chunks_exact(8);
    for ch in &mut chunks {
        let lo = c ^ u32::from_le_bytes([ch[0], ch[1], ch[2], ch[3]]);
        let hi = u32::from_le_bytes([ch[4], ch[5], ch[6], ch[7]]);
        c = TABLES[7][(lo & 0xff) as usize]
            ^ TABLES[6][((lo >> 8) & 0xff) as usize]
            ^ TABLES[5][((lo >> 16) & 0xff) as usize]
            ^ TABLES[4][(lo >> 24) as usize]
            ^ TABLES[3][(hi & 0xff) as usize]
            ^ TABLES[2][((hi >> 8) & 0xff) as usize]
            ^ TABLES[1][((hi >> 16) & 0xff) as usize]
            ^ TABLES[0][(hi >> 24) as usize];
    }
    for &b in chunks.remainder() {
        c = (c >> 8) ^ TABLES[0][((c ^ u32::from(b)) & 0xff) as usize];
    }
    !c
}

const MASK_DELTA: u32 = 0xa282_ead8;

/// LevelDB's masked form of a CRC, for storing next to the data it covers.
pub fn mask(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(MASK_DELTA)
}

/// Inverse of [`mask`].
pub fn unmask(masked: u32) -> u32 {
    masked.wrapping_sub(MASK_DELTA).rotate_left(15)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bit-at-a-time reference, independent of the tables.
    fn slow(data: &[u8]) -> u32 {
        let mut c = !0u32;
        for &b in data {
            c ^= u32::from(b);
            for _ in 0..8 {
                c = if c & 1 != 0 {
                    (c >> 1) ^ 0x82F6_3B78
                } else {
                    c >> 1
                };
            }
        }
        !c
    }

    #[test]
    fn known_vectors() {
        // RFC 3720 (iSCSI) appendix B.4 and the common check value.
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
        assert_eq!(crc32c(&[0u8; 32]), 0x8A91_36AA);
        assert_eq!(crc32c(&[0xffu8; 32]), 0x62A8_AB43);
        let inc: Vec<u8> = (0..32).collect();
        assert_eq!(crc32c(&inc), 0x46DD_794E);
        let dec: Vec<u8> = (0..32).rev().collect();
        assert_eq!(crc32c(&dec), 0x113F_DB5C);
        assert_eq!(crc32c(b""), 0);
        // LevelDB crc32c_test.cc: Value("a", 1) ... and the "hello world" style check.
        assert_eq!(crc32c(b"a"), 0xC1D0_4330);
    }

    #[test]
    fn matches_bitwise_reference_and_extends() {
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 31 + i / 7) as u8).collect();
        for len in [0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 999, 1000] {
            assert_eq!(crc32c(&data[..len]), slow(&data[..len]), "len {len}");
            for split in [0, len / 3, len] {
                let (a, b) = data[..len].split_at(split);
                assert_eq!(extend(crc32c(a), b), crc32c(&data[..len]));
            }
        }
    }

    #[test]
    fn mask_round_trips_and_changes_value() {
        for c in [0u32, 1, 0xE306_9283, u32::MAX, 0x8000_0000] {
            assert_ne!(mask(c), c);
            assert_ne!(mask(mask(c)), mask(c));
            assert_eq!(unmask(mask(c)), c);
        }
    }
}
