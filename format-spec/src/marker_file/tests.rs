//! Tests of the marker-file decoder: every line kind, a problem for each kind of bad line,
//! the nesting cap, the caps set by name, and the begin/end keys.

use super::*;
use crate::schema::category;

fn decode(text: &str) -> Result<FileLine, Problem> {
    decode_file_line(text.as_bytes(), &Limits::default())
}

#[test]
fn every_line_kind_decodes() {
    let marker = decode(
        r#"{"type":"marker","name":"clone","startTime":1000,"endTime":1500,"category":"task","data":{"type":"Text","text":"git"}}"#,
    );
    match marker.unwrap() {
        FileLine::Marker(m) => {
            assert_eq!((m.start_time, m.end_time), (1000.0, Some(1500.0)));
            assert_eq!(Category::index(m.category), category::TASK);
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        decode(r#"{"type":"begin","name":"build","id":"b1","time":1}"#),
        Ok(FileLine::Begin(_))
    ));
    assert!(matches!(
        decode(r#"{"type":"end","name":"build","time":2}"#),
        Ok(FileLine::End(_))
    ));
    assert!(matches!(
        decode(r#"{"type":"metric","name":"tests","kind":"c","value":3,"time":2}"#),
        Ok(FileLine::Metric(_))
    ));
    assert!(matches!(
        decode(
            r#"{"type":"schema","name":"Test","display":["marker-table"],"data":[{"key":"status","format":"string"}]}"#
        ),
        Ok(FileLine::Schema(_))
    ));
}

#[test]
fn each_kind_of_bad_line_has_its_own_problem() {
    let cases = [
        ("[1,2]", Problem::NotObject),
        ("{\"type\":\"marker\"", Problem::NotJson),
        (
            r#"{"type":"marker","name":5,"startTime":1}"#,
            Problem::WrongFields,
        ),
        (
            r#"{"type":"marker","name":"a","startTime":1,"category":"root"}"#,
            Problem::WrongFields,
        ),
        (
            r#"{"type":"marker","name":"a","startTime":1,"data":[]}"#,
            Problem::WrongFields,
        ),
        (
            r#"{"type":"marker","name":"a","startTime":1,"data":{"type":7}}"#,
            Problem::WrongFields,
        ),
        (r#"{"type":"surprise"}"#, Problem::UnknownType),
        (
            r#"{"type":"marker","name":"a\u0007b","startTime":1}"#,
            Problem::BadName,
        ),
        (
            r#"{"type":"marker","name":"","startTime":1}"#,
            Problem::BadName,
        ),
        (
            r#"{"type":"marker","name":"a","startTime":5,"endTime":4}"#,
            Problem::BadTime,
        ),
        (
            r#"{"type":"marker","name":"a","startTime":1e999}"#,
            Problem::NumberOutOfRange,
        ),
        (
            r#"{"type":"schema","name":"T","display":["everywhere"],"data":[]}"#,
            Problem::BadSchema,
        ),
        (
            r#"{"type":"metric","name":"m","kind":"c","value":"x","time":1}"#,
            Problem::WrongFields,
        ),
    ];
    for (text, problem) in cases {
        assert_eq!(decode(text), Err(problem), "{text}");
    }
    assert_eq!(
        decode_file_line(b"{\"name\":\"\xff\"}", &Limits::default()),
        Err(Problem::InvalidUtf8)
    );
}

/// Found by fuzz/fuzz_targets/marker_line_built.rs: serde_json reports a number where an
/// enum is due as a syntax error, and a line with `type` first said "not JSON" for it.
#[test]
fn a_number_for_a_category_is_a_wrong_field_with_type_first_or_last() {
    for text in [
        r#"{"type":"begin","name":"","time":1800008257791.0,"category":126}"#,
        r#"{"name":"","time":1800008257791.0,"category":126,"type":"begin"}"#,
    ] {
        assert_eq!(decode(text), Err(Problem::WrongFields), "{text}");
    }
}

#[test]
fn a_task_line_cannot_use_the_recorders_own_data_types() {
    let reserved = [
        "CPU",
        "Mem",
        "IO",
        "NetIO",
        "Command",
        "TaskCPU",
        "OtherCPU",
        "TaskMem",
        "OtherMem",
        "Process",
        "CgroupMem",
        "CgroupCPU",
        "OOMKill",
        "PSI",
        "Load",
        "Swap",
        "CPUFreq",
        "Log",
        "Counter",
        "Gauge",
        "Timer",
        "Histogram",
        "Set",
        "MetricDrops",
    ];
    for kind in reserved {
        for line in [
            format!(
                r#"{{"type":"marker","name":"Memory","startTime":1,"data":{{"type":"{kind}","used":"1GB"}}}}"#
            ),
            format!(r#"{{"type":"begin","name":"b","time":1,"data":{{"type":"{kind}"}}}}"#),
            format!(r#"{{"type":"end","name":"b","time":1,"data":{{"type":"{kind}"}}}}"#),
        ] {
            assert_eq!(decode(&line), Err(Problem::ReservedType), "{line}");
        }
    }
    let text =
        r#"{"type":"marker","name":"CPU Use","startTime":1,"data":{"type":"Text","text":"x"}}"#;
    assert!(decode(text).is_ok());
}

#[test]
fn nesting_is_capped_but_brackets_in_strings_do_not_count() {
    let deep = format!(
        r#"{{"type":"marker","name":"a","startTime":1,"data":{}{}}}"#,
        "[".repeat(40),
        "]".repeat(40)
    );
    assert_eq!(decode(&deep), Err(Problem::TooDeep));
    let text = format!(
        r#"{{"type":"marker","name":"{}","startTime":1}}"#,
        "[".repeat(40)
    );
    assert!(decode(&text).is_ok());
    // The count of opening brackets bounds the nesting: at the cap, the nesting decides.
    let nested = |levels: usize| "{\"a\":".repeat(levels - 1) + "{}" + &"}".repeat(levels - 1);
    let in_string = |levels: usize| format!(r#"{{"a":"{}\"{}"}}"#, "[".repeat(levels), "{");
    for (line, deeper) in [
        (nested(3), false),
        (nested(4), true),
        (in_string(9), false),
        (format!("[{}]", nested(3)), true),
        (format!(r#"["\\",[{}]]"#, nested(1)), false),
    ] {
        assert_eq!(rules::deeper_than(line.as_bytes(), 3), deeper, "{line}");
    }
}

#[test]
fn limits_are_set_by_name() {
    let mut limits = Limits::default();
    limits.set("line-bytes=100").unwrap();
    limits.set("time-slack=5").unwrap();
    assert_eq!((limits.line_bytes, limits.time_slack_ms), (100, 5000.0));
    assert!(limits.set("bogus=1").unwrap_err().contains("known:"));
    assert!(limits.set("files=0").is_err());
}

#[test]
fn begin_and_end_keys_are_global_by_id_and_per_file_by_name() {
    assert_eq!(interval_key("1.jsonl", "b", Some("x")), "id:x");
    assert_eq!(interval_key("1.jsonl", "b", None), "file:1.jsonl:b");
}

/// The fast path's line of `text`, owned.
fn fast_line(text: &str) -> Option<FileLine> {
    fast::decode(text, Limits::default().depth).map(|line| line.into_line())
}

/// Lines that give their `type` first, spaced or not, take the way of marker_file/fast.rs,
/// which must take what the tagged enum takes, with the same values, and refuse the rest.
#[test]
fn spaced_lines_decode_as_the_tagged_enum_decodes_them() {
    let taken = [
        r#"{"type": "marker", "name": "step", "startTime": 1733437981123.456, "endTime": null, "data": {"type": "Text", "text": "step 1"}}"#,
        "{ \"type\"\t:\r\n\"marker\" , \"name\":\"a\",\"startTime\":1,\"endTime\":2,\"category\":\"task\",\"data\":null}",
        r#"{"type": "marker", "name": "a", "startTime": 18446744073709551616, "category": "worker"}"#,
        r#"{"type": "marker", "name": "a", "startTime": -0, "extra": {"k": [1, 2.5, "é", {}]}, "x": 1}"#,
        r#"{"type": "begin", "name": "build", "id": "b1", "time": 1, "category": "user", "data": {"type": "Text", "a": [null]}}"#,
        r#"{"type": "end", "name": "build", "time": 2, "data": {"x": {"y": 1}}, "category": "ignored"}"#,
        r#"{"type":"marker","name":"compact","startTime":1}"#,
        r#"{"type":"marker","name":"a","startTime":1,"data":{"b":1,"a":2,"b":3},"x":100}"#,
        r#"{"type": "end", "name": "a", "time": 1, "data": null, "startTime": "x"}"#,
    ];
    for line in taken {
        let tagged: FileLine = serde_json::from_str(line).expect(line);
        assert_eq!(fast_line(line), Some(tagged), "{line}");
    }
    let refused = [
        r#"{"type": "marker", "name": "a", "startTime": 1, "type": "marker"}"#,
        r#"{"type": "marker", "name": "a", "startTime": 1, "typ\u0065": "begin"}"#,
        r#"{"type": "marker", "name": "a", "startTime": 1, "x": 1e999}"#,
        r#"{"type": "marker", "name": "a", "startTime": 1, "x": {"y": [1e999]}}"#,
        r#"{"type": "marker", "name": "a", "startTime": 1, "x": "\ud800"}"#,
        r#"{"type": "marker", "name": "a", "startTime": 1, "name": "b"}"#,
        r#"{"type": "marker", "name": 5, "startTime": 1}"#,
        r#"{"type": "marker", "name": "a"}"#,
        r#"{"type": "marker", "name": "a", "startTime": 1} x"#,
        r#"{"type": "marker", "name": "a", "startTime": 1,}"#,
        r#"{"type": "begin", "name": "a", "time": 1, "category": "root"}"#,
        r#"{"type": "end", "name": "a", "time": "1"}"#,
    ];
    for line in refused {
        assert!(serde_json::from_str::<FileLine>(line).is_err(), "{line}");
        assert_eq!(fast_line(line), None, "{line}");
    }
    // Not this way, but the tagged way takes them: another kind, a first key that is not a
    // plain `type`, a category given as a map, an escape, an exponent.
    for line in [
        r#"{"type": "metric", "name": "m", "kind": "c", "value": 1, "time": 1}"#,
        r#"{"name": "a", "type": "marker", "startTime": 1}"#,
        r#"{"typ\u0065": "marker", "name": "a", "startTime": 1}"#,
        r#"{"type": "m\u0061rker", "name": "a", "startTime": 1}"#,
        r#"{"type": "Marker", "name": "a", "startTime": 1}"#,
        r#"{"type": "marker", "name": "a", "startTime": 1, "category": {"worker": null}}"#,
        r#"{"type": "marker", "n\u0061me": "a\n", "startTime": -0, "extra": {"k": [1, 2.5e3, "\u00e9", {}]}, "\u0078": 1}"#,
        r#"{"type": "marker", "name": "a", "startTime": 1, "data": {"x": 1e5}}"#,
        r#"{"type": "marker", "name": "a", "startTime": 1, "x": "\u0041"}"#,
    ] {
        assert_eq!(fast_line(line), None, "{line}");
    }
}

/// The compact path once took a `type` given twice and an unknown key out of an f64's
/// range, which the tagged enum refuses: every spelling is now refused alike.
#[test]
fn a_type_twice_or_an_unknown_key_out_of_range_is_refused_compact_or_spaced() {
    for (compact, problem) in [
        (
            r#"{"type":"marker","name":"a","startTime":1,"type":"marker"}"#,
            Problem::WrongFields,
        ),
        (
            r#"{"type":"marker","name":"a","startTime":1,"x":1e999}"#,
            Problem::NumberOutOfRange,
        ),
        (
            r#"{"type":"begin","name":"a","time":1,"type":"begin"}"#,
            Problem::WrongFields,
        ),
        (
            r#"{"type":"end","name":"a","time":1,"x":[-1e999]}"#,
            Problem::NumberOutOfRange,
        ),
    ] {
        let spaced = compact.replace(',', ", ").replace(':', ": ");
        for line in [compact, &spaced] {
            assert_eq!(decode(line), Err(problem), "{line}");
            let decoded = decode_line_or_plain(line.as_bytes(), &Limits::default());
            assert_eq!(decoded.err(), Some(problem), "{line}");
        }
    }
}

#[test]
fn the_fast_way_reads_every_field_of_its_kinds() {
    fn keys(value: impl serde::Serialize) -> Vec<String> {
        let mut keys: Vec<_> = serde_json::to_value(value)
            .unwrap()
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        keys.sort();
        keys
    }
    fn sorted(keys: &[&str]) -> Vec<String> {
        let mut keys: Vec<_> = keys.iter().map(|key| key.to_string()).collect();
        keys.sort();
        keys
    }
    let data = Some(Map::new());
    let marker = FileMarker {
        name: "a".into(),
        start_time: 1.0,
        end_time: Some(2.0),
        category: Some(Category::Task),
        data: data.clone(),
    };
    let begin = Begin {
        name: "a".into(),
        id: Some("i".into()),
        time: 1.0,
        category: Some(Category::Task),
        data: data.clone(),
    };
    let end = End {
        name: "a".into(),
        id: Some("i".into()),
        time: 1.0,
        data,
    };
    assert_eq!(keys(marker), sorted(&fast::MARKER_KEYS));
    assert_eq!(keys(begin), sorted(&fast::BEGIN_KEYS));
    assert_eq!(keys(end), sorted(&fast::END_KEYS));
}
