//! The loop's side of DNS over TCP: for each [`TcpQuery`] the resolver asks for (an answer
//! came back truncated over UDP), a nonblocking connection to that server, the framed query
//! written, one framed answer read with [`FrameDecoder`] and handed back, the connection
//! closed.
//!
//! What to ask, whether the answer is ours and what it means is the resolver's business
//! (`dns::resolver`); the framing is `dns::tcp`'s. This file only moves bytes, within bounds:
//! at most `MAX_DNS_TCP` connections at once (the others wait in the resolver's queue), a
//! bounded number of reads per event, and each connection closed at its query's deadline
//! (the resolver, whose deadline it is, reports the timeout itself). The crawler hands it
//! the registry and the resolver on each call; it knows nothing else of the loop.

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::time::Instant;

use mio::net::TcpStream;
use mio::{Interest, Registry, Token};
use slab::Slab;

use super::tokens::DNS_TCP_TOKEN_BASE;
use crate::dns::tcp::{FrameDecoder, Status};
use crate::dns::{Resolver, TcpQuery};

/// TCP queries in flight at once. Truncated answers are rare (names with tens of records), so
/// a few connections serve them all; a burst waits in the resolver's queue instead of taking
/// file descriptors from the fetches.
const MAX_DNS_TCP: usize = 8;
/// Longest answer accepted over TCP: what `dns::message` looks at.
const MAX_ANSWER: usize = crate::dns::MAX_RESPONSE_LEN;
/// Scratch bytes per read.
const READ_CHUNK: usize = 2048;
/// Reads per readiness event: enough for the longest answer and its prefix in whole chunks, so
/// an answer that has arrived is read in one pass; past this the socket is re-armed.
const MAX_READS_PER_EVENT: usize = (MAX_ANSWER + 2).div_ceil(READ_CHUNK) + 1;

/// One TCP query's connection.
struct DnsTcpConn {
    stream: TcpStream,
    server: usize,
    id: u16,
    /// The framed query, and how much of it is written.
    payload: Vec<u8>,
    written: usize,
    frames: FrameDecoder,
    deadline: Instant,
}

/// How a connection's pass ended.
enum Progress {
    /// Waiting for readiness.
    Pending,
    /// One whole message.
    Answer(Vec<u8>),
    /// Refused, reset, closed early, or an answer over the bound.
    Failed,
    /// The read budget ran out with bytes possibly left: re-arm and wait.
    Yield,
}

/// The loop's DNS TCP connections.
#[derive(Default)]
pub(super) struct DnsTcp {
    conns: Slab<DnsTcpConn>,
}

impl DnsTcp {
    /// The earliest deadline of an open connection.
    pub(super) fn next_deadline(&self) -> Option<Instant> {
        self.conns.iter().map(|(_, c)| c.deadline).min()
    }
}

impl DnsTcpConn {
    /// Writes what is left of the query, then reads what has arrived.
    fn progress(&mut self) -> Progress {
        // Bounded: each write takes at least one byte or ends the pass.
        while self.written < self.payload.len() {
            match self.stream.write(&self.payload[self.written..]) {
                Ok(0) => return Progress::Failed,
                Ok(n) => self.written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Progress::Pending,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Progress::Failed,
            }
        }
        let mut buf = [0u8; READ_CHUNK];
        for _ in 0..MAX_READS_PER_EVENT {
            match self.stream.read(&mut buf) {
                // The server closed before a whole answer.
                Ok(0) => return Progress::Failed,
                Ok(n) => match self.frames.decode(&buf[..n]) {
                    Ok(Status::Complete { .. }) => {
                        let msg = self.frames.message().unwrap_or_default();
                        return Progress::Answer(msg.to_vec());
                    }
                    Ok(Status::Partial) => {}
                    Err(_) => return Progress::Failed,
                },
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Progress::Pending,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Progress::Failed,
            }
        }
        Progress::Yield
    }
}

impl DnsTcp {
    /// Opens a connection for each TCP query the resolver has, while there is room.
    pub(super) fn flush(
        &mut self,
        registry: &Registry,
        resolver: &mut Resolver,
        servers: &[SocketAddr],
        now: Instant,
    ) {
        while self.conns.len() < MAX_DNS_TCP {
            let Some(q) = resolver.poll_tcp_query() else {
                break;
            };
            if self.open(registry, servers, &q).is_err() {
                resolver.handle_tcp_failed(q.server, q.id, now);
            }
        }
    }

    fn open(
        &mut self,
        registry: &Registry,
        servers: &[SocketAddr],
        q: &TcpQuery,
    ) -> io::Result<()> {
        let addr = *servers.get(q.server).ok_or(io::ErrorKind::NotFound)?;
        let mut stream = TcpStream::connect(addr)?;
        let entry = self.conns.vacant_entry();
        registry.register(
            &mut stream,
            Token(DNS_TCP_TOKEN_BASE + entry.key()),
            Interest::READABLE | Interest::WRITABLE,
        )?;
        entry.insert(DnsTcpConn {
            stream,
            server: q.server,
            id: q.id,
            payload: q.payload.clone(),
            written: 0,
            frames: FrameDecoder::new(MAX_ANSWER),
            deadline: q.deadline,
        });
        Ok(())
    }

    /// Connection `slot` is ready: write, read, and hand the answer or the failure over.
    pub(super) fn ready(
        &mut self,
        registry: &Registry,
        resolver: &mut Resolver,
        slot: usize,
        now: Instant,
    ) {
        let Some(conn) = self.conns.get_mut(slot) else {
            return; // closed earlier in this turn
        };
        let (server, id) = (conn.server, conn.id);
        match conn.progress() {
            Progress::Pending => {}
            Progress::Yield => {
                // mio is edge-triggered: ask to be told again rather than lose the rest.
                let _ = registry.reregister(
                    &mut conn.stream,
                    Token(DNS_TCP_TOKEN_BASE + slot),
                    Interest::READABLE | Interest::WRITABLE,
                );
            }
            Progress::Answer(msg) => {
                self.close(registry, slot);
                resolver.handle_tcp_answer(server, id, &msg, now);
            }
            Progress::Failed => {
                self.close(registry, slot);
                resolver.handle_tcp_failed(server, id, now);
            }
        }
    }

    /// Closes the connections whose query's deadline has passed. Called after the resolver's
    /// own timers, so a query it timed out is already reported and this news is a no-op.
    pub(super) fn expire(&mut self, registry: &Registry, resolver: &mut Resolver, now: Instant) {
        // Bounded: at most MAX_DNS_TCP connections.
        let late: Vec<usize> = self
            .conns
            .iter()
            .filter(|(_, c)| c.deadline <= now)
            .map(|(slot, _)| slot)
            .collect();
        for slot in late {
            let (server, id) = {
                let c = &self.conns[slot];
                (c.server, c.id)
            };
            self.close(registry, slot);
            resolver.handle_tcp_failed(server, id, now);
        }
    }

    fn close(&mut self, registry: &Registry, slot: usize) {
        let mut conn = self.conns.remove(slot);
        let _ = registry.deregister(&mut conn.stream);
    }
}
