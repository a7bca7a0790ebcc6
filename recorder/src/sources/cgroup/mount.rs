//! The cgroup hierarchies as mounted (/proc/self/mountinfo), and where a process's cgroup
//! is in them (/proc/<pid>/cgroup).

use std::fs;
use std::path::PathBuf;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Hierarchy {
    V2,
    V1Memory,
}

impl Hierarchy {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Hierarchy::V2 => "v2",
            Hierarchy::V1Memory => "v1-memory",
        }
    }

    /// A file that a cgroup of this hierarchy with memory accounting has.
    pub(crate) fn memory_file(self) -> &'static str {
        match self {
            Hierarchy::V2 => "memory.current",
            Hierarchy::V1Memory => "memory.usage_in_bytes",
        }
    }
}

/// A cgroup hierarchy as mounted: `root` is the mount's root inside the hierarchy (not
/// `/` in a cgroup namespace or a container).
pub(crate) struct Mount {
    pub(crate) hierarchy: Hierarchy,
    pub(crate) point: PathBuf,
    pub(crate) root: String,
}

pub(crate) fn mounts() -> Vec<Mount> {
    let text = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    text.lines().filter_map(parse_mount).collect()
}

/// `36 25 0:30 / /sys/fs/cgroup/memory rw,relatime shared:9 - cgroup cgroup rw,memory`.
fn parse_mount(line: &str) -> Option<Mount> {
    let (mount, filesystem) = line.split_once(" - ")?;
    let mount: Vec<&str> = mount.split(' ').collect();
    let filesystem: Vec<&str> = filesystem.split(' ').collect();
    let hierarchy = match *filesystem.first()? {
        "cgroup2" => Hierarchy::V2,
        "cgroup" if filesystem.get(2)?.split(',').any(|o| o == "memory") => Hierarchy::V1Memory,
        _ => return None,
    };
    Some(Mount {
        hierarchy,
        point: PathBuf::from(unescape_mount(mount.get(4)?)),
        root: unescape_mount(mount.get(3)?),
    })
}

/// mountinfo writes space, tab, newline and backslash as octal escapes.
fn unescape_mount(field: &str) -> String {
    field
        .replace("\\040", " ")
        .replace("\\011", "\t")
        .replace("\\012", "\n")
        .replace("\\134", "\\")
}

/// The directory of process `pid`'s cgroup in `mount`, from /proc/<pid>/cgroup.
pub(crate) fn cgroup_dir(pid: &str, mount: &Mount) -> Option<PathBuf> {
    let text = fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    let path = text.lines().find_map(|line| {
        let mut fields = line.splitn(3, ':');
        let (id, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        let wanted = match mount.hierarchy {
            Hierarchy::V2 => id == "0" && controllers.is_empty(),
            Hierarchy::V1Memory => controllers.split(',').any(|c| c == "memory"),
        };
        wanted.then_some(path)
    })?;
    let inside = path
        .strip_prefix(mount.root.trim_end_matches('/'))
        .unwrap_or(path);
    Some(mount.point.join(inside.trim_start_matches('/')))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_names_the_v1_memory_and_v2_hierarchies() {
        let v1 = parse_mount(
            "36 25 0:30 / /sys/fs/cgroup/memory rw,relatime shared:9 - cgroup cgroup rw,memory",
        )
        .unwrap();
        assert_eq!(
            (v1.hierarchy, v1.point.to_str(), v1.root.as_str()),
            (Hierarchy::V1Memory, Some("/sys/fs/cgroup/memory"), "/")
        );
        let v2 =
            parse_mount("40 25 0:35 /ci /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw").unwrap();
        assert_eq!((v2.hierarchy, v2.root.as_str()), (Hierarchy::V2, "/ci"));
        assert!(parse_mount("37 25 0:31 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu").is_none());
        assert!(parse_mount("22 1 8:1 / / rw - ext4 /dev/sda1 rw").is_none());
    }
}
