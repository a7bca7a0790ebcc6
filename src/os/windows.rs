//! Windows: Ctrl-C and Ctrl-Break, `run`'s Job Object, exit codes, the parent process.

use super::refuse_cgroup_options;
use crate::cli::RunArgs;
use anyhow::{Context, Result};
use std::fs::{File, Metadata, OpenOptions};
use std::os::windows::fs::OpenOptionsExt;
use std::os::windows::io::{AsHandle, AsRawHandle, FromRawHandle, OwnedHandle};
use std::os::windows::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus};
use std::sync::{Condvar, Mutex};
use tc_profile_recorder::TaskCgroup;
use windows_sys::core::BOOL;
use windows_sys::Win32::Foundation::{HANDLE, INVALID_HANDLE_VALUE};
use windows_sys::Win32::Storage::FileSystem::FILE_FLAG_OPEN_REPARSE_POINT;
use windows_sys::Win32::System::Console::{SetConsoleCtrlHandler, CTRL_BREAK_EVENT, CTRL_C_EVENT};
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
    CreateToolhelp32Snapshot, Process32FirstW, Process32NextW, Thread32First, Thread32Next,
    PROCESSENTRY32W, TH32CS_SNAPPROCESS, TH32CS_SNAPTHREAD, THREADENTRY32,
};
use windows_sys::Win32::System::JobObjects::{AssignProcessToJobObject, CreateJobObjectW};
use windows_sys::Win32::System::Threading::{
    OpenThread, ResumeThread, TerminateProcess, CREATE_SUSPENDED, THREAD_SUSPEND_RESUME,
};

/// Whether a Ctrl-C or Ctrl-Break came, and its waiters.
static STOP_REQUESTED: (Mutex<bool>, Condvar) = (Mutex::new(false), Condvar::new());

/// Ctrl-C and Ctrl-Break, caught from [`StopRequests::install`] on: `record` stops at the
/// first.
pub struct StopRequests(());

impl StopRequests {
    pub fn install() -> Result<StopRequests> {
        add_console_handler(note_stop_request).map(StopRequests)
    }

    pub fn wait(self) {
        let (requested, woken) = &STOP_REQUESTED;
        let mut stop = requested
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        while !*stop {
            stop = woken
                .wait(stop)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        }
    }
}

/// Runs on a thread of the system's, which may block.
unsafe extern "system" fn note_stop_request(event: u32) -> BOOL {
    if event != CTRL_C_EVENT && event != CTRL_BREAK_EVENT {
        return 0;
    }
    let (requested, woken) = &STOP_REQUESTED;
    *requested
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner()) = true;
    woken.notify_all();
    1
}

/// Survives Ctrl-C and Ctrl-Break while `run`'s command runs: the console sends them to
/// the command too (it shares tc-profile's console and process group), so the command
/// decides, and the recording ends with it.
unsafe extern "system" fn outlive_the_command(event: u32) -> BOOL {
    BOOL::from(event == CTRL_C_EVENT || event == CTRL_BREAK_EVENT)
}

type ConsoleHandler = unsafe extern "system" fn(u32) -> BOOL;

fn add_console_handler(handler: ConsoleHandler) -> Result<()> {
    // SAFETY: the handler is a function of the program's, which lives as long as it does.
    if unsafe { SetConsoleCtrlHandler(Some(handler), 1) } == 0 {
        return Err(std::io::Error::last_os_error())
            .context("installing the Ctrl-C and Ctrl-Break handler");
    }
    Ok(())
}

/// `run`'s Ctrl-C and Ctrl-Break: the command gets them from the console itself.
pub struct StopForwarding(());

impl StopForwarding {
    pub fn install() -> Result<StopForwarding> {
        add_console_handler(outlive_the_command).map(StopForwarding)
    }

    pub fn set_target(&self, _pid: u32) {}

    pub fn stop(self) {
        // SAFETY: removes the handler that install added.
        unsafe { SetConsoleCtrlHandler(Some(outlive_the_command), 0) };
    }
}

/// `run`'s command and every process it starts, in a Job Object: the command starts
/// suspended, joins the job, then runs, so that no child of it is born outside. tc-profile
/// may die first: the job does not kill the command then (as on Linux).
pub struct CommandScope {
    job: Option<OwnedHandle>,
}

impl CommandScope {
    /// The scope; no cgroup (they are Linux's).
    pub fn create(args: &RunArgs) -> Result<(CommandScope, Option<TaskCgroup>)> {
        refuse_cgroup_options(args)?;
        // SAFETY: no attributes, no name: a new job of this process's.
        let job = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
        let job = owned(job)
            .map_err(|error| {
                eprintln!("tc-profile: warning: no Job Object for the command: {error}")
            })
            .ok();
        Ok((CommandScope { job }, None))
    }

    pub fn prepare(&self, command: &mut Command) {
        if self.job.is_some() {
            command.creation_flags(CREATE_SUSPENDED);
        }
    }

