//! Near-duplicates by shingle resemblance (IIR §19.6), through the template, on a generated
//! web of three sites whose templates are far larger than most of their articles
//! (`spinneret_tools::resemblanceweb`): articles of 50 to 5,000 words, edited copies (0.2–1.5 %
//! of the words changed), dateline copies, syndicated copies (the article under another
//! site's template), partial-overlap pages (quoting 30–45 % of another article) and distinct
//! articles. Ground truth is the exact word 4-shingle Jaccard of the article texts the
//! generator wrote: near-duplicate ≥ 0.9, distinct ≤ 0.5, pairs between are judged neither
//! way.
//!
//! - `main_content_finds_near_duplicates_through_the_template`: the cores alone
//!   (`spinneret::content`), for several texts (the whole page, main text with and without
//!   the template memory, pages without `<article>`), printed as a table (run with
//!   `--nocapture`).
//! - `a_crawl_and_near_duplicates_find_the_copies`: the crawl of the web on loopback and
//!   `spinneret near-duplicates DIR`, scored, and the same with the template left in.
//! - `skip_near_duplicate_links_does_not_follow_a_copy`: the trap guard.

use crate::common;

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::{Duration, Instant};

use common::crawl_run::{Run, TEST_WEB_FLAGS};
use common::{read_log, temp_dir, warc_files};
use spinneret::content::near_dups::{min_equal_bins, DEFAULT_THRESHOLD, MIN_SHINGLES};
use spinneret::content::{sketch, MainText, MemoryRuns, NearDupIndex, TemplateMemory};
use spinneret::store::archive::warc::reader::read_records;
use spinneret_tools::dns_server::{DnsServer, DnsServerConfig};
use spinneret_tools::http_server::{HttpServer, HttpServerConfig, Response, Routes, Script};
use spinneret_tools::resemblanceweb::{tokens, ResemblancePage, ResemblanceWeb, SEED};
use spinneret_tools::templateweb::{Sites, TemplateWeb};

/// Articles of the generated web: about 770 pages.
const ARTICLES: usize = 400;
/// The servers stop by themselves after this.
const LIFETIME: Duration = Duration::from_secs(180);
/// Truth: a pair at this Jaccard or more is a near-duplicate...
const NEAR: f64 = 0.9;
/// ...and one at this or less distinct.
const DISTINCT: f64 = 0.5;

/// Sketches the texts in order, each looked up before it is inserted (as the crawl and
/// `near-duplicates` do), with a small index budget so that runs spill and merge as in a
/// long crawl: (page, earliest earlier page it resembles), and the pages too short to sketch.
fn earliest_pairs(texts: &[(usize, Vec<u8>)]) -> (Vec<(usize, usize)>, usize) {
    let mut index = NearDupIndex::new(16 * 1024, MemoryRuns::default());
    let min_equal = min_equal_bins(DEFAULT_THRESHOLD);
    let mut pairs = Vec::new();
    let mut unsketched = 0;
    for (page, text) in texts {
        let s = sketch(text);
        if s.shingles < MIN_SHINGLES {
            unsketched += 1;
            continue;
        }
        let (m, same) = index.earliest(&s.sketch, min_equal).unwrap();
        if let Some(m) = m {
            pairs.push((*page, m.id as usize));
        }
        if !same {
            index.insert(&s.sketch, *page as u64).unwrap();
        }
    }
    (pairs, unsketched)
}

