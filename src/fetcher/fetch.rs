//! One URL in flight: the `Fetch` record, its explicit state, and what its end looks like.
//!
//! ```text
//! Init ──► DnsReceive ──► WaitForHttp ──► Connecting ──► HttpSend ──► HttpReceive ──► Final
//!    └──────────┴──────────────┴──────────────┴─────────────┴─────────────┴──► Error(ReturnCode)
//!                                                  │            ▲
//!                                                  └─► Proxy ───┘   (a tunnel: SOCKS5, CONNECT)
//! ```
//! `Init` is a [`FetchRequest`] still in `wait_for_issue`; `Final` and `Error` are the single
//! [`FetchDone`] handed to the caller, after which the record is gone. The event loop owns
//! every transition, in one function (`Crawler::enter`, event_loop/states.rs) that also arms
//! the state's timers (`super::timers`) and sets its timing mark; this module only holds the
//! data.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use url::Url;

use super::digest::{self, PayloadDigest};
use super::shared_bytes::SharedBytes;
use super::spool::{Spilling, SpoolFile};
use crate::http::{ResponseDecoder, ResponseHead};
use crate::proxy::{Handshake, Proxy, ProxyStep};
use crate::ReturnCode;

/// A URL handed to the crawler, with an opaque tag the caller uses to find its own context
/// (referrer, depth, robots origin…) when the fetch is done.
#[derive(Clone, Debug)]
pub struct FetchRequest {
    pub url: Url,
    pub tag: u64,
    /// The `Cookie` header to send, if any: the caller's cookie jar decides, the fetcher only
    /// writes it.
    pub cookie: Option<String>,
    /// The source has more URLs queued for this URL's host: its connection is kept *held*
    /// (closed for another host only when no spare one is left) while it waits out its
    /// politeness delay. Sources that cannot tell say `true`.
    pub more_for_host: bool,
    /// Ask conditionally (`If-None-Match`, `If-Modified-Since`) with an earlier response's
    /// validators: a re-crawl's request for what it stored before.
    pub validators: Option<Box<crate::http::Validators>>,
    /// The `Authorization` header to send, if any: the caller decides which origin gets
    /// credentials (`crawl::auth`), the fetcher only writes it.
    pub authorization: Option<String>,
    /// Send the headers meant for the seeds' origins only ([`CrawlerConfig::origin_headers`](crate::fetcher::CrawlerConfig::origin_headers):
    /// `--header` values that are credentials). The caller decides.
    pub origin_headers: bool,
}

impl FetchRequest {
    /// A plain request for `url`: no cookie, no validators, and `more_for_host` set (what a
    /// source that cannot tell says). Sources set the rest with struct update syntax.
    pub fn new(url: Url, tag: u64) -> FetchRequest {
        FetchRequest {
            url,
            tag,
            cookie: None,
            more_for_host: true,
            validators: None,
            authorization: None,
            origin_headers: false,
        }
    }
}

/// Where a fetch connects: the host as written in the URL, its port, and whether it is TLS.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub host: TargetHost,
    pub port: u16,
    pub tls: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TargetHost {
    Name(String),
    Ip(IpAddr),
}

impl Target {
    /// Splits a URL into what the connection needs, or the outcome for a URL we cannot fetch.
    pub fn of(url: &Url) -> Result<Target, ReturnCode> {
        let tls = match url.scheme() {
            "http" => false,
            "https" => true,
            _ => return Err(ReturnCode::HttpUnsupportedScheme),
        };
        let host = match url.host() {
            Some(url::Host::Domain(d)) if !d.is_empty() => TargetHost::Name(d.to_string()),
            Some(url::Host::Ipv4(ip)) => TargetHost::Ip(IpAddr::V4(ip)),
            Some(url::Host::Ipv6(ip)) => TargetHost::Ip(IpAddr::V6(ip)),
            _ => return Err(ReturnCode::HttpBadUrlSyntax),
        };
        let port = url
            .port_or_known_default()
            .ok_or(ReturnCode::HttpBadUrlSyntax)?;
        Ok(Target { host, port, tls })
    }

