//! The readers of a finished profile: its [`Summary`] (how long, how busy, how close to the
//! machine's limits, what each step cost; of all of it or of a [`Window`]) in text or JSON,
//! the [`Comparison`] of two runs step by step (which steps account for the difference), its
//! export to a time-series database as a [`TaskReport`] (InfluxDB line protocol, JSON,
//! statsd), and many tasks' figures per group of tasks with the instance type each group
//! needs ([`FleetReport`]). They read a
//! [`Profile`](tc_profile_finalizer::Profile), in memory at the end of a recording or read
//! back from a file; nothing here writes a profile or a log.

mod compare;
mod export;
mod fleet;
mod summary;

pub use compare::{
    compare, CompareError, Comparison, ProcessDelta, Run, RunEnding, StepDelta, StepFigures,
    StepSpan,
};
pub use export::{
    send_statsd, statsd_packets, write_influx, Credentials, ExportError, ExportFormat, Figure,
    InfluxTarget, MetricPoint, Precision, QueryError, Retry, SeriesReport, StepReport, TaskReport,
    WriteError, TASK_TAGS,
};
pub use fleet::{
    read_influx, Advice, Catalog, CatalogError, Distribution, Fleet, FleetFormat, FleetReport,
    FleetTask, GroupBy, GroupFigures, GroupReport, InstanceType, Recommendation, Spread, NO_VALUE,
};
pub use summary::{
    summarize, summarize_window, CpuFigures, CpuUse, DiskUse, Dropped, Hint, MachineSize,
    MemoryUse, NetworkUse, ProcessUse, Sparklines, Step, Summary, SummaryFormat, Verdict, Window,
    SUMMARY_VERSION,
};
