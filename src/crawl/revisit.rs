//! Revisits (ARCHITECTURE §9c): what a URL's last fetch left ([`LastFetch`], carried by its
//! queue entry when the URL is fetched again), what the new fetch found compared with it
//! ([`compare`]); the crawl database is told the rest when the URL ends
//! ([`super::sink::Scheduled`]).
//!
//! Policy, sans-IO: the wall time comes in as a parameter (unix seconds), and the crawl
//! database (`store::state::crawl_db`) keeps a `LastFetch` per URL in the byte form written
//! here, so a queue entry, a journal record and a database value encode the facts once.

use crate::codec::{get_bytes, get_varint, put_bytes, put_varint};
use crate::fetcher::{FetchDone, PayloadDigest};
use crate::http::Validators;

use super::recent_visits::RecentVisits;
use super::schedule::{Observation, PageHistory};

/// Where the payload a URL last had is archived: the response record that holds it, which a
/// revisit record refers to (`WARC-Refers-To-*`), and its WARC file and offset.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StoredCopy {
    /// The record's `WARC-Target-URI` when it is not the URL's own (a payload first stored
    /// under another URL).
    pub uri: Option<String>,
    /// Its `WARC-Date`, unix seconds (WARC dates have seconds).
    pub date: u64,
    /// Its `WARC-Record-ID` (the UUID's bytes), where known.
    pub record_id: Option<[u8; 16]>,
    /// The WARC file's name and the record's offset in it (a gzip member's start).
    pub file: String,
    pub offset: u64,
}

/// What a URL's last fetch left: when, its status, the validators to send back, the payload
/// digest to compare, where the payload is archived, and the change history the schedule
/// learns from. Times are unix seconds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LastFetch {
    pub fetched_at: u64,
    /// HTTP status (0: no response).
    pub status: u16,
    /// The payload's length, bytes (what a `304` saves).
    pub payload_len: u64,
    pub validators: Option<Validators>,
    pub digest: Option<PayloadDigest>,
    pub copy: Option<StoredCopy>,
    pub history: PageHistory,
    /// When the URL is due again, as this fetch's schedule said.
    pub due: u64,
}

/// A revisit's outcome, as crawl.log writes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seen {
    /// Not a revisit, or nothing to compare (an error, no payload).
    Unknown,
    /// `304 Not Modified`: the validators still match.
    NotModified,
    /// A full response whose payload digest equals the last one.
    Unchanged,
    /// A full response with another payload.
    Changed,
}

impl Seen {
    /// The name crawl.log writes.
    pub fn name(self) -> Option<&'static str> {
        match self {
            Seen::Unknown => None,
            Seen::NotModified => Some("NotModified"),
            Seen::Unchanged => Some("Unchanged"),
            Seen::Changed => Some("Changed"),
        }
    }

    pub fn from_name(name: &str) -> Option<Seen> {
        match name {
            "NotModified" => Some(Seen::NotModified),
            "Unchanged" => Some(Seen::Unchanged),
            "Changed" => Some(Seen::Changed),
            _ => None,
        }
    }

    /// What the schedule learns: a change seen by digest alone counts as one seen by
    /// validators.
    pub fn observation(self) -> Observation {
        match self {
            Seen::Unknown => Observation::Unknown,
            Seen::NotModified | Seen::Unchanged => Observation::Unchanged,
            Seen::Changed => Observation::Changed,
        }
    }
}

/// Compares a fetch with the URL's last one. Only a complete success says anything: a 304
/// to a conditional request is "not modified"; a complete 2xx is compared by payload digest.
pub fn compare(
    done: &FetchDone<'_>,
    last: Option<&LastFetch>,
    digest: Option<&PayloadDigest>,
) -> Seen {
    let Some(last) = last else {
        return Seen::Unknown;
    };
    if !done.outcome.is_success() || done.truncation().is_some() {
        return Seen::Unknown;
    }
    match done.status() {
        304 if done.request.validators.is_some() && last.digest.is_some() => Seen::NotModified,
        200..=299 => match (digest, &last.digest) {
            (Some(new), Some(old)) if new == old => Seen::Unchanged,
            (Some(_), Some(_)) => Seen::Changed,
            _ => Seen::Unknown,
        },
        _ => Seen::Unknown,
    }
}

