//! The near-duplicate cores: main text + min-hash sketch per page (goal: ≤ 10 µs for a 15 KB
//! page), and the near-duplicate index's query + insert at a million sketches, in RAM and
//! with its runs spilled (to the in-memory store: the read path without a disk).

mod common;

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use spinneret::content::{sketch, MainText, MemoryRuns, NearDupIndex, Sketch, TemplateMemory};

/// CPU time this thread has used.
fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the call's duration.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

fn page(c: &mut Criterion) {
    let page = common::realistic_page();
    let mut mt = MainText::new();
    let text = mt.extract(&page, usize::MAX).to_vec();
    eprintln!(
        "content: generated page is {} bytes, {} of text, {} of main text ({} shingles)",
        page.len(),
        mt.page_text().len(),
        text.len(),
        sketch(&text).shingles
    );
    let mut memory = TemplateMemory::new(16);
    let mut g = c.benchmark_group("content_page");
    g.measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1))
        .sample_size(30)
        .throughput(Throughput::Bytes(page.len() as u64));
    g.bench_function("main_text+sketch/generated_15k", |b| {
        b.iter(|| sketch(mt.extract(black_box(&page), usize::MAX)))
    });
    // The same in this thread's CPU time: on a shared machine, wall time also counts the
    // time other processes had the core.
    g.bench_function("main_text+sketch/generated_15k/thread_cpu_time", |b| {
        b.iter_custom(|iters| {
            let start = thread_cpu_time();
            for _ in 0..iters {
                black_box(sketch(mt.extract(black_box(&page), usize::MAX)));
            }
            thread_cpu_time() - start
        })
    });
    g.bench_function("main_text+memory+sketch/generated_15k", |b| {
        b.iter(|| {
            sketch(mt.extract_with_memory(
                black_box(&page),
                usize::MAX,
                &mut memory,
                b"www.example.com",
            ))
        })
    });
    g.bench_function("main_text/generated_15k", |b| {
        b.iter(|| mt.extract(black_box(&page), usize::MAX).len())
    });
    g.throughput(Throughput::Bytes(text.len() as u64));
    g.bench_function("sketch/main_text_of_15k", |b| {
        b.iter(|| sketch(black_box(&text)))
    });
    g.finish();
}

fn index(c: &mut Criterion) {
    const N: u64 = 1_000_000;
    let mut g = c.benchmark_group("near_dup_1M");
    g.measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1))
        .sample_size(30);
    // 200 bytes a sketch: 1M fit in 200 MB; the small budget spills all but the newest.
    let random_sketch = |rng: &mut common::Rng| {
        let mut s = [0u8; 64];
        for chunk in s.chunks_exact_mut(8) {
            chunk.copy_from_slice(&rng.next_u64().to_le_bytes());
        }
        Sketch(s)
    };
    for (name, budget) in [("ram", 512 << 20), ("spilled_8MiB_budget", 8 << 20)] {
        let mut rng = common::Rng::new(0x6e64);
        let mut index = NearDupIndex::new(budget, MemoryRuns::default());
        for id in 0..N {
            index.insert(&random_sketch(&mut rng), id).unwrap();
        }
        eprintln!(
            "near_dup {name}: {} sketches, {} spilled runs, {:.1} MiB in RAM",
            index.len(),
            index.spilled_runs(),
            index.memory_bytes() as f64 / (1 << 20) as f64
        );
        let mut id = N;
        g.bench_function(format!("query+insert/{name}"), |b| {
            b.iter(|| {
                let s = random_sketch(&mut rng);
                let m = index.earliest(black_box(&s), 110).unwrap();
                index.insert(&s, id).unwrap();
                id += 1;
                m
            })
        });
    }
    g.finish();
}

criterion_group!(benches, page, index);
criterion_main!(benches);
