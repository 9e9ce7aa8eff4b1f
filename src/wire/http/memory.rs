//! The in-memory transport: real HTTP/1.1 bytes, no socket.
//!
//! A [`MemoryNet`] maps host names (`hello.agents.test`) to handlers. Sending a request
//! serialises it to HTTP/1.1 bytes, parses those bytes back with the server's own parser
//! (`head`, `body`) within the same [`Limits`], runs the very handler the TCP server runs,
//! writes the response with the same `write_response`, and parses those bytes back with the
//! client half of the same parser. Tests
//! therefore exercise the real wire, framing and limits included, with no network; a
//! per-call timeout is enforced as on TCP. A logged client (`super::client::HttpClient::logged`)
//! hands the request and response bytes to the wire log's tap as a TCP client's connection
//! does.

use super::call::{ClientRequest, ClientResponse, MAX_RESPONSE_BYTES};
use super::write::{self, Framing};
use super::{BodyError, Handler, Limits, Response, body, head, write_response};
use crate::text::Unpoison;
use crate::wire::WireError;
use crate::wire::wirelog::{self, Direction, Side, Tap, WireLog};

type Result<T, E = WireError> = std::result::Result<T, E>;
use std::collections::HashMap;
#[cfg(test)]
use std::collections::HashSet;
use std::sync::{Arc, RwLock};

