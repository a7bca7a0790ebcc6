//! Lines that give their `type` first with whitespace between the tokens, as Python's
//! `json.dumps` writes them (`{"type": "marker", "name": ...}`), decoded straight into
//! their kind. The tagged enum [`FileLine`] would first copy the whole line into a tree of
//! serde's own (allocated key by key, a third of the cost of ingesting such a marker); this
//! way takes exactly the lines that one takes, with the same values: a `type` given twice
//! is refused, and the value of a key the kind does not know is parsed whole (a number out
//! of an f64's range, a bad escape, are refused), not skipped. What it refuses goes the
//! tagged way, which says why.

use super::line::{Begin, End, FileLine, FileMarker};
use serde::de::value::{CowStrDeserializer, MapAccessDeserializer};
use serde::de::{DeserializeSeed, Error, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use std::borrow::Cow;
use std::marker::PhantomData;

/// The keys each kind reads, besides `type` (a test checks them against the kinds' fields).
pub(super) const MARKER_KEYS: &[&str] = &["name", "startTime", "endTime", "category", "data"];
pub(super) const BEGIN_KEYS: &[&str] = &["name", "id", "time", "category", "data"];
pub(super) const END_KEYS: &[&str] = &["name", "id", "time", "data"];

/// The line of `bytes` when its first key is `type`, spaced or not, with a value of
/// `marker`, `begin` or `end` (without escapes) and the tagged way would take it; None
/// otherwise.
pub(super) fn decode(bytes: &[u8]) -> Option<FileLine> {
    let line = match first_type(bytes)? {
        b"marker" => untagged::<FileMarker>(bytes, MARKER_KEYS).map(FileLine::Marker),
        b"begin" => untagged::<Begin>(bytes, BEGIN_KEYS).map(FileLine::Begin),
        b"end" => untagged::<End>(bytes, END_KEYS).map(FileLine::End),
        _ => return None,
    };
    line.ok()
}

/// The value of the first key when that key is `type` and the value a string without
/// escapes: `{ "type" : "KIND" ,` with any JSON whitespace between the tokens.
fn first_type(bytes: &[u8]) -> Option<&[u8]> {
    let rest = token(bytes, b"{")?;
    let rest = token(rest, br#""type""#)?;
    let rest = token(rest, b":")?;
    let rest = token(rest, b"\"")?;
    let end = rest.iter().position(|&b| b == b'"' || b == b'\\')?;
    (rest[end] == b'"').then_some(())?;
    token(&rest[end + 1..], b",")?;
    Some(&rest[..end])
}

/// `bytes` after JSON whitespace and `expected`.
fn token<'a>(bytes: &'a [u8], expected: &[u8]) -> Option<&'a [u8]> {
    let start = bytes
        .iter()
        .position(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))?;
    bytes[start..].strip_prefix(expected)
}

/// The object of `bytes` as `T`, its `type` key left out as the tagged enum leaves it out.
fn untagged<'de, T: Deserialize<'de>>(
    bytes: &'de [u8],
    keys: &'static [&'static str],
) -> serde_json::Result<T> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value = deserializer.deserialize_map(Untagged {
        keys,
        kind: PhantomData,
    })?;
    deserializer.end()?;
    Ok(value)
}

struct Untagged<T> {
    keys: &'static [&'static str],
    kind: PhantomData<T>,
}

impl<'de, T: Deserialize<'de>> Visitor<'de> for Untagged<T> {
    type Value = T;

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str("a marker-file line")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        let without_tag = WithoutTag {
            map,
            keys: self.keys,
            tagged: false,
        };
        T::deserialize(MapAccessDeserializer::new(without_tag))
    }
}

/// The keys of an object but `type` (once, else an error) and those not in `keys`, whose
/// values are parsed whole and dropped.
struct WithoutTag<A> {
    map: A,
    keys: &'static [&'static str],
    tagged: bool,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for WithoutTag<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        while let Some(Key(key)) = self.map.next_key()? {
            if key == "type" {
                if std::mem::replace(&mut self.tagged, true) {
                    return Err(A::Error::duplicate_field("type"));
                }
                self.map.next_value::<IgnoredAny>()?; // the kind, read by first_type
            } else if self.keys.contains(&key.as_ref()) {
                return seed.deserialize(CowStrDeserializer::new(key)).map(Some);
            } else {
                self.map.next_value::<Value>()?;
            }
        }
        Ok(None)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.map.next_value_seed(seed)
    }
}

/// A key, borrowed from the line when it has no escape.
struct Key<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;

            fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
                formatter.write_str("a key")
            }

            fn visit_borrowed_str<E: Error>(self, key: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(key)))
            }

            fn visit_str<E: Error>(self, key: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(key.to_owned())))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}
