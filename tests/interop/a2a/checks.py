"""Shared helpers for the A2A interop scripts (standard library only, so every venv can use it).

- `run(tests)` runs named test functions and prints one line each, `PASS name` or
  `FAIL name: reason`, and returns the exit status (1 if any failed); with the environment
  variable INTEROP_TEST_PREFIX set (say `agent-hello/`), every name is printed after it.
- `check_agent_result(data, trace_id, span_id)` asserts what a ddwire agent puts in its
  `agent-result` artifact: `{"result": <AgentResult>, "spans": ["<ReadableSpan.to_json JSON>", ...]}`,
  with every span under the caller's traceparent.
- `invocation(text)` is the InvocationRequest sent to the `hello.world` agent.
"""

import json
import os
import traceback

# The keys of opentelemetry-sdk 1.45.2 `ReadableSpan.to_json()`, in order (fixtures/spans/README.md).
SPAN_KEYS = [
    "name", "context", "kind", "parent_id", "start_time", "end_time",
    "status", "attributes", "events", "links", "resource",
]
CONTEXT_KEYS = ["trace_id", "span_id", "trace_state"]
RESOURCE_KEYS = ["attributes", "schema_url"]
SPAN_KINDS = {"SpanKind.INTERNAL", "SpanKind.SERVER", "SpanKind.CLIENT",
              "SpanKind.PRODUCER", "SpanKind.CONSUMER"}

AGENT_ID = "hello.world"
ARTIFACT_NAME = "agent-result"


def invocation(text="hi from an upstream SDK"):
    """An InvocationRequest for hello.world (invocation_id and issued_at left to the agent)."""
    return {"agent_id": AGENT_ID, "input": {"schema_class": "Message", "message_text": text}}


def fail(reason):
    raise AssertionError(reason)


def expect(cond, reason):
    if not cond:
        fail(reason)


def check_span_json(text, trace_id_hex, span_id_hex, trace_state=None):
    """One span string: `ReadableSpan.to_json(indent=None)` shaped, under the caller's context.

    With `trace_state` (the caller span's own `to_json` `context.trace_state`, a Python repr),
    the span must carry the same: a child inherits its parent's tracestate."""
    expect(isinstance(text, str), f"a span is not a string: {text!r:.200}")
    span = json.loads(text)
    expect(isinstance(span, dict), f"a span is not a JSON object: {text:.200}")
    expect(list(span) == SPAN_KEYS, f"span keys {list(span)} != to_json order {SPAN_KEYS}")
    expect(list(span["context"]) == CONTEXT_KEYS,
           f"span context keys {list(span['context'])} != {CONTEXT_KEYS}")
    expect(list(span["resource"]) == RESOURCE_KEYS,
           f"span resource keys {list(span['resource'])} != {RESOURCE_KEYS}")
    expect(span["kind"] in SPAN_KINDS, f"span kind {span['kind']!r}")
    ctx = span["context"]
    want_trace = "0x" + trace_id_hex
    expect(ctx["trace_id"] == want_trace,
           f"span {span['name']!r} trace_id {ctx['trace_id']} != the caller's {want_trace}")
    expect(isinstance(ctx["span_id"], str) and len(ctx["span_id"]) == 18
           and ctx["span_id"].startswith("0x"), f"span_id {ctx['span_id']!r} is not 0x + 16 hex")
    if trace_state is not None:
        expect(ctx["trace_state"] == trace_state,
               f"span {span['name']!r} trace_state {ctx['trace_state']!r} != the caller's {trace_state!r}")
    # Python's to_json writes ", " and ": " separators; a compact dump would differ.
    expect(text == json.dumps(span), "span text is not byte-equal to json.dumps of itself "
           "(to_json(indent=None) uses ', ' and ': ' separators)")
    return span


def check_agent_result(data, trace_id_hex, span_id_hex, trace_state=None):
    """The data part of the `agent-result` artifact.

    Every span must be in the caller's trace; the spans whose parent is outside the returned
    set (the agent's root spans) must have the caller's span as their parent.
    """
    expect(isinstance(data, dict), f"artifact data is not an object: {data!r:.300}")
    expect(set(data) == {"result", "spans"}, f"artifact data keys {sorted(data)} != ['result', 'spans']")
    result = data["result"]
    status = (result.get("outcome") or {}).get("status")
    expect(status == "succeeded", f"result.outcome.status is {status!r}, not 'succeeded': {json.dumps(result)[:300]}")
    spans = data["spans"]
    expect(isinstance(spans, list) and spans, f"spans is not a non-empty list: {spans!r:.200}")
    expect(all(isinstance(s, str) for s in spans), "spans holds something other than strings")
    parsed = [check_span_json(s, trace_id_hex, span_id_hex, trace_state) for s in spans]
    own = {s["context"]["span_id"] for s in parsed}
    roots = [s for s in parsed if s["parent_id"] not in own]
    expect(roots, "no span has a parent outside the agent's own spans")
    want_parent = "0x" + span_id_hex
    for s in roots:
        expect(s["parent_id"] == want_parent,
               f"span {s['name']!r} parent_id {s['parent_id']} != the caller's span {want_parent}")
    return result, parsed


def run(tests):
    """Run `[(name, fn), ...]`; print PASS/FAIL lines; return 0 if all passed, else 1."""
    failed = 0
    prefix = os.environ.get("INTEROP_TEST_PREFIX", "")
    for name, fn in tests:
        name = prefix + name
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - every failure becomes one FAIL line
            failed += 1
            reason = str(e) if isinstance(e, AssertionError) else f"{type(e).__name__}: {e}"
            print(f"FAIL {name}: {' '.join(reason.split())[:600]}", flush=True)
            traceback.print_exc()
        else:
            print(f"PASS {name}", flush=True)
    return 1 if failed else 0
