//! HTTP authentication, sans-IO: the challenges of a 401's `WWW-Authenticate` fields (RFC
//! 9110 §11: several challenges per field and per response, parameters as tokens or quoted
//! strings), and the `Authorization` value that answers one: Basic (RFC 7617) or Digest (RFC
//! 7616: MD5 and SHA-256, their `-sess` variants, `qop=auth` with `nc` and `cnonce`). Which
//! origin gets which credentials, and when, is the crawl's (`crawl::auth`); this module only
//! reads and computes.
//!
//! Bounded: at most [`MAX_CHALLENGES`] challenges with [`MAX_PARAMS`] parameters each are
//! kept from one response (the head's own bound limits their bytes); what does not parse is
//! skipped, never a panic.

use std::fmt::Write as _;

use base64::Engine as _;
use md5::Md5;
use sha2::Sha256;

use super::ResponseHead;

/// Challenges kept from one response.
pub const MAX_CHALLENGES: usize = 16;
/// Parameters kept per challenge.
pub const MAX_PARAMS: usize = 32;

/// One challenge: its scheme, lowercased, and its parameters (names lowercased, values
/// unquoted). A `token68` (as `Negotiate abc=`) is kept as a parameter with an empty name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Challenge {
    pub scheme: String,
    pub params: Vec<(String, String)>,
}

impl Challenge {
    /// The value of parameter `name` (lowercase), if given.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Every challenge of a response's `WWW-Authenticate` fields, in order.
pub fn challenges(head: &ResponseHead) -> Vec<Challenge> {
    let mut out = Vec::new();
    for (name, value) in head.headers.iter() {
        if name.eq_ignore_ascii_case("www-authenticate") {
            // Field values are bytes; a non-UTF-8 one is read as far as it is text.
            let text = String::from_utf8_lossy(value);
            parse_challenges(&text, &mut out);
        }
    }
    out
}

/// Appends the challenges of one `WWW-Authenticate` field value to `out`.
///
/// The grammar is ambiguous only at a comma: what follows is a parameter of the same
/// challenge if it is `token =`, else a new challenge's scheme.
pub fn parse_challenges(value: &str, out: &mut Vec<Challenge>) {
    let mut s = Scanner {
        b: value.as_bytes(),
        i: 0,
    };
    loop {
        s.skip_ws_and_commas();
        if s.done() || out.len() >= MAX_CHALLENGES {
            return;
        }
        let Some(scheme) = s.token() else {
            // Not a token: skip to the next comma and try again from there.
            s.skip_past_comma();
            continue;
        };
        let mut challenge = Challenge {
            scheme: scheme.to_ascii_lowercase(),
            params: Vec::new(),
        };
        s.skip_ws();
        // A token68 right after the scheme: a token not followed by `=` and a value.
        let here = s.i;
        if let Some(t68) = s.token68() {
            s.skip_ws();
            if s.done() || s.peek() == Some(b',') {
                challenge.params.push((String::new(), t68.to_string()));
            } else {
                s.i = here;
            }
        }
        // Parameters, comma-separated, until one is not `token = value`.
        loop {
            s.skip_ws_and_commas();
            let start = s.i;
            let Some(name) = s.token() else { break };
            s.skip_ws();
            if s.peek() != Some(b'=') {
                s.i = start; // the next challenge's scheme
                break;
            }
            s.i += 1;
            s.skip_ws();
            let value = if s.peek() == Some(b'"') {
                s.quoted()
            } else {
                s.token().unwrap_or_default().to_string()
            };
            if challenge.params.len() < MAX_PARAMS {
                challenge.params.push((name.to_ascii_lowercase(), value));
            }
        }
        out.push(challenge);
    }
}

struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Scanner<'a> {
    fn done(&self) -> bool {
        self.i >= self.b.len()
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.i += 1;
        }
    }

    fn skip_ws_and_commas(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b',')) {
            self.i += 1;
        }
    }

    fn skip_past_comma(&mut self) {
        while let Some(b) = self.peek() {
            self.i += 1;
            if b == b',' {
                return;
            }
        }
    }

    fn take_while(&mut self, f: impl Fn(u8) -> bool) -> Option<&'a str> {
        let start = self.i;
        while self.peek().is_some_and(&f) {
            self.i += 1;
        }
        // Only ASCII bytes are taken, so the slice is UTF-8.
        (self.i > start).then(|| std::str::from_utf8(&self.b[start..self.i]).unwrap_or(""))
    }

    fn token(&mut self) -> Option<&'a str> {
        self.take_while(is_tchar)
    }

    /// RFC 9110 `token68`: `1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="`.
    fn token68(&mut self) -> Option<&'a str> {
        let start = self.i;
        self.take_while(|b| b.is_ascii_alphanumeric() || b"-._~+/".contains(&b))?;
        while self.peek() == Some(b'=') {
            self.i += 1;
        }
        std::str::from_utf8(&self.b[start..self.i]).ok()
    }

    /// A quoted string from its opening quote: its content with `\` escapes undone. One left
    /// open runs to the end of the value.
    fn quoted(&mut self) -> String {
        self.i += 1;
        let mut out = Vec::new();
        while let Some(b) = self.peek() {
            self.i += 1;
            match b {
                b'"' => break,
                b'\\' => {
                    if let Some(next) = self.peek() {
                        out.push(next);
                        self.i += 1;
                    }
                }
                _ => out.push(b),
            }
        }
        String::from_utf8_lossy(&out).into_owned()
    }
}

