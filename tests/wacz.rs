//! WACZ packages (`spinneret wacz`, `--wacz`): what py-wacz's validator, Python's zipfile
//! and pywb make of them, for a small crawl, a `--loops 2` crawl, a crawl stopped by Ctrl-C
//! and a killed-and-resumed one; and the command's answers to bad input.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::crawl_run::{crawl_args_with, resume_args, start_web, Run, Web};
use crate::common::{spinneret, temp_dir};
use spinneret::store::archive::warc::reader::read_records;

/// A helper program's run may take at most this long.
const TOOL_LIMIT: Duration = Duration::from_secs(120);

/// Runs a program to its end within [`TOOL_LIMIT`] (killed past it): status, stdout, stderr.
/// Its output goes to files, not pipes: a pipe nobody reads while it runs would fill and stop
/// it.
fn run_tool(cmd: &mut Command) -> (bool, String, String) {
    let dir = temp_dir("wacz-tool");
    let (out_path, err_path) = (dir.join("stdout"), dir.join("stderr"));
    let mut child = cmd
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .expect("spawn");
    let start = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > TOOL_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{:?} ran over {TOOL_LIMIT:?}: {}",
                cmd.get_program(),
                std::fs::read_to_string(&err_path).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let ok = child.wait().unwrap().success();
    let read = |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap()).into_owned();
    let got = (ok, read(&out_path), read(&err_path));
    let _ = std::fs::remove_dir_all(&dir);
    got
}

/// Whether py-wacz's `wacz` is installed; in CI (CI=true) it must be.
fn py_wacz_available() -> bool {
    crate::common::program_available(
        "py-wacz",
        ("wacz", "--version"),
        "pip install wacz",
        "WACZ validity",
    )
}

/// `wacz validate -f FILE` passes.
fn validate(file: &Path) {
    if !py_wacz_available() {
        return;
    }
    let (ok, stdout, stderr) = run_tool(Command::new("wacz").args(["validate", "-f"]).arg(file));
    assert!(
        ok && stdout.contains("Validation succeeded"),
        "wacz validate {}:\n{stdout}\n{stderr}",
        file.display()
    );
}

/// Python's zipfile reads the package back: every file but the manifests is listed in
/// `datapackage.json` with its size and SHA-256, which match its bytes; each WARC entry is
/// stored (not recompressed) and holds its crawl file byte for byte (found in `dirs`); the
/// digest file's hash is the manifest's. Prints the entry names and the page lines.
const ZIP_CHECK: &str = r#"
import hashlib, json, os, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
dirs = sys.argv[2:]
assert z.testzip() is None
dp = json.loads(z.read("datapackage.json"))
assert dp["profile"] == "data-package" and dp["wacz_version"] == "1.1.1", dp
assert dp["software"].startswith("spinneret ") and dp["created"].endswith("Z"), dp
res = {r["path"]: r for r in dp["resources"]}
names = z.namelist()
assert len(names) == len(set(names)), names
listed = set(n for n in names if n not in ("datapackage.json", "datapackage-digest.json"))
assert set(res) == listed, (sorted(res), sorted(listed))
for n in listed:
    info = z.getinfo(n)
    h, size = hashlib.sha256(), 0
    with z.open(n) as f:
        while True:
            b = f.read(1 << 20)
            if not b:
                break
            h.update(b)
            size += len(b)
    assert res[n]["hash"] == "sha256:" + h.hexdigest(), n
    assert res[n]["bytes"] == size == info.file_size, n
    if n.startswith("archive/") or n.endswith(".cdx.gz"):
        assert info.compress_type == zipfile.ZIP_STORED, n
    if n.startswith("archive/"):
        base = n[len("archive/"):]
        orig = [os.path.join(d, base) for d in dirs if os.path.exists(os.path.join(d, base))]
        assert len(orig) == 1, (n, orig)
        with open(orig[0], "rb") as f:
            assert hashlib.sha256(f.read()).hexdigest() == h.hexdigest(), n
digest = json.loads(z.read("datapackage-digest.json"))
assert digest["path"] == "datapackage.json"
assert digest["hash"] == "sha256:" + hashlib.sha256(z.read("datapackage.json")).hexdigest()
pages = [json.loads(l) for l in z.read("pages/pages.jsonl").decode().splitlines()]
print(json.dumps({"names": sorted(names), "pages": pages}))
"#;

/// What [`ZIP_CHECK`] found: entry names and page lines (the header first).
struct Package {
    names: Vec<String>,
    pages: Vec<serde_json::Value>,
}

