//! The CPU cost guard's driver (`.ci/cost_guard.py`): a fixed set of generated pages through
//! the work a crawl does for each fetched page, for valgrind to count its instructions.
//!
//! Per page, in the crawl's order: the response fed to `http::ResponseDecoder` in the event
//! loop's 16 KiB reads and its content coding undone (a quarter of the pages are gzip, half
//! of the responses chunked); the payload digest (`fetcher::digest::of`, what
//! `FetchDone::payload_digest` runs); main text with the host's template memory, min-hash sketch, and
//! a query and insert in the near-duplicate index (as `content::near_dups`, which the page
//! worker runs off the event loop: counted here all the same, as CPU per page is); `links::scan`; the
//! found links' URL-seen keys, normalized where the fast key has no answer, against the
//! URL-seen set (as `crawl::done::admit_found` and `queue_new`); the crawl.log line; and the
//! request and response WARC records, gzip at the crawl's default level, with their CDXJ
//! line, written to a temporary directory.
//!
//! `cost [PAGES]` (default 256; `--bench`, which `cargo bench` passes, is ignored). Only
//! `spinneret_cost_pages` is the measurement: the script has callgrind collect inside it
//! alone. Everything else — start-up, generating and gzip-encoding the pages, filling the
//! indexes to a mid-crawl size, a warm-up pass that grows the buffers and teaches the
//! template memory each host — happens outside it, so its count divided by PAGES is the
//! per-page cost. Deterministic: fixed seeds and dates, the same input whatever PAGES is.

mod common;

use std::fs;
use std::io::{self, Write as _};
use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use flate2::write::GzEncoder;
use flate2::Compression;
use spinneret::content::near_dups::{BoxedSpill, DEFAULT_NEAR_DUP_RAM};
use spinneret::content::{MemoryRuns, NearDupIndex, NearDups, Sketch};
use spinneret::crawl::canon::Canon;
use spinneret::crawl::link_key::LinkKeys;
use spinneret::crawl::sink::Hop;
use spinneret::crawl::url_seen::UrlSeen;
use spinneret::crawl::urlnorm;
use spinneret::fetcher::{digest, PayloadDigest, DEFAULT_MAX_SCAN_BYTES};
use spinneret::http::{decode_content_with, DecodeOptions, Limits, Progress, ResponseDecoder};
use spinneret::links::{self, Links};
use spinneret::robots::Directives;
use spinneret::store::archive::crawl_log::{self, LogLine};
use spinneret::store::archive::output::DEFAULT_GZIP_LEVEL;
use spinneret::store::archive::warc::{Exchange, WarcInfo, WarcWriter, WriterOptions};
use spinneret::ReturnCode;
use url::Url;

/// Pages measured when no count is given: about 10 s under callgrind.
const DEFAULT_PAGES: usize = 256;
/// Pages run before the measurement: four per host, so the template memory knows every
/// host's boilerplate (it needs four pages) as it would mid-crawl.
const WARMUP_PAGES: usize = 32;
/// Sites the pages are spread over.
const HOSTS: usize = 8;
/// The event loop's read size.
const READ_BYTES: usize = 16 * 1024;
/// Chunk size of the chunked responses.
const CHUNK_BYTES: usize = 4096;
/// Fingerprints in the near-duplicate index before the first page: 256 full pending buffers,
/// merged into one run, so that a query searches a run and the pending buffer as mid-crawl,
/// and 256 measured pages seal exactly one more run (what each 256 pages cost).
const PREFILL_FINGERPRINTS: u64 = 256 * 256;
/// URLs in the URL-seen set before the first page (other sites'), so that look-ups and
/// inserts walk a set of a crawl's size rather than a nearly empty one.
const PREFILL_URLS: usize = 100_000;

/// One fetched page: what went over the wire, and what it must decode to.
struct Page {
    url: Url,
    referrer: String,
    date: SystemTime,
    ip: IpAddr,
    request: Vec<u8>,
    response: Vec<u8>,
    html: Vec<u8>,
}

