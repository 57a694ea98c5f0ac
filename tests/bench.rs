//! `spinneret bench` end to end: its test web is the tools crate's `spinneret-testserver`, run
//! as a child and found beside the `spinneret` binary (or named), and a missing one is a clear
//! error saying how to build it.

use crate::common;

use std::path::PathBuf;
use std::time::Duration;

use common::{spinneret, temp_dir};

const RUN_LIMIT: Duration = Duration::from_secs(120);

/// The `spinneret-testserver` beside the `spinneret` under test: cargo builds it there for the
/// tools crate's tests (`cargo test --workspace`), not for this crate's alone.
fn testserver() -> Option<PathBuf> {
    let path =
        PathBuf::from(env!("CARGO_BIN_EXE_spinneret")).with_file_name("spinneret-testserver");
    if path.is_file() {
        return Some(path);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "CI runs `cargo test --workspace`, which builds spinneret-testserver beside spinneret"
    );
    eprintln!(
        "SKIPPED: no spinneret-testserver beside spinneret (`cargo test --workspace` builds it)"
    );
    None
}

#[test]
fn bench_crawls_and_fetches_the_test_web_of_the_server_beside_it() {
    let Some(server) = testserver() else { return };
    let server = server.to_str().unwrap();
    for mode in [&[][..], &["--fetch"][..]] {
        let out = temp_dir("bench");
        let mut args = vec!["bench", "--hosts", "4", "--pages", "3", "--page-kb", "2"];
        args.extend(["--testserver", server, "--out", out.to_str().unwrap()]);
        args.extend(mode);
        let run = spinneret(&args, RUN_LIMIT);
        let (stdout, stderr) = (
            String::from_utf8_lossy(&run.stdout),
            String::from_utf8_lossy(&run.stderr),
        );
        assert!(run.status.success(), "{args:?}\n{stdout}\n{stderr}");
        assert!(
            stdout.contains("verdict        PASS: all ")
                && stdout.contains("connections per host")
                && stdout.contains("test web CPU"),
            "{stdout}"
        );
        assert!(stderr.contains("test web: served "), "{stderr}");
    }
}

#[test]
fn bench_without_its_server_says_how_to_build_it() {
    let missing = temp_dir("bench-missing").join("spinneret-testserver");
    let run = spinneret(
        &["bench", "--testserver", missing.to_str().unwrap()],
        RUN_LIMIT,
    );
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(
        run.status.code(),
        Some(2),
        "a bad --testserver is a usage error"
    );
    assert!(
        stderr.contains("is not a file") && stderr.contains(missing.to_str().unwrap()),
        "{stderr}"
    );
    assert!(
        stderr.contains("cargo build --release -p spinneret-tools --bin spinneret-testserver"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("generating the test web"),
        "nothing starts: {stderr}"
    );
}
