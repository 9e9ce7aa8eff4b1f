//! JSON-RPC 2.0 (the 2010-03-26 / 2013-01-04 specification), written by hand.
//!
//! - A request is an object with `"jsonrpc": "2.0"`, a string `method`, optional structured
//!   `params` and an optional `id` (a string, an integer or `null`; absent means a
//!   notification, which gets no response).
//! - A response echoes the request's `id` exactly, JSON type included (`1` stays `1`, `"1"`
//!   stays `"1"`), and holds `result` or `error`; when the id could not be read (a parse error,
//!   an invalid request) it is `null`.
//! - A batch (an array) gets an array of responses, none for notifications; an empty array
//!   gets one `-32600` error object; a batch larger than [`MAX_BATCH`] gets one `-32600`.
//!   (The a2a-sdk servers refuse every batch; ddwire answers as the specification says.)
//! - A batch's calls run at most [`BATCH_PARALLELISM`] at a time, and the batch as a whole is
//!   answered within one deadline ([`BATCH_DEADLINE`] by default, see [`run_batch`]): a call
//!   not finished by then is answered with [`DEADLINE_EXCEEDED`]. Without it a batch of 32
//!   calls to a hung agent would hold its connection for 32 agent timeouts.
//! - Errors travel with HTTP 200, as the SDKs send them.
//! - One method's calls in their plain shape may be read straight from the body into typed
//!   params ([`parse_typed`], which the A2A endpoint uses for v0.3 `message/send` and 1.0
//!   `SendMessage`): no tree is
//!   built for the envelope. It declines anything else, and [`parse`] then reads the body and
//!   gives every error, so a body is refused with the same error either way.

use super::WireError;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Invalid JSON was received.
pub(crate) const PARSE_ERROR: i64 = -32700;
/// The JSON sent is not a valid request object.
pub(crate) const INVALID_REQUEST: i64 = -32600;
/// The method does not exist here.
pub(crate) const METHOD_NOT_FOUND: i64 = -32601;
/// Invalid method parameters.
pub(crate) const INVALID_PARAMS: i64 = -32602;
/// Internal error.
pub(crate) const INTERNAL_ERROR: i64 = -32603;
/// A2A: the task id is unknown.
pub(crate) const TASK_NOT_FOUND: i64 = -32001;
/// A2A: the task has finished and cannot be canceled.
pub(crate) const TASK_NOT_CANCELABLE: i64 = -32002;
/// A2A: push notifications are not supported.
pub(crate) const PUSH_NOTIFICATION_NOT_SUPPORTED: i64 = -32003;
/// A2A: the operation is not supported.
pub(crate) const UNSUPPORTED_OPERATION: i64 = -32004;
/// A2A: no authenticated extended card is configured.
pub(crate) const EXTENDED_CARD_NOT_CONFIGURED: i64 = -32007;
/// A2A 1.0: the requested A2A version is not supported.
pub(crate) const VERSION_NOT_SUPPORTED: i64 = -32009;

/// A batch call that had not finished when its batch's deadline passed. In the range the
/// specification reserves for implementation-defined server errors (-32000 to -32099), and
/// used by no A2A error.
pub(crate) const DEADLINE_EXCEEDED: i64 = -32000;

/// The most requests one batch may hold.
pub(crate) const MAX_BATCH: usize = 32;
/// How long a batch may take as a whole, by default: the default agent-call timeout, so a
/// batch takes no longer than one call to a hung agent.
pub(crate) const BATCH_DEADLINE: Duration = Duration::from_secs(60);
/// The most calls of one batch that run at once (each on a thread of its own).
pub(crate) const BATCH_PARALLELISM: usize = 4;

/// A JSON-RPC error object.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct RpcError {
    pub(crate) code: i64,
    pub(crate) message: String,
    pub(crate) data: Option<Value>,
}

impl RpcError {
    /// An error with a code and a message.
    pub(crate) fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    fn to_value(&self) -> Value {
        let mut e = json!({ "code": self.code, "message": self.message });
        if let Some(data) = &self.data {
            e["data"] = data.clone();
        }
        e
    }
}

/// One well-formed call.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Call {
    /// `None` for a notification; otherwise the id exactly as sent.
    pub(crate) id: Option<Value>,
    pub(crate) method: String,
    /// `null` when the request has no params.
    pub(crate) params: Value,
}

