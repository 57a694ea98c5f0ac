//! What a finished fetch does to the crawl: robots.txt rules and retries, content seen,
//! redirects followed, links and page requisites admitted, and the URL's end reported to the
//! sink (after its links, so a durable sink never counts a page done whose links it lost).

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use url::Url;

use super::frontier::BackQueueId;
use super::link_key::LinkKeys;
use super::manners::says_later;
use super::revisit::{self, Seen};
use super::schedule::{change_rate, PageHistory, Visit};
use super::sink::{Hop, Scheduled, Sink, Via};
use super::url_seen::url_key;
use super::{origin_key, urlnorm, Crawl, Entry, Job, MAX_ROBOTS_FAILURES, MAX_ROBOTS_REDIRECTS};
use crate::content::PagePrint;
use crate::content::Sketch;
use crate::fetcher::{FetchDone, FetchRequest};
use crate::http::ResponseHead;
use crate::links::{self, LinkKind, Links};
use crate::robots::FetchResult;
use crate::ReturnCode;

/// `budgeted_interval`'s marginal value at which a page is visited once per expected change
/// (`r = 1`: `1 − 2/e`, times the page's mean change interval).
pub(super) const PRICE_AT_ONE_VISIT_PER_CHANGE: f64 = 0.264;
/// The price's step, at most once a second, while revisits come late (or on time).
const PRICE_STEP: f64 = 1.03;

impl<S: Sink> Crawl<S> {
    pub(super) fn robots_done(
        &mut self,
        done: &FetchDone<'_>,
        origin: String,
        queue: BackQueueId,
        hops: u8,
        now: Instant,
    ) {
        self.counters.robots_fetched += 1;
        // A 429 or 503 is a try while robots.txt will be asked again (RFC 9309 §2.3.1.3 and
        // §2.3.1.4: "unreachable" for now, rules wait), as for a page.
        let failures = self.robots_failures.get(&origin).copied().unwrap_or(0);
        let outcome = if says_later(done) && failures + 1 < MAX_ROBOTS_FAILURES {
            ReturnCode::RetryLater
        } else {
            done.outcome
        };
        self.counters.robots_lines.add(outcome, done.status());
        let digest = done.payload_digest();
        let via = Via::new(None, Hop::Prerequisite);
        if let Err(e) = self.sink.store(done, via, outcome, digest, None) {
            self.io_error.get_or_insert(e);
        }
        if done.outcome == ReturnCode::Interrupted {
            // The run is stopping: this says nothing about the server.
            self.frontier.done(queue, now, Duration::ZERO);
            return;
        }
        if done.outcome == ReturnCode::PrivateAddressBlocked && hops == 0 {
            // The host itself is refused: robots.txt is not retried, and its URLs end at once.
            self.block_host(&done.request.url);
            self.frontier.done(queue, now, Duration::ZERO);
            return;
        }
        let status = done.status();
        if done.outcome.is_success() && (300..400).contains(&status) && hops < MAX_ROBOTS_REDIRECTS
        {
            let target = done
                .head
                .and_then(|h| h.location())
                .and_then(|loc| urlnorm::normalize(&done.request.url, loc).ok());
            if let Some(target) = target {
                // Rules found there apply to the original origin; the host stays busy.
                let job = Job::Robots {
                    origin,
                    queue,
                    hops: hops + 1,
                };
                let tag = self.inflight.insert(job) as u64;
                let cookie = self.manners.cookie_for(&target, now);
                self.ready.push_back(FetchRequest {
                    cookie,
                    ..FetchRequest::new(target, tag)
                });
                return;
            }
        }
        // A robots.txt over the body limit still has its first part parsed (RFC 9309 asks
        // for at least 500 KiB), when that part is plain text rather than a cut-off encoding.
        let cut_but_usable = done.outcome == ReturnCode::HttpBodyTooLarge
            && (200..300).contains(&status)
            && done.head.is_some_and(|h| {
                h.content_encodings
                    .iter()
                    .all(|c| *c == crate::http::ContentCoding::Identity)
            });
        let result =
            if (done.outcome.is_success() && !(300..400).contains(&status)) || cut_but_usable {
                let keep = done.content.len().min(crate::robots::MAX_ROBOTS_BYTES);
                FetchResult::Status {
                    status,
                    body: done.content[..keep].to_vec(),
                }
            } else {
                FetchResult::Unreachable
            };
        if let FetchResult::Status { status, body } = &result {
            if (200..300).contains(status) {
                self.sitemaps_from_robots(&origin, body);
            }
        }
        let failed = match &result {
            FetchResult::Status { status, .. } => *status == 429 || *status >= 500,
            FetchResult::Unreachable => true,
        };
        if failed {
            *self.robots_failures.entry(origin.clone()).or_insert(0) += 1;
        } else {
            self.robots_failures.remove(&origin);
        }
        self.robots.fetch_done(&origin, result, now);
        let mut wait = Duration::ZERO;
        if says_later(done) {
            if done.status() == 429 {
                self.manners
                    .slow_down(done.request.url.host_str().unwrap_or_default());
            }
            // The server's own wait, if longer than the back-off: neither robots.txt nor
            // anything else on the host is asked for before it.
            if let Some(after) = self.manners.retry_after(done, now) {
                self.robots.defer(&origin, now + after);
                wait = after;
            }
        }
        let gap = self.gap(done, self.robots.crawl_delay(&origin)).max(wait);
        self.frontier.done(queue, now, gap);
    }

