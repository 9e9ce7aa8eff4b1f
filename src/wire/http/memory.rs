//! The in-memory transport: real HTTP/1.1 bytes, no socket.
//!
//! A [`MemoryNet`] maps host names (`hello.agents.test`) to handlers. Sending a request
//! serialises it to HTTP/1.1 bytes, parses those bytes back with httparse as a server would,
//! runs the very handler the TCP server runs, writes the response with the same
//! [`write_response`] the TCP server uses, and parses those bytes back with httparse. Tests
//! therefore exercise the real wire, framing and limits included, with no network; a
//! per-call timeout is enforced as on TCP.

use super::client::{ClientRequest, ClientResponse};
use super::{BodyError, Handler, Limits, Request, write_response};
use crate::error::{Error, Result};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, RwLock};

/// Hosts reachable in memory. Cheap to clone; clones share the same hosts.
#[derive(Clone, Default)]
pub struct MemoryNet {
    hosts: Arc<RwLock<HashMap<String, (Handler, Limits)>>>,
    /// Hosts whose calls panic in the caller's thread (see [`MemoryNet::panic_on_calls_to`]).
    panicking: Arc<RwLock<HashSet<String>>>,
}

impl MemoryNet {
    /// An empty network.
    pub fn new() -> MemoryNet {
        MemoryNet::default()
    }

    /// Serve `handler` at `http://<host>`; returns that base URL.
    pub fn serve(&self, host: &str, handler: Handler, limits: Limits) -> String {
        self.hosts
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(host.to_ascii_lowercase(), (handler, limits));
        format!("http://{host}")
    }

    /// Take `host` off the network (a later call is refused, as a stopped server's would be).
    pub fn remove(&self, host: &str) {
        self.hosts
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&host.to_ascii_lowercase());
    }

    /// Make every later call to `host` panic in the calling thread, as a bug in a client or
    /// in the decoding of a reply would: the test kit's way to prove a caller survives a panic
    /// (`None` stops it).
    pub fn panic_on_calls_to(&self, host: Option<&str>) {
        let mut panicking = self.panicking.write().unwrap_or_else(|p| p.into_inner());
        panicking.clear();
        panicking.extend(host.map(str::to_ascii_lowercase));
    }

    /// Send a request to a host on this network.
    pub fn send(&self, request: ClientRequest) -> Result<ClientResponse> {
        let (host, target) = split_url(&request.url).ok_or_else(|| Error::Connect {
            url: request.url.clone(),
            reason: "not an http:// URL".into(),
        })?;
        if self
            .panicking
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .contains(&host.to_ascii_lowercase())
        {
            panic!("injected panic: a call to {}", request.url);
        }
        let found = self
            .hosts
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&host.to_ascii_lowercase())
            .cloned();
        let Some((handler, limits)) = found else {
            return Err(Error::Connect {
                url: request.url.clone(),
                reason: "connection refused (no such host in memory)".into(),
            });
        };
        let bytes = request_bytes(&request, &host, &target);
        let (tx, rx) = crossbeam_channel::bounded(1);
        std::thread::spawn(move || {
            let _ = tx.send(serve_bytes(&handler, &bytes, &limits));
        });
        let response_bytes = rx
            .recv_timeout(request.timeout)
            .map_err(|_| Error::Timeout {
                url: request.url.clone(),
                after: request.timeout,
            })?;
        parse_response(&response_bytes).map_err(|e| Error::Wire(format!("{}: {e}", request.url)))
    }
}

/// `http://host[:port]/path?q` → (`host[:port]`, `/path?q`).
fn split_url(url: &str) -> Option<(String, String)> {
    let rest = url.strip_prefix("http://")?;
    let (host, target) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    Some((host.to_string(), target.to_string()))
}

