//! HTTP/1.1 as ddwire uses it: plain request and response structs, one handler type, and
//! three ways to move them: a tiny_http server ([`server`]), a ureq client ([`client`]), and an
//! in-memory transport ([`memory`]) that carries real HTTP/1.1 bytes, parsed with httparse,
//! through the very same handler without a socket.
//!
//! Responses are always written by [`write_response`] (RFC 9112 §6–7: `Content-Length`
//! framing, or chunked transfer coding for a stream), on a socket and in memory alike, so
//! both paths put identical bytes on the wire and a Server-Sent Events stream is flushed event
//! by event.

pub mod client;
pub mod memory;
pub mod server;

use crossbeam_channel::Receiver;
use std::io::{self, Write};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// One HTTP request, as a handler sees it.
#[derive(Clone, Debug, Default)]
pub struct Request {
    /// Upper-case method (`GET`, `POST`, ...).
    pub method: String,
    /// The path, without the query string.
    pub path: String,
    /// The raw query string, without `?`.
    pub query: String,
    /// Header fields in arrival order, names lower-cased.
    pub headers: Vec<(String, String)>,
    /// The body, read in full within [`Limits::max_body_bytes`].
    pub body: Vec<u8>,
    /// Set when the body could not be read within the limits; `body` is then empty and the
    /// handler answers with the reason (the A2A endpoint as a JSON-RPC error).
    pub body_error: Option<BodyError>,
    /// The peer, when there is a socket.
    pub remote_addr: Option<SocketAddr>,
}

impl Request {
    /// The first value of a header, by case-insensitive name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Every value of a header, joined with `", "` as RFC 9110 §5.3 combines repeated fields.
    pub fn header_joined(&self, name: &str) -> Option<String> {
        let values: Vec<&str> = self
            .headers
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .collect();
        (!values.is_empty()).then(|| values.join(", "))
    }
}

/// Why a request body was not read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BodyError {
    /// Larger than the limit (HTTP 413).
    TooLarge { limit: usize },
    /// The peer stopped sending before the body was complete (HTTP 408).
    Timeout,
    /// The framing was broken (HTTP 400).
    Malformed(String),
}

impl BodyError {
    /// The HTTP status that answers this error.
    pub fn status(&self) -> u16 {
        match self {
            BodyError::TooLarge { .. } => 413,
            BodyError::Timeout => 408,
            BodyError::Malformed(_) => 400,
        }
    }
}

impl std::fmt::Display for BodyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BodyError::TooLarge { limit } => {
                write!(f, "request body exceeds the limit of {limit} bytes")
            }
            BodyError::Timeout => f.write_str("timed out reading the request body"),
            BodyError::Malformed(m) => write!(f, "malformed request body: {m}"),
        }
    }
}

/// One HTTP response.
pub struct Response {
    pub status: u16,
    /// Header fields to send; `Content-Length` or `Transfer-Encoding` are added by the writer.
    pub headers: Vec<(String, String)>,
    pub body: Body,
}

/// A response body: bytes, or a stream of chunks that ends when the sender is dropped.
pub enum Body {
    Bytes(Vec<u8>),
    Stream(Receiver<Vec<u8>>),
}

impl Response {
    /// A response with a byte body and a content type.
    pub fn bytes(status: u16, content_type: &str, body: Vec<u8>) -> Response {
        Response {
            status,
            headers: vec![("Content-Type".into(), content_type.into())],
            body: Body::Bytes(body),
        }
    }

    /// `application/json`.
    pub fn json(status: u16, body: &serde_json::Value) -> Response {
        Response::bytes(status, "application/json", body.to_string().into_bytes())
    }

    /// `{"error": message}` as JSON, the shape of every plain-route error.
    pub fn error(status: u16, message: &str) -> Response {
        Response::json(status, &serde_json::json!({ "error": message }))
    }

    /// No body (e.g. 204 for a JSON-RPC notification).
    pub fn empty(status: u16) -> Response {
        Response {
            status,
            headers: Vec::new(),
            body: Body::Bytes(Vec::new()),
        }
    }

    /// A streamed body (Server-Sent Events), sent chunk by chunk as they arrive.
    pub fn stream(status: u16, content_type: &str, chunks: Receiver<Vec<u8>>) -> Response {
        Response {
            status,
            headers: vec![("Content-Type".into(), content_type.into())],
            body: Body::Stream(chunks),
        }
    }

    /// Add a header.
    pub fn with_header(mut self, name: &str, value: &str) -> Response {
        self.headers.push((name.into(), value.into()));
        self
    }
}

/// Everything that answers requests: a plain function, shared by every transport.
pub type Handler = Arc<dyn Fn(Request) -> Response + Send + Sync>;

/// Explicit limits on what a peer may send. Each breach gets its own clear answer.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Largest request body (HTTP 413 beyond it). Default 4 MiB.
    pub max_body_bytes: usize,
    /// Largest request head: request line plus header fields (HTTP 431 beyond it). 16 KiB.
    pub max_header_bytes: usize,
    /// Most header fields in one request (HTTP 431 beyond it). 64.
    pub max_headers: usize,
    /// How long a socket read may wait before the peer counts as gone (HTTP 408 for a
    /// body; a connection idle this long between requests is closed). 30 s.
    pub read_timeout: Duration,
    /// How long a socket write may wait on a peer that does not read. 30 s.
    pub write_timeout: Duration,
}

