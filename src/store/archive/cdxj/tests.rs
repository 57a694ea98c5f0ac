use super::*;
use std::process::Command;
use std::time::{Duration, UNIX_EPOCH};

/// Outputs of Python's `surt.surt` (the canonicalizer pywb and cdxj-indexer use).
const SURT_CASES: &[(&str, &str)] = &[
    ("http://www.Example.com:80/a?b=1", "com,example)/a?b=1"),
    ("https://www.example.com:443/", "com,example)/"),
    ("http://example.com", "com,example)/"),
    (
        "http://127.0.0.1:8080/X/Y?b=2&a=1&a=0",
        "1,0,0,127:8080)/x/y?a=0&a=1&b=2",
    ),
    ("http://www2.foo.org/a?&&c=3&b=", "org,foo)/a?&&b=&c=3"),
    (
        "https://sub.www.ex.com:8443/p#frag",
        "com,ex,www,sub:8443)/p",
    ),
    ("http://a.test/Path%20X?Q=%41", "test,a)/path%20x?q=a"),
    ("http://[::1]:8080/", "::1:8080)/"),
    ("http://example.com/?", "com,example)/"),
    ("http://xn--bcher-kva.example/", "example,xn--bcher-kva)/"),
    ("urn:x-spinneret:crawl.log", "urn:x-spinneret:crawl.log"),
    ("http://EXAMPLE.com./", "com,example)/"),
    ("http://user:pw@www.example.com/", "com,example)/"),
    (
        "http://example.com/%2Fa%7e%25%23?x=%26y",
        "com,example)/a~%25%23?x=&y",
    ),
    ("http://www.com/", "com)/"),
    ("http://www1.example.com/", "com,example)/"),
    ("http://wwwexample.com/", "com,wwwexample)/"),
    ("https://example.com:80/", "com,example:80)/"),
    ("http://example.com:443/", "com,example:443)/"),
    ("http://example.com/a%C3%A9", "com,example)/a%c3%a9"),
    ("http://a.test/x?b=2&a=1&A=0", "test,a)/x?a=0&a=1&b=2"),
    ("http://sub.www1.test/", "test,www1,sub)/"),
    ("HTTPS://WWW.Example.COM/A//B?Q=X", "com,example)/a/b?q=x"),
    ("http://a.test/%7Euser/%41B?x=%2F", "test,a)/~user/ab?x=/"),
    ("http://example.com/docs/", "com,example)/docs"),
    ("http://example.com/a//?x=1", "com,example)/a?x=1"),
    ("http://example.com//", "com,example)/"),
    ("http://example.com/a/%20/", "com,example)/a/%20"),
    ("http://example.com/a%2F", "com,example)/a"),
];

#[test]
fn surt_matches_python_surt() {
    for &(url, want) in SURT_CASES {
        assert_eq!(surt(url), want, "{url}");
    }
}

/// The same cases through the installed `surt` package, when there is one: proves the table.
#[test]
fn surt_table_is_what_python_surt_says() {
    let script =
        "import sys, surt\nfor u in sys.stdin.read().split('\\n'):\n    print(surt.surt(u))";
    let input: Vec<&str> = SURT_CASES.iter().map(|c| c.0).collect();
    let child = Command::new("python3")
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        eprintln!("SKIPPED cdxj::tests::surt_table_is_what_python_surt_says: no python3");
        return;
    };
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(input.join("\n").as_bytes()).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    if !out.status.success() {
        eprintln!(
            "SKIPPED cdxj::tests::surt_table_is_what_python_surt_says: `import surt` failed \
             (pip install surt)"
        );
        return;
    }
    let got: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    let want: Vec<&str> = SURT_CASES.iter().map(|c| c.1).collect();
    assert_eq!(got, want);
}

#[test]
fn lines_sort_bytewise() {
    let text = b"org,b)/ 2\ncom,a)/x 1\ncom,a)/ 3\n\ncom,a)/ 1\n";
    assert_eq!(
        sort_lines(text),
        b"com,a)/ 1\ncom,a)/ 3\ncom,a)/x 1\norg,b)/ 2\n".to_vec()
    );
    assert_eq!(sort_lines(b""), b"".to_vec());
}

#[test]
fn json_strings_are_escaped_as_python_json_dumps() {
    let mut out = Vec::new();
    push_json_string(&mut out, "a\"b\\c\n\t\x01é\u{1F600}/".as_bytes());
    assert_eq!(
        String::from_utf8(out).unwrap(),
        r#""a\"b\\c\n\t\u0001\u00e9\ud83d\ude00/""#
    );
}

