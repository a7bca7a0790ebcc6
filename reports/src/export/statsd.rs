//! Forwarding to an upstream statsd, with DogStatsD tags. Statsd takes no timestamps, so a
//! series is forwarded as one value for the whole task:
//!
//! - figures: `tc_profile.task.<field>:<value>|g` (a flag as 0 or 1);
//! - steps: `tc_profile.step.duration_s:<s>|g|#...,category:Worker,step:pull image`;
//! - counters: the total, `|c`; gauges: the last value, `|g`; sets: the most distinct
//!   members of an interval, `|g`; timers and histograms: `<name>.count|c`, and
//!   `<name>.min`, `.mean`, `.max` as `|g`.

use crate::export::report::{Figure, SeriesReport, TaskReport};
use tc_profile_format::metric::MetricKind;

/// The largest packet: fits one Ethernet frame, as statsd clients do.
const MAX_PACKET: usize = 1432;

pub fn serialize(report: &TaskReport) -> Vec<Vec<u8>> {
    let mut lines = Vec::new();
    for (key, figure) in &report.figures {
        let value = match figure {
            Figure::Number(v) => *v,
            Figure::Flag(flag) => f64::from(u8::from(*flag)),
        };
        lines.push(metric_line(
            &format!("tc_profile.task.{key}"),
            value,
            "g",
            &report.tags,
        ));
    }
    for step in &report.steps {
        let mut tags = report.tags.clone();
        tags.push(("category".to_owned(), step.category.clone()));
        tags.push(("step".to_owned(), step.name.clone()));
        lines.push(metric_line(
            "tc_profile.step.duration_s",
            step.duration_s,
            "g",
            &tags,
        ));
    }
    for series in &report.series {
        let mut tags = report.tags.clone();
        tags.extend(series.tags.iter().cloned());
        for (suffix, value, kind) in totals(series) {
            let name = format!("{}{suffix}", series.metric);
            lines.push(metric_line(&name, value, kind, &tags));
        }
    }
    packets(lines)
}

/// One value per statsd metric for the whole task: (name suffix, value, statsd type).
fn totals(series: &SeriesReport) -> Vec<(&'static str, f64, &'static str)> {
    let column = |key: &'static str| series.points.iter().filter_map(move |p| p.value(key));
    match series.kind {
        MetricKind::Counter => vec![("", column("value").sum(), "c")],
        MetricKind::Gauge => column("value")
            .next_back()
            .map(|v| ("", v, "g"))
            .into_iter()
            .collect(),
        MetricKind::Set => vec![("", column("distinct").fold(0.0, f64::max), "g")],
        MetricKind::Timer | MetricKind::Histogram => {
            let count: f64 = column("count").sum();
            let weighted: f64 = series
                .points
                .iter()
                .map(|p| p.value("count").unwrap_or(0.0) * p.value("mean").unwrap_or(0.0))
                .sum();
            vec![
                (".count", count, "c"),
                (".min", column("min").fold(f64::INFINITY, f64::min), "g"),
                (
                    ".mean",
                    if count > 0.0 { weighted / count } else { 0.0 },
                    "g",
                ),
                (".max", column("max").fold(f64::NEG_INFINITY, f64::max), "g"),
            ]
        }
    }
}

fn metric_line(name: &str, value: f64, kind: &str, tags: &[(String, String)]) -> String {
    let mut line = format!("{}:{value}|{kind}", clean(name, ":|@#"));
    if !tags.is_empty() {
        let tags: Vec<String> = tags
            .iter()
            .map(|(key, value)| match value.is_empty() {
                true => clean(key, ":|#,"),
                false => format!("{}:{}", clean(key, ":|#,"), clean(value, "|#,")),
            })
            .collect();
        line.push_str("|#");
        line.push_str(&tags.join(","));
    }
    line
}

/// `forbidden` characters and line breaks become `_`.
fn clean(text: &str, forbidden: &str) -> String {
    text.chars()
        .map(|c| {
            if forbidden.contains(c) || c.is_control() {
                '_'
            } else {
                c
            }
        })
        .collect()
}

/// Lines joined by newlines into packets of at most [`MAX_PACKET`] bytes (a longer line
/// gets a packet of its own).
fn packets(lines: Vec<String>) -> Vec<Vec<u8>> {
    let mut packets: Vec<Vec<u8>> = Vec::new();
    for line in lines {
        match packets.last_mut() {
            Some(packet) if packet.len() + 1 + line.len() <= MAX_PACKET => {
                packet.push(b'\n');
                packet.extend_from_slice(line.as_bytes());
            }
            _ => packets.push(line.into_bytes()),
        }
    }
    packets
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::report::tests::sample_report;

    #[test]
    fn a_report_is_one_value_per_metric_with_tags() {
        let packets = serialize(&sample_report());
        assert_eq!(packets.len(), 1);
        let text = String::from_utf8(packets[0].clone()).unwrap();
        let tags = "task_id:fUAKaIdkSF6K1NlOgx7-LA,worker_type:b linux_large";
        let expected = [
            format!("tc_profile.task.duration_s:12.5|g|#{tags}"),
            format!("tc_profile.task.ended_early:0|g|#{tags}"),
            format!("tc_profile.step.duration_s:2.25|g|#{tags},category:Worker,step:pull image"),
            format!("task.tests.passed:7|c|#{tags},suite:unit,fast"),
            format!("task.compile.count:2|c|#{tags}"),
            format!("task.compile.min:1|g|#{tags}"),
            format!("task.compile.mean:2|g|#{tags}"),
            format!("task.compile.max:3|g|#{tags}"),
        ];
        assert_eq!(text.lines().collect::<Vec<_>>(), expected);
    }

    #[test]
    fn packets_stay_under_the_size_limit() {
        let lines: Vec<String> = (0..100).map(|i| format!("metric.{i:03}:1|c")).collect();
        let packets = packets(lines);
        assert!(packets.len() > 1);
        assert!(packets.iter().all(|p| p.len() <= MAX_PACKET));
        let total: usize = packets
            .iter()
            .map(|p| p.split(|&b| b == b'\n').count())
            .sum();
        assert_eq!(total, 100);
    }
}
