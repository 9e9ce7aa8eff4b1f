//! Reading an HTTP/1.1 response off a raw socket, for the tests that write requests byte by byte.

use std::io::Read;
use std::net::TcpStream;

/// Read exactly one response with a `Content-Length` body (none: empty): (status, head, body).
/// The head is read a byte at a time, so nothing after the response is consumed.
pub fn read_response(s: &mut TcpStream) -> (u16, String, Vec<u8>) {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        let n = s
            .read(&mut byte)
            .expect("a response head before the timeout");
        assert_eq!(
            n,
            1,
            "EOF inside a response head: {:?}",
            String::from_utf8_lossy(&buf)
        );
        buf.push(byte[0]);
    }
    let head = String::from_utf8(buf).unwrap();
    let status = head[9..12].parse().unwrap();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .map_or(0, |v| v.trim().parse().unwrap());
    let mut body = vec![0; length];
    s.read_exact(&mut body).unwrap();
    (status, head, body)
}
