//! How the daemon runs: the choices of `tc-profile daemon`, with their defaults.

use std::path::PathBuf;
use std::time::Duration;
use tc_profile_recorder::COARSE_AFTER;

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
        let unit = text.chars().last().unwrap_or_default();
        let number: u64 = text
            .strip_suffix(unit)
            .unwrap_or(text)
            .parse()
            .map_err(|_| {
                format!("{text:?}: give a number and a unit: 30d, 12h, 90m, 600s, 2G, 500M")
            })?;
        let times = |factor: u64| {
            number
                .checked_mul(factor)
                .ok_or_else(|| format!("{text:?}: too large"))
        };
        match unit {
            'd' => times(86_400).map(|s| Retain::Age(Duration::from_secs(s))),
            'h' => times(3600).map(|s| Retain::Age(Duration::from_secs(s))),
            'm' => times(60).map(|s| Retain::Age(Duration::from_secs(s))),
            's' => times(1).map(|s| Retain::Age(Duration::from_secs(s))),
            'G' => times(1 << 30).map(Retain::Size),
            'M' => times(1 << 20).map(Retain::Size),
            'K' => times(1 << 10).map(Retain::Size),
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
    /// How old the machine's segment grows before the next one starts.
    pub segment_age: Duration,
    /// The longest span of a worker profile asked for over HTTP.
    pub http_max_span: Duration,
}

impl DaemonConfig {
    /// Defaults: 1 s interval, 7 days kept, tasks time out after a day, no HTTP (a day's
    /// worker profile at most when served), a new segment when the recorder would thin its
    /// samples out (`COARSE_AFTER`), so that the machine tracks keep the daemon's interval.
    pub fn new(state_dir: PathBuf, socket: PathBuf) -> DaemonConfig {
        DaemonConfig {
            state_dir,
            socket,
            interval: Duration::from_secs(1),
            retain: Retain::Age(Duration::from_secs(7 * 86_400)),
            task_timeout: Duration::from_secs(86_400),
            http: None,
            segment_age: COARSE_AFTER,
            http_max_span: Duration::from_secs(86_400),
        }
    }

    /// Where the tasks' logs are, in parts.
    pub fn tasks_dir(&self) -> PathBuf {
        self.state_dir.join("tasks")
    }

    /// The live server's base URL, as task logs name it (`meta.tcProfile.liveServer`).
    pub fn live_server(&self) -> Option<String> {
        self.http.map(|address| format!("http://{address}"))
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
        assert!("1\u{e9}".parse::<Retain>().unwrap_err().contains("unit"));
        assert!("".parse::<Retain>().is_err());
        assert!("300000000000000d"
            .parse::<Retain>()
            .unwrap_err()
            .contains("too large"));
        assert!("20000000000G"
            .parse::<Retain>()
            .unwrap_err()
            .contains("too large"));
    }
}
