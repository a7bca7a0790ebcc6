//! What the binary does differently on each OS, one file per OS: stop requests (signals;
//! Ctrl-C and Ctrl-Break), `run`'s hold on the command (cgroups; a Job Object), its exit
//! status, the marker file's open, and the hiding of credentials. What Linux and macOS
//! share is unix.rs's; the rest of the binary is one code for all.

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub use unix::*;

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
pub use linux::*;

#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "macos")]
pub use macos::*;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub use windows::*;

/// Cgroups are Linux's: elsewhere `run` refuses their options, and a Linux log's left
/// cgroup is on its own machine.
#[cfg(not(target_os = "linux"))]
mod without_cgroups {
    use crate::cli::RunArgs;
    use tc_profile_finalizer::FinalizeReport;

    pub(super) fn refuse_cgroup_options(args: &RunArgs) -> anyhow::Result<()> {
        if args.cgroup.is_some() || args.own_cgroup {
            anyhow::bail!("--cgroup and --own-cgroup are Linux's (cgroups); leave them out");
        }
        Ok(())
    }

    /// Nothing to remove.
    pub fn remove_left_cgroup(_: &FinalizeReport) {}
}
#[cfg(not(target_os = "linux"))]
use without_cgroups::refuse_cgroup_options;
#[cfg(not(target_os = "linux"))]
pub use without_cgroups::remove_left_cgroup;
