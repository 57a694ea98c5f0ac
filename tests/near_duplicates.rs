//! Near-duplicates through the template (issue 31), on a generated web of two sites whose
//! templates (cookie banner, header, navigation, trending bar, sidebars, teaser cards,
//! comments, related links, footer) are far larger than their articles
//! (`spinneret_tools::templateweb`): distinct articles under each template, near-duplicates
//! (an article again on its own site, plus a timestamp and an ad) and syndicated copies (an
//! article under the other site's template). Ground truth is the word 3-shingle Jaccard of
//! the article texts the generator wrote: near-duplicate ≥ 0.8, distinct ≤ 0.3, pairs
//! between are judged neither way.
//!
//! - `main_content_finds_near_duplicates_through_the_template`: the cores alone
//!   (`spinneret::content`), every pair the index reports, for several texts (the whole page,
//!   main text with and without the template memory, pages without `<article>`), printed as
//!   a table (run with `--nocapture`).
//! - `a_crawl_and_near_duplicates_find_the_copies`: the crawl of the web on loopback and
//!   `spinneret near-duplicates DIR`, scored (see its doc for precision and recall), and the
//!   same with the template left in.
//! - `skip_near_duplicate_links_does_not_follow_a_copy`: the trap guard.

mod common;

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::crawl_run::{Run, TEST_WEB_FLAGS};
use common::{read_log, temp_dir, warc_files};
use spinneret::content::near_dup::MAX_DISTANCE;
use spinneret::content::{simhash, MainText, MemoryRuns, NearDupIndex, TemplateMemory};
use spinneret::store::archive::warc::reader::read_records;
use spinneret_tools::dns_server::{DnsServer, DnsServerConfig};
use spinneret_tools::http_server::{HttpServer, HttpServerConfig, Response, Routes, Script};
use spinneret_tools::templateweb::{tokens, TemplatePage, TemplateWeb};

/// Articles of the generated web: about 1,150 pages.
const ARTICLES: usize = 700;
/// The servers stop by themselves after this.
const LIFETIME: Duration = Duration::from_secs(180);

#[derive(Debug)]
struct Score {
    reported: usize,
    true_pos: usize,
    false_pos: usize,
    between: usize,
    unindexed: usize,
    precision: f64,
    recall: f64,
}

/// Runs the pages' texts through simhash and the index in crawl order and scores the
/// pairs it reports against the truth.
fn evaluate(texts: &[Vec<u8>], jac: &HashMap<(usize, usize), f64>, near_total: usize) -> Score {
    // A small budget, so that runs spill and merge as they would in a long crawl.
    let mut index = NearDupIndex::new(16 * 1024, MemoryRuns::default());
    let mut out = Vec::new();
    let mut pairs = Vec::new();
    let mut unindexed = 0;
    for (id, text) in texts.iter().enumerate() {
        let fp = simhash(text);
        if fp.shingles == 0 {
            unindexed += 1;
            continue;
        }
        out.clear();
        index.within(fp.hash, usize::MAX, &mut out).unwrap();
        for m in &out {
            assert!(m.distance <= MAX_DISTANCE);
            pairs.push((m.id as usize, id));
        }
        index.insert(fp.hash, id as u64).unwrap();
    }
    let (mut tp, mut fp, mut between) = (0, 0, 0);
    for (i, j) in &pairs {
        let key = (*i.min(j), *i.max(j));
        let jaccard = jac.get(&key).copied().unwrap_or(0.0);
        if jaccard >= 0.8 {
            tp += 1;
        } else if jaccard <= 0.3 {
            fp += 1;
        } else {
            between += 1;
        }
    }
    Score {
        reported: pairs.len(),
        true_pos: tp,
        false_pos: fp,
        between,
        unindexed,
        precision: if tp + fp == 0 {
            1.0
        } else {
            tp as f64 / (tp + fp) as f64
        },
        recall: tp as f64 / near_total.max(1) as f64,
    }
}

