//! The test servers' tests, one binary (`integration`): each file beside this one is a
//! module, and `common` (a blocking HTTP client) is compiled once. One file's tests:
//! `cargo test -p spinneret-tools --test integration testweb::`.

mod common;

mod blackhole;
mod dns;
mod freshweb;
mod hostile_scripts;
mod http;
mod testweb;
mod testweb_conditional;
// Certificate generation is the `tls` feature's (on by default).
#[cfg(feature = "tls")]
mod tls;

/// With autotests off, a file in tests/ that is not a module here would never run.
#[test]
fn every_file_beside_this_one_is_a_module() {
    spinneret_tools::test_binary::assert_holds_every_file(env!("CARGO_MANIFEST_DIR"));
}
