//! Writing messages: the one response writer every transport uses, and the bytes of a
//! request for the in-memory transport and the load generator (RFC 9112 §4–§7).
//!
//! A byte body goes out with its head in one vectored write (two small writes would meet
//! Nagle's algorithm and the peer's delayed ACK); a stream goes out with chunked transfer
//! coding and a flush after every chunk, so each Server-Sent Event reaches the peer when it is
//! sent. The writer owns the framing fields (`Content-Length`, `Transfer-Encoding`,
//! `Connection`, `Date`): a handler that sets one of the first two gets an error, never two
//! conflicting lengths on the wire.

use super::head::{RequestHead, Version};
use super::{Body, Response};
use std::cell::RefCell;
use std::io::{self, IoSlice, Write};

/// How a response is framed for the request it answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Framing {
    /// The request was HTTP/1.0: a stream is delimited by closing, not chunked.
    pub(crate) http10: bool,
    /// The connection stays open after this response (`Connection: close` otherwise; for
    /// HTTP/1.0, `Connection: keep-alive` when it stays).
    pub(crate) keep_alive: bool,
    /// A `HEAD` request: the head a `GET` would get, without the body (RFC 9110 §9.3.2).
    pub(crate) head_only: bool,
}

impl Framing {
    /// An HTTP/1.1 response with its body, closing the connection.
    pub(crate) const CLOSE: Framing = Framing {
        http10: false,
        keep_alive: false,
        head_only: false,
    };

    /// The answer to `head`, closing the connection.
    pub(crate) fn closing(head: &RequestHead) -> Framing {
        Framing {
            http10: head.version == Version::Http10,
            keep_alive: false,
            head_only: head.method == "HEAD",
        }
    }
}

/// The reason phrase of a status code (RFC 9110 §15).
pub(crate) fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        301 => "Moved Permanently",
        302 => "Found",
        304 => "Not Modified",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Content Too Large",
        415 => "Unsupported Media Type",
        417 => "Expectation Failed",
        422 => "Unprocessable Content",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        _ => "",
    }
}

/// Whether a handler asked to close the connection after its response (`Connection: close`
/// among its headers).
pub(crate) fn asks_to_close(response: &Response) -> bool {
    response.headers.iter().any(|(k, v)| {
        k.eq_ignore_ascii_case("connection")
            && v.split(',').any(|t| t.trim().eq_ignore_ascii_case("close"))
    })
}

/// Write `response` as HTTP/1.1: status line, header fields, `Date`, the framing, then the
/// body. A header whose name is not a token or whose value holds a control character, or a
/// `Content-Length`/`Transfer-Encoding`/`Date` set by the handler, is refused with
/// `InvalidInput` before a byte is written.
///
/// A stream's chunks are written as they arrive; for `HEAD` the stream is dropped unread.
/// Returns how many bytes of body were written (a stream's chunks without their framing).
pub(crate) fn write_response<W: Write + ?Sized>(
    out: &mut W,
    response: Response,
    framing: Framing,
) -> io::Result<u64> {
    let mut sent = 0;
    write_counted(out, response, framing, &mut sent).map(|()| sent)
}

/// [`write_response`], counting the body bytes written into `sent` as they go, so a response
/// cut short still says how much of it left.
pub(crate) fn write_counted<W: Write + ?Sized>(
    out: &mut W,
    response: Response,
    framing: Framing,
    sent: &mut u64,
) -> io::Result<()> {
    HEAD.with(|scratch| {
        let mut scratch = scratch.try_borrow_mut().ok();
        let mut fresh = Vec::new();
        let head = scratch.as_deref_mut().unwrap_or(&mut fresh);
        head.clear();
        encode_head(&response, framing, head)?;
        let no_body = framing.head_only || response.status == 204 || response.status == 304;
        match response.body {
            Body::Bytes(bytes) => {
                let body: &[u8] = if no_body { &[] } else { &bytes };
                write_all_vectored(out, &mut [IoSlice::new(head), IoSlice::new(body)])?;
                *sent = body.len() as u64;
                out.flush()
            }
            Body::Stream(chunks) => {
                out.write_all(head)?;
                out.flush()?;
                if no_body {
                    return Ok(());
                }
                let mut frame = Vec::new();
                for chunk in chunks.iter().filter(|c| !c.is_empty()) {
                    if framing.http10 {
                        out.write_all(&chunk)?;
                    } else {
                        frame.clear();
                        write!(frame, "{:x}\r\n", chunk.len())?;
                        write_all_vectored(
                            out,
                            &mut [
                                IoSlice::new(&frame),
                                IoSlice::new(&chunk),
                                IoSlice::new(b"\r\n"),
                            ],
                        )?;
                    }
                    *sent += chunk.len() as u64;
                    out.flush()?;
                }
                if !framing.http10 {
                    out.write_all(b"0\r\n\r\n")?;
                }
                out.flush()
            }
        }
    })
}

