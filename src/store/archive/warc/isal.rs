//! ISA-L's deflate (`igzip`: hand-written SIMD assembly) at its fastest level, behind a safe
//! surface: the engine of `--warc-gzip-level 1`. On the bench's pages and on real HTML it is
//! about 1.8× as fast as zlib-rs level 1 and its output 10–17 % smaller: its default Huffman
//! code is trained on text, where zlib's fastest level uses deflate's fixed code
//! (`benches/deflate.rs` measures both).
//!
//! Each piece of input becomes its own run of deflate blocks ([`IsalDeflate::chunk`]):
//! compressed without history from earlier pieces, byte-aligned and not final, so pieces
//! join by concatenation and a stream ends with [`super::stored::finish`]. Stateless compression is what
//! makes that cheap (no window to carry), and it lets each piece choose: ISA-L's own code
//! for large inputs, deflate's fixed code for small ones (no code table to send), stored
//! blocks when compressing would grow the data (images, archives).
//!
//! Two builds of it: the system's ISA-L (Debian's `libisal-dev`), which build.rs finds and
//! reaches through a small C shim, in the default build when present; or ISA-L built from
//! source with the opt-in `isal` feature (nasm and the autotools). Either sets
//! `cfg(isal_engine)`.
//!
//! The only `unsafe` of the store: the stream's input and output pointers are set from
//! slices just before each call and cleared after it, so the stream never holds a pointer
//! between calls.

use std::io;

use super::stored::{push_stored, stored_size};

/// Inputs shorter than this use deflate's fixed code: ISA-L's own code costs ~85 bytes of
/// table per block, more than it saves on a record this small (a request record: 660 bytes
/// → 532 with the fixed code, 615 with ISA-L's).
const SMALL_INPUT: usize = 1024;
/// Largest piece compressed at once (ISA-L's lengths are `u32`); longer input is split.
const MAX_PIECE: usize = 4 << 20;

/// ISA-L level 0 stateless compression, its state reused from piece to piece.
pub(super) struct IsalDeflate {
    stream: stream::Stream,
}

impl IsalDeflate {
    pub(super) fn new() -> IsalDeflate {
        IsalDeflate {
            stream: stream::Stream::new(),
        }
    }

    /// Appends `data` to `out` as byte-aligned deflate blocks that are not final and need
    /// no history: stored when compressing would not make it smaller.
    pub(super) fn chunk(&mut self, data: &[u8], out: &mut Vec<u8>) -> io::Result<()> {
        for piece in data.chunks(MAX_PIECE) {
            self.piece(piece, out)?;
        }
        Ok(())
    }

    fn piece(&mut self, data: &[u8], out: &mut Vec<u8>) -> io::Result<()> {
        let at = out.len();
        let room = stored_size(data.len());
        // ISA-L writes into the spare capacity: no zeroing of a page-sized buffer per piece.
        out.reserve(room);
        let spare = out.spare_capacity_mut().as_mut_ptr().cast::<u8>();
        // SAFETY: `spare` is the start of at least `room` bytes of `out`'s spare capacity
        // (reserved above), live and unaliased for the call; ISA-L only writes there.
        match unsafe {
            self.stream
                .compress(data, spare, room, data.len() < SMALL_INPUT)
        } {
            Ok(Some(written)) => {
                // SAFETY: ISA-L wrote (initialised) the `written` bytes after `at`.
                unsafe { out.set_len(at + written) };
                Ok(())
            }
            // Compressed, it would be at least as long as stored: store it.
            Ok(None) => {
                push_stored(data, false, out);
                Ok(())
            }
            Err(code) => Err(io::Error::other(format!(
                "deflate failed (ISA-L code {code})"
            ))),
        }
    }
}

/// ISA-L built from source (`--features isal`, through `isal-sys`'s bindings).
#[cfg(feature = "isal")]
mod stream {
    use isal_sys::igzip_lib as isal;
    use std::ptr;

    pub(super) struct Stream {
        // Boxed: the state holds a history buffer and the hash table (about 90 KB).
        stream: Box<isal::isal_zstream>,
    }

    // The stream holds no pointer between calls (see the module doc) and level 0 uses no
    // `level_buf`, so moving it to another thread moves all of its state with it.
    unsafe impl Send for Stream {}

    impl Stream {
        pub(super) fn new() -> Stream {
            // SAFETY: `isal_zstream` is a plain C struct for which all zeroes is a valid
            // value (null pointers, zero counters); the stateless init sets what it uses.
            Stream {
                stream: Box::new(unsafe { std::mem::zeroed() }),
            }
        }

