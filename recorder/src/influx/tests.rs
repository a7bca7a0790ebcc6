//! Tests of a write's answer: InfluxDB's statuses and words for what was taken and dropped.

use super::*;

fn refused(line: &str, why: Why) -> Refused {
    Refused {
        line: line.to_owned(),
        why,
    }
}

fn tally(taken: u64, refused_lines: Vec<Refused>, over_series_cap: u64) -> Tally {
    let mut tally = Tally::default();
    let chunk = Chunk {
        taken,
        refused: refused_lines,
        ..Chunk::default()
    };
    tally.add(chunk, over_series_cap);
    tally
}

fn answered(tally: &Tally, api: Api) -> (u16, serde_json::Value) {
    let answer = tally.answer(api, 1000);
    let body = answer.body.map_or(serde_json::Value::Null, |b| {
        serde_json::from_slice(&b).unwrap()
    });
    (answer.status, body)
}

fn malformed(line: &str) -> Refused {
    refused(line, Why::Malformed(LineError::MissingFieldValue))
}

fn out_of_scope(line: &str) -> Refused {
    refused(line, Why::OutOfScope("stats:put-points:s.v".to_owned()))
}

#[test]
fn every_line_taken_is_204() {
    assert_eq!(answered(&tally(3, vec![], 0), Api::V1).0, 204);
}

#[test]
fn lines_taken_and_others_refused_are_a_partial_write_naming_each_and_the_count() {
    let mixed = tally(1, vec![malformed("a v="), out_of_scope("s v=1")], 2);
    let (status, body) = answered(&mixed, Api::V1);
    assert_eq!(status, 400);
    assert_eq!(
        body["error"],
        "partial write: unable to parse 'a v=': missing field value\n\
         's v=1' needs the scope stats:put-points:s.v\n\
         2 values over the cap of 1000 series dropped=4"
    );
    let (status, body) = answered(&mixed, Api::V2);
    assert_eq!(status, 400);
    assert_eq!(body["code"], "invalid");
    assert!(body["message"]
        .as_str()
        .unwrap()
        .starts_with("partial write: "));
}

#[test]
fn nothing_taken_is_400_when_a_line_was_malformed_and_403_when_all_were_out_of_scope() {
    let (status, body) = answered(&tally(0, vec![malformed("a v=")], 0), Api::V1);
    assert_eq!(
        (status, body["error"].as_str().unwrap()),
        (400, "unable to parse 'a v=': missing field value")
    );
    let scope = tally(0, vec![out_of_scope("s v=1"), out_of_scope("s v=2")], 0);
    assert_eq!(answered(&scope, Api::V1).0, 403);
    let both = tally(0, vec![out_of_scope("s v=1"), malformed("a v=")], 0);
    assert_eq!(answered(&both, Api::V1).0, 400);
}

#[test]
fn ten_refused_lines_are_quoted_and_the_rest_counted() {
    let lines = (0..25).map(|n| malformed(&format!("line{n} v="))).collect();
    let (_, body) = answered(&tally(1, lines, 0), Api::V1);
    let error = body["error"].as_str().unwrap();
    assert_eq!(error.matches("unable to parse").count(), QUOTED_LINES);
    assert!(
        error.ends_with("and 15 more lines refused dropped=25"),
        "{error}"
    );
}
