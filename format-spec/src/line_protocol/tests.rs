//! Tests of the line-protocol parser: every value type, the escaping rules, a reason for
//! each refusal, and hostile input that must neither panic nor take long.

use super::*;

fn point(line: &str) -> Point {
    match parse_line(line) {
        Ok(Some(point)) => point,
        other => panic!("{line}: {other:?}"),
    }
}

fn pairs(tags: &[(&str, &str)]) -> Vec<(String, String)> {
    tags.iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[test]
fn a_full_point_parses() {
    let parsed = point("build,host=ci-1,stage=test duration=1.5,ok=t,tests=12i,bytes=7u,note=\"fine\" 1700000000000000000");
    assert_eq!(parsed.measurement, "build");
    assert_eq!(parsed.tags, pairs(&[("host", "ci-1"), ("stage", "test")]));
    assert_eq!(
        parsed.fields,
        [
            ("duration".to_owned(), FieldValue::Float(1.5)),
            ("ok".to_owned(), FieldValue::Boolean(true)),
            ("tests".to_owned(), FieldValue::Integer(12)),
            ("bytes".to_owned(), FieldValue::Unsigned(7)),
            ("note".to_owned(), FieldValue::String("fine".to_owned())),
        ]
    );
    assert_eq!(parsed.timestamp, Some(1_700_000_000_000_000_000));
}

#[test]
fn every_value_type_parses() {
    let cases = [
        ("1", FieldValue::Float(1.0)),
        ("-1.5e3", FieldValue::Float(-1500.0)),
        (".5", FieldValue::Float(0.5)),
        ("-3i", FieldValue::Integer(-3)),
        ("18446744073709551615u", FieldValue::Unsigned(u64::MAX)),
        ("T", FieldValue::Boolean(true)),
        ("True", FieldValue::Boolean(true)),
        ("TRUE", FieldValue::Boolean(true)),
        ("f", FieldValue::Boolean(false)),
        ("false", FieldValue::Boolean(false)),
        ("\"\"", FieldValue::String(String::new())),
    ];
    for (text, value) in cases {
        assert_eq!(point(&format!("m v={text}")).fields[0].1, value, "{text}");
    }
}

#[test]
fn escapes_follow_the_line_protocol() {
    let parsed = point(r#"my\ meas\,ure,tag\ key\=x=a\,b\ c\=d field\ key="say \"hi\" \\ \n""#);
    assert_eq!(parsed.measurement, "my meas,ure");
    assert_eq!(parsed.tags, pairs(&[("tag key=x", "a,b c=d")]));
    assert_eq!(parsed.fields[0].0, "field key");
    // A backslash before anything but `"` and `\` stays as written.
    assert_eq!(
        parsed.fields[0].1,
        FieldValue::String(r#"say "hi" \ \n"#.to_owned())
    );
    let spaced = point("m,t=1 f=\"a b,c=d\" 12");
    assert_eq!(spaced.fields[0].1, FieldValue::String("a b,c=d".to_owned()));
    assert_eq!(spaced.timestamp, Some(12));
}

#[test]
fn blank_lines_and_comments_are_no_points() {
    for line in ["", "   ", "\r", "# a comment", "  # indented"] {
        assert_eq!(parse_line(line), Ok(None), "{line:?}");
    }
    assert_eq!(point("m v=1\r").fields.len(), 1);
}

#[test]
fn each_refusal_says_why() {
    let cases = [
        (",t=1 v=1", LineError::MissingMeasurement),
        ("m,=1 v=1", LineError::MissingTagKey),
        ("m,t v=1", LineError::MissingTagValue),
        ("m,t= v=1", LineError::MissingTagValue),
        ("m", LineError::MissingFields),
        ("m,t=1", LineError::MissingFields),
        ("m   ", LineError::MissingFields),
        ("m =1", LineError::MissingFieldKey),
        ("m v=1,", LineError::MissingFieldKey),
        ("m v", LineError::InvalidFieldFormat),
        ("m v=", LineError::MissingFieldValue),
        ("m v=1,w", LineError::InvalidFieldFormat),
        ("m v=one", LineError::InvalidBoolean),
        ("m v=inf", LineError::InvalidBoolean),
        ("m v=NaN", LineError::InvalidBoolean),
        ("m v=1.2.3", LineError::InvalidNumber),
        ("m v=1e999", LineError::InvalidNumber),
        ("m v=1.5i", LineError::InvalidNumber),
        ("m v=-1u", LineError::InvalidNumber),
        ("m v=99999999999999999999i", LineError::InvalidNumber),
        ("m v=\"open", LineError::UnbalancedQuotes),
        ("m v=\"a\"b", LineError::InvalidFieldFormat),
        ("m v=1 12x", LineError::BadTimestamp),
        ("m v=1 12 13", LineError::BadTimestamp),
        ("m v=1 99999999999999999999", LineError::BadTimestamp),
    ];
    for (line, why) in cases {
        assert_eq!(parse_line(line), Err(why), "{line}");
    }
}

#[test]
fn precisions_convert_to_epoch_milliseconds() {
    let cases = [
        ("", 2_000_000_000, 2000.0),
        ("n", 2_000_000_000, 2000.0),
        ("ns", 2_000_000_000, 2000.0),
        ("u", 2_000_000, 2000.0),
        ("us", 2_000_000, 2000.0),
        ("ms", 2000, 2000.0),
        ("s", 2, 2000.0),
        ("m", 2, 120_000.0),
        ("h", 2, 7_200_000.0),
    ];
    for (name, timestamp, epoch_ms) in cases {
        let precision = Precision::parse(name).unwrap();
        assert_eq!(precision.epoch_ms(timestamp), epoch_ms, "{name}");
    }
    for name in ["x", "S", "sec", "1"] {
        assert_eq!(Precision::parse(name), None, "{name}");
    }
}

#[test]
fn a_point_becomes_one_series_per_field() {
    let samples = point("build,stage=test seconds=2.5,ok=true,result=\"pass\"")
        .samples()
        .unwrap();
    let summary: Vec<_> = samples
        .iter()
        .map(|s| (s.kind, s.name.as_str(), s.value.clone()))
        .collect();
    assert_eq!(
        summary,
        [
            (
                MetricKind::Histogram,
                "build.seconds",
                SampleValue::Number(2.5)
            ),
            (MetricKind::Histogram, "build.ok", SampleValue::Number(1.0)),
            (
                MetricKind::Set,
                "build.result",
                SampleValue::Member("pass".to_owned())
            ),
        ]
    );
    assert!(samples
        .iter()
        .all(|s| s.tags == pairs(&[("stage", "test")])));
}

#[test]
fn points_over_the_metric_caps_are_refused() {
    let many_tags: String = (0..=MAX_TAGS).map(|i| format!(",t{i}=x")).collect();
    assert_eq!(
        point(&format!("m{many_tags} v=1")).samples(),
        Err(LineError::Tags)
    );
    let long_tag = "x".repeat(MAX_TAG_BYTES);
    assert_eq!(
        point(&format!("m,t={long_tag} v=1")).samples(),
        Err(LineError::Tags)
    );
    let long_name = "m".repeat(300);
    assert_eq!(
        point(&format!("{long_name} v=1")).samples(),
        Err(LineError::SeriesName)
    );
    assert_eq!(point("... .=1").samples(), Err(LineError::SeriesName));
    // Each part is a name of its own once forwarded: "a.v" alone would not do.
    assert_eq!(point("... a.v=1").samples(), Err(LineError::SeriesName));
    assert_eq!(point("a ..=1").samples(), Err(LineError::SeriesName));
}

#[test]
fn hostile_lines_never_panic_and_stay_linear() {
    let started = std::time::Instant::now();
    let big = 1 << 20;
    let hostile = [
        "\\".repeat(big),
        ",".repeat(big),
        "=".repeat(big),
        "m ".to_owned() + &"v=1,".repeat(big / 4),
        "m v=\"".to_owned() + &"\\\"".repeat(big / 2),
        "m,".to_owned() + &"\\ ".repeat(big / 2),
        " ".repeat(big),
        "m v=1 ".to_owned() + &"9".repeat(big),
        "é,ü=ö ß=\"ñ\" 1".to_owned(),
        "m v=1\\".to_owned(),
        "m\\".to_owned(),
        "m,t=\\".to_owned(),
    ];
    for line in &hostile {
        let _ = parse_line(line).map(|point| point.map(|p| p.samples()));
    }
    // Every prefix of a valid line, cut at any byte.
    let line = r#"a\ b,c\,d=e\=f g\ h="i \"j\"",k=1i,l=2.5e3,m=T 1700000000"#;
    for end in 0..=line.len() {
        if let Some(prefix) = line.get(..end) {
            let _ = parse_line(prefix);
        }
    }
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}
