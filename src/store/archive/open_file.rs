//! A file written under `NAME.open` and renamed to NAME when complete (flushed and synced
//! first), or removed when given up: a file with its final name is always whole, and a run
//! stopped part way leaves only `.open`. For files written start to end in one go (WET and
//! JSONL of `spinneret extract`); the WARC writer rotates and recovers its own.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

pub struct OpenFile {
    out: BufWriter<File>,
    open: PathBuf,
    path: PathBuf,
    /// Bytes written so far (some perhaps still in `out`'s buffer).
    len: u64,
}

impl OpenFile {
    /// Creates `path.open` (truncating one a stopped run left).
    pub fn create(path: &Path) -> io::Result<OpenFile> {
        let mut open = path.as_os_str().to_owned();
        open.push(".open");
        let open = PathBuf::from(open);
        Ok(OpenFile {
            out: BufWriter::with_capacity(64 * 1024, File::create(&open)?),
            open,
            path: path.to_path_buf(),
            len: 0,
        })
    }

    /// Appends `bytes`.
    pub fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.write_all(bytes)?;
        self.len += bytes.len() as u64;
        Ok(())
    }

    /// Bytes written so far: the file's length once flushed.
    pub fn bytes_written(&self) -> u64 {
        self.len
    }

    /// Hands what is buffered to the OS (enough for a kill); with `sync` also fsyncs it
    /// (enough for a power cut).
    pub fn flush(&mut self, sync: bool) -> io::Result<()> {
        self.out.flush()?;
        if sync {
            self.out.get_ref().sync_data()?;
        }
        Ok(())
    }

    /// The name the file will have.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Flushes and syncs the file and gives it its name.
    pub fn finish(mut self) -> io::Result<PathBuf> {
        self.out.flush()?;
        self.out.get_ref().sync_all()?;
        std::fs::rename(&self.open, &self.path)?;
        Ok(self.path)
    }

    /// Gives up the file: what was written of it is removed.
    pub fn abandon(self) -> io::Result<()> {
        drop(self.out);
        std::fs::remove_file(&self.open)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::test_dir::TempDir;

    #[test]
    fn named_only_when_finished_and_gone_when_abandoned() {
        let dir = TempDir::new("open-file", "name");
        let path = dir.0.join("x.jsonl");
        let mut f = OpenFile::create(&path).unwrap();
        f.write_all(b"line\n").unwrap();
        assert_eq!(f.bytes_written(), 5);
        assert!(!path.exists() && dir.0.join("x.jsonl.open").exists());
        assert_eq!(f.finish().unwrap(), path);
        assert_eq!(std::fs::read(&path).unwrap(), b"line\n");
        assert!(!dir.0.join("x.jsonl.open").exists());
        let gone = dir.0.join("y.jsonl");
        let mut f = OpenFile::create(&gone).unwrap();
        f.write_all(b"half").unwrap();
        f.abandon().unwrap();
        assert!(!gone.exists() && !dir.0.join("y.jsonl.open").exists());
    }
}