#[test]
fn main_content_finds_near_duplicates_through_the_template() {
    let web = TemplateWeb::generate(ARTICLES);
    let n = web.pages.len();
    let jac = web.truth();
    let near_total = jac.values().filter(|&&j| j >= 0.8).count();
    let between_total = jac.values().filter(|&&j| j > 0.3 && j < 0.8).count();
    let html_bytes: usize = web.pages.iter().map(|p| p.html.len()).sum();

    let mut mt = MainText::new();
    let mut memory = TemplateMemory::new(64);
    let mut memory_divs = TemplateMemory::new(64);
    let (mut whole, mut shallow, mut learned) = (Vec::new(), Vec::new(), Vec::new());
    let (mut shallow_divs, mut learned_divs) = (Vec::new(), Vec::new());
    let (mut page_words, mut article_words) = (0usize, 0usize);
    for TemplatePage {
        host,
        html,
        article: truth,
        ..
    } in &web.pages
    {
        shallow.push(mt.extract(html.as_bytes(), usize::MAX).to_vec());
        whole.push(mt.page_text().to_vec());
        learned.push(
            mt.extract_with_memory(html.as_bytes(), usize::MAX, &mut memory, host.as_bytes())
                .to_vec(),
        );
        page_words += tokens(&String::from_utf8_lossy(mt.page_text())).len();
        // The same pages as a site that does not mark its article: <article> becomes <div>.
        let divs = html
            .replace("<article", "<div")
            .replace("</article>", "</div>");
        shallow_divs.push(mt.extract(divs.as_bytes(), usize::MAX).to_vec());
        learned_divs.push(
            mt.extract_with_memory(
                divs.as_bytes(),
                usize::MAX,
                &mut memory_divs,
                host.as_bytes(),
            )
            .to_vec(),
        );
        article_words += tokens(truth).len();
    }

    let runs = [
        ("whole page text (template in)", &whole),
        ("main text, shallow features", &shallow),
        ("main text + template memory", &learned),
        ("no <article>: main text, shallow", &shallow_divs),
        ("no <article>: + template memory", &learned_divs),
    ]
    .map(|(name, texts)| (name, evaluate(texts, &jac, near_total)));
    println!(
        "near-duplicate evaluation: {n} pages ({} articles, {} near-duplicates, {} syndicated \
         copies), {:.1} KB of HTML a page, {} words a page of which {} article; truth: {near_total} \
         pairs with Jaccard ≥ 0.8, {between_total} between 0.3 and 0.8 (ignored), k = {MAX_DISTANCE}",
        web.kinds()[0],
        web.kinds()[1],
        web.kinds()[2],
        html_bytes as f64 / n as f64 / 1024.0,
        page_words / n,
        article_words / n,
    );
    println!(
        "{:<34} {:>8} {:>6} {:>6} {:>8} {:>10} {:>7}",
        "text hashed", "reported", "TP", "FP", "between", "precision", "recall"
    );
    for (name, s) in &runs {
        println!(
            "{name:<34} {:>8} {:>6} {:>6} {:>8} {:>10} {:>7.3}{}",
            s.reported,
            s.true_pos,
            s.false_pos,
            s.between,
            // No pair judged, no precision.
            if s.true_pos + s.false_pos == 0 {
                "n/a".to_owned()
            } else {
                format!("{:.3}", s.precision)
            },
            s.recall,
            if s.unindexed > 0 {
                format!("  ({} pages without text)", s.unindexed)
            } else {
                String::new()
            }
        );
    }

    assert!(
        near_total >= 200,
        "too few near pairs to judge: {near_total}"
    );
    let [(_, whole), _, (_, learned), ..] = &runs;
    assert!(
        learned.precision >= 0.95 && learned.recall >= 0.90,
        "main text + template memory: {learned:?}"
    );
    // The main-content step is what makes it work: with the template left in, the figures
    // fall clearly short.
    assert!(
        whole.recall < learned.recall - 0.2 || whole.precision < learned.precision - 0.2,
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
/// printed, (URL, URL it duplicates, distance).
fn near_duplicates_command(dir: &Path) -> Vec<(String, String, u32)> {
    let out = Command::new(env!("CARGO_BIN_EXE_spinneret"))
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

/// The earliest earlier page within [`MAX_DISTANCE`] of each page, as `near-duplicates`
/// finds it, for fingerprints given in crawl order: (page, page it duplicates).
fn earliest_pairs(prints: &[(usize, u64)]) -> Vec<(usize, usize)> {
    let mut index = NearDupIndex::new(8 * 1024, MemoryRuns::default());
    let mut out = Vec::new();
    let mut pairs = Vec::new();
    for (order, &(page, fp)) in prints.iter().enumerate() {
        out.clear();
        index.within(fp, usize::MAX, &mut out).unwrap();
        if let Some(m) = out.iter().min_by_key(|m| m.id) {
            pairs.push((page, prints[m.id as usize].0));
        }
        if !out.iter().any(|m| m.distance == 0) {
            index.insert(fp, order as u64).unwrap();
        }
    }
    pairs
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
/// `order`. Precision: of the reported pairs judged (Jaccard ≥ 0.8 correct, ≤ 0.3 wrong,
/// between not judged), the share correct. Recall: of the pages that have a true
/// near-duplicate (Jaccard ≥ 0.8) fetched before them, the share reported with a partner
/// that is a true near-duplicate of them.
fn judge(pairs: &[(usize, usize)], order: &[usize], jac: &HashMap<(usize, usize), f64>) -> Judged {
    let j = |a: usize, b: usize| jac.get(&(a.min(b), a.max(b))).copied().unwrap_or(0.0);
    let (mut correct, mut wrong) = (0, 0);
    let mut found = HashSet::new();
    for &(a, b) in pairs {
        let x = j(a, b);
        if x >= 0.8 {
            correct += 1;
            found.insert(a);
        } else if x <= 0.3 {
            wrong += 1;
        }
    }
    let findable = (0..order.len())
        .filter(|&k| order[..k].iter().any(|&e| j(order[k], e) >= 0.8))
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
/// are judged against the article-text truth (see [`judge`]: a reported pair is correct
/// when its two pages' article texts have word 3-shingle Jaccard ≥ 0.8; recall is over the
/// pages that have such a page earlier in crawl.log). Asserted: precision ≥ 0.95, recall ≥
/// 0.90. The same figures with the template left in (the simhash of every block's text of
/// the page, read back from the WARC, through the same earliest-match search) are printed,
/// and must not be better.
#[test]
fn a_crawl_and_near_duplicates_find_the_copies() {
    let started = Instant::now();
    let web = TemplateWeb::generate(ARTICLES);
    let servers = serve(web.routes(), web.dns_records());
    let port = servers.http.port();
    let out = temp_dir("near-dups-crawl");
    // The front pages and the articles they list (the template's links go deeper), in two
    // event loops: each partition's index sees only its own host's pages, and the one
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
    let with_simhash = log.iter().filter(|l| l.simhash.is_some()).count();
    assert_eq!(
        with_simhash,
        web.pages.len(),
        "every article page fingerprinted"
    );
    let stats = std::fs::read_to_string(out.join("stats.json")).unwrap();
    assert!(stats.contains("\"near_duplicates\": "), "{stats}");
    // The two sites are in different partitions: syndicated copies cross them.
    let names: Vec<String> = warc_files(&out)
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().any(|n| n.contains("-p0-")) && names.iter().any(|n| n.contains("-p1-")),
        "{names:?}"
    );
    // The index has each page's simhash too, as crawl.log has it.
    let mut index = String::new();
    for f in std::fs::read_dir(&out).unwrap() {
        let f = f.unwrap().path();
        if f.extension().is_some_and(|e| e == "cdxj") {
            index.push_str(&std::fs::read_to_string(&f).unwrap());
        }
    }
    for l in log.iter().filter(|l| l.simhash.is_some()) {
        let field = format!("\"simhash\": \"{:016x}\"", l.simhash.unwrap());
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
        .map(|(a, b, d)| {
            assert!(*d <= MAX_DISTANCE);
            (page(a), page(b))
        })
        .collect();
    let main = judge(&pairs, &order, &jac);

    // The template left in: the whole page's text, read back from the WARC bodies.
    let bodies = bodies(&out);
    let mut text = MainText::new();
    let prints: Vec<(usize, u64)> = order
        .iter()
        .map(|&n| {
            let body = &bodies[&web.url(n, port)];
            text.extract(body, body.len());
            (n, simhash(text.page_text()).hash)
        })
        .collect();
    let whole = judge(&earliest_pairs(&prints), &order, &jac);

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
        "{} pages ({:?} originals/near-duplicates/syndicated), {in_crawl} near-duplicates \
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
    assert!(read_log(&plain).iter().any(|l| l.simhash.is_some()));
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
    let simhashes = read_log(&plain)
        .iter()
        .filter(|l| l.simhash.is_some())
        .count();
    assert_eq!(
        count("pages_fingerprinted"),
        simhashes as u64,
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
    assert!(read_log(&off).iter().all(|l| l.simhash.is_none()));
    let stats = std::fs::read_to_string(off.join("stats.json")).unwrap();
    assert!(stats.contains("\"pages_fingerprinted\": 0"), "{stats}");
    for d in [plain, guarded, off] {
        let _ = std::fs::remove_dir_all(d);
    }
}
