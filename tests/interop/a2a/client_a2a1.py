"""a2a-sdk 1.3.0 (A2A 1.0) client -> ddwire agents (`ddwire agent hello` and `ddwire agent echo`).

Usage: python client_a2a1.py HELLO_BASE_URL ECHO_BASE_URL      (in the venv of requirements-a2a1.txt)

Proves that the 1.x Python SDK, used the ordinary way, works with ddwire agents:
- `create_client(url, ClientConfig(streaming=False))` resolves ddwire's card, parses it into the
  1.0 proto `AgentCard` and picks the 1.0 JSON-RPC interface from `supportedInterfaces`: the
  wire shows `SendMessage` with `A2A-Version: 1.0` at <base>/a2a (recorded with an httpx hook);
- one data part with an InvocationRequest, plus a `traceparent` from a real OpenTelemetry SDK
  span, gives a completed task with exactly one `agent-result` artifact: one data part with
  `result.outcome.status == "succeeded"` and `ReadableSpan.to_json` span strings in the
  caller's trace, the agent's root span a child of the caller's span;
- the client turns the integers of a data part into floats (`1` goes out as `1.0`, the
  protobuf `Struct` way); ddwire's echo agent still accepts the input and returns the values;
- malformed requests (two data parts; a text part only) give a failed task whose status message
  carries `{"error": "expected exactly one data part, got N"}`;
- `GetTask` through the client returns the same task; an unknown id raises the SDK's typed
  `TaskNotFoundError`, `CancelTask` of the completed task `TaskNotCancelableError`;
- forced to v0.3 (ddwire's card with `supportedInterfaces` removed, which the SDK's own
  `parse_agent_card` turns into one interface with protocolVersion 0.3.0, exactly as for a
  v0.3-only agent), the SDK's compat transport sends `message/send` and gets the same result.
"""

import asyncio
import json
import sys
import uuid

import httpx
from a2a.client import ClientConfig, ClientFactory, create_client
from a2a.client.card_resolver import parse_agent_card
from a2a.types import (CancelTaskRequest, GetTaskRequest, Message, Part, Role, SendMessageRequest,
                       TaskNotCancelableError, TaskNotFoundError, TaskState)
from google.protobuf import struct_pb2
from google.protobuf.json_format import MessageToDict, ParseDict
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from checks import ARTIFACT_NAME, check_agent_result, expect, invocation, run

HELLO = sys.argv[1].rstrip("/")
ECHO = sys.argv[2].rstrip("/")
TRACER = TracerProvider(resource=Resource({"service.name": "a2a1-interop"})).get_tracer(__name__)


def data_part(value):
    return Part(data=ParseDict(value, struct_pb2.Value()))


def request(parts, metadata=None):
    msg = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=parts)
    if metadata:
        msg.metadata.update(metadata)
    return SendMessageRequest(message=msg)


async def send(base, parts, metadata=None, force_v03=False):
    """Resolve the card, send one message without streaming; return (task dict, JSON-RPC posts)."""
    posts = []

    async def record(req):
        if req.method == "POST":
            posts.append({"url": str(req.url), "headers": dict(req.headers),
                          "body": json.loads(req.read())})

    async with httpx.AsyncClient(timeout=30, event_hooks={"request": [record]}) as http:
        config = ClientConfig(streaming=False, httpx_client=http)
        if force_v03:
            card_json = (await http.get(base + "/.well-known/agent-card.json")).json()
            del card_json["supportedInterfaces"]
            client = ClientFactory(config).create(parse_agent_card(card_json))
        else:
            client = await create_client(base, config)
        events = [ev async for ev in client.send_message(request(parts, metadata))]
    expect(len(events) == 1, f"expected one reply, got {len(events)}")
    expect(events[0].HasField("task"), f"the reply is not a task: {MessageToDict(events[0])}")
    task = events[0].task
    expect(len(posts) == 1, f"expected one JSON-RPC POST, saw {len(posts)}")
    return task, posts[0]


def check_binding(post, base, method, version):
    expect(post["url"] == base + "/a2a", f"posted to {post['url']}, not {base}/a2a")
    expect(post["body"].get("method") == method, f"JSON-RPC method {post['body'].get('method')!r} != {method!r}")
    got = post["headers"].get("a2a-version")
    expect(got == version, f"A2A-Version header {got!r} != {version!r}")


def agent_result(task):
    """The one `agent-result` artifact's one data part, as plain JSON."""
    arts = list(task.artifacts)
    expect(len(arts) == 1 and arts[0].name == ARTIFACT_NAME,
           f"artifacts {[a.name for a in arts]} != ['{ARTIFACT_NAME}']")
    parts = list(arts[0].parts)
    expect(len(parts) == 1 and parts[0].HasField("data"),
           f"artifact parts {[MessageToDict(p) for p in parts]!s:.300} are not one data part")
    return MessageToDict(parts[0].data)


