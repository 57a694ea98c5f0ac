//! Proxies, sans-IO (ARCHITECTURE §4a): which proxy a URL goes through (`settings`), and
//! the handshake that opens a tunnel through one ([`Handshake`]: SOCKS5's greeting,
//! authentication and connect ([`socks5`]), or HTTP's `CONNECT` ([`connect`])). Bytes in,
//! bytes and verdicts out: the fetcher moves them and owns every step's deadline.
//!
//! A handshake goes step by step ([`ProxyStep`]); each step sends its request whole, then
//! reads its reply, asking for no byte past it ([`Handshake::wants`]): what follows a reply
//! is the tunnel's, and the site speaks only after our request (or TLS's ClientHello), so a
//! byte past a reply is a protocol error.

pub mod connect;
mod settings;
pub mod socks5;

pub use settings::{Credentials, NoProxy, Proxy, ProxyKind, ProxySettings, DEFAULT_PROXY_PORT};
pub use socks5::Destination;

use crate::ReturnCode;

/// How a reply parser left the bytes received so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parsed<T> {
    /// At least this many more bytes are needed.
    NeedMore(usize),
    /// The reply is whole: its value and its length.
    Done(T, usize),
}

/// Why a handshake failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProxyError {
    /// The proxy wants credentials, or refused ours.
    Auth,
    /// The proxy would not or could not connect to the site: a SOCKS reply code, or an HTTP
    /// status's hundreds.
    Refused(u8),
    /// The reply was not the protocol's.
    Protocol,
}

impl ProxyError {
    pub fn return_code(self) -> ReturnCode {
        match self {
            ProxyError::Auth => ReturnCode::ProxyAuth,
            ProxyError::Refused(_) => ReturnCode::ProxyRefused,
            ProxyError::Protocol => ReturnCode::ProxyProtocol,
        }
    }
}

/// A step of a handshake: each has its own deadline in the fetcher.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProxyStep {
    /// SOCKS5 method negotiation.
    SocksGreeting,
    /// SOCKS5 user name and password (RFC 1929).
    SocksAuth,
    /// SOCKS5's CONNECT and its reply.
    SocksConnect,
    /// HTTP's CONNECT and the head of its answer.
    HttpConnect,
}

/// What a handshake did with the bytes it was given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    /// The reply is not whole yet.
    More,
    /// The reply was whole and the next step's request is queued ([`Handshake::to_send`]).
    Next(ProxyStep),
    /// The tunnel is open.
    Done,
}

/// One tunnel's handshake through a SOCKS5 or HTTP proxy.
#[derive(Clone, Debug)]
pub struct Handshake {
    step: ProxyStep,
    /// The request of the current step, and how much of it went out.
    out: Vec<u8>,
    sent: usize,
    /// The reply so far.
    reply: Vec<u8>,
    /// What the current reply still needs, at least.
    need: usize,
    credentials: Option<Credentials>,
    destination: Destination,
    port: u16,
}

impl Handshake {
    /// A SOCKS5 handshake asking for `destination`:`port`.
    pub fn socks5(
        destination: Destination,
        port: u16,
        credentials: Option<Credentials>,
    ) -> Handshake {
        let mut out = Vec::with_capacity(16);
        socks5::greeting(credentials.is_some(), &mut out);
        Handshake {
            step: ProxyStep::SocksGreeting,
            out,
            sent: 0,
            reply: Vec::new(),
            need: 2,
            credentials,
            destination,
            port,
        }
    }

    /// An HTTP `CONNECT` to `host`:`port`.
    pub fn http_connect(
        host: &str,
        port: u16,
        credentials: Option<&Credentials>,
        user_agent: &str,
    ) -> Handshake {
        let authority = if host.contains(':') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        };
        let mut out = Vec::with_capacity(128);
        connect::connect_request(&authority, credentials, user_agent, &mut out);
        Handshake {
            step: ProxyStep::HttpConnect,
            out,
            sent: 0,
            reply: Vec::new(),
            need: 1,
            credentials: None,
            destination: Destination::Name(host.to_string()),
            port,
        }
    }

    pub fn step(&self) -> ProxyStep {
        self.step
    }

    /// The part of the current request not sent yet (empty: read the reply).
    pub fn to_send(&self) -> &[u8] {
        &self.out[self.sent..]
    }

    /// `n` more bytes of the request went out.
    pub fn sent(&mut self, n: usize) {
        self.sent = (self.sent + n).min(self.out.len());
    }

    /// The most bytes to read now: no further than a SOCKS reply's end, as far as it is
    /// known; up to the head's bound for HTTP (its end is found in what was read).
    pub fn wants(&self) -> usize {
        match self.step {
            // Whatever arrived of a head: its end is found in it.
            ProxyStep::HttpConnect => connect::MAX_REPLY_HEAD
                .saturating_sub(self.reply.len())
                .max(1),
            _ => self.need.max(1),
        }
    }

    /// Takes received bytes (at most [`Handshake::wants`]): the reply's verdict.
    pub fn received(&mut self, bytes: &[u8]) -> Result<Progress, ProxyError> {
        self.reply.extend_from_slice(bytes);
        let parsed = match self.step {
            ProxyStep::SocksGreeting => {
                socks5::parse_method(&self.reply, self.credentials.is_some())?.map_done(Some)
            }
            ProxyStep::SocksAuth => socks5::parse_auth_reply(&self.reply)?.map_done(|()| None),
            ProxyStep::SocksConnect => {
                socks5::parse_connect_reply(&self.reply)?.map_done(|()| None)
            }
            ProxyStep::HttpConnect => {
                connect::parse_connect_reply(&self.reply)?.map_done(|()| None)
            }
        };
        let (method, used) = match parsed {
            Parsed::NeedMore(n) => {
                self.need = n;
                return Ok(Progress::More);
            }
            Parsed::Done(m, used) => (m, used),
        };
        if used != self.reply.len() {
            return Err(ProxyError::Protocol);
        }
        self.reply.clear();
        self.out.clear();
        self.sent = 0;
        let next = match (self.step, method) {
            (ProxyStep::SocksGreeting, Some(socks5::Method::UserPass)) => {
                let Some(c) = &self.credentials else {
                    return Err(ProxyError::Protocol);
                };
                socks5::auth_request(c, &mut self.out);
                self.need = 2;
                ProxyStep::SocksAuth
            }
            (ProxyStep::SocksGreeting, _) | (ProxyStep::SocksAuth, _) => {
                socks5::connect_request(&self.destination, self.port, &mut self.out);
                self.need = 2;
                ProxyStep::SocksConnect
            }
            (ProxyStep::SocksConnect, _) | (ProxyStep::HttpConnect, _) => {
                return Ok(Progress::Done)
            }
        };
        self.step = next;
        Ok(Progress::Next(next))
    }
}

