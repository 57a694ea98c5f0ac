//! The connection stages of a fetch: connecting, sending the request, receiving the
//! response, and what a complete or failed response does to its connection. [`Crawler::advance`]
//! is the one place that decides these transitions.

use super::{Crawler, Received, Step};
use crate::fetcher::conn::{ConnectStatus, RecvStatus};
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

impl Crawler {
    /// Runs a fetch's state machine as far as it can go now. The one place that decides
    /// connection-stage transitions.
    pub(super) fn advance(&mut self, key: usize) {
        match self.step(key) {
            Step::Pending => {}
            Step::Complete { reusable } => self.complete(key, reusable),
            Step::Failed(code) => self.finish(key, code),
            Step::RetryFresh => self.retry_fresh(key),
        }
    }

    pub(super) fn step(&mut self, key: usize) -> Step {
        // Bounded: each state moves forward or returns; three states, so three passes.
        for _ in 0..4 {
            let Some(fetch) = self.fetches.get_mut(key) else {
                return Step::Pending;
            };
            let Some(conn_key) = fetch.state.conn() else {
                return Step::Pending;
            };
            let Some(entry) = self.conns.get_mut(conn_key) else {
                return Step::Pending;
            };
            match fetch.state.clone() {
                FetchState::Connecting { conn } => match entry.conn.connect_status() {
                    Err(code) => return Step::Failed(code),
                    Ok(ConnectStatus::InProgress) => return Step::Pending,
                    Ok(ConnectStatus::Connected) => {
                        fetch.marks.connected = Some(self.now);
                        fetch.state = FetchState::HttpSend {
                            conn,
                            sent: 0,
                            attempt: Attempt::Fresh,
                        };
                        if let Some(d) = fetch.http_deadline {
                            let old = fetch.deadline.replace(d);
                            if let Some(old) = old {
                                self.timers.remove(&(old, key));
                            }
                            self.timers.insert((d, key));
                        }
                    }
                },
                FetchState::HttpSend {
                    conn,
                    mut sent,
                    attempt,
                } => {
                    let res = entry.conn.send(&fetch.request, &mut sent);
                    match res {
                        Err(_) if attempt == Attempt::Reused && fetch.stale_retries_left > 0 => {
                            return Step::RetryFresh
                        }
                        Err(code) => return Step::Failed(code),
                        Ok(false) => {
                            fetch.state = FetchState::HttpSend {
                                conn,
                                sent,
                                attempt,
                            };
                            let want = entry.conn.interest(true);
                            entry.reregister(&self.poll, conn, want);
                            return Step::Pending;
                        }
                        Ok(true) => {
                            fetch.marks.sent = Some(self.now);
                            fetch.sent_at = Some(self.wall_now);
                            fetch.state = FetchState::HttpReceive { conn, attempt };
                        }
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
                    let mut received = Received::More;
                    let mut bytes = 0u64;
                    let mut spilled = 0u64;
                    let res = entry.conn.recv(&mut self.read_buf, &mut |data: &[u8]| {
                        if marks.first_byte.is_none() {
                            marks.first_byte = Some(now);
                        }
                        bytes += data.len() as u64;
                        let processed = decoder.process(data);
                        match policy.apply(decoder, spill) {
                            Ok(n) => spilled += n as u64,
                            Err(code) => {
                                received = Received::Error(code);
                                return false;
                            }
                        }
                        match processed {
                            Ok((Progress::NeedMore, _)) => true,
                            Ok((Progress::Complete, used)) => {
                                received = Received::Complete {
                                    leftover: used < data.len(),
                                };
                                false
                            }
                            Err(e) => {
                                received = Received::Error(e.return_code());
                                false
                            }
                        }
                    });
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
                            entry.reregister(&self.poll, conn, want);
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
        fetch.state = FetchState::WaitForHttp { addr };
        fetch.sent_at = None;
        self.close_conn(conn);
        self.set_deadline(key, None);
        self.wait_for_http.push_front(key);
        self.dispatch_needed = true;
    }

    /// A complete response: release or keep the connection, report.
    pub(super) fn complete(&mut self, key: usize, reusable: bool) {
        if let Some(conn) = self.fetches[key].state.conn() {
            if reusable {
                let deadline = self.now + self.config.idle_timeout;
                self.conns.park(&self.poll, conn, deadline);
                self.dispatch_needed = true;
            } else {
                self.close_conn(conn);
            }
        }
        let code = if self.fetches[key].decoder.head().is_some() {
            ReturnCode::Success
        } else {
            ReturnCode::MimeMissing
        };
        // Content coding is undone when the driver takes the completion (`prepare`), so the
        // completion queue holds raw bytes only.
        self.finish(key, code);
    }
}
