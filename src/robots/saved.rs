//! robots.txt rules and the per-origin cache as bytes, so a resumed crawl keeps what it
//! learnt instead of fetching every host's robots.txt again.
//!
//! Sans-IO like the rest of `robots`: bytes out, bytes in. Times are saved as what was left
//! of them at `now`; a restore takes away the time that passed in between (`elapsed`, which
//! the caller measures on the wall clock), so rules expire and back-offs end when they would
//! have. Decoding never panics: input that does not fit (lengths, counts, limits) is refused.

use std::time::{Duration, Instant};

use super::cache::State;
use super::{Robots, RobotsCache, Rule, MAX_PATTERN_BYTES, MAX_RULES};

/// Version of the encoding below.
const VERSION: u8 = 1;
const READY: u8 = 0;
const BACKOFF: u8 = 1;
/// A saved pattern area larger than parsing can produce (normalization at most triples
/// `MAX_ROBOTS_BYTES`) is refused.
const MAX_PATTERNS: usize = 3 * super::MAX_ROBOTS_BYTES + MAX_RULES;

fn put_u32(out: &mut Vec<u8>, v: usize) {
    out.extend_from_slice(&(v.min(u32::MAX as usize) as u32).to_le_bytes());
}

fn put_ms(out: &mut Vec<u8>, d: Duration) {
    out.extend_from_slice(&(d.as_millis().min(u64::MAX as u128) as u64).to_le_bytes());
}

fn take<'a>(input: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    if input.len() < n {
        return None;
    }
    let (head, rest) = input.split_at(n);
    *input = rest;
    Some(head)
}

fn get_u8(input: &mut &[u8]) -> Option<u8> {
    take(input, 1).map(|b| b[0])
}

fn get_u32(input: &mut &[u8]) -> Option<usize> {
    let b = take(input, 4)?;
    Some(u32::from_le_bytes(b.try_into().ok()?) as usize)
}

fn get_ms(input: &mut &[u8]) -> Option<Duration> {
    let b = take(input, 8)?;
    Some(Duration::from_millis(u64::from_le_bytes(
        b.try_into().ok()?,
    )))
}

impl Robots {
    /// Appends these rules' encoding to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        put_u32(out, self.patterns.len());
        out.extend_from_slice(&self.patterns);
        put_u32(out, self.rules.len());
        for r in &self.rules {
            put_u32(out, r.start);
            put_u32(out, r.len);
            out.push(u8::from(r.anchored) | (u8::from(r.allow) << 1));
            put_u32(out, r.priority);
        }
        match self.crawl_delay {
            Some(d) => {
                out.push(1);
                put_ms(out, d);
            }
            None => out.push(0),
        }
    }

    /// Reads rules written by [`Robots::encode`] from the front of `input`; `None` if they
    /// do not fit the limits parsing keeps (then nothing is trusted).
    pub fn decode(input: &mut &[u8]) -> Option<Robots> {
        let n = get_u32(input)?;
        if n > MAX_PATTERNS {
            return None;
        }
        let patterns = take(input, n)?.to_vec();
        let count = get_u32(input)?;
        if count > MAX_RULES {
            return None;
        }
        let mut rules = Vec::with_capacity(count);
        for _ in 0..count {
            let (start, len) = (get_u32(input)?, get_u32(input)?);
            let flags = get_u8(input)?;
            let priority = get_u32(input)?;
            if start.checked_add(len)? > patterns.len() || priority > MAX_PATTERN_BYTES + 1 {
                return None;
            }
            rules.push(Rule {
                start,
                len,
                anchored: flags & 1 != 0,
                allow: flags & 2 != 0,
                priority,
            });
        }
        let crawl_delay = match get_u8(input)? {
            0 => None,
            1 => Some(get_ms(input)?.min(super::MAX_CRAWL_DELAY)),
            _ => return None,
        };
        let mut robots = Robots {
            patterns,
            rules,
            crawl_delay,
        };
        // The first matching rule decides: the order is part of the meaning, so it is
        // re-established rather than trusted.
        robots.finish();
        Some(robots)
    }
}

