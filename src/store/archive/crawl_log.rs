//! `crawl.log`: one tab-separated line per finished fetch (ARCHITECTURE §9), and the parse back (for
//! tests and, later, resuming a crawl).
//!
//! Line format (after the `#` header line), 12 fields, and a 13th when there are annotations:
//! `time outcome status bytes ms url referrer hop digest revisit relevance sketch
//! [annotations]`, time in RFC 3339
//! UTC with
//! milliseconds, outcome a [`ReturnCode`] name, status `0` when there was no HTTP response, hop
//! how the URL was found (Heritrix's letters: `S` seed, `L` link, `E` embed, `R` redirect, `P`
//! prerequisite such as robots.txt; `-` unknown), digest the SHA-1 of the payload as `sha1:` +
//! base32 (the form of `WARC-Payload-Digest` and CDXJ) or `-`, revisit what fetching the URL
//! again found (`NotModified`: a 304; `Unchanged`: the same payload; `Changed`) or `-`.
//! relevance a focused crawl's score of the page (0 to 1, three decimals) or `-`. sketch the
//! min-hash sketch of the page's main text (`content::minhash`, 128 lowercase hex digits, one
//! per bin) for a scanned HTML page with text, or `-`. annotations, as Heritrix's last column,
//! comma-separated: `noindex` (the page's robots directives asked not to index it; it is
//! stored, and left out of the text outputs); a line without any has no 13th field, so that
//! readers of 12 fields read every other line as before. Lines of 9, 10 or 11 fields (written
//! before revisits, relevance or sketches existed) are read as without them, and so is the
//! 16-digit sketch older crawls wrote in the last column.
//! URLs come from hostile pages, so any byte that could split a line or a field (controls, space,
//! DEL, non-ASCII) is percent-encoded: the logged URL is an equivalent URL, and a line is always
//! one line. What a fetch's outcome *is* is decided by the fetch layer; this module only writes.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::time::SystemTime;

use crate::codec::push_u64;
use crate::content::Sketch;
use crate::crawl::revisit::Seen;
use crate::crawl::sink::Hop;
use crate::datetime;
use crate::store::archive::warc::{parse_sha1_base32, push_sha1_base32, Digest};
use crate::ReturnCode;

/// The first line of every crawl log.
pub const HEADER: &str =
    "#time\toutcome\tstatus\tbytes\tms\turl\treferrer\thop\tdigest\trevisit\trelevance\tsketch\n";
/// Fields per line without annotations.
const FIELDS: usize = 12;
/// Fields of a line with annotations.
const ANNOTATED_FIELDS: usize = FIELDS + 1;
/// The annotation of a page whose robots directives say `noindex`.
pub const NOINDEX: &str = "noindex";
/// Fields of the oldest lines still read (before the revisit and relevance columns).
const OLDEST_FIELDS: usize = 9;
/// Buffer of the log file writer.
const FILE_BUFFER_BYTES: usize = 64 * 1024;
/// Longest line `parse_line` accepts (URLs are capped far below this by the trap guards).
pub const MAX_LINE_BYTES: usize = 1024 * 1024;

const HEX: &[u8; 16] = b"0123456789ABCDEF";

/// Bytes written as `%XX` in URL fields: everything at or below space, DEL, and non-ASCII.
const fn escape_table() -> [bool; 256] {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = i <= 0x20 || i >= 0x7f;
        i += 1;
    }
    t
}
const ESCAPE: [bool; 256] = escape_table();

/// One finished fetch.
#[derive(Clone, Copy, Debug)]
pub struct LogLine<'a> {
    pub time: SystemTime,
    pub outcome: ReturnCode,
    /// HTTP status; 0 if there was no response.
    pub status: u16,
    pub body_bytes: u64,
    pub fetch_ms: u64,
    pub url: &'a str,
    /// Written as `-` when `None`.
    pub referrer: Option<&'a str>,
    /// How the URL was found; `-` when `None`.
    pub hop: Option<Hop>,
    /// SHA-1 of the body, `sha1:` + base32; `-` when `None`.
    pub digest: Option<Digest>,
    /// What a revisit found; `-` when `None` or `Seen::Unknown`.
    pub revisit: Option<Seen>,
    /// A focused crawl's relevance score; `-` when `None`.
    pub relevance: Option<f32>,
    /// The sketch of the page's main text; `-` when `None`.
    pub sketch: Option<Sketch>,
    /// The page's robots directives say `noindex` (annotated [`NOINDEX`]).
    pub noindex: bool,
}

