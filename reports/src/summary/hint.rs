//! Whether the machine fits the task: a smaller one would have done, it fits, or the task
//! is bound by its CPU or memory; from the CPU p95 and the memory peak. The task is called
//! CPU-bound by its own CPU (its processes' "Task CPU", where the profile has it): a
//! machine kept busy by other processes is said to be, not blamed on the task.

use crate::summary::model::{CpuUse, Hint, MachineSize, MemoryUse, Verdict};
use crate::summary::text::short_number;

const GIB: f64 = (1u64 << 30) as f64;
/// A right-sized machine keeps the CPU p95 and the memory peak under this share of it.
const HEADROOM: f64 = 0.75;
/// At or above this share of the machine, the task is bound by that resource.
const BOUND: f64 = 0.9;

pub(super) fn hint(
    machine: &MachineSize,
    cpu: Option<&CpuUse>,
    memory: Option<&MemoryUse>,
) -> Option<Hint> {
    let cores = f64::from(machine.logical_cpus?);
    let total_gib = machine.main_memory_bytes? as f64 / GIB;
    let cpu = cpu?;
    let p95_cores = cpu.all.p95 * cores;
    let task_p95_cores = cpu.task.as_ref().map(|task| task.p95 * cores);
    let peak_gib = memory?.peak_bytes as f64 / GIB;

    // A smaller machine must hold everything that ran on this one: sized by all cores.
    let cores_needed = smallest_power_of_two_above(p95_cores / HEADROOM);
    let gib_needed = smallest_power_of_two_above(peak_gib / HEADROOM);
    let cpu_bound = task_p95_cores.unwrap_or(p95_cores) >= BOUND * cores;
    let busy_with_others = !cpu_bound && p95_cores >= BOUND * cores;
    let memory_bound = peak_gib >= BOUND * total_gib;
    let smaller = f64::from(cores_needed) < cores || f64::from(gib_needed) < total_gib;
    let suggested_cores = f64::from(cores_needed).min(cores) as u32;
    let suggested_gib = f64::from(gib_needed).min(total_gib);

    let memory_reason = format!("peak {peak_gib:.1} of {} GiB", short_number(total_gib));
    let reason = match task_p95_cores {
        Some(task) => {
            format!("{memory_reason} and the task's CPU p95 at {task:.1} of {cores} cores")
        }
        None => format!("{memory_reason} and CPU p95 at {p95_cores:.1} of {cores} cores"),
    };
    let (verdict, mut conclusion) = match (cpu_bound, memory_bound) {
        (true, true) => (
            Verdict::CpuAndMemoryBound,
            "the task is CPU-bound and close to the memory limit, a bigger machine would help"
                .to_owned(),
        ),
        (true, false) => (
            Verdict::CpuBound,
            "the task is CPU-bound, more cores would likely make it faster".to_owned(),
        ),
        (false, true) => (
            Verdict::MemoryBound,
            "the task is close to the memory limit, more memory would be safer".to_owned(),
        ),
        (false, false) if smaller => (
            Verdict::Smaller,
            format!(
                "a machine with {suggested_cores} cores and {} GiB would have done",
                short_number(suggested_gib)
            ),
        ),
        (false, false) => (Verdict::Fits, "this machine fits the task".to_owned()),
    };
    if busy_with_others {
        conclusion.push_str(&format!(
            "; other processes kept the machine busy (CPU p95 at {p95_cores:.1} of {cores} \
             cores in all), not the task"
        ));
    }
    Some(Hint {
        verdict,
        cores: suggested_cores,
        memory_bytes: (suggested_gib * GIB) as u64,
        text: format!("{reason}: {conclusion}"),
    })
}

/// 1, 2, 4, ...: the first at or above `need`.
fn smallest_power_of_two_above(need: f64) -> u32 {
    let mut n = 1u32;
    while f64::from(n) < need && n < 1 << 20 {
        n *= 2;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::model::CpuFigures;

    const GIB_BYTES: u64 = 1 << 30;

    fn hint_for(cores: u32, memory_gib: u64, p95_cores: f64, peak_gib: f64) -> Hint {
        let machine = MachineSize {
            logical_cpus: Some(cores),
            main_memory_bytes: Some(memory_gib * GIB_BYTES),
            cpu_name: None,
        };
        let p95 = p95_cores / f64::from(cores);
        let cpu = CpuUse {
            all: CpuFigures {
                average: p95,
                p95,
                peak: p95,
            },
            task: None,
            other: None,
        };
        let memory = MemoryUse {
            peak_bytes: (peak_gib * GIB) as u64,
            peak_at_ms: 0.0,
            peak_swap_bytes: 0,
            task_peak_bytes: None,
        };
        hint(&machine, Some(&cpu), Some(&memory)).expect("a hint")
    }

    #[test]
    fn a_machine_twice_too_big_is_halved() {
        let hint = hint_for(16, 16, 3.2, 3.1);
        assert_eq!(hint.verdict, Verdict::Smaller);
        assert_eq!((hint.cores, hint.memory_bytes), (8, 8 * GIB_BYTES));
    }

    #[test]
    fn a_saturated_cpu_or_memory_asks_for_more() {
        let cpu = hint_for(8, 32, 7.6, 4.0);
        assert_eq!(cpu.verdict, Verdict::CpuBound);
        assert!(
            cpu.text.ends_with("more cores would likely make it faster"),
            "{}",
            cpu.text
        );
        assert_eq!(hint_for(8, 16, 2.0, 15.0).verdict, Verdict::MemoryBound);
        assert_eq!(
            hint_for(8, 16, 7.5, 15.0).verdict,
            Verdict::CpuAndMemoryBound
        );
    }

    #[test]
    fn a_machine_used_past_three_quarters_fits() {
        let hint = hint_for(4, 8, 3.1, 5.9);
        assert_eq!(hint.verdict, Verdict::Fits);
        assert_eq!(
            hint.text,
            "peak 5.9 of 8 GiB and CPU p95 at 3.1 of 4 cores: this machine fits the task"
        );
    }

    #[test]
    fn no_hint_without_the_machine_size() {
        let machine = MachineSize {
            logical_cpus: None,
            main_memory_bytes: Some(GIB_BYTES),
            cpu_name: None,
        };
        assert_eq!(hint(&machine, None, None), None);
    }
}
