//! A fresh, empty directory per test, removed when the guard drops.

use std::fs;
use std::path::PathBuf;

pub(crate) struct TempDir(pub(crate) PathBuf);

impl TempDir {
    /// `spinneret-{module}-{pid}-{tag}` under the system's temporary directory, emptied.
    pub(crate) fn new(module: &str, tag: &str) -> TempDir {
        let d =
            std::env::temp_dir().join(format!("spinneret-{module}-{}-{tag}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        TempDir(d)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}
