//! Request and response heads, parsed sans-IO: the request line or status line, the header
//! fields, and what frames the body (RFC 9112 §2–§6).
//!
//! [`parse_request`] takes the bytes received so far, at most one head buffer of
//! [`Limits::max_header_bytes`], and answers with a complete [`RequestHead`], `None` (more
//! bytes are needed), or a [`HeadError`] that names the status to answer with. httparse does
//! the tokenising, zero-copy; this module adds what a server must refuse and httparse lets
//! through:
//!
//! - a head that fills the buffer and is still incomplete (431, §2.2 leaves the limit to the
//!   server);
//! - a bare LF as a line end (400; §2.2 allows a recipient to accept one, but a proxy in front
//!   that does not would read a different message);
//! - a byte outside ASCII in the request target (400; RFC 3986 §2.1 wants it percent-encoded);
//! - a version other than HTTP/1.0 and HTTP/1.1 (505, RFC 9110 §15.6.6), `HTTP/2.0` and the
//!   HTTP/2 connection preface included;
//! - a method ddwire does not implement, lower-case spellings included (501: methods are
//!   case-sensitive, RFC 9110 §9.1);
//! - an HTTP/1.1 request without `Host`, or any request with two (400, §3.2);
//! - ambiguous framing (400, or 501 for a transfer coding ddwire does not implement, §6.1 and
//!   §6.3): `Transfer-Encoding` together with `Content-Length`, `Transfer-Encoding` in an
//!   HTTP/1.0 request, a final coding other than `chunked`, `chunked` applied twice, more than
//!   one `Content-Length` field line (even with equal values), or one whose value is not
//!   `1*DIGIT`;
//! - a header value that is not UTF-8 (400: handlers see text, and replacing bytes would
//!   change what a signature covers);
//! - an `Expect` other than `100-continue` (417, RFC 9110 §10.1.1).
//!
//! Every [`HeadError`] closes the connection after its answer: once a head is refused, where
//! the next message would start is unknown.

use super::Limits;

/// An HTTP version this server speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Version {
    /// `HTTP/1.0`: persistent only when asked for, no chunked coding.
    Http10,
    /// `HTTP/1.1`.
    Http11,
}

impl Version {
    /// The version httparse read (`1.x`, by its minor digit).
    fn of(minor: Option<u8>) -> Version {
        match minor {
            Some(0) => Version::Http10,
            _ => Version::Http11,
        }
    }
}

/// How a message's body is delimited (RFC 9112 §6.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Framing {
    /// No body.
    Empty,
    /// Exactly this many bytes (`Content-Length`; `u64::MAX` for a value too large to hold).
    Length(u64),
    /// The chunked transfer coding.
    Chunked,
    /// Until the connection closes (responses only).
    UntilClose,
}

/// A complete, valid request head.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RequestHead {
    /// The method, exactly as sent (one of [`METHODS`]).
    pub(crate) method: &'static str,
    /// The path of the target (origin-form; absolute-form is reduced to its path), without
    /// the query. `*` for `OPTIONS *`.
    pub(crate) path: String,
    /// The query, without `?`.
    pub(crate) query: String,
    /// The version of the request line.
    pub(crate) version: Version,
    /// Header fields in arrival order, names lower-cased, values without surrounding spaces.
    pub(crate) headers: Vec<(String, String)>,
    /// How the body is delimited (RFC 9112 §6.3).
    pub(crate) framing: Framing,
    /// Whether the connection may serve another request after this one (RFC 9112 §9.3).
    pub(crate) keep_alive: bool,
    /// `Expect: 100-continue` was sent.
    pub(crate) expect_continue: bool,
    /// Bytes of the head, blank line included: the body (or the next request) starts here.
    pub(crate) len: usize,
}

/// The most header fields any request may carry, whatever [`Limits::max_headers`] says.
pub(crate) const MAX_FIELDS: usize = 128;

/// The methods passed to a handler; anything else is answered 501 (RFC 9110 §9.1). CONNECT
/// and TRACE are left out: ddwire is no proxy, and TRACE would echo credentials.
pub(crate) const METHODS: [&str; 7] = ["GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"];

/// Why a head was refused. Each names its status ([`HeadError::status`]); all close the
/// connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum HeadError {
    /// The head buffer filled before the head ended.
    TooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// More header fields than allowed.
    TooManyFields {
        /// The limit.
        limit: usize,
    },
    /// The request line could not be read (`reason` says where).
    RequestLine {
        /// Where it broke.
        reason: &'static str,
    },
    /// A header field line could not be read.
    HeaderField {
        /// Where it broke.
        reason: &'static str,
    },
    /// A line ended in LF without CR, at this offset.
    BareLf {
        /// The byte offset of the LF.
        at: usize,
    },
    /// The target holds a byte outside ASCII.
    NonAsciiTarget {
        /// The byte.
        byte: u8,
        /// Its offset in the target.
        at: usize,
    },
    /// The target is in no form a server accepts.
    BadTarget {
        /// Why.
        reason: &'static str,
    },
    /// A version this server does not speak (the text as sent, up to 16 bytes).
    Version {
        /// The version as sent.
        version: String,
    },
    /// A method this server does not implement (the text as sent, up to 32 bytes).
    Method {
        /// The method as sent.
        method: String,
    },
    /// HTTP/1.1 without `Host`.
    MissingHost,
    /// More than one `Host`.
    DuplicateHost,
    /// A `Host` that is no `uri-host [":" port]`.
    InvalidHost,
    /// A header value that is not UTF-8.
    NotUtf8 {
        /// The field's name.
        name: String,
    },
    /// Both `Transfer-Encoding` and `Content-Length`.
    LengthAndEncoding,
    /// `Transfer-Encoding` in an HTTP/1.0 message.
    EncodingInHttp10,
    /// The final transfer coding is not `chunked`, or `chunked` comes twice.
    NotChunkedLast {
        /// The `Transfer-Encoding` value.
        value: String,
    },
    /// A transfer coding ddwire does not implement (gzip, ...).
    UnknownCoding {
        /// The coding.
        coding: String,
    },
    /// More than one `Content-Length` field line.
    DuplicateLength,
    /// A `Content-Length` that is not `1*DIGIT`.
    InvalidLength {
        /// The `Content-Length` value.
        value: String,
    },
    /// An expectation other than `100-continue`.
    Expectation {
        /// The `Expect` value.
        value: String,
    },
}