impl RobotsCache {
    /// Appends the cache to `out`, oldest entry first: rules in force (or being refetched,
    /// saved as expired) and back-offs, each with what is left of its time at `now`. Origins
    /// whose first fetch is under way are left out: a restore fetches them again.
    pub fn save(&self, now: Instant, out: &mut Vec<u8>) {
        out.push(VERSION);
        let count_at = out.len();
        put_u32(out, 0);
        let mut count = 0;
        for origin in self.by_age.values() {
            let Some(entry) = self.entries.get(origin) else {
                continue;
            };
            let (robots, left, delay) = match &entry.state {
                State::Ready { robots, expires } => (Some(robots), *expires, None),
                State::Fetching {
                    stale: Some(robots),
                    ..
                } => (Some(robots), now, None),
                State::Fetching { stale: None, .. } => continue,
                State::Backoff { until, delay } => (None, *until, Some(*delay)),
            };
            put_u32(out, origin.len());
            out.extend_from_slice(origin.as_bytes());
            out.push(if robots.is_some() { READY } else { BACKOFF });
            put_ms(out, left.saturating_duration_since(now));
            if let Some(robots) = robots {
                robots.encode(out);
            }
            if let Some(delay) = delay {
                put_ms(out, delay);
            }
            count += 1;
        }
        out[count_at..count_at + 4].copy_from_slice(&(count as u32).to_le_bytes());
    }

    /// Loads entries written by [`RobotsCache::save`] `elapsed` ago into this cache, as of
    /// `now`; returns how many. Input that does not decode is refused whole (`None`) and the
    /// cache left as it was: the crawl then fetches those robots.txt files again.
    pub fn restore(&mut self, mut input: &[u8], now: Instant, elapsed: Duration) -> Option<usize> {
        let input = &mut input;
        if get_u8(input)? != VERSION {
            return None;
        }
        let count = get_u32(input)?;
        let mut states = Vec::new();
        for _ in 0..count {
            let n = get_u32(input)?;
            let origin = std::str::from_utf8(take(input, n)?).ok()?;
            let kind = get_u8(input)?;
            let left = get_ms(input)?.saturating_sub(elapsed).min(self.max_age);
            let at = now.checked_add(left).unwrap_or(now);
            let state = match kind {
                READY => State::Ready {
                    robots: Robots::decode(input)?,
                    expires: at,
                },
                BACKOFF => State::Backoff {
                    until: at,
                    delay: get_ms(input)?.min(self.max_age),
                },
                _ => return None,
            };
            states.push((origin, state));
        }
        let restored = states.len();
        for (origin, state) in states {
            self.remove(origin);
            self.insert(origin, state);
        }
        Some(restored)
    }

