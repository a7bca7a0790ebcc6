//! Tests of the merger: the plain (fast) way held to the general way, times, intervals, schemas
//! and their value rules, caps.

use super::*;
use crate::marker_file::decode_file_line;
use serde_json::json;

const START: f64 = 1_800_000_000_000.0;

fn merger() -> Merger {
    let mut id = 0;
    Merger::new(
        START,
        Limits::default(),
        &[json!({"name": "Text"}), meta_graph_schema()],
        Box::new(move || {
            id += 1;
            id
        }),
    )
}

/// A task schema with a graph declared in the meta line (`--schema`).
fn meta_graph_schema() -> Value {
    json!({"name": "M", "graphs": [{"key": "v", "type": "bar", "color": "red"}]})
}

fn take(merger: &mut Merger, file: &str, text: &str) -> Result<Option<Line>, Problem> {
    let line = decode_file_line(text.as_bytes(), &Limits::default())?;
    merger.take(file, line, START + 60_000.0)
}

/// A line taken the plain way (None when it does not take it) and the general way. A
/// plain marker whose `data` the log does not take as written has the general way's bytes.
fn both_ways(merger: &mut Merger, text: &str) -> (Option<TakeResult>, TakeResult) {
    let now = START + 60_000.0;
    let general = take(merger, "1.jsonl", text);
    let Ok(Decoded::Plain(marker)) = decode_line_or_plain(text.as_bytes(), &Limits::default())
    else {
        return (None, general);
    };
    let as_written = marker.data.is_some_and(|data| data.as_written);
    let mut data_text = DataText::default();
    let plain = merger
        .take_plain(marker, now, &mut data_text)
        .map(|marker| {
            let taken = Taken::Marker(marker);
            let mut bytes = Vec::new();
            taken.encode_into(&mut bytes);
            let line = taken.into_line();
            let decoded = crate::decode_line(bytes.trim_ascii_end()).ok();
            assert_eq!(decoded.as_ref(), Some(&line), "{text}: as encoded");
            if !as_written {
                let general_bytes = crate::encode_line(&line);
                assert_eq!(
                    String::from_utf8(bytes),
                    String::from_utf8(general_bytes),
                    "{text}"
                );
            }
            Some(line)
        });
    (Some(plain), general)
}

type TakeResult = Result<Option<Line>, Problem>;

/// A `data` object nested `depth` deep, itself included.
fn nested(depth: usize) -> String {
    format!(
        "{}{}",
        r#"{"a":"#.repeat(depth - 1) + "{",
        "}".repeat(depth)
    )
}

