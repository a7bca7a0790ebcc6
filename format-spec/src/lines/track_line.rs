//! The `marker` line of a resource track's sample, written by hand: the bytes
//! [`crate::encode_marker_line_into`] writes for the same payload, without serde's work a
//! key (escaping every key byte by byte was most of the recorder's encoding of a tick).

use super::by_hand::{write_f64, write_marker_head, write_str, write_u64};

/// A sample's `data` of a fixed shape: its `type`, then its other keys in order.
pub trait TrackData {
    /// `data.type`: the name of its schema.
    fn data_type(&self) -> &'static str;
    /// Writes the keys after `type`.
    fn write_fields(&self, fields: &mut DataFields);
}

/// The keys and values of a `data` object as they are written. A key is a plain name (no
/// quote, backslash or control character), written as it is.
pub struct DataFields<'a> {
    bytes: &'a mut Vec<u8>,
}

impl DataFields<'_> {
    pub fn str(&mut self, key: &'static str, value: &str) {
        self.key(key);
        write_str(self.bytes, value);
    }

    pub fn u64(&mut self, key: &'static str, value: u64) {
        self.key(key);
        write_u64(self.bytes, value);
    }

    /// `null` when not finite, as serde_json writes it.
    pub fn f64(&mut self, key: &'static str, value: f64) {
        self.key(key);
        write_f64(self.bytes, value);
    }

    fn key(&mut self, key: &'static str) {
        debug_assert!(
            !key.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\'),
            "{key:?} needs escaping"
        );
        self.bytes.extend_from_slice(b",\"");
        self.bytes.extend_from_slice(key.as_bytes());
        self.bytes.extend_from_slice(b"\":");
    }
}

/// Appends a `marker` line whose `data` writes itself: what [`crate::encode_marker_line_into`]
/// appends for a payload serialized with the same keys and values, in a fraction of the
/// instructions, for the sampler's lines (several a tick, ten ticks a second).
pub fn encode_track_line_into(
    bytes: &mut Vec<u8>,
    name: &str,
    start_time: f64,
    end_time: Option<f64>,
    category: u32,
    data: &impl TrackData,
) {
    write_marker_head(bytes, name, start_time, end_time, category);
    bytes.extend_from_slice(br#","data":"#);
    bytes.extend_from_slice(br#"{"type":"#);
    write_str(bytes, data.data_type());
    data.write_fields(&mut DataFields { bytes });
    bytes.extend_from_slice(b"}}\n");
}

#[cfg(test)]
mod tests;
