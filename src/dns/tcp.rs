//! DNS over TCP framing (RFC 7766 §8, RFC 1035 §4.2.2): every message on the stream is
//! preceded by its length in two big-endian bytes.
//!
//! Sans-IO: [`encode`] writes a framed message; a [`FrameDecoder`] is fed whatever the socket
//! gave, in any pieces, and answers [`Status::Partial`] until one whole message is in. It never
//! holds more than the announced length, and refuses a length over its bound as soon as the two
//! length bytes are in, so a hostile server cannot make it buffer more than we would accept.
//! What a message says is `dns::message`'s job; when to ask over TCP is `dns::resolver`'s; the
//! socket is the event loop's (`fetcher::event_loop::dns_tcp`).

/// Bytes of the length prefix.
pub const LEN_PREFIX: usize = 2;

/// Why framing failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameError {
    /// A message to encode is longer than a 16-bit length can say.
    TooLong,
    /// The stream announced a message longer than the decoder's bound (the length it gave).
    Oversized(u16),
}

/// Appends `message` to `out` behind its length prefix.
pub fn encode(message: &[u8], out: &mut Vec<u8>) -> Result<(), FrameError> {
    let len = u16::try_from(message.len()).map_err(|_| FrameError::TooLong)?;
    out.reserve(LEN_PREFIX + message.len());
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(message);
    Ok(())
}

/// What one [`FrameDecoder::decode`] call got to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// A whole message is in ([`FrameDecoder::message`]); `consumed` bytes of the input were
    /// taken, the rest belongs to the next message.
    Complete { consumed: usize },
    /// All the input was taken and the message is not whole yet.
    Partial,
}

/// Reassembles length-prefixed messages from a byte stream cut anywhere.
#[derive(Debug)]
pub struct FrameDecoder {
    /// Longest message accepted (at most 65535, what the prefix can say).
    max: usize,
    /// The length prefix as far as it has arrived.
    prefix: [u8; LEN_PREFIX],
    prefix_len: usize,
    /// The message as far as it has arrived; never longer than the announced length.
    body: Vec<u8>,
    state: DecodeState,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DecodeState {
    /// Reading the prefix, then the body (its length known once `prefix_len == 2`).
    Reading,
    /// `body` is a whole message; the next `decode` starts the next one.
    Complete,
    /// The stream announced too long a message: sticky, the stream cannot be resynchronized.
    Failed(FrameError),
}

impl FrameDecoder {
    /// A decoder accepting messages of at most `max` bytes (capped at 65535).
    pub fn new(max: usize) -> FrameDecoder {
        FrameDecoder {
            max: max.min(usize::from(u16::MAX)),
            prefix: [0; LEN_PREFIX],
            prefix_len: 0,
            body: Vec::new(),
            state: DecodeState::Reading,
        }
    }

    /// Takes bytes from `input` up to the end of the current message.
    pub fn decode(&mut self, input: &[u8]) -> Result<Status, FrameError> {
        match self.state {
            DecodeState::Failed(e) => return Err(e),
            DecodeState::Complete => self.reset(),
            DecodeState::Reading => {}
        }
        let mut taken = 0;
        if self.prefix_len < LEN_PREFIX {
            let n = (LEN_PREFIX - self.prefix_len).min(input.len());
            self.prefix[self.prefix_len..self.prefix_len + n].copy_from_slice(&input[..n]);
            self.prefix_len += n;
            taken = n;
            if self.prefix_len < LEN_PREFIX {
                return Ok(Status::Partial);
            }
            let len = u16::from_be_bytes(self.prefix);
            if usize::from(len) > self.max {
                let e = FrameError::Oversized(len);
                self.state = DecodeState::Failed(e);
                return Err(e);
            }
            self.body.reserve_exact(usize::from(len));
        }
        let want = usize::from(u16::from_be_bytes(self.prefix)) - self.body.len();
        let n = want.min(input.len() - taken);
        self.body.extend_from_slice(&input[taken..taken + n]);
        taken += n;
        if n < want {
            return Ok(Status::Partial);
        }
        self.state = DecodeState::Complete;
        Ok(Status::Complete { consumed: taken })
    }

    /// The whole message, after `decode` said [`Status::Complete`] (until the next `decode`).
    pub fn message(&self) -> Option<&[u8]> {
        (self.state == DecodeState::Complete).then_some(&self.body[..])
    }

    /// Bytes held for the message under way (the prefix included).
    pub fn buffered(&self) -> usize {
        self.prefix_len + self.body.len()
    }

