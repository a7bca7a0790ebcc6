//! A progress line while a large log or profile is read, on a terminal only: nothing is
//! drawn when stderr is a pipe or a file. Drawn here rather than with a progress-bar crate:
//! the one we used was the only user of libm, whose loading alone kept 300 KB of the
//! recorder resident.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tc_profile_finalizer::ProgressFn;

/// Inputs smaller than this read in about a second or less: no line.
const LARGE_INPUT: u64 = 32 << 20;
/// How often the line is redrawn at most.
const REDRAW: Duration = Duration::from_millis(100);

/// The progress line of one read; cleared when dropped.
pub struct Reading {
    line: Option<Arc<Line>>,
}

struct Line {
    message: String,
    then: &'static str,
    started: Instant,
    drawn: Mutex<Drawn>,
}

/// What the line last said.
enum Drawn {
    Nothing,
    ProgressAt(Instant),
    Then,
}

impl Reading {
    /// A line for reading `path`; once it is read, the line says `then` (what comes next).
    pub fn start(path: &Path, then: &'static str) -> Reading {
        let size = std::fs::metadata(path).map_or(0, |m| m.len());
        let line = (size >= LARGE_INPUT && std::io::stderr().is_terminal()).then(|| {
            Arc::new(Line {
                message: format!("reading {}", path.display()),
                then,
                started: Instant::now(),
                drawn: Mutex::new(Drawn::Nothing),
            })
        });
        Reading { line }
    }

    /// What the finalizer calls as it reads.
    pub fn callback(&self) -> Option<Arc<ProgressFn>> {
        let line = self.line.clone()?;
        Some(Arc::new(move |read, size| line.draw(read, size)))
    }
}

impl Line {
    fn draw(&self, read: u64, size: u64) {
        let Ok(mut drawn) = self.drawn.lock() else {
            return;
        };
        let now = Instant::now();
        let done = read >= size;
        match *drawn {
            // A log still growing is read past its size: `then` is said once.
            Drawn::Then => return,
            Drawn::ProgressAt(at) if !done && now - at < REDRAW => return,
            _ => {}
        }
        *drawn = match done {
            true => Drawn::Then,
            false => Drawn::ProgressAt(now),
        };
        let text = match done {
            true => self.then.to_string(),
            false => self.progress(read, size, now - self.started),
        };
        // Progress is a courtesy: a failed write to the terminal is not an error.
        let _ = write!(std::io::stderr(), "\r\x1b[2K{text}");
    }

    /// "reading big.jsonl: 41% of 1.2 GB, 6 s left" (or of 120 MB).
    fn progress(&self, read: u64, size: u64, elapsed: Duration) -> String {
        let percent = read * 100 / size.max(1);
        let left = match read {
            0 => String::new(),
            _ => {
                let seconds = elapsed.as_secs_f64() * (size - read) as f64 / read as f64;
                format!(", {seconds:.0} s left")
            }
        };
        let size = match size {
            ..1_000_000_000 => format!("{} MB", size / 1_000_000),
            _ => format!("{:.1} GB", size as f64 / 1e9),
        };
        format!("{}: {percent}% of {size}{left}", self.message)
    }
}

impl Drop for Reading {
    fn drop(&mut self) {
        if self.line.is_some() {
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
        }
    }
}
