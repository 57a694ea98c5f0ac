//! The connection stages of a fetch: connecting, sending the request, receiving the
//! response, and what a complete or failed response does to its connection. [`Crawler::advance`]
//! is the one place that decides these transitions.

use super::{Crawler, Received, Step};
use crate::fetcher::conn::{ConnectStatus, RecvStatus};
use crate::fetcher::fetch::{Attempt, FetchState};
use crate::http::{self, Progress};
use crate::ReturnCode;

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
                    let marks = &mut fetch.marks;
                    let now = self.now;
                    let mut received = Received::More;
                    let mut bytes = 0u64;
                    let res = entry.conn.recv(&mut self.read_buf, &mut |data: &[u8]| {
                        if marks.first_byte.is_none() {
                            marks.first_byte = Some(now);
                        }
                        bytes += data.len() as u64;
                        match decoder.process(data) {
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
        fetch.decoder.reset(false);
        fetch.state = FetchState::WaitForHttp { addr };
        fetch.sent_at = None;
        self.close_conn(conn);
        self.set_deadline(key, None);
        self.wait_for_http.push_front(key);
        self.dispatch_needed = true;
    }

    /// A complete response: release or keep the connection, decode its content, report.
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
        let fetch = &self.fetches[key];
        let mut decoded = None;
        let code = match fetch.decoder.head() {
            Some(head) => {
                let mut buf = self.buffer_pool.pop().unwrap_or_default();
                buf.clear();
                match http::decode_content(
                    head,
                    fetch.decoder.body(),
                    &self.config.limits,
                    &mut buf,
                ) {
                    Ok(true) => {
                        decoded = Some(buf);
                        ReturnCode::Success
                    }
                    Ok(false) => {
                        self.buffer_pool.push(buf);
                        ReturnCode::Success
                    }
                    Err(e) => {
                        self.buffer_pool.push(buf);
                        e.return_code()
                    }
                }
            }
            None => ReturnCode::MimeMissing,
        };
        self.finish_with(key, code, decoded);
    }
}
