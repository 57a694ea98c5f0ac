//! A ZIP writer for WACZ packages: every entry stored (method 0: WARC files are gzip
//! already, and replay tools read a record at an offset inside the entry), written file by
//! file into a seekable `File`, with ZIP64 records exactly where a size, an offset or the
//! entry count needs them (APPNOTE 6.3.10, sections 4.3.7, 4.3.12, 4.3.14–16, 4.5.3).
//!
//! Hand-written rather than the `zip` crate: a stored-only writer is the headers below and
//! a seek-back, and the package needs each entry's SHA-256 computed on the bytes as they
//! pass, one read of each WARC file (the crate would hash nothing and adds a dependency
//! tree for a few hundred lines).
//!
//! An entry starts with its local header: the CRC-32 and sizes are written as zero, and
//! rewritten in place (`pwrite`, the file position untouched) when the entry ends, so no
//! data descriptor is needed and every reader, streaming or not, finds them. An entry whose
//! size is not known when it starts (an index, the page list) gets a ZIP64 extra field in
//! its local header, as APPNOTE 4.3.9.2 allows for any size, so that it may grow past
//! 4 GiB; one whose size is known gets it only when that size needs it.
//!
//! The header layouts are pure functions ([`local_header`], [`central_header`],
//! [`end_records`]) so their ZIP64 boundaries are tested with large numbers, not large files.

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::time::SystemTime;

use sha2::{Digest as _, Sha256};

/// The largest value a 32-bit size or offset field holds; at or past it, ZIP64 (the value
/// itself is the field's "see the ZIP64 record" mark).
const MAX_32: u64 = 0xFFFF_FFFF;
/// Entries a plain end record counts; at or past it, ZIP64.
const MAX_16: u64 = 0xFFFF;
/// "Version needed to extract": 2.0 for plain stored entries, 4.5 for ZIP64.
const VERSION_PLAIN: u16 = 20;
const VERSION_ZIP64: u16 = 45;
/// "Version made by": Unix (3) in the high byte, so the external attributes are a mode.
const MADE_BY: u16 = (3 << 8) | VERSION_ZIP64;
/// General purpose flag bit 11: the name is UTF-8.
const FLAG_UTF8: u16 = 1 << 11;
/// A regular file, mode 0644, in the high half of the external attributes.
const EXTERNAL_ATTRS: u32 = 0o100644 << 16;
/// Bytes of the fixed part of a local header.
const LOCAL_FIXED: usize = 30;
/// Write buffer: large writes go through it in one system call.
const BUFFER_BYTES: usize = 1 << 20;

/// What one entry's header says, known once the entry is written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryRecord {
    pub name: String,
    pub crc32: u32,
    pub size: u64,
    /// Where its local header starts.
    pub offset: u64,
    /// Its local header carries a ZIP64 extra field (and the central one does too).
    pub zip64: bool,
    /// MS-DOS time and date.
    pub dos_time: (u16, u16),
}

/// What the caller learns of an entry it wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Written {
    pub size: u64,
    /// SHA-256 of its bytes, lowercase hex.
    pub sha256: String,
}

/// The local header of an entry, before its data. A ZIP64 one says `0xFFFFFFFF` in both size
/// fields and carries the sizes in its extra field (APPNOTE 4.5.3: both, in a local header).
pub fn local_header(e: &EntryRecord) -> Vec<u8> {
    let mut h = Vec::with_capacity(LOCAL_FIXED + e.name.len() + 20);
    put32(&mut h, 0x0403_4b50);
    put16(
        &mut h,
        if e.zip64 {
            VERSION_ZIP64
        } else {
            VERSION_PLAIN
        },
    );
    put16(&mut h, flags(&e.name));
    put16(&mut h, 0); // stored
    put16(&mut h, e.dos_time.0);
    put16(&mut h, e.dos_time.1);
    put32(&mut h, e.crc32);
    let small = if e.zip64 { MAX_32 } else { e.size } as u32;
    put32(&mut h, small); // compressed size: stored, the same
    put32(&mut h, small);
    put16(&mut h, e.name.len() as u16);
    put16(&mut h, if e.zip64 { 20 } else { 0 });
    h.extend_from_slice(e.name.as_bytes());
    if e.zip64 {
        put16(&mut h, 0x0001);
        put16(&mut h, 16);
        put64(&mut h, e.size);
        put64(&mut h, e.size);
    }
    h
}

