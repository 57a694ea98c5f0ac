//! Archives that replay: a local copy of a real site (the Rust book, as rustup installs it)
//! crawled from loopback, then checked as a web archivist would: every page requisite is in
//! the WARC, warcio verifies every digest, the CDXJ index points at each record, duplicates are
//! revisit records, digests are SHA-1, crawl.log says how each URL was found, and pywb replays
//! pages, their requisites and revisits.

use crate::common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::static_site::{file_for, StaticSite};
use sha1::{Digest, Sha1};
use spinneret::store::archive::warc::reader::{read_records, Record};
use spinneret::store::archive::warc::{parse_sha1_base32, sha1_base32};
use url::Url;

/// The Rust book under the active toolchain's docs, or `SPINNERET_TEST_SITE`.
fn site_root() -> Option<PathBuf> {
    if let Ok(dir) = std::env::var("SPINNERET_TEST_SITE") {
        return Some(PathBuf::from(dir));
    }
    let out = Command::new("rustc")
        .args(["--print", "sysroot"])
        .output()
        .ok()?;
    let sysroot = String::from_utf8(out.stdout).ok()?;
    let book = Path::new(sysroot.trim()).join("share/doc/rust/html/book");
    book.join("index.html").is_file().then_some(book)
}

/// The bytes after the HTTP head of a response record's block.
fn payload(block: &[u8]) -> &[u8] {
    let at = block
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("HTTP head");
    &block[at + 4..]
}

fn status(block: &[u8]) -> u16 {
    let line = block.split(|&b| b == b'\n').next().unwrap_or_default();
    std::str::from_utf8(line)
        .ok()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// A JSON string field of a CDXJ line, as written there (our lines hold only strings).
fn json_field<'a>(json: &'a str, name: &str) -> Option<&'a str> {
    let key = format!("\"{name}\": \"");
    let start = json.find(&key)? + key.len();
    let rest = &json[start..];
    let mut end = 0;
    let b = rest.as_bytes();
    while end < b.len() && b[end] != b'"' {
        end += if b[end] == b'\\' { 2 } else { 1 };
    }
    rest.get(..end)
}

/// Page requisites of an HTML page, found independently of the crawler's scanner: `src=`
/// of any element, and `href=` of `<link>` elements that are stylesheets or icons.
fn requisites(html: &str, base: &Url) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let lower = html.to_ascii_lowercase();
    let mut push = |v: &str| {
        if let Ok(u) = base.join(v.trim()) {
            let mut u = u;
            u.set_fragment(None);
            out.insert(u.to_string());
        }
    };
    let mut at = 0;
    while let Some(i) = lower[at..].find(" src=\"") {
        let start = at + i + 6;
        let end = start + lower[start..].find('"').unwrap_or(0);
        push(&html[start..end]);
        at = end.max(start);
    }
    let mut at = 0;
    while let Some(i) = lower[at..].find("<link") {
        let start = at + i;
        let end = start + lower[start..].find('>').unwrap_or(lower.len() - start);
        let tag = &lower[start..end];
        if tag.contains("stylesheet") || tag.contains("icon") {
            if let Some(h) = tag.find(" href=\"") {
                let v0 = start + h + 7;
                let v1 = v0 + lower[v0..].find('"').unwrap_or(0);
                push(&html[v0..v1]);
            }
        }
        at = end.max(start + 5);
    }
    out
}

/// `url(...)` references of a stylesheet.
fn css_urls(css: &str, base: &Url) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut at = 0;
    while let Some(i) = css[at..].find("url(") {
        let start = at + i + 4;
        let end = start + css[start..].find(')').unwrap_or(0);
        let v = css[start..end].trim().trim_matches(['"', '\'']);
        if !v.starts_with("data:") {
            if let Ok(mut u) = base.join(v) {
                u.set_fragment(None);
                u.set_query(None);
                out.insert(u.to_string());
            }
        }
        at = end.max(start);
    }
    out
}

