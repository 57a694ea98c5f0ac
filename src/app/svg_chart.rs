//! Charts as inline SVG text, for `spinneret report`'s one self-contained HTML file: line
//! charts over time and horizontal bar charts, drawn from numbers alone (no script, no
//! font or style from elsewhere: the page must render from the file, without a network).
//!
//! Every string from the crawl (a host, a MIME type, a URL) is escaped here, as the text
//! comes from hostile servers; every number is made finite, so any data gives valid SVG.

use std::fmt::Write as _;

/// Chart width, in SVG units (the page scales it to its column).
const WIDTH: f64 = 960.0;
/// Plot margins: left (axis labels), right, top (title), bottom (time labels and legend).
const LEFT: f64 = 78.0;
const RIGHT: f64 = 24.0;
const TOP: f64 = 34.0;
const BOTTOM: f64 = 56.0;
/// Height of a line chart.
const LINE_HEIGHT: f64 = 300.0;
/// Height of one bar (with its gap) in a bar chart.
const BAR_ROW: f64 = 22.0;
/// Most bars drawn (the caller ranks them; the rest would be unreadable anyway).
pub const MAX_BARS: usize = 40;
/// Most points of a series drawn (a longer one is thinned evenly).
const MAX_POINTS: usize = 2000;
/// Longest label shown in full, in characters.
const MAX_LABEL: usize = 48;
/// Series colours, told apart in print and by most colour-blind readers.
pub const PALETTE: [&str; 10] = [
    "#4477aa", "#ee6677", "#228833", "#ccbb44", "#66ccee", "#aa3377", "#bbbbbb", "#000000",
    "#ee7733", "#009988",
];

/// `s` escaped for HTML and SVG text and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Controls are not allowed in XML text at all.
            c if c.is_control() => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// A number as a short label: `950`, `1.2k`, `3.4M`, … (`unit` after it).
pub fn si(v: f64, unit: &str) -> String {
    let v = finite(v);
    let a = v.abs();
    let (scaled, prefix) = match a {
        a if a >= 1e18 => (v / 1e18, "E"),
        a if a >= 1e15 => (v / 1e15, "P"),
        a if a >= 1e12 => (v / 1e12, "T"),
        a if a >= 1e9 => (v / 1e9, "G"),
        a if a >= 1e6 => (v / 1e6, "M"),
        a if a >= 1e3 => (v / 1e3, "k"),
        _ => (v, ""),
    };
    let digits = if scaled.abs() >= 100.0 || (prefix.is_empty() && scaled.fract() == 0.0) {
        0
    } else if scaled.abs() >= 10.0 {
        1
    } else {
        2
    };
    format!("{scaled:.digits$}{prefix}{unit}")
}

fn finite(v: f64) -> f64 {
    if v.is_finite() {
        v
    } else {
        0.0
    }
}

/// One line of a line chart: its name and its (x, y) points, x ascending.
#[derive(Clone, Debug, Default)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// How x values are labelled.
#[derive(Clone, Copy, Debug)]
pub enum XAxis {
    /// Seconds since the start: `0s`, `5m`, `3h`, `2d`.
    Elapsed,
    /// Plain numbers.
    Plain,
}

fn x_label(axis: XAxis, x: f64) -> String {
    let x = finite(x);
    match axis {
        XAxis::Plain => si(x, ""),
        XAxis::Elapsed => match x {
            x if x >= 2.0 * 86400.0 => format!("{:.1}d", x / 86400.0),
            x if x >= 2.0 * 3600.0 => format!("{:.1}h", x / 3600.0),
            x if x >= 120.0 => format!("{:.1}m", x / 60.0),
            x => format!("{x:.0}s"),
        },
    }
}

/// The opening of a chart: the SVG element, its `<title>` (what the page's reader and a
/// test find it by) and the visible title.
fn open(out: &mut String, title: &str, height: f64) {
    let t = escape(title);
    let _ = write!(
        out,
        "<svg class=\"chart\" viewBox=\"0 0 {WIDTH} \
         {height:.0}\" width=\"{WIDTH}\" height=\"{height:.0}\" role=\"img\">\
         <title>{t}</title><text class=\"ct\" x=\"{LEFT}\" y=\"20\">{t}</text>"
    );
}

/// A chart that has nothing to show, and says why.
pub fn not_recorded(title: &str, why: &str) -> String {
    let mut out = String::new();
    open(&mut out, title, 80.0);
    let _ = write!(
        out,
        "<text class=\"nr\" x=\"{LEFT}\" y=\"56\">{}</text></svg>",
        escape(why)
    );
    out
}

