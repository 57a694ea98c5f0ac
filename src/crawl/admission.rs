//! What enters the frontier ([`Admission`], ARCHITECTURE §7): the URL filter (scope, trap
//! guards, the per-host cap), the URL-seen set, a page's links keyed straight from their
//! hrefs (`link_key`) and the keys of its outlinks for the link graph, what each host's
//! sitemaps may still bring (§7a), and, for a partitioned crawl, the host splitter (§9b)
//! with the encoding of each admitted entry that the journal and the other partitions are
//! sent. Every key is taken after canonicalization (`canon`: session IDs and tracking
//! parameters stripped), and a page's robots directives (`<meta name="robots">`,
//! `X-Robots-Tag`, `rel="nofollow"`) decide which of its links are followed.
//!
//! Its verdicts: for a page's robots directives, [`Directives`] as the crawl obeys them
//! ([`Admission::directives`]); for a found URL, [`Verdict`]; for one link of a page,
//! [`Link`]; for a URL past both tests, [`Route`]. The crawl journals, queues and counts by
//! them.

use std::collections::HashMap;
use std::time::Instant;

use url::Url;

use super::canon::{Canon, CanonConfig};
use super::entry::Entry;
use super::link_key::LinkKeys;
use super::sink::Hop;
use super::spill::Spillable;
use super::splitter::{Batch, Splitter, SplitterConfig};
use super::url_filter::{FilterConfig, Reject, UrlFilter};
use super::url_seen::UrlSeen;
use super::urlnorm;
use crate::discovery::sitemap::HostBudget;
use crate::http::ResponseHead;
use crate::links::{LinkKind, Links};
use crate::robots::Directives;

/// What becomes of a URL found on a page, in a sitemap or as a redirect's target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    /// New: to be admitted (journaled, then queued here or forwarded: [`Admission::route`]).
    New,
    /// The URL-seen set has it.
    Seen,
    /// The filter refused it (counted by the filter, by reason).
    Refused,
}

/// What becomes of one link of a page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Link {
    /// Not a link a crawl follows: a requisite while page requisites are off.
    Ignored,
    /// Not followed, as robots directives ask: its page's (`nofollow`, `none`), or its own
    /// `rel` (`nofollow`, `ugc`, `sponsored`). A page's requisites are still followed.
    NoFollow,
    /// Past the page's cap on admitted links.
    OverCap,
    /// Already seen, known by its key without parsing it.
    Seen,
    /// It does not normalize (bad syntax, a scheme not crawled).
    Bad,
    /// Parsed: to offer for admission by this hop.
    Found(Url, Hop),
}

/// Where an admitted URL goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Route {
    /// This partition's frontier (counted against its host's cap).
    Here,
    /// The outbox of the partition owning its host.
    Forwarded,
}

/// How a page's links are followed, beyond the filter: the crawl's settings.
#[derive(Clone, Debug)]
pub struct LinkPolicy {
    /// Requisites (images, scripts, stylesheets) are fetched, as embeds.
    pub page_requisites: bool,
    /// Robots directives in pages and their headers are obeyed (`--ignore-robots-meta`
    /// turns it off).
    pub robots_directives: bool,
    /// Links whose `rel` says `nofollow`, `ugc` or `sponsored` are followed all the same
    /// (`--follow-nofollow-links`, Heritrix's default; Nutch and StormCrawler do not).
    pub follow_nofollow_links: bool,
    /// Our product token, the agent an `X-Robots-Tag` prefix may name.
    pub agent: String,
    /// How URL-seen keys are canonicalized.
    pub canon: CanonConfig,
}

impl Default for LinkPolicy {
    fn default() -> Self {
        LinkPolicy {
            page_requisites: true,
            robots_directives: true,
            follow_nofollow_links: false,
            agent: "spinneret".into(),
            canon: CanonConfig::default(),
        }
    }
}

pub(super) struct Admission {
    filter: UrlFilter,
    seen: UrlSeen,
    /// The key function: canonical forms' keys.
    canon: Canon,
    /// A partitioned crawl: where URLs of other partitions' hosts go.
    splitter: Option<Splitter>,
    policy: LinkPolicy,
    /// The directives of the page whose links are being admitted.
    page: Directives,
    /// Reused: the encoding of the entry being admitted, for [`Sink::admitted`] and batches.
    ///
    /// [`Sink::admitted`]: super::sink::Sink::admitted
    encoded: Vec<u8>,
    /// Reused: the URL-seen keys of the page being scanned's outlinks, for the sink's link
    /// graph ([`Sink::outlinks`](super::sink::Sink::outlinks)).
    outlinks: Vec<u64>,
    /// What each host's sitemaps may still bring: files to fetch, URLs to list.
    sitemap_budgets: HashMap<String, HostBudget>,
}