    pub(super) fn page_done(
        &mut self,
        done: &FetchDone<'_>,
        entry: Entry,
        queue: BackQueueId,
        now: Instant,
        cookies_set: bool,
    ) {
        if done.outcome == ReturnCode::Interrupted && self.config.resumable {
            // Cut by the stop: the URL has not ended. Nothing of it is stored, so the
            // resumed run fetches it once, whole.
            self.counters.left_for_resume += 1;
            self.frontier.done(queue, now, Duration::ZERO);
            return;
        }
        self.counters.pages_fetched += 1;
        let origin = origin_key(&entry.url);
        let later = self.manners.later(done, url_key(&entry.url), now);
        let gap = if done.outcome == ReturnCode::PrivateAddressBlocked {
            // No request was made, and none to this host will be.
            self.block_host(&entry.url);
            Duration::ZERO
        } else {
            self.gap(done, self.robots.crawl_delay(&origin))
        };
        // The whole host waits what a 429 or 503 asked, not only the URL.
        let gap = gap.max(later.map_or(Duration::ZERO, |l| l.wait));
        if later.is_some_and(|l| l.again) {
            // Not the URL's end: the try is stored and logged, and the URL goes back to the
            // head of its host's queue, to be fetched once the host may be contacted again.
            self.counters
                .url_lines
                .add(ReturnCode::RetryLater, done.status());
            let digest = done.payload_digest();
            if let Err(e) = self
                .sink
                .store(done, entry.via(), ReturnCode::RetryLater, digest, None)
            {
                self.io_error.get_or_insert(e);
            }
            self.frontier.push_front(queue, entry);
            self.frontier.done(queue, now, gap);
            return;
        }
        self.frontier.done(queue, now, gap);
        let md5 = done.payload_digest();
        // A revisit: compared with what the last fetch left. A 304's payload is the last one.
        let seen = revisit::compare(done, entry.last.as_deref(), md5.as_ref());
        let md5 = match seen {
            Seen::NotModified => entry.last.as_ref().and_then(|l| l.digest),
            _ => md5,
        };
        // Content seen: an exact duplicate of an earlier 2xx page is stored and logged as
        // such, and its links are not scanned again.
        let ok_html = done.outcome.is_success()
            && done
                .head
                .is_some_and(|h| (200..300).contains(&h.status) && is_html(h.content_type()));
        let duplicate = ok_html && md5.is_some_and(|d| !self.content_seen.insert(d));
        let outcome = if duplicate {
            self.counters.duplicate_content += 1;
            ReturnCode::DuplicateContent
        } else {
            done.outcome
        };
        self.counters.url_lines.add(outcome, done.status());
        let content_type = done.head.map(ResponseHead::content_type);
        self.counters.shapes.add(content_type, entry.depth);
        // The page's links enter the frontier before its end is reported: a durable sink
        // then never counts a page done whose links it has not recorded. An unchanged page's
        // links are the ones found before.
        let unchanged = seen == Seen::Unchanged;
        let admitted_before = self.counters.urls_admitted;
        self.outlinks.clear();
        let scanned = self.follow(done, &entry, ok_html, duplicate || unchanged, cookies_set);
        self.report_outlinks(&entry.url);
        // A page that led to new URLs is a hub: its visits buy discovery, not only
        // freshness, and are not rationed by the budget's price.
        let hub = self.counters.urls_admitted > admitted_before;
        let scheduled = Scheduled {
            relevance: scanned.relevance,
            sketch: scanned.sketch,
            fingerprint: scanned.fingerprint,
            ..self.scheduled(&entry, seen, done.head, done.at, hub)
        };
        if let Err(e) = self
            .sink
            .store(done, entry.via(), outcome, md5, Some(&scheduled))
        {
            self.io_error.get_or_insert(e);
        }
    }

