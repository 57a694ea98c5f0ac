//! A URL waiting in the frontier ([`Entry`]): what it is, how it was found, what its last
//! fetch left, and its priority; and its byte form, which the journal, the frontier's spill
//! and the partitions' batches all keep.

use std::sync::Arc;

use url::Url;

use super::revisit::LastFetch;
use super::sink::{Hop, Via};
use super::spill::Spillable;
use crate::codec::{get_bytes, get_varint, put_bytes, put_varint};

/// A URL waiting in the frontier.
#[derive(Clone, Debug)]
pub(super) struct Entry {
    pub url: Url,
    pub depth: u32,
    /// The page it was found on.
    pub referrer: Option<Arc<str>>,
    /// Redirect hops from the URL first queued.
    pub hops: u8,
    pub hop: Hop,
    /// A revisit: what the URL's last fetch left (validators to send, the payload to compare).
    pub last: Option<Box<LastFetch>>,
    /// A focused crawl's frontier priority for it (0 first), from its page's relevance;
    /// `None`: by depth.
    pub priority: Option<u8>,
}

impl Entry {
    /// A URL found (or given) with no last fetch and no priority: queued by depth.
    pub fn new(url: Url, depth: u32, referrer: Option<Arc<str>>, hops: u8, hop: Hop) -> Entry {
        Entry {
            url,
            depth,
            referrer,
            hops,
            hop,
            last: None,
            priority: None,
        }
    }
}

/// After an entry's hop letter, a byte of flags saying what follows: a last fetch, a
/// priority. An entry journaled before either existed ends at the letter.
const WITH_LAST: u8 = 1;
const WITH_PRIORITY: u8 = 2;

impl Spillable for Entry {
    fn encode(&self, out: &mut Vec<u8>) {
        put_bytes(out, self.url.as_str().as_bytes());
        put_varint(out, u64::from(self.depth));
        put_bytes(out, self.referrer.as_deref().unwrap_or("").as_bytes());
        out.push(self.hops);
        out.push(self.hop.letter() as u8);
        let flags = if self.last.is_some() { WITH_LAST } else { 0 }
            | if self.priority.is_some() {
                WITH_PRIORITY
            } else {
                0
            };
        out.push(flags);
        if let Some(last) = &self.last {
            last.encode(out);
        }
        if let Some(p) = self.priority {
            out.push(p);
        }
    }

    fn decode(input: &mut &[u8]) -> Option<Entry> {
        let url = Url::parse(std::str::from_utf8(get_bytes(input)?).ok()?).ok()?;
        let depth = u32::try_from(get_varint(input)?).ok()?;
        let referrer = std::str::from_utf8(get_bytes(input)?).ok()?;
        let (&hops, rest) = input.split_first()?;
        let (&hop, rest) = rest.split_first()?;
        *input = rest;
        let hop = Hop::from_letter(hop)?;
        // An entry of an older journal ends at the letter.
        let flags = match input.split_first() {
            None => 0,
            Some((&f, rest)) if f & !(WITH_LAST | WITH_PRIORITY) == 0 => {
                *input = rest;
                f
            }
            Some(_) => return None,
        };
        let last = match flags & WITH_LAST {
            0 => None,
            _ => Some(Box::new(LastFetch::decode(input)?)),
        };
        let priority = match flags & WITH_PRIORITY {
            0 => None,
            _ => {
                let (&p, rest) = input.split_first()?;
                *input = rest;
                Some(p)
            }
        };
        Some(Entry {
            url,
            depth,
            referrer: (!referrer.is_empty()).then(|| Arc::from(referrer)),
            hops,
            hop,
            last,
            priority,
        })
    }
}

impl Entry {
    pub fn via(&self) -> Via<'_> {
        Via::new(self.referrer.as_deref(), self.hop)
    }
}