/// The `i`th page: article text from its own seed, on host `i % HOSTS`; one in four
/// responses gzip-encoded, half of them chunked (both codings, as nginx serves dynamic pages).
fn page(i: usize) -> Page {
    let html = common::page_from_seed(0x5eed_0000 + 2 * i as u64);
    let host = format!("www.site{}.example", i % HOSTS);
    let path = format!("/news/2024/{i:05}/story.html");
    let url = Url::parse(&format!("https://{host}{path}")).expect("page URL parses");
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: spinneret/0.1.0 \
         (+https://example.org/bot)\r\nAccept: */*\r\nAccept-Encoding: gzip\r\n\
         Connection: keep-alive\r\n\r\n"
    )
    .into_bytes();
    let gzip = i % 4 == 0;
    let chunked = i % 2 == 0;
    let body = if gzip {
        let mut gz = GzEncoder::new(Vec::new(), Compression::new(6));
        gz.write_all(&html).expect("gzip to memory");
        gz.finish().expect("gzip to memory")
    } else {
        html.clone()
    };
    let coding = if gzip {
        "Content-Encoding: gzip\r\n"
    } else {
        ""
    };
    let mut response = if chunked {
        common::response_head(&format!("{coding}Transfer-Encoding: chunked\r\n"))
    } else {
        common::response_head(&format!("{coding}Content-Length: {}\r\n", body.len()))
    };
    if chunked {
        for chunk in body.chunks(CHUNK_BYTES) {
            response.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
            response.extend_from_slice(chunk);
            response.extend_from_slice(b"\r\n");
        }
        response.extend_from_slice(b"0\r\n\r\n");
    } else {
        response.extend_from_slice(&body);
    }
    Page {
        url,
        referrer: format!("https://{host}/"),
        date: SystemTime::UNIX_EPOCH + Duration::from_secs(1_712_052_000 + i as u64),
        ip: IpAddr::V4(Ipv4Addr::new(93, 184, 216, (i % HOSTS) as u8)),
        request,
        response,
        html,
    }
}

/// What the pages came to: printed, so a change of workload shows beside a change of count.
#[derive(Default)]
struct Totals {
    pages: u64,
    wire_bytes: u64,
    gzip: u64,
    links: u64,
    /// Links whose URL-seen key was in the set already.
    known: u64,
    admitted: u64,
    bad_links: u64,
    fingerprinted: u64,
    near_duplicates: u64,
    log_bytes: u64,
    /// All payload digests and sketches folded together: equal between runs, or the input
    /// was not deterministic.
    check: u64,
}

/// The fetcher's part: the response decoder and the buffer of decoded content.
struct Fetcher {
    limits: Limits,
    decoder: ResponseDecoder,
    decoded: Vec<u8>,
}

/// A response as the crawl gets it.
struct Response<'a> {
    status: u16,
    /// Head and body as received.
    raw: &'a [u8],
    /// The bytes after the head as received: what the payload digest covers.
    payload: &'a [u8],
    /// The body with transfer and content coding undone.
    content: &'a [u8],
    gzip: bool,
}

