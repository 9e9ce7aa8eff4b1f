"""a2a-sdk 0.3.26 (A2A v0.3) client -> a ddwire agent (`ddwire agent hello`).

Usage: python client_a2a03.py BASE_URL [--ca FILE]      (in the venv of requirements-a2a03.txt)

With `--ca FILE` (an https BASE_URL) every httpx client is made with `verify=` an SSLContext
trusting FILE's CA (tls_options.py); the tests are the same.

Proves that the v0.3 Python SDK, used the ordinary way, works with a ddwire agent:
- `A2ACardResolver` fetches and validates ddwire's card (the pydantic v0.3 `AgentCard`) at
  /.well-known/agent-card.json and at the pre-0.3 /.well-known/agent.json;
- `ClientFactory` with `ClientConfig(streaming=False)` picks JSON-RPC at the card's `url`
  and sends `message/send` with one data part holding an InvocationRequest and, in message
  metadata, the `traceparent` and `tracestate` of a real OpenTelemetry SDK span (injected with
  `TraceContextTextMapPropagator`; the span's parent carries a two-member TraceState);
- the reply parses as a v0.3 `Task`: completed, exactly one artifact `agent-result` whose only
  part is a data part `{"result": {...outcome.status "succeeded"...}, "spans": [str, ...]}`;
  each span string is `ReadableSpan.to_json(indent=None)` shaped JSON in the caller's trace,
  the agent's root span a child of the caller's span, with the caller's trace_state (the same
  repr text the OTel SDK writes for the caller's own span);
- the same context injected into the HTTP headers instead (what an instrumented HTTP client
  does), with no message metadata, puts the agent's spans under it too;
- malformed requests (two data parts; a text part only) give a failed Task whose status message
  carries `{"error": "expected exactly one data part, got N"}`;
- `tasks/get` through the client returns the same Task; an unknown id raises the SDK's
  `A2AClientJSONRPCError` with -32001 (TaskNotFound), and `tasks/cancel` of the completed task
  -32002 (TaskNotCancelable).
"""

import asyncio
import json
import random
import sys
import uuid

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.client.errors import A2AClientJSONRPCError
from a2a.types import (DataPart, Message, Part, Role, Task, TaskIdParams, TaskQueryParams, TaskState,
                       TextPart)
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, TraceState
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

import tls_options
from checks import ARTIFACT_NAME, check_agent_result, expect, invocation, run

_ARGS, _TLS = tls_options.split(sys.argv[1:], ("--ca",))
BASE = _ARGS[0].rstrip("/")
VERIFY = tls_options.verify(_TLS)
TRACER = TracerProvider(resource=Resource({"service.name": "a2a03-interop"})).get_tracer(__name__)


def message(parts, metadata=None):
    return Message(kind="message", message_id=str(uuid.uuid4()), role=Role.user,
                   parts=parts, metadata=metadata)


async def send(parts, metadata=None, headers=None):
    """Resolve the card, make a non-streaming client, send one message, return the Task."""
    async with httpx.AsyncClient(timeout=30, headers=headers, verify=VERIFY) as http:
        card = await A2ACardResolver(http, BASE).get_agent_card()
        client = ClientFactory(ClientConfig(streaming=False, httpx_client=http)).create(card)
        events = [ev async for ev in client.send_message(message(parts, metadata))]
    expect(len(events) == 1, f"expected one reply, got {len(events)}")
    ev = events[0]
    expect(isinstance(ev, tuple) and isinstance(ev[0], Task), f"the reply is not a Task: {ev!r:.300}")
    return ev[0]


def test_card():
    async def go():
        async with httpx.AsyncClient(timeout=30, verify=VERIFY) as http:
            card = await A2ACardResolver(http, BASE).get_agent_card()
            old = await A2ACardResolver(http, BASE, agent_card_path="/.well-known/agent.json").get_agent_card()
        expect(card.name == "hello.world", f"card name {card.name!r}")
        expect(card.protocol_version.startswith("0.3"), f"protocolVersion {card.protocol_version!r}")
        expect(card.preferred_transport == "JSONRPC", f"preferredTransport {card.preferred_transport!r}")
        expect(card.url == BASE + "/a2a", f"card url {card.url!r} != {BASE}/a2a")
        expect(card.capabilities.streaming is False, "card says it streams")
        exts = [e.uri for e in card.capabilities.extensions or [] if e.required]
        expect("https://w3id.org/data-director/a2a/agent-spec/v0" in exts,
               f"required extensions {exts}")
        expect(old == card, "the card at /.well-known/agent.json differs from agent-card.json")
    asyncio.run(go())


