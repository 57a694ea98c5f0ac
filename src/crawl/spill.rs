//! A FIFO queue that keeps only its ends in memory (Mercator, IIR §20.2.3): the head (next to
//! be taken) and the tail (being added to) are in RAM, the middle is in batches in a
//! [`SpillStore`] — the store's segment files in a crawl, memory in tests. The frontier's
//! queues are [`SpillQueue`]s, so a frontier of hundreds of millions of URLs costs disk, not
//! RAM. The crawl layer touches no files: the store implements [`SpillStore`].

use std::collections::VecDeque;
use std::io;

/// Items per spilled batch: large enough that one read brings a useful run of URLs back.
pub const BATCH_ITEMS: usize = 256;

/// Where spilled batches go.
pub trait SpillStore: Send {
    /// Stores one batch (the encoded items, concatenated) and returns its handle.
    fn write_batch(&mut self, bytes: &[u8]) -> io::Result<BatchRef>;
    /// Reads a batch back into `out` (cleared first); the batch is then released.
    fn take_batch(&mut self, batch: BatchRef, out: &mut Vec<u8>) -> io::Result<()>;
}

/// Where a batch is: opaque to the queue, meaningful to its store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchRef {
    pub file: u64,
    pub offset: u64,
    pub len: u64,
}

/// An item the queue can spill.
pub trait Spillable: Sized {
    fn encode(&self, out: &mut Vec<u8>);
    /// Decodes one item from the front of `input`, advancing it; `None` if malformed.
    fn decode(input: &mut &[u8]) -> Option<Self>;
}

/// Batches kept in memory: for tests, and for crawls without a spill directory.
#[derive(Debug, Default)]
pub struct MemorySpill {
    batches: Vec<Option<Vec<u8>>>,
    /// Bytes held now.
    pub bytes: usize,
}

impl SpillStore for MemorySpill {
    fn write_batch(&mut self, bytes: &[u8]) -> io::Result<BatchRef> {
        self.bytes += bytes.len();
        self.batches.push(Some(bytes.to_vec()));
        Ok(BatchRef {
            file: 0,
            offset: self.batches.len() as u64 - 1,
            len: bytes.len() as u64,
        })
    }

    fn take_batch(&mut self, batch: BatchRef, out: &mut Vec<u8>) -> io::Result<()> {
        let slot = usize::try_from(batch.offset)
            .ok()
            .and_then(|i| self.batches.get_mut(i))
            .and_then(Option::take)
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no such batch"))?;
        self.bytes -= slot.len();
        out.clear();
        out.extend_from_slice(&slot);
        Ok(())
    }
}

/// A FIFO whose middle may live in a [`SpillStore`].
#[derive(Debug)]
pub struct SpillQueue<T> {
    head: VecDeque<T>,
    /// Spilled batches, oldest first, with their item counts.
    middle: VecDeque<(BatchRef, usize)>,
    tail: VecDeque<T>,
    len: usize,
}

impl<T> Default for SpillQueue<T> {
    fn default() -> Self {
        SpillQueue {
            head: VecDeque::new(),
            middle: VecDeque::new(),
            tail: VecDeque::new(),
            len: 0,
        }
    }
}

