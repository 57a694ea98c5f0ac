//! The resolver's answer cache: names to their addresses (or their negative answer) until a
//! TTL runs out, bounded in entries.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::IpAddr;
use std::time::Instant;

use super::super::DnsError;

struct CacheEntry {
    result: Result<Vec<IpAddr>, DnsError>,
    expires: Instant,
    seq: u64,
}

/// A TTL cache bounded by capacity: when full, an expired entry goes first, else the oldest.
pub(super) struct Cache {
    capacity: usize,
    map: HashMap<String, CacheEntry>,
    by_expiry: BTreeSet<(Instant, u64)>,
    /// Insertion order: seq → name.
    by_age: BTreeMap<u64, String>,
    next_seq: u64,
}

impl Cache {
    pub(super) fn new(capacity: usize) -> Self {
        Cache {
            capacity,
            map: HashMap::new(),
            by_expiry: BTreeSet::new(),
            by_age: BTreeMap::new(),
            next_seq: 0,
        }
    }

    pub(super) fn get(
        &mut self,
        name: &str,
        now: Instant,
    ) -> Option<Result<Vec<IpAddr>, DnsError>> {
        let entry = self.map.get(name)?;
        if now >= entry.expires {
            self.remove(name);
            return None;
        }
        Some(entry.result.clone())
    }

    fn remove(&mut self, name: &str) {
        if let Some(e) = self.map.remove(name) {
            self.by_expiry.remove(&(e.expires, e.seq));
            self.by_age.remove(&e.seq);
        }
    }

    pub(super) fn insert(
        &mut self,
        name: String,
        result: Result<Vec<IpAddr>, DnsError>,
        expires: Instant,
        now: Instant,
    ) {
        if self.capacity == 0 || expires <= now {
            return;
        }
        self.remove(&name);
        // Bounded: each turn removes one entry, and the map holds at most `capacity`.
        while self.map.len() >= self.capacity {
            let victim = match self.by_expiry.first() {
                Some(&(t, seq)) if t <= now => seq,
                _ => match self.by_age.first_key_value() {
                    Some((&seq, _)) => seq,
                    None => break,
                },
            };
            let Some(victim) = self.by_age.get(&victim).cloned() else {
                break;
            };
            self.remove(&victim);
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.by_expiry.insert((expires, seq));
        self.by_age.insert(seq, name.clone());
        self.map.insert(
            name,
            CacheEntry {
                result,
                expires,
                seq,
            },
        );
    }
}