        /// Compresses `data` into the `room` bytes at `out`: `Ok(None)` when they would not
        /// fit, `Err(ISA-L's code)` on another failure.
        ///
        /// # Safety
        /// `out` must be valid for writes of `room` bytes.
        pub(super) unsafe fn compress(
            &mut self,
            data: &[u8],
            out: *mut u8,
            room: usize,
            fixed: bool,
        ) -> Result<Option<usize>, i32> {
            let s = &mut *self.stream;
            // SAFETY: initialises the stream's fields for one stateless call.
            unsafe { isal::isal_deflate_stateless_init(s) };
            s.level = 0;
            s.level_buf = ptr::null_mut();
            s.level_buf_size = 0;
            s.gzip_flag = isal::IGZIP_DEFLATE as u16;
            s.end_of_stream = 0;
            // Byte-aligns the end, so the next piece (or the final block) can follow.
            s.flush = isal::FULL_FLUSH as u16;
            let code = if fixed {
                isal::IGZIP_HUFFTABLE_STATIC
            } else {
                isal::IGZIP_HUFFTABLE_DEFAULT
            };
            // SAFETY: a built-in code needs no table pointer.
            let rc = unsafe { isal::isal_deflate_set_hufftables(s, ptr::null_mut(), code as i32) };
            if rc != isal::COMP_OK as i32 {
                return Err(rc);
            }
            // ISA-L reads through `next_in` only; the `*mut` is its C signature.
            s.next_in = data.as_ptr().cast_mut();
            s.avail_in = data.len() as u32;
            s.next_out = out;
            s.avail_out = room as u32;
            // SAFETY: `next_in`/`avail_in` describe `data`, `next_out`/`avail_out` the
            // caller's `room` bytes.
            let rc = unsafe { isal::isal_deflate_stateless(s) };
            let written = room - s.avail_out as usize;
            s.next_in = ptr::null_mut();
            s.avail_in = 0;
            s.next_out = ptr::null_mut();
            s.avail_out = 0;
            if rc == isal::COMP_OK as i32 && written < room {
                Ok(Some(written))
            } else if rc == isal::COMP_OK as i32 || rc == isal::STATELESS_OVERFLOW {
                Ok(None)
            } else {
                Err(rc)
            }
        }
    }
}

/// The system's ISA-L (found by build.rs), through `csrc/isal_shim.c`: the shim owns the
/// stream, so no C struct layout is assumed here.
#[cfg(not(feature = "isal"))]
mod stream {
    use std::ffi::c_void;

    extern "C" {
        fn spinneret_isal_new() -> *mut c_void;
        fn spinneret_isal_free(stream: *mut c_void);
        fn spinneret_isal_chunk(
            stream: *mut c_void,
            data: *const u8,
            len: u32,
            out: *mut u8,
            cap: u32,
            fixed: i32,
            code: *mut i32,
        ) -> std::ffi::c_long;
    }

    pub(super) struct Stream {
        stream: *mut c_void,
    }

    // The shim's stream holds no pointer between calls, so it moves between threads whole.
    unsafe impl Send for Stream {}

    impl Stream {
        pub(super) fn new() -> Stream {
            // SAFETY: allocates a zeroed stream (null when out of memory: checked per call).
            Stream {
                stream: unsafe { spinneret_isal_new() },
            }
        }

        /// As the `isal` feature's: `Ok(None)` when the output would not fit in `room`.
        ///
        /// # Safety
        /// `out` must be valid for writes of `room` bytes.
        pub(super) unsafe fn compress(
            &mut self,
            data: &[u8],
            out: *mut u8,
            room: usize,
            fixed: bool,
        ) -> Result<Option<usize>, i32> {
            if self.stream.is_null() {
                return Err(-1);
            }
            let mut code = 0;
            // SAFETY: `data` is readable for its length, `out` writable for `room` bytes
            // (the caller's promise); both fit in u32 (pieces are at most 4 MiB).
            let n = unsafe {
                spinneret_isal_chunk(
                    self.stream,
                    data.as_ptr(),
                    data.len() as u32,
                    out,
                    room as u32,
                    i32::from(fixed),
                    &mut code,
                )
            };
            match n {
                n if n >= 0 => Ok(Some(n as usize)),
                -1 => Ok(None),
                _ => Err(code),
            }
        }
    }

