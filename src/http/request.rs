//! Request writing: one HTTP/1.1 GET or HEAD, appended to the caller's buffer.
//!
//! Every field is checked before anything is written, so a refused request leaves the buffer as
//! it was. The caller (`fetch`) builds `host` and `target` from a parsed URL; the checks here are
//! the last line against header injection, not URL validation.

use super::Validators;

/// The request method: a crawler only ever reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    Get,
    Head,
}

impl Method {
    fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Head => "HEAD",
        }
    }
}

/// One request, borrowed from the fetch that sends it.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    pub method: Method,
    /// `Host` header value, including `:port` when not the scheme's default.
    pub host: &'a str,
    /// Origin-form target: `path?query`.
    pub target: &'a str,
    pub user_agent: &'a str,
    /// Send `Accept-Encoding: gzip, deflate`.
    pub accept_encoding: bool,
    /// Ask to keep the connection open (`Connection: keep-alive`, else `close`).
    pub keep_alive: bool,
    /// The `Cookie` header value, if any (a cookie jar's `header_for`).
    pub cookie: Option<&'a str>,
    /// The `Authorization` header value, if any (`http::auth` computes it).
    pub authorization: Option<&'a str>,
    /// Further `(name, value)` headers, written in order after the standard ones.
    pub extra_headers: &'a [(&'a str, &'a str)],
    /// A conditional GET: `If-None-Match` and `If-Modified-Since` from an earlier response's
    /// validators (a `304 Not Modified` then says the stored copy is current).
    pub validators: Option<&'a Validators>,
}

/// Why a request was refused, named by the offending field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestError {
    /// Empty, or contains whitespace or a control byte.
    Host,
    /// Empty, or contains whitespace or a control byte (would break the request line).
    Target,
    /// Contains CR, LF or NUL.
    UserAgent,
    /// Contains CR, LF or NUL.
    Cookie,
    /// An extra header name is empty or not an RFC 9110 token.
    HeaderName,
    /// An extra header value contains CR, LF or NUL.
    HeaderValue,
    /// A validator is too long or contains a control byte.
    Validator,
}

/// Appends `req` to `out`. On error nothing is appended.
pub fn write_request(out: &mut Vec<u8>, req: &Request<'_>) -> Result<(), RequestError> {
    if !is_word(req.host) {
        return Err(RequestError::Host);
    }
    if !is_word(req.target) {
        return Err(RequestError::Target);
    }
    if !is_field_value(req.user_agent) {
        return Err(RequestError::UserAgent);
    }
    if req.cookie.is_some_and(|c| !is_field_value(c)) {
        return Err(RequestError::Cookie);
    }
    if req.authorization.is_some_and(|c| !is_field_value(c)) {
        return Err(RequestError::HeaderValue);
    }
    if req.validators.is_some_and(|v| !v.are_sendable()) {
        return Err(RequestError::Validator);
    }
    for (name, value) in req.extra_headers {
        if name.is_empty() || !name.bytes().all(is_tchar) {
            return Err(RequestError::HeaderName);
        }
        if !is_field_value(value) {
            return Err(RequestError::HeaderValue);
        }
    }

    let mut line = |parts: &[&str]| {
        for p in parts {
            out.extend_from_slice(p.as_bytes());
        }
        out.extend_from_slice(b"\r\n");
    };
    line(&[req.method.as_str(), " ", req.target, " HTTP/1.1"]);
    line(&["Host: ", req.host]);
    if !req.user_agent.is_empty() {
        line(&["User-Agent: ", req.user_agent]);
    }
    if req.accept_encoding {
        line(&["Accept-Encoding: gzip, deflate"]);
    }
    line(&[
        "Connection: ",
        if req.keep_alive {
            "keep-alive"
        } else {
            "close"
        },
    ]);
    if let Some(cookie) = req.cookie {
        line(&["Cookie: ", cookie]);
    }
    if let Some(authorization) = req.authorization {
        line(&["Authorization: ", authorization]);
    }
    if let Some(v) = req.validators {
        if let Some(etag) = &v.etag {
            line(&["If-None-Match: ", etag]);
        }
        if let Some(date) = &v.last_modified {
            line(&["If-Modified-Since: ", date]);
        }
    }
    for (name, value) in req.extra_headers {
        line(&[name, ": ", value]);
    }
    line(&[]);
    Ok(())
}

/// Non-empty, no whitespace, no control bytes: safe inside the request line or `Host`.
fn is_word(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b > b' ' && b != 0x7f)
}

/// No byte that could end the header line or the head (CR, LF), nor NUL.
fn is_field_value(s: &str) -> bool {
    !s.bytes().any(|b| matches!(b, b'\r' | b'\n' | 0))
}

/// RFC 9110 `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// The request target of `url`: its path and, when present, `?query` — a slice of the URL's
/// own string (no allocation), as the fetcher sends it and robots rules match it.
pub fn path_and_query(url: &url::Url) -> &str {
    &url[url::Position::BeforePath..url::Position::AfterQuery]
}

