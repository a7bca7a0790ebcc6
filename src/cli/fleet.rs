//! The arguments of `fleet`: many tasks' profiles and logs, or InfluxDB's summaries of them.

use super::export::CredentialsArgs;
use super::input::InputCapArgs;
use super::values::parse_influx_age;
use clap::{ArgGroup, Args};
use std::path::PathBuf;

#[derive(Args, Debug)]
#[command(group(ArgGroup::new("tasks").required(true).args(["inputs", "influx"])))]
pub struct FleetArgs {
    /// Profiles and logs, any mix, compressed or not; a directory is read recursively
    /// (its .json, .jsonl, .gz and .zst files).
    #[arg(value_name = "PATH")]
    pub inputs: Vec<PathBuf>,
    /// Read the tasks `export` sent to this InfluxDB 1.x (http or https base URL) instead.
    #[arg(
        long,
        value_name = "URL",
        requires = "database",
        conflicts_with = "inputs"
    )]
    pub influx: Option<String>,
    /// The database of --influx.
    #[arg(long, value_name = "NAME", requires = "influx")]
    pub database: Option<String>,
    /// With --influx, the tasks exported in this last span (s, m, h, d, w).
    #[arg(long, value_name = "AGE", default_value = "30d", value_parser = parse_influx_age)]
    pub since: String,
    /// Group by worker-type, task-name (its numbers and chunk suffixes folded),
    /// instance-type, or any tag.
    #[arg(long, value_name = "KEY", default_value = "worker-type")]
    pub by: String,
    /// The instance types to choose from: CSV lines name,cores,memory_gib,price_per_hour
    /// [default: the catalog shipped in reports/src/fleet/instances.csv].
    #[arg(long, value_name = "FILE")]
    pub instances: Option<PathBuf>,
    /// Also write the report as one self-contained HTML page (charts, no network).
    #[arg(short, long, value_name = "PATH")]
    pub output: Option<PathBuf>,
    /// Print JSON instead of the table.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub credentials: CredentialsArgs,
    #[command(flatten)]
    pub input_caps: InputCapArgs,
}
