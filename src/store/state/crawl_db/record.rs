//! One URL's entry in the crawl database and its byte form.
//!
//! The value is versioned and self-checking in shape: a format byte, a flags byte naming the
//! optional fields present, then the fields (LEB128 integers, length-prefixed byte strings).
//! The URL is the table's key, not part of the value. Anything that does not decode exactly
//! (short, unknown flag or version, an integer out of its type's range, bytes left over) is
//! a typed `Corrupt`, never a panic: the file is disk input, and disks and people cut files.

use crate::codec::{get_bytes, get_varint, put_bytes, put_varint};
use crate::crawl::schedule::PageHistory;

/// The value layout's version: a later layout gets a new number, and an old reader refuses
/// it as `Corrupt::Version` rather than misreading it.
pub(super) const FORMAT: u8 = 1;

/// The largest value written or read: a record is a few hundred bytes; the bound is far
/// above any real one (validators come from a response head, itself bounded by the HTTP
/// decoder) and keeps a corrupt length from asking for gigabytes.
pub const MAX_RECORD_BYTES: usize = 64 * 1024;

const HAS_DIGEST: u8 = 1;
const HAS_ETAG: u8 = 2;
const HAS_LAST_MODIFIED: u8 = 4;
const HAS_LOCATION: u8 = 8;
const HAS_LAST_CHANGE: u8 = 16;
const KNOWN_FLAGS: u8 = HAS_DIGEST | HAS_ETAG | HAS_LAST_MODIFIED | HAS_LOCATION | HAS_LAST_CHANGE;

/// Where a URL's last stored record is: the WARC file's name and the record's offset in it
/// (a gzip member start, so a reader can seek there).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WarcLocation {
    pub file: String,
    pub offset: u64,
}

/// What a revisit of one URL needs: when and how it was last fetched, the validators to send
/// (`ETag` → `If-None-Match`, `Last-Modified` → `If-Modified-Since`, bytes as the server gave
/// them), the payload digest to compare (SHA-1), the record a revisit refers to, the change
/// history the schedule learns from, and when the URL is due next. Times are unix seconds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UrlRecord {
    pub url: String,
    pub fetched_at: u64,
    /// The HTTP status of the last fetch (0: no response).
    pub status: u16,
    pub etag: Option<Vec<u8>>,
    pub last_modified: Option<Vec<u8>>,
    pub digest: Option<[u8; 20]>,
    pub location: Option<WarcLocation>,
    pub history: PageHistory,
    pub due: u64,
}

/// How a stored value failed to decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Corrupt {
    /// The value ends before its fields do.
    Truncated,
    /// A format byte this build does not know.
    Version(u8),
    /// Flag bits this format does not define.
    Flags(u8),
    /// An integer too large for its field.
    Range,
    /// A name that is not UTF-8 (the WARC file's).
    Utf8,
    /// Bytes after the last field.
    Trailing,
    /// Larger than `MAX_RECORD_BYTES`.
    TooLarge,
    /// A due-index entry without its record, or naming another due time.
    DueIndex,
}

impl UrlRecord {
    /// Appends the value's bytes (everything but the URL) to `out`.
    pub(super) fn encode_value(&self, out: &mut Vec<u8>) {
        let flags = flag(self.digest.is_some(), HAS_DIGEST)
            | flag(self.etag.is_some(), HAS_ETAG)
            | flag(self.last_modified.is_some(), HAS_LAST_MODIFIED)
            | flag(self.location.is_some(), HAS_LOCATION)
            | flag(self.history.last_change.is_some(), HAS_LAST_CHANGE);
        out.push(FORMAT);
        out.push(flags);
        put_varint(out, self.fetched_at);
        put_varint(out, u64::from(self.status));
        put_varint(out, self.due);
        if let Some(d) = &self.digest {
            out.extend_from_slice(d);
        }
        if let Some(e) = &self.etag {
            put_bytes(out, e);
        }
        if let Some(l) = &self.last_modified {
            put_bytes(out, l);
        }
        if let Some(loc) = &self.location {
            put_bytes(out, loc.file.as_bytes());
            put_varint(out, loc.offset);
        }
        let h = &self.history;
        put_varint(out, u64::from(h.visits));
        put_varint(out, u64::from(h.changes));
        put_varint(out, h.observed_secs);
        if let Some(t) = h.last_change {
            put_varint(out, t);
        }
        put_varint(out, h.interval);
    }