/// The HTTP/1.1 bytes of a client request.
pub fn request_bytes(request: &ClientRequest, host: &str, target: &str) -> Vec<u8> {
    let mut head = format!("{} {target} HTTP/1.1\r\nHost: {host}\r\n", request.method);
    for (k, v) in &request.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if request.method != "GET" || !request.body.is_empty() {
        head.push_str(&format!("Content-Length: {}\r\n", request.body.len()));
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(&request.body);
    bytes
}

/// Serve one request given as HTTP/1.1 bytes; returns the response's HTTP/1.1 bytes. This is
/// the server half of the transport, usable on its own with captured bytes.
pub fn serve_bytes(handler: &Handler, bytes: &[u8], limits: &Limits) -> Vec<u8> {
    let response = match parse_request(bytes, limits) {
        Ok(request) => super::server::call(handler, request),
        Err((status, message)) => super::Response::error(status, &message),
    };
    let mut out = Vec::new();
    // Writing into a Vec cannot fail; a refused header is answered as a 500.
    if write_response(&mut out, response, false, true, false).is_err() {
        out.clear();
        let _ = write_response(
            &mut out,
            super::Response::error(500, "response header with a line break"),
            false,
            true,
            false,
        );
    }
    out
}

/// Parse request bytes as a server does, within `limits`.
pub fn parse_request(bytes: &[u8], limits: &Limits) -> std::result::Result<Request, (u16, String)> {
    let mut headers = vec![httparse::EMPTY_HEADER; limits.max_headers];
    let mut req = httparse::Request::new(&mut headers);
    let head_len = match req.parse(bytes) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Err((400, "incomplete request head".into())),
        Err(httparse::Error::TooManyHeaders) => {
            return Err((
                431,
                format!("more than {} header fields", limits.max_headers),
            ));
        }
        Err(e) => return Err((400, format!("malformed request head: {e}"))),
    };
    if head_len > limits.max_header_bytes {
        return Err((
            431,
            format!(
                "request head of {head_len} bytes exceeds the limit of {}",
                limits.max_header_bytes
            ),
        ));
    }
    let (path, query) = super::split_target(req.path.unwrap_or("/"));
    let headers: Vec<(String, String)> = req
        .headers
        .iter()
        .map(|h| {
            (
                h.name.to_ascii_lowercase(),
                String::from_utf8_lossy(h.value).into_owned(),
            )
        })
        .collect();
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let rest = &bytes[head_len..];
    let (body, body_error) =
        if header("transfer-encoding").is_some_and(|te| te.eq_ignore_ascii_case("chunked")) {
            match decode_chunked(rest, limits.max_body_bytes) {
                Ok(b) => (b, None),
                Err(e) => (Vec::new(), Some(e)),
            }
        } else {
            let length: usize = match header("content-length").map(str::parse) {
                None => 0,
                Some(Ok(n)) => n,
                Some(Err(_)) => return Err((400, "malformed Content-Length".into())),
            };
            if length > limits.max_body_bytes {
                (
                    Vec::new(),
                    Some(BodyError::TooLarge {
                        limit: limits.max_body_bytes,
                    }),
                )
            } else if rest.len() < length {
                (
                    Vec::new(),
                    Some(BodyError::Malformed(
                        "body shorter than Content-Length".into(),
                    )),
                )
            } else {
                (rest[..length].to_vec(), None)
            }
        };
    Ok(Request {
        method: req.method.unwrap_or("GET").to_ascii_uppercase(),
        path,
        query,
        headers,
        body,
        body_error,
        remote_addr: None,
    })
}

/// Decode a chunked body (RFC 9112 §7.1), refusing one larger than `limit`.
fn decode_chunked(mut rest: &[u8], limit: usize) -> std::result::Result<Vec<u8>, BodyError> {
    let mut body = Vec::new();
    loop {
        let (consumed, size) = match httparse::parse_chunk_size(rest) {
            Ok(httparse::Status::Complete(found)) => found,
            _ => return Err(BodyError::Malformed("bad chunk size".into())),
        };
        rest = &rest[consumed..];
        if size == 0 {
            return Ok(body);
        }
        // Checked: a chunk size near usize::MAX must be refused, not overflow.
        let size = usize::try_from(size).map_err(|_| BodyError::TooLarge { limit })?;
        if size > limit.saturating_sub(body.len()) {
            return Err(BodyError::TooLarge { limit });
        }
        let (Some(chunk), Some(b"\r\n")) =
            (rest.get(..size), rest.get(size..size.saturating_add(2)))
        else {
            return Err(BodyError::Malformed("chunk shorter than its size".into()));
        };
        body.extend_from_slice(chunk);
        rest = &rest[size + 2..];
    }
}

