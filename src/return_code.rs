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
    /// The run was interrupted (Ctrl-C) before this fetch finished.
    Interrupted,
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
        ReturnCode::Interrupted,
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
            Interrupted => "Interrupted",
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
        }
    }
}
