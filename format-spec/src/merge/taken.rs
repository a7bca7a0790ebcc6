//! The log lines of a batch as [`super::Merger::read_batch_with`] hands them over: those of
//! plain markers still borrowed from their marker file's line, to be encoded as they are.

use crate::lines::encode_plain_marker_line_into;
use crate::{encode_line_into, Line, Marker};

/// A log line of a batch, as [`super::Merger::read_batch_with`] hands it over.
#[derive(Debug)]
pub enum Taken<'a> {
    Line(Line),
    /// A marker of the fast path, its `data` the text its file held, or that text as
    /// serde_json writes it.
    Marker(TakenMarker<'a>),
}

impl Taken<'_> {
    pub fn into_line(self) -> Line {
        match self {
            Taken::Line(line) => line,
            Taken::Marker(marker) => marker.into_line(),
        }
    }

    /// Appends its log line, newline included.
    pub fn encode_into(&self, bytes: &mut Vec<u8>) {
        match self {
            Taken::Line(line) => encode_line_into(bytes, line),
            Taken::Marker(marker) => encode_plain_marker_line_into(
                bytes,
                marker.name,
                marker.start_time,
                marker.end_time,
                marker.category,
                marker.data,
            ),
        }
    }

    /// The category of a marker or an `open` line.
    pub fn category(&self) -> Option<u32> {
        match self {
            Taken::Line(Line::Marker(marker)) => marker.category,
            Taken::Line(Line::Open(open)) => open.category,
            Taken::Line(_) => None,
            Taken::Marker(marker) => Some(marker.category),
        }
    }
}

/// A marker of the fast path, borrowed from its line, its times on the log's time base.
#[derive(Debug)]
pub struct TakenMarker<'a> {
    /// Holds nothing that needs an escape in JSON.
    pub name: &'a str,
    pub start_time: f64,
    pub end_time: Option<f64>,
    pub category: u32,
    /// A compact JSON object, checked.
    pub data: Option<&'a str>,
}

impl TakenMarker<'_> {
    fn into_line(self) -> Line {
        Line::Marker(Marker {
            name: self.name.to_owned(),
            start_time: self.start_time,
            end_time: self.end_time,
            category: Some(self.category),
            // Valid JSON, an object: the fast path checked it.
            data: self.data.and_then(|data| serde_json::from_str(data).ok()),
            open_id: None,
        })
    }
}
