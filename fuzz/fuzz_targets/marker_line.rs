//! One marker-file line as plain bytes (any process of the task writes them): a line that
//! is accepted re-encodes to an equivalent line, and the log line made of it decodes back
//! to itself (SPEC.md, "Marker files").
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| tc_profile_fuzz::check_marker_line(bytes));