/// The `Host` header value of `url`: host, and `:port` when not the scheme's default (the url
/// crate keeps only non-default ports) — a slice of the URL's own string.
pub fn host_and_port(url: &url::Url) -> &str {
    &url[url::Position::BeforeHost..url::Position::AfterPort]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Request<'static> {
        Request {
            method: Method::Get,
            host: "example.com:8080",
            target: "/a/b?c=d",
            user_agent: "spinneret/0.1",
            accept_encoding: true,
            keep_alive: true,
            cookie: Some("a=1; b=2"),
            authorization: Some("Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=="),
            extra_headers: &[("Accept", "*/*"), ("If-None-Match", "\"x\"")],
            validators: None,
        }
    }

    #[test]
    fn a_conditional_get_sends_the_validators_back() {
        let v = Validators {
            etag: Some("W/\"v1\"".into()),
            last_modified: Some("Tue, 03 Nov 2026 10:00:00 GMT".into()),
        };
        let req = Request {
            cookie: None,
            authorization: None,
            extra_headers: &[],
            validators: Some(&v),
            ..base()
        };
        let mut out = Vec::new();
        write_request(&mut out, &req).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.ends_with(
            "Connection: keep-alive\r\nIf-None-Match: W/\"v1\"\r\n\
             If-Modified-Since: Tue, 03 Nov 2026 10:00:00 GMT\r\n\r\n"
        ));
        let bad = Validators {
            etag: Some("\"a\"\r\nX: y".into()),
            last_modified: None,
        };
        let mut out = Vec::new();
        let req = Request {
            validators: Some(&bad),
            ..req
        };
        assert_eq!(write_request(&mut out, &req), Err(RequestError::Validator));
        assert!(out.is_empty());
    }

    #[test]
    fn writes_exact_bytes_and_appends() {
        let mut out = b"prev".to_vec();
        write_request(&mut out, &base()).unwrap();
        assert_eq!(
            out,
            b"prevGET /a/b?c=d HTTP/1.1\r\nHost: example.com:8080\r\nUser-Agent: spinneret/0.1\r\n\
              Accept-Encoding: gzip, deflate\r\nConnection: keep-alive\r\nCookie: a=1; b=2\r\n\
              Authorization: Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==\r\nAccept: */*\r\nIf-None-Match: \"x\"\r\n\r\n"
                .to_vec()
        );
    }

    #[test]
    fn head_close_no_encoding() {
        let req = Request {
            method: Method::Head,
            accept_encoding: false,
            keep_alive: false,
            cookie: None,
            authorization: None,
            extra_headers: &[],
            ..base()
        };
        let mut out = Vec::new();
        write_request(&mut out, &req).unwrap();
        assert_eq!(
            out,
            b"HEAD /a/b?c=d HTTP/1.1\r\nHost: example.com:8080\r\nUser-Agent: spinneret/0.1\r\n\
              Connection: close\r\n\r\n"
                .to_vec()
        );
    }

    #[test]
    fn refuses_injection_in_every_field_and_writes_nothing() {
        for bad in ["a\rb", "a\nb", "a\0b"] {
            let extra_name = [(bad, "v")];
            let extra_value = [("X-A", bad)];
            let cases: [(Request<'_>, RequestError); 7] = [
                (
                    Request {
                        host: bad,
                        ..base()
                    },
                    RequestError::Host,
                ),
                (
                    Request {
                        target: bad,
                        ..base()
                    },
                    RequestError::Target,
                ),
                (
                    Request {
                        user_agent: bad,
                        ..base()
                    },
                    RequestError::UserAgent,
                ),
                (
                    Request {
                        cookie: Some(bad),
                        ..base()
                    },
                    RequestError::Cookie,
                ),
                (
                    Request {
                        authorization: Some(bad),
                        ..base()
                    },
                    RequestError::HeaderValue,
                ),
                (
                    Request {
                        extra_headers: &extra_name,
                        ..base()
                    },
                    RequestError::HeaderName,
                ),
                (
                    Request {
                        extra_headers: &extra_value,
                        ..base()
                    },
                    RequestError::HeaderValue,
                ),
            ];
            for (req, want) in cases {
                let mut out = b"keep".to_vec();
                assert_eq!(write_request(&mut out, &req), Err(want), "{bad:?}");
                assert_eq!(out, b"keep");
            }
        }
        // Space in the target or host would split the request line.
        let mut out = Vec::new();
        let req = Request {
            target: "/a b",
            ..base()
        };
        assert_eq!(write_request(&mut out, &req), Err(RequestError::Target));
        let req = Request { host: "", ..base() };
        assert_eq!(write_request(&mut out, &req), Err(RequestError::Host));
        let req = Request {
            extra_headers: &[("Bad Name", "v")],
            ..base()
        };
        assert_eq!(write_request(&mut out, &req), Err(RequestError::HeaderName));
        assert!(out.is_empty());
    }

    #[test]
    fn target_and_host_are_slices_of_the_url() {
        let u = |s: &str| url::Url::parse(s).unwrap();
        assert_eq!(path_and_query(&u("http://h/a/b?x=1&y#frag")), "/a/b?x=1&y");
        assert_eq!(path_and_query(&u("http://h")), "/");
        assert_eq!(path_and_query(&u("http://h/p?")), "/p?");
        assert_eq!(host_and_port(&u("http://h:80/")), "h");
        assert_eq!(host_and_port(&u("https://h:443/")), "h");
        assert_eq!(host_and_port(&u("http://h:8080/x")), "h:8080");
        assert_eq!(host_and_port(&u("http://user:pw@h:81/")), "h:81");
        assert_eq!(host_and_port(&u("http://[::1]:9/")), "[::1]:9");
    }
}
