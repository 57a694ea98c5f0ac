//! The loop's side of DNS: sending the resolver's queries over the UDP sockets, reading
//! answers (bounded per event), and handing resolved names to the fetches waiting for them.
//! Queries over TCP (after a truncated answer) are `dns_tcp`'s.

use std::io;
use std::time::Instant;

use mio::{Interest, Token};

use super::tokens::DNS_TOKEN_BASE;
use super::{Crawler, DNS_DATAGRAM_BYTES, MAX_DNS_READS_PER_EVENT};
use crate::fetcher::fetch::FetchState;

impl Crawler {
    pub(super) fn flush_dns(&mut self) {
        while let Some(tx) = self.resolver.poll_transmit() {
            if let (Some(sock), Some(addr)) = (
                self.dns_sockets.get(tx.server),
                self.dns_servers.get(tx.server),
            ) {
                // A failed send is a lost datagram: the resolver's retry timer covers it.
                let _ = sock.send_to(&tx.payload, *addr);
            }
        }
        let registry = self.poll.registry();
        self.dns_tcp
            .flush(registry, &mut self.resolver, &self.dns_servers, self.now);
    }

    pub(super) fn read_dns(&mut self, server: usize, now: Instant) {
        let mut buf = [0u8; DNS_DATAGRAM_BYTES];
        for _ in 0..MAX_DNS_READS_PER_EVENT {
            let Some(sock) = self.dns_sockets.get(server) else {
                return;
            };
            match sock.recv_from(&mut buf) {
                Ok((n, from)) => self.resolver.handle_datagram(server, from, &buf[..n], now),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // ICMP port unreachable and the like surface here; the retry timer covers it.
                Err(_) => return,
            }
        }
        // Cap reached with datagrams left: mio is edge-triggered, so re-arm the socket to be
        // told again rather than lose the rest.
        if let Some(sock) = self.dns_sockets.get_mut(server) {
            let _ = self.poll.registry().reregister(
                sock,
                Token(DNS_TOKEN_BASE + server),
                Interest::READABLE,
            );
        }
    }

    pub(super) fn resolver_events(&mut self) {
        while let Some((name, result)) = self.resolver.poll_event() {
            let Some(keys) = self.wait_for_dns.remove(&name) else {
                continue; // a prefetch, or every waiter already gave up
            };
            for key in keys {
                let waiting = self.fetches.get(key).is_some_and(
                    |f| matches!(&f.state, FetchState::DnsReceive { name: n } if *n == name),
                );
                if waiting {
                    let addrs = result.as_ref().map(|r| r.addrs.clone()).map_err(|e| *e);
                    self.resolved(key, addrs);
                }
            }
        }
    }
}