    /// Forgets the message under way (and a failure), keeping the buffer's capacity.
    pub fn reset(&mut self) {
        self.prefix_len = 0;
        self.body.clear();
        self.state = DecodeState::Reading;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The naive reference: the whole stream at once, message by message.
    fn naive(stream: &[u8]) -> (Vec<Vec<u8>>, usize) {
        let mut out = Vec::new();
        let mut pos = 0;
        while pos + 2 <= stream.len() {
            let len = usize::from(u16::from_be_bytes([stream[pos], stream[pos + 1]]));
            let Some(m) = stream.get(pos + 2..pos + 2 + len) else {
                break;
            };
            out.push(m.to_vec());
            pos += 2 + len;
        }
        (out, stream.len() - pos)
    }

    /// Feeds `stream` cut at `cuts` (positions, any order) and collects the messages, checking
    /// the buffer never holds more than a prefix and the longest message.
    fn pieces(stream: &[u8], cuts: &[usize], max: usize) -> (Vec<Vec<u8>>, usize) {
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (stream.len() + 1)).collect();
        cuts.push(0);
        cuts.push(stream.len());
        cuts.sort_unstable();
        let mut d = FrameDecoder::new(max);
        let mut out = Vec::new();
        for w in cuts.windows(2) {
            let mut rest = &stream[w[0]..w[1]];
            // Bounded: each Complete consumes at least the two prefix bytes.
            while let Status::Complete { consumed } = d.decode(rest).unwrap() {
                out.push(d.message().unwrap().to_vec());
                rest = &rest[consumed..];
                assert!(d.buffered() <= LEN_PREFIX + max);
                if rest.is_empty() {
                    break;
                }
            }
            assert!(d.buffered() <= LEN_PREFIX + max);
        }
        let left = if d.message().is_some() {
            0
        } else {
            d.buffered()
        };
        (out, left)
    }

    #[test]
    fn encode_prefixes_the_length() {
        let mut out = vec![9];
        encode(b"abc", &mut out).unwrap();
        assert_eq!(out, [9, 0, 3, b'a', b'b', b'c']);
        encode(&[], &mut out).unwrap();
        assert_eq!(out[6..], [0, 0]);
        let big = vec![0; 65_536];
        assert_eq!(encode(&big, &mut out), Err(FrameError::TooLong));
        assert_eq!(out.len(), 8, "nothing written on error");
        encode(&big[1..], &mut out).unwrap();
        assert_eq!(out[8..10], [0xff, 0xff]);
    }

    #[test]
    fn byte_at_a_time_and_all_at_once() {
        let mut stream = Vec::new();
        for m in [&b"hello"[..], b"", b"x"] {
            encode(m, &mut stream).unwrap();
        }
        stream.push(0); // half a prefix
        let want = vec![b"hello".to_vec(), Vec::new(), b"x".to_vec()];
        let every: Vec<usize> = (0..stream.len()).collect();
        assert_eq!(pieces(&stream, &every, 100), (want.clone(), 1));
        assert_eq!(pieces(&stream, &[], 100), (want, 1));
    }

    #[test]
    fn an_announced_length_over_the_bound_is_refused_at_once_and_sticks() {
        let mut d = FrameDecoder::new(512);
        assert_eq!(d.decode(&[0x02]), Ok(Status::Partial));
        assert_eq!(d.decode(&[0x01, 0, 0]), Err(FrameError::Oversized(513)));
        assert_eq!(d.buffered(), 2, "nothing of the body was taken");
        assert_eq!(d.decode(&[0; 10]), Err(FrameError::Oversized(513)));
        assert_eq!(d.message(), None);
        d.reset();
        assert_eq!(d.decode(&[0x02, 0x00]), Ok(Status::Partial));
        // The bound is capped at what the prefix can say.
        assert_eq!(FrameDecoder::new(usize::MAX).max, 65_535);
    }

    #[test]
    fn message_is_only_there_when_complete() {
        let mut d = FrameDecoder::new(10);
        assert_eq!(d.message(), None);
        assert_eq!(d.decode(&[0, 2, 7]), Ok(Status::Partial));
        assert_eq!(d.message(), None);
        assert_eq!(d.decode(&[8, 0, 1]), Ok(Status::Complete { consumed: 1 }));
        assert_eq!(d.message(), Some(&[7, 8][..]));
        // The next call starts the next message.
        assert_eq!(d.decode(&[0, 1]), Ok(Status::Partial));
        assert_eq!(d.message(), None);
        assert_eq!(d.decode(&[]), Ok(Status::Partial));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]

        /// Any split of an encoded stream decodes to the same messages as the whole stream.
        #[test]
        fn any_split_decodes_the_same(
            messages in proptest::collection::vec(
                proptest::collection::vec(any::<u8>(), 0..300), 0..6),
            tail in proptest::collection::vec(any::<u8>(), 0..4),
            cuts in proptest::collection::vec(any::<usize>(), 0..12),
        ) {
            let mut stream = Vec::new();
            for m in &messages {
                encode(m, &mut stream).unwrap();
            }
            // A tail that announces less than 300 bytes but stops short.
            if tail.len() > 2 {
                stream.extend_from_slice(&[0, 200]);
                stream.extend_from_slice(&tail);
            }
            let got = pieces(&stream, &cuts, 300);
            prop_assert_eq!(&got.0, &messages);
            prop_assert_eq!(got, naive(&stream));
        }

        /// Arbitrary bytes: a message or a refusal, never more buffered than the bound allows.
        #[test]
        fn arbitrary_bytes_stay_bounded(
            bytes in proptest::collection::vec(any::<u8>(), 0..2000),
            max in 0usize..1000,
        ) {
            let mut d = FrameDecoder::new(max);
            let mut rest = &bytes[..];
            for _ in 0..bytes.len() + 1 {
                match d.decode(rest) {
                    Ok(Status::Complete { consumed }) => {
                        prop_assert!(d.message().unwrap().len() <= max);
                        rest = &rest[consumed..];
                    }
                    Ok(Status::Partial) | Err(_) => break,
                }
                prop_assert!(d.buffered() <= LEN_PREFIX + max);
            }
        }
    }
}
