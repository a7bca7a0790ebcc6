//! The hand-written track line against serde_json's encoding of the same payload, byte
//! for byte.

use super::*;
use crate::{decode_line, encode_marker_line_into, Line};
use proptest::prelude::*;
use serde::ser::{Serialize, SerializeMap, Serializer};

const KEYS: [&str; 6] = ["cpu", "cpuPercent", "read_bytes", "processes", "type", "x"];

#[derive(Clone, Debug)]
enum Value {
    Str(String),
    U64(u64),
    F64(f64),
}

/// A payload that writes itself by hand and serializes through serde the same keys and
/// values, `type` first, as the recorder's derived payloads did.
#[derive(Debug)]
struct Sample {
    data_type: &'static str,
    fields: Vec<(&'static str, Value)>,
}

impl TrackData for Sample {
    fn data_type(&self) -> &'static str {
        self.data_type
    }

    fn write_fields(&self, fields: &mut DataFields) {
        for (key, value) in &self.fields {
            match value {
                Value::Str(text) => fields.str(key, text),
                Value::U64(number) => fields.u64(key, *number),
                Value::F64(number) => fields.f64(key, *number),
            }
        }
    }
}

impl Serialize for Sample {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.fields.len() + 1))?;
        map.serialize_entry("type", self.data_type)?;
        for (key, value) in &self.fields {
            match value {
                Value::Str(text) => map.serialize_entry(key, text)?,
                Value::U64(number) => map.serialize_entry(key, number)?,
                Value::F64(number) => map.serialize_entry(key, number)?,
            }
        }
        map.end()
    }
}

fn both(name: &str, start: f64, end: Option<f64>, category: u32, sample: &Sample) -> [String; 2] {
    let mut by_hand = Vec::new();
    encode_track_line_into(&mut by_hand, name, start, end, category, sample);
    let mut serde = Vec::new();
    encode_marker_line_into(&mut serde, name, start, end, category, sample);
    [by_hand, serde].map(|bytes| String::from_utf8(bytes).unwrap())
}

/// Any text, control characters, quotes and backslashes among it.
fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(any::<char>(), 0..12).prop_map(String::from_iter)
}

/// Any f64 (NaN and infinities too), or a time to the microsecond, as most are.
fn number() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>(),
        (-(1i64 << 50)..(1i64 << 50)).prop_map(|micros| micros as f64 / 1000.0),
        (0u32..=10000).prop_map(|n| n as f64 / 10000.0),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        text().prop_map(Value::Str),
        any::<u64>().prop_map(Value::U64),
        number().prop_map(Value::F64),
    ]
}

#[test]
fn a_cpu_sample_is_the_line_serde_writes() {
    let sample = Sample {
        data_type: "TaskCPU",
        fields: vec![
            ("cpu", Value::F64(0.0625)),
            ("cpuPercent", Value::Str("6.3%".to_owned())),
            ("processes", Value::U64(3)),
        ],
    };
    let [by_hand, serde] = both("Task CPU", 100.5, Some(200.25), 0, &sample);
    assert_eq!(by_hand, serde);
    assert_eq!(
        by_hand,
        "{\"type\":\"marker\",\"name\":\"Task CPU\",\"startTime\":100.5,\"endTime\":200.25,\"category\":0,\"data\":{\"type\":\"TaskCPU\",\"cpu\":0.0625,\"cpuPercent\":\"6.3%\",\"processes\":3}}\n"
    );
    let Line::Marker(marker) = decode_line(by_hand.trim_end().as_bytes()).unwrap() else {
        panic!("not a marker line");
    };
    assert_eq!(marker.data.unwrap()["cpuPercent"], "6.3%");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(5_000))]
    #[test]
    fn every_track_line_is_the_line_serde_writes(
        name in text(),
        data_type in text(),
        start in number(),
        end in prop::option::of(number()),
        category in any::<u32>(),
        fields in prop::collection::vec((prop::sample::select(&KEYS[..]), value()), 0..16),
    ) {
        // A leak a case: `type` is a schema's name, &'static as in the recorder.
        let sample = Sample { data_type: String::leak(data_type), fields };
        let [by_hand, serde] = both(&name, start, end, category, &sample);
        prop_assert_eq!(by_hand, serde);
    }
}
