//! The summary as text for a terminal or a task log: a label column, then one line per
//! subject, then the steps as a table. What came from the task (step and process names, a
//! note's file names) is printed with its control characters escaped.

use crate::summary::model::{CommandUse, ProcessUse, Step, Summary};
use std::fmt::Write;
use tc_profile_finalizer::escape_controls;

pub(crate) const BOLD: &str = "\x1b[1m";
pub(crate) const RESET: &str = "\x1b[0m";
/// The longest step name shown; the rest is cut with an ellipsis.
pub(crate) const NAME_MAX: usize = 40;

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Form {
    Full,
    Short,
}

pub(super) fn serialize(summary: &Summary, form: Form) -> Vec<u8> {
    let mut out = String::new();
    let mut line = |label: &str, text: &str| {
        let _ = writeln!(out, "{BOLD}{label:<9}{RESET}  {text}");
    };
    line("Duration", &ending(summary));
    let cores = summary.machine.logical_cpus;
    if form == Form::Full {
        line("Machine", &machine(summary));
    }
    if let Some(cpu) = &summary.cpu {
        let text = match cores {
            Some(n) => {
                let c = |share: f64| format!("{:.1}", share * f64::from(n));
                format!(
                    "average {}, p95 {}, peak {} of {n} cores",
                    c(cpu.all.average),
                    c(cpu.all.p95),
                    c(cpu.all.peak)
                )
            }
            None => format!(
                "average {}, p95 {}, peak {} of all cores",
                percent(cpu.all.average),
                percent(cpu.all.p95),
                percent(cpu.all.peak)
            ),
        };
        line("CPU", &text);
        if let (Some(task), Some(other)) = (&cpu.task, &cpu.other) {
            let share = |figure: f64| match cores {
                Some(n) => format!("{:.1}", figure * f64::from(n)),
                None => percent(figure),
            };
            let text = format!(
                "the task average {}, p95 {}; the rest average {}, p95 {}",
                share(task.average),
                share(task.p95),
                share(other.average),
                share(other.p95)
            );
            line("", &text);
        }
        if let (Form::Full, Some(spark)) = (form, &summary.sparklines.cpu) {
            line("", spark);
        }
    }
    if let Some(memory) = &summary.memory {
        let mut text = format!("peak {}", bytes(memory.peak_bytes));
        if let Some(total) = summary.machine.main_memory_bytes {
            text = format!(
                "peak {} of {} ({})",
                bytes(memory.peak_bytes),
                bytes(total),
                percent(memory.peak_bytes as f64 / total as f64)
            );
        }
        let _ = write!(text, ", at {}", duration(memory.peak_at_ms));
        if let Some(task) = memory.task_peak_bytes {
            let _ = write!(text, "; the task's processes peak {}", bytes(task));
        }
        if memory.peak_swap_bytes > 0 {
            let _ = write!(text, "; swap peak {}", bytes(memory.peak_swap_bytes));
        }
        line("Memory", &text);
        if let (Form::Full, Some(spark)) = (form, &summary.sparklines.memory) {
            line("", spark);
        }
    }
    if form == Form::Full {
        if let Some(disk) = &summary.disk {
            let text = format!(
                "read {}, written {}",
                bytes(disk.read_bytes),
                bytes(disk.written_bytes)
            );
            line("Disk", &text);
        }
        if let Some(network) = &summary.network {
            let text = format!(
                "received {}, sent {}",
                bytes(network.received_bytes),
                bytes(network.sent_bytes)
            );
            line("Network", &text);
        }
    }
    for dropped in &summary.dropped {
        let text = match dropped.end_ms {
            Some(end) => format!(
                "{} from {} to {}: {}",
                dropped.what,
                duration(dropped.start_ms),
                duration(end),
                escape_controls(&dropped.text)
            ),
            None => format!("{}: {}", dropped.what, escape_controls(&dropped.text)),
        };
        line("Dropped", &text);
    }
    if let Some(hint) = &summary.hint {
        line("Hint", &hint.text);
    }
    if form == Form::Full && !summary.steps.is_empty() {
        steps(&mut out, &summary.steps, cores);
    }
    if form == Form::Full && !summary.top_processes.is_empty() {
        processes(&mut out, &summary.top_processes);
    }
    if form == Form::Full && !summary.top_commands.is_empty() {
        commands(
            &mut out,
            &summary.top_commands,
            summary.commands_cpu.as_deref(),
        );
    }
    out.into_bytes()
}