/// Hosts reachable in memory. Cheap to clone; clones share the same hosts.
#[derive(Clone, Default)]
pub struct MemoryNet {
    hosts: Arc<RwLock<HashMap<String, (Handler, Limits)>>>,
    /// Hosts whose calls panic in the caller's thread (see [`MemoryNet::panic_on_calls_to`]).
    #[cfg(test)]
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
            .unpoisoned()
            .insert(host.to_ascii_lowercase(), (handler, limits));
        format!("http://{host}")
    }

    /// Take `host` off the network (a later call is refused, as a stopped server's would be).
    #[cfg(test)]
    pub(crate) fn remove(&self, host: &str) {
        self.hosts
            .write()
            .unpoisoned()
            .remove(&host.to_ascii_lowercase());
    }

    /// Make every later call to `host` panic in the calling thread, as a bug in a client or
    /// in the decoding of a reply would: the test kit's way to prove a caller survives a panic
    /// (`None` stops it).
    #[cfg(test)]
    pub(crate) fn panic_on_calls_to(&self, host: Option<&str>) {
        let mut panicking = self.panicking.write().unpoisoned();
        panicking.clear();
        panicking.extend(host.map(str::to_ascii_lowercase));
    }

    /// Send a request to a host on this network.
    #[cfg(test)]
    pub(crate) fn send(&self, request: ClientRequest) -> Result<ClientResponse> {
        self.exchange(request, None)
    }

    /// [`MemoryNet::send`], writing the request and the response to `log` as a client's
    /// messages, when there is one.
    pub(crate) fn exchange(
        &self,
        request: ClientRequest,
        log: Option<&WireLog>,
    ) -> Result<ClientResponse> {
        let (host, target) = split_url(&request.url).ok_or_else(|| WireError::Connect {
            url: request.url.clone(),
            reason: "not an http:// URL".into(),
        })?;
        #[cfg(test)]
        if self
            .panicking
            .read()
            .unpoisoned()
            .contains(&host.to_ascii_lowercase())
        {
            panic!("injected panic: a call to {}", request.url);
        }
        let found = self
            .hosts
            .read()
            .unpoisoned()
            .get(&host.to_ascii_lowercase())
            .cloned();
        let Some((handler, limits)) = found else {
            return Err(WireError::Connect {
                url: request.url.clone(),
                reason: "connection refused (no such host in memory)".into(),
            });
        };
        let headers: Vec<(&str, &str)> = request
            .headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let bytes = write::request_bytes(request.method, &host, &target, &headers, &request.body);
        let mut tap = match log {
            Some(log) => Tap::new(log, Side::Client, wirelog::connection_id(), host, None),
            None => Tap::off(),
        };
        tap.message(Direction::Out, &bytes, true);
        let (tx, rx) = crossbeam_channel::bounded(1);
        std::thread::spawn(move || {
            let _ = tx.send(serve_bytes(&handler, &bytes, &limits));
        });
        let timed_out = || WireError::Timeout {
            url: request.url.clone(),
            after: request.timeout,
        };
        // Under `interruptible`, the wait ends when the interrupt is set, as a socket's does;
        // woken without the flag (the task was forgotten), it waits for the answer alone.
        let interrupt = super::call::interrupt_in_force();
        let mut wake = interrupt
            .as_ref()
            .map_or_else(crossbeam_channel::never, |i| i.wake.clone());
        let deadline = crossbeam_channel::after(request.timeout);
        let response_bytes = loop {
            crossbeam_channel::select! {
                recv(rx) -> bytes => break bytes.map_err(|_| timed_out())?,
                recv(wake) -> _ => {
                    if interrupt.as_ref().is_some_and(|i| i.is_set()) {
                        let url = request.url.clone();
                        return Err(WireError::Interrupted { url });
                    }
                    wake = crossbeam_channel::never();
                }
                recv(deadline) -> _ => return Err(timed_out()),
            }
        };
        let response = parse_response(&response_bytes, request.method);
        tap.message(Direction::In, &response_bytes, response.is_ok());
        response.map_err(|e| match e {
            WireError::Protocol { url: None, reason } => WireError::Protocol {
                url: Some(request.url.clone()),
                reason,
            },
            other => other,
        })
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

/// Serve one request given as HTTP/1.1 bytes; returns the response's HTTP/1.1 bytes. This is
/// the server half of the transport, usable on its own with captured bytes: the same parser,
/// limits, handler call and writer as the TCP server, so the same bytes give the same answer
/// (a refused head, an over-limit body, `HEAD` answered with `GET`'s head).
pub(crate) fn serve_bytes(handler: &Handler, bytes: &[u8], limits: &Limits) -> Vec<u8> {
    let refused = |status, message: &str| (Response::error(status, message), Framing::CLOSE);
    let (response, framing) = match head::parse_request(bytes, limits) {
        Err(e) => refused(e.status(), &e.to_string()),
        Ok(None) => refused(400, "the request ended inside its head"),
        Ok(Some(head)) => {
            let rest = &bytes[head.len..];
            match body::read_all(head.framing, limits.max_body_bytes, rest) {
                Err(e @ (BodyError::Truncated | BodyError::Chunked(_))) => {
                    refused(e.status(), &e.to_string())
                }
                read => super::server::answer(handler, head, read.map(|(body, _)| body), None),
            }
        }
    };
    let mut out = Vec::new();
    if write_response(&mut out, response, framing).is_err() {
        out.clear();
        let _ = write_response(
            &mut out,
            Response::error(
                500,
                "internal error: the handler's response has a bad header",
            ),
            Framing::CLOSE,
        );
    }
    out
}

/// Parse response bytes as a client does, for a request made with `method`, within
/// [`MAX_RESPONSE_BYTES`].
pub(crate) fn parse_response(bytes: &[u8], method: &str) -> Result<ClientResponse> {
    let head = head::parse_response(bytes, method, bytes.len().max(1))
        .map_err(|e| WireError::protocol(None, e.to_string()))?
        .ok_or_else(|| WireError::protocol(None, "the response ended inside its head"))?;
    let (body, _) = body::read_all(
        head.framing,
        MAX_RESPONSE_BYTES as usize,
        &bytes[head.len..],
    )
    .map_err(|e| WireError::protocol(None, format!("reading the response body: {e}")))?;
    Ok(ClientResponse {
        status: head.status,
        headers: head.headers,
        body,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::http::{Request, Response};
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
        assert!(matches!(err, WireError::Timeout { .. }), "{err}");
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
    fn a_chunked_request_is_decoded_and_a_truncated_one_refused() {
        let body = |r: &Request| format!("{} {}", r.body.len(), String::from_utf8_lossy(&r.body));
        let seen: Handler =
            Arc::new(move |r: Request| Response::bytes(200, "text/plain", body(&r).into_bytes()));
        let reply = |bytes: &[u8]| {
            let out = serve_bytes(&seen, bytes, &Limits::DEFAULT);
            let r = parse_response(&out, "POST").unwrap();
            (r.status, String::from_utf8(r.body).unwrap())
        };
        let head = "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
        assert_eq!(
            reply(format!("{head}3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n").as_bytes()),
            (200, "5 abcde".to_string())
        );
        let (status, text) = reply(format!("{head}5\r\nab").as_bytes());
        assert_eq!(status, 400);
        assert!(text.contains("ended before"), "{text}");
    }

    #[test]
    fn head_is_answered_with_the_get_head_in_memory_too() {
        let out = serve_bytes(
            &echo(),
            b"HEAD /x HTTP/1.1\r\nHost: x\r\n\r\n",
            &Limits::DEFAULT,
        );
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
        assert!(text.contains("Content-Length: 8\r\n"), "{text}");
        assert!(text.ends_with("\r\n\r\n"), "{text}");
    }

    #[test]
    fn a_chunk_size_near_the_top_of_usize_is_refused_not_overflowed() {
        for size in ["ffffffffffffffff", "fffffffffffffffe", "fffffffffffffffd"] {
            let body = format!("1\r\na\r\n{size}\r\nabc\r\n0\r\n\r\n");
            for limit in [10, usize::MAX] {
                assert!(
                    body::read_all(head::Framing::Chunked, limit, body.as_bytes()).is_err(),
                    "{size} under {limit}"
                );
            }
        }
        // Through the whole in-memory server path: a clear 413, not a lost request.
        let handler: Handler = Arc::new(|r: Request| match r.body_error {
            Some(e) => Response::error(e.status(), &e.to_string()),
            None => Response::empty(204),
        });
        let request = b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n\
                        ffffffffffffffff\r\nabc\r\n0\r\n\r\n";
        let response =
            parse_response(&serve_bytes(&handler, request, &Limits::DEFAULT), "POST").unwrap();
        assert_eq!(response.status, 413);
    }
}
