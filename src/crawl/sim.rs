//! A simulated web and clock that drive [`Crawl`] the way the event loop does, with no sockets,
//! files or sleeping (like quinn-proto's stepped connection tests).
//!
//! [`Web`] maps URLs to raw HTTP responses (or a fetch failure), or to a few in turn, or to
//! one by whether the request carries a cookie; anything it does not know is a 404, so a host
//! without a robots.txt allows everything. [`Sim`] plays the driver
//! ([`crate::fetcher::Driver::turn`]): ask the source for work while fewer than `max_live`
//! fetches are live, jump the clock to the next completion or the source's `Wait` instant,
//! decode the response with the real [`ResponseDecoder`] and hand the crawl its `FetchDone`.
//! Every run is bounded in steps, so a livelock fails the test instead of hanging it.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use url::Url;

use super::sink::{Logged, MemorySink};
use super::{Crawl, CrawlConfig};
use crate::fetcher::{FetchDone, FetchRequest, FetchSource, Next, Timings};
use crate::http::{Limits, Progress, ResponseDecoder};
use crate::ReturnCode;

/// Source answers taken at one instant before the sim calls it a livelock.
const MAX_ASKS_PER_STEP: usize = 1_000;

/// The wall clock at the start of every simulated crawl (2027-01-15T08:00:00Z).
pub fn sim_wall() -> std::time::SystemTime {
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

/// What the sim knows about its source between steps (as the driver does).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Source {
    Ask,
    Wait(Instant),
    Done,
}

struct Live {
    req: FetchRequest,
    /// Index into `Sim::issued`.
    record: usize,
    due: Instant,
    latency: Duration,
}

pub struct Sim {
    pub crawl: Crawl<MemorySink>,
    pub web: Web,
    pub t0: Instant,
    pub now: Instant,
    /// Fetches live at once (the event loop's `max_live`).
    pub max_live: usize,
    /// Latency of a host not given one in the web.
    pub latency: Duration,
    pub issued: Vec<Issued>,
    live: Vec<Live>,
    source: Source,
}

impl Sim {
    pub fn new(config: CrawlConfig, web: Web, seeds: &[&str]) -> Sim {
        let t0 = Instant::now();
        let mut crawl = Crawl::new(config, MemorySink::default(), t0);
        crawl.set_wall_clock(t0, sim_wall());
        for s in seeds {
            // A seed the filter refuses has its line in the sink, where the tests look.
            let _ = crawl.add_seed(Url::parse(s).expect("seed parses"));
        }
        Sim {
            crawl,
            web,
            t0,
            now: t0,
            max_live: 4,
            latency: Duration::from_millis(50),
            issued: Vec::new(),
            live: Vec::new(),
            source: Source::Ask,
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
            self.live.len(),
            self.crawl.frontier_len()
        );
    }

    /// One driver turn: take work, then jump to the next event and deliver what completes
    /// there. Returns whether everything is finished.
    pub fn step(&mut self) -> bool {
        let now = self.now;
        if matches!(self.source, Source::Wait(t) if t <= now) {
            self.source = Source::Ask;
        }
        let mut idle = false;
        let mut asks = 0;
        while self.source == Source::Ask && self.live.len() < self.max_live {
            asks += 1;
            assert!(asks <= MAX_ASKS_PER_STEP, "source livelock at {now:?}");
            match self.crawl.next_fetch(now) {
                Next::Fetch(req) => self.issue(req),
                Next::Wait(t) => self.source = Source::Wait(t.max(now)),
                Next::Idle => {
                    idle = true;
                    break;
                }
                Next::Done => self.source = Source::Done,
            }
        }
        while self.crawl.poll_prefetch().is_some() {}
        if self.live.is_empty() && (self.source == Source::Done || idle) {
            return true;
        }
        let wake = match self.source {
            Source::Wait(t) => Some(t),
            _ => None,
        };
        let next = self.live.iter().map(|l| l.due).chain(wake).min();
        let next = next.expect("nothing live and nothing to wait for, yet not finished");
        assert!(next >= self.now, "time goes forward");
        self.now = next;
        self.deliver_due();
        false
    }

    fn issue(&mut self, req: FetchRequest) {
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

    /// Completes every live fetch due by now, in issue order.
    fn deliver_due(&mut self) {
        let now = self.now;
        let (due, rest): (Vec<Live>, Vec<Live>) = std::mem::take(&mut self.live)
            .into_iter()
            .partition(|l| l.due <= now);
        self.live = rest;
        for l in due {
            self.issued[l.record].end = Some(now - self.t0);
            let reply = self.web.answer(&l.req);
            complete(&mut self.crawl, &l.req, reply, l.latency, now);
            if matches!(self.source, Source::Wait(_)) {
                self.source = Source::Ask;
            }
        }
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
}

/// Decodes `reply` as the event loop would and hands the crawl its one `FetchDone`.
fn complete(
    crawl: &mut Crawl<MemorySink>,
    req: &FetchRequest,
    reply: Reply,
    latency: Duration,
    now: Instant,
) {
    let mut decoder = ResponseDecoder::new(Limits::default());
    decoder.reset(false);
    let outcome = match &reply {
        Reply::Raw(bytes) => {
            let r = decoder.process(bytes);
            assert!(
                matches!(r, Ok((Progress::Complete, n)) if n == bytes.len()),
                "test response for {} decodes: {r:?}",
                req.url
            );
            ReturnCode::Success
        }
        Reply::Fail(code) => *code,
    };
    let head = match reply {
        Reply::Raw(_) => decoder.head(),
        Reply::Fail(_) => None,
    };
    let (response, payload, body): (&[u8], &[u8], &[u8]) = match head {
        Some(_) => (
            decoder.raw(),
            &decoder.raw()[decoder.head_len()..],
            decoder.body(),
        ),
        None => (&[], &[], &[]),
    };
    let done = FetchDone {
        request: req,
        outcome,
        head,
        request_bytes: b"GET / HTTP/1.1\r\n\r\n",
        response,
        payload,
        body,
        content: body,
        content_complete: true,
        spooled: None,
        shared_response: None,
        peer: None,
        sent_at: None,
        timings: Timings {
            receive: latency,
            total: latency,
            ..Timings::default()
        },
    };
    crawl.fetch_done(&done, now);
}
