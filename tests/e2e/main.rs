//! End-to-end tests that run the real `tc-profile` binary. One module per subject.

mod synthetic;
mod util;

/// Another user against a task's statsd socket and InfluxDB endpoint: refused, unrecorded.
mod attack_endpoints;
/// A task's attacks as another user: links planted at every output's temporary name, a
/// created directory's parent swapped, the modes that keep its data from other users.
mod attack_files;
/// The live HTTP server attacked: tokens, 16 concurrent large profiles, slow clients, a
/// second Content-Length.
mod attack_http;
/// Files a task hands to the commands that read after the fact: decompression bombs, a
/// gigabyte's line, payloads the front-end refuses, read in bounded memory.
mod attack_postmortem;
/// `compare`: two runs' steps matched and ranked, merged aligned; a killed run's steps.
mod compare;
/// gzip and zstd: profiles compressed by extension, compressed logs and profiles read back.
mod compression;
/// The worker-wide daemon: overlapping tasks' own profiles, the worker's profile with its
/// idle time, a SIGKILLed daemon restarted, the task timeout.
mod daemon;
/// The daemon at a worker's scale: a task's end reads only its span's bytes of a long
/// machine segment.
mod daemon_scale;
/// The worker's live task log followed by the daemon: its lines and stat metrics in the
/// task's profile, each once across a daemon kill and a stop.
mod daemon_task_log;
/// The daemon as a worker drives it: housekeeping from an empty state directory, refusals
/// with their exit statuses, a task's first phase whole, `task start --json`, status.
mod daemon_worker;
/// `finalize`: kills, truncation at every byte, Mozilla's stream, bad input.
mod finalize;
/// `fleet`: a generated fleet's p95s and instance types, from its logs and from InfluxDB
/// after `export`; its HTML page in headless Chromium.
mod fleet;
/// CLI manners: examples in every --help, one-line errors, --version, completions, colour
/// and progress on terminals only.
mod help;
/// A profile directory written by hostile task code: every problem warned, the rest kept.
mod hostile_dir;
/// Export: a real InfluxDB on 127.0.0.1, retries, credentials kept from the task, statsd.
mod influx;
/// The InfluxDB endpoint: curl and urllib writes become tracks, partial writes, 403, 413,
/// gzip and a bomb, the 2.x API, 25 MB in bounded memory, a real InfluxDB's answers, a load test.
mod influx_endpoint;
/// Forwarding to a real InfluxDB during the task: the forced database and the task's tags,
/// scopes, credentials kept from the task, a server restarted mid-task, 100,000 points.
mod influx_forward;
/// The log's lock: a recorder just SIGKILLed is waited for, a running one refused at once.
mod lock_wait;
/// Marker files: 200 writers, SIGKILL and finalize, a worker's lifecycle, the README examples.
mod markers;
/// `merge`: task profiles, logs, compressed and Mozilla's, as processes of one profile.
mod merge;
/// Metrics: the statsd listener, its aggregation into tracks, scoping under the prefix.
mod metric_tracks;
mod metrics;
/// `open`: the served profile, fetched over HTTP as the profiler fetches it.
mod open;
/// Every exit of the task (taskstats, as root): 2,000 `true` and 200 failing `sh` counted
/// per command, two daemon tasks at once each with its own; without the privilege,
/// sampling said in the meta.
mod process_exits;
/// The Python clients real scripts use (influxdb, influxdb-client, statsd, datadog) from
/// PyPI, in tasks with their defaults: every point arrives.
mod py_clients;
/// `record --http`: the sidecar's live profile and log, the log and profile directory left alone.
mod record_http;
/// `recover` and `--state-dir`: logs of dead recorders finalized once, live ones left alone.
mod recover;
/// The recorder's own data types and a task's graph keys: what would forge or break the
/// recorder's tracks is dropped and counted, on every path of task input.
mod reserved;
/// The log deleted or its directory removed while recording.
mod resilience;
/// Resources: the task's process tree against the rest, process markers, cgroups and OOM
/// kills, and sources left out where the machine lacks them.
mod resources;
/// `run`: what a recording of a real command holds, against the profiler's constraints.
mod run;
/// The README's set-up: its first command leaves a clone clean (.gitignore), and it names
/// every step of .ci/run, and a release binary leaves its debug information out.
mod setup;
/// `summary`, and the short summary at the end of `run`: known logs, complete and cut off.
mod summary;
/// The command's output through `run`: passed through byte for byte, a Log marker a line,
/// the caps counted, stat lines as metric tracks.
mod task_log;
