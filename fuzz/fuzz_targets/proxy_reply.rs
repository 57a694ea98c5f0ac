//! A proxy's replies on arbitrary bytes: `proxy::Handshake` fed what a hostile SOCKS5 or HTTP
//! proxy sends, as the fetcher reads it (never more than `wants()` at a time), and the reply
//! parsers alone. No panic; `wants()` is at least 1; a parser's `Done` never claims more bytes
//! than it was given; and the verdict does not depend on how the bytes were split.
//!
//! Input: `[flags, chunk, reply bytes...]`. Flags bits 0-1 pick the handshake: SOCKS5 without
//! credentials, SOCKS5 with them, SOCKS5 to an address, HTTP CONNECT. Reads are at most
//! `chunk + 1` bytes; the same bytes are fed again one at a time and must end the same way.
#![no_main]

use libfuzzer_sys::fuzz_target;
use spinneret::proxy::{connect, socks5, Credentials, Destination, Handshake, Parsed, Progress};

fn handshake(kind: u8) -> Handshake {
    let credentials = Credentials {
        user: "user".into(),
        password: "pass".into(),
    };
    let name = Destination::Name("example.com".into());
    match kind & 3 {
        0 => Handshake::socks5(name, 80, None),
        1 => Handshake::socks5(name, 443, Some(credentials)),
        2 => Handshake::socks5(Destination::Ip("192.0.2.1".parse().unwrap()), 80, None),
        _ => Handshake::http_connect("example.com", 443, Some(&credentials), "fuzz"),
    }
}

/// Feeds `bytes` in reads of at most `chunk`: the verdict, and the bytes taken.
fn run(kind: u8, bytes: &[u8], chunk: usize) -> (String, usize) {
    let mut h = handshake(kind);
    let mut at = 0;
    // Bounded: every pass takes at least one byte.
    while at < bytes.len() {
        let n = h.to_send().len();
        h.sent(n);
        let want = h.wants();
        assert!(want >= 1);
        let take = want.min(chunk).min(bytes.len() - at);
        match h.received(&bytes[at..at + take]) {
            Ok(Progress::More) | Ok(Progress::Next(_)) => at += take,
            Ok(Progress::Done) => return ("done".into(), at + take),
            Err(e) => return (format!("{e:?}"), at + take),
        }
    }
    (format!("more at {:?}", h.step()), at)
}

fuzz_target!(|data: &[u8]| {
    let [flags, chunk, bytes @ ..] = data else {
        return;
    };
    let (verdict, _) = run(*flags, bytes, usize::from(*chunk) + 1);
    let (one_by_one, _) = run(*flags, bytes, 1);
    // One byte at a time can only fail earlier on a byte past a reply the larger read took.
    if !(verdict == "Protocol" && one_by_one != "Protocol") {
        assert_eq!(verdict, one_by_one, "split {} changed the verdict", usize::from(*chunk) + 1);
    }
    for parsed in [
        socks5::parse_connect_reply(bytes).map(|p| p.map_done(|_| ())),
        socks5::parse_auth_reply(bytes).map(|p| p.map_done(|_| ())),
        socks5::parse_method(bytes, true).map(|p| p.map_done(|_| ())),
        connect::parse_connect_reply(bytes).map(|p| p.map_done(|_| ())),
    ] {
        match parsed {
            Ok(Parsed::Done((), used)) => assert!(used <= bytes.len()),
            Ok(Parsed::NeedMore(n)) => assert!(n >= 1),
            Err(_) => {}
        }
    }
});
