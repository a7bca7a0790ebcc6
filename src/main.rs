//! The `tc-profile` binary: a thin command line over the format-spec, recorder,
//! finalizer and daemon crates. Exit codes are decided here alone.

mod add_log;
mod cli;
mod compare;
#[cfg(unix)]
mod daemon;
#[cfg(not(unix))]
#[path = "daemon_unix_only.rs"]
mod daemon;
mod export;
mod fleet;
mod malloc;
mod mark;
mod merge;
mod open;
mod os;
mod output;
mod progress;
mod record;
mod recording;
mod recover;
mod report;
mod run;
mod summary;

use anyhow::Result;
use clap::error::ErrorKind;
use clap::{CommandFactory, Parser};
use cli::{Cli, Command, CompletionsArgs, FinalizeArgs};
use progress::Reading;
use std::process::ExitCode;
use tc_profile_daemon::{DaemonError, ErrorCode, ErrorReply};
use tc_profile_finalizer::{finalize, FinalizeOptions};

/// Exit code of tc-profile's own failures (bad input, unwritable output).
const FAILURE: u8 = 2;

/// Exit statuses of the daemon's verbs (`daemon`, `task`, `worker-profile`), sysexits.h's,
/// so that a worker tells a refusal from an unreachable daemon without reading the message.
mod sysexits {
    pub const USAGE: u8 = 64;
    pub const DATA: u8 = 65;
    pub const UNAVAILABLE: u8 = 69;
    pub const SOFTWARE: u8 = 70;
    pub const IO: u8 = 74;
    pub const TEMPFAIL: u8 = 75;
}

/// The exit status a failure of a daemon verb is told by; [`FAILURE`] for the others.
fn exit_status(error: &anyhow::Error) -> u8 {
    let code = match (
        error.downcast_ref::<ErrorReply>(),
        error.downcast_ref::<DaemonError>(),
    ) {
        (Some(reply), _) => reply.code,
        (None, Some(error)) => error.code(),
        (None, None) if error.downcast_ref::<daemon::Unreachable>().is_some() => {
            return sysexits::UNAVAILABLE
        }
        (None, None) => return FAILURE,
    };
    match code {
        ErrorCode::BadRequest => sysexits::USAGE,
        ErrorCode::NoSuchProcess
        | ErrorCode::NoSuchCgroup
        | ErrorCode::Refused
        | ErrorCode::NotOpen
        | ErrorCode::AlreadyOpen
        | ErrorCode::TimedOut => sysexits::DATA,
        ErrorCode::Busy => sysexits::TEMPFAIL,
        ErrorCode::Io => sysexits::IO,
        ErrorCode::Internal => sysexits::SOFTWARE,
    }
}

/// The verbs whose usage errors are [`sysexits::USAGE`].
const DAEMON_VERBS: [&str; 3] = ["daemon", "task", "worker-profile"];

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => return usage_error(error),
    };
    match dispatch(cli.command) {
        Ok(code) => ExitCode::from(code),
        Err(error) => {
            eprintln!("tc-profile: error: {}", report::describe_error(&error));
            ExitCode::from(exit_status(&error))
        }
    }
}

fn dispatch(command: Command) -> Result<u8> {
    match command {
        Command::Run(args) => run::run(args),
        Command::Record(args) => record::record(args),
        Command::Finalize(args) => {
            malloc::give_large_allocations_their_own_pages();
            finalize_log(args)
        }
        Command::Recover(args) => {
            malloc::give_large_allocations_their_own_pages();
            recover::recover_command(args)
        }
        Command::Mark(args) => mark::mark(args),
        Command::Begin(args) => mark::begin(args),
        Command::End(args) => mark::end(args),
        Command::Summary(args) => summary::summary(args),
        Command::Open(args) => open::open(args),
        Command::Completions(args) => completions(args),
        Command::Export(args) => export::export(args),
        Command::Merge(args) => merge::merge(args),
        Command::Compare(args) => compare::compare(args),
        Command::Fleet(args) => {
            // Readers on a few threads, each a profile at a time: the arenas and the
            // freed buffers of one profile must not pile up over 10,000.
            malloc::share_malloc_arenas();
            malloc::give_large_allocations_their_own_pages();
            fleet::fleet(args)
        }
        Command::AddLog(args) => add_log::add_log(args),
        Command::Daemon(args) => daemon::daemon(args),
        Command::Task(args) => daemon::task(args),
        Command::WorkerProfile(args) => daemon::worker_profile(args),
    }
}

/// Help and version go out as clap writes them; a wrong argument is one line that says
/// where to read more.
fn usage_error(error: clap::Error) -> ExitCode {
    if matches!(
        error.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = error.print();
        return ExitCode::from(if error.use_stderr() { FAILURE } else { 0 });
    }
    eprintln!(
        "tc-profile: error: {}",
        one_line(&error.render().to_string())
    );
    let verb = subcommand_named();
    match DAEMON_VERBS.contains(&verb.trim_start()) {
        true => ExitCode::from(sysexits::USAGE),
        false => ExitCode::from(FAILURE),
    }
}

/// clap's message and its tips, and a pointer to the command's --help, on one line.
fn one_line(rendered: &str) -> String {
    let mut message = String::new();
    for line in rendered.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if line.starts_with("Usage: ") || line.starts_with("For more information") {
            continue;
        }
        if !message.is_empty() {
            message.push_str(if message.ends_with(':') { " " } else { "; " });
        }
        message.push_str(line.trim_start_matches("error: "));
    }
    format!("{message}; see 'tc-profile{} --help'", subcommand_named())
}

/// " NAME" for the subcommand on the command line, if one is named there.
fn subcommand_named() -> String {
    let command = Cli::command();
    std::env::args()
        .skip(1)
        .find(|arg| !arg.starts_with('-'))
        .filter(|arg| command.find_subcommand(arg).is_some())
        .map(|name| format!(" {name}"))
        .unwrap_or_default()
}

fn finalize_log(args: FinalizeArgs) -> Result<u8> {
    let reading = Reading::start(&args.log, "writing the profile");
    let report = finalize(
        &args.log,
        &report::lock_wait(args.lock_wait.wait),
        &FinalizeOptions {
            output: args.output,
            keep_log: args.keep_log,
            profile_dir: args.profile_dir,
            limits: args.limits.limits(),
            task_log: args.task_log,
            progress: reading.callback(),
            input_caps: args.input_caps.caps(),
            ..FinalizeOptions::default()
        },
    )?;
    drop(reading);
    eprintln!("tc-profile: {}", report::describe_finalized(&report));
    os::remove_left_cgroup(&report);
    Ok(0)
}

fn completions(args: CompletionsArgs) -> Result<u8> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut Cli::command(), "tc-profile", &mut script);
    output::to_stdout(&script)?;
    Ok(0)
}
