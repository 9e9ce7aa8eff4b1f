//! One export request, with OTLP/HTTP's retry rules (specification.md §"OTLP/HTTP Response",
//! §"OTLP/HTTP Throttling", §"OTLP/HTTP Connection"; exporter.md §"Retry").
//!
//! - 200 is success; a `partial_success` in the answer is read and reported, never retried.
//! - 429, 502, 503 and 504 are retried, and so is a receiver that cannot be reached, closes the
//!   connection or does not answer in time. Every other status is final (400 means bad data).
//! - Between attempts the wait doubles from `RetryPolicy::initial` up to
//!   `RetryPolicy::max_delay`, each wait drawn at random from its upper half (jitter), unless
//!   the answer carries `Retry-After` (seconds or an HTTP-date), which is waited for as given:
//!   a `Retry-After` longer than `RetryPolicy::max_retry_after` ends the attempts instead.
//! - A body larger than `MAX_REQUEST_BYTES` is not sent (§"OTLP/HTTP Request": 64 MiB).

use super::{OtlpConfig, OtlpError};
use crate::text::{Keep, truncate};
use crate::trace::otlp::Encoding;
use crate::trace::record::SpanRecord;
use crate::wire::WireError;
use crate::wire::http::client::{ClientRequest, ClientResponse, HttpClient};
use std::time::Duration;

/// The largest request body sent (specification.md recommends a 64 MiB limit).
pub(crate) const MAX_REQUEST_BYTES: usize = 64 * 1024 * 1024;

/// How often, and how patiently, an export is retried.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included (1: no retry).
    pub(crate) max_attempts: u32,
    /// The first wait; each later one doubles.
    pub(crate) initial: Duration,
    /// No wait is longer than this.
    pub(crate) max_delay: Duration,
    /// A `Retry-After` longer than this gives up instead of waiting.
    pub(crate) max_retry_after: Duration,
}

impl Default for RetryPolicy {
    /// Six attempts over about half a minute (waits of about 1, 2, 4, 8 and 16 s), and a
    /// `Retry-After` of up to a minute honoured.
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 6,
            initial: Duration::from_secs(1),
            max_delay: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// The wait before attempt `attempt + 1`: `initial · 2^(attempt-1)`, capped, jittered into
    /// its upper half so that many exporters retrying at once spread out.
    pub(crate) fn backoff(&self, attempt: u32) -> Duration {
        let base = self
            .initial
            .saturating_mul(
                1u32.checked_shl(attempt.saturating_sub(1))
                    .unwrap_or(u32::MAX),
            )
            .min(self.max_delay);
        let unit = crate::ids::random_u64() as f64 / u64::MAX as f64;
        base.mul_f64(0.5 + 0.5 * unit)
    }
}

/// What an accepted export delivered.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Delivery {
    /// Spans in the request.
    pub spans: usize,
    /// Requests made (0 when there was nothing to send).
    pub attempts: u32,
    /// Spans the receiver said it rejected (`partial_success.rejected_spans`).
    pub(crate) rejected_spans: u64,
    /// The receiver's `partial_success.error_message`, if it gave one.
    pub(crate) message: Option<String>,
}

/// Encode `spans` as `config` says and POST them, retrying as [`RetryPolicy`] allows. Nothing
/// is sent for no spans (specification.md §"Empty Telemetry Envelopes").
pub fn send(
    client: &HttpClient,
    config: &OtlpConfig,
    spans: &[SpanRecord],
    retry: &RetryPolicy,
) -> Result<Delivery, OtlpError> {
    if spans.is_empty() {
        return Ok(Delivery::default());
    }
    let body = config
        .encoding
        .encode(spans, &config.resource, &config.scope);
    let mut delivery = send_body(client, config, body, retry)?;
    delivery.spans = spans.len();
    Ok(delivery)
}

