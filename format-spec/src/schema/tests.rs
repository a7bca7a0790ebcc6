use super::*;

const ALL_BUT_STATSD: [&str; 13] = [
    source::CPU,
    source::MEMORY,
    source::IO,
    source::NET,
    source::PROCESSES,
    source::PROCESS_EXITS,
    source::CGROUP_MEMORY,
    source::CGROUP_CPU,
    source::OOM_KILLS,
    source::PRESSURE,
    source::LOAD,
    source::SWAP,
    source::CPU_FREQUENCY,
];

fn names(sources: &[&str]) -> Vec<String> {
    let sources: Vec<String> = sources.iter().map(|s| (*s).to_owned()).collect();
    marker_schemas(&sources)
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn only_the_schemas_of_sources_that_are_on_are_declared() {
    assert_eq!(names(&[]), ["Text", "Command"]);
    assert_eq!(
        names(&[source::CPU, "from-the-future"]),
        ["Text", "Command", "CPU"]
    );
    let all = names(&ALL_BUT_STATSD);
    assert_eq!(all.len(), 22, "{all:?}");
}

#[test]
fn every_schema_we_declare_but_text_is_reserved() {
    let sources = [&ALL_BUT_STATSD[..], &[source::STATSD, source::LOG_LINES]].concat();
    for name in names(&sources) {
        assert!(data_type::is_ours(&name), "{name}");
        assert_eq!(data_type::is_reserved(&name), name != "Text", "{name}");
    }
    for task_type in ["Test", "text", "CPU Use", "Memory", ""] {
        assert!(!data_type::is_ours(task_type), "{task_type}");
    }
}

#[test]
fn log_lines_declare_the_log_schema_and_the_metric_schemas_of_stat_lines() {
    let names = names(&[source::LOG_LINES]);
    assert_eq!(names[..3], ["Text", "Command", data_type::LOG]);
    assert!(names.iter().any(|n| n == "Counter"), "{names:?}");
    assert_eq!(log_schema()["name"], data_type::LOG);
}

#[test]
fn the_metric_schemas_are_declared_once_after_the_first_source_with_metric_tracks() {
    let declared = names(&[
        source::CPU,
        source::STATSD,
        source::INFLUX,
        source::LOG_LINES,
    ]);
    let mut expected = vec![
        "Text".to_owned(),
        "Command".to_owned(),
        data_type::CPU.to_owned(),
    ];
    expected.extend(
        metric_schemas()
            .iter()
            .map(|s| s["name"].as_str().unwrap().to_owned()),
    );
    expected.push(data_type::LOG.to_owned());
    assert_eq!(declared, expected);
}

#[test]
fn categories_have_colours_the_profiler_knows_and_log_levels_their_own() {
    let categories = categories();
    let colour = |index: u32| categories[index as usize]["color"].as_str().unwrap();
    for category in categories.as_array().unwrap() {
        let known = [
            "transparent",
            "purple",
            "green",
            "orange",
            "yellow",
            "lightblue",
            "blue",
            "brown",
            "magenta",
            "red",
            "lightred",
            "darkgrey",
            "grey",
        ];
        assert!(
            known.contains(&category["color"].as_str().unwrap()),
            "{category}"
        );
    }
    let levels = [category::LOG, category::LOG_WARNING, category::LOG_ERROR].map(colour);
    assert_eq!(levels, ["lightblue", "orange", "red"]);
}

#[test]
fn graph_colours_are_ones_the_profiler_knows() {
    let sources = [
        source::CPU,
        source::PROCESSES,
        source::CGROUP_CPU,
        source::PRESSURE,
    ];
    let sources: Vec<String> = sources.iter().map(|s| (*s).to_owned()).collect();
    for schema in marker_schemas(&sources).as_array().unwrap() {
        for graph in schema["graphs"].as_array().into_iter().flatten() {
            let color = graph["color"].as_str().unwrap();
            assert!(
                [
                    "blue", "green", "grey", "ink", "magenta", "orange", "purple", "red", "teal",
                    "yellow"
                ]
                .contains(&color),
                "{schema}"
            );
        }
    }
}

#[test]
fn log_categories_and_schema_are_declared_where_another_tools_meta_lacks_them() {
    let mut meta = json!({
        "categories": [{"name": "Other", "color": "grey", "subcategories": ["Other"]},
                       {"name": "Log", "color": "blue", "subcategories": ["Other"]}],
        "markerSchema": [],
    });
    let meta = meta.as_object_mut().unwrap();
    assert_eq!(
        declare_log(meta),
        [1, 2, 3],
        "Log found by name, the others appended"
    );
    assert_eq!(declare_log(meta), [1, 2, 3], "declared once");
    let names: Vec<&Value> = meta["categories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["name"])
        .collect();
    assert_eq!(names, ["Other", "Log", "Log warning", "Log error"]);
    assert_eq!(meta["markerSchema"].as_array().unwrap().len(), 1);
    assert_eq!(
        declare_log(&mut Map::new()),
        [5, 6, 7],
        "no categories: ours"
    );
}

/// The schemas of every source, metric tracks' included.
fn every_schema() -> Vec<Value> {
    let sources = [&ALL_BUT_STATSD[..], &[source::STATSD]].concat();
    let sources: Vec<String> = sources.iter().map(|s| (*s).to_owned()).collect();
    let Value::Array(schemas) = marker_schemas(&sources) else {
        unreachable!("a list")
    };
    schemas
}

#[test]
fn every_graph_of_ours_is_a_bar_and_an_older_logs_are_drawn_as_bars() {
    let schemas = every_schema();
    let graphs = schemas
        .iter()
        .flat_map(|s| s["graphs"].as_array().cloned().unwrap_or_default());
    assert!(graphs.clone().count() > 20);
    assert!(graphs.clone().all(|g| g["type"] == GRAPH_TYPE));

    let line = |name: &str| json!({"name": name, "graphs": [{"key": "v", "type": "line-filled"}]});
    let mut meta = Map::new();
    meta.insert(
        "markerSchema".to_owned(),
        json!([line("Mem"), line("Gauge"), line("Test")]),
    );
    draw_our_graphs_as_bars(&mut meta);
    let types: Vec<&Value> = meta["markerSchema"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| &s["graphs"][0]["type"])
        .collect();
    assert_eq!(
        types,
        ["bar", "bar", "line-filled"],
        "a task's own keeps its own"
    );
}

#[test]
fn every_field_of_a_track_but_a_metrics_name_is_a_number_the_front_end_formats() {
    // Text would sort as text in the marker table ("120 MB" before "30 MB"), and show as
    // the recorder wrote it rather than as the front-end formats numbers.
    const NUMBERS: [&str; 9] = [
        "bytes",
        "percentage",
        "integer",
        "decimal",
        "duration",
        "milliseconds",
        "seconds",
        "microseconds",
        "nanoseconds",
    ];
    let schemas = every_schema();
    let tracks = schemas.iter().filter(|s| s.get("graphs").is_some());
    for schema in tracks {
        for field in schema["data"].as_array().unwrap() {
            let key = field["key"].as_str().unwrap();
            let name = [crate::metric::key::METRIC, crate::metric::key::TAGS].contains(&key);
            let format = field["format"].as_str().unwrap();
            assert!(
                name || NUMBERS.contains(&format),
                "{}.{key} is {format}",
                schema["name"]
            );
        }
    }
}

#[test]
fn compare_declares_its_schema_once_and_the_recorder_s_category() {
    let mut meta = Map::new();
    meta.insert("markerSchema".to_owned(), json!([]));
    let category = declare_compare(&mut meta);
    assert_eq!(declare_compare(&mut meta), category);
    assert_eq!(meta["markerSchema"], json!([compare_schema()]));
    assert_eq!(compare_schema()["name"], data_type::COMPARE);
    assert_eq!(meta["categories"][category as usize]["name"], "Recorder");
}
