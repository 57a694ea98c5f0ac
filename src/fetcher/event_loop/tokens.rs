//! The loop's mio token space: what a readiness event's token names. Below
//! [`DNS_TOKEN_BASE`], a connection's slab key; then the waker; from [`DNS_TOKEN_BASE`], a
//! DNS UDP socket (its server's index added); from [`DNS_TCP_TOKEN_BASE`], a DNS TCP
//! connection (its slot added).

/// mio tokens at and above this value name DNS sockets; below it, connection slab keys.
pub(super) const DNS_TOKEN_BASE: usize = usize::MAX / 2;
/// The token of the loop's [`mio::Waker`] (another thread has news for the driver).
pub(super) const WAKE_TOKEN: usize = DNS_TOKEN_BASE - 1;
/// mio tokens at and above this value name DNS TCP connections (their slot added); the UDP
/// sockets' tokens sit between `DNS_TOKEN_BASE` and this.
pub(super) const DNS_TCP_TOKEN_BASE: usize = DNS_TOKEN_BASE + DNS_TOKEN_BASE / 2;