/// Evenly thinned to at most [`MAX_POINTS`] points, keeping the last.
fn thinned(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    if points.len() <= MAX_POINTS {
        return points.to_vec();
    }
    let step = points.len().div_ceil(MAX_POINTS);
    let mut v: Vec<_> = points.iter().copied().step_by(step).collect();
    if let Some(&last) = points.last() {
        v.push(last);
    }
    v
}

/// A line chart of `series` against x (time or a count), y from 0 to the largest value.
/// `y_unit` follows the y labels (`B`, `/s`). Series without points are left out; with no
/// points at all it is [`not_recorded`].
pub fn line_chart(title: &str, axis: XAxis, y_unit: &str, series: &[Series]) -> String {
    let all = || series.iter().flat_map(|s| s.points.iter().copied());
    let (mut x0, mut x1, mut y1) = (f64::INFINITY, f64::NEG_INFINITY, 0.0f64);
    for (x, y) in all() {
        let (x, y) = (finite(x), finite(y));
        x0 = x0.min(x);
        x1 = x1.max(x);
        y1 = y1.max(y);
    }
    if !x0.is_finite() {
        return not_recorded(title, "not recorded: no data");
    }
    if x1 <= x0 {
        // One moment: a flat span around it.
        x1 = x0 + 1.0;
    }
    if y1 <= 0.0 {
        y1 = 1.0;
    }
    let h = LINE_HEIGHT;
    let (pw, ph) = (WIDTH - LEFT - RIGHT, h - TOP - BOTTOM);
    let px = |x: f64| LEFT + (finite(x) - x0) / (x1 - x0) * pw;
    let py = |y: f64| TOP + ph - (finite(y).max(0.0) / y1).min(1.0) * ph;
    let mut out = String::new();
    open(&mut out, title, h);
    // Grid and labels: five steps on each axis.
    for i in 0..=4 {
        let f = f64::from(i) / 4.0;
        let y = TOP + ph - f * ph;
        let _ = write!(
            out,
            "<line class=\"g\" x1=\"{LEFT}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\"/>\
             <text class=\"yl\" x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            WIDTH - RIGHT,
            LEFT - 6.0,
            y + 4.0,
            escape(&si(f * y1, y_unit))
        );
        let x = LEFT + f * pw;
        let _ = write!(
            out,
            "<text class=\"xl\" x=\"{x:.1}\" y=\"{:.1}\">{}</text>",
            TOP + ph + 16.0,
            escape(&x_label(axis, x0 + f * (x1 - x0)))
        );
    }
    let _ = write!(
        out,
        "<line class=\"ax\" x1=\"{LEFT}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\"/>",
        TOP + ph,
        WIDTH - RIGHT,
        TOP + ph
    );
    let mut legend_x = LEFT;
    for (i, s) in series.iter().filter(|s| !s.points.is_empty()).enumerate() {
        let colour = PALETTE[i % PALETTE.len()];
        let pts = thinned(&s.points);
        if pts.len() == 1 {
            let (x, y) = pts[0];
            let _ = write!(
                out,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{colour}\"/>",
                px(x),
                py(y)
            );
        } else {
            out.push_str("<polyline fill=\"none\" stroke-width=\"1.6\" stroke=\"");
            out.push_str(colour);
            out.push_str("\" points=\"");
            for (x, y) in pts {
                let _ = write!(out, "{:.1},{:.1} ", px(x), py(y));
            }
            out.push_str("\"/>");
        }
        let name = label(&s.name);
        let _ = write!(
            out,
            "<rect x=\"{legend_x:.1}\" y=\"{:.1}\" width=\"10\" height=\"10\" fill=\"{colour}\"/>\
             <text class=\"lg\" x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            h - 20.0,
            legend_x + 14.0,
            h - 11.0,
            escape(&name)
        );
        legend_x += 24.0 + 7.0 * name.chars().count() as f64;
    }
    out.push_str("</svg>");
    out
}

/// `s` cut to [`MAX_LABEL`] characters.
fn label(s: &str) -> String {
    if s.chars().count() <= MAX_LABEL {
        return s.to_string();
    }
    let mut cut: String = s.chars().take(MAX_LABEL - 1).collect();
    cut.push('…');
    cut
}

