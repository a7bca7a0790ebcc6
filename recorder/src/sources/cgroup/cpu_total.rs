//! A cgroup's CPU total: the time on CPU of every task that has been in it, which the
//! kernel adds up as it charges each task's run time (the same figure a task's schedstat
//! shows), so it tells the process tree whether processes it did not read can have run.

use crate::sources::procfs::{decimal, keyed_number, ReadBuffer};
use std::fs::File;
use std::path::Path;

/// cgroup v2's `cpu.stat` (there with or without the cpu controller), or, in a v1 cpuacct
/// cgroup (a hybrid host's only CPU total), `cpuacct.usage`; kept open.
pub(crate) enum CpuTotal {
    V2CpuStat(File),
    V1CpuacctUsage(File),
}

impl CpuTotal {
    /// The total of the cgroup at `cgroup`, if it has one that reads: a v1 cpu,cpuacct
    /// cgroup has a `cpu.stat` too, of throttling alone.
    pub(crate) fn open(cgroup: &Path) -> Option<CpuTotal> {
        let open = |name: &str| File::open(cgroup.join(name)).ok();
        let reads = |total: &CpuTotal| total.read_ns(&mut ReadBuffer::new()).is_some();
        let v2 = open("cpu.stat").map(CpuTotal::V2CpuStat).filter(reads);
        v2.or_else(|| open("cpuacct.usage").map(CpuTotal::V1CpuacctUsage))
            .filter(reads)
    }

    /// The total now, ns (v2 counts whole µs).
    pub(crate) fn read_ns(&self, buffer: &mut ReadBuffer) -> Option<u64> {
        match self {
            CpuTotal::V2CpuStat(file) => {
                let text = std::str::from_utf8(buffer.head_of(file)?).ok()?;
                usage_usec(text)?.checked_mul(1000)
            }
            CpuTotal::V1CpuacctUsage(file) => decimal(buffer.head_of(file)?.trim_ascii_end()),
        }
    }
}

/// `usage_usec` of a v2 `cpu.stat`: every task's time on CPU, µs.
pub(crate) fn usage_usec(cpu_stat: &str) -> Option<u64> {
    keyed_number(cpu_stat, "usage_usec")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::fake_root;

    #[test]
    fn the_total_is_read_in_ns_from_v2_or_v1_cpuacct_beside_v1_cpus_stat() {
        let v2 = fake_root(&[("cpu.stat", "usage_usec 1234\nuser_usec 1000\n")]);
        let v1 = fake_root(&[
            (
                "cpu.stat",
                "nr_periods 0\nnr_throttled 0\nthrottled_time 0\n",
            ),
            ("cpuacct.usage", "987654321\n"),
        ]);
        let neither = fake_root(&[("memory.current", "1\n")]);
        let mut buffer = ReadBuffer::new();
        let mut total = |root: &Path| CpuTotal::open(root).map(|t| t.read_ns(&mut buffer));
        assert_eq!(total(v2.path()), Some(Some(1_234_000)));
        assert_eq!(total(v1.path()), Some(Some(987_654_321)));
        assert_eq!(total(neither.path()), None);
    }
}
