//! InfluxDB line protocol, millisecond timestamps (`precision=ms`):
//!
//! - `tc_profile_task,<task tags> duration_s=..,cpu_average=..,...,ended_early=false <start>`
//! - `tc_profile_step,<task tags>,category=Worker,step=pull\ image duration_s=..,cut_off=false <start>`
//! - `<metric>,<task tags>,<metric tags> value=.. <interval end>` (or count, min, mean, max;
//!   or distinct), one line per interval in which the series changed.
//!
//! Every number is written as a float, so a field never changes type between tasks.

use crate::export::report::{Figure, TaskReport};
use tc_profile_format::line_protocol::{FieldValue, Point};

pub const TASK_MEASUREMENT: &str = "tc_profile_task";
pub const STEP_MEASUREMENT: &str = "tc_profile_step";

pub fn serialize(report: &TaskReport) -> Vec<u8> {
    let mut out = String::new();
    if !report.figures.is_empty() {
        let fields = report.figures.iter().map(|(key, figure)| (*key, *figure));
        line(
            &mut out,
            TASK_MEASUREMENT,
            &report.tags,
            fields,
            report.start_time,
        );
    }
    for step in &report.steps {
        let mut tags = report.tags.clone();
        tags.push(("category".to_owned(), step.category.clone()));
        tags.push(("step".to_owned(), step.name.clone()));
        let fields = [
            ("duration_s", Figure::Number(step.duration_s)),
            ("cut_off", Figure::Flag(step.cut_off)),
        ];
        line(
            &mut out,
            STEP_MEASUREMENT,
            &tags,
            fields.into_iter(),
            step.start_time,
        );
    }
    for series in &report.series {
        let mut tags = report.tags.clone();
        tags.extend(series.tags.iter().cloned());
        for point in &series.points {
            let fields = point.values.iter().map(|(k, v)| (*k, Figure::Number(*v)));
            line(&mut out, &series.metric, &tags, fields, point.time);
        }
    }
    out.into_bytes()
}

fn line<'a>(
    out: &mut String,
    measurement: &str,
    tags: &[(String, String)],
    fields: impl Iterator<Item = (&'a str, Figure)>,
    time_ms: f64,
) {
    let fields: Vec<(String, FieldValue)> = fields
        .filter_map(|(key, figure)| {
            let value = match figure {
                Figure::Number(v) if v.is_finite() => FieldValue::Float(v),
                Figure::Number(_) => return None,
                Figure::Flag(flag) => FieldValue::Boolean(flag),
            };
            Some((key.to_owned(), value))
        })
        .collect();
    if fields.is_empty() {
        return;
    }
    // Sorted tags are what InfluxDB stores; a tag without value is a flag, set to true.
    let mut tags: Vec<(String, String)> = tags
        .iter()
        .map(|(key, value)| {
            let value = if value.is_empty() { "true" } else { value };
            (key.clone(), value.to_owned())
        })
        .collect();
    tags.sort();
    let point = Point {
        measurement: measurement.to_owned(),
        tags,
        fields,
        timestamp: Some(time_ms.round() as i64),
    };
    point.encode_into(out);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::report::tests::sample_report;

    #[test]
    fn every_part_of_a_report_is_a_line_with_escaped_tags() {
        let text = String::from_utf8(serialize(&sample_report())).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                r"tc_profile_task,task_id=fUAKaIdkSF6K1NlOgx7-LA,worker_type=b\ linux\,large duration_s=12.5,ended_early=false 1700000000000",
                r"tc_profile_step,category=Worker,step=pull\ image,task_id=fUAKaIdkSF6K1NlOgx7-LA,worker_type=b\ linux\,large duration_s=2.25,cut_off=false 1700000000100",
                r"task.tests.passed,fast=true,suite=unit,task_id=fUAKaIdkSF6K1NlOgx7-LA,worker_type=b\ linux\,large value=3 1700000000200",
                r"task.tests.passed,fast=true,suite=unit,task_id=fUAKaIdkSF6K1NlOgx7-LA,worker_type=b\ linux\,large value=4 1700000000300",
                r"task.compile,task_id=fUAKaIdkSF6K1NlOgx7-LA,worker_type=b\ linux\,large count=2,min=1,mean=2,max=3 1700000000300",
            ]
        );
    }

    #[test]
    fn non_finite_numbers_are_left_out() {
        let mut out = String::new();
        let fields = [("a", Figure::Number(f64::NAN)), ("b", Figure::Number(1.0))];
        line(&mut out, "m", &[], fields.into_iter(), 5.0);
        assert_eq!(out, "m b=1 5\n");
    }
}
