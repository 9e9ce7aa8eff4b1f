"""a2a-sdk 0.3.26 streaming client (A2A 0.3) -> ddwire's harness: message/stream, tasks/resubscribe.

Usage: python stream_a2a03.py CONFIG.json      (in the venv of requirements-a2a03.txt)
CONFIG: {"harness", "token"} (written by suite.sh).

Tests (one PASS/FAIL line each):
- a2a03-client/stream-stages: `ClientConfig(streaming=True)` sends `message/stream` (checked on the
  wire) for hello.world; the client yields the Task `submitted` (named after the invocation_id),
  `working` status updates whose metadata `dd.stage` names policy_gate, input_check, agent_call,
  grounding_check and store in that order, then the `envelope` artifact (succeeded, equal to
  `GET /runs/{id}`), then a final `completed` update (`final: true`), last.
- a2a03-client/agent-fails: demo.failing ends with a final `failed` update whose metadata
  `dd.problem_type` is the agent-error problem type; the envelope (failed) came before it.
- a2a03-client/resubscribe: a non-blocking `message/send` for echo.wire (working for 2 s), then
  `resubscribe` (`tasks/resubscribe`) follows the task to its final `completed` update, with its
  envelope on the way.
- a2a03-client/resume-same-task: demo.confirm answers `input-required`; `message/send` with the
  task's `taskId`/`contextId` and a data part `{"confirm": true}` completes the same task; the
  stored run's turns.json holds both turns.
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
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory  # noqa: E402
from a2a.types import (DataPart, Message, Part, Role, TaskArtifactUpdateEvent,  # noqa: E402
                       TaskIdParams, TaskState, TaskStatusUpdateEvent)

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
                "input": {"schema_class": "Echo", "value": {"from": "a2a-sdk 0.3.26"}}}
    return {"agent_id": agent_id, "invocation_id": uuid7(),
            "input": {"schema_class": "Message", "message_text": "streamed from a2a-sdk 0.3.26"}}


def message(doc):
    return Message(kind="message", message_id=str(uuid.uuid4()), role=Role.user,
                   parts=[Part(root=DataPart(data=doc))])


class Session:
    def __init__(self):
        self.posts = []

    async def __aenter__(self):
        async def record(req):
            if req.method == "POST":
                self.posts.append(json.loads(req.read()))
        self.http = httpx.AsyncClient(timeout=60, headers=AUTH, event_hooks={"request": [record]})
        card = await A2ACardResolver(self.http, HARNESS).get_agent_card()
        expect(card.capabilities.streaming is True, f"the card says streaming {card.capabilities.streaming}")
        self.streaming = ClientFactory(ClientConfig(streaming=True, httpx_client=self.http)).create(card)
        self.polling = ClientFactory(ClientConfig(streaming=False, polling=True,
                                                  httpx_client=self.http)).create(card)
        return self

    async def __aexit__(self, *exc):
        await self.http.aclose()


def check_events(events, want_state):
    """The (task, update) pairs of one stream: the updates, in order, and the envelope."""
    expect(events and events[0][1] is None, f"the first event is not the task: {events[:1]!r:.300}")
    updates = [u for _, u in events[1:]]
    statuses = [u for u in updates if isinstance(u, TaskStatusUpdateEvent)]
    stages = [(u.metadata or {}).get("dd.stage") for u in statuses if (u.metadata or {}).get("dd.stage")]
    expect(stages == STAGES, f"stages {stages}")
    for u in statuses[:-1]:
        expect(u.status.state == TaskState.working and not u.final, f"a non-final update {u!r:.300}")
    last = updates[-1]
    expect(isinstance(last, TaskStatusUpdateEvent), f"the last event is {type(last).__name__}")
    expect(last.final is True and last.status.state == want_state,
           f"the last update is {last.status.state} final={last.final}")
    arts = [u for u in updates if isinstance(u, TaskArtifactUpdateEvent)]
    expect(len(arts) == 1 and arts[0].artifact.name == "envelope", f"artifacts {arts!r:.300}")
    expect(updates.index(arts[0]) == len(updates) - 2, "the envelope is not just before the final update")
    store_at = next(i for i, u in enumerate(updates)
                    if isinstance(u, TaskStatusUpdateEvent) and (u.metadata or {}).get("dd.stage") == "store")
    expect(updates.index(arts[0]) > store_at, "the envelope came before the store stage")
    return last, arts[0].artifact.parts[0].root.data


def test_stream_stages():
    async def go():
        async with Session() as s:
            doc = request_for("hello.world")
            events = [ev async for ev in s.streaming.send_message(message(doc))]
            expect(s.posts[-1]["method"] == "message/stream", f"sent {s.posts[-1]['method']}")
            task = events[0][0]
            expect(task.id == doc["invocation_id"], f"task id {task.id}")
            first = events[0][0]
            _, envelope = check_events(events, TaskState.completed)
            expect(envelope["outcome"]["status"] == "succeeded", f"outcome {envelope['outcome']}")
            stored = (await s.http.get(f"{HARNESS}/runs/{doc['invocation_id']}")).json()
            expect(stored == envelope, "the streamed envelope is not the stored one")
            expect(first.id == doc["invocation_id"], "the task is not the run")
    asyncio.run(go())


def test_agent_fails():
    async def go():
        async with Session() as s:
            events = [ev async for ev in s.streaming.send_message(message(request_for("demo.failing")))]
            last, envelope = check_events(events, TaskState.failed)
            expect((last.metadata or {}).get("dd.problem_type") == AGENT_ERROR,
                   f"metadata {last.metadata}")
            expect(envelope["outcome"]["status"] == "failed", f"outcome {envelope['outcome']}")
    asyncio.run(go())


def test_resubscribe():
    async def go():
        async with Session() as s:
            doc = request_for("echo.wire")
            sent = [ev async for ev in s.polling.send_message(message(doc))]
            task = sent[0][0]
            expect(task.id == doc["invocation_id"], f"task id {task.id}")
            events = [ev async for ev in s.streaming.resubscribe(TaskIdParams(id=task.id))]
            expect(s.posts[-1]["method"] == "tasks/resubscribe", f"sent {s.posts[-1]['method']}")
            updates = [u for _, u in events[1:]]
            last = updates[-1]
            expect(isinstance(last, TaskStatusUpdateEvent) and last.final
                   and last.status.state == TaskState.completed, f"the stream ended with {last!r:.300}")
            expect(any(isinstance(u, TaskArtifactUpdateEvent) and u.artifact.name == "envelope"
                       for u in updates), "no envelope on the stream")
    asyncio.run(go())


def test_resume_same_task():
    async def go():
        async with Session() as s:
            card = await A2ACardResolver(s.http, HARNESS).get_agent_card()
            blocking = ClientFactory(ClientConfig(streaming=False, httpx_client=s.http)).create(card)
            doc = {"agent_id": "demo.confirm", "invocation_id": uuid7(),
                   "input": {"schema_class": "Message", "message_text": "publish the report"}}
            first = [ev async for ev in blocking.send_message(message(doc))]
            task = first[0][0]
            expect(task.status.state == TaskState.input_required, f"first answer {task.status.state}")
            resume = Message(kind="message", message_id=str(uuid.uuid4()), role=Role.user,
                             task_id=task.id, context_id=task.context_id,
                             parts=[Part(root=DataPart(data={"confirm": True}))])
            second = [ev async for ev in blocking.send_message(resume)]
            done = second[0][0]
            expect(done.id == task.id and done.status.state == TaskState.completed,
                   f"resumed answer {done.id} {done.status.state}")
            turns = json.load(open(os.path.join(CFG["runs"], task.id, "turns.json")))
            statuses = [t["agent_reply"]["result"]["outcome"]["status"] for t in turns["turns"]]
            expect(statuses == ["suspended", "succeeded"], f"stored turns {statuses}")
    asyncio.run(go())


if __name__ == "__main__":
    sys.exit(run([
        ("a2a03-client/resume-same-task", test_resume_same_task),
        ("a2a03-client/stream-stages", test_stream_stages),
        ("a2a03-client/agent-fails", test_agent_fails),
        ("a2a03-client/resubscribe", test_resubscribe),
    ]))
