//! What the report of every part ends with: its failures, the first ten, one a line.

use std::fmt;

/// Failures beyond these are counted in the part's figures, not printed.
const FAILURES_SHOWN: usize = 10;

pub fn write_failures(f: &mut fmt::Formatter<'_>, failures: &[String]) -> fmt::Result {
    for failure in failures.iter().take(FAILURES_SHOWN) {
        write!(f, "\n   FAILED {failure}")?;
    }
    Ok(())
}
