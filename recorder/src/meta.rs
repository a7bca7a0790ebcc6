//! What the meta line says about the machine and the task.

use crate::sources::procfs::ReadBuffer;
use std::collections::HashSet;
use std::fs;
use std::path::Path;
use tc_profile_format::{Machine, TaskInfo};

/// The machine, from /proc on Linux; elsewhere only what the standard library knows.
pub fn machine() -> Machine {
    // Read through one 16 KiB buffer: read_to_string starts at 32 bytes, and took 22 reads
    // of /proc/cpuinfo on a 2-core machine, each a call into the kernel's formatting.
    let mut buffer = ReadBuffer::new();
    let mut read = |path: &str| {
        let bytes = buffer.read_path(Path::new(path)).unwrap_or_default();
        String::from_utf8_lossy(bytes).into_owned()
    };
    let cpuinfo = read("/proc/cpuinfo");
    let meminfo = read("/proc/meminfo");
    let logical = std::thread::available_parallelism()
        .ok()
        .map(|n| n.get() as u32);
    Machine {
        logical_cpus: logical,
        physical_cpus: physical_cores(&cpuinfo).or(logical),
        main_memory: meminfo_total(&meminfo),
        cpu_name: cpuinfo_value(&cpuinfo, "model name").map(str::to_owned),
        os: os_description(),
    }
}

/// TASK_ID, RUN_ID and the TASKCLUSTER_* variables that describe the task. Only these
/// are read: the rest of the environment never enters a log.
pub fn task_from_env() -> TaskInfo {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    TaskInfo {
        task_id: var("TASK_ID"),
        run_id: var("RUN_ID"),
        worker_type: var("TASKCLUSTER_WORKER_TYPE"),
        instance_type: var("TASKCLUSTER_INSTANCE_TYPE"),
        root_url: var("TASKCLUSTER_ROOT_URL"),
        name: None,
    }
}

fn cpuinfo_value<'a>(cpuinfo: &'a str, key: &str) -> Option<&'a str> {
    cpuinfo.lines().find_map(|line| {
        let (k, v) = line.split_once(':')?;
        (k.trim() == key).then(|| v.trim())
    })
}

/// Distinct (physical id, core id) pairs; None where /proc/cpuinfo does not say.
fn physical_cores(cpuinfo: &str) -> Option<u32> {
    let mut cores = HashSet::new();
    for block in cpuinfo.split("\n\n") {
        let package = cpuinfo_value(block, "physical id");
        if let Some(core) = cpuinfo_value(block, "core id") {
            cores.insert((package.unwrap_or("0"), core));
        }
    }
    (!cores.is_empty()).then_some(cores.len() as u32)
}

fn meminfo_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_ascii_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn os_description() -> Option<String> {
    let release = fs::read_to_string("/proc/sys/kernel/osrelease").ok();
    let name = match std::env::consts::OS {
        "linux" => "Linux",
        "macos" => "macOS",
        "windows" => "Windows",
        other => other,
    };
    Some(match release {
        Some(release) => format!("{name} {} {}", release.trim(), std::env::consts::ARCH),
        None => format!("{name} {}", std::env::consts::ARCH),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hyperthreads_count_once_as_physical_cores() {
        let cpuinfo = "processor: 0\nphysical id: 0\ncore id: 0\n\nprocessor: 1\nphysical id: 0\ncore id: 0\n\nprocessor: 2\nphysical id: 0\ncore id: 1\n";
        assert_eq!(physical_cores(cpuinfo), Some(2));
    }
}
