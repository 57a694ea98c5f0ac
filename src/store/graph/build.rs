//! `spinneret graph`'s work: the crawl's pages (nodes) and their outlinks (arcs) into
//! WebGraph's BVGraph format (Boldi & Vigna, "The WebGraph Framework I", WWW 2004: successor
//! lists coded as gaps, by reference to a similar list among the previous few, and as
//! intervals; IIR §20.4), written by the `webgraph` crate, its authors' Rust port, so that
//! webgraph-rs and the Java WebGraph load it as it is.
//!
//! Node ids are the URLs' ranks in lexicographic order: the pages of one host, and of one
//! directory, get neighbouring ids, and most links stay within a host and a directory, so
//! successor lists are similar to their neighbours' (references pay) and their gaps are small.
//! That is the order the WebGraph papers use for their web crawls.
//!
//! Memory: the URLs and a key → id map are held (the node set); the arcs are not. They stream
//! from the outlinks files into the crate's external sort (`ParSortIters`, batches of at most
//! [`SORT_MEMORY`] spilled to temporary files, merged with duplicates dropped) and from there
//! into the compressor.

use std::collections::HashMap;
use std::fmt;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use dsi_bitstream::traits::BE;
use dsi_progress_logger::no_logging;
use url::Url;
use webgraph::graphs::arc_list_graph::ArcListGraph;
use webgraph::graphs::bvgraph::{store_ef_with_data, BvComp};
use webgraph::utils::{MemoryUsage, ParSortIters};

use super::outlinks::{OutlinksReader, ReadStats};
use crate::crawl::canon::Canon;

/// Memory for one in-memory batch of the arc sort (16 bytes an arc).
pub const SORT_MEMORY: usize = 64 << 20;

/// Why a graph could not be built.
#[derive(Debug)]
pub enum GraphError {
    /// Reading or writing a file.
    Io(PathBuf, io::Error),
    /// No page to make a node of.
    NoPages,
    /// The `webgraph` crate's sort or compressor failed.
    Webgraph(String),
}

impl fmt::Display for GraphError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GraphError::Io(path, e) => write!(f, "{}: {e}", path.display()),
            GraphError::NoPages => f.write_str("no stored page to make a node of"),
            GraphError::Webgraph(e) => write!(f, "webgraph: {e}"),
        }
    }
}

impl std::error::Error for GraphError {}

fn webgraph_error(e: impl fmt::Display) -> GraphError {
    GraphError::Webgraph(format!("{e:#}"))
}

/// What was built and read.
#[derive(Clone, Debug, Default)]
pub struct Built {
    pub nodes: usize,
    /// Distinct arcs between two different nodes.
    pub arcs: u64,
    /// Bits of `BASENAME.graph` (the successor lists alone, as the papers count).
    pub graph_bits: u64,
    /// Outlinks records read, over all files, and what reading them found.
    pub read: ReadStats,
    /// Records of URLs that are not nodes (pages stored only in a run cut back by a resume, or
    /// a 2xx page the node rule left out): their links are not arcs.
    pub pages_not_nodes: u64,
    /// Links read (with repeats across records) and, of them, those to a URL that is no node
    /// (not stored, not a 2xx, outside the crawl) and those to the page itself (dropped).
    pub links_read: u64,
    pub links_to_non_nodes: u64,
    pub self_links: u64,
}

impl Built {
    pub fn bits_per_link(&self) -> f64 {
        if self.arcs == 0 {
            0.0
        } else {
            self.graph_bits as f64 / self.arcs as f64
        }
    }
}

/// The file names beside the basename: `BASENAME.graph`, `.offsets`, `.properties`, `.ef`
/// (the crate's and Java WebGraph's) and `BASENAME.urls` (ours: node `i`'s URL on line `i`).
pub fn with_ext(basename: &Path, ext: &str) -> PathBuf {
    let mut p = basename.as_os_str().to_owned();
    p.push(".");
    p.push(ext);
    PathBuf::from(p)
}

