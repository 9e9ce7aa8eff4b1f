//! Calling HTTP: one client over a shared ureq agent (connection reuse), or over the
//! in-memory transport for tests. Both return the same [`ClientResponse`] and the same typed
//! errors, so code above cannot tell them apart.

use super::memory::MemoryNet;
use crate::wire::WireError;

type Result<T, E = WireError> = std::result::Result<T, E>;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{DefaultConnector, NextTimeout};

/// Takes a literal IP address in a URL as it is, and hands any other host to ureq's own
/// resolver. ureq resolves the host on every request, before it looks for a pooled
/// connection, and with a timeout set it resolves on a new thread: without this, every call
/// to an agent at `http://127.0.0.1:…` would start and end a thread to learn `127.0.0.1`.
/// Measured through the harness at one connection: 0.46 ms p50 with it, 0.53 ms without.
///
/// `ureq::unversioned` is exempt from ureq's semver promises, so `Cargo.toml` pins ureq to
/// the exact version this was written against.
#[derive(Debug)]
struct LiteralIpResolver;

impl Resolver for LiteralIpResolver {
    fn resolve(
        &self,
        uri: &ureq::http::Uri,
        config: &ureq::config::Config,
        timeout: NextTimeout,
    ) -> std::result::Result<ResolvedSocketAddrs, ureq::Error> {
        let literal = uri.authority().and_then(|authority| {
            let host = authority.host();
            let host = host
                .strip_prefix('[')
                .and_then(|h| h.strip_suffix(']'))
                .unwrap_or(host);
            let ip: IpAddr = host.parse().ok()?;
            let port = authority.port_u16().or(match uri.scheme_str()? {
                "http" => Some(80),
                "https" => Some(443),
                _ => None,
            })?;
            Some(SocketAddr::new(ip, port))
        });
        match literal {
            Some(addr) => {
                let mut addrs = self.empty();
                addrs.push(addr);
                Ok(addrs)
            }
            None => DefaultResolver::default().resolve(uri, config, timeout),
        }
    }
}

/// A request to send.
#[derive(Clone, Debug)]
pub struct ClientRequest {
    /// `GET` or `POST`.
    pub method: &'static str,
    /// The absolute `http://` URL.
    pub url: String,
    /// Extra header fields (`Host` and framing are added by the transport).
    pub headers: Vec<(String, String)>,
    /// The body (empty for `GET`).
    pub body: Vec<u8>,
    /// The whole call must finish within this (connect, send, receive).
    pub timeout: Duration,
}

impl ClientRequest {
    /// A `GET`.
    pub fn get(url: impl Into<String>, timeout: Duration) -> ClientRequest {
        ClientRequest {
            method: "GET",
            url: url.into(),
            headers: Vec::new(),
            body: Vec::new(),
            timeout,
        }
    }

    /// A `POST` of a JSON body.
    pub fn post_json(url: impl Into<String>, body: Vec<u8>, timeout: Duration) -> ClientRequest {
        ClientRequest {
            method: "POST",
            url: url.into(),
            headers: vec![("Content-Type".into(), "application/json".into())],
            body,
            timeout,
        }
    }

    /// Add a header.
    pub fn header(mut self, name: &str, value: &str) -> ClientRequest {
        self.headers.push((name.into(), value.into()));
        self
    }
}

/// A response received.
#[derive(Clone, Debug)]
pub struct ClientResponse {
    /// The status code.
    pub status: u16,
    /// Names lower-cased.
    pub headers: Vec<(String, String)>,
    /// The whole body, read within [`MAX_RESPONSE_BYTES`].
    pub body: Vec<u8>,
}

impl ClientResponse {
    /// The first value of a header.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// The largest response body a client accepts (a reply carrying an agent's spans can be
/// large, but not unbounded).
pub const MAX_RESPONSE_BYTES: u64 = 32 * 1024 * 1024;

/// An HTTP client: cheap to clone, safe to share between threads.
#[derive(Clone)]
pub struct HttpClient {
    transport: Transport,
}

#[derive(Clone)]
enum Transport {
    Tcp(ureq::Agent),
    Memory(MemoryNet),
}

impl Default for HttpClient {
    fn default() -> Self {
        HttpClient::tcp()
    }
}

impl HttpClient {
    /// A client over TCP that keeps connections alive between calls.
    pub fn tcp() -> HttpClient {
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_idle_connections_per_host(64)
            .max_idle_connections(256)
            .user_agent(concat!("ddwire/", env!("CARGO_PKG_VERSION")))
            .build();
        let agent = ureq::Agent::with_parts(config, DefaultConnector::default(), LiteralIpResolver);
        HttpClient {
            transport: Transport::Tcp(agent),
        }
    }

