//! `tc-profile fleet`: many tasks' figures per group of tasks (a worker type, a task kind,
//! any tag) and, per group, the cheapest instance type of a catalog that covers them.
//! [`FleetTask`] (`task.rs`) is the few numbers kept of a task, from a profile or from
//! InfluxDB's `tc_profile_task` rows by the names `export` gives them; [`Fleet`]
//! (`aggregate.rs`) gathers them per group ([`GroupBy`], `group.rs`); [`FleetReport::new`]
//! (`report.rs`) computes the figures and the recommendations (`recommend.rs`, over
//! `catalog.rs`); `influx.rs` reads InfluxDB's rows. Each output format is one file whose
//! `serialize` does no I/O: `text.rs`, `json.rs`, `html.rs` (self-contained, inline SVG).

mod aggregate;
mod catalog;
mod group;
mod html;
mod influx;
mod json;
mod recommend;
mod report;
mod task;
mod text;

pub use aggregate::{Fleet, GroupFigures, Spread};
pub use catalog::{Catalog, CatalogError, InstanceType};
pub use group::{GroupBy, NO_VALUE};
pub use influx::read_influx;
pub use recommend::{Advice, Recommendation};
pub use report::{Distribution, FleetReport, GroupReport};
pub use task::FleetTask;

/// The output formats of a fleet report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FleetFormat {
    /// A table for a terminal.
    Text,
    Json,
    /// One self-contained page: no scripts, no network, a chart a group.
    Html,
}

impl FleetFormat {
    pub fn serialize(self, report: &FleetReport) -> Vec<u8> {
        match self {
            FleetFormat::Text => text::serialize(report),
            FleetFormat::Json => json::serialize(report),
            FleetFormat::Html => html::serialize(report),
        }
    }
}
