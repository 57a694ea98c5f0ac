//! The package's index: the CDXJ of every WARC file merged into one sorted stream (a k-way
//! merge of the per-file indexes, each sorted already: bounded memory, no re-sort), written
//! as one of the two forms the WACZ spec and its readers take:
//! - plain CDXJ, `indexes/index.cdx`, which ReplayWeb.page loads whole when it opens the
//!   package: for small crawls. (Named `.cdx`, not `.cdxj`: pywb's `wb-manager add
//!   --unpack-wacz` takes index files by `.cdx`/`.cdx.gz` only; ReplayWeb.page takes both.)
//! - compressed ZipNum, as py-wacz writes it: `indexes/index.cdx.gz`, gzip members of
//!   [`LINES_PER_BLOCK`] lines each, and `indexes/index.idx`, one line per member (its first
//!   line's key and timestamp, then `offset`, `length` and `digest` of the member), after a
//!   `!meta` line naming the data file. A reader loads the small `.idx` and fetches the one
//!   block a URL needs.
//!
//! The `.idx` lines are kept in memory until the `.cdx.gz` entry ends (a ZIP entry is written
//! whole): about 100 bytes per 1,024 index lines.

use std::io::{self, Write};

use flate2::write::GzEncoder;
use flate2::Compression;
use sha2::{Digest as _, Sha256};

use super::zip::hex;

/// Index lines per compressed block, as py-wacz and ArchiveWeb.page write them.
pub const LINES_PER_BLOCK: usize = 1024;
/// Up to this many bytes of per-file CDXJ, the index is written plain.
pub const PLAIN_INDEX_MAX_BYTES: u64 = 1 << 20;

/// Which form the index takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexForm {
    /// Plain for a small index, compressed past [`PLAIN_INDEX_MAX_BYTES`].
    Auto,
    Plain,
    Compressed,
}

impl IndexForm {
    /// The form for an index of `bytes` (the per-file indexes' sizes summed).
    pub fn decide(self, bytes: u64) -> IndexForm {
        match self {
            IndexForm::Auto if bytes <= PLAIN_INDEX_MAX_BYTES => IndexForm::Plain,
            IndexForm::Auto => IndexForm::Compressed,
            f => f,
        }
    }
}

/// Counts the lines written through it.
pub struct LineCount<W> {
    pub inner: W,
    pub lines: u64,
}

impl<W: Write> Write for LineCount<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.lines += memchr::memchr_iter(b'\n', &buf[..n]).count() as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Index lines in, ZipNum blocks out: each [`LINES_PER_BLOCK`] lines are one gzip member
/// written to `out`, and a line of the secondary index is kept for it.
pub struct ZipNumWriter<W: Write> {
    out: W,
    /// Bytes of the current line not yet ended by `\n`.
    partial: Vec<u8>,
    block: Vec<u8>,
    block_lines: usize,
    /// The current block's first line's key and timestamp.
    prefix: Vec<u8>,
    /// Compressed bytes written so far: the next block's offset.
    offset: u64,
    idx: Vec<u8>,
    pub lines: u64,
}

impl<W: Write> ZipNumWriter<W> {
    /// Blocks written to `out`; `data_name` is the data file's name as the `.idx` gives it.
    pub fn new(out: W, data_name: &str) -> ZipNumWriter<W> {
        let mut idx = Vec::new();
        idx.extend_from_slice(b"!meta 0 {\"format\": \"cdxj-gzip-1.0\", \"filename\": ");
        crate::store::archive::cdxj::push_json_string(&mut idx, data_name.as_bytes());
        idx.extend_from_slice(b"}\n");
        ZipNumWriter {
            out,
            partial: Vec::new(),
            block: Vec::new(),
            block_lines: 0,
            prefix: Vec::new(),
            offset: 0,
            idx,
            lines: 0,
        }
    }

    fn line(&mut self, line: &[u8]) -> io::Result<()> {
        if self.block_lines == 0 {
            // The key and timestamp: the line up to its second space (a SURT has no space;
            // the JSON after may hold any byte, `{` included).
            let mut spaces = memchr::memchr_iter(b' ', line);
            let end = spaces.nth(1).unwrap_or(line.len());
            self.prefix.clear();
            self.prefix.extend_from_slice(&line[..end]);
        }
        self.block.extend_from_slice(line);
        self.block_lines += 1;
        self.lines += 1;
        if self.block_lines == LINES_PER_BLOCK {
            self.flush_block()?;
        }
        Ok(())
    }

