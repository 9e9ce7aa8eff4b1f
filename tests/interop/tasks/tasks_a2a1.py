"""a2a-sdk 1.3.0 client (A2A 1.0) -> ddwire's harness: send non-blocking, get, cancel, list.

Usage: python tasks_a2a1.py CONFIG.json      (in the venv of requirements-a2a1.txt)
CONFIG: {"harness", "ada", "grace", "delay_s"} (written by suite.sh); the harness's echo.wire
keeps every task working for delay_s seconds.

Tests (one PASS/FAIL line each):
- a2a1-client/send-non-blocking: `ClientConfig(polling=True)` sends `SendMessage` with
  `configuration.returnImmediately: true` (checked on the wire) and gets at once the task
  `TASK_STATE_SUBMITTED`, named after the request's invocation_id, its history the sent message.
- a2a1-client/get-progress: `get_task` then shows it `TASK_STATE_WORKING`, and later
  `TASK_STATE_COMPLETED` with an `envelope` artifact whose outcome is succeeded.
- a2a1-client/cancel: `cancel_task` of a running task gives it back `TASK_STATE_CANCELED`; the
  stored run (its `envelope` artifact, once the conductor has stopped waiting) is failed with
  problem agent-error `echo.wire: Canceled: …`; a second cancel raises TaskNotCancelableError.
- a2a1-client/list: `list_tasks` pages (page_size 2, `page_token`) through every task of the
  caller, newest first, `total_size` the count; `include_artifacts` shows the envelope; filters by
  `status` (canceled) and `context_id` (a request's conversation_id) select those tasks; another
  principal's `list_tasks` holds none of them, only its own.
- a2a1-client/errors: `get_task` of an unknown id raises TaskNotFoundError; a message naming an
  unknown task id is refused the same way.
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
from a2a.types import (CancelTaskRequest, GetTaskRequest, ListTasksRequest, Message,  # noqa: E402
                       Part, Role, SendMessageRequest, TaskNotCancelableError, TaskNotFoundError,
                       TaskState)
from google.protobuf import struct_pb2  # noqa: E402
from google.protobuf.json_format import MessageToDict, ParseDict  # noqa: E402

from checks import expect, run  # noqa: E402

CFG = json.load(open(sys.argv[1]))
HARNESS = CFG["harness"].rstrip("/")


def uuid7():
    """A UUIDv7 (the contract's id format): 48-bit Unix milliseconds, version 7, RFC 4122 variant."""
    ms = int(time.time() * 1000)
    rand = int.from_bytes(secrets.token_bytes(10), "big")
    value = (ms << 80) | (0x7 << 76) | ((rand >> 68) & 0xFFF) << 64 | (0b10 << 62) | (rand & ((1 << 62) - 1))
    return str(uuid.UUID(int=value))


def echo_request(conversation=None):
    doc = {"agent_id": "echo.wire", "invocation_id": uuid7(),
           "input": {"schema_class": "Echo", "value": {"from": "a2a-sdk 1.3.0"}}}
    if conversation:
        doc["conversation_id"] = conversation
    return doc


def message(doc):
    return Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER,
                   parts=[Part(data=ParseDict(doc, struct_pb2.Value()))])


def state(task):
    return TaskState.Name(task.status.state)


def envelope(task):
    arts = [a for a in task.artifacts if a.name == "envelope"]
    expect(len(arts) == 1, f"artifacts {[a.name for a in task.artifacts]}")
    return MessageToDict(arts[0].parts[0].data)


class Session:
    """One principal's clients (blocking and polling), recording what they POST."""

    def __init__(self, token):
        self.token = token
        self.posts = []

    async def __aenter__(self):
        async def record(req):
            if req.method == "POST":
                self.posts.append(json.loads(req.read()))
        self.http = httpx.AsyncClient(timeout=60, headers={"Authorization": f"Bearer {self.token}"},
                                      event_hooks={"request": [record]})
        self.polling = await create_client(HARNESS, ClientConfig(streaming=False, polling=True,
                                                                 httpx_client=self.http))
        self.blocking = await create_client(HARNESS, ClientConfig(streaming=False, httpx_client=self.http))
        return self

    async def __aexit__(self, *exc):
        await self.http.aclose()

    async def send(self, client, doc):
        events = [ev async for ev in client.send_message(SendMessageRequest(message=message(doc)))]
        expect(len(events) == 1 and events[0].HasField("task"),
               f"expected one task, got {[MessageToDict(e) for e in events]!s:.300}")
        return events[0].task

    async def wait_for(self, task_id, want, seconds=30):
        until = time.monotonic() + seconds
        while True:
            task = await self.polling.get_task(GetTaskRequest(id=task_id))
            if state(task) == want:
                return task
            expect(time.monotonic() < until, f"task {task_id} is {state(task)}, never {want}")
            await asyncio.sleep(0.05)


STATE = {}


def test_send_non_blocking():
    async def go():
        async with Session(CFG["ada"]) as s:
            doc = echo_request()
            task = await s.send(s.polling, doc)
            config = s.posts[-1]["params"].get("configuration", {})
            expect(s.posts[-1]["method"] == "SendMessage" and config.get("returnImmediately") is True,
                   f"sent {s.posts[-1]['method']} with configuration {config}")
            expect(state(task) == "TASK_STATE_SUBMITTED", f"the answer is {state(task)}, not submitted")
            expect(task.id == doc["invocation_id"], f"task id {task.id} != invocation_id")
            expect(len(task.history) == 1 and task.history[0].task_id == task.id, "history")
            STATE["nb"] = task.id
    asyncio.run(go())