impl Admission {
    pub fn new(filter: FilterConfig, policy: LinkPolicy) -> Admission {
        Admission {
            filter: UrlFilter::new(filter),
            seen: UrlSeen::new(),
            canon: Canon::new(policy.canon.clone()),
            splitter: None,
            policy,
            page: Directives::default(),
            encoded: Vec::with_capacity(256),
            outlinks: Vec::new(),
            sitemap_budgets: HashMap::new(),
        }
    }

    /// A seed (or a `--sitemap`'s URL) widens the scope.
    pub fn add_to_scope(&mut self, url: &Url) {
        self.filter.add_seed(url);
    }

    /// The filter's verdict on a seed.
    pub fn check_seed(&mut self, url: &Url) -> Result<(), Reject> {
        self.filter.check_seed(url)
    }

    /// The filter's verdict on a URL another partition sent: its host's cap.
    pub fn check_host_cap(&mut self, url: &Url) -> Result<(), Reject> {
        self.filter.check_host_cap(url)
    }

    /// Whether the filter passes a URL found at `depth` by `hop` (an embed's is wider); a
    /// refusal is counted by the filter, by reason.
    pub fn passes(&mut self, url: &Url, depth: u32, hop: Hop) -> bool {
        if hop == Hop::Embed {
            self.passes_embed(url)
        } else {
            self.filter.check(url, depth).is_ok()
        }
    }

    /// Whether the filter passes `url` as it would an embed: out of the scope and past the
    /// depth perhaps, the other filters holding (an embed; a sitemap robots.txt names,
    /// perhaps on another host).
    pub fn passes_embed(&mut self, url: &Url) -> bool {
        self.filter.check_embed(url).is_ok()
    }

    /// A URL found: the filter, then the URL-seen set (which remembers it).
    pub fn consider(&mut self, url: &Url, depth: u32, hop: Hop) -> Verdict {
        if !self.passes(url, depth, hop) {
            Verdict::Refused
        } else if self.first_seen(url) {
            Verdict::New
        } else {
            Verdict::Seen
        }
    }

    /// Whether `url` is new to the URL-seen set, which remembers it.
    pub fn first_seen(&mut self, url: &Url) -> bool {
        self.seen.insert(self.canon.url_key(url))
    }

    /// Whether the URL-seen set holds `url`.
    pub fn is_seen(&self, url: &Url) -> bool {
        self.seen.contains(self.canon.url_key(url))
    }

    /// The URL-seen key of `url`: its canonical form's.
    pub fn key(&self, url: &Url) -> u64 {
        self.canon.url_key(url)
    }

    /// The robots directives of a response, as the crawl obeys them: its `X-Robots-Tag`
    /// headers that apply to us and, for a scanned page, its robots `<meta>`s (nothing with
    /// `--ignore-robots-meta`).
    pub fn directives(&self, head: Option<&ResponseHead>, page: Option<&Links>) -> Directives {
        if !self.policy.robots_directives {
            return Directives::default();
        }
        let mut d = Directives::default();
        for (name, value) in head.iter().flat_map(|h| h.headers.iter()) {
            if name.eq_ignore_ascii_case("x-robots-tag") {
                d = d.and(Directives::from_header(value, &self.policy.agent));
            }
        }
        for content in page.iter().flat_map(|l| l.robots_meta()) {
            d = d.and(Directives::from_meta(content));
        }
        d
    }

    /// Keys of a checkpoint's URL-seen set, in increasing order.
    pub fn restore_seen_sorted(&mut self, keys: &[u64]) {
        self.seen.extend_sorted(keys);
    }

    /// The byte form of an entry about to be admitted (as the journal and the partitions
    /// keep it), kept for [`Admission::route`].
    pub fn encode(&mut self, entry: &Entry) -> &[u8] {
        self.encoded.clear();
        entry.encode(&mut self.encoded);
        &self.encoded
    }

    /// Where an admitted URL (its entry last [`Admission::encode`]d) goes: to another
    /// partition's outbox if that partition owns its host, else into this one's frontier,
    /// counted against its host's cap.
    pub fn route(&mut self, url: &Url, now: Instant) -> Route {
        match self.foreign_owner(url) {
            Some(to) => {
                self.forward_encoded(to, now);
                Route::Forwarded
            }
            None => {
                self.filter.admitted(url);
                Route::Here
            }
        }
    }

    /// A URL queued here without [`Admission::route`] (received, or restored): counted
    /// against its host's cap.
    pub fn admitted_here(&mut self, url: &Url) {
        self.filter.admitted(url);
    }

    /// Sends an entry's byte form again, to the partition owning its host (a resume's
    /// entry that had been forwarded before the stop).
    pub fn forward_again(&mut self, bytes: &[u8], url: &Url, now: Instant) {
        self.encoded.clear();
        self.encoded.extend_from_slice(bytes);
        let to = self.owner_of(url);
        self.forward_encoded(to, now);
    }

    fn forward_encoded(&mut self, to: u32, now: Instant) {
        if let Some(s) = &mut self.splitter {
            s.forward(to, &self.encoded, now);
        }
    }

