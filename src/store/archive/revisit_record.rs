//! What a URL's end leaves for the next visit: its crawl-database record (what this fetch
//! found, or what the last one left, with the schedule's history and due time), and, for a
//! revisit that found the page unchanged, the earlier record its revisit record refers to.
//! Pure functions of the fetch and the crawl's `Scheduled` verdict; `Output` sends both to
//! the writer, which fills in where a full response landed.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::warc::{self, RevisitProfile};
use super::writer::RefersTo;
use crate::crawl::revisit::{LastFetch, Seen, StoredCopy};
use crate::crawl::sink::Scheduled;
use crate::fetcher::{FetchDone, PayloadDigest};
use crate::http::Validators;
use crate::store::state::crawl_db::UrlRecord;

/// For a revisit that found the page as its last fetch left it (a `304`, or the same
/// payload), the record holding that payload, where the last fetch knew it.
pub(super) fn refers_to_last(done: &FetchDone<'_>, s: &Scheduled<'_>) -> Option<Box<RefersTo>> {
    let profile = match s.seen {
        Seen::NotModified => RevisitProfile::ServerNotModified,
        Seen::Unchanged => RevisitProfile::IdenticalPayload,
        Seen::Changed | Seen::Unknown => return None,
    };
    let copy = s.last?.copy.as_ref()?;
    Some(Box::new(RefersTo {
        profile,
        uri: Arc::from(copy.uri.as_deref().unwrap_or(done.request.url.as_str())),
        date: SystemTime::UNIX_EPOCH + Duration::from_secs(copy.date),
        record: copy
            .record_id
            .map(|id| Arc::from(warc::RecordId(id).to_string())),
        at: (!copy.file.is_empty()).then(|| (Arc::from(copy.file.as_str()), copy.offset)),
    }))
}

/// The crawl database record of a URL that ended: what this fetch found (`done`, with its
/// payload digest, and `refers` when it was stored as a revisit), or, without a response,
/// what the last fetch left, with the schedule's new history and due time. A full response's
/// own record position is filled in by the writer, which knows it.
pub(super) fn db_record(
    url: &str,
    s: &Scheduled<'_>,
    done: Option<&FetchDone<'_>>,
    digest: Option<PayloadDigest>,
    refers: Option<&RefersTo>,
) -> UrlRecord {
    let head = done.and_then(|d| d.head);
    // A server error or a cut response says nothing of the page: what the last fetch left
    // stands, as when there was no response.
    let answered =
        done.is_some_and(|d| d.outcome.is_success()) && head.is_some_and(|h| h.status < 500);
    let mut last = match (done, head) {
        (Some(done), Some(head)) if answered => {
            let not_modified = s.seen == Seen::NotModified;
            let prior = s.last.filter(|_| not_modified);
            // A 304 may send one validator again and not the other: each is the newest known.
            let sent = Validators::of(head).unwrap_or_default();
            let old = prior.and_then(|l| l.validators.clone()).unwrap_or_default();
            let validators = Validators {
                etag: sent.etag.or(old.etag),
                last_modified: sent.last_modified.or(old.last_modified),
            };
            LastFetch {
                fetched_at: s.at,
                // A 304 leaves the page as it was: its status and length stay the last ones.
                status: prior.map_or(head.status, |l| l.status),
                payload_len: prior.map_or(done.payload_len(), |l| l.payload_len),
                validators: (!validators.is_empty()).then_some(validators),
                digest,
                copy: match (refers, s.seen) {
                    (None, _) => None,
                    (Some(_), Seen::NotModified | Seen::Unchanged) => {
                        s.last.and_then(|l| l.copy.clone())
                    }
                    (Some(r), _) => Some(StoredCopy {
                        uri: (*r.uri != *url).then(|| r.uri.to_string()),
                        date: crate::crawl::revisit::unix_secs(r.date),
                        record_id: None,
                        file: String::new(),
                        offset: 0,
                    }),
                },
                history: s.history,
                due: s.due,
            }
        }
        _ => s.last.cloned().unwrap_or_default(),
    };
    last.history = s.history;
    last.due = s.due;
    UrlRecord {
        url: url.to_string(),
        depth: s.depth,
        hop: s.hop,
        last,
    }
}
