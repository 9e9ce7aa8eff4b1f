//! Entry points for the fuzz targets (`fuzz_targets/`), the mutation test
//! (`tests/internal/parser_mutation.rs`) and the load generator (`benches/load`, which reads
//! responses with [`read_response`]): one function per hand-written parser, each taking raw bytes,
//! driving the parser the way ddwire drives it, and asserting what must hold of its answer
//! (a panic is a finding). Compiled only with the `fuzzing` feature, hidden from the docs, and
//! no part of the stated API: see the crate documentation's "API rules".
//!
//! Every entry point first turns the bytes into what the parser takes (UTF-8 text is made
//! with `from_utf8_lossy`, so multi-byte characters reach every text parser), and splits them
//! at the first NUL byte where a parser takes two inputs. Beyond "no panic, no hang", each
//! asserts a round trip where the parser has a writer: what it reads, written and read again,
//! reads the same.

#![allow(missing_docs)]

use crate::contract::InvocationRequest;
use crate::contract::pattern::Regex;
use crate::contract::schema::Schema;
use crate::json::{self, Limits, python};
use crate::trace::context::{SpanContext, TraceState, parse_traceparent};
use crate::wire::a2a::endpoint::{Endpoint, Execute, Plan, Reply, TaskPlan};
use crate::wire::a2a::fast::SendFast;
use crate::wire::a2a::{Binding, card, codec, v03, v10};
use crate::wire::http::Request;
use crate::wire::sign::{self, Direction, Key, Signable, Verifier};
use serde_json::{Value, json};
use std::borrow::Cow;
use std::sync::{Arc, LazyLock};

/// `data` split at its first NUL byte (all of it and nothing, if there is none).
fn split(data: &[u8]) -> (&[u8], &[u8]) {
    match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[]),
    }
}

fn text(data: &[u8]) -> Cow<'_, str> {
    String::from_utf8_lossy(data)
}

/// `traceparent` and `tracestate` (W3C Trace Context §3.2, §3.3), and the `repr` of a trace
/// state that span JSON carries: a valid header round-trips through its writer, a refused one
/// restarts the trace, and nothing panics on any byte.
pub fn trace_context(data: &[u8]) {
    let (parent, state) = split(data);
    let (parent, state) = (text(parent), text(state));
    let parsed = parse_traceparent(&parent);
    if let Some((trace_id, span_id, flags)) = parsed {
        assert!(
            parent.is_ascii(),
            "a traceparent with non-ASCII was accepted"
        );
        assert!(
            trace_id.0 != 0 && span_id.0 != 0,
            "an all-zero id was accepted"
        );
        let written = format!("00-{trace_id}-{span_id}-{flags:02x}");
        assert_eq!(
            parse_traceparent(&written),
            Some((trace_id, span_id, flags))
        );
    }
    let extracted = SpanContext::extract(Some(&parent), Some(&state));
    assert_eq!(
        extracted.as_ref().map(|c| (c.trace_id, c.span_id, c.flags)),
        parsed
    );
    if let Some(members) = TraceState::parse(&state) {
        assert!(state.is_ascii(), "a tracestate with non-ASCII was accepted");
        assert!(members.0.len() <= crate::trace::context::TRACESTATE_MAX_MEMBERS);
        assert_eq!(TraceState::parse(&members.header()), Some(members.clone()));
        let repr = members.python_repr();
        assert_eq!(
            crate::trace::span_json::parse_trace_state_repr(&repr),
            Some(members)
        );
    }
    if let Some(members) = crate::trace::span_json::parse_trace_state_repr(&state) {
        let _ = members.python_repr();
    }
}

/// Below this many nanoseconds (2^32 s, the year 2106) a time survives OpenTelemetry Python's
/// double arithmetic (`ns / 1e9`, `time::otel_time`) to the microsecond; beyond it the double's
/// step exceeds half a microsecond, and Python's writer (so ddwire's) may print a time read
/// back one microsecond off. Found by the `span_json` target (year 2423).
pub const EXACT_TIMES_BELOW_NS: u64 = (1 << 32) * 1_000_000_000;