thread_local! {
    /// The head being written, reused: a connection thread writes one response at a time.
    static HEAD: RefCell<Vec<u8>> = RefCell::new(Vec::with_capacity(512));
    /// `Date` as last formatted, and the second it names.
    static DATE: RefCell<(u64, [u8; 29])> = const { RefCell::new((0, [0; 29])) };
}

fn encode_head(response: &Response, framing: Framing, head: &mut Vec<u8>) -> io::Result<()> {
    let status = response.status;
    if !(100..=999).contains(&status) {
        return Err(invalid("a status code outside 100-999"));
    }
    head.extend_from_slice(b"HTTP/1.1 ");
    push_decimal(head, u64::from(status));
    head.push(b' ');
    head.extend_from_slice(reason(status).as_bytes());
    head.extend_from_slice(b"\r\n");
    for (name, value) in &response.headers {
        if name.is_empty() || !name.bytes().all(super::chunked::is_tchar) {
            return Err(invalid("a header name that is not a token"));
        }
        // A line break in a value would smuggle a header (or a whole response) of its own.
        if value.bytes().any(|b| (b < 0x20 && b != b'\t') || b == 0x7f) {
            return Err(invalid("a header value with a control character"));
        }
        if ["content-length", "transfer-encoding", "date"]
            .iter()
            .any(|owned| name.eq_ignore_ascii_case(owned))
        {
            return Err(invalid("a framing header set by the handler"));
        }
        if name.eq_ignore_ascii_case("connection") {
            continue;
        }
        head.extend_from_slice(name.as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(value.as_bytes());
        head.extend_from_slice(b"\r\n");
    }
    push_date(head);
    match &response.body {
        // RFC 9110 §8.6: no Content-Length on 1xx and 204.
        Body::Bytes(_) if status == 204 || status < 200 => {}
        Body::Bytes(bytes) => {
            head.extend_from_slice(b"Content-Length: ");
            push_decimal(head, bytes.len() as u64);
            head.extend_from_slice(b"\r\n");
        }
        Body::Stream(_) if framing.http10 => {}
        Body::Stream(_) => head.extend_from_slice(b"Transfer-Encoding: chunked\r\n"),
    }
    match (framing.keep_alive, framing.http10) {
        (false, _) => head.extend_from_slice(b"Connection: close\r\n"),
        (true, true) => head.extend_from_slice(b"Connection: keep-alive\r\n"),
        (true, false) => {}
    }
    head.extend_from_slice(b"\r\n");
    Ok(())
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("the response has {what}"),
    )
}

