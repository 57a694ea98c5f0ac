//! `spinneret extract [-o DIR] FILE…`: the main content of HTML files as plain text (README,
//! "Extracting text"), by `content::MainText`, the crawl's own extractor.
//!
//! Each FILE is read whole (at most [`MAX_HTML_BYTES`] of HTML: a larger file, or a gzip
//! that inflates past it, is cut there, as the crawl cuts a body at `--max-scan-bytes`),
//! inflated when it is gzip (by its magic bytes, whatever its name), and its reader text
//! (`MainText::reader_text`: the densest run's blocks that are not link text) written to
//! `DIR/NAME.txt`, NAME the file's name without `.gz` and then `.html` or `.htm`; without
//! `-o` the one FILE's text goes to stdout. A file that cannot be read, or is a WARC file,
//! gets a line on stderr and the rest go on; the exit status then says so. One `MainText`
//! serves every file, its buffers reused.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, BufReader, Read, Write};
use std::path::{Path, PathBuf};

use flate2::bufread::MultiGzDecoder;

use crate::app::cli::ExtractArgs;
use crate::app::exit::{usage, ExitStatus, Failure};
use crate::content::MainText;

/// HTML read from one file, after inflating: a hostile gzip cannot make the process hold
/// more (the crawl's own limit per page is far lower, `--max-scan-bytes`).
pub const MAX_HTML_BYTES: u64 = 64 << 20;

/// Why one file gave no text.
#[derive(Debug)]
enum FileError {
    Read(io::Error),
    Warc,
    Write(PathBuf, io::Error),
}

impl std::fmt::Display for FileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FileError::Read(e) => write!(f, "{e}"),
            FileError::Warc => write!(f, "a WARC file; extract reads HTML files"),
            FileError::Write(p, e) => write!(f, "writing {}: {e}", p.display()),
        }
    }
}

pub fn run(args: &ExtractArgs) -> Result<ExitStatus, Failure> {
    if args.out.is_none() && args.files.len() != 1 {
        return Err(usage(format!(
            "extract: {} files and no -o DIR: give -o DIR, or one file for stdout",
            args.files.len()
        )));
    }
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir)
            .map_err(|e| Failure::Output(format!("{}: {e}", dir.display())))?;
    }
    let mut extractor = Extractor::default();
    let mut failed = 0usize;
    for file in &args.files {
        let result = match &args.out {
            Some(dir) => extractor.write_to_dir(file, dir),
            None => extractor.write_to_stdout(file),
        };
        if let Err(e) = result {
            eprintln!("spinneret extract: {}: {e}", file.display());
            failed += 1;
        }
    }
    if failed > 0 {
        eprintln!(
            "spinneret extract: {failed} of {} files gave no text",
            args.files.len()
        );
        return Ok(ExitStatus::Runtime);
    }
    Ok(ExitStatus::Ok)
}

/// The buffers kept across files.
#[derive(Default)]
struct Extractor {
    html: Vec<u8>,
    text: Vec<u8>,
    main: MainText,
}

impl Extractor {
    fn write_to_dir(&mut self, file: &Path, dir: &Path) -> Result<(), FileError> {
        self.extract(file)?;
        let out = dir.join(output_name(file));
        std::fs::write(&out, &self.text).map_err(|e| FileError::Write(out, e))
    }

    fn write_to_stdout(&mut self, file: &Path) -> Result<(), FileError> {
        self.extract(file)?;
        let mut stdout = io::stdout().lock();
        stdout
            .write_all(&self.text)
            .and_then(|()| stdout.flush())
            .map_err(|e| FileError::Write(PathBuf::from("stdout"), e))
    }

    /// Reads `file` into `self.html` and its text into `self.text`.
    fn extract(&mut self, file: &Path) -> Result<(), FileError> {
        read_html(file, &mut self.html).map_err(FileError::Read)?;
        if self.html.starts_with(b"WARC/") {
            return Err(FileError::Warc);
        }
        self.main.extract(&self.html, self.html.len());
        self.text.clear();
        self.main.reader_text(&mut self.text);
        if !self.text.is_empty() {
            self.text.push(b'\n');
        }
        Ok(())
    }
}

/// Reads at most [`MAX_HTML_BYTES`] of `file` into `out`, inflated if it is gzip.
fn read_html(file: &Path, out: &mut Vec<u8>) -> io::Result<()> {
    out.clear();
    let mut r = BufReader::with_capacity(64 * 1024, File::open(file)?);
    let gzip = {
        let head = std::io::BufRead::fill_buf(&mut r)?;
        head.starts_with(&[0x1f, 0x8b])
    };
    if gzip {
        MultiGzDecoder::new(r)
            .take(MAX_HTML_BYTES)
            .read_to_end(out)?;
    } else {
        r.take(MAX_HTML_BYTES).read_to_end(out)?;
    }
    Ok(())
}

/// `NAME.txt` for `file`: its name without `.gz`, then without `.html` or `.htm`.
fn output_name(file: &Path) -> PathBuf {
    let name = file.file_name().unwrap_or(OsStr::new("page"));
    let mut stem = Path::new(name).to_path_buf();
    for ext in ["gz", "html", "htm"] {
        if stem
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case(ext))
        {
            stem.set_extension("");
            if ext != "gz" {
                break;
            }
        }
    }
    let mut out = stem.into_os_string();
    out.push(".txt");
    PathBuf::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_names_drop_gz_then_html() {
        for (file, name) in [
            ("a/0001.html.gz", "0001.txt"),
            ("page.htm", "page.txt"),
            ("PAGE.HTML", "PAGE.txt"),
            ("x.gz", "x.txt"),
            ("notes", "notes.txt"),
            ("report.pdf.gz", "report.pdf.txt"),
        ] {
            assert_eq!(output_name(Path::new(file)), PathBuf::from(name), "{file}");
        }
    }
}
