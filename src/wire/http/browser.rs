//! What a browser may do to a ddwire server: the checks that stop a web page the operator
//! visits from acting in their name (cross-site request forgery) or reading runs through a
//! name it controls (DNS rebinding). The harness applies all of them; an agent server the
//! media type and `Origin` checks (it answers any `Host`: the harness may reach it by a name
//! of its configuration the agent does not know).
//!
//! - **Media type.** A state-changing route (`POST`) takes only `application/json` or a
//!   `+json` media type (RFC 6839 §3.1, so `application/a2a+json` too), else 415. A form or
//!   `fetch` a page sends without a CORS preflight can only carry `text/plain`, a form
//!   encoding, or no type at all (Fetch, "CORS-safelisted request-header"), so none of them
//!   reaches a handler. The upstream clients (a2a-sdk, `@a2a-js/sdk`, `@ag-ui/client`) all
//!   send `application/json`.
//! - **Host.** The `Host` field (RFC 9110 §7.2) must name this server: an IP literal (which
//!   no rebinding can point elsewhere), `localhost`, the public URL's host, or a name given
//!   with `--allowed-hosts` (`*` accepts any). Else 421 Misdirected Request (RFC 9110
//!   §15.5.20), naming the host and the flag.
//! - **Origin.** A request carrying an `Origin` (RFC 6454 §7) other than the server's own
//!   (the `Host` it was sent to, or the public URL's origin) is refused with 403, unless the
//!   origin is given with `--cors-origin`. For such an origin the server answers CORS
//!   preflight (`OPTIONS`, Fetch §3.2.2) and marks every answer
//!   `Access-Control-Allow-Origin`, so the viewer or an AG-UI client served elsewhere works.
//!
//! Non-browser callers (a2a-sdk, curl, other harnesses) send no `Origin`, a JSON media type
//! and a `Host` naming the server they dialled, so they pass unchanged.

use super::{Request, Response};

/// The request headers a cross-origin caller may send (the preflight's allow list).
const ALLOWED_HEADERS: &str = "Authorization, Content-Type, Accept, A2A-Version, \
     A2A-Extensions, X-A2A-Extensions, traceparent, tracestate, Last-Event-ID";
/// How long a browser may cache a preflight answer, in seconds.
const PREFLIGHT_MAX_AGE: &str = "600";

/// A server's browser policy: which host names it answers to and which other origins may
/// call it.
#[derive(Clone, Debug, Default)]
pub(crate) struct BrowserPolicy {
    /// Host names (lower case, no port) accepted besides IP literals and `localhost`.
    hosts: Vec<String>,
    /// Whether any host is accepted (`--allowed-hosts '*'`).
    any_host: bool,
    /// The server's own origin, from its public URL (`scheme://host[:port]`, lower case).
    own_origin: Option<String>,
    /// Origins (`scheme://host[:port]`, lower case) allowed to call cross-origin.
    cors: Vec<String>,
}

impl BrowserPolicy {
    /// The policy for a server whose public URL is `public_url`: its host is accepted, and
    /// its origin is its own.
    pub(crate) fn new(public_url: &str) -> BrowserPolicy {
        let own_origin = origin_of(public_url);
        let hosts = own_origin
            .as_deref()
            .and_then(|o| o.split_once("://"))
            .map(|(_, authority)| vec![host_name(authority).to_string()])
            .unwrap_or_default();
        BrowserPolicy {
            hosts,
            any_host: false,
            own_origin,
            cors: Vec::new(),
        }
    }

    /// Also accept these host names (`--allowed-hosts`; a port, if given, is ignored; `*`
    /// accepts any host).
    pub(crate) fn allow_hosts<S: AsRef<str>>(mut self, hosts: impl IntoIterator<Item = S>) -> Self {
        for host in hosts {
            let host = host.as_ref().trim().to_ascii_lowercase();
            if host == "*" {
                self.any_host = true;
            } else if !host.is_empty() {
                self.hosts.push(host_name(&host).to_string());
            }
        }
        self
    }

    /// Let these origins (`scheme://host[:port]`, `--cors-origin`) call cross-origin. An
    /// origin that is not of that shape is an error naming it.
    pub(crate) fn allow_origins<S: AsRef<str>>(
        mut self,
        origins: impl IntoIterator<Item = S>,
    ) -> Result<Self, BadOrigin> {
        for origin in origins {
            let given = origin.as_ref().trim();
            match origin_of(given) {
                Some(o) if o == given.to_ascii_lowercase() => self.cors.push(o),
                _ => {
                    return Err(BadOrigin {
                        given: given.to_string(),
                    });
                }
            }
        }
        Ok(self)
    }

