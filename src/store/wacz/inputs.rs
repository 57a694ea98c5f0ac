//! What a package is made of, found in crawl directories: each WARC file (`*.warc.gz`, or
//! `*.warc`) with its CDXJ index beside it (`NAME.cdxj`, which the crawl writes when the file
//! closes), and its text companions when the crawl kept them (`--text`: `X.warc.wet.gz`,
//! `--markdown`: `X.warc.md.jsonl`). A file still `.open` (a crawl running, or killed and
//! not yet resumed) is left out and named, so the caller can say so.

use std::fs;
use std::path::{Path, PathBuf};

use super::WaczError;
use crate::store::archive::text_sides::companion_names;

/// One WARC file and the files beside it that describe it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WarcInput {
    pub path: PathBuf,
    /// Its file name: its name in the package (`archive/NAME`) and in the index lines.
    pub name: String,
    pub size: u64,
    pub cdxj: PathBuf,
    /// `X.warc.wet.gz`, when there.
    pub wet: Option<PathBuf>,
    /// `X.warc.md.jsonl`, when there.
    pub markdown: Option<PathBuf>,
}

/// Everything found in the directories.
#[derive(Debug, Default)]
pub struct Inputs {
    /// In the order of the directories given, each directory's by name.
    pub warcs: Vec<WarcInput>,
    /// WARC files left out because they are still `.open`.
    pub open: Vec<PathBuf>,
}

/// The WARC files of `dirs` and their companions; an error for a directory that is missing
/// or holds no closed WARC file, a WARC file without its index, or two WARC files of one
/// name (the index names files without their directory).
pub fn find(dirs: &[PathBuf]) -> Result<Inputs, WaczError> {
    let mut inputs = Inputs::default();
    for dir in dirs {
        let io = |e| WaczError::Io(dir.clone(), e);
        if !dir.is_dir() {
            return Err(WaczError::NotADirectory(dir.clone()));
        }
        let mut names = Vec::new();
        for entry in fs::read_dir(dir).map_err(io)? {
            let name = entry.map_err(io)?.file_name();
            let Some(name) = name.to_str() else { continue };
            if name.starts_with('.') {
                continue;
            }
            if name.ends_with(".warc.gz.open") || name.ends_with(".warc.open") {
                inputs.open.push(dir.join(name));
            } else if is_warc(name) {
                names.push(name.to_string());
            }
        }
        if names.is_empty() {
            return Err(WaczError::NoWarc(dir.clone()));
        }
        names.sort();
        for name in names {
            if let Some(first) = inputs.warcs.iter().find(|w| w.name == name) {
                return Err(WaczError::SameName {
                    first: first.path.clone(),
                    second: dir.join(&name),
                });
            }
            inputs.warcs.push(one(dir, name)?);
        }
    }
    inputs.open.sort();
    Ok(inputs)
}

/// A WARC file by its name: `.warc.gz` or `.warc` (not the WET files beside them).
fn is_warc(name: &str) -> bool {
    (name.ends_with(".warc.gz") || name.ends_with(".warc")) && !name.ends_with(".wet.gz")
}

fn one(dir: &Path, name: String) -> Result<WarcInput, WaczError> {
    let path = dir.join(&name);
    let size = fs::metadata(&path)
        .map_err(|e| WaczError::Io(path.clone(), e))?
        .len();
    let stem = name
        .strip_suffix(".warc.gz")
        .or_else(|| name.strip_suffix(".warc"))
        .unwrap_or(&name);
    let cdxj = dir.join(format!("{stem}.cdxj"));
    if !cdxj.is_file() {
        return Err(WaczError::NoIndex { warc: path, cdxj });
    }
    let (wet, markdown) = companion_names(&name);
    let there = |n: String| Some(dir.join(n)).filter(|p| p.is_file());
    Ok(WarcInput {
        path,
        size,
        cdxj,
        wet: there(wet),
        markdown: there(markdown),
        name,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::test_dir::TempDir;

    #[test]
    fn warc_files_come_with_their_index_and_text_and_open_ones_are_named() {
        let d = TempDir::new("wacz-inputs", "found");
        for f in [
            "c-00001.warc.gz",
            "c-00001.cdxj",
            "c-00001.warc.wet.gz",
            "c-00001.warc.md.jsonl",
            "c-00000.warc.gz",
            "c-00000.cdxj",
            "c-00002.warc.gz.open",
            "crawl.log",
        ] {
            fs::write(d.0.join(f), b"x").unwrap();
        }
        let found = find(std::slice::from_ref(&d.0)).unwrap();
        let names: Vec<&str> = found.warcs.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(names, ["c-00000.warc.gz", "c-00001.warc.gz"]);
        assert_eq!(found.warcs[0].wet, None);
        assert_eq!(found.warcs[1].wet, Some(d.0.join("c-00001.warc.wet.gz")));
        assert_eq!(
            found.warcs[1].markdown,
            Some(d.0.join("c-00001.warc.md.jsonl"))
        );
        assert_eq!(found.open, [d.0.join("c-00002.warc.gz.open")]);
    }

    #[test]
    fn bad_directories_are_refused_with_the_reason() {
        let d = TempDir::new("wacz-inputs", "bad");
        let missing = d.0.join("nope");
        assert!(matches!(
            find(std::slice::from_ref(&missing)),
            Err(WaczError::NotADirectory(p)) if p == missing
        ));
        let empty = d.0.join("empty");
        fs::create_dir(&empty).unwrap();
        fs::write(empty.join("crawl.log"), b"").unwrap();
        assert!(matches!(
            find(std::slice::from_ref(&empty)),
            Err(WaczError::NoWarc(p)) if p == empty
        ));
        let unindexed = d.0.join("unindexed");
        fs::create_dir(&unindexed).unwrap();
        fs::write(unindexed.join("a.warc.gz"), b"").unwrap();
        let err = find(std::slice::from_ref(&unindexed)).unwrap_err();
        assert!(matches!(err, WaczError::NoIndex { .. }), "{err}");
        // Two directories with a file of one name: the index could not tell them apart.
        let (a, b) = (d.0.join("a"), d.0.join("b"));
        for dir in [&a, &b] {
            fs::create_dir(dir).unwrap();
            fs::write(dir.join("c-00000.warc.gz"), b"").unwrap();
            fs::write(dir.join("c-00000.cdxj"), b"").unwrap();
        }
        let err = find(&[a.clone(), b.clone()]).unwrap_err();
        assert!(
            matches!(&err, WaczError::SameName { first, second }
                if *first == a.join("c-00000.warc.gz") && *second == b.join("c-00000.warc.gz")),
            "{err}"
        );
    }
}
