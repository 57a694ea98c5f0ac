//! Compressing one WARC record (a 15 KB HTML response with its WARC and HTTP heads) at level
//! 1: what the writer uses (`BlockDeflater`: zlib-rs level 1 in the default build, ISA-L level
//! 0 with the opt-in `isal` feature), zlib-rs through flate2 directly (the engine for levels
//! 2-9) and libdeflate (whole-buffer, which suits one member per record; a candidate for the
//! default, measured and not chosen: as fast as zlib-rs here, 10 % more CPU per page in a
//! crawl, for 25 % smaller files). Prints each one's compressed size so
//! the ratio is beside the speed.

mod common;

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use flate2::{Compress, Compression, FlushCompress};
use spinneret::store::archive::warc::BlockDeflater;

fn record() -> Vec<u8> {
    let page = common::realistic_page();
    let mut r = b"WARC/1.1\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:0a2b3c4d-0000-4000-8000-000000000001>\r\n\
        WARC-Date: 2026-11-23T05:00:00Z\r\nWARC-Target-URI: https://www.example.com/news/2024/crawling-at-scale\r\n\
        Content-Type: application/http;msgtype=response\r\n\r\n"
        .to_vec();
    r.extend_from_slice(&common::response_head(&format!(
        "Content-Length: {}\r\n",
        page.len()
    )));
    r.extend_from_slice(&page);
    r.extend_from_slice(b"\r\n\r\n");
    r
}

fn zlib_rs(c: &mut Compress, data: &[u8], out: &mut Vec<u8>) -> usize {
    c.reset();
    out.clear();
    out.resize(data.len() + data.len() / 1000 + 64, 0);
    c.compress(data, out, FlushCompress::Finish).unwrap();
    c.total_out() as usize
}

fn bench(cr: &mut Criterion) {
    let data = record();
    let mut out = Vec::new();
    let mut z = Compress::new(Compression::new(1), false);
    let z_len = zlib_rs(&mut z, &data, &mut out);
    let mut d = libdeflater::Compressor::new(libdeflater::CompressionLvl::new(1).unwrap());
    let mut dout = vec![0u8; d.gzip_compress_bound(data.len())];
    let d_len = d.gzip_compress(&data, &mut dout).unwrap();
    let mut ours = BlockDeflater::new(1, false);
    let mut buf = Some(ours.deflate(&data, None, Vec::new()).unwrap().into_buffer());
    let o_len = buf.as_ref().map_or(0, Vec::len);
    eprintln!(
        "record {} B: ours (level 1) -> {} B deflate ({:.3}), zlib-rs level 1 -> {} B deflate \
         ({:.3}), libdeflate level 1 -> {} B gzip ({:.3}, 18 B of gzip framing included)",
        data.len(),
        o_len,
        o_len as f64 / data.len() as f64,
        z_len,
        z_len as f64 / data.len() as f64,
        d_len,
        d_len as f64 / data.len() as f64
    );
    let mut g = cr.benchmark_group("deflate");
    g.measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1))
        .throughput(Throughput::Bytes(data.len() as u64));
    g.bench_function("ours_level1", |b| {
        b.iter(|| {
            let block = ours
                .deflate(black_box(&data), None, buf.take().unwrap())
                .unwrap();
            buf = Some(black_box(block).into_buffer());
        })
    });
    g.bench_function("zlib_rs_level1", |b| {
        b.iter(|| black_box(zlib_rs(&mut z, black_box(&data), &mut out)))
    });
    g.bench_function("libdeflate_level1", |b| {
        b.iter(|| black_box(d.gzip_compress(black_box(&data), &mut dout).unwrap()))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
