use super::*;

const HEADERS: &str =
    "{\"type\":\"meta\",\"startTime\":1000}\n{\"type\":\"thread\",\"name\":\"t\"}\n";
const A: &str = "{\"type\":\"marker\",\"name\":\"a\",\"startTime\":1,\"endTime\":null}\n";
const B: &str = "{\"type\":\"marker\",\"name\":\"b\",\"startTime\":2,\"endTime\":3}\n";

fn read(tail: &[u8]) -> Recording {
    let mut bytes = HEADERS.as_bytes().to_vec();
    bytes.extend_from_slice(tail);
    read_log(bytes.as_slice()).unwrap()
}

fn names(recording: &Recording) -> Vec<&str> {
    recording.markers.iter().map(|m| m.name).collect()
}

#[test]
fn truncated_last_line_is_dropped_as_a_torn_tail() {
    let torn = &B.as_bytes()[..20];
    let recording = read(&[A.as_bytes(), torn].concat());
    assert_eq!(names(&recording), ["a"]);
    assert_eq!(recording.damage.by_reason[&DropReason::TornTail], (1, 20));
}

#[test]
fn whole_last_line_without_newline_is_kept() {
    let recording = read(B.trim_end().as_bytes());
    assert_eq!(names(&recording), ["b"]);
    assert!(recording.damage.is_empty());
}

#[test]
fn nul_filled_tail_is_dropped() {
    let recording = read(&[A.as_bytes(), &[0u8; 4096]].concat());
    assert_eq!(names(&recording), ["a"]);
    assert_eq!(recording.damage.by_reason[&DropReason::NulBytes], (1, 4096));
}

#[test]
fn line_appended_after_nul_blocks_is_recovered() {
    let recording = read(&[A.as_bytes(), &[0u8; 512], B.as_bytes()].concat());
    assert_eq!(names(&recording), ["a", "b"]);
    assert_eq!(recording.damage.bytes(), 512);
}

#[test]
fn garbage_in_the_middle_is_skipped_and_reading_resumes() {
    let recording = read(
        format!("{A}not json at all\n{{\"type\":\"marker\",\"startTime\":1}}\n{B}").as_bytes(),
    );
    assert_eq!(names(&recording), ["a", "b"]);
    assert_eq!(recording.damage.by_reason[&DropReason::NotJson], (1, 16));
    assert_eq!(recording.damage.by_reason[&DropReason::BadShape].0, 1);
}

#[test]
fn repeated_headers_are_dropped_not_obeyed() {
    let recording = read(format!("{A}{HEADERS}{B}").as_bytes());
    assert_eq!(names(&recording), ["a", "b"]);
    assert_eq!(recording.damage.by_reason[&DropReason::ExtraHeader].0, 2);
    assert_eq!(recording.meta["startTime"], 1000);
}

#[test]
fn open_interval_is_removed_when_its_marker_arrives() {
    let open = "{\"type\":\"open\",\"id\":4,\"name\":\"x\",\"startTime\":5}\n";
    let close = "{\"type\":\"marker\",\"name\":\"x\",\"startTime\":5,\"endTime\":9,\"openId\":4}\n";
    assert_eq!(read(open.as_bytes()).open.len(), 1);
    let recording = read(format!("{open}{close}").as_bytes());
    assert!(recording.open.is_empty());
    assert_eq!(recording.last_time, 9.0);
}

#[test]
fn a_log_without_its_thread_line_is_refused() {
    let meta_only = b"{\"type\":\"meta\",\"startTime\":1}\n";
    assert!(matches!(read_log(&meta_only[..]), Err(ReadError::NoThread)));
    assert!(matches!(read_log(&b""[..]), Err(ReadError::Empty)));
    assert!(matches!(
        read_log(&b"{\"type\":\"meta\",\"x\n"[..]),
        Err(ReadError::BadMeta)
    ));
}

/// A marker line of `length` bytes, newline excluded.
fn marker_of_length(length: usize) -> String {
    let head = "{\"type\":\"marker\",\"name\":\"long\",\"startTime\":3,\"data\":{\"text\":\"";
    let tail = "\"}}";
    format!(
        "{head}{}{tail}",
        "x".repeat(length - head.len() - tail.len())
    )
}

#[test]
fn a_line_over_the_cap_is_dropped_and_counted_and_one_at_it_is_kept() {
    let kept = marker_of_length(LINE_MAX);
    let dropped = marker_of_length(LINE_MAX + 1);
    let recording = read(format!("{A}{kept}\n{dropped}\n{B}").as_bytes());
    assert_eq!(names(&recording), ["a", "long", "b"]);
    let too_long = recording.damage.by_reason[&DropReason::TooLong];
    assert_eq!(too_long, (1, LINE_MAX as u64 + 2));
    assert_eq!(recording.damage.lines(), 1);
}

#[test]
fn a_line_over_the_cap_is_dropped_whatever_the_chunk_size() {
    let dropped = marker_of_length(LINE_MAX + 1000);
    let log = format!("{HEADERS}{A}{dropped}\n{B}");
    for chunk_bytes in [16, 999, pipeline::CHUNK_BYTES, LINE_MAX] {
        let recording = read_log_in_chunks(log.as_bytes(), chunk_bytes).unwrap();
        assert_eq!(names(&recording), ["a", "b"], "{chunk_bytes}");
        let too_long = recording.damage.by_reason[&DropReason::TooLong];
        assert_eq!(too_long, (1, LINE_MAX as u64 + 1001), "{chunk_bytes}");
    }
}

