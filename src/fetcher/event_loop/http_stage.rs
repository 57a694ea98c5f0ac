//! The connection stages of a fetch: connecting, sending the request, receiving the
//! response, and what a complete or failed response does to its connection. [`Crawler::advance`]
//! is the one place that decides these transitions.

use std::mem::MaybeUninit;
use std::time::Instant;

use super::proxy_stage::Shake;
use super::receive_pool::ReceivePool;
use super::{Crawler, Received, Step, READ_BUF_BYTES};
use crate::fetcher::conn::{ConnectStatus, Plaintext, RecvStatus};
use crate::fetcher::fetch::{Attempt, FetchState};
use crate::fetcher::spool::{Spilling, Spool};
use crate::http::{self, Progress, ResponseDecoder};
use crate::ReturnCode;

/// When a receiving fetch's body moves from memory to the spool.
struct SpillPolicy<'a> {
    /// `None`: no spool configured, everything stays in memory (up to the limits).
    spool: Option<&'a dyn Spool>,
    /// A body holding more than this in memory spills.
    threshold: usize,
    /// What the loop's buffer budget had left when this receive pass began.
    budget_left: usize,
    /// What this fetch held when the pass began.
    held_before: usize,
}

impl SpillPolicy<'_> {
    /// Spills when the body is over the threshold or this pass has spent the budget, and
    /// after every read once spilling; returns the bytes moved to the spool.
    fn apply(
        &self,
        decoder: &mut ResponseDecoder,
        spill: &mut Option<Spilling>,
    ) -> Result<usize, ReturnCode> {
        let Some(spool) = self.spool else {
            return Ok(0);
        };
        // A head is bounded by its own limit and must stay whole in memory.
        if decoder.head().is_none() {
            return Ok(0);
        }
        if spill.is_none() {
            let held = decoder.buffered();
            let over_budget = held.saturating_sub(self.held_before) > self.budget_left;
            if held <= self.threshold && !over_budget {
                return Ok(0);
            }
            let file = spool.create().map_err(|_| ReturnCode::SpoolFailed)?;
            *spill = Some(Spilling::new(file));
        }
        let Some(target) = spill.as_mut() else {
            return Ok(0);
        };
        let mut failed = false;
        let n = decoder.spill(&mut |bytes: &[u8]| {
            failed |= target.append(bytes).is_err();
        });
        if failed {
            return Err(ReturnCode::SpoolFailed);
        }
        Ok(n)
    }
}

/// One receive pass of a fetch: the connection's plaintext into the decoder (read straight
/// into its buffer where it offers room), then the spill policy, after every read.
struct Receiving<'a> {
    decoder: &'a mut ResponseDecoder,
    /// Where a decoder without a buffer gets one as its response begins.
    pool: &'a mut ReceivePool,
    spill: &'a mut Option<Spilling>,
    policy: SpillPolicy<'a>,
    first_byte: &'a mut Option<Instant>,
    now: Instant,
    received: Received,
    bytes: u64,
    spilled: u64,
}

impl Receiving<'_> {
    /// After a read of `n` bytes that the decoder took with `processed`: true to read on.
    fn after(&mut self, n: usize, processed: Result<(Progress, usize), http::HttpError>) -> bool {
        if self.first_byte.is_none() {
            *self.first_byte = Some(self.now);
        }
        self.bytes += n as u64;
        match self.policy.apply(self.decoder, self.spill) {
            Ok(spilled) => self.spilled += spilled as u64,
            Err(code) => {
                self.received = Received::Error(code);
                return false;
            }
        }
        match processed {
            Ok((Progress::NeedMore, _)) => true,
            Ok((Progress::Complete, used)) => {
                self.received = Received::Complete { leftover: used < n };
                false
            }
            Err(e) => {
                self.received = Received::Error(e.return_code());
                false
            }
        }
    }
}

impl Plaintext for Receiving<'_> {
    fn room(&mut self) -> Option<&mut [MaybeUninit<u8>]> {
        // As much as a read into the scratch buffer takes: reading in place must not cost
        // more reads (a syscall costs more than the copy it saves).
        self.pool.equip(self.decoder);
        self.decoder.recv_room(READ_BUF_BYTES)
    }

    unsafe fn received_in_place(&mut self, n: usize) -> bool {
        // SAFETY: passed on from the caller (`room` was the decoder's `recv_room`).
        let processed = unsafe { self.decoder.process_received(n) };
        self.after(n, processed)
    }

    fn received(&mut self, data: &[u8]) -> bool {
        self.pool.equip(self.decoder);
        let processed = self.decoder.process(data);
        self.after(data.len(), processed)
    }
}

