//! The URL filter: crawl scope and trap guards, between normalization and the URL-seen test
//! (ARCHITECTURE §7).
//!
//! It owns the decision "may this normalized URL enter the frontier?" and counts every refusal by
//! reason for the stats. It sees only [`url::Url`]s already normalized by [`crate::crawl::urlnorm`];
//! deduplication is [`crate::crawl::url_seen`]'s job, robots.txt is checked later, just before a fetch.
//!
//! Checks run in a fixed order and the first failure is the one counted: link depth, URL length,
//! denied domain, not-allowed domain, scope, path depth, repeated segments, URL patterns
//! (`--accept-regex`, `--reject-regex`, `--reject-ext`), pages per host. Seeds skip the depth
//! and pattern checks ([`UrlFilter::check_seed`]): as in wget, the pages the user named are
//! fetched even when the patterns are meant for the links found on them.

use std::collections::{HashMap, HashSet};

use regex::Regex;
use url::{Host, Url};

use crate::ReturnCode;

/// Default for [`FilterConfig::max_url_length`].
pub const DEFAULT_MAX_URL_LENGTH: usize = 2048;
/// Default for [`FilterConfig::max_path_depth`].
pub const DEFAULT_MAX_PATH_DEPTH: usize = 32;
/// Default for [`FilterConfig::max_repeated_segments`].
pub const DEFAULT_MAX_REPEATED_SEGMENTS: usize = 2;

/// Which URLs, relative to the seeds, are in scope.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Same host name as a seed, exactly (no subdomains), over http or https and on any port:
    /// sites commonly move between http and https and between ports, the host is what the user
    /// named. Use `allow_domains` with [`Scope::Any`] to take subdomains.
    Host,
    /// Same scheme, host and port as a seed, and a path under the seed's directory (the path up
    /// to and including its last `/`), like `wget --no-parent`.
    Prefix,
    /// Everything (still subject to domain rules and trap guards).
    Any,
}

/// The filter's settings, validated by the CLI.
#[derive(Clone, Debug)]
pub struct FilterConfig {
    pub scope: Scope,
    /// Domain suffixes to allow; empty means any domain.
    pub allow_domains: Vec<String>,
    /// Domain suffixes to refuse; beats `allow_domains`.
    pub deny_domains: Vec<String>,
    /// Longest serialized URL accepted, in bytes.
    pub max_url_length: usize,
    /// Most segments a path may have (the number of `/` in it: `/a/b` and `/a/` have 2).
    pub max_path_depth: usize,
    /// Most identical consecutive path segments (`/a/a/a` has 3): more is a trap.
    pub max_repeated_segments: usize,
    /// Most URLs admitted to the frontier per host name.
    pub max_pages_per_host: Option<u64>,
    /// Greatest link depth from the seeds (seeds are depth 0).
    pub max_depth: Option<u32>,
    /// When set, only URLs this matches (anywhere in the URL) are followed.
    pub accept_regex: Option<Regex>,
    /// URLs this matches are not followed (beats `accept_regex`).
    pub reject_regex: Option<Regex>,
    /// File extensions (without the dot, compared case-insensitively) whose URLs are not
    /// followed: the last path segment's text after its last `.`.
    pub reject_ext: Vec<String>,
}

impl Default for FilterConfig {
    fn default() -> Self {
        FilterConfig {
            scope: Scope::Host,
            allow_domains: Vec::new(),
            deny_domains: Vec::new(),
            max_url_length: DEFAULT_MAX_URL_LENGTH,
            max_path_depth: DEFAULT_MAX_PATH_DEPTH,
            max_repeated_segments: DEFAULT_MAX_REPEATED_SEGMENTS,
            max_pages_per_host: None,
            max_depth: None,
            accept_regex: None,
            reject_regex: None,
            reject_ext: Vec::new(),
        }
    }
}

/// Why the filter refused a URL.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reject {
    OutOfScope,
    DeniedDomain,
    NotAllowedDomain,
    UrlTooLong,
    PathTooDeep,
    RepeatedSegments,
    TooManyPagesPerHost,
    TooDeep,
    /// Refused by `accept_regex`, `reject_regex` or `reject_ext`.
    Pattern,
}

