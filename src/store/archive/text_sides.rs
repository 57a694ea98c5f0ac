//! A crawl's text beside its WARC files (`--text`, `--markdown`): for WARC file
//! `X.warc.gz`, `X.warc.wet.gz` (a WET file, [`WetWriter`]: a `conversion` record per HTML
//! response) and `X.warc.md.jsonl` (a JSON line per HTML page, [`PageLines`]). The page
//! worker makes each page's text and Markdown from the main text it extracts anyway; the
//! writer thread appends them right after the page's response record, so they follow the
//! WARC file record for record.
//!
//! Durability, as for the WARC file: the companions are written as `NAME.open` and renamed
//! when complete, and they are finished before their WARC file closes (a WARC file closes only
//! right after a commit). Each commit mark records their lengths beside the WARC file's
//! (`commit_mark`), so a resume cuts them back to the same commit as the WARC file and its
//! journal ([`cut_to_marks`]) and closes them ([`recover_open`], [`recover_orphans`]): every
//! response record kept has its text, and none is there twice.

use std::fs::{self, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use super::page_lines::{PageLine, PageLines};
use super::recover::scan_members;
use super::warc::{RecordId, RecordPos, WarcInfo};
use super::wet::WetWriter;
use crate::datetime::rfc3339;
use crate::store::state::commit_mark::CommitMark;
use crate::store::state::journal::sync_parent_dir;

/// What of each HTML page's text a crawl writes beside its WARC files.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TextOut {
    /// `--text`: the WET file.
    pub wet: bool,
    /// `--markdown`: the JSONL file.
    pub markdown: bool,
}

impl TextOut {
    pub fn any(self) -> bool {
        self.wet || self.markdown
    }
}

/// One page's text, as the page worker made it.
#[derive(Debug, Default)]
pub(super) struct PageText {
    /// The reader text (`MainText::reader_text`), for the WET record.
    pub(super) text: Vec<u8>,
    pub(super) markdown: Vec<u8>,
    pub(super) title: Vec<u8>,
    pub(super) lang: Vec<u8>,
}

/// The companion names of WARC file `warc` (`X.warc.gz`, `.open` or not): the WET file's and
/// the JSONL file's, as `spinneret extract` names them.
pub fn companion_names(warc: &str) -> (String, String) {
    let warc = warc.strip_suffix(".open").unwrap_or(warc);
    let stem = warc.strip_suffix(".gz").unwrap_or(warc);
    (format!("{stem}.wet.gz"), format!("{stem}.md.jsonl"))
}

/// A partition's companions of its open WARC file.
pub(super) struct TextSides {
    out: TextOut,
    dir: PathBuf,
    info: WarcInfo,
    gzip_level: u32,
    open: Option<Open>,
}

/// The companions of one WARC file (its final name).
struct Open {
    warc: Arc<str>,
    wet: Option<WetWriter>,
    lines: Option<PageLines>,
}

impl TextSides {
    pub(super) fn new(out: TextOut, dir: &Path, info: WarcInfo, gzip_level: u32) -> TextSides {
        TextSides {
            out,
            dir: dir.to_path_buf(),
            info,
            gzip_level,
            open: None,
        }
    }

    /// A page's text, for its response record at `pos` (ID `id`, dated `date`), fetched
    /// with HTTP `status`. The companions of a new WARC file are begun here; those of the
    /// last one are finished if still open.
    pub(super) fn page(
        &mut self,
        target_uri: &str,
        date: SystemTime,
        status: u16,
        pos: &RecordPos,
        id: &RecordId,
        text: &PageText,
    ) -> io::Result<()> {
        if self.open.as_ref().is_none_or(|o| o.warc != pos.file) {
            self.finish()?;
            let (wet, jsonl) = companion_names(&pos.file);
            self.open = Some(Open {
                warc: pos.file.clone(),
                wet: match self.out.wet {
                    true => Some(WetWriter::create(
                        &self.dir.join(wet),
                        &self.info,
                        date,
                        self.gzip_level,
                    )?),
                    false => None,
                },
                lines: match self.out.markdown {
                    true => Some(PageLines::create(&self.dir.join(jsonl))?),
                    false => None,
                },
            });
        }
        let open = self.open.as_mut().expect("opened above");
        let date = rfc3339(date);
        if let Some(wet) = &mut open.wet {
            wet.conversion(target_uri, &date, &id.to_string(), &text.text)?;
        }
        if let Some(lines) = &mut open.lines {
            lines.push(&PageLine {
                url: target_uri,
                fetched: &date,
                status,
                title: &text.title,
                lang: &text.lang,
                markdown: &text.markdown,
                warc_file: &pos.file,
                warc_offset: pos.offset,
            })?;
        }
        Ok(())
    }

    /// Hands the companions' bytes to the OS (`sync`: and fsyncs them), before a commit mark
    /// records their lengths.
    pub(super) fn flush(&mut self, sync: bool) -> io::Result<()> {
        if let Some(o) = &mut self.open {
            if let Some(w) = &mut o.wet {
                w.flush(sync)?;
            }
            if let Some(l) = &mut o.lines {
                l.flush(sync)?;
            }
        }
        Ok(())
    }

