//! `spinneret graph`, end to end: crawls of the loopback test web (one loop, `--loops 2`,
//! killed and resumed), their graph written, then read back through the `webgraph` crate and
//! checked against the truth: nodes are the pages crawl.log lists as stored, arcs the links
//! found by scanning each stored page's body again (WARC records, the crate's own scanner).

#![cfg(feature = "graph")]

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use common::crawl_run::{
    crawl_args, crawl_args_with, kill_and_resume_until_done, start_web, Rng, Run,
};
use common::{read_log, temp_dir, warc_files};
use spinneret::app::graph::is_node;
use spinneret::crawl::urlnorm;
use spinneret::links::{self, Links};
use spinneret::store::archive::warc::reader::read_records;
use url::Url;
use webgraph::prelude::*;

/// Pages and links as the crawl's own files say.
struct Truth {
    nodes: BTreeSet<String>,
    arcs: BTreeSet<(String, String)>,
}

/// The truth of the crawl written to `dirs`: nodes by crawl.log, arcs by scanning every
/// stored 2xx body (a response record; a revisit holds no body and a duplicate is not
/// scanned by the crawl either) for the links a crawler follows.
fn truth(dirs: &[&Path]) -> Truth {
    let mut nodes = BTreeSet::new();
    let mut scanned = BTreeSet::new();
    for dir in dirs {
        for line in read_log(dir) {
            if is_node(&line) {
                nodes.insert(line.url.clone());
                if line.outcome == spinneret::ReturnCode::Success && line.status / 100 == 2 {
                    scanned.insert(line.url);
                }
            }
        }
    }
    let mut arcs = BTreeSet::new();
    let mut found = Links::new();
    for dir in dirs {
        for f in warc_files(dir) {
            let bytes = std::fs::read(&f).unwrap();
            for r in read_records(&bytes).unwrap() {
                if r.header("WARC-Type") != Some("response") {
                    continue;
                }
                let uri = r.header("WARC-Target-URI").unwrap().to_string();
                if !scanned.contains(&uri) {
                    continue;
                }
                let Some(at) = r.block.windows(4).position(|w| w == b"\r\n\r\n") else {
                    continue;
                };
                let head = String::from_utf8_lossy(&r.block[..at]).to_ascii_lowercase();
                if !head.contains("content-type: text/html") {
                    continue;
                }
                found.clear();
                links::scan(&r.block[at + 4..], &mut found);
                let page = Url::parse(&uri).unwrap();
                let base = found
                    .base()
                    .and_then(|b| urlnorm::normalize(&page, b).ok())
                    .unwrap_or_else(|| page.clone());
                for (kind, href) in found.iter() {
                    if kind.is_requisite() {
                        continue;
                    }
                    if let Ok(t) = urlnorm::normalize(&base, href) {
                        if t.as_str() != uri && nodes.contains(t.as_str()) {
                            arcs.insert((uri.clone(), t.as_str().to_string()));
                        }
                    }
                }
            }
        }
    }
    Truth { nodes, arcs }
}

/// Runs `spinneret graph DIRS -o BASENAME`; returns its output.
fn run_graph(dirs: &[&Path], basename: &Path) -> String {
    let t = Instant::now();
    let out = common::spinneret_command()
        .arg("graph")
        .args(dirs)
        .arg("-o")
        .arg(basename)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "graph failed: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("graph took {:?}:\n{text}", t.elapsed());
    text
}

fn with_ext(basename: &Path, ext: &str) -> PathBuf {
    PathBuf::from(format!("{}.{ext}", basename.display()))
}

/// The graph at `basename`, read through the `webgraph` crate, as URL pairs.
fn load(basename: &Path) -> (Vec<String>, BTreeSet<(String, String)>) {
    let urls: Vec<String> = std::fs::read_to_string(with_ext(basename, "urls"))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    let graph = BvGraph::with_basename(basename).load().unwrap();
    assert_eq!(graph.num_nodes(), urls.len(), "nodes in .graph and .urls");
    let mut arcs = BTreeSet::new();
    let mut count = 0u64;
    for v in 0..graph.num_nodes() {
        let mut prev = None;
        for s in graph.successors(v) {
            assert!(prev < Some(s), "successors sorted and distinct");
            assert_ne!(s, v, "no self-loops");
            prev = Some(s);
            count += 1;
            arcs.insert((urls[v].clone(), urls[s].clone()));
        }
    }
    assert_eq!(graph.num_arcs(), count, "arcs in .properties");
    // The sequential reader (what Java's and our PageRank use) agrees.
    let seq = BvGraphSeq::with_basename(basename).load().unwrap();
    assert_eq!(seq.num_nodes(), urls.len());
    (urls, arcs)
}