/// One span JSON line (`trace::from_json`): a span read from any text writes as one line that
/// reads back, and (with every time before [`EXACT_TIMES_BELOW_NS`]) as the same span.
pub fn span_json(data: &[u8]) {
    let text = text(data);
    let Ok(span) = crate::trace::from_json(&text) else {
        return;
    };
    let line = crate::trace::to_json(&span);
    assert!(!line.contains('\n'), "a span JSON line holds a newline");
    let again = crate::trace::from_json(&line)
        .unwrap_or_else(|e| panic!("a span ddwire wrote does not read back: {e}\n{line}"));
    let times = [span.start_ns, span.end_ns]
        .into_iter()
        .chain(span.events.iter().map(|e| e.time_ns));
    if times.clone().all(|t| t < EXACT_TIMES_BELOW_NS) {
        assert_eq!(crate::trace::to_json(&again), line);
    } else {
        // Each time within the microsecond written plus the double's step (2^-52 of it).
        let near = |a: u64, b: u64| a.abs_diff(b) <= 1_000 + a.max(b) / (1 << 50);
        assert!(near(again.start_ns, span.start_ns) && near(again.end_ns, span.end_ns));
        assert_eq!(again.events.len(), span.events.len());
        assert!(
            again
                .events
                .iter()
                .zip(&span.events)
                .all(|(a, b)| near(a.time_ns, b.time_ns))
        );
        assert_eq!((&again.name, again.span_id), (&span.name, span.span_id));
    }
}

/// RFC 3339 date-times (`time::parse_rfc3339`, §5.6): a time read writes back as one that
/// reads as the same instant, to the microsecond the writer keeps.
pub fn rfc3339(data: &[u8]) {
    let text = text(data);
    let Some(ns) = crate::time::parse_rfc3339(&text) else {
        return;
    };
    // Years 1 to 9999 in UTC: what the writer spells in four digits.
    const YEAR_1: i128 = -62_135_596_800 * 1_000_000_000;
    const YEAR_10000: i128 = 253_402_300_800 * 1_000_000_000;
    if !(YEAR_1..YEAR_10000).contains(&ns) {
        return;
    }
    let written = crate::time::rfc3339(ns);
    let back = crate::time::parse_rfc3339(&written)
        .unwrap_or_else(|| panic!("{written} (from {text:?}) does not read back"));
    assert_eq!(back, ns - ns.rem_euclid(1000), "{text:?} -> {written}");
    assert_eq!(
        crate::harness::store::parse_time(&written),
        Some(back),
        "the store's filter reads a time differently"
    );
}

/// The JSON reader (`json::parse` within limits, the lenient reader for stored text) and the
/// Python writers over what it reads: integer literals of any length up to Python's limit,
/// floats printed as `float.__repr__`, strings escaped as `json.encoder` does. A document
/// written canonically reads back and writes the same bytes again, and every text `reformat`
/// writes is JSON.
pub fn json(data: &[u8]) {
    let Some((&selector, bytes)) = data.split_first() else {
        return;
    };
    let limits = Limits {
        max_bytes: [64, 4096, 1 << 20, 1 << 22][usize::from(selector & 3)],
        max_depth: [1, 4, 16, 64][usize::from((selector >> 2) & 3)],
    };
    let _ = json::from_slice_lossy(bytes);
    if let Ok(value) = json::parse(bytes, limits) {
        let canonical = python::dumps(&value, python::Style::CANONICAL);
        for style in [
            python::Style::DEFAULT,
            python::Style::PYDANTIC,
            python::Style::INDENT2,
        ] {
            let _ = python::dumps(&value, style);
        }
        let _ = (python::py_repr(&value), python::py_str(&value));
        if json::non_finite(&value).is_none() {
            let back = json::parse(canonical.as_bytes(), Limits::DEFAULT)
                .unwrap_or_else(|e| panic!("canonical text does not read back: {e}\n{canonical}"));
            assert_eq!(python::dumps(&back, python::Style::CANONICAL), canonical);
            let ascii = python::dumps(&value, python::Style::DEFAULT);
            assert!(ascii.is_ascii(), "ensure_ascii wrote non-ASCII");
            let from_ascii = json::parse(ascii.as_bytes(), Limits::DEFAULT)
                .unwrap_or_else(|e| panic!("json.dumps text does not read back: {e}\n{ascii}"));
            assert_eq!(
                python::dumps(&from_ascii, python::Style::CANONICAL),
                canonical
            );
        }
    }
    if let Ok(text) = std::str::from_utf8(bytes)
        && json::check_depth(bytes, limits.max_depth).is_ok()
    {
        for style in [python::Style::CANONICAL, python::Style::DEFAULT] {
            if let Some(out) = python::reformat(text, style)
                && !out.contains("Infinity")
                && !out.contains("NaN")
            {
                serde_json::from_str::<Value>(&out)
                    .unwrap_or_else(|e| panic!("reformat wrote no JSON: {e}\n{out}"));
            }
        }
    }
    // Any double, as its bits: `float.__repr__` and pydantic's spelling read back exactly.
    if let Some(bits) = bytes.get(..8) {
        let x = f64::from_le_bytes(bits.try_into().unwrap_or([0; 8]));
        if x.is_finite() {
            for spelled in [python::float_repr(x), python::float_pydantic(x)] {
                let back: f64 = spelled
                    .parse()
                    .unwrap_or_else(|_| panic!("{spelled} is not a float"));
                assert_eq!(back.to_bits(), x.to_bits(), "{x:e} spelled {spelled}");
            }
        }
    }
}

