//! Counters: what the event loop counts as it runs.
//!
//! The event loop bumps [`LoopStats`] in place (plain integers, no atomics: one thread);
//! the app layer turns them into the progress line and `stats.json`.

use crate::ReturnCode;

/// Socket system calls made, summed over connections by the caller: the bench reports them
/// per page, so a change that adds a read or a write per fetch shows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SocketCalls {
    /// `recv` calls (for TLS, reads of TLS records), including those that found nothing.
    pub reads: u64,
    /// `send` calls (for TLS, writes of TLS records).
    pub writes: u64,
    /// Changes of a connection's epoll interest (`epoll_ctl`; made only when it changes, not
    /// per request; registering a new connection is counted as a connection opened).
    pub reregistrations: u64,
    /// TLS handshakes completed in full (a new session: certificate chain and key exchange).
    pub tls_full_handshakes: u64,
    /// TLS handshakes that resumed a cached session (no certificate, one round trip less).
    pub tls_resumed: u64,
}

/// Fetch outcomes counted by code.
#[derive(Clone, Debug)]
pub struct Outcomes {
    counts: Vec<u64>,
}

impl Outcomes {
    /// Adds another loop's counts to these.
    pub fn merge(&mut self, other: &Outcomes) {
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
    }
}

impl LoopStats {
    /// Adds another loop's figures to these (peaks add too: the loops run at once).
    pub fn merge(&mut self, o: &LoopStats) {
        self.outcomes.merge(&o.outcomes);
        for (a, b) in [
            (&mut self.issued, o.issued),
            (&mut self.bytes_received, o.bytes_received),
            (&mut self.conns_opened, o.conns_opened),
            (&mut self.conns_reused, o.conns_reused),
            (&mut self.stale_retries, o.stale_retries),
            (
                &mut self.happy_eyeballs_fallbacks,
                o.happy_eyeballs_fallbacks,
            ),
            (&mut self.proxy_tunnels, o.proxy_tunnels),
            (&mut self.dns_queries_sent, o.dns_queries_sent),
            (&mut self.dns_cache_hits, o.dns_cache_hits),
            (&mut self.dns_names_waited, o.dns_names_waited),
            (&mut self.spooled_bytes, o.spooled_bytes),
            (&mut self.spilled_responses, o.spilled_responses),
            (&mut self.socket.reads, o.socket.reads),
            (&mut self.socket.writes, o.socket.writes),
            (&mut self.socket.reregistrations, o.socket.reregistrations),
            (
                &mut self.socket.tls_full_handshakes,
                o.socket.tls_full_handshakes,
            ),
            (&mut self.socket.tls_resumed, o.socket.tls_resumed),
            (
                &mut self.receive_buffers_allocated,
                o.receive_buffers_allocated,
            ),
        ] {
            *a += b;
        }
        // Gauges and peaks add too: the loops run at once.
        for (a, b) in [
            (&mut self.live, o.live),
            (&mut self.peak_live, o.peak_live),
            (&mut self.waiting_dns, o.waiting_dns),
            (&mut self.waiting_http, o.waiting_http),
            (&mut self.conns_open, o.conns_open),
            (&mut self.buffered_bytes, o.buffered_bytes),
            (&mut self.peak_buffered_bytes, o.peak_buffered_bytes),
        ] {
            *a += b;
        }
    }
}

impl Default for Outcomes {
    fn default() -> Self {
        Outcomes {
            counts: vec![0; ReturnCode::ALL.len()],
        }
    }
}

impl Outcomes {
    pub fn add(&mut self, code: ReturnCode) {
        // Invariant: ALL lists every variant in declaration order, so `code as usize` indexes it.
        self.counts[code as usize] += 1;
    }

    pub fn get(&self, code: ReturnCode) -> u64 {
        self.counts[code as usize]
    }

    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    pub fn failed(&self) -> u64 {
        self.total() - self.get(ReturnCode::Success)
    }

    /// Non-zero failure counts, most frequent first.
    pub fn failures(&self) -> Vec<(ReturnCode, u64)> {
        let mut v: Vec<(ReturnCode, u64)> = ReturnCode::ALL
            .iter()
            .map(|&c| (c, self.get(c)))
            .filter(|&(c, n)| n > 0 && c != ReturnCode::Success)
            .collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        v
    }
}

/// What the event loop counts.
#[derive(Clone, Debug, Default)]
pub struct LoopStats {
    pub issued: u64,
    pub outcomes: Outcomes,
    /// Response bytes received (raw, as on the wire after TLS).
    pub bytes_received: u64,
    pub live: usize,
    pub peak_live: usize,
    pub waiting_dns: usize,
    pub waiting_http: usize,
    pub conns_open: usize,
    pub conns_opened: u64,
    pub conns_reused: u64,
    /// Fetches retried on a fresh connection after a reused one turned out to be closed.
    pub stale_retries: u64,
    /// Connects moved to a host's other address family after the first failed or was slow.
    pub happy_eyeballs_fallbacks: u64,
    /// Tunnels opened through a proxy (SOCKS5, or CONNECT for https); each carries requests
    /// to one site while kept alive.
    pub proxy_tunnels: u64,
    pub dns_queries_sent: u64,
    pub dns_cache_hits: u64,
    /// Names that waited for a place among those being resolved (`--dns-names-in-flight`).
    pub dns_names_waited: u64,
    /// Response bytes held in memory now (live fetches and undelivered completions).
    pub buffered_bytes: usize,
    pub peak_buffered_bytes: usize,
    /// Bytes in spool files now.
    pub spooled_bytes: u64,
    /// Responses whose body outgrew memory and went to the spool.
    pub spilled_responses: u64,
    /// Socket reads and writes of HTTP connections.
    pub socket: SocketCalls,
    /// Responses that began with no receive buffer to reuse (their decoder's own, or one
    /// given back): each allocated one.
    pub receive_buffers_allocated: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_count_by_code() {
        let mut o = Outcomes::default();
        o.add(ReturnCode::Success);
        o.add(ReturnCode::Success);
        o.add(ReturnCode::DnsTimeout);
        o.add(ReturnCode::HttpConnect);
        o.add(ReturnCode::HttpConnect);
        assert_eq!(o.total(), 5);
        assert_eq!(o.failed(), 3);
        assert_eq!(
            o.failures(),
            vec![(ReturnCode::HttpConnect, 2), (ReturnCode::DnsTimeout, 1)]
        );
    }
}
