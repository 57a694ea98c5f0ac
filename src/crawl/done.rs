//! What a finished fetch does to the crawl: robots.txt rules and retries, content seen,
//! redirects followed, links and page requisites admitted, and the URL's end reported to the
//! sink (after its links, so a durable sink never counts a page done whose links it lost).
//! The owners decide ([`HostGate`](super::host_gate::HostGate) what the answer means for the
//! host, [`PageContent`](super::page_content::PageContent) what the page is,
//! [`Admission`](super::admission::Admission) what its links are); this is the order it is
//! done in.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use url::Url;

use super::admission::Link;
use super::auth::AuthVerdict;
use super::entry::Entry;
use super::frontier::BackQueueId;
use super::host_gate::{self, RobotsDone};
use super::link_key::LinkKeys;
use super::revisit::{self, Seen};
use super::revisit_budget::{Cost, Ended};
use super::sink::{Hop, Scheduled, Sink, Via};
use super::url_seen::url_key;
use super::{urlnorm, Crawl, Job};
use crate::content::Sketch;
use crate::fetcher::{FetchDone, FetchRequest};
use crate::http::ResponseHead;
use crate::links::{self, Links};
use crate::ReturnCode;

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
        let outcome = self.gate.robots_outcome(&origin, done);
        self.counters.robots_lines.add(outcome, done.status());
        let digest = done.payload_digest();
        let via = Via::new(None, Hop::Prerequisite);
        if let Err(e) = self.sink.store(done, via, outcome, digest, None) {
            self.io_error.get_or_insert(e);
        }
        match self.gate.robots_done(&origin, done, hops, now) {
            RobotsDone::Redirect(target) => {
                // Rules found there apply to the original origin; the host stays busy.
                let cookie = self.gate.cookie_for(&target, now);
                let attach = self.auth.attach(&target);
                let job = Job::Robots {
                    origin,
                    queue,
                    hops: hops + 1,
                    held: None,
                };
                let host = target.host_str().unwrap_or_default().to_string();
                let tag = self.inflight.insert(job) as u64;
                let req = FetchRequest {
                    cookie,
                    authorization: attach.authorization,
                    origin_headers: attach.origin_headers,
                    ..FetchRequest::new(target, tag)
                };
                if self.frontier.host(queue) == Some(host.as_str()) {
                    // Its own host, which the job keeps busy: at once.
                    self.ready.push_back(req);
                } else {
                    // Another host's request: in that host's turn (`robots_hops`).
                    self.hops.push(req, host, now);
                }
            }
            RobotsDone::Done { gap, sitemaps } => {
                if let Some(body) = host_gate::rules(done).filter(|_| sitemaps) {
                    self.sitemaps_from_robots(&origin, body);
                }
                self.frontier.done(queue, now, gap);
            }
        }
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
        let key = url_key(&entry.url);
        let sent = done.request.authorization.is_some();
        if let AuthVerdict::Retry(authorization) =
            self.auth.answered(&entry.url, key, done.head, sent)
        {
            // A 401 we can answer: the same URL once more, with credentials, before anything
            // else of its host (which stays busy); the challenge is not the URL's outcome.
            self.counters.auth_retries += 1;
            let url = entry.url.clone();
            let cookie = self.gate.cookie_for(&url, now);
            let origin_headers = done.request.origin_headers;
            let tag = self.inflight.insert(Job::Page { entry, queue }) as u64;
            self.ready.push_back(FetchRequest {
                cookie,
                authorization: Some(authorization),
                origin_headers,
                more_for_host: done.request.more_for_host,
                validators: done.request.validators.clone(),
                ..FetchRequest::new(url, tag)
            });
            return;
        }
        self.counters.pages_fetched += 1;
        let answered = self.gate.page_done(&entry.url, key, done, now);
        if answered.again {
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
            self.frontier.done(queue, now, answered.gap);
            return;
        }
        self.frontier.done(queue, now, answered.gap);
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
        let duplicate = ok_html && md5.is_some_and(|d| self.content.seen_before(d));
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
        // Its headers' robots directives hold for any page; a scanned page's meta tags add
        // to them.
        let headed = self.admission.directives(done.head, None);
        self.admission.begin_page(headed);
        let scanned = self.follow(done, &entry, ok_html, duplicate || unchanged, cookies_set);
        let noindex = headed.noindex || scanned.noindex;
        self.counters.pages_noindex += u64::from(noindex);
        let page_key = self.admission.key(&entry.url);
        if let Some(targets) = self.admission.outlinks() {
            // Sorted and distinct, right before the page's own record.
            self.sink.outlinks(page_key, targets);
        }
        // A page that led to new URLs is a hub: its visits buy discovery, not only
        // freshness, priced by how many it finds. One fetch of the host costs the fetch's
        // time and the politeness gap after it.
        let new_urls = self.counters.urls_admitted.saturating_sub(admitted_before);
        let cost = Cost {
            new_urls: u32::try_from(new_urls).unwrap_or(u32::MAX),
            period: (answered.gap + done.timings.total).as_secs_f64(),
        };
        let scheduled = Scheduled {
            relevance: scanned.relevance,
            sketch: scanned.sketch,
            fingerprint: scanned.fingerprint,
            noindex,
            ..self.scheduled(&entry, seen, done.head, done.at, cost)
        };
        if let Err(e) = self
            .sink
            .store(done, entry.via(), outcome, md5, Some(&scheduled))
        {
            self.io_error.get_or_insert(e);
        }
    }

    /// A URL's end as the crawl database keeps it, at `at` on the wall clock (its fetch's
    /// one wall time, [`FetchDone::at`]): the schedule told what this fetch saw (`head`: its
    /// response, if any), the revisit counted, the next due time decided.
    pub(super) fn scheduled<'e>(
        &mut self,
        entry: &'e Entry,
        seen: Seen,
        head: Option<&ResponseHead>,
        at: SystemTime,
        cost: Cost,
    ) -> Scheduled<'e> {
        let at = revisit::unix_secs(at);
        let last = entry.last.as_deref();
        let ended = Ended {
            host: entry.url.host_str().unwrap_or_default(),
            period: cost.period,
            new_urls: cost.new_urls,
        };
        let decided =
            self.revisits
                .decide(last, seen, head, at, ended, &mut self.counters.revisits);
        Scheduled {
            last,
            seen,
            at,
            history: decided.history,
            due: decided.due,
            depth: entry.depth,
            hop: entry.hop,
            relevance: None,
            sketch: None,
            fingerprint: false,
            noindex: false,
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
                            && self.admission.is_seen(&target);
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
            let host = entry.url.host_str().unwrap_or_default().as_bytes();
            let judged = self.content.judge(done.content, host);
            if let Some(score) = judged.relevance {
                self.counters.focus.add(score);
            }
            if let Some(e) = judged.error {
                self.io_error.get_or_insert(e);
            }
            if let Some(print) = judged.print {
                self.counters.pages_fingerprinted += 1;
                self.counters.near_duplicates += u64::from(print.near_duplicate);
            }
            let noindex = if judged.follow_links {
                self.scan_links(done, entry)
            } else {
                false
            };
            Scanned {
                relevance: judged.relevance,
                sketch: judged.print.map(|p| p.sketch),
                fingerprint: judged.ask_sink,
                noindex,
            }
        } else {
            let mut found = std::mem::take(&mut self.links);
            links::scan_css(done.content, &mut found);
            self.admit_found(&found, entry, &entry.url);
            self.links = found;
            none
        }
    }

    /// Queues again a URL already seen (the filter still applies).
    fn readmit(&mut self, url: Url, depth: u32, referrer: Arc<str>, hops: u8, hop: Hop) {
        if self.admission.passes(&url, depth, hop) {
            self.counters.urls_readmitted += 1;
            self.enqueue(Entry::new(url, depth, Some(referrer), hops, hop));
        }
    }

    /// Scans an HTML page and admits its links as its robots directives allow; returns
    /// whether they say `noindex`.
    fn scan_links(&mut self, done: &FetchDone<'_>, entry: &Entry) -> bool {
        let mut found = std::mem::take(&mut self.links);
        links::scan(done.content, &mut found);
        let directives = self.admission.directives(done.head, Some(&found));
        self.counters.pages_nofollow += u64::from(directives.nofollow);
        self.admission.begin_page(directives);
        let declared = found
            .base()
            .and_then(|b| urlnorm::normalize(&entry.url, b).ok());
        self.admit_found(&found, entry, declared.as_ref().unwrap_or(&entry.url));
        self.links = found;
        directives.noindex
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
        for (kind, href, nofollow) in found.iter_rel() {
            let over_cap = self.counters.urls_admitted - admitted_before >= cap;
            let link = self
                .admission
                .link(&mut keys, (kind, href, nofollow), base, over_cap);
            self.counters.links_found += u64::from(link != Link::Ignored);
            match link {
                Link::Ignored => {}
                Link::NoFollow => self.counters.links_nofollow += 1,
                Link::OverCap => self.counters.links_over_page_cap += 1,
                Link::Seen => self.counters.duplicate_urls += 1,
                Link::Bad => self.counters.bad_links += 1,
                Link::Found(url, hop) => {
                    let referrer = referrer
                        .get_or_insert_with(|| Arc::from(entry.url.as_str()))
                        .clone();
                    // A focused crawl queues the link by its page's and anchor's relevance.
                    self.admit_entry(Entry {
                        priority: self.content.priority(href),
                        ..Entry::new(url, entry.depth + 1, Some(referrer), 0, hop)
                    });
                }
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
    /// Its robots directives say `noindex`.
    noindex: bool,
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
