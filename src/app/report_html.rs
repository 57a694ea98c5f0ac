//! The page `spinneret report` writes: one self-contained HTML file (inline CSS, inline SVG
//! charts from [`super::svg_chart`], no script, nothing fetched from anywhere), made from
//! what [`super::report_data`] read. A chart whose data the crawl did not keep (an older
//! crawl, a killed one without stats.json) says "not recorded" instead of failing.

use std::fmt::Write as _;

use crate::app::report_data::{LogHistogram, LogSummary, StatsCounts, STATUS_CLASSES};
use crate::app::svg_chart::{bar_chart, escape, line_chart, not_recorded, si, Series, XAxis};
use crate::store::archive::timeline::Timeline;
use crate::ReturnCode;

/// Hosts listed in each top-hosts chart.
const TOP_HOSTS: usize = 20;
/// Outcomes drawn over time (the most frequent; the rest as one line).
const TOP_OUTCOMES: usize = 6;

/// The titles of the charts, in page order: a test finds each by its `<title>`.
pub const CHART_TITLES: [&str; 13] = [
    "Pages per second",
    "Bytes received per second",
    "Outcomes over time",
    "HTTP status classes over time",
    "MIME types",
    "Depth",
    "Fetch time",
    "Page size",
    "Top hosts by pages",
    "Top hosts by errors",
    "Top hosts by bytes",
    "Queue and fetches in flight",
    "Memory",
];

/// Everything the page shows.
pub struct ReportInput<'a> {
    /// The crawl's directory, as given.
    pub dir: &'a str,
    /// `running`, `stopped`, `finished`, or `unknown` (no crawl state).
    pub state: &'a str,
    pub log: &'a LogSummary,
    pub stats: &'a StatsCounts,
    pub timeline: Option<&'a Timeline>,
    /// The crawl's command line, or why it is not known.
    pub args: Result<Vec<String>, String>,
    /// When the report was made (RFC 3339).
    pub made_at: &'a str,
}

const STYLE: &str = "body{font-family:sans-serif;margin:24px auto;max-width:1000px;color:#222;\
background:#fff}h1{font-size:22px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ccc}\
table{border-collapse:collapse}td,th{padding:2px 12px 2px 0;text-align:left;font-size:14px}\
td.n{text-align:right;font-variant-numeric:tabular-nums}pre{background:#f4f4f4;padding:8px;\
white-space:pre-wrap;word-break:break-all;font-size:13px}svg.chart{display:block;width:100%;\
height:auto;margin:8px 0 18px}svg text{font-family:sans-serif;font-size:12px;fill:#333}\
svg text.ct{font-size:15px;font-weight:bold}svg text.yl{text-anchor:end}\
svg text.xl{text-anchor:middle}svg text.bl{text-anchor:end}svg text.nr{fill:#888;\
font-style:italic}svg line.g{stroke:#e4e4e4}svg line.ax{stroke:#888}p.note{color:#666;\
font-size:13px}";