    /// Reads a value written by `encode_value` for `url`.
    pub(super) fn decode(url: &str, value: &[u8]) -> Result<UrlRecord, Corrupt> {
        if value.len() > MAX_RECORD_BYTES {
            return Err(Corrupt::TooLarge);
        }
        let mut input = value;
        let int = |input: &mut &[u8]| get_varint(input).ok_or(Corrupt::Truncated);
        let bytes = |input: &mut &[u8]| {
            get_bytes(input)
                .map(<[u8]>::to_vec)
                .ok_or(Corrupt::Truncated)
        };
        let [version, flags] = take::<2>(&mut input)?;
        if version != FORMAT {
            return Err(Corrupt::Version(version));
        }
        if flags & !KNOWN_FLAGS != 0 {
            return Err(Corrupt::Flags(flags));
        }
        let fetched_at = int(&mut input)?;
        let status = u16::try_from(int(&mut input)?).map_err(|_| Corrupt::Range)?;
        let due = int(&mut input)?;
        let digest = match flags & HAS_DIGEST {
            0 => None,
            _ => Some(take::<20>(&mut input)?),
        };
        let etag = (flags & HAS_ETAG != 0)
            .then(|| bytes(&mut input))
            .transpose()?;
        let last_modified = (flags & HAS_LAST_MODIFIED != 0)
            .then(|| bytes(&mut input))
            .transpose()?;
        let location = match flags & HAS_LOCATION {
            0 => None,
            _ => {
                let file = String::from_utf8(bytes(&mut input)?).map_err(|_| Corrupt::Utf8)?;
                let offset = int(&mut input)?;
                Some(WarcLocation { file, offset })
            }
        };
        let small = |v: u64| u32::try_from(v).map_err(|_| Corrupt::Range);
        let visits = small(int(&mut input)?)?;
        let changes = small(int(&mut input)?)?;
        let observed_secs = int(&mut input)?;
        let last_change = (flags & HAS_LAST_CHANGE != 0)
            .then(|| int(&mut input))
            .transpose()?;
        let interval = int(&mut input)?;
        if !input.is_empty() {
            return Err(Corrupt::Trailing);
        }
        Ok(UrlRecord {
            url: url.to_string(),
            fetched_at,
            status,
            etag,
            last_modified,
            digest,
            location,
            history: PageHistory {
                visits,
                changes,
                observed_secs,
                last_change,
                interval,
            },
            due,
        })
    }
}

/// The due time of a stored value, read from its head alone (what `Batch::commit` needs of
/// the value it replaces, to remove that value's index entry).
pub(super) fn value_due(value: &[u8]) -> Result<u64, Corrupt> {
    let mut input = value;
    let [version, _] = take::<2>(&mut input)?;
    if version != FORMAT {
        return Err(Corrupt::Version(version));
    }
    for _ in 0..2 {
        get_varint(&mut input).ok_or(Corrupt::Truncated)?; // fetched_at, status
    }
    get_varint(&mut input).ok_or(Corrupt::Truncated)
}

fn flag(present: bool, bit: u8) -> u8 {
    if present {
        bit
    } else {
        0
    }
}

fn take<const N: usize>(input: &mut &[u8]) -> Result<[u8; N], Corrupt> {
    let (head, rest) = input.split_first_chunk::<N>().ok_or(Corrupt::Truncated)?;
    *input = rest;
    Ok(*head)
}

/// The due index's key: the due time big-endian (so keys sort by time), then the URL (so
/// two URLs due at the same second are two entries).
pub(super) fn due_key(due: u64, url: &str, out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(&due.to_be_bytes());
    out.extend_from_slice(url.as_bytes());
}

/// Splits a due-index key into its time and URL.
pub(super) fn split_due_key(key: &[u8]) -> Result<(u64, &str), Corrupt> {
    let (time, url) = key.split_first_chunk::<8>().ok_or(Corrupt::DueIndex)?;
    let url = std::str::from_utf8(url).map_err(|_| Corrupt::Utf8)?;
    Ok((u64::from_be_bytes(*time), url))
}