    /// Check a request before any route sees it; `Err` is the answer to give instead (421,
    /// 403, or a preflight's answer). A state-changing route also calls
    /// [`Self::admit_body`].
    pub(crate) fn admit(&self, request: &Request) -> Result<(), Response> {
        let host = request.header("host");
        if let Some(host) = host
            && !self.host_allowed(host)
        {
            return Err(Response::error(
                421,
                &format!(
                    "Host {host:?} is not a name this server answers to (it answers to IP \
                     addresses, localhost and {}); start it with --allowed-hosts {} if that \
                     name is its own",
                    self.hosts_shown(),
                    host_name(host)
                ),
            ));
        }
        if let Some(origin) = request.header("origin")
            && !self.same_origin(origin, host)
            && !self.cors_allowed(origin)
        {
            return Err(Response::error(
                403,
                &format!(
                    "Origin {origin:?} is not this server's own, and not one allowed with \
                     --cors-origin: a page on another site may not call it"
                ),
            ));
        }
        if request.method == "OPTIONS" {
            return Err(self.preflight(request));
        }
        Ok(())
    }

    /// Check the media type of a request to a state-changing route: `Err` is the 415.
    pub(crate) fn admit_body(&self, request: &Request) -> Result<(), Response> {
        if json_media_type(request.header("content-type")) {
            return Ok(());
        }
        let given = request.header("content-type").unwrap_or("none");
        Err(Response::error(
            415,
            &format!(
                "Content-Type {given:?} is not accepted: send application/json (or an \
                 application/*+json type such as application/a2a+json)"
            ),
        )
        .with_header("Accept-Post", "application/json, application/a2a+json"))
    }

    /// The answer to `OPTIONS` (CORS preflight, Fetch §3.2.2), for an origin [`Self::admit`]
    /// let through.
    fn preflight(&self, request: &Request) -> Response {
        let response = Response::empty(204).with_header("Allow", "GET, HEAD, POST, OPTIONS");
        match request.header("origin") {
            Some(origin) if self.cors_allowed(origin) => response
                .with_header("Access-Control-Allow-Origin", origin)
                .with_header("Access-Control-Allow-Methods", "GET, HEAD, POST, OPTIONS")
                .with_header("Access-Control-Allow-Headers", ALLOWED_HEADERS)
                .with_header("Access-Control-Max-Age", PREFLIGHT_MAX_AGE)
                .with_header("Vary", "Origin"),
            _ => response,
        }
    }

    /// Mark an answer to an allowed cross-origin caller so its browser hands it over.
    pub(crate) fn decorate(&self, request: &Request, response: Response) -> Response {
        match request.header("origin") {
            Some(origin) if self.cors_allowed(origin) => response
                .with_header("Access-Control-Allow-Origin", origin)
                .with_header("Access-Control-Expose-Headers", "Link, WWW-Authenticate")
                .with_header("Vary", "Origin"),
            _ => response,
        }
    }

    fn host_allowed(&self, host: &str) -> bool {
        if self.any_host {
            return true;
        }
        let name = host_name(host).to_ascii_lowercase();
        name == "localhost" || is_ip_literal(&name) || self.hosts.contains(&name)
    }

    fn hosts_shown(&self) -> String {
        if self.hosts.is_empty() {
            "no other name".into()
        } else {
            self.hosts.join(", ")
        }
    }

    /// Whether `origin` is the server's own: the origin of the `Host` the request was sent
    /// to (either scheme: a proxy may terminate TLS), or of its public URL.
    fn same_origin(&self, origin: &str, host: Option<&str>) -> bool {
        let origin = origin.trim().to_ascii_lowercase();
        let Some((scheme, authority)) = origin.split_once("://") else {
            return false; // "null", or not an origin at all
        };
        let sent_to = host.is_some_and(|h| {
            (scheme == "http" || scheme == "https") && authority == h.trim().to_ascii_lowercase()
        });
        sent_to || self.own_origin.as_deref() == Some(origin.as_str())
    }

    fn cors_allowed(&self, origin: &str) -> bool {
        let origin = origin.trim().to_ascii_lowercase();
        self.cors.contains(&origin)
    }
}

/// An origin given to [`BrowserPolicy::allow_origins`] that is not `scheme://host[:port]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct BadOrigin {
    /// What was given.
    pub(crate) given: String,
}

impl std::fmt::Display for BadOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "--cors-origin {:?} is not an origin: give scheme://host[:port], as a browser sends \
             it in Origin (no path, no trailing slash), e.g. http://localhost:5173",
            self.given
        )
    }
}

impl std::error::Error for BadOrigin {}