#[test]
fn a_real_site_replays_with_its_requisites_revisits_and_index() {
    let Some(root) = site_root() else {
        eprintln!("SKIP: no local copy of the Rust book (rustup component rust-docs)");
        return;
    };
    let site = StaticSite::start(&root, Duration::from_secs(240));
    let out = common::temp_dir("archive");
    let warc_dir = out.join("crawl");
    let home = site.url("/");
    // The same page twice, under two URLs: the second is a duplicate payload.
    let home_again = site.url("/index.html");
    let run = common::spinneret(
        &[
            "crawl",
            "--allow-private",
            // Requisites on other hosts (the book embeds a logo from rust-lang.org) are
            // refused by the domain rule, and no name can resolve: the test stays on loopback.
            "--allow-domain",
            "127.0.0.1",
            "--dns-server",
            "127.0.0.1:9",
            "--hosts-file",
            "none",
            "-w",
            "0",
            "--max-time",
            "150",
            "-o",
            warc_dir.to_str().unwrap(),
            &home,
            &home_again,
        ],
        Duration::from_secs(200),
    );
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        matches!(run.status.code(), Some(0) | Some(8)),
        "crawl failed: {:?}\n{stderr}",
        run.status
    );
    // Some book links point outside the book (../std/…): 404s are expected, nothing worse.
    assert!(
        stderr.contains("wb-manager add"),
        "no replay hint: {stderr}"
    );

    let files = common::warc_files(&warc_dir);
    assert!(!files.is_empty(), "no WARC written");
    let mut records: Vec<(PathBuf, Record)> = Vec::new();
    for f in &files {
        let bytes = std::fs::read(f).unwrap();
        for r in read_records(&bytes).unwrap_or_else(|e| panic!("{}: {e:?}", f.display())) {
            records.push((f.clone(), r));
        }
        if common::warcio_available() {
            common::warcio_check(f);
        }
    }
    let kind = |r: &Record| r.header("WARC-Type").unwrap_or("").to_string();
    let uri = |r: &Record| r.header("WARC-Target-URI").unwrap_or("").to_string();
    let responses: HashMap<String, &Record> = records
        .iter()
        .filter(|(_, r)| kind(r) == "response")
        .map(|(_, r)| (uri(r), r))
        .collect();
    let revisits: Vec<&Record> = records
        .iter()
        .filter(|(_, r)| kind(r) == "revisit")
        .map(|(_, r)| r)
        .collect();

    // Provenance: the warcinfo record names the command line and the options.
    let info = &records[0].1;
    assert_eq!(kind(info), "warcinfo");
    let info_text = String::from_utf8_lossy(&info.block);
    assert!(info_text.contains("command-line: "), "{info_text}");
    assert!(
        info_text.contains("--allow-domain 127.0.0.1"),
        "{info_text}"
    );
    assert!(info_text.contains("page-requisites: true"), "{info_text}");

    // Every requisite of every stored page (that the site has) is stored too.
    let host = Url::parse(&home).unwrap();
    let mut missing = Vec::new();
    let mut checked = 0;
    for (u, r) in &responses {
        let ct = String::from_utf8_lossy(&r.block[..r.block.len().min(2048)]).to_lowercase();
        let base = Url::parse(u).unwrap();
        let refs = if status(&r.block) != 200 {
            continue;
        } else if ct.contains("content-type: text/html") {
            requisites(&String::from_utf8_lossy(payload(&r.block)), &base)
        } else if ct.contains("content-type: text/css") {
            css_urls(&String::from_utf8_lossy(payload(&r.block)), &base)
        } else {
            continue;
        };
        for req in refs {
            let ru = Url::parse(&req).unwrap();
            if ru.host_str() != host.host_str() || file_for(&root, ru.path()).is_none() {
                continue;
            }
            checked += 1;
            let mut plain = ru.clone();
            plain.set_query(None);
            if !responses.contains_key(&req) && !responses.contains_key(plain.as_str()) {
                missing.push(format!("{req} (needed by {u})"));
            }
        }
    }
    assert!(checked > 100, "only {checked} requisites found to check");
    eprintln!(
        "archived {} responses, {} revisits; {checked} requisite references checked",
        responses.len(),
        revisits.len()
    );
    assert!(missing.is_empty(), "requisites not archived: {missing:#?}");
    let images = responses
        .keys()
        .filter(|u| u.ends_with(".png") || u.ends_with(".svg"));
    assert!(images.count() > 0, "no image archived");
    let scripts = responses.keys().filter(|u| u.ends_with(".js")).count();
    assert!(scripts > 0, "no script archived");
    let fonts = responses
        .keys()
        .filter(|u| u.ends_with(".woff2") || u.ends_with(".woff") || u.ends_with(".ttf"));
    assert!(
        fonts.count() > 0,
        "no font from a stylesheet's url() archived"
    );

    // Digests: sha1 base32, of the payload as stored; stored once per payload, the rest
    // revisits that name where the payload is.
    let mut by_digest: BTreeMap<String, Vec<&Record>> = BTreeMap::new();
    for r in responses.values() {
        let d = r.header("WARC-Payload-Digest").expect("payload digest");
        assert!(d.starts_with("sha1:"), "{d}");
        let want: [u8; 20] = Sha1::digest(payload(&r.block)).into();
        assert_eq!(d, sha1_base32(&want), "{}", uri(r));
        assert!(parse_sha1_base32(d).is_some());
        if status(&r.block) == 200 && r.header("WARC-Truncated").is_none() {
            by_digest.entry(d.to_string()).or_default().push(r);
        }
    }
    for (d, rs) in &by_digest {
        let names: Vec<String> = rs.iter().map(|r| uri(r)).collect();
        assert_eq!(
            rs.len(),
            1,
            "payload {d} stored in full {} times: {names:?}",
            rs.len()
        );
    }
    assert!(
        !revisits.is_empty(),
        "the duplicate home page is not a revisit"
    );
    for rv in &revisits {
        assert_eq!(
            rv.header("WARC-Profile"),
            Some("http://netpreserve.org/warc/1.1/revisit/identical-payload-digest")
        );
        let d = rv.header("WARC-Payload-Digest").unwrap();
        let original = rv
            .header("WARC-Refers-To-Target-URI")
            .expect("refers-to URI");
        assert!(rv.header("WARC-Refers-To-Date").is_some());
        let orig = responses
            .get(original)
            .expect("revisit refers to a stored response");
        assert_eq!(orig.header("WARC-Payload-Digest"), Some(d));
        // Only the HTTP head is stored again.
        assert!(payload(&rv.block).is_empty(), "revisit holds a payload");
    }

    // crawl.log: one line per URL, with how it was found; the digest is the payload's.
    let log = common::read_log(&warc_dir);
    let hop_of = |u: &str| {
        log.iter()
            .find(|l| l.url == u)
            .and_then(|l| l.hop)
            .map(|h| h.letter())
    };
    assert_eq!(hop_of(&home), Some('S'));
    let css = responses.keys().find(|u| u.ends_with(".css")).unwrap();
    assert_eq!(hop_of(css), Some('E'), "{css}");
    let chapter = site.url("/ch01-00-getting-started.html");
    assert_eq!(hop_of(&chapter), Some('L'));
    for l in &log {
        if let (Some(d), Some(r)) = (l.digest, responses.get(&l.url)) {
            assert_eq!(
                Some(sha1_base32(&d).as_str()),
                r.header("WARC-Payload-Digest")
            );
        }
    }

    // The CDXJ index beside each WARC lists each response and revisit at its offset.
    let mut indexed = 0;
    for f in &files {
        let name = f.file_name().unwrap().to_str().unwrap();
        let cdxj = f.with_file_name(name.replace(".warc.gz", ".cdxj"));
        let text = std::fs::read_to_string(&cdxj).expect("CDXJ beside the WARC");
        let bytes = std::fs::read(f).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let mut sorted = lines.clone();
        sorted.sort();
        assert_eq!(lines, sorted, "{} is not sorted", cdxj.display());
        for line in lines {
            let json = &line[line.find('{').expect("JSON")..];
            let offset: usize = json_field(json, "offset").unwrap().parse().unwrap();
            let length: usize = json_field(json, "length").unwrap().parse().unwrap();
            assert_eq!(json_field(json, "filename"), Some(name));
            let mut member = Vec::new();
            flate2::read::GzDecoder::new(&bytes[offset..offset + length])
                .read_to_end(&mut member)
                .unwrap();
            let rec = spinneret::store::archive::warc::reader::parse_record(&member).unwrap();
            let url = json_field(json, "url").unwrap();
            assert_eq!(uri(&rec).replace('"', "\\\""), url);
            if matches!(kind(&rec).as_str(), "response" | "revisit") {
                indexed += 1;
                assert_eq!(
                    json_field(json, "digest"),
                    rec.header("WARC-Payload-Digest")
                );
            }
        }
    }
    assert_eq!(indexed, responses.len() + revisits.len());
    // The log record closes the file: crawl.log lines of its records.
    let (_, last) = records.last().unwrap();
    assert_eq!(kind(last), "resource");
    assert!(String::from_utf8_lossy(&last.block).starts_with("#time\t"));

    // pywb replays a page, its requisites and a revisit.
    if common::pywb::pywb_available() {
        let pywb = common::pywb::Pywb::start(&out.join("pywb"), &files);
        let mut urls = vec![chapter.clone(), css.clone()];
        urls.extend(
            responses
                .keys()
                .filter(|u| u.ends_with(".js") || u.ends_with(".png") || u.ends_with(".svg"))
                .take(4)
                .cloned(),
        );
        urls.extend(revisits.iter().map(|r| uri(r)));
        for u in urls {
            let got = pywb
                .get(&format!("2026id_/{u}"), Duration::from_secs(30))
                .unwrap_or_else(|e| panic!("replay of {u}: {e}"));
            assert_eq!(got.status, 200, "{u}: {}", got.head);
            let path = Url::parse(&u).unwrap();
            let file = file_for(&root, path.path()).unwrap();
            assert_eq!(got.body, std::fs::read(file).unwrap(), "replayed {u}");
        }
    }
    let _ = std::fs::remove_dir_all(&out);
}
