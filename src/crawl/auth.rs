//! Credentials that stay with their site: which origin (scheme, host, port) gets which
//! credentials, when, and what a 401 means. The bug this owner exists against is curl's
//! CVE-2018-1000007 and wget's CVE-2021-31879: credentials given for one site, sent on a
//! redirect to another.
//!
//! - `--http-user`/`--http-password`, and a `.netrc`'s `default` entry, belong to the seeds'
//!   origins (recorded as seeds are added); a `.netrc` `machine` entry belongs to its host.
//!   No other origin ever gets them, whatever redirects or links lead there.
//! - They are sent after a 401 challenge ([`Auth::answered`]: the URL is fetched once more
//!   with them; a second 401 is the page's outcome, except a Digest `stale=true`, answered
//!   once with the new nonce), and from then on with every request to that origin (Basic as
//!   it was, Digest with the nonce and a counted `nc`); or at once with `--auth-no-challenge`
//!   (Basic, as wget sends it).
//! - `--header` values that are credentials (`Authorization`, `Cookie`,
//!   `Proxy-Authorization`) go to the seeds' origins only ([`Attach::origin_headers`]).
//!
//! Reading challenges and computing answers is `http::auth`; the fetcher writes what
//! [`Auth::attach`] returns. Memory: one entry per seed origin (at most
//! [`MAX_SEED_ORIGINS`]), per origin that challenged, and per URL being answered.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use url::Url;

use crate::http::auth::{self, Answerable, DigestChallenge};
use crate::http::{path_and_query, ResponseHead};

/// Seed origins remembered: past it, further seeds' origins get no credentials (never the
/// other way round: a bound must not widen where credentials go).
pub const MAX_SEED_ORIGINS: usize = 1_000_000;
/// Requests of one URL answering 401s: the credentials, then once more for a stale nonce.
const MAX_AUTH_TRIES: u8 = 2;

/// A user name and password.
#[derive(Clone, PartialEq, Eq)]
pub struct Credential {
    pub user: String,
    pub password: String,
}

impl std::fmt::Debug for Credential {
    // Never the password in a debug print or a panic message.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Credential({:?}, [redacted])", self.user)
    }
}

/// What the crawl is told about logging in.
#[derive(Clone, Debug, Default)]
pub struct AuthConfig {
    /// `--http-user`/`--http-password`: for the seeds' origins.
    pub user: Option<Credential>,
    /// A `.netrc`'s `machine` entries: host (lowercase) → its credential, for that host at
    /// any scheme and port (the file names hosts only).
    pub machines: Arc<HashMap<String, Credential>>,
    /// A `.netrc`'s `default` entry: for the seeds' origins, as `--http-user` (sent to any
    /// host that asks, as curl sends it, it would leak to every site a crawl reaches).
    pub netrc_default: Option<Credential>,
    /// `--auth-no-challenge`: send Basic credentials without waiting for a 401.
    pub no_challenge: bool,
    /// `--header` values that are credentials were given: requests to the seeds' origins
    /// carry them (`FetchRequest::origin_headers`).
    pub origin_headers: bool,
}

impl AuthConfig {
    /// Whether anything here needs the seeds' origins or a 401's attention.
    fn active(&self) -> bool {
        self.user.is_some()
            || !self.machines.is_empty()
            || self.netrc_default.is_some()
            || self.origin_headers
    }
}

/// What a request carries, decided for its URL.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Attach {
    /// The `Authorization` header value.
    pub authorization: Option<String>,
    /// Whether the `--header` credentials go along.
    pub origin_headers: bool,
}

/// What a finished fetch means for logging in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AuthVerdict {
    /// The answer stands: store it as the URL's outcome.
    Stands,
    /// A 401 we can answer: fetch the same URL again with this `Authorization` value (the
    /// challenge itself is not the URL's outcome).
    Retry(String),
}

/// How an origin that challenged us is answered from then on.
enum Established {
    Basic(String),
    Digest {
        challenge: DigestChallenge,
        /// Requests made with this nonce.
        nc: u32,
        cnonce: String,
    },
}

