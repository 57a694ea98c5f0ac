//! The payload digest: SHA-1 of a response's payload as received, the digest WARC, crawl.log,
//! CDXJ and Heritrix or Common Crawl use. Taken on the way to the spool for a body that
//! outgrew memory (`spool::Spilling`), at delivery for one in memory
//! (`FetchDone::payload_digest`); its own module so that both reach it from below.

use sha1::{Digest as _, Sha1};

/// SHA-1 of a payload.
pub type PayloadDigest = [u8; 20];

/// The digest of a payload held whole in memory.
pub fn of(payload: &[u8]) -> PayloadDigest {
    Sha1::digest(payload).into()
}
