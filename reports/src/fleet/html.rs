//! The fleet report as one self-contained HTML page, readable as a picture: a table row a
//! group with its recommendation, then per group two inline SVG charts, the spread of the
//! tasks' cores (each task's CPU p95) and memory peaks, against what the pool's instance
//! offered and what the recommended type offers. No script, no request: it opens offline.

use crate::fleet::recommend::HEADROOM;
use crate::fleet::report::{Distribution, FleetReport, GroupReport};
use std::fmt::Write;

const GIB: f64 = (1u64 << 30) as f64;
const WIDTH: f64 = 440.0;
const HEIGHT: f64 = 170.0;
/// The plot's margins: left, right, top, bottom.
const MARGIN: [f64; 4] = [36.0, 12.0, 28.0, 34.0];
const STYLE: &str = "body{font:14px system-ui,sans-serif;margin:24px;color:#222}\
table{border-collapse:collapse;margin-bottom:24px}\
td,th{padding:4px 10px;border-bottom:1px solid #ddd;text-align:right}\
td:first-child,th:first-child,td:last-child,th:last-child{text-align:left}\
section{margin-bottom:28px}h2{font-size:16px;margin:0 0 4px}p{margin:0 0 8px}\
.charts{display:flex;gap:24px;flex-wrap:wrap}svg{background:#fafafa;border:1px solid #e4e4e4}\
.smaller{color:#1a7f37}.larger,.oom-killed{color:#b3261e}";

pub fn serialize(report: &FleetReport) -> Vec<u8> {
    let mut out = String::new();
    let title = format!(
        "tc-profile fleet by {}: {} tasks in {} groups",
        escape(&report.by),
        report.tasks,
        report.groups.len()
    );
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>{title}</title><style>{STYLE}</style></head><body>\n<h1>{title}</h1>\n"
    );
    if report.unreadable > 0 {
        let _ = writeln!(
            out,
            "<p>{} inputs could not be read: {}</p>",
            report.unreadable,
            escape(&report.unreadable_named.join("; "))
        );
    }
    let _ = writeln!(
        out,
        "<p>Recommended: the cheapest type of the catalog whose cores cover the p95 of the \
         tasks' CPU p95 and whose memory covers the highest peak, each at most {:.0} % used.</p>",
        HEADROOM * 100.0
    );
    table(&mut out, report);
    for (index, group) in report.groups.iter().enumerate() {
        section(&mut out, index, group);
    }
    out.push_str("</body></html>\n");
    out.into_bytes()
}

fn table(out: &mut String, report: &FleetReport) {
    out.push_str(
        "<table><tr><th>group</th><th>tasks</th><th>duration s p50/p95/max</th>\
         <th>cores p50/p95</th><th>memory GiB p95/max</th><th>idle</th><th>OOM kills</th>\
         <th>timeouts</th><th>recommendation</th></tr>\n",
    );
    for group in &report.groups {
        let f = &group.figures;
        let duration = f.duration_s.map_or("-".to_owned(), |s| {
            format!("{:.0}/{:.0}/{:.0}", s.p50, s.p95, s.max)
        });
        let cores = f
            .cores_used
            .map_or("-".to_owned(), |s| format!("{:.1}/{:.1}", s.p50, s.p95));
        let memory = f.memory_peak_bytes.map_or("-".to_owned(), |s| {
            format!("{:.1}/{:.1}", s.p95 / GIB, s.max / GIB)
        });
        let idle = f
            .idle_share
            .map_or("-".to_owned(), |i| format!("{:.0}%", i * 100.0));
        let advice = group.recommendation.advice.name();
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{duration}</td><td>{cores}</td><td>{memory}</td>\
             <td>{idle}</td><td>{}</td><td>{}</td><td class=\"{advice}\">{advice}: {}</td></tr>",
            escape(&group.key),
            f.tasks,
            f.oom_kills,
            f.timeouts,
            escape(&group.recommendation.text)
        );
    }
    out.push_str("</table>\n");
}

