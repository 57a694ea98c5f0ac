//! The command line: flags ([`cli`]), running a command ([`run`]), what a run reports
//! ([`report`]) and `spinneret bench` ([`bench`](mod@bench)). The only layer that prints to people.

pub mod bench;
pub mod cli;
pub mod report;
pub mod run;

use std::process::ExitCode;

use clap::Parser;

use cli::{Cli, Command};

/// The binary's entry point.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Fetch(args) => run::run_fetch(args),
        Command::Crawl(args) => run::run_crawl(args),
        Command::Bench(args) => bench::run(args),
        Command::TestWeb(args) => bench::serve_test_web(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("spinneret: {e}");
            ExitCode::from(2)
        }
    }
}