def test_get_progress():
    expect("nb" in STATE, "no task from send-non-blocking")

    async def go():
        async with Session(CFG["ada"]) as s:
            await s.wait_for(STATE["nb"], "TASK_STATE_WORKING")
            done = await s.wait_for(STATE["nb"], "TASK_STATE_COMPLETED")
            env = envelope(done)
            expect(env["outcome"]["status"] == "succeeded", f"outcome {env['outcome']}")
            expect(env["invocation_id"] == STATE["nb"], "the envelope names another run")
    asyncio.run(go())


def test_cancel():
    async def go():
        async with Session(CFG["ada"]) as s:
            task = await s.send(s.polling, echo_request())
            await s.wait_for(task.id, "TASK_STATE_WORKING")
            canceled = await s.polling.cancel_task(CancelTaskRequest(id=task.id))
            expect(state(canceled) == "TASK_STATE_CANCELED", f"cancel gave {state(canceled)}")
            until = time.monotonic() + 20
            while True:
                got = await s.polling.get_task(GetTaskRequest(id=task.id))
                if any(a.name == "envelope" for a in got.artifacts):
                    break
                expect(time.monotonic() < until, "the canceled run was never stored")
                await asyncio.sleep(0.05)
            expect(state(got) == "TASK_STATE_CANCELED", f"stored as {state(got)}")
            env = envelope(got)
            expect(env["outcome"]["status"] == "failed", f"outcome {env['outcome']}")
            expect(env["problem"]["type"].endswith("/agent-error"), f"problem {env['problem']}")
            expect(env["problem"]["detail"].startswith("echo.wire: Canceled: "), f"problem {env['problem']}")
            try:
                await s.polling.cancel_task(CancelTaskRequest(id=task.id))
            except TaskNotCancelableError:
                pass
            else:
                raise AssertionError("a second cancel did not raise TaskNotCancelableError")
            STATE["canceled"] = task.id
    asyncio.run(go())


def test_list():
    async def go():
        async with Session(CFG["grace"]) as grace:
            theirs = await grace.send(grace.blocking, echo_request())
        async with Session(CFG["ada"]) as s:
            conversation = uuid7()
            in_conversation = await s.send(s.blocking, echo_request(conversation))
            expect(state(in_conversation) == "TASK_STATE_COMPLETED", state(in_conversation))
            seen, token, total = [], "", None
            while True:
                page = await s.polling.list_tasks(ListTasksRequest(page_size=2, page_token=token,
                                                                   include_artifacts=True))
                expect(page.page_size == 2, f"page_size {page.page_size}")
                total = page.total_size if total is None else total
                expect(page.total_size == total, "total_size changed between pages")
                for t in page.tasks:
                    expect(any(a.name == "envelope" for a in t.artifacts), f"{t.id} shows no envelope")
                seen += [t.id for t in page.tasks]
                token = page.next_page_token
                if not token:
                    break
                expect(len(seen) < 100, "paging does not end")
            expect(len(seen) == total == len(set(seen)), f"saw {len(seen)} of {total}")
            expect(seen[0] == in_conversation.id, "the newest task is not first")
            for key in ("nb", "canceled"):
                expect(STATE.get(key) in seen, f"the {key} task is not listed")
            expect(theirs.id not in seen, "another principal's task is listed")
            canceled = await s.polling.list_tasks(ListTasksRequest(status=TaskState.TASK_STATE_CANCELED))
            expect([t.id for t in canceled.tasks] == [STATE.get("canceled")],
                   f"status filter gave {[t.id for t in canceled.tasks]}")
            by_context = await s.polling.list_tasks(ListTasksRequest(context_id=conversation))
            expect([t.id for t in by_context.tasks] == [in_conversation.id],
                   f"context filter gave {[t.id for t in by_context.tasks]}")
            expect(all(len(t.artifacts) == 0 for t in by_context.tasks), "artifacts shown by default")
        async with Session(CFG["grace"]) as grace:
            page = await grace.polling.list_tasks(ListTasksRequest())
            expect([t.id for t in page.tasks] == [theirs.id], f"Grace sees {[t.id for t in page.tasks]}")
    asyncio.run(go())


def test_errors():
    async def go():
        async with Session(CFG["ada"]) as s:
            try:
                await s.polling.get_task(GetTaskRequest(id="no-such-task"))
            except TaskNotFoundError:
                pass
            else:
                raise AssertionError("no TaskNotFoundError for an unknown id")
            msg = message(echo_request())
            msg.task_id = uuid7()
            try:
                [ev async for ev in s.blocking.send_message(SendMessageRequest(message=msg))]
            except TaskNotFoundError:
                pass
            else:
                raise AssertionError("no TaskNotFoundError for a message naming an unknown task")
    asyncio.run(go())


if __name__ == "__main__":
    sys.exit(run([
        ("a2a1-client/send-non-blocking", test_send_non_blocking),
        ("a2a1-client/get-progress", test_get_progress),
        ("a2a1-client/cancel", test_cancel),
        ("a2a1-client/list", test_list),
        ("a2a1-client/errors", test_errors),
    ]))
