"""a2a-sdk 1.3.0 streaming client (A2A 1.0) -> ddwire's harness: SendStreamingMessage, SubscribeToTask.

Usage: python stream_a2a1.py CONFIG.json      (in the venv of requirements-a2a1.txt)
CONFIG: {"harness", "token"} (written by suite.sh).

Tests (one PASS/FAIL line each):
- a2a1-client/stream-stages: `create_client(ClientConfig(streaming=True))` sends
  `SendStreamingMessage` with `A2A-Version: 1.0` (checked on the wire) for hello.world; the
  StreamResponses are the task `TASK_STATE_SUBMITTED` (named after the invocation_id), status
  updates `TASK_STATE_WORKING` whose metadata `dd.stage` names policy_gate, input_check, agent_call,
  grounding_check and store in order, the `envelope` artifact (succeeded, equal to `GET /runs/{id}`
  once the protobuf Struct's doubles are read back as integers), and `TASK_STATE_COMPLETED`, last.
- a2a1-client/agent-fails: demo.failing ends with `TASK_STATE_FAILED` whose metadata
  `dd.problem_type` is the agent-error problem type.
- a2a1-client/subscribe: a `returnImmediately` send for echo.wire (working for 2 s), then
  `subscribe` (`SubscribeToTask`) yields the task, then follows it to `TASK_STATE_COMPLETED` with
  its envelope on the way.
- a2a1-client/resume-same-task: demo.confirm suspends its run: `SendMessage` answers
  `TASK_STATE_INPUT_REQUIRED`, the resume condition as the status message; a second message with
  the task's `task_id` and `context_id` and a data part `{"confirm": true}` completes the same task
  with a succeeded envelope; the stored run (`<runs>/<id>/turns.json`) holds both turns, the
  first the agent's `suspended` reply, the second the resumption and the succeeded reply.
- a2a1-client/stream-until-input-required: streamed, demo.confirm's stream ends with
  `TASK_STATE_INPUT_REQUIRED`, last; the resumption streamed on the same task ends
  `TASK_STATE_COMPLETED` with the envelope.
"""

import asyncio
import json
import os
import secrets
import sys
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "a2a"))

import httpx  # noqa: E402
from a2a.client import ClientConfig, create_client  # noqa: E402
from a2a.types import (Message, Part, Role, SendMessageRequest,  # noqa: E402
                       SubscribeToTaskRequest, TaskState)
from google.protobuf import struct_pb2  # noqa: E402
from google.protobuf.json_format import MessageToDict, ParseDict  # noqa: E402

from checks import expect, run  # noqa: E402

CFG = json.load(open(sys.argv[1]))
HARNESS = CFG["harness"].rstrip("/")
AUTH = {"Authorization": f"Bearer {CFG['token']}"}
STAGES = ["policy_gate", "input_check", "agent_call", "grounding_check", "store"]
AGENT_ERROR = "https://w3id.org/data-director/problems/agent-error"


def uuid7():
    ms = int(time.time() * 1000)
    rand = int.from_bytes(secrets.token_bytes(10), "big")
    value = (ms << 80) | (0x7 << 76) | ((rand >> 68) & 0xFFF) << 64 | (0b10 << 62) | (rand & ((1 << 62) - 1))
    return str(uuid.UUID(int=value))


def request_for(agent_id):
    if agent_id == "echo.wire":
        return {"agent_id": agent_id, "invocation_id": uuid7(),
                "input": {"schema_class": "Echo", "value": {"from": "a2a-sdk 1.3.0"}}}
    return {"agent_id": agent_id, "invocation_id": uuid7(),
            "input": {"schema_class": "Message", "message_text": "streamed from a2a-sdk 1.3.0"}}


def message(doc):
    return Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER,
                   parts=[Part(data=ParseDict(doc, struct_pb2.Value()))])


def ints(v):
    """A protobuf Struct's numbers are doubles; the contract's are integers where whole."""
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, dict):
        return {k: ints(x) for k, x in v.items()}
    if isinstance(v, list):
        return [ints(x) for x in v]
    return v


def state(s):
    return TaskState.Name(s.status.state)


class Session:
    def __init__(self):
        self.posts = []

    async def __aenter__(self):
        async def record(req):
            if req.method == "POST":
                self.posts.append((dict(req.headers), json.loads(req.read())))
        self.http = httpx.AsyncClient(timeout=60, headers=AUTH, event_hooks={"request": [record]})
        self.streaming = await create_client(HARNESS, ClientConfig(streaming=True, httpx_client=self.http))
        self.polling = await create_client(HARNESS, ClientConfig(streaming=False, polling=True,
                                                                 httpx_client=self.http))
        return self

    async def __aexit__(self, *exc):
        await self.http.aclose()


def check_events(events, want_state):
    expect(events and events[0].HasField("task"), "the first StreamResponse is not the task")
    rest = events[1:]
    statuses = [e.status_update for e in rest if e.HasField("status_update")]
    stages = [MessageToDict(u.metadata).get("dd.stage") for u in statuses]
    stages = [s for s in stages if s]
    expect(stages == STAGES, f"stages {stages}")
    for u in statuses[:-1]:
        expect(state(u) == "TASK_STATE_WORKING", f"an update before the last is {state(u)}")
    expect(rest[-1].HasField("status_update") and state(rest[-1].status_update) == want_state,
           f"the last StreamResponse is {MessageToDict(rest[-1])!s:.300}")
    arts = [i for i, e in enumerate(rest) if e.HasField("artifact_update")]
    expect(len(arts) == 1 and arts[0] == len(rest) - 2, f"artifact positions {arts} of {len(rest)}")
    artifact = rest[arts[0]].artifact_update.artifact
    expect(artifact.name == "envelope", f"artifact {artifact.name}")
    return rest[-1].status_update, ints(MessageToDict(artifact.parts[0].data))