/// What a request body holds.
#[derive(Debug)]
pub(crate) enum Incoming {
    /// One request, or the error response to send for it.
    Single(std::result::Result<Call, Value>),
    /// A batch: each member a call or the error response for it.
    Batch(Vec<std::result::Result<Call, Value>>),
}

/// Read a request body. The body must already be within the size limit; nesting depth is
/// checked here against `max_depth`.
pub(crate) fn parse(body: &[u8], max_depth: usize) -> Incoming {
    let limits = crate::json::Limits {
        max_bytes: usize::MAX,
        max_depth,
    };
    let doc = match crate::json::parse(body, limits) {
        Ok(doc) => doc,
        Err(e) => {
            let message = e.to_string();
            return Incoming::Single(Err(error(
                &Value::Null,
                &RpcError::new(PARSE_ERROR, message),
            )));
        }
    };
    match doc {
        Value::Array(items) if items.is_empty() => Incoming::Single(Err(error(
            &Value::Null,
            &RpcError::new(INVALID_REQUEST, "an empty batch is not a request"),
        ))),
        Value::Array(items) if items.len() > MAX_BATCH => Incoming::Single(Err(error(
            &Value::Null,
            &RpcError::new(
                INVALID_REQUEST,
                format!(
                    "a batch of {} requests exceeds the limit of {MAX_BATCH}",
                    items.len()
                ),
            ),
        ))),
        Value::Array(items) => Incoming::Batch(items.into_iter().map(call).collect()),
        other => Incoming::Single(call(other)),
    }
}

/// Check one request object.
fn call(doc: Value) -> std::result::Result<Call, Value> {
    let Value::Object(mut obj) = doc else {
        return Err(error(
            &Value::Null,
            &RpcError::new(INVALID_REQUEST, "a request must be a JSON object"),
        ));
    };
    let id = obj.remove("id");
    if !id_is_valid(id.as_ref()) {
        return Err(error(
            &Value::Null,
            &RpcError::new(INVALID_REQUEST, "id must be a string, an integer or null"),
        ));
    }
    let reply_id = id.clone().unwrap_or(Value::Null);
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(error(
            &reply_id,
            &RpcError::new(INVALID_REQUEST, "jsonrpc must be \"2.0\""),
        ));
    }
    let Some(Value::String(method)) = obj.remove("method") else {
        return Err(error(
            &reply_id,
            &RpcError::new(INVALID_REQUEST, "method must be a string"),
        ));
    };
    let params = obj.remove("params").unwrap_or(Value::Null);
    if !matches!(params, Value::Object(_) | Value::Array(_) | Value::Null) {
        return Err(error(
            &reply_id,
            &RpcError::new(INVALID_PARAMS, "params must be an object or an array"),
        ));
    }
    Ok(Call { id, method, params })
}

/// Whether a request's `id` is one JSON-RPC 2.0 allows (§4: a string, a number, or null; a
/// number here must be an integer, as the spec advises against fractions), or absent.
fn id_is_valid(id: Option<&Value>) -> bool {
    match id {
        None | Some(Value::Null) | Some(Value::String(_)) => true,
        Some(n @ Value::Number(_)) => crate::json::type_name(n) == "integer",
        Some(_) => false,
    }
}

/// A request object (JSON-RPC 2.0 §4) whose members are exactly these, read straight from the
/// body's text: `params` typed by the method's reader, no intermediate tree. Read as an
/// [`Obj`](crate::json::Obj), as `params` must be too.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Typed<'a, P> {
    #[serde(borrow)]
    jsonrpc: &'a str,
    #[serde(default, deserialize_with = "present")]
    id: Option<Value>,
    #[serde(borrow)]
    method: &'a str,
    params: crate::json::Obj<P>,
}

