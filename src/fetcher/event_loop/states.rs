//! The one place a fetch changes state (ARCHITECTURE §4): [`Crawler::enter`] moves it into a
//! state and, with it, arms or stops that state's named timers (`fetcher::timers`) and sets
//! its timing mark, as smoltcp's `set_state` is the one writer of a socket's state. Step 8 of a
//! turn, [`Crawler::expire`], acts on the timer that fired, by its name.
//!
//! Elsewhere a stage decides *that* a fetch moves on (`resolved`, `dispatch`, `step`,
//! `fall_back`, `retry_fresh`); what entering each state costs in deadlines is decided here.

use std::time::{Duration, Instant};

use super::{Crawler, CrawlerConfig};
use crate::fetcher::fetch::{Attempt, Fetch, FetchState};
use crate::fetcher::timers::{Timer, TimerTable};
use crate::ReturnCode;

/// Extra time the loop allows the resolver beyond its own total timeout before it declares a
/// fetch's DNS stage timed out itself (a safety net: the resolver should always answer first).
const DNS_GRACE: Duration = Duration::from_secs(2);
/// How long a connect to a host's first address may take before its other family is tried
/// (RFC 8305's Connection Attempt Delay).
const HAPPY_EYEBALLS_DELAY: Duration = Duration::from_millis(250);

impl Crawler {
    /// Moves fetch `key` into `next` at this turn's clock reading ([`enter_state`]).
    pub(super) fn enter(&mut self, key: usize, next: FetchState) {
        let timeouts = Timeouts::of(&self.config);
        let now = self.now;
        let Some(fetch) = self.fetches.get_mut(key) else {
            return;
        };
        self.timers.update(key, |timers| {
            enter_state(fetch, next, now, timeouts, timers);
        });
    }

    /// Step 8 of a turn: every fetch whose timer fired by `now` ends with that timer's
    /// outcome, or, for a slow first address, tries the other one.
    pub(super) fn expire(&mut self, now: Instant) {
        while let Some((key, timer)) = self.timers.pop_expired(now) {
            if timer == Timer::HappyEyeballs && self.fall_back(key) {
                continue;
            }
            let at_proxy = self.fetches.get(key).is_some_and(at_proxy);
            self.finish(key, timed_out(timer, at_proxy));
        }
    }
}

/// Whether a fetch is still reaching its proxy: connecting to it, or in its handshake.
fn at_proxy(fetch: &Fetch) -> bool {
    match fetch.state {
        FetchState::Proxy { .. } => true,
        FetchState::Connecting { .. } => fetch.proxy.is_some(),
        _ => false,
    }
}

/// How long each stage may take: what a state's timers are armed with.
#[derive(Clone, Copy, Debug)]
struct Timeouts {
    /// The resolver's total timeout and [`DNS_GRACE`].
    dns: Duration,
    connect: Duration,
    http: Duration,
}

impl Timeouts {
    fn of(config: &CrawlerConfig) -> Timeouts {
        Timeouts {
            dns: config.resolver.total_timeout + DNS_GRACE,
            connect: config.connect_timeout,
            http: config.http_timeout,
        }
    }
}

/// `fetch` enters `next` at `now`:
///
/// | entering | timers | mark |
/// |---|---|---|
/// | `DnsReceive` | `Dns` | |
/// | `WaitForHttp` | none (waiting for a slot is politeness, not a failure) | `resolved`, coming from the lookup |
/// | `Connecting` | `Http` from now, `Connect` inside it, `HappyEyeballs` inside that while another address waits | `assigned` |
/// | `Proxy` (each step of a handshake) | `Proxy` from now (the connect timeout) inside `Http`, the connect ones stopped | |
/// | `HttpSend`, reused connection | `Http` from now | `assigned` |
/// | `HttpSend`, fresh connection | `Http` kept, the connect and proxy ones stopped | `connected` (through a proxy: the tunnel open) |
/// | `HttpReceive` | kept | `sent`, and the request is marked sent |
fn enter_state(
    fetch: &mut Fetch,
    next: FetchState,
    now: Instant,
    timeouts: Timeouts,
    timers: &mut TimerTable,
) {
    match &next {
        // Every record starts there; nothing goes back.
        FetchState::Init => {}
        FetchState::DnsReceive { .. } => timers.set(Timer::Dns, now + timeouts.dns),
        FetchState::WaitForHttp { .. } => {
            if matches!(
                fetch.state,
                FetchState::Init | FetchState::DnsReceive { .. }
            ) {
                fetch.marks.resolved = Some(now);
            }
            // Back from a connection (fall back, fresh retry): nothing was sent on it.
            fetch.sent = false;
            timers.stop_all();
        }
        FetchState::Connecting { .. } => {
            fetch.marks.assigned = Some(now);
            let http = now + timeouts.http;
            let connect = (now + timeouts.connect).min(http);
            timers.set(Timer::Http, http);
            timers.set(Timer::Connect, connect);
            if fetch.fallback.is_some() {
                let fall_back = (now + HAPPY_EYEBALLS_DELAY).min(connect);
                timers.set(Timer::HappyEyeballs, fall_back);
            }
        }
        FetchState::HttpSend {
            attempt: Attempt::Reused,
            ..
        } => {
            fetch.marks.assigned = Some(now);
            timers.set(Timer::Http, now + timeouts.http);
        }
        FetchState::Proxy { .. } => {
            timers.stop(Timer::Connect);
            timers.stop(Timer::HappyEyeballs);
            let step = now + timeouts.connect;
            let step = timers.get(Timer::Http).map_or(step, |http| step.min(http));
            timers.set(Timer::Proxy, step);
        }
        FetchState::HttpSend {
            attempt: Attempt::Fresh,
            ..
        } => {
            fetch.marks.connected = Some(now);
            timers.stop(Timer::Connect);
            timers.stop(Timer::HappyEyeballs);
            timers.stop(Timer::Proxy);
        }
        FetchState::HttpReceive { .. } => {
            fetch.marks.sent = Some(now);
            fetch.sent = true;
        }
    }
    fetch.state = next;
}

