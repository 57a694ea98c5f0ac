//! `spinneret report DIR` on a crawl of the loopback test web (a few hundred pages and some
//! 404s): the page is written, self-contained (nothing it would load from anywhere), has
//! every chart, and renders in headless Chromium (Debian's `chromium`, when installed; the
//! test says why it skips that part otherwise) to a screenshot that is not blank. Then the
//! same crawl as a kill leaves it (no stats.json, no timeline): the charts say "not
//! recorded". A crawl really killed, then resumed: the report of each, the timeline's rows
//! numbered by run. And the errors for a missing directory or one without crawl.log.

use crate::common;

use std::collections::HashSet;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::crawl_run::{crawl_args, crawl_args_with, resume_args, start_web_of, Run};
use common::{spinneret, temp_dir};
use spinneret::app::report_html::CHART_TITLES;

const COMMAND_LIMIT: Duration = Duration::from_secs(120);
/// Chromium is killed past this.
const CHROMIUM_LIMIT: Duration = Duration::from_secs(60);
/// How long a crawl may take to write its first timeline row (at its first flush, 2 s in).
const ROW_LIMIT: Duration = Duration::from_secs(30);

/// Runs `spinneret report DIR`; returns the exit code, stdout and stderr.
fn report(dir: &Path) -> (Option<i32>, String, String) {
    let o = spinneret(&["report", dir.to_str().unwrap()], COMMAND_LIMIT);
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Nothing in the page loads from anywhere: no script, no external style, font or image.
fn assert_self_contained(html: &str) {
    let lower = html.to_ascii_lowercase();
    for banned in [
        "<script", "@import", "url(", "<link", "<img", "<iframe", "<object",
    ] {
        assert!(!lower.contains(banned), "report.html holds {banned}");
    }
    for attr in ["src=", "href=", "xlink:href="] {
        assert!(
            !lower.contains(attr),
            "report.html holds a {attr} attribute"
        );
    }
}

fn assert_every_chart(html: &str) {
    assert_eq!(
        html.matches("<svg").count(),
        CHART_TITLES.len(),
        "one <svg> per chart"
    );
    for title in CHART_TITLES {
        assert!(
            html.contains(&format!("<title>{title}</title>")),
            "no chart titled {title:?}"
        );
    }
}

#[test]
fn a_report_of_a_crawl_is_self_contained_has_every_chart_and_renders() {
    let web = start_web_of(3, 100, 4);
    let out = temp_dir("report");
    let mut args = crawl_args_with(&web, &out, 15, &[]);
    // Some errors to chart: pages that do not exist.
    let port = web.server.port();
    let first_seed = web.web.seeds(port)[0].clone();
    for i in 0..3 {
        args.push(format!("{first_seed}missing-{i}.html"));
    }
    let mut run = Run::start(&args);
    let code = run.wait();
    assert_eq!(code, Some(8), "HTTP errors: {}", run.stderr());

    let stats = std::fs::read_to_string(out.join("stats.json")).unwrap();
    assert!(
        stats.contains("\"mime_types\": {\"text/html\": "),
        "{stats}"
    );
    assert!(stats.contains("\"depths\": {\"0\": "), "{stats}");
    let timeline = std::fs::read_to_string(out.join("timeline.tsv")).unwrap();
    let rows = timeline.lines().filter(|l| !l.starts_with('#')).count();
    assert!(rows >= 1, "{timeline}");

    let started = Instant::now();
    let (code, stdout, stderr) = report(&out);
    eprintln!("report took {:?}", started.elapsed());
    assert_eq!(code, Some(0), "{stderr}");
    let path = out.join("report.html");
    assert_eq!(stdout.trim(), path.to_str().unwrap());
    let html = std::fs::read_to_string(&path).unwrap();
    assert_self_contained(&html);
    assert_every_chart(&html);
    assert!(html.contains("finished"), "the state");
    assert!(html.contains("<td class=\"n\">3 / 0</td>"), "three 404s");
    assert!(html.contains("--delay-ms"), "the options");
    assert!(!html.contains("not recorded"), "every chart has data");
    render_in_chromium(&path);

    // As a kill leaves it: no stats.json, no timeline. Still a report, saying so.
    std::fs::remove_file(out.join("stats.json")).unwrap();
    std::fs::remove_file(out.join("timeline.tsv")).unwrap();
    let (code, _, stderr) = report(&out);
    assert_eq!(code, Some(0), "{stderr}");
    let html = std::fs::read_to_string(&path).unwrap();
    assert_self_contained(&html);
    assert_every_chart(&html);
    assert!(html.contains("not recorded: no stats.json"));
    assert!(html.contains("not recorded: no timeline.tsv"));
    let _ = std::fs::remove_dir_all(&out);
}

/// The timeline's rows (not its `#` lines), if it has a file.
fn timeline_rows(out: &Path) -> Vec<String> {
    std::fs::read_to_string(out.join("timeline.tsv"))
        .map(|t| {
            t.lines()
                .filter(|l| !l.starts_with('#'))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_killed_crawl_has_a_report_and_its_resume_continues_the_timeline() {
    let web = start_web_of(3, 100, 4);
    let out = temp_dir("report-killed");
    let mut run = Run::start(&crawl_args(&web, &out, 40));
    let started = Instant::now();
    while timeline_rows(&out).is_empty() {
        assert!(
            run.0.try_wait().unwrap().is_none(),
            "the crawl ended before its first timeline row: {}",
            run.stderr()
        );
        assert!(
            started.elapsed() < ROW_LIMIT,
            "no timeline row in {ROW_LIMIT:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    run.signal("-KILL");
    run.wait();
    assert!(!out.join("stats.json").exists());

    let (code, _, stderr) = report(&out);
    assert_eq!(code, Some(0), "{stderr}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert_self_contained(&html);
    assert_every_chart(&html);
    assert!(html.contains("<td class=\"n\">stopped</td>"), "the state");
    assert!(html.contains("not recorded: no stats.json"));
    assert!(
        !html.contains("no timeline.tsv"),
        "the killed run's rows are charted"
    );

    let mut resumed = Run::start(&resume_args(&out));
    assert_eq!(resumed.wait(), Some(0), "{}", resumed.stderr());
    let runs: Vec<&str> = timeline_rows(&out)
        .iter()
        .map(|r| {
            if r.starts_with("1\t") {
                "1"
            } else if r.starts_with("2\t") {
                "2"
            } else {
                "?"
            }
        })
        .collect();
    assert!(
        runs.first() == Some(&"1") && runs.last() == Some(&"2"),
        "{runs:?}"
    );
    assert!(!runs.contains(&"?"), "{runs:?}");
    let (code, _, stderr) = report(&out);
    assert_eq!(code, Some(0), "{stderr}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert_every_chart(&html);
    assert!(html.contains("<td class=\"n\">finished</td>"), "the state");
    assert!(html.contains("<th>runs (timeline)</th><td class=\"n\">2</td>"));
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn a_directory_without_a_crawl_is_a_clear_error() {
    let dir = temp_dir("report-none");
    let (code, _, stderr) = report(&dir);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("holds no crawl.log"), "{stderr}");
    let missing = dir.join("missing");
    let (code, _, stderr) = report(&missing);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("is not a directory"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Renders `page` in headless Chromium and checks the screenshot is not blank. Skips (with
/// the reason printed) when `chromium` is not installed, unless CI requires it.
fn render_in_chromium(page: &Path) {
    let available = Command::new("chromium")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !available {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI installs chromium (.ci/run)"
        );
        eprintln!("SKIPPED: the Chromium rendering: `chromium` is not installed (apt-get install chromium)");
        return;
    }
    let dir = page.parent().unwrap();
    let shot = dir.join("report.png");
    let profile = dir.join("chromium-profile");
    let mut child = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--screenshot={}", shot.display()))
        .arg("--window-size=1200,3000")
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn chromium");
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if started.elapsed() > CHROMIUM_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium ran over {CHROMIUM_LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    assert!(status.success(), "chromium: {status:?}\n{err}");
    let png = std::fs::read(&shot).unwrap_or_else(|e| panic!("no screenshot: {e}\n{err}"));
    let (w, h, pixels) = decode_png(&png);
    let non_white = pixels
        .iter()
        .filter(|p| p[0] < 245 || p[1] < 245 || p[2] < 245)
        .count();
    let colours: HashSet<[u8; 3]> = pixels.iter().copied().collect();
    eprintln!(
        "chromium rendered {w}x{h} in {:?}: {non_white} non-white pixels ({:.1} %), {} colours",
        started.elapsed(),
        100.0 * non_white as f64 / pixels.len() as f64,
        colours.len()
    );
    assert!((w, h) == (1200, 3000), "{w}x{h}");
    assert!(
        non_white > pixels.len() / 50,
        "blank: {non_white} non-white pixels"
    );
    assert!(colours.len() >= 8, "{} colours", colours.len());
    let _ = std::fs::remove_dir_all(&profile);
}

/// A minimal PNG decoder for Chromium's screenshots: 8-bit RGB or RGBA, not interlaced.
/// Returns width, height and the RGB of every pixel.
fn decode_png(png: &[u8]) -> (usize, usize, Vec<[u8; 3]>) {
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    let (mut w, mut h, mut channels) = (0usize, 0usize, 0usize);
    let mut idat = Vec::new();
    let mut at = 8;
    while at + 8 <= png.len() {
        let len = u32::from_be_bytes(png[at..at + 4].try_into().unwrap()) as usize;
        let kind = &png[at + 4..at + 8];
        let data = &png[at + 8..at + 8 + len];
        match kind {
            b"IHDR" => {
                w = u32::from_be_bytes(data[0..4].try_into().unwrap()) as usize;
                h = u32::from_be_bytes(data[4..8].try_into().unwrap()) as usize;
                assert_eq!(data[8], 8, "bit depth");
                channels = match data[9] {
                    2 => 3,
                    6 => 4,
                    t => panic!("colour type {t}"),
                };
                assert_eq!(data[12], 0, "interlaced");
            }
            b"IDAT" => idat.extend_from_slice(data),
            b"IEND" => break,
            _ => {}
        }
        at += 12 + len;
    }
    let mut raw = Vec::new();
    flate2::read::ZlibDecoder::new(idat.as_slice())
        .read_to_end(&mut raw)
        .expect("inflate");
    let stride = w * channels;
    assert_eq!(raw.len(), h * (stride + 1), "image data length");
    let mut prev = vec![0u8; stride];
    let mut pixels = Vec::with_capacity(w * h);
    for row in raw.chunks_exact(stride + 1) {
        let (filter, line) = (row[0], &row[1..]);
        let mut cur = vec![0u8; stride];
        for i in 0..stride {
            let a = if i >= channels { cur[i - channels] } else { 0 };
            let b = prev[i];
            let c = if i >= channels { prev[i - channels] } else { 0 };
            let predicted = match filter {
                0 => 0,
                1 => a,
                2 => b,
                3 => ((u16::from(a) + u16::from(b)) / 2) as u8,
                4 => {
                    let p = i16::from(a) + i16::from(b) - i16::from(c);
                    let (pa, pb, pc) = (
                        (p - i16::from(a)).abs(),
                        (p - i16::from(b)).abs(),
                        (p - i16::from(c)).abs(),
                    );
                    if pa <= pb && pa <= pc {
                        a
                    } else if pb <= pc {
                        b
                    } else {
                        c
                    }
                }
                f => panic!("filter {f}"),
            };
            cur[i] = line[i].wrapping_add(predicted);
        }
        pixels.extend(cur.chunks_exact(channels).map(|p| [p[0], p[1], p[2]]));
        prev = cur;
    }
    (w, h, pixels)
}