/// A member that is present, told from an absent one even when it is `null` (serde's `Option`
/// would read `null` as absent): `Some(Value::Null)`, or `Some(None)` for an `Option`; with
/// `#[serde(default)]`, an absent one is `None`.
pub(crate) fn present<'de, D: serde::Deserializer<'de>, T: serde::Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// One call of one of `methods` whose params `P` reads, decoded straight from `body` when the
/// body is that call in its plain shape, with the method it names; `None` for anything else
/// (a batch, another method, a member
/// `P` does not know, a duplicate member, an escape in a borrowed string, a body over the
/// limits or not JSON, a bad `jsonrpc` or `id`), which [`parse`] then reads and, if it is
/// wrong, answers with its exact error. So this never refuses anything: it is the fast path
/// of [`parse`] for one method, with the same limits, and gives the same call for what it
/// takes. `P` must read what it accepts exactly as the general reader would.
pub(crate) fn parse_typed<'a, P: serde::Deserialize<'a>>(
    body: &'a [u8],
    max_depth: usize,
    methods: &[&'static str],
) -> Option<(Option<Value>, &'static str, P)> {
    let limits = crate::json::Limits {
        max_bytes: usize::MAX,
        max_depth,
    };
    let text = crate::json::within_limits(body, limits)?;
    let crate::json::Obj(call) =
        serde_json::from_str::<crate::json::Obj<Typed<'a, P>>>(text).ok()?;
    let method = methods.iter().find(|m| **m == call.method)?;
    (call.jsonrpc == "2.0" && id_is_valid(call.id.as_ref())).then_some((
        call.id,
        method,
        call.params.0,
    ))
}

/// Answers one call: its reply as JSON text, or `None` for a notification.
pub(crate) type Answer = Arc<dyn Fn(Call) -> Option<String> + Send + Sync>;

/// Answer a batch within `deadline`: the replies in order, notifications left out.
///
/// Members that are already error replies are answered at once. Calls run on up to
/// [`BATCH_PARALLELISM`] threads of their own; once `deadline` has passed, no call starts,
/// and each call not finished is answered with [`DEADLINE_EXCEEDED`], saying whether it never
/// started or is still running. A call still running cannot be stopped: it finishes on its
/// thread, and its reply is dropped.
pub(crate) fn run_batch(
    items: Vec<std::result::Result<Call, Value>>,
    deadline: Duration,
    answer: Answer,
) -> Vec<String> {
    let until = Instant::now() + deadline;
    let mut replies: Vec<Option<String>> = Vec::with_capacity(items.len());
    let mut pending: Vec<(usize, Call)> = Vec::new();
    for item in items {
        match item {
            Err(reply) => replies.push(Some(reply.to_string())),
            Ok(call) => {
                pending.push((replies.len(), call));
                replies.push(None);
            }
        }
    }
    let ids: Vec<(usize, Option<Value>)> =
        pending.iter().map(|(i, c)| (*i, c.id.clone())).collect();
    let started: Arc<Vec<AtomicBool>> =
        Arc::new(replies.iter().map(|_| AtomicBool::new(false)).collect());
    let (work_tx, work_rx) = crossbeam_channel::unbounded::<(usize, Call)>();
    let (done_tx, done_rx) = crossbeam_channel::unbounded::<(usize, Option<String>)>();
    let workers = pending.len().min(BATCH_PARALLELISM);
    for call in pending {
        let _ = work_tx.send(call);
    }
    drop(work_tx);
    let mut spawned = 0;
    for _ in 0..workers {
        let (work_rx, done_tx, answer, started) = (
            work_rx.clone(),
            done_tx.clone(),
            Arc::clone(&answer),
            Arc::clone(&started),
        );
        let worker = std::thread::Builder::new()
            .name("ddwire-jsonrpc-batch".into())
            .spawn(move || answer_calls(&work_rx, &done_tx, &answer, &started, until));
        spawned += usize::from(worker.is_ok());
    }
    if spawned == 0 {
        // No thread to be had: run the calls here, one after another, within the deadline.
        answer_calls(&work_rx, &done_tx, &answer, &started, until);
    }
    drop(done_tx);
    let mut outstanding = ids.len();
    while outstanding > 0 {
        match done_rx.recv_deadline(until) {
            Ok((i, reply)) => {
                // An empty string marks a notification's (absent) reply as done.
                replies[i] = Some(reply.unwrap_or_default());
                outstanding -= 1;
            }
            Err(_) => break,
        }
    }
    let seconds = deadline.as_secs_f64();
    for (i, id) in ids {
        if replies[i].is_some() {
            continue;
        }
        // An unfinished notification still gets no reply.
        let Some(id) = id else { continue };
        let what = if started[i].load(Ordering::SeqCst) {
            "had not finished; it runs on, and its result is not reported"
        } else {
            "had not started; it was not run"
        };
        let err = RpcError::new(
            DEADLINE_EXCEEDED,
            format!(
                "The batch deadline of {seconds} s passed: this call {what}. Send it alone to wait for it."
            ),
        );
        replies[i] = Some(error(&id, &err).to_string());
    }
    replies
        .into_iter()
        .flatten()
        .filter(|r| !r.is_empty())
        .collect()
}

/// Answer the calls of `work` (each marked `started` first), sending each reply to `done`, until
/// none is left or `until` has passed.
fn answer_calls(
    work: &crossbeam_channel::Receiver<(usize, Call)>,
    done: &crossbeam_channel::Sender<(usize, Option<String>)>,
    answer: &Answer,
    started: &[AtomicBool],
    until: Instant,
) {
    while let Ok((i, call)) = work.recv() {
        if Instant::now() >= until {
            break;
        }
        started[i].store(true, Ordering::SeqCst);
        if done.send((i, answer_caught(answer, call))).is_err() {
            break;
        }
    }
}

/// Answer a call; a panic becomes an internal error rather than a lost reply.
fn answer_caught(answer: &Answer, call: Call) -> Option<String> {
    let id = call.id.clone();
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| answer(call))) {
        Ok(reply) => reply,
        Err(_) => id.map(|id| {
            error(
                &id,
                &RpcError::new(INTERNAL_ERROR, "Internal error: the call panicked"),
            )
            .to_string()
        }),
    }
}

