//! `http::ResponseDecoder` on 15 KB responses, fed in 16 KB reads as the event loop does and
//! reused via `reset()`: Content-Length, chunked (1 KB chunks), and gzip (+ `decode_content`).

mod common;

use std::hint::black_box;
use std::io::Write;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use flate2::write::GzEncoder;
use flate2::Compression;
use spinneret::http::{decode_content, Limits, Progress, ResponseDecoder};

/// The event loop's read size.
const READ_BYTES: usize = 16 * 1024;
/// Chunk size of the chunked response.
const CHUNK_BYTES: usize = 1024;

/// Feeds `resp` in `READ_BYTES` reads; true when the decoder says the response is complete.
fn feed(dec: &mut ResponseDecoder, resp: &[u8]) -> bool {
    dec.reset(false);
    for read in resp.chunks(READ_BYTES) {
        match dec.process(read) {
            Ok((Progress::Complete, _)) => return true,
            Ok((Progress::NeedMore, _)) => {}
            Err(_) => return false,
        }
    }
    false
}

fn decoder(c: &mut Criterion) {
    let page = common::realistic_page();

    let mut content_length = common::response_head(&format!("Content-Length: {}\r\n", page.len()));
    content_length.extend_from_slice(&page);

    let mut chunked = common::response_head("Transfer-Encoding: chunked\r\n");
    for chunk in page.chunks(CHUNK_BYTES) {
        chunked.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        chunked.extend_from_slice(chunk);
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");

    let mut gz = GzEncoder::new(Vec::new(), Compression::new(6));
    gz.write_all(&page).unwrap();
    let gz_body = gz.finish().unwrap();
    let mut gzip = common::response_head(&format!(
        "Content-Encoding: gzip\r\nContent-Length: {}\r\n",
        gz_body.len()
    ));
    gzip.extend_from_slice(&gz_body);

    let limits = Limits::default();
    let mut dec = ResponseDecoder::new(limits);
    let mut decoded = Vec::new();
    // Check the inputs decode as intended before timing them.
    for resp in [&content_length, &chunked] {
        assert!(feed(&mut dec, resp));
        assert_eq!(dec.body(), &page[..]);
    }
    assert!(feed(&mut dec, &gzip));
    let head = dec.head().expect("complete response has a head");
    assert_eq!(
        decode_content(head, dec.body(), &limits, &mut decoded),
        Ok(true)
    );
    assert_eq!(decoded, page);
    eprintln!(
        "http: page {} bytes; wire: content-length {}, chunked {}, gzip {}",
        page.len(),
        content_length.len(),
        chunked.len(),
        gzip.len()
    );

    let mut g = c.benchmark_group("http_response_decoder");
    g.measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1))
        .sample_size(30);
    // Throughput is wire bytes for the first two; for gzip the decoded page bytes.
    for (name, resp) in [
        ("content_length_15k", &content_length),
        ("chunked_1k_15k", &chunked),
    ] {
        g.throughput(Throughput::Bytes(resp.len() as u64));
        g.bench_function(name, |b| {
            b.iter(|| {
                assert!(feed(&mut dec, black_box(resp)));
                black_box(dec.body().len())
            })
        });
    }
    g.throughput(Throughput::Bytes(page.len() as u64));
    g.bench_function("gzip_15k_decoded", |b| {
        b.iter(|| {
            assert!(feed(&mut dec, black_box(&gzip)));
            let head = dec.head().expect("complete response has a head");
            let ok = decode_content(head, dec.body(), &limits, &mut decoded);
            black_box((ok, decoded.len()))
        })
    });
    g.finish();
}

criterion_group!(benches, decoder);
criterion_main!(benches);
