//! A response's raw bytes, shared without a copy between the loop and whoever keeps them (the
//! WARC writer, which stores them after the completion is recycled), that go back to the loop
//! that received them when their last holder lets go: the loop receives later responses into
//! them instead of allocating a buffer per response.

use std::fmt;
use std::ops::Deref;
use std::sync::mpsc::SyncSender;

/// Bytes in a buffer that returns home when dropped (put it in an `Arc` to share it).
pub struct SharedBytes {
    bytes: Vec<u8>,
    /// Where the buffer goes when dropped: the receive pool of the loop that filled it. `None`
    /// (a buffer not worth keeping): freed.
    home: Option<SyncSender<Vec<u8>>>,
}

impl SharedBytes {
    pub(crate) fn new(bytes: Vec<u8>, home: Option<SyncSender<Vec<u8>>>) -> SharedBytes {
        SharedBytes { bytes, home }
    }
}

impl Deref for SharedBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.bytes
    }
}

impl Drop for SharedBytes {
    fn drop(&mut self) {
        if let Some(home) = self.home.take() {
            // A full pool, or a loop that has ended: the buffer is freed instead.
            let _ = home.try_send(std::mem::take(&mut self.bytes));
        }
    }
}

impl fmt::Debug for SharedBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedBytes")
            .field("len", &self.bytes.len())
            .field("returns", &self.home.is_some())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::sync::Arc;

    /// The buffer goes home from its last holder only, whichever holder that is, and is the
    /// same buffer; without a home it is just freed.
    #[test]
    fn the_last_holder_sends_the_buffer_home() {
        let (home, returned) = mpsc::sync_channel(4);
        let mut buf = Vec::with_capacity(1000);
        buf.extend_from_slice(b"HTTP/1.1 200 OK\r\n\r\n");
        let at = buf.as_ptr();
        let shared = Arc::new(SharedBytes::new(buf, Some(home.clone())));
        assert_eq!(&shared[..], b"HTTP/1.1 200 OK\r\n\r\n");
        let writer = std::thread::spawn({
            let held = shared.clone();
            move || drop(held)
        });
        writer.join().unwrap();
        assert!(returned.try_recv().is_err(), "the loop still holds it");
        drop(shared);
        let back = returned.try_recv().expect("sent home");
        assert_eq!(back.as_ptr(), at, "the same buffer");
        assert_eq!(back.capacity(), 1000);

        drop(SharedBytes::new(vec![1, 2, 3], None));
        assert!(returned.try_recv().is_err(), "no home: freed");
        drop(returned);
        drop(SharedBytes::new(vec![1, 2, 3], Some(home)));
    }
}