#[test]
fn a_line_over_the_cap_without_newline_is_skipped_to_the_end() {
    let mut tail = A.as_bytes().to_vec();
    tail.resize(A.len() + 3 * LINE_MAX, 0);
    let recording = read(&tail);
    assert_eq!(names(&recording), ["a"]);
    assert_eq!(
        recording.damage.by_reason[&DropReason::TooLong],
        (1, 3 * LINE_MAX as u64)
    );
}

#[test]
fn a_header_line_over_the_cap_is_refused() {
    let meta = format!("{{\"type\":\"meta\",\"x\":\"{}\"}}\n", "y".repeat(LINE_MAX));
    let log = format!("{meta}{HEADERS}");
    assert!(matches!(
        read_log(log.as_bytes()),
        Err(ReadError::LongHeader)
    ));
}

#[test]
fn a_marker_whose_data_the_front_end_refuses_is_dropped_and_counted() {
    let bad = ["[1]", "5", "\"s\"", "{\"type\":5}"].map(|data| {
        format!("{{\"type\":\"marker\",\"name\":\"x\",\"startTime\":1,\"data\":{data}}}\n")
    });
    let recording = read(format!("{A}{}{B}", bad.concat()).as_bytes());
    assert_eq!(names(&recording), ["a", "b"]);
    assert_eq!(recording.damage.by_reason[&DropReason::BadShape].0, 4);
}

/// Lines of every kind a log holds, damaged ones too; a few are longer than a small chunk.
const PIECES: &[&str] = &[
    A,
    B,
    "{\"type\":\"marker\",\"name\":\"e\\\"sc\",\"startTime\":4,\"data\":{\"type\":\"Text\",\"text\":\"a long payload, longer than a chunk of sixty-four bytes\"}}\n",
    "{\"type\":\"marker\",\"name\":\"q\",\"startTime\":5.25,\"endTime\":6,\"openId\":3,\"category\":1}\n",
    "{\"type\":\"open\",\"id\":3,\"name\":\"q\",\"startTime\":5}\n",
    "{\"type\":\"ingest\"}\n",
    "{\"type\":\"ingest\",\"taskLog\":true}\n",
    "{\"type\":\"checkpoint\",\"files\":[]}\n",
    "{\"type\":\"footer\",\"endTime\":12}\n",
    "{\"type\":\"marker\",\"startTime\":1}\n",
    "not json\n",
    "\n",
    "  \n",
    "\0\0\0",
    "\0\0{\"type\":\"marker\",\"name\":\"n\",\"startTime\":7}\n",
    HEADERS,
];

/// All a recording holds, in an order that does not depend on hashing.
fn read_in_chunks(bytes: &[u8], chunk_bytes: usize) -> String {
    let r = read_log_in_chunks(bytes, chunk_bytes).unwrap();
    let markers: Vec<MarkerRef> = r.markers.iter().collect();
    let progress: BTreeMap<_, _> = r.progress.iter().collect();
    format!(
        "{markers:?} {:?} {:?} {:?} {} {:?} {progress:?} {:?} {:?} {:?} {:?} {:?} {}",
        r.open,
        r.footer,
        r.gaps,
        r.last_time,
        r.damage,
        r.closes,
        r.schemas,
        r.problems,
        r.unfinished_batch,
        r.unfinished_task_log_batch,
        r.max_open_id
    )
}

proptest::proptest! {
    // Long enough, and in chunks small enough, that most logs pass the chunks decoded
    // before the second thread starts.
    #[test]
    fn a_log_read_in_chunks_on_two_threads_reads_as_in_one(
        picked in proptest::collection::vec(0..PIECES.len(), 0..240),
        cut in 0.0..1.0f64,
        chunk_bytes in 1..120usize,
    ) {
        let mut bytes = HEADERS.as_bytes().to_vec();
        let tail: String = picked.iter().map(|&i| PIECES[i]).collect();
        bytes.extend_from_slice(&tail.as_bytes()[..(tail.len() as f64 * cut) as usize]);
        let whole = read_in_chunks(&bytes, bytes.len() + 1);
        proptest::prop_assert_eq!(read_in_chunks(&bytes, chunk_bytes), whole);
    }
}

#[test]
fn a_batch_cut_across_chunks_waits_for_its_checkpoint() {
    let batch = format!("{{\"type\":\"ingest\"}}\n{A}{B}");
    let mut bytes = format!("{HEADERS}{batch}").into_bytes();
    let unfinished = read_log_in_chunks(bytes.as_slice(), 16).unwrap();
    assert!(unfinished.markers.is_empty());
    assert_eq!(
        unfinished.unfinished_batch.map(|reads| reads.len()),
        Some(2)
    );
    bytes.extend_from_slice(b"{\"type\":\"checkpoint\",\"files\":[]}\n");
    let checkpointed = read_log_in_chunks(bytes.as_slice(), 16).unwrap();
    assert_eq!(names(&checkpointed), ["a", "b"]);
}

#[test]
fn a_line_that_is_not_utf8_is_dropped_alone_and_its_chunk_read_line_by_line() {
    let accented = "{\"type\":\"marker\",\"name\":\"caf\u{e9}\",\"startTime\":4}\n";
    let not_utf8 = b"{\"type\":\"marker\",\"name\":\"\xff\",\"startTime\":3}\n";
    let whole = read(format!("{A}{accented}").as_bytes());
    assert_eq!(names(&whole), ["a", "caf\u{e9}"]);
    let recording = read(&[A.as_bytes(), not_utf8, accented.as_bytes(), B.as_bytes()].concat());
    assert_eq!(names(&recording), ["a", "caf\u{e9}", "b"]);
    // serde_json reads past the byte, to refuse it: a line of JSON's shape.
    assert_eq!(recording.damage.by_reason[&DropReason::BadShape], (1, 43));
}
