//! The swap track, from /proc/vmstat kept open.

use crate::sources::machine::Machine;
use crate::sources::procfs::{keyed_number, sysconf, ReadBuffer};
use crate::sources::{Lines, Source};
use std::fs::File;
use std::path::Path;
use tc_profile_format::schema::{data_type, source, track};
use tc_profile_format::{DataFields, TrackData};

/// /proc/vmstat is the longest file the sampler reads; swapping shows over seconds.
const SWAP_PACE_MS: f64 = 1000.0;

struct SwapData {
    kind: &'static str,
    swap_in: u64,
    swap_out: u64,
}

impl TrackData for SwapData {
    fn data_type(&self) -> &'static str {
        self.kind
    }

    fn write_fields(&self, fields: &mut DataFields) {
        fields.u64("swap_in", self.swap_in);
        fields.u64("swap_out", self.swap_out);
    }
}

/// "Swap": bytes swapped in and out per interval, from /proc/vmstat. On only where swap is
/// configured: without it these are not zeros but nothing.
pub(crate) struct Swap {
    vmstat: Option<File>,
    page_size: u64,
    buffer: ReadBuffer,
    previous: Option<(f64, [u64; 2])>,
}

impl Swap {
    pub(crate) fn probe(proc_root: &Path, machine: &Machine) -> Option<Swap> {
        if machine.memory.as_ref()?.swap_total == 0 {
            return None;
        }
        let mut swap = Swap {
            vmstat: File::open(proc_root.join("vmstat")).ok(),
            page_size: sysconf(libc::_SC_PAGESIZE)?,
            buffer: ReadBuffer::new(),
            previous: None,
        };
        swap.read()?;
        Some(swap)
    }

    /// Pages swapped in and out since boot.
    fn read(&mut self) -> Option<[u64; 2]> {
        let text = self.buffer.text_of(&self.vmstat)?;
        Some([
            keyed_number(text, "pswpin")?,
            keyed_number(text, "pswpout")?,
        ])
    }
}

impl Source for Swap {
    fn names(&self) -> Vec<&'static str> {
        vec![source::SWAP]
    }

    fn pace_ms(&self) -> f64 {
        SWAP_PACE_MS
    }

    fn tick(&mut self, now: f64, out: &mut Lines) {
        let Some(pages) = self.read() else {
            return;
        };
        if let Some((start, before)) = self.previous.replace((now, pages)) {
            let bytes = |i: usize| pages[i].saturating_sub(before[i]) * self.page_size;
            let data = SwapData {
                kind: data_type::SWAP,
                swap_in: bytes(0),
                swap_out: bytes(1),
            };
            out.track(track::SWAP, start, now, &data);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::fake_root;
    use crate::sources::machine::machine_of;
    use crate::sources::tick_markers;
    use std::fs;

    #[test]
    fn swap_is_off_without_swap_and_counts_bytes_with_it() {
        let vmstat = "pgpgin 1\npswpin 10\npswpout 20\n";
        let none = fake_root(&[
            (
                "meminfo",
                "MemTotal: 10 kB\nMemFree: 5 kB\nSwapTotal: 0 kB\n",
            ),
            ("vmstat", vmstat),
        ]);
        assert!(
            Swap::probe(none.path(), &machine_of(none.path())).is_none(),
            "no swap is no source, not zeros"
        );

        let root = fake_root(&[
            (
                "meminfo",
                "MemTotal: 10 kB\nMemFree: 5 kB\nSwapTotal: 8 kB\n",
            ),
            ("vmstat", vmstat),
        ]);
        let mut swap = Swap::probe(root.path(), &machine_of(root.path())).unwrap();
        tick_markers(&mut swap, 0.0);
        fs::write(root.path().join("vmstat"), "pswpin 12\npswpout 20\n").unwrap();
        let out = tick_markers(&mut swap, 100.0);
        let data = out[0].data.as_ref().unwrap();
        assert_eq!(data["swap_in"].as_u64(), Some(2 * swap.page_size));
        assert_eq!(data["swap_out"].as_u64(), Some(0));
    }
}