/// A line read back by [`parse_line`]. URLs are as logged (percent-encoded where they held
/// bytes that cannot appear in a log field).
#[derive(Clone, Debug, PartialEq)]
pub struct ParsedLine {
    pub time: SystemTime,
    pub outcome: ReturnCode,
    pub status: u16,
    pub body_bytes: u64,
    pub fetch_ms: u64,
    pub url: String,
    pub referrer: Option<String>,
    pub hop: Option<Hop>,
    pub digest: Option<Digest>,
    pub revisit: Option<Seen>,
    /// As written: three decimals.
    pub relevance: Option<f32>,
    pub sketch: Option<Sketch>,
    /// Annotated [`NOINDEX`].
    pub noindex: bool,
}

/// Appends `s` with unsafe bytes percent-encoded. Runs of safe bytes are copied whole.
fn push_escaped(out: &mut Vec<u8>, s: &str) {
    let b = s.as_bytes();
    let mut start = 0;
    for (i, &c) in b.iter().enumerate() {
        if ESCAPE[usize::from(c)] {
            out.extend_from_slice(&b[start..i]);
            out.extend_from_slice(&[b'%', HEX[usize::from(c >> 4)], HEX[usize::from(c & 15)]]);
            start = i + 1;
        }
    }
    out.extend_from_slice(&b[start..]);
}

/// Appends a URL field; a lone `-` is encoded so it cannot read as "none".
fn push_url_field(out: &mut Vec<u8>, s: &str) {
    match s {
        "-" => out.extend_from_slice(b"%2D"),
        _ => push_escaped(out, s),
    }
}

/// Appends one log line (with its `\n`) to `out`.
pub fn format_line(out: &mut Vec<u8>, line: &LogLine<'_>) {
    datetime::write_rfc3339(out, line.time, true);
    out.push(b'\t');
    out.extend_from_slice(line.outcome.name().as_bytes());
    out.push(b'\t');
    push_u64(out, u64::from(line.status));
    out.push(b'\t');
    push_u64(out, line.body_bytes);
    out.push(b'\t');
    push_u64(out, line.fetch_ms);
    out.push(b'\t');
    push_url_field(out, line.url);
    out.push(b'\t');
    match line.referrer {
        Some(r) => push_url_field(out, r),
        None => out.push(b'-'),
    }
    out.push(b'\t');
    match line.hop {
        Some(h) => out.push(h.letter() as u8),
        None => out.push(b'-'),
    }
    out.push(b'\t');
    match &line.digest {
        Some(d) => push_sha1_base32(out, d),
        None => out.push(b'-'),
    }
    out.push(b'\t');
    match line.revisit.and_then(Seen::name) {
        Some(name) => out.extend_from_slice(name.as_bytes()),
        None => out.push(b'-'),
    }
    out.push(b'\t');
    match line.relevance {
        Some(r) if r.is_finite() => {
            let thousandths = (r.clamp(0.0, 1.0) * 1000.0).round() as u64;
            push_u64(out, thousandths / 1000);
            out.push(b'.');
            let frac = thousandths % 1000;
            out.extend_from_slice(&[
                b'0' + (frac / 100) as u8,
                b'0' + (frac / 10 % 10) as u8,
                b'0' + (frac % 10) as u8,
            ]);
        }
        _ => out.push(b'-'),
    }
    out.push(b'\t');
    match &line.sketch {
        Some(s) => s.push_hex(out),
        None => out.push(b'-'),
    }
    if line.noindex {
        out.push(b'\t');
        out.extend_from_slice(NOINDEX.as_bytes());
    }
    out.push(b'\n');
}