    /// The TLS server name (SNI and certificate name) for an https target.
    pub fn server_name(&self) -> Option<String> {
        match (&self.host, self.tls) {
            (TargetHost::Name(n), true) => Some(n.clone()),
            (TargetHost::Ip(ip), true) => Some(ip.to_string()),
            _ => None,
        }
    }
}

/// Was this attempt made on a connection that had already carried a response?
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attempt {
    Fresh,
    /// A reused keep-alive connection may have been closed by the server while idle; a failure
    /// before the first response byte is then retried once on a fresh connection.
    Reused,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FetchState {
    /// Just created from a request: its host is about to be looked up.
    Init,
    /// Waiting for the resolver to answer for this (normalized) name.
    DnsReceive { name: String },
    /// Resolved and allowed; waiting in `wait_for_http` for a connection slot to `addr`.
    WaitForHttp { addr: SocketAddr },
    /// A new TCP connection to the server (or its proxy) is being opened.
    Connecting { conn: usize },
    /// A tunnel through the proxy is being opened, at this step of its handshake (the
    /// handshake itself is in [`Proxied::handshake`]).
    Proxy { conn: usize, step: ProxyStep },
    /// The request is being written (`sent` bytes so far).
    HttpSend {
        conn: usize,
        sent: usize,
        attempt: Attempt,
    },
    /// The response is being read.
    HttpReceive { conn: usize, attempt: Attempt },
}

impl FetchState {
    pub fn conn(&self) -> Option<usize> {
        match *self {
            FetchState::Connecting { conn }
            | FetchState::Proxy { conn, .. }
            | FetchState::HttpSend { conn, .. }
            | FetchState::HttpReceive { conn, .. } => Some(conn),
            FetchState::Init | FetchState::DnsReceive { .. } | FetchState::WaitForHttp { .. } => {
                None
            }
        }
    }
}

/// Moments in a fetch's life, for the per-stage time breakdown.
#[derive(Clone, Copy, Debug)]
pub struct Marks {
    pub created: Instant,
    pub resolved: Option<Instant>,
    pub assigned: Option<Instant>,
    pub connected: Option<Instant>,
    pub sent: Option<Instant>,
    pub first_byte: Option<Instant>,
}

impl Marks {
    pub fn new(now: Instant) -> Marks {
        Marks {
            created: now,
            resolved: None,
            assigned: None,
            connected: None,
            sent: None,
            first_byte: None,
        }
    }

    pub fn timings(&self, done: Instant) -> Timings {
        let span = |a: Option<Instant>, b: Option<Instant>| match (a, b) {
            (Some(a), Some(b)) => b.saturating_duration_since(a),
            _ => Duration::ZERO,
        };
        Timings {
            dns: span(Some(self.created), self.resolved),
            wait: span(self.resolved, self.assigned),
            connect: span(self.assigned, self.connected),
            first_byte: span(self.sent, self.first_byte),
            receive: span(self.first_byte, Some(done)),
            total: done.saturating_duration_since(self.created),
        }
    }
}

/// How long each stage of a fetch took (zero for stages it never reached or skipped, such as
/// `connect` on a reused connection).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Timings {
    pub dns: Duration,
    /// Waiting for a connection slot (politeness, `--max-conns`).
    pub wait: Duration,
    pub connect: Duration,
    /// From the request written to the first response byte.
    pub first_byte: Duration,
    /// From the first response byte to the end.
    pub receive: Duration,
    pub total: Duration,
}

/// A fetch in flight, kept in the event loop's slab.
pub struct Fetch {
    pub req: FetchRequest,
    pub target: Target,
    pub state: FetchState,
    pub marks: Marks,
    /// The exact request bytes (kept for the WARC request record).
    pub request: Vec<u8>,
    pub decoder: ResponseDecoder,
    /// The spool the body goes to once it outgrew memory.
    pub spill: Option<Spilling>,
    pub peer: Option<SocketAddr>,
    /// The request is written whole (a WARC request record has something to hold).
    pub sent: bool,
    /// Fresh-connection retries left after a reused connection failed before any byte.
    pub stale_retries_left: u8,
    /// The host's first address of the other IP family, tried if the connect to the first
    /// fails or is slow (Happy Eyeballs, RFC 8305, one attempt after the other).
    pub fallback: Option<SocketAddr>,
    /// The proxy this fetch goes through, if any (boxed: most fetches have none).
    pub proxy: Option<Box<Proxied>>,
}

