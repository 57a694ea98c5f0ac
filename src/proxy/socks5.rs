//! SOCKS5's messages (RFC 1928) and its user name/password sub-negotiation (RFC 1929):
//! requests written into a buffer, replies parsed from the bytes received so far. Each reply
//! parser says how many bytes it still needs, so the caller reads no byte past the reply.

use std::net::IpAddr;

use super::{Credentials, Parsed, ProxyError};

const VERSION: u8 = 5;
const NO_AUTH: u8 = 0x00;
const USER_PASS: u8 = 0x02;
const NO_ACCEPTABLE: u8 = 0xff;
const AUTH_VERSION: u8 = 1;
const CMD_CONNECT: u8 = 1;
const ATYP_V4: u8 = 1;
const ATYP_NAME: u8 = 3;
const ATYP_V6: u8 = 4;

/// Where the proxy is asked to connect.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Destination {
    Ip(IpAddr),
    /// A name the proxy resolves (`socks5h`), at most 255 bytes.
    Name(String),
}

/// The method the proxy chose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    NoAuth,
    UserPass,
}

/// The greeting: no authentication, and user name/password when we have credentials.
pub fn greeting(with_credentials: bool, out: &mut Vec<u8>) {
    if with_credentials {
        out.extend_from_slice(&[VERSION, 2, NO_AUTH, USER_PASS]);
    } else {
        out.extend_from_slice(&[VERSION, 1, NO_AUTH]);
    }
}

/// The method selection: `[5, method]`. A method we did not offer is a protocol error;
/// "none acceptable" means the proxy wants credentials we do not have (or another method).
pub fn parse_method(reply: &[u8], offered_credentials: bool) -> Result<Parsed<Method>, ProxyError> {
    let [version, method] = match reply {
        [a, b, ..] => [*a, *b],
        _ => return Ok(Parsed::NeedMore(2 - reply.len())),
    };
    if version != VERSION {
        return Err(ProxyError::Protocol);
    }
    match method {
        NO_AUTH => Ok(Parsed::Done(Method::NoAuth, 2)),
        USER_PASS if offered_credentials => Ok(Parsed::Done(Method::UserPass, 2)),
        NO_ACCEPTABLE => Err(ProxyError::Auth),
        _ => Err(ProxyError::Protocol),
    }
}

/// RFC 1929's request: `[1, ulen, user, plen, password]` (each at most 255 bytes: the
/// settings refuse longer ones; cut here all the same, never a panic).
pub fn auth_request(credentials: &Credentials, out: &mut Vec<u8>) {
    out.push(AUTH_VERSION);
    for part in [&credentials.user, &credentials.password] {
        let bytes = &part.as_bytes()[..part.len().min(255)];
        out.push(bytes.len() as u8);
        out.extend_from_slice(bytes);
    }
}

/// RFC 1929's reply: `[1, status]`, status 0 for success.
pub fn parse_auth_reply(reply: &[u8]) -> Result<Parsed<()>, ProxyError> {
    let [version, status] = match reply {
        [a, b, ..] => [*a, *b],
        _ => return Ok(Parsed::NeedMore(2 - reply.len())),
    };
    // Some servers answer with the SOCKS version here; either way the status decides.
    if version != AUTH_VERSION && version != VERSION {
        return Err(ProxyError::Protocol);
    }
    if status != 0 {
        return Err(ProxyError::Auth);
    }
    Ok(Parsed::Done((), 2))
}

/// The CONNECT request for `dest` and `port`. A name longer than 255 bytes cannot be sent:
/// the caller has checked (DNS names are shorter).
pub fn connect_request(dest: &Destination, port: u16, out: &mut Vec<u8>) {
    out.extend_from_slice(&[VERSION, CMD_CONNECT, 0]);
    match dest {
        Destination::Ip(IpAddr::V4(ip)) => {
            out.push(ATYP_V4);
            out.extend_from_slice(&ip.octets());
        }
        Destination::Ip(IpAddr::V6(ip)) => {
            out.push(ATYP_V6);
            out.extend_from_slice(&ip.octets());
        }
        Destination::Name(name) => {
            let bytes = &name.as_bytes()[..name.len().min(255)];
            out.push(ATYP_NAME);
            out.push(bytes.len() as u8);
            out.extend_from_slice(bytes);
        }
    }
    out.extend_from_slice(&port.to_be_bytes());
}

