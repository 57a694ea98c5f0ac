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