impl Established {
    /// Whether this is how `chosen` is answered: the same scheme, and for Digest the same
    /// realm and algorithm.
    fn answers(&self, chosen: &Answerable) -> bool {
        match (self, chosen) {
            (Established::Basic(_), Answerable::Basic) => true,
            (Established::Digest { challenge, .. }, Answerable::Digest(d)) => {
                challenge.realm == d.realm && challenge.algorithm == d.algorithm
            }
            _ => false,
        }
    }
}

/// The per-origin credential state (see the module's doc).
pub struct Auth {
    config: AuthConfig,
    /// The seeds' origins, as `Url::origin` serializes them.
    seeds: HashSet<String>,
    origins: HashMap<String, Established>,
    /// URLs (by key) answering a 401: requests made so far.
    tries: HashMap<u64, u8>,
}

impl Auth {
    pub fn new(config: AuthConfig) -> Auth {
        Auth {
            config,
            seeds: HashSet::new(),
            origins: HashMap::new(),
            tries: HashMap::new(),
        }
    }

    /// A seed's origin is one the seed credentials belong to.
    pub fn add_seed(&mut self, url: &Url) {
        if self.config.active() && self.seeds.len() < MAX_SEED_ORIGINS {
            self.seeds.insert(origin(url));
        }
    }

    /// The credential that belongs to `url`'s origin, if any: `--http-user`, then the
    /// host's `.netrc` machine, then `.netrc`'s default, the first and last for the seeds'
    /// origins only.
    fn credential(&self, url: &Url, seed: bool) -> Option<&Credential> {
        let c = &self.config;
        let machine = || {
            url.host_str()
                .and_then(|h| c.machines.get(&h.to_ascii_lowercase()))
        };
        if seed {
            c.user
                .as_ref()
                .or_else(machine)
                .or(c.netrc_default.as_ref())
        } else {
            machine()
        }
    }

    /// What a request for `url` carries. Digest counts the request (`nc`).
    pub fn attach(&mut self, url: &Url) -> Attach {
        if !self.config.active() {
            return Attach::default();
        }
        let key = origin(url);
        let seed = self.seeds.contains(&key);
        let origin_headers = self.config.origin_headers && seed;
        let authorization = match self.origins.get_mut(&key) {
            Some(Established::Basic(value)) => Some(value.clone()),
            Some(Established::Digest {
                challenge,
                nc,
                cnonce,
            }) => {
                *nc = nc.saturating_add(1);
                let (nc, challenge, cnonce) = (*nc, challenge.clone(), cnonce.clone());
                self.credential(url, seed)
                    .map(|c| digest(&challenge, c, url, nc, &cnonce))
            }
            None if self.config.no_challenge => self
                .credential(url, seed)
                .map(|c| auth::basic_authorization(&c.user, &c.password)),
            None => None,
        };
        Attach {
            authorization,
            origin_headers,
        }
    }