    fn flush_block(&mut self) -> io::Result<()> {
        if self.block_lines == 0 {
            return Ok(());
        }
        let mut gz = GzEncoder::new(Vec::new(), Compression::default());
        gz.write_all(&self.block)?;
        let member = gz.finish()?;
        self.out.write_all(&member)?;
        let i = &mut self.idx;
        i.extend_from_slice(&self.prefix);
        i.extend_from_slice(b" {\"offset\": ");
        crate::codec::push_u64(i, self.offset);
        i.extend_from_slice(b", \"length\": ");
        crate::codec::push_u64(i, member.len() as u64);
        i.extend_from_slice(b", \"digest\": \"sha256:");
        i.extend_from_slice(hex(&Sha256::digest(&member)).as_bytes());
        i.extend_from_slice(b"\"}\n");
        self.offset += member.len() as u64;
        self.block.clear();
        self.block_lines = 0;
        Ok(())
    }

    /// Ends the last block; the secondary index's bytes, and the output.
    pub fn finish_into(mut self) -> io::Result<(Vec<u8>, W)> {
        if !self.partial.is_empty() {
            let mut last = std::mem::take(&mut self.partial);
            last.push(b'\n');
            self.line(&last)?;
        }
        self.flush_block()?;
        self.out.flush()?;
        Ok((self.idx, self.out))
    }
}

impl<W: Write> Write for ZipNumWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut rest = buf;
        // Each pass ends one line or takes the rest: bounded by `buf`'s lines.
        while let Some(nl) = memchr::memchr(b'\n', rest) {
            if self.partial.is_empty() {
                self.line(&rest[..=nl])?;
            } else {
                let mut line = std::mem::take(&mut self.partial);
                line.extend_from_slice(&rest[..=nl]);
                self.line(&line)?;
            }
            rest = &rest[nl + 1..];
        }
        self.partial.extend_from_slice(rest);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn lines(n: usize) -> Vec<u8> {
        let mut t = Vec::new();
        for i in 0..n {
            t.extend_from_slice(
                format!("com,example)/p{i:05} 20261129120000 {{\"url\": \"x{{\", \"offset\": \"{i}\"}}\n")
                    .as_bytes(),
            );
        }
        t
    }

    #[test]
    fn blocks_of_1024_lines_each_one_gzip_member_named_in_the_idx() {
        let text = lines(2500);
        let mut data = Vec::new();
        let mut w = ZipNumWriter::new(&mut data, "index.cdx.gz");
        // Written in odd pieces, lines split across writes.
        for piece in text.chunks(777) {
            w.write_all(piece).unwrap();
        }
        let lines_written = w.lines;
        let idx = String::from_utf8(w.finish_into().unwrap().0).unwrap();
        assert_eq!(lines_written, 2500);
        let idx: Vec<&str> = idx.lines().collect();
        assert_eq!(
            idx[0],
            "!meta 0 {\"format\": \"cdxj-gzip-1.0\", \"filename\": \"index.cdx.gz\"}"
        );
        assert_eq!(idx.len(), 1 + 3, "2500 lines: blocks of 1024, 1024, 452");
        let mut all = Vec::new();
        for (b, line) in idx[1..].iter().enumerate() {
            let (prefix, json) = line.split_once(" {").unwrap();
            assert_eq!(
                prefix,
                format!("com,example)/p{:05} 20261129120000", b * LINES_PER_BLOCK)
            );
            let v: serde_json::Value = serde_json::from_str(&format!("{{{json}")).unwrap();
            let off = v["offset"].as_u64().unwrap() as usize;
            let len = v["length"].as_u64().unwrap() as usize;
            let member = &data[off..off + len];
            assert_eq!(
                v["digest"].as_str().unwrap(),
                format!("sha256:{}", hex(&Sha256::digest(member)))
            );
            // Each block is a gzip member of its own: readable from its offset alone.
            let mut out = Vec::new();
            flate2::read::GzDecoder::new(member)
                .read_to_end(&mut out)
                .unwrap();
            all.extend_from_slice(&out);
        }
        assert_eq!(all, text);
    }

    #[test]
    fn auto_is_plain_for_a_small_index_only() {
        assert_eq!(IndexForm::Auto.decide(1000), IndexForm::Plain);
        assert_eq!(
            IndexForm::Auto.decide(PLAIN_INDEX_MAX_BYTES + 1),
            IndexForm::Compressed
        );
        assert_eq!(IndexForm::Plain.decide(u64::MAX), IndexForm::Plain);
        assert_eq!(IndexForm::Compressed.decide(0), IndexForm::Compressed);
    }
}
