//! Step 3 of a turn (ARCHITECTURE §3): fetches waiting for a connection get one when
//! politeness (`conns_per_server`) and the two budgets allow — connections carrying a fetch
//! (`max_conns`) and open sockets, idle ones included (`max_sockets`): an idle kept-alive
//! connection to the same server and TLS name first, else a new nonblocking connect, closing
//! an idle connection to make room if the sockets are all open — a spare one (its host has no
//! more work) before a held one ("connection budgets" there). Which of these a fetch gets is
//! `ConnPool::slot_for`'s decision, made from the pool's books; this file carries it out.

use std::net::SocketAddr;

use mio::net::TcpStream;
use mio::{Interest, Token};

use super::Crawler;
use crate::fetcher::conn::{Conn, Transport};
use crate::fetcher::fetch::{Attempt, Fetch, FetchState, Origin, Proxied};
use crate::fetcher::pool::{Budgets, ConnEntry, ConnKey, ConnState, Slot};
use crate::proxy::{Destination, Handshake, ProxyKind};
use crate::ReturnCode;

impl Crawler {
    /// Step 3 of a turn: every fetch waiting for a connection whose server has room gets
    /// one (kept-alive if one is idle, else a new one), the rest keep their place.
    pub(super) fn dispatch(&mut self) {
        if !self.dispatch_needed {
            return;
        }
        self.dispatch_needed = false;
        for _ in 0..self.wait_for_http.len() {
            let Some(key) = self.wait_for_http.pop_front() else {
                break;
            };
            if !self.try_start_http(key) {
                self.wait_for_http.push_back(key);
            }
        }
    }

    /// Gives a waiting fetch the connection `ConnPool::slot_for` decides on, if any.
    /// Returns false if it must keep waiting.
    fn try_start_http(&mut self, key: usize) -> bool {
        let Some(fetch) = self.fetches.get(key) else {
            return true; // finished meanwhile
        };
        let FetchState::WaitForHttp { addr } = fetch.state else {
            return true;
        };
        let budgets = Budgets {
            max_conns: self.config.max_conns,
            max_sockets: self.config.max_sockets,
            conns_per_server: self.config.conns_per_server,
        };
        let slot = self.conns.slot_for(&budgets, || ConnKey {
            addr,
            server_name: fetch.target.server_name(),
            origin: fetch.proxy.as_ref().map(|p| p.origin.clone()),
        });
        match slot {
            Slot::Wait => false,
            Slot::Reuse(conn) => {
                self.stats.conns_reused += 1;
                let send = FetchState::HttpSend {
                    conn,
                    sent: 0,
                    attempt: Attempt::Reused,
                };
                self.enter(key, send);
                self.conns.set_active(conn, key);
                self.fetches[key].peer = peer(&self.fetches[key], addr);
                self.advance(key);
                true
            }
            Slot::Open { key: ckey, close } => {
                if let Some(c) = close {
                    self.close_conn(c);
                }
                self.open_conn(key, ckey);
                true
            }
        }
    }

    fn open_conn(&mut self, key: usize, ckey: ConnKey) {
        let addr = ckey.addr;
        // A tunnel through a proxy starts plain: TLS to the site starts once it is open.
        let tunnel = match self.fetches[key].proxy.as_deref_mut() {
            Some(p) if p.tunnels(ckey.server_name.is_some()) => {
                match handshake(p, &self.config.user_agent) {
                    Ok(h) => p.handshake = Some(h),
                    Err(code) => return self.finish(key, code),
                }
                true
            }
            _ => false,
        };
        let transport = match &ckey.server_name {
            None => Transport::Plain,
            Some(_) if tunnel => Transport::Plain,
            Some(name) => {
                let server_name = match rustls::pki_types::ServerName::try_from(name.clone()) {
                    Ok(n) => n,
                    Err(_) => return self.finish(key, ReturnCode::TlsHandshake),
                };
                match rustls::ClientConnection::new(self.config.tls.clone(), server_name) {
                    Ok(c) => Transport::Tls(Box::new(c)),
                    Err(_) => return self.finish(key, ReturnCode::TlsHandshake),
                }
            }
        };
        let stream = match TcpStream::connect(addr) {
            Ok(s) => s,
            Err(_) => return self.connect_refused_at_once(key),
        };
        let _ = stream.set_nodelay(true);
        let conn_key = self.conns.vacant_key();
        let mut conn = Conn::new(stream, transport);
        let interest = Interest::READABLE | Interest::WRITABLE;
        if self
            .poll
            .registry()
            .register(&mut conn.stream, Token(conn_key), interest)
            .is_err()
        {
            return self.finish(key, ReturnCode::HttpConnect);
        }
        self.conns.insert(ConnEntry {
            conn,
            key: ckey,
            state: ConnState::Active { fetch: key },
            registered: interest,
        });
        self.stats.conns_opened += 1;
        self.fetches[key].peer = peer(&self.fetches[key], addr);
        self.enter(key, FetchState::Connecting { conn: conn_key });
    }

    /// A connect the system refused before it began (no route for that address family, say):
    /// the name's address of the other family, if it has one, is tried at once, as it is when
    /// a connect in progress fails (`fall_back`); else the fetch ends `HttpConnect`.
    fn connect_refused_at_once(&mut self, key: usize) {
        let Some(fetch) = self.fetches.get_mut(key) else {
            return;
        };
        let Some(addr) = fetch.fallback.take() else {
            let code = match fetch.proxy {
                Some(_) => ReturnCode::ProxyConnect,
                None => ReturnCode::HttpConnect,
            };
            return self.finish(key, code);
        };
        self.stats.happy_eyeballs_fallbacks += 1;
        self.enter(key, FetchState::WaitForHttp { addr });
        self.wait_for_http.push_front(key);
        self.dispatch_needed = true;
    }
}

/// The address a fetch's response is recorded as coming from (`WARC-IP-Address`): the
/// server's; behind a proxy the site's when the crawler resolved it, else none (the proxy's
/// address is not the site's).
fn peer(fetch: &Fetch, addr: SocketAddr) -> Option<SocketAddr> {
    match fetch.proxy.as_deref() {
        None => Some(addr),
        Some(Proxied {
            origin: Origin::Ip(site),
            ..
        }) => Some(*site),
        Some(_) => None,
    }
}

/// The handshake that opens a tunnel to the fetch's site through its proxy.
fn handshake(p: &Proxied, user_agent: &str) -> Result<Handshake, ReturnCode> {
    let (host, port) = match &p.origin {
        Origin::Ip(a) => (a.ip().to_string(), a.port()),
        Origin::Name(name, port) => (name.to_string(), *port),
    };
    let credentials = p.proxy.credentials.clone();
    Ok(match (p.proxy.kind, &p.origin) {
        (ProxyKind::Http, _) => {
            Handshake::http_connect(&host, port, credentials.as_ref(), user_agent)
        }
        (_, Origin::Ip(a)) => Handshake::socks5(Destination::Ip(a.ip()), port, credentials),
        // SOCKS5 carries a name in at most 255 bytes (DNS names are shorter).
        (_, Origin::Name(..)) if host.len() > 255 => return Err(ReturnCode::DnsBadHostName),
        (_, Origin::Name(..)) => Handshake::socks5(Destination::Name(host), port, credentials),
    })
}
