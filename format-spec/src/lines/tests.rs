use super::*;
use serde_json::json;

#[test]
fn instant_marker_encodes_as_the_profiler_reads_it() {
    let line = Line::Marker(Marker::instant("x", 1.5).with_category(2));
    assert_eq!(
        encode_line(&line),
        b"{\"type\":\"marker\",\"name\":\"x\",\"startTime\":1.5,\"endTime\":null,\"category\":2}\n"
    );
}

#[test]
fn open_then_close_carries_the_id() {
    let open = OpenInterval {
        id: 7,
        name: "build".into(),
        start_time: 3.0,
        category: Some(2),
        data: Some(json!({"type": "Text", "text": "make"})),
        key: None,
    };
    let encoded = encode_line(&Line::Open(open.clone()));
    assert!(encoded.starts_with(br#"{"type":"open","id":7,"#));
    let closed = open.close(9.0, None);
    assert_eq!(closed.open_id, Some(7));
    assert_eq!(closed.end_time, Some(9.0));
    assert_eq!(closed.data, open.data);
}

#[test]
fn compact_marker_lines_read_as_serde_json_reads_them() {
    let lines = [
        r#"{"type":"marker","name":"bench","startTime":850.163,"endTime":851.163,"data":{"type":"Text","text":"x"},"category":2}"#,
        r#"{"type":"marker","name":"a","startTime":1,"endTime":null,"category":null,"data":null,"openId":7}"#,
        r#"{"type":"marker","startTime":-0,"name":"café","extra":[1,{"y":false}],"data":{"v":[1e3,"s"],"type":"T"}}"#,
        r#"{"type":"marker","name":"n","startTime":1e-7,"endTime":18446744073709551617,"category":4294967295}"#,
    ];
    for line in lines {
        let line = line.replace("\\u00e9", "\u{e9}");
        let fast = compact_marker(&line).expect("a compact line");
        let slow: RawMarker = serde_json::from_str(&line).unwrap();
        assert_eq!(format!("{fast:?}"), format!("{slow:?}"), "{line}");
    }
    for refused in [
        r#"{"type":"marker","name":"a","startTime":1,"name":"b"}"#,
        r#"{"type":"marker","name":"a\"b","startTime":1}"#,
        r#"{"type":"marker","name":"a","startTime": 1}"#,
        r#"{"type":"marker","name":"a","startTime":1,"category":2.0}"#,
        r#"{"type":"marker","name":"a","startTime":1e999}"#,
        r#"{"type":"marker","name":"a"}"#,
        r#"{"type":"marker","name":"a","startTime":"1"}"#,
        // Found by the log_reader fuzz target: a null, then bytes.
        r#"{"type":"marker","name":"a","startTime":null354}"#,
        r#"{"type":"marker","name":null"a","startTime":1}"#,
        r#"{"type":"marker","name":"a","startTime":1,"endTime":null2}"#,
    ] {
        assert!(compact_marker(refused).is_none(), "{refused}");
    }
}

#[test]
fn keys_that_start_as_a_marker_key_does_are_read_as_serde_json_reads_them() {
    // Told apart from `name`, `startTime`, ... by more than their first letter: each is
    // ignored, or the key it is, as serde_json takes it.
    let line = r#"{"type":"marker","n":1,"nam":2,"names":"x","name":"a","s":[],"startTimes":{"type":5},"startTime":1,"e":null,"end":true,"cat":7,"d":"","dat":{},"data":{"t":1,"typ":2,"types":3,"type":"T"},"open":0,"typeX":"y"}"#;
    let fast = compact_marker(line).expect("a compact line");
    let slow: RawMarker = serde_json::from_str(line).unwrap();
    assert_eq!(format!("{fast:?}"), format!("{slow:?}"));
    assert_eq!(fast.data, Some(r#"{"t":1,"typ":2,"types":3,"type":"T"}"#));
    for refused in [
        r#"{"type":"marker","name":"a","startTime":1,"n"}"#,
        r#"{"type":"marker","name":"a","startTime":1,"name" :"b"}"#,
        r#"{"type":"marker","name":"a","startTime":1,"data":{"type" :"T"}}"#,
        r#"{"type":"marker","name":"a","startTime":1,"data":{"type":5}}"#,
    ] {
        assert!(compact_marker(refused).is_none(), "{refused}");
    }
}

#[test]
fn a_payload_the_front_end_refuses_is_a_decode_error() {
    for data in [
        "[1]",
        "5",
        r#""s""#,
        "true",
        r#"{"type":5}"#,
        r#"{"type":null}"#,
        r#"{"type":["x"]}"#,
        r#"{"text":"a\"b","type":{}}"#,
        r#"{"type":"A","type":7}"#,
    ] {
        let marker = format!(r#"{{"type":"marker","name":"a","startTime":1,"data":{data}}}"#);
        assert!(decode_line(marker.as_bytes()).is_err(), "{marker}");
        let open = format!(r#"{{"type":"open","id":1,"name":"a","startTime":1,"data":{data}}}"#);
        assert!(decode_line(open.as_bytes()).is_err(), "{open}");
        let close = format!(r#"{{"type":"close","key":"k","name":"a","time":1,"data":{data}}}"#);
        assert!(decode_line(close.as_bytes()).is_err(), "{close}");
    }
    for data in [
        "null",
        "{}",
        r#"{"type":"T"}"#,
        r#"{"a":{"type":5},"type":"T"}"#,
        r#"{"text":"a\"b","type":"T\u0078"}"#,
    ] {
        let marker = format!(r#"{{"type":"marker","name":"a","startTime":1,"data":{data}}}"#);
        assert!(decode_line(marker.as_bytes()).is_ok(), "{marker}");
    }
}

#[test]
fn unknown_line_kinds_are_skipped_not_errors() {
    assert_eq!(
        decode_line(br#"{"type":"from-the-future","x":1}"#).unwrap(),
        Line::Unknown
    );
}

#[test]
fn foreign_marker_keys_are_ignored() {
    let line = decode_line(br#"{"type":"marker","name":"a","startTime":1,"extra":true}"#);
    assert_eq!(line.unwrap(), Line::Marker(Marker::instant("a", 1.0)));
}

#[test]
fn gap_round_trips() {
    let line = Line::Gap(Gap {
        start_time: 1.5,
        end_time: 2.5,
        lines: 3,
        reason: "No space left on device (os error 28)".into(),
    });
    let bytes = encode_line(&line);
    assert!(bytes.starts_with(br#"{"type":"gap","startTime":1.5,"endTime":2.5,"lines":3,"#));
    assert_eq!(decode_line(&bytes[..bytes.len() - 1]).unwrap(), line);
}

#[test]
fn typed_marker_line_is_the_marker_line_with_that_data() {
    #[derive(Serialize)]
    struct Sample {
        #[serde(rename = "type")]
        kind: &'static str,
        used: u64,
    }
    let mut typed = Vec::new();
    encode_marker_line_into(
        &mut typed,
        "Memory",
        1.5,
        Some(2.5),
        0,
        &Sample {
            kind: "Mem",
            used: 7,
        },
    );
    let marker = Marker::interval("Memory", 1.5, 2.5)
        .with_category(0)
        .with_data(json!({"type": "Mem", "used": 7}));
    assert_eq!(typed, encode_line(&Line::Marker(marker)));
}

/// Found by tests/properties.rs: without serde_json's float_roundtrip, this time
/// decoded one unit in the last place away from the one encoded.
#[test]
fn every_finite_time_round_trips() {
    let line = Line::Gap(Gap {
        start_time: -1.362934606401779e-308,
        end_time: 0.0,
        lines: 0,
        reason: String::new(),
    });
    let bytes = encode_line(&line);
    assert_eq!(decode_line(&bytes[..bytes.len() - 1]).unwrap(), line);
}

#[test]
fn footer_round_trips() {
    let line = Line::Footer(Footer {
        end_time: 12.25,
        reason: EndReason::CommandExited,
    });
    let bytes = encode_line(&line);
    assert_eq!(
        bytes,
        b"{\"type\":\"footer\",\"endTime\":12.25,\"reason\":\"command-exited\"}\n"
    );
    assert_eq!(decode_line(&bytes[..bytes.len() - 1]).unwrap(), line);
}