/// POST one encoded body, with the retries.
pub(crate) fn send_body(
    client: &HttpClient,
    config: &OtlpConfig,
    body: Vec<u8>,
    retry: &RetryPolicy,
) -> Result<Delivery, OtlpError> {
    if body.len() > MAX_REQUEST_BYTES {
        return Err(OtlpError::TooLarge {
            bytes: body.len(),
            limit: MAX_REQUEST_BYTES,
        });
    }
    let mut request = ClientRequest {
        method: "POST",
        url: config.endpoint.clone(),
        headers: vec![("Content-Type".into(), config.encoding.content_type().into())],
        body,
        timeout: config.timeout,
    };
    request.headers.extend(config.headers.iter().cloned());
    let url = &config.endpoint;
    let mut attempt = 0;
    loop {
        attempt += 1;
        let last = attempt >= retry.max_attempts.max(1);
        let wait = match client.send(request.clone()) {
            Ok(response) if (200..300).contains(&response.status) => {
                let (rejected_spans, message) = partial_success(&response, config.encoding);
                return Ok(Delivery {
                    spans: 0,
                    attempts: attempt,
                    rejected_spans,
                    message,
                });
            }
            Ok(response) => {
                if last || !matches!(response.status, 429 | 502 | 503 | 504) {
                    return Err(OtlpError::Refused {
                        url: url.clone(),
                        status: response.status,
                        attempts: attempt,
                        body: excerpt(&response.body),
                    });
                }
                match response.header("retry-after").and_then(retry_after) {
                    Some(after) if after > retry.max_retry_after => {
                        return Err(OtlpError::RetryAfterTooLong {
                            url: url.clone(),
                            status: response.status,
                            after,
                            limit: retry.max_retry_after,
                        });
                    }
                    Some(after) => after,
                    None => retry.backoff(attempt),
                }
            }
            Err(error) => {
                let retryable = matches!(
                    error,
                    WireError::Connect { .. }
                        | WireError::Disconnected { .. }
                        | WireError::Timeout { .. }
                );
                if last || !retryable {
                    return Err(OtlpError::Unreachable {
                        url: url.clone(),
                        attempts: attempt,
                        error,
                    });
                }
                retry.backoff(attempt)
            }
        };
        std::thread::sleep(wait);
    }
}

/// The start of a receiver's answer, as a log line may quote it: escaped, so a line break or
/// an escape sequence in it cannot forge a line or drive a terminal.
fn excerpt(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let text = truncate(&text, Keep::Chars(300), "");
    crate::text::escape_str(text.trim(), false).into_owned()
}

/// `Retry-After` (RFC 9110 §10.2.3): delay-seconds, or an HTTP-date (its IMF-fixdate form,
/// `Sun, 06 Nov 1994 08:49:37 GMT`; the obsolete forms read as absent, so the exporter's own
/// backoff applies). A date in the past is no wait.
pub(crate) fn retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        return Some(Duration::from_secs(value.parse().unwrap_or(u64::MAX)));
    }
    let when = http_date_ns(value)?;
    let now = i128::from(crate::time::now_ns());
    Some(Duration::from_nanos(
        u64::try_from((when - now).max(0)).unwrap_or(u64::MAX),
    ))
}

/// An IMF-fixdate (RFC 9110 §5.6.7) as nanoseconds since the epoch.
fn http_date_ns(s: &str) -> Option<i128> {
    // "Sun, 06 Nov 1994 08:49:37 GMT"
    let mut parts = s.split(' ');
    let (_weekday, day, month, year, time, zone) = (
        parts.next()?.strip_suffix(',')?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
    );
    if parts.next().is_some() || zone != "GMT" || day.len() != 2 || year.len() != 4 {
        return None;
    }
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month = MONTHS.iter().position(|m| *m == month)? + 1;
    crate::time::parse_rfc3339(&format!("{year}-{month:02}-{day}T{time}Z"))
}

/// `ExportTraceServiceResponse.partial_success` (trace_service.proto): `rejected_spans` (1)
/// and `error_message` (2), read from the answer in the request's encoding. An answer that
/// cannot be read counts as full success: the status already said the request was accepted.
fn partial_success(response: &ClientResponse, encoding: Encoding) -> (u64, Option<String>) {
    let (rejected, message) = match encoding {
        Encoding::Json => {
            let doc: serde_json::Value = serde_json::from_slice(&response.body).unwrap_or_default();
            let partial = &doc["partialSuccess"];
            let rejected = match &partial["rejectedSpans"] {
                serde_json::Value::String(s) => s.parse().unwrap_or(0),
                serde_json::Value::Number(n) => n.as_u64().unwrap_or(0),
                _ => 0,
            };
            let message = partial["errorMessage"].as_str().map(str::to_string);
            (rejected, message)
        }
        Encoding::Protobuf => proto_partial_success(&response.body).unwrap_or((0, None)),
    };
    (rejected, message.filter(|m| !m.is_empty()))
}

/// Read `partial_success` from a protobuf `ExportTraceServiceResponse`, skipping unknown
/// fields. `None` for bytes that are not a well-formed message.
fn proto_partial_success(body: &[u8]) -> Option<(u64, Option<String>)> {
    let mut result = (0, None);
    for (field, value) in Fields(body) {
        if let (1, Field::Len(inner)) = (field?, value) {
            for (f, v) in Fields(inner) {
                match (f?, v) {
                    (1, Field::Varint(n)) => result.0 = n,
                    (2, Field::Len(text)) => {
                        result.1 = Some(String::from_utf8_lossy(text).into_owned())
                    }
                    _ => {}
                }
            }
        }
    }
    Some(result)
}

