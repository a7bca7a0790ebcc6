//! The `tc-profile` binary: a thin command line over the format-spec, recorder and
//! finalizer crates. Exit codes are decided here alone.

mod cli;
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
        Command::Finalize(args) => finalize_log(args),
    }
}

fn finalize_log(args: FinalizeArgs) -> Result<u8> {
    let report = finalize(
        &args.log,
        &FinalizeOptions {
            output: args.output,
            keep_log: args.keep_log,
        },
    )?;
    let mut notes = Vec::new();
    if report.compaction.ended_early {
        notes.push(format!(
            "recording ended early at {:.3} s, {} intervals cut off",
            report.compaction.end_time / 1000.0,
            report.compaction.cut_off
        ));
    }
    if !report.damage.is_empty() {
        notes.push(report.damage.summary());
    }
    let notes = if notes.is_empty() {
        String::new()
    } else {
        format!("; {}", notes.join("; "))
    };
    eprintln!(
        "tc-profile: profile written to {} ({} markers){notes}",
        report.output.display(),
        report.markers
    );
    Ok(0)
}