def send_hello_with_otel(force_v03):
    with TRACER.start_as_current_span("interop.caller") as span:
        carrier = {}
        TraceContextTextMapPropagator().inject(carrier)
        ctx = span.get_span_context()
        task, post = asyncio.run(send(HELLO, [data_part(invocation())], carrier, force_v03))
    expect(task.status.state == TaskState.TASK_STATE_COMPLETED,
           f"task state {TaskState.Name(task.status.state)}")
    result, _ = check_agent_result(agent_result(task), f"{ctx.trace_id:032x}", f"{ctx.span_id:016x}")
    reply = (result.get("payload") or {}).get("reply_text", "")
    expect("hi from an upstream SDK" in reply, f"reply_text {reply!r}")
    return post


def test_send_v10():
    post = send_hello_with_otel(force_v03=False)
    check_binding(post, HELLO, "SendMessage", "1.0")


def test_send_forced_v03():
    post = send_hello_with_otel(force_v03=True)
    check_binding(post, HELLO, "message/send", "0.3")
    part = post["body"]["params"]["message"]["parts"][0]
    expect(part.get("kind") == "data", f"the v0.3 part has no kind 'data': {part}")


def test_ints_become_floats(force_v03=False):
    value = {"n": 1, "xs": [1, 2, 3], "f": 1.5, "s": "x", "nested": {"k": 42}}
    doc = {"agent_id": "echo.wire", "input": {"schema_class": "Echo", "value": value}}
    task, post = asyncio.run(send(ECHO, [data_part(doc)], force_v03=force_v03))
    sent = post["body"]["params"]["message"]["parts"][0]["data"]["input"]["value"]
    expect(isinstance(sent["n"], float) and isinstance(sent["nested"]["k"], float),
           f"the SDK did not send floats this time (sent {sent}); this test needs it to")
    expect(task.status.state == TaskState.TASK_STATE_COMPLETED,
           f"task state {TaskState.Name(task.status.state)}: {MessageToDict(task.status)!s:.400}")
    data = agent_result(task)
    outcome = data["result"]["outcome"]["status"]
    expect(outcome == "succeeded", f"outcome {outcome!r}")
    got = data["result"]["payload"]["value"]
    expect(got == value, f"echoed value {got} != sent {value}")


def status_error(task):
    for p in task.status.message.parts:
        if p.HasField("data"):
            d = MessageToDict(p.data)
            if isinstance(d, dict) and "error" in d:
                return d["error"]
    raise AssertionError(f"no data part with 'error' in the status message: {MessageToDict(task.status)}")


def malformed(parts, n):
    task, _ = asyncio.run(send(HELLO, parts))
    expect(task.status.state == TaskState.TASK_STATE_FAILED,
           f"task state {TaskState.Name(task.status.state)}, not failed")
    err = status_error(task)
    expect(err == f"expected exactly one data part, got {n}", f"error {err!r}")


def test_get_and_cancel_task():
    async def go():
        client = await create_client(HELLO, ClientConfig(streaming=False))
        sent = [ev async for ev in client.send_message(request([data_part(invocation())]))]
        task = sent[0].task
        got = await client.get_task(GetTaskRequest(id=task.id))
        expect(got == task, "GetTask returned a different task than SendMessage")
        for call, error in ((client.get_task(GetTaskRequest(id="no-such-task")), TaskNotFoundError),
                            (client.cancel_task(CancelTaskRequest(id=task.id)), TaskNotCancelableError)):
            try:
                await call
            except error:
                pass
            else:
                raise AssertionError(f"no {error.__name__}")
        await client.close()
    asyncio.run(go())


if __name__ == "__main__":
    sys.exit(run([
        ("a2a1-client/send-v1.0+otel-traceparent", test_send_v10),
        ("a2a1-client/ints-as-floats-v1.0", test_ints_become_floats),
        ("a2a1-client/malformed-two-data-parts",
         lambda: malformed([data_part(invocation()), data_part({"b": 2})], 2)),
        ("a2a1-client/malformed-text-only", lambda: malformed([Part(text="hello")], 0)),
        ("a2a1-client/get-task+errors", test_get_and_cancel_task),
        ("a2a1-client/forced-v0.3+otel-traceparent", test_send_forced_v03),
        ("a2a1-client/ints-as-floats-forced-v0.3", lambda: test_ints_become_floats(force_v03=True)),
    ]))
