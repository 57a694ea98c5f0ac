//! Fetches through a proxy (ARCHITECTURE §4a): which proxy a fetch goes through (`route`),
//! the wait for a connection to it (`wait_for_proxy`), and the `Proxy` state: a tunnel's handshake
//! with its proxy, moved over the socket step by step. What the bytes mean is
//! `proxy::Handshake`'s; each step entered goes through `Crawler::enter`, which arms its
//! deadline; when the tunnel is open, TLS to the site starts on it and the fetch sends its
//! request as on a direct connection.

use std::sync::Arc;

use super::Crawler;
use crate::fetcher::fetch::{Attempt, FetchState, Target, TargetHost};
use crate::proxy::{Progress, Proxy, ProxySettings};
use crate::ReturnCode;

/// How a pass of a handshake ended.
pub(super) enum Shake {
    /// The tunnel is open and the fetch is in `HttpSend`.
    Open,
    /// Waiting for the socket.
    Pending,
    Failed(ReturnCode),
}

/// Passes over the socket one call makes at most: a handshake has three requests and
/// replies; a reply split into many reads waits for the next event.
const MAX_PASSES: usize = 8;

impl Crawler {
    /// A fetch through a proxy is ready for a connection to it: the proxy's first address,
    /// and its first of the other family as the fallback (Happy Eyeballs, as for a site).
    pub(super) fn wait_for_proxy(&mut self, key: usize) {
        let fetch = &mut self.fetches[key];
        let Some(p) = &fetch.proxy else {
            return;
        };
        let Some(&addr) = p.proxy.addrs.first() else {
            return self.finish(key, ReturnCode::ProxyConnect);
        };
        fetch.fallback = p
            .proxy
            .addrs
            .iter()
            .copied()
            .find(|a| a.is_ipv4() != addr.is_ipv4());
        self.enter(key, FetchState::WaitForHttp { addr });
        self.wait_for_http.push_back(key);
        self.dispatch_needed = true;
    }

    /// Sends the step's request and reads its reply as far as the socket allows.
    pub(super) fn shake(&mut self, key: usize, conn: usize) -> Shake {
        for _ in 0..MAX_PASSES {
            let (Some(fetch), Some(entry)) = (self.fetches.get_mut(key), self.conns.get_mut(conn))
            else {
                return Shake::Pending;
            };
            let Some(shake) = fetch.proxy.as_mut().and_then(|p| p.handshake.as_mut()) else {
                return Shake::Failed(ReturnCode::ProxyProtocol);
            };
            if !shake.to_send().is_empty() {
                let mut sent = 0;
                let res = entry
                    .conn
                    .send(shake.to_send(), &mut sent, &mut self.stats.socket);
                shake.sent(sent);
                match res {
                    Err(_) => return Shake::Failed(ReturnCode::ProxyConnect),
                    Ok(false) => {
                        let want = entry.conn.interest(true);
                        entry.reregister(&self.poll, conn, want, &mut self.stats.socket);
                        return Shake::Pending;
                    }
                    Ok(true) => {}
                }
            }
            let want = shake.wants().min(self.read_buf.len());
            let read = entry
                .conn
                .read_plain(&mut self.read_buf[..want], &mut self.stats.socket);
            let n = match read {
                Err(code) => return Shake::Failed(code),
                Ok(None) => {
                    let want = entry.conn.interest(false);
                    entry.reregister(&self.poll, conn, want, &mut self.stats.socket);
                    return Shake::Pending;
                }
                // Closed before its reply was whole.
                Ok(Some(0)) => return Shake::Failed(ReturnCode::ProxyConnect),
                Ok(Some(n)) => n,
            };
            match shake.received(&self.read_buf[..n]) {
                Err(e) => return Shake::Failed(e.return_code()),
                Ok(Progress::More) => {}
                Ok(Progress::Next(step)) => self.enter(key, FetchState::Proxy { conn, step }),
                Ok(Progress::Done) => return self.tunnel_open(key, conn),
            }
        }
        Shake::Pending
    }

    /// The proxy connected the tunnel: TLS to the site starts on it (an https URL), and the
    /// request goes out as on a fresh direct connection.
    fn tunnel_open(&mut self, key: usize, conn: usize) -> Shake {
        self.stats.proxy_tunnels += 1;
        if let Some(p) = self.fetches.get_mut(key).and_then(|f| f.proxy.as_mut()) {
            p.handshake = None;
        }
        let Some(entry) = self.conns.get_mut(conn) else {
            return Shake::Pending;
        };
        if let Some(name) = &entry.key.server_name {
            let Ok(server_name) = rustls::pki_types::ServerName::try_from(name.clone()) else {
                return Shake::Failed(ReturnCode::TlsHandshake);
            };
            match rustls::ClientConnection::new(self.config.tls.clone(), server_name) {
                Ok(tls) => entry.conn.start_tls(tls),
                Err(_) => return Shake::Failed(ReturnCode::TlsHandshake),
            }
        }
        let send = FetchState::HttpSend {
            conn,
            sent: 0,
            attempt: Attempt::Fresh,
        };
        self.enter(key, send);
        Shake::Open
    }
}

/// The proxy a fetch of `target` goes through, if any.
pub(super) fn route(proxies: &ProxySettings, target: &Target) -> Option<Arc<Proxy>> {
    let found = match &target.host {
        TargetHost::Name(name) => proxies.for_host(target.tls, name),
        TargetHost::Ip(ip) => proxies.for_host(target.tls, &ip.to_string()),
    };
    found.cloned()
}
