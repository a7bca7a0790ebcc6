//! A log cut at any byte (SPEC.md, "Reading a damaged log"): it reads once its meta and
//! thread lines are whole, the markers read are the first markers of the whole log, and its
//! profile holds no marker the whole log's profile lacks (an interval still open at the cut
//! is closed there, so only its name and start are the whole log's). Logs are made of every
//! kind of line a recorder writes: markers, open intervals and their ends, gaps, batches of
//! marker-file lines with their checkpoints, and the footer.

use proptest::prelude::*;
use serde_json::json;
use tc_profile_finalizer::{compact, read_log, MarkerRef, ENDED_EARLY, LOG_DAMAGE, MARKER_FILES};
use tc_profile_format::marker_file::Problem;
use tc_profile_format::{
    encode_line, meta_line, thread_line, Checkpoint, Dropped, EndReason, FileProgress, Footer, Gap,
    Line, Marker, MetaInfo, OpenInterval,
};

const NAMES: [&str; 4] = ["build", "quote \" and \\", "caf\u{e9}", "tab\tnul\u{0}"];

/// One thing a recorder logs, `after` ms after the one before.
#[derive(Clone, Debug)]
enum Event {
    Instant {
        name: usize,
    },
    Interval {
        name: usize,
        length: u16,
    },
    Begin {
        name: usize,
    },
    /// Ends the interval begun this many begins ago, if it is still open.
    End {
        back: usize,
    },
    Gap {
        length: u16,
        lines: u8,
    },
    /// Marker-file lines, checkpointed or (when the recorder was cut off) not.
    Batch {
        names: Vec<usize>,
        checkpointed: bool,
    },
    Dropped,
}

fn event() -> impl Strategy<Value = (u16, Event)> {
    let name = 0..NAMES.len();
    let event = prop_oneof![
        name.clone().prop_map(|name| Event::Instant { name }),
        (name.clone(), any::<u16>()).prop_map(|(name, length)| Event::Interval { name, length }),
        name.clone().prop_map(|name| Event::Begin { name }),
        (0usize..4).prop_map(|back| Event::End { back }),
        (any::<u16>(), any::<u8>()).prop_map(|(length, lines)| Event::Gap { length, lines }),
        (prop::collection::vec(name, 0..4), any::<bool>()).prop_map(|(names, checkpointed)| {
            Event::Batch {
                names,
                checkpointed,
            }
        }),
        Just(Event::Dropped),
    ];
    (any::<u16>(), event)
}

/// A log of these events, and the length of its meta and thread lines.
fn log(events: &[(u16, Event)], footer: bool) -> (Vec<u8>, usize) {
    let meta = meta_line(&MetaInfo {
        start_time: 1.8e12,
        interval_ms: 100.0,
        sources: vec!["cpu".into()],
        sync_policy: "interval:100ms".into(),
        recorder: "tc-profile properties".into(),
        ..MetaInfo::default()
    });
    let mut bytes = encode_line(&meta);
    bytes.extend(encode_line(&thread_line("properties")));
    let headers = bytes.len();
    let mut time = 0.0;
    let mut begun: Vec<OpenInterval> = Vec::new();
    let mut next_id = 1..;
    let mut lines = Vec::new();
    for (after, event) in events {
        time += f64::from(*after) / 8.0;
        let text = |name: usize| json!({"type": "Text", "text": NAMES[name]});
        match event {
            Event::Instant { name } => lines.push(Line::Marker(
                Marker::instant(NAMES[*name], time).with_data(text(*name)),
            )),
            Event::Interval { name, length } => lines.push(Line::Marker(
                Marker::interval(NAMES[*name], time, time + f64::from(*length)).with_category(2),
            )),
            Event::Begin { name } => {
                let open = OpenInterval {
                    id: next_id.next().unwrap_or_default(),
                    name: NAMES[*name].to_owned(),
                    start_time: time,
                    category: Some(3),
                    data: Some(text(*name)),
                    key: None,
                };
                lines.push(Line::Open(open.clone()));
                begun.push(open);
            }
            Event::End { back } => {
                if let Some(open) = begun.len().checked_sub(back + 1).map(|i| begun.remove(i)) {
                    lines.push(Line::Marker(open.close(time, None)));
                }
            }
            Event::Gap {
                length,
                lines: lost,
            } => lines.push(Line::Gap(Gap {
                start_time: time,
                end_time: time + f64::from(*length),
                lines: u64::from(*lost),
                reason: "No space left on device (os error 28)".into(),
            })),
            Event::Batch {
                names,
                checkpointed,
            } => {
                lines.push(Line::Ingest(Default::default()));
                for name in names {
                    lines.push(Line::Marker(
                        Marker::instant(NAMES[*name], time).with_category(1),
                    ));
                }
                if *checkpointed {
                    let files = vec![FileProgress {
                        name: "1.jsonl".into(),
                        dev: 1,
                        ino: 2,
                        handle: None,
                        offset: time as u64,
                        done: false,
                    }];
                    lines.push(Line::Checkpoint(Checkpoint { files }));
                }
            }
            Event::Dropped => lines.push(Line::Dropped(Dropped {
                file: "1.jsonl".into(),
                problem: Problem::NotJson,
                count: 1,
                bytes: 9,
            })),
        }
    }
    if footer {
        lines.push(Line::Footer(Footer {
            end_time: time + 1.0,
            reason: EndReason::CommandExited,
        }));
    }
    for line in &lines {
        bytes.extend(encode_line(line));
    }
    (bytes, headers)
}

/// A marker as compared: name, start, and (unless it was cut off) end and payload.
fn describe(marker: MarkerRef) -> (String, u64, Option<(Option<u64>, String)>) {
    let data = marker.data.unwrap_or_default();
    let whole = (!data.contains("\"cutOff\""))
        .then(|| (marker.end_time.map(f64::to_bits), data.to_owned()));
    (marker.name.to_owned(), marker.start_time.to_bits(), whole)
}

fn is_note(marker: &MarkerRef) -> bool {
    [ENDED_EARLY, LOG_DAMAGE, MARKER_FILES].contains(&marker.name)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn any_prefix_of_a_log_finalizes_to_a_subset_of_its_markers(
        events in prop::collection::vec(event(), 0..24),
        footer in any::<bool>(),
        cut in any::<prop::sample::Index>(),
    ) {
        let (whole, headers) = log(&events, footer);
        let cut = cut.index(whole.len() + 1);
        let prefix = &whole[..cut];
        let read = read_log(prefix);
        // The thread line is whole without its newline.
        prop_assert_eq!(read.is_ok(), cut + 1 >= headers, "cut at {}", cut);
        let Ok(recording) = read else {
            return Ok(());
        };
        let whole = read_log(whole.as_slice()).expect("the whole log reads");
        let first: Vec<_> = recording.markers.iter().map(describe).collect();
        let all: Vec<_> = whole.markers.iter().map(describe).collect();
        prop_assert_eq!(&first[..], &all[..first.len().min(all.len())], "read in order");

        let (cut_profile, _) = compact(recording);
        let (whole_profile, _) = compact(whole);
        let mut left: Vec<_> = whole_profile.markers().iter().map(describe).collect();
        for marker in cut_profile.markers().iter().filter(|m| !is_note(m)) {
            let (name, start, whole) = describe(marker);
            let found = left.iter().position(|(n, s, w)| {
                (n, s) == (&name, &start) && (whole.is_none() || w == &whole)
            });
            prop_assert!(found.is_some(), "{} at {} not in the whole log's profile", name, marker.start_time);
            left.remove(found.unwrap_or_default());
        }
    }
}
