//! Tests of a body as it comes: a length's bytes, chunks decoded, their cap, bad framing.

use super::*;
use std::io::Write;
use std::net::TcpListener;
use std::time::Duration;

/// The body `sent` (after the head) read as `framing`, within `max_bytes`: its bytes, or
/// the error; and whether it was read whole.
fn read_body(sent: &[u8], framing: Framing, max_bytes: usize) -> (io::Result<Vec<u8>>, bool) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (server, _) = listener.accept().unwrap();
    // Part with the head, the rest later: both sources are read.
    let (early, later) = sent.split_at(sent.len() / 3);
    let later = later.to_vec();
    let writer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(20));
        client.write_all(&later).unwrap();
        client
    });
    let deadline = Instant::now() + Duration::from_secs(1);
    let mut body = Body::new(&server, early.to_vec(), framing, max_bytes, deadline);
    let mut bytes = Vec::new();
    let result = body.read_to_end(&mut bytes).map(|_| bytes);
    let whole = body.is_read();
    drop(writer.join().unwrap());
    (result, whole)
}

#[test]
fn a_length_s_bytes_or_the_chunks_decoded_are_the_body_and_nothing_after() {
    let chunks = b"5;name=x\r\nhello\r\n6\r\n world\r\nA\n0123456789\n0\r\nTrailer: t\r\n\r\nEXTRA";
    for (sent, framing, body) in [
        (
            &b"hello worldEXTRA"[..],
            Framing::Length(11),
            &b"hello world"[..],
        ),
        (chunks, Framing::ChunkSize, b"hello world0123456789"),
    ] {
        let (bytes, whole) = read_body(sent, framing, 100);
        assert_eq!(bytes.unwrap(), body, "{framing:?}");
        assert!(whole, "{framing:?}");
    }
}

#[test]
fn chunks_past_the_cap_stop_the_read_naming_it() {
    let sent = b"8\r\n12345678\r\n8\r\n12345678\r\n0\r\n\r\n";
    let (result, whole) = read_body(sent, Framing::ChunkSize, 10);
    let error = result.unwrap_err();
    assert_eq!(Body::too_long(&error), Some(10), "{error}");
    assert!(!whole);
}

#[test]
fn bad_framing_is_an_error_of_its_own_and_a_cut_body_the_client_gone() {
    for sent in [
        &b"zz\r\nhello\r\n0\r\n\r\n"[..],
        b"3\r\nhello\r\n0\r\n\r\n",
        b"\r\n",
    ] {
        let error = read_body(sent, Framing::ChunkSize, 100).0.unwrap_err();
        assert_eq!(
            error.kind(),
            io::ErrorKind::InvalidData,
            "{sent:?}: {error}"
        );
        assert!(Body::bad_chunks(&error), "{sent:?}: {error}");
        assert!(!Body::gone(&error) && Body::too_long(&error).is_none());
    }
    let long_line = vec![b'1'; MAX_CHUNK_LINE as usize + 10];
    let error = read_body(&long_line, Framing::ChunkSize, 100)
        .0
        .unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::InvalidData, "{error}");
    for cut in [&b"5\r\nhel"[..], b"5\r\nhello\r\n", b"abc"] {
        let framing = match cut {
            b"abc" => Framing::Length(10),
            _ => Framing::ChunkSize,
        };
        let error = read_body(cut, framing, 100).0.unwrap_err();
        assert!(Body::gone(&error), "{cut:?}: {error}");
    }
}
