//! [`summarize`]: a profile's summary, composed from its tracks, steps and notes; and
//! [`summarize_window`], the same of a span of it.

use crate::summary::hint::hint;
use crate::summary::model::{Dropped, MachineSize, Sparklines, Summary, Window, SUMMARY_VERSION};
use crate::summary::sparkline::{sparkline, Aggregate};
use crate::summary::steps::steps;
use crate::summary::tracks::Tracks;
use crate::summary::usage::{cpu_use, memory_use};
use serde_json::Value;
use tc_profile_finalizer::{
    Markers, Profile, DATA_MISSING, ENDED_EARLY, LOG_DAMAGE, MARKER_FILES, METRICS,
};

/// Markers that say what was lost or dropped, and why.
const DROP_NOTES: [&str; 4] = [DATA_MISSING, LOG_DAMAGE, MARKER_FILES, METRICS];

/// Computes the summary of a profile.
pub fn summarize(profile: &Profile) -> Summary {
    summary_of(profile, None)
}

/// Computes the summary of the part of a profile in `window`: its CPU and memory there,
/// the bytes read and sent in proportion to how much of each sample lies in it, the steps,
/// processes and notes that overlap it.
pub fn summarize_window(profile: &Profile, window: Window) -> Summary {
    summary_of(profile, Some(window))
}

fn summary_of(profile: &Profile, window: Option<Window>) -> Summary {
    let meta = profile.meta();
    let markers = profile.markers();
    let span = window.unwrap_or(Window::ALL);
    let tracks = Tracks::collect(markers, span);
    let machine = MachineSize {
        logical_cpus: meta
            .get("logicalCPUs")
            .and_then(Value::as_u64)
            .map(|n| n as u32),
        main_memory_bytes: meta.get("mainMemory").and_then(Value::as_u64),
        cpu_name: meta
            .get("CPUName")
            .and_then(Value::as_str)
            .map(str::to_owned),
    };
    let start = meta
        .get("profilingStartTime")
        .and_then(Value::as_f64)
        .unwrap_or(0.0)
        .max(span.from_ms);
    let end = meta
        .get("profilingEndTime")
        .and_then(Value::as_f64)
        .unwrap_or_else(|| last_time(markers))
        .min(span.to_ms)
        .max(start);
    let in_span = |start: f64, end: Option<f64>| span.share(start, end.unwrap_or(start)).is_some();
    let ended_early_at_ms = markers
        .iter()
        .find(|m| m.name == ENDED_EARLY)
        .map(|m| m.start_time);
    let cpu = cpu_use(&tracks);
    let memory = memory_use(&tracks);
    let hint = hint(&machine, cpu.as_ref(), memory.as_ref());
    let memory_scale = machine
        .main_memory_bytes
        .map(|b| b as f64)
        .or(memory.as_ref().map(|m| m.peak_bytes as f64));
    Summary {
        summary_version: SUMMARY_VERSION,
        product: meta
            .get("product")
            .and_then(Value::as_str)
            .map(str::to_owned),
        start_time: meta.get("startTime").and_then(Value::as_f64),
        window: window.map(|_| Window {
            from_ms: start,
            to_ms: end,
        }),
        duration_ms: end - start,
        complete: ended_early_at_ms.is_none(),
        ended_early_at_ms,
        steps: steps(meta, markers, &tracks)
            .into_iter()
            .filter(|step| in_span(step.start_ms, Some(step.start_ms + step.duration_ms)))
            .collect(),
        disk: tracks.disk.clone(),
        network: tracks.network.clone(),
        top_processes: tracks.processes.clone(),
        top_commands: tracks.top_commands(),
        commands_cpu: meta
            .get("tcProfile")
            .and_then(|tc_profile| tc_profile.get("processCpu"))
            .and_then(Value::as_str)
            .map(str::to_owned),
        dropped: dropped(markers)
            .into_iter()
            .filter(|note| in_span(note.start_ms, note.end_ms))
            .collect(),
        sparklines: Sparklines {
            cpu: sparkline(&tracks.cpu, start, end, Some(1.0), Aggregate::Mean),
            memory: sparkline(&tracks.memory, start, end, memory_scale, Aggregate::Max),
        },
        machine,
        cpu,
        memory,
        hint,
    }
}

