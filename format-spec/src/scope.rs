//! Metric scopes (SPEC.md, "Metric scopes"): which series the task may write, in
//! Taskcluster's scope syntax. Writing the series `S` needs the scope
//! `stats:put-points:S`; a scope granted is satisfied by the same string, or, when it ends
//! in `*`, by any scope that starts with what precedes the `*`.

/// What writing a series needs, before the series name (its name as the task sent it,
/// sanitized, without the recorder's prefix).
pub const PUT_POINTS: &str = "stats:put-points:";

/// The scopes granted to the task. None given: every series is open.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MetricScopes {
    granted: Vec<String>,
}

impl MetricScopes {
    pub fn new(granted: Vec<String>) -> MetricScopes {
        MetricScopes { granted }
    }

    pub fn granted(&self) -> &[String] {
        &self.granted
    }

    /// The scope writing `series` needs when the granted scopes do not satisfy it.
    pub fn missing(&self, series: &str) -> Option<String> {
        if self.granted.is_empty() {
            return None;
        }
        let needed = format!("{PUT_POINTS}{series}");
        let satisfied = self
            .granted
            .iter()
            .any(|pattern| match pattern.strip_suffix('*') {
                Some(start) => needed.starts_with(start),
                None => *pattern == needed,
            });
        (!satisfied).then_some(needed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_match_exactly_or_by_a_trailing_star() {
        let scopes = MetricScopes::new(
            ["stats:put-points:build.time", "stats:put-points:tests.*"]
                .map(str::to_owned)
                .to_vec(),
        );
        assert_eq!(scopes.missing("build.time"), None);
        assert_eq!(scopes.missing("tests.passed"), None);
        assert_eq!(scopes.missing("tests."), None);
        assert_eq!(
            scopes.missing("build.time.max"),
            Some("stats:put-points:build.time.max".to_owned())
        );
        assert_eq!(
            scopes.missing("testsuite"),
            Some("stats:put-points:testsuite".to_owned())
        );
        for everything in ["*", "stats:*", "stats:put-points:*"] {
            let scopes = MetricScopes::new(vec![everything.to_owned()]);
            assert_eq!(scopes.missing("any.series"), None, "{everything}");
        }
        assert_eq!(MetricScopes::default().missing("any"), None);
        let unrelated = MetricScopes::new(vec!["queue:create-task:*".to_owned()]);
        assert!(unrelated.missing("any").is_some());
    }
}