impl<T: Spillable> SpillQueue<T> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Items held in memory.
    pub fn in_ram(&self) -> usize {
        self.head.len() + self.tail.len()
    }

    pub fn push_back(&mut self, item: T) {
        self.len += 1;
        if self.middle.is_empty() && self.tail.is_empty() {
            self.head.push_back(item);
        } else {
            self.tail.push_back(item);
        }
    }

    pub fn push_front(&mut self, item: T) {
        self.len += 1;
        self.head.push_front(item);
    }

    /// Moves whole batches of the newest in-memory items to `store`, keeping the oldest
    /// `keep_head` in memory; returns how many items left memory.
    pub fn spill(
        &mut self,
        store: &mut dyn SpillStore,
        keep_head: usize,
        buf: &mut Vec<u8>,
    ) -> io::Result<usize> {
        // Items past keep_head in the head join the tail, so the queue order stays
        // head → middle → tail.
        if self.middle.is_empty() && self.head.len() > keep_head {
            let excess = self.head.split_off(keep_head);
            let mut tail = std::mem::replace(&mut self.tail, excess);
            self.tail.append(&mut tail);
        }
        let mut moved = 0;
        while self.tail.len() >= BATCH_ITEMS {
            buf.clear();
            for item in self.tail.iter().take(BATCH_ITEMS) {
                item.encode(buf);
            }
            let batch = store.write_batch(buf)?;
            self.tail.drain(..BATCH_ITEMS);
            self.middle.push_back((batch, BATCH_ITEMS));
            moved += BATCH_ITEMS;
        }
        Ok(moved)
    }

    /// The oldest item, reading the next spilled batch back when the head runs out.
    pub fn pop_front(
        &mut self,
        store: &mut dyn SpillStore,
        buf: &mut Vec<u8>,
    ) -> io::Result<Option<T>> {
        if self.head.is_empty() {
            match self.middle.pop_front() {
                Some((batch, count)) => {
                    store.take_batch(batch, buf)?;
                    let mut input = &buf[..];
                    for _ in 0..count {
                        let item = T::decode(&mut input).ok_or_else(|| {
                            io::Error::new(io::ErrorKind::InvalidData, "corrupt spilled batch")
                        })?;
                        self.head.push_back(item);
                    }
                }
                None => std::mem::swap(&mut self.head, &mut self.tail),
            }
        }
        let item = self.head.pop_front();
        if item.is_some() {
            self.len -= 1;
        }
        Ok(item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{get_varint, put_varint};

    impl Spillable for u32 {
        fn encode(&self, out: &mut Vec<u8>) {
            put_varint(out, u64::from(*self));
        }
        fn decode(input: &mut &[u8]) -> Option<u32> {
            get_varint(input).and_then(|v| u32::try_from(v).ok())
        }
    }

    #[test]
    fn order_survives_spilling_at_any_point() {
        let mut store = MemorySpill::default();
        let mut buf = Vec::new();
        let mut q: SpillQueue<u32> = SpillQueue::default();
        let mut next_in = 0u32;
        let mut next_out = 0u32;
        // Interleave pushes, spills and pops; the queue must stay FIFO throughout.
        for round in 0..50u32 {
            for _ in 0..(round * 37 % 700) {
                q.push_back(next_in);
                next_in += 1;
            }
            q.spill(&mut store, 16, &mut buf).unwrap();
            // At most a read-back batch at the head and less than a batch at the tail.
            assert!(
                q.in_ram() < 2 * BATCH_ITEMS + 16,
                "{} in memory",
                q.in_ram()
            );
            for _ in 0..(round * 53 % 500) {
                match q.pop_front(&mut store, &mut buf).unwrap() {
                    Some(x) => {
                        assert_eq!(x, next_out);
                        next_out += 1;
                    }
                    None => break,
                }
            }
            assert_eq!(q.len() as u32, next_in - next_out);
        }
        while let Some(x) = q.pop_front(&mut store, &mut buf).unwrap() {
            assert_eq!(x, next_out);
            next_out += 1;
        }
        assert_eq!(next_out, next_in);
        assert_eq!(store.bytes, 0, "every batch read back is released");
    }

    #[test]
    fn spilled_queue_keeps_little_in_memory() {
        let mut store = MemorySpill::default();
        let mut buf = Vec::new();
        let mut q: SpillQueue<u32> = SpillQueue::default();
        for i in 0..100_000 {
            q.push_back(i);
            if i % 1000 == 0 {
                q.spill(&mut store, 8, &mut buf).unwrap();
            }
        }
        q.spill(&mut store, 8, &mut buf).unwrap();
        assert!(q.in_ram() < 8 + BATCH_ITEMS, "{}", q.in_ram());
        q.push_front(7);
        assert_eq!(q.pop_front(&mut store, &mut buf).unwrap(), Some(7));
        assert_eq!(q.pop_front(&mut store, &mut buf).unwrap(), Some(0));
        assert_eq!(q.len(), 99_999);
    }
}