/// Checks `file` with [`ZIP_CHECK`]; `None` (skipped, said) without python3.
fn read_package(file: &Path, dirs: &[&Path]) -> Option<Package> {
    if Command::new("python3").arg("--version").output().is_err() {
        assert!(std::env::var("CI").is_err(), "python3 is required in CI");
        eprintln!("SKIP: python3 not found: the package is not read back");
        return None;
    }
    let (ok, stdout, stderr) = run_tool(
        Command::new("python3")
            .args(["-c", ZIP_CHECK])
            .arg(file)
            .args(dirs),
    );
    assert!(ok, "the package does not read back:\n{stderr}");
    let v: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    let names = v["names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap().to_string())
        .collect();
    Some(Package {
        names,
        pages: v["pages"].as_array().unwrap().clone(),
    })
}

/// The HTML pages of the test web a finished crawl stored (its stylesheets are not pages).
fn html_pages(web: &Web) -> BTreeSet<String> {
    web.web
        .expected_urls(web.server.port())
        .into_iter()
        .filter(|u| !u.ends_with(".css"))
        .collect()
}

/// The page lines' URLs (the header line checked and left out), each page once.
fn page_urls(p: &Package) -> BTreeSet<String> {
    let (header, lines) = p.pages.split_first().unwrap();
    assert_eq!(header["format"], "json-pages-1.0");
    let urls: Vec<String> = lines
        .iter()
        .map(|l| {
            let ts = l["ts"].as_str().unwrap();
            assert!(ts.len() == 20 && ts.ends_with('Z'), "ts {ts}");
            assert!(l["id"].is_string());
            l["url"].as_str().unwrap().to_string()
        })
        .collect();
    let set: BTreeSet<String> = urls.iter().cloned().collect();
    assert_eq!(set.len(), urls.len(), "a page listed twice");
    set
}

/// The HTTP payload of `url`'s response record in the WARC files of `dir`.
fn stored_body(dir: &Path, url: &str) -> Vec<u8> {
    for f in crate::common::warc_files(dir) {
        let bytes = std::fs::read(&f).unwrap();
        for r in read_records(&bytes).unwrap() {
            if r.header("WARC-Type") == Some("response") && r.header("WARC-Target-URI") == Some(url)
            {
                let at = r.block.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
                return r.block[at + 4..].to_vec();
            }
        }
    }
    panic!("{url} not stored in {}", dir.display())
}

/// pywb (`wb-manager add --unpack-wacz`) replays `urls` from the package with the bodies the
/// crawl stored.
fn replays(package: &Path, dir: &Path, urls: &[&String]) {
    if !crate::common::pywb::pywb_available() {
        return;
    }
    let pywb =
        crate::common::pywb::Pywb::start(&package.with_extension("pywb"), &[package.to_path_buf()]);
    for u in urls {
        let got = pywb
            .get(&format!("2026id_/{u}"), Duration::from_secs(30))
            .unwrap_or_else(|e| panic!("replay of {u}: {e}"));
        assert_eq!(got.status, 200, "{u}: {}", got.head);
        assert_eq!(got.body, stored_body(dir, u), "replayed body of {u}");
    }
}

fn wait_ok(mut run: Run) {
    let status = run.wait();
    assert_eq!(status, Some(0), "crawl failed:\n{}", run.stderr());
}

/// A small crawl with `--text --markdown --wacz`: the package validates, reads back with
/// every hash right, lists exactly the HTML pages with their titles and text, and pywb
/// replays them from it.
#[test]
fn a_crawl_with_wacz_packs_every_page_with_title_and_text() {
    let web = start_web(3, 6);
    let root = temp_dir("wacz-small");
    let out = root.join("crawl");
    let package = root.join("crawl.wacz");
    let pkg = package.to_str().unwrap();
    let args = crawl_args_with(&web, &out, 0, &["--text", "--markdown", "--wacz", pkg]);
    wait_ok(Run::start(&args));
    validate(&package);
    let Some(p) = read_package(&package, &[&out]) else {
        return;
    };
    for n in ["indexes/index.cdx", "pages/pages.jsonl", "datapackage.json"] {
        assert!(p.names.iter().any(|x| x == n), "{n} in {:?}", p.names);
    }
    assert!(p
        .names
        .iter()
        .any(|n| n.starts_with("archive/") && n.ends_with(".warc.gz")));
    assert_eq!(p.pages[0]["hasText"], true);
    let expected = html_pages(&web);
    assert_eq!(page_urls(&p), expected);
    for l in &p.pages[1..] {
        assert!(
            l["title"].as_str().is_some_and(|t| !t.is_empty()),
            "no title: {l}"
        );
        assert!(
            l["text"].as_str().is_some_and(|t| t.len() > 20),
            "no text: {l}"
        );
    }
    let some: Vec<&String> = expected.iter().take(3).collect();
    replays(&package, &out, &some);
    let _ = std::fs::remove_dir_all(&root);
}

/// A `--loops 2` crawl's two WARC series pack into one package, here with the compressed
/// (ZipNum) index, which validates and replays; without `--text`/`--markdown` pages have no
/// text and no title.
#[test]
fn a_loops_crawl_packs_with_a_compressed_index() {
    let web = start_web(4, 5);
    let root = temp_dir("wacz-loops");
    let out = root.join("crawl");
    wait_ok(Run::start(&crawl_args_with(
        &web,
        &out,
        0,
        &["--loops", "2"],
    )));
    let package = root.join("loops.wacz");
    let o = spinneret(
        &[
            "wacz",
            out.to_str().unwrap(),
            "-o",
            package.to_str().unwrap(),
            "--index",
            "compressed",
        ],
        TOOL_LIMIT,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    validate(&package);
    let Some(p) = read_package(&package, &[&out]) else {
        return;
    };
    assert!(p.names.iter().any(|n| n == "indexes/index.cdx.gz"));
    assert!(p.names.iter().any(|n| n == "indexes/index.idx"));
    let series: BTreeSet<bool> = p
        .names
        .iter()
        .filter(|n| n.starts_with("archive/"))
        .map(|n| n.contains("-p0-"))
        .collect();
    assert_eq!(series.len(), 2, "both loops' files: {:?}", p.names);
    let expected = html_pages(&web);
    assert_eq!(page_urls(&p), expected);
    assert!(p.pages[1..]
        .iter()
        .all(|l| l.get("text").is_none() && l.get("title").is_none()));
    let some: Vec<&String> = expected.iter().rev().take(3).collect();
    replays(&package, &out, &some);
    let _ = std::fs::remove_dir_all(&root);
}

/// Ctrl-C stops a `--wacz` crawl gracefully and the package of what it stored is written;
/// killed (no package) and resumed, the resumed run writes the whole crawl's.
#[test]
fn a_stopped_and_a_killed_then_resumed_crawl_get_their_package() {
    let web = start_web(6, 30);
    let root = temp_dir("wacz-resume");
    let out = root.join("crawl");
    let package = root.join("crawl.wacz");
    let args = crawl_args_with(
        &web,
        &out,
        150,
        &["--text", "--wacz", package.to_str().unwrap()],
    );
    // Ctrl-C: the run ends (as interrupted) with a valid package of the pages stored so far.
    let mut run = Run::start(&args);
    std::thread::sleep(Duration::from_millis(1500));
    run.signal("-INT");
    let status = run.wait();
    assert_eq!(status, Some(9), "interrupted: {}", run.stderr());
    validate(&package);
    if let Some(p) = read_package(&package, &[&out]) {
        let partial = page_urls(&p);
        assert!(!partial.is_empty(), "the stopped crawl's pages are packed");
        assert!(partial.is_subset(&html_pages(&web)));
    }
    // Resumed and killed mid-run: no package from that run.
    std::fs::remove_file(&package).unwrap();
    let mut run = Run::start(&resume_args(&out));
    std::thread::sleep(Duration::from_millis(1200));
    if run.0.try_wait().unwrap().is_none() {
        run.signal("-KILL");
        run.wait();
        assert!(!package.exists(), "a killed run writes no package");
    }
    // Resumed to the end: the package holds the whole crawl.
    wait_ok(Run::start(&resume_args(&out)));
    validate(&package);
    let Some(p) = read_package(&package, &[&out]) else {
        return;
    };
    assert_eq!(page_urls(&p), html_pages(&web));
    let _ = std::fs::remove_dir_all(&root);
}

/// `spinneret wacz`'s answers to bad input: a missing directory, one without WARC files,
/// an output that exists (refused without --force, replaced with it).
#[test]
fn bad_input_is_refused_with_the_reason() {
    let root = temp_dir("wacz-bad");
    let missing = root.join("missing");
    let o = spinneret(&["wacz", missing.to_str().unwrap()], TOOL_LIMIT);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("no such directory"), "{err}");
    let empty = root.join("empty");
    std::fs::create_dir(&empty).unwrap();
    let o = spinneret(&["wacz", empty.to_str().unwrap()], TOOL_LIMIT);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("no WARC file"), "{err}");
    assert!(!root.join("empty.wacz").exists());

    // A real crawl directory, and an output that exists.
    let web = start_web(1, 3);
    let out = root.join("crawl");
    wait_ok(Run::start(&crawl_args_with(&web, &out, 0, &[])));
    let package: PathBuf = root.join("crawl.wacz");
    std::fs::write(&package, b"not mine").unwrap();
    let o = spinneret(&["wacz", out.to_str().unwrap()], TOOL_LIMIT);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--force"), "{err}");
    assert_eq!(std::fs::read(&package).unwrap(), b"not mine");
    let o = spinneret(&["wacz", out.to_str().unwrap(), "--force"], TOOL_LIMIT);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!root.join("crawl.wacz.open").exists());
    validate(&package);
    let _ = std::fs::remove_dir_all(&root);
}

/// `fetch --wacz`: the listed pages, packed when the run ends.
#[test]
fn a_fetch_with_wacz_packs_its_pages() {
    let web = start_web(2, 3);
    let root = temp_dir("wacz-fetch");
    let out = root.join("fetched");
    let package = root.join("fetched.wacz");
    let dns = web.dns.addr().to_string();
    let seeds = web.web.seeds(web.server.port());
    let mut args = crate::common::loopback_args("fetch", &out, "0");
    args.extend(["--dns-server", &dns, "--wacz", package.to_str().unwrap()]);
    args.extend(seeds.iter().map(String::as_str));
    let o = spinneret(&args, TOOL_LIMIT);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    validate(&package);
    let Some(p) = read_package(&package, &[&out]) else {
        return;
    };
    assert_eq!(
        page_urls(&p),
        seeds.iter().cloned().collect::<BTreeSet<_>>()
    );
    let _ = std::fs::remove_dir_all(&root);
}
