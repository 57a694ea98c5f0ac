//! `spinneret extract [-o DIR] FILE…`: the main content of HTML files as plain text, and of
//! WARC files as WET files (README, "Extracting text"), by `content::MainText`, the crawl's
//! own extractor.
//!
//! An HTML FILE is read whole (at most [`MAX_PAGE_BYTES`] of HTML: a larger file, or a gzip
//! that inflates past it, is cut there, as the crawl cuts a body at `--max-scan-bytes`),
//! inflated when it is gzip (by its magic bytes, whatever its name), and its reader text
//! (`MainText::reader_text`: the blocks `content::reader` chooses) written to
//! `DIR/NAME.txt`, NAME the file's name without `.gz` and then `.html` or `.htm`; without
//! `-o` the one FILE's text goes to stdout.
//!
//! A WARC file (its content says so: `WARC/1.0` or `WARC/1.1` first, plain or gzip) is read
//! record by record (`store::archive::warc::stream`), and every `response` record holding an
//! HTML page (2xx, an HTML Content-Type or none and markup first; transfer and content
//! codings undone) gets a `conversion` record in `NAME.wet.gz` (`X.warc.gz` →
//! `X.warc.wet.gz`), in DIR or beside FILE (`store::archive::wet`); with `--markdown` also a
//! line in `X.warc.md.jsonl` (`store::archive::page_lines`).
//!
//! A file that cannot be read gets a line on stderr and the rest go on; the exit status then
//! says so. One `MainText` serves every file, its buffers reused.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, BufReader, Read, Write};
use std::path::{Path, PathBuf};

use flate2::bufread::MultiGzDecoder;

use crate::app::cli::ExtractArgs;
use crate::app::exit::{usage, ExitStatus, Failure};
use crate::content::{markdown, MainText};

use crate::store::archive::page_lines::{PageLine, PageLines};
use crate::store::archive::warc::stream::{StreamError, StreamRecord, WarcStream};
use crate::store::archive::warc::WarcInfo;
use crate::store::archive::wet::{response_html, WetWriter, MAX_PAGE_BYTES};

/// Why one file gave no text.
#[derive(Debug)]
enum FileError {
    Read(io::Error),
    Warc(StreamError),
    Write(PathBuf, io::Error),
}

impl std::fmt::Display for FileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FileError::Read(e) => write!(f, "{e}"),
            FileError::Warc(e) => write!(f, "{e}"),
            FileError::Write(p, e) => write!(f, "writing {}: {e}", p.display()),
        }
    }
}

