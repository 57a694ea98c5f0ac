//! Buffers to receive responses into, for decoders whose own went out with a completion.
//!
//! A completion shares its raw response bytes (the decoder's buffer) with whoever keeps them,
//! the WARC writer above all, which stores them after the completion is recycled. The decoder
//! then goes back to its pool bare; the buffer, made [`SharedBytes`] by [`ReceivePool::share`],
//! comes back here when its last holder lets go. A bare decoder takes one of these when its
//! response begins to arrive, not when its fetch starts: a crawl has many more fetches waiting
//! for DNS or a connection than receiving, and a waiting fetch must not hold 64 KiB.

use std::sync::mpsc::{self, Receiver, SyncSender};

use crate::fetcher::SharedBytes;
use crate::http::ResponseDecoder;

/// Most buffers held: one per connection that may be receiving (every connection may finish
/// and begin again within a turn or two, while the writer hands buffers back one by one: a
/// pool of 64 ran dry so, allocating for 9,000 of the bench's 22,500 responses, one of 256 for
/// 2,000–3,000 with 512 connections), up to this many.
const MAX_BUFFERS: usize = 512;
/// Fewest buffers held, however few connections.
const MIN_BUFFERS: usize = 16;

#[derive(Debug)]
pub(super) struct ReceivePool {
    /// Buffers come home here (a bounded channel: the last holder may be another thread).
    home: SyncSender<Vec<u8>>,
    returned: Receiver<Vec<u8>>,
    /// Buffers of these capacities come home: a response's first read reserves the smallest,
    /// and one at most twice that keeps the pool within `MAX_BUFFERS` × 128 KiB (64 MiB; with
    /// responses of up to ~60 KB, 32 MiB).
    sizes: std::ops::RangeInclusive<usize>,
    /// Responses that found neither a buffer of their decoder's nor one here.
    pub(super) allocated: u64,
}

impl ReceivePool {
    /// A pool for `conns` connections, whose responses begin with reads of `read_size`.
    pub(super) fn new(conns: usize, read_size: usize) -> ReceivePool {
        let (home, returned) = mpsc::sync_channel(conns.clamp(MIN_BUFFERS, MAX_BUFFERS));
        ReceivePool {
            home,
            returned,
            sizes: read_size..=2 * read_size,
            allocated: 0,
        }
    }

    /// Shares a decoder's buffer: it comes back here when its last holder drops it, if it is a
    /// size worth keeping.
    pub(super) fn share(&self, bytes: Vec<u8>) -> SharedBytes {
        let home = self
            .sizes
            .contains(&bytes.capacity())
            .then(|| self.home.clone());
        SharedBytes::new(bytes, home)
    }

    /// Gives `decoder` a buffer if it has none (a response is about to begin): one that came
    /// back, or else counts the one it will allocate.
    pub(super) fn equip(&mut self, decoder: &mut ResponseDecoder) {
        if decoder.raw_capacity() > 0 {
            return;
        }
        match self.returned.try_recv() {
            Ok(buf) => decoder.give_raw(buf),
            Err(_) => self.allocated += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::Limits;
    use std::sync::Arc;

    fn bare_decoder() -> ResponseDecoder {
        let mut d = ResponseDecoder::new(Limits::default());
        d.reset(false);
        d
    }

    #[test]
    fn a_bare_decoder_gets_a_returned_buffer_and_one_with_a_buffer_keeps_its_own() {
        let mut pool = ReceivePool::new(4, 1000);
        drop(pool.share(Vec::with_capacity(100)));
        drop(pool.share(Vec::with_capacity(2001)));
        let mut d = bare_decoder();
        pool.equip(&mut d);
        assert_eq!(
            (d.raw_capacity(), pool.allocated),
            (0, 1),
            "too small and too large are not kept"
        );

        let mut buf = Vec::with_capacity(1500);
        buf.extend_from_slice(b"stale");
        let at = buf.as_ptr();
        let shared = Arc::new(pool.share(buf));
        let held = shared.clone();
        drop(shared);
        let mut d = bare_decoder();
        pool.equip(&mut d);
        assert_eq!(d.raw_capacity(), 0, "still held");
        drop(held);
        pool.equip(&mut d);
        assert_eq!(d.raw_capacity(), 1500);
        assert!(d.raw().is_empty(), "given back empty");
        assert_eq!(pool.allocated, 2);

        drop(pool.share(Vec::with_capacity(1200)));
        pool.equip(&mut d);
        assert_eq!(d.raw_capacity(), 1500, "a decoder with a buffer keeps it");
        let own = d.take_raw();
        assert_eq!(own.as_ptr(), at);
        let mut bare = bare_decoder();
        pool.equip(&mut bare);
        assert_eq!(bare.raw_capacity(), 1200);
    }

    #[test]
    fn the_pool_is_bounded() {
        let mut pool = ReceivePool::new(100, 1024);
        for _ in 0..110 {
            drop(pool.share(Vec::with_capacity(1024)));
        }
        let mut taken = 0;
        loop {
            let mut d = bare_decoder();
            pool.equip(&mut d);
            if d.raw_capacity() == 0 {
                break;
            }
            taken += 1;
        }
        assert_eq!(taken, 100, "one per connection");
        let mut pool = ReceivePool::new(1, 1024);
        for _ in 0..MIN_BUFFERS + 10 {
            drop(pool.share(Vec::with_capacity(1024)));
        }
        let mut d = bare_decoder();
        for _ in 0..MIN_BUFFERS {
            pool.equip(&mut d);
            assert!(d.take_raw().capacity() > 0);
        }
        pool.equip(&mut d);
        assert_eq!(d.raw_capacity(), 0, "at least {MIN_BUFFERS}, no more");
    }
}
