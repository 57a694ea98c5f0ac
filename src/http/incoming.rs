//! The head of a request someone sends us: the only HTTP server spinneret runs is the
//! `--metrics` endpoint, which must answer garbage with an error and never be made to hold
//! much. Sans-IO: bytes in, a verdict out; the server thread owns the socket and the clock.
//!
//! The grammar is httparse's (well fuzzed, strict about the request line and header syntax);
//! this module adds the bounds and the few answers a metrics endpoint gives.

/// The most a request head may take, headers included. Prometheus sends about 300 bytes.
pub const MAX_INCOMING_HEAD: usize = 8 * 1024;
/// Header lines read; more is refused.
const MAX_INCOMING_HEADERS: usize = 32;

/// The request methods a read-only endpoint distinguishes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IncomingMethod {
    Get,
    Head,
    /// Anything else: answered 405.
    Other,
}

/// A complete request head.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IncomingRequest {
    pub method: IncomingMethod,
    /// The path, without the query string.
    pub path: String,
}

/// Why a head is refused, and with which status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IncomingError {
    /// Not an HTTP/1.x request head: 400.
    Malformed,
    /// Longer than [`MAX_INCOMING_HEAD`] or with too many headers: 431.
    TooLarge,
}

impl IncomingError {
    pub fn status(self) -> u16 {
        match self {
            IncomingError::Malformed => 400,
            IncomingError::TooLarge => 431,
        }
    }
}

/// What the bytes received so far amount to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Incoming {
    /// The head is not complete yet: read more.
    Partial,
    Request(IncomingRequest),
    Refused(IncomingError),
}

/// Reads a request head from the start of `buf` (everything received on the connection).
pub fn parse_incoming(buf: &[u8]) -> Incoming {
    let mut headers = [httparse::EMPTY_HEADER; MAX_INCOMING_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let parsed = req.parse(buf);
    match parsed {
        Ok(httparse::Status::Complete(len)) if len <= MAX_INCOMING_HEAD => {}
        Ok(httparse::Status::Complete(_)) => return Incoming::Refused(IncomingError::TooLarge),
        Ok(httparse::Status::Partial) if buf.len() < MAX_INCOMING_HEAD => return Incoming::Partial,
        Ok(httparse::Status::Partial) | Err(httparse::Error::TooManyHeaders) => {
            return Incoming::Refused(IncomingError::TooLarge)
        }
        Err(_) => return Incoming::Refused(IncomingError::Malformed),
    }
    let method = match req.method {
        Some("GET") => IncomingMethod::Get,
        Some("HEAD") => IncomingMethod::Head,
        _ => IncomingMethod::Other,
    };
    // httparse accepts any visible bytes in the target; an origin-form path starts with '/'.
    let Some(target) = req.path.filter(|p| p.starts_with('/')) else {
        return Incoming::Refused(IncomingError::Malformed);
    };
    let path = target
        .split(['?', '#'])
        .next()
        .unwrap_or_default()
        .to_string();
    Incoming::Request(IncomingRequest { method, path })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn request(buf: &[u8]) -> IncomingRequest {
        match parse_incoming(buf) {
            Incoming::Request(r) => r,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_prometheus_scrape_is_read() {
        let r = request(
            b"GET /metrics?x=1 HTTP/1.1\r\nHost: 127.0.0.1:9464\r\nUser-Agent: Prometheus/2.42.0\r\n\
              Accept: application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5\r\n\r\n",
        );
        assert_eq!(r.method, IncomingMethod::Get);
        assert_eq!(r.path, "/metrics");
        let r = request(b"HEAD / HTTP/1.0\r\n\r\n");
        assert_eq!((r.method, r.path.as_str()), (IncomingMethod::Head, "/"));
        assert_eq!(
            request(b"DELETE /metrics HTTP/1.1\r\n\r\n").method,
            IncomingMethod::Other
        );
    }

    #[test]
    fn incomplete_heads_wait_and_bad_ones_are_refused() {
        assert_eq!(parse_incoming(b""), Incoming::Partial);
        assert_eq!(
            parse_incoming(b"GET /metrics HTTP/1.1\r\nHost: x\r\n"),
            Incoming::Partial
        );
        for bad in [
            &b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"[..],
            b"GET /metrics HTTP/9.9\r\n\r\n",
            b"GET metrics HTTP/1.1\r\n\r\n",
            b"GET * HTTP/1.1\r\n\r\n",
            b"G\0T / HTTP/1.1\r\n\r\n",
            b"GET / HTTP/1.1\r\nBad Header\r\n\r\n",
        ] {
            assert_eq!(
                parse_incoming(bad),
                Incoming::Refused(IncomingError::Malformed),
                "{bad:?}"
            );
        }
        let mut long = b"GET /".to_vec();
        long.resize(MAX_INCOMING_HEAD + 10, b'a');
        assert_eq!(
            parse_incoming(&long),
            Incoming::Refused(IncomingError::TooLarge)
        );
        let mut many = b"GET / HTTP/1.1\r\n".to_vec();
        for i in 0..40 {
            many.extend_from_slice(format!("X-{i}: y\r\n").as_bytes());
        }
        many.extend_from_slice(b"\r\n");
        assert_eq!(
            parse_incoming(&many),
            Incoming::Refused(IncomingError::TooLarge)
        );
        assert_eq!(IncomingError::TooLarge.status(), 431);
    }

    proptest! {
        /// Any bytes: a verdict, never a panic; a head is only complete within the bound, and
        /// a path it gives starts with '/' and has no query.
        #[test]
        fn any_bytes_get_a_verdict(buf in proptest::collection::vec(any::<u8>(), 0..10_000)) {
            if let Incoming::Request(r) = parse_incoming(&buf) {
                prop_assert!(r.path.starts_with('/') && !r.path.contains('?'));
                prop_assert!(buf.len() >= 16);
            }
        }

        /// A well-formed GET of any path is read as sent, whatever follows the head.
        #[test]
        fn well_formed_gets_are_read(path in "/[a-zA-Z0-9/_.-]{0,200}", tail in proptest::collection::vec(any::<u8>(), 0..64)) {
            let mut buf = format!("GET {path} HTTP/1.1\r\nHost: h\r\n\r\n").into_bytes();
            buf.extend_from_slice(&tail);
            let r = request(&buf);
            prop_assert_eq!(r.method, IncomingMethod::Get);
            prop_assert_eq!(r.path, path);
        }
    }
}
