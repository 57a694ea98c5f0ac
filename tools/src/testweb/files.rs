//! The test web as files, for a static server to serve (`tools/compare_wget2.py` runs nginx
//! on them, over HTTP or HTTPS): one directory per host, named after it, holding every
//! resource the generator made, with the absolute links' origins filled in for one scheme and
//! port. What is served, and so what a crawl must fetch, is the same as from `WebServer`.
//!
//! A resource's file is its request target without the leading `/`, the query kept in the
//! name (`list.html?sort=name&page=0`), and `index.html` for `/`; nginx finds them with
//! `root DIR/$host; index index.html; try_files "$uri?$args" $uri $uri/ =404;`.

use std::io;
use std::path::{Path, PathBuf};

use super::{host_name, Scheme, TestWeb};

/// The file serving request target `target` (one of the generator's) of the host directory.
pub fn file_name(target: &str) -> &str {
    match target {
        "/" => "index.html",
        t => t.strip_prefix('/').unwrap_or(t),
    }
}

/// Writes every resource of `web` under `dir` (created if missing) as served with `scheme` on
/// `port`; returns how many files were written.
pub fn write_tree(web: &TestWeb, scheme: Scheme, port: u16, dir: &Path) -> io::Result<usize> {
    let mut body = Vec::new();
    let mut host_dir = PathBuf::new();
    let mut host_done = None;
    for r in &web.resources {
        // `resources` is host-major: each host's directory is made once.
        if host_done != Some(r.host) {
            host_dir = dir.join(host_name(r.host));
            std::fs::create_dir_all(&host_dir)?;
            host_done = Some(r.host);
        }
        let path = host_dir.join(file_name(&r.target));
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        body.clear();
        r.body.render(scheme, port, &mut body);
        std::fs::write(&path, &body)?;
    }
    Ok(web.resources.len())
}