#[test]
fn main_content_finds_near_duplicates_through_the_template() {
    let web = ResemblanceWeb::generate(ARTICLES, SEED);
    let n = web.pages.len();
    let jac = web.truth();
    let html_bytes: usize = web.pages.iter().map(|p| p.html.len()).sum();

    let mut mt = MainText::new();
    let mut memory = TemplateMemory::new(64);
    let mut memory_divs = TemplateMemory::new(64);
    let (mut whole, mut shallow, mut learned) = (Vec::new(), Vec::new(), Vec::new());
    let (mut shallow_divs, mut learned_divs) = (Vec::new(), Vec::new());
    let (mut page_words, mut article_words) = (0usize, 0usize);
    for (
        i,
        ResemblancePage {
            host,
            html,
            article: truth,
            ..
        },
    ) in web.pages.iter().enumerate()
    {
        shallow.push((i, mt.extract(html.as_bytes(), usize::MAX).to_vec()));
        whole.push((i, mt.page_text().to_vec()));
        learned.push((
            i,
            mt.extract_with_memory(html.as_bytes(), usize::MAX, &mut memory, host.as_bytes())
                .to_vec(),
        ));
        page_words += tokens(&String::from_utf8_lossy(mt.page_text())).len();
        // The same pages as a site that does not mark its article: <article> becomes <div>.
        let divs = html
            .replace("<article", "<div")
            .replace("</article>", "</div>");
        shallow_divs.push((i, mt.extract(divs.as_bytes(), usize::MAX).to_vec()));
        learned_divs.push((
            i,
            mt.extract_with_memory(
                divs.as_bytes(),
                usize::MAX,
                &mut memory_divs,
                host.as_bytes(),
            )
            .to_vec(),
        ));
        article_words += tokens(truth).len();
    }

    let order: Vec<usize> = (0..n).collect();
    let runs = [
        ("whole page text (template in)", &whole),
        ("main text, shallow features", &shallow),
        ("main text + template memory", &learned),
        ("no <article>: main text, shallow", &shallow_divs),
        ("no <article>: + template memory", &learned_divs),
    ]
    .map(|(name, texts)| {
        let (pairs, unsketched) = earliest_pairs(texts);
        (name, judge(&pairs, &order, &jac), unsketched)
    });
    println!(
        "near-duplicate evaluation: {n} pages {:?} (originals, edited, dateline, syndicated,          partial overlap), {:.1} KB of HTML a page, {} words a page of which {} article;          truth: Jaccard ≥ {NEAR} near, ≤ {DISTINCT} distinct",
        web.kinds(),
        html_bytes as f64 / n as f64 / 1024.0,
        page_words / n,
        article_words / n,
    );
    println!(
        "{:<34} {:>8} {:>7} {:>6} {:>10} {:>6} {:>8} {:>7}",
        "text sketched", "reported", "correct", "wrong", "precision", "found", "findable", "recall"
    );
    for (name, s, unsketched) in &runs {
        println!(
            "{name:<34} {:>8} {:>7} {:>6} {:>10.3} {:>6} {:>8} {:>7.3}{}",
            s.reported,
            s.correct,
            s.wrong,
            s.precision(),
            s.found,
            s.findable,
            s.recall(),
            if *unsketched > 0 {
                format!("  ({unsketched} pages too short to sketch)")
            } else {
                String::new()
            }
        );
    }

    let [(_, whole, _), _, (_, learned, _), ..] = &runs;
    assert!(learned.findable >= 200, "too few to judge: {learned:?}");
    assert!(
        learned.precision() >= 0.95 && learned.recall() >= 0.90,
        "main text + template memory: {learned:?}"
    );
    // The main-content step is what makes it work: with the template left in, the figures
    // fall clearly short.
    assert!(
        whole.recall() < learned.recall() - 0.2 || whole.precision() < learned.precision() - 0.2,
        "whole page text did about as well: {whole:?}"
    );
}

/// The servers of a test: HTTP on loopback for `routes`, and DNS naming `records`.
struct Servers {
    http: HttpServer,
    dns: DnsServer,
}

fn serve(
    routes: Routes,
    records: HashMap<String, Vec<spinneret_tools::dns_server::Record>>,
) -> Servers {
    let http = HttpServer::start(HttpServerConfig {
        routes,
        lifetime: LIFETIME,
        ..HttpServerConfig::default()
    })
    .unwrap();
    let dns = DnsServer::start(DnsServerConfig {
        records,
        lifetime: LIFETIME,
        ..DnsServerConfig::default()
    })
    .unwrap();
    Servers { http, dns }
}

/// Crawls `seeds` into `out` to `depth` links from them with `conns` connections, no page
/// requisites, no delay. `extra` flags go before the seeds.
fn crawl(s: &Servers, out: &Path, seeds: &[String], (depth, conns): (u32, u32), extra: &[&str]) {
    let mut args: Vec<String> = ["crawl"]
        .iter()
        .chain(&TEST_WEB_FLAGS)
        .chain(&[
            "-q",
            "--no-page-requisites",
            "--delay-ms",
            "0",
            "--delay-factor",
            "0",
        ])
        .map(|a| a.to_string())
        .collect();
    args.extend([
        "--max-depth".into(),
        depth.to_string(),
        "--max-conns".into(),
        conns.to_string(),
        "--dns-server".into(),
        s.dns.addr().to_string(),
        "-o".into(),
        out.to_str().unwrap().into(),
    ]);
    args.extend(extra.iter().map(|a| a.to_string()));
    args.extend(seeds.iter().cloned());
    let mut run = Run::start(&args);
    assert_eq!(run.wait(), Some(0), "crawl: {}", run.stderr());
}