/// The whole page.
pub fn render(r: &ReportInput<'_>) -> String {
    let mut out = String::with_capacity(256 * 1024);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>spinneret report: {dir}</title><style>{STYLE}</style></head><body>\n\
         <h1>Crawl report: {dir}</h1>\n",
        dir = escape(r.dir)
    );
    summary(&mut out, r);
    let log = r.log;
    out.push_str("<h2>Over time</h2>\n");
    let secs = log.bucket_ms as f64 / 1000.0;
    let per_sec = |f: &dyn Fn(&crate::app::report_data::Bucket) -> u64| -> Vec<(f64, f64)> {
        log.buckets
            .iter()
            .enumerate()
            .map(|(i, b)| (i as f64 * secs, f(b) as f64 / secs))
            .collect()
    };
    let one = |name: &str, points| {
        vec![Series {
            name: name.to_string(),
            points,
        }]
    };
    let [t_pages, t_bytes, t_outcomes, t_status, t_mime, t_depth, t_fetch, t_size, t_hosts_pages, t_hosts_errors, t_hosts_bytes, t_queue, t_memory] =
        CHART_TITLES;
    push_chart(
        &mut out,
        line_chart(
            t_pages,
            XAxis::Elapsed,
            "/s",
            &one("pages", per_sec(&|b| b.pages)),
        ),
        &format!(
            "From crawl.log, in buckets of {}; robots.txt fetches not counted.",
            si(secs, "s")
        ),
    );
    push_chart(
        &mut out,
        line_chart(
            t_bytes,
            XAxis::Elapsed,
            "B/s",
            &one("body bytes", per_sec(&|b| b.bytes)),
        ),
        "Payload bytes as crawl.log records them (after decoding).",
    );
    push_chart(
        &mut out,
        outcomes_over_time(t_outcomes, log),
        "Lines per bucket.",
    );
    let statuses: Vec<Series> = STATUS_CLASSES
        .iter()
        .enumerate()
        .filter(|&(k, _)| log.totals.statuses[k] > 0)
        .map(|(k, name)| Series {
            name: name.to_string(),
            points: log
                .buckets
                .iter()
                .enumerate()
                .map(|(i, b)| (i as f64 * secs, b.statuses[k] as f64))
                .collect(),
        })
        .collect();
    push_chart(
        &mut out,
        line_chart(t_status, XAxis::Elapsed, "", &statuses),
        "Lines per bucket.",
    );

    out.push_str("<h2>What was fetched</h2>\n");
    let (mime, mime_note) = counted(&r.stats.mime_types, r.stats.files, "mime_types");
    push_chart(&mut out, bars_or(t_mime, "", &mime, &mime_note), &mime_note);
    let (depth, depth_note) = counted(&r.stats.depths, r.stats.files, "depths");
    push_chart(
        &mut out,
        bars_or(t_depth, "", &depth, &depth_note),
        &depth_note,
    );
    push_chart(
        &mut out,
        histogram(t_fetch, &log.fetch_ms, "ms"),
        "From crawl.log's ms column: every fetch, robots.txt included; buckets double.",
    );
    push_chart(
        &mut out,
        histogram(t_size, &log.page_bytes, "B"),
        "Payload bytes of pages with a complete response; buckets double.",
    );

    out.push_str("<h2>Hosts</h2>\n");
    let hosts_note = if log.hosts.dropped > 0 {
        format!(
            "{} hosts' tallies were dropped to keep the table bounded: a listed host may lack \
             up to {} of its lines.",
            log.hosts.dropped, log.hosts.dropped_max
        )
    } else {
        "Every host counted exactly.".to_string()
    };
    for (title, unit, key) in [
        (t_hosts_pages, "", 0),
        (t_hosts_errors, "", 1),
        (t_hosts_bytes, "B", 2),
    ] {
        let pick = |t: &crate::app::report_data::HostTally| match key {
            0 => t.lines,
            1 => t.errors,
            _ => t.bytes,
        };
        let bars: Vec<(String, f64)> = log
            .hosts
            .top(TOP_HOSTS, pick)
            .into_iter()
            .map(|(h, t)| (h.to_string(), pick(&t) as f64))
            .collect();
        let chart = if bars.is_empty() && key == 1 {
            not_recorded(title, "no errors")
        } else {
            bar_chart(title, unit, &bars)
        };
        push_chart(&mut out, chart, &hosts_note);
    }

    out.push_str("<h2>The process</h2>\n");
    timeline_charts(&mut out, r.timeline, t_queue, t_memory);

    out.push_str("<h2>The run's options</h2>\n");
    match &r.args {
        Ok(args) => {
            let line: Vec<String> = args.iter().map(|a| shell_word(a)).collect();
            let _ = writeln!(out, "<pre>spinneret {}</pre>", escape(&line.join(" ")));
        }
        Err(why) => {
            let _ = writeln!(out, "<p class=\"note\">not recorded: {}</p>", escape(why));
        }
    }
    let _ = write!(
        out,
        "<p class=\"note\">Made by spinneret {} at {}.</p>\n</body></html>\n",
        escape(env!("CARGO_PKG_VERSION")),
        escape(r.made_at)
    );
    out
}

