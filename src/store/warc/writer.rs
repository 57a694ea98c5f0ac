//! The size-rotated `.warc.gz` file writer: one gzip member per record, `NAME.open` renamed to
//! `NAME` when the file is complete.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::*;
use crate::datetime;
use flate2::{Compress, Compression, Crc, FlushCompress, Status};

/// Buffer size of the file writer: records are appended sequentially, so large writes are best.
const FILE_BUFFER_BYTES: usize = 256 * 1024;
/// How many names to try when a file name already exists (same prefix, same second).
const MAX_NAME_ATTEMPTS: u32 = 1000;
/// Upper bound on deflate calls for one record. Each call gets at least the worst-case output
/// size of the remaining input, so two calls always suffice; the bound guards a broken backend.
const MAX_DEFLATE_ROUNDS: usize = 16;
/// Extra output room beyond the input length: deflate's worst case is stored blocks, 5 bytes per
/// 16 KiB block plus a few bytes of stream end.
const DEFLATE_SLACK: usize = 64;
/// Reused record buffers keep at most this much capacity between records, so one huge page
/// does not pin its size in memory for the rest of the crawl.
const RETAIN_BUFFER_BYTES: usize = 4 * 1024 * 1024;

/// The gzip member header we write: magic, CM=deflate, no flags, MTIME=0 (so output does not
/// depend on the clock), XFL (patched per level), OS=255 (unknown).
const GZIP_HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255];

/// Reusable gzip-member encoder: one `Compress`, reset per record.
pub(super) struct GzMember {
    compress: Compress,
    header: [u8; 10],
}

impl GzMember {
    pub(super) fn new(level: u32) -> Self {
        let level = level.min(9);
        let mut header = GZIP_HEADER;
        header[8] = match level {
            9 => 2, // XFL: maximum compression
            1 => 4, // XFL: fastest
            _ => 0,
        };
        GzMember {
            compress: Compress::new(Compression::new(level), false),
            header,
        }
    }

    /// Appends `data` to `out` as one complete gzip member.
    pub(super) fn encode(&mut self, data: &[u8], out: &mut Vec<u8>) -> io::Result<()> {
        self.compress.reset();
        out.extend_from_slice(&self.header);
        let start_in = self.compress.total_in();
        let mut done = false;
        for _ in 0..MAX_DEFLATE_ROUNDS {
            let consumed = (self.compress.total_in() - start_in) as usize;
            let rest = &data[consumed..];
            out.reserve(rest.len() + rest.len() / 1000 + DEFLATE_SLACK);
            let status = self
                .compress
                .compress_vec(rest, out, FlushCompress::Finish)
                .map_err(|_| io::Error::other("deflate failed"))?;
            if status == Status::StreamEnd {
                done = true;
                break;
            }
        }
        if !done {
            return Err(io::Error::other("deflate did not finish"));
        }
        let mut crc = Crc::new();
        crc.update(data);
        out.extend_from_slice(&crc.sum().to_le_bytes());
        // ISIZE is the input length modulo 2^32 (RFC 1952).
        out.extend_from_slice(&(data.len() as u32).to_le_bytes());
        Ok(())
    }
}

/// The file currently being appended to.
struct OpenFile {
    out: BufWriter<File>,
    /// `NAME.open` while writing.
    open_path: PathBuf,
    /// `NAME`, once closed.
    final_path: PathBuf,
    bytes: u64,
    warcinfo_id: RecordId,
}