/// Puts `sketch` in the sketch column of a line [`format_line`] wrote without one (`-` then
/// becomes the 128 digits), before its annotations if it has any. A line not ending so is
/// left as it is.
pub fn set_sketch(line: &mut Vec<u8>, sketch: &Sketch) {
    let annotated = format!("\t-\t{NOINDEX}\n");
    let tail = if line.ends_with(annotated.as_bytes()) {
        annotated.len() - 2
    } else if line.ends_with(b"\t-\n") {
        1
    } else {
        return;
    };
    let rest = line.split_off(line.len() - tail);
    line.pop();
    sketch.push_hex(line);
    line.extend_from_slice(&rest);
}

/// The last column: `-`, a sketch, or an older crawl's 16-digit sketch (read as none).
fn parse_sketch(s: &str) -> Option<Option<Sketch>> {
    match s.len() {
        1 if s == "-" => Some(None),
        16 if s
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) =>
        {
            Some(None)
        }
        _ => Some(Some(Sketch::from_hex(s.as_bytes())?)),
    }
}

/// Only plain decimal digits (no sign, no spaces), as `format_line` writes them.
fn parse_num<T: std::str::FromStr>(s: &str) -> Option<T> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Parses one line as [`format_line`] writes it (a trailing `\n` is allowed). The header, blank
/// lines and anything malformed give `None`.
pub fn parse_line(line: &str) -> Option<ParsedLine> {
    let line = line.strip_suffix('\n').unwrap_or(line);
    if line.len() > MAX_LINE_BYTES || line.starts_with('#') {
        return None;
    }
    let mut f = ["-"; ANNOTATED_FIELDS];
    let mut parts = line.split('\t');
    for (i, slot) in f.iter_mut().enumerate() {
        match parts.next() {
            Some(p) => *slot = p,
            // A line of an older log ends at its digest, revisit or relevance; one without
            // annotations at its sketch.
            None if i >= OLDEST_FIELDS => {}
            None => return None,
        }
    }
    if parts.next().is_some() {
        return None;
    }
    // A logged URL never holds raw bytes that format_line escapes.
    let clean = |s: &str| !s.bytes().any(|b| ESCAPE[usize::from(b)]);
    if !clean(f[5]) || !clean(f[6]) {
        return None;
    }
    Some(ParsedLine {
        time: datetime::parse_rfc3339(f[0])?,
        outcome: ReturnCode::from_name(f[1])?,
        status: parse_num(f[2])?,
        body_bytes: parse_num(f[3])?,
        fetch_ms: parse_num(f[4])?,
        url: f[5].to_string(),
        referrer: match f[6] {
            "-" => None,
            r => Some(r.to_string()),
        },
        hop: match f[7].as_bytes() {
            b"-" => None,
            [c] => Some(Hop::from_letter(*c)?),
            _ => return None,
        },
        digest: match f[8] {
            "-" => None,
            m => Some(parse_sha1_base32(m)?),
        },
        revisit: match f[9] {
            "-" => None,
            name => Some(Seen::from_name(name)?),
        },
        relevance: match f[10] {
            "-" => None,
            r => Some(r.parse::<f32>().ok().filter(|r| (0.0..=1.0).contains(r))?),
        },
        sketch: parse_sketch(f[11])?,
        noindex: match f[12] {
            "-" => false,
            a => {
                let mut noindex = false;
                // Unknown annotations (a later version's) are skipped.
                for item in a.split(',') {
                    noindex |= item == NOINDEX;
                }
                noindex
            }
        },
    })
}

