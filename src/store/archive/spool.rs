//! The file spool: where the fetcher puts bodies too large for memory
//! ([`crate::fetcher::spool`]).
//!
//! Each spool file is created in `DIR/.spool/` and unlinked at once: the open descriptor is
//! all that names it, so its space returns to the file system when the last holder (the
//! fetch, then the WARC writer) drops it — after a normal end, Ctrl-C or kill -9 alike. Nothing
//! is ever left behind to clean up, and no file name comes from server data.

use std::fs::{self, File};
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::store::state::create_unlinked;

use crate::fetcher::spool::{Spool, SpoolFile};

/// Makes unlinked spool files in one directory.
#[derive(Debug)]
pub struct FileSpool {
    dir: PathBuf,
    next: AtomicU64,
}

impl FileSpool {
    /// Uses (and creates) `out_dir/.spool`.
    pub fn new(out_dir: &Path) -> io::Result<FileSpool> {
        let dir = out_dir.join(".spool");
        fs::create_dir_all(&dir)?;
        Ok(FileSpool {
            dir,
            next: AtomicU64::new(0),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Spool for FileSpool {
    fn create(&self) -> io::Result<Box<dyn SpoolFile>> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let path = self.dir.join(format!("{}-{n}.body", std::process::id()));
        let file = create_unlinked(&path)?;
        Ok(Box::new(SpooledBody { file, len: 0 }))
    }
}

/// One unlinked spool file.
#[derive(Debug)]
struct SpooledBody {
    file: File,
    len: u64,
}

impl SpoolFile for SpooledBody {
    fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.file.write_all(bytes)?;
        self.len += bytes.len() as u64;
        Ok(())
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let end = self.len.saturating_sub(offset);
        let n = buf.len().min(usize::try_from(end).unwrap_or(usize::MAX));
        self.file.read_at(&mut buf[..n], offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fetcher::spool::read_prefix;

    #[test]
    fn spooled_bytes_read_back_and_leave_no_file() {
        let out = std::env::temp_dir().join(format!("spinneret-spool-{}", std::process::id()));
        let spool = FileSpool::new(&out).unwrap();
        let mut f = spool.create().unwrap();
        let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        for part in data.chunks(65_536) {
            f.append(part).unwrap();
        }
        assert_eq!(f.len(), data.len() as u64);
        // Unlinked at once: the directory stays empty while the file is in use.
        assert_eq!(fs::read_dir(spool.dir()).unwrap().count(), 0);
        let mut back = Vec::new();
        read_prefix(&*f, 1_000_000, &mut back).unwrap();
        assert_eq!(back, data);
        read_prefix(&*f, 10, &mut back).unwrap();
        assert_eq!(back, data[..10]);
        let mut tail = [0u8; 100];
        assert_eq!(f.read_at(data.len() as u64 - 40, &mut tail).unwrap(), 40);
        assert_eq!(f.read_at(data.len() as u64, &mut tail).unwrap(), 0);
        drop(f);
        fs::remove_dir_all(&out).unwrap();
    }
}