/// RFC 9110 `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// The `Authorization` value for Basic (RFC 7617): `Basic base64(user:password)`, in UTF-8.
pub fn basic_authorization(user: &str, password: &str) -> String {
    let mut plain = String::with_capacity(user.len() + password.len() + 1);
    plain.push_str(user);
    plain.push(':');
    plain.push_str(password);
    let mut out = String::from("Basic ");
    base64::engine::general_purpose::STANDARD.encode_string(plain, &mut out);
    out
}

/// Digest's hash functions (RFC 7616 §3.3 `algorithm`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DigestAlgorithm {
    Md5,
    Md5Sess,
    Sha256,
    Sha256Sess,
}

impl DigestAlgorithm {
    fn parse(s: &str) -> Option<DigestAlgorithm> {
        Some(match s.to_ascii_uppercase().as_str() {
            "MD5" => DigestAlgorithm::Md5,
            "MD5-SESS" => DigestAlgorithm::Md5Sess,
            "SHA-256" => DigestAlgorithm::Sha256,
            "SHA-256-SESS" => DigestAlgorithm::Sha256Sess,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            DigestAlgorithm::Md5 => "MD5",
            DigestAlgorithm::Md5Sess => "MD5-sess",
            DigestAlgorithm::Sha256 => "SHA-256",
            DigestAlgorithm::Sha256Sess => "SHA-256-sess",
        }
    }

    fn sess(self) -> bool {
        matches!(self, DigestAlgorithm::Md5Sess | DigestAlgorithm::Sha256Sess)
    }

    /// Lowercase hex of the hash of `parts` joined by `:`.
    fn hex(self, parts: &[&str]) -> String {
        fn run<D: sha2::Digest>(parts: &[&str]) -> String {
            let mut d = D::new();
            for (i, p) in parts.iter().enumerate() {
                if i > 0 {
                    d.update(b":");
                }
                d.update(p.as_bytes());
            }
            let mut out = String::with_capacity(64);
            for b in d.finalize() {
                let _ = write!(out, "{b:02x}");
            }
            out
        }
        match self {
            DigestAlgorithm::Md5 | DigestAlgorithm::Md5Sess => run::<Md5>(parts),
            DigestAlgorithm::Sha256 | DigestAlgorithm::Sha256Sess => run::<Sha256>(parts),
        }
    }
}

/// A Digest challenge we can answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DigestChallenge {
    pub realm: String,
    pub nonce: String,
    pub opaque: Option<String>,
    pub algorithm: DigestAlgorithm,
    /// The server offered `qop=auth` (else the RFC 2069 form, without `nc` and `cnonce`).
    pub qop_auth: bool,
    /// `stale=true`: the nonce expired, the credentials were right; ask again with the new one.
    pub stale: bool,
}

impl DigestChallenge {
    /// The challenge as a Digest challenge we can answer: a known algorithm (MD5 when none
    /// is named), a nonce, and `auth` among the qop values when any are offered (`auth-int`
    /// alone would need the request body hashed; we send none, but the RFC leaves it optional).
    pub fn from_challenge(c: &Challenge) -> Option<DigestChallenge> {
        if c.scheme != "digest" {
            return None;
        }
        let algorithm = match c.param("algorithm") {
            Some(a) => DigestAlgorithm::parse(a)?,
            None => DigestAlgorithm::Md5,
        };
        let qop_auth = match c.param("qop") {
            Some(q) => {
                if !q.split(',').any(|v| v.trim().eq_ignore_ascii_case("auth")) {
                    return None;
                }
                true
            }
            None => false,
        };
        Some(DigestChallenge {
            realm: c.param("realm").unwrap_or_default().to_string(),
            nonce: c.param("nonce")?.to_string(),
            opaque: c.param("opaque").map(str::to_string),
            algorithm,
            qop_auth,
            stale: c
                .param("stale")
                .is_some_and(|s| s.eq_ignore_ascii_case("true")),
        })
    }