impl Fetcher {
    /// The response fed in the event loop's reads, then its content coding undone (what the
    /// fetcher's completions `prepare`). Not inlined, here and in the other stages, so that
    /// the library code inlined into them is counted under the stage's name.
    #[inline(never)]
    fn receive(&mut self, page: &Page) -> io::Result<Response<'_>> {
        self.decoder.reset(false);
        let mut complete = false;
        for read in page.response.chunks(READ_BYTES) {
            match self.decoder.process(read) {
                Ok((Progress::Complete, _)) => {
                    complete = true;
                    break;
                }
                Ok((Progress::NeedMore, _)) => {}
                Err(e) => return Err(io::Error::other(format!("{}: {e:?}", page.url))),
            }
        }
        let head = match self.decoder.head() {
            Some(head) if complete => head,
            _ => return Err(io::Error::other(format!("{}: incomplete", page.url))),
        };
        let raw = self.decoder.raw();
        let body = self.decoder.body();
        let opts = DecodeOptions {
            keep: DEFAULT_MAX_SCAN_BYTES,
            input_complete: true,
        };
        let decoded = decode_content_with(head, body, &self.limits, opts, &mut self.decoded)
            .map_err(|e| io::Error::other(format!("{}: {e:?}", page.url)))?;
        Ok(Response {
            status: head.status,
            raw,
            payload: &raw[self.decoder.head_len()..],
            content: if decoded.is_some() {
                &self.decoded
            } else {
                body
            },
            gzip: decoded.is_some(),
        })
    }
}

/// `content::NearDups` with an index already holding [`PREFILL_FINGERPRINTS`], as mid-crawl.
fn near_dups(rng: &mut common::Rng) -> NearDups {
    let mut index: NearDupIndex<BoxedSpill> =
        NearDupIndex::new(DEFAULT_NEAR_DUP_RAM, Box::new(MemoryRuns::default()));
    for id in 0..PREFILL_FINGERPRINTS {
        let mut sketch = [0u8; 64];
        for chunk in sketch.chunks_exact_mut(8) {
            chunk.copy_from_slice(&rng.next_u64().to_le_bytes());
        }
        index.insert(&Sketch(sketch), id).expect("in-memory index");
    }
    NearDups::with_index(index)
}

/// The crawl's link work: found links, the URL-seen set, the page's outlinks.
struct LinkWork {
    found: Links,
    seen: UrlSeen,
    outlinks: Vec<u64>,
}

impl LinkWork {
    /// A URL-seen set already holding [`PREFILL_URLS`].
    fn new(rng: &mut common::Rng) -> LinkWork {
        let mut seen = UrlSeen::new();
        for _ in 0..PREFILL_URLS {
            seen.insert(rng.next_u64());
        }
        LinkWork {
            found: Links::new(),
            seen,
            outlinks: Vec::new(),
        }
    }

    /// `Crawl::scan_links`: the links, resolved against the page's `<base>` if it declares
    /// one, admitted.
    #[inline(never)]
    fn scan(&mut self, html: &[u8], url: &Url, t: &mut Totals) {
        links::scan(html, &mut self.found);
        let declared = self
            .found
            .base()
            .and_then(|b| urlnorm::normalize(url, b).ok());
        let base = declared.as_ref().unwrap_or(url);
        admit_found(&self.found, base, &mut self.seen, &mut self.outlinks, t);
    }
}

/// The sink's part: the crawl.log line and the WARC records.
struct Store {
    log_line: Vec<u8>,
    warc: WarcWriter,
}

impl Store {
    /// What `store::archive::output`'s `record_as` and the writer thread do for a page
    /// stored in full.
    #[inline(never)]
    fn record(
        &mut self,
        page: &Page,
        r: &Response<'_>,
        payload_digest: PayloadDigest,
        page_sketch: Option<Sketch>,
    ) -> io::Result<()> {
        self.log_line.clear();
        crawl_log::format_line(
            &mut self.log_line,
            &LogLine {
                time: page.date,
                outcome: ReturnCode::Success,
                status: r.status,
                body_bytes: r.payload.len() as u64,
                fetch_ms: 120,
                url: page.url.as_str(),
                referrer: Some(&page.referrer),
                hop: Some(Hop::Link),
                digest: Some(payload_digest),
                revisit: None,
                relevance: None,
                sketch: page_sketch,
                noindex: false,
            },
        );
        let exchange = Exchange {
            target_uri: page.url.as_str(),
            date: page.date,
            ip: Some(page.ip),
            request: &page.request,
            response: r.raw,
            payload_digest: Some(payload_digest),
            truncated: None,
            spooled: None,
            deflated: None,
            stored_from: None,
        };
        self.warc
            .write_exchange_with_sketch(&exchange, page_sketch)?;
        Ok(())
    }
}