/// Where the CRC-32 and the sizes sit in a local header (from its start): the 32-bit fields,
/// or the ZIP64 extra field's.
fn size_fields_at(e: &EntryRecord) -> u64 {
    if e.zip64 {
        (LOCAL_FIXED + e.name.len() + 4) as u64
    } else {
        18
    }
}

/// The central directory header of an entry. Its ZIP64 extra field holds, in APPNOTE's
/// order, the sizes when they are marked (an entry that is ZIP64 in its local header, or
/// one at least 4 GiB) and the offset when that is marked (at least 4 GiB).
pub fn central_header(e: &EntryRecord) -> Vec<u8> {
    let big_size = e.zip64 || e.size >= MAX_32;
    let big_offset = e.offset >= MAX_32;
    let mut extra = Vec::new();
    if big_size {
        put64(&mut extra, e.size);
        put64(&mut extra, e.size);
    }
    if big_offset {
        put64(&mut extra, e.offset);
    }
    let zip64 = big_size || big_offset;
    let mut h = Vec::with_capacity(46 + e.name.len() + 4 + extra.len());
    put32(&mut h, 0x0201_4b50);
    put16(&mut h, MADE_BY);
    put16(&mut h, if zip64 { VERSION_ZIP64 } else { VERSION_PLAIN });
    put16(&mut h, flags(&e.name));
    put16(&mut h, 0);
    put16(&mut h, e.dos_time.0);
    put16(&mut h, e.dos_time.1);
    put32(&mut h, e.crc32);
    let size = if big_size { MAX_32 } else { e.size } as u32;
    put32(&mut h, size);
    put32(&mut h, size);
    put16(&mut h, e.name.len() as u16);
    put16(&mut h, if zip64 { 4 + extra.len() as u16 } else { 0 });
    put16(&mut h, 0); // comment
    put16(&mut h, 0); // disk
    put16(&mut h, 0); // internal attributes
    put32(&mut h, EXTERNAL_ATTRS);
    put32(&mut h, if big_offset { MAX_32 } else { e.offset } as u32);
    h.extend_from_slice(e.name.as_bytes());
    if zip64 {
        put16(&mut h, 0x0001);
        put16(&mut h, extra.len() as u16);
        h.extend_from_slice(&extra);
    }
    h
}

/// The records after the central directory: the ZIP64 end record and its locator when the
/// entry count, the directory's size or its offset needs them, then the end record (whose
/// fields say `0xFFFF…` where the ZIP64 record holds the value). `end_at` is where these
/// records start (right after the central directory).
pub fn end_records(entries: u64, cd_offset: u64, cd_size: u64) -> Vec<u8> {
    let end_at = cd_offset + cd_size;
    let zip64 = entries >= MAX_16 || cd_offset >= MAX_32 || cd_size >= MAX_32;
    let mut h = Vec::with_capacity(98);
    if zip64 {
        put32(&mut h, 0x0606_4b50);
        put64(&mut h, 44); // the record's size after this field
        put16(&mut h, MADE_BY);
        put16(&mut h, VERSION_ZIP64);
        put32(&mut h, 0); // this disk
        put32(&mut h, 0); // the directory's disk
        put64(&mut h, entries);
        put64(&mut h, entries);
        put64(&mut h, cd_size);
        put64(&mut h, cd_offset);
        put32(&mut h, 0x0706_4b50);
        put32(&mut h, 0);
        put64(&mut h, end_at);
        put32(&mut h, 1); // disks in all
    }
    put32(&mut h, 0x0605_4b50);
    put16(&mut h, 0);
    put16(&mut h, 0);
    let n = entries.min(MAX_16) as u16;
    put16(&mut h, n);
    put16(&mut h, n);
    put32(&mut h, cd_size.min(MAX_32) as u32);
    put32(&mut h, cd_offset.min(MAX_32) as u32);
    put16(&mut h, 0); // comment
    h
}

fn flags(name: &str) -> u16 {
    if name.is_ascii() {
        0
    } else {
        FLAG_UTF8
    }
}