/// Unix seconds of a wall-clock time (0 before 1970).
pub fn unix_secs(t: std::time::SystemTime) -> u64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

const HAS_DIGEST: u8 = 1;
const HAS_ETAG: u8 = 2;
const HAS_LAST_MODIFIED: u8 = 4;
const HAS_COPY: u8 = 8;
const HAS_LAST_CHANGE: u8 = 16;
const HAS_COPY_URI: u8 = 32;
const HAS_RECORD_ID: u8 = 64;
/// More of the history follows the due time, as a varint: a non-zero one is the count of new
/// URLs found (a hub's yield; the only form before the recent visits were kept, still
/// written when it is all there is); zero introduces a second flags byte (`MORE_*`) naming
/// the fields after it. A record written before either decodes as a page that found none
/// and has no recent visits. Every bit of the first flags byte is taken.
const HAS_MORE: u8 = 128;
/// The second flags byte: the new-URL count follows (a varint)...
const MORE_NEW_URLS: u8 = 1;
/// ...then the recent visits (`RecentVisits`' byte form).
const MORE_RECENT: u8 = 2;

impl LastFetch {
    /// Appends the byte form: a flags byte naming the optional fields present, then the
    /// fields (LEB128 integers, length-prefixed strings).
    pub fn encode(&self, out: &mut Vec<u8>) {
        let v = self.validators.as_ref();
        let etag = v.and_then(|v| v.etag.as_deref());
        let last_modified = v.and_then(|v| v.last_modified.as_deref());
        let copy = self.copy.as_ref();
        let flags = flag(self.digest.is_some(), HAS_DIGEST)
            | flag(etag.is_some(), HAS_ETAG)
            | flag(last_modified.is_some(), HAS_LAST_MODIFIED)
            | flag(copy.is_some(), HAS_COPY)
            | flag(self.history.last_change.is_some(), HAS_LAST_CHANGE)
            | flag(copy.is_some_and(|c| c.uri.is_some()), HAS_COPY_URI)
            | flag(copy.is_some_and(|c| c.record_id.is_some()), HAS_RECORD_ID)
            | flag(
                self.history.new_urls > 0 || !self.history.recent.is_empty(),
                HAS_MORE,
            );
        out.push(flags);
        put_varint(out, self.fetched_at);
        put_varint(out, u64::from(self.status));
        put_varint(out, self.payload_len);
        if let Some(d) = &self.digest {
            out.extend_from_slice(d);
        }
        for s in [etag, last_modified].into_iter().flatten() {
            put_bytes(out, s.as_bytes());
        }
        if let Some(c) = copy {
            put_varint(out, c.date);
            put_bytes(out, c.file.as_bytes());
            put_varint(out, c.offset);
            if let Some(uri) = &c.uri {
                put_bytes(out, uri.as_bytes());
            }
            if let Some(id) = &c.record_id {
                out.extend_from_slice(id);
            }
        }
        let h = &self.history;
        put_varint(out, u64::from(h.visits));
        put_varint(out, u64::from(h.changes));
        put_varint(out, h.observed_secs);
        if let Some(t) = h.last_change {
            put_varint(out, t);
        }
        put_varint(out, h.interval);
        put_varint(out, self.due);
        if h.recent.is_empty() {
            if h.new_urls > 0 {
                put_varint(out, u64::from(h.new_urls));
            }
        } else {
            put_varint(out, 0);
            out.push(MORE_RECENT | flag(h.new_urls > 0, MORE_NEW_URLS));
            if h.new_urls > 0 {
                put_varint(out, u64::from(h.new_urls));
            }
            h.recent.encode(out);
        }
    }

