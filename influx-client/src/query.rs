//! InfluxQL over HTTP (`/query`), its answer read as it comes: InfluxDB 1.x sends a
//! chunked answer as one JSON object a line, [`CHUNK_ROWS`] rows each, so a query of
//! many rows is read a chunk at a time and each row handed on, never held whole.

use serde_json::Value;
use std::io::{BufRead, BufReader, Read};
use std::time::Duration;

/// Rows per chunk of the answer.
pub const CHUNK_ROWS: u32 = 1000;
/// A line of the answer longer than this is refused: a chunk of rows is far shorter.
const MAX_LINE: u64 = 64 << 20;
const MESSAGE_CHARS: usize = 300;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QueryError {
    #[error("InfluxDB at {url} could not be queried: {reason}")]
    Unreachable { url: String, reason: String },
    #[error("InfluxDB at {url} has no database {database:?}: name the one `export` writes to with --database")]
    NoDatabase { url: String, database: String },
    #[error("InfluxDB at {url} refused the credentials (HTTP {status}): check --influx-credentials or the TC_PROFILE_INFLUX_* variables")]
    Unauthorized { url: String, status: u16 },
    #[error("InfluxDB at {url} refused the query: {message}")]
    Refused { url: String, message: String },
    #[error("InfluxDB at {url} answered what is not InfluxQL's JSON: {why}")]
    BadAnswer { url: String, why: String },
}

/// Where a query goes: the target's parts (`lib.rs` holds the target).
pub(crate) struct Endpoint<'a> {
    pub agent: &'a ureq::Agent,
    pub url: &'a str,
    pub database: &'a str,
    /// The `Authorization` header's value, with credentials.
    pub authorization: Option<String>,
}

/// [`query_influx`](crate::query_influx): one statement, its rows handed on as they come.
pub(crate) fn run(
    endpoint: Endpoint,
    statement: &str,
    timeout: Duration,
    mut each_row: impl FnMut(&[String], &[Value]),
) -> Result<u64, QueryError> {
    let url = endpoint.url.to_owned();
    let database = endpoint.database;
    let mut request = endpoint
        .agent
        .get(format!("{url}/query"))
        .config()
        .timeout_global(Some(timeout))
        .build()
        .query("db", database)
        .query("q", statement)
        .query("epoch", "ms")
        .query("chunked", "true")
        .query("chunk_size", CHUNK_ROWS.to_string());
    if let Some(authorization) = endpoint.authorization {
        request = request.header("Authorization", authorization);
    }
    let unreachable = |reason: String| QueryError::Unreachable {
        url: url.clone(),
        reason,
    };
    let mut response = request.call().map_err(|e| unreachable(e.to_string()))?;
    let status = response.status().as_u16();
    let mut body = BufReader::new(response.body_mut().as_reader());
    if !(200..300).contains(&status) {
        let mut message = String::new();
        let _ = body.take(MAX_LINE).read_to_string(&mut message);
        return Err(match status {
            401 | 403 => QueryError::Unauthorized { url, status },
            _ => QueryError::Refused {
                message: format!("HTTP {status}: {}", answer_error(&message)),
                url,
            },
        });
    }
    let mut rows = 0;
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = (&mut body)
            .take(MAX_LINE)
            .read_until(b'\n', &mut line)
            .map_err(|e| unreachable(e.to_string()))?;
        if read == 0 {
            return Ok(rows);
        }
        if read as u64 == MAX_LINE && !line.ends_with(b"\n") {
            let why = format!("a line over {} MiB", MAX_LINE >> 20);
            return Err(QueryError::BadAnswer { url, why });
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let chunk: Value = serde_json::from_slice(&line).map_err(|e| QueryError::BadAnswer {
            url: url.clone(),
            why: e.to_string(),
        })?;
        rows += rows_of(&chunk, &url, database, &mut each_row)?;
    }
}

/// Hands on the rows of one chunk; an error in it (a statement's or the whole query's)
/// ends the query.
fn rows_of(
    chunk: &Value,
    url: &str,
    database: &str,
    each_row: &mut impl FnMut(&[String], &[Value]),
) -> Result<u64, QueryError> {
    let results = chunk["results"].as_array();
    let error = chunk["error"]
        .as_str()
        .or_else(|| results?.iter().find_map(|r| r["error"].as_str()));
    if let Some(message) = error {
        if message.starts_with("database not found") {
            return Err(QueryError::NoDatabase {
                url: url.to_owned(),
                database: database.to_owned(),
            });
        }
        return Err(QueryError::Refused {
            url: url.to_owned(),
            message: message.chars().take(MESSAGE_CHARS).collect(),
        });
    }
    let mut rows = 0;
    let series = results
        .into_iter()
        .flatten()
        .filter_map(|r| r["series"].as_array());
    for series in series.flatten() {
        let columns: Vec<String> = series["columns"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| c.as_str().unwrap_or_default().to_owned())
            .collect();
        for row in series["values"].as_array().into_iter().flatten() {
            if let Some(values) = row.as_array() {
                each_row(&columns, values);
                rows += 1;
            }
        }
    }
    Ok(rows)
}

/// The `error` of an error answer, else its first characters.
fn answer_error(body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let message = parsed
        .as_ref()
        .and_then(|v| v["error"].as_str().map(str::to_owned))
        .unwrap_or_else(|| body.trim().to_owned());
    message.chars().take(MESSAGE_CHARS).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_chunk_s_rows_are_handed_on_and_its_error_ends_the_query() {
        let chunk = json!({"results": [{"statement_id": 0, "series": [
            {"name": "m", "columns": ["time", "v"], "values": [[1, 2.5], [2, 3.5]]}
        ], "partial": true}]});
        let mut seen = Vec::new();
        let rows = rows_of(&chunk, "u", "db", &mut |columns, values| {
            seen.push((columns.to_vec(), values.to_vec()));
        });
        assert_eq!(rows.unwrap(), 2);
        assert_eq!(seen[1].0, ["time", "v"]);
        assert_eq!(seen[1].1, [json!(2), json!(3.5)]);

        let missing = json!({"results": [{"statement_id": 0, "error": "database not found: ci"}]});
        let error = rows_of(&missing, "http://h", "ci", &mut |_, _| {}).unwrap_err();
        assert_eq!(
            error.to_string(),
            "InfluxDB at http://h has no database \"ci\": name the one `export` writes to with --database"
        );
    }
}
