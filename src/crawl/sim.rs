//! A simulated web and clock that drive [`Crawl`] through the real driver, with no sockets,
//! files or sleeping (like quinn-proto's stepped connection tests).
//!
//! [`Web`] maps URLs to raw HTTP responses (or a fetch failure), or to a few in turn, or to
//! one by whether the request carries a cookie; anything it does not know is a 404, so a host
//! without a robots.txt allows everything. [`SimLoop`] is the event loop's stand-in: it
//! implements the driver's [`Loop`] as `fetcher::Crawler` does, with at most `max_live`
//! fetches live, a turn that jumps the clock to the next answer or the driver's `wake_at`, and
//! answers decoded by the real [`ResponseDecoder`]. [`Sim`] runs the crawl on it with the very
//! [`Driver`] the app uses, so when to ask for work, when to wait and when the crawl is
//! finished are decided by the same code in tests and in a real crawl. Every run is bounded
//! in steps, so a livelock fails the test instead of hanging it.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::ops::{Deref, DerefMut};
use std::time::{Duration, Instant, SystemTime};

use url::Url;

use super::sink::{Logged, MemorySink};
use super::{Crawl, CrawlConfig};
use crate::fetcher::{Completion, Driver, FetchRequest, Loop, Timings, Turn};
use crate::http::{Limits, Progress, ResponseDecoder};
use crate::ReturnCode;

/// Turns in a row that move neither the clock nor a fetch (a source answering `Wait(now)`
/// again and again) before the sim calls it a livelock.
const MAX_STALLED_TURNS: usize = 1_000;

/// The wall clock at the start of every simulated crawl (2027-01-15T08:00:00Z).
pub fn sim_wall() -> SystemTime {
    std::time::UNIX_EPOCH + Duration::from_secs(1_800_000_000)
}

/// What the fake web answers for one URL.
#[derive(Clone, Debug)]
pub enum Reply {
    /// These bytes arrive, the whole response.
    Raw(Vec<u8>),
    /// The fetch fails without a response head (connection refused, timeout...).
    Fail(ReturnCode),
}