    /// The `Authorization` value answering this challenge for a `method` request of `uri`
    /// (the request target as sent), the `nc`-th with this nonce, with client nonce `cnonce`.
    pub fn authorization(
        &self,
        user: &str,
        password: &str,
        method: &str,
        uri: &str,
        nc: u32,
        cnonce: &str,
    ) -> String {
        let alg = self.algorithm;
        let mut ha1 = alg.hex(&[user, &self.realm, password]);
        if alg.sess() {
            ha1 = alg.hex(&[&ha1, &self.nonce, cnonce]);
        }
        let ha2 = alg.hex(&[method, uri]);
        let nc = format!("{nc:08x}");
        let response = if self.qop_auth {
            alg.hex(&[&ha1, &self.nonce, &nc, cnonce, "auth", &ha2])
        } else {
            alg.hex(&[&ha1, &self.nonce, &ha2])
        };
        let mut out = String::from("Digest ");
        let _ = write!(
            out,
            "username={}, realm={}, uri={}, algorithm={}, nonce={}",
            quote(user),
            quote(&self.realm),
            quote(uri),
            alg.name(),
            quote(&self.nonce)
        );
        if self.qop_auth {
            let _ = write!(out, ", nc={nc}, cnonce={}, qop=auth", quote(cnonce));
        }
        let _ = write!(out, ", response=\"{response}\"");
        if let Some(opaque) = &self.opaque {
            let _ = write!(out, ", opaque={}", quote(opaque));
        }
        out
    }
}

/// A quoted string, `"` and `\` escaped; control characters dropped (they cannot be sent).
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// What a client can answer a 401 with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answerable {
    Basic,
    Digest(DigestChallenge),
}

/// The strongest challenge we can answer among `challenges`: Digest with SHA-256, then with
/// MD5, then Basic (RFC 7616 §3.7: the client uses the most preferred it supports).
pub fn choose(challenges: &[Challenge]) -> Option<Answerable> {
    let rank = |a: &Answerable| match a {
        Answerable::Digest(d) => match d.algorithm {
            DigestAlgorithm::Sha256 | DigestAlgorithm::Sha256Sess => 0,
            DigestAlgorithm::Md5 | DigestAlgorithm::Md5Sess => 1,
        },
        Answerable::Basic => 2,
    };
    challenges
        .iter()
        .filter_map(|c| match c.scheme.as_str() {
            "basic" => Some(Answerable::Basic),
            "digest" => DigestChallenge::from_challenge(c).map(Answerable::Digest),
            _ => None,
        })
        .min_by_key(rank)
}

