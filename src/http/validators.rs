//! Validators (RFC 9110 §8.8): what a response said to identify its representation (`ETag`,
//! `Last-Modified`), kept to ask next time whether it changed (`If-None-Match`,
//! `If-Modified-Since`, §13.1); a `304 Not Modified` answer says it did not.
//!
//! Only what can be sent back is kept: a value within [`MAX_VALIDATOR_BYTES`] with no byte
//! that could break a header line. The crawl database stores them; the request writer sends
//! them. A strong or weak entity tag is sent as given (a weak one still matches `If-None-Match`,
//! which uses the weak comparison).

use super::ResponseHead;

/// Longest `ETag` or `Last-Modified` value kept: real ones are tens of bytes; a longer one is
/// not worth storing per URL.
pub const MAX_VALIDATOR_BYTES: usize = 256;

/// A response's validators, as sent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Validators {
    pub etag: Option<String>,
    pub last_modified: Option<String>,
}

impl Validators {
    /// The validators of a final response head, if it has any usable one.
    pub fn of(head: &ResponseHead) -> Option<Validators> {
        let v = Validators {
            etag: usable(head.header("etag")),
            last_modified: usable(head.header("last-modified")),
        };
        (!v.is_empty()).then_some(v)
    }

    pub fn is_empty(&self) -> bool {
        self.etag.is_none() && self.last_modified.is_none()
    }

    /// Whether both values could be written as header values (what [`Validators::of`] keeps;
    /// the request writer checks it again, as it does every field).
    pub fn are_sendable(&self) -> bool {
        [&self.etag, &self.last_modified]
            .into_iter()
            .flatten()
            .all(|v| is_sendable(v.as_bytes()))
    }
}

fn usable(value: Option<&[u8]>) -> Option<String> {
    let v = value?.trim_ascii();
    if v.is_empty() || !is_sendable(v) {
        return None;
    }
    String::from_utf8(v.to_vec()).ok()
}

/// Within the bound, printable ASCII (and spaces): no CR, LF, NUL or other control byte.
fn is_sendable(v: &[u8]) -> bool {
    v.len() <= MAX_VALIDATOR_BYTES && v.iter().all(|&b| (b' '..0x7f).contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::{Framing, Headers};

    fn head(headers: &[(&str, &[u8])]) -> ResponseHead {
        let mut h = Headers::default();
        for (n, v) in headers {
            h.push(n, v);
        }
        ResponseHead {
            version_minor: 1,
            status: 200,
            headers: h,
            content_length: None,
            framing: Framing::Close,
            content_encodings: Vec::new(),
            connection_close: false,
        }
    }

    #[test]
    fn both_validators_are_kept_as_sent() {
        let v = Validators::of(&head(&[
            ("etag", b" W/\"abc\" "),
            ("last-modified", b"Tue, 03 Nov 2026 10:00:00 GMT"),
        ]))
        .unwrap();
        assert_eq!(v.etag.as_deref(), Some("W/\"abc\""));
        assert_eq!(
            v.last_modified.as_deref(),
            Some("Tue, 03 Nov 2026 10:00:00 GMT")
        );
        assert!(v.are_sendable());
    }

    #[test]
    fn what_could_not_be_sent_back_is_not_kept() {
        assert_eq!(Validators::of(&head(&[])), None);
        let long = vec![b'a'; MAX_VALIDATOR_BYTES + 1];
        // (CR and LF never reach a value: the decoder unfolds lines into spaces.)
        for bad in [&b"\"a\x7f\""[..], b"\"\x00\"", b"", b"\xff\xfe", &long] {
            assert_eq!(Validators::of(&head(&[("etag", bad)])), None, "{bad:?}");
        }
        let v = Validators::of(&head(&[("etag", b"\x01"), ("last-modified", b"x")])).unwrap();
        assert_eq!((v.etag, v.last_modified.as_deref()), (None, Some("x")));
    }
}