/// `spinneret near-duplicates DIR` (with a small index, so that its runs spill): the pairs
/// printed, (URL, URL it duplicates, resemblance).
fn near_duplicates_command(dir: &Path) -> Vec<(String, String, f64)> {
    let out = common::spinneret_command()
        .args([
            "near-duplicates",
            dir.to_str().unwrap(),
            "--index-ram",
            "8K",
        ])
        .output()
        .expect("run near-duplicates");
    assert!(
        out.status.success(),
        "near-duplicates: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 3, "{l:?}");
            (f[0].to_string(), f[1].to_string(), f[2].parse().unwrap())
        })
        .collect()
}

/// Precision and recall of reported pairs, and the counts behind them.
#[derive(Debug)]
struct Judged {
    reported: usize,
    correct: usize,
    wrong: usize,
    /// Pages with a true earlier near-duplicate in crawl order.
    findable: usize,
    found: usize,
}

impl Judged {
    fn precision(&self) -> f64 {
        match self.correct + self.wrong {
            0 => 1.0,
            judged => self.correct as f64 / judged as f64,
        }
    }

    fn recall(&self) -> f64 {
        self.found as f64 / self.findable.max(1) as f64
    }
}

/// Scores `pairs` (later page, earlier page) against the truth, for pages fetched in
/// `order`. Precision: of the reported pairs judged (Jaccard ≥ [`NEAR`] correct, ≤
/// [`DISTINCT`] wrong, between not judged), the share correct. Recall: of the pages that
/// have a true near-duplicate fetched before them, the share reported with a partner that
/// is a true near-duplicate of them.
fn judge(pairs: &[(usize, usize)], order: &[usize], jac: &HashMap<(usize, usize), f64>) -> Judged {
    let j = |a: usize, b: usize| jac.get(&(a.min(b), a.max(b))).copied().unwrap_or(0.0);
    let (mut correct, mut wrong) = (0, 0);
    let mut found = HashSet::new();
    for &(a, b) in pairs {
        let x = j(a, b);
        if x >= NEAR {
            correct += 1;
            found.insert(a);
        } else if x <= DISTINCT {
            wrong += 1;
        }
    }
    let mut near_of: HashMap<usize, Vec<usize>> = HashMap::new();
    for (&(a, b), &x) in jac {
        if x >= NEAR {
            near_of.entry(a).or_default().push(b);
            near_of.entry(b).or_default().push(a);
        }
    }
    let mut position = HashMap::new();
    for (k, &p) in order.iter().enumerate() {
        position.insert(p, k);
    }
    let findable = order
        .iter()
        .enumerate()
        .filter(|&(k, p)| {
            near_of
                .get(p)
                .is_some_and(|v| v.iter().any(|e| position.get(e).is_some_and(|&q| q < k)))
        })
        .count();
    Judged {
        reported: pairs.len(),
        correct,
        wrong,
        findable,
        found: found.len(),
    }
}

/// The response bodies of the WARC files in `dir`, by target URI.
fn bodies(dir: &Path) -> HashMap<String, Vec<u8>> {
    let mut out = HashMap::new();
    for f in warc_files(dir) {
        for r in read_records(&std::fs::read(&f).unwrap()).unwrap() {
            if r.header("WARC-Type") != Some("response") {
                continue;
            }
            let Some(head) = memchr_find(&r.block, b"\r\n\r\n") else {
                continue;
            };
            out.insert(
                r.header("WARC-Target-URI").unwrap().to_string(),
                r.block[head + 4..].to_vec(),
            );
        }
    }
    out
}

