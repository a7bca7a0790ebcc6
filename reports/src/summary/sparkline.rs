//! Sparklines: a track drawn as one line of block characters, one per stretch of the
//! recording.

use crate::summary::tracks::{overlapping, Sample};

/// Characters in a sparkline.
const SPARKLINE_WIDTH: usize = 48;
const SPARK_LEVELS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

#[derive(Clone, Copy)]
pub(super) enum Aggregate {
    Mean,
    Max,
}

/// The samples in [`SPARKLINE_WIDTH`] equal stretches of `[start, end]`, each drawn against
/// `scale` (the top block); a stretch without samples is a space.
pub(super) fn sparkline(
    samples: &[Sample],
    start: f64,
    end: f64,
    scale: Option<f64>,
    aggregate: Aggregate,
) -> Option<String> {
    let scale = scale.filter(|s| *s > 0.0)?;
    if samples.is_empty() || end <= start {
        return None;
    }
    let width = (end - start) / SPARKLINE_WIDTH as f64;
    let line = (0..SPARKLINE_WIDTH)
        .map(|i| {
            let (from, to) = (start + i as f64 * width, start + (i + 1) as f64 * width);
            let inside: Vec<(Sample, f64)> = overlapping(samples, from, to).collect();
            let weight: f64 = inside.iter().map(|(_, w)| w).sum();
            if inside.is_empty() {
                return ' ';
            }
            let value = match aggregate {
                Aggregate::Mean => inside.iter().map(|(s, w)| s.value * w).sum::<f64>() / weight,
                Aggregate::Max => inside.iter().map(|(s, _)| s.peak).fold(0.0, f64::max),
            };
            let level = ((value / scale) * SPARK_LEVELS.len() as f64).floor() as usize;
            SPARK_LEVELS[level.min(SPARK_LEVELS.len() - 1)]
        })
        .collect();
    Some(line)
}