/// One protobuf field's value, as far as the reader needs it.
enum Field<'a> {
    Varint(u64),
    Len(&'a [u8]),
    Other,
}

/// The fields of a protobuf message, each `(Some(number), value)`, or `(None, Other)` once
/// for malformed bytes, which ends the walk.
struct Fields<'a>(&'a [u8]);

impl<'a> Iterator for Fields<'a> {
    type Item = (Option<u64>, Field<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.0.is_empty() {
            return None;
        }
        let parsed = (|| {
            let key = read_varint(&mut self.0)?;
            let value = match key & 7 {
                0 => Field::Varint(read_varint(&mut self.0)?),
                1 => skip(&mut self.0, 8).map(|_| Field::Other)?,
                2 => {
                    let len = usize::try_from(read_varint(&mut self.0)?).ok()?;
                    Field::Len(skip(&mut self.0, len)?)
                }
                5 => skip(&mut self.0, 4).map(|_| Field::Other)?,
                _ => return None,
            };
            Some((key >> 3, value))
        })();
        match parsed {
            Some((field, value)) => Some((Some(field), value)),
            None => {
                self.0 = &[];
                Some((None, Field::Other))
            }
        }
    }
}

fn read_varint(bytes: &mut &[u8]) -> Option<u64> {
    let mut n: u64 = 0;
    for shift in (0..64).step_by(7) {
        let (&b, rest) = bytes.split_first()?;
        *bytes = rest;
        n |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Some(n);
        }
    }
    None
}

fn skip<'a>(bytes: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    if bytes.len() < n {
        return None;
    }
    let (taken, rest) = bytes.split_at(n);
    *bytes = rest;
    Some(taken)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_receivers_answer_is_quoted_escaped_in_the_log() {
        let body = b"nope\n2026-01-01 ddwire serve: forged \x1b]0;PWNED\x07";
        let shown = excerpt(body);
        assert!(
            !shown.contains('\n') && !shown.contains('\u{1b}'),
            "{shown}"
        );
        assert!(shown.starts_with("nope\\u{a}2026"), "{shown}");
    }

    #[test]
    fn retry_after_reads_seconds_and_an_imf_fixdate_and_ignores_the_rest() {
        assert_eq!(retry_after("120"), Some(Duration::from_secs(120)));
        assert_eq!(retry_after(" 0 "), Some(Duration::ZERO));
        assert_eq!(
            retry_after("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(Duration::ZERO)
        );
        let future = retry_after("Fri, 31 Dec 9999 23:59:59 GMT").unwrap();
        assert!(future > Duration::from_secs(100 * 365 * 86_400));
        for bad in [
            "",
            "-1",
            "1.5",
            "soon",
            "Sunday, 06-Nov-94 08:49:37 GMT",
            "Sun Nov  6 08:49:37 1994",
            "Sun, 06 Nov 1994 08:49:37 UTC",
            "Sun, 31 Feb 1994 08:49:37 GMT",
        ] {
            assert_eq!(retry_after(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn backoff_doubles_up_to_the_cap_and_stays_in_the_upper_half() {
        let policy = RetryPolicy {
            max_attempts: 10,
            initial: Duration::from_millis(100),
            max_delay: Duration::from_millis(500),
            max_retry_after: Duration::from_secs(1),
        };
        for (attempt, base) in [(1, 100), (2, 200), (3, 400), (4, 500), (9, 500), (200, 500)] {
            for _ in 0..50 {
                let d = policy.backoff(attempt).as_millis();
                assert!(d >= base / 2 && d <= base, "attempt {attempt}: {d} ms");
            }
        }
    }

    #[test]
    fn a_protobuf_partial_success_is_read_and_a_malformed_answer_is_full_success() {
        // partial_success { rejected_spans: 3, error_message: "bad" }, after an unknown field.
        let body = [
            0x10, 0x05, 0x0a, 0x07, 0x08, 0x03, 0x12, 0x03, b'b', b'a', b'd',
        ];
        assert_eq!(proto_partial_success(&body), Some((3, Some("bad".into()))));
        assert_eq!(proto_partial_success(&[]), Some((0, None)));
        assert_eq!(proto_partial_success(&[0x0a, 0x09, 0x08]), None);
        let response = |body: &[u8]| ClientResponse {
            status: 200,
            headers: vec![],
            body: body.to_vec(),
        };
        assert_eq!(
            partial_success(&response(&[0xff]), Encoding::Protobuf),
            (0, None)
        );
        assert_eq!(
            partial_success(
                &response(br#"{"partialSuccess":{"rejectedSpans":"2","errorMessage":"dup"}}"#),
                Encoding::Json
            ),
            (2, Some("dup".into()))
        );
        assert_eq!(
            partial_success(&response(br#"{"partialSuccess":null}"#), Encoding::Json),
            (0, None)
        );
    }
}