/// Reads the log at `path` line by line, calling `each` with every line that parses (the
/// header, and a line a crash cut short, do not): a resumed crawl counts its whole log this
/// way. Returns the lines read.
pub fn for_each_line(path: &Path, mut each: impl FnMut(&ParsedLine)) -> io::Result<u64> {
    use std::io::BufRead;
    let mut r = io::BufReader::new(File::open(path)?);
    let mut line = String::new();
    let mut n = 0;
    // Bounded by the file's length: each pass consumes one line.
    loop {
        line.clear();
        if r.read_line(&mut line)? == 0 {
            return Ok(n);
        }
        if let Some(p) = parse_line(&line) {
            each(&p);
            n += 1;
        }
    }
}

/// The crawl log file.
pub struct CrawlLog {
    out: BufWriter<File>,
    /// Reused line buffer.
    buf: Vec<u8>,
    /// The file's length, buffered bytes included: what a commit mark records.
    len: u64,
}

impl CrawlLog {
    /// Creates (or truncates) `path` and writes [`HEADER`].
    pub fn create(path: &Path) -> io::Result<Self> {
        let mut out = BufWriter::with_capacity(FILE_BUFFER_BYTES, File::create(path)?);
        out.write_all(HEADER.as_bytes())?;
        Ok(CrawlLog {
            out,
            buf: Vec::with_capacity(512),
            len: HEADER.len() as u64,
        })
    }

    pub fn write(&mut self, line: &LogLine<'_>) -> io::Result<()> {
        self.buf.clear();
        format_line(&mut self.buf, line);
        self.out.write_all(&self.buf)?;
        self.len += self.buf.len() as u64;
        Ok(())
    }

    /// Opens `path` to continue a log (a resumed crawl): a line cut short by a crash is
    /// removed, then lines are appended. A missing or empty file is created with [`HEADER`].
    pub fn open_append(path: &Path) -> io::Result<Self> {
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        let len = file.metadata()?.len();
        let keep = if len == 0 {
            0
        } else {
            // Scan back from the end for the last newline, a block at a time.
            use std::io::{Read, Seek, SeekFrom};
            let mut end = len;
            let mut keep = 0;
            let mut block = vec![0u8; 64 * 1024];
            // Bounded: each pass moves `end` back by at least one byte.
            while end > 0 {
                let start = end.saturating_sub(block.len() as u64);
                let n = (end - start) as usize;
                file.seek(SeekFrom::Start(start))?;
                file.read_exact(&mut block[..n])?;
                if let Some(i) = memchr::memrchr(b'\n', &block[..n]) {
                    keep = start + i as u64 + 1;
                    break;
                }
                end = start;
            }
            keep
        };
        if keep < len {
            file.set_len(keep)?;
        }
        use std::io::Seek;
        file.seek(io::SeekFrom::Start(keep))?;
        let mut out = BufWriter::with_capacity(FILE_BUFFER_BYTES, file);
        let mut len = keep;
        if keep == 0 {
            out.write_all(HEADER.as_bytes())?;
            len = HEADER.len() as u64;
        }
        Ok(CrawlLog {
            out,
            buf: Vec::with_capacity(512),
            len,
        })
    }

    /// Flush and `fdatasync`: the lines survive a power cut.
    pub fn sync(&mut self) -> io::Result<()> {
        self.out.flush()?;
        self.out.get_ref().sync_data()
    }

    /// Writes a line already formatted by [`format_line`].
    pub fn write_line(&mut self, line: &[u8]) -> io::Result<()> {
        self.out.write_all(line)?;
        self.len += line.len() as u64;
        Ok(())
    }