/// A fetch through a proxy: which one, the site behind it, and the tunnel's handshake.
pub struct Proxied {
    pub proxy: Arc<Proxy>,
    /// The site as far as it is known: its politeness key and its connections' key.
    pub origin: Origin,
    /// The handshake of a tunnel being opened (SOCKS5, or CONNECT for https); `None` for an
    /// absolute-form request through an HTTP proxy, or on a reused tunnel.
    pub handshake: Option<Handshake>,
}

impl Proxied {
    /// Whether requests go through a tunnel (all but http URLs through an HTTP proxy).
    pub fn tunnels(&self, tls: bool) -> bool {
        tls || self.proxy.kind != crate::proxy::ProxyKind::Http
    }
}

/// The site behind a proxy: its address when the crawler resolved it (`socks5://`, or an
/// address in the URL), else its name (the proxy resolves it).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Origin {
    Ip(SocketAddr),
    Name(Box<str>, u16),
}

/// How a request ended, owned: what [`super::Crawler::poll_completion`] hands the driver. It
/// holds the fetch's buffers; give it back with [`super::Crawler::recycle`] so they are reused.
pub struct Completion {
    pub request: FetchRequest,
    pub outcome: ReturnCode,
    /// The response decoder (head, raw bytes, body), when a fetch was created for the request.
    pub(crate) decoder: Option<ResponseDecoder>,
    /// The request bytes, when they were sent.
    pub(crate) request_bytes: Vec<u8>,
    pub(crate) sent: bool,
    /// The content for link scanning: the body with content coding removed, or a spilled
    /// body's first part read back; `None` when the in-memory body is the content.
    pub(crate) decoded: Option<Vec<u8>>,
    /// Whether the content is all of it (not cut at `max_scan_bytes`, not a spilled prefix).
    pub(crate) content_complete: bool,
    /// The spilled payload, and the digest taken on its way there.
    pub(crate) spool: Option<(Arc<dyn SpoolFile>, PayloadDigest)>,
    /// The decoder's raw bytes once the completion is handed out ([`Completion::share_raw`]):
    /// shared, so that the WARC writer can keep the response without copying it.
    pub(crate) raw: Option<Arc<SharedBytes>>,
    pub peer: Option<SocketAddr>,
    /// The fetch's one wall time (see [`FetchDone::at`]).
    pub at: SystemTime,
    pub timings: Timings,
}

impl Completion {
    /// A request that never got as far as a response (bad URL, interrupted in the queue),
    /// ended at `at` on the wall clock.
    pub(crate) fn without_response(
        request: FetchRequest,
        outcome: ReturnCode,
        at: SystemTime,
    ) -> Completion {
        Completion {
            request,
            outcome,
            decoder: None,
            request_bytes: Vec::new(),
            sent: false,
            decoded: None,
            content_complete: true,
            spool: None,
            raw: None,
            peer: None,
            at,
            timings: Timings::default(),
        }
    }

    /// Moves the decoder's raw bytes into [`Completion::raw`] (once its content is made),
    /// made [`SharedBytes`] by `share`: from then on the response is shared, not copied, by
    /// whoever keeps it.
    pub(crate) fn share_raw(&mut self, share: impl FnOnce(Vec<u8>) -> SharedBytes) {
        if let (None, Some(d)) = (&self.raw, &mut self.decoder) {
            self.raw = Some(Arc::new(share(d.take_raw())));
        }
    }

    /// Bytes of memory the response holds: the decoder's and the shared raw bytes.
    pub(crate) fn buffered(&self) -> usize {
        self.decoder.as_ref().map_or(0, ResponseDecoder::buffered)
            + self.raw.as_ref().map_or(0, |r| r.len())
    }

