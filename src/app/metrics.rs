//! What `--metrics` serves: the crawl's figures in the OpenMetrics text format a Prometheus
//! scrapes. Each event loop publishes a snapshot of its figures on a shared [`MetricsBoard`]
//! about once a second ([`MetricsSlot`], from the drive loop); the writer thread keeps its
//! own gauges (WARC files and bytes, the last commit); a scrape encodes the latest of both,
//! with the process's RSS and CPU, through `prometheus-client` (a collector that reads the
//! board). So a loop pays one snapshot a second, nothing per fetch, and never waits for a
//! scrape; a scrape waits at most for a loop's copy under the board's lock.
//!
//! Per-loop figures carry a `loop` label (and a cluster node's a `node` label); the writer's
//! and the process's are the whole crawl's.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;

use crate::app::process::{process_usage, resident_bytes};
use crate::crawl::RevisitCounters;
use crate::fetcher::stats::LoopStats;
use crate::store::archive::writer_gauges::WriterGauges;
use crate::ReturnCode;

/// How often a loop publishes its snapshot: well under any sane scrape interval.
pub const PUBLISH_INTERVAL: Duration = Duration::from_secs(1);

/// The most a finished crawl waits for the scrape that sees its final figures.
pub const FINAL_SCRAPE_WAIT: Duration = Duration::from_secs(30);

/// The OpenMetrics media type (what Prometheus asks for first).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// What a crawl (rather than a plain fetch list) adds to a loop's figures.
#[derive(Clone, Debug, Default)]
pub struct CrawlFigures {
    pub pages: u64,
    pub robots: u64,
    /// crawl.log lines with a response, by status class 1xx..5xx.
    pub status_classes: [u64; 5],
    /// URLs queued in memory, and spilled to disk.
    pub queued_ram: u64,
    pub queued_disk: u64,
    pub urls_seen: u64,
    pub revisits: RevisitCounters,
}

/// One loop's figures at one moment.
#[derive(Clone, Debug, Default)]
pub struct LoopMetrics {
    pub stats: LoopStats,
    pub crawl: CrawlFigures,
}

/// When scrapes came: a finished crawl waits for one more only if someone has been scraping.
#[derive(Debug, Default)]
struct Scrapes {
    count: u64,
    last: Option<Instant>,
    /// The time between the last two.
    interval: Option<Duration>,
}

/// The figures a scrape reads: every loop's latest snapshot, the writer's gauges.
#[derive(Debug)]
pub struct MetricsBoard {
    loops: Mutex<Vec<LoopMetrics>>,
    /// A cluster node's id, as the `node` label.
    node: Option<String>,
    writer: OnceLock<Arc<WriterGauges>>,
    scrapes: Mutex<Scrapes>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic elsewhere left the data as it was: figures are still figures.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl MetricsBoard {
    pub fn new(loops: usize, node: Option<String>) -> Arc<MetricsBoard> {
        Arc::new(MetricsBoard {
            loops: Mutex::new(vec![LoopMetrics::default(); loops]),
            node,
            writer: OnceLock::new(),
            scrapes: Mutex::new(Scrapes::default()),
        })
    }

    /// The handle loop `slot` publishes through.
    pub fn slot(self: &Arc<Self>, slot: usize) -> MetricsSlot {
        MetricsSlot {
            board: self.clone(),
            slot,
            next: Instant::now(),
        }
    }

    /// The writer's gauges (set once, when the output exists).
    pub fn set_writer(&self, gauges: Arc<WriterGauges>) {
        let _ = self.writer.set(gauges);
    }

    fn publish(&self, slot: usize, m: LoopMetrics) {
        if let Some(s) = lock(&self.loops).get_mut(slot) {
            *s = m;
        }
    }

    /// Counts a scrape served at `now`.
    pub fn scraped(&self, now: Instant) {
        let mut s = lock(&self.scrapes);
        s.count += 1;
        s.interval = s.last.map(|l| now.saturating_duration_since(l));
        s.last = Some(now);
    }

    pub fn scrape_count(&self) -> u64 {
        lock(&self.scrapes).count
    }

    /// How long a finished crawl should wait for a scrape after its final figures: none if
    /// nobody has scraped, else three times the scrape interval seen (a scrape may have just
    /// missed the end, and a loaded scraper runs late), at most [`FINAL_SCRAPE_WAIT`]. It
    /// ends at the next scrape, usually within one interval.
    pub fn final_wait(&self) -> Duration {
        let s = lock(&self.scrapes);
        match (s.count, s.interval) {
            (0, _) => Duration::ZERO,
            (_, Some(i)) => (i * 3).min(FINAL_SCRAPE_WAIT),
            (_, None) => FINAL_SCRAPE_WAIT,
        }
    }

    /// The OpenMetrics text of the latest figures.
    pub fn encode(self: &Arc<Self>) -> String {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(BoardView(self.clone())));
        let mut out = String::with_capacity(16 * 1024);
        // Writing to a String cannot fail; an encoder error would be ours.
        let _ = prometheus_client::encoding::text::encode(&mut out, &registry);
        out
    }
}