fn last_time(markers: &Markers) -> f64 {
    markers
        .iter()
        .map(|m| m.end_time.unwrap_or(m.start_time))
        .fold(0.0, f64::max)
}

fn dropped(markers: &Markers) -> Vec<Dropped> {
    markers
        .iter()
        .filter(|m| DROP_NOTES.contains(&m.name))
        .map(|m| Dropped {
            what: m.name.to_owned(),
            text: m
                .data_value()
                .as_ref()
                .and_then(|d| d.get("text"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            start_ms: m.start_time,
            end_ms: m.end_time,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::model::Verdict;
    use tc_profile_finalizer::{compact, read_log};

    /// A recording of 10 s on 2 cores, one sample a second: all cores at `machine_cpu`,
    /// the task's processes at `task_cpu` of them, the rest at the difference.
    fn summary_of(machine_cpu: f64, task_cpu: f64) -> Summary {
        summarize(&profile_of(machine_cpu, task_cpu))
    }

    fn profile_of(machine_cpu: f64, task_cpu: f64) -> Profile {
        let mut log = String::from(concat!(
            r#"{"type":"meta","startTime":1000,"logicalCPUs":2,"mainMemory":8589934592,"markerSchema":[]}"#,
            "\n",
            r#"{"type":"thread","name":"t"}"#,
            "\n",
        ));
        for second in 0..10 {
            let (start, end) = (second * 1000, (second + 1) * 1000);
            let other = machine_cpu - task_cpu;
            for (name, data) in [
                (
                    "CPU Use",
                    format!(r#"{{"type":"CPU","user":{machine_cpu}}}"#),
                ),
                ("Memory", r#"{"type":"Mem","used":1073741824}"#.to_owned()),
                (
                    "Task CPU",
                    format!(r#"{{"type":"TaskCPU","cpu":{task_cpu}}}"#),
                ),
                (
                    "Other CPU",
                    format!(r#"{{"type":"OtherCPU","cpu":{other}}}"#),
                ),
            ] {
                log.push_str(&format!(
                    r#"{{"type":"marker","name":"{name}","startTime":{start},"endTime":{end},"data":{data}}}"#
                ));
                log.push('\n');
            }
        }
        compact(read_log(log.as_bytes()).unwrap()).0
    }

    #[test]
    fn a_window_holds_the_samples_inside_it_cut_at_its_edges() {
        let profile = profile_of(0.5, 0.25);
        let window = Window {
            from_ms: 2500.0,
            to_ms: 4000.0,
        };
        let summary = summarize_window(&profile, window);
        assert_eq!(summary.window, Some(window));
        assert_eq!(summary.duration_ms, 1500.0);
        let cpu = summary.cpu.unwrap();
        assert_eq!((cpu.all.average, cpu.task.unwrap().average), (0.5, 0.25));
        let memory = summary.memory.unwrap();
        assert!((2500.0..4000.0).contains(&memory.peak_at_ms), "{memory:?}");
        assert_eq!(summarize(&profile).window, None);
    }

    #[test]
    fn a_window_past_the_recording_ends_with_it() {
        let window = Window {
            from_ms: 8000.0,
            to_ms: f64::INFINITY,
        };
        let summary = summarize_window(&profile_of(0.5, 0.25), window);
        let expected = Window {
            from_ms: 8000.0,
            to_ms: 10_000.0,
        };
        assert_eq!(summary.window, Some(expected));
    }

    #[test]
    fn an_idle_task_on_a_busy_machine_is_not_called_cpu_bound() {
        let hint = summary_of(1.0, 0.0).hint.unwrap();
        assert_ne!(hint.verdict, Verdict::CpuBound, "{}", hint.text);
        assert!(!hint.text.contains("CPU-bound"), "{}", hint.text);
        assert!(
            hint.text.contains("the task's CPU p95 at 0.0 of 2 cores"),
            "{}",
            hint.text
        );
        assert!(
            hint.text.contains("other processes kept the machine busy"),
            "{}",
            hint.text
        );
    }

    #[test]
    fn a_task_that_keeps_the_cores_busy_itself_is_cpu_bound() {
        let hint = summary_of(1.0, 0.95).hint.unwrap();
        assert_eq!(hint.verdict, Verdict::CpuBound, "{}", hint.text);
        assert!(!hint.text.contains("other processes"), "{}", hint.text);
    }
}
