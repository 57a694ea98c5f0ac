//! Receiving straight into the decoder's raw buffer: the caller reads into
//! [`ResponseDecoder::recv_room`] and hands the count to
//! [`ResponseDecoder::process_received`], and the bytes are kept where they landed instead of
//! being read into a scratch buffer and copied. Offered where bytes are kept exactly as they
//! arrive — the start of a response and a `Content-Length` body — which is where nearly all
//! bytes of a crawl go; everywhere else (chunk framing, interim heads, a head split over
//! reads) the bytes are copied out and go through [`ResponseDecoder::process`], so the two
//! entry points give the same results for the same bytes (tests.rs checks every split).

use std::mem::MaybeUninit;

use super::{clamp, Body, HttpError, Progress, ResponseDecoder, State};

impl ResponseDecoder {
    /// Room to read the next bytes into, after the raw bytes, when they would be kept as they
    /// arrive: at a response's start (up to `max` bytes), or in a `Content-Length` body that is
    /// being kept (its rest and one byte more, so that bytes past the response show, up to
    /// `max`). `None`: read elsewhere and call [`Self::process`].
    pub fn recv_room(&mut self, max: usize) -> Option<&mut [MaybeUninit<u8>]> {
        if max == 0 {
            return None;
        }
        let want = match self.state {
            State::Head { scan_from: 0 } if self.buf.is_empty() => max,
            State::Body(Body::Length { remaining }) if self.retain_body => {
                clamp(remaining, max - 1) + 1
            }
            _ => return None,
        };
        self.buf.reserve(want);
        Some(&mut self.buf.spare_capacity_mut()[..want])
    }

    /// Takes `n` bytes that a read put at the start of the room [`Self::recv_room`] just gave:
    /// the same result as [`Self::process`] of those bytes.
    ///
    /// # Safety
    /// The last call on this decoder was `recv_room`, it returned room for at least `n` bytes,
    /// and the first `n` of them were written.
    pub unsafe fn process_received(&mut self, n: usize) -> Result<(Progress, usize), HttpError> {
        let start = self.buf.len();
        debug_assert!(n <= self.buf.capacity() - start);
        if n == 0 {
            return self.process(&[]);
        }
        self.received_any = true;
        match self.state {
            State::Body(Body::Length { .. }) => self.length_body_in_place(start, n),
            _ => {
                debug_assert!(start == 0 && self.state == State::Head { scan_from: 0 });
                // SAFETY: the caller wrote these n bytes after the (empty) raw bytes.
                unsafe { self.buf.set_len(n) };
                self.head_in_place(n)
            }
        }
    }

    /// Takes `bytes` as reads into [`Self::recv_room`] would bring them (copied into the room
    /// where it is offered, through [`Self::process`] where not): what the unit tests and the
    /// fuzz target compare with `process` alone.
    #[doc(hidden)]
    pub fn process_as_received(&mut self, bytes: &[u8]) -> Result<(Progress, usize), HttpError> {
        if bytes.is_empty() {
            return self.process(bytes);
        }
        let mut used = 0;
        // Bounded: each round takes at least one byte or returns.
        for _ in 0..bytes.len() {
            let rest = &bytes[used..];
            let Some(room) = self.recv_room(rest.len()) else {
                let (progress, n) = self.process(rest)?;
                return Ok((progress, used + n));
            };
            let k = room.len().min(rest.len());
            for (slot, &b) in room.iter_mut().zip(&rest[..k]) {
                slot.write(b);
            }
            // SAFETY: `recv_room` was the last call and the first k bytes of its room were
            // just written.
            let (progress, n) = unsafe { self.process_received(k) }?;
            used += n;
            if progress == Progress::Complete || used == bytes.len() {
                return Ok((progress, used));
            }
        }
        unreachable!("every round takes a byte, or returns")
    }

    /// A response's first read, all of it in the raw buffer (`n` bytes): a whole head that
    /// starts it is parsed where it lies and a `Content-Length` body after it stays there too;
    /// anything else goes through `process`.
    fn head_in_place(&mut self, n: usize) -> Result<(Progress, usize), HttpError> {
        let Some(end) = self.whole_head(&self.buf) else {
            return self.process_copied(0, n);
        };
        // The bytes after the head stay initialised past the length while the head is parsed
        // (parsing only reads the buffer; an interim head clears it, which writes nothing).
        self.buf.truncate(end);
        if let Err(e) = self.finish_head() {
            self.state = State::Failed(e);
            return Err(e);
        }
        match self.state {
            State::Done => Ok((Progress::Complete, end)),
            State::Body(Body::Length { .. }) => {
                let (progress, used) = self.length_body_in_place(end, n - end)?;
                Ok((progress, end + used))
            }
            // Chunked, close-delimited, or an interim head (the raw bytes were cleared).
            _ => self.process_copied(end, n),
        }
    }

    /// `n` bytes of a `Content-Length` body lie after the raw bytes, which end at `at`: keeps
    /// what belongs to the body (up to the body limit), leaves the rest out.
    fn length_body_in_place(
        &mut self,
        at: usize,
        n: usize,
    ) -> Result<(Progress, usize), HttpError> {
        let State::Body(Body::Length { remaining }) = self.state else {
            unreachable!("only called in a Content-Length body");
        };
        debug_assert_eq!(at, self.buf.len());
        let take = self.length_take(remaining, n);
        // SAFETY: the caller wrote n bytes after `at`, within the capacity, and `kept` <= n.
        unsafe { self.buf.set_len(at + take.kept()) };
        match self.length_taken(remaining, take) {
            Ok(take) if self.state == State::Done => Ok((Progress::Complete, take)),
            Ok(take) => Ok((Progress::NeedMore, take)),
            Err(e) => {
                self.state = State::Failed(e);
                Err(e)
            }
        }
    }

    /// The received bytes `from..to` of the buffer (past the raw bytes, which end at or
    /// before `from`), copied out and processed as `process` takes bytes; the bytes used are
    /// counted from the start of the read, as if `from` bytes before them were used.
    fn process_copied(&mut self, from: usize, to: usize) -> Result<(Progress, usize), HttpError> {
        // SAFETY: `from..to` was written by the read and nothing has written to the buffer's
        // memory since (the raw bytes' length only shrank, which writes nothing).
        let bytes = unsafe { std::slice::from_raw_parts(self.buf.as_ptr().add(from), to - from) };
        // Once per response at most (its first read): chunk framing, a close-delimited body,
        // an interim head or a head split over reads.
        let rest = bytes.to_vec();
        self.buf.truncate(from);
        let (progress, used) = self.process(&rest)?;
        Ok((progress, from + used))
    }
}
