//! spinneret's own DNS client, sans-IO (ARCHITECTURE §5).
//!
//! System `getaddrinfo` blocks, so the crawler speaks DNS itself (UDP, and TCP for answers too
//! large for a datagram). This module owns:
//! - `message`: name validation, query building (hand-written: `dns-parser`'s `Builder` panics
//!   on legal 63-byte labels) and answer checking (the RFC 5452 ID/question checks, guards
//!   against `dns-parser` 0.8's traps, CNAME chains inside one packet);
//! - `resolver`: the [`Resolver`] state machine: hosts table, TTL cache, coalescing of
//!   identical names, server choice ("the laziest DNS server"), retries with fresh IDs and
//!   exponential backoff, A and AAAA side by side, CNAME re-queries, the TCP retry of a
//!   truncated answer, the plain retry for a server refusing EDNS;
//! - `system`: parsers for `/etc/hosts` and `/etc/resolv.conf` text;
//! - [`tcp`]: the 2-byte length framing of DNS over TCP (RFC 7766), for answers that came back
//!   truncated over UDP.
//!
//! It opens no sockets, reads no clock and no files: the event loop (`event_loop`) owns one UDP
//! socket per server and the TCP connections the resolver asks for, reads the files, and moves
//! bytes between those sockets and the [`Resolver`]. Which resolved addresses may be connected to is `fetcher::addr_policy`'s job.

mod message;
mod resolver;
mod system;
pub mod tcp;

pub use message::{
    build_query, normalize_name, parse_response, Answer, Edns, EDNS_UDP_PAYLOAD, MAX_RESPONSE_LEN,
};
pub use resolver::{
    DnsStats, Resolve, Resolved, Resolver, ResolverConfig, TcpQuery, Transmit,
    DEFAULT_MAX_NAMES_IN_FLIGHT, DEFAULT_TOTAL_TIMEOUT,
};
pub use system::{parse_hosts, parse_resolv_conf};

use crate::ReturnCode;

/// The record type asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueryType {
    A,
    Aaaa,
}

impl QueryType {
    /// The wire TYPE code (RFC 1035, RFC 3596).
    pub fn code(self) -> u16 {
        match self {
            QueryType::A => 1,
            QueryType::Aaaa => 28,
        }
    }
}

/// Why a name could not be resolved (or why a datagram was not accepted).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DnsError {
    /// The name cannot be sent to DNS (empty or over-long label, over-long name, bad bytes).
    BadName,
    /// The datagram is not an answer to one of our queries: dropped silently, never reported.
    Mismatch,
    /// The answer is ours but malformed (bad names, implausible counts, short records).
    Malformed,
    /// The answer uses a record type `dns-parser` does not know (DNAME, RRSIG, HTTPS, SVCB...).
    Unsupported,
    /// The TC bit was set on an answer over TCP (a truncated UDP answer is asked again over
    /// TCP, so only a server that truncates there too ends this way).
    Truncated,
    /// RCODE 1: the server could not read our query. Without an OPT record in the answer this
    /// is an old server refusing EDNS, and the resolver asks once more without it.
    FormErr,
    /// RCODE 3: the name does not exist.
    NxDomain,
    /// RCODE 2.
    ServFail,
    /// RCODE 5 or any other non-zero code.
    Refused,
    /// The name exists but has neither A nor AAAA records.
    NoAddress,
    /// A CNAME chain looped or was longer than allowed.
    CnameChain,
    /// No answer after every attempt, or the whole-resolution deadline passed.
    Timeout,
    /// The TCP query for a truncated answer failed: no connection, the connection closed or
    /// reset before a whole answer, an answer longer than we accept, or one that does not
    /// answer our question.
    TcpFailed,
    /// The TCP query for a truncated answer got no whole answer before its deadline.
    TcpTimeout,
    /// No DNS server is configured and the name is not in the hosts table.
    NoServer,
}

impl DnsError {
    /// The user-visible outcome for a fetch whose host failed to resolve this way.
    pub fn return_code(self) -> ReturnCode {
        match self {
            DnsError::BadName => ReturnCode::DnsBadHostName,
            // Mismatch never reaches a user (such datagrams are dropped); if it did, the
            // closest meaning is "an answer we could not use".
            DnsError::Mismatch | DnsError::Malformed => ReturnCode::DnsParseError,
            DnsError::Unsupported | DnsError::Truncated => ReturnCode::DnsUnsupportedAnswer,
            DnsError::NxDomain => ReturnCode::DnsNxDomain,
            DnsError::ServFail => ReturnCode::DnsServFail,
            // FORMERR after the plain retry, or a server that would not serve TCP: either way
            // the server would not answer this query.
            DnsError::Refused | DnsError::FormErr | DnsError::TcpFailed => ReturnCode::DnsRefused,
            DnsError::NoAddress => ReturnCode::DnsNoAddress,
            DnsError::CnameChain => ReturnCode::DnsCnameChain,
            DnsError::Timeout | DnsError::TcpTimeout => ReturnCode::DnsTimeout,
            DnsError::NoServer => ReturnCode::DnsServerUnknown,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_maps_to_a_dns_return_code() {
        use DnsError::*;
        for e in [
            BadName,
            Mismatch,
            Malformed,
            Unsupported,
            Truncated,
            FormErr,
            NxDomain,
            ServFail,
            Refused,
            NoAddress,
            CnameChain,
            Timeout,
            TcpFailed,
            TcpTimeout,
            NoServer,
        ] {
            assert!(e.return_code().name().starts_with("Dns"), "{e:?}");
        }
        assert_eq!(Truncated.return_code(), ReturnCode::DnsUnsupportedAnswer);
        assert_eq!(NoServer.return_code(), ReturnCode::DnsServerUnknown);
        assert_eq!(TcpFailed.return_code(), ReturnCode::DnsRefused);
        assert_eq!(TcpTimeout.return_code(), ReturnCode::DnsTimeout);
    }
}
