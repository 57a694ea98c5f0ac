use super::*;
use proptest::prelude::*;

/// A reader that hands its bytes out in the given sizes (cycled), as a pipe or a slow disk
/// might.
struct Chunked<'a> {
    data: &'a [u8],
    sizes: Vec<usize>,
    next: usize,
}

impl Read for Chunked<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let want = self.sizes[self.next % self.sizes.len()].max(1);
        self.next += 1;
        let n = want.min(buf.len()).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

fn all<R: Read>(mut lines: UrlLines<R>) -> Vec<(u64, Line)> {
    let mut out = Vec::new();
    while let Some(l) = lines.next_line().unwrap() {
        out.push(l);
    }
    assert_eq!(lines.next_line().unwrap(), None, "the end stays the end");
    out
}

fn read(text: &[u8], max_len: usize) -> Vec<(u64, Line)> {
    all(UrlLines::new(text, max_len))
}

fn text(s: &str) -> Line {
    Line::Text(s.to_string())
}

/// The reference: the whole input in memory, split and judged line by line.
fn naive(input: &[u8], max_len: usize) -> Vec<(u64, Line)> {
    let input = input.strip_prefix(BOM).unwrap_or(input);
    let mut out = Vec::new();
    for (i, raw) in input.split(|&b| b == b'\n').enumerate() {
        let start = raw.iter().position(|&b| !is_blank(b)).unwrap_or(raw.len());
        let t = &raw[start..];
        let end = t.iter().rposition(|&b| !is_blank(b)).map_or(0, |p| p + 1);
        if end == 0 || t[0] == b'#' {
            continue;
        }
        let kept = &t[..end];
        let line = if end > max_len {
            let prefix = &t[..end.min(LOGGED_PREFIX_BYTES)];
            let prefix_end = prefix
                .iter()
                .rposition(|&b| !is_blank(b))
                .map_or(0, |p| p + 1);
            Line::TooLong(String::from_utf8_lossy(&prefix[..prefix_end]).into_owned())
        } else {
            match std::str::from_utf8(kept) {
                Ok(s) => {
                    let s = s.trim();
                    if s.is_empty() || s.starts_with('#') {
                        continue;
                    }
                    Line::Text(s.to_string())
                }
                Err(_) => Line::NotUtf8(String::from_utf8_lossy(kept).trim().to_string()),
            }
        };
        out.push((i as u64 + 1, line));
    }
    out
}

#[test]
fn blank_lines_comments_and_blanks_around_are_dropped() {
    let got = read(
        b"# list\n\n  http://a.test/  \r\nhttp://b.test/\r\n\t#indented comment\n \nlast",
        100,
    );
    assert_eq!(
        got,
        vec![
            (3, text("http://a.test/")),
            (4, text("http://b.test/")),
            (7, text("last")),
        ]
    );
    assert_eq!(read(b"", 100), vec![]);
    assert_eq!(read(b"\n\n\r\n", 100), vec![]);
}

#[test]
fn a_byte_order_mark_is_skipped_even_when_read_a_byte_at_a_time() {
    let input = b"\xEF\xBB\xBFhttp://a.test/\n";
    let want = vec![(1, text("http://a.test/"))];
    assert_eq!(read(input, 100), want);
    let chunked = Chunked {
        data: input,
        sizes: vec![1],
        next: 0,
    };
    assert_eq!(all(UrlLines::with_piece(chunked, 100, 4)), want);
    // Only at the start: elsewhere it is part of a line.
    assert_eq!(read(b"a\n\xEF\xBB\xBFb\n", 100)[1], (2, text("\u{FEFF}b")));
    // Half a mark is not one.
    assert_eq!(
        read(b"\xEF\xBBx\n", 100),
        vec![(1, Line::NotUtf8("\u{FFFD}x".into()))]
    );
    assert_eq!(read(b"\xEF\xBB\xBF", 100), vec![]);
}

#[test]
fn a_line_that_is_not_utf8_is_its_own_line_and_reading_goes_on() {
    let got = read(
        b"http://a.test/\nhttp://b.test/\xFF\xFE\nhttp://c.test/\n",
        100,
    );
    assert_eq!(
        got,
        vec![
            (1, text("http://a.test/")),
            (2, Line::NotUtf8("http://b.test/\u{FFFD}\u{FFFD}".into())),
            (3, text("http://c.test/")),
        ]
    );
}

