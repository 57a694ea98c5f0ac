//! The host splitter (IIR §20.2, Fig. 20.2): which partition of a crawl owns a URL, and the
//! batches of URLs on their way to the other partitions.
//!
//! A partition is one event loop (`--loops`) or one node (`--cluster`). Every URL belongs to
//! the partition that owns its host, chosen by rendezvous hashing of the host name: all of a
//! host's URLs meet in one frontier, so politeness, robots.txt and the per-host caps stay with
//! one owner, and the partition's URL-seen set is authoritative for the URLs it owns. The
//! hash is our own (FNV-1a with a final mix), fixed forever: nodes on different machines and
//! builds must agree on it.
//!
//! URLs for another partition wait in that partition's outbox until it holds
//! [`SplitterConfig::max_urls`] URLs or its oldest is [`SplitterConfig::max_age`] old (Croft
//! §3.2.7: URLs are exchanged in batches, the cost of a message shared by many URLs). The
//! splitter does no I/O: the driver polls full or due batches ([`Splitter::poll_batch`]) and
//! carries them.

use std::time::{Duration, Instant};

use crate::codec::{get_bytes, put_bytes};

/// Default [`SplitterConfig::max_urls`].
pub const BATCH_URLS: usize = 500;
/// Default [`SplitterConfig::max_age`].
pub const BATCH_AGE: Duration = Duration::from_millis(100);
/// Most partitions a crawl may have (loops × nodes).
pub const MAX_PARTITIONS: u32 = 1024;

#[derive(Clone, Copy, Debug)]
pub struct SplitterConfig {
    /// Partitions in the crawl (≥ 1).
    pub partitions: u32,
    /// This one (< `partitions`).
    pub me: u32,
    /// URLs that make a batch full.
    pub max_urls: usize,
    /// Age of its oldest URL at which a batch leaves, full or not.
    pub max_age: Duration,
}

impl SplitterConfig {
    pub fn new(partitions: u32, me: u32) -> SplitterConfig {
        SplitterConfig {
            partitions,
            me,
            max_urls: BATCH_URLS,
            max_age: BATCH_AGE,
        }
    }
}

/// URLs on their way to one partition: each the crawl's encoding of a frontier entry,
/// length-prefixed ([`Batch::entries`] reads them back).
#[derive(Debug, Default)]
pub struct Batch {
    pub to: u32,
    pub bytes: Vec<u8>,
}

impl Batch {
    /// The entries, in order; a torn tail is ignored.
    pub fn entries(&self) -> impl Iterator<Item = &[u8]> {
        let mut input = self.bytes.as_slice();
        std::iter::from_fn(move || get_bytes(&mut input))
    }
}

struct Outbox {
    batch: Batch,
    urls: usize,
    /// When the oldest URL in it was added.
    since: Option<Instant>,
}

pub struct Splitter {
    config: SplitterConfig,
    outboxes: Vec<Outbox>,
}