/// The contract's pattern engine (`contract::pattern`, ECMA-262 subset): compiling any text
/// either works or names the problem, and matching any subject ends within the step budget.
pub fn pattern(data: &[u8]) {
    let (pattern, subject) = split(data);
    let (pattern, subject) = (text(pattern), text(subject));
    let Ok(regex) = Regex::new(&pattern) else {
        return;
    };
    assert_eq!(regex.as_str(), pattern);
    // Matching ends within the budget, and says the same twice.
    let mut steps = crate::contract::pattern::STEP_BUDGET;
    let first = regex.match_within(&subject, &mut steps).ok();
    let mut steps = crate::contract::pattern::STEP_BUDGET;
    assert_eq!(regex.match_within(&subject, &mut steps).ok(), first);
}

/// The schema validator (`contract::schema`, the Draft 7 subset class schemas use): a schema
/// either compiles or is refused with a pointer, and validating any instance ends, with the
/// errors sorted and the quick answer agreeing with the full one.
pub fn schema(data: &[u8]) {
    let (schema, instance) = split(data);
    let limits = Limits {
        max_bytes: 1 << 16,
        max_depth: 32,
    };
    let (Ok(schema), Ok(instance)) = (json::parse(schema, limits), json::parse(instance, limits))
    else {
        return;
    };
    let Ok(compiled) = Schema::compile(&schema) else {
        return;
    };
    let errors = compiled.validate(&instance);
    assert!(errors.windows(2).all(|w| w[0] <= w[1]), "unsorted errors");
    assert_eq!(
        compiled.is_valid(&instance),
        errors.is_empty(),
        "{errors:?}"
    );
}

/// An endpoint that answers every well-formed send with a completed task at once (no thread
/// runs work for it), for [`jsonrpc`].
static ENDPOINT: LazyLock<Endpoint> = LazyLock::new(|| {
    let execute: Execute = Arc::new(|message, _, _| {
        if message.parts.len() % 2 == 0 {
            Plan::Message(message.clone())
        } else {
            Plan::Task(TaskPlan::done(Reply::completed(Vec::new())))
        }
    });
    Endpoint::new(execute)
});

/// JSON-RPC 2.0 (`wire::jsonrpc`) as a server reads a request and a client reads a response,
/// and the A2A endpoint behind it in both bindings: every answer is JSON-RPC 2.0 (one reply
/// object, or an array of them for a batch), or nothing for notifications. And the typed
/// reader of message/send and SendMessage (`fast::SendFast`) takes only what the general
/// reader (`jsonrpc::parse`, then `codec::decode_send_params`) reads without error in that
/// binding, giving the same id and params; and the InvocationRequest's plain-shape reader
/// agrees with its validator on each data part it takes.
pub fn jsonrpc(data: &[u8]) {
    let Some((&selector, body)) = data.split_first() else {
        return;
    };
    let _ = crate::wire::jsonrpc::read_response(body, &json!(1));
    typed_send_agrees(body);
    let mut headers = vec![("content-type".to_string(), "application/json".to_string())];
    if selector & 1 == 1 {
        headers.push(("a2a-version".into(), "1.0".into()));
    }
    let request = Request {
        method: "POST".into(),
        path: "/a2a".into(),
        headers: headers.into(),
        body: body.to_vec(),
        ..Request::default()
    };
    let response = ENDPOINT.handle(&request);
    let crate::wire::http::Body::Bytes(out) = response.body else {
        panic!("the endpoint streamed an answer");
    };
    if response.status == 204 {
        assert!(out.is_empty());
        return;
    }
    let answer: Value = serde_json::from_slice(&out)
        .unwrap_or_else(|e| panic!("the endpoint answered no JSON: {e}"));
    let replies = match &answer {
        Value::Array(items) => items.clone(),
        one => vec![one.clone()],
    };
    assert!(!replies.is_empty());
    for reply in replies {
        assert_eq!(reply["jsonrpc"], "2.0", "{reply}");
        assert!(
            reply.get("result").is_some() != reply.get("error").is_some(),
            "{reply}"
        );
        if let Some(error) = reply.get("error") {
            assert!(
                error["code"].is_i64() && error["message"].is_string(),
                "{reply}"
            );
        }
    }
}