def send_under_otel_span(in_headers):
    """Send hello.world a request from inside a real OTel SDK span whose (remote) parent has a
    TraceState; propagate in message metadata or in HTTP headers. Return (task, caller span)."""
    parent = SpanContext(trace_id=random.getrandbits(128), span_id=random.getrandbits(64), is_remote=True,
                         trace_flags=TraceFlags(TraceFlags.SAMPLED),
                         trace_state=TraceState([("vendor", "v1"), ("congo", "t61rcWkgMzE")]))
    with TRACER.start_as_current_span("interop.caller", context=trace.set_span_in_context(NonRecordingSpan(parent))) as span:
        carrier = {}
        TraceContextTextMapPropagator().inject(carrier)
        expect(set(carrier) == {"traceparent", "tracestate"}, f"the propagator injected {carrier}")
        parts = [Part(root=DataPart(data=invocation()))]
        task = asyncio.run(send(parts, headers=carrier) if in_headers else send(parts, carrier))
    return task, span


def check_hello_task(task, span):
    ctx = span.get_span_context()
    caller_state = json.loads(span.to_json(indent=None))["context"]["trace_state"]
    expect(task.status.state == TaskState.completed, f"task state {task.status.state}")
    arts = task.artifacts or []
    expect(len(arts) == 1 and arts[0].name == ARTIFACT_NAME,
           f"artifacts {[a.name for a in arts]} != ['{ARTIFACT_NAME}']")
    parts = arts[0].parts
    expect(len(parts) == 1 and isinstance(parts[0].root, DataPart),
           f"artifact parts {[p.root.kind for p in parts]} != ['data']")
    result, _ = check_agent_result(parts[0].root.data, f"{ctx.trace_id:032x}", f"{ctx.span_id:016x}",
                                   caller_state)
    reply = (result.get("payload") or {}).get("reply_text", "")
    expect("hi from an upstream SDK" in reply, f"reply_text {reply!r}")


def test_send_with_otel_traceparent():
    check_hello_task(*send_under_otel_span(in_headers=False))


def test_send_with_otel_http_headers():
    check_hello_task(*send_under_otel_span(in_headers=True))


def status_error(task):
    msg = task.status.message
    expect(msg is not None, "the failed task has no status message")
    for p in msg.parts:
        if isinstance(p.root, DataPart) and "error" in p.root.data:
            return p.root.data["error"]
    fail_text = [p.root.model_dump(mode="json") for p in msg.parts]
    raise AssertionError(f"no data part with 'error' in the status message: {fail_text}")


def test_malformed_two_data_parts():
    task = asyncio.run(send([Part(root=DataPart(data=invocation())), Part(root=DataPart(data={"b": 2}))]))
    expect(task.status.state == TaskState.failed, f"task state {task.status.state}, not failed")
    err = status_error(task)
    expect(err == "expected exactly one data part, got 2", f"error {err!r}")


def test_malformed_text_only():
    task = asyncio.run(send([Part(root=TextPart(text="hello"))]))
    expect(task.status.state == TaskState.failed, f"task state {task.status.state}, not failed")
    err = status_error(task)
    expect(err == "expected exactly one data part, got 0", f"error {err!r}")


def test_get_and_cancel_task():
    async def go():
        async with httpx.AsyncClient(timeout=30, verify=VERIFY) as http:
            card = await A2ACardResolver(http, BASE).get_agent_card()
            client = ClientFactory(ClientConfig(streaming=False, httpx_client=http)).create(card)
            sent = [ev async for ev in client.send_message(message([Part(root=DataPart(data=invocation()))]))]
            task = sent[0][0]
            got = await client.get_task(TaskQueryParams(id=task.id))
            expect(got == task, "tasks/get returned a different task than message/send")
            for call, code in ((client.get_task(TaskQueryParams(id="no-such-task")), -32001),
                               (client.cancel_task(TaskIdParams(id=task.id)), -32002)):
                try:
                    await call
                except A2AClientJSONRPCError as e:
                    expect(e.error.code == code, f"error code {e.error.code} != {code}: {e}")
                else:
                    raise AssertionError(f"no error (wanted {code})")
    asyncio.run(go())


if __name__ == "__main__":
    sys.exit(run([
        ("a2a03-client/card", test_card),
        ("a2a03-client/send+otel-traceparent", test_send_with_otel_traceparent),
        ("a2a03-client/send+otel-http-headers", test_send_with_otel_http_headers),
        ("a2a03-client/malformed-two-data-parts", test_malformed_two_data_parts),
        ("a2a03-client/malformed-text-only", test_malformed_text_only),
        ("a2a03-client/get-task+errors", test_get_and_cancel_task),
    ]))
