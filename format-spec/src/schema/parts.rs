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

#[derive(Serialize)]
pub(super) struct Graph<'a> {
    key: &'a str,
    #[serde(rename = "type")]
    kind: &'a str,
    color: &'a str,
}

/// A graph of `key`: a bar, as every graph of ours (see [`super::GRAPH_TYPE`]).
pub(super) fn graph<'a>(key: &'a str, color: &'a str) -> Graph<'a> {
    Graph {
        key,
        kind: super::GRAPH_TYPE,
        color,
    }
}
