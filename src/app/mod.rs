//! The command line, the only layer that prints to people. Its files import one way, each
//! only those above it in this list:
//! - [`line_class`], [`exit`] (exit statuses, usage errors), [`process`] (CPU and memory
//!   used), [`url_lines`], [`fd_limit`], [`inbox`] (seeds added to a crawl): leaves;
//! - [`metrics`]: the figures `--metrics` serves, published by the loops; [`metrics_server`],
//!   the endpoint serving them;
//! - [`report`] (progress, summary, stats.json, messages; loops publish metrics through it);
//! - [`run_files`]: the `running` mark and `progress.json` snapshot of a run under way (uses
//!   `report`'s figures);
//! - [`cli`]: the flags, declared once each;
//! - [`config`]: flags become checked configuration, per event loop shares included;
//! - [`drive`]: turning the loop over a source, signals, the end of a run;
//! - [`partition`], [`cluster`], [`loops`]: a crawl as partitions, in-process or over Redis;
//! - the commands: [`crawl_command`], [`resume`], [`fetch`], [`bench`](mod@bench),
//!   [`cluster_status`], [`operate`] (`status`, `stop` and `add`), [`near_dups_command`]
//!   (`near-duplicates`), [`extract_command`] (`extract`), and `report`'s: [`report_data`] (the crawl's files read in bounded
//!   memory), [`svg_chart`], [`report_html`], [`report_command`], [`graph`] (`graph`),
//!   [`wacz_command`] (`wacz`, and `--wacz` at a run's end, which `crawl_command` and
//!   `fetch` call); and `main` here.

pub mod bench;
pub mod cli;
pub mod cluster;
pub mod cluster_status;
pub mod config;
pub mod crawl_command;
pub mod drive;
pub mod exit;
pub mod extract_command;
pub mod fd_limit;
pub mod fetch;
pub mod graph;
pub mod inbox;
pub mod line_class;
pub mod login;
pub mod loops;
pub mod metrics;
pub mod metrics_server;
pub mod near_dups_command;
pub mod netrc;
pub mod operate;
pub mod partition;
pub mod process;
pub mod report;
pub mod report_command;
pub mod report_data;
pub mod report_html;
pub mod resume;
pub mod run_files;
pub mod svg_chart;
pub mod url_lines;
pub mod wacz_command;

use std::process::ExitCode;

use clap::{CommandFactory, Parser};

use cli::{Cli, Command};
use exit::{ExitStatus, Failure, UsageError};

/// The binary's entry point.
pub fn main() -> ExitCode {
    process::keep_heap_small();
    let cli = Cli::parse();
    let result: Result<ExitStatus, Box<dyn std::error::Error>> = match cli.command {
        Command::Fetch(args) => fetch::run_fetch(args).map_err(Into::into),
        Command::Crawl(args) => crawl_command::run_crawl(args).map_err(Into::into),
        Command::Resume(args) => resume::run(args).map_err(Into::into),
        Command::Status(args) => operate::status(args).map_err(Into::into),
        Command::Stop(args) => operate::stop(args).map_err(Into::into),
        Command::Add(args) => operate::add(args).map_err(Into::into),
        Command::Report(args) => report_command::run(args).map_err(Into::into),
        Command::ClusterStatus(args) => cluster_status::status(&args.cluster)
            .map(|text| {
                print!("{text}");
                ExitStatus::Ok
            })
            .map_err(|e| Failure::Runtime(e).into()),
        Command::NearDuplicates(args) => near_dups_command::run(&args).map_err(Into::into),
        Command::Extract(args) => extract_command::run(&args).map_err(Into::into),
        Command::Graph(args) => graph::run(args),
        Command::Wacz(args) => wacz_command::run(&args).map_err(Into::into),
        Command::Bench(args) => bench::run(args).map(|()| ExitStatus::Ok),
        Command::Help(args) => help(args.topic.as_deref()),
    };
    match result {
        Ok(status) => ExitCode::from(status.code()),
        Err(e) => {
            report::eprint_line(&format!("spinneret: {e}"));
            let status = if let Some(f) = e.downcast_ref::<Failure>() {
                f.status()
            } else if e.downcast_ref::<UsageError>().is_some() {
                ExitStatus::Usage
            } else {
                ExitStatus::Runtime
            };
            ExitCode::from(status.code())
        }
    }
}

/// `spinneret help [TOPIC|COMMAND]`.
fn help(topic: Option<&str>) -> Result<ExitStatus, Box<dyn std::error::Error>> {
    use std::io::Write;
    let mut cmd = Cli::command();
    let printed = match topic {
        None => cmd.print_long_help(),
        Some("outcomes") => std::io::stdout().lock().write_all(outcomes_help().as_bytes()),
        Some("canonicalization") => std::io::stdout()
            .lock()
            .write_all(canonicalization_help().as_bytes()),
        Some(name) => match cmd.find_subcommand_mut(name) {
            Some(sub) if !sub.is_hide_set() => {
                let mut sub = sub.clone().bin_name(format!("spinneret {name}"));
                sub.print_long_help()
            }
            _ => {
                return Err(Box::new(UsageError(format!(
                    "no help on `{name}`: try `spinneret help outcomes`, `spinneret help canonicalization`, or a command (fetch, crawl, resume, status, stop, report, near-duplicates, graph, wacz, bench)"
                ))))
            }
        },
    };
    match printed {
        // `spinneret help outcomes | head` is fine.
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(Box::new(e)),
        _ => Ok(ExitStatus::Ok),
    }
}

/// The canonicalization rules URL-seen keys are taken after, with what each strips.
pub fn canonicalization_help() -> String {
    let mut s = String::from(
        "Canonicalization: a URL's URL-seen key is taken after these rules, so that one page\n\
         linked with session IDs or tracking parameters is fetched once (under the first of\n\
         its forms found, which is the URL fetched, stored and logged). Names compare ASCII\n\
         case-insensitively; a query left empty loses its `?`. --no-canonicalize turns the\n\
         rules off; --strip-query-param NAME adds a name. A resumed crawl keys as it began.\n\n",
    );
    for (names, what) in crate::crawl::canon::RULES {
        s.push_str(&format!("  {names}\n      {what}\n"));
    }
    s.push_str(
        "\nExample: /p.html;jsessionid=0A1B, /p.html?utm_source=news&utm_medium=mail and\n\
         /p.html?fbclid=IwAR0 are all keyed as /p.html.\n",
    );
    s
}

/// Every outcome a crawl.log line can have, with its meaning.
pub fn outcomes_help() -> String {
    let mut s = String::from(
        "Outcomes: the second column of crawl.log, one per URL (and per robots.txt fetch).\n\
         A `Success` line has the HTTP status in the third column; 4xx/5xx count as HTTP errors.\n\n",
    );
    let width = crate::ReturnCode::ALL
        .iter()
        .map(|c| c.name().len())
        .max()
        .unwrap_or(0);
    for c in crate::ReturnCode::ALL {
        s.push_str(&format!("  {:width$}  {}\n", c.name(), c.meaning()));
    }
    s
}
