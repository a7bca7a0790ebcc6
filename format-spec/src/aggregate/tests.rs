//! Tests of the aggregation: one line a series an interval, each kind's figures, names and
//! tags sanitized, and what is dropped counted.

use super::*;

fn sample(kind: MetricKind, name: &str, value: SampleValue) -> Sample {
    Sample {
        kind,
        name: name.to_owned(),
        value,
        rate: 1.0,
        tags: Vec::new(),
    }
}

fn number(kind: MetricKind, name: &str, value: f64) -> Sample {
    sample(kind, name, SampleValue::Number(value))
}

#[test]
fn names_cannot_leave_the_prefix() {
    assert_eq!(sanitize_name("../../etc/passwd").unwrap(), "_._etc_passwd");
    assert_eq!(sanitize_name(".worker.cpu").unwrap(), "worker.cpu");
    assert_eq!(sanitize_name("a b\u{e9}\n").unwrap(), "a_b__");
    assert_eq!(sanitize_name("..."), None);
    assert_eq!(sanitize_name(&"x".repeat(MAX_NAME_BYTES + 1)), None);
}

#[test]
fn prefixes_are_dot_ended_segments() {
    for prefix in ["task.", "ci.build.", "a-b_c."] {
        assert!(MetricLimits::is_valid_prefix(prefix), "{prefix}");
    }
    for prefix in ["", ".", "task", "a..b.", "CPU Use.", "a b.", "é."] {
        assert!(!MetricLimits::is_valid_prefix(prefix), "{prefix}");
    }
}

#[test]
fn no_series_is_named_like_a_recorder_track() {
    use crate::schema::track;
    let tracks = [
        track::CPU,
        track::MEMORY,
        track::IO,
        track::NET_IO,
        track::TASK_CPU,
        track::OTHER_CPU,
        track::TASK_MEMORY,
        track::OTHER_MEMORY,
        track::CGROUP_MEMORY,
        track::CGROUP_CPU,
        track::CGROUP_IO,
        track::CPU_PRESSURE,
        track::MEMORY_PRESSURE,
        track::IO_PRESSURE,
        track::LOAD,
        track::PROCESSES,
        track::SWAP,
        track::CPU_FREQUENCY,
        track::OOM_KILL,
        "IO sda",
    ];
    for name in tracks {
        assert!(name.contains(' ') || !name.contains('.'), "{name}");
    }
    for prefix in ["task.", "a."] {
        let limits = MetricLimits {
            prefix: prefix.to_owned(),
            ..MetricLimits::default()
        };
        let mut aggregator = Aggregator::new(limits);
        for name in tracks {
            aggregator.record(number(MetricKind::Gauge, name, 1.0));
        }
        for marker in aggregator.flush(0.0, 100.0) {
            assert!(marker.name.contains('.') && !marker.name.contains(' '));
            assert!(!tracks.contains(&marker.name.as_str()), "{}", marker.name);
        }
    }
}

#[test]
fn a_hundred_thousand_increments_are_one_line_per_interval() {
    let mut aggregator = Aggregator::new(MetricLimits::default());
    for _ in 0..100_000 {
        aggregator.record(number(MetricKind::Counter, "hits", 1.0));
    }
    let markers = aggregator.flush(0.0, 100.0);
    assert_eq!(markers.len(), 1);
    assert_eq!(markers[0].name, "task.hits (sum)");
    assert_eq!(markers[0].data.as_ref().unwrap()["value"], 100_000.0);
    assert!(
        aggregator.flush(100.0, 200.0).is_empty(),
        "no change, no line"
    );
}

#[test]
fn gauges_keep_their_value_and_take_deltas() {
    let mut aggregator = Aggregator::new(MetricLimits::default());
    aggregator.record(number(MetricKind::Gauge, "depth", 10.0));
    aggregator.record(sample(
        MetricKind::Gauge,
        "depth",
        SampleValue::GaugeDelta(-3.0),
    ));
    assert_eq!(
        aggregator.flush(0.0, 1.0)[0].data.as_ref().unwrap()["value"],
        7.0
    );
    aggregator.record(sample(
        MetricKind::Gauge,
        "depth",
        SampleValue::GaugeDelta(5.0),
    ));
    assert_eq!(
        aggregator.flush(1.0, 2.0)[0].data.as_ref().unwrap()["value"],
        12.0
    );
}