    /// The verdict on a finished fetch of `url` (key `key`) whose response head is `head`;
    /// `sent`: the request carried our `Authorization`. A 401 whose challenge we can answer
    /// with the credential of its origin is retried once (twice for a stale Digest nonce);
    /// every other answer stands.
    pub fn answered(
        &mut self,
        url: &Url,
        key: u64,
        head: Option<&ResponseHead>,
        sent: bool,
    ) -> AuthVerdict {
        if !self.config.active() {
            return AuthVerdict::Stands;
        }
        let Some(head) = head.filter(|h| h.status == 401) else {
            self.tries.remove(&key);
            return AuthVerdict::Stands;
        };
        let origin_key = origin(url);
        let seed = self.seeds.contains(&origin_key);
        let tries = self.tries.get(&key).copied().unwrap_or(0);
        let chosen = auth::choose(&auth::challenges(head));
        let retry = match (&chosen, self.credential(url, seed)) {
            (Some(chosen), Some(c)) if tries < MAX_AUTH_TRIES => {
                // Sent and refused: wrong credentials, unless the nonce was only stale, or
                // this page asks for another scheme, algorithm or realm than the origin's
                // last (one origin may protect its parts differently).
                let stale = matches!(chosen, Answerable::Digest(d) if d.stale);
                let other = !self
                    .origins
                    .get(&origin_key)
                    .is_some_and(|e| e.answers(chosen));
                (!sent || stale || other).then(|| match chosen {
                    Answerable::Basic => {
                        let value = auth::basic_authorization(&c.user, &c.password);
                        (value.clone(), Established::Basic(value))
                    }
                    Answerable::Digest(d) => {
                        let cnonce = cnonce();
                        let value = digest(d, c, url, 1, &cnonce);
                        let established = Established::Digest {
                            challenge: d.clone(),
                            nc: 1,
                            cnonce,
                        };
                        (value, established)
                    }
                })
            }
            _ => None,
        };
        match retry {
            Some((value, established)) => {
                self.origins.insert(origin_key, established);
                self.tries.insert(key, tries + 1);
                AuthVerdict::Retry(value)
            }
            None => {
                self.tries.remove(&key);
                AuthVerdict::Stands
            }
        }
    }

    /// Forgets a URL that ended without its verdict asked (its fetch was cut).
    pub fn forget(&mut self, key: u64) {
        self.tries.remove(&key);
    }
}

fn digest(challenge: &DigestChallenge, c: &Credential, url: &Url, nc: u32, cnonce: &str) -> String {
    challenge.authorization(&c.user, &c.password, "GET", path_and_query(url), nc, cnonce)
}

