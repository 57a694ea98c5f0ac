//! The bench measures what a user runs: `crawl`'s defaults, the linked web.

use clap::Parser;

use super::*;
use crate::app::cli::{Cli, Command, SHAPES};

fn parse(argv: &[&str]) -> Command {
    Cli::try_parse_from(argv).unwrap().command
}

#[test]
fn bench_defaults_are_the_crawls() {
    let Command::Bench(bench) = parse(&["spinneret", "bench"]) else {
        panic!("not bench");
    };
    let Command::Crawl(crawl) = parse(&["spinneret", "crawl", "-o", "out", "http://a.test/"])
    else {
        panic!("not crawl");
    };
    assert_eq!(bench.max_conns, crawl.common.max_conns);
    assert_eq!(bench.delay_factor, crawl.delay_factor);
    assert_eq!(bench.shape, "linked");
    assert!(!bench.fetch);
}

#[test]
fn fetch_mode_refuses_crawl_only_flags() {
    for flag in [
        ["--loops", "2"],
        ["--no-journal", ""],
        ["--delay-factor", "0"],
    ] {
        let argv: Vec<&str> = ["spinneret", "bench", "--fetch", flag[0], flag[1]]
            .into_iter()
            .filter(|a| !a.is_empty())
            .collect();
        assert!(Cli::try_parse_from(&argv).is_err(), "{argv:?}");
    }
    let Command::Bench(b) = parse(&["spinneret", "bench", "--fetch", "--shape", "clustered"])
    else {
        panic!("not bench");
    };
    assert!(b.fetch);
    assert_eq!(b.shape, "clustered");
}

#[test]
fn connections_per_host_decide_the_verdict() {
    let conns = |opened| Conns {
        opened,
        reused: 0,
        stale_retries: 0,
        hosts: 500,
    };
    assert!(conns(500).passed());
    assert!(conns(550).passed(), "1.1 per host is allowed");
    assert!(!conns(551).passed());
    assert!(!conns(16_000).passed(), "the issue's crawl");
    let urls = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        hosts_of(&urls(&[
            "http://h0000.test:80/",
            "http://h0000.test/p1.html",
            "http://h0001.test:80/",
            "https://h0001.test/",
        ])),
        3,
        "host and port: http://h0000.test/ is port 80, https is 443"
    );
}

#[test]
fn the_test_server_reads_every_shape_we_name() {
    for shape in SHAPES {
        let theirs = spinneret_tools::testweb::Shape::parse(shape);
        assert_eq!(theirs.map(|s| s.name()), Some(shape));
    }
    assert!(Cli::try_parse_from(["spinneret", "bench", "--shape", "ring"]).is_err());
}
