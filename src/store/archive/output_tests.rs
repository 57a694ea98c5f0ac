//! The store's side of a fetch's one wall time: its crawl.log line, its WARC records and
//! its crawl database record are all dated by [`FetchDone::at`], whatever the clock says
//! when they are written; a URL ended without a fetch, by the time the crawl gives.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use url::Url;

use crate::store::state::crawl_db::CrawlDb;

use super::*;
use crate::crawl::revisit::unix_secs;
use crate::crawl::revisit::Seen;
use crate::crawl::schedule::PageHistory;
use crate::fetcher::{Completion, FetchRequest};
use crate::http::{Limits, ResponseDecoder};
use crate::store::archive::warc::reader::read_records;
use crate::store::test_dir::TempDir;

#[test]
fn a_fetch_is_dated_by_its_one_wall_time_everywhere() {
    let dir = TempDir::new("output", "one-wall-time");
    let db = Arc::new(CrawlDb::open(&dir.0.join("crawl.db")).unwrap());
    let mut output = Output::create(&OutputConfig {
        crawl_db: Some(db.clone()),
        page_worker: false,
        ..OutputConfig::new(dir.0.clone(), "t")
    })
    .unwrap();
    // Long ago, to the millisecond: no clock reading could be mistaken for it.
    let at = UNIX_EPOCH + Duration::from_millis(1_500_000_000_123);
    let mut decoder = ResponseDecoder::new(Limits::default());
    decoder.reset(false);
    decoder
        .process(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nhi")
        .unwrap();
    let url = "http://a.test/x";
    let request = FetchRequest::new(Url::parse(url).unwrap(), 0);
    let completion = Completion {
        decoder: Some(decoder),
        request_bytes: b"GET /x HTTP/1.1\r\nHost: a.test\r\n\r\n".to_vec(),
        sent: true,
        ..Completion::without_response(request, ReturnCode::Success, at)
    };
    let done = completion.done();
    let scheduled = Scheduled {
        last: None,
        seen: Seen::Unknown,
        // As the crawl has it: the same wall time.
        at: unix_secs(done.at),
        history: PageHistory::default(),
        due: unix_secs(at) + 3600,
        depth: 0,
        hop: Hop::Seed,
        relevance: None,
        sketch: None,
        fingerprint: false,
        noindex: false,
    };
    let digest = done.payload_digest();
    output
        .record_as(
            &done,
            Via::seed(),
            ReturnCode::Success,
            digest,
            Some(&scheduled),
        )
        .unwrap();
    // A URL ended without a fetch is dated by the time it is given, too.
    let later = at + Duration::from_millis(5);
    output
        .record_unfetched(url, Via::seed(), ReturnCode::RobotsExcluded, later, None)
        .unwrap();
    let written = output.finish().unwrap();

    let log = std::fs::read_to_string(dir.0.join("crawl.log")).unwrap();
    let times: Vec<SystemTime> = log
        .lines()
        .filter_map(crawl_log::parse_line)
        .map(|l| l.time)
        .collect();
    assert_eq!(times, [at, later], "crawl.log: {log}");

    let warc = std::fs::read(&written.warc_files[0]).unwrap();
    let records = read_records(&warc).unwrap();
    let dated: Vec<&str> = records
        .iter()
        .filter(|r| r.header("WARC-Target-URI") == Some(url))
        .filter_map(|r| r.header("WARC-Date"))
        .collect();
    assert_eq!(dated, ["2017-07-14T02:40:00Z"; 2], "request and response");
    assert_eq!(
        crate::datetime::rfc3339_millis(at),
        "2017-07-14T02:40:00.123Z",
        "the same instant, to the second"
    );
    let record = db.get(url).unwrap().expect("a database record");
    assert_eq!(record.last.fetched_at, unix_secs(at));
}
