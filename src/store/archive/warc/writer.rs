//! The size-rotated `.warc.gz` file writer: one gzip member per record, `NAME.open` renamed to
//! `NAME` when the file is complete.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use super::gzip::{DeflatedBlock, GzMember};
use super::spooled::{stream_spooled_record, SpooledRecord};
use super::*;
use crate::content::Sketch;
use crate::datetime;
use crate::store::archive::cdxj::{self, IndexEntry};
use crate::store::archive::line_sort;

use crate::fetcher::spool::SpoolFile;

/// Buffer size of the file writer: records are appended sequentially, so large writes are best.
const FILE_BUFFER_BYTES: usize = 256 * 1024;
/// How many names to try when a file name already exists (same prefix, same second).
const MAX_NAME_ATTEMPTS: u32 = 1000;
/// Reused record buffers keep at most this much capacity between records, so one huge page
/// does not pin its size in memory for the rest of the crawl.
const RETAIN_BUFFER_BYTES: usize = 4 * 1024 * 1024;

/// The file currently being appended to.
struct OpenFile {
    out: BufWriter<File>,
    /// `NAME.open` while writing.
    open_path: PathBuf,
    /// `NAME`, once closed.
    final_path: PathBuf,
    /// The final file name (no directory): what positions and index lines name.
    name: Arc<str>,
    bytes: u64,
    warcinfo_id: RecordId,
    /// The file's CDXJ index, when [`WriterOptions::cdxj`] is set.
    index: Option<IndexFile>,
}

/// `NAME.cdxj` beside `NAME.warc.gz`: lines are appended unsorted to `NAME.cdxj.open` as
/// records are written, then sorted into `NAME.cdxj.tmp` (an external sort,
/// [`line_sort`]) and renamed to `NAME.cdxj` when the WARC file closes.
struct IndexFile {
    out: BufWriter<File>,
    open_path: PathBuf,
    final_path: PathBuf,
}

impl IndexFile {
    fn create(warc_final: &Path) -> io::Result<IndexFile> {
        let name = warc_final
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        let stem = name.strip_suffix(".warc.gz").unwrap_or(name);
        let final_path = warc_final.with_file_name(format!("{stem}.cdxj"));
        let open_path = warc_final.with_file_name(format!("{stem}.cdxj.open"));
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&open_path)?;
        Ok(IndexFile {
            out: BufWriter::with_capacity(64 * 1024, file),
            open_path,
            final_path,
        })
    }

    /// Sorts the lines into the final file (written whole under a temporary name, in
    /// bounded memory whatever the file holds, then renamed) and removes the unsorted one.
    fn close(self) -> io::Result<PathBuf> {
        self.out.into_inner().map_err(|e| e.into_error())?;
        let tmp = self.final_path.with_extension("cdxj.tmp");
        line_sort::sort_file(&self.open_path, &tmp)?;
        fs::rename(&tmp, &self.final_path)?;
        fs::remove_file(&self.open_path)?;
        Ok(self.final_path)
    }
}

/// Optional behaviour of a [`WarcWriter`].
#[derive(Clone, Debug, Default)]
pub struct WriterOptions {
    /// Write `NAME.cdxj` (pywb's CDXJ, sorted) beside each `NAME.warc.gz`, listing its
    /// response, revisit and resource records.
    pub cdxj: bool,
    /// The sequence number of the first file (a resumed crawl continues the numbering).
    pub first_seq: u32,
    /// Give `response` records a `WARC-Block-Digest` (SHA-1 of HTTP head and body). It is
    /// optional in WARC 1.1 and costs a second SHA-1 pass over every body beside the payload
    /// digest's (about 6 % of a crawl's CPU): the payload digest and each member's gzip
    /// CRC-32 already cover the body. Other records always have one (their blocks are small).
    pub response_block_digest: bool,
}

/// Where the writer stands. A failed write leaves a file whose end may be a partial record, so
/// the error is sticky: that file keeps its `.open` name and nothing more is written.
enum FileState {
    Open(OpenFile),
    Failed(io::ErrorKind),
    Finished,
}

