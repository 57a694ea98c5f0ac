//! Small encodings every layer shares: LEB128 varints and length-prefixed byte strings (the
//! frontier's spilled batches, the journal's and checkpoints' records), decimal numbers
//! appended without allocating (crawl.log and CDXJ lines), and the crypto provider's CSPRNG
//! (DNS query IDs, WARC record IDs), since the product has no other source of secure
//! randomness.
//!
//! A leaf: it imports nothing from the crate, so any layer may use it.

/// Appends `bytes` with a LEB128 length prefix.
pub fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub fn get_varint(input: &mut &[u8]) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let (&b, rest) = input.split_first()?;
        *input = rest;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Some(v);
        }
    }
    None
}

pub fn get_bytes<'a>(input: &mut &'a [u8]) -> Option<&'a [u8]> {
    let n = usize::try_from(get_varint(input)?).ok()?;
    if input.len() < n {
        return None;
    }
    let (bytes, rest) = input.split_at(n);
    *input = rest;
    Some(bytes)
}

/// Appends `v` in decimal (no allocation: the log and index lines write several per record).
pub fn push_u64(out: &mut Vec<u8>, v: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    let mut v = v;
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

/// Fills `buf` from the crypto provider's CSPRNG. Returns false only if the operating system
/// refused randomness, which leaves `buf` unspecified.
pub fn secure_random(buf: &mut [u8]) -> bool {
    rustls::crypto::ring::default_provider()
        .secure_random
        .fill(buf)
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn varints_and_bytes_round_trip_and_reject_truncation() {
        let mut out = Vec::new();
        for v in [0u64, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX] {
            out.clear();
            put_varint(&mut out, v);
            let mut input = &out[..];
            assert_eq!(get_varint(&mut input), Some(v));
            assert!(input.is_empty());
            let mut cut = &out[..out.len() - 1];
            assert_eq!(get_varint(&mut cut), None);
        }
        out.clear();
        put_bytes(&mut out, b"hello");
        let mut input = &out[..];
        assert_eq!(get_bytes(&mut input), Some(&b"hello"[..]));
        let mut cut = &out[..3];
        assert_eq!(get_bytes(&mut cut), None);
    }

    proptest! {
        #[test]
        fn push_u64_writes_what_to_string_does(v in any::<u64>()) {
            let mut out = b"x".to_vec();
            push_u64(&mut out, v);
            let want = v.to_string();
            prop_assert_eq!(&out[1..], want.as_bytes());
        }
    }
}
