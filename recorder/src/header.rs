//! The log's first lines, made durable before anything else is written: the meta line (when
//! and how the recording samples, the machine, the task, the sources that are on) and the
//! recorder's thread line; and the log created with them.

use crate::clock::Clock;
use crate::config::RecorderConfig;
use crate::error::RecorderError;
use crate::meta::machine;
use crate::sampler::Sampler;
use crate::writer::{create_log, LogFile};
use serde_json::Value;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use tc_profile_format::schema::source;
use tc_profile_format::{
    encode_line, meta_line, thread_line, InfluxInfo, Line, MetaInfo, StatsdInfo,
};

/// Where the task sends metrics, as the meta line says.
pub(crate) struct MetricEndpoints {
    pub statsd: Option<StatsdInfo>,
    pub influx: Option<InfluxInfo>,
}

/// The meta line of a recording whose sources are the sampler's, and the statsd listener's
/// and the InfluxDB endpoint's when they are on.
pub(crate) fn meta(
    config: &RecorderConfig,
    clock: Clock,
    sampler: &Sampler,
    metrics: MetricEndpoints,
    profile_dir: Option<PathBuf>,
) -> Line {
    let mut sources = sampler.sources();
    if metrics.statsd.is_some() {
        sources.push(source::STATSD.to_owned());
    }
    if metrics.influx.is_some() {
        sources.push(source::INFLUX.to_owned());
    }
    if config.log_lines || config.task_log.is_some() {
        sources.push(source::LOG_LINES.to_owned());
    }
    meta_line(&MetaInfo {
        start_time: clock.start_epoch_ms(),
        interval_ms: config.interval.as_secs_f64() * 1000.0,
        machine: machine(),
        task: config.task.clone(),
        sources,
        sync_policy: config.sync.name(),
        recorder: format!("tc-profile {}", env!("CARGO_PKG_VERSION")),
        statsd: metrics.statsd,
        influx: metrics.influx,
        metric_scopes: config.metric_scopes.granted().to_vec(),
        profile_dir: profile_dir.map(|dir| dir.to_string_lossy().into_owned()),
        cgroup: sampler.cgroup().cloned(),
        task_schemas: config.task_schemas.clone(),
        task_log: config
            .task_log_path()
            .map(|path| path.to_string_lossy().into_owned()),
        live_server: config.live_server.clone(),
        process_exits: sampler.process_exits().map(str::to_owned),
        process_cpu: sampler.process_cpu().map(str::to_owned),
    })
}

/// The schemas of a meta line.
pub(crate) fn schemas(meta: &Line) -> &[Value] {
    let Line::Meta(meta) = meta else {
        return &[];
    };
    let schemas = meta.get("markerSchema").and_then(Value::as_array);
    schemas.map_or(&[], Vec::as_slice)
}

/// Creates the log at `path` (never over an existing one) with `meta` and the thread line,
/// durable and locked; returns it and its length.
pub(crate) fn create(path: &Path, meta: &Line) -> Result<(LogFile, u64), RecorderError> {
    let headers = [encode_line(meta), encode_line(&thread_line("tc-profile"))];
    let file = create_log(path, |file| {
        headers.iter().try_for_each(|h| file.write_all(h))
    })
    .map_err(|source| {
        if source.kind() == io::ErrorKind::AlreadyExists {
            RecorderError::LogExists {
                path: path.to_owned(),
            }
        } else {
            RecorderError::CreateLog {
                path: path.to_owned(),
                source,
            }
        }
    })?;
    let log = LogFile {
        path: path.to_owned(),
        file,
    };
    Ok((log, headers.iter().map(|h| h.len() as u64).sum()))
}