impl HeadError {
    /// The HTTP status that answers this error.
    pub(crate) fn status(&self) -> u16 {
        match self {
            HeadError::TooLarge { .. } | HeadError::TooManyFields { .. } => 431,
            HeadError::Version { .. } => 505,
            HeadError::Method { .. } | HeadError::UnknownCoding { .. } => 501,
            HeadError::Expectation { .. } => 417,
            _ => 400,
        }
    }
}

impl std::fmt::Display for HeadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HeadError::TooLarge { limit } => write!(
                f,
                "the request head exceeds the limit of {limit} bytes (request line and header fields)"
            ),
            HeadError::TooManyFields { limit } => {
                write!(f, "the request has more than {limit} header fields")
            }
            HeadError::RequestLine { reason } => write!(f, "malformed request line: {reason}"),
            HeadError::HeaderField { reason } => write!(f, "malformed header field: {reason}"),
            HeadError::BareLf { at } => write!(
                f,
                "a line of the request head ends in LF without CR (byte {at}); lines end in CRLF (RFC 9112 §2.2)"
            ),
            HeadError::NonAsciiTarget { byte, at } => write!(
                f,
                "the request target holds byte 0x{byte:02x} at {at}, outside ASCII; percent-encode it (RFC 3986 §2.1)"
            ),
            HeadError::BadTarget { reason } => write!(f, "malformed request target: {reason}"),
            HeadError::Version { version } => write!(
                f,
                "HTTP version {version:?} is not supported; this server speaks HTTP/1.1 and HTTP/1.0"
            ),
            HeadError::Method { method } => write!(
                f,
                "method {method:?} is not implemented (methods are case-sensitive: {})",
                METHODS.join(", ")
            ),
            HeadError::MissingHost => f.write_str(
                "an HTTP/1.1 request must carry a Host header field (RFC 9112 §3.2)",
            ),
            HeadError::DuplicateHost => {
                f.write_str("the request carries more than one Host header field")
            }
            HeadError::InvalidHost => f.write_str("the Host header field is not a valid host"),
            HeadError::NotUtf8 { name } => {
                write!(f, "the value of header field {name:?} is not UTF-8")
            }
            HeadError::LengthAndEncoding => f.write_str(
                "the request carries both Transfer-Encoding and Content-Length; its framing is ambiguous (RFC 9112 §6.3)",
            ),
            HeadError::EncodingInHttp10 => {
                f.write_str("an HTTP/1.0 request cannot use Transfer-Encoding (RFC 9112 §6.1)")
            }
            HeadError::NotChunkedLast { value } => write!(
                f,
                "Transfer-Encoding {value:?} does not end in exactly one chunked coding; the body length cannot be determined (RFC 9112 §6.3)"
            ),
            HeadError::UnknownCoding { coding } => write!(
                f,
                "transfer coding {coding:?} is not implemented; send the body with chunked alone or Content-Length"
            ),
            HeadError::DuplicateLength => f.write_str(
                "the request carries more than one Content-Length field line; its framing is ambiguous",
            ),
            HeadError::InvalidLength { value } => write!(
                f,
                "Content-Length {value:?} is not a decimal number of bytes"
            ),
            HeadError::Expectation { value } => write!(
                f,
                "expectation {value:?} cannot be met; only 100-continue is understood"
            ),
        }
    }
}

impl std::error::Error for HeadError {}

/// Parse a request head from the start of `window`, the bytes received so far (at most
/// `limits.max_header_bytes` of them are looked at).
///
/// `Ok(None)`: the head is not complete yet and there is room for more. A window that holds
/// the whole buffer with the head still incomplete is [`HeadError::TooLarge`].
pub(crate) fn parse_request(
    window: &[u8],
    limits: &Limits,
) -> Result<Option<RequestHead>, HeadError> {
    let window = &window[..window.len().min(limits.max_header_bytes)];
    // On the stack, left uninitialised (httparse fills it zero-copy): no allocation, and no
    // 4 KiB of zeroing per request.
    let mut fields = [std::mem::MaybeUninit::<httparse::Header>::uninit(); MAX_FIELDS];
    let max_fields = limits.max_headers.min(MAX_FIELDS);
    let mut req = httparse::Request::new(&mut []);
    let parsed = req.parse_with_uninit_headers(window, &mut fields[..max_fields]);
    // A bare LF is named before anything else is said of the head: in the head when it is
    // complete, else anywhere in the window.
    let head = match parsed {
        Ok(httparse::Status::Complete(len)) => &window[..len],
        _ => window,
    };
    if let Some(at) = bare_lf(head) {
        return Err(HeadError::BareLf { at });
    }
    let len = match parsed {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) if window.len() >= limits.max_header_bytes => {
            return Err(HeadError::TooLarge {
                limit: limits.max_header_bytes,
            });
        }
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(refusal(e, window, limits)),
    };
    let version = Version::of(req.version);
    let sent = req.method.unwrap_or("");
    let Some(method) = METHODS.iter().copied().find(|m| *m == sent) else {
        return Err(HeadError::Method {
            method: clip(sent, 32),
        });
    };
    let target = req.path.unwrap_or("");
    if let Some(at) = target.bytes().position(|b| !b.is_ascii()) {
        return Err(HeadError::NonAsciiTarget {
            byte: target.as_bytes()[at],
            at,
        });
    }
    let (path, query) = split_target(method, target)?;
    let fields = field_lines(req.headers)?;
    if fields.hosts > 1 {
        return Err(HeadError::DuplicateHost);
    }
    if fields.hosts == 0 && version == Version::Http11 {
        return Err(HeadError::MissingHost);
    }
    let framing = framing(version, &fields)?;
    let headers = fields.headers;
    let expect_continue = expects_continue(&headers)?;
    let keep_alive = keep_alive(version, &headers);
    Ok(Some(RequestHead {
        method,
        path,
        query,
        version,
        headers,
        framing,
        keep_alive,
        expect_continue,
        len,
    }))
}

