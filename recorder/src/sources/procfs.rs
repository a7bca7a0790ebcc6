//! Reading /proc, /sys and cgroup files into one reused buffer. Their size is unknown to
//! stat, and a file kept open regenerates its text on every read from offset 0: two preads
//! a sample, where opening it each time takes six system calls (open, statx, lseek, two
//! reads, close). A read returns at most about a page of a long file, so reading goes on
//! until one returns nothing, or so little that it must have reached the end. The text is
//! parsed as bytes ([`lines`], [`fields`], [`decimal`]): the files are ASCII, and a tick's
//! parsing then needs no UTF-8 check and none of `str`'s searchers.

use std::fs::File;
use std::io;
use std::path::Path;

/// Enough for the head of /proc/stat and /proc/meminfo on any machine; grows for longer
/// files read whole.
const INITIAL: usize = 16 * 1024;
/// A read shorter than this and than the room it had reached the end of the file: the
/// kernel fills a read of a /proc or /sys file with a page (4 KiB) of it, less at most
/// one of its lines, which are far shorter. Saves the read that returns nothing: one
/// system call a file and tick (/proc/net/dev, pressure). Only for files whose lines are
/// short: a line of more than 2 KiB after a short one (mountinfo with long options) would
/// end the file early.
const SHORT_READ: usize = 2048;

pub(crate) struct ReadBuffer {
    bytes: Vec<u8>,
}

impl ReadBuffer {
    pub(crate) fn new() -> ReadBuffer {
        ReadBuffer {
            bytes: vec![0; INITIAL],
        }
    }

    /// Opens, reads whole and closes `path`.
    pub(crate) fn read_path(&mut self, path: &Path) -> io::Result<&[u8]> {
        let file = File::open(path)?;
        self.read_file(&file)
    }

    /// Reads a file kept open, whole, from its start.
    pub(crate) fn read_file(&mut self, file: &File) -> io::Result<&[u8]> {
        let mut filled = 0;
        loop {
            if filled == self.bytes.len() {
                self.bytes.resize(filled * 2, 0);
            }
            let room = self.bytes.len() - filled;
            match tc_profile_fs::read_at(file, &mut self.bytes[filled..], filled as u64) {
                Ok(0) => return Ok(&self.bytes[..filled]),
                Ok(n) if n < room && n < SHORT_READ => return Ok(&self.bytes[..filled + n]),
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// The whole lines of a file's first buffer-full: one pread, for files whose figures are
    /// in their first lines (/proc/stat, /proc/meminfo, /proc/<pid>/stat, a disk's stat),
    /// where reading on to the end costs one more system call per file and tick.
    pub(crate) fn head_of(&mut self, file: &File) -> Option<&[u8]> {
        let read = loop {
            match tc_profile_fs::read_at(file, &mut self.bytes, 0) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                read => break read.ok()?,
            }
        };
        let whole_lines = self.bytes[..read].iter().rposition(|&b| b == b'\n')? + 1;
        Some(&self.bytes[..whole_lines])
    }

    /// The text of a file kept open, or None when there is none or it cannot be read.
    pub(crate) fn text_of(&mut self, file: &Option<File>) -> Option<&str> {
        std::str::from_utf8(self.read_file(file.as_ref()?).ok()?).ok()
    }

    /// The text of `path`, or None when it cannot be read or is not UTF-8.
    pub(crate) fn read_text(&mut self, path: &Path) -> Option<&str> {
        std::str::from_utf8(self.read_path(path).ok()?).ok()
    }
}

/// A positive sysconf(3) value (clock ticks, page size, online CPUs), or None.
#[cfg(unix)]
pub(crate) fn sysconf(name: libc::c_int) -> Option<u64> {
    // SAFETY: sysconf(3) has no memory-safety preconditions.
    let value = unsafe { libc::sysconf(name) };
    (value > 0).then_some(value as u64)
}

/// The lines of a file's text, without their newlines (none after the last newline).
pub(crate) fn lines(text: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let end = memchr::memchr(b'\n', rest).unwrap_or(rest.len());
        let line = &rest[..end];
        rest = rest.get(end + 1..).unwrap_or_default();
        Some(line)
    })
}

/// The fields of a line, between ASCII whitespace (as `str::split_ascii_whitespace`).
pub(crate) fn fields(line: &[u8]) -> impl Iterator<Item = &[u8]> {
    line.split(u8::is_ascii_whitespace)
        .filter(|field| !field.is_empty())
}

/// The fields of a line of numbers, read in one pass: each field's value, or None where it
/// is not a decimal that fits in u64 (`-1`, `0.5`).
pub(crate) fn numbers(line: &[u8]) -> impl Iterator<Item = Option<u64>> + '_ {
    let mut at = 0;
    std::iter::from_fn(move || {
        at += line[at..].iter().position(|b| !b.is_ascii_whitespace())?;
        let start = at;
        let (mut value, mut digits_only) = (0u64, true);
        while let Some(&b) = line.get(at).filter(|b| !b.is_ascii_whitespace()) {
            let digit = b.wrapping_sub(b'0');
            digits_only &= digit < 10;
            value = value.wrapping_mul(10).wrapping_add(u64::from(digit));
            at += 1;
        }
        // 19 digits never overflow u64; 20 may.
        Some(match at - start {
            _ if !digits_only => None,
            ..20 => Some(value),
            _ => decimal(&line[start..at]),
        })
    })
}