    /// The borrowed view the crawl layer and the store read.
    pub fn done(&self) -> FetchDone<'_> {
        let decoder = self.decoder.as_ref();
        let head = decoder.and_then(ResponseDecoder::head);
        let raw = match (&self.raw, decoder) {
            (Some(shared), _) => &shared[..],
            (None, Some(d)) => d.raw(),
            (None, None) => &[],
        };
        let (response, payload, body): (&[u8], &[u8], &[u8]) = match decoder {
            // A spilled payload is all in the spool: the response here is the head alone.
            Some(d) if head.is_some() && self.spool.is_some() => {
                (raw.get(..d.head_len()).unwrap_or(&[]), &[], &[])
            }
            Some(d) if head.is_some() => {
                (raw, raw.get(d.head_len()..).unwrap_or(&[]), d.body_in(raw))
            }
            Some(_) => (raw, &[], &[]),
            None => (&[], &[], &[]),
        };
        let content = match &self.decoded {
            Some(c) => c.as_slice(),
            None if self.spool.is_some() => &[],
            None => body,
        };
        FetchDone {
            request: &self.request,
            outcome: self.outcome,
            head,
            request_bytes: if self.sent { &self.request_bytes } else { &[] },
            response,
            payload,
            body,
            content,
            content_complete: self.content_complete,
            spooled: self.spool.as_ref().map(|(f, d)| (f, *d)),
            shared_response: self.raw.as_ref().filter(|r| r.len() == response.len()),
            peer: self.peer,
            at: self.at,
            timings: self.timings,
        }
    }
}

/// The single report for one URL, borrowed from its [`Completion`] (copy what you keep).
pub struct FetchDone<'a> {
    pub request: &'a FetchRequest,
    pub outcome: ReturnCode,
    /// The response head, when one was received in full.
    pub head: Option<&'a ResponseHead>,
    /// The request bytes as sent (empty if none was sent).
    pub request_bytes: &'a [u8],
    /// The response exactly as received (head + body, transfer coding intact); may be partial
    /// when the outcome is a failure.
    pub response: &'a [u8],
    /// The response after its head, exactly as received (transfer and content coding intact):
    /// what warcio digests as the WARC payload.
    pub payload: &'a [u8],
    /// The body with transfer coding removed.
    pub body: &'a [u8],
    /// The body with content coding removed as well (equal to `body` when there was none),
    /// at most `max_scan_bytes` of it.
    pub content: &'a [u8],
    /// Whether `content` is the whole content (not cut at `max_scan_bytes`).
    pub content_complete: bool,
    /// A payload that outgrew memory: the spool holding it (then `payload` and `body` are
    /// empty and `response` is the head alone), and its digest.
    pub spooled: Option<(&'a Arc<dyn SpoolFile>, PayloadDigest)>,
    /// `response`'s bytes, to keep without copying them (a clone of the `Arc`), when
    /// `response` is all of them.
    pub shared_response: Option<&'a Arc<SharedBytes>>,
    pub peer: Option<SocketAddr>,
    /// The fetch's one wall time: the loop's reading of the turn in which it ended (its
    /// response complete, or its failure). Every date of the fetch is this one: its
    /// crawl.log line, its WARC records' `WARC-Date`, its crawl database record's `at`.
    pub at: SystemTime,
    pub timings: Timings,
}

impl FetchDone<'_> {
    /// The HTTP status, 0 if no head was received.
    pub fn status(&self) -> u16 {
        self.head.map_or(0, |h| h.status)
    }

    /// The payload digest (SHA-1 of the bytes after the head, as received), when a response
    /// head arrived: the WARC payload digest, crawl.log's digest and the crawl's content-seen
    /// fingerprint. Computed once per body: on the way to the spool, or here.
    pub fn payload_digest(&self) -> Option<PayloadDigest> {
        self.head?;
        Some(match self.spooled {
            Some((_, digest)) => digest,
            None => digest::of(self.payload),
        })
    }

    /// Bytes of payload received (in memory or spooled).
    pub fn payload_len(&self) -> u64 {
        match self.spooled {
            Some((spool, _)) => spool.len(),
            None => self.payload.len() as u64,
        }
    }

    /// Why the stored response is not the complete one, when a head arrived but the body
    /// did not end as framed (ISO 28500's `WARC-Truncated` reasons).
    pub fn truncation(&self) -> Option<Truncation> {
        self.head?;
        match self.outcome {
            // (Content-decoding failures leave the raw response complete: not truncated.)
            ReturnCode::HttpBodyTooLarge => Some(Truncation::Length),
            ReturnCode::HttpTimeout => Some(Truncation::Time),
            ReturnCode::HttpPageTruncated
            | ReturnCode::HttpReceive
            | ReturnCode::TlsTruncated
            | ReturnCode::Interrupted => Some(Truncation::Disconnect),
            ReturnCode::MimeBadChunkEncoding => Some(Truncation::Unspecified),
            _ => None,
        }
    }
}

