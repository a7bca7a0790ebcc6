//! A marker with its payload kept as the JSON text it was read as, and parsed only where a
//! figure is needed (a summary, merging a long track): owned ([`ProfileMarker`], for the
//! few markers made or edited one by one) or borrowed from columns ([`MarkerRef`]).
//! Parsing every payload into a tree, writing it out again and freeing it took most of the
//! time and memory of finalizing.

use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;
use tc_profile_format::{Marker, RawMarker};

/// One marker of a profile.
#[derive(Clone, Debug)]
pub struct ProfileMarker {
    pub name: String,
    /// Milliseconds since `meta.startTime`.
    pub start_time: f64,
    /// None for an instant.
    pub end_time: Option<f64>,
    /// Index into `meta.categories`; 0 when absent.
    pub category: Option<u32>,
    /// The payload, as JSON text.
    pub data: Option<Box<RawValue>>,
}

/// One marker, borrowed from its columns.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MarkerRef<'a> {
    pub name: &'a str,
    /// Milliseconds since `meta.startTime`.
    pub start_time: f64,
    /// None for an instant.
    pub end_time: Option<f64>,
    /// Index into `meta.categories`; 0 when absent.
    pub category: Option<u32>,
    /// The payload, as JSON text.
    pub data: Option<&'a str>,
}

impl ProfileMarker {
    pub fn as_ref(&self) -> MarkerRef<'_> {
        MarkerRef {
            name: &self.name,
            start_time: self.start_time,
            end_time: self.end_time,
            category: self.category,
            data: self.data.as_deref().map(RawValue::get),
        }
    }
}

impl<'a> From<&'a RawMarker<'a>> for MarkerRef<'a> {
    fn from(marker: &'a RawMarker<'a>) -> MarkerRef<'a> {
        MarkerRef {
            name: &marker.name,
            start_time: marker.start_time,
            end_time: marker.end_time,
            category: marker.category,
            data: marker.data,
        }
    }
}

impl<'a> MarkerRef<'a> {
    pub fn owned(self) -> ProfileMarker {
        ProfileMarker {
            name: self.name.to_owned(),
            start_time: self.start_time,
            end_time: self.end_time,
            category: self.category,
            // Text from a column was JSON when it went in.
            data: self
                .data
                .and_then(|data| RawValue::from_string(data.to_owned()).ok()),
        }
    }

    /// The marker with its payload parsed.
    pub fn to_marker(self) -> Marker {
        Marker {
            name: self.name.to_owned(),
            start_time: self.start_time,
            end_time: self.end_time,
            category: self.category,
            data: self.data_value(),
            open_id: None,
        }
    }

    /// The payload parsed.
    pub fn data_value(self) -> Option<Value> {
        serde_json::from_str(self.data?).ok()
    }

    /// The payload's [`leading_type`].
    pub fn leading_type(self) -> Option<&'a str> {
        leading_type(self.data?)
    }

    /// The payload's `type` wherever it is (a metric's payload has its keys sorted):
    /// found without parsing when it leads.
    pub fn data_type(self) -> Option<Cow<'a, str>> {
        match self.leading_type() {
            Some(kind) => Some(Cow::Borrowed(kind)),
            None => self.figures().kind,
        }
    }

    /// The payload's `type` and numbers, read without building a tree.
    pub fn figures(self) -> Figures<'a> {
        self.data
            .and_then(|data| serde_json::from_str(data).ok())
            .unwrap_or_default()
    }
}

/// A payload's `type` when it is its first key, as the recorder writes payloads: found
/// without parsing the rest. None when the payload starts otherwise.
pub(crate) fn leading_type(data: &str) -> Option<&str> {
    let rest = data.strip_prefix(r#"{"type":""#)?;
    let length = rest.bytes().position(|b| b == b'"' || b == b'\\')?;
    // An escaped character: left to a parser.
    (rest.as_bytes()[length] == b'"').then(|| &rest[..length])
}

impl From<Marker> for ProfileMarker {
    fn from(marker: Marker) -> ProfileMarker {
        ProfileMarker {
            name: marker.name,
            start_time: marker.start_time,
            end_time: marker.end_time,
            category: marker.category,
            data: marker.data.map(|data| raw_json(&data)),
        }
    }
}

/// A value as JSON text.
pub(crate) fn raw_json(value: &Value) -> Box<RawValue> {
    // A Value holds only strings, numbers, arrays and maps with string keys: it always
    // serializes.
    serde_json::value::to_raw_value(value).unwrap_or_else(|e| unreachable!("a Value: {e}"))
}

/// What summaries and merged tracks read of a payload: its `type`, and the numbers of the
/// resource and process tracks' schemas (a key that holds no number reads as absent).
#[derive(Deserialize, Default, Debug)]
pub struct Figures<'a> {
    #[serde(rename = "type", borrow, default)]
    pub kind: Option<Cow<'a, str>>,
    #[serde(default)]
    pub nice: Number,
    #[serde(default)]
    pub user: Number,
    #[serde(default)]
    pub system: Number,
    #[serde(default)]
    pub iowait: Number,
    #[serde(default)]
    pub softirq: Number,
    #[serde(default)]
    pub steal: Number,
    #[serde(default)]
    pub peak: Number,
    #[serde(default)]
    pub used: Number,
    #[serde(default)]
    pub swap: Number,
    #[serde(default)]
    pub read_bytes: Number,
    #[serde(default)]
    pub write_bytes: Number,
    #[serde(default)]
    pub recv_bytes: Number,
    #[serde(default)]
    pub sent_bytes: Number,
    #[serde(default)]
    pub cpu: Number,
    #[serde(default)]
    pub rss: Number,
    #[serde(rename = "cpuTime", default)]
    pub cpu_time: Number,
}

