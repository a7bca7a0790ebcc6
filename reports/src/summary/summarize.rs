//! [`summarize`]: a profile's summary, composed from its tracks, steps and notes.

use crate::summary::hint::hint;
use crate::summary::model::{Dropped, MachineSize, Sparklines, Summary, SUMMARY_VERSION};
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
    let meta = profile.meta();
    let markers = profile.markers();
    let tracks = Tracks::collect(markers);
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
        .unwrap_or(0.0);
    let end = meta
        .get("profilingEndTime")
        .and_then(Value::as_f64)
        .unwrap_or_else(|| last_time(markers));
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
        duration_ms: end - start,
        complete: ended_early_at_ms.is_none(),
        ended_early_at_ms,
        steps: steps(meta, markers, &tracks),
        disk: tracks.disk.clone(),
        network: tracks.network.clone(),
        top_processes: tracks.processes.clone(),
        top_commands: tracks.top_commands(),
        dropped: dropped(markers),
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
        let (profile, _) = compact(read_log(log.as_bytes()).unwrap());
        summarize(&profile)
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