fn push_decimal(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

/// `Date: <IMF-fixdate>` (RFC 9110 §6.6.1, §5.6.7), formatted once a second per thread.
fn push_date(out: &mut Vec<u8>) {
    let now = crate::time::now_ns() / 1_000_000_000;
    DATE.with(|cell| {
        let mut cached = cell.borrow_mut();
        if cached.0 != now || cached.1[0] == 0 {
            let text = crate::time::http_date(now as i64);
            let bytes = text.as_bytes();
            if bytes.len() == 29 {
                cached.1.copy_from_slice(bytes);
                cached.0 = now;
            }
        }
        out.extend_from_slice(b"Date: ");
        out.extend_from_slice(&cached.1);
        out.extend_from_slice(b"\r\n");
    });
}

/// `write_all` over several buffers: one `writev` when the socket takes it all.
fn write_all_vectored<W: Write + ?Sized>(
    out: &mut W,
    mut bufs: &mut [IoSlice<'_>],
) -> io::Result<()> {
    IoSlice::advance_slices(&mut bufs, 0);
    while !bufs.is_empty() {
        match out.write_vectored(bufs) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut bufs, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The HTTP/1.1 bytes of a request: request line, `Host`, the given fields, and
/// `Content-Length` when there is a body or the method carries one.
pub(crate) fn request_bytes(
    method: &str,
    host: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Vec<u8> {
    let mut out = Vec::with_capacity(128 + body.len());
    for part in [method, " ", target, " HTTP/1.1\r\nHost: ", host, "\r\n"] {
        out.extend_from_slice(part.as_bytes());
    }
    for (k, v) in headers {
        for part in [k, ": ", v, "\r\n"] {
            out.extend_from_slice(part.as_bytes());
        }
    }
    if !matches!(method, "GET" | "HEAD") || !body.is_empty() {
        out.extend_from_slice(b"Content-Length: ");
        push_decimal(&mut out, body.len() as u64);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEEP: Framing = Framing {
        http10: false,
        keep_alive: true,
        head_only: false,
    };

    /// The response bytes with the `Date` line taken out (it changes every second).
    fn written(response: Response, framing: Framing) -> String {
        let mut out = Vec::new();
        write_response(&mut out, response, framing).unwrap();
        let text = String::from_utf8(out).unwrap();
        let date = text.find("Date: ").expect("a Date field");
        let end = date + text[date..].find("\r\n").unwrap() + 2;
        assert_eq!(end - date, 37, "{text}");
        format!("{}{}", &text[..date], &text[end..])
    }

    #[test]
    fn a_byte_body_is_framed_by_content_length() {
        assert_eq!(
            written(Response::bytes(200, "text/plain", b"hi".to_vec()), KEEP),
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nhi"
        );
    }

    #[test]
    fn a_stream_is_sent_in_chunks_and_terminated() {
        let (tx, rx) = crossbeam_channel::unbounded();
        tx.send(b"data: 1\n\n".to_vec()).unwrap();
        tx.send(Vec::new()).unwrap();
        tx.send(b"data: 22\n\n".to_vec()).unwrap();
        drop(tx);
        let framing = Framing {
            keep_alive: false,
            ..KEEP
        };
        assert_eq!(
            written(Response::stream(200, "text/event-stream", rx), framing),
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n\
             9\r\ndata: 1\n\n\r\na\r\ndata: 22\n\n\r\n0\r\n\r\n"
        );
    }

    #[test]
    fn an_http_1_0_stream_is_delimited_by_closing() {
        let (tx, rx) = crossbeam_channel::unbounded();
        tx.send(b"data: 1\n\n".to_vec()).unwrap();
        drop(tx);
        let framing = Framing {
            http10: true,
            keep_alive: false,
            head_only: false,
        };
        assert_eq!(
            written(Response::stream(200, "text/event-stream", rx), framing),
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\ndata: 1\n\n"
        );
    }

    #[test]
    fn head_gets_the_get_head_without_the_body() {
        let framing = Framing {
            head_only: true,
            ..KEEP
        };
        assert_eq!(
            written(Response::bytes(200, "text/plain", b"hi".to_vec()), framing),
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\n"
        );
        let (tx, rx) = crossbeam_channel::unbounded::<Vec<u8>>();
        let out = written(Response::stream(200, "text/event-stream", rx), framing);
        assert!(out.ends_with("Transfer-Encoding: chunked\r\n\r\n"), "{out}");
        // The stream was dropped unread: its sender learns at once.
        assert!(tx.send(b"x".to_vec()).is_err());
    }

    #[test]
    fn an_http_1_0_keep_alive_is_confirmed() {
        let framing = Framing {
            http10: true,
            ..KEEP
        };
        assert!(written(Response::empty(200), framing).contains("Connection: keep-alive\r\n"));
    }

    #[test]
    fn bad_or_framing_headers_from_a_handler_are_refused_before_writing() {
        for (name, value) in [
            ("X", "a\r\nInjected: 1"),
            ("X", "a\nb"),
            ("X", "a\0b"),
            ("Bad Name", "1"),
            ("", "1"),
            ("X:Y", "1"),
            ("Content-Length", "5"),
            ("transfer-encoding", "chunked"),
            ("Date", "yesterday"),
        ] {
            let mut out = Vec::new();
            let r = Response::empty(200).with_header(name, value);
            let e = write_response(&mut out, r, KEEP).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{name}: {value}");
            assert!(out.is_empty());
        }
    }

    #[test]
    fn a_handlers_connection_close_is_honoured_once() {
        let r = Response::empty(200).with_header("Connection", "close");
        assert!(asks_to_close(&r));
        let framing = Framing {
            keep_alive: false,
            ..KEEP
        };
        let out = written(r, framing);
        assert_eq!(out.matches("Connection").count(), 1, "{out}");
    }

    #[test]
    fn no_content_has_no_length_and_no_body() {
        assert_eq!(
            written(Response::empty(204), KEEP),
            "HTTP/1.1 204 No Content\r\n\r\n"
        );
    }

    #[test]
    fn request_bytes_carry_host_and_length() {
        assert_eq!(
            request_bytes("POST", "h:1", "/a", &[("X", "1")], b"{}"),
            b"POST /a HTTP/1.1\r\nHost: h:1\r\nX: 1\r\nContent-Length: 2\r\n\r\n{}"
        );
        assert_eq!(
            request_bytes("GET", "h", "/", &[], b""),
            b"GET / HTTP/1.1\r\nHost: h\r\n\r\n"
        );
    }
}
