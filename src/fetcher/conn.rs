//! A connection to one server: a nonblocking `mio` TCP stream, optionally wrapped in TLS.
//!
//! The event loop calls [`Conn::send`] and [`Conn::recv`] when the socket is ready; they move
//! bytes between the socket and the caller (request bytes in, response bytes out through a
//! closure) and report what happened as a small status enum, never as a panic. For TLS this is
//! rustls' mio pattern: `write_tls` while it wants to write, `read_tls`, `process_new_packets`,
//! then drain plaintext; the mio interest is recomputed from `wants_write()` after every event.
//! What the bytes mean is [`crate::http`]'s business; when to give up is the event loop's.

use std::io::{self, Read, Write};
use std::mem::MaybeUninit;
use std::os::fd::AsRawFd;

use mio::net::TcpStream;
use mio::Interest;

use super::stats::SocketCalls;
use crate::ReturnCode;

/// Socket reads one receive pass may do before yielding to other connections (16 × the
/// loop's 64 KiB buffer = 1 MiB). mio is edge-triggered, so a pass that stops before
/// `WouldBlock` returns [`RecvStatus::Budget`] and the event loop must come back to this
/// connection on its own; the fetch's overall deadline bounds a peer that never stops.
const READS_PER_PASS: usize = 16;
/// Writes of pending TLS records per flush before yielding (each write takes a whole record).
const MAX_TLS_WRITES: usize = 64;

pub enum Transport {
    Plain,
    Tls(Box<rustls::ClientConnection>),
}

/// What a receive pass ended with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecvStatus {
    /// Everything available was read; wait for the next readiness event.
    WouldBlock,
    /// The read budget ran out with data possibly left: call again soon, without waiting for
    /// an event (none will come for data already there).
    Budget,
    /// The consumer asked to stop (it has a complete response or an error).
    Stopped,
    /// The peer closed. `clean` is false for a TLS peer that closed without `close_notify`.
    Eof { clean: bool },
}

/// What a readiness event said about a socket's receive side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Readiness {
    /// Nothing (a writable-only event).
    Writable,
    /// Bytes arrived.
    Readable,
    /// The peer closed or the socket failed: every read from now on returns at once.
    Hangup,
}

/// How the nonblocking connect is going.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnectStatus {
    Connected,
    InProgress,
}

/// What a connection's plaintext goes to (the response decoder, in the event loop).
pub trait Plaintext {
    /// Room to read the next bytes straight into, when they would be taken where they land.
    fn room(&mut self) -> Option<&mut [MaybeUninit<u8>]>;

    /// A read put `n` bytes at the start of the room [`Plaintext::room`] gave; false: stop
    /// reading.
    ///
    /// # Safety
    /// `room` was the last call, its room holds at least `n` bytes, and the first `n` were
    /// written.
    unsafe fn received_in_place(&mut self, n: usize) -> bool;

    /// Bytes read elsewhere (the scratch buffer, or out of TLS); false: stop reading.
    fn received(&mut self, data: &[u8]) -> bool;
}

