//! spinneret's own DNS client, sans-IO (ARCHITECTURE §5).
//!
//! System `getaddrinfo` blocks, so the crawler speaks DNS over UDP itself. This module owns:
//! - `message`: name validation, query building (hand-written: `dns-parser`'s `Builder` panics
//!   on legal 63-byte labels) and answer checking (the RFC 5452 ID/question checks, guards
//!   against `dns-parser` 0.8's traps, CNAME chains inside one packet);
//! - `resolver`: the [`Resolver`] state machine: hosts table, TTL cache, coalescing of
//!   identical names, server choice ("the laziest DNS server"), retries with fresh IDs and
//!   exponential backoff, A-then-AAAA, CNAME re-queries;
//! - `system`: parsers for `/etc/hosts` and `/etc/resolv.conf` text.
//!
//! It opens no sockets, reads no clock and no files: the event loop (`event_loop`) owns one UDP
//! socket per server, reads the files, and moves bytes between those sockets and the
//! [`Resolver`]. Which resolved addresses may be connected to is `fetcher::addr_policy`'s job.

mod message;
mod resolver;
mod system;

pub use message::{build_query, normalize_name, parse_response, Answer};
pub use resolver::{DnsStats, Resolve, Resolved, Resolver, ResolverConfig, Transmit};
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
    /// The TC bit was set; we do not retry over TCP.
    Truncated,
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
            DnsError::Refused => ReturnCode::DnsRefused,
            DnsError::NoAddress => ReturnCode::DnsNoAddress,
            DnsError::CnameChain => ReturnCode::DnsCnameChain,
            DnsError::Timeout => ReturnCode::DnsTimeout,
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
            NxDomain,
            ServFail,
            Refused,
            NoAddress,
            CnameChain,
            Timeout,
            NoServer,
        ] {
            assert!(e.return_code().name().starts_with("Dns"), "{e:?}");
        }
        assert_eq!(Truncated.return_code(), ReturnCode::DnsUnsupportedAnswer);
        assert_eq!(NoServer.return_code(), ReturnCode::DnsServerUnknown);
    }
}
