//! An HTTP proxy's tunnel (RFC 9110 §9.3.6): the `CONNECT` request and the head of its
//! answer, and the `Proxy-Authorization: Basic` value (RFC 7617) for a proxy URL's
//! credentials, sent with `CONNECT` and with absolute-form requests.

use base64::Engine as _;

use super::{Credentials, Parsed, ProxyError};

/// The longest answer head accepted: a proxy's answer to `CONNECT` is a status line and a
/// few headers.
pub const MAX_REPLY_HEAD: usize = 16 * 1024;
/// Header lines parsed in an answer.
const MAX_REPLY_HEADERS: usize = 64;

/// `Basic base64(user:password)`.
pub fn basic_authorization(credentials: &Credentials) -> String {
    let pair = format!("{}:{}", credentials.user, credentials.password);
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(pair)
    )
}

/// `CONNECT authority HTTP/1.1` with its `Host`, the credentials and our User-Agent.
/// `authority` is `host:port` (an IPv6 host in brackets).
pub fn connect_request(
    authority: &str,
    credentials: Option<&Credentials>,
    user_agent: &str,
    out: &mut Vec<u8>,
) {
    out.extend_from_slice(b"CONNECT ");
    out.extend_from_slice(authority.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\nHost: ");
    out.extend_from_slice(authority.as_bytes());
    out.extend_from_slice(b"\r\nUser-Agent: ");
    out.extend_from_slice(user_agent.as_bytes());
    if let Some(c) = credentials {
        out.extend_from_slice(b"\r\nProxy-Authorization: ");
        out.extend_from_slice(basic_authorization(c).as_bytes());
    }
    out.extend_from_slice(b"\r\n\r\n");
}

/// The answer's head, from the bytes received so far: `Done` with the head's length for a
/// 2xx (the tunnel is open after it), [`ProxyError::Auth`] for 407 and 401 (an answer to
/// `CONNECT` is the proxy's own; tinyproxy answers wrong credentials with 401),
/// [`ProxyError::Refused`] for any other status (its body is not read: the connection is
/// dropped).
pub fn parse_connect_reply(reply: &[u8]) -> Result<Parsed<()>, ProxyError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_REPLY_HEADERS];
    let mut response = httparse::Response::new(&mut headers);
    match response.parse(reply) {
        Ok(httparse::Status::Complete(len)) => match response.code {
            Some(200..=299) => Ok(Parsed::Done((), len)),
            Some(401 | 407) => Err(ProxyError::Auth),
            Some(code) => Err(ProxyError::Refused(u8::try_from(code / 100).unwrap_or(0))),
            None => Err(ProxyError::Protocol),
        },
        Ok(httparse::Status::Partial) if reply.len() >= MAX_REPLY_HEAD => Err(ProxyError::Protocol),
        Ok(httparse::Status::Partial) => Ok(Parsed::NeedMore(1)),
        Err(_) => Err(ProxyError::Protocol),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_carries_host_and_credentials() {
        let mut out = Vec::new();
        let c = Credentials {
            user: "Aladdin".into(),
            password: "open sesame".into(),
        };
        connect_request("example.com:443", Some(&c), "ua/1", &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\nUser-Agent: ua/1\r\n\
             Proxy-Authorization: Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==\r\n\r\n"
        );
    }

    #[test]
    fn the_answer_status_decides() {
        let ok = b"HTTP/1.1 200 Connection established\r\nVia: x\r\n\r\n";
        assert_eq!(parse_connect_reply(ok), Ok(Parsed::Done((), ok.len())));
        assert_eq!(parse_connect_reply(&ok[..20]), Ok(Parsed::NeedMore(1)));
        assert_eq!(
            parse_connect_reply(b"HTTP/1.0 407 Proxy Authentication Required\r\n\r\n"),
            Err(ProxyError::Auth)
        );
        assert_eq!(
            parse_connect_reply(b"HTTP/1.0 401 Unauthorized\r\n\r\n"),
            Err(ProxyError::Auth)
        );
        assert_eq!(
            parse_connect_reply(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 3\r\n\r\nno!"),
            Err(ProxyError::Refused(4))
        );
        assert_eq!(
            parse_connect_reply(b"SSH-2.0-OpenSSH\r\n\r\n"),
            Err(ProxyError::Protocol)
        );
        let endless = vec![b'a'; MAX_REPLY_HEAD];
        let mut head = b"HTTP/1.1 200 OK\r\nX: ".to_vec();
        head.extend_from_slice(&endless);
        assert_eq!(parse_connect_reply(&head), Err(ProxyError::Protocol));
    }
}
