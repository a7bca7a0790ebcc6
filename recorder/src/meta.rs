//! What the meta line says about the machine and the task.

use crate::sources::procfs::ReadBuffer;
use std::collections::HashSet;
use std::path::Path;
use tc_profile_format::{Machine, TaskInfo};

/// The machine, from /proc/cpuinfo and the kernel's own calls (sysinfo, uname) on Linux;
/// elsewhere only what the standard library knows.
pub fn machine() -> Machine {
    // Read through one 16 KiB buffer: read_to_string starts at 32 bytes, and took 22 reads
    // of /proc/cpuinfo on a 2-core machine, each a call into the kernel's formatting.
    let mut buffer = ReadBuffer::new();
    let bytes = buffer
        .read_path(Path::new("/proc/cpuinfo"))
        .unwrap_or_default();
    let cpuinfo = String::from_utf8_lossy(bytes);
    let logical = std::thread::available_parallelism()
        .ok()
        .map(|n| n.get() as u32);
    Machine {
        logical_cpus: logical,
        physical_cpus: physical_cores(&cpuinfo).or(logical),
        main_memory: total_memory(),
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

/// /proc/meminfo's MemTotal (the same count of pages), without the kernel formatting the
/// rest of that file.
#[cfg(target_os = "linux")]
fn total_memory() -> Option<u64> {
    // SAFETY: sysinfo fills the struct it is given; all-zero is a valid one.
    let mut info: libc::sysinfo = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a sysinfo struct, for the call.
    if unsafe { libc::sysinfo(&mut info) } != 0 {
        return None;
    }
    (info.totalram as u64).checked_mul(u64::from(info.mem_unit))
}

#[cfg(not(target_os = "linux"))]
fn total_memory() -> Option<u64> {
    None
}

/// The kernel's release, as /proc/sys/kernel/osrelease says it: one call, no file.
#[cfg(unix)]
fn os_release() -> Option<String> {
    // SAFETY: uname fills the struct it is given; all-zero is a valid one.
    let mut name: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a utsname struct, for the call.
    if unsafe { libc::uname(&mut name) } != 0 {
        return None;
    }
    // SAFETY: uname writes NUL-terminated strings, within the array.
    let release = unsafe { std::ffi::CStr::from_ptr(name.release.as_ptr()) };
    Some(release.to_string_lossy().into_owned())
}

#[cfg(not(unix))]
fn os_release() -> Option<String> {
    None
}

fn os_description() -> Option<String> {
    let release = os_release();
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

    #[cfg(target_os = "linux")]
    #[test]
    fn the_total_memory_is_meminfos_and_the_release_osreleases() {
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
        let line = meminfo
            .lines()
            .find(|l| l.starts_with("MemTotal:"))
            .unwrap();
        let kib: u64 = line
            .split_ascii_whitespace()
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(total_memory(), Some(kib * 1024));
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
        assert_eq!(os_release().as_deref(), Some(release.trim()));
    }

    #[test]
    fn hyperthreads_count_once_as_physical_cores() {
        let cpuinfo = "processor: 0\nphysical id: 0\ncore id: 0\n\nprocessor: 1\nphysical id: 0\ncore id: 0\n\nprocessor: 2\nphysical id: 0\ncore id: 1\n";
        assert_eq!(physical_cores(cpuinfo), Some(2));
    }
}