    /// Reads what [`LastFetch::encode`] wrote, advancing `input`; `None` when the bytes do
    /// not decode (short, a field out of range, a string not UTF-8).
    pub fn decode(input: &mut &[u8]) -> Option<LastFetch> {
        let (&flags, rest) = input.split_first()?;
        *input = rest;
        let has = |bit: u8| flags & bit != 0;
        let text = |input: &mut &[u8]| {
            get_bytes(input)
                .and_then(|b| std::str::from_utf8(b).ok())
                .map(str::to_string)
        };
        let fetched_at = get_varint(input)?;
        let status = u16::try_from(get_varint(input)?).ok()?;
        let payload_len = get_varint(input)?;
        let digest = match has(HAS_DIGEST) {
            true => Some(take::<20>(input)?),
            false => None,
        };
        let etag = has(HAS_ETAG).then(|| text(input)).flatten();
        if has(HAS_ETAG) && etag.is_none() {
            return None;
        }
        let last_modified = has(HAS_LAST_MODIFIED).then(|| text(input)).flatten();
        if has(HAS_LAST_MODIFIED) && last_modified.is_none() {
            return None;
        }
        let validators = (etag.is_some() || last_modified.is_some()).then_some(Validators {
            etag,
            last_modified,
        });
        let copy = match has(HAS_COPY) {
            false => None,
            true => {
                let date = get_varint(input)?;
                let file = text(input)?;
                let offset = get_varint(input)?;
                let uri = match has(HAS_COPY_URI) {
                    true => Some(text(input)?),
                    false => None,
                };
                let record_id = match has(HAS_RECORD_ID) {
                    true => Some(take::<16>(input)?),
                    false => None,
                };
                Some(StoredCopy {
                    uri,
                    date,
                    record_id,
                    file,
                    offset,
                })
            }
        };
        let small = |v: u64| u32::try_from(v).ok();
        let visits = small(get_varint(input)?)?;
        let changes = small(get_varint(input)?)?;
        let observed_secs = get_varint(input)?;
        let last_change = match has(HAS_LAST_CHANGE) {
            true => Some(get_varint(input)?),
            false => None,
        };
        let interval = get_varint(input)?;
        let due = get_varint(input)?;
        let (mut new_urls, mut recent) = (0, RecentVisits::default());
        if has(HAS_MORE) {
            match small(get_varint(input)?)? {
                0 => {
                    let (&more, rest) = input.split_first()?;
                    *input = rest;
                    if more & !(MORE_NEW_URLS | MORE_RECENT) != 0 {
                        return None;
                    }
                    if more & MORE_NEW_URLS != 0 {
                        new_urls = small(get_varint(input)?).filter(|&n| n > 0)?;
                    }
                    if more & MORE_RECENT != 0 {
                        recent = RecentVisits::decode(input)?;
                    }
                }
                n => new_urls = n,
            }
        }
        Some(LastFetch {
            fetched_at,
            status,
            payload_len,
            validators,
            digest,
            copy,
            history: PageHistory {
                visits,
                changes,
                observed_secs,
                last_change,
                interval,
                new_urls,
                recent,
            },
            due,
        })
    }
}

fn flag(present: bool, bit: u8) -> u8 {
    if present {
        bit
    } else {
        0
    }
}