impl<T> Parsed<T> {
    /// The same verdict with the value of a whole reply changed.
    pub fn map_done<U>(self, f: impl FnOnce(T) -> U) -> Parsed<U> {
        match self {
            Parsed::NeedMore(n) => Parsed::NeedMore(n),
            Parsed::Done(v, used) => Parsed::Done(f(v), used),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `reply` as the handshake asks for it, `chunk` bytes at most per read.
    fn feed(h: &mut Handshake, reply: &[u8], chunk: usize) -> Result<Progress, ProxyError> {
        let mut at = 0;
        loop {
            let n = h.wants().min(chunk).min(reply.len() - at);
            assert!(n > 0, "the handshake wants more than the reply holds");
            let p = h.received(&reply[at..at + n])?;
            at += n;
            if p != Progress::More {
                assert_eq!(at, reply.len(), "a reply is read to its end and no further");
                return Ok(p);
            }
        }
    }

    #[test]
    fn socks5_with_credentials_walks_three_steps() {
        let c = Credentials {
            user: "u".into(),
            password: "p".into(),
        };
        for chunk in [1, 3, 64] {
            let name = Destination::Name("localhost".into());
            let mut h = Handshake::socks5(name, 8080, Some(c.clone()));
            assert_eq!(
                (h.step(), h.to_send()),
                (ProxyStep::SocksGreeting, &[5, 2, 0, 2][..])
            );
            h.sent(4);
            assert!(h.to_send().is_empty());
            assert_eq!(
                feed(&mut h, &[5, 2], chunk),
                Ok(Progress::Next(ProxyStep::SocksAuth))
            );
            assert_eq!(h.to_send(), b"\x01\x01u\x01p");
            h.sent(5);
            let next = feed(&mut h, &[1, 0], chunk);
            assert_eq!(next, Ok(Progress::Next(ProxyStep::SocksConnect)));
            assert_eq!(h.to_send(), b"\x05\x01\x00\x03\x09localhost\x1f\x90");
            let ok = [5, 0, 0, 1, 127, 0, 0, 1, 0x1f, 0x90];
            assert_eq!(feed(&mut h, &ok, chunk), Ok(Progress::Done));
        }
    }

    #[test]
    fn socks5_without_auth_skips_it_and_failures_name_the_step() {
        let ip = Destination::Ip("127.0.0.1".parse().unwrap());
        let mut h = Handshake::socks5(ip.clone(), 80, None);
        let next = feed(&mut h, &[5, 0], 8);
        assert_eq!(next, Ok(Progress::Next(ProxyStep::SocksConnect)));
        assert_eq!(feed(&mut h, &[5, 5], 8), Err(ProxyError::Refused(5)));
        let mut h = Handshake::socks5(ip.clone(), 80, None);
        assert_eq!(feed(&mut h, &[5, 0xff], 8), Err(ProxyError::Auth));
        assert_eq!(ProxyError::Auth.return_code(), ReturnCode::ProxyAuth);
        // A byte past a reply is not the protocol's.
        let mut h = Handshake::socks5(ip, 80, None);
        assert_eq!(h.received(&[5, 0, 1]), Err(ProxyError::Protocol));
    }

    #[test]
    fn http_connect_reads_the_head() {
        let mut h = Handshake::http_connect("::1", 443, None, "ua");
        assert!(h.to_send().starts_with(b"CONNECT [::1]:443 HTTP/1.1\r\n"));
        let ok = b"HTTP/1.1 200 Connection established\r\n\r\n";
        assert_eq!(feed(&mut h, ok, 5), Ok(Progress::Done));
        let mut h = Handshake::http_connect("a", 443, None, "ua");
        assert_eq!(
            h.received(b"HTTP/1.1 200 OK\r\n\r\n\x16\x03"),
            Err(ProxyError::Protocol)
        );
    }
}