/// How the second record of a pair gets its block into its gzip member.
#[derive(Clone, Copy)]
enum BlockSource<'a> {
    /// The block is given whole: deflated with its header.
    Whole,
    /// The given block is the response head; the payload is streamed from a spool file,
    /// stored if compressed already.
    Spooled(&'a dyn SpoolFile, bool),
    /// Deflated ahead; the given block is the head alone.
    Deflated(&'a DeflatedBlock),
    /// Whole, with its payload from this offset compressed already: stored, not deflated.
    StoredFrom(usize),
}

/// Appends exchanges to size-rotated `.warc.gz` files, one gzip member per record.
pub struct WarcWriter {
    dir: PathBuf,
    prefix: String,
    max_file_bytes: u64,
    info: WarcInfo,
    ids: RecordIdGen,
    gz: GzMember,
    /// Next file sequence number.
    seq: u32,
    state: FileState,
    options: WriterOptions,
    /// Completed (renamed) files, in order; the open one is added when it closes.
    files: Vec<PathBuf>,
    /// Completed CDXJ indexes, in order.
    indexes: Vec<PathBuf>,
    /// Reused per index line.
    index_line: Vec<u8>,
    bytes_written: u64,
    /// Reused per record: uncompressed record bytes, and the compressed members of an exchange.
    record_buf: Vec<u8>,
    gz_buf: Vec<u8>,
    /// Reused per exchange: the text of the generated field values.
    field_text: Vec<u8>,
}

impl WarcWriter {
    /// Opens the first file (writing its `warcinfo` record) in `dir`, which must exist and be
    /// writable. `id_seed` should differ per run (e.g. from the clock, pid and host name).
    pub fn create(
        dir: &Path,
        prefix: &str,
        max_file_bytes: u64,
        gzip_level: u32,
        info: WarcInfo,
        id_seed: [u8; 16],
    ) -> io::Result<Self> {
        Self::create_with(
            dir,
            prefix,
            max_file_bytes,
            gzip_level,
            info,
            id_seed,
            WriterOptions::default(),
        )
    }

    /// As [`WarcWriter::create`], with options.
    pub fn create_with(
        dir: &Path,
        prefix: &str,
        max_file_bytes: u64,
        gzip_level: u32,
        info: WarcInfo,
        id_seed: [u8; 16],
        options: WriterOptions,
    ) -> io::Result<Self> {
        if !fs::metadata(dir)?.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                "WARC output path is not a directory",
            ));
        }
        let mut w = WarcWriter {
            dir: dir.to_path_buf(),
            prefix: prefix.to_string(),
            max_file_bytes,
            info,
            ids: RecordIdGen::new(id_seed),
            gz: GzMember::new(gzip_level),
            seq: options.first_seq,
            state: FileState::Finished,
            options,
            files: Vec::new(),
            indexes: Vec::new(),
            index_line: Vec::with_capacity(512),
            bytes_written: 0,
            record_buf: Vec::with_capacity(64 * 1024),
            gz_buf: Vec::with_capacity(64 * 1024),
            field_text: Vec::with_capacity(256),
        };
        w.open_next()?;
        Ok(w)
    }

    /// Picks a fresh name and opens `NAME.open` exclusively, so two runs can never share a file.
    fn open_named(&mut self) -> io::Result<(File, PathBuf, PathBuf)> {
        let stamp = datetime::compact_timestamp(SystemTime::now());
        for _ in 0..MAX_NAME_ATTEMPTS {
            let name = super::file_name(&self.prefix, &stamp, self.seq);
            self.seq = self.seq.wrapping_add(1);
            let final_path = self.dir.join(&name);
            let open_path = self.dir.join(format!("{name}.open"));
            if final_path.exists() {
                continue;
            }
            match OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&open_path)
            {
                Ok(f) => return Ok((f, open_path, final_path)),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "no free WARC file name",
        ))
    }

    /// Opens the next file and writes its `warcinfo` record.
    fn open_next(&mut self) -> io::Result<()> {
        let (file, open_path, final_path) = self.open_named()?;
        let id = self.ids.next_id();
        let block = self.info.block();
        let filename = final_path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        self.record_buf.clear();
        write_record(
            &mut self.record_buf,
            RecordType::Warcinfo,
            &id,
            SystemTime::now(),
            &[("WARC-Filename", &filename)],
            "application/warc-fields",
            &[&block],
        );
        self.gz_buf.clear();
        self.gz.encode(&self.record_buf, &mut self.gz_buf)?;
        let index = if self.options.cdxj {
            match IndexFile::create(&final_path) {
                Ok(i) => Some(i),
                Err(e) => {
                    self.state = FileState::Failed(e.kind());
                    return Err(e);
                }
            }
        } else {
            None
        };
        let mut f = OpenFile {
            out: BufWriter::with_capacity(FILE_BUFFER_BYTES, file),
            open_path,
            final_path,
            name: filename.into(),
            bytes: 0,
            warcinfo_id: id,
            index,
        };
        if let Err(e) = f.out.write_all(&self.gz_buf) {
            self.state = FileState::Failed(e.kind());
            return Err(e);
        }
        f.bytes = self.gz_buf.len() as u64;
        self.bytes_written += f.bytes;
        self.state = FileState::Open(f);
        Ok(())
    }

    /// Flushes and renames the open file to its final name.
    fn close_current(&mut self) -> io::Result<()> {
        match std::mem::replace(&mut self.state, FileState::Finished) {
            FileState::Open(f) => {
                let res = f
                    .out
                    .into_inner()
                    .map_err(|e| e.into_error())
                    .and_then(|file| file.sync_all())
                    .and_then(|()| fs::rename(&f.open_path, &f.final_path));
                let res = res.and_then(|()| {
                    self.files.push(f.final_path);
                    // The WARC file is complete and named before its index: an index never
                    // names a file that is not there.
                    match f.index {
                        Some(index) => {
                            self.indexes.push(index.close()?);
                            Ok(())
                        }
                        None => Ok(()),
                    }
                });
                res.inspect_err(|e| self.state = FileState::Failed(e.kind()))
            }
            FileState::Failed(k) => {
                self.state = FileState::Failed(k);
                Err(failed(k))
            }
            FileState::Finished => Ok(()),
        }
    }

    /// Rotates when the current file has reached `max_file_bytes` (or none is open), and
    /// returns the open file's warcinfo ID.
    fn ready_for_records(&mut self) -> io::Result<RecordId> {
        let rotate = match &self.state {
            FileState::Open(f) => f.bytes >= self.max_file_bytes,
            FileState::Failed(k) => return Err(failed(*k)),
            FileState::Finished => true,
        };
        if rotate {
            self.close_current()?;
            self.open_next()?;
        }
        self.current_warcinfo_id()
    }

    fn current_warcinfo_id(&self) -> io::Result<RecordId> {
        match &self.state {
            FileState::Open(f) => Ok(f.warcinfo_id),
            FileState::Failed(k) => Err(failed(*k)),
            FileState::Finished => Err(io::Error::other("WARC writer has no open file")),
        }
    }

    /// Appends `gz_buf` (whole gzip members) to the open file; returns the file's name and the
    /// offset at which the members start. `streamed` bytes of them were already written
    /// straight to the file (a spooled record), ahead of what is left in `gz_buf`.
    fn append_members(&mut self, streamed: u64) -> io::Result<(Arc<str>, u64)> {
        let FileState::Open(f) = &mut self.state else {
            return Err(io::Error::other("WARC writer has no open file"));
        };
        let res = f.out.write_all(&self.gz_buf);
        let len = self.gz_buf.len() as u64 + streamed;
        self.record_buf.clear();
        self.record_buf.shrink_to(RETAIN_BUFFER_BYTES);
        self.gz_buf.clear();
        self.gz_buf.shrink_to(RETAIN_BUFFER_BYTES);
        match res {
            Ok(()) => {
                let start = f.bytes;
                f.bytes += len;
                self.bytes_written += len;
                Ok((f.name.clone(), start))
            }
            Err(e) => {
                self.state = FileState::Failed(e.kind());
                Err(e)
            }
        }
    }

    /// Formats the request record and then a second record (response or revisit) sharing
    /// `common` fields, gzips both into `gz_buf`, and appends them; returns where each landed.
    #[allow(clippy::too_many_arguments)]
    fn write_pair(
        &mut self,
        date: SystemTime,
        request: &[u8],
        common: &[(&str, &str)],
        second_id: &RecordId,
        second_type: RecordType,
        second_fields: &[(&str, &str)],
        second_block: &[u8],
        second_source: BlockSource<'_>,
    ) -> io::Result<Written> {
        let req_id = self.ids.next_id();
        let mut second_text = Vec::with_capacity(48);
        write!(second_text, "{second_id}")?;
        // A UUID URN is ASCII.
        let second_text = std::str::from_utf8(&second_text).expect("record ID is ASCII");

        let mut fields: Vec<(&str, &str)> = Vec::with_capacity(common.len() + 4);
        fields.extend_from_slice(common);
        fields.push(("WARC-Concurrent-To", second_text));

        self.gz_buf.clear();
        self.record_buf.clear();
        write_record(
            &mut self.record_buf,
            RecordType::Request,
            &req_id,
            date,
            &fields,
            "application/http;msgtype=request",
            &[request],
        );
        self.gz.encode(&self.record_buf, &mut self.gz_buf)?;
        let request_len = self.gz_buf.len() as u64;

        fields.truncate(common.len());
        fields.extend_from_slice(second_fields);
        self.record_buf.clear();
        let mut streamed = 0u64;
        let block_digest =
            second_type != RecordType::Response || self.options.response_block_digest;
        match second_source {
            BlockSource::Spooled(spool, stored) => {
                let FileState::Open(f) = &mut self.state else {
                    return Err(io::Error::other("WARC writer has no open file"));
                };
                let res = stream_spooled_record(
                    &mut self.gz,
                    &mut self.record_buf,
                    &mut self.gz_buf,
                    &mut f.out,
                    SpooledRecord {
                        kind: second_type,
                        id: second_id,
                        date,
                        fields: &fields,
                        head: second_block,
                        spool,
                        block_digest,
                        stored,
                    },
                );
                match res {
                    Ok(n) => streamed = n,
                    Err(e) => {
                        self.state = FileState::Failed(e.kind());
                        return Err(e);
                    }
                }
            }
            _ => {
                let (len, digest) = match second_source {
                    BlockSource::Deflated(block) => (block.block_len, block.digest),
                    _ => (
                        second_block.len() as u64,
                        block_digest.then(|| sha1(second_block)),
                    ),
                };
                write_record_header(
                    &mut self.record_buf,
                    second_type,
                    second_id,
                    date,
                    &fields,
                    "application/http;msgtype=response",
                    len,
                    digest.as_ref(),
                );
                match second_source {
                    BlockSource::Deflated(block) => {
                        self.gz
                            .encode_joined(&self.record_buf, block, &mut self.gz_buf)?
                    }
                    // A payload compressed already is stored: the record header and the
                    // HTTP head (copied after it, a few hundred bytes) are deflated.
                    BlockSource::StoredFrom(at) if at <= second_block.len() => {
                        let (head, payload) = second_block.split_at(at);
                        self.record_buf.extend_from_slice(head);
                        self.gz.encode_then_store(
                            &self.record_buf,
                            &[payload, RECORD_END],
                            &mut self.gz_buf,
                        )?
                    }
                    // Header, block and record end compressed in turn: the block is not
                    // copied next to its header first.
                    _ => self.gz.encode_parts(
                        &[&self.record_buf, second_block, RECORD_END],
                        &mut self.gz_buf,
                    )?,
                }
            }
        }
        let total = self.gz_buf.len() as u64 + streamed;

        let (file, start) = self.append_members(streamed)?;
        let written = Written {
            request: RecordPos {
                file: file.clone(),
                offset: start,
                length: request_len,
            },
            response: RecordPos {
                file,
                offset: start + request_len,
                length: total - request_len,
            },
            response_id: *second_id,
        };
        Ok(written)
    }

    /// Writes a `request` and a `response` record for `ex`, both in the same file, and says
    /// where they landed. Rotates first when the current file has reached `max_file_bytes`.
    pub fn write_exchange(&mut self, ex: &Exchange<'_>) -> io::Result<Written> {
        self.write_exchange_with_sketch(ex, None)
    }

    /// As [`Self::write_exchange`], with the page's sketch for the response's index line
    /// (CDXJ's `sketch` field; the WARC records do not carry it).
    pub fn write_exchange_with_sketch(
        &mut self,
        ex: &Exchange<'_>,
        sketch: Option<Sketch>,
    ) -> io::Result<Written> {
        let warcinfo_id = self.ready_for_records()?;
        let resp_id = self.ids.next_id();
        // The per-exchange field values, written into one reused buffer instead of a String each.
        let mut t = std::mem::take(&mut self.field_text);
        t.clear();
        write!(t, "{warcinfo_id}")?;
        let info_end = t.len();
        if let Some(ip) = ex.ip {
            write!(t, "{ip}")?;
        }
        let ip_end = t.len();
        if let Some(d) = &ex.payload_digest {
            push_sha1_base32(&mut t, d);
        }
        let res = {
            // Only ASCII (UUIDs, IP addresses, base32) was written: every split is a char
            // boundary.
            let text = std::str::from_utf8(&t).expect("field text is ASCII");
            let mut common: Vec<(&str, &str)> = Vec::with_capacity(3);
            common.push(("WARC-Target-URI", ex.target_uri));
            common.push(("WARC-Warcinfo-ID", &text[..info_end]));
            if ex.ip.is_some() {
                common.push(("WARC-IP-Address", &text[info_end..ip_end]));
            }
            let mut resp_fields: Vec<(&str, &str)> = Vec::with_capacity(2);
            if ex.payload_digest.is_some() {
                resp_fields.push(("WARC-Payload-Digest", &text[ip_end..]));
            }
            if let Some(tr) = ex.truncated {
                resp_fields.push(("WARC-Truncated", tr.as_str()));
            }
            self.write_pair(
                ex.date,
                ex.request,
                &common,
                &resp_id,
                RecordType::Response,
                &resp_fields,
                ex.response,
                match (ex.spooled, ex.deflated, ex.stored_from) {
                    (Some(spool), _, stored) => BlockSource::Spooled(spool, stored.is_some()),
                    (None, Some(block), _) => BlockSource::Deflated(block),
                    (None, None, Some(at)) => BlockSource::StoredFrom(at),
                    (None, None, None) => BlockSource::Whole,
                },
            )
        };
        self.field_text = t;
        let written = res?;
        self.index(
            RecordType::Response,
            ex.target_uri,
            ex.date,
            ex.response,
            "",
            ex.payload_digest,
            &written.response,
            sketch,
        )?;
        Ok(written)
    }

    /// Writes a `revisit` record (the payload was stored before, under `refers_to_uri` at
    /// `refers_to_date`; its profile says how that is known) and its `request` record, both in
    /// the same file; the revisit's block is the response head only.
    pub fn write_revisit(&mut self, rv: &Revisit<'_>) -> io::Result<Written> {
        let warcinfo_id = self.ready_for_records()?;
        let rv_id = self.ids.next_id();
        let info_text = warcinfo_id.to_string();
        let ip_text = rv.ip.map(|ip| ip.to_string()).unwrap_or_default();
        let digest_text = sha1_base32(&rv.payload_digest);
        let mut date_text = Vec::with_capacity(20);
        datetime::write_rfc3339(&mut date_text, rv.refers_to_date, false);
        let date_text = String::from_utf8(date_text).expect("RFC 3339 is ASCII");

        let mut common: Vec<(&str, &str)> = Vec::with_capacity(3);
        common.push(("WARC-Target-URI", rv.target_uri));
        common.push(("WARC-Warcinfo-ID", &info_text));
        if rv.ip.is_some() {
            common.push(("WARC-IP-Address", &ip_text));
        }
        let all_fields = [
            ("WARC-Profile", rv.profile.uri()),
            ("WARC-Refers-To-Target-URI", rv.refers_to_uri),
            ("WARC-Refers-To-Date", &date_text),
            ("WARC-Payload-Digest", &digest_text),
            ("WARC-Refers-To", rv.refers_to_record.unwrap_or_default()),
        ];
        // No allocation per revisit: the last field only when the record ID is known.
        let rv_fields = &all_fields[..4 + usize::from(rv.refers_to_record.is_some())];
        let written = self.write_pair(
            rv.date,
            rv.request,
            &common,
            &rv_id,
            RecordType::Revisit,
            rv_fields,
            rv.response_head,
            BlockSource::Whole,
        )?;
        self.index(
            RecordType::Revisit,
            rv.target_uri,
            rv.date,
            rv.response_head,
            "",
            Some(rv.payload_digest),
            &written.response,
            None,
        )?;
        Ok(written)
    }

    /// Appends a `resource` record holding `bytes` (e.g. the crawl.log lines of this file's
    /// fetches) to the *current* file, without rotating: the caller decides when, typically
    /// just before [`WarcWriter::finish`] or when [`WarcWriter::rotation_due`] says the next
    /// exchange would start a new file.
    pub fn write_log_record(
        &mut self,
        uri: &str,
        content_type: &str,
        bytes: &[u8],
    ) -> io::Result<RecordPos> {
        let warcinfo_id = self.current_warcinfo_id()?;
        let id = self.ids.next_id();
        let info_text = warcinfo_id.to_string();
        let date = SystemTime::now();
        self.record_buf.clear();
        self.gz_buf.clear();
        let digest = write_record(
            &mut self.record_buf,
            RecordType::Resource,
            &id,
            date,
            &[("WARC-Target-URI", uri), ("WARC-Warcinfo-ID", &info_text)],
            content_type,
            &[bytes],
        );
        self.gz.encode(&self.record_buf, &mut self.gz_buf)?;
        let length = self.gz_buf.len() as u64;
        let (file, offset) = self.append_members(0)?;
        let pos = RecordPos {
            file,
            offset,
            length,
        };
        self.index(
            RecordType::Resource,
            uri,
            date,
            bytes,
            content_type,
            Some(digest),
            &pos,
            None,
        )?;
        Ok(pos)
    }

    /// The open file's final name and its length so far (buffered bytes included).
    pub fn open_file(&self) -> Option<(&str, u64)> {
        match &self.state {
            FileState::Open(f) => Some((&f.name, f.bytes)),
            _ => None,
        }
    }

    /// Whether the next exchange or revisit will close the current file and open a new one.
    pub fn rotation_due(&self) -> bool {
        match &self.state {
            FileState::Open(f) => f.bytes >= self.max_file_bytes,
            _ => false,
        }
    }

    /// Flush and `fdatasync` the open file: its records survive a power cut.
    pub fn sync(&mut self) -> io::Result<()> {
        self.flush()?;
        match &mut self.state {
            FileState::Open(f) => f
                .out
                .get_ref()
                .sync_data()
                .inspect_err(|e| self.state = FileState::Failed(e.kind())),
            _ => Ok(()),
        }
    }

    /// Pushes buffered bytes to the OS (not a rename: the file stays `.open`).
    pub fn flush(&mut self) -> io::Result<()> {
        match &mut self.state {
            FileState::Open(f) => {
                let res = f.out.flush();
                let res = match &mut f.index {
                    Some(index) => res.and_then(|()| index.out.flush()),
                    None => res,
                };
                res.inspect_err(|e| self.state = FileState::Failed(e.kind()))
            }
            FileState::Failed(k) => Err(failed(*k)),
            FileState::Finished => Ok(()),
        }
    }

    /// Closes the current file; returns every file written, in order.
    pub fn finish(mut self) -> io::Result<Vec<PathBuf>> {
        self.close_current()?;
        Ok(std::mem::take(&mut self.files))
    }

    /// As [`WarcWriter::finish`], also returning the CDXJ indexes written (empty unless
    /// [`WriterOptions::cdxj`] is set).
    pub fn finish_indexed(mut self) -> io::Result<(Vec<PathBuf>, Vec<PathBuf>)> {
        self.close_current()?;
        Ok((
            std::mem::take(&mut self.files),
            std::mem::take(&mut self.indexes),
        ))
    }

    /// Compressed bytes written so far, over all files.
    pub fn bytes_written(&self) -> u64 {
        self.bytes_written
    }

    /// Files completed so far (the open one is not listed until it closes).
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }

    /// CDXJ indexes completed so far, one per completed file when [`WriterOptions::cdxj`] is
    /// set.
    pub fn indexes(&self) -> &[PathBuf] {
        &self.indexes
    }

    /// Appends the index line of a record just written, when this file has an index.
    #[allow(clippy::too_many_arguments)]
    fn index(
        &mut self,
        kind: RecordType,
        target_uri: &str,
        date: SystemTime,
        block: &[u8],
        content_type: &str,
        payload_digest: Option<Digest>,
        pos: &RecordPos,
        sketch: Option<Sketch>,
    ) -> io::Result<()> {
        let FileState::Open(f) = &mut self.state else {
            return Ok(());
        };
        let Some(index) = &mut f.index else {
            return Ok(());
        };
        self.index_line.clear();
        cdxj::format_line(
            &mut self.index_line,
            &IndexEntry {
                kind,
                target_uri,
                date,
                block,
                content_type,
                payload_digest,
                filename: &pos.file,
                offset: pos.offset,
                length: pos.length,
                sketch,
            },
        );
        let res = index.out.write_all(&self.index_line);
        res.inspect_err(|e| self.state = FileState::Failed(e.kind()))
    }
}

impl Drop for WarcWriter {
    /// A writer dropped without `finish` (an early return on error elsewhere) still holds only
    /// whole records, so close the file properly rather than leave a `.open` behind.
    fn drop(&mut self) {
        let _ = self.close_current();
    }
}

fn failed(kind: io::ErrorKind) -> io::Error {
    io::Error::new(kind, "WARC writer failed earlier; file left as .open")
}
