//! The arguments of exporting a task's metrics and summary: `export`, and a recording's
//! export at its end.

use super::input::InputCapArgs;
use super::values::parse_host_port;
use clap::{ArgGroup, Args, ValueEnum};
use std::path::PathBuf;

/// Export once the profile is written; a failure is reported and changes no exit status.
#[derive(Args, Debug)]
pub struct ExportAtEndArgs {
    /// Once the profile is written, write the task's metrics and summary to this InfluxDB
    /// (http or https base URL; see `tc-profile export --help` for credentials); the points
    /// the task writes to TASKCLUSTER_INFLUX_URL are forwarded there while it runs.
    #[arg(long, value_name = "URL", requires = "export_database")]
    pub export_influx: Option<String>,
    /// The database of --export-influx.
    #[arg(long, value_name = "NAME", requires = "export_influx")]
    pub export_database: Option<String>,
    /// Once the profile is written, forward the task's metrics and summary to this statsd.
    #[arg(long, value_name = "HOST:PORT", value_parser = parse_host_port)]
    pub export_statsd: Option<String>,
    #[command(flatten)]
    pub credentials: CredentialsArgs,
}

#[derive(Args, Debug)]
pub struct CredentialsArgs {
    /// InfluxDB credentials: a file of token=..., or username=... and password=... lines,
    /// readable by its owner only [default: TC_PROFILE_INFLUX_TOKEN, or
    /// TC_PROFILE_INFLUX_USERNAME and TC_PROFILE_INFLUX_PASSWORD].
    #[arg(long, value_name = "FILE")]
    pub influx_credentials: Option<PathBuf>,
}

#[derive(Args, Debug)]
#[command(group(
    ArgGroup::new("destination").required(true).multiple(true).args(["influx", "statsd", "format"])
))]
pub struct ExportArgs {
    /// The profile, or the log (complete, or left by a killed recorder).
    #[arg(value_name = "PROFILE|LOG")]
    pub input: PathBuf,
    /// The InfluxDB 1.x (or 2.x with its 1.x API) base URL, http or https.
    #[arg(long, value_name = "URL", requires = "database")]
    pub influx: Option<String>,
    /// The InfluxDB database to write to.
    #[arg(long, value_name = "NAME", requires = "influx")]
    pub database: Option<String>,
    /// Forward to a statsd (totals per series; statsd takes no timestamps).
    #[arg(long, value_name = "HOST:PORT", value_parser = parse_host_port)]
    pub statsd: Option<String>,
    /// Print to stdout: influx (line protocol, ms timestamps) or json.
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<ExportFormatArg>,
    #[command(flatten)]
    pub credentials: CredentialsArgs,
    #[command(flatten)]
    pub input_caps: InputCapArgs,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportFormatArg {
    Influx,
    Json,
}
