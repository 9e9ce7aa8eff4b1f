"""a2a-sdk 0.3.26 client (A2A 0.3) -> ddwire's harness: send non-blocking, get, cancel.

Usage: python tasks_a2a03.py CONFIG.json      (in the venv of requirements-a2a03.txt)
CONFIG: {"harness", "ada", "grace", "delay_s"} (written by suite.sh).

Tests (one PASS/FAIL line each):
- a2a03-client/send-non-blocking: `ClientConfig(polling=True)` sends `message/send` with
  `configuration.blocking: false` (checked on the wire) and gets at once the Task `submitted`,
  named after the request's invocation_id.
- a2a03-client/get-progress: `get_task` (`tasks/get`) then shows it `working`, later `completed`
  with an `envelope` artifact whose outcome is succeeded.
- a2a03-client/cancel: `cancel_task` (`tasks/cancel`) of a running task gives it back `canceled`;
  once stored, its envelope is failed / agent-error `echo.wire: Canceled: …`; canceling it again
  is -32002 (TaskNotCancelableError's code).
- a2a03-client/no-list: A2A 0.3 has no JSON-RPC method for listing tasks (the 0.3 spec lists
  `tasks/list` for gRPC and REST only); `tasks/list` is -32601, as a2a-sdk's own 0.3 servers answer.
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
from a2a.client.errors import A2AClientJSONRPCError  # noqa: E402
from a2a.types import (DataPart, Message, Part, Role, Task, TaskIdParams,  # noqa: E402
                       TaskQueryParams, TaskState)

from checks import expect, run  # noqa: E402

CFG = json.load(open(sys.argv[1]))
HARNESS = CFG["harness"].rstrip("/")
AUTH = {"Authorization": f"Bearer {CFG['ada']}"}


def uuid7():
    ms = int(time.time() * 1000)
    rand = int.from_bytes(secrets.token_bytes(10), "big")
    value = (ms << 80) | (0x7 << 76) | ((rand >> 68) & 0xFFF) << 64 | (0b10 << 62) | (rand & ((1 << 62) - 1))
    return str(uuid.UUID(int=value))


def echo_request():
    return {"agent_id": "echo.wire", "invocation_id": uuid7(),
            "input": {"schema_class": "Echo", "value": {"from": "a2a-sdk 0.3.26"}}}


class Session:
    def __init__(self):
        self.posts = []

    async def __aenter__(self):
        async def record(req):
            if req.method == "POST":
                self.posts.append(json.loads(req.read()))
        self.http = httpx.AsyncClient(timeout=60, headers=AUTH, event_hooks={"request": [record]})
        card = await A2ACardResolver(self.http, HARNESS).get_agent_card()
        self.client = ClientFactory(ClientConfig(streaming=False, polling=True,
                                                 httpx_client=self.http)).create(card)
        return self

    async def __aexit__(self, *exc):
        await self.http.aclose()

    async def send(self, doc):
        msg = Message(kind="message", message_id=str(uuid.uuid4()), role=Role.user,
                      parts=[Part(root=DataPart(data=doc))])
        events = [ev async for ev in self.client.send_message(msg)]
        expect(len(events) == 1 and isinstance(events[0], tuple) and isinstance(events[0][0], Task),
               f"the reply is not one Task: {events!r:.300}")
        return events[0][0]

    async def wait_for(self, task_id, want, seconds=30):
        until = time.monotonic() + seconds
        while True:
            task = await self.client.get_task(TaskQueryParams(id=task_id))
            if task.status.state == want:
                return task
            expect(time.monotonic() < until, f"task {task_id} is {task.status.state}, never {want}")
            await asyncio.sleep(0.05)


def envelope(task):
    arts = [a for a in (task.artifacts or []) if a.name == "envelope"]
    expect(len(arts) == 1, f"artifacts {[a.name for a in task.artifacts or []]}")
    return arts[0].parts[0].root.data


STATE = {}


def test_send_non_blocking():
    async def go():
        async with Session() as s:
            doc = echo_request()
            task = await s.send(doc)
            sent = s.posts[-1]
            expect(sent["method"] == "message/send" and sent["params"]["configuration"].get("blocking") is False,
                   f"sent {sent['method']} with configuration {sent['params'].get('configuration')}")
            expect(task.status.state == TaskState.submitted, f"the answer is {task.status.state}")
            expect(task.id == doc["invocation_id"], f"task id {task.id} != invocation_id")
            STATE["nb"] = task.id
    asyncio.run(go())


def test_get_progress():
    expect("nb" in STATE, "no task from send-non-blocking")

    async def go():
        async with Session() as s:
            await s.wait_for(STATE["nb"], TaskState.working)
            done = await s.wait_for(STATE["nb"], TaskState.completed)
            env = envelope(done)
            expect(env["outcome"]["status"] == "succeeded", f"outcome {env['outcome']}")
    asyncio.run(go())


def test_cancel():
    async def go():
        async with Session() as s:
            task = await s.send(echo_request())
            await s.wait_for(task.id, TaskState.working)
            canceled = await s.client.cancel_task(TaskIdParams(id=task.id))
            expect(canceled.status.state == TaskState.canceled, f"cancel gave {canceled.status.state}")
            until = time.monotonic() + 20
            while True:
                got = await s.client.get_task(TaskQueryParams(id=task.id))
                if any(a.name == "envelope" for a in got.artifacts or []):
                    break
                expect(time.monotonic() < until, "the canceled run was never stored")
                await asyncio.sleep(0.05)
            env = envelope(got)
            expect(got.status.state == TaskState.canceled, f"stored as {got.status.state}")
            expect(env["outcome"]["status"] == "failed" and
                   env["problem"]["detail"].startswith("echo.wire: Canceled: "), f"envelope {env!s:.300}")
            try:
                await s.client.cancel_task(TaskIdParams(id=task.id))
            except A2AClientJSONRPCError as e:
                expect(e.error.code == -32002, f"a second cancel gave {e.error.code}")
            else:
                raise AssertionError("a second cancel succeeded")
    asyncio.run(go())


def test_no_list():
    body = {"jsonrpc": "2.0", "id": 1, "method": "tasks/list", "params": {}}
    r = httpx.post(HARNESS + "/a2a", json=body, headers=AUTH, timeout=30)
    error = r.json().get("error", {})
    expect(error.get("code") == -32601, f"tasks/list answered {r.text[:300]}")


if __name__ == "__main__":
    sys.exit(run([
        ("a2a03-client/send-non-blocking", test_send_non_blocking),
        ("a2a03-client/get-progress", test_get_progress),
        ("a2a03-client/cancel", test_cancel),
        ("a2a03-client/no-list", test_no_list),
    ]))
