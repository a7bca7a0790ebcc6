//! The JSON form of a report: one document, keys as in the InfluxDB form.
//!
//! ```text
//! {"tags":{"task_id":..},"startTime":EPOCH_MS,"task":{"duration_s":..,..},
//!  "steps":[{"name":..,"category":..,"startTime":..,"duration_s":..,"cut_off":..}],
//!  "series":[{"metric":..,"kind":"Counter","tags":{..},"points":[{"time":..,"value":..}]}]}
//! ```

use crate::export::report::{Figure, TaskReport};
use serde_json::{json, Map, Value};

pub fn serialize(report: &TaskReport) -> Vec<u8> {
    let figures: Map<String, Value> = report
        .figures
        .iter()
        .map(|(key, figure)| {
            let value = match figure {
                Figure::Number(v) => json!(v),
                Figure::Flag(flag) => json!(flag),
            };
            ((*key).to_owned(), value)
        })
        .collect();
    let steps: Vec<Value> = report
        .steps
        .iter()
        .map(|step| {
            json!({"name": step.name, "category": step.category, "startTime": step.start_time,
                   "duration_s": step.duration_s, "cut_off": step.cut_off})
        })
        .collect();
    let series: Vec<Value> = report
        .series
        .iter()
        .map(|series| {
            let points: Vec<Value> = series
                .points
                .iter()
                .map(|point| {
                    let mut object = Map::new();
                    object.insert("time".to_owned(), json!(point.time));
                    for (key, value) in &point.values {
                        object.insert((*key).to_owned(), json!(value));
                    }
                    Value::Object(object)
                })
                .collect();
            json!({"metric": series.metric, "kind": series.kind.data_type(),
                   "tags": tag_object(&series.tags), "points": points})
        })
        .collect();
    let document = json!({
        "tags": tag_object(&report.tags),
        "startTime": report.start_time,
        "task": figures,
        "steps": steps,
        "series": series,
    });
    let mut bytes = serde_json::to_vec_pretty(&document)
        .unwrap_or_else(|e| unreachable!("a JSON value serializes: {e}"));
    bytes.push(b'\n');
    bytes
}

fn tag_object(tags: &[(String, String)]) -> Value {
    Value::Object(
        tags.iter()
            .map(|(key, value)| (key.clone(), json!(value)))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::report::tests::sample_report;

    #[test]
    fn the_document_holds_figures_steps_and_points() {
        let document: Value = serde_json::from_slice(&serialize(&sample_report())).unwrap();
        assert_eq!(document["tags"]["task_id"], "fUAKaIdkSF6K1NlOgx7-LA");
        assert_eq!(document["task"]["duration_s"], 12.5);
        assert_eq!(document["task"]["ended_early"], false);
        assert_eq!(document["steps"][0]["name"], "pull image");
        assert_eq!(document["series"][0]["kind"], "Counter");
        assert_eq!(document["series"][0]["tags"]["fast"], "");
        assert_eq!(document["series"][0]["points"][1]["value"], 4.0);
        assert_eq!(document["series"][1]["points"][0]["max"], 3.0);
    }
}