fn memchr_find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The web crawled on loopback, then `spinneret near-duplicates DIR`: the pairs it prints
/// are judged against the article-text truth (see [`judge`]). Asserted: precision ≥ 0.95,
/// recall ≥ 0.90. The same figures with the template left in (the sketch of every block's
/// text of the page, read back from the WARC, through the same earliest-match search) are
/// printed, and must not be better.
#[test]
fn a_crawl_and_near_duplicates_find_the_copies() {
    let started = Instant::now();
    let web = ResemblanceWeb::generate(ARTICLES, SEED);
    let servers = serve(web.routes(), web.dns_records());
    let port = servers.http.port();
    let out = temp_dir("near-dups-crawl");
    // The front pages and the articles they list (the template's links go deeper), in two
    // event loops: each partition's index sees only its own hosts' pages, and the one
    // crawl.log all of them.
    crawl(&servers, &out, &web.seeds(port), (1, 4), &["--loops", "2"]);
    let crawled = started.elapsed();

    let numbers = web.numbers(port);
    let log = read_log(&out);
    // Crawl order: the article pages as crawl.log lists them (each once).
    let order: Vec<usize> = log
        .iter()
        .filter_map(|l| numbers.get(&l.url).copied())
        .collect();
    assert_eq!(order.len(), web.pages.len(), "every page fetched once");
    let with_sketch = log.iter().filter(|l| l.sketch.is_some()).count();
    assert_eq!(with_sketch, web.pages.len(), "every article page sketched");
    let stats = std::fs::read_to_string(out.join("stats.json")).unwrap();
    assert!(stats.contains("\"near_duplicates\": "), "{stats}");
    // The sites are in different partitions: syndicated copies cross them.
    let names: Vec<String> = warc_files(&out)
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().any(|n| n.contains("-p0-")) && names.iter().any(|n| n.contains("-p1-")),
        "{names:?}"
    );
    // The index has each page's sketch too, as crawl.log has it.
    let mut index = String::new();
    for f in std::fs::read_dir(&out).unwrap() {
        let f = f.unwrap().path();
        if f.extension().is_some_and(|e| e == "cdxj") {
            index.push_str(&std::fs::read_to_string(&f).unwrap());
        }
    }
    for l in log.iter().filter(|l| l.sketch.is_some()) {
        let mut hex = Vec::new();
        l.sketch.unwrap().push_hex(&mut hex);
        let field = format!("\"sketch\": \"{}\"", String::from_utf8(hex).unwrap());
        let line = index
            .lines()
            .find(|x| x.contains(&format!("\"url\": \"{}\"", l.url)));
        assert!(
            line.is_some_and(|x| x.contains(&field)),
            "{}: {line:?}",
            l.url
        );
    }

    let jac = web.truth();
    let page = |u: &str| *numbers.get(u).unwrap_or_else(|| panic!("unknown URL {u}"));
    let reported = near_duplicates_command(&out);
    let pairs: Vec<(usize, usize)> = reported
        .iter()
        .map(|(a, b, r)| {
            assert!(*r >= DEFAULT_THRESHOLD - 0.05 && *r <= 1.0, "{r}");
            (page(a), page(b))
        })
        .collect();
    let main = judge(&pairs, &order, &jac);

    // The template left in: the whole page's text, read back from the WARC bodies.
    let bodies = bodies(&out);
    let mut text = MainText::new();
    let texts: Vec<(usize, Vec<u8>)> = order
        .iter()
        .map(|&n| {
            let body = &bodies[&web.url(n, port)];
            text.extract(body, body.len());
            (n, text.page_text().to_vec())
        })
        .collect();
    let whole = judge(&earliest_pairs(&texts).0, &order, &jac);

    for (name, s) in [("main content", &main), ("template left in", &whole)] {
        eprintln!(
            "{name:<17} reported {:>4} pairs: {:>4} correct, {:>4} wrong (judged), \
             precision {:.3}; found {:>4} of {:>4} pages with an earlier near-duplicate, \
             recall {:.3}",
            s.reported,
            s.correct,
            s.wrong,
            s.precision(),
            s.found,
            s.findable,
            s.recall()
        );
    }
    let in_crawl = stats
        .split("\"near_duplicates\": ")
        .nth(1)
        .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
        .unwrap_or("?");
    eprintln!(
        "{} pages ({:?} originals/edited/dateline/syndicated/partial), {in_crawl} near-duplicates \
         found by the crawl's per-partition indexes, crawled in {:.1} s, test {:.1} s",
        web.pages.len(),
        web.kinds(),
        crawled.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    assert!(main.findable >= 200, "too few to judge: {main:?}");
    assert!(main.precision() >= 0.95, "{main:?}");
    assert!(main.recall() >= 0.90, "{main:?}");
    assert!(
        main.precision() >= whole.precision() && main.recall() >= whole.recall(),
        "main {main:?} whole {whole:?}"
    );
    let _ = std::fs::remove_dir_all(&out);
}

