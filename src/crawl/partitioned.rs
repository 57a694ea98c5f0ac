//! A [`Crawl`] as one partition of a partitioned crawl (`--loops`, a cluster node), and
//! continuing a stopped crawl from its journal: forwarding URLs of hosts other partitions
//! own, receiving theirs, and restoring what the journal says was seen and queued. Both
//! meet here because a resume re-forwards what was in flight to another partition.

use std::time::Instant;

use url::Url;

use super::canon::Canon;
use super::entry::Entry;
use super::sink::{Hop, Sink, Via};
use super::spill::Spillable;
use super::splitter::{self, Batch, SplitterConfig};
use super::Crawl;
use crate::codec::get_bytes;
use crate::fetcher::PayloadDigest;

/// A journal URL's partition among `partitions` local ones (the crawl that
/// [`Crawl::owner_of`] names) and its URL-seen key (`canon`'s, the crawl's): what a
/// checkpoint files it under.
pub fn partition_key(url: &str, partitions: u32, canon: &Canon) -> Option<(u32, u64)> {
    let url = Url::parse(url).ok()?;
    let part = splitter::owner(url.host_str().unwrap_or_default(), partitions);
    Some((part, canon.url_key(&url)))
}

impl<S: Sink> Crawl<S> {
    /// Makes this crawl one partition of a partitioned crawl (call before adding seeds).
    pub fn partition(&mut self, config: SplitterConfig) {
        self.admission.partition(config);
    }

    /// The partition that owns `url`'s host (0 when the crawl is not partitioned).
    pub fn owner_of(&self, url: &Url) -> u32 {
        self.admission.owner_of(url)
    }

    /// A batch for another partition that is full or due (every waiting one with `flush`).
    pub fn poll_batch(&mut self, now: Instant, flush: bool) -> Option<Batch> {
        self.admission.poll_batch(now, flush)
    }

    /// When the next waiting batch falls due.
    pub fn next_batch_due(&self) -> Option<Instant> {
        self.admission.next_batch_due()
    }

    /// Whether URLs wait for another partition.
    pub fn has_outgoing(&self) -> bool {
        self.admission.has_outgoing()
    }

    /// A batch this partition sent is safely with its owner (a cluster node's batch is in
    /// the owner's stream): its URLs are released from this partition's journal.
    pub fn batch_delivered(&mut self, batch: &Batch) {
        for entry in batch.entries() {
            let mut input = entry;
            if let Some(url) = get_bytes(&mut input).and_then(|b| std::str::from_utf8(b).ok()) {
                self.sink.released(url);
            }
        }
    }

    /// URLs from another partition, for hosts this one owns: queued unless seen. `journal`:
    /// whether this partition journals their admission (a cluster node, whose sender
    /// releases them once delivered) or the sender's record stands (loops sharing one
    /// journal). A seed is checked here, where its refusal is logged once; the sender's
    /// filter passed the rest, but the per-host cap is this partition's to apply.
    pub fn receive(&mut self, batch: &Batch, journal: bool) {
        for bytes in batch.entries() {
            let mut input = bytes;
            let Some(entry) = Entry::decode(&mut input) else {
                continue; // not from a partition of this build: nothing to queue
            };
            self.counters.urls_received += 1;
            if !self.admission.first_seen(&entry.url) {
                self.counters.received_duplicates += 1;
                continue;
            }
            let verdict = if entry.hop == Hop::Seed && entry.depth == 0 {
                self.admission.check_seed(&entry.url)
            } else {
                self.admission.check_host_cap(&entry.url)
            };
            if let Err(reason) = verdict {
                if entry.hop == Hop::Seed {
                    let code = reason.return_code();
                    self.log_unfetched(entry.url.as_str(), Via::seed(), code, None);
                } else {
                    self.sink.released(entry.url.as_str());
                }
                continue;
            }
            if journal {
                self.sink.admitted(entry.url.as_str(), bytes);
            }
            self.admission.admitted_here(&entry.url);
            self.counters.urls_admitted += 1;
            self.push_entry(entry);
        }
    }

    /// A seed of a resumed crawl: it defines the scope again, but is not queued (the journal
    /// says whether it still is).
    pub fn add_scope_seed(&mut self, url: &Url) {
        self.admission.add_to_scope(url);
        self.auth.add_seed(url);
    }

    /// Continuing a crawl stopped earlier (call these before the first `next_fetch`,
    /// instead of adding the seeds again): a URL it admitted is seen.
    pub fn restore_seen(&mut self, url: &str) {
        if let Ok(url) = Url::parse(url) {
            self.admission.first_seen(&url);
        }
    }

    /// ...an entry it admitted and did not end (as given to [`Sink::admitted`]) is queued
    /// again. `false` if the entry does not decode (it is dropped).
    pub fn restore_queued(&mut self, bytes: &[u8]) -> bool {
        let mut input = bytes;
        match Entry::decode(&mut input) {
            Some(entry) if !self.admission.owns(&entry.url) => {
                // Forwarded before the stop, and not known to have arrived: send it again
                // (its owner's URL-seen set drops it if it had).
                self.admission
                    .forward_again(bytes, &entry.url, self.last_now);
                self.counters.urls_forwarded += 1;
                true
            }
            Some(entry) => {
                self.admission.admitted_here(&entry.url);
                self.counters.urls_admitted += 1;
                self.push_entry(entry);
                true
            }
            None => false,
        }
    }

    /// ...keys of its URL-seen set, from a checkpoint, in increasing order (before any
    /// [`Self::restore_seen`]).
    pub fn restore_seen_sorted(&mut self, keys: &[u64]) {
        self.admission.restore_seen_sorted(keys);
    }

    /// ...a payload it fetched is content seen.
    pub fn restore_digest(&mut self, digest: PayloadDigest) {
        self.content.restore_digest(digest);
    }
}
