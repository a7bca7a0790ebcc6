//! The `tc-profile` binary: a thin command line over the format-spec, recorder and
//! finalizer crates. Exit codes are decided here alone.

mod cli;
mod mark;
mod record;
mod recording;
mod recover;
mod report;
mod run;

use anyhow::Result;
use clap::Parser;
use cli::{Cli, Command, FinalizeArgs};
use std::process::ExitCode;
use tc_profile_finalizer::{finalize, FinalizeOptions};

/// Exit code of tc-profile's own failures (bad input, unwritable output).
const FAILURE: u8 = 2;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match dispatch(cli.command) {
        Ok(code) => ExitCode::from(code),
        Err(error) => {
            eprintln!("tc-profile: error: {error:#}");
            ExitCode::from(FAILURE)
        }
    }
}

fn dispatch(command: Command) -> Result<u8> {
    match command {
        Command::Run(args) => run::run(args),
        Command::Record(args) => record::record(args),
        Command::Finalize(args) => finalize_log(args),
        Command::Recover(args) => recover::recover_command(args),
        Command::Mark(args) => mark::mark(args),
        Command::Begin(args) => mark::begin(args),
        Command::End(args) => mark::end(args),
    }
}

fn finalize_log(args: FinalizeArgs) -> Result<u8> {
    let report = finalize(
        &args.log,
        &FinalizeOptions {
            output: args.output,
            keep_log: args.keep_log,
            profile_dir: args.profile_dir,
            limits: args.limits.limits(),
            ..FinalizeOptions::default()
        },
    )?;
    eprintln!("tc-profile: {}", report::describe_finalized(&report));
    Ok(0)
}
