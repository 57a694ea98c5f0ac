//! `spinneret report DIR`: `DIR/report.html`, one self-contained page of charts of a crawl
//! (finished, stopped, killed or still running), made from what the crawl keeps in DIR:
//! crawl.log, stats.json, timeline.tsv and the options recorded in `crawl.state/`
//! ([`super::report_data`] reads them, [`super::report_html`] draws the page). Nothing is
//! fetched and nothing in DIR but the report is written.

use std::io::Write as _;
use std::path::Path;
use std::time::SystemTime;

use crate::app::cli::ReportArgs;
use crate::app::exit::{usage, ExitStatus, Failure};
use crate::app::report_data::{read_timeline, LogSummary, StatsCounts};
use crate::app::report_html::{render, ReportInput};
use crate::app::run_files;
use crate::store::state::crawl_state;

/// The report's file name in DIR.
pub const REPORT_FILE: &str = "report.html";

pub fn run(args: ReportArgs) -> Result<ExitStatus, Failure> {
    let dir = &args.dir;
    if !dir.is_dir() {
        return Err(usage(format!("{} is not a directory", dir.display())));
    }
    let log_path = dir.join("crawl.log");
    if !log_path.is_file() {
        return Err(usage(format!(
            "{} holds no crawl.log: give the --out directory of a crawl",
            dir.display()
        )));
    }
    let log = LogSummary::read(&log_path)
        .map_err(|e| Failure::Output(format!("cannot read {}: {e}", log_path.display())))?;
    let stats = StatsCounts::read(dir);
    let timeline = read_timeline(dir);
    let page = render(&ReportInput {
        dir: &dir.display().to_string(),
        state: state(dir),
        log: &log,
        stats: &stats,
        timeline: timeline.as_ref(),
        args: options(dir),
        made_at: &crate::datetime::rfc3339(SystemTime::now()),
    });
    let path = dir.join(REPORT_FILE);
    write_whole(&path, &page)
        .map_err(|e| Failure::Output(format!("cannot write {}: {e}", path.display())))?;
    let _ = writeln!(std::io::stdout().lock(), "{}", path.display());
    Ok(ExitStatus::Ok)
}

/// Which state the crawl is in (as `spinneret status` says it).
fn state(dir: &Path) -> &'static str {
    if !crawl_state::state_dir(dir).is_dir() {
        "unknown"
    } else if run_files::live_run(dir).is_some() {
        "running"
    } else if crawl_state::is_finished(dir) {
        "finished"
    } else {
        "stopped"
    }
}

/// The arguments the crawl was started with, as recorded for `resume`.
fn options(dir: &Path) -> Result<Vec<String>, String> {
    crawl_state::load_args(dir).map_err(|e| e.to_string())
}

/// Written through a temporary file and a rename, so an open report is never half a page.
fn write_whole(path: &Path, text: &str) -> std::io::Result<()> {
    let tmp = path.with_extension("html.tmp");
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}