/// The head of an empty `200 OK`, for schedules that need a response head and no body.
pub fn ok_head() -> crate::http::ResponseHead {
    let mut d = crate::http::ResponseDecoder::new(crate::http::Limits::default());
    d.reset(false);
    d.process(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        .expect("decodes");
    d.head().expect("a head").clone()
}

/// A raw HTTP/1.1 response with a Content-Length.
pub fn response(status: u16, headers: &[(&str, &str)], body: &str) -> Vec<u8> {
    let mut r = format!("HTTP/1.1 {status} Status\r\n");
    for (name, value) in headers {
        r.push_str(&format!("{name}: {value}\r\n"));
    }
    r.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    r.into_bytes()
}

/// An HTML page linking to `links`.
pub fn html(links: &[&str]) -> String {
    let mut body = String::from("<html><body>");
    for l in links {
        body.push_str(&format!("<a href=\"{l}\">x</a>\n"));
    }
    body.push_str("</body></html>");
    body
}

fn key(url: &str) -> String {
    Url::parse(url).expect("test URL parses").to_string()
}

/// The fake web: replies by URL, latency by host.
#[derive(Default)]
pub struct Web {
    replies: HashMap<String, Reply>,
    /// Replies given in turn, the last one repeated.
    in_turn: HashMap<String, VecDeque<Reply>>,
    /// (cookie the request must carry, reply with it, reply without it).
    gated: HashMap<String, (String, Reply, Reply)>,
    latency: HashMap<String, Duration>,
}

impl Web {
    pub fn reply(&mut self, url: &str, reply: Reply) -> &mut Self {
        self.replies.insert(key(url), reply);
        self
    }

    /// A 200 text/html page with this body.
    pub fn html(&mut self, url: &str, body: &str) -> &mut Self {
        let r = response(200, &[("Content-Type", "text/html")], body);
        self.reply(url, Reply::Raw(r))
    }

    /// A 200 text/html page linking to `links`, its content unique to `url`.
    pub fn page(&mut self, url: &str, links: &[&str]) -> &mut Self {
        self.html(url, &format!("<title>{url}</title>{}", html(links)))
    }

    /// `origin`'s robots.txt (`origin` like `http://a.test`).
    pub fn robots(&mut self, origin: &str, body: &str) -> &mut Self {
        let r = response(200, &[("Content-Type", "text/plain")], body);
        self.reply(&format!("{origin}/robots.txt"), Reply::Raw(r))
    }

    pub fn redirect(&mut self, url: &str, status: u16, to: &str) -> &mut Self {
        let r = response(status, &[("Location", to)], "");
        self.reply(url, Reply::Raw(r))
    }

    /// `url` answers `replies` in turn, then the last one again and again.
    pub fn in_turn(&mut self, url: &str, replies: Vec<Reply>) -> &mut Self {
        self.in_turn.insert(key(url), replies.into());
        self
    }

    /// `url` answers `with` to a request whose `Cookie` header holds `cookie` (`name=value`),
    /// and `without` to any other.
    pub fn gated(&mut self, url: &str, cookie: &str, with: Reply, without: Reply) -> &mut Self {
        self.gated
            .insert(key(url), (cookie.to_string(), with, without));
        self
    }

    /// Every fetch of `host` takes this long (the default is [`Sim::latency`]).
    pub fn latency(&mut self, host: &str, latency: Duration) -> &mut Self {
        self.latency.insert(host.to_string(), latency);
        self
    }

    fn answer(&mut self, req: &FetchRequest) -> Reply {
        let url = req.url.as_str();
        if let Some(replies) = self.in_turn.get_mut(url) {
            if replies.len() > 1 {
                return replies.pop_front().expect("more than one");
            }
            if let Some(last) = replies.front() {
                return last.clone();
            }
        }
        if let Some((cookie, with, without)) = self.gated.get(url) {
            let sent = req.cookie.as_deref().unwrap_or("");
            let has = sent.split("; ").any(|c| c == cookie);
            return if has { with.clone() } else { without.clone() };
        }
        self.replies.get(url).cloned().unwrap_or_else(|| {
            Reply::Raw(response(404, &[("Content-Type", "text/html")], "not here"))
        })
    }
}

/// One request the crawl issued, on the simulated clock (offsets from the start).
#[derive(Clone, Debug)]
pub struct Issued {
    pub url: String,
    pub host: String,
    pub at: Duration,
    /// When it completed (`None` while live).
    pub end: Option<Duration>,
    /// The `Cookie` header it carried.
    pub cookie: Option<String>,
}

struct Live {
    req: FetchRequest,
    /// Index into `SimLoop::issued`.
    record: usize,
    due: Instant,
    latency: Duration,
}

/// The simulated event loop: the fake web, the clock and the live fetches. It is a
/// [`Loop`] as the real `Crawler` is: a pushed request is answered by the web after its host's
/// latency, and its turn jumps the clock to the next answer or the driver's `wake_at`.
pub struct SimLoop {
    pub web: Web,
    pub t0: Instant,
    pub now: Instant,
    /// Fetches live at once (the event loop's `max_live`).
    pub max_live: usize,
    /// Latency of a host not given one in the web.
    pub latency: Duration,
    pub issued: Vec<Issued>,
    live: Vec<Live>,
    /// Answered requests waiting for the driver, oldest first.
    completions: VecDeque<Completion>,
    /// Turns in a row that moved neither the clock nor a fetch.
    stalled: usize,
}

impl SimLoop {
    /// A loop on `web` with its clock at `t0`: 4 fetches live at most, 50 ms a fetch.
    pub fn new(web: Web, t0: Instant) -> SimLoop {
        SimLoop {
            web,
            t0,
            now: t0,
            max_live: 4,
            latency: Duration::from_millis(50),
            issued: Vec::new(),
            live: Vec::new(),
            completions: VecDeque::new(),
            stalled: 0,
        }
    }

    /// How often `url` was requested.
    pub fn times_issued(&self, url: &str) -> usize {
        let url = key(url);
        self.issued.iter().filter(|i| i.url == url).count()
    }

    /// Requests to `host`, in issue order.
    pub fn issued_to(&self, host: &str) -> Vec<Issued> {
        self.issued
            .iter()
            .filter(|i| i.host == host)
            .cloned()
            .collect()
    }

    /// Ends `l` at the current instant with `outcome` (the web's answer decoded when `None`).
    fn answer(&mut self, l: Live, outcome: Option<ReturnCode>) {
        self.issued[l.record].end = Some(self.now - self.t0);
        let reply = match outcome {
            Some(code) => Reply::Fail(code),
            None => self.web.answer(&l.req),
        };
        // The loop's one wall time of the fetch: the simulated wall clock now.
        let at = sim_wall() + (self.now - self.t0);
        self.completions
            .push_back(completion(l.req, reply, l.latency, at));
    }
}

impl Loop for SimLoop {
    fn now(&self) -> Instant {
        self.now
    }

    fn has_room(&self) -> bool {
        self.live.len() < self.max_live
    }

    /// Issues the request at once (the real loop's issue step, which runs before its poll).
    fn fetch_push(&mut self, req: FetchRequest) {
        let host = req.url.host_str().unwrap_or_default().to_string();
        let latency = self.web.latency.get(&host).copied().unwrap_or(self.latency);
        self.issued.push(Issued {
            url: req.url.to_string(),
            host,
            at: self.now - self.t0,
            end: None,
            cookie: req.cookie.clone(),
        });
        self.live.push(Live {
            req,
            record: self.issued.len() - 1,
            due: self.now + latency,
            latency,
        });
    }

    /// The simulated web needs no name resolved: every prefetch is taken and forgotten.
    fn prefetch(&mut self, _host: &str) -> bool {
        true
    }

    fn is_idle(&self) -> bool {
        self.live.is_empty() && self.completions.is_empty()
    }

    /// The simulated web keeps no connections, so none is idle.
    fn close_idle(&mut self) {}

    /// Jumps the clock to the next answer or `wake_at`, and answers every live fetch due by
    /// then, in issue order.
    fn turn(&mut self, wake_at: Option<Instant>) -> io::Result<()> {
        if !self.completions.is_empty() {
            return Ok(()); // the real loop does not sleep either
        }
        let next = self.live.iter().map(|l| l.due).chain(wake_at).min();
        let next = next.expect("nothing live and nothing to wait for, yet not finished");
        assert!(next >= self.now, "time goes forward");
        let moved = next > self.now || self.live.iter().any(|l| l.due <= next);
        self.stalled = if moved { 0 } else { self.stalled + 1 };
        assert!(
            self.stalled <= MAX_STALLED_TURNS,
            "source livelock at {:?}",
            self.now - self.t0
        );
        self.now = next;
        let (due, rest): (Vec<Live>, Vec<Live>) = std::mem::take(&mut self.live)
            .into_iter()
            .partition(|l| l.due <= next);
        self.live = rest;
        for l in due {
            self.answer(l, None);
        }
        Ok(())
    }

    fn interrupt(&mut self) {
        for l in std::mem::take(&mut self.live) {
            self.answer(l, Some(ReturnCode::Interrupted));
        }
    }

    fn poll_completion(&mut self) -> Option<Completion> {
        self.completions.pop_front()
    }

    fn recycle(&mut self, _c: Completion) {}
}

/// A crawl run by the real [`Driver`] on a [`SimLoop`]. It reads as its loop (`sim.now`,
/// `sim.issued`, `sim.web`): the two are apart only so that the driver can borrow both.
pub struct Sim {
    pub crawl: Crawl<MemorySink>,
    pub net: SimLoop,
    driver: Driver,
}

impl Deref for Sim {
    type Target = SimLoop;

    fn deref(&self) -> &SimLoop {
        &self.net
    }
}

impl DerefMut for Sim {
    fn deref_mut(&mut self) -> &mut SimLoop {
        &mut self.net
    }
}

impl Sim {
    pub fn new(config: CrawlConfig, web: Web, seeds: &[&str]) -> Sim {
        let t0 = Instant::now();
        let mut crawl = Crawl::new(config, MemorySink::default(), t0, sim_wall());
        for s in seeds {
            // A seed the filter refuses has its line in the sink, where the tests look.
            let _ = crawl.add_seed(Url::parse(s).expect("seed parses"));
        }
        Sim {
            crawl,
            net: SimLoop::new(web, t0),
            driver: Driver::new(),
        }
    }

    /// Steps until the crawl is finished; panics (a livelock or stall) after `max_steps`.
    pub fn run(&mut self, max_steps: usize) -> &mut Self {
        for _ in 0..max_steps {
            if self.step() {
                return self;
            }
        }
        panic!(
            "crawl not finished after {max_steps} steps (t = {:?}, {} live, frontier {})",
            self.now - self.t0,
            self.net.live.len(),
            self.crawl.frontier_len()
        );
    }

    /// One driver turn (which decides whether everything is finished, and returns that),
    /// then what the turn answered delivered at once, so that between steps the crawl has
    /// seen everything up to the clock.
    pub fn step(&mut self) -> bool {
        let turn = self.driver.turn(&mut self.net, &mut self.crawl);
        if turn.expect("the simulated loop does no I/O") == Turn::Finished {
            return true;
        }
        self.driver.deliver(&mut self.net, &mut self.crawl);
        false
    }

    /// A copy of the sink's lines.
    pub fn lines(&mut self) -> Vec<Logged> {
        self.crawl.sink().lines.clone()
    }

    /// The sink lines for `url`.
    pub fn lines_for(&mut self, url: &str) -> Vec<Logged> {
        let url = key(url);
        self.lines().into_iter().filter(|l| l.url == url).collect()
    }
}

/// The request bytes every simulated fetch sent.
const REQUEST: &[u8] = b"GET / HTTP/1.1\r\n\r\n";

/// Decodes `reply` as the event loop would, into the one `Completion` of `req`, ended at
/// `at` on the wall clock.
pub(super) fn completion(
    req: FetchRequest,
    reply: Reply,
    latency: Duration,
    at: SystemTime,
) -> Completion {
    let (outcome, decoder) = match &reply {
        Reply::Raw(bytes) => {
            let mut decoder = ResponseDecoder::new(Limits::default());
            decoder.reset(false);
            let r = decoder.process(bytes);
            assert!(
                matches!(r, Ok((Progress::Complete, n)) if n == bytes.len()),
                "test response for {} decodes: {r:?}",
                req.url
            );
            (ReturnCode::Success, Some(decoder))
        }
        Reply::Fail(code) => (*code, None),
    };
    Completion {
        decoder,
        request_bytes: REQUEST.to_vec(),
        sent: true,
        timings: Timings {
            receive: latency,
            total: latency,
            ..Timings::default()
        },
        ..Completion::without_response(req, outcome, at)
    }
}

// The driver on this loop: scheduling and "finished" in simulated time (`sim/tests.rs`).
mod tests;
// A host of Poisson pages under the continuous crawl's budget (issue 44's figures).
pub mod freshness;