fn put16(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// MS-DOS time and date (2-second resolution, years 1980–2107) of `t`, in UTC.
pub fn dos_time(t: SystemTime) -> (u16, u16) {
    // "YYYY-MM-DDTHH:MM:SSZ": the civil fields, already computed by the one date formatter.
    let s = crate::datetime::rfc3339(t);
    let n = |r: std::ops::Range<usize>| s.get(r).and_then(|d| d.parse::<u32>().ok());
    let (Some(y), Some(mo), Some(d), Some(h), Some(mi), Some(se)) =
        (n(0..4), n(5..7), n(8..10), n(11..13), n(14..16), n(17..19))
    else {
        return (0, (1 << 5) | 1);
    };
    let y = y.clamp(1980, 2107) - 1980;
    let time = (h << 11) | (mi << 5) | (se / 2);
    let date = (y << 9) | (mo << 5) | d;
    (time as u16, date as u16)
}

/// A ZIP file being written, entry by entry.
pub struct ZipWriter {
    out: io::BufWriter<File>,
    /// Bytes written so far: where the next header goes.
    pos: u64,
    entries: Vec<EntryRecord>,
    dos_time: (u16, u16),
}

/// The entry being written: its bytes go through [`Write`], hashed as they pass.
pub struct Entry<'a> {
    zip: &'a mut ZipWriter,
    record: EntryRecord,
    /// The size its header promised, if it was known.
    expected: Option<u64>,
    crc: crc32fast::Hasher,
    sha: Sha256,
}

impl ZipWriter {
    /// A ZIP file written to `file` (empty, positioned at its start); every entry is dated
    /// `created`.
    pub fn new(file: File, created: SystemTime) -> ZipWriter {
        ZipWriter {
            out: io::BufWriter::with_capacity(BUFFER_BYTES, file),
            pos: 0,
            entries: Vec::new(),
            dos_time: dos_time(created),
        }
    }

    /// Starts an entry named `name`; `size`, when known, decides whether it needs ZIP64 and
    /// is checked when the entry ends.
    pub fn entry(&mut self, name: &str, size: Option<u64>) -> io::Result<Entry<'_>> {
        let record = EntryRecord {
            name: name.to_string(),
            crc32: 0,
            size: 0,
            offset: self.pos,
            zip64: size.is_none_or(|s| s >= MAX_32),
            dos_time: self.dos_time,
        };
        if name.len() > usize::from(u16::MAX) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("entry name of {} bytes: a ZIP name holds 65535", name.len()),
            ));
        }
        let header = local_header(&record);
        self.out.write_all(&header)?;
        self.pos += header.len() as u64;
        Ok(Entry {
            zip: self,
            record,
            expected: size,
            crc: crc32fast::Hasher::new(),
            sha: Sha256::new(),
        })
    }

    /// Writes the central directory and the end records; the file, flushed.
    pub fn finish(mut self) -> io::Result<File> {
        let cd_offset = self.pos;
        let mut cd_size = 0u64;
        for e in &self.entries {
            let h = central_header(e);
            self.out.write_all(&h)?;
            cd_size += h.len() as u64;
        }
        self.out
            .write_all(&end_records(self.entries.len() as u64, cd_offset, cd_size))?;
        self.out.into_inner().map_err(|e| e.into_error())
    }
}

impl Entry<'_> {
    /// Ends the entry: its CRC-32 and sizes written into its local header.
    pub fn finish(mut self) -> io::Result<Written> {
        let size = self.record.size;
        if let Some(expected) = self.expected.filter(|&e| e != size) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{}: {size} bytes read where the file had {expected} (did it change while \
                     being packed?)",
                    self.record.name
                ),
            ));
        }
        self.record.crc32 = self.crc.clone().finalize();
        let header = local_header(&self.record);
        let zip = self.zip;
        // The header's bytes must be in the file before they are rewritten in place.
        zip.out.flush()?;
        let file = zip.out.get_ref();
        file.write_all_at(&header[14..18], self.record.offset + 14)?;
        let at = size_fields_at(&self.record);
        let sizes = if self.record.zip64 {
            &header[at as usize..at as usize + 16]
        } else {
            &header[18..26]
        };
        file.write_all_at(sizes, self.record.offset + at)?;
        let sha256 = hex(&self.sha.finalize_reset());
        zip.entries.push(self.record);
        Ok(Written { size, sha256 })
    }
}

impl Write for Entry<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.zip.out.write(buf)?;
        self.crc.update(&buf[..n]);
        self.sha.update(&buf[..n]);
        self.record.size += n as u64;
        self.zip.pos += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.zip.out.flush()
    }
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        s.push(HEX[usize::from(b >> 4)] as char);
        s.push(HEX[usize::from(b & 15)] as char);
    }
    s
}

#[cfg(test)]
#[path = "zip_tests.rs"]
mod tests;
