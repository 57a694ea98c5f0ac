//! `spinneret resume DIR`: the crawl recorded in DIR (its arguments and journal, see
//! [`crate::store::state::crawl_state`]) continued, after what a crash left is made whole.

use crate::app::cli::{Cli, Command, ResumeArgs};
use crate::app::crawl_command::{run_crawl_as, Start};
use crate::app::exit::{usage, ExitStatus, Failure};
use crate::app::report::eprint_line;
use crate::app::run_files;
use crate::store::state::crawl_state;
use clap::Parser;

/// `spinneret resume DIR`: the recorded crawl command, with the given overrides, continued
/// from its journal.
pub fn run(r: ResumeArgs) -> Result<ExitStatus, Failure> {
    if !r.dir.join(crawl_state::STATE_DIR).is_dir() {
        return Err(usage(format!(
            "{} holds no crawl to resume (no {} directory)",
            r.dir.display(),
            crawl_state::STATE_DIR
        )));
    }
    // Two runs on one directory would cut each other's files back.
    if let Some(live) = run_files::live_run(&r.dir) {
        return Err(usage(format!(
            "{} is being crawled by process {} now: `spinneret stop {}` stops it",
            r.dir.display(),
            live.pid,
            r.dir.display()
        )));
    }
    let recorded = crawl_state::load_args(&r.dir).map_err(|e| Failure::Output(e.to_string()))?;
    if crawl_state::is_finished(&r.dir) {
        if !r.quiet {
            eprint_line(&format!(
                "spinneret: the crawl in {} is complete: nothing to resume",
                r.dir.display()
            ));
        }
        return Ok(ExitStatus::Ok);
    }
    let mut full = vec!["spinneret".to_string()];
    full.extend(recorded);
    let mut args = match Cli::try_parse_from(&full).map(|c| c.command) {
        Ok(Command::Crawl(args)) => args,
        _ => {
            return Err(Failure::Output(format!(
                "{}: the recorded command is not a crawl command this version understands",
                r.dir.display()
            )))
        }
    };
    args.common.out = r.dir.clone();
    if r.limits.max_time.is_some() {
        args.limits.max_time = r.limits.max_time;
    }
    if r.limits.max_pages.is_some() {
        args.limits.max_pages = r.limits.max_pages;
    }
    if let Some(n) = r.max_conns {
        args.common.max_conns = n;
    }
    if r.delay.delay_secs.is_some() || r.delay.delay_ms.is_some() {
        args.delay = r.delay;
    }
    if let Some(f) = r.delay_factor {
        args.delay_factor = f;
    }
    if r.quiet {
        args.common.quiet = true;
    }
    if r.metrics.is_some() {
        args.metrics = r.metrics;
    }
    if r.wacz.is_some() {
        args.common.wacz = r.wacz;
    }
    recover_output(&r.dir, args.common.quiet)?;
    run_crawl_as(args, Start::Resume)
}

/// What a crash leaves is made whole before a crawl continues: the outputs and the journal
/// are cut back to the journal's last commit mark (so nothing the journal does not vouch
/// for stays, and nothing is archived twice), then each `*.warc.gz.open` is cut back to its
/// last complete record and closed, and its index (or one a kill left unsorted beside a
/// closed file) is rebuilt from the lines that point inside what was kept.
fn recover_output(dir: &std::path::Path, quiet: bool) -> Result<(), Failure> {
    use crate::store::{
        archive::{recover, text_sides},
        state::commit_mark,
    };
    let last = commit_mark::find_last(dir).map_err(|e| Failure::Output(e.to_string()))?;
    if let Some(last) = last {
        let mut cut = recover::cut_back(dir, &last).map_err(Failure::output)?;
        cut.warc_bytes += text_sides::cut_to_marks(dir, &last.mark).map_err(Failure::output)?;
        if !quiet && cut != recover::Cut::default() {
            eprint_line(&format!(
                "spinneret: cut back to the last commit: {} WARC files begun after it removed, \
                 {} WARC bytes, {} crawl.log bytes and {} journal bytes dropped",
                cut.files_removed, cut.warc_bytes, cut.log_bytes, cut.journal_bytes
            ));
        }
    }
    let open = recover::find_open_warcs(dir).map_err(Failure::output)?;
    for path in open {
        let r = recover::recover_open_warc(&path).map_err(Failure::output)?;
        let kept = r
            .final_path
            .as_ref()
            .and_then(|p| std::fs::metadata(p).ok());
        recover::recover_open_index(&path, kept.as_ref().map(|m| m.len()))
            .map_err(Failure::output)?;
        text_sides::recover_open(&path, kept.is_some()).map_err(Failure::output)?;
        if !quiet {
            eprint_line(&format!(
                "spinneret: recovered {}: {} records kept, {} bytes of a cut record dropped",
                path.display(),
                r.records_kept,
                r.bytes_dropped
            ));
        }
    }
    recover::recover_orphan_indexes(dir).map_err(Failure::output)?;
    text_sides::recover_orphans(dir).map_err(Failure::output)?;
    Ok(())
}