/// The outcome of a fetch whose `timer` fired (a `HappyEyeballs` one falls back instead, while
/// it can: it is armed only while another address waits). Any deadline passed while still
/// reaching a proxy (`at_proxy`) is the proxy's: `ProxyTimeout`.
fn timed_out(timer: Timer, at_proxy: bool) -> ReturnCode {
    match timer {
        _ if at_proxy && timer != Timer::Dns => ReturnCode::ProxyTimeout,
        Timer::Proxy => ReturnCode::ProxyTimeout,
        Timer::Dns => ReturnCode::DnsTimeout,
        Timer::HappyEyeballs | Timer::Connect => ReturnCode::HttpConnectTimeout,
        Timer::Http => ReturnCode::HttpTimeout,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fetcher::fetch::{FetchRequest, Marks, Target};
    use crate::http::{Limits, ResponseDecoder};

    const TIMEOUTS: Timeouts = Timeouts {
        dns: Duration::from_secs(12),
        connect: Duration::from_secs(10),
        http: Duration::from_secs(30),
    };

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    fn waiting(addr: &str) -> FetchState {
        FetchState::WaitForHttp {
            addr: addr.parse().unwrap(),
        }
    }

    fn send(conn: usize, attempt: Attempt) -> FetchState {
        FetchState::HttpSend {
            conn,
            sent: 0,
            attempt,
        }
    }

    /// A fetch walked through its states, and its timers.
    struct Walk {
        fetch: Fetch,
        timers: TimerTable,
    }

    impl Walk {
        fn new(t0: Instant) -> Walk {
            let url = url::Url::parse("http://example.com/").unwrap();
            let fetch = Fetch {
                target: Target::of(&url).unwrap(),
                req: FetchRequest::new(url, 0),
                state: FetchState::Init,
                marks: Marks::new(t0),
                request: Vec::new(),
                decoder: ResponseDecoder::new(Limits::default()),
                spill: None,
                peer: None,
                sent: false,
                stale_retries_left: 1,
                fallback: None,
                proxy: None,
            };
            Walk {
                fetch,
                timers: TimerTable::default(),
            }
        }

        fn enter(&mut self, next: FetchState, now: Instant) -> &mut Walk {
            enter_state(&mut self.fetch, next, now, TIMEOUTS, &mut self.timers);
            self
        }

        fn fires(&self, at: Instant) -> Option<ReturnCode> {
            let at_proxy = at_proxy(&self.fetch);
            self.timers.expired(at).map(|t| timed_out(t, at_proxy))
        }
    }

    #[test]
    fn each_stage_has_its_deadline_and_its_outcome() {
        let t0 = Instant::now();
        let mut w = Walk::new(t0);
        let name = "example.com".to_string();
        w.enter(FetchState::DnsReceive { name }, t0);
        assert_eq!(w.timers.next(), Some(t0 + secs(12)));
        assert_eq!(w.fires(t0 + secs(11)), None);
        assert_eq!(w.fires(t0 + secs(12)), Some(ReturnCode::DnsTimeout));

        w.enter(waiting("192.0.2.1:80"), t0 + secs(1));
        assert_eq!(w.timers.next(), None, "waiting for a slot never times out");
        assert_eq!(w.fetch.marks.resolved, Some(t0 + secs(1)));

        let t2 = t0 + secs(2);
        w.enter(FetchState::Connecting { conn: 7 }, t2);
        assert_eq!(w.fetch.marks.assigned, Some(t2));
        assert_eq!(w.fires(t2 + secs(9)), None);
        assert_eq!(w.fires(t2 + secs(10)), Some(ReturnCode::HttpConnectTimeout));
        // A turn that came late, past the overall deadline too: that one is the verdict.
        assert_eq!(w.fires(t2 + secs(30)), Some(ReturnCode::HttpTimeout));

        w.enter(send(7, Attempt::Fresh), t2 + secs(3));
        assert_eq!(w.fetch.marks.connected, Some(t2 + secs(3)));
        // Connected: the overall deadline is left.
        assert_eq!(w.timers.next(), Some(t2 + secs(30)));
        assert_eq!(w.fires(t2 + secs(29)), None);

        let attempt = Attempt::Fresh;
        w.enter(FetchState::HttpReceive { conn: 7, attempt }, t2 + secs(4));
        assert_eq!(w.fetch.marks.sent, Some(t2 + secs(4)));
        assert!(w.fetch.sent);
        assert_eq!(w.fires(t2 + secs(30)), Some(ReturnCode::HttpTimeout));
    }

    #[test]
    fn a_slow_first_address_falls_back_before_any_deadline() {
        let t0 = Instant::now();
        let mut w = Walk::new(t0);
        w.fetch.fallback = Some("192.0.2.1:80".parse().unwrap());
        w.enter(waiting("[2001:db8::1]:80"), t0);
        w.enter(FetchState::Connecting { conn: 1 }, t0);
        let fall_back = t0 + HAPPY_EYEBALLS_DELAY;
        assert_eq!(w.timers.next(), Some(fall_back));
        assert_eq!(w.timers.expired(fall_back), Some(Timer::HappyEyeballs));
        assert_eq!(w.timers.expired(t0 + secs(40)), Some(Timer::HappyEyeballs));
        // Connected in time: no fall back, and no connect deadline left.
        w.enter(send(1, Attempt::Fresh), t0);
        assert_eq!(w.timers.next(), Some(t0 + secs(30)));
    }

    #[test]
    fn a_reused_connection_has_only_the_overall_deadline() {
        let t0 = Instant::now();
        let mut w = Walk::new(t0);
        w.enter(waiting("192.0.2.1:80"), t0);
        w.enter(send(3, Attempt::Reused), t0 + secs(5));
        assert_eq!(w.fetch.marks.assigned, Some(t0 + secs(5)));
        assert_eq!(w.timers.get(Timer::Connect), None);
        assert_eq!(w.timers.next(), Some(t0 + secs(35)));
        assert_eq!(w.fires(t0 + secs(35)), Some(ReturnCode::HttpTimeout));
    }

    /// Each step of a proxy's handshake has its own deadline (the connect timeout), inside
    /// the overall one; any of them passing ends the fetch as the proxy's timeout.
    #[test]
    fn each_proxy_step_has_its_deadline() {
        use crate::proxy::{Proxy, ProxyStep};
        let t0 = Instant::now();
        let mut w = Walk::new(t0);
        w.fetch.proxy = Some(Box::new(crate::fetcher::fetch::Proxied {
            proxy: std::sync::Arc::new(Proxy::parse("socks5h://127.0.0.1:1").unwrap()),
            origin: crate::fetcher::fetch::Origin::Name("example.com".into(), 80),
            handshake: None,
        }));
        w.enter(waiting("127.0.0.1:1"), t0);
        w.enter(FetchState::Connecting { conn: 1 }, t0);
        assert_eq!(w.fires(t0 + secs(10)), Some(ReturnCode::ProxyTimeout));
        let step = |step| FetchState::Proxy { conn: 1, step };
        w.enter(step(ProxyStep::SocksGreeting), t0 + secs(2));
        assert_eq!(w.timers.get(Timer::Connect), None);
        assert_eq!(w.timers.next(), Some(t0 + secs(12)));
        w.enter(step(ProxyStep::SocksConnect), t0 + secs(5));
        assert_eq!(w.timers.next(), Some(t0 + secs(15)));
        assert_eq!(w.fires(t0 + secs(14)), None);
        assert_eq!(w.fires(t0 + secs(15)), Some(ReturnCode::ProxyTimeout));
        // Late in the overall deadline, a step gets what is left of it.
        w.enter(step(ProxyStep::SocksConnect), t0 + secs(25));
        assert_eq!(w.timers.next(), Some(t0 + secs(30)));
        assert_eq!(w.fires(t0 + secs(30)), Some(ReturnCode::ProxyTimeout));
        // The tunnel is open: only the overall deadline is left, and it is the site's.
        w.enter(send(1, Attempt::Fresh), t0 + secs(6));
        assert_eq!(w.fetch.marks.connected, Some(t0 + secs(6)));
        assert_eq!(w.timers.next(), Some(t0 + secs(30)));
        assert_eq!(w.fires(t0 + secs(30)), Some(ReturnCode::HttpTimeout));
    }

    #[test]
    fn back_in_the_queue_a_fetch_has_no_timer_and_keeps_its_lookup_mark() {
        let t0 = Instant::now();
        let mut w = Walk::new(t0);
        let attempt = Attempt::Reused;
        w.enter(waiting("192.0.2.1:80"), t0);
        w.enter(send(3, attempt), t0);
        w.enter(FetchState::HttpReceive { conn: 3, attempt }, t0);
        assert!(w.fetch.sent);
        // The kept-alive connection had been closed: retried on a fresh one.
        w.enter(waiting("192.0.2.1:80"), t0 + secs(1));
        assert_eq!(w.timers.next(), None);
        assert!(!w.fetch.sent);
        assert_eq!(w.fetch.marks.resolved, Some(t0));
    }
}