    /// Origins whose rules are known and give a Crawl-delay, with it.
    pub fn crawl_delays(&self) -> impl Iterator<Item = (&str, Duration)> {
        self.entries
            .iter()
            .filter_map(|(origin, e)| match &e.state {
                State::Ready { robots, .. }
                | State::Fetching {
                    stale: Some(robots),
                    ..
                } => Some((&**origin, robots.crawl_delay()?)),
                _ => None,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::robots::{Check, FetchResult};

    const BODY: &str = "User-agent: *\nDisallow: /private/\nAllow: /private/ok$\n\
                        Disallow: /*.pdf$\nCrawl-delay: 2.5\n";
    const PATHS: [&str; 7] = [
        "/",
        "/private/",
        "/private/ok",
        "/private/ok2",
        "/a.pdf",
        "/a.pdf?x",
        "/robots.txt",
    ];

    fn cache() -> RobotsCache {
        RobotsCache::new(
            "spinneret",
            Duration::from_secs(3600),
            Duration::from_secs(10),
            100,
        )
    }

    fn ok(body: &str) -> FetchResult {
        FetchResult::Status {
            status: 200,
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn rules_read_back_answer_as_the_parsed_ones() {
        let robots = Robots::parse(BODY.as_bytes(), "spinneret");
        let mut bytes = Vec::new();
        robots.encode(&mut bytes);
        let mut input = bytes.as_slice();
        let back = Robots::decode(&mut input).expect("decodes");
        assert!(input.is_empty());
        for p in PATHS {
            assert_eq!(back.is_allowed(p), robots.is_allowed(p), "{p}");
        }
        assert_eq!(back.crawl_delay(), Some(Duration::from_millis(2500)));
        assert_eq!(back.rule_count(), 3);
    }

    #[test]
    fn cut_or_damaged_input_is_refused_without_panicking() {
        let (t0, mut c) = (Instant::now(), cache());
        assert_eq!(c.check("http://a.test:80", "/", t0), Check::NeedFetch);
        c.fetch_done("http://a.test:80", ok(BODY), t0);
        let mut bytes = Vec::new();
        c.save(t0, &mut bytes);
        for cut in 0..bytes.len() {
            assert!(cache().restore(&bytes[..cut], t0, Duration::ZERO).is_none());
        }
        // A rule pointing past the patterns, a count over the limit.
        let robots = Robots::parse(BODY.as_bytes(), "spinneret");
        let mut one = Vec::new();
        robots.encode(&mut one);
        let rule_start = 4 + robots.patterns.len() + 4;
        one[rule_start..rule_start + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(Robots::decode(&mut one.as_slice()).is_none());
        let mut many = Vec::new();
        put_u32(&mut many, 0);
        put_u32(&mut many, MAX_RULES + 1);
        assert!(Robots::decode(&mut many.as_slice()).is_none());
    }

    #[test]
    fn a_restored_cache_answers_without_a_fetch_until_its_time_runs_out() {
        let (t0, mut c) = (Instant::now(), cache());
        for origin in ["http://a.test:80", "http://b.test:80", "http://c.test:80"] {
            assert_eq!(c.check(origin, "/", t0), Check::NeedFetch);
        }
        c.fetch_done("http://a.test:80", ok(BODY), t0);
        c.fetch_done("http://b.test:80", FetchResult::Unreachable, t0);
        // c.test's fetch is still under way: not saved.
        let mut bytes = Vec::new();
        c.save(t0 + Duration::from_secs(1), &mut bytes);

        // Restored 30 minutes later, in a process whose clock starts anew.
        let t1 = Instant::now() + Duration::from_secs(7);
        let mut r = cache();
        assert_eq!(r.restore(&bytes, t1, Duration::from_secs(1800)), Some(2));
        assert_eq!(
            r.check("http://a.test:80", "/private/x", t1),
            Check::Disallowed
        );
        assert_eq!(
            r.check("http://a.test:80", "/private/ok", t1),
            Check::Allowed
        );
        assert_eq!(
            r.crawl_delays().collect::<Vec<_>>(),
            [("http://a.test:80", Duration::from_millis(2500))]
        );
        // The back-off (10 s) had ended: one fetch is due; c.test is fetched again.
        assert_eq!(r.check("http://b.test:80", "/", t1), Check::NeedFetch);
        assert_eq!(r.check("http://c.test:80", "/", t1), Check::NeedFetch);
        // The rules had 3,599 s left at the save; 1,800 have passed.
        let later = t1 + Duration::from_secs(1799 - 5);
        assert_eq!(r.check("http://a.test:80", "/", later), Check::Allowed);
        let expired = t1 + Duration::from_secs(1799 + 5);
        assert_eq!(r.check("http://a.test:80", "/", expired), Check::NeedFetch);
        // While that refetch is under way, the old rules still answer.
        assert_eq!(
            r.check("http://a.test:80", "/private/x", expired),
            Check::Disallowed
        );
    }

    #[test]
    fn a_back_off_saved_runs_on_after_the_restore() {
        let (t0, mut c) = (Instant::now(), cache());
        assert_eq!(c.check("http://b.test:80", "/", t0), Check::NeedFetch);
        c.fetch_done("http://b.test:80", FetchResult::Unreachable, t0);
        let mut bytes = Vec::new();
        c.save(t0 + Duration::from_secs(2), &mut bytes);
        let t1 = Instant::now();
        let mut r = cache();
        assert_eq!(r.restore(&bytes, t1, Duration::from_secs(3)), Some(1));
        // 10 s back-off, 2 s gone at the save, 3 s while stopped: 5 s left.
        assert_eq!(r.check("http://b.test:80", "/", t1), Check::Pending);
        assert_eq!(
            r.next_retry("http://b.test:80"),
            Some(t1 + Duration::from_secs(5))
        );
        // The next failure doubles the saved delay.
        let t2 = t1 + Duration::from_secs(5);
        assert_eq!(r.check("http://b.test:80", "/", t2), Check::NeedFetch);
        r.fetch_done("http://b.test:80", FetchResult::Unreachable, t2);
        assert_eq!(
            r.next_retry("http://b.test:80"),
            Some(t2 + Duration::from_secs(20))
        );
    }
}
