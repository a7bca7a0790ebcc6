use super::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use tc_profile_format::line_protocol::{parse_line, FieldValue};

fn forwarding() -> Forwarding {
    let shared = Arc::new(Shared {
        queue: Mutex::new(Queue::default()),
        wake: Condvar::new(),
    });
    Forwarding {
        queue: ForwardQueue { shared },
        prefix: "task.".to_owned(),
        task_tags: vec![
            ("task_id".to_owned(), "T1".to_owned()),
            ("run_id".to_owned(), "0".to_owned()),
        ],
    }
}

#[test]
fn a_forwarded_point_is_named_as_its_tracks_stamped_and_tagged_with_the_task() {
    let point = parse_line(
        r#"build\ step,task_id=forged,stage=com\,pile,dir=C:\dir,worker_type=x s=2.5,ok=t,n=3i,u=4u,big=18446744073709551615u,note="a \"b\"" 1700000000"#,
    )
    .unwrap()
    .unwrap();
    let line = forwarding().line(&point, Precision::Seconds, 5).unwrap();
    assert_eq!(
        line,
        "task.build_step,dir=C:_dir,run_id=0,stage=com\\,pile,task_id=T1 s=2.5,ok=true,n=3i,u=4i,big=18446744073709552000,note=\"a \\\"b\\\"\" 1700000000000000000\n"
    );
    // What is forwarded parses back to the same fields, unsigned ones as InfluxDB 1.x has.
    let back = parse_line(line.trim_end()).unwrap().unwrap();
    assert_eq!(back.fields[..3], point.fields[..3]);
    assert_eq!(back.fields[3].1, FieldValue::Integer(4));
    assert_eq!(back.fields[5], point.fields[5]);
}

#[test]
fn a_point_without_a_timestamp_gets_the_time_its_write_arrived() {
    let point = parse_line("m v=1").unwrap().unwrap();
    let line = forwarding()
        .line(&point, Precision::Nanoseconds, 1_700_000_000_123_456_789)
        .unwrap();
    assert_eq!(line, "task.m,run_id=0,task_id=T1 v=1 1700000000123456789\n");
}

#[test]
fn points_past_the_cap_of_unsent_bytes_are_counted_not_queued() {
    let queue = forwarding().queue;
    let line = "x".repeat(1 << 20);
    queue.push(vec![line; 40]);
    let shared = queue.shared.lock();
    assert_eq!(shared.lines.len(), MAX_UNSENT_BYTES >> 20);
    assert_eq!(shared.over_cap, 40 - (MAX_UNSENT_BYTES >> 20) as u64);
    assert!(shared.bytes <= MAX_UNSENT_BYTES);
}

/// A stand-in InfluxDB answering each request with the next status; the bodies it got.
fn fake_influx(statuses: Vec<u16>) -> (InfluxTarget, JoinHandle<Vec<String>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        let mut bodies = Vec::new();
        for status in statuses {
            let (stream, _) = listener.accept().unwrap();
            let mut reader = BufReader::new(stream);
            let mut length = 0;
            loop {
                let mut header = String::new();
                reader.read_line(&mut header).unwrap();
                if header == "\r\n" {
                    break;
                }
                if let Some(value) = header.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = value.trim().parse().unwrap();
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            bodies.push(String::from_utf8(body).unwrap());
            let reply =
                format!("HTTP/1.1 {status} X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
            reader.get_mut().write_all(reply.as_bytes()).unwrap();
        }
        bodies
    });
    (InfluxTarget::new(&url, "ci", None).unwrap(), handle)
}

#[test]
fn a_batch_the_server_could_not_take_is_sent_again_whole_and_in_order() {
    let (target, server) = fake_influx(vec![503, 204]);
    let forwarder = Forwarder::start(target).unwrap();
    let lines: Vec<String> = (0..3).map(|i| format!("m v={i} {i}\n")).collect();
    forwarder.queue().push(lines.clone());
    let stats = forwarder.finish(Duration::from_secs(20));
    assert_eq!((stats.forwarded, stats.undelivered()), (3, 0), "{stats:?}");
    assert_eq!(server.join().unwrap(), [lines.concat(), lines.concat()]);
}

#[test]
fn what_is_unsent_at_the_deadline_is_counted_with_the_reason() {
    // A port that was free a moment ago: nothing listens there.
    let url = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    let forwarder = Forwarder::start(InfluxTarget::new(&url, "ci", None).unwrap()).unwrap();
    forwarder.queue().push(vec!["m v=1 1\n".to_owned(); 7]);
    let stats = forwarder.finish(Duration::from_millis(300));
    assert_eq!((stats.forwarded, stats.unsent), (0, 7), "{stats:?}");
    assert!(stats.last_error.is_some_and(|e| e.contains(&url)));
}

#[test]
fn a_partial_write_counts_only_the_points_influxdb_dropped() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let server = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut head = [0u8; 4096];
        let _ = stream.read(&mut head).unwrap();
        let body = r#"{"error":"partial write: field type conflict dropped=1"}"#;
        let reply = format!(
            "HTTP/1.1 400 Bad Request\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(reply.as_bytes()).unwrap();
    });
    let forwarder = Forwarder::start(InfluxTarget::new(&url, "ci", None).unwrap()).unwrap();
    forwarder
        .queue()
        .push(vec!["m v=1i 1\n".to_owned(), "m v=2 2\n".to_owned()]);
    let stats = forwarder.finish(Duration::from_secs(20));
    server.join().unwrap();
    assert_eq!((stats.forwarded, stats.refused), (1, 1), "{stats:?}");
    assert!(stats
        .last_error
        .is_some_and(|e| e.contains("field type conflict")));
}

#[test]
fn a_final_refusal_drops_the_batch_and_counts_it() {
    let (target, server) = fake_influx(vec![400]);
    let forwarder = Forwarder::start(target).unwrap();
    forwarder.queue().push(vec!["m v=1 1\n".to_owned(); 2]);
    let stats = forwarder.finish(Duration::from_secs(20));
    assert_eq!((stats.forwarded, stats.refused), (0, 2), "{stats:?}");
    assert_eq!(server.join().unwrap().len(), 1);
}
