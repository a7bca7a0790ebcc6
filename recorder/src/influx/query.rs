//! `/query`, for the statements clients send at start-up (`SHOW DATABASES`, `CREATE
//! DATABASE`, `SHOW RETENTION POLICIES`), answered as InfluxDB 1.x answers them for a
//! server whose databases are all the one recording: every name a task writes to or
//! creates is listed, and any other statement is refused, since the endpoint only writes
//! (SPEC.md, "InfluxDB endpoint").

use super::http::Answer;
use serde_json::{json, Value};
use std::sync::Mutex;

/// The database listed before the task names one.
pub(crate) const DEFAULT_DATABASE: &str = "tc-profile";
/// Names remembered at most: past them, new ones are not listed (writes to them are
/// recorded all the same).
const MAX_NAMES: usize = 16;
/// The longest name remembered.
const MAX_NAME_BYTES: usize = 200;

/// The database names the task used, all of them the recording.
pub(crate) struct Databases(Mutex<Vec<String>>);

impl Databases {
    pub(crate) fn new() -> Databases {
        Databases(Mutex::new(vec![DEFAULT_DATABASE.to_owned()]))
    }

    /// Remembers `name` (a write's `db` or `bucket`, a `CREATE DATABASE`), within the caps.
    pub(crate) fn note(&self, name: &str) {
        let mut names = self.lock();
        let new = !name.is_empty() && !names.iter().any(|known| known == name);
        if new && name.len() <= MAX_NAME_BYTES && names.len() < MAX_NAMES {
            names.push(name.to_owned());
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<String>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The answer to the statements of `q`, separated by `;`: 200 with one result each, or
    /// 400 naming the first the endpoint does not answer.
    pub(crate) fn answer(&self, q: &str) -> Answer {
        let mut results = Vec::new();
        for statement in q.split(';').map(str::trim).filter(|s| !s.is_empty()) {
            let Some(mut result) = self.result(statement) else {
                let quoted: String = statement.chars().take(100).collect();
                return Answer::v1_error(
                    400,
                    &format!(
                        "this endpoint only writes: it answers SHOW DATABASES, CREATE \
                         DATABASE and SHOW RETENTION POLICIES, not '{quoted}'"
                    ),
                );
            };
            result["statement_id"] = json!(results.len());
            results.push(result);
        }
        if results.is_empty() {
            return Answer::v1_error(400, "missing required parameter \"q\"");
        }
        Answer::json(200, &json!({ "results": results }))
    }

    /// One statement's result, None for one not answered.
    fn result(&self, statement: &str) -> Option<Value> {
        let words: Vec<&str> = statement.split_whitespace().collect();
        let upper: Vec<String> = words.iter().map(|w| w.to_ascii_uppercase()).collect();
        let upper: Vec<&str> = upper.iter().map(String::as_str).collect();
        match upper.as_slice() {
            ["SHOW", "DATABASES"] => {
                let values: Vec<[String; 1]> = self.lock().iter().map(|n| [n.clone()]).collect();
                Some(json!({ "series": [
                    { "name": "databases", "columns": ["name"], "values": values }
                ]}))
            }
            ["CREATE", "DATABASE", _, ..] => {
                self.note(words[2].trim_matches('"'));
                Some(json!({}))
            }
            ["SHOW", "RETENTION", "POLICIES"] | ["SHOW", "RETENTION", "POLICIES", "ON", _] => {
                Some(json!({ "series": [{
                    "columns": ["name", "duration", "shardGroupDuration", "replicaN", "default"],
                    "values": [["autogen", "0s", "168h0m0s", 1, true]],
                }]}))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answered(databases: &Databases, q: &str) -> (u16, Value) {
        let answer = databases.answer(q);
        let body = serde_json::from_slice(&answer.body.unwrap()).unwrap();
        (answer.status, body)
    }

    #[test]
    fn created_and_written_databases_are_listed_as_influxdb_lists_them() {
        let databases = Databases::new();
        let (status, body) = answered(&databases, "CREATE DATABASE \"ci\"");
        assert_eq!(
            (status, body),
            (200, json!({"results": [{"statement_id": 0}]}))
        );
        databases.note("metrics");
        databases.note("ci");
        let (status, body) = answered(&databases, "show databases; SHOW RETENTION POLICIES ON ci");
        assert_eq!(status, 200);
        assert_eq!(
            body["results"][0],
            json!({"statement_id": 0, "series": [{"name": "databases", "columns": ["name"],
                   "values": [["tc-profile"], ["ci"], ["metrics"]]}]})
        );
        assert_eq!(body["results"][1]["statement_id"], 1);
        assert_eq!(body["results"][1]["series"][0]["values"][0][0], "autogen");
    }

    #[test]
    fn any_other_statement_is_a_400_saying_the_endpoint_only_writes() {
        let databases = Databases::new();
        let (status, body) = answered(&databases, "SHOW DATABASES; SELECT * FROM cpu");
        assert_eq!(status, 400);
        let error = body["error"].as_str().unwrap();
        assert!(error.starts_with("this endpoint only writes"), "{error}");
        assert!(error.ends_with("not 'SELECT * FROM cpu'"), "{error}");
        assert_eq!(answered(&databases, " ; ").0, 400);
    }

    #[test]
    fn the_names_remembered_are_capped() {
        let databases = Databases::new();
        for n in 0..100 {
            databases.note(&format!("db{n}"));
        }
        databases.note(&"x".repeat(MAX_NAME_BYTES + 1));
        assert_eq!(databases.lock().len(), MAX_NAMES);
    }
}
