//! The `fetch` command: each given URL once (and its redirects, up to `--max-redirect`
//! hops), stored and logged like a crawl's pages, with no links followed.
//!
//! The list is fetched host by host, in memory flat in its length: it is read lazily
//! ([`super::url_lines`]), only as many URLs ahead of what was fetched as `--frontier-ram`
//! holds (64 Ki by default), into a frontier (`crawl::frontier`, ARCHITECTURE §8) whose back
//! queues each hold one host's URLs, so a list in any order reaches a host's URLs one after
//! another on its connection, one request at a time per host and `--delay` apart. What
//! redirects add past that budget spills to segment files in `OUT/.fetch-frontier` (made
//! when first needed, removed at the end). Every line ends in exactly one crawl.log line: a fetched URL when it is fetched,
//! a bad line (not a URL, not UTF-8, too long) when it is read, and at Ctrl-C whatever is
//! queued or still unread as `Interrupted`.

use std::collections::VecDeque;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use slab::Slab;
use url::Url;

use crate::app::cli::FetchArgs;
use crate::app::config::{self, with_spool};
use crate::app::drive::{blocked_notice, conclude, drive, Stop, StoringSource};
use crate::app::exit::{usage, ExitStatus, Failure, RunEnd};
use crate::app::report::{abbrev, eprint_line, Progress, Summary, URL_IN_MESSAGES};
use crate::app::url_lines::{Line, UrlLines};
use crate::codec::{get_bytes, put_bytes};
use crate::crawl::frontier::{BackQueueId, Frontier, FrontierConfig, Pop};
use crate::crawl::sink::{Hop, Sink, Via};
use crate::crawl::spill::{BatchRef, SpillStore, Spillable};
use crate::crawl::url_seen::url_key;
use crate::crawl::LineTally;
use crate::crawl::{Auth, AuthVerdict};
use crate::fetcher::{Crawler, FetchDone, FetchRequest, FetchSource, Next};
use crate::http::cookies::CookieJar;
use crate::store::archive::output::Output;
use crate::store::state::segments::SegmentSpill;
use crate::ReturnCode;

/// URLs read ahead of what was fetched at least, whatever `--frontier-ram` says: enough for
/// many hosts to have work.
const MIN_READ_AHEAD: usize = 4096;
/// Lines read in one `next_fetch` call: reading ahead never keeps the loop from its sockets
/// for more than a few milliseconds.
const MAX_READ_PER_CALL: usize = 4096;
/// What a queued URL costs in memory (its text, the host name while it waits for a back
/// queue, the queue slot and its slack, allocator overhead): turns `--frontier-ram` into a
/// count. Measured: 50,000 queued URLs of 40 bytes add about 8.6 MB (172 bytes each).
const ENTRY_RAM_ESTIMATE: usize = 256;
/// Front-queue priorities: a redirect's target before the rest of the list.
const PRIORITY_REDIRECT: usize = 0;
const PRIORITY_LISTED: usize = 1;
/// Bad lines named on stderr; the rest only in crawl.log (a list may hold millions).
const MAX_LINE_MESSAGES: u32 = 20;
/// Where the frontier spills, in the output directory.
const SPILL_DIR: &str = ".fetch-frontier";

/// A URL waiting in the frontier: its text (parsed again when it is fetched, which costs
/// less memory than keeping the parsed form), its redirect hop count and the URL that
/// redirected to it.
struct Listed {
    url: String,
    hops: u8,
    referrer: Option<Box<str>>,
}

impl Spillable for Listed {
    fn encode(&self, out: &mut Vec<u8>) {
        put_bytes(out, self.url.as_bytes());
        out.push(self.hops);
        put_bytes(out, self.referrer.as_deref().unwrap_or("").as_bytes());
    }

    fn decode(input: &mut &[u8]) -> Option<Listed> {
        let url = String::from_utf8(get_bytes(input)?.to_vec()).ok()?;
        let (&hops, rest) = input.split_first()?;
        *input = rest;
        let referrer = std::str::from_utf8(get_bytes(input)?).ok()?;
        Some(Listed {
            url,
            hops,
            referrer: (!referrer.is_empty()).then(|| referrer.into()),
        })
    }
}

/// A request in flight: its host's back queue (busy until it ends), hop count and referrer.
struct InFlight {
    queue: BackQueueId,
    hops: u8,
    referrer: Option<Box<str>>,
}

/// Where a given line came from, for messages.
#[derive(Clone, Copy, Debug)]
enum Place {
    Argument(usize),
    Line(u64),
}