    impl Drop for Stream {
        fn drop(&mut self) {
            // SAFETY: made by `spinneret_isal_new` and freed once.
            unsafe { spinneret_isal_free(self.stream) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::stored::{finish, MAX_STORED};
    use super::*;
    use crate::store::test_data::noise;
    use flate2::{Decompress, FlushDecompress, Status};
    use proptest::prelude::*;

    /// Inflates one raw deflate stream that must end exactly at the end of `z`.
    fn inflate(z: &[u8], expect_len: usize) -> Vec<u8> {
        let mut d = Decompress::new(false);
        let mut out = vec![0u8; expect_len + 1];
        let status = d.decompress(z, &mut out, FlushDecompress::Finish).unwrap();
        assert_eq!(status, Status::StreamEnd, "the stream ends");
        assert_eq!(
            d.total_in() as usize,
            z.len(),
            "nothing after the stream's end"
        );
        out.truncate(d.total_out() as usize);
        out
    }

    fn text(len: usize) -> Vec<u8> {
        let words = [
            "<p>crawler ",
            "archive ",
            "politeness ",
            "the ",
            "<a href=\"/x\">",
            "WARC ",
        ];
        let mut n = noise(7, len).into_iter();
        let mut t = Vec::with_capacity(len + 16);
        while t.len() < len {
            t.extend_from_slice(words[n.next().unwrap_or(0) as usize % words.len()].as_bytes());
        }
        t.truncate(len);
        t
    }

    #[test]
    fn pieces_join_into_one_stream_whatever_their_content_and_size() {
        let mut d = IsalDeflate::new();
        let sizes = [
            0,
            1,
            5,
            SMALL_INPUT - 1,
            SMALL_INPUT,
            MAX_STORED,
            MAX_STORED + 1,
            300_000,
        ];
        for &size in &sizes {
            for (kind, piece) in [("noise", noise(size as u64, size)), ("text", text(size))] {
                let mut z = Vec::new();
                let mut want = Vec::new();
                // Three pieces and a tail: each piece stands alone, so they concatenate.
                for _ in 0..3 {
                    d.chunk(&piece, &mut z).unwrap();
                    want.extend_from_slice(&piece);
                }
                finish(b"\r\n\r\n", &mut z);
                want.extend_from_slice(b"\r\n\r\n");
                assert_eq!(inflate(&z, want.len()), want, "{kind} of {size} bytes");
                // Never more than stored blocks would take (plus the final block).
                assert!(
                    z.len() <= 3 * stored_size(size) + 9,
                    "{kind} {size}: {}",
                    z.len()
                );
                if kind == "text" && size >= SMALL_INPUT {
                    assert!(
                        z.len() < want.len() / 2,
                        "text compresses: {size} → {}",
                        z.len()
                    );
                }
            }
        }
    }

    #[test]
    fn an_empty_stream_and_a_stored_tail_are_valid() {
        let mut z = Vec::new();
        finish(&[], &mut z);
        assert_eq!(inflate(&z, 0), b"");
        let mut z = Vec::new();
        IsalDeflate::new().chunk(b"", &mut z).unwrap();
        assert!(z.is_empty(), "an empty piece adds nothing");
        finish(b"tail", &mut z);
        assert_eq!(inflate(&z, 4), b"tail");
    }

    #[test]
    fn a_piece_longer_than_the_largest_call_is_split() {
        let data = text(MAX_PIECE + 12_345);
        let mut z = Vec::new();
        IsalDeflate::new().chunk(&data, &mut z).unwrap();
        finish(&[], &mut z);
        assert_eq!(inflate(&z, data.len()), data);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// Any bytes, cut anywhere into pieces (text-like runs and noise mixed), with any
        /// short tail: the pieces and the tail inflate back to exactly their concatenation.
        #[test]
        fn any_pieces_inflate_to_their_concatenation(
            runs in prop::collection::vec((any::<bool>(), 0usize..3000, any::<u64>()), 0..6),
            cuts in prop::collection::vec(0usize..20_000, 0..6),
            tail in prop::collection::vec(any::<u8>(), 0..40),
        ) {
            let mut data = Vec::new();
            for (is_text, len, seed) in runs {
                data.extend(if is_text { text(len) } else { noise(seed, len) });
            }
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (data.len() + 1)).collect();
            cuts.sort_unstable();
            let mut d = IsalDeflate::new();
            let mut z = Vec::new();
            let mut from = 0;
            for cut in cuts.into_iter().chain([data.len()]) {
                d.chunk(&data[from..cut], &mut z).unwrap();
                from = cut;
            }
            finish(&tail, &mut z);
            data.extend_from_slice(&tail);
            prop_assert_eq!(inflate(&z, data.len()), data);
        }
    }
}