/// Panic unless a send's typed reader agrees with the general one on `body`, in either
/// binding (see [`jsonrpc`]).
fn typed_send_agrees(body: &[u8]) {
    use crate::wire::jsonrpc::{self, Incoming};
    let depth = crate::json::Limits::DEFAULT.max_depth;
    let sends = [v03::SEND, v10::SEND];
    let Some((id, method, fast)) = jsonrpc::parse_typed::<SendFast>(body, depth, &sends) else {
        return;
    };
    let binding = Binding::of_method(method).expect("a send is an A2A method");
    let Some(params) = fast.into_params(binding) else {
        return;
    };
    let Incoming::Single(Ok(call)) = jsonrpc::parse(body, depth) else {
        panic!("the typed reader took a body the general reader refuses");
    };
    assert_eq!((call.id, call.method.as_str()), (id, method));
    let options = codec::decode_send_options(binding, call.params.get("configuration")).ok();
    let general = codec::decode_send_params(binding, call.params)
        .unwrap_or_else(|e| panic!("the typed reader took params the general reader refuses: {e}"));
    assert_eq!(general, params);
    // The agents read the InvocationRequest from the one data part.
    for data in params.message.data_parts() {
        plain_request_agrees(data);
    }
    assert_eq!(
        options,
        codec::decode_send_options(binding, params.configuration.as_ref()).ok()
    );
}

/// Which A2A document a codec target reads, chosen by the first byte.
#[derive(Clone, Copy)]
enum Doc {
    SendParams,
    Task,
    Result,
    Message,
}

fn doc_of(selector: u8) -> Doc {
    [Doc::SendParams, Doc::Task, Doc::Result, Doc::Message][usize::from(selector & 3)]
}

/// The A2A codec (`wire::a2a::codec`) in v0.3: whatever it decodes encodes to JSON that
/// decodes again and encodes to the same JSON. And the client's typed reader of a send's reply
/// (`wire::a2a::reply`), given the bytes as the `result` of a response, takes only what the
/// general reader (`jsonrpc::read_response`, then `codec::decode_result`) reads without error,
/// giving the same task.
pub fn a2a_v03(data: &[u8]) {
    a2a_codec(Binding::V03, data);
}

/// The A2A codec and the typed reply reader in 1.0, as [`a2a_v03`] checks v0.3; also
/// `ListTasks` params.
pub fn a2a_v10(data: &[u8]) {
    a2a_codec(Binding::V10, data);
}

fn a2a_codec(binding: Binding, data: &[u8]) {
    let Some((&selector, bytes)) = data.split_first() else {
        return;
    };
    typed_reply_agrees(binding, bytes);
    let Ok(value) = json::parse(bytes, Limits::DEFAULT) else {
        return;
    };
    let _ = codec::decode_task_id(binding, &value);
    let _ = codec::decode_history_length(binding, &value);
    let _ = codec::decode_send_options(binding, Some(&value));
    if binding == Binding::V10 {
        let _ = v10::decode_list_params(&value);
    }
    let round_trip = |value: Value| match doc_of(selector) {
        Doc::SendParams => codec::decode_send_params(binding, value)
            .map(|p| codec::encode_send_params(binding, &p)),
        Doc::Task => codec::decode_task(binding, value).map(|t| codec::encode_task(binding, &t)),
        Doc::Result => {
            codec::decode_result(binding, value).map(|r| codec::encode_result(binding, &r))
        }
        Doc::Message => codec::decode_message(binding, value, "message")
            .map(|m| codec::encode_message(binding, &m)),
    };
    let Ok(first) = round_trip(value) else {
        return;
    };
    match round_trip(first.clone()) {
        Ok(again) => assert_eq!(again, first),
        Err(e) => panic!("{binding:?} JSON ddwire wrote does not decode: {e}\n{first}"),
    }
}

/// Panic unless the typed reader of a send's reply agrees with the general one on a response
/// whose `result` is `result` (see [`a2a_v03`]).
fn typed_reply_agrees(binding: Binding, result: &[u8]) {
    let mut body = br#"{"jsonrpc":"2.0","id":"a","result":"#.to_vec();
    body.extend_from_slice(result);
    body.push(b'}');
    let Some(task) = crate::wire::a2a::reply::read_task(binding, &body, "a") else {
        return;
    };
    let result = crate::wire::jsonrpc::read_response(&body, &json!("a")).unwrap_or_else(|e| {
        panic!("the typed reader took a reply the general reader refuses: {e}")
    });
    let general = codec::decode_result(binding, result).unwrap_or_else(|e| {
        panic!("the typed reader took a result the general reader refuses: {e}")
    });
    assert_eq!(general, crate::wire::a2a::model::SendResult::Task(task));
}