/// The graph of the crawl in `dirs` is the truth: every node, every arc, nothing else.
fn check(dirs: &[&Path], basename: &Path) -> (Truth, String) {
    let printed = run_graph(dirs, basename);
    let truth = truth(dirs);
    let (urls, arcs) = load(basename);
    let mut sorted = urls.clone();
    sorted.sort();
    assert_eq!(urls, sorted, "node ids in URL order");
    let nodes: BTreeSet<String> = urls.into_iter().collect();
    assert_eq!(
        nodes, truth.nodes,
        "nodes are the pages crawl.log lists as stored"
    );
    let missing: Vec<_> = truth.arcs.difference(&arcs).take(5).collect();
    assert!(
        missing.is_empty(),
        "links missing from the graph: {missing:?}"
    );
    let extra: Vec<_> = arcs.difference(&truth.arcs).take(5).collect();
    assert!(extra.is_empty(), "arcs no stored page links: {extra:?}");
    assert!(printed.contains(&format!("nodes: {}\n", truth.nodes.len())));
    assert!(printed.contains(&format!("arcs: {}\n", truth.arcs.len())));
    (truth, printed)
}

#[test]
fn graph_of_a_crawl_holds_every_page_and_link() {
    let web = start_web(6, 60);
    let dir = temp_dir("graph-one");
    let out = dir.join("crawl");
    let mut run = Run::start(&crawl_args(&web, &out, 0));
    assert_eq!(run.wait(), Some(0), "{}", run.stderr());
    let (truth, printed) = check(&[&out], &dir.join("g"));
    let pages = web.web.expected_urls(web.server.port()).len();
    assert!(
        truth.nodes.len() + 20 >= pages,
        "{} nodes of {pages} pages",
        truth.nodes.len()
    );
    assert!(
        truth.arcs.len() > truth.nodes.len(),
        "{} arcs",
        truth.arcs.len()
    );
    assert!(printed.contains("top 10 by PageRank"));
    // The default basename is DIR/graph.
    let status = common::spinneret_command()
        .args(["graph", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(status.status.success());
    assert!(out.join("graph.graph").exists() && out.join("graph.ef").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn graph_of_two_loops_is_one_node_space_with_arcs_across() {
    let web = start_web(8, 40);
    let dir = temp_dir("graph-loops");
    let out = dir.join("crawl");
    let mut run = Run::start(&crawl_args_with(&web, &out, 0, &["--loops", "2"]));
    assert_eq!(run.wait(), Some(0), "{}", run.stderr());
    assert!(out.join("outlinks-p0").exists() && out.join("outlinks-p1").exists());
    let (truth, _) = check(&[&out], &dir.join("g"));
    // Which partition recorded each page: arcs between pages of different partitions.
    let mut part: BTreeMap<u64, usize> = BTreeMap::new();
    for p in 0..2 {
        let path = out.join(format!("outlinks-p{p}"));
        spinneret::store::graph::outlinks::for_each(&path, |page, _| {
            part.insert(page, p);
        })
        .unwrap();
    }
    let key = |u: &str| spinneret::crawl::url_seen::url_key(&Url::parse(u).unwrap());
    let across = truth
        .arcs
        .iter()
        .filter(|(a, b)| {
            let (pa, pb) = (part.get(&key(a)), part.get(&key(b)));
            pa.is_some() && pb.is_some() && pa != pb
        })
        .count();
    eprintln!("{across} of {} arcs cross partitions", truth.arcs.len());
    assert!(across > 0, "no arc between the partitions");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn graph_after_kills_and_resumes_has_every_link() {
    let web = start_web(12, 25);
    let dir = temp_dir("graph-kill");
    let out = dir.join("crawl");
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let run = Run::start(&crawl_args(&web, &out, 100));
    let kills = kill_and_resume_until_done(run, &out, &mut rng, 4, (300, 700), 2);
    let (truth, printed) = check(&[&out], &dir.join("g"));
    eprintln!(
        "{kills} kills: {} nodes, {} arcs",
        truth.nodes.len(),
        truth.arcs.len()
    );
    assert!(!truth.arcs.is_empty());
    drop(printed);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn graph_of_no_crawl_says_why() {
    let dir = temp_dir("graph-none");
    let missing = dir.join("nothing-here");
    let out = common::spinneret_command()
        .args(["graph", missing.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no such directory"));
    std::fs::create_dir_all(&missing).unwrap();
    std::fs::write(missing.join("crawl.log"), "#time\n").unwrap();
    let out = common::spinneret_command()
        .args(["graph", missing.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no outlinks files"));
    let _ = std::fs::remove_dir_all(&dir);
}