/// The partition that owns `host` among `partitions`: the highest-scoring by rendezvous
/// hashing, so adding a partition moves only the hosts the new one wins.
pub fn owner(host: &str, partitions: u32) -> u32 {
    if partitions <= 1 {
        return 0;
    }
    let base = fnv1a(host.as_bytes());
    (0..partitions)
        .max_by_key(|&k| mix(base ^ u64::from(k).wrapping_mul(0x9e37_79b9_7f4a_7c15)))
        .unwrap_or(0)
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// splitmix64's finalizer: spreads every input bit over the output.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Splitter {
    pub fn new(config: SplitterConfig) -> Splitter {
        let outboxes = (0..config.partitions)
            .map(|to| Outbox {
                batch: Batch {
                    to,
                    ..Batch::default()
                },
                urls: 0,
                since: None,
            })
            .collect();
        Splitter { config, outboxes }
    }

    pub fn me(&self) -> u32 {
        self.config.me
    }

    /// The partition owning `host`.
    pub fn owner(&self, host: &str) -> u32 {
        owner(host, self.config.partitions)
    }

    /// Puts an encoded entry in the outbox of partition `to` (not this one).
    pub fn forward(&mut self, to: u32, entry: &[u8], now: Instant) {
        let Some(out) = self.outboxes.get_mut(to as usize) else {
            return;
        };
        put_bytes(&mut out.batch.bytes, entry);
        out.urls += 1;
        out.since.get_or_insert(now);
    }

    /// A batch that is full or due at `now` (all of them, whatever their age, with `flush`).
    pub fn poll_batch(&mut self, now: Instant, flush: bool) -> Option<Batch> {
        let (max_urls, max_age) = (self.config.max_urls, self.config.max_age);
        let out = self.outboxes.iter_mut().find(|o| {
            o.urls > 0
                && (flush
                    || o.urls >= max_urls
                    || o.since
                        .is_some_and(|t| now.saturating_duration_since(t) >= max_age))
        })?;
        out.since = None;
        out.urls = 0;
        let to = out.batch.to;
        Some(std::mem::replace(
            &mut out.batch,
            Batch {
                to,
                ..Batch::default()
            },
        ))
    }

    /// When the oldest waiting batch falls due, if any waits.
    pub fn next_due(&self) -> Option<Instant> {
        self.outboxes
            .iter()
            .filter_map(|o| o.since)
            .min()
            .map(|t| t + self.config.max_age)
    }

    /// Whether URLs wait in an outbox.
    pub fn has_pending(&self) -> bool {
        self.outboxes.iter().any(|o| o.urls > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_are_stable_spread_and_move_little_when_a_partition_is_added() {
        // Fixed forever: other nodes and later builds must agree.
        assert_eq!(owner("example.com", 1), 0);
        let hosts: Vec<String> = (0..3000).map(|i| format!("h{i}.test")).collect();
        let mut per = [0usize; 3];
        for h in &hosts {
            per[owner(h, 3) as usize] += 1;
        }
        for n in per {
            assert!((800..1200).contains(&n), "uneven split {per:?}");
        }
        let moved = hosts.iter().filter(|h| owner(h, 3) != owner(h, 4)).count();
        // Rendezvous: only the hosts the fourth partition wins move (about a quarter).
        assert!((600..900).contains(&moved), "{moved} hosts moved");
        for h in &hosts {
            let (a, b) = (owner(h, 3), owner(h, 4));
            assert!(a == b || b == 3, "{h} moved between old partitions");
        }
    }

    #[test]
    fn batches_leave_when_full_or_old_and_carry_their_entries_in_order() {
        let t0 = Instant::now();
        let mut s = Splitter::new(SplitterConfig {
            max_urls: 3,
            max_age: Duration::from_millis(100),
            ..SplitterConfig::new(3, 0)
        });
        s.forward(1, b"a", t0);
        s.forward(2, b"x", t0);
        s.forward(1, b"b", t0);
        assert!(s.poll_batch(t0, false).is_none());
        s.forward(1, b"c", t0);
        let b = s.poll_batch(t0, false).expect("full batch");
        assert_eq!(b.to, 1);
        assert_eq!(b.entries().collect::<Vec<_>>(), vec![&b"a"[..], b"b", b"c"]);
        assert_eq!(s.next_due(), Some(t0 + Duration::from_millis(100)));
        assert!(s
            .poll_batch(t0 + Duration::from_millis(99), false)
            .is_none());
        let late = s
            .poll_batch(t0 + Duration::from_millis(100), false)
            .unwrap();
        assert_eq!((late.to, late.entries().count()), (2, 1));
        assert!(!s.has_pending());
        s.forward(2, b"y", t0);
        assert_eq!(s.poll_batch(t0, true).map(|b| b.entries().count()), Some(1));
        assert!(s.poll_batch(t0, true).is_none());
    }
}
