//! [`CrawlConfig`]: what a crawl is told, with the defaults every command starts from (the
//! command line's flags take theirs from the constants here).

use std::time::Duration;

use super::auth::AuthConfig;
use super::canon::CanonConfig;
use super::manners::MannersConfig;
use super::schedule::ScheduleConfig;
use super::url_filter::FilterConfig;

#[derive(Clone, Debug)]
pub struct CrawlConfig {
    pub filter: FilterConfig,
    pub max_pages: Option<u64>,
    pub max_time: Option<Duration>,
    /// Minimum gap between two requests to one host.
    pub delay: Duration,
    /// Gap ≥ this × the duration of the host's last fetch.
    pub delay_factor: f64,
    /// Cap on a robots.txt Crawl-delay.
    pub max_crawl_delay: Duration,
    pub ignore_robots: bool,
    /// Our robots.txt product token.
    pub product_token: String,
    /// Hosts worked on at once: the frontier's active back queues, one per socket of the
    /// fetcher's socket budget, so each can keep its connection between fetches.
    pub back_queues: usize,
    /// Links admitted from one page at most (Heritrix caps outlinks the same way): a page of
    /// millions of links costs bounded memory and time.
    pub max_links_per_page: usize,
    /// Bytes of queued URLs the frontier keeps in memory when it has a spill store.
    pub frontier_ram: usize,
    /// Redirect hops followed from the URL first queued.
    pub max_redirects: u8,
    /// Fetch what pages need to render (images, scripts, stylesheets, CSS `url()`s), even
    /// outside the scope.
    pub page_requisites: bool,
    /// Robots directives in pages (`<meta name="robots">`, `X-Robots-Tag`) are obeyed:
    /// `nofollow` pages' links are not followed (their requisites are), `noindex` pages are
    /// marked (`--ignore-robots-meta` turns it off).
    pub robots_directives: bool,
    /// Links whose `rel` says `nofollow`, `ugc` or `sponsored` are followed all the same
    /// (`--follow-nofollow-links`).
    pub follow_nofollow_links: bool,
    /// How URL-seen keys are canonicalized (`crawl::canon`; `--no-canonicalize`,
    /// `--strip-query-param`).
    pub canon: CanonConfig,
    /// The crawl can be resumed (its sink journals admissions and ends): a fetch cut by a
    /// stop is not ended (no line, no record) but left for the resumed run, and URLs still
    /// queued at a stop stay queued.
    pub resumable: bool,
    /// How often the per-host state (robots.txt rules, next-contact times) goes to the sink
    /// for a resumed crawl (and at a stop); `None`: never.
    pub save_hosts_every: Option<Duration>,
    /// Cookies and "come back later" (`crawl::manners`).
    pub manners: MannersConfig,
    /// Logging in: credentials and the origins they belong to (`crawl::auth`).
    pub auth: AuthConfig,
    /// When a fetched URL is due again (`crawl::schedule`): told to the sink for the crawl
    /// database with every URL's end.
    pub schedule: ScheduleConfig,
    /// Never run out of work: URLs due again come back from the crawl database
    /// (`Crawl::set_due_urls`) and are fetched again, between new links.
    pub continuous: bool,
    /// Fetch and read the sitemaps robots.txt names (`--no-sitemaps` turns it off).
    pub sitemaps: bool,
    /// A focused crawl's topic (`--focus FILE`'s text): pages are scored against it and
    /// their links queued by the score (`crawl::focus`).
    pub focus: Option<std::sync::Arc<[u8]>>,
    /// A page that resembles an earlier one at `near_dup_threshold` is stored but its links
    /// are not followed (`--skip-near-duplicate-links`: a trap guard, `crawl::near_dups`).
    pub skip_near_duplicate_links: bool,
    /// Whether scanned pages get a main text, a sketch and a near-duplicate lookup
    /// (`--no-near-duplicates` turns it off).
    pub near_duplicates: bool,
    /// RAM for the near-duplicate index's sketches before it spills runs.
    pub near_dup_ram: usize,
    /// The resemblance (word 4-shingle Jaccard, estimated) from which a page is a
    /// near-duplicate (`--near-duplicate-threshold`).
    pub near_dup_threshold: f64,
    /// Scanned pages are fingerprinted by the sink, off the event loop (the store's page
    /// worker): the crawl only asks for it ([`Scheduled::fingerprint`](super::sink::Scheduled))
    /// and keeps no index. Not with `skip_near_duplicate_links`, whose verdict decides which
    /// links the crawl follows, so it is taken on the loop.
    pub near_dups_in_sink: bool,
}

/// Redirect hops followed from the URL first queued, by default (`--max-redirect`).
pub const MAX_REDIRECTS: u8 = 10;

/// Default [`CrawlConfig::frontier_ram`].
pub const DEFAULT_FRONTIER_RAM: usize = 32 << 20;
/// Default [`CrawlConfig::max_links_per_page`].
pub const DEFAULT_MAX_LINKS_PER_PAGE: usize = 5_000;
/// Default [`CrawlConfig::delay`] (`-w/--delay`).
pub const DEFAULT_DELAY: Duration = Duration::from_secs(1);
/// Default [`CrawlConfig::delay_factor`].
pub const DEFAULT_DELAY_FACTOR: f64 = 5.0;
/// Default [`CrawlConfig::max_crawl_delay`].
pub const DEFAULT_MAX_CRAWL_DELAY: Duration = Duration::from_secs(30);

impl CrawlConfig {
    /// The defaults for a crawl working on `active_hosts` hosts at once (the fetcher's socket
    /// budget): a 1 s minimum gap per host (and 5 × the host's last fetch time), robots.txt
    /// obeyed with Crawl-delay capped at 30 s, no page or time limit.
    pub fn new(filter: FilterConfig, active_hosts: usize) -> CrawlConfig {
        CrawlConfig {
            filter,
            max_pages: None,
            max_time: None,
            delay: DEFAULT_DELAY,
            delay_factor: DEFAULT_DELAY_FACTOR,
            max_crawl_delay: DEFAULT_MAX_CRAWL_DELAY,
            ignore_robots: false,
            product_token: "spinneret".into(),
            back_queues: active_hosts.max(1),
            max_links_per_page: DEFAULT_MAX_LINKS_PER_PAGE,
            frontier_ram: DEFAULT_FRONTIER_RAM,
            max_redirects: MAX_REDIRECTS,
            page_requisites: true,
            robots_directives: true,
            follow_nofollow_links: false,
            canon: CanonConfig::default(),
            resumable: false,
            save_hosts_every: None,
            manners: MannersConfig::default(),
            auth: AuthConfig::default(),
            schedule: ScheduleConfig::default(),
            continuous: false,
            sitemaps: true,
            focus: None,
            skip_near_duplicate_links: false,
            near_duplicates: true,
            near_dup_ram: crate::content::near_dups::DEFAULT_NEAR_DUP_RAM,
            near_dup_threshold: crate::content::near_dups::DEFAULT_THRESHOLD,
            near_dups_in_sink: false,
        }
    }
}
