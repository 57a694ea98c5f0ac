//! WARC output of one 15 KB HTML exchange: `WarcWriter::write_exchange` into a temp dir at gzip
//! levels 1 and 6, `write_record` alone (formatting + SHA-1 block digest, no compression), and
//! the CDXJ index line of the response.

mod common;

use std::fs;
use std::hint::black_box;
use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use md5::{Digest, Md5};
use sha1::Sha1;
use spinneret::store::archive::cdxj;
use spinneret::store::archive::warc::{
    self, Exchange, RecordIdGen, RecordType, WarcInfo, WarcWriter,
};

/// Files never rotate during a sample: each sample gets a fresh writer, closed untimed.
const MAX_FILE_BYTES: u64 = 1 << 30;

fn info() -> WarcInfo {
    WarcInfo {
        software: "spinneret/0.1.0 (bench)".into(),
        hostname: "bench".into(),
        operator: None,
        description: None,
        ..WarcInfo::default()
    }
}

fn bench_writer(c: &mut Criterion, dir: &Path) {
    let page = common::realistic_page();
    let mut response = common::response_head(&format!("Content-Length: {}\r\n", page.len()));
    let head_len = response.len();
    response.extend_from_slice(&page);
    let request = b"GET /news/2024/crawling-at-scale HTTP/1.1\r\nHost: www.example.com\r\n\
        User-Agent: spinneret/0.1.0 (+https://example.org/bot)\r\nAccept: */*\r\n\
        Accept-Encoding: gzip\r\nConnection: keep-alive\r\n\r\n";
    let payload_digest: warc::Digest = Sha1::digest(&response[head_len..]).into();
    let ex = Exchange {
        target_uri: "https://www.example.com/news/2024/crawling-at-scale",
        date: SystemTime::UNIX_EPOCH + Duration::from_secs(1_712_052_000),
        ip: Some(IpAddr::V4(Ipv4Addr::new(93, 184, 216, 34))),
        request,
        response: &response,
        payload_digest: Some(payload_digest),
        spooled: None,
        deflated: None,
        truncated: None,
        stored_from: None,
    };
    let exchange_bytes = (request.len() + response.len()) as u64;

    let mut g = c.benchmark_group("warc");
    g.measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1))
        .sample_size(30)
        .throughput(Throughput::Bytes(exchange_bytes));
    for level in [1u32, 6] {
        g.bench_function(format!("write_exchange_15k_gzip{level}"), |b| {
            b.iter_custom(|iters| {
                let mut w =
                    WarcWriter::create(dir, "bench", MAX_FILE_BYTES, level, info(), [7; 16])
                        .expect("bench dir is writable");
                let start = Instant::now();
                for _ in 0..iters {
                    w.write_exchange(black_box(&ex)).expect("write to temp dir");
                }
                let took = start.elapsed();
                // Closing (flush, fsync, rename) and cleanup are not part of the figure.
                for f in w.finish().expect("close WARC") {
                    let _ = fs::remove_file(f);
                }
                took
            })
        });
    }

    // The response record alone, as write_exchange formats it before compressing.
    let mut ids = RecordIdGen::new([3; 16]);
    let mut out = Vec::with_capacity(64 * 1024);
    let fields = [
        ("WARC-Target-URI", ex.target_uri),
        (
            "WARC-Warcinfo-ID",
            "<urn:uuid:3c0b4bb4-3b4a-4b8e-9d8e-2f1d0c7d4e11>",
        ),
        ("WARC-IP-Address", "93.184.216.34"),
        (
            "WARC-Concurrent-To",
            "<urn:uuid:9a1e2c55-7f4b-4c1a-8e0f-5b6d7c8e9f00>",
        ),
        (
            "WARC-Payload-Digest",
            "sha1:VL2MMHO4YXUKFWV63YHTWSBM3GXKSQ2N",
        ),
    ];
    g.throughput(Throughput::Bytes(response.len() as u64));
    g.bench_function("write_record_15k", |b| {
        b.iter(|| {
            out.clear();
            let id = ids.next_id();
            warc::write_record(
                &mut out,
                RecordType::Response,
                &id,
                ex.date,
                &fields,
                "application/http;msgtype=response",
                &[black_box(&response)],
            );
            black_box(out.len())
        })
    });
    // Reference: the block digest alone, the floor under write_record.
    g.bench_function("sha1_15k_reference", |b| {
        b.iter(|| black_box(Sha1::digest(black_box(&response))))
    });
    // The digest before SHA-1, for comparison.
    g.bench_function("md5_15k_reference", |b| {
        b.iter(|| black_box(Md5::digest(black_box(&response))))
    });
    // The CDXJ index line the writer adds for every response record.
    let entry = cdxj::IndexEntry {
        kind: RecordType::Response,
        target_uri: ex.target_uri,
        date: ex.date,
        block: &response,
        content_type: "application/http;msgtype=response",
        payload_digest: Some(payload_digest),
        filename: "spinneret-20240402100000-00000.warc.gz",
        offset: 1_234_567,
        length: 4_567,
        sketch: Some(spinneret::content::Sketch([0xab; 64])),
    };
    g.throughput(Throughput::Elements(1));
    g.bench_function("cdxj_line", |b| {
        b.iter(|| {
            out.clear();
            cdxj::format_line(&mut out, black_box(&entry));
            black_box(out.len())
        })
    });
    g.finish();
}

fn writer(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("spinneret-bench-warc-{}", std::process::id()));
    fs::create_dir_all(&dir).expect("create bench temp dir");
    bench_writer(c, &dir);
    let _ = fs::remove_dir_all(&dir);
}

criterion_group!(benches, writer);
criterion_main!(benches);