#[test]
fn timers_give_count_min_mean_max_with_sample_rates() {
    let mut aggregator = Aggregator::new(MetricLimits::default());
    for value in [10.0, 20.0, 60.0] {
        aggregator.record(Sample {
            rate: 0.5,
            ..number(MetricKind::Timer, "build", value)
        });
    }
    let data = aggregator.flush(0.0, 1.0)[0].data.clone().unwrap();
    assert_eq!(data["type"], "Timer");
    assert_eq!(
        (&data["count"], &data["min"], &data["mean"], &data["max"]),
        (&json!(6.0), &json!(10.0), &json!(30.0), &json!(60.0))
    );
}

#[test]
fn sets_count_distinct_members_per_interval() {
    let mut aggregator = Aggregator::new(MetricLimits::default());
    for member in ["a", "b", "a", "c"] {
        aggregator.record(sample(
            MetricKind::Set,
            "users",
            SampleValue::Member(member.into()),
        ));
    }
    assert_eq!(
        aggregator.flush(0.0, 1.0)[0].data.as_ref().unwrap()["distinct"],
        3.0
    );
}

#[test]
fn tags_are_sorted_and_name_their_own_series() {
    let mut aggregator = Aggregator::new(MetricLimits::default());
    let tagged = |tags: &[(&str, &str)]| Sample {
        tags: tags
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect(),
        ..number(MetricKind::Counter, "req", 1.0)
    };
    aggregator.record(tagged(&[("route", "/a b"), ("code", "200")]));
    aggregator.record(tagged(&[("code", "200"), ("route", "/a b")]));
    aggregator.record(tagged(&[]));
    let markers = aggregator.flush(0.0, 1.0);
    let names: Vec<&str> = markers.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "200 /a b · task.req (sum) #code:200,route:/a b",
            "task.req (sum)"
        ]
    );
    let data = markers[0].data.as_ref().unwrap();
    assert_eq!(
        (&data["metric"], &data["value"]),
        (&json!("task.req"), &json!(2.0))
    );
}

#[test]
fn series_over_the_cap_are_dropped_and_counted() {
    let mut aggregator = Aggregator::new(MetricLimits {
        max_series: 2,
        ..MetricLimits::default()
    });
    for name in ["a", "b", "c", "a", "d"] {
        aggregator.record(number(MetricKind::Counter, name, 1.0));
    }
    aggregator.malformed("garbage", Malformed::Syntax);
    let markers = aggregator.flush(0.0, 1.0);
    assert_eq!(markers.len(), 3);
    let drops = markers[2].data.as_ref().unwrap();
    assert_eq!(markers[2].name, metric::DROPPED_MARKER);
    assert_eq!(
        (&drops["overSeriesCap"], &drops["malformed"]),
        (&json!(2), &json!(1))
    );
    assert_eq!(drops["example"], "garbage (not name:value|type)");
    assert_eq!(
        drops["refused"],
        "task.c (sum) (over the series cap), task.d (sum) (over the series cap)"
    );
}

#[test]
fn a_track_leads_with_its_tag_values_and_names_its_unit() {
    let name = |kind, tags| track_name(kind, "task.req", tags);
    assert_eq!(name(MetricKind::Gauge, ""), "task.req");
    assert_eq!(name(MetricKind::Timer, ""), "task.req (ms)");
    assert_eq!(
        name(MetricKind::Set, "fast"),
        "fast · task.req (distinct) #fast"
    );
    // The same values under other keys are another series, and another track.
    assert_ne!(
        name(MetricKind::Counter, "a:x,b:y"),
        name(MetricKind::Counter, "a:x,c:y")
    );
    assert!(name(MetricKind::Counter, "host:a\\,b").starts_with("a,b · "));
}

