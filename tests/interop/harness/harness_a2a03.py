"""a2a-sdk 0.3.26 (A2A v0.3) client -> ddwire's harness (`ddwire serve`).

Usage: python harness_a2a03.py HARNESS_BASE_URL [--ca FILE]      (in the venv of requirements-a2a03.txt)

With `--ca FILE` (an https harness) httpx gets `verify=` an SSLContext trusting FILE's CA, and
urllib that context (../a2a/tls_options.py); the tests are the same.

Test `a2a03-client/message-send`: `A2ACardResolver` validates the harness's card as a v0.3
`AgentCard`; `ClientFactory(ClientConfig(streaming=False))` sends `message/send` (checked on the
wire) with one data part, an InvocationRequest for py.chat (the Python agent, which the harness
calls over A2A 1.0), and gets a completed v0.3 Task with one artifact `envelope` whose one data
part is the Envelope: outcome succeeded, the Python agent's reply, equal to GET /runs/{id}.
Test `a2a03-client/trace`: sent with an OpenTelemetry-style `traceparent` header on the
client's httpx session, the run keeps a trace of its own whose root span links to the caller's
span (GET /runs/{id}/spans); the HTTP response carries `traceresponse` naming that root, and
the Task a2a-sdk decodes carries the run's trace id in `metadata["dd.trace_id"]`.
Test `a2a03-client/two-data-parts`: a message with two data parts is a failed Task whose status
message carries `{"error": "expected exactly one data part, got 2"}`.
"""

import asyncio
import json
import os
import sys
import urllib.request
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "a2a"))

import httpx  # noqa: E402
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory  # noqa: E402
from a2a.types import DataPart, Message, Part, Role, Task, TaskState  # noqa: E402

import tls_options  # noqa: E402
from checks import expect, run  # noqa: E402

_ARGS, _TLS = tls_options.split(sys.argv[1:], ("--ca",))
BASE = _ARGS[0].rstrip("/")
VERIFY = tls_options.verify(_TLS)
CONTEXT = tls_options.urlopen_context(_TLS)


def send(parts, headers=None, responses=None):
    posts = []

    async def record(req):
        if req.method == "POST":
            posts.append({"url": str(req.url), "body": json.loads(req.read())})

    async def answered(resp):
        if resp.request.method == "POST" and responses is not None:
            responses.append(dict(resp.headers))

    hooks = {"request": [record], "response": [answered]}

    async def go():
        async with httpx.AsyncClient(timeout=60, event_hooks=hooks, headers=headers or {}, verify=VERIFY) as http:
            card = await A2ACardResolver(http, BASE).get_agent_card()
            expect(card.protocol_version.startswith("0.3") and card.url == BASE + "/a2a",
                   f"card protocolVersion {card.protocol_version!r}, url {card.url!r}")
            client = ClientFactory(ClientConfig(streaming=False, httpx_client=http)).create(card)
            msg = Message(kind="message", message_id=str(uuid.uuid4()), role=Role.user, parts=parts)
            return [ev async for ev in client.send_message(msg)]

    events = asyncio.run(go())
    expect(len(events) == 1 and isinstance(events[0], tuple) and isinstance(events[0][0], Task),
           f"the reply is not one Task: {events!r:.300}")
    expect(len(posts) == 1 and posts[0]["body"].get("method") == "message/send",
           f"JSON-RPC posts {[p['body'].get('method') for p in posts]}, not one message/send")
    return events[0][0]


def data(doc):
    return Part(root=DataPart(data=doc))


def test_message_send():
    text = "hello from a2a-sdk 0.3.26"
    task = send([data({"agent_id": "py.chat", "input": {"schema_class": "Message", "message_text": text}})])
    expect(task.status.state == TaskState.completed, f"task {task.status.state}: {task.status!r:.400}")
    arts = task.artifacts or []
    expect([a.name for a in arts] == ["envelope"], f"artifacts {[a.name for a in arts]}")
    parts = arts[0].parts
    expect(len(parts) == 1 and isinstance(parts[0].root, DataPart), "the envelope artifact is not one data part")
    env = parts[0].root.data
    expect(env["outcome"]["status"] == "succeeded", f"outcome {env['outcome']}")
    expect(env["payload"]["reply_text"] == f"Python heard: {text}", f"payload {env['payload']!s:.300}")
    with urllib.request.urlopen(f"{BASE}/runs/{env['invocation_id']}", timeout=10, context=CONTEXT) as r:
        stored = json.load(r)
    expect(stored == env, "GET /runs/{id} differs from the envelope in the task")


CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"


def test_trace():
    responses = []
    doc = {"agent_id": "py.chat", "input": {"schema_class": "Message", "message_text": "trace me"}}
    task = send([data(doc)], headers={"traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"},
                responses=responses)
    expect(task.status.state == TaskState.completed, f"task {task.status.state}")
    env = task.artifacts[0].parts[0].root.data
    trace_id = env["telemetry"]["trace_id"]
    expect(trace_id != CALLER_TRACE, "the run joined the caller's trace instead of keeping its own")
    expect((task.metadata or {}).get("dd.trace_id") == trace_id,
           f"task metadata {task.metadata!r} does not name the run's trace {trace_id}")
    with urllib.request.urlopen(f"{BASE}/runs/{env['invocation_id']}/spans", timeout=10, context=CONTEXT) as r:
        spans = [json.loads(line) for line in r.read().decode().splitlines() if line.strip()]
    roots = [s for s in spans if s["parent_id"] is None]
    expect(len(roots) == 1 and roots[0]["name"] == "invoke_agent", f"roots {[s['name'] for s in roots]}")
    root = roots[0]
    expect(root["context"]["trace_id"] == "0x" + trace_id, f"root trace {root['context']['trace_id']}")
    links = [(l["context"]["trace_id"], l["context"]["span_id"]) for l in root["links"]]
    expect(links == [("0x" + CALLER_TRACE, "0x" + CALLER_SPAN)], f"root links {links}")
    expect(len(responses) == 1, f"{len(responses)} POST responses")
    want = f"00-{trace_id}-{root['context']['span_id'].removeprefix('0x')}-01"
    expect(responses[0].get("traceresponse") == want,
           f"traceresponse {responses[0].get('traceresponse')!r}, want {want!r}")


def test_two_data_parts():
    doc = {"agent_id": "hello.world", "input": {"schema_class": "Message", "message_text": "x"}}
    task = send([data(doc), data(doc)])
    expect(task.status.state == TaskState.failed, f"task {task.status.state}, not failed")
    errors = [p.root.data.get("error") for p in (task.status.message.parts if task.status.message else [])
              if isinstance(p.root, DataPart)]
    expect(errors == ["expected exactly one data part, got 2"], f"status message errors {errors}")


if __name__ == "__main__":
    sys.exit(run([
        ("a2a03-client/message-send", test_message_send),
        ("a2a03-client/trace", test_trace),
        ("a2a03-client/two-data-parts", test_two_data_parts),
    ]))
