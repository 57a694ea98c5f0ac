//! `ReturnCode`: every way a fetch can end (ARCHITECTURE §1).
//!
//! Each URL handed to the crawler ends in exactly one of these, and each is written by name to
//! `crawl.log` and counted in `stats.json`. The layers below (`dns`, `http`, `tls`) have their own
//! small error enums; each maps onto one of these codes, so this is the one vocabulary the user sees.

use std::fmt;

/// The outcome of one fetch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ReturnCode {
    /// A complete HTTP response was received (whatever its status).
    Success,

    // ---- URL ----
    /// The URL could not be parsed, or has no host.
    HttpBadUrlSyntax,
    /// The URL's scheme is neither `http` nor `https`.
    HttpUnsupportedScheme,

    // ---- DNS ----
    /// No DNS server is configured and the name is not in the hosts file.
    DnsServerUnknown,
    /// The host name cannot be sent to DNS (empty or over-long label, over-long name, bad bytes).
    DnsBadHostName,
    /// No answer arrived after every retry.
    DnsTimeout,
    /// The name does not exist.
    DnsNxDomain,
    /// The server answered SERVFAIL.
    DnsServFail,
    /// The server refused the query or answered with another error code.
    DnsRefused,
    /// The name exists but has no A or AAAA record.
    DnsNoAddress,
    /// The answer was malformed (bad packet, implausible counts, truncated without retry over TCP).
    DnsParseError,
    /// The answer used record types or features we do not handle.
    DnsUnsupportedAnswer,
    /// A CNAME chain was too long or looped.
    DnsCnameChain,

    // ---- address policy ----
    /// The host resolved to a loopback, private, link-local, CGNAT or reserved address and
    /// neither `--allow-private` nor a matching `--allow-net` permits it.
    PrivateAddressBlocked,

    // ---- connection ----
    /// The TCP connection was refused or failed.
    HttpConnect,
    /// The TCP connection did not complete in time.
    HttpConnectTimeout,
    /// Writing the request failed.
    HttpSend,
    /// Reading the response failed (reset, I/O error).
    HttpReceive,
    /// The fetch passed its overall deadline.
    HttpTimeout,

    // ---- TLS ----
    /// The TLS handshake failed (protocol error, plain text on a TLS port, alert).
    TlsHandshake,
    /// The server's certificate did not verify (bad, expired, self-signed, wrong name).
    TlsCertificate,
    /// The TLS peer closed without `close_notify` while the body was delimited by the close.
    TlsTruncated,

    // ---- proxy ----
    /// The TCP connection to the proxy was refused or failed, or the proxy closed it during
    /// the handshake.
    ProxyConnect,
    /// The proxy wants credentials, or refused those of the proxy URL (HTTP 407, SOCKS5
    /// "no acceptable method" or a failed RFC 1929 login; 401 to CONNECT).
    ProxyAuth,
    /// The proxy would not or could not reach the site (SOCKS5 reply failure, CONNECT
    /// answered with a status other than 2xx or 407).
    ProxyRefused,
    /// Connecting to the proxy, or one step of its handshake, passed its deadline.
    ProxyTimeout,
    /// The proxy's answer was not SOCKS5 or HTTP as expected.
    ProxyProtocol,

    // ---- response framing ----
    /// The connection closed before any byte of a response arrived.
    MimePageEmpty,
    /// The response does not begin with an HTTP status line.
    MimeNoStatusLine,
    /// The status line names an HTTP version other than 1.0 or 1.1.
    MimeUnsupportedHttpVersion,
    /// The connection closed before the end of the response head.
    MimeMissing,
    /// A header line was malformed, or framing headers conflicted.
    MimeBadHeader,
    /// The response head exceeded the byte limit.
    HttpHeadTooLarge,
    /// The response head had more header lines than allowed.
    HttpTooManyHeaders,
    /// Chunked framing was malformed (bad size, overflow, oversized extension or trailer).
    MimeBadChunkEncoding,
    /// The connection closed before the body was complete (Content-Length or chunked).
    HttpPageTruncated,
    /// The raw body exceeded `--max-body-bytes`.
    HttpBodyTooLarge,
    /// The content-decoded body exceeded its limit (decompression bomb).
    HttpDecodedTooLarge,
    /// The body's `Content-Encoding` could not be decoded (bad gzip, bad CRC, unknown coding).
    HttpBadContentEncoding,
    /// More stacked content encodings than allowed.
    HttpTooManyEncodings,
    /// A body too large for memory could not be written to the spool (disk full, permissions).
    SpoolFailed,

    // ---- crawl-level (politeness, robots, traps) ----
    /// robots.txt disallows the URL.
    RobotsExcluded,
    /// The page was fetched and stored, but its content is identical to a page fetched
    /// earlier in the crawl, so its links were not followed again.
    DuplicateContent,
    /// Too many redirect hops from the original URL.
    TooManyRedirects,
    /// The server answered 429 (Too Many Requests) or 503 (Service Unavailable) and the URL
    /// was queued again, for after its `Retry-After`: a try, stored as received, not the
    /// URL's end (the URL's last line is its answer).
    RetryLater,
    /// robots.txt could not be fetched (connection refused, DNS failure, timeout, 5xx, 429)
    /// after every retry, so the URL was not fetched: RFC 9309 §2.3.1.4 reads an unreachable
    /// robots.txt as "disallow everything".
    RobotsUnreachable,
    /// The run was stopped (Ctrl-C, or `--max-time` for a fetch in flight) before this fetch
    /// finished.
    Interrupted,
    /// Still queued when the run stopped at `--max-time` or `--max-pages`: never requested.
    NotFetched,

    // ---- URL filter (given URLs only: links refused by the filter are counted, not logged) ----
    /// Outside the crawl's scope: `--scope`, `--allow-domain`, `--deny-domain` or `--max-depth`.
    OutOfScope,
    /// Longer than `--max-url-length`.
    UrlTooLong,
    /// Looks like a crawler trap: too many path segments, or too many repeated ones.
    UrlTrap,
    /// Its host already has `--max-pages-per-host` URLs queued or fetched.
    HostPageLimit,
    /// Refused by `--accept-regex`, `--reject-regex` or `--reject-ext`.
    UrlRejected,
}