/// One Server-Sent Events stream as a client reads it, by the wire's reader (WHATWG HTML
/// §9.2.6): the data of each event dispatched, and the number of comment lines.
fn read_sse(stream: &[u8]) -> (Vec<String>, usize) {
    let mut reader = crate::wire::sse::Reader::new(stream);
    let (mut events, mut comments) = (Vec::new(), 0);
    loop {
        match reader.next_item() {
            Ok(Some(crate::wire::sse::Item::Event(event))) => events.push(event.data),
            Ok(Some(crate::wire::sse::Item::Comment(_))) => comments += 1,
            Ok(None) => return (events, comments),
            Err(e) => panic!("the SSE ddwire wrote cannot be read back: {e}"),
        }
    }
}

/// The SSE writer (`wire::sse`) and the AG-UI events written with it: any JSON value is one
/// event whose data is that JSON, any comment text is one comment and no event, and an AG-UI
/// `RUN_ERROR` carrying any message reads back as that message.
pub fn sse(data: &[u8]) {
    let (first, second) = split(data);
    let (first, second) = (text(first), text(second));
    if let Ok(value) = json::parse(first.as_bytes(), Limits::DEFAULT) {
        let line = value.to_string();
        let (events, comments) = read_sse(&crate::wire::sse::event(&line));
        assert_eq!((events, comments), (vec![line], 0));
    }
    let (events, comments) = read_sse(&crate::wire::sse::comment(&first));
    assert!(events.is_empty(), "a comment dispatched {events:?}");
    assert_eq!(comments, 1, "a comment is not one comment line: {first:?}");
    let error = crate::wire::agui::Event::RunError {
        message: first.to_string(),
        code: Some(second.to_string()),
    };
    let (events, _) = read_sse(&error.to_sse());
    assert_eq!(events.len(), 1);
    let read: Value = serde_json::from_str(&events[0]).expect("an event's data is JSON");
    assert_eq!(read["message"], first.as_ref());
    assert_eq!(read["code"], second.as_ref());
}

/// AG-UI's `RunAgentInput` as `POST /agui` reads it, and the InvocationRequest it forwards:
/// a request accepted writes a document that is accepted again as the same request, and the
/// request's plain-shape reader agrees with its validator.
pub fn run_agent_input(data: &[u8]) {
    let Ok(body) = json::parse(data, Limits::DEFAULT) else {
        return;
    };
    let Some(input) = crate::wire::agui::RunAgentInput::from_value(&body) else {
        assert!(!body.is_object());
        return;
    };
    let Some(request) = input
        .forwarded_props
        .as_ref()
        .and_then(|p| p.get("request"))
    else {
        return;
    };
    plain_request_agrees(request);
    let Ok(parsed) = InvocationRequest::from_value(request) else {
        return;
    };
    let document = parsed.to_document();
    let again = InvocationRequest::from_value(&document)
        .unwrap_or_else(|e| panic!("a request ddwire wrote is refused: {e}\n{document}"));
    assert_eq!(again.to_document(), document);
}

/// Panic unless the InvocationRequest's plain-shape reader takes only a document the
/// validator accepts, reading it as the validator and deserializer do (an id or time left out
/// is made fresh by each); see [`run_agent_input`] and [`jsonrpc`].
fn plain_request_agrees(document: &Value) {
    use crate::contract::request::{plain, validated};
    let Some(fast) = plain(document) else {
        return;
    };
    let general = validated(document)
        .unwrap_or_else(|e| panic!("the plain reader took a request the validator refuses: {e}"));
    let fresh = |key: &str, general: &String, fast: String| match document.get(key) {
        None => general.clone(),
        Some(_) => fast,
    };
    let fast = InvocationRequest {
        invocation_id: fresh("invocation_id", &general.invocation_id, fast.invocation_id),
        issued_at: fresh("issued_at", &general.issued_at, fast.issued_at),
        ..fast
    };
    assert_eq!(fast, general, "{document}");
}

/// A built-in agent's card, to splice fuzzed values into.
static CARD: LazyLock<Value> = LazyLock::new(|| {
    let agent = crate::agent::builtin::Hello::new();
    card::agent_card(crate::agent::Agent::spec(&agent), "http://hello.test")
});

/// Where [`agent_card`] may put a fuzzed value in a real card.
const CARD_PLACES: [&[&str]; 8] = [
    &["capabilities", "extensions", "0", "params"],
    &["capabilities", "extensions", "0", "params", "schemas"],
    &[
        "capabilities",
        "extensions",
        "0",
        "params",
        "schemas",
        "Message",
    ],
    &["capabilities", "extensions", "0", "params", "derivations"],
    &["capabilities", "extensions", "0", "params", "accepts"],
    &[
        "capabilities",
        "extensions",
        "0",
        "params",
        "grounding_mode",
    ],
    &["supportedInterfaces"],
    &["url"],
];

