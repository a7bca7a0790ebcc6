//! What the machine's IO track and the cgroup's share: read and write counters, the
//! `data` of an IO sample, and the whole disks that both count.

use std::fs;
use std::path::{Path, PathBuf};
use tc_profile_format::schema::data_type;
use tc_profile_format::{DataFields, TrackData};

#[derive(Clone, Copy, Default)]
pub(crate) struct Counters {
    pub(crate) read_count: u64,
    pub(crate) read_bytes: u64,
    pub(crate) write_count: u64,
    pub(crate) write_bytes: u64,
}

pub(crate) struct IoData {
    kind: &'static str,
    read_bytes: u64,
    read_count: u64,
    write_bytes: u64,
    write_count: u64,
}

impl TrackData for IoData {
    fn data_type(&self) -> &'static str {
        self.kind
    }

    fn write_fields(&self, fields: &mut DataFields) {
        fields.u64("read_bytes", self.read_bytes);
        fields.u64("read_count", self.read_count);
        fields.u64("write_bytes", self.write_bytes);
        fields.u64("write_count", self.write_count);
    }
}

impl From<Counters> for IoData {
    fn from(d: Counters) -> IoData {
        IoData {
            kind: data_type::IO,
            read_bytes: d.read_bytes,
            read_count: d.read_count,
            write_bytes: d.write_bytes,
            write_count: d.write_count,
        }
    }
}

impl Counters {
    pub(crate) fn plus(self, other: &Counters) -> Counters {
        Counters {
            read_count: self.read_count + other.read_count,
            read_bytes: self.read_bytes + other.read_bytes,
            write_count: self.write_count + other.write_count,
            write_bytes: self.write_bytes + other.write_bytes,
        }
    }

    pub(crate) fn since(self, before: Counters) -> Counters {
        Counters {
            read_count: self.read_count.saturating_sub(before.read_count),
            read_bytes: self.read_bytes.saturating_sub(before.read_bytes),
            write_count: self.write_count.saturating_sub(before.write_count),
            write_bytes: self.write_bytes.saturating_sub(before.write_bytes),
        }
    }
}

/// Block devices backed by hardware (they have a `device` link): not partitions, loop,
/// ram or device-mapper devices, whose I/O is already counted on the disk below them.
pub(crate) fn whole_disks(sys_block: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(sys_block) else {
        return Vec::new();
    };
    let mut disks: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|path| path.join("device").exists())
        .collect();
    disks.sort();
    disks
}
