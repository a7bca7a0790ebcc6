//! The statsd listener (`listener`, `socket`): a Unix datagram socket in the task's profile directory (`socket`),
//! and where asked for a UDP socket on the loopback interface, that take the statsd line
//! protocol and DogStatsD tags from the task. Packets are parsed and aggregated on this
//! source's own thread; each interval becomes a few encoded lines for the writer. The
//! thread also watches the InfluxDB endpoint's socket until its first connection, and
//! starts its first handler then.

// The listener's sockets and its wait on them are Linux's (a Unix datagram socket bound
// through /proc/self/fd as the directory's owner, poll(2)): no statsd listener on the
// other systems yet, whose recordings leave it out of the meta line.
#[cfg(target_os = "linux")]
pub(crate) mod listener;
#[cfg(target_os = "linux")]
mod socket;

#[cfg(target_os = "linux")]
pub(crate) use socket::SocketFile;

use tc_profile_format::metric::MetricKind;
use tc_profile_format::{Aggregator, Malformed, Sample, SampleValue};

/// Packets longer than this are dropped whole. Far above the 1,432 bytes that statsd
/// clients put in one packet, and short enough that a packet never costs much to parse.
pub const MAX_PACKET_BYTES: usize = 8192;

/// Parses one statsd line: `name:value|type[|@rate][|#tag:value,...]`. Other sections
/// (DogStatsD's container id `|c:` and timestamp `|T`) are ignored.
pub fn parse_line(line: &str) -> Result<Sample, Malformed> {
    let mut sections = line.split('|');
    let head = sections.next().unwrap_or_default();
    let (name, value) = head.split_once(':').ok_or(Malformed::Syntax)?;
    let type_code = sections.next().ok_or(Malformed::Syntax)?;
    if name.is_empty() || value.is_empty() {
        return Err(Malformed::Syntax);
    }
    let kind = match type_code {
        "c" => MetricKind::Counter,
        "g" => MetricKind::Gauge,
        "ms" => MetricKind::Timer,
        "h" | "d" => MetricKind::Histogram,
        "s" => MetricKind::Set,
        other => return Err(Malformed::UnknownType(other.chars().take(10).collect())),
    };
    let mut rate = 1.0;
    let mut tags = Vec::new();
    for section in sections {
        if let Some(text) = section.strip_prefix('@') {
            rate = text
                .parse::<f64>()
                .ok()
                .filter(|r| *r > 0.0 && *r <= 1.0)
                .ok_or(Malformed::Rate)?;
        } else if let Some(text) = section.strip_prefix('#') {
            tags = text
                .split(',')
                .filter(|tag| !tag.is_empty())
                .map(|tag| match tag.split_once(':') {
                    Some((key, value)) => (key.to_owned(), value.to_owned()),
                    None => (tag.to_owned(), String::new()),
                })
                .collect();
        }
    }
    let number = |text: &str| {
        text.parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or(Malformed::Value)
    };
    let value = match kind {
        MetricKind::Set => SampleValue::Member(value.to_owned()),
        // As in Etsy's statsd: a sign makes a gauge value a change of the current value.
        MetricKind::Gauge if value.starts_with(['+', '-']) => {
            SampleValue::GaugeDelta(number(value)?)
        }
        _ => SampleValue::Number(number(value)?),
    };
    Ok(Sample {
        kind,
        name: name.to_owned(),
        value,
        rate,
        tags,
    })
}

/// Parses the lines of one packet (`\n` or `\r\n` between them) into the aggregator,
/// counting those it cannot take.
pub fn record_packet(aggregator: &mut Aggregator, packet: &[u8]) {
    for line in packet.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            continue;
        }
        match std::str::from_utf8(line) {
            Ok(text) => match parse_line(text) {
                Ok(sample) => aggregator.record(sample),
                Err(why) => aggregator.malformed(text, why),
            },
            Err(_) => aggregator.malformed(&String::from_utf8_lossy(line), Malformed::NotUtf8),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Sample {
        parse_line(line).unwrap_or_else(|e| panic!("{line}: {e}"))
    }

    #[test]
    fn every_statsd_type_parses() {
        let kinds = [
            ("a:1|c", MetricKind::Counter),
            ("a:1|g", MetricKind::Gauge),
            ("a:1|ms", MetricKind::Timer),
            ("a:1|h", MetricKind::Histogram),
            ("a:1|d", MetricKind::Histogram),
            ("a:x|s", MetricKind::Set),
        ];
        for (line, kind) in kinds {
            assert_eq!(parse(line).kind, kind, "{line}");
        }
    }

    #[test]
    fn signed_gauges_are_deltas_and_rates_and_tags_are_read() {
        assert_eq!(parse("q:-4|g").value, SampleValue::GaugeDelta(-4.0));
        assert_eq!(parse("q:+4|g").value, SampleValue::GaugeDelta(4.0));
        assert_eq!(parse("q:-4|c").value, SampleValue::Number(-4.0));
        let sample = parse("hits:3|c|@0.25|#env:ci,fast|c:abc123");
        assert_eq!(sample.rate, 0.25);
        assert_eq!(
            sample.tags,
            [
                ("env".to_owned(), "ci".to_owned()),
                ("fast".to_owned(), String::new())
            ]
        );
    }

    #[test]
    fn malformed_lines_say_why() {
        let cases = [
            ("no-colon", Malformed::Syntax),
            ("a:1", Malformed::Syntax),
            (":1|c", Malformed::Syntax),
            ("a:|c", Malformed::Syntax),
            ("a:1|x", Malformed::UnknownType("x".into())),
            ("a:one|c", Malformed::Value),
            ("a:inf|ms", Malformed::Value),
            ("a:1|c|@0", Malformed::Rate),
            ("a:1|c|@2", Malformed::Rate),
        ];
        for (line, why) in cases {
            assert_eq!(parse_line(line), Err(why), "{line}");
        }
    }
}
