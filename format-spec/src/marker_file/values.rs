//! What a marker of a task's own schema must hold for the front-end to show it (SPEC.md,
//! "Marker files"), checked by the merger as lines arrive and by the finalizer for markers
//! logged before their schema.

use super::caps::Problem;
use serde_json::{Map, Value};

/// What the front-end needs of the values of a marker of a task's schema: a number under
/// every graph key (a string there makes it refuse the whole profile) and an array under a
/// `list` field (anything else makes formatting the marker throw).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ValueRules {
    graph_keys: Vec<String>,
    list_keys: Vec<String>,
}

impl ValueRules {
    /// The rules of `schema`; none when it has neither graphs nor list fields.
    pub fn of(schema: &Map<String, Value>) -> Option<ValueRules> {
        let keys = |list: &str, wanted: fn(&Value) -> bool| -> Vec<String> {
            let entries = schema.get(list).and_then(Value::as_array);
            entries
                .into_iter()
                .flatten()
                .filter(|entry| wanted(entry))
                .filter_map(|entry| Some(entry.get("key")?.as_str()?.to_owned()))
                .collect()
        };
        let rules = ValueRules {
            graph_keys: keys("graphs", |_| true),
            list_keys: keys("data", |field| field["format"] == "list"),
        };
        (!rules.graph_keys.is_empty() || !rules.list_keys.is_empty()).then_some(rules)
    }

    /// Why a marker holding `data` cannot be shown, if it cannot (SPEC.md, "Marker files").
    pub fn check(&self, data: &Map<String, Value>) -> Result<(), Problem> {
        let number = |key: &String| data.get(key).is_some_and(Value::is_number);
        if !self.graph_keys.iter().all(number) {
            return Err(Problem::NonNumericGraphValue);
        }
        let not_list = |key: &String| data.get(key).is_some_and(|value| !value.is_array());
        if self.list_keys.iter().any(not_list) {
            return Err(Problem::NonArrayListValue);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_graph_key_must_hold_a_number_and_a_list_field_an_array() {
        let schema = json!({"name": "T", "graphs": [{"key": "a"}, {"key": "b"}],
            "data": [{"key": "items", "format": "list"}, {"key": "a", "format": "integer"}]});
        let rules = ValueRules::of(schema.as_object().unwrap()).unwrap();
        let check = |data: Value| rules.check(data.as_object().unwrap());
        assert_eq!(check(json!({"type": "T", "a": 1, "b": 2.5})), Ok(()));
        assert_eq!(check(json!({"a": 1, "b": 2, "items": ["x"]})), Ok(()));
        let non_numeric = Err(Problem::NonNumericGraphValue);
        assert_eq!(check(json!({"type": "T", "a": 1})), non_numeric);
        assert_eq!(check(json!({"type": "T", "a": 1, "b": "2"})), non_numeric);
        assert_eq!(check(json!({"type": "T", "a": null, "b": 1})), non_numeric);
        let not_array = Err(Problem::NonArrayListValue);
        assert_eq!(check(json!({"a": 1, "b": 2, "items": "x"})), not_array);
        assert_eq!(check(json!({"a": 1, "b": 2, "items": null})), not_array);
        assert_eq!(ValueRules::of(&Map::new()), None);
    }
}
