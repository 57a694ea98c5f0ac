//! Buffers to receive responses into, for decoders whose own went out with a completion.
//!
//! A completion shares its raw response bytes (the decoder's buffer) with whoever keeps them,
//! the WARC writer above all, which stores them after the completion is recycled. The decoder
//! then goes back to its pool bare, and the buffer comes back later through the driver
//! ([`super::Crawler::give_receive_buffer`]). A bare decoder takes one of these when its
//! response begins to arrive, not when its fetch starts: a crawl has many more fetches waiting
//! for DNS or a connection than receiving, and a waiting fetch must not hold 64 KiB.

use crate::http::ResponseDecoder;

/// Most buffers held. A turn may begin a few hundred responses at once while the writer hands
/// buffers back one by one; with 64 the pool ran dry in such bursts (the bench allocated for
/// 9,000 of its 22,500 responses), with 256 only for each connection's first.
const MAX_BUFFERS: usize = 256;
/// Most bytes held, whatever the buffers' sizes.
const MAX_BYTES: usize = 16 << 20;

#[derive(Debug, Default)]
pub(super) struct ReceivePool {
    buffers: Vec<Vec<u8>>,
    bytes: usize,
    /// Responses that found neither a buffer of their decoder's nor one here.
    pub(super) allocated: u64,
}

impl ReceivePool {
    /// Whether [`Self::put`] would keep another buffer of `size` bytes.
    pub(super) fn wants(&self, size: usize) -> bool {
        self.buffers.len() < MAX_BUFFERS && self.bytes + size <= MAX_BYTES
    }

    /// Keeps `buf` if it is at least `min` and at most `max` bytes and there is room.
    pub(super) fn put(&mut self, mut buf: Vec<u8>, min: usize, max: usize) {
        let size = buf.capacity();
        if (min..=max).contains(&size) && self.wants(size) {
            buf.clear();
            self.bytes += size;
            self.buffers.push(buf);
        }
    }

    /// Gives `decoder` a buffer if it has none (a response is about to begin): one from the
    /// pool, or else counts the one it will allocate.
    pub(super) fn equip(&mut self, decoder: &mut ResponseDecoder) {
        if decoder.raw_capacity() > 0 {
            return;
        }
        match self.buffers.pop() {
            Some(buf) => {
                self.bytes -= buf.capacity();
                decoder.give_raw(buf);
            }
            None => self.allocated += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::Limits;

    #[test]
    fn a_bare_decoder_gets_a_pooled_buffer_and_one_with_a_buffer_keeps_its_own() {
        let mut pool = ReceivePool::default();
        pool.put(Vec::with_capacity(100), 1000, 10_000);
        pool.put(Vec::with_capacity(20_000), 1000, 10_000);
        assert!(
            pool.buffers.is_empty(),
            "too small and too large are dropped"
        );
        let mut buf = Vec::with_capacity(4000);
        buf.extend_from_slice(b"stale");
        let at = buf.as_ptr();
        pool.put(buf, 1000, 10_000);

        let mut d = ResponseDecoder::new(Limits::default());
        d.reset(false);
        assert_eq!(d.raw_capacity(), 0, "a new decoder has no buffer yet");
        pool.equip(&mut d);
        assert_eq!(d.raw_capacity(), 4000);
        assert!(d.raw().is_empty(), "given back empty");
        assert_eq!(pool.allocated, 0);
        assert_eq!(pool.bytes, 0);

        pool.put(Vec::with_capacity(5000), 1000, 10_000);
        pool.equip(&mut d);
        assert_eq!(d.raw_capacity(), 4000, "a decoder with a buffer keeps it");
        let own = d.take_raw();
        assert_eq!(own.as_ptr(), at);

        let mut bare = ResponseDecoder::new(Limits::default());
        bare.reset(false);
        pool.equip(&mut bare);
        assert_eq!(bare.raw_capacity(), 5000);
        let mut another = ResponseDecoder::new(Limits::default());
        another.reset(false);
        pool.equip(&mut another);
        assert_eq!(
            pool.allocated, 1,
            "the empty pool counts the allocation to come"
        );
    }

    #[test]
    fn the_pool_is_bounded_in_count_and_bytes() {
        let mut pool = ReceivePool::default();
        for _ in 0..MAX_BUFFERS + 10 {
            pool.put(Vec::with_capacity(1024), 1024, usize::MAX);
        }
        assert_eq!(pool.buffers.len(), MAX_BUFFERS);
        let mut pool = ReceivePool::default();
        for _ in 0..10 {
            pool.put(Vec::with_capacity(MAX_BYTES / 4), 1024, usize::MAX);
        }
        assert_eq!(pool.buffers.len(), 4);
        assert!(!pool.wants(1));
    }
}