    /// Bytes written so far (the header included), flushed or not.
    pub fn bytes_written(&self) -> u64 {
        self.len
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::time::{Duration, UNIX_EPOCH};

    fn t(ms: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(ms)
    }

    fn line_string(l: &LogLine<'_>) -> String {
        let mut out = Vec::new();
        format_line(&mut out, l);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn formats_known_line() {
        let mut bins = [0u8; 64];
        bins[0] = 0x0a;
        bins[63] = 0xf1;
        let sketch = Sketch(bins);
        let hex = format!("0a{}f1", "0".repeat(124));
        let mut digest = [0u8; 20];
        digest[0] = 0xab;
        digest[19] = 0x01;
        let s = line_string(&LogLine {
            time: t(1_795_240_484_123),
            outcome: ReturnCode::Success,
            status: 200,
            body_bytes: 15_360,
            fetch_ms: 42,
            url: "http://a.test/x?q=1",
            referrer: Some("http://a.test/"),
            hop: Some(Hop::Embed),
            digest: Some(digest),
            revisit: Some(Seen::Unchanged),
            relevance: Some(0.4567),
            sketch: Some(sketch),
            noindex: false,
        });
        assert_eq!(
            s,
            format!(
                "2026-11-21T05:54:44.123Z\tSuccess\t200\t15360\t42\thttp://a.test/x?q=1\t\
             http://a.test/\tE\tsha1:VMAAAAAAAAAAAAAAAAAAAAAAAAAAAAAB\tUnchanged\t0.457\t{hex}\n"
            )
        );
        assert_eq!(parse_line(&s).unwrap().sketch, Some(sketch));
        // Written without it, then filled in (the page worker's sketch): the same line.
        let mut later = s.replace(&hex, "-").into_bytes();
        set_sketch(&mut later, &sketch);
        assert_eq!(String::from_utf8(later).unwrap(), s);
        assert_eq!(parse_line(&s).unwrap().hop, Some(Hop::Embed));
        assert_eq!(parse_line(&s).unwrap().revisit, Some(Seen::Unchanged));
        assert_eq!(parse_line(&s).unwrap().relevance, Some(0.457));
        let s = line_string(&LogLine {
            time: t(0),
            outcome: ReturnCode::DnsNxDomain,
            status: 0,
            body_bytes: 0,
            fetch_ms: 0,
            url: "http://nx.test/",
            referrer: None,
            hop: None,
            digest: None,
            revisit: None,
            relevance: None,
            sketch: None,
            noindex: false,
        });
        assert_eq!(
            s,
            "1970-01-01T00:00:00.000Z\tDnsNxDomain\t0\t0\t0\thttp://nx.test/\t-\t-\t-\t-\t-\t-\n"
        );
        // A line of 11 fields (before the last column) still reads, and so does an older
        // crawl's sketch there; anything else in it does not.
        let eleven = "1970-01-01T00:00:00.000Z\tSuccess\t200\t1\t2\thttp://a/\t-\tL\t-\t-\t0.500\n";
        let p = parse_line(eleven).unwrap();
        assert_eq!((p.relevance, p.sketch), (Some(0.5), None));
        let sketch = eleven.replace("\n", "\t00abcdef01234567\n");
        assert_eq!(parse_line(&sketch).unwrap().sketch, None);
        assert_eq!(parse_line(&eleven.replace("\n", "\t00abcdefg\n")), None);
        // A line of an older log, without the revisit field, still reads.
        let old = "1970-01-01T00:00:00.000Z\tDnsNxDomain\t0\t0\t0\thttp://nx.test/\t-\t-\t-\n";
        assert_eq!(parse_line(old).unwrap().revisit, None);
        assert_eq!(HEADER.matches('\t').count(), FIELDS - 1);
        assert_eq!(parse_line(HEADER), None);
    }

    #[test]
    fn hostile_urls_stay_on_one_line_with_all_fields() {
        let url = "http://a.test/\tx\r\ny z\x00\x7f\u{85}\u{2028}é";
        let s = line_string(&LogLine {
            time: t(5),
            outcome: ReturnCode::HttpTimeout,
            status: 0,
            body_bytes: 1,
            fetch_ms: 30_000,
            url,
            referrer: Some("-"),
            hop: Some(Hop::Link),
            digest: None,
            revisit: None,
            relevance: None,
            sketch: None,
            noindex: false,
        });
        assert_eq!(s.matches('\n').count(), 1);
        assert!(s.ends_with('\n'));
        assert_eq!(s.split('\t').count(), FIELDS);
        assert!(s.is_ascii());
        let p = parse_line(&s).unwrap();
        assert_eq!(
            p.url,
            "http://a.test/%09x%0D%0Ay%20z%00%7F%C2%85%E2%80%A8%C3%A9"
        );
        // A referrer that is literally "-" is not confused with "no referrer".
        assert_eq!(p.referrer.as_deref(), Some("%2D"));
    }

    #[test]
    fn parse_rejects_malformed() {
        let good = "1970-01-01T00:00:00.000Z\tSuccess\t200\t1\t2\thttp://a/\t-\tL\t-";
        assert!(parse_line(good).is_some());
        for bad in [
            "",
            "1970-01-01T00:00:00.000Z\tSuccess\t200\t1\t2\thttp://a/\t-\t-",
            "1970-01-01T00:00:00.000Z\tSuccess\t200\t1\t2\thttp://a/\t-\tX\t-",
            "1970-01-01T00:00:00.000Z\tSuccess\t200\t1\t2\thttp://a/\t-\tLL\t-",
            "1970-01-01T00:00:00.000Z\tSuccess\t200\t1\t2\thttp://a/\t-\tL\t-\tSame",
            "1970-01-01T00:00:00.000Z\tSuccess\t200\t1\t2\thttp://a/\t-\tL\t-\t-\t2.5",
            "1970-01-01T00:00:00.000Z\tSuccess\t200\t1\t2\thttp://a/\t-\tL\t-\t-\t-\t-\tnoindex\textra",
            "1970-01-01T00:00:00.000Z\tSuccess\t200\t1\t2\thttp://a/\t-\tL\t-\t-\t-\t00ABCDEF01234567",
            "1970-01-01T00:00:00.000Z\tSuccess\t200\t1\t2\thttp://a/\t-\tL\t-\t-\t-\tabcdef01234567",
            "1970-01-01T00:00:00.000Z\tNoSuchCode\t200\t1\t2\thttp://a/\t-\tL\t-",
            "1970-01-01T00:00:00.000Z\tSuccess\t70000\t1\t2\thttp://a/\t-\tL\t-",
            "1970-01-01T00:00:00.000Z\tSuccess\t+200\t1\t2\thttp://a/\t-\tL\t-",
            "1970-01-01T00:00:00.000Z\tSuccess\t200\t-1\t2\thttp://a/\t-\tL\t-",
            "1970-01-01T00:00:00.000Z\tSuccess\t200\t1\t2\thttp://a/ b\t-\tL\t-",
            "1970-01-01T00:00:00.000Z\tSuccess\t200\t1\t2\thttp://a/\t-\tL\tabc",
            "1970-01-01T00:00:00.000Z\tSuccess\t200\t1\t2\thttp://a/\t-\tL\tsha1:VMAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
            "1970-01-01T00:00:00.000Z\tSuccess\t200\t1\t2\thttp://a/\t-\tL\tVMAAAAAAAAAAAAAAAAAAAAAAAAAAAAAB",
            // The MD5 hex of earlier logs is not a SHA-1.
            "1970-01-01T00:00:00.000Z\tSuccess\t200\t1\t2\thttp://a/\t-\tL\tab000000000000000000000000000001",
            "yesterday\tSuccess\t200\t1\t2\thttp://a/\t-\tL\t-",
        ] {
            assert_eq!(parse_line(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_noindex_page_is_annotated_after_its_sketch() {
        let line = |sketch: Option<Sketch>, noindex: bool| {
            line_string(&LogLine {
                time: t(0),
                outcome: ReturnCode::Success,
                status: 200,
                body_bytes: 1,
                fetch_ms: 2,
                url: "http://a/",
                referrer: None,
                hop: Some(Hop::Link),
                digest: None,
                revisit: None,
                relevance: None,
                sketch,
                noindex,
            })
        };
        let plain = line(None, false);
        let marked = line(None, true);
        assert_eq!(marked, plain.replace('\n', "\tnoindex\n"));
        assert!(parse_line(&marked).unwrap().noindex);
        assert!(!parse_line(&plain).unwrap().noindex);
        // The page worker's sketch goes in its column, the annotation stays last.
        let sketch = Sketch([7; 64]);
        let mut later = marked.clone().into_bytes();
        set_sketch(&mut later, &sketch);
        assert_eq!(String::from_utf8(later).unwrap(), line(Some(sketch), true));
        // Annotations a later version adds are skipped.
        let more = marked.replace("\tnoindex\n", "\tfuture,noindex\n");
        assert!(parse_line(&more).unwrap().noindex);
        assert!(
            parse_line(&plain.replace('\n', "\t-\t-\n")).is_none(),
            "14 fields"
        );
    }

    #[test]
    fn crawl_log_file_has_header_then_lines() {
        let path = std::env::temp_dir().join(format!("spinneret-crawllog-{}", std::process::id()));
        let mut log = CrawlLog::create(&path).unwrap();
        for i in 0..3u64 {
            let url = format!("http://a.test/{i}");
            log.write(&LogLine {
                time: t(i),
                outcome: ReturnCode::Success,
                status: 200,
                body_bytes: i,
                fetch_ms: i,
                url: &url,
                referrer: None,
                hop: Some(Hop::Seed),
                digest: None,
                revisit: None,
                relevance: None,
                sketch: None,
                noindex: false,
            })
            .unwrap();
        }
        log.flush().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        let mut lines = text.split_inclusive('\n');
        assert_eq!(lines.next(), Some(HEADER));
        let parsed: Vec<_> = lines.map(|l| parse_line(l).unwrap()).collect();
        assert_eq!(parsed.len(), 3);
        assert_eq!(parsed[2].url, "http://a.test/2");
        assert_eq!(parsed[2].time, t(2));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]
        #[test]
        fn format_parse_round_trip(ms in 0u64..253_402_300_799_999, code in 0usize..ReturnCode::ALL.len(),
                                   status in any::<u16>(), bytes in any::<u64>(), fetch_ms in any::<u64>(),
                                   url in "\\PC{0,40}|[\\x00-\\x7f]{0,40}", referrer in proptest::option::of(".{0,20}"),
                                   digest in proptest::option::of(any::<[u8; 20]>()),
                                   revisit in proptest::sample::select(vec![None, Some(Seen::NotModified), Some(Seen::Unchanged), Some(Seen::Changed)]),
                                   sketch in proptest::option::of(any::<[u8; 32]>().prop_map(|h| Sketch([h, h].concat().try_into().unwrap()))),
                                   noindex in any::<bool>()) {
            let l = LogLine { time: t(ms), outcome: ReturnCode::ALL[code], status, body_bytes: bytes,
                              fetch_ms, url: &url, referrer: referrer.as_deref(), hop: Some(Hop::Redirect), digest, revisit,
                              relevance: None, sketch, noindex };
            let s = line_string(&l);
            prop_assert!(s.is_ascii());
            prop_assert_eq!(s.matches('\n').count(), 1);
            prop_assert_eq!(s.split('\t').count(), if noindex { ANNOTATED_FIELDS } else { FIELDS });
            let p = parse_line(&s).unwrap();
            let escaped = |u: &str| { let mut v = Vec::new(); push_url_field(&mut v, u); String::from_utf8(v).unwrap() };
            prop_assert_eq!(p.time, l.time);
            prop_assert_eq!(p.outcome, l.outcome);
            prop_assert_eq!((p.status, p.body_bytes, p.fetch_ms), (status, bytes, fetch_ms));
            prop_assert_eq!(p.digest, digest);
            prop_assert_eq!(p.sketch, sketch);
            prop_assert_eq!(p.noindex, noindex);
            prop_assert_eq!(p.hop, Some(Hop::Redirect));
            prop_assert_eq!(&p.url, &escaped(&url));
            prop_assert_eq!(p.referrer, referrer.as_deref().map(escaped));
            // URLs without bytes needing escape are logged unchanged.
            if !url.bytes().any(|b| ESCAPE[usize::from(b)]) && url != "-" {
                prop_assert_eq!(&p.url, &url);
            }
        }
    }
}
