//! One marker-file line built from `arbitrary` data: always JSON, with each kind's fields
//! present or not, times near and far from the recording, names at the caps, schemas of
//! known and unknown parts. Plain bytes rarely get past the JSON parser to the rules; these
//! lines do. Besides what `marker_line` asserts, a line decodes the same with `type` first
//! (the decoder's fast path) as with `type` last (the tagged enum), and is refused as not
//! JSON in both orders or in neither.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};
use tc_profile_format::marker_file::{decode_file_line, Limits, Problem, NAME_MAX_BYTES};
use tc_profile_fuzz::{check_marker_line, START_EPOCH_MS};

#[derive(Arbitrary, Debug)]
struct Built {
    kind: Kind,
    name: Text,
    id: Option<Text>,
    time: Time,
    end_time: Option<Time>,
    category: Option<Category>,
    data: Option<Vec<(String, Scalar)>>,
}

#[derive(Arbitrary, Debug)]
enum Kind {
    Marker,
    Begin,
    End,
    Metric { kind: String, value: Scalar },
    Schema(Schema),
    Other(String),
}

#[derive(Arbitrary, Debug)]
enum Text {
    Short(String),
    /// A name of exactly this many bytes around the cap.
    Long(u8),
}

#[derive(Arbitrary, Debug)]
enum Time {
    /// Milliseconds from the recording's start.
    Offset(i32),
    Number(f64),
    /// Number text that an f64 may not hold: `1e400`, `-0`, `1.0e-400`.
    Digits {
        mantissa: i64,
        exponent: i16,
    },
    Other(Scalar),
}

#[derive(Arbitrary, Debug)]
enum Category {
    Known(u8),
    Other(Scalar),
}

#[derive(Arbitrary, Debug)]
enum Scalar {
    Null,
    Bool(bool),
    Integer(i64),
    Float(f64),
    Text(String),
    Nested(u8),
}

#[derive(Arbitrary, Debug)]
struct Schema {
    display: Vec<Choice>,
    fields: Vec<(String, Choice)>,
    graphs: Option<Vec<(String, Choice, Choice)>>,
    label: Option<Scalar>,
}

/// One of a rule's known words, or anything else.
#[derive(Arbitrary, Debug)]
enum Choice {
    Known(u8),
    Other(String),
}

const DISPLAY: [&str; 3] = ["marker-chart", "marker-table", "timeline-overview"];
const FORMATS: [&str; 4] = ["string", "integer", "bytes", "unique-string"];
const GRAPH_TYPES: [&str; 2] = ["bar", "line-filled"];
const COLORS: [&str; 2] = ["blue", "magenta"];

