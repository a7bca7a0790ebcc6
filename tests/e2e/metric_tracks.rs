//! Metric tracks as they are drawn and what they could not take: one marker a series an
//! interval however it was written (a marker-file line a scan, an InfluxDB point a request),
//! a point dated before the start drawn at it, track names that lead with the tag values and
//! carry the unit, and every drop counted and named in the end-of-run output and `summary`.

use crate::influx_endpoint::CLIENT;
use crate::util::*;
use serde_json::json;

/// Python, after CLIENT: five counter lines in the marker file, each read by a scan of its
/// own; a tagged line with a key the format does not know; five one-point requests; a
/// point dated 100 s before the start; an out-of-scope and a malformed statsd line.
const TASK: &str = r#"
import socket, time
path = os.path.join(os.environ["TASKCLUSTER_PROFILE_DIR"], "%d.jsonl" % os.getpid())
def line(**fields):
    with open(path, "a") as file:
        file.write(json.dumps(fields) + "\n")
for _ in range(5):
    line(type="metric", name="file.count", kind="c", value=1, time=time.time() * 1000)
    time.sleep(0.15)
line(type="metric", name="file.tagged", kind="c", value=2, time=time.time() * 1000,
     tags={"route": "/api/v1/users", "code": 200}, colour="red")
for _ in range(5):
    assert write("one,host=a v=1")[0] == 204
assert write("early,host=a v=1 %d" % (time.time_ns() - 100 * 10**9))[0] == 204
statsd = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
statsd.sendto(b"secret.x:1|c\nbad line", os.environ["STATSD_SOCKET"])
time.sleep(0.3)
"#;

/// What the end-of-run output and `summary` say of the task's metrics.
const METRICS_LINE: &str = "Metrics: 1 malformed (first: bad line (not name:value|type)), \
    1 out of scope, 1 with unknown keys (marker-file lines, taken without them), \
    1 dated before the start (drawn at it); \
    refused: task.secret.x (needs stats:put-points:secret.x)";

#[test]
fn each_series_is_one_marker_an_interval_and_every_drop_is_named() {
    let sandbox = Sandbox::new();
    let program = format!("{CLIENT}\n{TASK}");
    let python = python().to_string_lossy().into_owned();
    let scopes = ["file.*", "one.*", "early.*"].map(|s| format!("stats:put-points:{s}"));
    let mut args = vec!["run", "--interval", "600"];
    for scope in &scopes {
        args.extend(["--metric-scope", scope]);
    }
    args.extend(["--", &python, "-c", &program]);
    let output = sandbox.run_ok(&args);
    let end_of_run = String::from_utf8_lossy(&output.stderr).into_owned()
        + &String::from_utf8_lossy(&output.stdout);
    assert!(end_of_run.contains(METRICS_LINE), "{end_of_run}");
    let summary = sandbox.run_ok(&["summary", "profile_resource-usage.json"]);
    let summary = String::from_utf8_lossy(&summary.stdout);
    assert!(summary.contains(METRICS_LINE), "{summary}");

    let profile = read_json(&sandbox.path("profile_resource-usage.json"));
    assert_processed_profile(&profile);
    let markers = profile_markers(&profile);
    let one = |series: &str| {
        let found: Vec<&MarkerRow> = markers.iter().filter(|m| m.series() == series).collect();
        assert_eq!(found.len(), 1, "one marker of {series}: {found:?}");
        found[0]
    };
    assert_eq!(one("task.file.count").data["value"], json!(5.0));
    assert_eq!(one("task.one.v #host:a").data["count"], json!(5.0));
    let early = one("task.early.v #host:a");
    assert_eq!(early.start, 0.0, "taken at the start: {early:?}");
    let tagged = one("task.file.tagged #code:200,route:/api/v1/users");
    assert_eq!(
        tagged.name,
        "200 /api/v1/users · task.file.tagged (sum) #code:200,route:/api/v1/users"
    );
    assert_eq!(tagged.data["value"], json!(2.0));
    assert_eq!(one("task.file.count").name, "task.file.count (sum)");
    assert_eq!(early.name, "a · task.early.v #host:a");
}