/// Where the writer stands. A failed write leaves a file whose end may be a partial record, so
/// the error is sticky: that file keeps its `.open` name and nothing more is written.
enum FileState {
    Open(OpenFile),
    Failed(io::ErrorKind),
    Finished,
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
    /// Completed (renamed) files, in order; the open one is added when it closes.
    files: Vec<PathBuf>,
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
            seq: 0,
            state: FileState::Finished,
            files: Vec::new(),
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
            let name = format!("{}-{}-{:05}.warc.gz", self.prefix, stamp, self.seq);
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
        let mut f = OpenFile {
            out: BufWriter::with_capacity(FILE_BUFFER_BYTES, file),
            open_path,
            final_path,
            bytes: 0,
            warcinfo_id: id,
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
                match res {
                    Ok(()) => {
                        self.files.push(f.final_path);
                        Ok(())
                    }
                    Err(e) => {
                        self.state = FileState::Failed(e.kind());
                        Err(e)
                    }
                }
            }
            FileState::Failed(k) => {
                self.state = FileState::Failed(k);
                Err(failed(k))
            }
            FileState::Finished => Ok(()),
        }
    }

    /// Writes a `request` and a `response` record for `ex`, both in the same file. Rotates first
    /// when the current file has reached `max_file_bytes`.
    pub fn write_exchange(&mut self, ex: &Exchange<'_>) -> io::Result<()> {
        let rotate = match &self.state {
            FileState::Open(f) => f.bytes >= self.max_file_bytes,
            FileState::Failed(k) => return Err(failed(*k)),
            FileState::Finished => true,
        };
        if rotate {
            self.close_current()?;
            self.open_next()?;
        }
        let warcinfo_id = match &self.state {
            FileState::Open(f) => f.warcinfo_id,
            // open_next either set Open or returned an error above.
            _ => return Err(io::Error::other("WARC writer has no open file")),
        };

        let req_id = self.ids.next_id();
        let resp_id = self.ids.next_id();
        // The per-exchange field values, written into one reused buffer instead of a String each.
        let t = &mut self.field_text;
        t.clear();
        write!(t, "{warcinfo_id}")?;
        let info_end = t.len();
        write!(t, "{resp_id}")?;
        let resp_end = t.len();
        if let Some(ip) = ex.ip {
            write!(t, "{ip}")?;
        }
        let ip_end = t.len();
        if let Some(d) = &ex.payload_digest {
            push_sha1_base32(t, d);
        }
        // Only ASCII (UUIDs, IP addresses, base32) was written, so every split is a char boundary.
        let text = std::str::from_utf8(t).expect("field text is ASCII");
        let warcinfo_text = &text[..info_end];
        let resp_text = &text[info_end..resp_end];
        let ip_text = &text[resp_end..ip_end];
        let payload_text = &text[ip_end..];

        let mut fields: [(&str, &str); 6] = [("", ""); 6];
        let mut n = 0;
        fields[n] = ("WARC-Target-URI", ex.target_uri);
        n += 1;
        fields[n] = ("WARC-Warcinfo-ID", warcinfo_text);
        n += 1;
        if ex.ip.is_some() {
            fields[n] = ("WARC-IP-Address", ip_text);
            n += 1;
        }
        let common = n;
        fields[n] = ("WARC-Concurrent-To", resp_text);
        n += 1;

        self.gz_buf.clear();
        self.record_buf.clear();
        write_record(
            &mut self.record_buf,
            RecordType::Request,
            &req_id,
            ex.date,
            &fields[..n],
            "application/http;msgtype=request",
            &[ex.request],
        );
        self.gz.encode(&self.record_buf, &mut self.gz_buf)?;

        let mut n = common;
        if ex.payload_digest.is_some() {
            fields[n] = ("WARC-Payload-Digest", payload_text);
            n += 1;
        }
        if let Some(t) = ex.truncated {
            fields[n] = ("WARC-Truncated", t.as_str());
            n += 1;
        }
        self.record_buf.clear();
        write_record(
            &mut self.record_buf,
            RecordType::Response,
            &resp_id,
            ex.date,
            &fields[..n],
            "application/http;msgtype=response",
            &[ex.response],
        );
        self.gz.encode(&self.record_buf, &mut self.gz_buf)?;

        let FileState::Open(f) = &mut self.state else {
            return Err(io::Error::other("WARC writer has no open file"));
        };
        let res = f.out.write_all(&self.gz_buf);
        let len = self.gz_buf.len() as u64;
        self.record_buf.clear();
        self.record_buf.shrink_to(RETAIN_BUFFER_BYTES);
        self.gz_buf.clear();
        self.gz_buf.shrink_to(RETAIN_BUFFER_BYTES);
        match res {
            Ok(()) => {
                f.bytes += len;
                self.bytes_written += len;
                Ok(())
            }
            Err(e) => {
                self.state = FileState::Failed(e.kind());
                Err(e)
            }
        }
    }

    /// Pushes buffered bytes to the OS (not a rename: the file stays `.open`).
    pub fn flush(&mut self) -> io::Result<()> {
        match &mut self.state {
            FileState::Open(f) => f.out.flush().inspect_err(|e| {
                self.state = FileState::Failed(e.kind());
            }),
            FileState::Failed(k) => Err(failed(*k)),
            FileState::Finished => Ok(()),
        }
    }

    /// Closes the current file; returns every file written, in order.
    pub fn finish(mut self) -> io::Result<Vec<PathBuf>> {
        self.close_current()?;
        Ok(std::mem::take(&mut self.files))
    }

    /// Compressed bytes written so far, over all files.
    pub fn bytes_written(&self) -> u64 {
        self.bytes_written
    }

    /// Files completed so far (the open one is not listed until it closes).
    pub fn files(&self) -> &[PathBuf] {
        &self.files
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
