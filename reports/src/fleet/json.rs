//! The fleet report as one JSON document: the groups' figures and recommendations (bytes,
//! cores, seconds, dollars per hour).

use crate::fleet::report::FleetReport;

pub fn serialize(report: &FleetReport) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(report)
        .unwrap_or_else(|e| unreachable!("a fleet report serializes: {e}"));
    bytes.push(b'\n');
    bytes
}
