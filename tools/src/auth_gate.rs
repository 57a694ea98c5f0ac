//! HTTP authentication on the server side, for tests: a [`Script`] that answers `401` with a
//! Basic (RFC 7617) or Digest (RFC 7616, `qop=auth`, MD5 or SHA-256) challenge until a
//! request carries the right credentials, then the content. Written apart from the crawler's
//! own `http::auth` (its own parsing and hashing), so a test checks one against the other.
//! The server it runs in records every request's headers (`http_server::RequestRecord`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use base64::Engine as _;
use md5::Md5;
use sha2::{Digest as _, Sha256};

use crate::http_server::{Response, Script};

/// The protection of a [`gate`].
#[derive(Clone, Debug)]
pub enum Protection {
    Basic,
    Digest {
        sha256: bool,
        /// The first request with right credentials gets `401` with `stale=true` and a new
        /// nonce (an expired nonce), the next ones the content.
        stale_once: bool,
    },
}

/// `content` for requests carrying `user`'s `password` as `protection` asks, else `401` with
/// its challenge (realm `realm`).
pub fn gate(
    protection: Protection,
    realm: &str,
    user: &str,
    password: &str,
    content: Script,
) -> Script {
    let (realm, user, password) = (realm.to_string(), user.to_string(), password.to_string());
    let rotated = Arc::new(AtomicBool::new(false));
    Script::for_request(move |_, headers| {
        let authorization = headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("authorization"))
            .map(|(_, v)| v.as_str());
        match &protection {
            Protection::Basic => {
                let want = format!(
                    "Basic {}",
                    base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
                );
                if authorization == Some(want.as_str()) {
                    content.clone()
                } else {
                    challenge(format!("Basic realm=\"{realm}\", charset=\"UTF-8\""))
                }
            }
            Protection::Digest { sha256, stale_once } => {
                let nonce = if rotated.load(Ordering::SeqCst) {
                    "second-nonce"
                } else {
                    "first-nonce"
                };
                let algorithm = if *sha256 { "SHA-256" } else { "MD5" };
                let ask = |stale: bool| {
                    // A Basic offer beside it: the client must take the stronger one.
                    challenge(format!(
                        "Basic realm=\"{realm}\", Digest realm=\"{realm}\", qop=\"auth, auth-int\", \
                         algorithm={algorithm}, nonce=\"{nonce}\", opaque=\"op\\\"aque\"{}",
                        if stale { ", stale=true" } else { "" }
                    ))
                };
                let Some(params) = authorization.and_then(|a| a.strip_prefix("Digest ")) else {
                    return ask(false);
                };
                let p = parse_params(params);
                let get = |k: &str| p.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
                let h = |s: String| -> String {
                    if *sha256 {
                        hex(&Sha256::digest(s.as_bytes()))
                    } else {
                        hex(&Md5::digest(s.as_bytes()))
                    }
                };
                let (Some(uri), Some(nc), Some(cnonce), Some(got), Some(sent_nonce)) = (
                    get("uri"),
                    get("nc"),
                    get("cnonce"),
                    get("response"),
                    get("nonce"),
                ) else {
                    return ask(false);
                };
                let ha1 = h(format!("{user}:{realm}:{password}"));
                let ha2 = h(format!("GET:{uri}"));
                let want = h(format!("{ha1}:{sent_nonce}:{nc}:{cnonce}:auth:{ha2}"));
                let right = got == want
                    && get("username") == Some(&user)
                    && get("qop") == Some("auth")
                    && get("opaque") == Some("op\"aque")
                    && get("algorithm").is_some_and(|a| a.eq_ignore_ascii_case(algorithm));
                if !right {
                    return ask(false);
                }
                if *stale_once && !rotated.swap(true, Ordering::SeqCst) {
                    return challenge(format!(
                        "Digest realm=\"{realm}\", qop=\"auth\", algorithm={algorithm}, \
                         nonce=\"second-nonce\", opaque=\"op\\\"aque\", stale=true"
                    ));
                }
                if sent_nonce != nonce {
                    return ask(true);
                }
                content.clone()
            }
        }
    })
}

fn challenge(value: String) -> Script {
    Script::Respond(
        Response::status(401)
            .header("WWW-Authenticate", &value)
            .header("Content-Type", "text/html")
            .body("<p>log in</p>"),
    )
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `k=v, k="v"` pairs, quoted strings unescaped.
fn parse_params(s: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| *c == ',' || c.is_whitespace()) {
            chars.next();
        }
        let mut name = String::new();
        while let Some(c) = chars.peek().copied().filter(|c| *c != '=') {
            name.push(c);
            chars.next();
        }
        if chars.next().is_none() {
            return out;
        }
        let mut value = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            while let Some(c) = chars.next() {
                match c {
                    '"' => break,
                    '\\' => value.extend(chars.next()),
                    c => value.push(c),
                }
            }
        } else {
            while let Some(c) = chars.peek().copied().filter(|c| *c != ',') {
                value.push(c);
                chars.next();
            }
        }
        out.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_params_are_read_with_their_quotes_undone() {
        let p = parse_params(r#"username="Mu\"fasa", nc=00000001 , qop=auth"#);
        assert_eq!(
            p,
            [
                ("username".to_string(), "Mu\"fasa".to_string()),
                ("nc".to_string(), "00000001".to_string()),
                ("qop".to_string(), "auth".to_string())
            ]
        );
    }
}