impl Reject {
    /// Every reason, in the order of [`UrlFilter::rejections`].
    pub const ALL: &'static [Reject] = &[
        Reject::OutOfScope,
        Reject::DeniedDomain,
        Reject::NotAllowedDomain,
        Reject::UrlTooLong,
        Reject::PathTooDeep,
        Reject::RepeatedSegments,
        Reject::TooManyPagesPerHost,
        Reject::TooDeep,
        Reject::Pattern,
    ];

    /// The name written in stats and logs.
    pub fn name(self) -> &'static str {
        match self {
            Reject::OutOfScope => "out_of_scope",
            Reject::DeniedDomain => "denied_domain",
            Reject::NotAllowedDomain => "not_allowed_domain",
            Reject::UrlTooLong => "url_too_long",
            Reject::PathTooDeep => "path_too_deep",
            Reject::RepeatedSegments => "repeated_segments",
            Reject::TooManyPagesPerHost => "too_many_pages_per_host",
            Reject::TooDeep => "too_deep",
            Reject::Pattern => "rejected_by_pattern",
        }
    }

    /// The outcome logged when a URL the user gave (a seed) is refused for this reason.
    pub fn return_code(self) -> ReturnCode {
        match self {
            Reject::OutOfScope
            | Reject::DeniedDomain
            | Reject::NotAllowedDomain
            | Reject::TooDeep => ReturnCode::OutOfScope,
            Reject::UrlTooLong => ReturnCode::UrlTooLong,
            Reject::PathTooDeep | Reject::RepeatedSegments => ReturnCode::UrlTrap,
            Reject::TooManyPagesPerHost => ReturnCode::HostPageLimit,
            Reject::Pattern => ReturnCode::UrlRejected,
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

const REASONS: usize = 9;

/// A seed's prefix rule, stored under its host name.
#[derive(Debug)]
struct PrefixRule {
    scheme: String,
    port: Option<u16>,
    /// The seed's path up to and including its last `/`.
    dir: String,
}

/// Scope and trap guards for one crawl.
#[derive(Debug)]
pub struct UrlFilter {
    config: FilterConfig,
    /// Normalized domain rules (lowercase ASCII, no leading/trailing dots).
    allow: Vec<String>,
    deny: Vec<String>,
    /// Scope::Host: seed host names.
    seed_hosts: HashSet<String>,
    /// Scope::Prefix: host name → the rules of the seeds on that host.
    prefixes: HashMap<String, Vec<PrefixRule>>,
    /// URLs admitted per host name; kept only when `max_pages_per_host` is set.
    pages_per_host: HashMap<String, u64>,
    rejections: [(Reject, u64); REASONS],
}

impl UrlFilter {
    pub fn new(config: FilterConfig) -> Self {
        let allow = config
            .allow_domains
            .iter()
            .map(|d| normalize_rule(d))
            .collect();
        let deny = config
            .deny_domains
            .iter()
            .map(|d| normalize_rule(d))
            .collect();
        let mut rejections = [(Reject::OutOfScope, 0); REASONS];
        for (slot, &reason) in rejections.iter_mut().zip(Reject::ALL) {
            slot.0 = reason;
        }
        UrlFilter {
            config,
            allow,
            deny,
            seed_hosts: HashSet::new(),
            prefixes: HashMap::new(),
            pages_per_host: HashMap::new(),
            rejections,
        }
    }

    /// Records a seed so URLs in its scope pass. Call for every seed before checking links.
    pub fn add_seed(&mut self, seed: &Url) {
        let host = seed.host_str().unwrap_or("");
        match self.config.scope {
            Scope::Host => {
                self.seed_hosts.insert(host.to_owned());
            }
            Scope::Prefix => {
                let path = seed.path();
                // Invariant: http(s) paths always start with '/', so rfind finds one; "/" otherwise.
                let dir = path.rfind('/').map_or("/", |i| &path[..=i]);
                self.prefixes
                    .entry(host.to_owned())
                    .or_default()
                    .push(PrefixRule {
                        scheme: seed.scheme().to_owned(),
                        port: seed.port_or_known_default(),
                        dir: dir.to_owned(),
                    });
            }
            Scope::Any => {}
        }
    }

    /// Decides whether `url`, found at link `depth` from the seeds, may enter the frontier.
    /// Counts a refusal under its reason. Does not count the URL as admitted: see [`Self::admitted`].
    pub fn check(&mut self, url: &Url, depth: u32) -> Result<(), Reject> {
        self.count(self.verdict(url, Some(depth)))
    }

    /// As [`Self::check`] for a URL the user gave: link depth and URL patterns do not apply.
    pub fn check_seed(&mut self, url: &Url) -> Result<(), Reject> {
        self.count(self.verdict(url, None))
    }

    /// As [`Self::check`] for a page requisite (an embed): the scope and the link depth do not
    /// apply, so a page renders whatever host serves its images; domain rules, URL patterns,
    /// trap guards and the per-host cap still do.
    pub fn check_embed(&mut self, url: &Url) -> Result<(), Reject> {
        self.count(self.verdict_with(url, Some(0), false))
    }

    /// For a URL another partition's filter passed: only the per-host cap, which the owner of
    /// the host keeps.
    pub fn check_host_cap(&mut self, url: &Url) -> Result<(), Reject> {
        let over = self.config.max_pages_per_host.is_some_and(|max| {
            self.pages_per_host
                .get(url.host_str().unwrap_or(""))
                .is_some_and(|&n| n >= max)
        });
        self.count(if over {
            Err(Reject::TooManyPagesPerHost)
        } else {
            Ok(())
        })
    }

    fn count(&mut self, verdict: Result<(), Reject>) -> Result<(), Reject> {
        if let Err(reason) = verdict {
            self.rejections[reason.index()].1 += 1;
        }
        verdict
    }

    /// Call when a URL really enters the frontier (passed [`Self::check`] and was not seen).
    pub fn admitted(&mut self, url: &Url) {
        if self.config.max_pages_per_host.is_none() {
            return;
        }
        let host = url.host_str().unwrap_or("");
        match self.pages_per_host.get_mut(host) {
            Some(n) => *n += 1,
            None => {
                self.pages_per_host.insert(host.to_owned(), 1);
            }
        }
    }

    /// Refusal counts, one entry per reason in [`Reject::ALL`] order.
    pub fn rejections(&self) -> &[(Reject, u64)] {
        &self.rejections
    }

    /// `depth` is `None` for a seed.
    fn verdict(&self, url: &Url, depth: Option<u32>) -> Result<(), Reject> {
        self.verdict_with(url, depth, true)
    }

    /// `scoped`: whether the scope applies (not to embeds).
    fn verdict_with(&self, url: &Url, depth: Option<u32>, scoped: bool) -> Result<(), Reject> {
        let cfg = &self.config;
        if cfg
            .max_depth
            .is_some_and(|max| depth.is_some_and(|d| d > max))
        {
            return Err(Reject::TooDeep);
        }
        if url.as_str().len() > cfg.max_url_length {
            return Err(Reject::UrlTooLong);
        }
        let host = url.host_str().unwrap_or("");
        let is_domain = matches!(url.host(), Some(Host::Domain(_)));
        if self
            .deny
            .iter()
            .any(|rule| host_matches(host, is_domain, rule))
        {
            return Err(Reject::DeniedDomain);
        }
        if !self.allow.is_empty() && !self.allow.iter().any(|r| host_matches(host, is_domain, r)) {
            return Err(Reject::NotAllowedDomain);
        }
        if scoped && !self.in_scope(url, host) {
            return Err(Reject::OutOfScope);
        }
        let path = url.path();
        if memchr::memchr_iter(b'/', path.as_bytes()).count() > cfg.max_path_depth {
            return Err(Reject::PathTooDeep);
        }
        if longest_repeat(path) > cfg.max_repeated_segments {
            return Err(Reject::RepeatedSegments);
        }
        if depth.is_some() && !self.pattern_allows(url) {
            return Err(Reject::Pattern);
        }
        if let Some(max) = cfg.max_pages_per_host {
            if self.pages_per_host.get(host).is_some_and(|&n| n >= max) {
                return Err(Reject::TooManyPagesPerHost);
            }
        }
        Ok(())
    }

    fn pattern_allows(&self, url: &Url) -> bool {
        let cfg = &self.config;
        let s = url.as_str();
        if cfg.accept_regex.as_ref().is_some_and(|r| !r.is_match(s)) {
            return false;
        }
        if cfg.reject_regex.as_ref().is_some_and(|r| r.is_match(s)) {
            return false;
        }
        if !cfg.reject_ext.is_empty() {
            let last = url.path().rsplit('/').next().unwrap_or("");
            if let Some((_, ext)) = last.rsplit_once('.') {
                if cfg.reject_ext.iter().any(|e| e.eq_ignore_ascii_case(ext)) {
                    return false;
                }
            }
        }
        true
    }

    fn in_scope(&self, url: &Url, host: &str) -> bool {
        match self.config.scope {
            Scope::Any => true,
            Scope::Host => self.seed_hosts.contains(host),
            Scope::Prefix => self.prefixes.get(host).is_some_and(|rules| {
                rules.iter().any(|r| {
                    r.scheme == url.scheme()
                        && r.port == url.port_or_known_default()
                        && url.path().starts_with(&r.dir)
                })
            }),
        }
    }
}

/// Lowercase, IDN → punycode, no leading or trailing dots, so rules compare with `host_str()`.
fn normalize_rule(rule: &str) -> String {
    let trimmed = rule.trim().trim_matches('.');
    match Host::parse(trimmed) {
        Ok(Host::Domain(d)) => d,
        Ok(ip) => ip.to_string(),
        Err(_) => trimmed.to_ascii_lowercase(),
    }
}

/// Whether `host` is `rule` or ends with `.rule` (domains only; addresses must be equal).
fn host_matches(host: &str, is_domain: bool, rule: &str) -> bool {
    if rule.is_empty() {
        return false;
    }
    let host = if is_domain {
        host.trim_end_matches('.')
    } else {
        host
    };
    if host == rule {
        return true;
    }
    is_domain
        && host.len() > rule.len()
        && host.ends_with(rule)
        && host.as_bytes()[host.len() - rule.len() - 1] == b'.'
}

/// The longest run of identical consecutive segments in `path` (bounded by its `/` count).
fn longest_repeat(path: &str) -> usize {
    let mut longest = 0;
    let mut run = 0;
    let mut prev: Option<&str> = None;
    for seg in path.split('/').skip(1) {
        run = if prev == Some(seg) { run + 1 } else { 1 };
        longest = longest.max(run);
        prev = Some(seg);
    }
    longest
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    fn filter(scope: Scope, seeds: &[&str], tweak: impl FnOnce(&mut FilterConfig)) -> UrlFilter {
        let mut cfg = FilterConfig {
            scope,
            ..FilterConfig::default()
        };
        tweak(&mut cfg);
        let mut f = UrlFilter::new(cfg);
        for s in seeds {
            f.add_seed(&u(s));
        }
        f
    }

    fn count(f: &UrlFilter, reason: Reject) -> u64 {
        f.rejections().iter().find(|(r, _)| *r == reason).unwrap().1
    }

    fn run_table(f: &mut UrlFilter, table: &[(&str, u32, Result<(), Reject>)]) {
        for (url, depth, want) in table {
            assert_eq!(f.check(&u(url), *depth), *want, "{url} at depth {depth}");
        }
    }

    #[test]
    fn host_scope() {
        let mut f = filter(Scope::Host, &["http://example.com/start"], |_| {});
        run_table(
            &mut f,
            &[
                ("http://example.com/start", 0, Ok(())),
                ("http://example.com/other/page", 1, Ok(())),
                ("https://example.com/", 1, Ok(())),
                ("http://example.com:8080/", 1, Ok(())),
                ("http://www.example.com/", 1, Err(Reject::OutOfScope)),
                ("http://example.org/", 1, Err(Reject::OutOfScope)),
                ("http://notexample.com/", 1, Err(Reject::OutOfScope)),
            ],
        );
        assert_eq!(count(&f, Reject::OutOfScope), 3);
    }

    #[test]
    fn prefix_scope_is_wget_no_parent() {
        let mut f = filter(Scope::Prefix, &["http://h/a/b.html"], |_| {});
        run_table(
            &mut f,
            &[
                ("http://h/a/b.html", 0, Ok(())),
                ("http://h/a/c", 1, Ok(())),
                ("http://h/a/", 1, Ok(())),
                ("http://h/a/deeper/x?q", 1, Ok(())),
                ("http://h/ab", 1, Err(Reject::OutOfScope)),
                ("http://h/x", 1, Err(Reject::OutOfScope)),
                ("http://h/a", 1, Err(Reject::OutOfScope)),
                ("https://h/a/c", 1, Err(Reject::OutOfScope)),
                ("http://h:8080/a/c", 1, Err(Reject::OutOfScope)),
                ("http://h:80/a/c", 1, Ok(())),
                ("http://g/a/c", 1, Err(Reject::OutOfScope)),
            ],
        );
        // A seed at the root admits the whole origin; several seeds add up.
        let mut f = filter(Scope::Prefix, &["http://h/", "http://g/docs/"], |_| {});
        run_table(
            &mut f,
            &[
                ("http://h/anything/at/all", 1, Ok(())),
                ("http://g/docs/x", 1, Ok(())),
                ("http://g/blog/x", 1, Err(Reject::OutOfScope)),
            ],
        );
    }

    #[test]
    fn any_scope_and_domain_rules() {
        let mut f = filter(Scope::Any, &["http://seed.test/"], |c| {
            c.allow_domains = vec!["test".into(), ".Example.COM.".into()];
            c.deny_domains = vec!["bad.test".into(), "127.0.0.1".into()];
        });
        run_table(
            &mut f,
            &[
                ("http://a.test/", 1, Ok(())),
                ("http://test/", 1, Ok(())),
                ("http://deep.sub.test./", 1, Ok(())),
                ("http://contest/", 1, Err(Reject::NotAllowedDomain)),
                ("http://example.com/", 1, Ok(())),
                ("http://www.example.com/", 1, Ok(())),
                ("http://notexample.com/", 1, Err(Reject::NotAllowedDomain)),
                ("http://bad.test/", 1, Err(Reject::DeniedDomain)),
                ("http://x.bad.test/", 1, Err(Reject::DeniedDomain)),
                ("http://notbad.test/", 1, Ok(())),
                ("http://127.0.0.1/", 1, Err(Reject::DeniedDomain)),
                ("http://10.0.0.1/", 1, Err(Reject::NotAllowedDomain)),
            ],
        );
        assert_eq!(count(&f, Reject::DeniedDomain), 3);
        assert_eq!(count(&f, Reject::NotAllowedDomain), 3);
        // An address rule never matches by suffix.
        let mut f = filter(Scope::Any, &[], |c| c.deny_domains = vec!["0.0.1".into()]);
        assert_eq!(f.check(&u("http://127.0.0.1/"), 1), Ok(()));
        // Deny beats the seed's own scope.
        let mut f = filter(Scope::Host, &["http://a.test/"], |c| {
            c.deny_domains = vec!["a.test".into()]
        });
        assert_eq!(f.check(&u("http://a.test/"), 0), Err(Reject::DeniedDomain));
    }

    #[test]
    fn trap_guards() {
        let mut f = filter(Scope::Any, &[], |c| {
            c.max_url_length = 40;
            c.max_path_depth = 4;
            c.max_repeated_segments = 2;
            c.max_depth = Some(3);
        });
        run_table(
            &mut f,
            &[
                ("http://h/a/b/c/d", 3, Ok(())),
                ("http://h/a/b/c/", 3, Ok(())),
                ("http://h/x", 4, Err(Reject::TooDeep)),
                ("http://h/0123456789012345678901234567890", 1, Ok(())),
                (
                    "http://h/01234567890123456789012345678901",
                    1,
                    Err(Reject::UrlTooLong),
                ),
                ("http://h/a/b/c/d/e", 1, Err(Reject::PathTooDeep)),
                ("http://h/a/b/c/d/", 1, Err(Reject::PathTooDeep)),
                ("http://h/a/a/b", 1, Ok(())),
                ("http://h/a/a/a", 1, Err(Reject::RepeatedSegments)),
                ("http://h/x/a/a/a", 1, Err(Reject::RepeatedSegments)),
                ("http://h/a/b/a/b", 1, Ok(())),
                ("http://h////x", 1, Err(Reject::RepeatedSegments)),
            ],
        );
        for (reason, n) in [
            (Reject::TooDeep, 1),
            (Reject::UrlTooLong, 1),
            (Reject::PathTooDeep, 2),
            (Reject::RepeatedSegments, 3),
            (Reject::OutOfScope, 0),
        ] {
            assert_eq!(count(&f, reason), n, "{reason:?}");
        }
    }

    #[test]
    fn pages_per_host_counts_only_admitted() {
        let mut f = filter(Scope::Any, &[], |c| c.max_pages_per_host = Some(2));
        let a1 = u("http://a/1");
        // Checks alone do not use up the budget.
        for _ in 0..5 {
            assert_eq!(f.check(&a1, 1), Ok(()));
        }
        f.admitted(&a1);
        f.admitted(&u("https://a:8443/2"));
        assert_eq!(
            f.check(&u("http://a/3"), 1),
            Err(Reject::TooManyPagesPerHost)
        );
        assert_eq!(f.check(&u("http://b/1"), 1), Ok(()));
        assert_eq!(count(&f, Reject::TooManyPagesPerHost), 1);
    }

    #[test]
    fn url_patterns_apply_to_links_not_seeds() {
        let mut f = filter(Scope::Any, &[], |c| {
            c.accept_regex = Some(Regex::new("/docs/").unwrap());
            c.reject_regex = Some(Regex::new(r"\?print=").unwrap());
            c.reject_ext = vec!["pdf".into(), "ZIP".into()];
        });
        run_table(
            &mut f,
            &[
                ("http://h/docs/a.html", 1, Ok(())),
                ("http://h/blog/a.html", 1, Err(Reject::Pattern)),
                ("http://h/docs/a?print=1", 1, Err(Reject::Pattern)),
                ("http://h/docs/a.PDF", 1, Err(Reject::Pattern)),
                ("http://h/docs/a.zip?x=1", 1, Err(Reject::Pattern)),
                ("http://h/docs/x.pdf/a", 1, Ok(())),
            ],
        );
        assert_eq!(count(&f, Reject::Pattern), 4);
        // A seed is what the user asked for: the patterns are for the links found on it.
        assert_eq!(f.check_seed(&u("http://h/blog/")), Ok(()));
        assert_eq!(Reject::Pattern.return_code(), ReturnCode::UrlRejected);
        // The seed check still applies the scope and length rules.
        let mut f = filter(Scope::Host, &["http://a.test/"], |c| c.max_url_length = 20);
        assert_eq!(f.check_seed(&u("http://b.test/")), Err(Reject::OutOfScope));
        assert_eq!(
            f.check_seed(&u("http://a.test/0123456789")),
            Err(Reject::UrlTooLong)
        );
    }

    #[test]
    fn reject_names_are_distinct_and_complete() {
        let names: HashSet<&str> = Reject::ALL.iter().map(|r| r.name()).collect();
        assert_eq!(names.len(), REASONS);
        let f = filter(Scope::Any, &[], |_| {});
        let order: Vec<Reject> = f.rejections().iter().map(|(r, _)| *r).collect();
        assert_eq!(order, Reject::ALL);
        for (i, r) in Reject::ALL.iter().enumerate() {
            assert_eq!(r.index(), i);
        }
    }
}