fn ending(summary: &Summary) -> String {
    let mut length = duration(summary.duration_ms);
    if let Some(window) = &summary.window {
        length = format!(
            "{length}, the window from {} to {}",
            duration(window.from_ms),
            duration(window.to_ms)
        );
    }
    match summary.ended_early_at_ms {
        None => format!("{length}, complete"),
        Some(at) => {
            let mut text = format!(
                "{length}, cut off at {}: the recorder stopped without finishing \
                 (killed, crashed, or still running)",
                duration(at)
            );
            let cut = summary.steps.iter().filter(|s| s.cut_off).count();
            if cut > 0 {
                let _ = write!(text, "; steps cut off there: {cut}");
            }
            text
        }
    }
}

fn machine(summary: &Summary) -> String {
    let machine = &summary.machine;
    let mut parts = Vec::new();
    if let Some(n) = machine.logical_cpus {
        parts.push(format!("{n} cores"));
    }
    if let Some(memory) = machine.main_memory_bytes {
        parts.push(bytes(memory));
    }
    if let Some(name) = &machine.cpu_name {
        parts.push(name.clone());
    }
    if parts.is_empty() {
        "unknown".to_owned()
    } else {
        parts.join(", ")
    }
}

fn steps(out: &mut String, steps: &[Step], cores: Option<u32>) {
    let cpu = |share: Option<f64>| match (share, cores) {
        (Some(share), Some(n)) => format!("{:.1}", share * f64::from(n)),
        (Some(share), None) => percent(share),
        (None, _) => "-".to_owned(),
    };
    let _ = writeln!(
        out,
        "\n{BOLD}{:<8} {:<NAME_MAX$} {:>10} {:>10} {:>9} {:>9} {:>12}{RESET}",
        "Step", "", "start", "duration", "CPU avg", "CPU peak", "peak memory"
    );
    for step in steps {
        let name = match &step.detail {
            Some(detail) if *detail != step.name => format!("{}: {detail}", step.name),
            _ => step.name.clone(),
        };
        let _ = writeln!(
            out,
            "{:<8} {:<NAME_MAX$} {:>10} {:>10} {:>9} {:>9} {:>12}{}",
            step.category,
            cut(&escape_controls(&name)),
            duration(step.start_ms),
            duration(step.duration_ms),
            cpu(step.cpu_average),
            cpu(step.cpu_peak),
            step.peak_memory_bytes.map_or("-".to_owned(), bytes),
            if step.cut_off { "  cut off" } else { "" }
        );
        if !step.top_commands.is_empty() {
            let _ = writeln!(out, "{:<8} {}", "", step_commands(&step.top_commands));
        }
    }
}

/// A step's busiest commands on one line: `cc1 × 21 0.33s, as × 21 0.02s`.
fn step_commands(commands: &[CommandUse]) -> String {
    let each = commands.iter().map(|command| {
        let name = escape_controls(&command.command);
        format!("{name} × {} {}", command.runs, duration(command.cpu_ms))
    });
    format!("commands: {}", each.collect::<Vec<_>>().join(", "))
}

fn processes(out: &mut String, processes: &[ProcessUse]) {
    let _ = writeln!(
        out,
        "\n{BOLD}{:<8} {:<NAME_MAX$} {:>10} {:>10} {:>9} {:>12}{RESET}",
        "Process", "", "start", "duration", "CPU time", "peak RSS"
    );
    for process in processes {
        let pid = process.pid.map_or(String::new(), |pid| pid.to_string());
        let command = process.command.as_deref().unwrap_or(&process.name);
        let _ = writeln!(
            out,
            "{pid:<8} {:<NAME_MAX$} {:>10} {:>10} {:>9} {:>12}",
            cut(&escape_controls(command)),
            duration(process.start_ms),
            duration(process.duration_ms),
            duration(process.cpu_ms),
            process.peak_rss_bytes.map_or("-".to_owned(), bytes),
        );
    }
}

