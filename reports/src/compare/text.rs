//! A comparison as text: how each run ended, the steps (a row per run, the heaviest step
//! first), the steps of one run only, the commands that changed most. What came from the
//! task (step and command names) is printed with its control characters escaped.

use super::model::{Comparison, ProcessDelta, RunEnding, StepFigures, StepSpan};
use crate::summary::{bytes, cut, duration, BOLD, NAME_MAX, RESET};
use std::fmt::Write;
use tc_profile_finalizer::escape_controls;

pub(super) fn serialize(comparison: &Comparison) -> Vec<u8> {
    let mut out = String::new();
    let mut line = |label: &str, text: &str| {
        let _ = writeln!(out, "{BOLD}{label:<9}{RESET}  {text}");
    };
    line("Base", &ending(&comparison.base));
    line("New", &ending(&comparison.new));
    let change = comparison.new.duration_ms - comparison.base.duration_ms;
    line("Change", &signed_duration(change));
    let mut aligned = format!("on {}", cut(&escape_controls(&comparison.aligned_on)));
    let step = comparison
        .steps
        .iter()
        .find(|s| s.step == comparison.aligned_on);
    if let Some(step) = step {
        let _ = write!(
            aligned,
            " in the merged profile: it starts at {} in the base run, at {} in the new one",
            duration(step.base.start_ms),
            duration(step.new.start_ms)
        );
    }
    line("Aligned", &aligned);
    steps(&mut out, comparison);
    for (label, spans) in [
        (
            "Only in the base run (never ran in the new one)",
            &comparison.only_in_base,
        ),
        ("Only in the new run", &comparison.only_in_new),
    ] {
        if !spans.is_empty() {
            one_run_steps(&mut out, label, spans);
        }
    }
    if !comparison.processes.is_empty() {
        processes(&mut out, &comparison.processes);
    }
    out.into_bytes()
}

/// `a.json: 12.3s, complete, exit code 0`, and what went wrong.
fn ending(run: &RunEnding) -> String {
    let mut text = format!(
        "{}: {}",
        escape_controls(&run.source),
        duration(run.duration_ms)
    );
    match run.ended_early_at_ms {
        Some(at) if !run.complete => {
            let _ = write!(text, ", cut off at {} (recorder killed)", duration(at));
        }
        _ => text.push_str(", complete"),
    }
    if let Some(status) = &run.exit_status {
        let _ = write!(text, ", {}", escape_controls(status));
    }
    if run.oom_kills > 0 {
        let _ = write!(text, ", {} OOM kills", run.oom_kills);
    }
    if run.timed_out {
        text.push_str(", timed out");
    }
    text
}

fn steps(out: &mut String, comparison: &Comparison) {
    let _ = writeln!(
        out,
        "\n{BOLD}{:<8} {:<NAME_MAX$} {:>4} {:>10} {:>10} {:>9} {:>6} {:>12} {:>10} {:>10}{RESET}",
        "Step",
        "",
        "run",
        "duration",
        "delta",
        "CPU time",
        "cores",
        "peak memory",
        "disk",
        "network"
    );
    for step in &comparison.steps {
        let name = cut(&escape_controls(&step.step));
        let delta = signed_duration(step.delta_ms);
        for (run, figures, category, name, delta) in [
            (
                "base",
                &step.base,
                step.category.as_str(),
                name.as_str(),
                "",
            ),
            ("new", &step.new, "", "", delta.as_str()),
        ] {
            let _ = writeln!(
                out,
                "{category:<8} {name:<NAME_MAX$} {run:>4} {:>10} {delta:>10} {}",
                duration(figures.duration_ms),
                resources(figures)
            );
        }
    }
}

fn resources(figures: &StepFigures) -> String {
    let or_dash = |text: Option<String>| text.unwrap_or_else(|| "-".to_owned());
    let cut_off = if figures.cut_off { "  cut off" } else { "" };
    format!(
        "{:>9} {:>6} {:>12} {:>10} {:>10}{cut_off}",
        or_dash(figures.cpu_seconds.map(|s| duration(s * 1000.0))),
        or_dash(figures.cores.map(|c| format!("{c:.1}"))),
        or_dash(figures.peak_memory_bytes.map(bytes)),
        or_dash(figures.disk_bytes.map(bytes)),
        or_dash(figures.network_bytes.map(bytes)),
    )
}

fn one_run_steps(out: &mut String, label: &str, spans: &[StepSpan]) {
    let _ = writeln!(out, "\n{BOLD}{label}{RESET}");
    for span in spans {
        let _ = writeln!(
            out,
            "{:<8} {:<NAME_MAX$} at {:>10} for {:>10}{}",
            span.category,
            cut(&escape_controls(&span.step)),
            duration(span.start_ms),
            duration(span.duration_ms),
            if span.cut_off { "  cut off" } else { "" }
        );
    }
}

fn processes(out: &mut String, rows: &[ProcessDelta]) {
    let _ = writeln!(
        out,
        "\n{BOLD}{:<NAME_MAX$} {:>10} {:>10} {:>12} {:>12}{RESET}",
        "Changed most", "CPU base", "CPU new", "peak base", "peak new"
    );
    let rss = |bytes_of: Option<u64>| bytes_of.map_or("-".to_owned(), bytes);
    for row in rows {
        let _ = writeln!(
            out,
            "{:<NAME_MAX$} {:>10} {:>10} {:>12} {:>12}",
            cut(&escape_controls(&row.command)),
            duration(row.base_cpu_ms),
            duration(row.new_cpu_ms),
            rss(row.base_peak_rss_bytes),
            rss(row.new_peak_rss_bytes),
        );
    }
}

/// `+2.01s`, `-0.50s`; `0.00s` for a change under what is shown.
pub(super) fn signed_duration(ms: f64) -> String {
    let size = duration(ms.abs());
    match (ms < 0.0, size == duration(0.0)) {
        (_, true) => size,
        (true, false) => format!("-{size}"),
        (false, false) => format!("+{size}"),
    }
}