/// `--skip-near-duplicate-links`: a page whose main text is a near-duplicate of an earlier
/// page's is stored, but its links are not followed. One host: `/` links to `/a` (an
/// article) and then `/b` (the same article with a dateline); `/a` links to `/from-a`,
/// `/b` to `/from-b`. Without the flag all five pages are fetched; with it, `/from-b` is not.
#[test]
fn skip_near_duplicate_links_does_not_follow_a_copy() {
    let web = TemplateWeb::generate(2);
    let article = &web.pages[0].article;
    let host = "copies.test";
    let mut routes = Routes::new();
    let html = |body: &str| {
        Script::Respond(Response::ok(
            format!("<!DOCTYPE html><html><body>{body}</body></html>"),
            "text/html",
        ))
    };
    routes.add(host, "/", html("<a href=/a>a</a> <a href=/b>b</a>"));
    routes.add(
        host,
        "/a",
        html(&format!(
            "<article><p>{article}</p></article><a href=/from-a>more</a>"
        )),
    );
    routes.add(
        host,
        "/b",
        html(&format!(
            "<article><p>Updated Monday 3 June 2024</p><p>{article}</p></article><a href=/from-b>more</a>"
        )),
    );
    for p in ["/from-a", "/from-b"] {
        routes.add(host, p, html("<p>A page linked from one copy.</p>"));
    }
    let records = [(
        host.to_string(),
        vec![spinneret_tools::dns_server::Record::A(
            std::net::Ipv4Addr::LOCALHOST,
        )],
    )]
    .into_iter()
    .collect();
    let servers = serve(routes, records);
    let seed = format!("http://{host}:{}/", servers.http.port());
    let fetched = |out: &Path| -> HashSet<String> {
        read_log(out)
            .iter()
            .filter(|l| l.status == 200)
            .map(|l| l.url.rsplit('/').next().unwrap().to_string())
            .collect()
    };
    // One connection: /a is fetched (and indexed) before /b. Depth 2 reaches /from-*.
    let plain = temp_dir("near-dups-follow");
    crawl(&servers, &plain, std::slice::from_ref(&seed), (2, 1), &[]);
    let all = fetched(&plain);
    assert!(all.contains("from-a") && all.contains("from-b"), "{all:?}");

    let guarded = temp_dir("near-dups-skip");
    crawl(
        &servers,
        &guarded,
        std::slice::from_ref(&seed),
        (2, 1),
        &["--skip-near-duplicate-links"],
    );
    let some = fetched(&guarded);
    assert!(some.contains("b"), "the copy is still stored: {some:?}");
    assert!(
        some.contains("from-a") && !some.contains("from-b"),
        "{some:?}"
    );
    let stats = std::fs::read_to_string(guarded.join("stats.json")).unwrap();
    assert!(stats.contains("\"near_duplicates\": 1"), "{stats}");
    // The plain crawl fingerprinted its pages (off the event loop, in the store's page
    // worker) and counted the copy as the guarded one did (on the loop); one with
    // --no-near-duplicates none.
    assert!(read_log(&plain).iter().any(|l| l.sketch.is_some()));
    let plain_stats = std::fs::read_to_string(plain.join("stats.json")).unwrap();
    let count = |name: &str| -> u64 {
        let at = plain_stats.find(&format!("\"{name}\": ")).expect(name) + name.len() + 4;
        let digits: String = plain_stats[at..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().unwrap()
    };
    assert!(count("near_duplicates") >= 1, "{plain_stats}");
    let sketches = read_log(&plain)
        .iter()
        .filter(|l| l.sketch.is_some())
        .count();
    assert_eq!(
        count("pages_fingerprinted"),
        sketches as u64,
        "{plain_stats}"
    );
    let off = temp_dir("near-dups-off");
    crawl(
        &servers,
        &off,
        std::slice::from_ref(&seed),
        (2, 1),
        &["--no-near-duplicates"],
    );
    assert_eq!(fetched(&off), all, "the same pages");
    assert!(read_log(&off).iter().all(|l| l.sketch.is_none()));
    let stats = std::fs::read_to_string(off.join("stats.json")).unwrap();
    assert!(stats.contains("\"pages_fingerprinted\": 0"), "{stats}");
    for d in [plain, guarded, off] {
        let _ = std::fs::remove_dir_all(d);
    }
}
