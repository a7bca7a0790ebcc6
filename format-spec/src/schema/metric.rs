//! The schemas of the task's metric tracks: one per metric kind, a graph track per series,
//! and the marker that counts what was dropped (SPEC.md, "Metric tracks").

use super::parts::{field, graph, Field, Graph};
use crate::metric::{self, MetricKind};
use serde_json::{json, Value};

/// The metric tracks' schemas, and that of the marker counting what was dropped.
pub(super) fn metric_schemas() -> Vec<Value> {
    MetricKind::ALL
        .into_iter()
        .map(metric_schema)
        .chain([metric_drops_schema()])
        .collect()
}

/// One fixed schema per metric kind: a graph track per series (marker name).
fn metric_schema(kind: MetricKind) -> Value {
    let identity = [
        field(metric::key::METRIC, "Metric", "string"),
        field(metric::key::TAGS, "Tags", "string"),
    ];
    let (values, graphs): (Vec<Field>, Vec<Graph>) = match kind {
        MetricKind::Counter => (
            vec![field("value", "Sum in the interval", "decimal")],
            vec![graph("value", "teal")],
        ),
        MetricKind::Gauge => (
            vec![field("value", "Value", "decimal")],
            vec![graph("value", "blue")],
        ),
        MetricKind::Timer | MetricKind::Histogram => {
            let unit = if kind == MetricKind::Timer {
                "milliseconds"
            } else {
                "decimal"
            };
            (
                vec![
                    field("count", "Count", "decimal"),
                    field("min", "Min", unit),
                    field("mean", "Mean", unit),
                    field("max", "Max", unit),
                ],
                // Bars drawn over each other, the later on top: the count behind, then
                // the times from the highest down, so that each shows.
                vec![
                    graph("count", "grey"),
                    graph("max", "red"),
                    graph("mean", "orange"),
                    graph("min", "green"),
                ],
            )
        }
        MetricKind::Set => (
            vec![field("distinct", "Distinct members", "integer")],
            vec![graph("distinct", "purple")],
        ),
    };
    let label = kind
        .value_keys()
        .iter()
        .map(|k| format!("{k} {{marker.data.{k}}}"));
    json!({
        "name": kind.data_type(),
        "tooltipLabel": format!("{{marker.name}}: {}", label.collect::<Vec<_>>().join(", ")),
        "display": [],
        "data": identity.into_iter().chain(values).collect::<Vec<_>>(),
        "graphs": graphs,
    })
}

fn metric_drops_schema() -> Value {
    json!({
        "name": metric::DROPPED_DATA_TYPE,
        "tooltipLabel": "{marker.name}",
        "tableLabel": "{marker.name}: {marker.data.malformed} malformed, {marker.data.outOfScope} out of scope, {marker.data.overSeriesCap} over the series cap, {marker.data.oversized} oversized, {marker.data.beforeStart} before the start, {marker.data.unknownFields} with unknown keys",
        "display": ["marker-chart", "marker-table"],
        "data": [
            field("malformed", "Malformed lines", "integer"),
            field("oversized", "Packets over the size cap", "integer"),
            field("overSeriesCap", "Metrics over the series cap", "integer"),
            field("overSetCap", "Set members over the set cap", "integer"),
            field("kernelDropped", "Packets the kernel dropped (buffer full)", "integer"),
            field("outOfScope", "Metrics outside the task's scopes", "integer"),
            field("beforeStart", "Samples dated before the start (drawn at it)", "integer"),
            field("unknownFields", "Marker-file metric lines with unknown keys", "integer"),
            field("example", "First malformed line", "string"),
            field("refused", "First series refused", "string"),
        ],
    })
}