/// A loop's publishing handle.
pub struct MetricsSlot {
    board: Arc<MetricsBoard>,
    slot: usize,
    next: Instant,
}

impl MetricsSlot {
    /// Whether a snapshot is due at `now` (one per [`PUBLISH_INTERVAL`]).
    pub fn due(&self, now: Instant) -> bool {
        now >= self.next
    }

    pub fn publish(&mut self, now: Instant, m: LoopMetrics) {
        self.next = now + PUBLISH_INTERVAL;
        self.board.publish(self.slot, m);
    }
}

/// The collector: reads the board at each scrape.
#[derive(Debug)]
struct BoardView(Arc<MetricsBoard>);

type Labels = Vec<(&'static str, String)>;

/// One metric family: its samples, by label set.
struct Family {
    name: &'static str,
    help: &'static str,
    counter: bool,
    samples: Vec<(Labels, f64)>,
}

impl Family {
    fn new(name: &'static str, help: &'static str, counter: bool) -> Family {
        Family {
            name,
            help,
            counter,
            samples: Vec::new(),
        }
    }

    fn encode(&self, encoder: &mut DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        if self.samples.is_empty() {
            return Ok(());
        }
        let kind = if self.counter {
            ConstCounter::new(0u64).metric_type()
        } else {
            ConstGauge::new(0i64).metric_type()
        };
        let mut metric = encoder.encode_descriptor(self.name, self.help, None, kind)?;
        for (labels, v) in &self.samples {
            let sample = metric.encode_family(labels)?;
            if self.counter {
                ConstCounter::new(*v as u64).encode(sample)?;
            } else {
                ConstGauge::new(*v).encode(sample)?;
            }
        }
        Ok(())
    }
}

/// `(name, help, counter?, value of a loop)` for the per-loop families with no other label.
type LoopFamily = (&'static str, &'static str, bool, fn(&LoopMetrics) -> f64);

const LOOP_FAMILIES: &[LoopFamily] = &[
    (
        "spinneret_pages",
        "Pages fetched (not robots.txt).",
        true,
        |m| m.crawl.pages as f64,
    ),
    (
        "spinneret_robots_fetches",
        "robots.txt fetches.",
        true,
        |m| m.crawl.robots as f64,
    ),
    (
        "spinneret_received_bytes",
        "Response bytes received, as on the wire.",
        true,
        |m| m.stats.bytes_received as f64,
    ),
    ("spinneret_dns_queries", "DNS queries sent.", true, |m| {
        m.stats.dns_queries_sent as f64
    }),
    (
        "spinneret_dns_names_waited",
        "Host names that waited for a place among those being resolved (--dns-names-in-flight).",
        true,
        |m| m.stats.dns_names_waited as f64,
    ),
    (
        "spinneret_dns_failures",
        "Fetches that ended on a DNS failure.",
        true,
        |m| {
            ReturnCode::ALL
                .iter()
                .filter(|c| c.name().starts_with("Dns"))
                .map(|&c| m.stats.outcomes.get(c))
                .sum::<u64>() as f64
        },
    ),
    (
        "spinneret_connections_opened",
        "Connections opened.",
        true,
        |m| m.stats.conns_opened as f64,
    ),
    (
        "spinneret_revisits",
        "Revisits of pages fetched before.",
        true,
        |m| m.crawl.revisits.fetched as f64,
    ),
    (
        "spinneret_revisits_not_modified",
        "Revisits answered 304.",
        true,
        |m| m.crawl.revisits.not_modified as f64,
    ),
    (
        "spinneret_revisits_changed",
        "Revisits that found the page changed.",
        true,
        |m| m.crawl.revisits.changed as f64,
    ),
    (
        "spinneret_revisit_saved_bytes",
        "Bytes 304s saved against full answers.",
        true,
        |m| m.crawl.revisits.bytes_saved as f64,
    ),
    ("spinneret_live_fetches", "Fetches in flight.", false, |m| {
        m.stats.live as f64
    }),
    (
        "spinneret_open_connections",
        "Connections open.",
        false,
        |m| m.stats.conns_open as f64,
    ),
    (
        "spinneret_urls_seen",
        "URLs in the URL-seen set.",
        false,
        |m| m.crawl.urls_seen as f64,
    ),
    (
        "spinneret_buffered_bytes",
        "Response bytes held in memory.",
        false,
        |m| m.stats.buffered_bytes as f64,
    ),
    (
        "spinneret_spooled_bytes",
        "Response bytes in spool files.",
        false,
        |m| m.stats.spooled_bytes as f64,
    ),
];

impl Collector for BoardView {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let board = &self.0;
        let loops = lock(&board.loops).clone();
        let base = |k: usize| -> Labels {
            let mut l = vec![("loop", k.to_string())];
            if let Some(node) = &board.node {
                l.push(("node", node.clone()));
            }
            l
        };
        let with = |k: usize, name: &'static str, v: &str| -> Labels {
            let mut l = base(k);
            l.push((name, v.to_string()));
            l
        };
        let mut families = Vec::new();

        let mut fetches = Family::new("spinneret_fetches", "Fetches ended, by outcome.", true);
        let mut classes = Family::new(
            "spinneret_responses",
            "URLs answered, by HTTP status class.",
            true,
        );
        let mut queued = Family::new(
            "spinneret_queued_urls",
            "URLs waiting, in RAM or on disk.",
            false,
        );
        let mut fresh = Family::new(
            "spinneret_estimated_freshness",
            "Share of compared revisits that found the page as stored.",
            false,
        );
        for (k, m) in loops.iter().enumerate() {
            for &code in ReturnCode::ALL {
                let n = m.stats.outcomes.get(code);
                if n > 0 || code == ReturnCode::Success {
                    fetches
                        .samples
                        .push((with(k, "outcome", code.name()), n as f64));
                }
            }
            for (i, &n) in m.crawl.status_classes.iter().enumerate() {
                let class = format!("{}xx", i + 1);
                classes.samples.push((with(k, "class", &class), n as f64));
            }
            queued
                .samples
                .push((with(k, "where", "ram"), m.crawl.queued_ram as f64));
            queued
                .samples
                .push((with(k, "where", "disk"), m.crawl.queued_disk as f64));
            if let Some(f) = m.crawl.revisits.freshness() {
                fresh.samples.push((base(k), f));
            }
        }
        families.extend([fetches, classes, queued, fresh]);
        for &(name, help, counter, value) in LOOP_FAMILIES {
            let mut f = Family::new(name, help, counter);
            for (k, m) in loops.iter().enumerate() {
                f.samples.push((base(k), value(m)));
            }
            families.push(f);
        }

        // The whole crawl's: the writer's and the process's.
        let node: Labels = board.node.iter().map(|n| ("node", n.clone())).collect();
        let w = board.writer.get().map(|g| g.read()).unwrap_or_default();
        let mut whole = |name, help, counter, v: f64| {
            let mut f = Family::new(name, help, counter);
            f.samples.push((node.clone(), v));
            families.push(f);
        };
        whole(
            "spinneret_loops",
            "Event loops (partitions) of this process.",
            false,
            loops.len() as f64,
        );
        whole(
            "spinneret_warc_files",
            "WARC files begun.",
            true,
            w.warc_files as f64,
        );
        whole(
            "spinneret_warc_written_bytes",
            "Bytes written to WARC files.",
            true,
            w.warc_bytes as f64,
        );
        whole(
            "spinneret_crawl_log_written_bytes",
            "Bytes written to crawl.log.",
            true,
            w.crawl_log_bytes as f64,
        );
        if let Some(ms) = w.committed_unix_ms {
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default()
                .as_millis() as u64;
            whole(
                "spinneret_checkpoint_age_seconds",
                "Seconds since the journal's last commit (what a resume starts from).",
                false,
                now.saturating_sub(ms) as f64 / 1000.0,
            );
        }
        let (cpu, peak) = process_usage();
        whole(
            "process_cpu_seconds",
            "CPU time used, user and system.",
            true,
            cpu.as_secs_f64(),
        );
        whole(
            "process_resident_memory_bytes",
            "Resident set size.",
            false,
            resident_bytes().unwrap_or(peak) as f64,
        );
        whole(
            "spinneret_peak_resident_memory_bytes",
            "Peak resident set size.",
            false,
            peak as f64,
        );

        for f in &families {
            f.encode(&mut encoder)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(text: &str, series: &str) -> Option<f64> {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
    }

    #[test]
    fn a_scrape_shows_every_loops_figures_and_the_writers() {
        let board = MetricsBoard::new(2, Some("n1".into()));
        let mut m = LoopMetrics::default();
        m.stats.outcomes.add(ReturnCode::Success);
        m.stats.outcomes.add(ReturnCode::DnsNxDomain);
        m.stats.bytes_received = 12_345;
        m.crawl.pages = 7;
        m.crawl.status_classes[1] = 6;
        m.crawl.queued_disk = 3;
        board.slot(1).publish(Instant::now(), m);
        let gauges = Arc::new(WriterGauges::default());
        board.set_writer(gauges);
        let text = board.encode();
        assert!(text.ends_with("# EOF\n"), "{text}");
        assert_eq!(
            value(&text, r#"spinneret_pages_total{loop="1",node="n1"}"#),
            Some(7.0),
            "{text}"
        );
        assert_eq!(
            value(&text, r#"spinneret_pages_total{loop="0",node="n1"}"#),
            Some(0.0)
        );
        assert_eq!(
            value(
                &text,
                r#"spinneret_fetches_total{loop="1",node="n1",outcome="DnsNxDomain"}"#
            ),
            Some(1.0)
        );
        assert_eq!(
            value(&text, r#"spinneret_dns_failures_total{loop="1",node="n1"}"#),
            Some(1.0)
        );
        assert_eq!(
            value(
                &text,
                r#"spinneret_responses_total{loop="1",node="n1",class="2xx"}"#
            ),
            Some(6.0)
        );
        assert_eq!(
            value(
                &text,
                r#"spinneret_queued_urls{loop="1",node="n1",where="disk"}"#
            ),
            Some(3.0)
        );
        assert_eq!(
            value(
                &text,
                r#"spinneret_received_bytes_total{loop="1",node="n1"}"#
            ),
            Some(12_345.0)
        );
        assert_eq!(value(&text, r#"spinneret_loops{node="n1"}"#), Some(2.0));
        assert!(
            value(&text, r#"process_resident_memory_bytes{node="n1"}"#).is_some_and(|v| v > 0.0)
        );
        // No commit yet: no checkpoint age; no compared revisit: no freshness.
        assert!(!text.contains("checkpoint_age") && !text.contains("estimated_freshness"));
        // Every family is typed and described once.
        assert_eq!(text.matches("# TYPE spinneret_pages counter").count(), 1);
        assert_eq!(text.matches("# HELP spinneret_queued_urls ").count(), 1);
    }

    #[test]
    fn the_grafana_dashboard_asks_only_for_series_we_serve() {
        let board = MetricsBoard::new(1, None);
        let mut m = LoopMetrics::default();
        m.crawl.revisits.not_modified = 1;
        board.slot(0).publish(Instant::now(), m);
        let text = board.encode();
        let mut served: Vec<String> = Vec::new();
        for line in text.lines().filter_map(|l| l.strip_prefix("# TYPE ")) {
            let (name, kind) = line.split_once(' ').unwrap();
            served.push(match kind {
                "counter" => format!("{name}_total"),
                _ => name.to_string(),
            });
        }
        // Served once the journal has committed (not in this board).
        served.push("spinneret_checkpoint_age_seconds".into());
        let dashboard = include_str!("../../docs/grafana-dashboard.json");
        let mut asked = 0;
        for expr in dashboard.split("\"expr\": \"").skip(1) {
            let expr = expr.split('"').next().unwrap();
            for word in expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
                if word.starts_with("spinneret_") || word.starts_with("process_") {
                    asked += 1;
                    assert!(
                        served.iter().any(|s| s == word),
                        "{word} is not served: {served:?}"
                    );
                }
            }
        }
        assert!(asked >= 14, "{asked}");
    }

    #[test]
    fn a_finished_crawl_waits_only_for_someone_scraping() {
        let board = MetricsBoard::new(1, None);
        assert_eq!(board.final_wait(), Duration::ZERO);
        let t = Instant::now();
        board.scraped(t);
        assert_eq!(board.final_wait(), FINAL_SCRAPE_WAIT);
        board.scraped(t + Duration::from_secs(2));
        assert_eq!(board.final_wait(), Duration::from_secs(6));
        board.scraped(t + Duration::from_secs(62));
        assert_eq!(board.final_wait(), FINAL_SCRAPE_WAIT);
        assert_eq!(board.scrape_count(), 3);
        // Without a node, no node label.
        assert!(board
            .encode()
            .contains("spinneret_pages_total{loop=\"0\"} 0"));
    }
}
