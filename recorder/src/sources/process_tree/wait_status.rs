//! Wait statuses in words, for the "Process" markers and for `run`'s "Command" marker
//! (on every Unix).

/// A wait status (waitpid(2)'s, or `ExitStatus::into_raw`) in the words of a "Process"
/// marker and of `run`'s "Command" marker: "exit code N", "killed by signal N", or
/// "unknown" when there is none or it is neither.
pub fn describe_status(status: Option<i32>) -> String {
    match status {
        Some(s) if libc::WIFEXITED(s) => format!("exit code {}", libc::WEXITSTATUS(s)),
        Some(s) if libc::WIFSIGNALED(s) => format!("killed by signal {}", libc::WTERMSIG(s)),
        _ => "unknown".to_owned(),
    }
}
