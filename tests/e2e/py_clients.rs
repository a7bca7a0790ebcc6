//! The Python clients real scripts use, from PyPI (`scripts/py-clients` makes their venv),
//! run inside `tc-profile run` tasks with their default settings and the task's
//! environment: every point arrives, with exact counts and sums.

use crate::util::*;
use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

/// The venv's python: `scripts/py-clients` makes the venv once (CI runs it before the
/// tests; here it is run again, a no-op then), installing what it needs.
fn clients_python() -> PathBuf {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/py-clients");
    let dir = concat!(env!("CARGO_TARGET_TMPDIR"), "/py-clients");
    let output = Command::new(script)
        .arg(dir)
        .output()
        .expect("run scripts/py-clients");
    assert!(
        output.status.success(),
        "scripts/py-clients {dir}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    PathBuf::from(String::from_utf8(output.stdout).unwrap().trim())
}

/// Runs `tc-profile run FLAGS -- VENV_PYTHON -c SCRIPT` and returns the profile and what
/// the script wrote to `results` (JSON).
fn run_clients(flags: &[&str], script: &str) -> (Value, Value) {
    let sandbox = Sandbox::new();
    let python = clients_python().to_string_lossy().into_owned();
    let mut args = vec!["run", "-q"];
    args.extend_from_slice(flags);
    args.extend(["--", &python, "-c", script]);
    sandbox.run_ok(&args);
    let profile = read_json(&sandbox.path("profile_resource-usage.json"));
    assert_processed_profile(&profile);
    (profile, read_json(&sandbox.path("results")))
}

/// The data of the series markers of `metric` (`data.metric`), whatever their tags.
fn metric_data<'a>(markers: &'a [MarkerRow], metric: &str) -> Vec<&'a Value> {
    markers
        .iter()
        .filter(|m| m.data["metric"] == metric)
        .map(|m| &m.data)
        .collect()
}

fn total(data: &[&Value], key: &str) -> f64 {
    data.iter().map(|d| d[key].as_f64().unwrap()).sum()
}

/// The sum of a histogram's values: each marker's mean times its count.
fn weighted_sum(data: &[&Value]) -> f64 {
    data.iter()
        .map(|d| d["mean"].as_f64().unwrap() * d["count"].as_f64().unwrap())
        .sum()
}

/// `sum` is `expected`, but for the rounding of the means.
fn assert_sum(sum: f64, expected: f64, what: &str) {
    assert!(
        (sum - expected).abs() <= expected * 1e-9,
        "{what}: {sum} != {expected}"
    );
}

/// The 1.x client (`influxdb`) with its defaults but the endpoint's address and token
/// (its `path`), plain and gzipped; the 2.x client (`influxdb-client`) from the
/// environment alone (`from_env_properties`), synchronous and batching with gzip.
const INFLUX_CLIENTS: &str = r#"
import json, os
from urllib.parse import urlsplit
from influxdb import InfluxDBClient
from influxdb.line_protocol import make_lines
import influxdb_client
from influxdb_client.client.write_api import SYNCHRONOUS

url = urlsplit(os.environ["TASKCLUSTER_INFLUX_URL"])
token = url.path.strip("/")
results = {}

v1 = InfluxDBClient(host=url.hostname, port=url.port, path=token, database="ci")
v1.create_database("ci")
results["databases"] = v1.get_list_database()
results["policies"] = v1.get_list_retention_policies("ci")
# 50,000 tagged points in one request, as the client sends them by default.
big = [{"measurement": "big",
        "tags": {"host": "h%d" % (i % 10), "region": "café, north", "job": "build-linux64/opt"},
        "fields": {"n": i, "ratio": i / 4}}
       for i in range(50000)]
results["big_bytes"] = len(make_lines({"points": big}).encode())
results["big"] = v1.write_points(big)
gzipped = InfluxDBClient(host=url.hostname, port=url.port, path=token, database="ci", gzip=True)
results["gzip"] = gzipped.write_points([{"measurement": "gz", "fields": {"v": i}} for i in range(3000)])
try:
    v1.query("SELECT * FROM big")
except Exception as error:
    results["select"] = str(error)

with influxdb_client.InfluxDBClient.from_env_properties() as v2:
    results["health"] = v2.health().status
    v2.write_api(write_options=SYNCHRONOUS).write(
        bucket="ci", record=["v2,mode=sync v=%di" % i for i in range(1000)])
with influxdb_client.InfluxDBClient(url=os.environ["INFLUXDB_V2_URL"],
                                    token=os.environ["INFLUXDB_V2_TOKEN"],
                                    org=os.environ["INFLUXDB_V2_ORG"], enable_gzip=True) as v2:
    with v2.write_api() as batching:
        batching.write(bucket="ci", record=["v2,mode=batch v=%di" % i for i in range(2500)])
json.dump(results, open("results", "w"))
"#;

