//! The `spinneret` binary: parse flags, run, turn errors into messages and exit codes.

use std::process::ExitCode;

fn main() -> ExitCode {
    spinneret::app::main()
}
