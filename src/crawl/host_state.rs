//! A crawl's per-host state as bytes, so that a resumed crawl is as polite as the one it
//! continues and does not fetch every robots.txt again: the robots.txt cache, robots.txt
//! failure counts, hosts the address policy blocked, when each host may next be contacted
//! (a `Retry-After` wait included), the hosts slowed down by their 429s, and the cookie jar
//! (`manners`).
//!
//! The crawl hands its encoding to the sink every [`CrawlConfig::save_hosts_every`](super::CrawlConfig::save_hosts_every) and at a
//! stop ([`Sink::hosts_saved`]); the store keeps the last one. Times are saved as what was
//! left of them; a restore takes away the time that passed since (measured by the caller on
//! the wall clock). A host contacted after the last save is not known: a restore keeps every
//! host with a Crawl-delay that long away from its start (it may have been contacted just
//! before the stop), and the app holds the whole crawl for `--delay`
//! ([`Crawl::hold_until`]).

use std::time::{Duration, Instant};

use super::{Crawl, Sink};
use crate::codec::{get_bytes, get_varint, put_bytes, put_varint};

/// Version of the encoding below. Version 1 (before the cookies and slowed hosts) is still
/// read.
const VERSION: u64 = 2;

/// What a restore found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostsRestored {
    /// Origins whose robots.txt rules (or back-off) were restored.
    pub robots: usize,
    /// Hosts given a next-contact time.
    pub next_contacts: usize,
}

/// The saved state did not decode (written by another version, or damaged): nothing of it was
/// used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BadHostState;

/// `http://host:port` → `host` (as `Url::host_str` gives it, brackets kept for IPv6).
fn origin_host(origin: &str) -> &str {
    let rest = origin.split_once("://").map_or(origin, |(_, r)| r);
    rest.rsplit_once(':').map_or(rest, |(h, _)| h)
}

impl<S: Sink> Crawl<S> {
    /// Saves the per-host state now if it is due.
    pub(super) fn save_hosts_if_due(&mut self, now: Instant) {
        let Some(every) = self.config.save_hosts_every else {
            return;
        };
        if self.next_hosts_save.is_some_and(|t| now < t) {
            return;
        }
        self.next_hosts_save = Some(now + every);
        self.save_hosts(now);
    }

    /// Encodes the per-host state as of `now` and hands it to the sink.
    pub(super) fn save_hosts(&mut self, now: Instant) {
        let mut out = std::mem::take(&mut self.hosts_buf);
        out.clear();
        put_varint(&mut out, VERSION);
        let mut robots = Vec::new();
        self.robots.save(now, &mut robots);
        put_bytes(&mut out, &robots);
        put_varint(&mut out, self.robots_failures.len() as u64);
        for (origin, n) in &self.robots_failures {
            put_bytes(&mut out, origin.as_bytes());
            put_varint(&mut out, u64::from(*n));
        }
        put_varint(&mut out, self.blocked_hosts.len() as u64);
        for host in &self.blocked_hosts {
            put_bytes(&mut out, host.as_bytes());
        }
        let contacts: Vec<(&str, Duration)> = self.frontier.next_contacts(now).collect();
        put_varint(&mut out, contacts.len() as u64);
        for (host, left) in contacts {
            put_bytes(&mut out, host.as_bytes());
            put_varint(&mut out, left.as_millis() as u64);
        }
        self.manners.save(now, &mut out);
        if let Err(e) = self.sink.hosts_saved(&out) {
            self.io_error.get_or_insert(e);
        }
        self.hosts_buf = out;
    }

    /// Restores per-host state saved by an earlier run `elapsed` ago, as of `now` (before
    /// the first `next_fetch`). Refused whole if it does not decode.
    pub fn restore_hosts(
        &mut self,
        state: &[u8],
        now: Instant,
        elapsed: Duration,
    ) -> Result<HostsRestored, BadHostState> {
        let mut decoded = decode(state).ok_or(BadHostState)?;
        if decoded.version >= 2 {
            self.manners
                .restore(&mut decoded.manners, now)
                .filter(|()| decoded.manners.is_empty())
                .ok_or(BadHostState)?;
        }
        let mut restored = HostsRestored {
            robots: self
                .robots
                .restore(decoded.robots, now, elapsed)
                .ok_or(BadHostState)?,
            next_contacts: 0,
        };
        for (origin, n) in decoded.failures {
            self.robots_failures.insert(origin.to_string(), n);
        }
        for host in decoded.blocked {
            self.blocked_hosts.insert(host.to_string());
        }
        for (host, left) in decoded.contacts {
            if let Some(left) = left.checked_sub(elapsed).filter(|d| !d.is_zero()) {
                self.frontier.not_before(host, now + left);
                restored.next_contacts += 1;
            }
        }
        // Contacted after the save, perhaps just before the stop: a Crawl-delay host waits
        // it out from the restore.
        let max = self.config.max_crawl_delay;
        for (origin, delay) in self.robots.crawl_delays() {
            self.frontier
                .not_before(origin_host(origin), now + delay.min(max));
        }
        Ok(restored)
    }
}

struct Decoded<'a> {
    version: u64,
    robots: &'a [u8],
    failures: Vec<(&'a str, u8)>,
    blocked: Vec<&'a str>,
    contacts: Vec<(&'a str, Duration)>,
    /// Version 2 on: what `Manners::restore` reads.
    manners: &'a [u8],
}

fn get_str<'a>(input: &mut &'a [u8]) -> Option<&'a str> {
    std::str::from_utf8(get_bytes(input)?).ok()
}

/// A count that cannot exceed what is left of the input (each item takes a byte at least),
/// so a damaged count cannot make a restore reserve memory it does not need.
fn get_count(input: &mut &[u8]) -> Option<usize> {
    let n = usize::try_from(get_varint(input)?).ok()?;
    (n <= input.len()).then_some(n)
}

fn decode(mut input: &[u8]) -> Option<Decoded<'_>> {
    let input = &mut input;
    let version = get_varint(input)?;
    if !(1..=VERSION).contains(&version) {
        return None;
    }
    let robots = get_bytes(input)?;
    let n = get_count(input)?;
    let mut failures = Vec::with_capacity(n);
    for _ in 0..n {
        let origin = get_str(input)?;
        failures.push((origin, u8::try_from(get_varint(input)?).ok()?));
    }
    let n = get_count(input)?;
    let mut blocked = Vec::with_capacity(n);
    for _ in 0..n {
        blocked.push(get_str(input)?);
    }
    let n = get_count(input)?;
    let mut contacts = Vec::with_capacity(n);
    for _ in 0..n {
        let host = get_str(input)?;
        contacts.push((host, Duration::from_millis(get_varint(input)?)));
    }
    if version == 1 && !input.is_empty() {
        return None;
    }
    Some(Decoded {
        version,
        robots,
        failures,
        blocked,
        contacts,
        manners: input,
    })
}

#[cfg(test)]
mod tests {
    use super::origin_host;

    #[test]
    fn an_origin_s_host_is_the_frontier_s_key() {
        assert_eq!(origin_host("http://a.test:80"), "a.test");
        assert_eq!(origin_host("https://[::1]:8443"), "[::1]");
        assert_eq!(origin_host("http://a.test"), "a.test");
    }
}
