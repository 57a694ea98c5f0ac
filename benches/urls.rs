//! `urlnorm::normalize` (links/s) and the URL-seen set (inserts/s, lookups/s, bytes/URL) at
//! 1 M keys. Targets: ≥ 5 M lookups/s, ≤ 16 bytes/URL.

mod common;

use std::hint::black_box;
use std::time::Duration;

use common::Rng;
use criterion::{criterion_group, criterion_main, Criterion, SamplingMode, Throughput};
use spinneret::crawl::url_seen::UrlSeen;
use spinneret::crawl::urlnorm;
use url::Url;

/// Keys in a set, as after a crawl of a million pages.
const SET_KEYS: usize = 1_000_000;
/// Keys looked up per iteration: spread over the whole set, so most miss the caches.
const LOOKUPS: usize = 20_000;
/// Hosts the clustered set is spread over.
const HOSTS: u64 = 100;

fn normalize(c: &mut Criterion) {
    let base = Url::parse("https://www.example.com/news/2024/crawling-at-scale.html").unwrap();
    let kinds: [(&str, &[&[u8]]); 4] = [
        (
            "relative",
            &[
                b"related-12.html",
                b"../archive/7/",
                b"./img/a.png",
                b"sub/dir/page",
            ],
        ),
        (
            "root_relative",
            &[
                b"/world/",
                b"/static/css/main.3f9a1c.css",
                b"/about",
                b"/a/b/../c/d.html",
            ],
        ),
        (
            "absolute",
            &[
                b"https://other3.example.org/page/17",
                b"http://Example.COM:80/Path/",
                b"https://cdn.example.net/analytics.js",
                b"//static.example.com/x.js",
            ],
        ),
        (
            "query_fragment",
            &[
                b"/news/2024/0031/story?utm_source=home&ref=p31#c",
                b"/search?q=a+b&lang=en",
                b"page?id=2#top",
                b"https://www.example.com/x?y=1&z=%41#frag",
            ],
        ),
    ];
    let mut g = c.benchmark_group("urlnorm_normalize");
    g.measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1))
        .sample_size(30);
    let mut all: Vec<&[u8]> = Vec::new();
    for (name, hrefs) in kinds {
        for h in hrefs {
            assert!(urlnorm::normalize(&base, h).is_ok(), "{name}: {h:?}");
        }
        all.extend_from_slice(hrefs);
        g.throughput(Throughput::Elements(hrefs.len() as u64));
        g.bench_function(name, |b| {
            b.iter(|| {
                for h in hrefs {
                    black_box(urlnorm::normalize(&base, black_box(h)).ok());
                }
            })
        });
    }
    g.throughput(Throughput::Elements(all.len() as u64));
    g.bench_function("mixed", |b| {
        b.iter(|| {
            for h in &all {
                black_box(urlnorm::normalize(&base, black_box(h)).ok());
            }
        })
    });
    g.finish();
}

/// `SET_KEYS` distinct keys, in insertion order. Keys have `url_key`'s layout (24 host bits,
/// 40 path bits of MD5, so uniform within each part); clustered keys share `HOSTS` host parts.
fn keys(rng: &mut Rng, clustered: bool) -> Vec<u64> {
    let hosts: Vec<u64> = (0..HOSTS).map(|_| rng.below(1 << 24)).collect();
    let mut seen = std::collections::HashSet::with_capacity(SET_KEYS);
    let mut out = Vec::with_capacity(SET_KEYS);
    while out.len() < SET_KEYS {
        let k = if clustered {
            (hosts[rng.below(HOSTS) as usize] << 40) | rng.below(1 << 40)
        } else {
            rng.next_u64()
        };
        if seen.insert(k) {
            out.push(k);
        }
    }
    out
}

fn url_seen(c: &mut Criterion) {
    let mut rng = Rng::new(42);
    for (layout, clustered) in [("random", false), ("clustered_100_hosts", true)] {
        let keys = keys(&mut rng, clustered);
        let mut set = UrlSeen::new();
        for &k in &keys {
            set.insert(k);
        }
        eprintln!(
            "url_seen {layout}: {} keys, {} bytes, {:.2} bytes/URL",
            set.len(),
            set.bytes_used(),
            set.bytes_used() as f64 / set.len() as f64
        );
        let hits: Vec<u64> = (0..LOOKUPS)
            .map(|_| keys[rng.below(SET_KEYS as u64) as usize])
            .collect();
        let misses: Vec<u64> = (0..LOOKUPS)
            .map(|_| {
                // Same layout as the set's keys, so a miss lands in a populated leaf.
                if clustered {
                    (keys[rng.below(SET_KEYS as u64) as usize] & !((1 << 40) - 1))
                        | rng.below(1 << 40)
                } else {
                    rng.next_u64()
                }
            })
            .filter(|&k| !set.contains(k))
            .collect();

        let mut g = c.benchmark_group(format!("url_seen_{layout}"));
        g.measurement_time(Duration::from_secs(3))
            .warm_up_time(Duration::from_secs(1))
            .sample_size(20);
        g.throughput(Throughput::Elements(hits.len() as u64));
        g.bench_function("lookup_hit", |b| {
            b.iter(|| hits.iter().filter(|&&k| set.contains(black_box(k))).count())
        });
        g.throughput(Throughput::Elements(misses.len() as u64));
        g.bench_function("lookup_miss", |b| {
            b.iter(|| {
                misses
                    .iter()
                    .filter(|&&k| set.contains(black_box(k)))
                    .count()
            })
        });
        // One iteration builds a whole 1 M-key set: slow, so flat sampling with few samples.
        g.sampling_mode(SamplingMode::Flat).sample_size(10);
        g.throughput(Throughput::Elements(keys.len() as u64));
        g.bench_function("insert_1M", |b| {
            b.iter(|| {
                let mut s = UrlSeen::new();
                for &k in &keys {
                    s.insert(black_box(k));
                }
                s.len()
            })
        });
        g.finish();
    }
}

criterion_group!(benches, normalize, url_seen);
criterion_main!(benches);