/// Agent cards as the registry reads them (`card::spec_from_card`, which compiles the class
/// schemas a card carries, and the binding a card prefers): a spec read from a card writes a
/// card that reads back as the same spec. An odd first byte splices the input, as JSON, into
/// a real card at one of [`CARD_PLACES`], so the fuzzer works near valid cards.
pub fn agent_card(data: &[u8]) {
    let Some((&selector, bytes)) = data.split_first() else {
        return;
    };
    let Ok(value) = json::parse(bytes, Limits::DEFAULT) else {
        return;
    };
    let card_doc = if selector & 1 == 1 {
        let mut card_doc = CARD.clone();
        let place = CARD_PLACES[usize::from(selector >> 1) % CARD_PLACES.len()];
        let pointer: String = place.iter().map(|k| format!("/{k}")).collect();
        if let Some(slot) = card_doc.pointer_mut(&pointer) {
            *slot = value;
        }
        card_doc
    } else {
        value
    };
    let _ = crate::wire::a2a::client::Target::from_card(&card_doc);
    let Ok(spec) = card::spec_from_card(&card_doc) else {
        return;
    };
    let written = card::agent_card(&spec, "http://agent.test");
    let again = card::spec_from_card(&written)
        .unwrap_or_else(|e| panic!("a card ddwire wrote is refused: {e}\n{written}"));
    assert_eq!(again.describe(), spec.describe());
    crate::wire::a2a::client::Target::from_card(&written).expect("a written card has a binding");
}

/// The key every [`signature`] verifier holds.
static KEY: LazyLock<Key> =
    LazyLock::new(|| Key::new("agent.one", &[7u8; 32]).expect("a valid key"));

/// The request signature (`wire::sign`): the four headers' parsers on any values refuse or
/// verify without panicking (and forged bytes never verify), and a request signed over any
/// method, target and body verifies, once, and not after one byte of its body changes.
pub fn signature(data: &[u8]) {
    let mut fields = data.split(|&b| b == 0).map(|f| text(f).into_owned());
    let mut next = || fields.next().unwrap_or_default();
    let (key_id, timestamp, nonce, tag) = (next(), next(), next(), next());
    let (method, target, body) = (next(), next(), next());
    let signable = Signable {
        method: &method,
        target: &target,
        body: body.as_bytes(),
    };
    let now = 1_750_000_000;
    let verifier = Verifier::new(Direction::ToAgent, [KEY.clone()]);
    let headers: Vec<(String, String)> = [
        (sign::KEY_ID_HEADER, key_id),
        (sign::TIMESTAMP_HEADER, timestamp),
        (sign::NONCE_HEADER, nonce.clone()),
        (sign::SIGNATURE_HEADER, tag),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_ascii_lowercase(), v))
    .collect();
    if let Ok(who) = verifier.verify_at(&signable, &headers, now) {
        panic!("forged headers verified as {who}: {headers:?}");
    }
    let _ = sign::request_target(&target);
    let Ok(signature) = sign::sign_at(&KEY, Direction::ToAgent, &signable, now, &nonce) else {
        return;
    };
    let signed: Vec<(String, String)> = signature
        .headers()
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    assert_eq!(
        verifier.verify_at(&signable, &signed, now).as_deref(),
        Ok("agent.one")
    );
    assert!(
        verifier.verify_at(&signable, &signed, now).is_err(),
        "a replay verified"
    );
    let mut altered = body.clone().into_bytes();
    match altered.first_mut() {
        Some(b) => *b ^= 1,
        None => altered.push(b'x'),
    }
    let other = Signable {
        body: &altered,
        ..signable
    };
    let fresh = Verifier::new(Direction::ToAgent, [KEY.clone()]);
    assert!(
        fresh.verify_at(&other, &signed, now).is_err(),
        "an altered body verified"
    );
}