/// The given URLs not read yet: the arguments, then the lines of the list file.
struct Given {
    args: std::vec::IntoIter<String>,
    args_read: usize,
    file: Option<(PathBuf, UrlLines<std::fs::File>)>,
    /// A line read to see that there is one, not yet handed out.
    peeked: Option<(Place, Line)>,
    /// The list could not be read to its end.
    error: Option<String>,
}

impl Given {
    fn open(args: Vec<String>, file: Option<&Path>, max_len: usize) -> Result<Given, Failure> {
        let file = match file {
            Some(path) => {
                let f = std::fs::File::open(path)
                    .map_err(|e| usage(format!("{}: {e}", path.display())))?;
                Some((path.to_path_buf(), UrlLines::new(f, max_len)))
            }
            None => None,
        };
        Ok(Given {
            args: args.into_iter(),
            args_read: 0,
            file,
            peeked: None,
            error: None,
        })
    }

    /// The next given line; `None` at the end (or at a read error, kept in `error`).
    fn next(&mut self) -> Option<(Place, Line)> {
        if let Some(p) = self.peeked.take() {
            return Some(p);
        }
        if let Some(arg) = self.args.next() {
            self.args_read += 1;
            return Some((Place::Argument(self.args_read), Line::Text(arg)));
        }
        let (path, lines) = self.file.as_mut()?;
        match lines.next_line() {
            Ok(line) => line.map(|(n, line)| (Place::Line(n), line)),
            Err(e) => {
                self.error = Some(format!("cannot read {}: {e}", path.display()));
                self.file = None;
                None
            }
        }
    }

    /// Whether anything is given at all (reading the list up to its first line).
    fn is_empty(&mut self) -> bool {
        if self.peeked.is_none() {
            self.peeked = self.next();
        }
        self.peeked.is_none()
    }

    fn describe(&self, place: Place) -> String {
        match (place, &self.file) {
            (Place::Argument(n), _) => format!("argument {n}"),
            (Place::Line(n), Some((path, _))) => format!("{}: line {n}", path.display()),
            (Place::Line(n), None) => format!("line {n}"),
        }
    }
}

/// The frontier's spill store, made on first use: most lists never need one.
struct LazySpill {
    dir: PathBuf,
    store: Option<SegmentSpill>,
}

impl SpillStore for LazySpill {
    fn write_batch(&mut self, bytes: &[u8]) -> io::Result<BatchRef> {
        let store = match &mut self.store {
            Some(s) => s,
            None => self.store.insert(SegmentSpill::create(&self.dir)?),
        };
        store.write_batch(bytes)
    }

    fn take_batch(&mut self, batch: BatchRef, out: &mut Vec<u8>) -> io::Result<()> {
        match &mut self.store {
            Some(s) => s.take_batch(batch, out),
            None => Err(io::Error::new(
                io::ErrorKind::NotFound,
                "nothing was spilled",
            )),
        }
    }
}

/// The `fetch` command's work list and sink: every given URL once, host by host, and the
/// Location of each redirect (up to `max_redirect` hops).
struct FetchList {
    given: Given,
    frontier: Frontier<Listed>,
    inflight: Slab<InFlight>,
    sink: Output,
    lines: LineTally,
    delay: Duration,
    /// URLs queued (read ahead of what was fetched) at most.
    read_ahead: usize,
    max_url_length: usize,
    follow_redirects: bool,
    max_redirect: u8,
    /// First storage error: the run stops and reports it (nothing is silently dropped).
    io_error: Option<io::Error>,
    blocked_seen: bool,
    notice: Option<String>,
    /// Bad lines named on stderr so far.
    line_messages: u32,
    /// Cookies set by the responses, sent with the later requests (wget's default).
    jar: Option<CookieJar>,
    /// Credentials per origin (the given URLs' origins are the seeds'): which requests carry
    /// them, and which 401s are answered by fetching the URL again.
    auth: Auth,
    /// Fetches to issue before anything from the frontier: URLs fetched again with
    /// credentials after a 401.
    ready: VecDeque<FetchRequest>,
}

impl FetchList {
    fn log_unfetched(&mut self, url: &str, via: Via<'_>, outcome: ReturnCode) {
        self.lines.add(outcome, 0);
        let at = SystemTime::now();
        if let Err(e) = self.sink.log_unfetched(url, via, outcome, at, None) {
            self.io_error.get_or_insert(e);
        }
    }

