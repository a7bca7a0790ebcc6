//! The endpoint's token: a random secret of the recording, given to the task in
//! `TASKCLUSTER_INFLUX_URL` (`http://127.0.0.1:PORT/TOKEN`), so that another local user, who
//! can reach the loopback port but was not given the URL, cannot write into the task's
//! tracks (SPEC.md, "InfluxDB endpoint"). A write carries it as the path's first segment
//! (`/TOKEN/write`, the URL with `/write` added), as the password of InfluxDB 1.x's `u`
//! and `p` query parameters, or in an `Authorization` header: `Basic` with the token as
//! the password (what curl and Go clients make of `http://user:TOKEN@host`), or `Token`
//! (InfluxDB 2.x clients' `Token TOKEN`, 1.8's `Token user:TOKEN`).

use crate::token::{new_token, tokens_match};
use base64::Engine;
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

    /// Whether a write may write: one of the path's token, the `p` parameter and the
    /// `Authorization` header's password must be the token.
    pub(crate) fn admits(
        &self,
        from_path: Option<&str>,
        password: Option<&str>,
        authorization: Option<&str>,
    ) -> Access {
        let from_header = authorization.and_then(header_password);
        let given = [from_path, password, from_header.as_deref()];
        if given.iter().all(Option::is_none) {
            return Access::NoCredentials;
        }
        // All compared, whatever the first gave: the time taken says nothing of any.
        let matches = given.map(|candidate| candidate.is_some_and(|c| tokens_match(&self.0, c)));
        if matches.contains(&true) {
            Access::Granted
        } else {
            Access::Refused
        }
    }
}

/// The password an `Authorization` header carries: `Basic base64(user:password)`, or
/// `Token password` / `Token user:password`.
fn header_password(value: &str) -> Option<String> {
    let (scheme, credentials) = value.trim().split_once(' ')?;
    let credentials = credentials.trim();
    let pair = if scheme.eq_ignore_ascii_case("basic") {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(credentials)
            .ok()?;
        String::from_utf8(decoded).ok()?
    } else if scheme.eq_ignore_ascii_case("token") {
        credentials.to_owned()
    } else {
        return None;
    };
    let password = pair.split_once(':').map_or(pair.as_str(), |(_, p)| p);
    Some(password.to_owned())
}

/// The endpoint's paths of more than one segment, which carry no token segment.
const LONG_PATHS: &[&str] = &["/api/v2/write"];

/// Splits the token segment off `path`: any first segment before another one, but in
/// [`LONG_PATHS`].
pub(crate) fn route(path: &str) -> Route<'_> {
    if LONG_PATHS.contains(&path) {
        return Route { token: None, path };
    }
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
        assert_eq!(ours.admits(Some(&right), None, None), Access::Granted);
        assert_eq!(ours.admits(None, Some(&right), None), Access::Granted);
        assert_eq!(ours.admits(Some("x"), Some(&right), None), Access::Granted);
        assert_eq!(ours.admits(None, None, None), Access::NoCredentials);
        assert_eq!(ours.admits(Some("x"), None, None), Access::Refused);
        // A prefix, a longer string, another of the same length.
        assert_eq!(ours.admits(None, Some(&right[..31]), None), Access::Refused);
        assert_eq!(
            ours.admits(None, Some(&format!("{right}0")), None),
            Access::Refused
        );
        let other = right.replace('0', "1");
        assert_eq!(ours.admits(Some(&other), None, None), Access::Refused);
        assert_eq!(ours.admits(Some(""), None, None), Access::Refused);
    }

    #[test]
    fn the_token_is_taken_from_an_authorization_header() {
        use base64::Engine;
        let ours = token();
        let right = ours.as_str().to_owned();
        let basic = |pair: &str| {
            let encoded = base64::engine::general_purpose::STANDARD.encode(pair);
            format!("Basic {encoded}")
        };
        let admits = |header: &str| ours.admits(None, None, Some(header));
        assert_eq!(admits(&basic(&format!("tc:{right}"))), Access::Granted);
        assert_eq!(admits(&format!("Token {right}")), Access::Granted);
        assert_eq!(admits(&format!("token tc:{right}")), Access::Granted);
        assert_eq!(admits(&basic("tc:guess")), Access::Refused);
        // A header that carries no password is no credentials, as InfluxDB says.
        assert_eq!(admits(&format!("Bearer {right}")), Access::NoCredentials);
        assert_eq!(admits("Basic !!not-base64"), Access::NoCredentials);
        assert_eq!(admits(""), Access::NoCredentials);
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
            route("/api/v2/write"),
            Route {
                token: None,
                path: "/api/v2/write"
            }
        );
        assert_eq!(
            route("/abc/api/v2/write"),
            Route {
                token: Some("abc"),
                path: "/api/v2/write"
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
