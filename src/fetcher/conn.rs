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
}

impl Conn {
    pub fn new(stream: TcpStream, transport: Transport) -> Conn {
        Conn { stream, transport }
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
    pub fn send(&mut self, data: &[u8], sent: &mut usize) -> Result<bool, ReturnCode> {
        match &mut self.transport {
            Transport::Plain => {
                while *sent < data.len() {
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
                flush_tls(tls, &mut self.stream)?;
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
    ) -> Result<RecvStatus, ReturnCode> {
        match &mut self.transport {
            Transport::Plain => {
                for _ in 0..READS_PER_PASS {
                    let read = match rx.room() {
                        Some(room) => read_into(&self.stream, room).map(|n| (n, true)),
                        None => self.stream.read(buf).map(|n| (n, false)),
                    };
                    let more = match read {
                        Ok((0, _)) => return Ok(RecvStatus::Eof { clean: true }),
                        // SAFETY: `read_into` wrote n bytes at the start of the room `room`
                        // gave just before.
                        Ok((n, true)) => unsafe { rx.received_in_place(n) },
                        Ok((n, false)) => rx.received(&buf[..n]),
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                            return Ok(RecvStatus::WouldBlock)
                        }
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => true,
                        Err(_) => return Err(ReturnCode::HttpReceive),
                    };
                    if !more {
                        return Ok(RecvStatus::Stopped);
                    }
                }
                Ok(RecvStatus::Budget)
            }
            Transport::Tls(tls) => recv_tls(tls, &mut self.stream, buf, rx),
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

fn flush_tls(tls: &mut rustls::ClientConnection, stream: &mut TcpStream) -> Result<(), ReturnCode> {
    for _ in 0..MAX_TLS_WRITES {
        if !tls.wants_write() {
            return Ok(());
        }
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
) -> Result<RecvStatus, ReturnCode> {
    for _ in 0..READS_PER_PASS {
        flush_tls(tls, stream)?;
        let mut eof = false;
        let mut blocked = false;
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
            flush_tls(tls, stream)?;
            return Ok(RecvStatus::WouldBlock);
        }
    }
    Ok(RecvStatus::Budget)
}