#[test]
fn out_of_scope_series_are_counted_and_named() {
    let mut aggregator = Aggregator::new(MetricLimits {
        scopes: MetricScopes::new(vec!["stats:put-points:ok".to_owned()]),
        ..MetricLimits::default()
    });
    for name in ["ok", "secret", "secret", "other"] {
        aggregator.record(number(MetricKind::Counter, name, 1.0));
    }
    let markers = aggregator.flush(0.0, 1.0);
    let drops = markers[1].data.as_ref().unwrap();
    assert_eq!(drops["outOfScope"], 3);
    assert_eq!(
        drops["refused"],
        "task.secret (needs stats:put-points:secret), task.other (needs stats:put-points:other)"
    );
}

#[test]
fn samples_dated_before_the_start_are_taken_at_it_and_counted() {
    let mut batches = BatchAggregator::new(MetricLimits::default(), 100.0);
    let markers = batches.aggregate(vec![
        (-5_000.0, number(MetricKind::Counter, "early", 1.0)),
        (-1.0, number(MetricKind::Counter, "early", 1.0)),
        (30.0, number(MetricKind::Counter, "early", 1.0)),
    ]);
    let early = &markers[0];
    assert_eq!((early.start_time, early.end_time), (0.0, Some(30.0)));
    assert_eq!(early.data.as_ref().unwrap()["value"], 3.0);
    assert_eq!(markers[1].data.as_ref().unwrap()["beforeStart"], 2);
}

/// Found by fuzz/fuzz_targets/statsd_packet.rs: `c:1e308|ms` made a marker whose figures
/// were `null` (rounding scaled them past the largest f64), and a sum past it, or a tiny
/// sample rate (`a:1|c|@5e-324`), made a counter of `null`.
#[test]
fn figures_stay_finite_numbers() {
    let mut aggregator = Aggregator::new(MetricLimits::default());
    aggregator.record(number(MetricKind::Timer, "c", 1e308));
    let data = aggregator.flush(0.0, 1.0)[0].data.clone().unwrap();
    for key in ["min", "mean", "max"] {
        assert_eq!(data[key], 1e308, "{key}");
    }
    aggregator.record(Sample {
        rate: 5e-324,
        ..number(MetricKind::Counter, "a", 1.0)
    });
    for _ in 0..2 {
        aggregator.record(number(MetricKind::Counter, "b", 1e308));
    }
    let markers = aggregator.flush(1.0, 2.0);
    let names: Vec<&str> = markers.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["task.b (sum)", metric::DROPPED_MARKER]);
    assert_eq!(markers[0].data.as_ref().unwrap()["value"], 1e308);
    let drops = markers[1].data.as_ref().unwrap();
    assert_eq!(drops["malformed"], 2);
    assert_eq!(
        drops["example"],
        "a (its series' figures would not be finite numbers)"
    );
}

#[test]
fn utf8_and_comma_tag_values_are_kept_as_series_of_their_own() {
    let mut aggregator = Aggregator::new(MetricLimits::default());
    for value in ["café", "caf_", "a,b", "a_b", "a b"] {
        aggregator.record(Sample {
            tags: vec![("host".to_owned(), value.to_owned())],
            ..number(MetricKind::Counter, "req", 1.0)
        });
    }
    let names: Vec<String> = aggregator
        .flush(0.0, 1.0)
        .into_iter()
        .map(|marker| marker.name)
        .collect();
    assert_eq!(
        names,
        [
            "a b · task.req (sum) #host:a b",
            "a,b · task.req (sum) #host:a\\,b",
            "a_b · task.req (sum) #host:a_b",
            "caf_ · task.req (sum) #host:caf_",
            "café · task.req (sum) #host:café"
        ]
    );
}

#[test]
fn a_tag_value_keeps_no_backslash_influxdb_would_refuse() {
    assert_eq!(
        sanitize_tag("path", r"C:\build\"),
        ("path".to_owned(), "C:_build_".to_owned())
    );
}