    /// A given line as a URL to fetch; a bad one gets its crawl.log line (and, for the
    /// first few, a message) here.
    fn judge(&mut self, place: Place, line: Line) -> Option<Url> {
        let (text, outcome, why) = match line {
            Line::Text(text) => match Url::parse(&text) {
                Ok(url) if url.as_str().len() <= self.max_url_length => return Some(url),
                Ok(_) => (text, ReturnCode::UrlTooLong, "longer than --max-url-length"),
                Err(_) => (text, ReturnCode::HttpBadUrlSyntax, "not a URL"),
            },
            Line::TooLong(head) => (head, ReturnCode::UrlTooLong, "longer than --max-url-length"),
            Line::NotUtf8(text) => (text, ReturnCode::HttpBadUrlSyntax, "not UTF-8"),
        };
        self.line_messages = self.line_messages.saturating_add(1);
        if self.line_messages <= MAX_LINE_MESSAGES {
            eprint_line(&format!(
                "spinneret: {}: {why}: `{}` (logged as {})",
                self.given.describe(place),
                abbrev(&text, URL_IN_MESSAGES),
                outcome.name()
            ));
        } else if self.line_messages == MAX_LINE_MESSAGES + 1 {
            eprint_line("spinneret: more bad lines in the list: see crawl.log");
        }
        self.log_unfetched(&text, Via::seed(), outcome);
        None
    }

    fn queue(&mut self, url: &Url, priority: usize, hops: u8, referrer: Option<Box<str>>) {
        let item = Listed {
            url: url.as_str().to_string(),
            hops,
            referrer,
        };
        self.frontier
            .push(url.host_str().unwrap_or_default(), priority, item);
    }

    /// Reads the list on into the frontier, up to `read_ahead` URLs queued and
    /// [`MAX_READ_PER_CALL`] lines; returns whether it stopped with more to read now.
    fn read_ahead(&mut self) -> bool {
        for _ in 0..MAX_READ_PER_CALL {
            if self.frontier.len() >= self.read_ahead || self.io_error.is_some() {
                return false;
            }
            let Some((place, line)) = self.given.next() else {
                return false;
            };
            if let Some(url) = self.judge(place, line) {
                self.auth.add_seed(&url);
                self.queue(&url, PRIORITY_LISTED, 0, None);
            }
        }
        true
    }

    /// Ctrl-C: what was never issued gets its line, queued or not read yet (the rest of the
    /// list is read to its end, a piece at a time).
    fn finish_unfetched(&mut self, outcome: ReturnCode) {
        let far = Instant::now() + Duration::from_secs(100 * 365 * 24 * 3600);
        // URLs waiting to be fetched again with credentials after a 401.
        while let Some(req) = self.ready.pop_front() {
            if let Some(f) = self.inflight.try_remove(req.tag as usize) {
                let via = fetch_via(f.hops, f.referrer.as_deref());
                self.log_unfetched(req.url.as_str(), via, outcome);
                self.frontier.done(f.queue, far, Duration::ZERO);
            }
        }
        // Each pop takes one URL; nothing is in flight, so nothing is busy.
        for _ in 0..=self.frontier.len() {
            match self.frontier.pop(far) {
                Pop::Ready { queue, item, .. } => {
                    let via = fetch_via(item.hops, item.referrer.as_deref());
                    self.log_unfetched(&item.url, via, outcome);
                    self.frontier.done(queue, far, Duration::ZERO);
                }
                Pop::Wait(_) | Pop::Busy | Pop::Empty => break,
            }
        }
        if let Some(e) = self.frontier.take_error() {
            self.io_error.get_or_insert(e);
        }
        while self.io_error.is_none() {
            let Some((place, line)) = self.given.next() else {
                break;
            };
            if let Some(url) = self.judge(place, line) {
                self.log_unfetched(url.as_str(), Via::seed(), outcome);
            }
        }
    }

    /// The gap before a host is asked again: `--delay`, but none when the request never
    /// reached it.
    fn gap(&self, outcome: ReturnCode) -> Duration {
        use ReturnCode::*;
        let no_request = matches!(
            outcome,
            HttpBadUrlSyntax
                | HttpUnsupportedScheme
                | PrivateAddressBlocked
                | Interrupted
                | DnsServerUnknown
                | DnsBadHostName
                | DnsNxDomain
                | DnsServFail
                | DnsRefused
                | DnsParseError
                | DnsUnsupportedAnswer
                | DnsCnameChain
                | DnsTimeout
                | DnsNoAddress
        );
        if no_request {
            Duration::ZERO
        } else {
            self.delay
        }
    }
}

