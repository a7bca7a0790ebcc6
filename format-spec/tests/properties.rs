//! Properties of the one encoder and decoder (SPEC.md, "Line kinds"): for every line kind,
//! decoding what was encoded gives the line back, and an encoded line is one line. Times
//! are any finite number (the encoder is never given another), payloads any JSON object.

use proptest::prelude::*;
use serde_json::{Map, Number, Value};
use tc_profile_format::marker_file::Problem;
use tc_profile_format::{
    decode_line, encode_line, Checkpoint, Close, Dropped, EndReason, FileProgress, Footer, Gap,
    Ingest, Line, Marker, OpenInterval,
};

fn time() -> impl Strategy<Value = f64> {
    prop_oneof![
        // Log times: milliseconds of a recording, to the microsecond.
        (0u64..1 << 40).prop_map(|us| us as f64 / 1000.0),
        any::<f64>().prop_filter("finite", |t| t.is_finite()),
    ]
}

fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        time()
            .prop_filter_map("finite", Number::from_f64)
            .prop_map(Value::Number),
        any::<String>().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(any::<String>(), inner, 0..6)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

/// An object, as payloads and the meta, thread and schema lines are; the tagged lines
/// keep `type` for their kind.
fn object() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::btree_map(
        any::<String>().prop_filter("not type", |k| k != "type"),
        json(),
        0..6,
    )
    .prop_map(|map| map.into_iter().collect())
}

fn payload() -> impl Strategy<Value = Option<Value>> {
    prop::option::of(object().prop_map(Value::Object))
}

fn marker() -> impl Strategy<Value = Marker> {
    (
        any::<String>(),
        time(),
        prop::option::of(time()),
        prop::option::of(any::<u32>()),
        payload(),
        prop::option::of(any::<u64>()),
    )
        .prop_map(
            |(name, start_time, end_time, category, data, open_id)| Marker {
                name,
                start_time,
                end_time,
                category,
                data,
                open_id,
            },
        )
}

fn open() -> impl Strategy<Value = OpenInterval> {
    (
        any::<u64>(),
        any::<String>(),
        time(),
        prop::option::of(any::<u32>()),
        payload(),
        prop::option::of(any::<String>()),
    )
        .prop_map(|(id, name, start_time, category, data, key)| OpenInterval {
            id,
            name,
            start_time,
            category,
            data,
            key,
        })
}

fn progress() -> impl Strategy<Value = FileProgress> {
    (
        any::<String>(),
        any::<u64>(),
        any::<u64>(),
        prop::option::of(any::<String>()),
        any::<u64>(),
        any::<bool>(),
    )
        .prop_map(|(name, dev, ino, handle, offset, done)| FileProgress {
            name,
            dev,
            ino,
            handle,
            offset,
            done,
        })
}

fn problem() -> impl Strategy<Value = Problem> {
    prop::sample::select(vec![
        Problem::Symlink,
        Problem::LineTooLong,
        Problem::NotJson,
        Problem::BadTime,
        Problem::TooManyOpen,
        Problem::EndWithoutBegin,
        Problem::DirectoryUnreadable,
    ])
}

fn line() -> impl Strategy<Value = Line> {
    prop_oneof![
        object().prop_map(Line::Meta),
        object().prop_map(Line::Thread),
        marker().prop_map(Line::Marker),
        open().prop_map(Line::Open),
        (
            time(),
            prop::sample::select(vec![EndReason::CommandExited, EndReason::Stopped])
        )
            .prop_map(|(end_time, reason)| Line::Footer(Footer { end_time, reason })),
        (time(), time(), any::<u64>(), any::<String>()).prop_map(
            |(start_time, end_time, lines, reason)| Line::Gap(Gap {
                start_time,
                end_time,
                lines,
                reason,
            })
        ),
        any::<bool>().prop_map(|task_log| Line::Ingest(Ingest { task_log })),
        prop::collection::vec(progress(), 0..4)
            .prop_map(|files| Line::Checkpoint(Checkpoint { files })),
        (any::<String>(), problem(), any::<u64>(), any::<u64>()).prop_map(
            |(file, problem, count, bytes)| Line::Dropped(Dropped {
                file,
                problem,
                count,
                bytes,
            })
        ),
        object().prop_map(Line::Schema),
        (any::<String>(), any::<String>(), time(), payload()).prop_map(
            |(key, name, time, data)| Line::Close(Close {
                key,
                name,
                time,
                data,
            })
        ),
        Just(Line::Unknown),
    ]
}

proptest! {
    #[test]
    fn decoding_an_encoded_line_gives_it_back(line in line()) {
        let bytes = encode_line(&line);
        prop_assert_eq!(bytes.last(), Some(&b'\n'));
        let body = &bytes[..bytes.len() - 1];
        prop_assert!(!body.contains(&b'\n'), "one line");
        prop_assert_eq!(decode_line(body).unwrap(), line);
    }
}