/// Appends `request` (a request head as written) to `out` with the value of each
/// `Authorization` and `Proxy-Authorization` field replaced: its scheme kept, the rest
/// `[redacted]` (`Authorization: Basic [redacted]`), so an archive says how the page was
/// reached without holding the secret. Returns whether anything was replaced. Cookies are
/// not credentials a user typed (the jar's cookies stay, as they always were archived).
pub fn redact_credentials(request: &[u8], out: &mut Vec<u8>) -> bool {
    let mut redacted = false;
    let mut rest = request;
    while !rest.is_empty() {
        let end = memchr::memchr(b'\n', rest).map_or(rest.len(), |i| i + 1);
        let (line, tail) = rest.split_at(end);
        rest = tail;
        let Some(colon) = memchr::memchr(b':', line) else {
            out.extend_from_slice(line);
            continue;
        };
        let name = &line[..colon];
        let secret = name.eq_ignore_ascii_case(b"authorization")
            || name.eq_ignore_ascii_case(b"proxy-authorization");
        if !secret {
            out.extend_from_slice(line);
            continue;
        }
        let value = line[colon + 1..].trim_ascii_start();
        let scheme_len = value
            .iter()
            .position(|b| !is_tchar(*b))
            .unwrap_or(value.len());
        out.extend_from_slice(&line[..=colon]);
        out.push(b' ');
        out.extend_from_slice(&value[..scheme_len]);
        if scheme_len > 0 {
            out.push(b' ');
        }
        out.extend_from_slice(b"[redacted]");
        let ending: &[u8] = if line.ends_with(b"\r\n") {
            b"\r\n"
        } else if line.ends_with(b"\n") {
            b"\n"
        } else {
            b""
        };
        out.extend_from_slice(ending);
        redacted = true;
    }
    redacted
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(v: &str) -> Vec<Challenge> {
        let mut out = Vec::new();
        parse_challenges(v, &mut out);
        out
    }

    /// RFC 7617 §2's example.
    #[test]
    fn basic_is_rfc_7617s_example() {
        assert_eq!(
            basic_authorization("Aladdin", "open sesame"),
            "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=="
        );
        // §2.1: UTF-8 (test-user "test" with the password "123£").
        assert_eq!(
            basic_authorization("test", "123\u{a3}"),
            "Basic dGVzdDoxMjPCow=="
        );
    }

    /// RFC 7616 §3.9.1: the two challenges (SHA-256 preferred, then MD5) and the responses
    /// for Mufasa / "Circle of Life".
    #[test]
    fn digest_is_rfc_7616s_example() {
        let sha = r#"Digest realm="http-auth@example.org", qop="auth, auth-int", algorithm=SHA-256, nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS""#;
        let md5 = r#"Digest realm="http-auth@example.org", qop="auth, auth-int", algorithm=MD5, nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS""#;
        let cnonce = "f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ";
        let both = [parse(md5), parse(sha)].concat();
        let Some(Answerable::Digest(chosen)) = choose(&both) else {
            panic!("no digest chosen");
        };
        assert_eq!(chosen.algorithm, DigestAlgorithm::Sha256);
        let auth = chosen.authorization(
            "Mufasa",
            "Circle of Life",
            "GET",
            "/dir/index.html",
            1,
            cnonce,
        );
        assert!(
            auth.contains(
                r#"response="753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1""#
            ),
            "{auth}"
        );
        assert!(
            auth.contains("nc=00000001") && auth.contains("qop=auth"),
            "{auth}"
        );
        assert!(auth.contains(r#"opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS""#));
        let md5 = DigestChallenge::from_challenge(&parse(md5)[0]).unwrap();
        let auth = md5.authorization(
            "Mufasa",
            "Circle of Life",
            "GET",
            "/dir/index.html",
            1,
            cnonce,
        );
        assert!(
            auth.contains(r#"response="8ca523f5e9506fed4657c9700eebdbec""#),
            "{auth}"
        );
    }

    #[test]
    fn several_challenges_in_one_field_with_quoted_commas_and_escapes() {
        let c = parse(
            r#"Newauth realm="apps", type=1, title="Login to \"apps\"", Basic realm="simple, or not""#,
        );
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].scheme, "newauth");
        assert_eq!(c[0].param("title"), Some(r#"Login to "apps""#));
        assert_eq!(c[0].param("type"), Some("1"));
        assert_eq!(c[1].scheme, "basic");
        assert_eq!(c[1].param("realm"), Some("simple, or not"));
        assert_eq!(choose(&c), Some(Answerable::Basic));
        // A token68, and a scheme with no parameters before another.
        let c = parse("Negotiate abc+/==, Bearer, Basic realm=x");
        assert_eq!(c.len(), 3);
        assert_eq!(c[0].param(""), Some("abc+/=="));
        assert_eq!(c[1].scheme, "bearer");
        assert_eq!(c[2].param("realm"), Some("x"));
    }

    #[test]
    fn unanswerable_and_hostile_challenges_give_nothing_and_do_not_panic() {
        // auth-int only, an unknown algorithm, no nonce.
        for v in [
            r#"Digest realm="r", nonce="n", qop="auth-int""#,
            r#"Digest realm="r", nonce="n", algorithm=SHA-512-256"#,
            r#"Digest realm="r""#,
            "Bearer realm=x",
        ] {
            assert_eq!(choose(&parse(v)), None, "{v}");
        }
        for v in [
            "",
            ",,,",
            "=",
            "\"",
            "Basic realm=\"open",
            "Basic ==,=\"x",
            "\u{e9}t\u{e9}",
        ] {
            let c = parse(v);
            assert!(c.len() <= MAX_CHALLENGES);
        }
        let many = "Basic realm=x, ".repeat(100);
        assert_eq!(parse(&many).len(), MAX_CHALLENGES);
        let stale = parse(r#"Digest realm="r", nonce="n2", stale=TRUE"#);
        let d = DigestChallenge::from_challenge(&stale[0]).unwrap();
        assert!(d.stale && !d.qop_auth && d.algorithm == DigestAlgorithm::Md5);
    }

    #[test]
    fn redaction_keeps_the_scheme_and_the_other_fields() {
        let req = b"GET / HTTP/1.1\r\nHost: a\r\nauthorization: Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==\r\nCookie: a=b\r\nProxy-Authorization:Digest username=\"u\"\r\n\r\n";
        let mut out = Vec::new();
        assert!(redact_credentials(req, &mut out));
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "GET / HTTP/1.1\r\nHost: a\r\nauthorization: Basic [redacted]\r\nCookie: a=b\r\nProxy-Authorization: Digest [redacted]\r\n\r\n"
        );
        let mut out = Vec::new();
        assert!(!redact_credentials(
            b"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
            &mut out
        ));
        assert_eq!(out, b"GET / HTTP/1.1\r\nHost: a\r\n\r\n");
    }
}
