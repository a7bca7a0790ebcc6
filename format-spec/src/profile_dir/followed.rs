//! One followed marker file: where it was read up to, and the reading of its new whole
//! lines within the caps, each handed over as an [`Item`]. What is wrong with a file is
//! reported once and ends its reading; the directory side decides which files to follow.

use crate::marker_file::{Limits, Problem};
use memchr::{memchr, memchr_iter};
use std::fs::File;

/// Bytes read from all files in one scan at most, so that one busy file cannot hold up
/// the batch (and the memory behind it) for long.
pub(super) const SCAN_BYTES: u64 = 4 << 20;

/// What a scan hands to its caller, in file order.
#[derive(Debug, PartialEq)]
pub enum Item<'a> {
    /// One whole line, without its newline.
    Line { file: &'a str, bytes: &'a [u8] },
    /// `count` lines (or files) of `file` dropped, `bytes` long in all; `count` is 0 for the
    /// rest of a line over the cap, counted when its first bytes were.
    Problem {
        file: &'a str,
        problem: Problem,
        count: u64,
        bytes: u64,
    },
}

/// Where a followed file was read up to; `changed` since the last checkpoint.
pub(super) struct Followed {
    pub(super) name: String,
    /// Tells this file from a later one given its inode number; `None` where the file
    /// system gives no handle, or from a checkpoint of an earlier version.
    pub(super) handle: Option<String>,
    pub(super) offset: u64,
    pub(super) done: bool,
    /// Inside a line over the cap: drop bytes up to the next newline.
    pub(super) skipping: bool,
    pub(super) changed: bool,
}

impl Followed {
    /// Whether a file seen under this one's device and inode, with `handle`, is this one.
    /// Only two handles tell files apart; a handle seen for a file that had none (resumed
    /// from an earlier version's checkpoint) is kept for the next time.
    pub(super) fn is_same_file(&mut self, handle: Option<&str>) -> bool {
        match (&self.handle, handle) {
            (Some(known), Some(seen)) => known == seen,
            (None, seen) => {
                self.handle = seen.map(str::to_owned);
                true
            }
            (Some(_), None) => true,
        }
    }
}

/// Marks a file done because of `problem`, reported once.
pub(super) fn finish(
    followed: &mut Followed,
    problem: Problem,
    visit: &mut dyn FnMut(Item<'_>),
) -> u64 {
    followed.done = true;
    followed.changed = true;
    visit(Item::Problem {
        file: &followed.name,
        problem,
        count: 1,
        bytes: 0,
    });
    0
}

/// One file's reading within a scan.
pub(super) struct Reading<'a> {
    pub(super) file: &'a File,
    pub(super) size: u64,
    pub(super) limits: &'a Limits,
    pub(super) take_unterminated: bool,
    pub(super) display: String,
}

impl Reading<'_> {
    pub(super) fn run(
        &mut self,
        followed: &mut Followed,
        buffer: &mut [u8],
        visit: &mut dyn FnMut(Item<'_>),
    ) -> u64 {
        let mut taken = 0u64;
        while followed.offset < self.size && taken < SCAN_BYTES {
            let cap_left = self.limits.file_bytes.saturating_sub(followed.offset);
            let want = (buffer.len() as u64)
                .min(cap_left)
                .min(self.size - followed.offset);
            if want == 0 {
                return taken + finish(followed, Problem::FileTooBig, visit);
            }
            let chunk = &mut buffer[..want as usize];
            let Ok(read) = tc_profile_fs::read_at(self.file, chunk, followed.offset) else {
                return taken;
            };
            if read == 0 {
                break;
            }
            let at_end = followed.offset + read as u64 >= self.size;
            let consumed = self.split(followed, &chunk[..read], at_end, visit);
            followed.offset += consumed;
            taken += consumed;
            if consumed > 0 {
                followed.changed = true;
            } else {
                if followed.offset + read as u64 >= self.limits.file_bytes {
                    return taken + finish(followed, Problem::FileTooBig, visit);
                }
                break; // A line still being written.
            }
        }
        taken
    }

    /// Hands over the whole lines of `chunk`; returns the bytes consumed.
    fn split(
        &self,
        followed: &mut Followed,
        chunk: &[u8],
        at_end: bool,
        visit: &mut dyn FnMut(Item<'_>),
    ) -> u64 {
        let mut position = 0;
        if followed.skipping {
            // The rest of a line already counted as one over the cap: its bytes count too.
            position = match memchr(b'\n', chunk) {
                Some(newline) => {
                    followed.skipping = false;
                    newline + 1
                }
                None => chunk.len(),
            };
            self.too_long(0, position, visit);
            if followed.skipping {
                return position as u64;
            }
        }
        let first = position;
        for newline in memchr_iter(b'\n', &chunk[first..]).map(|at| first + at) {
            self.line(&chunk[position..newline], visit);
            position = newline + 1;
        }
        let rest = &chunk[position..];
        if rest.len() > self.limits.line_bytes {
            self.too_long(1, rest.len(), visit);
            followed.skipping = true;
            position = chunk.len();
        } else if at_end && self.take_unterminated && !rest.is_empty() {
            self.line(rest, visit);
            position = chunk.len();
        }
        position as u64
    }

    fn line(&self, bytes: &[u8], visit: &mut dyn FnMut(Item<'_>)) {
        if bytes.len() > self.limits.line_bytes {
            self.too_long(1, bytes.len() + 1, visit);
        } else if !bytes.iter().all(u8::is_ascii_whitespace) {
            visit(Item::Line {
                file: &self.display,
                bytes,
            });
        }
    }

    /// Counts `lines` over the cap and `bytes` of them dropped: a line read in several
    /// chunks is one line, its bytes counted as each chunk is skipped.
    fn too_long(&self, lines: u64, bytes: usize, visit: &mut dyn FnMut(Item<'_>)) {
        visit(Item::Problem {
            file: &self.display,
            problem: Problem::LineTooLong,
            count: lines,
            bytes: bytes as u64,
        });
    }
}
