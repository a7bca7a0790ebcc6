//! `tc-profile daemon`, `task` and `worker-profile` where the daemon does not run yet (it
//! serves a Unix socket and stops on signals): one line saying so, and tc-profile's own
//! failure status.

use crate::cli::{DaemonArgs, TaskArgs, WorkerProfileArgs};
use anyhow::Result;

/// Never made: there is no socket to reach.
pub use std::convert::Infallible as Unreachable;

pub fn daemon(_: DaemonArgs) -> Result<u8> {
    unix_only()
}

pub fn task(_: TaskArgs) -> Result<u8> {
    unix_only()
}

pub fn worker_profile(_: WorkerProfileArgs) -> Result<u8> {
    unix_only()
}

fn unix_only() -> Result<u8> {
    anyhow::bail!("the daemon and its verbs (daemon, task, worker-profile) are Unix-only for now")
}
