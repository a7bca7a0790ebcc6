//! The endpoint's token: a random secret of the recording, given to the task in
//! `TASKCLUSTER_INFLUX_URL` (`http://127.0.0.1:PORT/TOKEN`), so that another local user, who
//! can reach the loopback port but was not given the URL, cannot write into the task's
//! tracks (SPEC.md, "InfluxDB endpoint"). A write carries it as the path's first segment
//! (`/TOKEN/write`, the URL with `/write` added) or as the password of InfluxDB 1.x's `u`
//! and `p` query parameters.

use crate::token::{new_token, tokens_match};
use std::io;

pub(crate) struct Token(String);

/// Whether a request may write.
#[derive(Debug, PartialEq)]
pub(crate) enum Access {
    Granted,
    /// No token at all: 401, as InfluxDB answers without credentials.
    NoCredentials,
    /// A token, not the recording's: 401.
    Refused,
}

/// A request's path, its token segment taken off: `/TOKEN/write` is `/write` with the
/// token `TOKEN`; `/write` is itself without one.
#[derive(Debug, PartialEq)]
pub(crate) struct Route<'a> {
    pub(crate) token: Option<&'a str>,
    pub(crate) path: &'a str,
}

impl Token {
    /// A token from the operating system's random source, as hex.
    pub(crate) fn generate() -> io::Result<Token> {
        new_token().map(Token)
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether a write with the path's token and the `p` parameter may write: one of them
    /// must be the token.
    pub(crate) fn admits(&self, from_path: Option<&str>, password: Option<&str>) -> Access {
        let given = [from_path, password];
        if given.iter().all(Option::is_none) {
            return Access::NoCredentials;
        }
        // Both compared, whatever the first gave: the time taken says nothing of either.
        let matches = given.map(|candidate| candidate.is_some_and(|c| tokens_match(&self.0, c)));
        match matches {
            [false, false] => Access::Refused,
            _ => Access::Granted,
        }
    }
}

/// Splits the token segment off `path`: any first segment before another one.
pub(crate) fn route(path: &str) -> Route<'_> {
    let split = path
        .strip_prefix('/')
        .and_then(|rest| rest.split_once('/'))
        .filter(|(token, _)| !token.is_empty());
    match split {
        Some((token, _)) => Route {
            token: Some(token),
            path: &path[token.len() + 1..],
        },
        None => Route { token: None, path },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token() -> Token {
        Token("0123456789abcdef0123456789abcdef".to_owned())
    }

    #[test]
    fn the_token_is_taken_from_the_path_or_the_password() {
        let ours = token();
        let right = ours.as_str().to_owned();
        assert_eq!(ours.admits(Some(&right), None), Access::Granted);
        assert_eq!(ours.admits(None, Some(&right)), Access::Granted);
        assert_eq!(ours.admits(Some("x"), Some(&right)), Access::Granted);
        assert_eq!(ours.admits(None, None), Access::NoCredentials);
        assert_eq!(ours.admits(Some("x"), None), Access::Refused);
        // A prefix, a longer string, another of the same length.
        assert_eq!(ours.admits(None, Some(&right[..31])), Access::Refused);
        assert_eq!(
            ours.admits(None, Some(&format!("{right}0"))),
            Access::Refused
        );
        let other = right.replace('0', "1");
        assert_eq!(ours.admits(Some(&other), None), Access::Refused);
        assert_eq!(ours.admits(Some(""), None), Access::Refused);
    }

    #[test]
    fn a_first_segment_before_another_is_the_token() {
        let route = |path| super::route(path);
        assert_eq!(
            route("/abc/write"),
            Route {
                token: Some("abc"),
                path: "/write"
            }
        );
        assert_eq!(
            route("/write"),
            Route {
                token: None,
                path: "/write"
            }
        );
        assert_eq!(
            route("//write"),
            Route {
                token: None,
                path: "//write"
            }
        );
        assert_eq!(
            route("/a/b/write"),
            Route {
                token: Some("a"),
                path: "/b/write"
            }
        );
    }
}