fuzz_target!(|built: Built| {
    let (kind, fields) = built.fields();
    let first = format!(r#"{{"type":{}{}}}"#, json!(kind), prefixed(&fields));
    let last = format!("{{{}\"type\":{}}}", suffixed(&fields), json!(kind));
    let limits = Limits::default();
    let decoded = [&first, &last].map(|text| decode_file_line(text.as_bytes(), &limits));
    // A line with two faults may be refused for either, but whether it is JSON does not
    // depend on the order of its keys.
    let not_json = decoded.clone().map(|line| line == Err(Problem::NotJson));
    assert_eq!(not_json[0], not_json[1], "{first} and {last}: {decoded:?}");
    if decoded.iter().any(Result::is_ok) {
        assert_eq!(decoded[0], decoded[1], "{first} and {last}");
    }
    check_marker_line(first.as_bytes());
});

impl Built {
    /// The line's type and its other fields, as `"key":value` texts.
    fn fields(&self) -> (String, Vec<String>) {
        let mut fields = vec![field("name", self.name.value())];
        let mut time =
            |key: &str, time: &Time| fields.push(format!("{}:{}", json!(key), time.text()));
        let kind = match &self.kind {
            Kind::Marker => {
                time("startTime", &self.time);
                if let Some(end) = &self.end_time {
                    time("endTime", end);
                }
                "marker"
            }
            Kind::Begin | Kind::End => {
                time("time", &self.time);
                if let Kind::Begin = self.kind {
                    "begin"
                } else {
                    "end"
                }
            }
            Kind::Metric { kind, value } => {
                time("time", &self.time);
                fields.push(field("kind", json!(kind)));
                fields.push(field("value", value.value()));
                "metric"
            }
            Kind::Schema(schema) => {
                fields.extend(schema.fields());
                "schema"
            }
            Kind::Other(kind) => return (kind.clone(), fields),
        };
        if let Some(id) = &self.id {
            fields.push(field("id", id.value()));
        }
        if let Some(category) = &self.category {
            fields.push(field("category", category.value()));
        }
        if let Some(data) = &self.data {
            let data: serde_json::Map<String, Value> =
                data.iter().map(|(k, v)| (k.clone(), v.value())).collect();
            fields.push(field("data", Value::Object(data)));
        }
        (kind.to_owned(), fields)
    }
}

impl Text {
    fn value(&self) -> Value {
        match self {
            Text::Short(text) => json!(text),
            Text::Long(over) => json!("n".repeat(NAME_MAX_BYTES - 2 + usize::from(*over % 4))),
        }
    }
}

impl Time {
    fn text(&self) -> String {
        match self {
            Time::Offset(ms) => json!(START_EPOCH_MS + f64::from(*ms)).to_string(),
            Time::Number(number) => json!(number).to_string(),
            Time::Digits { mantissa, exponent } => format!("{mantissa}e{exponent}"),
            Time::Other(scalar) => scalar.value().to_string(),
        }
    }
}

impl Category {
    fn value(&self) -> Value {
        match self {
            Category::Known(index) => json!(["worker", "task", "user"][usize::from(index % 3)]),
            Category::Other(scalar) => scalar.value(),
        }
    }
}

impl Scalar {
    fn value(&self) -> Value {
        match self {
            Scalar::Null => Value::Null,
            Scalar::Bool(b) => json!(b),
            Scalar::Integer(i) => json!(i),
            Scalar::Float(f) => json!(f),
            Scalar::Text(text) => json!(text),
            Scalar::Nested(depth) => {
                (0..depth % 24).fold(json!(1), |inner, _| json!({ "a": [inner] }))
            }
        }
    }
}

impl Schema {
    fn fields(&self) -> Vec<String> {
        let display: Vec<Value> = self.display.iter().map(|c| c.value(&DISPLAY)).collect();
        let data: Vec<Value> = self
            .fields
            .iter()
            .map(|(key, format)| json!({"key": key, "format": format.value(&FORMATS)}))
            .collect();
        let mut fields = vec![field("display", json!(display)), field("data", json!(data))];
        if let Some(graphs) = &self.graphs {
            let graphs: Vec<Value> = graphs
                .iter()
                .map(|(key, kind, color)| {
                    json!({"key": key, "type": kind.value(&GRAPH_TYPES), "color": color.value(&COLORS)})
                })
                .collect();
            fields.push(field("graphs", json!(graphs)));
        }
        if let Some(label) = &self.label {
            fields.push(field("tooltipLabel", label.value()));
        }
        fields
    }
}

impl Choice {
    fn value(&self, known: &[&str]) -> Value {
        match self {
            Choice::Known(index) => json!(known[usize::from(*index) % known.len()]),
            Choice::Other(text) => json!(text),
        }
    }
}

fn field(key: &str, value: Value) -> String {
    format!("{}:{}", json!(key), value)
}

/// `,a,b` for fields after `type`.
fn prefixed(fields: &[String]) -> String {
    fields.iter().map(|f| format!(",{f}")).collect()
}

/// `a,b,` for fields before `type`.
fn suffixed(fields: &[String]) -> String {
    fields.iter().map(|f| format!("{f},")).collect()
}