/// Why a stored response is cut short.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Truncation {
    /// A size limit (`--max-body-bytes`).
    Length,
    /// The fetch's deadline passed mid-body.
    Time,
    /// The peer closed or reset mid-body, or the run was interrupted.
    Disconnect,
    /// Anything else (broken framing).
    Unspecified,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_from_urls() {
        let t = Target::of(&Url::parse("https://Example.COM/x").unwrap()).unwrap();
        assert_eq!(t.host, TargetHost::Name("example.com".into()));
        assert_eq!((t.port, t.tls), (443, true));
        assert_eq!(t.server_name().as_deref(), Some("example.com"));
        let t = Target::of(&Url::parse("http://127.0.0.1:8080/").unwrap()).unwrap();
        assert_eq!(t.host, TargetHost::Ip("127.0.0.1".parse().unwrap()));
        assert_eq!((t.port, t.tls, t.server_name()), (8080, false, None));
        let t = Target::of(&Url::parse("http://[::1]/").unwrap()).unwrap();
        assert_eq!(t.host, TargetHost::Ip("::1".parse().unwrap()));
        assert_eq!(
            Target::of(&Url::parse("ftp://example.com/").unwrap()),
            Err(ReturnCode::HttpUnsupportedScheme)
        );
        assert_eq!(
            Target::of(&Url::parse("mailto:a@b.c").unwrap()),
            Err(ReturnCode::HttpUnsupportedScheme)
        );
    }

    /// A completion's view is the same before and after its raw bytes are shared, and the
    /// shared bytes are the decoder's own buffer (moved, not copied).
    #[test]
    fn shared_raw_bytes_give_the_same_view() {
        let length = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello".to_vec();
        let chunked =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
                .to_vec();
        let cut = b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nhel".to_vec();
        for input in [length, chunked, cut] {
            let mut decoder = ResponseDecoder::new(crate::http::Limits::default());
            decoder.reset(false);
            decoder.process(&input).unwrap();
            let at = decoder.raw().as_ptr();
            let request = FetchRequest::new(Url::parse("http://127.0.0.1/").unwrap(), 0);
            let mut c =
                Completion::without_response(request, ReturnCode::Success, SystemTime::UNIX_EPOCH);
            c.decoder = Some(decoder);
            let view = |c: &Completion| {
                let d = c.done();
                (
                    d.response.to_vec(),
                    d.payload.to_vec(),
                    d.body.to_vec(),
                    d.content.to_vec(),
                )
            };
            let (before, held) = (view(&c), c.buffered());
            assert!(c.done().shared_response.is_none());
            c.share_raw(|b| SharedBytes::new(b, None));
            assert_eq!(view(&c), before);
            assert_eq!(before.0, input);
            assert_eq!(c.buffered(), held);
            let done = c.done();
            let shared = done.shared_response.expect("the whole response is shared");
            assert_eq!(shared.as_ptr(), at, "moved, not copied");
            assert!(c.decoder.as_ref().unwrap().raw().is_empty());
        }
    }

    #[test]
    fn timings_follow_marks() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut m = Marks::new(t0);
        m.resolved = Some(t0 + ms(5));
        m.assigned = Some(t0 + ms(7));
        m.connected = Some(t0 + ms(10));
        m.sent = Some(t0 + ms(10));
        m.first_byte = Some(t0 + ms(15));
        let t = m.timings(t0 + ms(20));
        assert_eq!(
            t,
            Timings {
                dns: ms(5),
                wait: ms(2),
                connect: ms(3),
                first_byte: ms(5),
                receive: ms(5),
                total: ms(20)
            }
        );
    }
}
