//! The value parsers of arguments: a mistyped value fails at once, in one line that says
//! what to give.

use std::net::SocketAddr;
use std::ops::RangeInclusive;
use std::time::Duration;
use tc_profile_daemon::Retain;
use tc_profile_format::marker_file::Limits;
use tc_profile_format::MetricLimits;
use tc_profile_recorder::ProcessExits;

/// A port or `:PORT` (on 127.0.0.1), or `HOST:PORT`: loopback unless a host is given.
pub fn parse_address(text: &str) -> Result<SocketAddr, String> {
    if let Ok(port) = text.strip_prefix(':').unwrap_or(text).parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    text.parse().map_err(|_| {
        format!("'{text}' is neither a port nor HOST:PORT (for example 127.0.0.1:8080)")
    })
}

/// How the task's processes are seen as they end: one of [`ProcessExits::NAMES`].
pub fn parse_process_exits(text: &str) -> Result<ProcessExits, String> {
    ProcessExits::parse(text).ok_or_else(|| {
        let names = ProcessExits::NAMES.join(", ");
        format!("'{text}' is not one of {names}")
    })
}

/// A statsd's address, checked at start: a mistyped one would fail only once the task is
/// over. The host is looked up then, not now.
pub fn parse_host_port(text: &str) -> Result<String, String> {
    match text.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0) => {
            Ok(text.to_owned())
        }
        _ => Err(format!(
            "'{text}' is not HOST:PORT (for example localhost:8125)"
        )),
    }
}

pub fn parse_interval(text: &str) -> Result<Duration, String> {
    parse_seconds(text, 0.01..=3600.0)
}

pub fn parse_wait(text: &str) -> Result<Duration, String> {
    parse_seconds(text, 0.0..=3600.0)
}

fn parse_seconds(text: &str, range: RangeInclusive<f64>) -> Result<Duration, String> {
    let seconds: f64 = text
        .parse()
        .map_err(|_| format!("'{text}' is not a number of seconds (for example 0.5)"))?;
    if !range.contains(&seconds) {
        return Err(format!(
            "{seconds} s is outside {} to {} s",
            range.start(),
            range.end()
        ));
    }
    Ok(Duration::from_secs_f64(seconds))
}

pub fn parse_prefix(text: &str) -> Result<String, String> {
    if !MetricLimits::is_valid_prefix(text) {
        return Err(format!(
            "'{text}' is not a prefix like 'task.' or 'ci.build.' (letters, digits, _ and -, \
             each segment followed by a dot)"
        ));
    }
    Ok(text.to_owned())
}

pub fn parse_limit(text: &str) -> Result<String, String> {
    Limits::default().set(text)?;
    Ok(text.to_owned())
}

/// `--user UID[:GID]`.
#[derive(Clone, Copy, Debug)]
#[cfg_attr(not(unix), allow(dead_code))] // the daemon's verbs are Unix-only for now
pub struct TaskUser {
    pub uid: u32,
    pub gid: Option<u32>,
}

pub fn parse_user(text: &str) -> Result<TaskUser, String> {
    let number = |part: &str| {
        part.parse::<u32>()
            .ok()
            .filter(|&id| id != u32::MAX)
            .ok_or_else(|| {
                format!("'{text}': give the user as numbers, UID or UID:GID (1000:1000)")
            })
    };
    let (uid, gid) = match text.split_once(':') {
        Some((uid, gid)) => (number(uid)?, Some(number(gid)?)),
        None => (number(text)?, None),
    };
    Ok(TaskUser { uid, gid })
}

pub fn parse_timeout(text: &str) -> Result<Duration, String> {
    let seconds: f64 = text
        .parse()
        .map_err(|_| format!("'{text}' is not a number of seconds (for example 3600)"))?;
    if !(seconds.is_finite() && seconds > 0.0) {
        return Err(format!("{seconds} s: give a positive number of seconds"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// Epoch milliseconds, or an age (`90m`, `2h`, `1d`, `30s`) before now.
pub fn parse_time(text: &str) -> Result<f64, String> {
    if let Ok(epoch_ms) = text.parse::<f64>() {
        return Ok(epoch_ms);
    }
    match text.parse::<Retain>() {
        Ok(Retain::Age(age)) => {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default();
            Ok(now.saturating_sub(age).as_secs_f64() * 1000.0)
        }
        _ => Err(format!(
            "'{text}' is neither epoch milliseconds nor a time ago (90m, 2h, 1d)"
        )),
    }
}

/// An age as InfluxQL writes it: a whole number and s, m, h, d or w (`30d`).
pub fn parse_influx_age(text: &str) -> Result<String, String> {
    let digits = text.trim_end_matches(['s', 'm', 'h', 'd', 'w']);
    let one_unit = text.len() == digits.len() + 1;
    if one_unit && !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(text.to_owned());
    }
    Err(format!(
        "'{text}' is not an age like 30d, 12h or 90m (a whole number and s, m, h, d or w)"
    ))
}

/// Bytes, or a number and K, M or G (binary units).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let (number, unit) = match text.char_indices().last() {
        Some((at, unit @ ('K' | 'M' | 'G'))) => (&text[..at], unit),
        _ => (text, 'B'),
    };
    let factor = match unit {
        'K' => 1 << 10,
        'M' => 1 << 20,
        'G' => 1 << 30,
        _ => 1,
    };
    number
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(factor))
        .filter(|&size| size > 0)
        .ok_or_else(|| format!("'{text}' is not a size (for example 4G, 500M, 1048576)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_without_a_host_is_loopback_and_another_host_only_when_given() {
        let loopback = |port| SocketAddr::from(([127, 0, 0, 1], port));
        assert_eq!(parse_address("8080"), Ok(loopback(8080)));
        assert_eq!(parse_address(":0"), Ok(loopback(0)));
        assert_eq!(
            parse_address("0.0.0.0:8080"),
            Ok(SocketAddr::from(([0, 0, 0, 0], 8080)))
        );
        assert!(parse_address("localhost").is_err());
    }
}