impl Figures<'_> {
    /// The number under a key of the resource tracks' schemas.
    pub fn get(&self, key: &str) -> Option<f64> {
        let number = match key {
            "nice" => &self.nice,
            "user" => &self.user,
            "system" => &self.system,
            "iowait" => &self.iowait,
            "softirq" => &self.softirq,
            "steal" => &self.steal,
            "peak" => &self.peak,
            "used" => &self.used,
            "swap" => &self.swap,
            "read_bytes" => &self.read_bytes,
            "write_bytes" => &self.write_bytes,
            "recv_bytes" => &self.recv_bytes,
            "sent_bytes" => &self.sent_bytes,
            "cpu" => &self.cpu,
            "rss" => &self.rss,
            "cpuTime" => &self.cpu_time,
            _ => return None,
        };
        number.0
    }
}

/// The busy share of all cores in a CPU sample, given its numbers by key: the top of the
/// stacked bars, less the iowait bar (cores waiting on I/O are idle).
pub fn busy_share(number: impl Fn(&str) -> Option<f64>) -> Option<f64> {
    let top = ["steal", "softirq", "iowait", "system", "user", "nice"]
        .into_iter()
        .find_map(&number)?;
    let iowait = match (number("iowait"), number("system")) {
        (Some(iowait), Some(system)) => (iowait - system).max(0.0),
        _ => 0.0,
    };
    Some((top - iowait).clamp(0.0, 1.0))
}

/// A JSON number, or None for any other value (which is skipped, not an error).
#[derive(Default, Debug, Clone, Copy, PartialEq)]
pub struct Number(pub Option<f64>);

impl<'de> Deserialize<'de> for Number {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Number, D::Error> {
        struct AnyValue;
        impl<'de> Visitor<'de> for AnyValue {
            type Value = Number;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_f64<E>(self, v: f64) -> Result<Number, E> {
                Ok(Number(Some(v)))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Number, E> {
                Ok(Number(Some(v as f64)))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Number, E> {
                Ok(Number(Some(v as f64)))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Number, E> {
                Ok(Number(None))
            }
            fn visit_str<E>(self, _: &str) -> Result<Number, E> {
                Ok(Number(None))
            }
            fn visit_unit<E>(self) -> Result<Number, E> {
                Ok(Number(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Number, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Number(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Number, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Number(None))
            }
        }
        deserializer.deserialize_any(AnyValue)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn figures_read_numbers_and_skip_everything_else() {
        let marker = ProfileMarker::from(Marker::interval("CPU Use", 0.0, 1.0).with_data(json!({
            "type": "CPU", "user": 0.5, "system": 1, "cpuPercent": "50.0%",
            "nice": "not a number", "steal": null, "iowait": [1], "softirq": {"x": 2},
        })));
        let figures = marker.as_ref().figures();
        assert_eq!(figures.kind.as_deref(), Some("CPU"));
        assert_eq!(
            (figures.get("user"), figures.get("system")),
            (Some(0.5), Some(1.0))
        );
        for absent in ["nice", "steal", "iowait", "softirq", "used", "cpuPercent"] {
            assert_eq!(figures.get(absent), None, "{absent}");
        }
    }

    #[test]
    fn a_leading_type_is_read_without_parsing_and_anything_else_is_left_alone() {
        let marker = |data: &str| ProfileMarker {
            data: Some(RawValue::from_string(data.to_owned()).unwrap()),
            ..ProfileMarker::from(Marker::instant("m", 0.0))
        };
        assert_eq!(
            marker(r#"{"type":"CPU","user":1}"#).as_ref().leading_type(),
            Some("CPU")
        );
        assert_eq!(
            marker(r#"{"user":1,"type":"CPU"}"#).as_ref().leading_type(),
            None
        );
        assert_eq!(marker(r#"{"type": "CPU"}"#).as_ref().leading_type(), None);
        assert_eq!(marker(r#"{"type":"C\"PU"}"#).as_ref().leading_type(), None);
    }

    #[test]
    fn a_payload_is_kept_as_the_text_it_was_read_as() {
        let line = br#"{"type":"marker","name":"m","startTime":1,"data":{"z":1, "a":[2]}}"#;
        let raw = tc_profile_format::decode_marker_raw(line).unwrap().unwrap();
        let marker = MarkerRef::from(&raw).owned();
        assert_eq!(marker.data.unwrap().get(), r#"{"z":1, "a":[2]}"#);
    }
}