    /// One link of a page, resolved against `base`, `keys` being the page's (the fast
    /// path to its URL-seen key); `rel_nofollow`: its `rel` says not to follow it.
    /// `over_cap`: the page gave its cap of admitted links. The link's key joins the page's
    /// outlinks when the link is one a crawler follows and its URL is known.
    pub fn link(
        &mut self,
        keys: &mut Option<LinkKeys<'_>>,
        (kind, href, rel_nofollow): (LinkKind, &[u8], bool),
        base: &Url,
        over_cap: bool,
    ) -> Link {
        if !kind.is_requisite()
            && (self.page.nofollow
                || rel_nofollow
                    && self.policy.robots_directives
                    && !self.policy.follow_nofollow_links)
        {
            return Link::NoFollow;
        }
        let hop = match kind {
            k if k.is_requisite() && self.policy.page_requisites => Hop::Embed,
            LinkKind::Stylesheet | LinkKind::Icon | LinkKind::Preload => Hop::Link,
            k if k.is_requisite() => return Link::Ignored,
            _ => Hop::Link,
        };
        // The link graph's arcs: what a page links to, not what it needs to render.
        let outlink = !kind.is_requisite();
        // Most links lead where the crawl has been: known by their key, no parsing.
        let key = keys.as_mut().and_then(|k| k.key(href, &self.canon));
        if let (true, Some(key)) = (outlink, key) {
            self.outlinks.push(key);
        }
        if over_cap {
            if let (true, None, Ok(url)) = (outlink, key, urlnorm::normalize(base, href)) {
                self.outlinks.push(self.canon.url_key(&url));
            }
            return Link::OverCap;
        }
        if key.is_some_and(|key| self.seen.contains(key)) {
            return Link::Seen;
        }
        match urlnorm::normalize(base, href) {
            Ok(url) => {
                if outlink && key.is_none() {
                    self.outlinks.push(self.canon.url_key(&url));
                }
                Link::Found(url, hop)
            }
            Err(_) => Link::Bad,
        }
    }

    /// A page's scan begins: its outlinks so far are forgotten, and its directives (from
    /// [`Admission::directives`]) decide which of its links are followed.
    pub fn begin_page(&mut self, directives: Directives) {
        self.outlinks.clear();
        self.page = directives;
    }

    /// The scanned page's outlinks, sorted and distinct (`None`: it had none).
    pub fn outlinks(&mut self) -> Option<&[u64]> {
        if self.outlinks.is_empty() {
            return None;
        }
        self.outlinks.sort_unstable();
        self.outlinks.dedup();
        Some(&self.outlinks)
    }

    /// Whether `host` may have one more sitemap fetched (then it is counted).
    pub fn take_sitemap_file(&mut self, host: &str) -> bool {
        self.sitemap_budget(host).take_file()
    }

    /// Whether `host`'s sitemaps may list one more URL (then it is counted).
    pub fn take_sitemap_url(&mut self, host: &str) -> bool {
        self.sitemap_budget(host).take_url()
    }

    fn sitemap_budget(&mut self, host: &str) -> &mut HostBudget {
        self.sitemap_budgets.entry(host.to_string()).or_default()
    }

    pub fn seen_len(&self) -> usize {
        self.seen.len()
    }

    pub fn seen_bytes_per_url(&self) -> f64 {
        self.seen.bytes_used() as f64 / self.seen.len().max(1) as f64
    }

    pub fn rejections(&self) -> &[(Reject, u64)] {
        self.filter.rejections()
    }

    /// Makes this crawl one partition of a partitioned crawl.
    pub fn partition(&mut self, config: SplitterConfig) {
        self.splitter = Some(Splitter::new(config));
    }

    /// The partition owning `url`'s host, if not this one.
    fn foreign_owner(&self, url: &Url) -> Option<u32> {
        let s = self.splitter.as_ref()?;
        let to = s.owner(url.host_str().unwrap_or_default());
        (to != s.me()).then_some(to)
    }

    pub fn owns(&self, url: &Url) -> bool {
        self.foreign_owner(url).is_none()
    }

    /// The partition that owns `url`'s host (0 when the crawl is not partitioned).
    pub fn owner_of(&self, url: &Url) -> u32 {
        self.splitter
            .as_ref()
            .map_or(0, |s| s.owner(url.host_str().unwrap_or_default()))
    }

    pub fn poll_batch(&mut self, now: Instant, flush: bool) -> Option<Batch> {
        self.splitter.as_mut()?.poll_batch(now, flush)
    }

    pub fn next_batch_due(&self) -> Option<Instant> {
        self.splitter.as_ref()?.next_due()
    }

    pub fn has_outgoing(&self) -> bool {
        self.splitter.as_ref().is_some_and(Splitter::has_pending)
    }
}

#[cfg(test)]
mod tests;