fn push_chart(out: &mut String, svg: String, note: &str) {
    out.push_str(&svg);
    if !note.is_empty() {
        let _ = writeln!(out, "<p class=\"note\">{}</p>", escape(note));
    }
    out.push('\n');
}

/// `a` quoted for a shell if it needs it (the options shown as one could type them).
fn shell_word(a: &str) -> String {
    let plain = !a.is_empty()
        && a.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:=,@%+".contains(&b));
    if plain {
        a.to_string()
    } else {
        format!("'{}'", a.replace('\'', "'\\''"))
    }
}

/// The summary table.
fn summary(out: &mut String, r: &ReportInput<'_>) {
    let log = r.log;
    let t = &log.totals;
    let ok = |c: ReturnCode| ReturnCode::ALL.iter().position(|&x| x == c);
    let success = ok(ReturnCode::Success).map_or(0, |i| t.outcomes[i]);
    let span = log.end_ms.saturating_sub(log.start_ms) as f64 / 1000.0;
    let runs = r
        .timeline
        .and_then(|tl| tl.rows.iter().map(|row| row.run).max())
        .map_or_else(|| "not recorded".to_string(), |n| n.to_string());
    let rows: [(&str, String); 9] = [
        ("state", r.state.to_string()),
        ("crawl.log lines", t.lines.to_string()),
        ("pages (not robots.txt)", t.pages.to_string()),
        ("complete responses", success.to_string()),
        (
            "4xx / 5xx",
            format!("{} / {}", t.statuses[4], t.statuses[5]),
        ),
        ("payload bytes", si(t.bytes as f64, "B")),
        ("first to last line", format!("{span:.1} s")),
        ("runs (timeline)", runs),
        ("unreadable log lines", log.unreadable.to_string()),
    ];
    out.push_str("<table>\n");
    for (k, v) in rows {
        let _ = writeln!(
            out,
            "<tr><th>{}</th><td class=\"n\">{}</td></tr>",
            escape(k),
            escape(&v)
        );
    }
    out.push_str("</table>\n");
}

fn outcomes_over_time(title: &str, log: &LogSummary) -> String {
    let mut ranked: Vec<usize> = (0..ReturnCode::ALL.len())
        .filter(|&i| log.totals.outcomes[i] > 0)
        .collect();
    ranked.sort_by(|&a, &b| log.totals.outcomes[b].cmp(&log.totals.outcomes[a]));
    let secs = log.bucket_ms as f64 / 1000.0;
    let (top, rest) = ranked.split_at(ranked.len().min(TOP_OUTCOMES));
    let series_of = |name: String, idx: &[usize]| Series {
        name,
        points: log
            .buckets
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let n: u64 = idx.iter().map(|&k| b.outcomes[k]).sum();
                (i as f64 * secs, n as f64)
            })
            .collect(),
    };
    let mut series: Vec<Series> = top
        .iter()
        .map(|&k| series_of(ReturnCode::ALL[k].name().to_string(), &[k]))
        .collect();
    if !rest.is_empty() {
        series.push(series_of("other outcomes".to_string(), rest));
    }
    line_chart(title, XAxis::Elapsed, "", &series)
}

/// Counts from stats.json as bars, and the note under them.
fn counted(counts: &[(String, u64)], files: u32, key: &str) -> (Vec<(String, f64)>, String) {
    let bars = counts.iter().map(|(k, n)| (k.clone(), *n as f64)).collect();
    let note = if files == 0 {
        "not recorded: no stats.json (the crawl was killed, or is still running)".to_string()
    } else if counts.is_empty() {
        format!("not recorded: stats.json has no {key} (a crawl by an older spinneret)")
    } else {
        format!("From stats.json ({files} run(s)).")
    };
    (bars, note)
}

fn bars_or(title: &str, unit: &str, bars: &[(String, f64)], note: &str) -> String {
    if bars.is_empty() {
        not_recorded(title, note)
    } else {
        bar_chart(title, unit, bars)
    }
}

