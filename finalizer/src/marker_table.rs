//! A thread of the processed profile at version 47, as written: its fields, its marker
//! column table and its string table. A `unique-string` field is held as the string itself
//! while the finalizer works (a processed input's indexes are resolved when it is read), and
//! interned into the thread's string table here, so that the index written is always this
//! table's, whatever profile the marker came from.

use crate::marker_columns::Markers;
use crate::profile_marker::MarkerRef;
use serde::Serialize;
use serde_json::value::{to_raw_value, RawValue};
use serde_json::{Map, Value};
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

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The payload of `marker` with each `unique-string` value replaced by what `map` makes
    /// of it (None leaves the key out); None when its schema has no such field.
    pub(crate) fn rewrite(
        &self,
        marker: MarkerRef,
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

    /// The payload of `marker` with its index values, as a processed profile holds them,
    /// turned into their strings (an index past the table pointed at nothing and is left
    /// out); None when its schema has no `unique-string` field.
    pub(crate) fn resolve(&self, marker: MarkerRef, strings: &[String]) -> Option<Box<RawValue>> {
        self.rewrite(marker, |value| {
            let index = usize::try_from(value.as_u64()?).ok()?;
            strings.get(index).map(|s| Value::String(s.clone()))
        })
    }
}

/// One thread to serialize: `base` holds every field but the markers and the strings.
pub(crate) struct ThreadOut<'a> {
    pub base: &'a Map<String, Value>,
    pub markers: &'a Markers,
    pub unique_strings: &'a UniqueStrings,
}

impl Serialize for ThreadOut<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Thread<'a, Table> {
            #[serde(flatten)]
            base: &'a Map<String, Value>,
            markers: Table,
            #[serde(rename = "stringArray")]
            strings: Vec<String>,
        }
        #[derive(Serialize)]
        #[serde(
            rename_all = "camelCase",
            bound = "Column<Name>: Serialize, Column<Start>: Serialize, Column<End>: Serialize, \
                     Column<Phase>: Serialize, Column<Category>: Serialize"
        )]
        struct MarkerTable<'a, Name, Start, End, Phase, Category> {
            data: Payloads<'a>,
            name: Column<Name>,
            start_time: Column<Start>,
            end_time: Column<End>,
            phase: Column<Phase>,
            category: Column<Category>,
            length: usize,
        }

        let markers = self.markers;
        let count = markers.len();
        // The strings in the order they are first used, as the profile is read: a marker's
        // name, then the strings of its payload.
        let mut strings = StringTable::default();
        let mut name_index = vec![None; markers.names().len()];
        let mut rewritten = HashMap::new();
        for i in 0..count {
            let id = markers.name_id(i) as usize;
            if name_index[id].is_none() {
                name_index[id] = Some(strings.index(&markers.names()[id]));
            }
            if self.unique_strings.is_empty() {
                continue;
            }
            let interned = self
                .unique_strings
                .rewrite(markers.get(i), |value| match value {
                    Value::String(text) => Some(Value::from(strings.index(text))),
                    _ => None,
                });
            if let Some(data) = interned {
                rewritten.insert(i, data);
            }
        }
        let name = |i: usize| name_index[markers.name_id(i) as usize];
        Thread {
            base: self.base,
            markers: MarkerTable {
                data: Payloads {
                    markers,
                    rewritten: &rewritten,
                },
                name: Column(count, name),
                start_time: Column(count, |i| markers.start_time(i)),
                end_time: Column(count, |i| markers.end_time(i)),
                // Phase 0 is an instant, 1 an interval with both ends.
                phase: Column(count, |i| u8::from(markers.end_time(i).is_some())),
                category: Column(count, |i| markers.category(i).unwrap_or(category::OTHER)),
                length: count,
            },
            strings: strings.strings,
        }
        .serialize(serializer)
    }
}

/// A payload as the JSON writer takes it, without parsing it again (which was a third of
/// the time of writing a profile).
fn raw_json_text(data: &str) -> &RawValue {
    // SAFETY: `RawValue` is `#[repr(transparent)]` over `str` (serde_json casts the same
    // way in `RawValue::from_borrowed`); a payload in columns is always the text of a
    // `RawValue` (`Markers::push`), so it stays one JSON value.
    unsafe { std::mem::transmute::<&str, &RawValue>(data) }
}

/// A column of the marker table, written straight from the markers' own columns: its
/// length and what is written at each position, inlined into the loop that writes it (a
/// call through `dyn Fn` a value was 5 % of writing a profile).
struct Column<F>(usize, F);

impl<T: Serialize, F: Fn(usize) -> T> Serialize for Column<F> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq((0..self.0).map(&self.1))
    }
}

/// The payload column: in the markers' order, so that each payload is found by walking
/// the arena ([`Markers::payloads`]) rather than by a rank a marker.
struct Payloads<'a> {
    markers: &'a Markers,
    /// Payloads whose `unique-string` values were interned, by position.
    rewritten: &'a HashMap<usize, Box<RawValue>>,
}

impl Serialize for Payloads<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let payloads = self.markers.payloads().enumerate();
        serializer.collect_seq(payloads.map(|(i, data)| match self.rewritten.get(&i) {
            Some(data) => Some(&**data),
            None => data.map(raw_json_text),
        }))
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
