//! The integration tests' layout: each crate's are one binary, `tests/tests.rs`, which names
//! every other file in `tests/` as a module (cargo's autotests are off, so it finds none).

use std::io;
use std::path::Path;

/// The files in `tests_dir` (`NAME.rs`, `tests.rs` aside) that `tests.rs` does not declare as
/// `mod NAME;`: with autotests off, their tests would never run.
pub fn files_not_in_it(tests_dir: &Path) -> io::Result<Vec<String>> {
    let root = std::fs::read_to_string(tests_dir.join("tests.rs"))?;
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(tests_dir)? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if let Some(module) = name.strip_suffix(".rs").filter(|m| *m != "tests") {
            let declared = format!("mod {module};");
            if !root.lines().any(|l| l.trim() == declared) {
                missing.push(name);
            }
        }
    }
    missing.sort();
    Ok(missing)
}

/// Panics unless `MANIFEST_DIR/tests/tests.rs` declares every file beside it: each crate's
/// integration binary calls it as a test.
pub fn assert_holds_every_file(manifest_dir: &str) {
    let missing = files_not_in_it(&Path::new(manifest_dir).join("tests")).unwrap();
    assert!(
        missing.is_empty(),
        "not modules of tests/tests.rs, so never run: {missing:?}"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_not_declared_is_named() {
        let dir = std::env::temp_dir().join(format!("test-binary-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("common")).unwrap();
        std::fs::write(dir.join("tests.rs"), "mod common;\n\nmod a;\n// mod b;\n").unwrap();
        for f in ["a.rs", "b.rs", "common/mod.rs", "notes.md"] {
            std::fs::write(dir.join(f), "").unwrap();
        }
        assert_eq!(files_not_in_it(&dir).unwrap(), ["b.rs"]);
        std::fs::write(dir.join("tests.rs"), "mod a;\nmod b;\n").unwrap();
        assert!(files_not_in_it(&dir).unwrap().is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
