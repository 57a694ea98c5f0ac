//! The figures `spinneret graph` prints of a built graph: in-degrees and PageRank (Brin &
//! Page; IIR §21.2), by power iteration over the graph read back sequentially from its BVGraph
//! files (each iteration one decompressing pass: memory is the rank vectors, 16 bytes a
//! node, and the degrees).

use std::path::Path;

use lender::Lender;
use webgraph::graphs::bvgraph::BvGraphSeq;
use webgraph::traits::SequentialLabeling;

use super::build::GraphError;

/// The damping factor (the teleport probability is 1 − it), as Brin and Page chose.
pub const DAMPING: f64 = 0.85;
/// Iterations at most; the iteration stops earlier once the L1 change is below [`TOLERANCE`].
pub const MAX_ITERATIONS: usize = 100;
pub const TOLERANCE: f64 = 1e-10;

/// Per node: in-degree, out-degree and PageRank (summing to 1).
#[derive(Clone, Debug, Default)]
pub struct Ranks {
    pub in_degree: Vec<u32>,
    pub out_degree: Vec<u32>,
    pub pagerank: Vec<f64>,
    pub iterations: usize,
}

/// Reads the graph at `basename` and ranks its nodes. A dangling node's rank (one without
/// outlinks) is spread over every node, as teleportation is.
pub fn rank(basename: &Path) -> Result<Ranks, GraphError> {
    let graph = BvGraphSeq::with_basename(basename)
        .load()
        .map_err(|e| GraphError::Webgraph(format!("{e:#}")))?;
    let n = graph.num_nodes();
    let mut r = Ranks {
        in_degree: vec![0; n],
        out_degree: vec![0; n],
        pagerank: vec![1.0 / n.max(1) as f64; n],
        iterations: 0,
    };
    let mut it = graph.iter();
    while let Some((node, succ)) = it.next() {
        for s in succ {
            if let (Some(o), Some(i)) = (r.out_degree.get_mut(node), r.in_degree.get_mut(s)) {
                *o += 1;
                *i += 1;
            }
        }
    }
    if n == 0 {
        return Ok(r);
    }
    let mut next = vec![0.0f64; n];
    for _ in 0..MAX_ITERATIONS {
        r.iterations += 1;
        let dangling: f64 = (0..n)
            .filter(|&v| r.out_degree[v] == 0)
            .map(|v| r.pagerank[v])
            .sum();
        let base = (1.0 - DAMPING + DAMPING * dangling) / n as f64;
        next.iter_mut().for_each(|x| *x = base);
        let mut it = graph.iter();
        while let Some((node, succ)) = it.next() {
            let out = r.out_degree.get(node).copied().unwrap_or(0);
            if out == 0 {
                continue;
            }
            let share = DAMPING * r.pagerank[node] / f64::from(out);
            for s in succ {
                if let Some(x) = next.get_mut(s) {
                    *x += share;
                }
            }
        }
        let change: f64 = next
            .iter()
            .zip(&r.pagerank)
            .map(|(a, b)| (a - b).abs())
            .sum();
        std::mem::swap(&mut r.pagerank, &mut next);
        if change < TOLERANCE {
            break;
        }
    }
    Ok(r)
}

/// The `k` nodes with the highest `score`, highest first (ties by node id).
pub fn top<T: PartialOrd + Copy>(score: &[T], k: usize) -> Vec<usize> {
    let mut ids: Vec<usize> = (0..score.len()).collect();
    ids.sort_by(|&a, &b| {
        score[b]
            .partial_cmp(&score[a])
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(a.cmp(&b))
    });
    ids.truncate(k);
    ids
}
