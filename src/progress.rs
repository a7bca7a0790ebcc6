//! A progress bar while a large log or profile is read, on a terminal only: nothing is
//! drawn when stderr is a pipe or a file.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::path::Path;
use std::sync::Arc;
use tc_profile_finalizer::ProgressFn;

/// Inputs smaller than this read in about a second or less: no bar.
const LARGE_INPUT: u64 = 32 << 20;

/// The bar of one read; cleared when dropped.
pub struct Reading {
    bar: Option<ProgressBar>,
    then: &'static str,
}

impl Reading {
    /// A bar for reading `path`; once it is read, the bar says `then` (what comes next).
    pub fn start(path: &Path, then: &'static str) -> Reading {
        let size = std::fs::metadata(path).map_or(0, |m| m.len());
        let bar = (size >= LARGE_INPUT && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::with_draw_target(Some(size), ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template("{msg} [{bar:40}] {bytes}/{total_bytes} ({eta})")
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
            );
            bar.set_message(format!("reading {}", path.display()));
            bar
        });
        Reading { bar, then }
    }

    /// What the finalizer calls as it reads.
    pub fn callback(&self) -> Option<Arc<ProgressFn>> {
        let bar = self.bar.clone()?;
        let then = self.then;
        Some(Arc::new(move |read, size| {
            bar.set_position(read);
            if read >= size {
                bar.set_message(then);
            }
        }))
    }
}

impl Drop for Reading {
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