def test_stream_stages():
    async def go():
        async with Session() as s:
            doc = request_for("hello.world")
            events = [e async for e in s.streaming.send_message(SendMessageRequest(message=message(doc)))]
            headers, body = s.posts[-1]
            expect(body["method"] == "SendStreamingMessage" and headers.get("a2a-version") == "1.0",
                   f"sent {body['method']} with A2A-Version {headers.get('a2a-version')}")
            task = events[0].task
            expect(task.id == doc["invocation_id"] and state(task) == "TASK_STATE_SUBMITTED",
                   f"first: {task.id} {state(task)}")
            _, envelope = check_events(events, "TASK_STATE_COMPLETED")
            expect(envelope["outcome"]["status"] == "succeeded", f"outcome {envelope['outcome']}")
            stored = (await s.http.get(f"{HARNESS}/runs/{doc['invocation_id']}")).json()
            expect(stored == envelope, "the streamed envelope is not the stored one")
    asyncio.run(go())


def test_agent_fails():
    async def go():
        async with Session() as s:
            doc = request_for("demo.failing")
            events = [e async for e in s.streaming.send_message(SendMessageRequest(message=message(doc)))]
            last, envelope = check_events(events, "TASK_STATE_FAILED")
            meta = MessageToDict(last.metadata)
            expect(meta.get("dd.problem_type") == AGENT_ERROR, f"metadata {meta}")
            expect(envelope["outcome"]["status"] == "failed", f"outcome {envelope['outcome']}")
    asyncio.run(go())


def test_subscribe():
    async def go():
        async with Session() as s:
            doc = request_for("echo.wire")
            sent = [e async for e in s.polling.send_message(SendMessageRequest(message=message(doc)))]
            task = sent[0].task
            expect(task.id == doc["invocation_id"], f"task id {task.id}")
            events = [e async for e in s.streaming.subscribe(SubscribeToTaskRequest(id=task.id))]
            expect(s.posts[-1][1]["method"] == "SubscribeToTask", f"sent {s.posts[-1][1]['method']}")
            expect(events[0].HasField("task") and events[0].task.id == task.id, "the first event is not the task")
            last = events[-1]
            expect(last.HasField("status_update") and state(last.status_update) == "TASK_STATE_COMPLETED",
                   f"the stream ended with {MessageToDict(last)!s:.300}")
            expect(any(e.HasField("artifact_update") and e.artifact_update.artifact.name == "envelope"
                       for e in events), "no envelope on the stream")
    asyncio.run(go())


def confirm_message(doc=None, task=None, confirm=True):
    if task is None:
        return message(doc)
    return Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, task_id=task.id,
                   context_id=task.context_id,
                   parts=[Part(data=ParseDict({"confirm": confirm}, struct_pb2.Value()))])


def confirm_request():
    return {"agent_id": "demo.confirm", "invocation_id": uuid7(),
            "input": {"schema_class": "Message", "message_text": "publish the report"}}


def test_resume_same_task():
    async def go():
        async with Session() as s:
            blocking = await create_client(HARNESS, ClientConfig(streaming=False, httpx_client=s.http))
            doc = confirm_request()
            first = [e async for e in blocking.send_message(SendMessageRequest(message=confirm_message(doc)))]
            task = first[0].task
            expect(state(task) == "TASK_STATE_INPUT_REQUIRED", f"first answer {state(task)}")
            asked = task.status.message.parts[0].text
            expect(asked.startswith("Confirm to proceed"), f"status message {asked!r}")
            second = [e async for e in blocking.send_message(
                SendMessageRequest(message=confirm_message(task=task)))]
            done = second[0].task
            expect(done.id == task.id == doc["invocation_id"], f"task ids {done.id} {task.id}")
            expect(state(done) == "TASK_STATE_COMPLETED", f"resumed answer {state(done)}")
            env = MessageToDict([a for a in done.artifacts if a.name == "envelope"][0].parts[0].data)
            expect(env["outcome"]["status"] == "succeeded", f"outcome {env['outcome']}")
            turns = json.load(open(os.path.join(CFG["runs"], task.id, "turns.json")))
            statuses = [t["agent_reply"]["result"]["outcome"]["status"] for t in turns["turns"]]
            expect(statuses == ["suspended", "succeeded"], f"stored turns {statuses}")
            expect(turns["turns"][1]["resumption"] == {"confirm": True},
                   f"resumption {turns['turns'][1].get('resumption')}")
    asyncio.run(go())


def test_stream_until_input_required():
    async def go():
        async with Session() as s:
            doc = confirm_request()
            events = [e async for e in s.streaming.send_message(SendMessageRequest(message=confirm_message(doc)))]
            last = events[-1]
            expect(last.HasField("status_update")
                   and state(last.status_update) == "TASK_STATE_INPUT_REQUIRED",
                   f"the stream ended with {MessageToDict(last)!s:.300}")
            task = events[0].task
            events = [e async for e in s.streaming.send_message(
                SendMessageRequest(message=confirm_message(task=task)))]
            expect(state(events[-1].status_update) == "TASK_STATE_COMPLETED",
                   f"the resumed stream ended with {MessageToDict(events[-1])!s:.300}")
            expect(any(e.HasField("artifact_update") for e in events), "no envelope on the resumed stream")
    asyncio.run(go())


if __name__ == "__main__":
    sys.exit(run([
        ("a2a1-client/stream-stages", test_stream_stages),
        ("a2a1-client/agent-fails", test_agent_fails),
        ("a2a1-client/subscribe", test_subscribe),
        ("a2a1-client/resume-same-task", test_resume_same_task),
        ("a2a1-client/stream-until-input-required", test_stream_until_input_required),
    ]))
