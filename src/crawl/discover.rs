//! Discovery beyond links, the crawl's side (ARCHITECTURE §7a): the sitemaps robots.txt names
//! or the user gives are fetched (hop `M`) and read, and every feed a crawl fetches is read;
//! what they list is admitted like a page's links, with its dates as the schedule's priors.
//!
//! The readers are `discovery`'s (sans-IO, bounded); here are the crawl's decisions: which
//! sitemaps to fetch (per-host budgets, index nesting), which listed URLs are admitted (the
//! sitemap protocol's scope rule, then the crawl's filter), and where in the frontier they go
//! (a sitemap's `priority`: 0.5 and up as depth 1, the rest as depth 2).

use std::sync::Arc;
use std::time::SystemTime;

use url::Url;

use super::entry::Entry;
use super::revisit::{self, LastFetch};
use super::schedule::PageHistory;
use super::sink::{Hop, Sink};
use super::Crawl;
use crate::discovery::feed::FeedReader;
use crate::discovery::sitemap::{SitemapItem, SitemapReader, SitemapRef, UrlEntry};
use crate::fetcher::FetchDone;

/// Index levels followed below a sitemap robots.txt names or the user gives: the protocol
/// allows none (an index lists sitemaps, not indexes); one more is tolerated.
pub const MAX_SITEMAP_NESTING: u32 = 2;

/// What the schedule starts from for a URL a sitemap or feed dated: its last change, and the
/// sitemap's `changefreq` as the first interval. No fetch is known (`fetched_at` 0).
fn prior(
    lastmod: Option<SystemTime>,
    every: Option<std::time::Duration>,
) -> Option<Box<LastFetch>> {
    if lastmod.is_none() && every.is_none() {
        return None;
    }
    Some(Box::new(LastFetch {
        history: PageHistory {
            last_change: lastmod.map(revisit::unix_secs),
            interval: every.map_or(0, |d| d.as_secs()),
            ..PageHistory::default()
        },
        ..LastFetch::default()
    }))
}

impl<S: Sink> Crawl<S> {
    /// Queues the sitemaps a robots.txt `body` names (`origin`'s), unless `--no-sitemaps`.
    pub(super) fn sitemaps_from_robots(&mut self, origin: &str, body: &[u8]) {
        if !self.config.sitemaps {
            return;
        }
        let Ok(robots) = Url::parse(&format!("{origin}/robots.txt")) else {
            return;
        };
        for line in crate::robots::sitemap_lines(body) {
            if let Some(s) = SitemapRef::from_robots(&robots, &line) {
                let referrer: Arc<str> = Arc::from(robots.as_str());
                self.queue_sitemap(s.url, 0, Some(referrer));
            }
        }
    }

    /// Queues a sitemap the user gave (`--sitemap URL`): its host joins the scope.
    pub fn add_sitemap(&mut self, url: Url) {
        self.admission.add_to_scope(&url);
        self.queue_sitemap(url, 0, None);
    }

    /// A `--sitemap` URL given again when a crawl resumes (as [`Crawl::add_seed_again`]):
    /// fetched if the journal never held it, else dropped quietly, its host's sitemap budget
    /// untouched.
    pub fn add_sitemap_again(&mut self, url: Url) {
        if !self.admission.is_seen(&url) {
            self.add_sitemap(url);
        }
    }

    /// Queues a sitemap to fetch, within its host's budget; `referrer` is the robots.txt that
    /// named it (or its index's, inherited), which widens the scope rule.
    fn queue_sitemap(&mut self, url: Url, nesting: u32, referrer: Option<Arc<str>>) {
        if !self
            .admission
            .take_sitemap_file(url.host_str().unwrap_or_default())
        {
            self.counters.discovery.sitemaps_over_budget += 1;
            return;
        }
        // Out of the crawl's scope perhaps (robots.txt may name another host's), but the
        // other filters hold.
        if !self.admission.passes_embed(&url) {
            return;
        }
        self.queue_new(Entry::new(url, nesting, referrer, 0, Hop::Sitemap));
    }

    /// Reads a fetched sitemap and admits what it lists.
    pub(super) fn read_sitemap(&mut self, done: &FetchDone<'_>, entry: &Entry) {
        self.counters.discovery.sitemaps_read += 1;
        let named_by_robots = entry
            .referrer
            .as_deref()
            .filter(|r| r.ends_with("/robots.txt"))
            .and_then(|r| Url::parse(r).ok());
        let sitemap = SitemapRef {
            url: done.request.url.clone(),
            named_by_robots,
            depth: entry.depth.min(u32::from(u8::MAX)) as u8,
        };
        let mut reader = SitemapReader::new(done.content, &sitemap);
        let from: Arc<str> = Arc::from(entry.url.as_str());
        // Bounded: the reader returns at most MAX_ITEMS items and then ends.
        loop {
            match reader.next_item() {
                Ok(Some(SitemapItem::Page(page))) => self.admit_listed(page, &from),
                Ok(Some(SitemapItem::Sitemap { sitemap: child, .. })) => {
                    if entry.depth < MAX_SITEMAP_NESTING {
                        // A robots.txt-named index's children inherit its wider scope.
                        let referrer = child
                            .named_by_robots
                            .map(|r| Arc::from(r.as_str()))
                            .or_else(|| Some(from.clone()));
                        self.queue_sitemap(child.url, entry.depth + 1, referrer);
                    }
                }
                Ok(None) => break,
                Err(_) => {
                    self.counters.discovery.unreadable += 1;
                    break;
                }
            }
        }
    }

    /// Admits a URL a sitemap lists, within its host's budget, with its dates as priors.
    fn admit_listed(&mut self, page: UrlEntry, sitemap: &Arc<str>) {
        if !self
            .admission
            .take_sitemap_url(page.url.host_str().unwrap_or_default())
        {
            self.counters.discovery.urls_over_budget += 1;
            return;
        }
        self.counters.discovery.sitemap_urls += 1;
        // The sitemap's priority places it among the front queues (depth 1 or 2).
        let depth = if page.priority_or_default() >= 0.5 {
            1
        } else {
            2
        };
        let last = prior(page.lastmod, page.changefreq.and_then(|c| c.period()));
        self.admit_entry(Entry {
            last,
            ..Entry::new(page.url, depth, Some(sitemap.clone()), 0, Hop::Link)
        });
    }

    /// Reads a fetched feed and admits its items' links, with their dates as priors.
    pub(super) fn read_feed(&mut self, done: &FetchDone<'_>, entry: &Entry) {
        let mut reader = FeedReader::new(done.content, &done.request.url);
        let from: Arc<str> = Arc::from(entry.url.as_str());
        let mut any = false;
        // Bounded: the reader returns at most MAX_ITEMS items and then ends.
        loop {
            match reader.next_item() {
                Ok(Some(item)) => {
                    any = true;
                    self.counters.discovery.feed_items += 1;
                    let last = prior(item.date, None);
                    self.admit_entry(Entry {
                        last,
                        ..Entry::new(item.url, entry.depth + 1, Some(from.clone()), 0, Hop::Link)
                    });
                }
                Ok(None) => break,
                Err(_) => {
                    // Not a feed at all (XML of another kind) is no failure.
                    if reader.format().is_some() {
                        self.counters.discovery.unreadable += 1;
                    }
                    break;
                }
            }
        }
        if any || reader.format().is_some() {
            self.counters.discovery.feeds_read += 1;
        }
    }
}