impl ReturnCode {
    /// Every code, in declaration order (for stats tables and tests).
    pub const ALL: &'static [ReturnCode] = &[
        ReturnCode::Success,
        ReturnCode::HttpBadUrlSyntax,
        ReturnCode::HttpUnsupportedScheme,
        ReturnCode::DnsServerUnknown,
        ReturnCode::DnsBadHostName,
        ReturnCode::DnsTimeout,
        ReturnCode::DnsNxDomain,
        ReturnCode::DnsServFail,
        ReturnCode::DnsRefused,
        ReturnCode::DnsNoAddress,
        ReturnCode::DnsParseError,
        ReturnCode::DnsUnsupportedAnswer,
        ReturnCode::DnsCnameChain,
        ReturnCode::PrivateAddressBlocked,
        ReturnCode::HttpConnect,
        ReturnCode::HttpConnectTimeout,
        ReturnCode::HttpSend,
        ReturnCode::HttpReceive,
        ReturnCode::HttpTimeout,
        ReturnCode::TlsHandshake,
        ReturnCode::TlsCertificate,
        ReturnCode::TlsTruncated,
        ReturnCode::ProxyConnect,
        ReturnCode::ProxyAuth,
        ReturnCode::ProxyRefused,
        ReturnCode::ProxyTimeout,
        ReturnCode::ProxyProtocol,
        ReturnCode::MimePageEmpty,
        ReturnCode::MimeNoStatusLine,
        ReturnCode::MimeUnsupportedHttpVersion,
        ReturnCode::MimeMissing,
        ReturnCode::MimeBadHeader,
        ReturnCode::HttpHeadTooLarge,
        ReturnCode::HttpTooManyHeaders,
        ReturnCode::MimeBadChunkEncoding,
        ReturnCode::HttpPageTruncated,
        ReturnCode::HttpBodyTooLarge,
        ReturnCode::HttpDecodedTooLarge,
        ReturnCode::HttpBadContentEncoding,
        ReturnCode::HttpTooManyEncodings,
        ReturnCode::SpoolFailed,
        ReturnCode::RobotsExcluded,
        ReturnCode::DuplicateContent,
        ReturnCode::TooManyRedirects,
        ReturnCode::RetryLater,
        ReturnCode::RobotsUnreachable,
        ReturnCode::Interrupted,
        ReturnCode::NotFetched,
        ReturnCode::OutOfScope,
        ReturnCode::UrlTooLong,
        ReturnCode::UrlTrap,
        ReturnCode::HostPageLimit,
        ReturnCode::UrlRejected,
    ];

    /// The name written to `crawl.log` and `stats.json`: the variant's name.
    pub fn name(self) -> &'static str {
        use ReturnCode::*;
        match self {
            Success => "Success",
            HttpBadUrlSyntax => "HttpBadUrlSyntax",
            HttpUnsupportedScheme => "HttpUnsupportedScheme",
            DnsServerUnknown => "DnsServerUnknown",
            DnsBadHostName => "DnsBadHostName",
            DnsTimeout => "DnsTimeout",
            DnsNxDomain => "DnsNxDomain",
            DnsServFail => "DnsServFail",
            DnsRefused => "DnsRefused",
            DnsNoAddress => "DnsNoAddress",
            DnsParseError => "DnsParseError",
            DnsUnsupportedAnswer => "DnsUnsupportedAnswer",
            DnsCnameChain => "DnsCnameChain",
            PrivateAddressBlocked => "PrivateAddressBlocked",
            HttpConnect => "HttpConnect",
            HttpConnectTimeout => "HttpConnectTimeout",
            HttpSend => "HttpSend",
            HttpReceive => "HttpReceive",
            HttpTimeout => "HttpTimeout",
            TlsHandshake => "TlsHandshake",
            TlsCertificate => "TlsCertificate",
            TlsTruncated => "TlsTruncated",
            ProxyConnect => "ProxyConnect",
            ProxyAuth => "ProxyAuth",
            ProxyRefused => "ProxyRefused",
            ProxyTimeout => "ProxyTimeout",
            ProxyProtocol => "ProxyProtocol",
            MimePageEmpty => "MimePageEmpty",
            MimeNoStatusLine => "MimeNoStatusLine",
            MimeUnsupportedHttpVersion => "MimeUnsupportedHttpVersion",
            MimeMissing => "MimeMissing",
            MimeBadHeader => "MimeBadHeader",
            HttpHeadTooLarge => "HttpHeadTooLarge",
            HttpTooManyHeaders => "HttpTooManyHeaders",
            MimeBadChunkEncoding => "MimeBadChunkEncoding",
            HttpPageTruncated => "HttpPageTruncated",
            HttpBodyTooLarge => "HttpBodyTooLarge",
            HttpDecodedTooLarge => "HttpDecodedTooLarge",
            HttpBadContentEncoding => "HttpBadContentEncoding",
            HttpTooManyEncodings => "HttpTooManyEncodings",
            SpoolFailed => "SpoolFailed",
            RobotsExcluded => "RobotsExcluded",
            DuplicateContent => "DuplicateContent",
            TooManyRedirects => "TooManyRedirects",
            RetryLater => "RetryLater",
            RobotsUnreachable => "RobotsUnreachable",
            Interrupted => "Interrupted",
            NotFetched => "NotFetched",
            OutOfScope => "OutOfScope",
            UrlTooLong => "UrlTooLong",
            UrlTrap => "UrlTrap",
            HostPageLimit => "HostPageLimit",
            UrlRejected => "UrlRejected",
        }
    }

    /// One line saying what the outcome means (`spinneret help outcomes`).
    pub fn meaning(self) -> &'static str {
        use ReturnCode::*;
        match self {
            Success => "a complete HTTP response arrived (any status; the status is logged)",
            HttpBadUrlSyntax => "the URL does not parse, has no host, or cannot go into a request",
            HttpUnsupportedScheme => "the scheme is neither http nor https",
            DnsServerUnknown => "no DNS server is configured and the name is not in the hosts file",
            DnsBadHostName => "the host name cannot be sent to DNS (bad or over-long label)",
            DnsTimeout => "no DNS answer arrived after every retry",
            DnsNxDomain => "the host name does not exist",
            DnsServFail => "the DNS server answered SERVFAIL",
            DnsRefused => "the DNS server refused the query or answered another error",
            DnsNoAddress => "the name exists but has no A or AAAA record",
            DnsParseError => "the DNS answer was malformed",
            DnsUnsupportedAnswer => "the DNS answer used records or features not handled",
            DnsCnameChain => "the CNAME chain was too long or looped",
            PrivateAddressBlocked => {
                "the host is loopback/private/reserved; allow with --allow-private or --allow-net"
            }
            HttpConnect => "the TCP connection was refused or failed",
            HttpConnectTimeout => "the TCP connection did not complete in time",
            HttpSend => "writing the request failed",
            HttpReceive => "reading the response failed (reset, I/O error)",
            HttpTimeout => "the fetch passed its overall deadline (--http-timeout-ms)",
            TlsHandshake => "the TLS handshake failed",
            TlsCertificate => "the server certificate did not verify",
            TlsTruncated => "the TLS peer closed without close_notify mid-body",
            ProxyConnect => {
                "the connection to the proxy failed, or the proxy closed it mid-handshake"
            }
            ProxyAuth => "the proxy wants credentials or refused those of the proxy URL",
            ProxyRefused => {
                "the proxy would not or could not reach the site (SOCKS or CONNECT refusal)"
            }
            ProxyTimeout => "connecting to the proxy or a step of its handshake took too long",
            ProxyProtocol => "the proxy's answer was not SOCKS5 or HTTP as expected",
            MimePageEmpty => "the connection closed before any response byte",
            MimeNoStatusLine => "the response does not start with an HTTP status line",
            MimeUnsupportedHttpVersion => "the response's HTTP version is not 1.0 or 1.1",
            MimeMissing => "the connection closed before the end of the response head",
            MimeBadHeader => "a response header was malformed, or framing headers conflicted",
            HttpHeadTooLarge => "the response head was too large",
            HttpTooManyHeaders => "the response head had too many header lines",
            MimeBadChunkEncoding => "the chunked framing was malformed",
            HttpPageTruncated => "the connection closed before the body was complete",
            HttpBodyTooLarge => "the body exceeded --max-body-bytes",
            HttpDecodedTooLarge => "the decoded body exceeded its limit (decompression bomb)",
            HttpBadContentEncoding => "the Content-Encoding could not be decoded",
            HttpTooManyEncodings => "too many stacked content encodings",
            SpoolFailed => "a body too large for memory could not be written to the spool (disk)",
            RobotsExcluded => "robots.txt disallows the URL; not fetched",
            DuplicateContent => "fetched and stored, but identical to an earlier page",
            TooManyRedirects => "more redirect hops than --max-redirect; the target is logged",
            RetryLater => {
                "429 or 503: a try, stored; fetched again after Retry-After (the last line answers)"
            }
            RobotsUnreachable => "robots.txt could not be fetched after retries; not fetched",
            Interrupted => "Ctrl-C (or --max-time, for a fetch in flight) ended the fetch",
            NotFetched => {
                "still queued when --max-time or --max-pages stopped a run that keeps no journal"
            }
            OutOfScope => "outside --scope, --allow-domain, --deny-domain or --max-depth",
            UrlTooLong => "longer than --max-url-length",
            UrlTrap => "looks like a crawler trap (path too deep or repeating)",
            HostPageLimit => "its host reached --max-pages-per-host",
            UrlRejected => "refused by --accept-regex, --reject-regex or --reject-ext",
        }
    }

    /// Looks a code up by its `name()` (for reading logs back).
    pub fn from_name(name: &str) -> Option<ReturnCode> {
        ReturnCode::ALL.iter().copied().find(|c| c.name() == name)
    }

    /// A complete response was received (a duplicate's fetch succeeded too).
    pub fn is_success(self) -> bool {
        matches!(self, ReturnCode::Success | ReturnCode::DuplicateContent)
    }
}

impl fmt::Display for ReturnCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for &c in ReturnCode::ALL {
            assert_eq!(ReturnCode::from_name(c.name()), Some(c));
            assert!(seen.insert(c.name()), "duplicate name {}", c.name());
            assert_eq!(format!("{c:?}"), c.name());
            assert!(!c.meaning().is_empty() && !c.meaning().contains('\n'));
        }
    }
}