    /// Puts the suspended command in the job, then lets it run (in the job or not).
    pub fn adopt(&self, child: &Child) {
        let Some(job) = &self.job else { return };
        // SAFETY: both handles are open: the job's ours, the process's the Child's.
        let joined =
            unsafe { AssignProcessToJobObject(job.as_raw_handle(), child.as_raw_handle()) };
        if joined == 0 {
            eprintln!(
                "tc-profile: warning: the command is not in its Job Object: {}",
                std::io::Error::last_os_error()
            );
        }
        if let Err(error) = resume_threads(child.id()) {
            // Suspended for ever, it would hold the task: ended, it fails the step.
            // SAFETY: the Child's process handle is open.
            unsafe { TerminateProcess(child.as_raw_handle(), 1) };
            eprintln!("tc-profile: cannot resume the command, so it was ended: {error}");
        }
    }

    pub fn remove(self) {}
}

/// Resumes the threads of a process started suspended (its one thread).
fn resume_threads(pid: u32) -> std::io::Result<()> {
    let snapshot = snapshot(TH32CS_SNAPTHREAD)?;
    let mut entry = THREADENTRY32 {
        dwSize: size_of::<THREADENTRY32>() as u32,
        ..Default::default()
    };
    // SAFETY: the snapshot is open and the entry's size is set.
    let mut more = unsafe { Thread32First(snapshot.as_raw_handle(), &mut entry) } != 0;
    while more {
        if entry.th32OwnerProcessID == pid {
            // SAFETY: a thread id from the snapshot; the handle is closed by OwnedHandle.
            let thread =
                owned(unsafe { OpenThread(THREAD_SUSPEND_RESUME, 0, entry.th32ThreadID) })?;
            // SAFETY: the thread's handle is open with THREAD_SUSPEND_RESUME.
            if unsafe { ResumeThread(thread.as_raw_handle()) } == u32::MAX {
                return Err(std::io::Error::last_os_error());
            }
        }
        // SAFETY: as for Thread32First.
        more = unsafe { Thread32Next(snapshot.as_raw_handle(), &mut entry) } != 0;
    }
    Ok(())
}

fn snapshot(kind: u32) -> std::io::Result<OwnedHandle> {
    // SAFETY: a snapshot of all processes or threads, closed by OwnedHandle.
    owned(unsafe { CreateToolhelp32Snapshot(kind, 0) })
}

/// A handle that a call returned, or its error (null and INVALID_HANDLE_VALUE both fail).
fn owned(handle: HANDLE) -> std::io::Result<OwnedHandle> {
    if handle.is_null() || handle == INVALID_HANDLE_VALUE {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a handle just returned to us, owned by nothing else.
    Ok(unsafe { OwnedHandle::from_raw_handle(handle) })
}

/// The command's exit code (GetExitCodeProcess's) when it fits in a byte, else 1: an
/// NTSTATUS such as 0xC000013A (ended by Ctrl-C) is not one.
pub fn exit_code(status: ExitStatus) -> u8 {
    status
        .code()
        .and_then(|code| u8::try_from(code).ok())
        .unwrap_or(1)
}

/// "exit code N", an NTSTATUS in hexadecimal.
pub fn describe_status(status: ExitStatus) -> String {
    match status.code() {
        Some(code @ 0..=255) => format!("exit code {code}"),
        Some(code) => format!("exit code {:#X}", code as u32),
        None => "unknown".to_owned(),
    }
}

/// A handle of tc-profile's own stdout or stderr, for the relay of the command's.
pub fn duplicate_output(own: &impl AsHandle) -> std::io::Result<File> {
    own.as_handle().try_clone_to_owned().map(File::from)
}

/// The process that ran tc-profile (cmd.exe running a script), from a process listing.
pub fn parent_pid() -> u32 {
    let own = std::process::id();
    let Ok(snapshot) = snapshot(TH32CS_SNAPPROCESS) else {
        return own;
    };
    // SAFETY: PROCESSENTRY32W is plain data: all zeroes is a valid value.
    let mut entry: PROCESSENTRY32W = unsafe { std::mem::zeroed() };
    entry.dwSize = size_of::<PROCESSENTRY32W>() as u32;
    // SAFETY: the snapshot is open and the entry's size is set.
    let mut more = unsafe { Process32FirstW(snapshot.as_raw_handle(), &mut entry) } != 0;
    while more {
        if entry.th32ProcessID == own {
            return entry.th32ParentProcessID;
        }
        // SAFETY: as for Process32FirstW.
        more = unsafe { Process32NextW(snapshot.as_raw_handle(), &mut entry) } != 0;
    }
    own
}

/// Opens a marker file to append to, never through a symbolic link or junction (the link
/// itself is opened).
pub fn open_marker_file(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .append(true)
        .create(true)
        .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
        .open(path)
}

/// Not checked: who may read a file is its ACL's to say, not a mode.
pub fn readable_by_others(_: &Metadata) -> Option<u32> {
    None
}

/// Nothing to do: no flag closes a process's memory to others of its user.
pub fn close_memory_to_others() {}

/// Removes these variables from the process's environment; true if one was set.
pub fn blank_environment_values(names: &[&str]) -> bool {
    let mut blanked = false;
    for name in names {
        if std::env::var_os(name).is_some() {
            std::env::remove_var(name);
            blanked = true;
        }
    }
    blanked
}