/// The chunked decoder alone (RFC 9112 §7.1): the first byte picks the limit; whatever the
/// rest, it never panics, never consumes more than it is given, never exceeds its limit, and
/// decodes the same at once as byte by byte.
pub fn chunked(data: &[u8]) {
    use crate::wire::http::chunked::{ChunkedDecoder, ChunkedError};
    type Read = Result<(Vec<u8>, usize, bool), ChunkedError>;
    fn whole(input: &[u8], limit: u64) -> Read {
        let mut d = ChunkedDecoder::new(limit);
        let mut out = Vec::new();
        let r = d.decode(input, &mut out)?;
        assert!(r.consumed <= input.len());
        assert_eq!(r.done, d.is_done());
        if !r.done {
            assert_eq!(r.consumed, input.len());
        }
        Ok((out, r.consumed, r.done))
    }
    let Some((&selector, input)) = data.split_first() else {
        return;
    };
    let limit = [0u64, 1, 7, 4096][usize::from(selector & 3)];
    let a = whole(input, limit);
    assert_eq!(a, crate::wire::http::chunked::decode_bytewise(input, limit));
    if let Ok((body, _, _)) = a {
        assert!(body.len() as u64 <= limit);
    }
}

/// The request parser end to end (RFC 9112 §2-§7): head, framing, body, and the in-memory
/// server around them. The first byte picks the limits and where the input is split; the
/// rest is the request. Every invariant of `tests/internal/http_parser_mutation.rs` holds.
pub fn request(data: &[u8]) {
    use crate::wire::http::body::BodyReader;
    use crate::wire::http::head::{self, Framing, METHODS};
    use crate::wire::http::memory::{parse_response, serve_bytes};
    use crate::wire::http::{Handler, Limits, Response};
    use std::sync::atomic::{AtomicUsize, Ordering};

    static CALLS: AtomicUsize = AtomicUsize::new(0);
    static HANDLER: LazyLock<Handler> = LazyLock::new(|| {
        Arc::new(|r: Request| {
            CALLS.fetch_add(1, Ordering::SeqCst);
            match r.body_error {
                Some(e) => Response::error(e.status(), &e.to_string()),
                None => Response::bytes(200, "application/octet-stream", r.body),
            }
        })
    });
    /// Feed a body reader `input` split at `cut`; (body, consumed, done) or the error.
    fn read(
        framing: Framing,
        limit: usize,
        input: &[u8],
        cut: usize,
    ) -> Option<(Vec<u8>, usize, bool)> {
        let mut reader = BodyReader::new(framing, limit).ok()?;
        let mut body = Vec::new();
        let cut = cut.min(input.len());
        let first = reader.feed(&input[..cut], &mut body).ok()?;
        assert!(first.consumed <= cut);
        if first.done {
            return Some((body, first.consumed, true));
        }
        assert_eq!(first.consumed, cut);
        let second = reader.feed(&input[cut..], &mut body).ok()?;
        assert!(second.consumed <= input.len() - cut);
        Some((body, cut + second.consumed, second.done))
    }

    let Some((&selector, input)) = data.split_first() else {
        return;
    };
    let limits = Limits {
        max_body_bytes: [0, 1, 16, 4096][usize::from(selector & 3)],
        max_header_bytes: [64, 512, 16 * 1024][usize::from((selector >> 2) % 3)],
        max_headers: [1, 8, 64][usize::from((selector >> 4) % 3)],
        ..Limits::DEFAULT
    };
    if let Ok(Some(h)) = head::parse_request(input, &limits) {
        assert!(h.len <= input.len() && h.len <= limits.max_header_bytes);
        assert!(METHODS.contains(&h.method));
        assert!(h.path.is_ascii() && h.query.is_ascii());
        let count = |name: &str| h.headers.iter().filter(|(n, _)| n == name).count();
        assert!(count("host") <= 1);
        match h.framing {
            Framing::Chunked => assert_eq!(count("content-length"), 0),
            Framing::Length(_) => assert_eq!(count("content-length"), 1),
            Framing::Empty => assert_eq!(count("content-length") + count("transfer-encoding"), 0),
            Framing::UntilClose => panic!("a request delimited by closing"),
        }
        let cut = usize::from(selector) * 7 % h.len.max(1);
        assert_eq!(head::parse_request(&input[..cut], &limits), Ok(None));
        let rest = &input[h.len..];
        let whole = read(h.framing, limits.max_body_bytes, rest, rest.len());
        let split = read(
            h.framing,
            limits.max_body_bytes,
            rest,
            usize::from(selector) % (rest.len() + 1),
        );
        assert_eq!(whole, split);
        if let Some((body, consumed, _)) = whole {
            assert!(body.len() <= limits.max_body_bytes && consumed <= rest.len());
        }
    }
    let before = CALLS.load(Ordering::SeqCst);
    let out = serve_bytes(&HANDLER, input, &limits);
    assert!(CALLS.load(Ordering::SeqCst) - before <= 1);
    let method = if input.starts_with(b"HEAD ") {
        "HEAD"
    } else {
        "GET"
    };
    let response = parse_response(&out, method).expect("the server's answer parses");
    assert!((200..600).contains(&response.status));
}