    /// Hands the page's outlinks (gathered by `admit_found`) to the sink, sorted and
    /// distinct, right before the page's own record.
    fn report_outlinks(&mut self, page: &Url) {
        if self.outlinks.is_empty() {
            return;
        }
        self.outlinks.sort_unstable();
        self.outlinks.dedup();
        self.sink.outlinks(url_key(page), &self.outlinks);
    }

    /// A URL's end as the crawl database keeps it, at `at` on the wall clock (its fetch's
    /// one wall time, [`FetchDone::at`]): the revisit counted, the schedule told what this
    /// fetch saw (`head`: its response, if any), the next due time decided.
    pub(super) fn scheduled<'e>(
        &mut self,
        entry: &'e Entry,
        seen: Seen,
        head: Option<&ResponseHead>,
        at: SystemTime,
        hub: bool,
    ) -> Scheduled<'e> {
        let at = revisit::unix_secs(at);
        let last = entry.last.as_deref();
        // A sitemap's or feed's priors are no fetch: not a revisit.
        if let Some(last) = last.filter(|l| head.is_some() && l.fetched_at > 0) {
            self.count_revisit(last, seen, at);
        }
        let mut history = last.map_or_else(PageHistory::default, |l| l.history);
        let last_modified = head
            .and_then(|h| h.header("last-modified"))
            .and_then(crate::datetime::parse_http_date)
            .map(revisit::unix_secs);
        let visit = Visit {
            at,
            seen: seen.observation(),
            last_modified,
        };
        let due = self.config.schedule.schedule_priced(
            &mut history,
            last.map(|l| l.fetched_at),
            visit,
            if hub { 0.0 } else { self.price },
        );
        Scheduled {
            last,
            seen,
            at,
            history,
            due,
            depth: entry.depth,
            hop: entry.hop,
            relevance: None,
            sketch: None,
            fingerprint: false,
        }
    }

    /// Counts what a revisit found, and adjusts the revisit budget's price by how late it
    /// came: fetched later than due means more is due than politeness lets the crawl fetch.
    fn count_revisit(&mut self, last: &revisit::LastFetch, seen: Seen, at: u64) {
        let r = &mut self.counters.revisits;
        r.fetched += 1;
        match seen {
            Seen::NotModified => {
                r.not_modified += 1;
                r.bytes_saved += last.payload_len;
            }
            Seen::Unchanged => r.unchanged += 1,
            Seen::Changed => {
                r.changed += 1;
                let t = at.saturating_sub(last.fetched_at) as f64;
                if let Some(rate) = change_rate(&last.history).filter(|&x| x > 0.0) {
                    r.age_secs += (t - (1.0 - (-rate * t).exp()) / rate).max(0.0);
                }
            }
            Seen::Unknown => {}
        }
        if !self.config.continuous || last.due == 0 {
            return;
        }
        // The budget's price follows how late revisits come (Cho & Garcia-Molina's one
        // price for all pages): late means more is due than politeness lets the crawl fetch.
        // It moves at most once a second, so a step has time to show before the next.
        // Not counting the second a continuous crawl takes due URLs behind the clock.
        let late = at.saturating_sub(last.due.saturating_add(super::refresh::DUE_LAG_SECS)) as f64;
        self.lateness = 0.9 * self.lateness + 0.1 * late;
        if at <= self.price_moved_at {
            return;
        }
        self.price_moved_at = at;
        let schedule = &self.config.schedule;
        let min = schedule.min_interval.max(1) as f64;
        // Where a page changing once per interval I keeps that interval.
        let price_for = |interval: u64| PRICE_AT_ONE_VISIT_PER_CHANGE * interval as f64;
        if self.lateness > min / 2.0 {
            self.price = (self.price * PRICE_STEP).min(price_for(schedule.max_interval));
        } else if self.lateness < min / 8.0 {
            // On time: politeness leaves fetches over, which buy freshness when spent.
            self.price = (self.price / PRICE_STEP).max(price_for(schedule.min_interval) / 4.0);
        }
    }

    /// A finished page's redirect target, links or (for a stylesheet) requisites, admitted.
    /// `cookies_set`: the response changed the cookie jar. Returns what scanning an HTML
    /// page found of it (nothing for anything else).
    fn follow(
        &mut self,
        done: &FetchDone<'_>,
        entry: &Entry,
        ok_html: bool,
        duplicate: bool,
        cookies_set: bool,
    ) -> Scanned {
        let none = Scanned::default();
        if !done.outcome.is_success() {
            return none;
        }
        let Some(head) = done.head else {
            return none;
        };
        if (300..400).contains(&head.status) {
            if let Some(loc) = head.location() {
                match urlnorm::normalize(&entry.url, loc) {
                    Ok(target) if entry.hops >= self.config.max_redirects => {
                        self.counters.too_many_redirects += 1;
                        self.log_unfetched(
                            target.as_str(),
                            Via::new(Some(entry.url.as_str()), Hop::Redirect),
                            ReturnCode::TooManyRedirects,
                            None,
                        );
                    }
                    Ok(target) => {
                        self.counters.redirects_followed += 1;
                        let from: Arc<str> = Arc::from(entry.url.as_str());
                        // An embed that redirects is still an embed (its target is what the
                        // page needs), and so still exempt from the scope.
                        // A sitemap's redirect leads to the sitemap, still read as one.
                        let hop = match entry.hop {
                            Hop::Embed | Hop::Sitemap => entry.hop,
                            _ => Hop::Redirect,
                        };
                        let back = cookies_set
                            && target.host_str() == entry.url.host_str()
                            && self.seen.contains(url_key(&target));
                        if back {
                            // A cookie set and a redirect back on its host (often to this
                            // very URL): with the cookie the answer differs, so the URL is
                            // fetched again, still within the redirect hop bound.
                            self.readmit(target, entry.depth, from, entry.hops + 1, hop);
                        } else {
                            self.admit(target, entry.depth, Some(from), entry.hops + 1, hop);
                        }
                    }
                    Err(_) => self.counters.bad_links += 1,
                }
            }
            return none;
        }
        if (200..300).contains(&head.status) {
            if entry.hop == Hop::Sitemap {
                self.read_sitemap(done, entry);
                return none;
            }
            if is_xml(head.content_type()) {
                self.read_feed(done, entry);
                return none;
            }
        }
        // A stylesheet's url()s and @imports are what the pages using it need.
        let ok_css = self.config.page_requisites
            && done.outcome.is_success()
            && (200..300).contains(&head.status)
            && is_css(head.content_type());
        // Embeds are not scanned for more links (only stylesheets, above).
        let scan = ok_html && !duplicate && entry.hop != Hop::Embed;
        if !scan && !ok_css {
            return none;
        }
        if !done.content_complete {
            self.counters.pages_scan_truncated += 1;
        }
        if scan {
            let relevance = self.focus.as_mut().map(|f| f.score(done.content));
            if let Some(score) = relevance {
                self.counters.focus.add(score);
            }
            // Fingerprinted on the loop only when its verdict decides what is followed;
            // otherwise the sink does it, off the loop.
            let ask = self.config.near_duplicates
                && self.config.near_dups_in_sink
                && !self.config.skip_near_duplicate_links;
            let print = if ask {
                None
            } else {
                self.fingerprint(done.content, entry)
            };
            // A near-duplicate's links are mostly its original's: with the trap guard on,
            // they are not followed (the page itself is stored all the same).
            if !(self.config.skip_near_duplicate_links && print.is_some_and(|p| p.near_duplicate)) {
                self.scan_links(done.content, entry);
            }
            Scanned {
                relevance,
                sketch: print.map(|p| p.sketch),
                fingerprint: ask,
            }
        } else {
            let mut found = std::mem::take(&mut self.links);
            links::scan_css(done.content, &mut found);
            self.admit_found(&found, entry, &entry.url);
            self.links = found;
            none
        }
    }

    /// The main text's sketch of a page being scanned, and whether an earlier page of the
    /// partition is a near-duplicate of it (counted).
    fn fingerprint(&mut self, html: &[u8], entry: &Entry) -> Option<PagePrint> {
        if !self.config.near_duplicates {
            return None;
        }
        let host = entry.url.host_str().unwrap_or_default().as_bytes();
        let print = self.near_dups.page(html, host);
        if let Some(e) = self.near_dups.take_error() {
            self.io_error.get_or_insert(e);
        }
        let print = print?;
        self.counters.pages_fingerprinted += 1;
        self.counters.near_duplicates += u64::from(print.near_duplicate);
        Some(print)
    }

    /// Queues again a URL already seen (the filter still applies).
    fn readmit(&mut self, url: Url, depth: u32, referrer: Arc<str>, hops: u8, hop: Hop) {
        if self.passes_filter(&url, depth, hop) {
            self.counters.urls_readmitted += 1;
            self.enqueue(Entry::new(url, depth, Some(referrer), hops, hop));
        }
    }

    fn scan_links(&mut self, html: &[u8], entry: &Entry) {
        let mut found = std::mem::take(&mut self.links);
        links::scan(html, &mut found);
        let declared = found
            .base()
            .and_then(|b| urlnorm::normalize(&entry.url, b).ok());
        self.admit_found(&found, entry, declared.as_ref().unwrap_or(&entry.url));
        self.links = found;
    }

    /// Admits the links of one page (or stylesheet), resolved against `base`: requisites as
    /// embeds when page requisites are on; without them, only what a crawler always followed
    /// (anchors, frames, `<link>`s) as links.
    fn admit_found(&mut self, found: &Links, entry: &Entry, base: &Url) {
        // Made when the first link is admitted: most links of most pages are known already.
        let mut referrer: Option<Arc<str>> = None;
        let admitted_before = self.counters.urls_admitted;
        let cap = self.config.max_links_per_page as u64;
        let mut keys = LinkKeys::new(base);
        for (kind, href) in found.iter() {
            let hop = match kind {
                k if k.is_requisite() && self.config.page_requisites => Hop::Embed,
                LinkKind::Stylesheet | LinkKind::Icon | LinkKind::Preload => Hop::Link,
                k if k.is_requisite() => continue,
                _ => Hop::Link,
            };
            self.counters.links_found += 1;
            // The link graph's arcs: what a page links to, not what it needs to render.
            let outlink = !kind.is_requisite();
            // Most links lead where the crawl has been: known by their key, no parsing.
            let key = keys.as_mut().and_then(|k| k.key(href));
            if let (true, Some(key)) = (outlink, key) {
                self.outlinks.push(key);
            }
            if self.counters.urls_admitted - admitted_before >= cap {
                self.counters.links_over_page_cap += 1;
                if let (true, None, Ok(url)) = (outlink, key, urlnorm::normalize(base, href)) {
                    self.outlinks.push(url_key(&url));
                }
                continue;
            }
            if key.is_some_and(|key| self.seen.contains(key)) {
                self.counters.duplicate_urls += 1;
                continue;
            }
            match urlnorm::normalize(base, href) {
                Ok(url) => {
                    if outlink && key.is_none() {
                        self.outlinks.push(url_key(&url));
                    }
                    let referrer = referrer
                        .get_or_insert_with(|| Arc::from(entry.url.as_str()))
                        .clone();
                    // A focused crawl queues the link by its page's and anchor's relevance.
                    self.admit_entry(Entry {
                        priority: self.focus.as_ref().map(|f| f.priority(href)),
                        ..Entry::new(url, entry.depth + 1, Some(referrer), 0, hop)
                    });
                }
                Err(_) => self.counters.bad_links += 1,
            }
        }
    }
}