/// A head's field lines, and what its framing and `Host` checks need of them.
struct FieldLines {
    /// Each field line: its name lower-cased, its value without surrounding spaces and tabs.
    headers: Vec<(String, String)>,
    /// How many `Host` lines.
    hosts: usize,
    /// The index of the last `Content-Length` line in `headers`, and how many there are.
    length: Option<usize>,
    length_lines: usize,
    /// Whether a `Transfer-Encoding` line came.
    encoding: bool,
}

/// The field lines httparse found: each value UTF-8, each `Host` a valid one (RFC 9110 §7.2).
fn field_lines(fields: &[httparse::Header<'_>]) -> Result<FieldLines, HeadError> {
    let mut lines = FieldLines {
        headers: Vec::with_capacity(fields.len()),
        hosts: 0,
        length: None,
        length_lines: 0,
        encoding: false,
    };
    for field in fields {
        let Ok(value) = std::str::from_utf8(field.value) else {
            return Err(HeadError::NotUtf8 {
                name: clip(field.name, 64),
            });
        };
        let name = field.name.to_ascii_lowercase();
        match name.as_str() {
            "host" => {
                lines.hosts += 1;
                if !valid_host(value) {
                    return Err(HeadError::InvalidHost);
                }
            }
            "content-length" => {
                lines.length_lines += 1;
                lines.length = Some(lines.headers.len());
            }
            "transfer-encoding" => lines.encoding = true,
            _ => {}
        }
        lines
            .headers
            .push((name, value.trim_matches([' ', '\t']).to_string()));
    }
    Ok(lines)
}

/// How the body is delimited (RFC 9112 §6.3): chunked as the last transfer coding, one
/// Content-Length, or no body; anything ambiguous is refused.
fn framing(version: Version, fields: &FieldLines) -> Result<Framing, HeadError> {
    Ok(if fields.encoding {
        if version == Version::Http10 {
            return Err(HeadError::EncodingInHttp10);
        }
        if fields.length.is_some() {
            return Err(HeadError::LengthAndEncoding);
        }
        transfer_coding(&fields.headers)?
    } else if let Some(at) = fields.length {
        if fields.length_lines > 1 {
            return Err(HeadError::DuplicateLength);
        }
        Framing::Length(content_length(&fields.headers[at].1)?)
    } else {
        Framing::Empty
    })
}

/// Whether the client waits for `100 Continue` before its body (RFC 9110 §10.1.1); any other
/// expectation cannot be met.
fn expects_continue(headers: &[(String, String)]) -> Result<bool, HeadError> {
    let mut expect_continue = false;
    for value in super::header_values(headers, "expect") {
        if value.eq_ignore_ascii_case("100-continue") {
            expect_continue = true;
        } else {
            return Err(HeadError::Expectation {
                value: clip(value, 64),
            });
        }
    }
    Ok(expect_continue)
}

/// Turn httparse's error into the refusal a client can act on.
fn refusal(e: httparse::Error, window: &[u8], limits: &Limits) -> HeadError {
    // httparse takes the target as UTF-8 text and fails a raw byte like 0xFF as a bad token:
    // name the real fault.
    let line = window.split(|&b| b == b'\r' || b == b'\n').next();
    if let Some(target) = line.unwrap_or_default().split(|&b| b == b' ').nth(1)
        && let Some(at) = target.iter().position(|b| !b.is_ascii())
    {
        return HeadError::NonAsciiTarget {
            byte: target[at],
            at,
        };
    }
    match e {
        httparse::Error::TooManyHeaders => HeadError::TooManyFields {
            limit: limits.max_headers,
        },
        httparse::Error::Version => {
            // httparse reads only HTTP/1.0 and HTTP/1.1. A well-formed `HTTP/x.y` is a version
            // this server does not speak (505); anything else is a broken request line.
            match sent_version(window) {
                Some(v) => HeadError::Version { version: v },
                None => HeadError::RequestLine {
                    reason: "the version is not HTTP/1.0 or HTTP/1.1",
                },
            }
        }
        httparse::Error::Token => HeadError::RequestLine {
            reason: "the method is not a token, or the line holds extra spaces",
        },
        httparse::Error::NewLine => HeadError::RequestLine {
            reason: "a line does not end in CRLF",
        },
        httparse::Error::HeaderName => HeadError::HeaderField {
            reason: "a field name holds a byte outside token, or a space before its colon",
        },
        httparse::Error::HeaderValue => HeadError::HeaderField {
            reason: "a field value holds a control byte, or a line is folded",
        },
        httparse::Error::Status => HeadError::RequestLine {
            reason: "unexpected byte in the request line",
        },
    }
}

/// The version token of a request line shaped `METHOD SP TARGET SP HTTP/d.d` whose version is
/// well-formed but not one httparse reads (`HTTP/2.0`, `HTTP/1.2`).
fn sent_version(window: &[u8]) -> Option<String> {
    let line_end = window.iter().position(|&b| b == b'\r' || b == b'\n')?;
    let line = &window[..line_end];
    if line.iter().filter(|&&b| b == b' ').count() != 2 {
        return None;
    }
    let start = line.iter().rposition(|&b| b == b' ')? + 1;
    let v = &line[start..];
    let well_formed = v.len() == 8
        && v != b"HTTP/1.0"
        && v != b"HTTP/1.1"
        && v.starts_with(b"HTTP/")
        && v[5].is_ascii_digit()
        && v[6] == b'.'
        && v[7].is_ascii_digit();
    well_formed.then(|| String::from_utf8_lossy(v).into_owned())
}

/// The offset of the first LF not preceded by CR.
fn bare_lf(bytes: &[u8]) -> Option<usize> {
    (0..bytes.len()).find(|&at| bytes[at] == b'\n' && (at == 0 || bytes[at - 1] != b'\r'))
}

/// Path and query of a request target (RFC 9112 §3.2): origin-form, absolute-form (`http://`
/// or `https://`, reduced to its path), or `*` for `OPTIONS`.
fn split_target(method: &str, target: &str) -> Result<(String, String), HeadError> {
    let origin = if target.starts_with('/') {
        target
    } else if target == "*" {
        if method != "OPTIONS" {
            return Err(HeadError::BadTarget {
                reason: "* is the target of OPTIONS only",
            });
        }
        return Ok(("*".into(), String::new()));
    } else {
        let lower = target.get(..8).unwrap_or(target).to_ascii_lowercase();
        let rest = if lower.starts_with("http://") {
            &target[7..]
        } else if lower.starts_with("https://") {
            &target[8..]
        } else {
            return Err(HeadError::BadTarget {
                reason: "the target starts with neither / nor http:// nor https://",
            });
        };
        match rest.find(['/', '?']) {
            Some(i) if rest.as_bytes()[i] == b'/' => &rest[i..],
            Some(i) => {
                return Ok(("/".into(), rest[i + 1..].to_string()));
            }
            None => "/",
        }
    };
    Ok(match origin.split_once('?') {
        Some((p, q)) => (p.to_string(), q.to_string()),
        None => (origin.to_string(), String::new()),
    })
}

/// `Host = uri-host [ ":" port ]` (RFC 9110 §7.2), by its characters: reg-name, an IPv4
/// address or a bracketed IPv6 literal, then digits. Empty is allowed (§7.2: a target
/// without an authority).
fn valid_host(value: &str) -> bool {
    value
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=%:[]".contains(&b))
}

/// The framing a `Transfer-Encoding` gives, over every field line of it (RFC 9112 §6.1).
fn transfer_coding(headers: &[(String, String)]) -> Result<Framing, HeadError> {
    let codings: Vec<&str> = codings(headers).collect();
    let joined = || {
        clip(
            &super::header_values(headers, "transfer-encoding")
                .collect::<Vec<_>>()
                .join(", "),
            64,
        )
    };
    let is_chunked = |c: &str| c.eq_ignore_ascii_case("chunked");
    match codings.split_last() {
        Some((last, before)) if is_chunked(last) && !before.iter().any(|c| is_chunked(c)) => {
            // Anything before chunked is a coding ddwire would have to undo.
            match before.first() {
                Some(other) => Err(HeadError::UnknownCoding {
                    coding: clip(other, 32),
                }),
                None => Ok(Framing::Chunked),
            }
        }
        _ => Err(HeadError::NotChunkedLast { value: joined() }),
    }
}

/// The transfer codings of every `Transfer-Encoding` field line, in order. Empty list elements
/// are allowed and ignored (RFC 9110 §5.6.1).
fn codings(headers: &[(String, String)]) -> impl Iterator<Item = &str> {
    super::header_values(headers, "transfer-encoding")
        .flat_map(|v| v.split(','))
        .map(|c| c.trim_matches([' ', '\t']))
        .filter(|c| !c.is_empty())
}

/// `Content-Length = 1*DIGIT` (RFC 9110 §8.6): no sign, no spaces inside, no list. A number
/// too large for 64 bits is `u64::MAX` (larger than any body limit).
fn content_length(value: &str) -> Result<u64, HeadError> {
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(HeadError::InvalidLength {
            value: clip(value, 32),
        });
    }
    Ok(value.bytes().fold(0u64, |n, d| {
        n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
    }))
}