impl Crawler {
    /// Runs a fetch's state machine as far as it can go now. The one place that decides
    /// connection-stage transitions.
    pub(super) fn advance(&mut self, key: usize) {
        match self.step(key) {
            Step::Pending => {}
            Step::Complete { reusable } => self.complete(key, reusable),
            Step::Failed(ReturnCode::HttpConnect | ReturnCode::ProxyConnect)
                if self.fall_back(key) => {}
            Step::Failed(code) => self.finish(key, code),
            Step::RetryFresh => self.retry_fresh(key),
        }
    }

    /// A connect that failed or is slow, for a host with an address of the other family:
    /// closes it and queues the fetch for that address instead (once). Returns whether it did.
    pub(super) fn fall_back(&mut self, key: usize) -> bool {
        let Some(fetch) = self.fetches.get_mut(key) else {
            return false;
        };
        let FetchState::Connecting { conn } = fetch.state else {
            return false;
        };
        let Some(addr) = fetch.fallback.take() else {
            return false;
        };
        self.stats.happy_eyeballs_fallbacks += 1;
        fetch.peer = None;
        self.close_conn(conn);
        self.enter(key, FetchState::WaitForHttp { addr });
        self.wait_for_http.push_front(key);
        self.dispatch_needed = true;
        true
    }

    pub(super) fn step(&mut self, key: usize) -> Step {
        // Bounded: each state moves forward or returns; four states (a tunnel's handshake
        // runs to its end or returns in one pass), so four passes.
        for _ in 0..6 {
            let Some(fetch) = self.fetches.get_mut(key) else {
                return Step::Pending;
            };
            let Some(conn_key) = fetch.state.conn() else {
                return Step::Pending;
            };
            let Some(entry) = self.conns.get_mut(conn_key) else {
                return Step::Pending;
            };
            // State changes go through `enter`; the request's progress (`sent`) is counted in
            // place.
            match fetch.state {
                FetchState::Connecting { conn } => match entry.conn.connect_status() {
                    Err(_) if fetch.proxy.is_some() => {
                        return Step::Failed(ReturnCode::ProxyConnect)
                    }
                    Err(code) => return Step::Failed(code),
                    Ok(ConnectStatus::InProgress) => return Step::Pending,
                    Ok(ConnectStatus::Connected) => {
                        let shake = fetch.proxy.as_ref().and_then(|p| p.handshake.as_ref());
                        let next = match shake {
                            Some(h) => FetchState::Proxy {
                                conn,
                                step: h.step(),
                            },
                            None => FetchState::HttpSend {
                                conn,
                                sent: 0,
                                attempt: Attempt::Fresh,
                            },
                        };
                        self.enter(key, next);
                    }
                },
                FetchState::Proxy { conn, .. } => match self.shake(key, conn) {
                    Shake::Open => {}
                    Shake::Pending => return Step::Pending,
                    Shake::Failed(code) => return Step::Failed(code),
                },
                FetchState::HttpSend {
                    conn,
                    ref mut sent,
                    attempt,
                } => {
                    let res = entry
                        .conn
                        .send(&fetch.request, sent, &mut self.stats.socket);
                    match res {
                        Err(_) if attempt == Attempt::Reused && fetch.stale_retries_left > 0 => {
                            return Step::RetryFresh
                        }
                        Err(code) => return Step::Failed(code),
                        Ok(false) => {
                            let want = entry.conn.interest(true);
                            entry.reregister(&self.poll, conn, want, &mut self.stats.socket);
                            return Step::Pending;
                        }
                        Ok(true) => self.enter(key, FetchState::HttpReceive { conn, attempt }),
                    }
                }
                FetchState::HttpReceive { conn, attempt } => {
                    let decoder = &mut fetch.decoder;
                    let spill = &mut fetch.spill;
                    let marks = &mut fetch.marks;
                    let now = self.now;
                    let held_before = decoder.buffered();
                    let policy = SpillPolicy {
                        spool: self.config.spool.as_deref(),
                        threshold: self.config.spill_threshold,
                        budget_left: self.config.max_buffer_bytes.saturating_sub(self.buffered),
                        held_before,
                    };
                    let mut rx = Receiving {
                        decoder,
                        pool: &mut self.receive_pool,
                        spill,
                        policy,
                        first_byte: &mut marks.first_byte,
                        now,
                        received: Received::More,
                        bytes: 0,
                        spilled: 0,
                    };
                    let res = entry
                        .conn
                        .recv(&mut self.read_buf, &mut rx, &mut self.stats.socket);
                    let (received, bytes, spilled) = (rx.received, rx.bytes, rx.spilled);
                    let held_after = fetch.decoder.buffered();
                    self.buffered = (self.buffered + held_after).saturating_sub(held_before);
                    self.stats.peak_buffered_bytes =
                        self.stats.peak_buffered_bytes.max(self.buffered);
                    self.spooled += spilled;
                    self.stats.bytes_received += bytes;
                    let nothing_yet = fetch.decoder.raw().is_empty();
                    let may_retry =
                        attempt == Attempt::Reused && nothing_yet && fetch.stale_retries_left > 0;
                    return match (res, received) {
                        (_, Received::Complete { leftover }) => Step::Complete {
                            reusable: !leftover && fetch.decoder.reusable(),
                        },
                        (_, Received::Error(code)) => Step::Failed(code),
                        (Err(_), Received::More) if may_retry => Step::RetryFresh,
                        (Err(code), Received::More) => Step::Failed(code),
                        (Ok(RecvStatus::Eof { .. }), Received::More) if may_retry => {
                            Step::RetryFresh
                        }
                        (Ok(RecvStatus::Eof { clean }), Received::More) => {
                            let close_delimited = matches!(
                                fetch.decoder.head().map(|h| &h.framing),
                                Some(http::Framing::Close)
                            );
                            match fetch.decoder.process_eof() {
                                Ok(Progress::Complete) if !clean && close_delimited => {
                                    // TLS without close_notify: a close-delimited body may
                                    // have been cut by an attacker (docs/ARCHITECTURE.md).
                                    Step::Failed(ReturnCode::TlsTruncated)
                                }
                                Ok(Progress::Complete) => Step::Complete { reusable: false },
                                Ok(Progress::NeedMore) => {
                                    Step::Failed(ReturnCode::HttpPageTruncated)
                                }
                                Err(e) => Step::Failed(e.return_code()),
                            }
                        }
                        (Ok(RecvStatus::Budget), Received::More) => {
                            self.ready_again.push(conn);
                            Step::Pending
                        }
                        (Ok(_), Received::More) => {
                            let want = entry.conn.interest(false);
                            entry.reregister(&self.poll, conn, want, &mut self.stats.socket);
                            Step::Pending
                        }
                    };
                }
                FetchState::Init
                | FetchState::DnsReceive { .. }
                | FetchState::WaitForHttp { .. } => return Step::Pending,
            }
        }
        Step::Pending
    }