/// Parse response bytes as a client does.
pub fn parse_response(bytes: &[u8]) -> std::result::Result<ClientResponse, String> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut resp = httparse::Response::new(&mut headers);
    let head_len = match resp.parse(bytes) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Err("incomplete response head".into()),
        Err(e) => return Err(format!("malformed response head: {e}")),
    };
    let status = resp.code.unwrap_or(0);
    let headers: Vec<(String, String)> = resp
        .headers
        .iter()
        .map(|h| {
            (
                h.name.to_ascii_lowercase(),
                String::from_utf8_lossy(h.value).into_owned(),
            )
        })
        .collect();
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let rest = &bytes[head_len..];
    let body = if header("transfer-encoding").is_some_and(|te| te.eq_ignore_ascii_case("chunked")) {
        decode_chunked(rest, usize::MAX).map_err(|e| e.to_string())?
    } else if let Some(length) = header("content-length") {
        let n: usize = length
            .parse()
            .map_err(|_| "malformed Content-Length".to_string())?;
        rest.get(..n)
            .ok_or("body shorter than Content-Length")?
            .to_vec()
    } else {
        rest.to_vec()
    };
    Ok(ClientResponse {
        status,
        headers,
        body,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::http::Response;
    use std::time::Duration;

    fn echo() -> Handler {
        Arc::new(|r: Request| {
            Response::bytes(
                200,
                "text/plain",
                format!("{} {} {}", r.method, r.path, r.body.len()).into_bytes(),
            )
        })
    }

    #[test]
    fn a_request_crosses_as_http_bytes_and_comes_back() {
        let net = MemoryNet::new();
        let base = net.serve("echo.test", echo(), Limits::DEFAULT);
        let r = net
            .send(ClientRequest::post_json(
                format!("{base}/a2a"),
                b"{}".to_vec(),
                Duration::from_secs(5),
            ))
            .unwrap();
        assert_eq!(
            (r.status, String::from_utf8(r.body).unwrap()),
            (200, "POST /a2a 2".to_string())
        );
    }

    #[test]
    fn an_unknown_host_is_refused_and_a_slow_handler_times_out() {
        let net = MemoryNet::new();
        let err = net
            .send(ClientRequest::get(
                "http://nowhere.test/",
                Duration::from_secs(1),
            ))
            .unwrap_err();
        assert!(err.to_string().contains("connection refused"), "{err}");
        let slow: Handler = Arc::new(|_| {
            std::thread::sleep(Duration::from_millis(300));
            Response::empty(204)
        });
        net.serve("slow.test", slow, Limits::DEFAULT);
        let err = net
            .send(ClientRequest::get(
                "http://slow.test/",
                Duration::from_millis(50),
            ))
            .unwrap_err();
        assert!(matches!(err, Error::Timeout { .. }), "{err}");
    }

    #[test]
    fn limits_apply_in_memory_as_on_a_socket() {
        let net = MemoryNet::new();
        let limits = Limits {
            max_body_bytes: 4,
            max_headers: 4,
            ..Limits::DEFAULT
        };
        let seen: Handler = Arc::new(|r: Request| match r.body_error {
            Some(e) => Response::error(e.status(), &e.to_string()),
            None => Response::empty(204),
        });
        net.serve("limits.test", seen, limits);
        let big = net
            .send(ClientRequest::post_json(
                "http://limits.test/",
                vec![b'x'; 5],
                Duration::from_secs(5),
            ))
            .unwrap();
        assert_eq!(big.status, 413);
        let mut many = ClientRequest::get("http://limits.test/", Duration::from_secs(5));
        for i in 0..5 {
            many = many.header(&format!("x-{i}"), "1");
        }
        assert_eq!(net.send(many).unwrap().status, 431);
    }

    #[test]
    fn chunked_bodies_decode_and_refuse_overflow() {
        assert_eq!(
            decode_chunked(b"3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n", 10).unwrap(),
            b"abcde"
        );
        assert_eq!(
            decode_chunked(b"3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n", 4),
            Err(BodyError::TooLarge { limit: 4 })
        );
        assert!(decode_chunked(b"5\r\nab\r\n", 10).is_err());
    }

    #[test]
    fn a_chunk_size_near_the_top_of_usize_is_refused_not_overflowed() {
        for size in ["ffffffffffffffff", "fffffffffffffffe", "fffffffffffffffd"] {
            let body = format!("1\r\na\r\n{size}\r\nabc\r\n0\r\n\r\n");
            for limit in [10, usize::MAX] {
                assert!(
                    decode_chunked(body.as_bytes(), limit).is_err(),
                    "{size} under {limit}"
                );
            }
        }
        // Through the whole in-memory server path: a clear 413, not a lost request.
        let handler: Handler = std::sync::Arc::new(|r: Request| match r.body_error {
            Some(e) => super::super::Response::error(e.status(), &e.to_string()),
            None => super::super::Response::empty(204),
        });
        let request = b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n\
                        ffffffffffffffff\r\nabc\r\n0\r\n\r\n";
        let response = parse_response(&serve_bytes(&handler, request, &Limits::DEFAULT)).unwrap();
        assert_eq!(response.status, 413);
    }
}