impl StoringSource for FetchList {
    fn take_io_error(&mut self) -> Option<io::Error> {
        self.io_error.take()
    }

    fn flush(&mut self) -> io::Result<()> {
        self.sink.flush()
    }

    fn queued(&self) -> u64 {
        self.frontier.len() as u64
    }

    fn take_notice(&mut self) -> Option<String> {
        self.notice.take()
    }
}

impl FetchSource for FetchList {
    fn next_fetch(&mut self, now: Instant) -> Next {
        let more = self.read_ahead();
        if let Some(e) = self.frontier.take_error() {
            self.io_error.get_or_insert(e);
        }
        if self.io_error.is_some() {
            return Next::Done;
        }
        if let Some(req) = self.ready.pop_front() {
            return Next::Fetch(req);
        }
        match self.frontier.pop(now) {
            Pop::Ready { queue, item, .. } => match Url::parse(&item.url) {
                Ok(url) => {
                    let tag = self.inflight.insert(InFlight {
                        queue,
                        hops: item.hops,
                        referrer: item.referrer,
                    }) as u64;
                    let cookie = self
                        .jar
                        .as_ref()
                        .and_then(|jar| jar.header_for(&url, SystemTime::now()));
                    // A host with more URLs queued keeps its connection through its delay.
                    let more_for_host = self.frontier.has_queued(queue);
                    let attach = self.auth.attach(&url);
                    Next::Fetch(FetchRequest {
                        cookie,
                        more_for_host,
                        authorization: attach.authorization,
                        origin_headers: attach.origin_headers,
                        ..FetchRequest::new(url, tag)
                    })
                }
                Err(_) => {
                    // A URL's text always parses again; should it not, it is not a URL.
                    let via = fetch_via(item.hops, item.referrer.as_deref());
                    self.log_unfetched(&item.url, via, ReturnCode::HttpBadUrlSyntax);
                    self.frontier.done(queue, now, Duration::ZERO);
                    Next::Wait(now)
                }
            },
            // More of the list may hold a host that is due: read on at once.
            _ if more => Next::Wait(now),
            Pop::Wait(t) => Next::Wait(t),
            // A finished fetch frees its host (and may queue a redirect).
            Pop::Busy => Next::Idle,
            Pop::Empty if self.inflight.is_empty() => Next::Done,
            Pop::Empty => Next::Idle,
        }
    }

    fn fetch_done(&mut self, done: &FetchDone<'_>, now: Instant) {
        let Some(InFlight {
            queue,
            hops,
            referrer,
        }) = self.inflight.try_remove(done.request.tag as usize)
        else {
            return; // not ours: cannot happen, since every request we issue carries its key
        };
        if let (Some(jar), Some(head)) = (&mut self.jar, done.head) {
            jar.store_response(head, &done.request.url, SystemTime::now());
        }
        let url = &done.request.url;
        let sent = done.request.authorization.is_some();
        if let AuthVerdict::Retry(authorization) =
            self.auth.answered(url, url_key(url), done.head, sent)
        {
            // A 401 we can answer: the URL once more with credentials, its host kept busy;
            // the challenge is not the URL's outcome.
            let tag = self.inflight.insert(InFlight {
                queue,
                hops,
                referrer,
            }) as u64;
            let cookie = self
                .jar
                .as_ref()
                .and_then(|jar| jar.header_for(url, SystemTime::now()));
            self.ready.push_back(FetchRequest {
                cookie,
                authorization: Some(authorization),
                origin_headers: done.request.origin_headers,
                more_for_host: done.request.more_for_host,
                ..FetchRequest::new(url.clone(), tag)
            });
            return;
        }
        self.frontier.done(queue, now, self.gap(done.outcome));
        self.lines.add(done.outcome, done.status());
        if let Err(e) = self.sink.store(
            done,
            fetch_via(hops, referrer.as_deref()),
            done.outcome,
            done.payload_digest(),
            None,
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
        self.queue(&target, PRIORITY_REDIRECT, hops + 1, Some(from.into()));
    }
}

/// How a URL of the `fetch` list was found: given, or a redirect's target.
fn fetch_via(hops: u8, referrer: Option<&str>) -> Via<'_> {
    let hop = if hops == 0 { Hop::Seed } else { Hop::Redirect };
    Via::new(referrer, hop)
}