#[test]
fn the_influxdb_1x_and_2x_python_clients_write_every_point() {
    let (profile, results) = run_clients(&[], INFLUX_CLIENTS);
    assert!(
        results["databases"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!({"name": "ci"})),
        "{results}"
    );
    assert_eq!(results["policies"][0]["name"], "autogen", "{results}");
    assert!(
        results["big_bytes"].as_u64().unwrap() > 3_000_000,
        "{results}"
    );
    assert_eq!(results["big"], true, "{results}");
    assert_eq!(results["gzip"], true, "{results}");
    assert!(
        results["select"]
            .as_str()
            .unwrap()
            .contains("this endpoint only writes"),
        "{results}"
    );
    assert_eq!(results["health"], "pass", "{results}");
    let markers = profile_markers(&profile);
    let big = metric_data(&markers, "task.big.n");
    assert_eq!(total(&big, "count"), 50_000.0);
    assert_sum(
        weighted_sum(&big),
        (0..50_000u64).sum::<u64>() as f64,
        "big",
    );
    // Ten hosts, the region's UTF-8 and comma kept (escaped in the joined tags).
    let mut tags: Vec<&str> = big.iter().map(|d| d["tags"].as_str().unwrap()).collect();
    tags.sort_unstable();
    tags.dedup();
    assert_eq!(tags.len(), 10, "{tags:?}");
    assert!(
        tags.contains(&"host:h3,job:build-linux64/opt,region:café\\, north"),
        "{tags:?}"
    );
    let ratio = metric_data(&markers, "task.big.ratio");
    assert_sum(
        weighted_sum(&ratio),
        (0..50_000u64).sum::<u64>() as f64 / 4.0,
        "ratio",
    );
    let gzipped = metric_data(&markers, "task.gz.v");
    assert_eq!(total(&gzipped, "count"), 3000.0);
    assert_sum(
        weighted_sum(&gzipped),
        (0..3000u64).sum::<u64>() as f64,
        "gzipped",
    );
    for (mode, points) in [("sync", 1000u64), ("batch", 2500)] {
        let data: Vec<&Value> = metric_data(&markers, "task.v2.v")
            .into_iter()
            .filter(|d| d["tags"] == format!("mode:{mode}"))
            .collect();
        assert_eq!(total(&data, "count"), points as f64, "{mode}");
        assert_sum(weighted_sum(&data), (0..points).sum::<u64>() as f64, mode);
    }
    assert!(
        !markers.iter().any(|m| m.name == "Metrics dropped"),
        "nothing dropped"
    );
}

/// `statsd` from the environment (`statsd.defaults.env`), `datadog`'s module-level client
/// as it is (`DD_DOGSTATSD_URL`, the socket, paced: see SPEC.md, "Statsd socket") and
/// without that variable (`DD_AGENT_HOST`, `DD_DOGSTATSD_PORT`: the UDP port), in bursts.
const STATSD_CLIENTS: &str = r#"
import json, os, subprocess, sys, time
from statsd.defaults.env import statsd
for i in range(500):
    statsd.incr("py.statsd.hits")
    statsd.timing("py.statsd.took", i)
from datadog import statsd as dogstatsd
for i in range(500):
    dogstatsd.increment("py.dd.hits", tags=["via:socket"])
    # Non-blocking on the socket, the client drops what a burst sends past the socket's
    # queue (net.unix.max_dgram_qlen datagrams, 10 by the kernel's default): paced.
    time.sleep(0.001)
dogstatsd.flush()
socket_dropped = dogstatsd.packets_dropped
udp = dict(os.environ)
del udp["DD_DOGSTATSD_URL"]
child = """
import time
from datadog import statsd
for i in range(500):
    statsd.increment("py.dd.hits", tags=["via:udp"])
statsd.flush()
"""
subprocess.run([sys.executable, "-c", child], env=udp, check=True)
json.dump({"env": {name: os.environ.get(name) for name in
                   ["STATSD_HOST", "STATSD_PORT", "DD_AGENT_HOST", "DD_DOGSTATSD_PORT"]},
           "socket_dropped": socket_dropped},
          open("results", "w"))
"#;

#[test]
fn the_statsd_and_datadog_python_clients_send_every_metric_with_their_defaults() {
    let (profile, results) = run_clients(&["--statsd-udp"], STATSD_CLIENTS);
    let env = &results["env"];
    assert_eq!(env["STATSD_HOST"], env["DD_AGENT_HOST"], "{results}");
    assert_eq!(env["STATSD_PORT"], env["DD_DOGSTATSD_PORT"], "{results}");
    let markers = profile_markers(&profile);
    let hits = metric_data(&markers, "task.py.statsd.hits");
    assert_eq!(total(&hits, "value"), 500.0);
    let took = metric_data(&markers, "task.py.statsd.took");
    assert_eq!(total(&took, "count"), 500.0);
    assert_sum(weighted_sum(&took), (0..500u64).sum::<u64>() as f64, "took");
    for via in ["socket", "udp"] {
        let data: Vec<&Value> = metric_data(&markers, "task.py.dd.hits")
            .into_iter()
            .filter(|d| d["tags"] == format!("via:{via}"))
            .collect();
        assert_eq!(total(&data, "value"), 500.0, "{via}: {results}");
    }
}
