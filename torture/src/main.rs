//! The crash-safety torture suite (scripts/torture): SIGKILL of recorders under load,
//! every-byte truncation and NUL tails of real logs, a full file system, and SIGKILL of
//! finalize; and the measured cost of each `--sync` policy. Prints one report and exits 1
//! when any check failed.

mod child;
mod expected;
mod finalize_kills;
mod full_disk;
mod kills;
mod profile_check;
mod random;
mod report;
mod sync_cost;
mod task;
mod truncation;

use anyhow::Result;
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(about = "Crash-safety torture suite of tc-profile")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Runs the four parts and prints the report.
    Suite(SuiteArgs),
    /// Records under marker load until killed (the suite's own recorder).
    #[command(hide = true)]
    Child(child::ChildArgs),
    /// The task of a recording: starts the marker writers, waits until killed.
    #[command(hide = true)]
    Task(task::TaskArgs),
    /// Appends marker-file lines until killed (one of the task's processes).
    #[command(hide = true)]
    MarkerWriter,
    /// Measures the throughput and fdatasync rate of each --sync policy.
    SyncCost(sync_cost::SyncCostArgs),
}

#[derive(clap::Args)]
pub struct SuiteArgs {
    /// The tc-profile binary under test.
    #[arg(long, value_name = "PATH")]
    bin: PathBuf,
    /// Where to work (a directory on a real disk); emptied first.
    #[arg(long, value_name = "DIR")]
    work: PathBuf,
    /// Recorder kills.
    #[arg(long, default_value = "1000")]
    kills: usize,
    /// Logs cut at every byte.
    #[arg(long, default_value = "2")]
    truncated_logs: usize,
    /// Cut at every Nth byte only.
    #[arg(long, default_value = "1")]
    cut_stride: usize,
    /// Full-disk runs.
    #[arg(long, default_value = "10")]
    full_disk_runs: usize,
    /// Hung-disk runs (each takes about 30 s: the bound of `run` on a hung disk).
    #[arg(long, default_value = "1")]
    hung_disk_runs: usize,
    /// finalize kills.
    #[arg(long, default_value = "200")]
    finalize_kills: usize,
    /// Seed of the random moments (default: from the clock); printed in the report.
    #[arg(long)]
    seed: Option<u64>,
}

fn main() -> ExitCode {
    // Its checks are Linux's (a subreaper, cgroups, /proc): type-checked elsewhere, not run.
    if !cfg!(target_os = "linux") {
        eprintln!("torture: runs on Linux only");
        return ExitCode::from(2);
    }
    let result = match Cli::parse().command {
        Command::Suite(args) => suite(args),
        Command::Child(args) => child::run(args).map(|()| true),
        Command::Task(args) => task::run(args).map(|()| true),
        Command::MarkerWriter => task::write_markers().map(|()| true),
        Command::SyncCost(args) => sync_cost::run(args).map(|()| true),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(error) => {
            eprintln!("torture: error: {error:#}");
            ExitCode::from(2)
        }
    }
}

fn suite(args: SuiteArgs) -> Result<bool> {
    let seed = args.seed.unwrap_or_else(random::seed_from_clock);
    let mut random = random::Random::new(seed);
    if args.work.exists() {
        std::fs::remove_dir_all(&args.work)?;
    }
    std::fs::create_dir_all(&args.work)?;
    let bin = std::fs::canonicalize(&args.bin)?;
    let work = std::fs::canonicalize(&args.work)?;

    println!("tc-profile torture report (seed {seed})");
    let kills = kills::run(&bin, &work.join("kills"), args.kills, &mut random)?;
    println!("{kills}");
    let truncation = truncation::run(
        &kills.sample_logs,
        args.truncated_logs,
        args.cut_stride.max(1),
    )?;
    println!("{truncation}");
    let full_disk = full_disk::run(
        &bin,
        &work.join("full-disk"),
        args.full_disk_runs,
        args.hung_disk_runs,
        &mut random,
    )?;
    println!("{full_disk}");
    let finalize = finalize_kills::run(
        &bin,
        &work.join("finalize"),
        args.finalize_kills,
        &mut random,
    )?;
    println!("{finalize}");
    let parts = [
        kills.passed(),
        truncation.passed(),
        full_disk.passed(),
        finalize.passed(),
    ];
    let passed = parts.iter().filter(|&&p| p).count();
    println!("torture: {passed} passed, {} failed", parts.len() - passed);
    Ok(passed == parts.len())
}