/// A success response as JSON text, around a result that is already JSON text (written by
/// this crate's own serialiser: it is inserted as it is).
pub(crate) fn success_text(id: &Value, result_json: &str) -> String {
    success_with(id, result_json.len() + 32, |out| {
        out.extend_from_slice(result_json.as_bytes());
    })
}

/// A success response as JSON text, its result appended by `write_result` (with this crate's
/// own serialiser) to a buffer that starts at `capacity` bytes: the result is written once,
/// in place.
pub(crate) fn success_with(
    id: &Value,
    capacity: usize,
    write_result: impl FnOnce(&mut Vec<u8>),
) -> String {
    let mut out = Vec::with_capacity(capacity);
    out.extend_from_slice(b"{\"id\":");
    serde_json::to_writer(&mut out, id).expect("a JSON value always serialises");
    out.extend_from_slice(b",\"jsonrpc\":\"2.0\",\"result\":");
    write_result(&mut out);
    out.push(b'}');
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

/// An error response.
pub(crate) fn error(id: &Value, err: &RpcError) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": err.to_value() })
}

/// A request object for a client to send (always with an id: notifications are never sent).
pub(crate) fn request(id: &Value, method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
}

/// The limits on a response a client reads (its size is bounded by the HTTP client).
pub(crate) const RESPONSE_LIMITS: crate::json::Limits = crate::json::Limits {
    max_bytes: usize::MAX,
    max_depth: 128,
};

