//! `tc-profile summary`: a profile's or a log's summary on stdout.

use crate::cli::{SummaryArgs, SummaryFormatArg};
use crate::output;
use crate::progress::Reading;
use anyhow::Result;
use tc_profile_finalizer::read_input;
use tc_profile_reports::{summarize, SummaryFormat};

pub fn summary(args: SummaryArgs) -> Result<u8> {
    let reading = Reading::start(&args.input, "summarizing");
    let caps = args.input_caps.caps();
    let profile =
        read_input(&args.input, caps, reading.callback().as_deref())?.into_profile(&args.input)?;
    let summary = summarize(&profile);
    drop(reading);
    let format = match args.format {
        SummaryFormatArg::Text => SummaryFormat::Text,
        SummaryFormatArg::Json => SummaryFormat::Json,
    };
    output::to_stdout(&format.serialize(&summary))?;
    Ok(0)
}
