//! A crawl watched and steered from another process: `spinneret status` on a crawl of the
//! loopback test web while it runs, after a SIGKILL and after the resume that finishes it;
//! `spinneret stop` ending a run resumably; a `running` file left by a dead process.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::crawl_run::{crawl_args, crawl_args_with, resume_args, start_web, Run};
use common::{spinneret, temp_dir};
use spinneret::app::run_files::json_number;

/// Every command here answers at once (`stop` within its own 60 s bound).
const COMMAND_LIMIT: Duration = Duration::from_secs(90);
/// How long a crawl may take to be seen running with a progress snapshot.
const SEEN_LIMIT: Duration = Duration::from_secs(30);

/// `spinneret status --json DIR`: its exit code and output.
fn status_json(out: &Path) -> (Option<i32>, String) {
    let o = spinneret(&["status", "--json", out.to_str().unwrap()], COMMAND_LIMIT);
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
    )
}

fn state_of(json: &str) -> Option<&str> {
    ["running", "stopped", "finished"]
        .into_iter()
        .find(|s| json.contains(&format!("\"state\": \"{s}\"")))
}

/// Waits (bounded) until `status` says running and a progress snapshot was taken; returns
/// the JSON.
fn wait_running_with_snapshot(run: &mut Run, out: &Path) -> String {
    let start = Instant::now();
    loop {
        let (code, json) = status_json(out);
        if code == Some(0)
            && state_of(&json) == Some("running")
            && json_number(&json, "snapshot_unix_ms").is_some()
        {
            return json;
        }
        assert!(
            run.0.try_wait().unwrap().is_none(),
            "the crawl ended before it was seen running: {}",
            run.stderr()
        );
        assert!(
            start.elapsed() < SEEN_LIMIT,
            "not seen running with a snapshot in {SEEN_LIMIT:?}; last status: {json}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn status_follows_a_crawl_through_a_kill_and_its_resume() {
    // 4 hosts of 30 pages, 200 ms apart per host: about 6 s of crawling.
    let web = start_web(4, 30);
    let out = temp_dir("operate-status").join("crawl");
    let mut run = Run::start(&crawl_args(&web, &out, 200));
    let pid = run.0.id();

    let json = wait_running_with_snapshot(&mut run, &out);
    assert_eq!(json_number(&json, "pid"), Some(f64::from(pid)), "{json}");
    assert!(
        json.contains("\"figures_from\": \"progress.json\""),
        "{json}"
    );
    assert!(json_number(&json, "queued").is_some(), "{json}");
    let text = spinneret(&["status", out.to_str().unwrap()], COMMAND_LIMIT);
    let text = String::from_utf8_lossy(&text.stdout).into_owned();
    eprintln!("{text}");
    assert!(
        text.starts_with(&format!("state: running (pid {pid}, since ")),
        "{text}"
    );
    for line in ["fetched: ", "last checkpoint: ", "last snapshot: "] {
        assert!(text.contains(line), "no {line:?} in {text}");
    }
    // A second run on the same directory is refused while this one lives.
    let again = spinneret(
        &resume_args(&out)
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
        COMMAND_LIMIT,
    );
    assert_eq!(again.status.code(), Some(2), "resume of a running crawl");

    run.signal("-KILL");
    run.wait();
    assert!(
        out.join("crawl.state/running").exists(),
        "a kill leaves the mark"
    );
    let (code, json) = status_json(&out);
    assert_eq!(code, Some(0));
    assert_eq!(state_of(&json), Some("stopped"), "{json}");
    assert_eq!(
        json_number(&json, "stale_pid"),
        Some(f64::from(pid)),
        "{json}"
    );

    let mut resumed = Run::start(&resume_args(&out));
    assert_eq!(resumed.wait(), Some(0), "{}", resumed.stderr());
    let (_, json) = status_json(&out);
    eprintln!("{json}");
    assert_eq!(state_of(&json), Some("finished"), "{json}");
    assert_eq!(json_number(&json, "stale_pid"), None, "{json}");
    assert!(json.contains("\"figures_from\": \"stats.json\""), "{json}");
    assert!(!out.join("crawl.state/running").exists());
    drop(web);
    let _ = std::fs::remove_dir_all(out.parent().unwrap());
}

#[test]
fn stop_ends_a_running_crawl_resumably() {
    let web = start_web(4, 30);
    let out = temp_dir("operate-stop").join("crawl");
    let dir = out.to_str().unwrap();
    // Two loops: partition 0's snapshot holds both loops' figures.
    let mut run = Run::start(&crawl_args_with(&web, &out, 200, &["--loops", "2"]));
    let pid = run.0.id();
    let json = wait_running_with_snapshot(&mut run, &out);
    assert_eq!(json_number(&json, "pid"), Some(f64::from(pid)), "{json}");

    let stop = spinneret(&["stop", dir], COMMAND_LIMIT);
    let said = String::from_utf8_lossy(&stop.stdout).into_owned();
    assert_eq!(stop.status.code(), Some(0), "{said}");
    assert!(
        said.contains(&format!("process {pid} stopped after")),
        "{said}"
    );
    assert_eq!(run.wait(), Some(9), "a stopped crawl exits as Ctrl-C does");
    assert!(
        !out.join("crawl.state/running").exists(),
        "a stop removes the mark"
    );
    let (_, json) = status_json(&out);
    assert_eq!(state_of(&json), Some("stopped"), "{json}");
    assert_eq!(json_number(&json, "stale_pid"), None, "{json}");
    assert!(json.contains("\"figures_from\": \"stats.json\""), "{json}");

    let again = spinneret(&["stop", dir], COMMAND_LIMIT);
    assert_eq!(again.status.code(), Some(5), "stop with nothing running");
    assert!(String::from_utf8_lossy(&again.stdout).contains("no crawl is running"));

    let mut resumed = Run::start(&resume_args(&out));
    assert_eq!(resumed.wait(), Some(0), "{}", resumed.stderr());
    drop(web);
    let _ = std::fs::remove_dir_all(out.parent().unwrap());
}

#[test]
fn a_running_file_of_a_dead_process_reads_as_stopped() {
    let out = temp_dir("operate-stale").join("crawl");
    let dir = out.to_str().unwrap();
    // Not a crawl yet: exit 2 for both commands.
    std::fs::create_dir_all(&out).unwrap();
    assert_eq!(
        spinneret(&["status", dir], COMMAND_LIMIT).status.code(),
        Some(2)
    );
    assert_eq!(
        spinneret(&["stop", dir], COMMAND_LIMIT).status.code(),
        Some(2)
    );

    // A process that has ended (and been reaped): its pid names nothing now, or another
    // program, never a spinneret.
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    std::fs::create_dir_all(out.join("crawl.state")).unwrap();
    std::fs::write(
        out.join("crawl.state/running"),
        format!("pid {dead}\nstarted_unix_ms 1700000000000\n"),
    )
    .unwrap();
    let (code, json) = status_json(&out);
    assert_eq!(code, Some(0));
    assert_eq!(state_of(&json), Some("stopped"), "{json}");
    assert_eq!(
        json_number(&json, "stale_pid"),
        Some(f64::from(dead)),
        "{json}"
    );
    let stop = spinneret(&["stop", dir], COMMAND_LIMIT);
    assert_eq!(stop.status.code(), Some(5), "nothing to stop");
    // Damaged: no pid at all; still stopped, no panic.
    std::fs::write(out.join("crawl.state/running"), b"pid -1\n\xff").unwrap();
    let (code, json) = status_json(&out);
    assert_eq!(
        (code, state_of(&json)),
        (Some(0), Some("stopped")),
        "{json}"
    );
    let _ = std::fs::remove_dir_all(out.parent().unwrap());
}

/// How many crawl.log lines name `url`.
fn lines_of(out: &Path, url: &str) -> usize {
    common::read_log(out)
        .iter()
        .filter(|l| l.url == url)
        .count()
}

#[test]
fn added_urls_are_fetched_once_by_a_running_crawl_and_by_a_resumed_one() {
    let web = start_web(4, 30);
    let out = temp_dir("operate-add").join("crawl");
    let dir = out.to_str().unwrap();
    let port = web.server.port();
    let mut run = Run::start(&crawl_args(&web, &out, 200));
    wait_running_with_snapshot(&mut run, &out);
    // A page nothing links to (the test web answers 404): fetched and logged once.
    let live = format!("http://h0001.test:{port}/added-while-running.html");
    let added = spinneret(&["add", dir, &live, "not a url"], COMMAND_LIMIT);
    let said = String::from_utf8_lossy(&added.stdout).into_owned();
    assert_eq!(added.status.code(), Some(0), "{said}");
    assert!(said.contains("added 1 URLs"), "{said}");
    assert!(said.contains("within a second"), "{said}");
    // Stopped (resumably) once the added URL had time to be taken.
    std::thread::sleep(Duration::from_secs(3));
    let stop = spinneret(&["stop", dir], COMMAND_LIMIT);
    assert_eq!(stop.status.code(), Some(0));
    run.wait();
    // Added to the stopped crawl: the resume takes it.
    let later = format!("http://h0002.test:{port}/added-while-stopped.html");
    let added = spinneret(&["add", dir, &later], COMMAND_LIMIT);
    let said = String::from_utf8_lossy(&added.stdout).into_owned();
    assert!(said.contains("`spinneret resume` takes them"), "{said}");
    let mut resumed = Run::start(&resume_args(&out));
    resumed.wait();
    assert_eq!(lines_of(&out, &live), 1, "added while running");
    assert_eq!(lines_of(&out, &later), 1, "added while stopped");
    // A finished crawl takes nothing more: said so.
    let refused = spinneret(&["add", dir, &live], COMMAND_LIMIT);
    assert_eq!(refused.status.code(), Some(2));
    drop(web);
    let _ = std::fs::remove_dir_all(out.parent().unwrap());
}