    /// A reused keep-alive connection was already closed by the server: drop it and queue
    /// the fetch again for a fresh connection (once).
    pub(super) fn retry_fresh(&mut self, key: usize) {
        // Only reached from HttpSend/HttpReceive, which always hold a connection.
        let Some(conn) = self.fetches[key].state.conn() else {
            return;
        };
        let Some(addr) = self.conns.get(conn).map(|e| e.key.addr) else {
            return;
        };
        self.stats.stale_retries += 1;
        let fetch = &mut self.fetches[key];
        fetch.stale_retries_left -= 1;
        self.buffered = self.buffered.saturating_sub(fetch.decoder.buffered());
        fetch.decoder.reset(false);
        self.close_conn(conn);
        self.enter(key, FetchState::WaitForHttp { addr });
        self.wait_for_http.push_front(key);
        self.dispatch_needed = true;
    }

    /// A complete response: release or keep the connection, report.
    pub(super) fn complete(&mut self, key: usize, reusable: bool) {
        if let Some(conn) = self.fetches[key].state.conn() {
            if reusable {
                let deadline = self.now + self.config.idle_timeout;
                let held = self.fetches[key].req.more_for_host;
                self.conns
                    .park(&self.poll, conn, deadline, held, &mut self.stats.socket);
                self.dispatch_needed = true;
            } else {
                self.close_conn(conn);
            }
        }
        let fetch = &self.fetches[key];
        let code = match fetch.decoder.head() {
            // An HTTP proxy answers an absolute-form request itself when it wants credentials.
            Some(head)
                if head.status == 407
                    && fetch
                        .proxy
                        .as_ref()
                        .is_some_and(|p| !p.tunnels(fetch.target.tls)) =>
            {
                ReturnCode::ProxyAuth
            }
            Some(_) => ReturnCode::Success,
            None => ReturnCode::MimeMissing,
        };
        // Content coding is undone when the driver takes the completion (`prepare`), so the
        // completion queue holds raw bytes only.
        self.finish(key, code);
    }
}