/// Read a response as a client: the `result`, or [`WireError::JsonRpc`] for an `error`. A missing
/// `id` is accepted on an error (the a2a-sdk 0.3 server leaves it out when it has none); a
/// present id must match `expected_id`.
pub(crate) fn read_response(body: &[u8], expected_id: &Value) -> Result<Value, WireError> {
    let doc = crate::json::parse(body, RESPONSE_LIMITS).map_err(|e| {
        WireError::protocol(None, format!("the JSON-RPC response is not JSON: {e}"))
    })?;
    let Value::Object(mut obj) = doc else {
        return Err(WireError::protocol(
            None,
            "the JSON-RPC response is not an object",
        ));
    };
    // §5: a response names the protocol; a body without it (say, a proxy's or a stopped
    // server's own JSON error) is not a JSON-RPC answer at all.
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(WireError::protocol(
            None,
            "the response is not JSON-RPC 2.0 (no \"jsonrpc\": \"2.0\")",
        ));
    }
    if let Some(err) = obj.remove("error") {
        // §5.1: an error object has an integer code and a string message.
        let (Some(code), Some(message)) = (
            err.get("code").and_then(Value::as_i64),
            err.get("message").and_then(Value::as_str),
        ) else {
            return Err(WireError::protocol(
                None,
                format!("the JSON-RPC error {err} lacks an integer code or a string message"),
            ));
        };
        return Err(WireError::JsonRpc {
            code,
            message: message.to_string(),
            data: err.get("data").cloned(),
        });
    }
    match obj.get("id") {
        Some(id) if id == expected_id => {}
        Some(id) => {
            return Err(WireError::protocol(
                None,
                format!("the JSON-RPC response answers id {id}, not {expected_id}"),
            ));
        }
        None => return Err(WireError::protocol(None, "the JSON-RPC response has no id")),
    }
    obj.remove("result").ok_or_else(|| {
        WireError::protocol(None, "the JSON-RPC response has neither result nor error")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn single(body: &str) -> std::result::Result<Call, Value> {
        match parse(body.as_bytes(), 64) {
            Incoming::Single(one) => one,
            Incoming::Batch(_) => panic!("expected a single request"),
        }
    }

    #[test]
    fn the_response_id_keeps_the_json_type_of_the_request_id() {
        assert_eq!(
            single(r#"{"jsonrpc":"2.0","id":7,"method":"m"}"#)
                .unwrap()
                .id,
            Some(json!(7))
        );
        assert_eq!(
            single(r#"{"jsonrpc":"2.0","id":"7","method":"m"}"#)
                .unwrap()
                .id,
            Some(json!("7"))
        );
        assert_eq!(
            single(r#"{"jsonrpc":"2.0","id":null,"method":"m"}"#)
                .unwrap()
                .id,
            Some(Value::Null)
        );
        assert_eq!(
            single(r#"{"jsonrpc":"2.0","method":"m"}"#).unwrap().id,
            None
        );
        let reply = success_text(&json!(7), "{}");
        assert_eq!(
            serde_json::from_str::<Value>(&reply).unwrap(),
            json!({"id": 7, "jsonrpc": "2.0", "result": {}})
        );
    }

    #[test]
    fn unparsable_json_is_a_parse_error_with_a_null_id() {
        let e = single("{").unwrap_err();
        assert_eq!(
            (e["error"]["code"].as_i64(), &e["id"]),
            (Some(PARSE_ERROR), &Value::Null)
        );
    }

    #[test]
    fn a_wrong_version_or_id_type_is_an_invalid_request() {
        let e = single(r#"{"jsonrpc":"1.0","id":1,"method":"m"}"#).unwrap_err();
        assert_eq!(
            (e["error"]["code"].as_i64(), &e["id"]),
            (Some(INVALID_REQUEST), &json!(1))
        );
        for bad in [r#"true"#, r#"1.5"#, r#"{}"#, r#"[1]"#] {
            let e = single(&format!(r#"{{"jsonrpc":"2.0","id":{bad},"method":"m"}}"#)).unwrap_err();
            assert_eq!(
                (e["error"]["code"].as_i64(), &e["id"]),
                (Some(INVALID_REQUEST), &Value::Null),
                "{bad}"
            );
        }
        let e = single(r#"{"jsonrpc":"2.0","id":1,"method":"m","params":3}"#).unwrap_err();
        assert_eq!(e["error"]["code"].as_i64(), Some(INVALID_PARAMS));
    }

    #[test]
    fn batches_answer_as_the_specification_says() {
        assert!(
            matches!(parse(b"[]", 64), Incoming::Single(Err(e)) if e["error"]["code"] == INVALID_REQUEST)
        );
        let Incoming::Batch(items) =
            parse(b"[1, {\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"m\"}]", 64)
        else {
            panic!()
        };
        assert!(items[0].is_err() && items[1].is_ok());
        let big = format!("[{}]", vec!["1"; MAX_BATCH + 1].join(","));
        assert!(matches!(
            parse(big.as_bytes(), 64),
            Incoming::Single(Err(_))
        ));
    }

    fn batch(body: &str) -> Vec<std::result::Result<Call, Value>> {
        match parse(body.as_bytes(), 64) {
            Incoming::Batch(items) => items,
            Incoming::Single(_) => panic!("expected a batch"),
        }
    }

    #[test]
    fn a_batch_of_hung_calls_is_answered_within_one_deadline() {
        // 30 calls, an invalid member and a notification: a full batch of 32.
        const CALLS: usize = MAX_BATCH - 2;
        let calls: Vec<String> = (0..CALLS)
            .map(|i| format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"hang"}}"#))
            .collect();
        let body = format!(
            "[{}, 7, {}]",
            calls.join(","),
            r#"{"jsonrpc":"2.0","method":"hang"}"#
        );
        let hang: Answer = Arc::new(|call: Call| {
            std::thread::sleep(Duration::from_secs(3));
            call.id.map(|id| success_text(&id, "\"late\""))
        });
        let started = Instant::now();
        let replies = run_batch(batch(&body), Duration::from_millis(500), hang);
        let took = started.elapsed();
        assert!(took < Duration::from_secs(2), "answered after {took:?}");
        // The calls and the invalid member; the notification gets nothing.
        assert_eq!(replies.len(), CALLS + 1);
        let replies: Vec<Value> = replies
            .iter()
            .map(|r| serde_json::from_str(r).unwrap())
            .collect();
        for (i, reply) in replies.iter().take(CALLS).enumerate() {
            assert_eq!(reply["id"], json!(i));
            assert_eq!(reply["error"]["code"], DEADLINE_EXCEEDED);
            let message = reply["error"]["message"].as_str().unwrap();
            let expected = if i < BATCH_PARALLELISM {
                "had not finished"
            } else {
                "had not started"
            };
            assert!(message.contains(expected), "{i}: {message}");
        }
        assert_eq!(replies[CALLS]["error"]["code"], INVALID_REQUEST);
    }

    #[test]
    fn a_batch_that_finishes_in_time_keeps_its_order_and_drops_notifications() {
        let echo: Answer = Arc::new(|call: Call| {
            // Later calls finish first: the order must still be the batch's.
            let n = call.params["n"].as_u64().unwrap_or(0);
            std::thread::sleep(Duration::from_millis(50 - n * 10));
            call.id.map(|id| success_text(&id, &n.to_string()))
        });
        let body = r#"[{"jsonrpc":"2.0","id":"a","method":"m","params":{"n":1}},
                       {"jsonrpc":"2.0","method":"m","params":{"n":2}},
                       {"jsonrpc":"2.0","id":"c","method":"m","params":{"n":3}},
                       {"jsonrpc":"2.0","id":"d","method":"m","params":{"n":4}}]"#;
        let replies = run_batch(batch(body), Duration::from_secs(10), echo);
        let ids: Vec<Value> = replies
            .iter()
            .map(|r| serde_json::from_str::<Value>(r).unwrap()["id"].clone())
            .collect();
        assert_eq!(ids, [json!("a"), json!("c"), json!("d")]);
    }

    #[test]
    fn a_batch_call_that_panics_is_an_internal_error() {
        let boom: Answer = Arc::new(|_| panic!("boom"));
        let replies = run_batch(
            batch(r#"[{"jsonrpc":"2.0","id":1,"method":"m"}]"#),
            Duration::from_secs(5),
            boom,
        );
        let reply: Value = serde_json::from_str(&replies[0]).unwrap();
        assert_eq!(reply["error"]["code"], INTERNAL_ERROR);
    }

    #[test]
    fn a_client_accepts_an_error_without_an_id_and_refuses_a_mismatched_id() {
        let err = read_response(
            br#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"bad"}}"#,
            &json!("a"),
        )
        .unwrap_err();
        assert!(matches!(
            err,
            WireError::JsonRpc {
                code: PARSE_ERROR,
                ..
            }
        ));
        assert!(read_response(br#"{"jsonrpc":"2.0","id":"b","result":1}"#, &json!("a")).is_err());
        assert_eq!(
            read_response(br#"{"jsonrpc":"2.0","id":"a","result":1}"#, &json!("a")).unwrap(),
            json!(1)
        );
    }

    #[test]
    fn a_body_that_is_not_json_rpc_2_0_is_a_wire_error_not_an_rpc_error() {
        for body in [
            r#"{"error":"the server is shutting down"}"#,
            r#"{"jsonrpc":"1.0","id":"a","error":{"code":-32603,"message":"x"}}"#,
            r#"{"id":"a","result":1}"#,
            r#"{"jsonrpc":"2.0","id":"a","error":"boom"}"#,
            r#"{"jsonrpc":"2.0","id":"a","error":{"code":"x","message":"m"}}"#,
            r#"{"jsonrpc":"2.0","id":"a","error":{"code":-32603}}"#,
        ] {
            let err = read_response(body.as_bytes(), &json!("a")).unwrap_err();
            assert!(matches!(err, WireError::Protocol { .. }), "{body}: {err:?}");
        }
    }
}