/// `scheme://host[:port]` of a URL, lower case, or `None` if it has no scheme or host.
fn origin_of(url: &str) -> Option<String> {
    let (scheme, rest) = url.trim().split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let valid = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b".-_:[]+".contains(&b))
    };
    (valid(scheme) && valid(authority) && !authority.contains('@'))
        .then(|| format!("{scheme}://{authority}").to_ascii_lowercase())
}

/// The host name of a `Host` value or authority, without its port (`[::1]:8000` → `[::1]`).
fn host_name(host: &str) -> &str {
    let host = host.trim();
    if host.starts_with('[') {
        return host.find(']').map_or(host, |end| &host[..=end]);
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    }
}

/// Whether a host name is an IPv4 or bracketed IPv6 literal.
fn is_ip_literal(name: &str) -> bool {
    name.parse::<std::net::Ipv4Addr>().is_ok()
        || name
            .strip_prefix('[')
            .and_then(|n| n.strip_suffix(']'))
            .is_some_and(|n| n.parse::<std::net::Ipv6Addr>().is_ok())
}

/// Whether a `Content-Type` value is `application/json` or `application/<x>+json`
/// (parameters such as `charset` ignored; RFC 9110 §8.3.1: the type is case-insensitive).
fn json_media_type(value: Option<&str>) -> bool {
    let Some(value) = value else {
        return false;
    };
    let essence = value.split(';').next().unwrap_or_default().trim();
    let Some((kind, sub)) = essence.split_once('/') else {
        return false;
    };
    let sub = sub.as_bytes();
    let suffix = sub.len().saturating_sub(b"+json".len());
    kind.eq_ignore_ascii_case("application")
        && (sub.eq_ignore_ascii_case(b"json")
            || suffix > 0 && sub[suffix..].eq_ignore_ascii_case(b"+json"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(method: &str, headers: &[(&str, &str)]) -> Request {
        Request {
            method: method.into(),
            path: "/a2a".into(),
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Request::default()
        }
    }

    fn status(policy: &BrowserPolicy, method: &str, headers: &[(&str, &str)]) -> u16 {
        match policy.admit(&request(method, headers)) {
            Ok(()) => 200,
            Err(r) => r.status,
        }
    }

    #[test]
    fn json_and_structured_json_media_types_are_accepted_and_nothing_else() {
        for ok in [
            "application/json",
            "Application/JSON; charset=utf-8",
            "application/a2a+json",
            "application/vnd.ag-ui.event+json",
        ] {
            assert!(json_media_type(Some(ok)), "{ok}");
        }
        for bad in [
            "text/plain",
            "text/plain;charset=UTF-8",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "application/+json",
            "application/jsonp",
            "",
        ] {
            assert!(!json_media_type(Some(bad)), "{bad}");
        }
        assert!(!json_media_type(None));
    }

    #[test]
    fn host_names_are_checked_without_their_port() {
        let p = BrowserPolicy::new("https://dd.example.org/base").allow_hosts(["Proxy.Local:81"]);
        for ok in [
            "127.0.0.1:8000",
            "[::1]:8000",
            "localhost:8000",
            "dd.example.org",
            "DD.example.org:443",
            "proxy.local",
            "10.1.2.3",
        ] {
            assert_eq!(status(&p, "GET", &[("host", ok)]), 200, "{ok}");
        }
        for bad in [
            "evil.example",
            "dd.example.org.evil.example:8000",
            "127.0.0.1.nip.io",
        ] {
            assert_eq!(status(&p, "GET", &[("host", bad)]), 421, "{bad}");
        }
        let any = BrowserPolicy::new("http://127.0.0.1:1").allow_hosts(["*"]);
        assert_eq!(status(&any, "GET", &[("host", "evil.example")]), 200);
    }

    #[test]
    fn only_the_own_origin_and_configured_origins_pass() {
        let p = BrowserPolicy::new("http://127.0.0.1:8000")
            .allow_origins(["http://localhost:5173"])
            .unwrap();
        let host = ("host", "127.0.0.1:8000");
        assert_eq!(status(&p, "GET", &[host]), 200);
        assert_eq!(
            status(&p, "GET", &[host, ("origin", "http://127.0.0.1:8000")]),
            200
        );
        assert_eq!(
            status(&p, "GET", &[host, ("origin", "http://localhost:5173")]),
            200
        );
        for bad in ["https://evil.example", "null", "http://localhost:5174"] {
            assert_eq!(status(&p, "GET", &[host, ("origin", bad)]), 403, "{bad}");
        }
        for bad in ["localhost:5173", "http://x/path", "http://x/", ""] {
            assert!(
                BrowserPolicy::default().allow_origins([bad]).is_err(),
                "{bad}"
            );
        }
    }
}
