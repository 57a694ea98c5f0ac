//! `links::scan` throughput on realistic pages and on hostile inputs, plus the naive reference
//! on the realistic page for comparison. Target: ≥ 1 GB/s on realistic pages.

mod common;

use std::hint::black_box;
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};
use spinneret::links::{self, Links};

const MB: usize = 1024 * 1024;

fn group_config<'a>(c: &'a mut Criterion, name: &str) -> BenchmarkGroup<'a, WallTime> {
    let mut g = c.benchmark_group(name);
    g.measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1))
        .sample_size(30);
    g
}

fn realistic(c: &mut Criterion) {
    let page = common::realistic_page();
    let mut out = Links::new();
    links::scan(&page, &mut out);
    eprintln!(
        "links: generated page is {} bytes with {} links",
        page.len(),
        out.len()
    );
    let fixtures: [(&str, &[u8]); 4] = [
        ("generated_15k", &page),
        (
            "news.html",
            include_bytes!("../src/links/testdata/news.html"),
        ),
        (
            "shop.html",
            include_bytes!("../src/links/testdata/shop.html"),
        ),
        (
            "legacy.html",
            include_bytes!("../src/links/testdata/legacy.html"),
        ),
    ];
    let mut g = group_config(c, "links_scan");
    for (name, html) in fixtures {
        g.throughput(Throughput::Bytes(html.len() as u64));
        g.bench_function(name, |b| {
            b.iter(|| {
                links::scan(black_box(html), &mut out);
                black_box(out.len())
            })
        });
    }
    g.throughput(Throughput::Bytes(page.len() as u64));
    g.bench_function("naive/generated_15k", |b| {
        b.iter(|| black_box(links::naive::scan(black_box(&page))))
    });
    g.finish();
}

/// Inputs built to make a scanner slow: each should still run at memchr-like speed.
fn pathological(c: &mut Criterion) {
    let mut inputs: Vec<(&str, Vec<u8>)> = Vec::new();
    inputs.push(("1MB_of_lt", vec![b'<'; MB]));

    // Near misses of `-->` all the way, and no end.
    let mut comment = b"<!--".to_vec();
    while comment.len() < MB {
        comment.extend_from_slice(b"x -- -> --! - > ");
    }
    inputs.push(("unclosed_comment_1MB", comment));

    let mut attr = b"<p><a href=\"".to_vec();
    attr.resize(MB, b'a');
    attr.extend_from_slice(b"\">x</a>");
    inputs.push(("attribute_1MB", attr));

    let mut many = Vec::with_capacity(3 * MB);
    for i in 0..100_000 {
        many.extend_from_slice(format!("<a href=/p/{i}>{i}</a>\n").as_bytes());
    }
    inputs.push(("100k_links", many));

    // Script full of `<`, `</` and `</scrip` near misses before the real end tag.
    let mut script = b"<script>".to_vec();
    while script.len() < MB {
        script.extend_from_slice(
            b"if (a<b && c</d) { s = '</scrip' + 't>'; x = \"<a href=/no>\"; }\n",
        );
    }
    script.extend_from_slice(b"</script><a href=/after>ok</a>");
    inputs.push(("script_body_1MB", script));

    let mut out = Links::new();
    let mut g = group_config(c, "links_scan_hostile");
    g.sample_size(20);
    for (name, html) in &inputs {
        g.throughput(Throughput::Bytes(html.len() as u64));
        g.bench_function(*name, |b| {
            b.iter(|| {
                links::scan(black_box(html), &mut out);
                black_box(out.len())
            })
        });
    }
    g.finish();
}

criterion_group!(benches, realistic, pathological);
criterion_main!(benches);