/// Whether the connection persists after this request (RFC 9112 §9.3): HTTP/1.1 unless
/// `Connection: close`; HTTP/1.0 only with `Connection: keep-alive`.
fn keep_alive(version: Version, headers: &[(String, String)]) -> bool {
    let has = |token: &str| {
        super::header_values(headers, "connection")
            .flat_map(|v| v.split(','))
            .any(|t| t.trim_matches([' ', '\t']).eq_ignore_ascii_case(token))
    };
    !has("close") && (version == Version::Http11 || has("keep-alive"))
}

/// At most `max` bytes of `s`, cut at a character boundary, for an error message.
fn clip(s: &str, max: usize) -> String {
    crate::text::truncate(s, crate::text::Keep::Bytes(max), "").into_owned()
}

/// A complete response head, as a client reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ResponseHead {
    /// The status code.
    pub(crate) status: u16,
    /// Header fields in arrival order, names lower-cased (values not UTF-8 are converted
    /// lossily: a client only reports them).
    pub(crate) headers: Vec<(String, String)>,
    /// How the body is delimited (RFC 9112 §6.3).
    pub(crate) framing: Framing,
    /// Whether the connection may carry another request.
    pub(crate) keep_alive: bool,
    /// Bytes of the head.
    pub(crate) len: usize,
}