/// Builds the graph of `urls` (the nodes: any order, repeats allowed) from the outlinks
/// `files`, writing it at `basename`; `canon` keys the nodes as the crawl keyed its links
/// (its canonicalization settings).
pub fn build(
    mut urls: Vec<String>,
    files: &[PathBuf],
    basename: &Path,
    canon: &Canon,
) -> Result<Built, GraphError> {
    urls.sort_unstable();
    urls.dedup();
    if urls.is_empty() {
        return Err(GraphError::NoPages);
    }
    let mut ids: HashMap<u64, usize> = HashMap::with_capacity(urls.len());
    let urls_path = with_ext(basename, "urls");
    let io_at = |p: &Path| {
        let p = p.to_path_buf();
        move |e| GraphError::Io(p, e)
    };
    let mut out = BufWriter::new(File::create(&urls_path).map_err(io_at(&urls_path))?);
    for (id, u) in urls.iter().enumerate() {
        // The key the crawl gave the page's outlinks: of the URL as crawl.log has it (a
        // URL that does not parse back, or a 64-bit collision, keeps the first id).
        if let Ok(url) = Url::parse(u) {
            ids.entry(canon.url_key(&url)).or_insert(id);
        }
        writeln!(out, "{u}").map_err(io_at(&urls_path))?;
    }
    out.flush().map_err(io_at(&urls_path))?;
    drop(out);
    let nodes = urls.len();
    drop(urls);

    let mut built = Built {
        nodes,
        ..Built::default()
    };
    let mut failed: Option<GraphError> = None;
    let arcs = Arcs {
        files: files.iter(),
        reader: None,
        reading: None,
        page: 0,
        targets: Vec::new(),
        at: 0,
        ids: &ids,
        built: &mut built,
        failed: &mut failed,
    };
    let sorter = ParSortIters::new_dedup(nodes)
        .map_err(webgraph_error)?
        .num_partitions(1)
        .memory_usage(MemoryUsage::MemorySize(SORT_MEMORY));
    let sorted = sorter
        .try_sort_seq::<io::Error>(arcs.map(Ok), no_logging![])
        .map_err(webgraph_error)?;
    if let Some(e) = failed {
        return Err(e);
    }
    let mut parts = sorted.iters.into_vec();
    let sorted = parts
        .pop()
        .ok_or_else(|| webgraph_error("no sorted arcs"))?;
    built.graph_bits = BvComp::with_basename(basename)
        .comp_graph::<BE>(ArcListGraph::new(nodes, sorted))
        .map_err(webgraph_error)?;
    store_ef_with_data(
        nodes,
        with_ext(basename, "graph"),
        with_ext(basename, "offsets"),
        with_ext(basename, "ef"),
        no_logging![],
    )
    .map_err(webgraph_error)?;
    built.arcs = read_arcs(&with_ext(basename, "properties"))?;
    Ok(built)
}

/// The arc count the compressor wrote to `BASENAME.properties` (Java properties: `arcs=N`).
fn read_arcs(path: &Path) -> Result<u64, GraphError> {
    let text = std::fs::read_to_string(path).map_err(|e| GraphError::Io(path.to_path_buf(), e))?;
    text.lines()
        .filter_map(|l| l.strip_prefix("arcs="))
        .find_map(|v| v.trim().parse().ok())
        .ok_or_else(|| webgraph_error(format!("{}: no arcs count", path.display())))
}

/// The arcs of every outlinks file, in file and record order, as node pairs: links to URLs
/// that are no node, and to the page itself, are left out (and counted). An I/O error ends
/// the stream and is kept in `failed`.
struct Arcs<'a> {
    files: std::slice::Iter<'a, PathBuf>,
    reader: Option<OutlinksReader>,
    reading: Option<&'a Path>,
    page: usize,
    targets: Vec<u64>,
    at: usize,
    ids: &'a HashMap<u64, usize>,
    built: &'a mut Built,
    failed: &'a mut Option<GraphError>,
}

impl Iterator for Arcs<'_> {
    type Item = (usize, usize);

    fn next(&mut self) -> Option<(usize, usize)> {
        // Bounded: each pass consumes a target, a record or a file.
        loop {
            if let Some(&t) = self.targets.get(self.at) {
                self.at += 1;
                self.built.links_read += 1;
                match self.ids.get(&t) {
                    Some(&dst) if dst == self.page => self.built.self_links += 1,
                    Some(&dst) => return Some((self.page, dst)),
                    None => self.built.links_to_non_nodes += 1,
                }
                continue;
            }
            self.targets.clear();
            self.at = 0;
            if let Some(r) = &mut self.reader {
                match r.next_page(&mut self.targets) {
                    Ok(Some(page)) => match self.ids.get(&page) {
                        Some(&id) => self.page = id,
                        None => {
                            self.built.pages_not_nodes += 1;
                            self.targets.clear();
                        }
                    },
                    Ok(None) => {
                        let s = r.stats();
                        let read = &mut self.built.read;
                        read.records += s.records;
                        read.malformed += s.malformed;
                        read.dropped_bytes += s.dropped_bytes;
                        self.reader = None;
                    }
                    Err(e) => {
                        let path = self.reading.unwrap_or(Path::new("")).to_path_buf();
                        *self.failed = Some(GraphError::Io(path, e));
                        return None;
                    }
                }
                continue;
            }
            let path = self.files.next()?;
            match OutlinksReader::open(path) {
                Ok(r) => {
                    self.reader = Some(r);
                    self.reading = Some(path);
                }
                Err(e) => {
                    *self.failed = Some(GraphError::Io(path.clone(), e));
                    return None;
                }
            }
        }
    }
}
