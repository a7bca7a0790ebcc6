//! The pieces every schema is made of: a field under `data`, and a graph of a track. Structs,
//! not `Value`s: `json!` serializes what it is given, and a `Value` given to it is copied
//! through the serializer, which built each schema's fields twice.

use serde::Serialize;

#[derive(Serialize)]
pub(super) struct Field<'a> {
    key: &'a str,
    label: &'a str,
    format: &'a str,
}

pub(super) fn field<'a>(key: &'a str, label: &'a str, format: &'a str) -> Field<'a> {
    Field { key, label, format }
}

/// The type of every graph of ours: a bar. A bar covers its own sample's interval and
/// nothing else, so a span where nothing was measured (the recorder down, lines lost) stays
/// blank, as it must; the front-end draws a `line` or `line-filled` graph as one path
/// through every sample of the track, joining the samples on either side of such a span
/// with values never measured.
pub const GRAPH_TYPE: &str = "bar";

#[derive(Serialize)]
pub(super) struct Graph<'a> {
    key: &'a str,
    #[serde(rename = "type")]
    kind: &'a str,
    color: &'a str,
}

/// A graph of `key`: a bar, as every graph of ours (see [`GRAPH_TYPE`]).
pub(super) fn graph<'a>(key: &'a str, color: &'a str) -> Graph<'a> {
    Graph {
        key,
        kind: GRAPH_TYPE,
        color,
    }
}
