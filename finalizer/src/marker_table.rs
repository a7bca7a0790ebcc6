//! A thread of the processed profile at version 47, as written: its fields, its marker
//! column table and its string table. A `unique-string` field is held as the string itself
//! while the finalizer works (a processed input's indexes are resolved when it is read), and
//! interned into the thread's string table here, so that the index written is always this
//! table's, whatever profile the marker came from.

use crate::profile_marker::ProfileMarker;
use serde::Serialize;
use serde_json::value::{to_raw_value, RawValue};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::collections::HashMap;
use tc_profile_format::schema::category;

/// The `unique-string` fields of a profile's schemas: schema name to field keys. Empty for
/// every log: a task's `unique-string` field is logged as `string`.
#[derive(Default)]
pub(crate) struct UniqueStrings(HashMap<String, Vec<String>>);

impl UniqueStrings {
    pub(crate) fn of(meta: &Map<String, Value>) -> UniqueStrings {
        let schemas = meta.get("markerSchema").and_then(Value::as_array);
        let keyed = schemas.into_iter().flatten().filter_map(|schema| {
            let fields = schema.get("data")?.as_array()?;
            let keys: Vec<String> = fields
                .iter()
                .filter(|field| field["format"] == "unique-string")
                .filter_map(|field| Some(field.get("key")?.as_str()?.to_owned()))
                .collect();
            let name = schema.get("name")?.as_str()?.to_owned();
            (!keys.is_empty()).then_some((name, keys))
        });
        UniqueStrings(keyed.collect())
    }

    /// The payload of `marker` with each `unique-string` value replaced by what `map` makes
    /// of it (None leaves the key out); None when its schema has no such field.
    pub(crate) fn rewrite(
        &self,
        marker: &ProfileMarker,
        mut map: impl FnMut(&Value) -> Option<Value>,
    ) -> Option<Box<RawValue>> {
        if self.0.is_empty() {
            return None;
        }
        let Some(Value::Object(mut data)) = marker.data_value() else {
            return None;
        };
        let keys = self.0.get(data.get("type")?.as_str()?)?;
        for key in keys {
            if let Some(value) = data.remove(key) {
                if let Some(mapped) = map(&value) {
                    data.insert(key.clone(), mapped);
                }
            }
        }
        to_raw_value(&data).ok()
    }

    /// Index values, as a processed profile holds them, turned into their strings; an
    /// index past the table pointed at nothing and is left out.
    pub(crate) fn resolve(&self, markers: &mut [ProfileMarker], strings: &[String]) {
        for marker in markers {
            let resolved = self.rewrite(marker, |value| {
                let index = usize::try_from(value.as_u64()?).ok()?;
                strings.get(index).map(|s| Value::String(s.clone()))
            });
            if resolved.is_some() {
                marker.data = resolved;
            }
        }
    }
}

/// One thread to serialize: `base` holds every field but the markers and the strings.
pub(crate) struct ThreadOut<'a> {
    pub base: &'a Map<String, Value>,
    pub markers: &'a [ProfileMarker],
    pub unique_strings: &'a UniqueStrings,
}

impl Serialize for ThreadOut<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Thread<'a> {
            #[serde(flatten)]
            base: &'a Map<String, Value>,
            markers: MarkerTable<'a>,
            #[serde(rename = "stringArray")]
            strings: Vec<String>,
        }
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct MarkerTable<'a> {
            data: Vec<Option<Cow<'a, RawValue>>>,
            name: Vec<usize>,
            start_time: Vec<f64>,
            end_time: Vec<Option<f64>>,
            phase: Vec<u8>,
            category: Vec<u32>,
            length: usize,
        }

        let count = self.markers.len();
        let mut table = MarkerTable {
            data: Vec::with_capacity(count),
            name: Vec::with_capacity(count),
            start_time: Vec::with_capacity(count),
            end_time: Vec::with_capacity(count),
            phase: Vec::with_capacity(count),
            category: Vec::with_capacity(count),
            length: count,
        };
        let mut strings = StringTable::default();
        for marker in self.markers {
            table.name.push(strings.index(&marker.name));
            let interned = self.unique_strings.rewrite(marker, |value| match value {
                Value::String(text) => Some(Value::from(strings.index(text))),
                _ => None,
            });
            table.data.push(match interned {
                Some(data) => Some(Cow::Owned(data)),
                None => marker.data.as_deref().map(Cow::Borrowed),
            });
            table.start_time.push(marker.start_time);
            table.end_time.push(marker.end_time);
            // Phase 0 is an instant, 1 an interval with both ends.
            table.phase.push(u8::from(marker.end_time.is_some()));
            table
                .category
                .push(marker.category.unwrap_or(category::OTHER));
        }
        Thread {
            base: self.base,
            markers: table,
            strings: strings.strings,
        }
        .serialize(serializer)
    }
}

#[derive(Default)]
struct StringTable {
    strings: Vec<String>,
    index: HashMap<String, usize>,
}

impl StringTable {
    fn index(&mut self, text: &str) -> usize {
        if let Some(&index) = self.index.get(text) {
            return index;
        }
        self.strings.push(text.to_owned());
        self.index.insert(text.to_owned(), self.strings.len() - 1);
        self.strings.len() - 1
    }
}