/// Reads from a plain socket into uninitialised room (`read` needs an initialised slice:
/// zeroing a page-sized room per read would cost what reading in place saves).
fn read_into(stream: &TcpStream, room: &mut [MaybeUninit<u8>]) -> io::Result<usize> {
    // SAFETY: `recv` writes at most `room.len()` bytes to `room`, which is valid for writes
    // and not read by it.
    let n = unsafe { libc::recv(stream.as_raw_fd(), room.as_mut_ptr().cast(), room.len(), 0) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

pub struct Conn {
    pub stream: TcpStream,
    pub transport: Transport,
    /// What the socket may hold to read, as far as reads and events have told (plain only:
    /// TLS always reads, rustls may hold records already read).
    read_side: ReadSide,
}

/// What a plain socket's receive side may hold. mio is edge-triggered and the kernel raises an
/// edge for every arrival, so a socket a read found drained has nothing until an event says
/// so: a fetch whose request just went out on a kept-alive connection waits for the event
/// instead of a read that can only find nothing (one `recv` per page saved).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ReadSide {
    /// Bytes may be waiting: a new socket, or an event since a read drained it.
    MayHold,
    /// A read found it drained (it got less than it asked, or `EAGAIN`).
    Drained,
    /// An event said the peer closed or the socket failed. Sticky: a short read does not
    /// drain that (the end is still there to read, and no new edge will announce it).
    HungUp,
}

impl Conn {
    pub fn new(stream: TcpStream, transport: Transport) -> Conn {
        // Nothing is known of a new socket: its first receive pass reads.
        Conn {
            stream,
            transport,
            read_side: ReadSide::MayHold,
        }
    }

    /// The tunnel through a proxy is open: TLS to the site starts on it (its ClientHello goes
    /// out with the request, as on a direct connection).
    pub fn start_tls(&mut self, tls: rustls::ClientConnection) {
        self.transport = Transport::Tls(Box::new(tls));
    }

    /// One read of a plain socket into `buf` (a proxy's reply: the caller sizes `buf` so that
    /// no byte past the reply is taken). `Ok(None)`: nothing now; `Ok(Some(0))`: closed.
    pub fn read_plain(
        &mut self,
        buf: &mut [u8],
        calls: &mut SocketCalls,
    ) -> Result<Option<usize>, ReturnCode> {
        if self.read_side == ReadSide::Drained {
            return Ok(None);
        }
        // Bounded: EINTR is retried a few times, then left for the next event.
        for _ in 0..4 {
            calls.reads += 1;
            match self.stream.read(buf) {
                Ok(n) => return Ok(Some(n)),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.drained();
                    return Ok(None);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Err(ReturnCode::ProxyConnect),
            }
        }
        Ok(None)
    }

    /// A readiness event arrived for this socket.
    pub fn event(&mut self, readiness: Readiness) {
        self.read_side = match (readiness, self.read_side) {
            (Readiness::Hangup, _) | (_, ReadSide::HungUp) => ReadSide::HungUp,
            (Readiness::Readable, _) => ReadSide::MayHold,
            (Readiness::Writable, side) => side,
        };
    }

    /// Checks a nonblocking connect after a readiness event (mio's documented recipe:
    /// `take_error`, then `peer_addr` tells a finished connect from a spurious wake-up).
    pub fn connect_status(&self) -> Result<ConnectStatus, ReturnCode> {
        match self.stream.take_error() {
            Ok(None) => {}
            Ok(Some(_)) | Err(_) => return Err(ReturnCode::HttpConnect),
        }
        match self.stream.peer_addr() {
            Ok(_) => Ok(ConnectStatus::Connected),
            Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(ConnectStatus::InProgress),
            Err(_) => Err(ReturnCode::HttpConnect),
        }
    }

    /// Sends `data[*sent..]`. Returns `Ok(true)` once the request is fully handed over: for
    /// plain TCP when the kernel took every byte, for TLS when rustls has queued the plaintext
    /// (it goes out with the handshake, flushed by every later `send`/`recv`).
    pub fn send(
        &mut self,
        data: &[u8],
        sent: &mut usize,
        calls: &mut SocketCalls,
    ) -> Result<bool, ReturnCode> {
        match &mut self.transport {
            Transport::Plain => {
                while *sent < data.len() {
                    calls.writes += 1;
                    match self.stream.write(&data[*sent..]) {
                        Ok(0) => return Err(ReturnCode::HttpSend),
                        Ok(n) => *sent += n,
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(_) => return Err(ReturnCode::HttpSend),
                    }
                }
                Ok(true)
            }
            Transport::Tls(tls) => {
                if *sent < data.len() {
                    // rustls buffers plaintext written before the handshake completes.
                    tls.writer()
                        .write_all(&data[*sent..])
                        .map_err(|_| ReturnCode::HttpSend)?;
                    *sent = data.len();
                }
                flush_tls(tls, &mut self.stream, calls)?;
                Ok(true)
            }
        }
    }

    /// Reads everything the socket has now, handing plaintext to `rx` until it says stop.
    /// A plain connection reads straight into `rx`'s room when it offers one, else into
    /// `buf`, the event loop's scratch buffer (as TLS's plaintext always comes).
    pub fn recv(
        &mut self,
        buf: &mut [u8],
        rx: &mut dyn Plaintext,
        calls: &mut SocketCalls,
    ) -> Result<RecvStatus, ReturnCode> {
        match &mut self.transport {
            Transport::Plain => {
                if self.read_side == ReadSide::Drained {
                    // Drained since its last event: the next bytes come with the next one.
                    return Ok(RecvStatus::WouldBlock);
                }
                for _ in 0..READS_PER_PASS {
                    calls.reads += 1;
                    let (read, asked, in_place) = match rx.room() {
                        Some(room) => {
                            let asked = room.len();
                            (read_into(&self.stream, room), asked, true)
                        }
                        None => (self.stream.read(buf), buf.len(), false),
                    };
                    let n = match read {
                        Ok(0) => return Ok(RecvStatus::Eof { clean: true }),
                        Ok(n) => n,
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                            self.drained();
                            return Ok(RecvStatus::WouldBlock);
                        }
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        Err(_) => return Err(ReturnCode::HttpReceive),
                    };
                    let more = if in_place {
                        // SAFETY: `read_into` wrote n bytes at the start of the room `room`
                        // gave just before.
                        unsafe { rx.received_in_place(n) }
                    } else {
                        rx.received(&buf[..n])
                    };
                    // A stream socket that gives less than asked has given all it had
                    // (epoll(7)), and later bytes come with a new edge: one read per
                    // readiness when the data fits, not a second one to hear "nothing".
                    if n < asked {
                        self.drained();
                    }
                    if !more {
                        return Ok(RecvStatus::Stopped);
                    }
                    if self.read_side == ReadSide::Drained {
                        return Ok(RecvStatus::WouldBlock);
                    }
                }
                Ok(RecvStatus::Budget)
            }
            Transport::Tls(tls) => recv_tls(tls, &mut self.stream, buf, rx, calls),
        }
    }

    /// A read found the socket drained; a hang-up stays (its end is still to be read).
    fn drained(&mut self) {
        if self.read_side == ReadSide::MayHold {
            self.read_side = ReadSide::Drained;
        }
    }

    /// The readiness this connection needs next.
    pub fn interest(&self, sending: bool) -> Interest {
        let write = match &self.transport {
            Transport::Plain => sending,
            Transport::Tls(tls) => tls.wants_write(),
        };
        if write {
            Interest::READABLE | Interest::WRITABLE
        } else {
            Interest::READABLE
        }
    }
}

