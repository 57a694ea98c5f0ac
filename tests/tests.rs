//! The integration tests, one binary (`integration`): each file beside this one is a module,
//! and `common` (the shared helpers) is compiled once. One binary rather than one per file
//! because each test binary links the whole crate and its dependencies again. One file's
//! tests: `cargo test --test integration hostile::`.
//!
//! Nothing here may rely on being alone in its process: the crawler under test runs as a child
//! (`CARGO_BIN_EXE_spinneret`) or in-process on its own threads, and no test changes the
//! environment, the working directory or signal dispositions.

mod common;

mod archive;
mod auth;
mod bench;
mod bounded;
mod cluster;
mod crawl;
mod discovery;
mod dns_manners;
mod durable;
mod everyday;
mod fetch_cli;
mod focus;
mod freshness;
mod graph;
mod hostile;
mod keepalive;
mod loops;
mod manners;
mod manners_web;
mod metrics;
mod near_duplicates;
mod operate;
mod outcomes;
mod page_robots;
mod proxy;
mod report;
mod wacz;

/// With autotests off, a file in tests/ that is not a module here would never run.
#[test]
fn every_file_beside_this_one_is_a_module() {
    spinneret_tools::test_binary::assert_holds_every_file(env!("CARGO_MANIFEST_DIR"));
}