/// Why a response head could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ResponseHeadError {
    /// httparse refused the head.
    Malformed {
        /// httparse's reason.
        reason: String,
    },
    /// No complete head within the buffer given.
    TooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// The framing is ambiguous or invalid.
    Framing {
        /// Why.
        reason: &'static str,
    },
}

impl std::fmt::Display for ResponseHeadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ResponseHeadError::Malformed { reason } => {
                write!(f, "malformed response head: {reason}")
            }
            ResponseHeadError::TooLarge { limit } => {
                write!(f, "the response head exceeds {limit} bytes")
            }
            ResponseHeadError::Framing { reason } => {
                write!(f, "the response framing is invalid: {reason}")
            }
        }
    }
}

impl std::error::Error for ResponseHeadError {}

/// Parse a response head from the start of `window` (at most `max_bytes` of it), for a
/// request made with `method`. `Ok(None)`: not complete yet. Framing per RFC 9112 §6.3: no
/// body after HEAD, 1xx, 204 and 304; chunked if it is the final coding, else until close;
/// else `Content-Length`; else until close.
pub(crate) fn parse_response(
    window: &[u8],
    method: &str,
    max_bytes: usize,
) -> Result<Option<ResponseHead>, ResponseHeadError> {
    let window = &window[..window.len().min(max_bytes)];
    let mut fields = [httparse::EMPTY_HEADER; 64];
    let mut resp = httparse::Response::new(&mut fields);
    let len = match resp.parse(window) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) if window.len() >= max_bytes => {
            return Err(ResponseHeadError::TooLarge { limit: max_bytes });
        }
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => {
            return Err(ResponseHeadError::Malformed {
                reason: e.to_string(),
            });
        }
    };
    let status = resp.code.unwrap_or(0);
    let version = Version::of(resp.version);
    let headers: Vec<(String, String)> = resp
        .headers
        .iter()
        .map(|h| {
            (
                h.name.to_ascii_lowercase(),
                String::from_utf8_lossy(h.value)
                    .trim_matches([' ', '\t'])
                    .to_string(),
            )
        })
        .collect();
    let values = |name: &'static str| super::header_values(&headers, name);
    let framing =
        if method == "HEAD" || (100..200).contains(&status) || status == 204 || status == 304 {
            Framing::Empty
        } else if values("transfer-encoding").next().is_some() {
            if values("content-length").next().is_some() {
                return Err(ResponseHeadError::Framing {
                    reason: "both Transfer-Encoding and Content-Length",
                });
            }
            if codings(&headers)
                .last()
                .is_some_and(|c| c.eq_ignore_ascii_case("chunked"))
            {
                Framing::Chunked
            } else {
                Framing::UntilClose
            }
        } else {
            let mut lengths = values("content-length");
            match (lengths.next(), lengths.next()) {
                (None, _) => Framing::UntilClose,
                (Some(v), None) => {
                    Framing::Length(content_length(v).map_err(|_| ResponseHeadError::Framing {
                        reason: "a Content-Length that is not a decimal number",
                    })?)
                }
                (Some(_), Some(_)) => {
                    return Err(ResponseHeadError::Framing {
                        reason: "more than one Content-Length",
                    });
                }
            }
        };
    let keep_alive = framing != Framing::UntilClose && keep_alive(version, &headers);
    Ok(Some(ResponseHead {
        status,
        headers,
        framing,
        keep_alive,
        len,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits::DEFAULT
    }

    #[test]
    fn a_complete_head_gives_its_framing_and_ambiguous_framing_is_refused() {
        let bytes = b"POST /a2a HTTP/1.1\r\nHost: agent.test\r\nContent-Length: 2\r\n\r\n{}";
        let request = parse_request(bytes, &Limits::DEFAULT)
            .unwrap()
            .expect("a complete head");
        assert_eq!((request.method, request.path.as_str()), ("POST", "/a2a"));
        assert_eq!(request.framing, Framing::Length(2));
        assert_eq!(&bytes[request.len..], b"{}");

        // Ambiguous framing is refused, with the status to answer and a reason.
        let smuggle = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n";
        let refused = parse_request(smuggle, &Limits::DEFAULT).unwrap_err();
        assert_eq!(refused.status(), 400);
    }

    fn head(bytes: &[u8]) -> RequestHead {
        parse_request(bytes, &limits())
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(bytes)))
            .unwrap_or_else(|| panic!("partial: {}", String::from_utf8_lossy(bytes)))
    }

    fn refused(bytes: &[u8]) -> HeadError {
        match parse_request(bytes, &limits()) {
            Err(e) => e,
            Ok(h) => panic!("accepted {h:?}: {}", String::from_utf8_lossy(bytes)),
        }
    }

    /// Every prefix of a valid head is partial, never an error or a head.
    fn prefixes_are_partial(bytes: &[u8]) {
        let full = head(bytes);
        for cut in 0..full.len {
            assert_eq!(
                parse_request(&bytes[..cut], &limits()),
                Ok(None),
                "cut at {cut}: {}",
                String::from_utf8_lossy(&bytes[..cut])
            );
        }
    }

    #[test]
    fn a_simple_get_is_parsed_with_its_fields() {
        let h = head(b"GET /a/b?x=1&y=2 HTTP/1.1\r\nHost: example.com\r\nX-Thing:  v  \r\n\r\n");
        assert_eq!(h.method, "GET");
        assert_eq!((h.path.as_str(), h.query.as_str()), ("/a/b", "x=1&y=2"));
        assert_eq!(h.version, Version::Http11);
        assert_eq!(
            h.headers,
            vec![
                ("host".to_string(), "example.com".to_string()),
                ("x-thing".to_string(), "v".to_string())
            ]
        );
        assert_eq!(h.framing, Framing::Empty);
        assert!(h.keep_alive && !h.expect_continue);
        assert_eq!(h.len, 63);
    }

    #[test]
    fn every_prefix_of_a_head_asks_for_more() {
        prefixes_are_partial(b"POST /a2a HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n");
        prefixes_are_partial(b"GET / HTTP/1.0\r\n\r\n");
    }

    #[test]
    fn the_head_ends_at_the_blank_line_and_leaves_the_body() {
        let bytes = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello";
        let h = head(bytes);
        assert_eq!(&bytes[h.len..], b"hello");
        assert_eq!(h.framing, Framing::Length(5));
    }

    #[test]
    fn leading_empty_lines_are_ignored() {
        // RFC 9112 §2.2: a server SHOULD ignore at least one empty line before a request.
        assert_eq!(head(b"\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n").path, "/");
    }

    #[test]
    fn a_head_that_fills_the_buffer_is_431() {
        let limits = Limits {
            max_header_bytes: 64,
            ..Limits::DEFAULT
        };
        let mut bytes = b"GET / HTTP/1.1\r\nHost: x\r\nX: ".to_vec();
        bytes.resize(63, b'a');
        assert_eq!(parse_request(&bytes, &limits), Ok(None));
        bytes.push(b'a');
        assert_eq!(
            parse_request(&bytes, &limits),
            Err(HeadError::TooLarge { limit: 64 })
        );
        // A complete head of exactly the buffer's size is accepted.
        let mut exact = b"GET / HTTP/1.1\r\nHost: x\r\nX: ".to_vec();
        exact.resize(60, b'a');
        exact.extend_from_slice(b"\r\n\r\n");
        assert_eq!(parse_request(&exact, &limits).unwrap().unwrap().len, 64);
        // Bytes beyond the buffer are never looked at.
        let mut beyond = bytes.clone();
        beyond.extend_from_slice(b"\r\n\r\n");
        assert_eq!(
            parse_request(&beyond, &limits),
            Err(HeadError::TooLarge { limit: 64 })
        );
    }

    #[test]
    fn a_line_with_no_end_is_431_when_the_buffer_is_full() {
        let bytes = vec![b'a'; Limits::DEFAULT.max_header_bytes];
        assert_eq!(
            refused(&bytes),
            HeadError::TooLarge {
                limit: Limits::DEFAULT.max_header_bytes
            }
        );
        assert_eq!(refused(&bytes).status(), 431);
    }

    #[test]
    fn more_fields_than_the_limit_are_431() {
        let limits = Limits {
            max_headers: 3,
            ..Limits::DEFAULT
        };
        let ok = b"GET / HTTP/1.1\r\nHost: x\r\nA: 1\r\nB: 2\r\n\r\n";
        assert!(parse_request(ok, &limits).unwrap().is_some());
        let over = b"GET / HTTP/1.1\r\nHost: x\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n";
        let e = parse_request(over, &limits).unwrap_err();
        assert_eq!(
            (e.clone(), e.status()),
            (HeadError::TooManyFields { limit: 3 }, 431)
        );
    }

    #[test]
    fn bare_lf_line_ends_are_400_wherever_they_are() {
        for bytes in [
            &b"GET / HTTP/1.1\nHost: x\r\n\r\n"[..],
            b"GET / HTTP/1.1\r\nHost: x\n\r\n",
            b"GET / HTTP/1.1\r\nHost: x\r\n\n",
            b"GET / HTTP/1.1\nHost: x\n\n",
            b"\nGET / HTTP/1.1\r\nHost: x\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: x\n",
        ] {
            let e = refused(bytes);
            assert!(matches!(e, HeadError::BareLf { .. }), "{e:?}");
            assert_eq!(e.status(), 400);
            assert!(e.to_string().contains("CRLF"));
        }
    }

    #[test]
    fn a_lone_cr_is_400() {
        for bytes in [
            &b"GET / HTTP/1.1\rHost: x\r\n\r\n"[..],
            b"GET / HTTP/1.1\r\nHost: x\rY: 1\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: x\r\n\rX",
        ] {
            assert_eq!(refused(bytes).status(), 400, "{bytes:?}");
        }
    }

    #[test]
    fn a_raw_byte_outside_ascii_in_the_target_is_400() {
        let e = refused(b"GET /caf\xff HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!(e, HeadError::NonAsciiTarget { byte: 0xff, at: 4 });
        assert!(e.to_string().contains("percent-encode"));
        assert_eq!(
            refused("GET /café HTTP/1.1\r\nHost: x\r\n\r\n".as_bytes()).status(),
            400
        );
        assert_eq!(
            head(b"GET /caf%C3%A9 HTTP/1.1\r\nHost: x\r\n\r\n").path,
            "/caf%C3%A9"
        );
    }

    #[test]
    fn http_2_and_other_versions_are_505() {
        for (bytes, version) in [
            (&b"GET / HTTP/2.0\r\nHost: x\r\n\r\n"[..], "HTTP/2.0"),
            (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "HTTP/2.0"),
            (b"GET / HTTP/1.2\r\nHost: x\r\n\r\n", "HTTP/1.2"),
            (b"GET / HTTP/3.0\r\n\r\n", "HTTP/3.0"),
            (b"GET / HTTP/0.9\r\n\r\n", "HTTP/0.9"),
        ] {
            let e = refused(bytes);
            assert_eq!(
                e,
                HeadError::Version {
                    version: version.into()
                }
            );
            assert_eq!(e.status(), 505);
        }
    }

    #[test]
    fn a_malformed_version_is_400() {
        for bytes in [
            &b"GET / HTTP/1.1x\r\nHost: x\r\n\r\n"[..],
            b"GET / http/1.1\r\nHost: x\r\n\r\n",
            b"GET / HTTP/11\r\nHost: x\r\n\r\n",
            b"GET /\r\n\r\n",
            b"GET / FTP/1.0\r\n\r\n",
        ] {
            let e = refused(bytes);
            assert_eq!(e.status(), 400, "{e:?} for {bytes:?}");
        }
    }

    #[test]
    fn the_request_line_must_be_three_tokens_with_single_spaces() {
        for bytes in [
            &b"GET  / HTTP/1.1\r\nHost: x\r\n\r\n"[..],
            b"GET / HTTP/1.1 \r\nHost: x\r\n\r\n",
            b" GET / HTTP/1.1\r\nHost: x\r\n\r\n",
            b"GET\t/ HTTP/1.1\r\nHost: x\r\n\r\n",
            b"GET /a b HTTP/1.1\r\nHost: x\r\n\r\n",
            b"G(T / HTTP/1.1\r\nHost: x\r\n\r\n",
            b"GET / HTTP/1.1\x00\r\nHost: x\r\n\r\n",
        ] {
            let e = refused(bytes);
            assert_eq!(e.status(), 400, "{e:?} for {bytes:?}");
            assert!(e.to_string().starts_with("malformed"), "{e}");
        }
    }

    #[test]
    fn methods_are_case_sensitive_and_unknown_ones_are_501() {
        for m in METHODS {
            let bytes = format!("{m} / HTTP/1.1\r\nHost: x\r\n\r\n");
            assert_eq!(head(bytes.as_bytes()).method, m);
        }
        for m in ["get", "Get", "post", "CONNECT", "TRACE", "BREW", "PROPFIND"] {
            let bytes = format!("{m} / HTTP/1.1\r\nHost: x\r\n\r\n");
            let e = refused(bytes.as_bytes());
            assert_eq!(e, HeadError::Method { method: m.into() });
            assert_eq!(e.status(), 501);
        }
    }

    #[test]
    fn host_is_required_in_http_1_1_and_never_twice() {
        assert_eq!(refused(b"GET / HTTP/1.1\r\n\r\n"), HeadError::MissingHost);
        assert_eq!(head(b"GET / HTTP/1.0\r\n\r\n").version, Version::Http10);
        assert_eq!(
            refused(b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"),
            HeadError::DuplicateHost
        );
        assert_eq!(
            refused(b"GET / HTTP/1.0\r\nHost: a\r\nhost: a\r\n\r\n"),
            HeadError::DuplicateHost
        );
        for bad in ["a b", "a/b", "user@host", "a\"b", "<x>"] {
            let bytes = format!("GET / HTTP/1.1\r\nHost: {bad}\r\n\r\n");
            assert_eq!(refused(bytes.as_bytes()), HeadError::InvalidHost, "{bad}");
        }
        for good in [
            "",
            "example.com",
            "127.0.0.1:8000",
            "[::1]:80",
            "xn--bcher-kva.ch",
        ] {
            let bytes = format!("GET / HTTP/1.1\r\nHost: {good}\r\n\r\n");
            head(bytes.as_bytes());
        }
    }

    #[test]
    fn targets_in_absolute_form_and_asterisk_form() {
        let h =
            head(b"GET http://example.com:8080/a2a?x=1 HTTP/1.1\r\nHost: example.com:8080\r\n\r\n");
        assert_eq!((h.path.as_str(), h.query.as_str()), ("/a2a", "x=1"));
        let h = head(b"GET HTTPS://example.com HTTP/1.1\r\nHost: example.com\r\n\r\n");
        assert_eq!(h.path, "/");
        let h = head(b"GET http://example.com?q HTTP/1.1\r\nHost: example.com\r\n\r\n");
        assert_eq!((h.path.as_str(), h.query.as_str()), ("/", "q"));
        assert_eq!(head(b"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n").path, "*");
        assert_eq!(refused(b"GET * HTTP/1.1\r\nHost: x\r\n\r\n").status(), 400);
        assert_eq!(
            refused(b"GET example.com:80 HTTP/1.1\r\nHost: x\r\n\r\n").status(),
            400
        );
        assert_eq!(
            refused(b"GET ftp://x/ HTTP/1.1\r\nHost: x\r\n\r\n").status(),
            400
        );
    }

    #[test]
    fn header_fields_are_checked_as_httparse_does() {
        for bytes in [
            // Space before the colon (RFC 9112 §5.1).
            &b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length : 2\r\n\r\n"[..],
            // Obsolete line folding (§5.2).
            b"GET / HTTP/1.1\r\nHost: x\r\nX: a\r\n b\r\n\r\n",
            // Whitespace before the first field (§2.2).
            b"GET / HTTP/1.1\r\n Host: x\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: x\r\nX-\x01: 1\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: x\r\nX: a\x00b\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: x\r\nX: a\x7fb\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: x\r\nNoColon\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: x\r\n: empty-name\r\n\r\n",
        ] {
            let e = refused(bytes);
            assert_eq!(e.status(), 400, "{e:?} for {bytes:?}");
        }
    }

    #[test]
    fn header_values_must_be_utf8_and_keep_inner_spaces_and_tabs() {
        let h = head("GET / HTTP/1.1\r\nHost: x\r\nX: a\tb  c é\r\nEmpty:\r\n\r\n".as_bytes());
        assert_eq!(h.headers[1].1, "a\tb  c é");
        assert_eq!(h.headers[2].1, "");
        assert_eq!(
            refused(b"GET / HTTP/1.1\r\nHost: x\r\nX: \xff\xfe\r\n\r\n"),
            HeadError::NotUtf8 { name: "X".into() }
        );
    }

    #[test]
    fn content_length_must_be_one_plain_decimal() {
        for (value, framing) in [("0", 0), ("5", 5), ("005", 5), ("4194304", 4_194_304)] {
            let bytes = format!("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: {value}\r\n\r\n");
            assert_eq!(head(bytes.as_bytes()).framing, Framing::Length(framing));
        }
        let bytes = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length:  7 \r\n\r\n";
        assert_eq!(head(bytes).framing, Framing::Length(7));
        let huge = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999\r\n\r\n";
        assert_eq!(head(huge).framing, Framing::Length(u64::MAX));
        for bad in [
            "-1", "abc", "+2", "2, 2", "2,2", "0x10", "1 0", "1_0", "", "1.0", "٣",
        ] {
            let bytes = format!("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: {bad}\r\n\r\n");
            let e = refused(bytes.as_bytes());
            assert!(matches!(e, HeadError::InvalidLength { .. }), "{bad}: {e:?}");
            assert_eq!(e.status(), 400);
        }
    }

    #[test]
    fn two_content_length_lines_are_400_even_when_equal() {
        for (a, b) in [("2", "3"), ("2", "2"), ("0", "0")] {
            let bytes = format!(
                "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: {a}\r\nContent-Length: {b}\r\n\r\n"
            );
            assert_eq!(refused(bytes.as_bytes()), HeadError::DuplicateLength);
        }
    }

    #[test]
    fn chunked_must_be_the_one_final_coding() {
        for value in [
            "chunked",
            "Chunked",
            "CHUNKED",
            " chunked ",
            ", chunked",
            "chunked,",
        ] {
            let bytes = format!("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: {value}\r\n\r\n");
            assert_eq!(head(bytes.as_bytes()).framing, Framing::Chunked, "{value}");
        }
        for value in [
            "xchunked",
            "chunkedx",
            "chunked, gzip",
            "chunked, chunked",
            "",
            "identity",
            "chunked;q=1",
        ] {
            let bytes = format!("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: {value}\r\n\r\n");
            let e = refused(bytes.as_bytes());
            assert!(
                matches!(e, HeadError::NotChunkedLast { .. }),
                "{value}: {e:?}"
            );
            assert_eq!(e.status(), 400);
        }
        for value in ["gzip, chunked", "deflate,chunked"] {
            let bytes = format!("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: {value}\r\n\r\n");
            let e = refused(bytes.as_bytes());
            assert!(
                matches!(e, HeadError::UnknownCoding { .. }),
                "{value}: {e:?}"
            );
            assert_eq!(e.status(), 501);
        }
        // Codings over several field lines are one list (RFC 9110 §5.3).
        let split = b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n";
        assert!(matches!(refused(split), HeadError::NotChunkedLast { .. }));
        let split = b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n";
        assert!(matches!(refused(split), HeadError::UnknownCoding { .. }));
    }

    #[test]
    fn transfer_encoding_with_content_length_or_in_http_1_0_is_400() {
        let both = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n";
        assert_eq!(refused(both), HeadError::LengthAndEncoding);
        let both = b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n";
        assert_eq!(refused(both), HeadError::LengthAndEncoding);
        let old = b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n";
        assert_eq!(refused(old), HeadError::EncodingInHttp10);
    }

    #[test]
    fn persistence_follows_the_version_and_connection_tokens() {
        let ka = |bytes: &[u8]| head(bytes).keep_alive;
        assert!(ka(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
        assert!(!ka(
            b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        ));
        assert!(!ka(
            b"GET / HTTP/1.1\r\nHost: x\r\nConnection: TE, Close\r\n\r\n"
        ));
        assert!(ka(
            b"GET / HTTP/1.1\r\nHost: x\r\nConnection: closed\r\n\r\n"
        ));
        assert!(!ka(b"GET / HTTP/1.0\r\n\r\n"));
        assert!(ka(b"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n"));
        assert!(!ka(
            b"GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n"
        ));
    }

    #[test]
    fn expect_100_continue_is_understood_and_others_are_417() {
        let h = head(
            b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nExpect: 100-Continue\r\n\r\n",
        );
        assert!(h.expect_continue);
        let e = refused(b"POST / HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\n\r\n");
        assert_eq!(e.status(), 417);
    }

    #[test]
    fn a_response_head_gives_status_and_framing() {
        let r = parse_response(
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi",
            "GET",
            1024,
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            (r.status, r.framing, r.keep_alive, r.len),
            (200, Framing::Length(2), true, 38)
        );
        let r = parse_response(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
            "GET",
            1024,
        )
        .unwrap()
        .unwrap();
        assert_eq!((r.framing, r.keep_alive), (Framing::Chunked, false));
        let r = parse_response(
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n",
            "HEAD",
            1024,
        )
        .unwrap()
        .unwrap();
        assert_eq!(r.framing, Framing::Empty);
        let r = parse_response(b"HTTP/1.1 204 No Content\r\n\r\n", "GET", 1024)
            .unwrap()
            .unwrap();
        assert_eq!(r.framing, Framing::Empty);
        let r = parse_response(b"HTTP/1.0 200 OK\r\n\r\n", "GET", 1024)
            .unwrap()
            .unwrap();
        assert_eq!((r.framing, r.keep_alive), (Framing::UntilClose, false));
        assert_eq!(
            parse_response(b"HTTP/1.1 200 OK\r\n", "GET", 1024),
            Ok(None)
        );
        assert!(
            parse_response(
                b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                "GET",
                1024
            )
            .is_err()
        );
        assert!(
            parse_response(
                b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
                "GET",
                1024
            )
            .is_err()
        );
        assert_eq!(
            parse_response(b"HTTP/1.1 200 OK\r\nX: yyyy", "GET", 20),
            Err(ResponseHeadError::TooLarge { limit: 20 })
        );
    }
}