fn take<const N: usize>(input: &mut &[u8]) -> Option<[u8; N]> {
    let (head, rest) = input.split_first_chunk::<N>()?;
    *input = rest;
    Some(*head)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn text() -> impl Strategy<Value = String> {
        "[ -~]{0,40}"
    }

    prop_compose! {
        fn arb_last()(
            fetched_at in any::<u64>(), status in any::<u16>(), payload_len in any::<u64>(),
            digest in proptest::option::of(any::<[u8; 20]>()),
            etag in proptest::option::of(text()), lm in proptest::option::of(text()),
            copy in proptest::option::of((proptest::option::of(text()), any::<u64>(),
                proptest::option::of(any::<[u8; 16]>()), text(), any::<u64>())),
            h in (any::<u32>(), any::<u32>(), any::<u64>(), proptest::option::of(any::<u64>()),
                any::<u64>(), any::<u32>()),
            recent in proptest::collection::vec((any::<u64>(), any::<bool>()), 0..20),
            due in any::<u64>(),
        ) -> LastFetch {
            LastFetch {
                fetched_at,
                status,
                payload_len,
                validators: (etag.is_some() || lm.is_some())
                    .then_some(Validators { etag, last_modified: lm }),
                digest,
                copy: copy.map(|(uri, date, record_id, file, offset)| StoredCopy {
                    uri, date, record_id, file, offset,
                }),
                history: PageHistory {
                    visits: h.0, changes: h.1, observed_secs: h.2, last_change: h.3,
                    interval: h.4, new_urls: h.5,
                    recent: {
                        let mut r = RecentVisits::default();
                        for (secs, changed) in recent {
                            r.push(secs, changed);
                        }
                        r
                    },
                },
                due,
            }
        }
    }

    proptest! {
        #[test]
        fn last_fetch_round_trips_and_leaves_what_follows(last in arb_last(), tail in any::<u8>()) {
            let mut bytes = Vec::new();
            last.encode(&mut bytes);
            bytes.push(tail);
            let mut input = bytes.as_slice();
            prop_assert_eq!(LastFetch::decode(&mut input), Some(last));
            prop_assert_eq!(input, &[tail][..]);
        }

        #[test]
        fn any_bytes_decode_or_not_without_panicking(bytes in proptest::collection::vec(any::<u8>(), 0..120)) {
            let mut input = bytes.as_slice();
            let _ = LastFetch::decode(&mut input);
        }
    }

    #[test]
    fn recent_visits_are_kept_behind_the_second_flags_byte_and_old_records_still_load() {
        let mut last = LastFetch {
            fetched_at: 1_700_000_000,
            history: PageHistory {
                visits: 3,
                changes: 1,
                new_urls: 5,
                ..PageHistory::default()
            },
            ..LastFetch::default()
        };
        // Without recent visits, the form written before them: the count of new URLs last.
        let mut bytes = Vec::new();
        last.encode(&mut bytes);
        assert_eq!(bytes[0] & HAS_MORE, HAS_MORE);
        assert_eq!(bytes.last(), Some(&5));
        let before = bytes.clone();
        assert_eq!(
            LastFetch::decode(&mut before.as_slice()),
            Some(last.clone())
        );
        // With them: a zero, the second flags byte, the count, the visits.
        last.history.recent.push(60, true);
        last.history.recent.push(10, false);
        bytes.clear();
        last.encode(&mut bytes);
        assert_eq!(bytes.len(), before.len() + 1 + 1 + 1 + 2);
        assert_eq!(LastFetch::decode(&mut bytes.as_slice()), Some(last.clone()));
        // A second flags byte with an unknown bit is refused, not misread.
        let at = before.len() - 1;
        bytes[at + 1] |= 0x40;
        assert_eq!(LastFetch::decode(&mut bytes.as_slice()), None);
    }

    #[test]
    fn a_cut_encoding_does_not_decode() {
        let last = LastFetch {
            fetched_at: 1_700_000_000,
            status: 200,
            payload_len: 5000,
            validators: Some(Validators {
                etag: Some("\"v1\"".into()),
                last_modified: None,
            }),
            digest: Some([7; 20]),
            copy: Some(StoredCopy {
                uri: None,
                date: 1_700_000_000,
                record_id: Some([1; 16]),
                file: "a-00000.warc.gz".into(),
                offset: 1234,
            }),
            history: PageHistory::default(),
            due: 1_700_086_400,
        };
        let mut bytes = Vec::new();
        last.encode(&mut bytes);
        for cut in 0..bytes.len() {
            let mut input = &bytes[..cut];
            assert_eq!(LastFetch::decode(&mut input), None, "cut at {cut}");
        }
    }
}
