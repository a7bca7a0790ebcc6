//! `tc-profile export`, and the export at the end of `run`: where to send, with which
//! credentials (the recorder's own, from a file or its environment, never the task's), and
//! what a failure does.

use crate::cli::{CredentialsArgs, ExportArgs, ExportAtEndArgs, ExportFormatArg};
use crate::os;
use crate::output;
use crate::report::describe_error;
use anyhow::{bail, Context, Result};
use std::path::Path;
use tc_profile_finalizer::{read_input, InputCaps};
use tc_profile_recorder::{ForwardStats, MAX_UNSENT_BYTES};
use tc_profile_reports::{
    send_statsd, statsd_packets, summarize, write_influx, Credentials, ExportFormat, InfluxTarget,
    Precision, Retry, TaskReport,
};

/// The recorder's own configuration: kept from the command it runs.
pub const CREDENTIAL_VARIABLES: [&str; 3] = [
    "TC_PROFILE_INFLUX_TOKEN",
    "TC_PROFILE_INFLUX_USERNAME",
    "TC_PROFILE_INFLUX_PASSWORD",
];

/// Where a report goes.
pub struct Destinations {
    influx: Option<InfluxTarget>,
    statsd: Option<String>,
    print: Option<ExportFormat>,
    has_credentials: bool,
    /// Say nothing on success.
    quiet: bool,
}

impl Destinations {
    /// The export that `run` does at the end, checked (credentials read) before the
    /// command starts; None when none is asked for.
    pub fn at_end(args: &ExportAtEndArgs, quiet: bool) -> Result<Option<Destinations>> {
        if args.export_influx.is_none() && args.export_statsd.is_none() {
            return Ok(None);
        }
        let influx = influx_target(
            args.export_influx.as_deref(),
            args.export_database.as_deref(),
            &args.credentials,
        )?;
        Ok(Some(Destinations::new(
            influx,
            args.export_statsd.clone(),
            None,
            quiet,
        )))
    }

    /// The InfluxDB, if any: `run` and `record` also forward the task's points there.
    pub fn influx(&self) -> Option<&InfluxTarget> {
        self.influx.as_ref()
    }

    fn new(
        influx: Option<InfluxTarget>,
        statsd: Option<String>,
        print: Option<ExportFormat>,
        quiet: bool,
    ) -> Destinations {
        Destinations {
            quiet,
            has_credentials: influx.as_ref().is_some_and(InfluxTarget::has_credentials),
            influx,
            statsd,
            print,
        }
    }

    fn send(&self, report: &TaskReport) -> Result<()> {
        if let Some(format) = self.print {
            output::to_stdout(&format.serialize(report)).context("writing to stdout")?;
        }
        if let Some(target) = &self.influx {
            let body = ExportFormat::Influx.serialize(report);
            let attempts = write_influx(target, &body, Precision::Milliseconds, Retry::default())?;
            let tries = if attempts > 1 {
                format!(", after {attempts} attempts")
            } else {
                String::new()
            };
            if !self.quiet {
                eprintln!(
                    "tc-profile: exported {} lines to InfluxDB at {}{tries}",
                    body.iter().filter(|&&b| b == b'\n').count(),
                    target.url()
                );
            }
        }
        if let Some(address) = &self.statsd {
            let packets = statsd_packets(report);
            send_statsd(address, &packets)?;
            if !self.quiet {
                eprintln!(
                    "tc-profile: forwarded {} packets to statsd at {address}",
                    packets.len()
                );
            }
        }
        Ok(())
    }
}

/// Keeps the recorder's credentials from the command it runs, once they are read: their
/// variables are blanked in this process's environment, and a process holding credentials
/// closes its memory to other processes where the OS can ([`os`]). Call before any thread
/// starts: nothing may read the environment meanwhile.
pub fn hide_credentials(export: Option<&Destinations>) {
    let blanked = os::blank_environment_values(&CREDENTIAL_VARIABLES);
    if blanked || export.is_some_and(|d| d.has_credentials) {
        os::close_memory_to_others();
    }
}

/// `tc-profile export`: a failure is an error (exit 2).
pub fn export(args: ExportArgs) -> Result<u8> {
    let influx = influx_target(
        args.influx.as_deref(),
        args.database.as_deref(),
        &args.credentials,
    )?;
    let print = args.format.map(|format| match format {
        ExportFormatArg::Influx => ExportFormat::Influx,
        ExportFormatArg::Json => ExportFormat::Json,
    });
    let destinations = Destinations::new(influx, args.statsd, print, false);
    destinations.send(&load_report(&args.input, args.input_caps.caps())?)?;
    Ok(0)
}

