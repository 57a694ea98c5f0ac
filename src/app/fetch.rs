//! The `fetch` command: each given URL once (and its redirects, up to `--max-redirect`
//! hops), stored and logged like a crawl's pages, with no links followed.

use std::collections::VecDeque;
use std::io;
use std::time::Instant;

use slab::Slab;
use url::Url;

use crate::app::cli::{abbrev, FetchArgs};
use crate::app::exit::{usage, ExitStatus, Failure, RunEnd};
use crate::app::report::{eprint_line, Progress, Summary};
use crate::app::run::{
    blocked_notice, conclude, drive, fetch_via, input_lines, with_spool, AppSink, Display, Stop,
    StoringSource, URL_IN_MESSAGES,
};
use crate::app::url_lines::Line;
use crate::crawl::sink::{Hop, Sink, Via};
use crate::crawl::LineTally;
use crate::fetcher::{Crawler, FetchDone, FetchRequest, FetchSource, Next};
use crate::store::output::Output;
use crate::ReturnCode;

/// One URL of the `fetch` list: as given, parsed (unless it does not parse), with its
/// redirect hop count and the URL that redirected to it.
struct Pending {
    text: String,
    url: Option<Url>,
    hops: u8,
    referrer: Option<String>,
}

/// The `fetch` command's work list and sink: every URL once, and the Location of each
/// redirect (up to `max_redirect` hops) right after it.
struct FetchList {
    queue: VecDeque<Pending>,
    /// Hop count and referrer of each request in flight, by tag.
    inflight: Slab<(u8, Option<String>)>,
    sink: AppSink,
    lines: LineTally,
    follow_redirects: bool,
    max_redirect: u8,
    /// First storage error: the run stops and reports it (nothing is silently dropped).
    io_error: Option<io::Error>,
    blocked_seen: bool,
    notice: Option<String>,
}

impl FetchList {
    fn log_unfetched(&mut self, url: &str, via: Via<'_>, outcome: ReturnCode) {
        self.lines.add(outcome, 0);
        if let Err(e) = self.sink.log_unfetched(url, via, outcome) {
            self.io_error.get_or_insert(e);
        }
    }

    /// Ctrl-C or `--max-time`: what was never issued gets its line.
    fn finish_unfetched(&mut self, outcome: ReturnCode) {
        while let Some(p) = self.queue.pop_front() {
            let code = if p.url.is_some() {
                outcome
            } else {
                ReturnCode::HttpBadUrlSyntax
            };
            self.log_unfetched(&p.text, fetch_via(p.hops, p.referrer.as_deref()), code);
        }
    }
}

impl StoringSource for FetchList {
    fn take_io_error(&mut self) -> Option<io::Error> {
        self.io_error.take()
    }

    fn output(&mut self) -> &mut Output {
        &mut self.sink.output
    }

    fn queued(&self) -> u64 {
        self.queue.len() as u64
    }

    fn take_notice(&mut self) -> Option<String> {
        self.notice.take()
    }
}

impl FetchSource for FetchList {
    fn next_fetch(&mut self, _now: Instant) -> Next {
        while let Some(p) = self.queue.pop_front() {
            match p.url {
                Some(url) => {
                    let tag = self.inflight.insert((p.hops, p.referrer)) as u64;
                    return Next::Fetch(FetchRequest { url, tag });
                }
                None => self.log_unfetched(&p.text, Via::seed(), ReturnCode::HttpBadUrlSyntax),
            }
        }
        if self.inflight.is_empty() {
            Next::Done
        } else {
            // A redirect may still add work.
            Next::Idle
        }
    }

