//! One URL's entry in the crawl database and its byte form.
//!
//! The value is versioned and self-checking in shape: a format byte, the due time, depth and
//! hop, then the last fetch in the crawl's byte form (`crawl::revisit::LastFetch`: a flags
//! byte naming the optional fields present, LEB128 integers, length-prefixed strings).
//! The URL is the table's key, not part of the value. Anything that does not decode exactly
//! (short, unknown flag or version, an integer out of its type's range, bytes left over) is
//! a typed `Corrupt`, never a panic: the file is disk input, and disks and people cut files.

use crate::codec::{get_varint, put_varint};
use crate::crawl::revisit::LastFetch;
use crate::crawl::sink::Hop;

/// The value layout's version: a later layout gets a new number, and an old reader refuses
/// it as `Corrupt::Version` rather than misreading it.
pub(super) const FORMAT: u8 = 2;

/// The largest value written or read: a record is a few hundred bytes; the bound is far
/// above any real one (validators come from a response head, itself bounded by the HTTP
/// decoder) and keeps a corrupt length from asking for gigabytes.
pub const MAX_RECORD_BYTES: usize = 64 * 1024;

/// One URL's entry: what its last fetch left (`LastFetch`: when, status, validators,
/// payload digest, the record holding the payload, change history, next due time), and how
/// it was found (its depth and hop), which its revisits keep.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UrlRecord {
    pub url: String,
    pub depth: u32,
    pub hop: Hop,
    pub last: LastFetch,
}

/// How a stored value failed to decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Corrupt {
    /// The value ends before its fields do, or a field does not decode.
    Truncated,
    /// A format byte this build does not know.
    Version(u8),
    /// An integer too large for its field, or an unknown hop letter.
    Range,
    /// A name that is not UTF-8.
    Utf8,
    /// Bytes after the last field.
    Trailing,
    /// Larger than `MAX_RECORD_BYTES`.
    TooLarge,
    /// A due-index entry without its record, or naming another due time.
    DueIndex,
}

impl UrlRecord {
    /// When the URL is due next (unix seconds): the due index's order.
    pub fn due(&self) -> u64 {
        self.last.due
    }

    /// Appends the value's bytes (everything but the URL) to `out`: the format byte, the due
    /// time first (so `value_due` reads it alone), depth, hop letter, then the last fetch in
    /// the crawl's own byte form.
    pub fn encode_value(&self, out: &mut Vec<u8>) {
        out.push(FORMAT);
        put_varint(out, self.last.due);
        put_varint(out, u64::from(self.depth));
        out.push(self.hop.letter() as u8);
        self.last.encode(out);
    }

    /// Reads a value written by `encode_value` for `url`.
    pub(super) fn decode(url: &str, value: &[u8]) -> Result<UrlRecord, Corrupt> {
        if value.len() > MAX_RECORD_BYTES {
            return Err(Corrupt::TooLarge);
        }
        let mut input = value;
        let due = value_due(value)?;
        let [_] = take::<1>(&mut input)?;
        get_varint(&mut input).ok_or(Corrupt::Truncated)?;
        let depth = get_varint(&mut input).ok_or(Corrupt::Truncated)?;
        let depth = u32::try_from(depth).map_err(|_| Corrupt::Range)?;
        let [hop] = take::<1>(&mut input)?;
        let hop = Hop::from_letter(hop).ok_or(Corrupt::Range)?;
        let last = LastFetch::decode(&mut input).ok_or(Corrupt::Truncated)?;
        if !input.is_empty() {
            return Err(Corrupt::Trailing);
        }
        if last.due != due {
            return Err(Corrupt::DueIndex);
        }
        Ok(UrlRecord {
            url: url.to_string(),
            depth,
            hop,
            last,
        })
    }
}

/// The due time of a stored value, read from its head alone (what `Batch::commit` needs of
/// the value it replaces, to remove that value's index entry).
pub(super) fn value_due(value: &[u8]) -> Result<u64, Corrupt> {
    let mut input = value;
    let [version] = take::<1>(&mut input)?;
    if version != FORMAT {
        return Err(Corrupt::Version(version));
    }
    get_varint(&mut input).ok_or(Corrupt::Truncated)
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
