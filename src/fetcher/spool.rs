//! Where large bodies go while they arrive, so memory is bounded by configuration and not by
//! what servers send.
//!
//! A live fetch keeps its body in memory up to `spill_threshold` (or less when the loop's
//! buffer budget is spent); past that, the body received so far and every byte after it go to
//! a [`SpoolFile`]. The app provides the [`Spool`] (the store's file spool), so the fetcher
//! itself touches no files. The payload digest is computed here, on the way to the spool, so
//! spilled bytes are hashed once and never read back for it.

use std::io;
use std::sync::Arc;

use sha1::{Digest as _, Sha1};

use super::digest::PayloadDigest;

/// Makes spool files (implemented by the store).
pub trait Spool: Send + Sync {
    fn create(&self) -> io::Result<Box<dyn SpoolFile>>;
}

/// One body's spool: append while it arrives, read back at any offset afterwards (the WARC
/// writer streams it into the record; the loop reads a prefix for link scanning).
pub trait SpoolFile: Send + Sync {
    fn append(&mut self, bytes: &[u8]) -> io::Result<()>;
    fn len(&self) -> u64;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Reads up to `buf.len()` bytes at `offset`; 0 at the end.
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize>;
}

/// A spool file being filled, with the digest of what went into it.
pub struct Spilling {
    file: Box<dyn SpoolFile>,
    digest: Sha1,
}

impl Spilling {
    pub fn new(file: Box<dyn SpoolFile>) -> Spilling {
        Spilling {
            file,
            digest: Sha1::new(),
        }
    }

    pub fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.digest.update(bytes);
        self.file.append(bytes)
    }

    /// The finished spool, shareable with the WARC writer, and the digest of its bytes.
    pub fn finish(self) -> (Arc<dyn SpoolFile>, PayloadDigest) {
        (Arc::from(self.file), self.digest.finalize().into())
    }
}

/// Reads `spool[0..n]` into `out` (cleared first), stopping early at the end.
pub fn read_prefix(spool: &dyn SpoolFile, n: usize, out: &mut Vec<u8>) -> io::Result<()> {
    out.clear();
    let n = n.min(usize::try_from(spool.len()).unwrap_or(usize::MAX));
    out.resize(n, 0);
    let mut filled = 0;
    // Bound: each pass reads at least one byte or ends.
    while filled < n {
        let got = spool.read_at(filled as u64, &mut out[filled..])?;
        if got == 0 {
            break;
        }
        filled += got;
    }
    out.truncate(filled);
    Ok(())
}