    fn fetch_done(&mut self, done: &FetchDone<'_>, _now: Instant) {
        let (hops, referrer) = self
            .inflight
            .try_remove(done.request.tag as usize)
            .unwrap_or((0, None));
        self.lines.add(done.outcome, done.status());
        if let Err(e) = self.sink.store(
            done,
            fetch_via(hops, referrer.as_deref()),
            done.outcome,
            done.payload_digest(),
        ) {
            self.io_error.get_or_insert(e);
        }
        if done.outcome == ReturnCode::PrivateAddressBlocked && !self.blocked_seen {
            self.blocked_seen = true;
            self.notice = Some(blocked_notice(
                done.request.url.host_str().unwrap_or_default(),
            ));
        }
        if !self.follow_redirects
            || !done.outcome.is_success()
            || !(300..400).contains(&done.status())
        {
            return;
        }
        let from = done.request.url.as_str();
        let Some(target) = done
            .head
            .and_then(|h| h.location())
            .and_then(|loc| crate::crawl::urlnorm::normalize(&done.request.url, loc).ok())
        else {
            return; // no usable Location: the 3xx line is the URL's outcome
        };
        if hops >= self.max_redirect {
            let via = Via::new(Some(from), Hop::Redirect);
            self.log_unfetched(target.as_str(), via, ReturnCode::TooManyRedirects);
            return;
        }
        self.queue.push_front(Pending {
            text: target.to_string(),
            url: Some(target),
            hops: hops + 1,
            referrer: Some(from.to_string()),
        });
    }
}

pub fn run_fetch(args: FetchArgs) -> Result<ExitStatus, Failure> {
    let setup = args.common.setup()?;
    let display = Display::of(&args.common);
    let given = input_lines(
        &args.urls,
        args.urls_file.as_deref(),
        crate::crawl::url_filter::DEFAULT_MAX_URL_LENGTH,
    )?;
    if given.is_empty() {
        return Err(usage("no URLs given (pass URLs or -i/--input-file FILE)"));
    }
    let mut queue = VecDeque::new();
    for (place, line) in given {
        let (text, url) = match line {
            Line::Text(text) => {
                let url = Url::parse(&text).ok();
                (text, url)
            }
            Line::TooLong(text) | Line::NotUtf8(text) => (text, None),
        };
        if url.is_none() {
            eprint_line(&format!(
                "spinneret: {place}: not a URL: `{}` (logged as HttpBadUrlSyntax)",
                abbrev(&text, URL_IN_MESSAGES)
            ));
        }
        queue.push_back(Pending {
            text,
            url,
            hops: 0,
            referrer: None,
        });
    }
    let output = Output::create(&setup.output).map_err(Failure::output)?;
    let crawler_config = with_spool(setup.crawler, output.dir()).map_err(Failure::output)?;
    let mut crawler = Crawler::new(crawler_config).map_err(Failure::runtime)?;
    let mut list = FetchList {
        queue,
        inflight: Slab::new(),
        sink: AppSink {
            output,
            verbose: display.verbose,
        },
        lines: LineTally::default(),
        follow_redirects: !args.no_follow_redirects,
        max_redirect: args.common.max_redirect,
        io_error: None,
        blocked_seen: false,
        notice: None,
    };
    let started = Instant::now();
    let mut progress = Progress::new(started, display.progress, None);
    let stop = drive(&mut crawler, &mut list, &mut progress, None)?;
    let end = match stop {
        Stop::Finished => RunEnd::Finished,
        Stop::Interrupted => RunEnd::Interrupted,
        Stop::Deadline => RunEnd::MaxTime,
    };
    if end != RunEnd::Finished {
        list.finish_unfetched(ReturnCode::Interrupted);
        if let Some(e) = list.io_error.take() {
            return Err(Failure::output(e));
        }
    }
    let stats = crawler.stats();
    let dir = list.sink.output.dir().to_path_buf();
    let body_bytes = list.sink.output.stored().body_bytes;
    let written = list.sink.output.finish().map_err(Failure::output)?;
    let summary = Summary {
        urls: &list.lines,
        robots: None,
        stats: &stats,
        body_bytes,
        elapsed: started.elapsed(),
        warc_files: written.warc_files.len(),
    };
    let status = ExitStatus::decide(end, &list.lines);
    let mut json = summary.json(&[]);
    json.uint("exit_status", u64::from(status.code()));
    conclude(
        &dir,
        json.finish(),
        summary.line(),
        status,
        status.reason(end, &list.lines, 0),
        &written,
        display,
    )
}
