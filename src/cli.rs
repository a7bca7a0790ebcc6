//! Command-line definitions. Parsed arguments become plain option structs for the crates.

mod daemon;
mod export;
mod fleet;
mod input;
mod logs;
mod markers;
mod profiles;
mod recording;
mod values;

pub use daemon::{DaemonArgs, TaskArgs, WorkerProfileArgs};
#[cfg(unix)]
pub use daemon::{DaemonCommand, TaskCommand};
pub use export::{CredentialsArgs, ExportArgs, ExportAtEndArgs, ExportFormatArg};
pub use fleet::FleetArgs;
pub use logs::{FinalizeArgs, RecoverArgs};
pub use markers::{BeginArgs, EndArgs, MarkArgs};
pub use profiles::{AddLogArgs, CompareArgs, MergeArgs, OpenArgs, SummaryArgs, SummaryFormatArg};
pub use recording::{RecordArgs, RecordingArgs, RunArgs, SyncArg};

use clap::{Args, Parser, Subcommand};
use daemon::with_exit_statuses;

#[derive(Parser, Debug)]
#[command(
    name = "tc-profile",
    version,
    about = "Records a CI task's resources and markers into a crash-safe log, and turns it into a Firefox Profiler profile.",
    after_help = "Examples:\n  tc-profile run -- make -j8\n  tc-profile record --ready-file ready.txt\n  \
        tc-profile begin build; make; tc-profile end build\n  \
        tc-profile finalize profile_resource-usage.jsonl\n  tc-profile recover --state-dir /var/lib/tc-profile\n  \
        tc-profile summary profile_resource-usage.json\n  tc-profile open profile_resource-usage.json"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run a command while recording, then write its profile.
    #[command(
        after_help = "Example:\n  tc-profile run --interval 0.5 -o build-profile.json -- make -j8\n\n\
        The exit status is the command's (128+N when signal N killed it). SIGINT and SIGTERM\n\
        sent to tc-profile are forwarded to the command."
    )]
    Run(RunArgs),
    /// Record until SIGTERM or SIGINT (a worker's sidecar), then write the profile.
    #[command(
        after_help = "Example:\n  tc-profile record --profile-dir /builds/profile --ready-file /builds/ready\n\n\
        Once recording, it prints the profile directory (or writes it to --ready-file): start\n\
        the task then, with TASKCLUSTER_PROFILE_DIR set to it. On SIGTERM or SIGINT it takes\n\
        the last marker lines, writes the profile and exits 0."
    )]
    Record(RecordArgs),
    /// Turn a log (complete, or left by a killed recorder) into a profile.
    #[command(
        after_help = "Example:\n  tc-profile finalize profile_resource-usage.jsonl -o profile.json\n\n\
        A torn last line is dropped; intervals still open are closed at the last time seen and\n\
        flagged as cut off. The log is removed once the profile is durable, unless --keep-log.\n\
        A recorder just killed holds the log's lock for a moment: that is waited for (--wait);\n\
        a running one is refused at once, by pid."
    )]
    Finalize(FinalizeArgs),
    /// Finalize every log in a state directory whose recorder is gone (after a crash or a
    /// reboot).
    #[command(
        after_help = "Example:\n  tc-profile recover --state-dir /var/lib/tc-profile\n\n\
        Each log whose recorder died becomes a profile beside it (NAME.jsonl to NAME.json),\n\
        once: a running recorder and a recoverer at work hold a lock on their log, which\n\
        others leave alone. One line per log says what was done. Exits 2 if a log could not\n\
        be finalized."
    )]
    Recover(RecoverArgs),
    /// Add an instant marker to $TASKCLUSTER_PROFILE_DIR.
    #[command(
        after_help = "Example:\n  tc-profile mark 'cache restored' --text \"3.2 GB\"\n\n\
        Appends to $TASKCLUSTER_PROFILE_DIR/<PPID>.jsonl, PPID being the calling shell's pid."
    )]
    Mark(MarkArgs),
    /// Begin an interval marker; `end` with the same NAME (or --id) ends it.
    #[command(
        after_help = "Example:\n  tc-profile begin build --category task\n  make\n  \
        tc-profile end build\n\n\
        Without --id, begin and end match by NAME among the calls of one shell (one file);\n\
        with --id, across all processes."
    )]
    Begin(BeginArgs),
    /// End the latest interval begun with NAME (or --id).
    #[command(after_help = "Example:\n  tc-profile end build --text 'exit 0'")]
    End(EndArgs),
    /// Summarize a profile or a log: steps, CPU, memory, disk, network, a right-sizing hint.
    #[command(
        after_help = "Examples:\n  tc-profile summary profile_resource-usage.json\n  \
        tc-profile summary --format json profile_resource-usage.jsonl.gz > summary.json\n  \
        tc-profile summary --from 12000 --to 72000 profile_resource-usage.json\n\n\
        A log is finalized in memory (and left as it is). The JSON form is stable; its keys\n\
        are described in the README."
    )]
    Summary(SummaryArgs),
    /// Open a profile or a log in the Firefox Profiler, served from this machine.
    #[command(
        after_help = "Example:\n  tc-profile open profile_resource-usage.json\n\n\
        Serves the file on 127.0.0.1 until the profiler has fetched it (or Ctrl-C), prints\n\
        the profiler's link and opens it in a browser when one is available. A log is\n\
        finalized in memory first, so that a torn one opens too."
    )]
    Open(OpenArgs),
    /// Print a shell's completion script.
    #[command(
        after_help = "Examples:\n  tc-profile completions bash > /etc/bash_completion.d/tc-profile\n  \
        tc-profile completions zsh > ~/.zfunc/_tc-profile"
    )]
    Completions(CompletionsArgs),
    /// Export a task's metrics and summary to InfluxDB or statsd, or print them.
    #[command(
        after_help = "Examples:\n  tc-profile export profile_resource-usage.json --influx https://influx.example.com:8086 --database ci\n  \
        tc-profile export profile_resource-usage.jsonl --format json\n\n\
        InfluxDB credentials come from --influx-credentials FILE (lines token=..., or username=...\n\
        and password=...; the file must be readable by its owner only), else from\n\
        TC_PROFILE_INFLUX_TOKEN, or TC_PROFILE_INFLUX_USERNAME and TC_PROFILE_INFLUX_PASSWORD.\n\
        A write is tried 5 times, about 4 s of waits in between, 30 s at most each."
    )]
    Export(ExportArgs),
    /// Merge profiles (the tasks of a group, the runs of a task) into one, a process each.
    #[command(
        after_help = "Example:\n  tc-profile merge build.json test.json.gz lint.jsonl -o group.json\n\n\
        The profiles are placed by their wall-clock start; each is a process named by its task\n\
        (its name and id, else its file's name), with its own tracks. Logs are finalized in\n\
        memory and left as they are; Mozilla's resource profiles are read too."
    )]
    Merge(MergeArgs),
    /// Why is this run slower? Two runs compared step by step, and merged aligned.
    #[command(
        after_help = "Example:\n  tc-profile compare base.json new.jsonl --align build -o compare.json\n\n\
        Steps (lifecycle steps, task intervals, the command, log components) match by name and\n\
        order. The table lists them, those that account for most of the difference first, with\n\
        each run's CPU, memory, disk and network in the step; then the steps of one run only\n\
        and the commands that changed most. The merged profile puts NEW beside BASE, moved so\n\
        that the aligned step starts at the same time, with a Compare marker per step."
    )]
    Compare(CompareArgs),
    /// Right-size worker pools: many tasks' CPU and memory per group, and the cheapest
    /// instance type that covers each.
    #[command(
        after_help = "Examples:\n  tc-profile fleet profiles/ --by task-name -o fleet.html\n  \
        tc-profile fleet --influx https://influx.example.com:8086 --database ci --since 30d --json\n\n\
        Per group: tasks, duration, cores used (each task's own CPU p95), memory peak, idle\n\
        share, OOM kills, timeouts, and the cheapest catalog type whose cores cover the p95 and\n\
        memory the max, each at most 75 % used, with the saving per 1,000 tasks. A group of\n\
        under 20 tasks, or with OOM kills, gets no smaller type. An unreadable input is\n\
        named and skipped."
    )]
    Fleet(FleetArgs),
    /// Add a task's log (Taskcluster's live_backing.log, say) to a profile or a log.
    #[command(
        after_help = "Example:\n  tc-profile add-log profile_resource-usage.json live_backing.log -o with-log.json\n\n\
        Each line becomes a Log marker: a line [component(:level)? ISO-8601] at its time\n\
        (clamped into the profile), named by its component; any other at the time of the\n\
        line with a time before it. PROFILE may be a log, compressed, or Mozilla's."
    )]
    AddLog(AddLogArgs),
    /// Record the whole worker (a service): per-task profiles are cut from it on request.
    #[command(
        after_help = with_exit_statuses("Example:\n  tc-profile daemon --state-dir /var/lib/tc-profile --ready-file /run/tc-profile/ready\n\n\
        Samples the machine into segment logs in DIR and listens on a Unix socket (mode 0600)\n\
        for `task start`, `task end` and `worker-profile`. On SIGTERM or SIGINT it ends every\n\
        log cleanly and exits 0; the tasks still open are resumed by the next daemon.")
    )]
    Daemon(DaemonArgs),
    /// Begin or end a task recorded by the daemon.
    #[command(after_help = with_exit_statuses("Example:\n  tc-profile task start abc123 --run-id 0 --user 1000\n  \
        tc-profile task start abc123 --run-id 0 --pid 4242\n  \
        tc-profile task end abc123 --run-id 0 --exit-status 0 -o profile.json\n\n\
        The first start prints the profile directory: start the task with\n\
        TASKCLUSTER_PROFILE_DIR set to it, then give the daemon its pid (or --cgroup)."))]
    Task(TaskArgs),
    /// Write the worker's profile over a span: machine tracks, tasks, idle time.
    #[command(after_help = with_exit_statuses(
        "Example:\n  tc-profile worker-profile --since 1d -o worker.json"
    ))]
    WorkerProfile(WorkerProfileArgs),
}

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn input_caps_default_to_the_finalizer_s() {
        let cli = Cli::try_parse_from(["tc-profile", "summary", "p.json"]).unwrap();
        let Command::Summary(args) = cli.command else {
            panic!("not summary");
        };
        assert_eq!(
            args.input_caps.caps(),
            tc_profile_finalizer::InputCaps::default()
        );
        assert_eq!(values::parse_size("3M"), Ok(3 << 20));
        assert!(values::parse_size("0").is_err() && values::parse_size("G").is_err());
    }

    #[test]
    fn the_default_wait_is_the_one_run_uses_for_its_recovery() {
        let cli = Cli::parse_from(["tc-profile", "recover", "--state-dir", "d"]);
        let Command::Recover(args) = cli.command else {
            panic!("{:?}", cli.command);
        };
        assert_eq!(args.lock_wait.wait, tc_profile_finalizer::DEFAULT_LOCK_WAIT);
    }
}