/// A crawl partition's per-page state, in the crawl's default configuration.
struct Pipeline {
    fetcher: Fetcher,
    near_dups: NearDups,
    links: LinkWork,
    store: Store,
    totals: Totals,
}

impl Pipeline {
    fn new(warc: WarcWriter) -> Pipeline {
        let mut rng = common::Rng::new(0xc057);
        Pipeline {
            fetcher: Fetcher {
                limits: Limits::default(),
                decoder: ResponseDecoder::new(Limits::default()),
                decoded: Vec::new(),
            },
            near_dups: near_dups(&mut rng),
            links: LinkWork::new(&mut rng),
            store: Store {
                log_line: Vec::new(),
                warc,
            },
            totals: Totals::default(),
        }
    }

    /// One page, start to end, in the crawl's order. Errors are the driver's bugs (or a full
    /// disk): no page fails.
    fn page(&mut self, page: &Page) -> io::Result<()> {
        let r = self.fetcher.receive(page)?;
        // What `FetchDone::payload_digest` runs.
        let payload_digest = digest::of(r.payload);
        let host = page.url.host_str().unwrap_or_default().as_bytes();
        let print = self
            .near_dups
            .page(r.content, host)
            .map(|p| (p.sketch, p.near_duplicate));
        if let Some(e) = self.near_dups.take_error() {
            return Err(e);
        }
        self.links.scan(r.content, &page.url, &mut self.totals);
        let page_sketch = print.map(|(sketch, _)| sketch);
        self.store.record(page, &r, payload_digest, page_sketch)?;

        let t = &mut self.totals;
        t.pages += 1;
        t.wire_bytes += r.raw.len() as u64;
        t.gzip += u64::from(r.gzip);
        t.fingerprinted += u64::from(print.is_some());
        t.near_duplicates += u64::from(print.is_some_and(|(_, near)| near));
        t.log_bytes += self.store.log_line.len() as u64;
        let digest_word = u64::from_le_bytes(payload_digest[..8].try_into().expect("8 bytes"));
        let sketch_word =
            page_sketch.map_or(0, |s| u64::from_le_bytes(s.0[..8].try_into().unwrap()));
        t.check = t.check.rotate_left(5) ^ digest_word ^ sketch_word;
        Ok(())
    }
}

/// The link work of `crawl::done::admit_found` and `Crawl::queue_new` for every link (page
/// requisites on, as by default; no URL filter): the URL-seen key straight from the `href`
/// where `LinkKeys` is sure of it, else normalization and `url_key` (both canonicalized, as the
/// crawl's `Canon` does by default); known URLs end there, new ones go into the set. The
/// page's robots `<meta>`s are read and its `rel="nofollow"` links skipped, as admission does.
/// Outlinks' keys are gathered for the link graph.
fn admit_found(
    found: &Links,
    base: &Url,
    seen: &mut UrlSeen,
    outlinks: &mut Vec<u64>,
    t: &mut Totals,
) {
    outlinks.clear();
    let canon = Canon::default();
    let page = found.robots_meta().fold(Directives::default(), |d, c| {
        d.and(Directives::from_meta(c))
    });
    let mut keys = LinkKeys::new(base);
    for (kind, href, nofollow) in found.iter_rel() {
        t.links += 1;
        let outlink = !kind.is_requisite();
        if outlink && (nofollow || page.nofollow) {
            continue;
        }
        let key = keys.as_mut().and_then(|k| k.key(href, &canon));
        if let (true, Some(key)) = (outlink, key) {
            outlinks.push(key);
        }
        if key.is_some_and(|key| seen.contains(key)) {
            t.known += 1;
            continue;
        }
        match urlnorm::normalize(base, href) {
            Ok(url) => {
                if outlink && key.is_none() {
                    outlinks.push(canon.url_key(&url));
                }
                if seen.insert(canon.url_key(&url)) {
                    t.admitted += 1;
                } else {
                    t.known += 1;
                }
            }
            Err(_) => t.bad_links += 1,
        }
    }
}