impl Limits {
    /// The defaults documented on each field.
    pub const DEFAULT: Limits = Limits {
        max_body_bytes: 4 * 1024 * 1024,
        max_header_bytes: 16 * 1024,
        max_headers: 64,
        read_timeout: Duration::from_secs(30),
        write_timeout: Duration::from_secs(30),
    };
}

impl Default for Limits {
    fn default() -> Self {
        Limits::DEFAULT
    }
}

/// The reason phrase of a status code (RFC 9110 §15).
pub fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        413 => "Content Too Large",
        415 => "Unsupported Media Type",
        422 => "Unprocessable Content",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        505 => "HTTP Version Not Supported",
        _ => "",
    }
}

/// Write `response` as HTTP/1.1 (or 1.0) bytes: status line, headers, then the body framed by
/// `Content-Length`, or for a stream by chunked transfer coding (RFC 9112 §7.1) with a flush
/// after every chunk, so each Server-Sent Event reaches the peer when it is sent. An HTTP/1.0
/// peer gets a stream delimited by closing the connection (`keep_alive` must then be false).
///
/// `head_only` leaves the body out (a `HEAD` request, RFC 9110 §9.3.2).
pub fn write_response(
    out: &mut dyn Write,
    response: Response,
    http10: bool,
    keep_alive: bool,
    head_only: bool,
) -> io::Result<()> {
    let mut head = format!(
        "HTTP/1.{} {} {}\r\n",
        if http10 { 0 } else { 1 },
        response.status,
        reason(response.status)
    );
    for (name, value) in &response.headers {
        // A header value with a line break would smuggle a header of its own.
        if name.contains(['\r', '\n', ':']) || value.contains(['\r', '\n']) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "header with a line break",
            ));
        }
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    let no_body = head_only || response.status == 204 || response.status == 304;
    match &response.body {
        Body::Bytes(bytes) if response.status != 204 => {
            head.push_str(&format!("Content-Length: {}\r\n", bytes.len()))
        }
        Body::Bytes(_) => {}
        Body::Stream(_) if !http10 => head.push_str("Transfer-Encoding: chunked\r\n"),
        Body::Stream(_) => {}
    }
    head.push_str(if keep_alive {
        ""
    } else {
        "Connection: close\r\n"
    });
    head.push_str("\r\n");
    match response.body {
        Body::Bytes(bytes) => {
            // One write for head and body: two small writes would meet Nagle's algorithm and
            // the peer's delayed ACK, and cost 40 ms a response.
            let mut all = head.into_bytes();
            if !no_body {
                all.extend_from_slice(&bytes);
            }
            out.write_all(&all)?;
            out.flush()
        }
        Body::Stream(chunks) => {
            out.write_all(head.as_bytes())?;
            out.flush()?;
            for chunk in chunks.iter().filter(|c| !c.is_empty()) {
                if no_body {
                    continue;
                }
                if http10 {
                    out.write_all(&chunk)?;
                } else {
                    let mut frame = format!("{:x}\r\n", chunk.len()).into_bytes();
                    frame.extend_from_slice(&chunk);
                    frame.extend_from_slice(b"\r\n");
                    out.write_all(&frame)?;
                }
                out.flush()?;
            }
            if !http10 && !no_body {
                out.write_all(b"0\r\n\r\n")?;
            }
            out.flush()
        }
    }
}

/// Split `path?query`.
pub fn split_target(target: &str) -> (String, String) {
    match target.split_once('?') {
        Some((p, q)) => (p.to_string(), q.to_string()),
        None => (target.to_string(), String::new()),
    }
}

/// Whether the request asks to close the connection after this response.
pub fn wants_close(http10: bool, connection: Option<&str>) -> bool {
    let tokens = connection.unwrap_or("").to_ascii_lowercase();
    if http10 {
        !tokens.contains("keep-alive")
    } else {
        tokens.split(',').any(|t| t.trim() == "close")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_byte_body_is_framed_by_content_length() {
        let mut out = Vec::new();
        write_response(
            &mut out,
            Response::bytes(200, "text/plain", b"hi".to_vec()),
            false,
            true,
            false,
        )
        .unwrap();
        assert_eq!(
            out,
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nhi"
        );
    }

    #[test]
    fn a_stream_is_sent_in_chunks_and_terminated() {
        let (tx, rx) = crossbeam_channel::unbounded();
        tx.send(b"data: 1\n\n".to_vec()).unwrap();
        tx.send(b"data: 22\n\n".to_vec()).unwrap();
        drop(tx);
        let mut out = Vec::new();
        write_response(
            &mut out,
            Response::stream(200, "text/event-stream", rx),
            false,
            false,
            false,
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n\
             9\r\ndata: 1\n\n\r\na\r\ndata: 22\n\n\r\n0\r\n\r\n"
        );
    }

    #[test]
    fn a_header_value_with_a_line_break_is_refused() {
        let mut out = Vec::new();
        let r = Response::empty(200).with_header("X", "a\r\nInjected: 1");
        assert!(write_response(&mut out, r, false, true, false).is_err());
        assert!(out.is_empty());
    }

    #[test]
    fn no_content_has_no_length_and_no_body() {
        let mut out = Vec::new();
        write_response(&mut out, Response::empty(204), false, true, false).unwrap();
        assert_eq!(out, b"HTTP/1.1 204 No Content\r\n\r\n");
    }
}
