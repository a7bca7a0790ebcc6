//! A span's profile holds one machine log's lines at a time, however many logs the span
//! has (the daemon's 10-minute segments: six for a 1-hour task), and their payloads' text
//! once: each log's is taken over by the profile, not copied. Counted in bytes held on
//! the heap, by an allocator that counts them, not timed: what building the profile holds
//! beyond the profile it returns grows with the segments only by the profile's own columns
//! being built, not by their lines. And bounding a log's long track holds little beyond
//! the log's columns: only the track's samples are taken out, and as positions.
//!
//! The test binary's only tests: the allocator counts every thread's bytes.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use tc_profile_finalizer::{
    compact, compact_span, read_log, Span, SpanLogs, MAX_SAMPLES_PER_TRACK,
};

struct Counting;

static HELD: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed on to the system allocator unchanged; only sizes are counted.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let held = HELD.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(held, Ordering::Relaxed);
        // SAFETY: the caller's layout, as GlobalAlloc::alloc requires.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        HELD.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` came from `alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const SEGMENT_MS: f64 = 200_000.0;
const SAMPLES_PER_SEGMENT: usize = 2000;

/// A machine log of `SEGMENT_MS` from `start` (epoch ms): a sample every 100 ms, each with
/// 200 bytes of payload text, as a segment's samples hold theirs.
fn segment(start: f64) -> Vec<u8> {
    let mut text = format!(
        r#"{{"type":"meta","startTime":{start},"interval":100,"markerSchema":[],"tcProfile":{{"sources":["m"]}}}}"#
    );
    text.push_str("\n{\"type\":\"thread\",\"name\":\"machine\"}\n");
    let payload = "x".repeat(200);
    for sample in 0..SAMPLES_PER_SEGMENT {
        let begins = sample as f64 * 100.0;
        text.push_str(&format!(
            r#"{{"type":"marker","name":"sample","startTime":{begins},"endTime":{},"data":{{"type":"Text","text":"{payload}{sample}"}}}}"#,
            begins + 100.0
        ));
        text.push('\n');
    }
    text.into_bytes()
}

/// Bytes held at the peak of building the profile of `segments` consecutive logs, beyond
/// the profile built; each log read only when it is taken.
fn held_beyond_profile(segments: usize) -> usize {
    let span = Span {
        start: 0.0,
        end: segments as f64 * SEGMENT_MS,
    };
    let read = |index: usize| read_log(segment(index as f64 * SEGMENT_MS).as_slice());
    let before = HELD.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let profile = compact_span(SpanLogs::default(), (0..segments).map(read), span).unwrap();
    assert_eq!(profile.markers().len(), segments * SAMPLES_PER_SEGMENT);
    let peak = PEAK.load(Ordering::Relaxed);
    let after = HELD.load(Ordering::Relaxed);
    drop(profile);
    peak - after
}

/// A log of one memory track of `samples` samples 100 ms apart, with its graph's schema.
fn memory_track(samples: usize) -> Vec<u8> {
    let schema = r#"{"name":"Mem","display":[],"data":[],"graphs":[{"key":"used","type":"bar","color":"orange"}]}"#;
    let mut text = format!(
        r#"{{"type":"meta","startTime":0,"interval":100,"markerSchema":[{schema}],"tcProfile":{{"sources":["memory"]}}}}"#
    );
    text.push_str("\n{\"type\":\"thread\",\"name\":\"machine\"}\n");
    for sample in 0..samples {
        let (begins, used) = (sample as f64 * 100.0, 1_000_000 + sample);
        text.push_str(&format!(
            r#"{{"type":"marker","name":"Memory","startTime":{begins},"endTime":{},"data":{{"type":"Mem","used":{used},"available":{used},"cached":{used}}}}}"#,
            begins + 100.0
        ));
        text.push('\n');
    }
    text.into_bytes()
}

/// Bytes the log of a track 1.5 times the bound holds once read, and bytes held at the
/// peak of compacting it (its track merged) beyond them.
fn bounding_a_long_track() -> (usize, usize) {
    let text = memory_track(MAX_SAMPLES_PER_TRACK * 3 / 2);
    let before = HELD.load(Ordering::Relaxed);
    let recording = read_log(text.as_slice()).unwrap();
    let read = HELD.load(Ordering::Relaxed);
    PEAK.store(read, Ordering::Relaxed);
    let (profile, compaction) = compact(recording);
    assert_eq!(compaction.merged_samples, MAX_SAMPLES_PER_TRACK * 3 / 2);
    let peak = PEAK.load(Ordering::Relaxed);
    drop(profile);
    (read - before, peak - read)
}

fn main() {
    let (log, bounding) = bounding_a_long_track();
    println!("bounding a long track: {bounding} bytes beyond the {log} of its log");
    // Its merged samples and the columns they go back into, under twice the log's: every
    // marker taken out as an owned one, and the merged samples held as parsed ones until
    // the last was made, held 22 MB beyond this 3 MB log (4.9 MB now).
    assert!(bounding < 2 * log, "{bounding} bytes held, the log {log}");

    let one_segment = segment(0.0).len();
    let few = held_beyond_profile(2);
    let many = held_beyond_profile(8);
    println!(
        "held beyond the profile: {few} bytes for 2 segments, {many} for 8 (a segment is \
         {one_segment} bytes of text)"
    );
    // Each segment more adds to the peak only the profile's own columns being built (a
    // vector's old buffer while it grows): its text is the profile's. Copied into the
    // profile, the last segment's was held twice at the end: 140 KB more a segment.
    let per_segment = (many.saturating_sub(few)) / 6;
    assert!(
        per_segment < one_segment / 10,
        "{per_segment} bytes a segment"
    );
}