#[test]
fn a_long_line_is_skipped_without_being_held() {
    let max = 64;
    let mut input = b"http://a.test/\n".to_vec();
    input.extend(std::iter::repeat_n(b'x', 10 << 20));
    input.extend_from_slice(b"\nhttp://b.test/\n");
    let mut lines = UrlLines::with_piece(&input[..], max, 4096);
    assert_eq!(
        lines.next_line().unwrap(),
        Some((1, text("http://a.test/")))
    );
    match lines.next_line().unwrap() {
        Some((2, Line::TooLong(prefix))) => {
            assert_eq!(prefix, "x".repeat(LOGGED_PREFIX_BYTES))
        }
        other => panic!("{other:?}"),
    }
    assert!(
        lines.line.capacity() <= 2 * LOGGED_PREFIX_BYTES,
        "{} bytes held for a 10 MB line",
        lines.line.capacity()
    );
    assert_eq!(
        lines.next_line().unwrap(),
        Some((3, text("http://b.test/")))
    );
    assert_eq!(lines.next_line().unwrap(), None);
}

#[test]
fn the_limit_counts_the_trimmed_line() {
    let url = format!("http://a.test/{}", "p".repeat(50));
    let max = url.len();
    // Exactly the limit, with blanks around it: fine.
    let padded = format!("   {url}{}\n", " ".repeat(1000));
    assert_eq!(read(padded.as_bytes(), max), vec![(1, text(&url))]);
    // One byte more, or text after the blanks: too long.
    let longer = format!("{url}q\n{url}  x  \n");
    let got = read(longer.as_bytes(), max);
    assert_eq!(
        got,
        vec![
            (1, Line::TooLong(format!("{url}q"))),
            (2, Line::TooLong(format!("{url}  x")))
        ]
    );
    // A long comment is still a comment.
    let comment = format!("#{}\nhttp://b.test/\n", "c".repeat(10 * max));
    assert_eq!(
        read(comment.as_bytes(), max),
        vec![(2, text("http://b.test/"))]
    );
    // The logged part of a very long line is bounded by LOGGED_PREFIX_BYTES.
    let huge = "h".repeat(4 * LOGGED_PREFIX_BYTES);
    for max in [10, 2 * LOGGED_PREFIX_BYTES] {
        assert_eq!(
            read(huge.as_bytes(), max),
            vec![(1, Line::TooLong("h".repeat(LOGGED_PREFIX_BYTES)))]
        );
    }
}

#[test]
fn a_read_error_is_returned_once_and_ends_the_lines() {
    struct Failing(bool);
    impl Read for Failing {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if std::mem::replace(&mut self.0, true) {
                return Err(io::Error::other("disk on fire"));
            }
            buf[..4].copy_from_slice(b"a\nbc");
            Ok(4)
        }
    }
    let mut lines = UrlLines::with_piece(Failing(false), 100, 16);
    assert_eq!(lines.next_line().unwrap(), Some((1, text("a"))));
    assert!(lines.next_line().is_err());
    assert_eq!(lines.next_line().unwrap(), None);
}

const ALPHABET: [u8; 15] = [
    b'a', b'b', b'#', b' ', b'\t', b'\r', 0xEF, 0xBB, 0xBF, 0xFF, 0xC3, 0xA9, 0xC2, 0xA0, b'/',
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// However the input is split into reads, and whatever the piece size, the lines are
    /// those of the whole input judged line by line.
    #[test]
    fn any_split_gives_the_lines_of_the_whole(
        bom in any::<bool>(),
        lines in proptest::collection::vec(
            proptest::collection::vec(prop::sample::select(ALPHABET.to_vec()), 0..400),
            0..8,
        ),
        last_newline in any::<bool>(),
        max_len in prop_oneof![1usize..24, 200usize..320],
        piece in 4usize..40,
        sizes in proptest::collection::vec(1usize..50, 1..8),
    ) {
        let mut input = if bom { BOM.to_vec() } else { Vec::new() };
        input.extend_from_slice(&lines.join(&b'\n'));
        if last_newline {
            input.push(b'\n');
        }
        let reader = Chunked { data: &input, sizes, next: 0 };
        let got = all(UrlLines::with_piece(reader, max_len, piece));
        prop_assert_eq!(got, naive(&input, max_len));
    }
}