/// A power of two with its unit: bytes in binary multiples (`4 KiB`), others as numbers.
fn bound(v: u64, unit: &str) -> String {
    if unit != "B" {
        return format!("{} {unit}", si(v as f64, ""));
    }
    let (shift, name) = [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")]
        .into_iter()
        .find(|&(s, _)| v >= 1u64 << s)
        .unwrap_or((0, "B"));
    format!("{} {name}", v >> shift)
}

fn histogram(title: &str, h: &LogHistogram, unit: &str) -> String {
    let bars: Vec<(String, f64)> = h
        .ranges()
        .into_iter()
        .map(|(lo, hi, n)| {
            let name = match hi {
                _ if lo == 0 => format!("0 {unit}"),
                Some(hi) if hi == lo + 1 => bound(lo, unit),
                Some(hi) => format!("{} to <{}", bound(lo, unit), bound(hi, unit)),
                None => format!("{} or more", bound(lo, unit)),
            };
            (name, n as f64)
        })
        .collect();
    bar_chart(title, "", &bars)
}

fn timeline_charts(out: &mut String, t: Option<&Timeline>, t_queue: &str, t_memory: &str) {
    let Some(t) = t.filter(|t| !t.rows.is_empty()) else {
        let why = "not recorded: no timeline.tsv (a crawl by an older spinneret, or one that \
                   ended before its first row)";
        push_chart(out, not_recorded(t_queue, why), "");
        push_chart(out, not_recorded(t_memory, why), "");
        return;
    };
    let t0 = t.rows.iter().map(|r| r.unix_ms).min().unwrap_or(0);
    let series = |name: &str, f: &dyn Fn(&crate::store::archive::timeline::Row) -> u64| Series {
        name: name.to_string(),
        points: t
            .rows
            .iter()
            .map(|r| (r.unix_ms.saturating_sub(t0) as f64 / 1000.0, f(r) as f64))
            .collect(),
    };
    let note = format!(
        "From timeline.tsv: a row every {} now (the interval doubles as the file fills); \
         the whole crawl, every run.",
        si(t.interval_ms as f64 / 1000.0, "s")
    );
    push_chart(
        out,
        line_chart(
            t_queue,
            XAxis::Elapsed,
            "",
            &[
                series("queued URLs", &|r| r.queued),
                series("fetches in flight", &|r| r.live),
            ],
        ),
        &note,
    );
    let memory = [
        series("resident memory", &|r| r.rss_bytes),
        series("buffered response bytes", &|r| r.buffered_bytes),
        series("spooled response bytes", &|r| r.spooled_bytes),
    ];
    push_chart(
        out,
        line_chart(t_memory, XAxis::Elapsed, "B", &memory),
        &note,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_crawl_renders_every_chart_as_not_recorded() {
        let log = LogSummary::default();
        let stats = StatsCounts::default();
        let page = render(&ReportInput {
            dir: "<out>",
            state: "stopped",
            log: &log,
            stats: &stats,
            timeline: None,
            args: Err("no crawl.state".into()),
            made_at: "now",
        });
        for title in CHART_TITLES {
            assert!(page.contains(&format!("<title>{title}</title>")), "{title}");
        }
        assert_eq!(page.matches("<svg").count(), CHART_TITLES.len());
        assert!(page.contains("&lt;out&gt;") && !page.contains("<out>"));
        assert!(!page.contains("<script") && !page.contains("url(") && !page.contains("http"));
    }

    #[test]
    fn options_are_shown_as_a_command_line() {
        assert_eq!(shell_word("--max-pages"), "--max-pages");
        assert_eq!(shell_word("a b'c"), "'a b'\\''c'");
        assert_eq!(bound(4096, "B"), "4 KiB");
        assert_eq!(bound(1 << 41, "B"), "2 TiB");
        assert_eq!(bound(16, "ms"), "16 ms");
        assert_eq!(shell_word(""), "''");
    }
}
