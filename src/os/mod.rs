//! What the binary does differently on each OS, one file per OS: stop requests (signals;
//! Ctrl-C and Ctrl-Break), `run`'s hold on the command (cgroups; a Job Object), its exit
//! status, the marker file's open, and the hiding of credentials. The rest of the binary
//! is one code for all.

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
pub use linux::*;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub use windows::*;