pub fn run(args: &ExtractArgs) -> Result<ExitStatus, Failure> {
    // Told once per file by its first bytes: a WARC file or an HTML one.
    let warc: Vec<bool> = args.files.iter().map(|f| is_warc(f)).collect();
    let html_files = warc.iter().filter(|w| !**w).count();
    if args.out.is_none() && html_files > 1 {
        return Err(usage(format!(
            "extract: {} files and no -o DIR: give -o DIR, or one file for stdout",
            args.files.len()
        )));
    }
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir)
            .map_err(|e| Failure::Output(format!("{}: {e}", dir.display())))?;
    }
    let mut extractor = Extractor {
        markdown: args.markdown,
        ..Extractor::default()
    };
    let mut failed = 0usize;
    for (file, &is_warc) in args.files.iter().zip(&warc) {
        let result = match &args.out {
            _ if is_warc => extractor.wet(file, args.out.as_deref()),
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
    /// HTML files give Markdown, not plain text.
    markdown: bool,
    html: Vec<u8>,
    text: Vec<u8>,
    main: MainText,
    record: StreamRecord,
    md: Vec<u8>,
    title: Vec<u8>,
}

impl Extractor {
    /// Converts the WARC file `file` into a WET file in `dir`, or beside it.
    fn wet(&mut self, file: &Path, dir: Option<&Path>) -> Result<(), FileError> {
        let out = dir.unwrap_or(file.parent().unwrap_or(Path::new(".")));
        let out = out.join(derived_name(file, ".wet.gz"));
        let mut stream = WarcStream::open(file).map_err(FileError::Read)?;
        let info = WarcInfo {
            software: format!("spinneret/{} extract", env!("CARGO_PKG_VERSION")),
            description: Some(format!("text of {}", file.display())),
            ..WarcInfo::default()
        };
        let mut wet = WetWriter::create(&out, &info, std::time::SystemTime::now(), 1)
            .map_err(|e| FileError::Write(out.clone(), e))?;
        let lines_path = out.with_file_name(derived_name(file, ".md.jsonl"));
        let mut lines = match self.markdown {
            true => match PageLines::create(&lines_path) {
                Ok(l) => Some(l),
                Err(e) => {
                    let _ = wet.abandon();
                    return Err(FileError::Write(lines_path, e));
                }
            },
            false => None,
        };
        let name = file.file_name().unwrap_or_default().to_string_lossy();
        match self.convert(&mut stream, &mut wet, lines.as_mut(), &name, &out) {
            Ok(()) => {
                wet.finish().map_err(|e| FileError::Write(out, e))?;
                if let Some(l) = lines {
                    l.finish().map_err(|e| FileError::Write(lines_path, e))?;
                }
                Ok(())
            }
            Err(e) => {
                let _ = wet.abandon();
                if let Some(l) = lines {
                    let _ = l.abandon();
                }
                Err(e)
            }
        }
    }

    /// Writes a conversion record to `wet`, and a line to `lines`, for every HTML response
    /// of `stream` (the file `warc_file`).
    fn convert(
        &mut self,
        stream: &mut WarcStream,
        wet: &mut WetWriter,
        mut lines: Option<&mut PageLines>,
        warc_file: &str,
        out: &Path,
    ) -> Result<(), FileError> {
        let write_err = |e| FileError::Write(out.to_path_buf(), e);
        // Bound: each turn reads one record of the file.
        while stream
            .next_record(MAX_PAGE_BYTES as usize, &mut self.record)
            .map_err(FileError::Warc)?
        {
            let Some(status) = response_html(&self.record, &mut self.html) else {
                continue;
            };
            let html = &self.html;
            self.main.extract(html, html.len());
            self.text.clear();
            self.main.reader_text(&mut self.text);
            let r = &self.record;
            let field = |name| r.header(name).unwrap_or("");
            wet.conversion(
                field("WARC-Target-URI"),
                field("WARC-Date"),
                field("WARC-Record-ID"),
                &self.text,
            )
            .map_err(write_err)?;
            if let Some(lines) = lines.as_deref_mut() {
                self.md.clear();
                markdown(&self.main, html, &mut self.md);
                self.title.clear();
                self.main.title(html, &mut self.title);
                lines
                    .push(&PageLine {
                        url: field("WARC-Target-URI"),
                        fetched: field("WARC-Date"),
                        status,
                        title: &self.title,
                        lang: self.main.lang(),
                        markdown: &self.md,
                        warc_file,
                        warc_offset: r.offset,
                    })
                    .map_err(write_err)?;
            }
        }
        Ok(())
    }

    fn write_to_dir(&mut self, file: &Path, dir: &Path) -> Result<(), FileError> {
        self.extract(file)?;
        let out = dir.join(output_name(file, self.markdown));
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
        self.main.extract(&self.html, self.html.len());
        self.text.clear();
        if self.markdown {
            markdown(&self.main, &self.html, &mut self.text);
        } else {
            self.main.reader_text(&mut self.text);
            if !self.text.is_empty() {
                self.text.push(b'\n');
            }
        }
        Ok(())
    }
}

/// Whether `file` is a WARC file: its first bytes, inflated if it is gzip, are `WARC/1.`.
/// A file that cannot be read is not (its HTML read then reports why).
fn is_warc(file: &Path) -> bool {
    let mut start = [0u8; 7];
    match open_inflated(file) {
        Ok(r) => read_up_to(r, &mut start) == start.len() && &start == b"WARC/1.",
        Err(_) => false,
    }
}

/// Reads until `buf` is full or the input ends (or fails): the bytes read.
fn read_up_to(mut r: impl Read, buf: &mut [u8]) -> usize {
    let mut n = 0;
    // Bound: every turn reads at least one byte or ends.
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) | Err(_) => break,
            Ok(k) => n += k,
        }
    }
    n
}

/// `file` to read, inflated when it is gzip (by its magic bytes, whatever its name).
fn open_inflated(file: &Path) -> io::Result<Box<dyn Read>> {
    let mut r = BufReader::with_capacity(64 * 1024, File::open(file)?);
    let gzip = std::io::BufRead::fill_buf(&mut r)?.starts_with(&[0x1f, 0x8b]);
    Ok(if gzip {
        Box::new(MultiGzDecoder::new(r))
    } else {
        Box::new(r)
    })
}

/// Reads at most [`MAX_PAGE_BYTES`] of `file` into `out`, inflated if it is gzip.
fn read_html(file: &Path, out: &mut Vec<u8>) -> io::Result<()> {
    out.clear();
    open_inflated(file)?.take(MAX_PAGE_BYTES).read_to_end(out)?;
    Ok(())
}

/// A file derived from the WARC `file`: its name without `.gz`, then `suffix` (`.wet.gz`:
/// `X.warc.gz` → `X.warc.wet.gz`, as Common Crawl names them; `.md.jsonl`).
fn derived_name(file: &Path, suffix: &str) -> PathBuf {
    let name = file.file_name().unwrap_or(OsStr::new("warc"));
    let name = name.to_string_lossy();
    let stem = name.strip_suffix(".gz").unwrap_or(&name);
    PathBuf::from(format!("{stem}{suffix}"))
}

/// `NAME.txt` (or `NAME.md`) for `file`: its name without `.gz`, then without `.html` or
/// `.htm`.
fn output_name(file: &Path, markdown: bool) -> PathBuf {
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
    out.push(if markdown { ".md" } else { ".txt" });
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
            assert_eq!(
                output_name(Path::new(file), false),
                PathBuf::from(name),
                "{file}"
            );
        }
        assert_eq!(
            output_name(Path::new("a.html"), true),
            PathBuf::from("a.md")
        );
        for (file, name) in [
            ("d/x.warc.gz", "x.warc.wet.gz"),
            ("x.warc", "x.warc.wet.gz"),
        ] {
            assert_eq!(
                derived_name(Path::new(file), ".wet.gz"),
                PathBuf::from(name),
                "{file}"
            );
        }
    }
}