/// Any bytes come out as the straightforward reading (lossy UTF-8, then char by char)
/// writes them: the run-copying one is only faster.
#[test]
fn json_strings_of_any_bytes_match_the_char_by_char_reference() {
    fn reference(v: &[u8]) -> Vec<u8> {
        let mut out = b"\"".to_vec();
        for c in String::from_utf8_lossy(v).chars() {
            match c {
                '"' => out.extend_from_slice(b"\\\""),
                '\\' => out.extend_from_slice(b"\\\\"),
                '\n' => out.extend_from_slice(b"\\n"),
                '\r' => out.extend_from_slice(b"\\r"),
                '\t' => out.extend_from_slice(b"\\t"),
                '\u{8}' => out.extend_from_slice(b"\\b"),
                '\u{c}' => out.extend_from_slice(b"\\f"),
                c if (c as u32) < 0x20 || (c as u32) > 0x7e => {
                    let mut buf = [0u16; 2];
                    for u in c.encode_utf16(&mut buf) {
                        out.extend_from_slice(format!("\\u{u:04x}").as_bytes());
                    }
                }
                c => out.push(c as u8),
            }
        }
        out.push(b'"');
        out
    }
    let mut rng = crate::test_rng::Rng(0x1234_5679);
    let alphabet: &[&[u8]] = &[
        b"a",
        b" ",
        b"\"",
        b"\\",
        b"\n",
        b"\x01",
        b"\x7f",
        "é".as_bytes(),
        "😀".as_bytes(),
        b"\xff",
        b"\xc3",
        b"\xe2\x82",
        b"<p>",
        b"a run of sixteen or more plain bytes",
        b"~",
    ];
    // Up to 60 pieces: long enough that the 16-byte scan meets every byte at every lane.
    for _ in 0..2000 {
        let n = (rng.next() % 60) as usize;
        let v: Vec<u8> = (0..n)
            .flat_map(|_| alphabet[(rng.next() % alphabet.len() as u64) as usize].to_vec())
            .collect();
        let mut out = Vec::new();
        push_json_string(&mut out, &v);
        assert_eq!(out, reference(&v), "{v:?}");
    }
}

fn entry<'a>(kind: RecordType, uri: &'a str, block: &'a [u8]) -> IndexEntry<'a> {
    IndexEntry {
        kind,
        target_uri: uri,
        date: UNIX_EPOCH + Duration::from_secs(1_795_240_484),
        block,
        content_type: "text/plain; charset=utf-8",
        payload_digest: None,
        filename: "c-1.warc.gz",
        offset: 1234,
        length: 567,
        sketch: None,
    }
}

#[test]
fn formats_response_revisit_and_resource_lines() {
    let resp = b"HTTP/1.1 404 Not Found\r\ncontent-type:  text/HTML ; x=1\r\n\r\nbody";
    let mut out = Vec::new();
    format_line(
        &mut out,
        &entry(RecordType::Response, "http://www.a.test/X?b=1&a=2", resp),
    );
    let digest = crate::store::archive::warc::sha1_base32(&sha1(b"body"));
    assert_eq!(
        String::from_utf8(out).unwrap(),
        format!(
            "test,a)/x?a=2&b=1 20261121055444 {{\"url\": \"http://www.a.test/X?b=1&a=2\", \
             \"mime\": \"text/HTML\", \"status\": \"404\", \"digest\": \"{digest}\", \
             \"length\": \"567\", \"offset\": \"1234\", \"filename\": \"c-1.warc.gz\"}}\n"
        )
    );

    let mut out = Vec::new();
    let mut e = entry(
        RecordType::Revisit,
        "http://a.test/",
        b"HTTP/1.1 200 OK\r\n\r\n",
    );
    e.payload_digest = Some([0; 20]);
    format_line(&mut out, &e);
    let s = String::from_utf8(out).unwrap();
    assert!(
        s.contains("{\"url\": \"http://a.test/\", \"mime\": \"warc/revisit\", \"status\": \"200\", \"digest\": \"sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\""),
        "{s}"
    );

    let mut out = Vec::new();
    format_line(&mut out, &entry(RecordType::Resource, "urn:x:log", b"log"));
    let s = String::from_utf8(out).unwrap();
    assert!(s.starts_with("urn:x:log 20261121055444 {\"url\": \"urn:x:log\", \"mime\": \"text/plain\", \"digest\": \"sha1:"), "{s}");

    // Not an HTTP response: no status or mime, and the digest is not guessed.
    let mut out = Vec::new();
    format_line(
        &mut out,
        &entry(RecordType::Response, "http://a.test/", b"garbage"),
    );
    let s = String::from_utf8(out).unwrap();
    assert!(
        !s.contains("status") && !s.contains("mime") && !s.contains("digest"),
        "{s}"
    );
}

#[test]
fn a_page_sketch_is_the_last_field() {
    let resp = b"HTTP/1.1 200 OK\r\ncontent-type: text/html\r\n\r\n<p>x</p>";
    let (mut with, mut without) = (Vec::new(), Vec::new());
    let mut e = entry(RecordType::Response, "http://a.test/", resp);
    format_line(&mut without, &e);
    e.sketch = Some(crate::content::Sketch([0xab; 64]));
    let field = format!(", \"sketch\": \"{}\"", "ab".repeat(64));
    format_line(&mut with, &e);
    let (with, without) = (
        String::from_utf8(with).unwrap(),
        String::from_utf8(without).unwrap(),
    );
    assert!(with.ends_with(&format!("{field}}}\n")), "{with}");
    // Removing the field gives back cdxj-indexer's line.
    assert_eq!(with.replace(&field, ""), without);
}