/// A horizontal bar chart: one bar per (label, value), in the order given (at most
/// [`MAX_BARS`]), values labelled with `unit`. No bars: [`not_recorded`].
pub fn bar_chart(title: &str, unit: &str, bars: &[(String, f64)]) -> String {
    let bars = &bars[..bars.len().min(MAX_BARS)];
    if bars.is_empty() {
        return not_recorded(title, "not recorded: no data");
    }
    let max = bars.iter().map(|b| finite(b.1)).fold(0.0, f64::max);
    let max = if max > 0.0 { max } else { 1.0 };
    let label_w = 300.0;
    let bw = WIDTH - label_w - RIGHT - 80.0;
    let h = TOP + 8.0 + BAR_ROW * bars.len() as f64 + 8.0;
    let mut out = String::new();
    open(&mut out, title, h);
    for (i, (name, v)) in bars.iter().enumerate() {
        let y = TOP + 8.0 + BAR_ROW * i as f64;
        let w = (finite(*v).max(0.0) / max).min(1.0) * bw;
        let _ = write!(
            out,
            "<text class=\"bl\" x=\"{:.1}\" y=\"{:.1}\">{}</text>\
             <rect x=\"{label_w}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{:.1}\" fill=\"{}\"/>\
             <text class=\"bv\" x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            label_w - 8.0,
            y + 14.0,
            escape(&label(name)),
            BAR_ROW - 6.0,
            PALETTE[0],
            label_w + w + 6.0,
            y + 14.0,
            escape(&si(*v, unit))
        );
    }
    out.push_str("</svg>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn well_formed(svg: &str) {
        assert!(svg.starts_with("<svg ") && svg.ends_with("</svg>"), "{svg}");
        assert_eq!(svg.matches("<svg").count(), 1);
        assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
        assert!(!svg.contains("<script"));
    }

    #[test]
    fn strings_from_the_crawl_are_escaped() {
        let evil = "<script>alert('x')</script>&\"\u{1}";
        let svg = bar_chart(evil, "", &[(evil.to_string(), 1.0)]);
        well_formed(&svg);
        assert!(svg.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&quot;\u{fffd}"));
        let s = Series {
            name: evil.into(),
            points: vec![(0.0, 1.0), (1.0, 2.0)],
        };
        let svg = line_chart(evil, XAxis::Elapsed, "", &[s]);
        well_formed(&svg);
        assert!(!svg.contains("<script>"));
        assert!(!not_recorded("t", evil).contains("<script>"));
    }

    #[test]
    fn empty_data_says_not_recorded() {
        for svg in [
            line_chart("Queue", XAxis::Elapsed, "", &[]),
            line_chart("Queue", XAxis::Elapsed, "", &[Series::default()]),
            bar_chart("Hosts", "", &[]),
        ] {
            well_formed(&svg);
            assert!(
                svg.contains("<title>") && svg.contains("not recorded"),
                "{svg}"
            );
        }
    }

    #[test]
    fn one_point_and_huge_values_give_finite_drawings() {
        let one = Series {
            name: "a".into(),
            points: vec![(5.0, 3.0)],
        };
        let svg = line_chart("One", XAxis::Plain, "", &[one]);
        well_formed(&svg);
        assert!(svg.contains("<circle"));
        let huge = Series {
            name: "b".into(),
            points: vec![
                (0.0, f64::MAX),
                (1e300, 1e300),
                (f64::NAN, f64::INFINITY),
                (2.0, -5.0),
            ],
        };
        well_formed(&line_chart("Huge", XAxis::Elapsed, "B", &[huge]));
        well_formed(&bar_chart(
            "Huge",
            "B",
            &[
                ("a".into(), f64::MAX),
                ("b".into(), f64::NAN),
                ("c".into(), -1.0),
            ],
        ));
        let many: Vec<(f64, f64)> = (0..100_000).map(|i| (f64::from(i), 1.0)).collect();
        let svg = line_chart(
            "Many",
            XAxis::Elapsed,
            "",
            &[Series {
                name: "m".into(),
                points: many,
            }],
        );
        assert!(svg.len() < 100_000, "{}", svg.len());
    }

    #[test]
    fn numbers_are_labelled_short() {
        assert_eq!(si(0.0, ""), "0");
        assert_eq!(si(950.0, "B"), "950B");
        assert_eq!(si(1234.0, ""), "1.23k");
        assert_eq!(si(3.4e6, "B"), "3.40MB");
        assert_eq!(si(f64::NAN, ""), "0");
        assert_eq!(si(2.5, "/s"), "2.50/s");
        assert_eq!(x_label(XAxis::Elapsed, 30.0), "30s");
        assert_eq!(x_label(XAxis::Elapsed, 3.0 * 86400.0), "3.0d");
    }
}