pub fn run_fetch(args: FetchArgs) -> Result<ExitStatus, Failure> {
    let setup = args.common.setup()?;
    let display = config::display(&args.common);
    let wacz = args.common.wacz.clone();
    let cookies = args.common.cookies()?;
    let auth = args.common.auth()?;
    if args.max_url_length == 0 {
        return Err(usage("--max-url-length must be at least 1"));
    }
    let delay = config::delay(&args.delay)?.unwrap_or(crate::crawl::DEFAULT_DELAY);
    let input = args.input;
    let mut given = Given::open(input.urls, input.file.as_deref(), args.max_url_length)?;
    if given.is_empty() {
        if let Some(e) = given.error.take() {
            return Err(usage(e));
        }
        return Err(usage("no URLs given (pass URLs or -i/--input-file FILE)"));
    }
    let output = Output::create(&setup.output).map_err(Failure::output)?;
    let spill_dir = output.dir().join(SPILL_DIR);
    // The list is read only as far ahead as the budget holds: the frontier's spill takes what
    // redirects add past it, and a spilling frontier keeps every back queue's ends in memory
    // anyway, so reading further ahead would cost memory, not save it.
    let ram_items = usize::try_from(args.frontier_ram.0).unwrap_or(usize::MAX) / ENTRY_RAM_ESTIMATE;
    let frontier = Frontier::with_store(
        &FrontierConfig {
            priorities: PRIORITY_LISTED + 1,
            back_queues: setup.crawler.max_sockets,
            ram_items,
            rank_within_hosts: false,
        },
        Box::new(LazySpill {
            dir: spill_dir.clone(),
            store: None,
        }),
    );
    let crawler_config = with_spool(setup.crawler, output.dir()).map_err(Failure::output)?;
    let mut crawler = Crawler::new(crawler_config).map_err(Failure::runtime)?;
    let mut list = FetchList {
        given,
        frontier,
        inflight: Slab::new(),
        sink: output,
        lines: LineTally::default(),
        delay,
        read_ahead: ram_items.max(MIN_READ_AHEAD),
        max_url_length: args.max_url_length,
        follow_redirects: !args.no_follow_redirects,
        max_redirect: args.common.max_redirect,
        io_error: None,
        blocked_seen: false,
        notice: None,
        line_messages: 0,
        jar: cookies.enabled.then(|| {
            let mut jar = CookieJar::new(cookies.limits);
            if let Some(text) = &cookies.load {
                jar.load_netscape(text, SystemTime::now());
            }
            jar
        }),
        auth: Auth::new(auth),
        ready: VecDeque::new(),
    };
    let started = Instant::now();
    let mut progress = Progress::new(started, display.progress, None);
    let stop = drive(&mut crawler, &mut list, &mut progress, None)?.stop;
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
    let dir = list.sink.dir().to_path_buf();
    let body_bytes = list.sink.stored().body_bytes;
    let written = list.sink.finish().map_err(Failure::output)?;
    match std::fs::remove_dir_all(&spill_dir) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => eprint_line(&format!(
            "spinneret: cannot remove {}: {e}",
            spill_dir.display()
        )),
        _ => {}
    }
    if let Some(e) = list.given.error.take() {
        // The URLs read before the error were fetched and stored; the rest were never seen.
        return Err(Failure::Runtime(format!(
            "{e} (the URLs before it were fetched)"
        )));
    }
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
    let status = conclude(
        &dir,
        json.finish(),
        summary.line(),
        status,
        status.reason(end, &list.lines, 0),
        &written,
        display,
    )?;
    if let Some(file) = &wacz {
        crate::app::wacz_command::at_end(&dir, file, display.quiet)?;
    }
    Ok(status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listed_url_survives_the_spill() {
        for item in [
            Listed {
                url: "http://a.test/x?q=é".into(),
                hops: 0,
                referrer: None,
            },
            Listed {
                url: "http://b.test/".into(),
                hops: 3,
                referrer: Some("http://a.test/r".into()),
            },
        ] {
            let mut out = Vec::new();
            item.encode(&mut out);
            out.push(7);
            let mut input = &out[..];
            let back = Listed::decode(&mut input).unwrap();
            assert_eq!(
                (back.url, back.hops, back.referrer),
                (item.url, item.hops, item.referrer)
            );
            assert_eq!(input, &[7], "exactly the item is consumed");
            let mut cut = &out[..out.len() - 2];
            assert!(Listed::decode(&mut cut).is_none());
        }
    }
}