/// A fresh client nonce: 16 random bytes in hex.
fn cnonce() -> String {
    let mut bytes = [0u8; 16];
    // Should the system refuse randomness, the nonce is still unique per origin and time
    // enough for the server; its unpredictability is what guards against chosen plaintexts.
    crate::codec::secure_random(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The origin of `url` (scheme, host, port) as a key.
fn origin(url: &Url) -> String {
    url.origin().ascii_serialization()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::{Limits, Progress, ResponseDecoder};

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    fn head(raw: &str) -> ResponseHead {
        let mut d = ResponseDecoder::new(Limits::default());
        d.reset(false);
        let (p, _) = d.process(raw.as_bytes()).unwrap();
        assert!(matches!(p, Progress::Complete), "{p:?}");
        d.head().unwrap().clone()
    }

    fn user() -> AuthConfig {
        AuthConfig {
            user: Some(Credential {
                user: "Aladdin".into(),
                password: "open sesame".into(),
            }),
            ..AuthConfig::default()
        }
    }

    const BASIC_401: &str =
        "HTTP/1.1 401 No\r\nWWW-Authenticate: Basic realm=\"r\"\r\nContent-Length: 0\r\n\r\n";
    const OK: &str = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";

    #[test]
    fn seed_credentials_answer_one_challenge_and_stay_with_their_origin() {
        let mut a = Auth::new(user());
        let page = url("http://a.test:8080/private");
        a.add_seed(&url("http://a.test:8080/"));
        // Nothing before a challenge.
        assert_eq!(a.attach(&page).authorization, None);
        let v = a.answered(&page, 1, Some(&head(BASIC_401)), false);
        let basic = "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==".to_string();
        assert_eq!(v, AuthVerdict::Retry(basic.clone()));
        // The retry is refused too: wrong password, the 401 stands, no loop.
        assert_eq!(
            a.answered(&page, 1, Some(&head(BASIC_401)), true),
            AuthVerdict::Stands
        );
        // The origin now gets them at once; another scheme, port or host never does, even
        // when it challenges.
        assert_eq!(
            a.attach(&url("http://a.test:8080/other")).authorization,
            Some(basic)
        );
        for other in [
            "https://a.test:8080/",
            "http://a.test/",
            "http://b.test:8080/",
        ] {
            let u = url(other);
            assert_eq!(a.attach(&u), Attach::default(), "{other}");
            assert_eq!(
                a.answered(&u, 2, Some(&head(BASIC_401)), false),
                AuthVerdict::Stands,
                "{other}"
            );
        }
        // A 200 ends the URL's tries.
        assert_eq!(
            a.answered(&page, 1, Some(&head(OK)), true),
            AuthVerdict::Stands
        );
        assert!(a.tries.is_empty());
    }

    #[test]
    fn netrc_machines_belong_to_their_host_and_default_to_the_seeds() {
        let cred = |u: &str| Credential {
            user: u.into(),
            password: "p".into(),
        };
        let mut a = Auth::new(AuthConfig {
            machines: Arc::new(HashMap::from([("m.test".to_string(), cred("m"))])),
            netrc_default: Some(cred("d")),
            no_challenge: true,
            ..AuthConfig::default()
        });
        a.add_seed(&url("http://seed.test/"));
        let basic = |u: &str| Some(auth::basic_authorization(u, "p"));
        assert_eq!(
            a.attach(&url("http://M.test:81/x")).authorization,
            basic("m")
        );
        assert_eq!(
            a.attach(&url("http://seed.test/y")).authorization,
            basic("d")
        );
        assert_eq!(a.attach(&url("http://elsewhere.test/")).authorization, None);
    }

    #[test]
    fn digest_counts_its_requests_and_answers_a_stale_nonce_once() {
        let mut a = Auth::new(user());
        let page = url("http://a.test/dir/index.html");
        a.add_seed(&page);
        let challenge = |nonce: &str, stale: bool| {
            head(&format!(
                "HTTP/1.1 401 No\r\nWWW-Authenticate: Basic realm=\"r\", Digest realm=\"r\", \
                 qop=\"auth\", algorithm=SHA-256, nonce=\"{nonce}\", stale={stale}\r\n\
                 Content-Length: 0\r\n\r\n"
            ))
        };
        let AuthVerdict::Retry(first) = a.answered(&page, 7, Some(&challenge("n1", false)), false)
        else {
            panic!("no retry");
        };
        assert!(
            first.starts_with("Digest ") && first.contains("nc=00000001"),
            "{first}"
        );
        assert!(first.contains("nonce=\"n1\"") && first.contains("algorithm=SHA-256"));
        let next = a.attach(&page).authorization.unwrap();
        assert!(next.contains("nc=00000002"), "{next}");
        // The nonce went stale: answered once more with the new one, then the 401 stands.
        let AuthVerdict::Retry(again) = a.answered(&page, 7, Some(&challenge("n2", true)), true)
        else {
            panic!("no retry on a stale nonce");
        };
        assert!(again.contains("nonce=\"n2\"") && again.contains("nc=00000001"));
        assert_eq!(
            a.answered(&page, 7, Some(&challenge("n3", true)), true),
            AuthVerdict::Stands
        );
        // Another part of the origin asks for Basic: answered once, though Digest was sent.
        let other = url("http://a.test/basic");
        assert!(matches!(
            a.answered(&other, 8, Some(&head(BASIC_401)), true),
            AuthVerdict::Retry(v) if v.starts_with("Basic ")
        ));
        assert_eq!(
            a.answered(&other, 8, Some(&head(BASIC_401)), true),
            AuthVerdict::Stands
        );
    }

    #[test]
    fn header_credentials_go_to_the_seeds_origins_only() {
        let mut a = Auth::new(AuthConfig {
            origin_headers: true,
            ..AuthConfig::default()
        });
        a.add_seed(&url("http://a.test/"));
        assert!(a.attach(&url("http://a.test/x")).origin_headers);
        assert!(!a.attach(&url("http://b.test/x")).origin_headers);
        // Nothing to answer a challenge with.
        let u = url("http://a.test/x");
        assert_eq!(
            a.answered(&u, 1, Some(&head(BASIC_401)), false),
            AuthVerdict::Stands
        );
    }
}
