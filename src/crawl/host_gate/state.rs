//! The host gate's state as bytes, so that a resumed crawl is as polite as the one it
//! continues and does not fetch every robots.txt again: the robots.txt cache, robots.txt
//! failure counts, hosts the address policy blocked, when each host may next be contacted
//! (a `Retry-After` wait included: the frontier's, given by the crawl), the hosts slowed
//! down by their 429s, and the cookie jar (`manners`).
//!
//! The crawl hands the encoding to the sink every
//! [`CrawlConfig::save_hosts_every`](crate::crawl::CrawlConfig::save_hosts_every) and at a
//! stop ([`Sink::hosts_saved`](crate::crawl::sink::Sink::hosts_saved)); the store keeps the
//! last one. Times are saved as what was left of them; a restore takes away the time that
//! passed since (measured by the caller on the wall clock). A host contacted after the last
//! save is not known: a restore keeps every host with a Crawl-delay that long away from its
//! start (it may have been contacted just before the stop), and the app holds the whole crawl
//! for `--delay` ([`Crawl::hold_until`](crate::crawl::Crawl::hold_until)).

use std::time::{Duration, Instant};

use super::HostGate;
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

/// What a restore gives back to the crawl: the origins restored, and the hosts' next
/// contacts as they were saved (what was left of each wait then), for the frontier.
pub(in crate::crawl) struct Restored<'a> {
    pub robots: usize,
    pub contacts: Vec<(&'a str, Duration)>,
}

/// `http://host:port` → `host` (as `Url::host_str` gives it, brackets kept for IPv6).
fn origin_host(origin: &str) -> &str {
    let rest = origin.split_once("://").map_or(origin, |(_, r)| r);
    rest.rsplit_once(':').map_or(rest, |(h, _)| h)
}

impl HostGate {
    /// Whether the state is due to be saved at `now` (then it is next due a period later).
    pub fn save_due(&mut self, now: Instant) -> bool {
        let Some(every) = self.save_every else {
            return false;
        };
        if self.next_save.is_some_and(|t| now < t) {
            return false;
        }
        self.next_save = Some(now + every);
        true
    }

    /// The state as of `now`, with the frontier's next `contacts` (host, time left).
    pub fn save(&mut self, now: Instant, contacts: &[(&str, Duration)]) -> &[u8] {
        let mut out = std::mem::take(&mut self.saved);
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
        put_varint(&mut out, contacts.len() as u64);
        for (host, left) in contacts {
            put_bytes(&mut out, host.as_bytes());
            put_varint(&mut out, left.as_millis() as u64);
        }
        self.manners.save(now, &mut out);
        self.saved = out;
        &self.saved
    }

    /// Restores a state saved by an earlier run `elapsed` ago, as of `now` (before the first
    /// fetch). Refused whole if it does not decode.
    pub fn restore<'a>(
        &mut self,
        state: &'a [u8],
        now: Instant,
        elapsed: Duration,
    ) -> Result<Restored<'a>, BadHostState> {
        let mut decoded = decode(state).ok_or(BadHostState)?;
        if decoded.version >= 2 {
            self.manners
                .restore(&mut decoded.manners, now)
                .filter(|()| decoded.manners.is_empty())
                .ok_or(BadHostState)?;
        }
        let robots = self
            .robots
            .restore(decoded.robots, now, elapsed)
            .ok_or(BadHostState)?;
        for (origin, n) in decoded.failures {
            self.robots_failures.insert(origin.to_string(), n);
        }
        for host in decoded.blocked {
            self.blocked_hosts.insert(host.to_string());
        }
        Ok(Restored {
            robots,
            contacts: decoded.contacts,
        })
    }

    /// The hosts whose robots.txt gives a Crawl-delay, with it (capped): contacted after the
    /// save, perhaps just before the stop, each waits it out from a restore.
    pub fn crawl_delay_hosts(&self) -> impl Iterator<Item = (&str, Duration)> + '_ {
        let max = self.max_crawl_delay;
        self.robots
            .crawl_delays()
            .map(move |(origin, delay)| (origin_host(origin), delay.min(max)))
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