/// The export at the end of `run` and `record`, once the profile at `written` is durable,
/// of its report made from the profile still in memory: a failure is reported and the exit
/// status stays the command's.
pub fn export_at_end(destinations: &Destinations, report: &TaskReport, written: &Path) {
    if let Err(error) = destinations.send(report) {
        eprintln!(
            "tc-profile: warning: export failed: {}; retry with tc-profile export {}",
            describe_error(&error),
            written.display()
        );
    }
}

/// What forwarding the endpoint's points did: a line unless quiet, a warning when points
/// did not arrive (they are in the profile all the same).
pub fn report_forwarding(stats: &ForwardStats, quiet: bool) {
    let undelivered = stats.undelivered();
    if undelivered == 0 {
        if !quiet && stats.forwarded > 0 {
            eprintln!(
                "tc-profile: forwarded {} to InfluxDB at {}",
                points(stats.forwarded),
                stats.url
            );
        }
        return;
    }
    let mut why = Vec::new();
    if stats.over_cap > 0 {
        why.push(format!(
            "{} over the cap of {} MiB unsent",
            stats.over_cap,
            MAX_UNSENT_BYTES >> 20
        ));
    }
    if let Some(error) = &stats.last_error {
        why.push(error.clone());
    }
    eprintln!(
        "tc-profile: warning: {undelivered} of {} were not forwarded to InfluxDB at {} ({}); \
         they are in the profile",
        points(stats.forwarded + undelivered),
        stats.url,
        why.join("; ")
    );
}

fn points(count: u64) -> String {
    match count {
        1 => "1 point".to_owned(),
        _ => format!("{count} points"),
    }
}

fn load_report(path: &Path, caps: InputCaps) -> Result<TaskReport> {
    let profile = read_input(path, caps, None)?.into_profile(path)?;
    Ok(TaskReport::new(&profile, &summarize(&profile)))
}

pub fn influx_target(
    url: Option<&str>,
    database: Option<&str>,
    credentials: &CredentialsArgs,
) -> Result<Option<InfluxTarget>> {
    let (Some(url), Some(database)) = (url, database) else {
        return Ok(None);
    };
    let credentials = match &credentials.influx_credentials {
        Some(file) => Some(credentials_from_file(file)?),
        None => credentials_from_env()?,
    };
    Ok(Some(InfluxTarget::new(url, database, credentials)?))
}

fn credentials_from_env() -> Result<Option<Credentials>> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let [token, username, password] = CREDENTIAL_VARIABLES.map(var);
    credentials_from(token, username, password).context("the TC_PROFILE_INFLUX_* variables")
}

/// A file only its owner may read: the command tc-profile runs must not find the secret
/// in a file that is readable by all.
fn credentials_from_file(path: &Path) -> Result<Credentials> {
    let context = || format!("--influx-credentials {}", path.display());
    let metadata = std::fs::metadata(path).with_context(context)?;
    if let Some(mode) = os::readable_by_others(&metadata) {
        bail!(
            "--influx-credentials {}: group or others may read it (mode {mode:o}); chmod 600 it",
            path.display()
        );
    }
    let text = std::fs::read_to_string(path).with_context(context)?;
    let (mut token, mut username, mut password) = (None, None, None);
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let slot = match line.split_once('=') {
            Some(("token", value)) => (&mut token, value),
            Some(("username", value)) => (&mut username, value),
            Some(("password", value)) => (&mut password, value),
            // The line itself may hold a secret: it is not quoted.
            _ => bail!(
                "--influx-credentials {}: a line is not token=, username= or password=",
                path.display()
            ),
        };
        *slot.0 = Some(slot.1.to_owned());
    }
    credentials_from(token, username, password)
        .with_context(context)?
        .with_context(|| {
            format!(
                "--influx-credentials {}: it holds no credentials",
                path.display()
            )
        })
}

fn credentials_from(
    token: Option<String>,
    username: Option<String>,
    password: Option<String>,
) -> Result<Option<Credentials>> {
    match (token, username, password) {
        (Some(token), None, None) => Ok(Some(Credentials::Token(token))),
        (None, Some(username), Some(password)) => {
            Ok(Some(Credentials::Basic { username, password }))
        }
        (None, None, None) => Ok(None),
        _ => bail!("give either a token, or a username and a password"),
    }
}