/// The CONNECT reply: `[5, rep, 0, atyp, bound address, bound port]`. `rep` 0 is success;
/// any other is the proxy's refusal (general failure, not allowed, unreachable, refused…),
/// kept in [`ProxyError::Refused`].
pub fn parse_connect_reply(reply: &[u8]) -> Result<Parsed<()>, ProxyError> {
    if reply.len() < 2 {
        return Ok(Parsed::NeedMore(2 - reply.len()));
    }
    if reply[0] != VERSION {
        return Err(ProxyError::Protocol);
    }
    // A failure ends the handshake whatever follows: the proxy may close at once.
    if reply[1] != 0 {
        return Err(ProxyError::Refused(reply[1]));
    }
    if reply.len() < 5 {
        return Ok(Parsed::NeedMore(5 - reply.len()));
    }
    let address = match reply[3] {
        ATYP_V4 => 4,
        ATYP_V6 => 16,
        ATYP_NAME => 1 + usize::from(reply[4]),
        _ => return Err(ProxyError::Protocol),
    };
    let total = 4 + address + 2;
    if reply.len() < total {
        return Ok(Parsed::NeedMore(total - reply.len()));
    }
    Ok(Parsed::Done((), total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_rfc_1928_and_1929_bytes() {
        let mut out = Vec::new();
        greeting(false, &mut out);
        assert_eq!(out, [5, 1, 0]);
        out.clear();
        greeting(true, &mut out);
        assert_eq!(out, [5, 2, 0, 2]);
        out.clear();
        let c = Credentials {
            user: "al".into(),
            password: "pwd".into(),
        };
        auth_request(&c, &mut out);
        assert_eq!(out, b"\x01\x02al\x03pwd");
        out.clear();
        connect_request(&Destination::Ip("10.1.2.3".parse().unwrap()), 443, &mut out);
        assert_eq!(out, [5, 1, 0, 1, 10, 1, 2, 3, 1, 187]);
        out.clear();
        connect_request(&Destination::Name("a.b".into()), 80, &mut out);
        assert_eq!(out, b"\x05\x01\x00\x03\x03a.b\x00\x50");
        out.clear();
        connect_request(&Destination::Ip("::1".parse().unwrap()), 1, &mut out);
        assert_eq!((out.len(), out[3]), (4 + 16 + 2, 4));
    }

    #[test]
    fn replies_are_read_to_their_last_byte_and_no_further() {
        assert_eq!(parse_method(&[], false), Ok(Parsed::NeedMore(2)));
        assert_eq!(
            parse_method(&[5, 0], false),
            Ok(Parsed::Done(Method::NoAuth, 2))
        );
        assert_eq!(
            parse_method(&[5, 2], true),
            Ok(Parsed::Done(Method::UserPass, 2))
        );
        assert_eq!(parse_method(&[5, 2], false), Err(ProxyError::Protocol));
        assert_eq!(parse_method(&[5, 0xff], false), Err(ProxyError::Auth));
        assert_eq!(parse_method(&[4, 0], false), Err(ProxyError::Protocol));
        assert_eq!(parse_auth_reply(&[1]), Ok(Parsed::NeedMore(1)));
        assert_eq!(parse_auth_reply(&[1, 0]), Ok(Parsed::Done((), 2)));
        assert_eq!(parse_auth_reply(&[1, 1]), Err(ProxyError::Auth));
        let v4 = [5, 0, 0, 1, 127, 0, 0, 1, 0, 80];
        for cut in 0..v4.len() {
            match parse_connect_reply(&v4[..cut]) {
                Ok(Parsed::NeedMore(n)) => assert!(n >= 1 && cut + n <= v4.len()),
                other => panic!("{cut}: {other:?}"),
            }
        }
        assert_eq!(parse_connect_reply(&v4), Ok(Parsed::Done((), 10)));
        let name = b"\x05\x00\x00\x03\x04abcd\x01\x00extra";
        assert_eq!(parse_connect_reply(name), Ok(Parsed::Done((), 11)));
        let mut v6 = vec![5, 0, 0, 4];
        v6.extend([0; 18]);
        assert_eq!(parse_connect_reply(&v6), Ok(Parsed::Done((), 22)));
        assert_eq!(parse_connect_reply(&[5, 5]), Err(ProxyError::Refused(5)));
        assert_eq!(
            parse_connect_reply(&[5, 0, 0, 9, 0]),
            Err(ProxyError::Protocol)
        );
    }
}