#[test]
fn the_plain_way_takes_and_refuses_what_the_general_way_does() {
    let mut merger = merger();
    let marker = |end: &str, data: &str| {
        format!(
            r#"{{"type":"marker","name":"a","startTime":{},{end}"data":{data}}}"#,
            START + 1000.0
        )
    };
    let plain = [
        marker("", r#"{"type":"Text","text":"x, y"}"#),
        marker(
            &format!(r#""endTime":{},"#, START + 2000.0),
            r#"{"z":[1,2.5,{"a":null}]}"#,
        ),
        marker("", r#"{"type":"M","v":3}"#),
        marker(r#""endTime":1,"#, r#"{"type":"Text"}"#),
        marker("", r#"{"type":"CPU"}"#),
        marker("", r#"{"type":"M","v":"3"}"#),
        r#"{"type":"marker","name":"a","startTime":1,"data":{"t":1}}"#.to_string(),
        marker("", &nested(15)),
        marker("", &nested(16)),
        marker("", r#"{"type": "Text", "b": [1, 2.50], "a": {}}"#),
    ];
    for text in &plain {
        match both_ways(&mut merger, text) {
            (Some(plain), general) => assert_eq!(plain, general, "{text}"),
            (None, general) => assert!(general.is_err(), "{text}: refused either way"),
        }
    }
    let taken_plain = plain
        .iter()
        .filter(|t| both_ways(&mut merger, t).0.is_some());
    assert_eq!(
        taken_plain.count(),
        7,
        "all but the end before the start, the reserved type and the line too deep"
    );
    for general_only in [
        marker("", r#"{"text":"\u0041"}"#),
        marker("", r#"{"v":1e3}"#),
        marker("", r#"["Text"]"#),
        marker(r#""extra":[[1e2]],"#, r#"{"type":"Text"}"#),
        marker(r#""name":"b","#, r#"{"type":"Text"}"#),
    ] {
        assert!(
            both_ways(&mut merger, &general_only).0.is_none(),
            "{general_only}"
        );
    }
}

/// Pieces of marker lines, good and bad, compact and spaced, that the plain way reads itself.
const PIECES: &[&str] = &[
    r#""name":"a""#,
    r#""name":"é ∑""#,
    r#""name":"q\"x""#,
    r#""name":"""#,
    r#""name":5"#,
    r#""startTime":1800000001000"#,
    r#""startTime":1800000001000.123456789"#,
    r#""startTime":1.800000001e12"#,
    r#""startTime":18000000010005E-1"#,
    r#""startTime":-0"#,
    r#""startTime":01800000001000"#,
    r#""endTime":null"#,
    r#""endTime":1800000002000.25"#,
    r#""endTime":1800000000500"#,
    r#""endTime":"x""#,
    r#""category":"task""#,
    r#""category":"root""#,
    r#""category":null"#,
    r#""data":{"type":"Text","text":"x, y"}"#,
    r#""data":{"type":"M","v":3}"#,
    r#""data":{"type":"M","v":"3"}"#,
    r#""data":{"a":[1,-2.5,{"b":null}],"c":true,"d":{}}"#,
    r#""data":{"a":01}"#,
    r#""data":{"a":1e5}"#,
    r#""data":{"a":[1,]}"#,
    r#""data":[]"#,
    r#""data":{"type":"CPU"}"#,
    r#""data":{"type":"Text" }"#,
    r#""data":{"type":7}"#,
    r#""extra":1"#,
    r#""type":"marker""#,
    r#" "name" : "b" "#,
    r#""startTime": 1800000001000.5"#,
    r#""data": {"z": {"b": 1, "a": [1, 2.50, -0]}, "type": "M", "v": 2, "v": 3}"#,
    r#""data":{"b":{"y":true,"x":null},"a":"é"}"#,
    "\"category\":\t\"worker\"\n",
];

proptest::proptest! {
    #[test]
    fn the_plain_way_agrees_with_the_general_way_on_any_mix_of_pieces(
        picked in proptest::collection::vec(0..PIECES.len(), 0..7),
    ) {
        let fields: Vec<&str> = picked.iter().map(|&i| PIECES[i]).collect();
        let text = format!(r#"{{"type":"marker",{}}}"#, fields.join(","));
        let mut merger = merger();
        if let (Some(plain), general) = both_ways(&mut merger, &text) {
            proptest::prop_assert_eq!(plain, general, "{}", text);
        }
    }
}

#[test]
fn times_become_milliseconds_since_the_start() {
    let line = take(
        &mut merger(),
        "1.jsonl",
        r#"{"type":"marker","name":"a","startTime":1800000001000.5,"endTime":1800000002000}"#,
    );
    match line.unwrap().unwrap() {
        Line::Marker(m) => {
            assert_eq!((m.start_time, m.end_time), (1000.5, Some(2000.0)));
            assert_eq!(m.category, Some(crate::schema::category::USER));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn times_far_outside_the_recording_are_refused() {
    let mut merger = merger();
    for time in ["1", "1800000000000e3", "-5"] {
        let text = format!(r#"{{"type":"marker","name":"a","startTime":{time}}}"#);
        assert_eq!(take(&mut merger, "1.jsonl", &text), Err(Problem::BadTime));
    }
}

#[test]
fn nested_begins_end_in_reverse_order_and_ids_match_across_files() {
    let mut merger = merger();
    let begin = |name: &str, t: u32| {
        format!(
            r#"{{"type":"begin","name":"{name}","time":{}}}"#,
            START + t as f64
        )
    };
    let end = |name: &str, t: u32| {
        format!(
            r#"{{"type":"end","name":"{name}","time":{}}}"#,
            START + t as f64
        )
    };
    let mut opened = Vec::new();
    for text in [begin("a", 1), begin("a", 2)] {
        match take(&mut merger, "1.jsonl", &text).unwrap().unwrap() {
            Line::Open(open) => opened.push(open.id),
            other => panic!("{other:?}"),
        }
    }
    let ends: Vec<(Option<u64>, f64)> = [end("a", 3), end("a", 4)]
        .iter()
        .map(
            |text| match take(&mut merger, "1.jsonl", text).unwrap().unwrap() {
                Line::Marker(m) => (m.open_id, m.start_time),
                other => panic!("{other:?}"),
            },
        )
        .collect();
    assert_eq!(ends, [(Some(opened[1]), 2.0), (Some(opened[0]), 1.0)]);

    let by_id = r#"{"type":"begin","name":"x","id":"j","time":1800000000001}"#;
    take(&mut merger, "1.jsonl", by_id).unwrap();
    let end_elsewhere = r#"{"type":"end","name":"x","id":"j","time":1800000000002}"#;
    assert!(matches!(
        take(&mut merger, "2.jsonl", end_elsewhere),
        Ok(Some(Line::Marker(_)))
    ));
}

#[test]
fn an_end_by_name_prefers_its_own_file_then_any_file() {
    let mut merger = merger();
    let begin = |t: u32| {
        format!(
            r#"{{"type":"begin","name":"b","time":{}}}"#,
            START + t as f64
        )
    };
    let end = r#"{"type":"end","name":"b","time":1800000000009}"#;
    let id_of = |line: Result<Option<Line>, Problem>| match line.unwrap().unwrap() {
        Line::Open(open) => open.id,
        Line::Marker(marker) => marker.open_id.unwrap(),
        other => panic!("{other:?}"),
    };
    let in_1 = id_of(take(&mut merger, "1.jsonl", &begin(1)));
    let in_2 = id_of(take(&mut merger, "2.jsonl", &begin(2)));
    assert_eq!(id_of(take(&mut merger, "1.jsonl", end)), in_1);
    assert_eq!(id_of(take(&mut merger, "3.jsonl", end)), in_2);
    let line = take(&mut merger, "3.jsonl", end);
    assert!(matches!(line, Ok(Some(Line::Close(c))) if c.key == "file:3.jsonl:b"));
}

#[test]
fn ours_and_the_first_declaration_of_a_schema_win() {
    let mut merger = merger();
    let schema =
        |name: &str| format!(r#"{{"type":"schema","name":"{name}","display":[],"data":[]}}"#);
    assert_eq!(take(&mut merger, "1.jsonl", &schema("Text")), Ok(None));
    assert!(matches!(
        take(&mut merger, "1.jsonl", &schema("Test")),
        Ok(Some(Line::Schema(_)))
    ));
    assert_eq!(take(&mut merger, "2.jsonl", &schema("Test")), Ok(None));
}

#[test]
fn a_schema_named_like_ours_is_ignored_even_when_this_log_does_not_declare_it() {
    let schema = r#"{"type":"schema","name":"CgroupMem","display":[],"data":[]}"#;
    assert_eq!(take(&mut merger(), "1.jsonl", schema), Ok(None));
}

#[test]
fn a_task_graph_schema_takes_numbers_only_once_declared() {
    let mut merger = merger();
    let with = |kind: &str, value: &str| {
        format!(
            r#"{{"type":"{kind}","name":"t","time":1800000000001,"startTime":1800000000001,"data":{{"type":"T","v":{value},"note":"x"}}}}"#
        )
    };
    let before = take(&mut merger, "1.jsonl", &with("marker", r#""1GB""#));
    assert!(matches!(before, Ok(Some(Line::Marker(_)))));
    let schema = r#"{"type":"schema","name":"T","display":[],"data":[],"graphs":[{"key":"v","type":"bar","color":"red"}]}"#;
    assert!(take(&mut merger, "2.jsonl", schema).unwrap().is_some());
    for kind in ["marker", "begin", "end"] {
        assert_eq!(
            take(&mut merger, "1.jsonl", &with(kind, r#""1GB""#)),
            Err(Problem::NonNumericGraphValue),
            "{kind}"
        );
        assert!(
            take(&mut merger, "1.jsonl", &with(kind, "1")).is_ok(),
            "{kind}"
        );
    }
    let without_the_key =
        r#"{"type":"marker","name":"t","startTime":1800000000001,"data":{"type":"T"}}"#;
    assert_eq!(
        take(&mut merger, "1.jsonl", without_the_key),
        Err(Problem::NonNumericGraphValue)
    );
}

#[test]
fn a_graph_schema_of_the_meta_line_takes_numbers_only() {
    let marker = |v: &str| {
        format!(
            r#"{{"type":"marker","name":"m","startTime":1800000000001,"data":{{"type":"M","v":{v}}}}}"#
        )
    };
    let mut merger = merger();
    assert_eq!(
        take(&mut merger, "1.jsonl", &marker(r#""x""#)),
        Err(Problem::NonNumericGraphValue)
    );
    assert!(take(&mut merger, "1.jsonl", &marker("1")).is_ok());
}

#[test]
fn an_adopted_schema_keeps_its_graph_rule() {
    let mut merger = merger();
    let schema = json!({"name": "T", "graphs": [{"key": "v", "type": "bar", "color": "red"}]});
    merger.adopt_schema(schema.as_object().unwrap());
    let marker =
        r#"{"type":"marker","name":"t","startTime":1800000000001,"data":{"type":"T","v":[1]}}"#;
    assert_eq!(
        take(&mut merger, "1.jsonl", marker),
        Err(Problem::NonNumericGraphValue)
    );
}

#[test]
fn open_intervals_are_capped() {
    let mut merger = merger();
    merger.limits.open_intervals = 2;
    let begin = r#"{"type":"begin","name":"b","time":1800000000001}"#;
    take(&mut merger, "1.jsonl", begin).unwrap();
    take(&mut merger, "1.jsonl", begin).unwrap();
    assert_eq!(
        take(&mut merger, "1.jsonl", begin),
        Err(Problem::TooManyOpen)
    );
}

#[test]
fn a_batch_of_several_files_is_in_time_order_ties_in_file_order_and_reuses_its_vectors() {
    let dir = tempfile::tempdir().unwrap();
    let marker = |name: &str, ms: f64| {
        format!(
            "{{\"type\":\"marker\",\"name\":\"{name}\",\"startTime\":{}}}\n",
            START + ms
        )
    };
    let write = |file: &str, lines: &[(&str, f64)]| {
        let text: String = lines.iter().map(|&(name, ms)| marker(name, ms)).collect();
        std::fs::write(dir.path().join(file), text).unwrap();
    };
    write(
        "1.jsonl",
        &[("a1", 1.0), ("a3", 3.0), ("tie-a", 5.0), ("a0", 0.5)],
    );
    write("2.jsonl", &[("b2", 2.0), ("tie-b", 5.0), ("b4", 4.0)]);
    let mut reader = DirReader::open(dir.path(), Limits::default()).unwrap();
    let mut merger = merger();
    let names = |batch: Batch| -> Vec<String> {
        let name = |line| match line {
            Line::Marker(marker) => marker.name,
            other => panic!("{other:?}"),
        };
        batch.lines.into_iter().map(name).collect()
    };
    let batch = merger
        .read_batch(&mut reader, false, START + 60_000.0)
        .unwrap();
    let mut got = names(batch);
    // Ties keep the order the files were read in: the directory's listing order.
    let first = std::fs::read_dir(dir.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    let mut expected = vec!["a0", "a1", "b2", "a3", "b4", "tie-a", "tie-b"];
    if first.file_name() == "2.jsonl" {
        expected.swap(5, 6);
    }
    assert_eq!(got, expected);
    let capacity = (merger.decoded.capacity(), merger.order.capacity());
    assert!(capacity.0 >= 7 && capacity.1 >= 7, "{capacity:?}");
    std::fs::write(dir.path().join("3.jsonl"), marker("c", 6.0)).unwrap();
    got = names(
        merger
            .read_batch(&mut reader, false, START + 60_000.0)
            .unwrap(),
    );
    assert_eq!(got, ["c"]);
    assert_eq!(
        (merger.decoded.capacity(), merger.order.capacity()),
        capacity
    );
}

#[test]
fn a_character_cut_by_a_newline_leaves_both_lines_invalid_utf8() {
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("{{\"type\":\"marker\",\"name\":\"ok\",\"startTime\":{START}}}\n");
    // "é" is C3 A9: its first byte ends one line and its second starts the next.
    let mut text = b"{\"type\":\"marker\",\"name\":\"a\xC3\n\xA9\"}\n".to_vec();
    text.extend_from_slice(marker.as_bytes());
    std::fs::write(dir.path().join("1.jsonl"), text).unwrap();
    let mut reader = DirReader::open(dir.path(), Limits::default()).unwrap();
    let batch = merger()
        .read_batch(&mut reader, false, START + 60_000.0)
        .unwrap();
    assert!(matches!(&batch.lines[..], [Line::Marker(m)] if m.name == "ok"));
    let dropped: Vec<_> = batch.dropped.iter().map(|d| (d.problem, d.count)).collect();
    assert_eq!(dropped, [(Problem::InvalidUtf8, 2)]);
}

/// Lines as Python's `json.dumps` writes them (scripts/bench/task_tree.py), and spaced
/// lines the tagged enum refuses (a `type` twice, an unknown key out of range): the log
/// bytes of their batch, as they were before such lines were decoded without the tagged
/// enum's tree (marker_file/fast.rs), captured at 3ee4a1c.
#[test]
fn spaced_lines_make_the_log_bytes_they_always_made() {
    let dir = tempfile::tempdir().unwrap();
    let at = |ms: f64| START + ms;
    let lines = [
        format!(
            r#"{{"type": "marker", "name": "step", "startTime": {}, "endTime": null, "data": {{"type": "Text", "text": "step 0"}}}}"#,
            at(1.25)
        ),
        format!(
            "{{ \"type\" :\t\"marker\" ,\"name\": \"span\", \"category\": \"task\", \"startTime\": {}, \"endTime\": {}, \"data\": {{\"z\": [1, 2.50, {{\"a\": null}}], \"b\": \"\\u00e9\"}}, \"extra\": {{\"k\": [true]}}}}",
            at(2.0),
            at(3.5)
        ),
        format!(r#"{{"type": "begin", "name": "build", "id": "b1", "time": {}, "data": {{"type": "Text", "text": "go"}}}}"#, at(4.0)),
        format!(r#"{{"type": "end", "n\u0061me": "build", "id": "b1", "time": {}}}"#, at(5.0)),
        format!(r#"{{"type": "begin", "name": "test", "time": {}}}"#, at(6.0)),
        format!(r#"{{"type": "end", "name": "test", "time": {}, "data": {{"ok": 1}}}}"#, at(7.0)),
        format!(r#"{{"type": "marker", "name": "twice", "startTime": {}, "type": "marker"}}"#, at(8.0)),
        format!(r#"{{"type": "marker", "name": "far", "startTime": {}, "x": [1e999]}}"#, at(9.0)),
        format!(r#"{{"type": "marker", "name": "bad", "startTime": {}, "x": "\ud800"}}"#, at(10.0)),
        format!(r#"{{"type": "marker", "name": "late", "startTime": {}}}"#, at(99_000.0)),
    ];
    std::fs::write(dir.path().join("1.jsonl"), lines.join("\n") + "\n").unwrap();
    let mut reader = DirReader::open(dir.path(), Limits::default()).unwrap();
    let mut bytes = Vec::new();
    let end = merger()
        .read_batch_with(&mut reader, false, START + 60_000.0, &mut |taken| {
            taken.encode_into(&mut bytes)
        })
        .unwrap();
    let mut dropped: Vec<_> = end.dropped.iter().map(|d| (d.problem, d.count)).collect();
    dropped.sort_by_key(|(problem, _)| problem.describe());
    let expected = [
        r#"{"type":"marker","name":"step","startTime":1.25,"endTime":null,"category":3,"data":{"text":"step 0","type":"Text"}}"#,
        r#"{"type":"marker","name":"span","startTime":2.0,"endTime":3.5,"category":2,"data":{"b":"é","z":[1,2.5,{"a":null}]}}"#,
        r#"{"type":"open","id":1,"name":"build","startTime":4.0,"category":3,"data":{"text":"go","type":"Text"},"key":"id:b1"}"#,
        r#"{"type":"marker","name":"build","startTime":4.0,"endTime":5.0,"category":3,"data":{"text":"go","type":"Text"},"openId":1}"#,
        r#"{"type":"open","id":2,"name":"test","startTime":6.0,"category":3,"key":"file:1.jsonl:test"}"#,
        r#"{"type":"marker","name":"test","startTime":6.0,"endTime":7.0,"category":3,"data":{"ok":1},"openId":2}"#,
        r#"{"type":"marker","name":"late","startTime":99000.0,"endTime":null,"category":3}"#,
    ];
    assert_eq!(
        String::from_utf8(bytes).unwrap(),
        expected.join("\n") + "\n"
    );
    assert_eq!(
        dropped,
        [(Problem::NumberOutOfRange, 1), (Problem::WrongFields, 2)]
    );
}
