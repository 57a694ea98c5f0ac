//! WACZ packages (Web Archive Collection Zipped, 1.1.1): a crawl's WARC files, one sorted
//! index, its page list and a manifest in one ZIP file that ReplayWeb.page opens in a
//! browser and pywb replays. Several directories (a `--loops N` crawl is one; cluster nodes
//! are several) pack into one package.
//!
//! The package is written in one pass, file by file, into `OUT.open` (renamed to `OUT` when
//! whole, so `OUT` is never half a package): each WARC file copied once as a stored entry,
//! its SHA-256 and CRC-32 taken as it passes ([`zip`]); the index merged from the per-file
//! CDXJ ([`index`]); the pages from those indexes and the crawl's text ([`pages`]); then the
//! manifest ([`datapackage`]), which lists what was written. Memory does not grow with the
//! crawl: a copy buffer, the merge's read buffers, one WARC file's page list, and one line
//! of the manifest per file. The files are found by [`inputs`].

pub mod datapackage;
pub mod index;
pub mod inputs;
pub mod pages;
pub mod zip;

use std::fmt;
use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use datapackage::Resource;
use index::{IndexForm, LineCount, ZipNumWriter};
use zip::ZipWriter;

/// What went wrong, naming the file.
#[derive(Debug)]
pub enum WaczError {
    NotADirectory(PathBuf),
    /// The directory holds no closed WARC file.
    NoWarc(PathBuf),
    /// A WARC file without its CDXJ beside it.
    NoIndex {
        warc: PathBuf,
        cdxj: PathBuf,
    },
    /// Two WARC files of one name in different directories.
    SameName {
        first: PathBuf,
        second: PathBuf,
    },
    /// An index line that is not `KEY TIMESTAMP {JSON}` with a `url` and an `offset`.
    BadIndexLine(PathBuf),
    /// A WET file that cannot be read as WARC.
    Wet(PathBuf, String),
    Io(PathBuf, io::Error),
}

impl fmt::Display for WaczError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WaczError::NotADirectory(d) => write!(f, "{}: no such directory", d.display()),
            WaczError::NoWarc(d) => write!(
                f,
                "{}: no WARC file (*.warc.gz) to pack (a crawl's files still .open are \
                 closed by `spinneret resume`)",
                d.display()
            ),
            WaczError::NoIndex { warc, cdxj } => write!(
                f,
                "{}: no CDXJ index beside it ({}); the crawl writes one when the file closes",
                warc.display(),
                cdxj.display()
            ),
            WaczError::SameName { first, second } => write!(
                f,
                "{} and {} have the same name: a package holds files by name (give each \
                 crawl its own --warc-prefix)",
                first.display(),
                second.display()
            ),
            WaczError::BadIndexLine(p) => write!(f, "{}: not a CDXJ index line", p.display()),
            WaczError::Wet(p, e) => write!(f, "{}: {e}", p.display()),
            WaczError::Io(p, e) => write!(f, "{}: {e}", p.display()),
        }
    }
}

impl std::error::Error for WaczError {}

/// How to pack.
#[derive(Clone, Debug)]
pub struct PackOptions {
    pub index: IndexForm,
    /// The manifest's `title`.
    pub title: String,
    pub created: SystemTime,
}

/// What was packed.
#[derive(Debug, Default)]
pub struct Packed {
    pub warc_files: usize,
    pub warc_bytes: u64,
    pub index_lines: u64,
    /// `Plain` or `Compressed`.
    pub index: Option<IndexForm>,
    pub pages: u64,
    /// The package's size.
    pub bytes: u64,
    /// WARC files left out because they are still `.open`.
    pub skipped_open: Vec<PathBuf>,
}

/// The software the manifest names.
pub const SOFTWARE: &str = concat!("spinneret ", env!("CARGO_PKG_VERSION"));
/// Read size of the WARC copy.
const COPY_BYTES: usize = 1 << 20;
/// Per-file indexes read at once by the merge (each with a 64 KiB buffer).
const MERGE_FAN_IN: usize = 64;

/// The name a package is written under until it is whole.
pub fn open_name(out: &Path) -> PathBuf {
    let mut name = out.as_os_str().to_owned();
    name.push(".open");
    PathBuf::from(name)
}

/// Packs the crawls in `dirs` into `out` (replaced if there).
pub fn pack(dirs: &[PathBuf], out: &Path, opts: &PackOptions) -> Result<Packed, WaczError> {
    let found = inputs::find(dirs)?;
    let open = open_name(out);
    let result = write_package(&found, &open, opts);
    match result {
        Ok(mut packed) => {
            fs::rename(&open, out).map_err(|e| WaczError::Io(out.to_path_buf(), e))?;
            packed.skipped_open = found.open;
            Ok(packed)
        }
        Err(e) => {
            let _ = fs::remove_file(&open);
            Err(e)
        }
    }
}

