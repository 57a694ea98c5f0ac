//! `spinneret graph DIR… [-o BASENAME]`: the link graph of a finished (or stopped) crawl in
//! WebGraph's BVGraph format (`store::graph`, README "The link graph"), and its figures.
//!
//! Nodes are the pages the crawl stored, read from each DIR's crawl.log (every partition of a
//! `--loops` crawl logs to the one crawl.log; a cluster's nodes each have a DIR): a URL with a
//! complete 2xx response (`Success`, or `DuplicateContent`: stored, only not scanned again) or
//! a `304` revisit of one, fetched as a page (robots.txt and sitemaps are the crawler's, not
//! the web's). Arcs are the distinct links between two different nodes, from every outlinks
//! file of every DIR: one node id space over all partitions.

use std::error::Error;
use std::path::{Path, PathBuf};

use super::cli::GraphArgs;
use super::exit::{ExitStatus, Failure};
use crate::crawl::sink::Hop;
use crate::store::archive::crawl_log::{self, ParsedLine};
#[cfg(feature = "graph")]
use crate::store::graph::build::{self, Built};
use crate::store::graph::outlinks;
#[cfg(feature = "graph")]
use crate::store::graph::rank::{self, Ranks};
use crate::ReturnCode;

/// Pages listed by in-degree and by PageRank.
#[cfg(feature = "graph")]
const TOP: usize = 10;

/// Whether a crawl.log line makes its URL a node of the graph.
pub fn is_node(line: &ParsedLine) -> bool {
    let page = !matches!(line.hop, Some(Hop::Prerequisite | Hop::Sitemap));
    let stored_2xx = (200..300).contains(&line.status)
        && matches!(
            line.outcome,
            ReturnCode::Success | ReturnCode::DuplicateContent
        );
    let not_modified = line.status == 304 && line.outcome == ReturnCode::Success;
    page && (stored_2xx || not_modified)
}

/// The nodes' URLs from `dir`'s crawl.log (repeats included), appended to `urls`.
pub fn read_nodes(dir: &Path, urls: &mut Vec<String>) -> Result<(), Failure> {
    let log = dir.join("crawl.log");
    crawl_log::for_each_line(&log, |line| {
        if is_node(line) {
            urls.push(line.url.clone());
        }
    })
    .map_err(|e| Failure::Usage(format!("{}: {e} (not a crawl's directory?)", log.display())))?;
    Ok(())
}

pub fn run(args: GraphArgs) -> Result<ExitStatus, Box<dyn Error>> {
    let mut urls = Vec::new();
    let mut files: Vec<PathBuf> = Vec::new();
    for dir in &args.dirs {
        if !dir.is_dir() {
            return Err(Failure::Usage(format!("{}: no such directory", dir.display())).into());
        }
        read_nodes(dir, &mut urls)?;
        files.extend(
            outlinks::files(dir)
                .map_err(|e| Failure::Runtime(format!("{}: {e}", dir.display())))?,
        );
    }
    if files.is_empty() {
        return Err(Failure::Usage(format!(
            "no outlinks files (outlinks-pK) in {}: crawled by a spinneret that kept no link graph?",
            display_dirs(&args.dirs)
        ))
        .into());
    }
    let basename = args
        .out
        .clone()
        .unwrap_or_else(|| args.dirs[0].join("graph"));
    write_graph(urls, &files, &basename, &crawl_canon(&args.dirs[0]))
}

/// The key function the crawl in `dir` gave its links: its recorded `--no-canonicalize` and
/// `--strip-query-param` (the defaults for a crawl without recorded arguments).
fn crawl_canon(dir: &Path) -> crate::crawl::canon::Canon {
    use super::cli::{Cli, Command};
    use crate::crawl::canon::{Canon, CanonConfig};
    use clap::Parser;
    let recorded = crate::store::state::crawl_state::load_args(dir).unwrap_or_default();
    let full = std::iter::once("spinneret".to_string()).chain(recorded);
    match Cli::try_parse_from(full).map(|c| c.command) {
        Ok(Command::Crawl(a)) => Canon::new(CanonConfig {
            on: !a.no_canonicalize,
            strip: a.strip_query_params,
        }),
        _ => Canon::default(),
    }
}

/// Without the `graph` feature there is nothing to write the graph with.
#[cfg(not(feature = "graph"))]
fn write_graph(
    _: Vec<String>,
    _: &[PathBuf],
    _: &Path,
    _: &crate::crawl::canon::Canon,
) -> Result<ExitStatus, Box<dyn Error>> {
    Err(Failure::Usage(
        "this spinneret was built without the `graph` feature (cargo build --features graph)"
            .into(),
    )
    .into())
}

/// Builds the BVGraph at `basename` from the nodes and outlinks files; prints its figures.
#[cfg(feature = "graph")]
fn write_graph(
    urls: Vec<String>,
    files: &[PathBuf],
    basename: &Path,
    canon: &crate::crawl::canon::Canon,
) -> Result<ExitStatus, Box<dyn Error>> {
    let built =
        build::build(urls, files, basename, canon).map_err(|e| Failure::Runtime(e.to_string()))?;
    let ranks = rank::rank(basename).map_err(|e| Failure::Runtime(e.to_string()))?;
    let names = std::fs::read_to_string(build::with_ext(basename, "urls"))
        .map_err(|e| Failure::Runtime(format!("{}.urls: {e}", basename.display())))?;
    let names: Vec<&str> = names.lines().collect();
    print!("{}", summary(basename, &built, &ranks, &names));
    Ok(ExitStatus::Ok)
}

fn display_dirs(dirs: &[PathBuf]) -> String {
    let shown: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    shown.join(", ")
}

/// What `graph` prints: the figures, then the top pages.
#[cfg(feature = "graph")]
fn summary(basename: &Path, b: &Built, r: &Ranks, urls: &[&str]) -> String {
    let mut s = format!(
        "graph: {}.{{graph,offsets,properties,ef,urls}}\n\
         nodes: {}\narcs: {}\nbits per link: {:.2}\n\
         read: {} outlinks records ({} links: {} to pages not stored, {} to the page itself)\n",
        basename.display(),
        b.nodes,
        b.arcs,
        b.bits_per_link(),
        b.read.records,
        b.links_read,
        b.links_to_non_nodes,
        b.self_links,
    );
    if b.read.dropped_bytes > 0 || b.read.malformed > 0 || b.pages_not_nodes > 0 {
        s.push_str(&format!(
            "skipped: {} bytes of torn or damaged tail, {} malformed records, {} records of pages not in crawl.log as stored\n",
            b.read.dropped_bytes, b.read.malformed, b.pages_not_nodes
        ));
    }
    let name = |v: usize| urls.get(v).copied().unwrap_or("?");
    s.push_str(&format!("\ntop {TOP} by in-degree:\n"));
    for v in rank::top(&r.in_degree, TOP) {
        s.push_str(&format!("  {:>8}  {}\n", r.in_degree[v], name(v)));
    }
    s.push_str(&format!(
        "\ntop {TOP} by PageRank (damping {}, {} iterations):\n",
        rank::DAMPING,
        r.iterations
    ));
    for v in rank::top(&r.pagerank, TOP) {
        s.push_str(&format!("  {:.6}  {}\n", r.pagerank[v], name(v)));
    }
    s
}