/// For the load generator (`benches/load`): one HTTP/1.1 response read from `stream` with the
/// client half of the server's own parser (RFC 9112 §6), its body read and dropped; `(status,
/// keep-alive)`, or None on any error. `buf` is reused between calls and grows to hold a head
/// of up to `max_head` bytes; a body over `max_body` bytes is an error, never allocated or
/// waited for. Bytes after the response are dropped.
pub fn read_response(
    stream: &mut impl std::io::Read,
    buf: &mut Vec<u8>,
    method: &str,
    max_head: usize,
    max_body: usize,
) -> Option<(u16, bool)> {
    use crate::wire::http::body::BodyReader;
    use crate::wire::http::head;
    if buf.is_empty() {
        buf.resize(4096, 0);
    }
    let mut filled = 0;
    let head = loop {
        if filled == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
        let n = stream.read(&mut buf[filled..]).ok()?;
        if n == 0 {
            return None;
        }
        filled += n;
        if let Some(head) = head::parse_response(&buf[..filled], method, max_head).ok()? {
            break head;
        }
    };
    let mut reader = BodyReader::new(head.framing, max_body).ok()?;
    let mut sink = Vec::new();
    let mut fed = reader.feed(&buf[head.len..filled], &mut sink).ok()?;
    while !fed.done {
        sink.clear();
        let n = stream.read(buf).ok()?;
        if n == 0 {
            reader.end_of_input().ok()?;
            break;
        }
        fed = reader.feed(&buf[..n], &mut sink).ok()?;
    }
    Some((head.status, head.keep_alive))
}

/// For the load generator's `harness` benchmark (`benches/load`): one invocation of
/// `document` straight into `conductor` (no HTTP), each stage timed through the conductor's
/// observer. The twelve instants are: the start, then each of the five stages' start and end
/// in the order they run (policy gate, input check, agent call, grounding check, store), then
/// the end. The error is the request's or the invocation's; a stage of a run that succeeded
/// and did not report is a broken promise of the conductor's, so it panics.
pub fn stage_instants(
    conductor: &crate::harness::conductor::Conductor,
    document: &Value,
    acting_for: &crate::contract::Principal,
) -> Result<[std::time::Instant; 12], crate::harness::HarnessError> {
    use crate::harness::conductor::{Phase, RunTrace, Stage};
    use std::sync::Mutex;
    use std::time::Instant;
    let marks: Mutex<Vec<(Stage, Phase, Instant)>> = Mutex::new(Vec::with_capacity(16));
    let observer = |stage: Stage, phase: Phase| {
        marks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((stage, phase, Instant::now()));
    };
    let request = InvocationRequest::from_value(document)?;
    let start = Instant::now();
    let run = conductor.invoke_observed(request, acting_for, RunTrace::new(None), &observer);
    let end = Instant::now();
    run?;
    let marks = marks.lock().unwrap_or_else(|p| p.into_inner());
    let mut points = [start; 12];
    for (i, stage) in Stage::ALL.into_iter().enumerate() {
        for (j, phase) in [Phase::Started, Phase::Finished].into_iter().enumerate() {
            points[1 + 2 * i + j] = marks
                .iter()
                .find(|(s, p, _)| *s == stage && *p == phase)
                .map(|m| m.2)
                .unwrap_or_else(|| panic!("stage {} did not report {phase:?}", stage.name()));
        }
    }
    points[11] = end;
    Ok(points)
}

/// For the load generator's `sign` bench: sign `count` calls whose body is `size` bytes with
/// `key`, then verify each (with a nonce cache that holds them all, so none is forgotten while
/// measured), and return how long the signing and the verifying took.
pub fn sign_then_verify(
    key: &Key,
    size: usize,
    count: u32,
) -> (std::time::Duration, std::time::Duration) {
    let signer = sign::Signer::new(key.clone(), Direction::ToAgent);
    let verifier =
        Verifier::new(Direction::ToAgent, [key.clone()]).with_nonce_capacity(count as usize);
    let body = vec![b'x'; size];
    let request = Signable {
        method: "POST",
        target: "/a2a",
        body: &body,
    };
    let started = std::time::Instant::now();
    let signatures: Vec<_> = (0..count)
        .map(|_| signer.sign(&request).expect("a bench call signs"))
        .collect();
    let signing = started.elapsed();
    let started = std::time::Instant::now();
    for signature in &signatures {
        let headers: Vec<(String, String)> = signature
            .headers()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        verifier
            .verify(&request, &headers)
            .expect("a bench call verifies");
    }
    (signing, started.elapsed())
}