fn write_package(
    found: &inputs::Inputs,
    path: &Path,
    opts: &PackOptions,
) -> Result<Packed, WaczError> {
    let io_out = |e| WaczError::Io(path.to_path_buf(), e);
    let file = File::create(path).map_err(io_out)?;
    let mut zip = ZipWriter::new(file, opts.created);
    let mut resources = Vec::new();
    let mut packed = Packed::default();
    let mut buf = vec![0u8; COPY_BYTES];
    for w in &found.warcs {
        let name = format!("archive/{}", w.name);
        let mut src = File::open(&w.path).map_err(|e| WaczError::Io(w.path.clone(), e))?;
        let mut entry = zip.entry(&name, Some(w.size)).map_err(io_out)?;
        // Bounded by the file's size (checked against the header when the entry ends).
        loop {
            let n = src
                .read(&mut buf)
                .map_err(|e| WaczError::Io(w.path.clone(), e))?;
            if n == 0 {
                break;
            }
            io::Write::write_all(&mut entry, &buf[..n]).map_err(io_out)?;
        }
        let written = entry.finish().map_err(io_out)?;
        packed.warc_files += 1;
        packed.warc_bytes += written.size;
        resources.push(Resource {
            path: name,
            bytes: written.size,
            sha256: written.sha256,
        });
    }
    drop(buf);

    // The index.
    let mut index_files = Vec::with_capacity(found.warcs.len());
    let mut index_bytes = 0u64;
    for w in &found.warcs {
        let f = File::open(&w.cdxj).map_err(|e| WaczError::Io(w.cdxj.clone(), e))?;
        index_bytes += f.metadata().map(|m| m.len()).unwrap_or(0);
        index_files.push(f);
    }
    let form = opts.index.decide(index_bytes);
    let scratch = path.with_extension("sort");
    let merge_err = |e| WaczError::Io(scratch.clone(), e);
    if form == IndexForm::Plain {
        let name = "indexes/index.cdx";
        let mut entry = LineCount {
            inner: zip.entry(name, None).map_err(io_out)?,
            lines: 0,
        };
        crate::store::archive::line_sort::merge_sorted_files(
            index_files,
            &scratch,
            MERGE_FAN_IN,
            &mut entry,
        )
        .map_err(merge_err)?;
        packed.index_lines = entry.lines;
        let written = entry.inner.finish().map_err(io_out)?;
        resources.push(Resource {
            path: name.into(),
            bytes: written.size,
            sha256: written.sha256,
        });
    } else {
        let name = "indexes/index.cdx.gz";
        let mut blocks = ZipNumWriter::new(zip.entry(name, None).map_err(io_out)?, "index.cdx.gz");
        crate::store::archive::line_sort::merge_sorted_files(
            index_files,
            &scratch,
            MERGE_FAN_IN,
            &mut blocks,
        )
        .map_err(merge_err)?;
        packed.index_lines = blocks.lines;
        // The data entry ends before the `.idx` entry begins.
        let (idx, entry) = blocks.finish_into().map_err(io_out)?;
        let written = entry.finish().map_err(io_out)?;
        resources.push(Resource {
            path: name.into(),
            bytes: written.size,
            sha256: written.sha256,
        });
        let idx_name = "indexes/index.idx";
        let mut entry = zip
            .entry(idx_name, Some(idx.len() as u64))
            .map_err(io_out)?;
        io::Write::write_all(&mut entry, &idx).map_err(io_out)?;
        let written = entry.finish().map_err(io_out)?;
        resources.push(Resource {
            path: idx_name.into(),
            bytes: written.size,
            sha256: written.sha256,
        });
    }
    packed.index = Some(form);

    // The pages.
    let name = "pages/pages.jsonl";
    let mut entry = zip.entry(name, None).map_err(io_out)?;
    let has_text = found.warcs.iter().any(|w| w.wet.is_some());
    io::Write::write_all(&mut entry, &pages::header(has_text)).map_err(io_out)?;
    for (i, w) in found.warcs.iter().enumerate() {
        packed.pages += pages::write_pages(i, w, &mut entry)?;
    }
    let written = entry.finish().map_err(io_out)?;
    resources.push(Resource {
        path: name.into(),
        bytes: written.size,
        sha256: written.sha256,
    });

    // The manifest, and its digest.
    let created = crate::datetime::rfc3339(opts.created);
    let manifest = datapackage::manifest(&resources, &opts.title, SOFTWARE, &created);
    for (name, bytes) in [
        ("datapackage.json", manifest.clone()),
        ("datapackage-digest.json", datapackage::digest(&manifest)),
    ] {
        let mut entry = zip.entry(name, Some(bytes.len() as u64)).map_err(io_out)?;
        io::Write::write_all(&mut entry, &bytes).map_err(io_out)?;
        entry.finish().map_err(io_out)?;
    }
    let file = zip.finish().map_err(io_out)?;
    file.sync_all().map_err(io_out)?;
    packed.bytes = file.metadata().map_err(io_out)?.len();
    Ok(packed)
}