fn section(out: &mut String, index: usize, group: &GroupReport) {
    let f = &group.figures;
    let chosen = group.recommendation.instance_type.as_ref();
    let offered_name = f.instance_type.as_deref().unwrap_or("offered");
    let _ = writeln!(
        out,
        "<section class=\"group\" id=\"group-{index}\"><h2>{}</h2><p class=\"{}\">{}</p>\
         <div class=\"charts\">",
        escape(&group.key),
        group.recommendation.advice.name(),
        escape(&group.recommendation.text)
    );
    let marks = |offered: Option<f64>, recommended: Option<f64>, used: (&str, Option<f64>)| {
        let mut marks = Vec::new();
        if let Some(value) = offered {
            marks.push(Mark::new(value, "#b3261e", offered_name));
        }
        if let (Some(value), Some(chosen)) = (recommended, chosen) {
            marks.push(Mark::new(value, "#1a7f37", &chosen.name));
        }
        if let (label, Some(value)) = used {
            marks.push(Mark::new(value, "#1f5fbf", label));
        }
        marks
    };
    chart(
        out,
        &format!("cores-{index}"),
        "cores used (each task's CPU p95)",
        &group.charts[0],
        1.0,
        &marks(
            f.offered_cores,
            chosen.map(|t| t.cores),
            ("p95", f.cores_used.map(|s| s.p95)),
        ),
    );
    chart(
        out,
        &format!("memory-{index}"),
        "memory peak, GiB",
        &group.charts[1],
        GIB,
        &marks(
            f.offered_memory_bytes,
            chosen.map(|t| t.memory_bytes),
            ("max", f.memory_peak_bytes.map(|s| s.max)),
        ),
    );
    out.push_str("</div></section>\n");
}

/// A vertical line on a chart, labelled.
struct Mark {
    value: f64,
    color: &'static str,
    label: String,
}

impl Mark {
    fn new(value: f64, color: &'static str, label: &str) -> Mark {
        Mark {
            value,
            color,
            label: label.to_owned(),
        }
    }
}

/// A histogram of the tasks (bars) from 0 to the distribution's upper end, in `unit`s.
fn chart(out: &mut String, id: &str, title: &str, bars: &Distribution, unit: f64, marks: &[Mark]) {
    let [left, right, top, bottom] = MARGIN;
    let (plot_width, plot_height) = (WIDTH - left - right, HEIGHT - top - bottom);
    let x = |value: f64| left + value / bars.upper * plot_width;
    let tallest = bars.counts.iter().copied().max().unwrap_or(0).max(1);
    let _ = write!(
        out,
        "<svg id=\"{id}\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" \
         width=\"{WIDTH}\" height=\"{HEIGHT}\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" role=\"img\">\
         <title>{title}</title>\
         <text x=\"{left}\" y=\"16\" font-size=\"12\">{title}</text>\
         <line x1=\"{left}\" y1=\"{base}\" x2=\"{end}\" y2=\"{base}\" stroke=\"#888\"/>",
        base = top + plot_height,
        end = left + plot_width,
    );
    let bar_width = plot_width / bars.counts.len() as f64;
    for (bin, count) in bars.counts.iter().enumerate().filter(|(_, &c)| c > 0) {
        let height = f64::from(*count) / f64::from(tallest) * plot_height;
        let _ = write!(
            out,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{height:.1}\" fill=\"#9db4d8\">\
             <title>{count} tasks</title></rect>",
            left + bin as f64 * bar_width + 0.5,
            top + plot_height - height,
            bar_width - 1.0,
        );
    }
    for (row, mark) in marks.iter().enumerate() {
        let at = x(mark.value);
        let _ = write!(
            out,
            "<line x1=\"{at:.1}\" y1=\"{top}\" x2=\"{at:.1}\" y2=\"{}\" stroke=\"{color}\" \
             stroke-width=\"2\" stroke-dasharray=\"4 2\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" fill=\"{color}\" text-anchor=\"end\">{} {}</text>",
            top + plot_height,
            at - 3.0,
            top + 12.0 + 12.0 * row as f64,
            escape(&mark.label),
            short(mark.value / unit),
            color = mark.color,
        );
    }
    let _ = write!(
        out,
        "<text x=\"{left}\" y=\"{label_y}\" font-size=\"11\">0</text>\
         <text x=\"{end}\" y=\"{label_y}\" font-size=\"11\" text-anchor=\"end\">{}</text>\
         <text x=\"4\" y=\"{}\" font-size=\"11\">{tallest}</text></svg>",
        short(bars.upper / unit),
        top + 8.0,
        label_y = top + plot_height + 16.0,
        end = left + plot_width,
    );
}

fn short(value: f64) -> String {
    if value >= 10.0 {
        format!("{value:.0}")
    } else {
        format!("{value:.1}")
    }
}

/// Text from the tasks (tags, names) as HTML text or an attribute value.
fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '&' => escaped.push_str("&amp;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#39;"),
            c if c.is_control() => escaped.push('\u{fffd}'),
            c => escaped.push(c),
        }
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_in_a_task_s_name_is_text() {
        assert_eq!(
            escape("<b a=\"1\">&'\u{7}"),
            "&lt;b a=&quot;1&quot;&gt;&amp;&#39;\u{fffd}"
        );
    }
}
