//! A loopback InfluxDB stand-in for the client's test and bench: it answers every write 204
//! on a keep-alive connection and reports how many requests each connection carried.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::thread::JoinHandle;

/// Listens on a free loopback port: its URL, and a thread that serves until `requests` were
/// answered and returns the requests carried by each connection, in order.
pub fn serve(requests: u32) -> (String, JoinHandle<Vec<u32>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    let url = format!("http://{}", listener.local_addr().expect("its address"));
    let server = std::thread::spawn(move || {
        let mut requests_by_connection = Vec::new();
        for stream in listener.incoming() {
            requests_by_connection.push(answer_all(stream.expect("accept")));
            if requests_by_connection.iter().sum::<u32>() >= requests {
                break;
            }
        }
        requests_by_connection
    });
    (url, server)
}

/// Answers the requests of one connection until the client closes it: how many.
fn answer_all(stream: TcpStream) -> u32 {
    let mut reader = BufReader::new(stream.try_clone().expect("clone a stream"));
    let mut writer = stream;
    let mut requests = 0;
    loop {
        let mut length = 0;
        let mut line = String::new();
        while reader.read_line(&mut line).unwrap_or(0) > 0 && line != "\r\n" {
            let lower = line.to_ascii_lowercase();
            if let Some(value) = lower.strip_prefix("content-length:") {
                length = value.trim().parse().expect("a length");
            }
            line.clear();
        }
        if line != "\r\n" {
            return requests; // the client closed the connection
        }
        reader.read_exact(&mut vec![0; length]).expect("the body");
        writer
            .write_all(b"HTTP/1.1 204 No Content\r\n\r\n")
            .expect("answer");
        requests += 1;
    }
}
