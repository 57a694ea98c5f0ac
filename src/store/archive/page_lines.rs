//! Pages' Markdown as JSON Lines, one object per HTML page, for the tools that take text
//! corpora (Hugging Face `datasets`' JSON loader, pandas `read_json(lines=True)`, DuckDB):
//! `url`, `fetched` (the WARC-Date), `status`, `title`, `lang` (`<html lang>`, or empty),
//! `markdown`, `warc_file` and `warc_offset` (where the response record's gzip member starts,
//! so a line leads back to its record). Strings are JSON as Python's `json.dumps` writes them
//! (`cdxj::push_json_string`). Written as `NAME.open`, renamed when complete ([`OpenFile`]).

use std::io;
use std::path::{Path, PathBuf};

use super::cdxj::push_json_string;
use super::open_file::OpenFile;
use crate::codec::push_u64;

/// One page's line.
#[derive(Clone, Copy, Debug)]
pub struct PageLine<'a> {
    pub url: &'a str,
    pub fetched: &'a str,
    pub status: u16,
    pub title: &'a [u8],
    pub lang: &'a [u8],
    pub markdown: &'a [u8],
    pub warc_file: &'a str,
    pub warc_offset: u64,
}

/// A JSONL file being written.
pub struct PageLines {
    file: OpenFile,
    line: Vec<u8>,
    lines: u64,
}

impl PageLines {
    pub fn create(path: &Path) -> io::Result<PageLines> {
        Ok(PageLines {
            file: OpenFile::create(path)?,
            line: Vec::new(),
            lines: 0,
        })
    }

    pub fn push(&mut self, p: &PageLine) -> io::Result<()> {
        let l = &mut self.line;
        l.clear();
        l.extend_from_slice(b"{\"url\": ");
        push_json_string(l, p.url.as_bytes());
        l.extend_from_slice(b", \"fetched\": ");
        push_json_string(l, p.fetched.as_bytes());
        l.extend_from_slice(b", \"status\": ");
        push_u64(l, u64::from(p.status));
        l.extend_from_slice(b", \"title\": ");
        push_json_string(l, p.title);
        l.extend_from_slice(b", \"lang\": ");
        push_json_string(l, p.lang);
        l.extend_from_slice(b", \"markdown\": ");
        push_json_string(l, p.markdown);
        l.extend_from_slice(b", \"warc_file\": ");
        push_json_string(l, p.warc_file.as_bytes());
        l.extend_from_slice(b", \"warc_offset\": ");
        push_u64(l, p.warc_offset);
        l.extend_from_slice(b"}\n");
        self.file.write_all(l)?;
        self.lines += 1;
        Ok(())
    }

    /// Lines written.
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// Bytes written: the file's length once flushed.
    pub fn bytes_written(&self) -> u64 {
        self.file.bytes_written()
    }

    /// Hands what is buffered to the OS (`sync`: and fsyncs it).
    pub fn flush(&mut self, sync: bool) -> io::Result<()> {
        self.file.flush(sync)
    }

    pub fn finish(self) -> io::Result<PathBuf> {
        self.file.finish()
    }

    pub fn abandon(self) -> io::Result<()> {
        self.file.abandon()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::test_dir::TempDir;

    #[test]
    fn one_json_object_a_line() {
        let dir = TempDir::new("page-lines", "write");
        let path = dir.0.join("x.md.jsonl");
        let mut w = PageLines::create(&path).unwrap();
        w.push(&PageLine {
            url: "http://a.test/",
            fetched: "2024-03-12T10:32:00Z",
            status: 200,
            title: "Bridge \"work\"".as_bytes(),
            lang: b"en",
            markdown: "# Bridge\n\nCafé — ok\n".as_bytes(),
            warc_file: "x.warc.gz",
            warc_offset: 1234,
        })
        .unwrap();
        assert_eq!(w.lines(), 1);
        w.finish().unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"url\": \"http://a.test/\", \"fetched\": \"2024-03-12T10:32:00Z\", \"status\": 200, \
             \"title\": \"Bridge \\\"work\\\"\", \"lang\": \"en\", \"markdown\": \
             \"# Bridge\\n\\nCaf\\u00e9 \\u2014 ok\\n\", \"warc_file\": \"x.warc.gz\", \
             \"warc_offset\": 1234}\n"
        );
    }
}
