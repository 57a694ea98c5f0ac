//! The one place a fetch changes state (ARCHITECTURE §4): [`Crawler::enter`] moves it into a
//! state and, with it, arms or stops that state's named timers (`fetcher::timers`) and sets
//! its timing mark, as smoltcp's `set_state` is the one writer of a socket's state. Step 8 of a
//! turn, [`Crawler::expire`], acts on the timer that fired, by its name.
//!
//! Elsewhere a stage decides *that* a fetch moves on (`resolved`, `dispatch`, `step`,
//! `fall_back`, `retry_fresh`); what entering each state costs in deadlines is decided here.

use std::time::{Duration, Instant};

use super::Crawler;
use crate::fetcher::fetch::{Attempt, FetchState};
use crate::fetcher::timers::{Timer, TimerTable};
use crate::ReturnCode;

/// Extra time the loop allows the resolver beyond its own total timeout before it declares a
/// fetch's DNS stage timed out itself (a safety net: the resolver should always answer first).
const DNS_GRACE: Duration = Duration::from_secs(2);
/// How long a connect to a host's first address may take before its other family is tried
/// (RFC 8305's Connection Attempt Delay).
const HAPPY_EYEBALLS_DELAY: Duration = Duration::from_millis(250);

impl Crawler {
    /// Moves fetch `key` into `next`, at this turn's clock reading:
    ///
    /// | entering | timers | mark |
    /// |---|---|---|
    /// | `DnsReceive` | `Dns`: the resolver's total timeout and a grace | |
    /// | `WaitForHttp` | none (waiting for a slot is politeness, not a failure) | `resolved`, coming from the lookup |
    /// | `Connecting` | `Http` from now, `Connect` inside it, `HappyEyeballs` inside that when another address waits | `assigned` |
    /// | `HttpSend`, reused connection | `Http` from now | `assigned` |
    /// | `HttpSend`, fresh connection | `Http` kept, the connect ones stopped | `connected` |
    /// | `HttpReceive` | kept | `sent`, and the wall time for WARC dates |
    pub(super) fn enter(&mut self, key: usize, next: FetchState) {
        let now = self.now;
        let Some(fetch) = self.fetches.get_mut(key) else {
            return;
        };
        match &next {
            // Every record starts there; nothing goes back.
            FetchState::Init => {}
            FetchState::DnsReceive { .. } => {
                let at = now + self.config.resolver.total_timeout + DNS_GRACE;
                self.timers.update(key, |t| t.set(Timer::Dns, at));
            }
            FetchState::WaitForHttp { .. } => {
                if matches!(
                    fetch.state,
                    FetchState::Init | FetchState::DnsReceive { .. }
                ) {
                    fetch.marks.resolved = Some(now);
                }
                // Back from a connection (fall back, fresh retry): nothing was sent on it.
                fetch.sent_at = None;
                self.timers.update(key, TimerTable::stop_all);
            }
            FetchState::Connecting { .. } => {
                fetch.marks.assigned = Some(now);
                let http = now + self.config.http_timeout;
                let connect = (now + self.config.connect_timeout).min(http);
                let fall_back = fetch.fallback.is_some();
                self.timers.update(key, |t| {
                    t.set(Timer::Http, http);
                    t.set(Timer::Connect, connect);
                    if fall_back {
                        t.set(
                            Timer::HappyEyeballs,
                            (now + HAPPY_EYEBALLS_DELAY).min(connect),
                        );
                    }
                });
            }
            FetchState::HttpSend {
                attempt: Attempt::Reused,
                ..
            } => {
                fetch.marks.assigned = Some(now);
                let http = now + self.config.http_timeout;
                self.timers.update(key, |t| t.set(Timer::Http, http));
            }
            FetchState::HttpSend {
                attempt: Attempt::Fresh,
                ..
            } => {
                fetch.marks.connected = Some(now);
                self.timers.update(key, |t| {
                    t.stop(Timer::Connect);
                    t.stop(Timer::HappyEyeballs);
                });
            }
            FetchState::HttpReceive { .. } => {
                fetch.marks.sent = Some(now);
                fetch.sent_at = Some(self.wall_now);
            }
        }
        fetch.state = next;
    }

    /// Step 8 of a turn: every fetch whose timer fired by `now` ends with that timer's
    /// outcome, or, for a slow first address, tries the other one.
    pub(super) fn expire(&mut self, now: Instant) {
        while let Some((key, timer)) = self.timers.pop_expired(now) {
            let code = match timer {
                Timer::HappyEyeballs if self.fall_back(key) => continue,
                // (Armed only while another address waits, so not reached.)
                Timer::HappyEyeballs | Timer::Connect => ReturnCode::HttpConnectTimeout,
                Timer::Http => ReturnCode::HttpTimeout,
                Timer::Dns => ReturnCode::DnsTimeout,
            };
            self.finish(key, code);
        }
    }
}
