use super::*;

/// Epoch ms of a test log's start.
const ORIGIN: f64 = 1_700_000_000_000.0;

/// A machine log of `ticks` samples a second apart, each of six lines (about a machine
/// segment's 1.4 KB).
fn machine_log(ticks: u32) -> Vec<u8> {
    let mut text = format!(
        "{{\"type\":\"meta\",\"startTime\":{ORIGIN},\"interval\":1000}}\n{{\"type\":\"thread\",\"name\":\"t\"}}\n"
    );
    for tick in 0..ticks {
        let (start, end) = (f64::from(tick) * 1000.0, f64::from(tick + 1) * 1000.0);
        for name in [
            "CPU Use",
            "Memory",
            "IO",
            "NetIO",
            "CPU Pressure",
            "IO Pressure",
        ] {
            text.push_str(&format!(
                "{{\"type\":\"marker\",\"name\":\"{name}\",\"startTime\":{start},\"endTime\":{end},\"data\":{{\"type\":\"x\",\"tick\":{tick}}}}}\n"
            ));
        }
    }
    text.into_bytes()
}

/// Epoch ms `seconds` into a test log.
fn at(seconds: f64) -> f64 {
    ORIGIN + seconds * 1000.0
}

fn read_within(log: &[u8], span: Span) -> SpanRead {
    read_log_within(Cursor::new(log), log.len() as u64, span).unwrap()
}

/// The ticks of the CPU samples read that overlap `span`.
fn ticks_in(recording: &Recording, span: Span) -> Vec<f64> {
    let (start, end) = (span.start - ORIGIN, span.end - ORIGIN);
    recording
        .markers
        .iter()
        .filter(|m| {
            m.name == "CPU Use" && m.end_time.unwrap_or(0.0) >= start && m.start_time <= end
        })
        .map(|m| m.start_time)
        .collect()
}

#[test]
fn a_short_span_of_a_long_log_reads_a_small_part_of_it() {
    let log = machine_log(3600);
    let span = Span {
        start: at(1800.5),
        end: at(1860.0),
    };
    let read = read_within(&log, span);
    let whole = read_log(&log[..]).unwrap();
    assert_eq!(ticks_in(&read.recording, span), ticks_in(&whole, span));
    assert_eq!(read.recording.meta, whole.meta);
    // An hour's log, a minute of it wanted: the search's probes and its last stretch.
    assert!(
        read.bytes_read * 20 < log.len() as u64,
        "{} of {} bytes read",
        read.bytes_read,
        log.len()
    );
}

#[test]
fn a_span_at_either_end_of_the_log_reads_to_that_end() {
    let log = machine_log(600);
    for span in [
        Span {
            start: at(-50.0),
            end: at(3.0),
        },
        Span {
            start: at(590.0),
            end: at(9000.0),
        },
    ] {
        reads_every_tick_of(&log, span);
    }
}

#[test]
fn probes_that_find_damage_read_more_never_less() {
    let mut log = machine_log(3600);
    // Every line from a third of the log on is garbage of its length.
    let third = log.len() / 3;
    for byte in &mut log[third..] {
        if *byte != b'\n' {
            *byte = b'#';
        }
    }
    reads_every_tick_of(
        &log,
        Span {
            start: at(500.0),
            end: at(560.0),
        },
    );
}

/// Reading `log` for `span` takes every sample of it a whole read takes, and some.
fn reads_every_tick_of(log: &[u8], span: Span) {
    let read = read_within(log, span);
    let whole = read_log(log).unwrap();
    assert_eq!(ticks_in(&read.recording, span), ticks_in(&whole, span));
    assert!(!ticks_in(&whole, span).is_empty());
}

#[test]
fn a_log_whose_header_cannot_be_read_is_read_whole_for_the_reader_to_refuse() {
    let log = b"{\"type\":\"meta\",\"startTime\":1,\"interval\":1000}\n".to_vec();
    let read = read_log_within(
        Cursor::new(&log),
        log.len() as u64,
        Span {
            start: 0.0,
            end: 1.0,
        },
    );
    assert!(matches!(read, Err(ReadError::NoThread)), "{read:?}");
    // A meta without an interval: read whole, as any log.
    let mut log = machine_log(100);
    let interval = b",\"interval\":1000";
    let at_interval = log
        .windows(interval.len())
        .position(|w| w == interval)
        .unwrap();
    log.drain(at_interval..at_interval + interval.len());
    let read = read_within(
        &log,
        Span {
            start: at(50.0),
            end: at(51.0),
        },
    );
    assert_eq!(
        read.bytes_read,
        log.len() as u64 + 8192.min(log.len() as u64)
    );
}
