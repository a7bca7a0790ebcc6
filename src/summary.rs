//! `tc-profile summary`: a profile's or a log's summary on stdout.

use crate::cli::{SummaryArgs, SummaryFormatArg};
use crate::output;
use crate::progress::Reading;
use anyhow::{bail, Result};
use tc_profile_finalizer::read_input;
use tc_profile_reports::{summarize, summarize_window, SummaryFormat, Window};

pub fn summary(args: SummaryArgs) -> Result<u8> {
    let window = window(&args)?;
    let reading = Reading::start(&args.input, "summarizing");
    let caps = args.input_caps.caps();
    let profile =
        read_input(&args.input, caps, reading.callback().as_deref())?.into_profile(&args.input)?;
    let summary = match window {
        Some(window) => summarize_window(&profile, window),
        None => summarize(&profile),
    };
    drop(reading);
    let format = match args.format {
        SummaryFormatArg::Text => SummaryFormat::Text,
        SummaryFormatArg::Json => SummaryFormat::Json,
    };
    output::to_stdout(&format.serialize(&summary))?;
    Ok(0)
}

/// The span `--from` and `--to` name, when either is given.
fn window(args: &SummaryArgs) -> Result<Option<Window>> {
    if args.from.is_none() && args.to.is_none() {
        return Ok(None);
    }
    let window = Window {
        from_ms: args.from.unwrap_or(f64::NEG_INFINITY),
        to_ms: args.to.unwrap_or(f64::INFINITY),
    };
    if window.from_ms.is_nan() || window.to_ms.is_nan() || window.to_ms <= window.from_ms {
        bail!("--to must be a time after --from (both in ms since the recording's start)");
    }
    Ok(Some(window))
}