/// The top commands by CPU, every run counted.
/// The commands' table; a note under it when their CPU is whole clock ticks, which a run
/// shorter than a tick mostly does not get.
fn commands(out: &mut String, commands: &[CommandUse], counted_from: Option<&str>) {
    let _ = writeln!(
        out,
        "\n{BOLD}{:<NAME_MAX$} {:>8} {:>8} {:>10} {:>12}{RESET}",
        "Command", "runs", "failed", "CPU time", "peak RSS"
    );
    for command in commands {
        let _ = writeln!(
            out,
            "{:<NAME_MAX$} {:>8} {:>8} {:>10} {:>12}",
            cut(&escape_controls(&command.command)),
            command.runs,
            command.failures,
            duration(command.cpu_ms),
            bytes(command.peak_rss_bytes),
        );
    }
    if counted_from == Some("ticks") {
        let _ = writeln!(
            out,
            "CPU time in whole clock ticks (the kernel gives no run time): runs shorter \
             than a tick are mostly not counted"
        );
    }
}

pub(crate) fn cut(name: &str) -> String {
    match name.char_indices().nth(NAME_MAX - 1) {
        Some((at, _)) => format!("{}…", &name[..at]),
        None => name.to_owned(),
    }
}

/// `0.25s`, `12.3s`, `4m 05s`, `1h 02m 03s`.
pub(crate) fn duration(ms: f64) -> String {
    let seconds = ms / 1000.0;
    if seconds < 10.0 {
        return format!("{seconds:.2}s");
    }
    if seconds < 60.0 {
        return format!("{seconds:.1}s");
    }
    let whole = seconds.round() as u64;
    let (h, m, s) = (whole / 3600, whole / 60 % 60, whole % 60);
    if h == 0 {
        format!("{m}m {s:02}s")
    } else {
        format!("{h}h {m:02}m {s:02}s")
    }
}

/// Binary units, one decimal under 100: `512 B`, `3.1 GiB`, `120 MiB`.
pub(crate) fn bytes(count: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if count < 1024 {
        return format!("{count} B");
    }
    let mut value = count as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{} {}", short_number(value), UNITS[unit])
}

/// `16` for a whole number, else one decimal (`15.6`); no decimals from 100 on.
pub(super) fn short_number(value: f64) -> String {
    if (value - value.round()).abs() < 0.05 || value >= 100.0 {
        format!("{value:.0}")
    } else {
        format!("{value:.1}")
    }
}

fn percent(share: f64) -> String {
    format!("{:.0}%", share * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_at_a_glance() {
        assert_eq!(duration(250.0), "0.25s");
        assert_eq!(duration(12_345.0), "12.3s");
        assert_eq!(duration(245_000.0), "4m 05s");
        assert_eq!(duration(3_723_000.0), "1h 02m 03s");
    }

    #[test]
    fn commands_counted_in_whole_ticks_say_so_under_their_table() {
        let command = CommandUse {
            command: "true".to_owned(),
            runs: 2000,
            failures: 0,
            cpu_ms: 120.0,
            peak_rss_bytes: 1 << 20,
        };
        for (counted_from, noted) in [
            (Some("ticks"), true),
            (Some("run-time"), false),
            (None, false),
        ] {
            let mut out = String::new();
            commands(&mut out, std::slice::from_ref(&command), counted_from);
            assert_eq!(out.contains("whole clock ticks"), noted, "{counted_from:?}");
        }
    }

    #[test]
    fn byte_counts_use_binary_units() {
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(16 << 30), "16 GiB");
        assert_eq!(bytes(3_328_599_654), "3.1 GiB");
        assert_eq!(bytes(120 << 20), "120 MiB");
    }
}
