//! Atomic, self-checking replacement of a small state file (a frontier snapshot, the list of
//! live segment batches, counters): [`save`] then [`load`] after any crash returns either the
//! previous content or the new one, never a mix, and a damaged file is a typed error, never
//! misread.
//!
//! # Envelope
//! Little-endian: magic `SPINCKPT` (8) | envelope version `1` (u16) | the caller's format
//! version (u32) | body length (u64) | masked CRC32C (u32) over the three fields before it and
//! the body | body. The caller's version comes back from [`load`] so it can refuse or migrate
//! old formats.
//!
//! # Durability (where the fsyncs are)
//! [`save`] writes `NAME.tmp`, fsyncs it, renames it over `NAME` (the commit point), then
//! fsyncs the directory so the rename itself survives a power loss. A crash before the rename
//! leaves `NAME` untouched plus a stale `NAME.tmp`, which [`load`] removes. One process owns a
//! checkpoint name: two concurrent `save`s of the same `NAME` share the `.tmp` file.
//!
//! Ordering contract for callers: everything the body *refers to* (journal records, segment
//! batches) must be synced before `save`, and may be deleted only after the `save` that stops
//! referring to it has returned.

use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use super::crc32c;
use super::journal::sync_parent_dir;

/// First bytes of every checkpoint file.
pub const MAGIC: [u8; 8] = *b"SPINCKPT";
/// Version of the envelope itself (not of the caller's body).
pub const ENVELOPE_VERSION: u16 = 1;
/// Largest body accepted by `save` and `load` (a checkpoint is read whole into memory).
pub const MAX_BODY_BYTES: u64 = 1 << 30;
/// Envelope header length.
pub const HEADER_BYTES: usize = 8 + 2 + 4 + 8 + 4;

/// A loaded checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    /// The format version the caller passed to [`save`].
    pub version: u32,
    pub body: Vec<u8>,
}

/// Why [`load`] could not return a checkpoint.
#[derive(Debug)]
pub enum LoadError {
    Io(io::Error),
    /// The file does not start with [`MAGIC`]: not a checkpoint.
    BadMagic,
    /// Written by a newer envelope format.
    UnsupportedEnvelope(u16),
    /// The header claims a body over [`MAX_BODY_BYTES`].
    TooLarge(u64),
    /// The file length does not match the header (cut short, or bytes appended).
    BadLength {
        expected: u64,
        actual: u64,
    },
    /// The checksum does not match: the header or body is damaged.
    Checksum,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::Io(e) => write!(f, "checkpoint I/O error: {e}"),
            LoadError::BadMagic => write!(f, "not a checkpoint file (bad magic)"),
            LoadError::UnsupportedEnvelope(v) => {
                write!(f, "checkpoint envelope version {v} is not supported")
            }
            LoadError::TooLarge(n) => write!(f, "checkpoint body of {n} bytes is too large"),
            LoadError::BadLength { expected, actual } => write!(
                f,
                "checkpoint file is {actual} bytes, its header says {expected}"
            ),
            LoadError::Checksum => write!(f, "checkpoint checksum mismatch"),
        }
    }
}

impl std::error::Error for LoadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LoadError::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for LoadError {
    fn from(e: io::Error) -> Self {
        LoadError::Io(e)
    }
}

/// `NAME.tmp`, where [`save`] stages the new content.
pub fn tmp_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_os_string();
    s.push(".tmp");
    PathBuf::from(s)
}

/// The complete file bytes for `body`.
pub fn encode(version: u32, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_BYTES + body.len());
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&ENVELOPE_VERSION.to_le_bytes());
    out.extend_from_slice(&version.to_le_bytes());
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    let crc = crc32c::extend(crc32c::crc32c(&out[8..]), body);
    out.extend_from_slice(&crc32c::mask(crc).to_le_bytes());
    out.extend_from_slice(body);
    out
}

/// Checks and unpacks complete file bytes.
pub fn decode(bytes: &[u8]) -> Result<Checkpoint, LoadError> {
    let actual = bytes.len() as u64;
    if bytes.len() < HEADER_BYTES {
        return Err(if bytes.len() >= 8 && bytes[..8] != MAGIC {
            LoadError::BadMagic
        } else {
            LoadError::BadLength {
                expected: HEADER_BYTES as u64,
                actual,
            }
        });
    }
    let (h, body) = bytes.split_at(HEADER_BYTES);
    if h[..8] != MAGIC {
        return Err(LoadError::BadMagic);
    }
    let (version, len, crc) = parse_header(h)?;
    if len != body.len() as u64 {
        return Err(LoadError::BadLength {
            expected: HEADER_BYTES as u64 + len,
            actual,
        });
    }
    if crc32c::extend(crc32c::crc32c(&h[8..22]), body) != crc {
        return Err(LoadError::Checksum);
    }
    Ok(Checkpoint {
        version,
        body: body.to_vec(),
    })
}

/// (caller version, body length, unmasked CRC) from a header whose magic matched.
fn parse_header(h: &[u8]) -> Result<(u32, u64, u32), LoadError> {
    let env = u16::from_le_bytes([h[8], h[9]]);
    if env != ENVELOPE_VERSION {
        return Err(LoadError::UnsupportedEnvelope(env));
    }
    let version = u32::from_le_bytes(h[10..14].try_into().expect("4 bytes"));
    let len = u64::from_le_bytes(h[14..22].try_into().expect("8 bytes"));
    let crc = crc32c::unmask(u32::from_le_bytes(h[22..26].try_into().expect("4 bytes")));
    if len > MAX_BODY_BYTES {
        return Err(LoadError::TooLarge(len));
    }
    Ok((version, len, crc))
}

/// Atomically replaces `path` with a checkpoint of `body` (see the module docs for the fsyncs).
pub fn save(path: &Path, version: u32, body: &[u8]) -> io::Result<()> {
    if body.len() as u64 > MAX_BODY_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "checkpoint body larger than MAX_BODY_BYTES",
        ));
    }
    let tmp = tmp_path(path);
    let res = write_synced(&tmp, &encode(version, body)).and_then(|()| fs::rename(&tmp, path));
    if let Err(e) = res {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    sync_parent_dir(path)
}

fn write_synced(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

/// Loads the checkpoint at `path`: `Ok(None)` when there is none yet. A stale `NAME.tmp` left
/// by a crash during [`save`] is removed first (it was never committed).
pub fn load(path: &Path) -> Result<Option<Checkpoint>, LoadError> {
    match fs::remove_file(tmp_path(path)) {
        Ok(()) => sync_parent_dir(path)?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e.into()),
    }
    let mut f = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let actual = f.metadata()?.len();
    // Check the header before allocating for the body, so a damaged length cannot make us
    // allocate a gigabyte.
    if actual < HEADER_BYTES as u64 {
        let mut all = Vec::new();
        f.read_to_end(&mut all)?;
        return decode(&all).map(Some);
    }
    let mut h = [0u8; HEADER_BYTES];
    f.read_exact(&mut h)?;
    if h[..8] != MAGIC {
        return Err(LoadError::BadMagic);
    }
    let (_, len, _) = parse_header(&h)?;
    if actual != HEADER_BYTES as u64 + len {
        return Err(LoadError::BadLength {
            expected: HEADER_BYTES as u64 + len,
            actual,
        });
    }
    let mut bytes = Vec::with_capacity(actual as usize);
    bytes.extend_from_slice(&h);
    f.take(len).read_to_end(&mut bytes)?;
    decode(&bytes).map(Some)
}

#[cfg(test)]
#[path = "checkpoint_tests.rs"]
mod tests;
