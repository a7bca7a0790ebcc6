//! The daemon as a worker drives it: from an empty state directory, its housekeeping rotates
//! and applies retention; `task start` refuses what it cannot follow, with an exit status
//! that says why; the task's first phase is whole; `--json` says what the task needs.

use crate::daemon::Daemon;
use crate::util::{wait_for, Sandbox};
use std::collections::BTreeSet;

/// The segment files in the state directory now.
fn segment_names(sandbox: &Sandbox) -> BTreeSet<String> {
    let entries = std::fs::read_dir(sandbox.path("state/segments")).unwrap();
    entries
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect()
}

#[test]
fn housekeeping_from_an_empty_state_directory_rotates_and_applies_retention_without_a_panic() {
    let sandbox = Sandbox::new();
    assert!(!sandbox.path("state").exists());
    let daemon = Daemon::start(&sandbox, &["--segment-age", "0.5", "--retain", "2s"]);
    let first = segment_names(&sandbox);
    assert_eq!(first.len(), 1, "{first:?}");
    let mut seen = first.clone();
    // Rotation makes new segments; retention removes the first once it ended 2 s ago.
    wait_for(|| {
        let now = segment_names(&sandbox);
        seen.extend(now.iter().cloned());
        seen.len() >= 5 && now.is_disjoint(&first)
    });
    let stderr = daemon.stderr.clone();
    daemon.stop();
    let stderr = std::fs::read_to_string(stderr).unwrap();
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        segment_names(&sandbox).len() < seen.len(),
        "retention removed some: {seen:?}"
    );
}
