//! How the daemon runs: the choices of `tc-profile daemon`, with their defaults.

use std::path::PathBuf;
use std::time::Duration;

/// The socket when neither `--socket` nor `TC_PROFILE_SOCKET` names one.
pub const DEFAULT_SOCKET: &str = "/run/tc-profile/daemon.sock";
/// The environment variable that names the socket.
pub const SOCKET_VARIABLE: &str = "TC_PROFILE_SOCKET";

/// How much of the machine's past to keep.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Retain {
    /// Segments that ended longer ago than this are deleted.
    Age(Duration),
    /// The oldest segments are deleted while all of them take more bytes than this.
    Size(u64),
}

impl std::str::FromStr for Retain {
    type Err = String;

    /// `30d`, `12h`, `90m`, `600s`, or `500M`, `2G`, `800K` (binary units).
    fn from_str(text: &str) -> Result<Retain, String> {
        let split = text.len().saturating_sub(1);
        let (number, unit) = text.split_at(split);
        let number: u64 = number.parse().map_err(|_| {
            format!("{text:?}: give a number and a unit: 30d, 12h, 90m, 600s, 2G, 500M")
        })?;
        let seconds = |s: u64| Ok(Retain::Age(Duration::from_secs(number * s)));
        match unit {
            "d" => seconds(86_400),
            "h" => seconds(3600),
            "m" => seconds(60),
            "s" => seconds(1),
            "G" => Ok(Retain::Size(number << 30)),
            "M" => Ok(Retain::Size(number << 20)),
            "K" => Ok(Retain::Size(number << 10)),
            _ => Err(format!(
                "{text:?}: the unit is one of d, h, m, s (an age) or G, M, K (a size)"
            )),
        }
    }
}

#[derive(Clone, Debug)]
pub struct DaemonConfig {
    pub state_dir: PathBuf,
    pub socket: PathBuf,
    /// The machine's sampling interval (the tasks' process trees are sampled at it too).
    pub interval: Duration,
    pub retain: Retain,
    /// A task open longer than this is finalized by the next `task start`.
    pub task_timeout: Duration,
    /// Where to serve live profiles over HTTP, if anywhere.
    pub http: Option<std::net::SocketAddr>,
}

impl DaemonConfig {
    /// Defaults: 1 s interval, 7 days kept, tasks time out after a day, no HTTP.
    pub fn new(state_dir: PathBuf, socket: PathBuf) -> DaemonConfig {
        DaemonConfig {
            state_dir,
            socket,
            interval: Duration::from_secs(1),
            retain: Retain::Age(Duration::from_secs(7 * 86_400)),
            task_timeout: Duration::from_secs(86_400),
            http: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retain_takes_an_age_or_a_size() {
        assert_eq!("12h".parse(), Ok(Retain::Age(Duration::from_secs(43_200))));
        assert_eq!("2G".parse(), Ok(Retain::Size(2 << 30)));
        assert!("12".parse::<Retain>().unwrap_err().contains("unit"));
        assert!("h".parse::<Retain>().is_err());
    }
}
