//! `spinneret crawl` (and the crawl `resume` continues): the crawl's directory made or
//! taken up, the run on its event loops ([`super::loops`]), and its end: the exit status and
//! what the user is told.

use crate::app::cli::CrawlArgs;
use crate::app::config::{self, CrawlPlan};
use crate::app::drive::conclude;
use crate::app::exit::{usage, ExitStatus, Failure, RunEnd};
use crate::app::loops::{self, Inputs, Partitions};
use crate::app::report::CrawlReport;
use crate::app::run_files::RunningMark;
use crate::crawl::sink::Hop;
use crate::crawl::LineTally;
use crate::store::archive::output::Written;
use crate::store::state::crawl_state;

pub fn run_crawl(args: CrawlArgs) -> Result<ExitStatus, Failure> {
    // The arguments after the program name, recorded for `resume`.
    let argv: Vec<String> = std::env::args().skip(1).collect();
    run_crawl_as(args, Start::New(argv))
}

/// How a crawl run starts.
pub enum Start {
    /// A new crawl, started with these arguments.
    New(Vec<String>),
    /// An earlier crawl continued, from what its journal says.
    Resume,
}

pub fn run_crawl_as(args: CrawlArgs, start: Start) -> Result<ExitStatus, Failure> {
    let CrawlPlan {
        mut setup,
        config,
        seeds,
        previous,
        sitemaps,
        bad_inputs,
        cluster,
        loops,
        display,
    } = config::crawl_plan(&args)?;
    let out = setup.output.dir.clone();
    let resume = match start {
        Start::New(argv) => {
            if let Some(c) = &cluster {
                // Nothing is written for a node whose cluster cannot be reached.
                crate::app::cluster::open(&c.url).map_err(Failure::Runtime)?;
            }
            if crawl_state::holds_crawl(&out) {
                return Err(usage(format!(
                    "{} already holds a crawl: `spinneret resume {}` continues it, or give \
                     another --out",
                    out.display(),
                    out.display()
                )));
            }
            std::fs::create_dir_all(&out)
                .and_then(|()| crawl_state::create(&out, &argv))
                .map_err(|e| Failure::Output(format!("cannot write to {}: {e}", out.display())))?;
            false
        }
        Start::Resume => {
            setup.output.resume = true;
            true
        }
    };
    // Until this run returns, `spinneret status` and `stop` find it by its pid.
    let _running = RunningMark::write(&out).map_err(|e| {
        Failure::Output(format!(
            "cannot write {}: {e}",
            crate::app::run_files::running_path(&out).display()
        ))
    })?;
    // From here a SIGINT (Ctrl-C, `spinneret stop`) stops the run resumably even while it
    // is still being set up (a resume's replay can take a while): the drive loop sees it
    // at its first turn. Before, it would kill the process and leave the mark stale.
    crate::app::drive::install_interrupt_handler();
    let inputs = Inputs {
        seeds,
        bad_inputs,
        previous,
        sitemaps,
    };
    let mut report = loops::execute(
        setup,
        config,
        inputs,
        display,
        resume,
        Partitions { loops, cluster },
    )?;
    if resume {
        whole_crawl_counts(&mut report)?;
    }
    if report.end == RunEnd::Finished {
        crawl_state::mark_finished(&out).map_err(Failure::output)?;
    }
    let status = ExitStatus::decide(report.end, &report.counters.url_lines);
    let mut json = report.json();
    json.uint("exit_status", u64::from(status.code()));
    let status = conclude(
        &report.out_dir,
        json.finish(),
        report.line(),
        status,
        status.reason(report.end, &report.counters.url_lines, report.frontier_left),
        &Written {
            warc_files: report.warc_files.clone(),
            indexes: report.indexes.clone(),
        },
        display,
    )?;
    if let Some(file) = &args.common.wacz {
        crate::app::wacz_command::at_end(&report.out_dir, file, display.quiet)?;
    }
    Ok(status)
}

/// A resumed crawl reports (and decides its exit status on) the whole crawl's lines, counted
/// from its crawl.log; the stats.json of earlier runs is kept as `stats.N.json`.
fn whole_crawl_counts(report: &mut CrawlReport) -> Result<(), Failure> {
    let mut urls = LineTally::default();
    let mut robots = LineTally::default();
    let log = report.out_dir.join("crawl.log");
    crate::store::archive::crawl_log::for_each_line(&log, |l| {
        let tally = if l.hop == Some(Hop::Prerequisite) {
            &mut robots
        } else {
            &mut urls
        };
        tally.add(l.outcome, l.status);
    })
    .map_err(|e| Failure::Output(format!("cannot read {}: {e}", log.display())))?;
    report.counters.url_lines = urls;
    report.counters.robots_lines = robots;
    let stats = report.out_dir.join("stats.json");
    if stats.exists() {
        // Bounded: one name per earlier run.
        let mut n = 1u32;
        while report.out_dir.join(format!("stats.{n}.json")).exists() && n < u32::MAX {
            n += 1;
        }
        std::fs::rename(&stats, report.out_dir.join(format!("stats.{n}.json")))
            .map_err(Failure::output)?;
    }
    Ok(())
}