fn flush_tls(
    tls: &mut rustls::ClientConnection,
    stream: &mut TcpStream,
    calls: &mut SocketCalls,
) -> Result<(), ReturnCode> {
    for _ in 0..MAX_TLS_WRITES {
        if !tls.wants_write() {
            return Ok(());
        }
        calls.writes += 1;
        match tls.write_tls(stream) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) if tls.is_handshaking() => return Err(ReturnCode::TlsHandshake),
            Err(_) => return Err(ReturnCode::HttpSend),
        }
    }
    // Still more to write: the writable interest stays on and the next event continues.
    Ok(())
}

fn recv_tls(
    tls: &mut rustls::ClientConnection,
    stream: &mut TcpStream,
    buf: &mut [u8],
    rx: &mut dyn Plaintext,
    calls: &mut SocketCalls,
) -> Result<RecvStatus, ReturnCode> {
    for _ in 0..READS_PER_PASS {
        flush_tls(tls, stream, calls)?;
        let mut eof = false;
        let mut blocked = false;
        calls.reads += 1;
        match tls.read_tls(stream) {
            Ok(0) => eof = true,
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => blocked = true,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) if tls.is_handshaking() => return Err(ReturnCode::TlsHandshake),
            Err(_) => return Err(ReturnCode::HttpReceive),
        }
        let handshaking = tls.is_handshaking();
        if let Err(err) = tls.process_new_packets() {
            // Best effort: let the peer see our alert before the socket closes.
            let _ = tls.write_tls(stream);
            return Err(crate::fetcher::tls::classify(&err, handshaking));
        }
        if handshaking && !tls.is_handshaking() {
            match tls.handshake_kind() {
                Some(rustls::HandshakeKind::Resumed) => calls.tls_resumed += 1,
                _ => calls.tls_full_handshakes += 1,
            }
        }
        if eof && tls.is_handshaking() {
            // The peer hung up mid-handshake (e.g. a plain-text server that did not
            // understand our ClientHello): a TLS failure, not an empty HTTP response.
            return Err(ReturnCode::TlsHandshake);
        }
        loop {
            match tls.reader().read(buf) {
                Ok(0) => return Ok(RecvStatus::Eof { clean: true }),
                Ok(n) => {
                    if !rx.received(&buf[..n]) {
                        return Ok(RecvStatus::Stopped);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                    return Ok(RecvStatus::Eof { clean: false })
                }
                Err(_) => return Err(ReturnCode::HttpReceive),
            }
        }
        if eof {
            if tls.is_handshaking() {
                return Err(ReturnCode::TlsHandshake);
            }
            return Ok(RecvStatus::Eof { clean: false });
        }
        if blocked {
            flush_tls(tls, stream, calls)?;
            return Ok(RecvStatus::WouldBlock);
        }
    }
    Ok(RecvStatus::Budget)
}
