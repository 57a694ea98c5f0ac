//! HTTP authentication (`http::auth`) on arbitrary bytes: reading `WWW-Authenticate` values
//! never panics and keeps its bounds; any answer computed from what was read is a value a
//! request can carry (no CR, LF or NUL: no header injection from a hostile challenge); and the
//! redaction of a request head keeps every other byte and never leaves a credential's value.
//!
//! Input: the whole of it as one field value (lossily UTF-8), and as a request head.
#![no_main]

use libfuzzer_sys::fuzz_target;
use spinneret::http::auth::{self, Answerable, MAX_CHALLENGES, MAX_PARAMS};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut challenges = Vec::new();
    auth::parse_challenges(&text, &mut challenges);
    assert!(challenges.len() <= MAX_CHALLENGES);
    for c in &challenges {
        assert!(c.params.len() <= MAX_PARAMS);
    }
    let value = match auth::choose(&challenges) {
        Some(Answerable::Digest(d)) => d.authorization("us\"er", "p\\w", "GET", "/a?b", 1, "00ff"),
        Some(Answerable::Basic) => auth::basic_authorization("user", "pw"),
        None => String::new(),
    };
    assert!(
        !value.bytes().any(|b| matches!(b, b'\r' | b'\n' | 0)),
        "{value:?}"
    );

    let mut out = Vec::new();
    if !auth::redact_credentials(data, &mut out) {
        assert_eq!(out, data);
    }
});
