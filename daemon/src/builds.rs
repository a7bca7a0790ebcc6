//! Live profiles built at most [`MAX_BUILDS`] at once, and once for all the requests that
//! ask for the same one meanwhile: a request that finds its profile being built waits for
//! that build's result; one that would start a build past the bound is refused (503). A
//! profile counts against the bound until the last request serving it has sent it, so
//! that memory holds [`MAX_BUILDS`] profiles at most.

use crate::error::DaemonError;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tc_profile_finalizer::Profile;

/// Profiles built (or held for sending) at once.
pub const MAX_BUILDS: usize = 2;

/// What a build makes: a task's profile, or the worker's over a span (the bits of its
/// epoch ms bounds, as asked).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum BuildKey {
    Task(String, u32),
    Worker(Option<u64>, Option<u64>),
}

/// A profile built, holding its place under the bound while it is served.
pub struct Built {
    pub profile: Profile,
    _permit: Permit,
}

/// Why no profile: too many being built, or the build's own error.
#[derive(Clone)]
pub enum Refused {
    Busy,
    Failed(Arc<DaemonError>),
}

type Outcome = Result<Arc<Built>, Refused>;
/// A build under way: locked by its builder until its outcome is in.
type Slot = Arc<Mutex<Option<Outcome>>>;

#[derive(Default)]
pub struct Builds {
    in_flight: Mutex<HashMap<BuildKey, Slot>>,
    held: Arc<AtomicUsize>,
}

/// A place under [`MAX_BUILDS`], given back when dropped.
struct Permit(Arc<AtomicUsize>);

impl Drop for Permit {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Takes the build's key out of the map when the build is over, even by a panic (its
/// waiters then find no outcome).
struct Leaving<'a> {
    builds: &'a Builds,
    key: &'a BuildKey,
}

impl Drop for Leaving<'_> {
    fn drop(&mut self) {
        self.builds.in_flight().remove(self.key);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl Builds {
    fn in_flight(&self) -> MutexGuard<'_, HashMap<BuildKey, Slot>> {
        lock(&self.in_flight)
    }

    fn permit(&self) -> Option<Permit> {
        let taken = self.held.fetch_add(1, Ordering::AcqRel);
        let permit = Permit(Arc::clone(&self.held));
        (taken < MAX_BUILDS).then_some(permit)
    }

    /// The profile of `key`: the one being built, waited for, or built by `build` now.
    pub fn get(
        &self,
        key: BuildKey,
        build: impl FnOnce() -> Result<Profile, DaemonError>,
    ) -> Result<Arc<Built>, Refused> {
        let mut in_flight = self.in_flight();
        if let Some(slot) = in_flight.get(&key).cloned() {
            drop(in_flight);
            let outcome = lock(&slot).clone();
            let gone = DaemonError::Request("the profile's build failed; try again".to_owned());
            return outcome.unwrap_or_else(|| Err(Refused::Failed(Arc::new(gone))));
        }
        let permit = self.permit().ok_or(Refused::Busy)?;
        let slot = Slot::default();
        let mut outcome = lock(&slot);
        in_flight.insert(key.clone(), Arc::clone(&slot));
        drop(in_flight);
        let leaving = Leaving {
            builds: self,
            key: &key,
        };
        let built = match build() {
            Ok(profile) => Ok(Arc::new(Built {
                profile,
                _permit: permit,
            })),
            Err(error) => Err(Refused::Failed(Arc::new(error))),
        };
        *outcome = Some(built.clone());
        drop(leaving);
        built
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Barrier;
    use std::time::Duration;
    use tc_profile_finalizer::compact;

    fn profile() -> Profile {
        let log = concat!(
            r#"{"type":"meta","startTime":1000,"markerSchema":[]}"#,
            "\n",
            r#"{"type":"thread","name":"t"}"#,
            "\n"
        );
        compact(tc_profile_finalizer::read_log(log.as_bytes()).unwrap()).0
    }

    #[test]
    fn requests_for_one_profile_meanwhile_share_its_one_build() {
        let builds = Builds::default();
        let made = AtomicUsize::new(0);
        let start = Barrier::new(8);
        std::thread::scope(|scope| {
            for _ in 0..8 {
                scope.spawn(|| {
                    start.wait();
                    let built = builds.get(BuildKey::Task("t".into(), 0), || {
                        made.fetch_add(1, Ordering::AcqRel);
                        std::thread::sleep(Duration::from_millis(500));
                        Ok(profile())
                    });
                    assert!(built.is_ok());
                });
            }
        });
        assert_eq!(made.load(Ordering::Acquire), 1);
        assert_eq!(
            builds.held.load(Ordering::Acquire),
            0,
            "every permit given back"
        );
    }

    #[test]
    fn a_build_past_the_bound_is_refused_until_a_profile_is_sent() {
        let builds = Builds::default();
        let first = builds.get(BuildKey::Task("a".into(), 0), || Ok(profile()));
        let second = builds.get(BuildKey::Worker(None, None), || Ok(profile()));
        let third = builds.get(BuildKey::Task("c".into(), 0), || Ok(profile()));
        assert!(matches!(third, Err(Refused::Busy)));
        drop(first);
        assert!(builds
            .get(BuildKey::Task("c".into(), 0), || Ok(profile()))
            .is_ok());
        drop(second);
        let failed = builds.get(BuildKey::Task("d".into(), 0), || {
            Err(DaemonError::Request("no".into()))
        });
        assert!(matches!(failed, Err(Refused::Failed(_))));
        assert_eq!(builds.held.load(Ordering::Acquire), 0);
    }
}