/// What scanning an HTML page found, for its crawl.log line and index entry.
#[derive(Clone, Copy, Debug, Default)]
struct Scanned {
    /// A focused crawl's relevance score.
    relevance: Option<f32>,
    /// The main text's sketch (`content::near_dups`), when taken on the loop.
    sketch: Option<Sketch>,
    /// The sink is asked to fingerprint the page.
    fingerprint: bool,
}

/// A feed's or other XML's media type (`application/rss+xml`, `text/xml`, …): read as a feed
/// if it is one.
fn is_xml(content_type: Option<&[u8]>) -> bool {
    content_type.is_some_and(|ct| {
        let essence = ct
            .split(|&b| b == b';')
            .next()
            .unwrap_or_default()
            .trim_ascii();
        crate::discovery::feed::FeedFormat::of_media_type(essence).is_some()
            || essence.len() >= 3 && essence[essence.len() - 3..].eq_ignore_ascii_case(b"xml")
    })
}

fn is_css(content_type: Option<&[u8]>) -> bool {
    content_type.is_some_and(|ct| {
        let ct = ct.trim_ascii_start();
        ct.len() >= 8 && ct[..8].eq_ignore_ascii_case(b"text/css")
    })
}

pub(super) fn is_html(content_type: Option<&[u8]>) -> bool {
    match content_type {
        None => true, // servers that omit it mostly serve HTML; the scanner is safe on anything
        Some(ct) => {
            let ct = ct.trim_ascii_start();
            ct.len() >= 9 && ct[..9].eq_ignore_ascii_case(b"text/html")
                || ct.len() >= 21 && ct[..21].eq_ignore_ascii_case(b"application/xhtml+xml")
        }
    }
}