    /// A client that reaches handlers registered on `net`, with no socket.
    pub fn memory(net: MemoryNet) -> HttpClient {
        HttpClient {
            transport: Transport::Memory(net),
        }
    }

    /// Send one request and read the whole response.
    pub fn send(&self, request: ClientRequest) -> Result<ClientResponse> {
        match &self.transport {
            Transport::Memory(net) => net.send(request),
            Transport::Tcp(agent) => send_tcp(agent, request),
        }
    }
}

fn send_tcp(agent: &ureq::Agent, request: ClientRequest) -> Result<ClientResponse> {
    let url = request.url.clone();
    let timeout = request.timeout;
    let outcome = if request.method == "GET" {
        let mut builder = agent.get(&request.url);
        for (k, v) in &request.headers {
            builder = builder.header(k.as_str(), v.as_str());
        }
        builder
            .config()
            .timeout_global(Some(timeout))
            .build()
            .call()
    } else {
        let mut builder = agent.post(&request.url);
        for (k, v) in &request.headers {
            builder = builder.header(k.as_str(), v.as_str());
        }
        builder
            .config()
            .timeout_global(Some(timeout))
            .build()
            .send(&request.body[..])
    };
    let mut response = outcome.map_err(|e| transport_error(&url, timeout, e))?;
    let status = response.status().as_u16();
    let headers = response
        .headers()
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_ascii_lowercase(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let body = response
        .body_mut()
        .with_config()
        .limit(MAX_RESPONSE_BYTES)
        .read_to_vec()
        .map_err(|e| transport_error(&url, timeout, e))?;
    Ok(ClientResponse {
        status,
        headers,
        body,
    })
}

/// Map ureq's error to ddwire's typed ones, with the words the reference's details use.
fn transport_error(url: &str, timeout: Duration, e: ureq::Error) -> WireError {
    match e {
        ureq::Error::Timeout(_) => WireError::Timeout {
            url: url.to_string(),
            after: timeout,
        },
        ureq::Error::Io(io)
            if matches!(
                io.kind(),
                std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
            ) =>
        {
            WireError::Timeout {
                url: url.to_string(),
                after: timeout,
            }
        }
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
            WireError::Connect {
                url: url.to_string(),
                reason: "connection refused".into(),
            }
        }
        ureq::Error::ConnectionFailed | ureq::Error::HostNotFound => WireError::Connect {
            url: url.to_string(),
            reason: format!("connection refused ({e})"),
        },
        ureq::Error::BodyExceedsLimit(n) => WireError::protocol(
            Some(url),
            format!("response body exceeds the limit of {n} bytes"),
        ),
        other => WireError::Connect {
            url: url.to_string(),
            reason: other.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::http::{Handler, Limits, Response, server};
    use std::sync::Arc;

    #[test]
    fn literal_addresses_and_host_names_both_reach_the_server() {
        let ok: Handler = Arc::new(|_| Response::empty(204));
        let v4 = server::serve("127.0.0.1:0", ok.clone(), Limits::DEFAULT).unwrap();
        let port = v4.local_addr().port();
        let client = HttpClient::tcp();
        let get = |url: String| {
            client
                .send(ClientRequest::get(url, Duration::from_secs(5)))
                .map(|r| r.status)
        };
        assert_eq!(get(format!("http://127.0.0.1:{port}/")).unwrap(), 204);
        assert_eq!(get(format!("http://localhost:{port}/")).unwrap(), 204);
        // IPv6 loopback, where the machine has it.
        if let Ok(v6) = server::serve("[::1]:0", ok, Limits::DEFAULT) {
            let url = format!("http://[::1]:{}/", v6.local_addr().port());
            assert_eq!(get(url).unwrap(), 204);
        }
    }
}
