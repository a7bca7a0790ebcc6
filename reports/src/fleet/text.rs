//! The fleet report as a table for a terminal: a row a group, then each group's
//! recommendation. What came from the tasks (group names) is printed with its control
//! characters escaped.

use crate::fleet::aggregate::Spread;
use crate::fleet::recommend::HEADROOM;
use crate::fleet::report::{FleetReport, GroupReport};
use std::fmt::Write;
use tc_profile_finalizer::escape_controls;

const GIB: f64 = (1u64 << 30) as f64;
const HEADINGS: [&str; 10] = [
    "GROUP",
    "TASKS",
    "DURATION s p50/p95/max",
    "CORES p50/p95",
    "MEMORY GiB p95/max",
    "IDLE",
    "OOM",
    "TIMEOUTS",
    "INSTANCE",
    "ADVICE",
];

pub fn serialize(report: &FleetReport) -> Vec<u8> {
    let mut out = format!(
        "fleet by {}: {} tasks in {} groups",
        report.by,
        report.tasks,
        report.groups.len()
    );
    if report.unreadable > 0 {
        let _ = write!(out, ", {} inputs unreadable", report.unreadable);
    }
    out.push('\n');
    let rows: Vec<[String; 10]> = report.groups.iter().map(row).collect();
    let mut widths = HEADINGS.map(str::len);
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let headings = HEADINGS.map(str::to_owned);
    for row in std::iter::once(&headings).chain(&rows) {
        let cells: Vec<String> = row
            .iter()
            .zip(widths)
            .enumerate()
            .map(|(column, (cell, width))| match column {
                0 | 8 | 9 => format!("{cell:<width$}"),
                _ => format!("{cell:>width$}"),
            })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "\nThe cheapest type of the catalog whose cores cover the p95 and memory the max, \
         each at most {:.0} % used:",
        HEADROOM * 100.0
    );
    for group in &report.groups {
        let _ = writeln!(
            out,
            "  {}: {}",
            escape_controls(&group.key),
            group.recommendation.text
        );
    }
    for name in &report.unreadable_named {
        let _ = writeln!(out, "unreadable: {}", escape_controls(name));
    }
    out.into_bytes()
}

fn row(group: &GroupReport) -> [String; 10] {
    let figures = &group.figures;
    let spread = |spread: Option<Spread>, scale: f64, all: bool| match spread {
        Some(s) if all => format!(
            "{:.0}/{:.0}/{:.0}",
            s.p50 / scale,
            s.p95 / scale,
            s.max / scale
        ),
        Some(s) => format!("{:.1}/{:.1}", s.p95 / scale, s.max / scale),
        None => "-".to_owned(),
    };
    let cores = match figures.cores_used {
        Some(s) => format!("{:.1}/{:.1}", s.p50, s.p95),
        None => "-".to_owned(),
    };
    let instance = match (
        &figures.instance_type,
        figures.offered_cores,
        figures.offered_memory_bytes,
    ) {
        (name, Some(cores), Some(memory)) => format!(
            "{}{cores:.0} cores {:.0} GiB",
            name.as_deref()
                .map(|n| format!("{} ", escape_controls(n)))
                .unwrap_or_default(),
            memory / GIB
        ),
        (Some(name), _, _) => escape_controls(name).into_owned(),
        _ => "-".to_owned(),
    };
    let advice = group.recommendation.advice.name().to_owned();
    [
        escape_controls(&group.key).into_owned(),
        figures.tasks.to_string(),
        spread(figures.duration_s, 1.0, true),
        cores,
        spread(figures.memory_peak_bytes, GIB, false),
        figures
            .idle_share
            .map_or("-".to_owned(), |idle| format!("{:.0}%", idle * 100.0)),
        figures.oom_kills.to_string(),
        figures.timeouts.to_string(),
        instance,
        advice,
    ]
}
