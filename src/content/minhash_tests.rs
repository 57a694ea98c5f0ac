use super::*;
use proptest::prelude::*;
use std::collections::HashSet;

/// The spec, written the slow way: strings, a set of shingle hashes, a min per bin.
fn naive(text: &[u8]) -> Shingled {
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
    let fmix = |mut x: u64| {
        x = (x ^ (x >> 33)).wrapping_mul(0xff51afd7ed558ccd);
        x = (x ^ (x >> 33)).wrapping_mul(0xc4ceb9fe1a85ec53);
        x ^ (x >> 33)
    };
    let hashes: Vec<u64> = tokens.iter().map(|t| token_hash(t)).collect();
    let shingle = |ts: &[u64]| {
        let x = ts
            .iter()
            .enumerate()
            .fold(0u64, |x, (j, t)| x ^ t.rotate_left(21 * j as u32));
        fmix(x)
    };
    let shingles: Vec<u64> = if hashes.is_empty() {
        Vec::new()
    } else if hashes.len() < SHINGLE_WORDS {
        vec![shingle(&hashes)]
    } else {
        hashes.windows(SHINGLE_WORDS).map(shingle).collect()
    };
    let mut out = [0u8; SKETCH_BYTES];
    if !shingles.is_empty() {
        let set: HashSet<u64> = shingles.iter().copied().collect();
        let min_of = |bin: usize| {
            set.iter()
                .filter(|&&h| (h >> 57) as usize == bin)
                .map(|&h| h & ((1 << 57) - 1))
                .min()
        };
        let mins: Vec<Option<u64>> = (0..BINS).map(min_of).collect();
        for (i, m) in mins.iter().enumerate() {
            let v = m.unwrap_or_else(|| {
                let probed = (0..1024u64)
                    .map(|a| (fmix((i as u64) << 32 | a) >> 57) as usize)
                    .find(|&j| mins[j].is_some());
                let j = probed.unwrap_or_else(|| {
                    (1..BINS)
                        .map(|k| (i + k) % BINS)
                        .find(|&j| mins[j].is_some())
                        .unwrap()
                });
                mins[j].unwrap()
            });
            out[i / 2] |= ((v & 0xf) as u8) << (4 * (1 - i % 2));
        }
    }
    Shingled {
        sketch: Sketch(out),
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
        prop_assert_eq!(sketch(&t), naive(&t));
    }

    #[test]
    fn hex_round_trips(bytes in proptest::array::uniform32(any::<u8>())) {
        let mut s = [0u8; SKETCH_BYTES];
        s[..32].copy_from_slice(&bytes);
        s[32..].copy_from_slice(&bytes);
        let mut hex = Vec::new();
        Sketch(s).push_hex(&mut hex);
        prop_assert_eq!(hex.len(), 128);
        prop_assert_eq!(Sketch::from_hex(&hex), Some(Sketch(s)));
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
        "a b c d e",
        &long_upper,
    ] {
        assert_eq!(sketch(t.as_bytes()), naive(t.as_bytes()), "{t:?}");
    }
    assert_eq!(sketch(b"").sketch, Sketch([0; SKETCH_BYTES]));
    assert_eq!(sketch(b"x y").shingles, 1);
    assert_eq!(sketch(b"a b c d e").shingles, 2);
}

#[test]
fn case_punctuation_and_repeats_do_not_change_the_sketch() {
    let a = sketch(b"The quick brown fox jumps over the lazy dog");
    let b = sketch(b"the QUICK, brown fox -- jumps over the lazy dog!");
    assert_eq!(a, b);
    // A set: the same shingles again are the same set (a cycle of five words twice and
    // three times has the same five shingles).
    let twice = sketch(b"a b c d e a b c d e");
    let thrice = sketch(b"a b c d e a b c d e a b c d e");
    assert_eq!(twice.sketch, thrice.sketch);
    assert_ne!(twice.shingles, thrice.shingles);
}

#[test]
fn hex_is_bin_zero_first_and_rejects_anything_else() {
    let mut s = [0u8; SKETCH_BYTES];
    s[0] = 0xa5;
    let sk = Sketch(s);
    assert_eq!((sk.bin(0), sk.bin(1), sk.bin(2)), (0xa, 0x5, 0));
    let mut hex = Vec::new();
    sk.push_hex(&mut hex);
    assert!(hex.starts_with(b"a500"));
    assert_eq!(Sketch::from_hex(&hex[..127]), None);
    let mut upper = hex.clone();
    upper[0] = b'A';
    assert_eq!(Sketch::from_hex(&upper), None);
    assert_eq!(sk.bands()[0], 0xa500_0000);
}

/// `n` words from a vocabulary large enough that shingles rarely repeat by chance.
fn words(seed: u64, n: usize) -> Vec<String> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            format!("w{}", x % 50_000)
        })
        .collect()
}

fn shingle_set(ws: &[String]) -> HashSet<Vec<String>> {
    ws.windows(SHINGLE_WORDS).map(|w| w.to_vec()).collect()
}

fn jaccard(a: &[String], b: &[String]) -> f64 {
    let (sa, sb) = (shingle_set(a), shingle_set(b));
    sa.intersection(&sb).count() as f64 / sa.union(&sb).count() as f64
}

#[test]
fn the_estimate_follows_the_jaccard_coefficient() {
    // Over many pairs, short texts and long, with every 1 in `k` words changed: the mean
    // estimate error is small and no single estimate is far off.
    let mut errors = Vec::new();
    for (seed, (n, every)) in [
        (60, 40),
        (200, 30),
        (200, 12),
        (1500, 60),
        (1500, 8),
        (4000, 25),
    ]
    .iter()
    .cycle()
    .take(60)
    .enumerate()
    {
        let a = words(seed as u64 + 1, *n);
        let mut b = a.clone();
        for (i, w) in b.iter_mut().enumerate() {
            if (i * 7 + seed) % every == 0 {
                *w = format!("edit{i}");
            }
        }
        let truth = jaccard(&a, &b);
        let est = sketch(a.join(" ").as_bytes())
            .sketch
            .resemblance(&sketch(b.join(" ").as_bytes()).sketch);
        errors.push(est - truth);
        assert!(
            (est - truth).abs() < 0.2,
            "n={n} truth {truth:.3} estimate {est:.3}"
        );
    }
    let mean = errors.iter().sum::<f64>() / errors.len() as f64;
    let mean_abs = errors.iter().map(|e| e.abs()).sum::<f64>() / errors.len() as f64;
    assert!(mean.abs() < 0.02, "biased: mean error {mean:.3}");
    assert!(mean_abs < 0.05, "noisy: mean |error| {mean_abs:.3}");
}

#[test]
fn distinct_texts_share_few_bins_and_copies_all() {
    let a = words(1, 800).join(" ");
    let b = words(2, 800).join(" ");
    let (sa, sb) = (sketch(a.as_bytes()).sketch, sketch(b.as_bytes()).sketch);
    assert!(sa.resemblance(&sb) < 0.1, "{}", sa.resemblance(&sb));
    assert_eq!(sa.resemblance(&sa), 1.0);
    assert_eq!(sa.equal_bins(&sa), 128);
    assert!(sa.bands().iter().zip(sb.bands()).all(|(x, y)| *x != y));
}

#[test]
fn the_bin_threshold_matches_the_estimate() {
    for r in [0.0, 0.5, 0.85, 0.9, 1.0] {
        let m = equal_bins_for(r);
        assert!(resemblance_of(m) >= r);
        assert!(m == 0 || resemblance_of(m - 1) < r);
    }
}
