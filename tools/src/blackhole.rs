//! A loopback TCP address where `connect()` never completes, for connect-timeout tests.
//!
//! What works on Linux loopback: a listener whose backlog is set to 0 with `listen(fd, 0)` and
//! which never accepts. Linux admits one connection into the accept queue (the queue counts as
//! full only when it holds *more* than the backlog), so we fill it ourselves with one or more
//! connections we keep open. After that the kernel drops every further SYN (the
//! `ListenOverflows` path, with `tcp_abort_on_overflow` = 0 by default), so a client's connect
//! stays in SYN_SENT and retransmits (1 s, 3 s, 7 s...) until its own timeout. No RST is sent,
//! unlike a closed port. Nothing here touches a non-loopback address.

use std::io;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::time::Duration;

/// Most filler connections tried before declaring the queue unfillable.
const MAX_FILLERS: usize = 16;
/// A filler connect that has not completed after this long means the queue is full.
const FILLER_WAIT: Duration = Duration::from_millis(200);

pub struct BlackHole {
    addr: SocketAddr,
    // Kept alive: the listener owns the port; the fillers occupy its accept queue.
    _listener: TcpListener,
    _fillers: Vec<TcpStream>,
}

impl BlackHole {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

/// Binds 127.0.0.1:0, shrinks the backlog to 0 and fills the accept queue.
pub fn start() -> io::Result<BlackHole> {
    start_at(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0).into())
}

/// The same on a loopback address and port of the caller's (e.g. `[::1]` on the port an IPv4
/// server of the same host uses, for Happy Eyeballs tests).
pub fn start_at(addr: SocketAddr) -> io::Result<BlackHole> {
    if !addr.ip().is_loopback() {
        return Err(io::Error::other("a black hole is made on loopback only"));
    }
    let listener = TcpListener::bind(addr)?;
    // SAFETY: a valid listening fd owned by `listener`; listen() again only resizes the backlog.
    let rc = unsafe { libc::listen(listener.as_raw_fd(), 0) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let addr = listener.local_addr()?;
    let mut fillers = Vec::new();
    for _ in 0..MAX_FILLERS {
        match TcpStream::connect_timeout(&addr, FILLER_WAIT) {
            Ok(s) => fillers.push(s),
            Err(e)
                if e.kind() == io::ErrorKind::TimedOut || e.kind() == io::ErrorKind::WouldBlock =>
            {
                return Ok(BlackHole {
                    addr,
                    _listener: listener,
                    _fillers: fillers,
                });
            }
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other(
        "accept queue never filled: connects to this address would complete",
    ))
}