/// A field of decimal digits, or None (empty, another byte, or past u64).
pub(crate) fn decimal(field: &[u8]) -> Option<u64> {
    if field.is_empty() {
        return None;
    }
    field.iter().try_fold(0u64, |value, &b| {
        let digit = b.checked_sub(b'0').filter(|d| *d < 10)?;
        value.checked_mul(10)?.checked_add(u64::from(digit))
    })
}

/// The first number after `key` and whitespace or `=` on a line starting with `key`
/// (`pswpin 12`, `oom_kill 1`, `usage_usec 99`).
pub(crate) fn keyed_number(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let rest = line.strip_prefix(key)?;
        let rest = rest.strip_prefix([' ', '\t', '='])?;
        rest.split_ascii_whitespace().next()?.parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_longer_than_the_buffer_is_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("long");
        let text = "x".repeat(INITIAL * 3 + 5);
        std::fs::write(&path, &text).unwrap();
        let mut buffer = ReadBuffer::new();
        assert_eq!(buffer.read_path(&path).unwrap(), text.as_bytes());
        let file = File::open(&path).unwrap();
        assert_eq!(buffer.read_file(&file).unwrap().len(), text.len());
        assert_eq!(
            buffer.read_file(&file).unwrap().len(),
            text.len(),
            "re-read"
        );
    }

    #[test]
    fn files_around_a_short_read_are_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let mut buffer = ReadBuffer::new();
        for length in [1, SHORT_READ - 1, SHORT_READ, SHORT_READ + 1, INITIAL] {
            let path = dir.path().join(length.to_string());
            std::fs::write(&path, "y".repeat(length)).unwrap();
            let file = File::open(&path).unwrap();
            assert_eq!(buffer.read_file(&file).unwrap().len(), length);
        }
    }

    #[test]
    fn lines_and_fields_are_split_as_bytes() {
        let text = b"cpu  1\t2 3\n\nintr 4\nlast";
        let lines: Vec<&[u8]> = lines(text).collect();
        assert_eq!(lines, [&b"cpu  1\t2 3"[..], b"", b"intr 4", b"last"]);
        assert_eq!(
            super::lines(b"a\n").count(),
            1,
            "nothing after the last newline"
        );
        let first: Vec<&[u8]> = fields(lines[0]).collect();
        assert_eq!(first, [&b"cpu"[..], b"1", b"2", b"3"]);
        assert_eq!(fields(b" \t \n").count(), 0);
    }

    #[test]
    fn numbers_are_read_as_decimal_does() {
        let line = b"  0 18446744073709551615 18446744073709551616 00000000000000000000012\t-1 1.5 +3 42\n";
        let read: Vec<Option<u64>> = numbers(line).collect();
        let split: Vec<Option<u64>> = fields(line).map(decimal).collect();
        assert_eq!(read, split);
        let expected = [
            Some(0),
            Some(u64::MAX),
            None,
            Some(12),
            None,
            None,
            None,
            Some(42),
        ];
        assert_eq!(read, expected, "20 digits and more read exactly");
        assert_eq!(numbers(b" \n ").count(), 0);
    }

    /// Lines of any fields, or of long runs of digits (u64's 20 digits and past).
    fn number_lines() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::prelude::*;
        let bytes =
            |alphabet: &'static [u8]| prop::collection::vec(prop::sample::select(alphabet), 0..80);
        prop_oneof![bytes(b"0129 \t\n-.x"), bytes(b"99999999991 ")]
    }

    proptest::proptest! {
        #[test]
        fn numbers_are_fields_read_as_decimals(line in number_lines()) {
            let split: Vec<Option<u64>> = fields(&line).map(decimal).collect();
            proptest::prop_assert_eq!(numbers(&line).collect::<Vec<_>>(), split);
        }
    }

    #[test]
    fn decimals_are_digits_only_and_fit_in_u64() {
        assert_eq!(decimal(b"0"), Some(0));
        assert_eq!(decimal(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(decimal(b"18446744073709551616"), None, "past u64");
        for bad in [&b""[..], b"-1", b"1.5", b"12\n", b"+3", b" 4"] {
            assert_eq!(decimal(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn keyed_numbers_match_the_whole_key() {
        let text = "pswpin_extra 5\npswpin 12\noom_kill 3\nusage_usec=99\n";
        assert_eq!(keyed_number(text, "pswpin"), Some(12));
        assert_eq!(keyed_number(text, "oom_kill"), Some(3));
        assert_eq!(keyed_number(text, "usage_usec"), Some(99));
        assert_eq!(keyed_number(text, "oom"), None);
    }
}