/// The measurement: callgrind collects inside this function only (`--toggle-collect`), so
/// its name is fixed and it is never inlined.
#[no_mangle]
#[inline(never)]
fn spinneret_cost_pages(pipeline: &mut Pipeline, pages: &[Page]) -> io::Result<()> {
    for page in pages {
        pipeline.page(page)?;
    }
    Ok(())
}

/// Decodes every page with a scratch decoder and checks it comes back as generated, so a
/// wrong input cannot pass for a cheap page.
fn check_inputs(pages: &[Page]) {
    let limits = Limits::default();
    let mut decoder = ResponseDecoder::new(limits);
    let mut out = Vec::new();
    for page in pages {
        decoder.reset(false);
        let (progress, _) = decoder.process(&page.response).expect("response decodes");
        assert_eq!(progress, Progress::Complete, "{}", page.url);
        let head = decoder.head().expect("complete response has a head");
        let decoded = decode_content_with(
            head,
            decoder.body(),
            &limits,
            DecodeOptions {
                keep: usize::MAX,
                input_complete: true,
            },
            &mut out,
        )
        .expect("content decodes");
        let content = if decoded.is_some() {
            &out[..]
        } else {
            decoder.body()
        };
        assert!(content == page.html, "{} decodes to its page", page.url);
    }
}

fn main() -> io::Result<()> {
    let pages_arg = std::env::args().skip(1).find(|a| !a.starts_with("--"));
    let n = match pages_arg {
        Some(a) => a
            .parse::<usize>()
            .map_err(|_| io::Error::other(format!("usage: cost [PAGES] (not {a:?})")))?,
        None => DEFAULT_PAGES,
    };
    let pages: Vec<Page> = (0..WARMUP_PAGES + n).map(page).collect();
    check_inputs(&pages);
    let (warmup, measured) = pages.split_at(WARMUP_PAGES);

    let dir: PathBuf = std::env::temp_dir().join(format!("spinneret-cost-{}", std::process::id()));
    fs::create_dir_all(&dir)?;
    let info = WarcInfo {
        software: "spinneret/0.1.0 (cost)".into(),
        hostname: "cost".into(),
        ..WarcInfo::default()
    };
    let options = WriterOptions {
        cdxj: true,
        ..WriterOptions::default()
    };
    let writer = WarcWriter::create_with(
        &dir,
        "cost",
        1 << 30,
        DEFAULT_GZIP_LEVEL,
        info,
        [7; 16],
        options,
    )?;
    let mut pipeline = Pipeline::new(writer);
    for page in warmup {
        pipeline.page(page)?;
    }
    pipeline.totals = Totals::default();
    let warc_before = pipeline.store.warc.bytes_written();

    spinneret_cost_pages(&mut pipeline, measured)?;

    let warc_bytes = pipeline.store.warc.bytes_written() - warc_before;
    let t = std::mem::take(&mut pipeline.totals);
    pipeline.store.warc.finish()?;
    fs::remove_dir_all(&dir)?;
    eprintln!(
        "cost: {} pages ({} gzip), {} bytes on the wire, {} links ({} known, {} admitted, {} \
         bad), {} fingerprinted ({} near-duplicates), {} crawl.log bytes, {} WARC bytes, \
         check {:016x}",
        t.pages,
        t.gzip,
        t.wire_bytes,
        t.links,
        t.known,
        t.admitted,
        t.bad_links,
        t.fingerprinted,
        t.near_duplicates,
        t.log_bytes,
        warc_bytes,
        t.check
    );
    Ok(())
}
