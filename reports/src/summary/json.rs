//! The summary as stable JSON (README.md, "Summaries"): camelCase keys, every key always
//! present (`null` when unknown), times in milliseconds, CPU as fractions of all cores.

use crate::summary::model::Summary;

pub(super) fn serialize(summary: &Summary) -> Vec<u8> {
    // A Summary holds only strings, numbers and options: serializing it cannot fail.
    let mut bytes = serde_json::to_vec_pretty(summary)
        .unwrap_or_else(|e| unreachable!("serialize a summary: {e}"));
    bytes.push(b'\n');
    bytes
}