    /// The companions' lengths (WET, JSONL; 0: none), for the mark of WARC file `warc`.
    pub(super) fn lengths(&self, warc: Option<&str>) -> (u64, u64) {
        match &self.open {
            Some(o) if warc == Some(&*o.warc) => (
                o.wet.as_ref().map_or(0, WetWriter::bytes_written),
                o.lines.as_ref().map_or(0, PageLines::bytes_written),
            ),
            _ => (0, 0),
        }
    }

    /// Finishes (syncs and names) the open companions: their WARC file is about to close.
    pub(super) fn finish(&mut self) -> io::Result<()> {
        if let Some(o) = self.open.take() {
            if let Some(w) = o.wet {
                w.finish()?;
            }
            if let Some(l) = o.lines {
                l.finish()?;
            }
        }
        Ok(())
    }
}

/// Cuts the companions of each partition's marked WARC file in `out` to the lengths `mark`
/// recorded for them, after `recover::cut_back` cut the WARC files (and as idempotent: a
/// crash in between leaves the same mark to cut to). Companions of WARC files begun after the
/// mark are `.open` without their WARC file then: [`recover_orphans`] removes them. Returns
/// the bytes cut.
pub fn cut_to_marks(out: &Path, mark: &CommitMark) -> io::Result<u64> {
    let mut cut = 0;
    for (i, warc) in mark.warcs.iter().enumerate() {
        if let Some((name, _)) = warc {
            let (wet, jsonl) = mark.texts.get(i).copied().unwrap_or((0, 0));
            cut += cut_to_mark(&out.join(format!("{name}.open")), wet, jsonl)?;
        }
    }
    Ok(cut)
}

/// Cuts the companions of the marked, still open WARC file `warc_open` to the lengths a commit
/// mark recorded for them (`wet`, `jsonl`; 0: begun after the mark, so removed). Returns the
/// bytes cut.
fn cut_to_mark(warc_open: &Path, wet: u64, jsonl: u64) -> io::Result<u64> {
    let mut cut = 0;
    for (path, len) in open_companions(warc_open).into_iter().zip([wet, jsonl]) {
        let file = match OpenOptions::new().write(true).open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        let have = file.metadata()?.len();
        if len == 0 {
            drop(file);
            fs::remove_file(&path)?;
            cut += have;
        } else if have > len {
            file.set_len(len)?;
            file.sync_all()?;
            cut += have - len;
        }
    }
    Ok(cut)
}

/// Closes the companions a stop left open beside WARC file `warc_open` (`X.warc.gz.open`),
/// once that file is recovered: `kept` says whether it still exists. Each is cut to its last
/// complete record (a gzip member, a line: a kill can leave half of one after the last
/// commit of a crawl that keeps no journal) and named; with no WARC file left they go too.
pub fn recover_open(warc_open: &Path, kept: bool) -> io::Result<()> {
    let [wet, jsonl] = open_companions(warc_open);
    for (path, gzip) in [(wet, true), (jsonl, false)] {
        let file = match OpenOptions::new().read(true).write(true).open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        if !kept {
            drop(file);
            fs::remove_file(&path)?;
            continue;
        }
        let good = if gzip {
            scan_members(&file)?.good_len
        } else {
            last_line_end(&path)?
        };
        if good < file.metadata()?.len() {
            file.set_len(good)?;
        }
        file.sync_all()?;
        drop(file);
        let final_path = path.with_extension("");
        fs::rename(&path, &final_path)?;
        sync_parent_dir(&final_path)?;
    }
    Ok(())
}

/// Closes companions left open beside WARC files that are no longer open (a kill between
/// closing them and closing the WARC file cannot leave any, but a crawl stopped by a full
/// disk can): see [`recover_open`]. Run after the open WARC files were recovered.
pub fn recover_orphans(dir: &Path) -> io::Result<()> {
    for e in fs::read_dir(dir)? {
        let path = e?.path();
        let Some(name) = path.to_str() else {
            continue;
        };
        let stem = name
            .strip_suffix(".wet.gz.open")
            .or_else(|| name.strip_suffix(".md.jsonl.open"));
        if let Some(stem) = stem {
            let warc = format!("{stem}.gz");
            let warc_open = PathBuf::from(format!("{warc}.open"));
            if !warc_open.try_exists()? {
                recover_open(&warc_open, Path::new(&warc).try_exists()?)?;
            }
        }
    }
    Ok(())
}

/// The `.open` companion paths (WET, JSONL) of a WARC file, `.open` or not.
fn open_companions(warc: &Path) -> [PathBuf; 2] {
    let name = warc.to_string_lossy();
    let (wet, jsonl) = companion_names(&name);
    [
        PathBuf::from(format!("{wet}.open")),
        PathBuf::from(format!("{jsonl}.open")),
    ]
}

/// The length of `path` up to and with its last `\n`, read a block at a time from the end.
fn last_line_end(path: &Path) -> io::Result<u64> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = fs::File::open(path)?;
    let mut end = f.metadata()?.len();
    let mut buf = vec![0u8; 64 * 1024];
    // Bounded by the file: each turn moves `end` back by a block, or returns.
    while end > 0 {
        let n = (end as usize).min(buf.len());
        f.seek(SeekFrom::Start(end - n as u64))?;
        f.read_exact(&mut buf[..n])?;
        if let Some(i) = memchr::memrchr(b'\n', &buf[..n]) {
            return Ok(end - n as u64 + i as u64 + 1);
        }
        end -= n as u64;
    }
    Ok(0)
}

#[cfg(test)]
#[path = "text_sides_tests.rs"]
mod tests;
