"""a2a-sdk 1.3.0 (A2A 1.0) client -> `ddwire relay` -> a2a-sdk 1.3.0 and ddwire agents.

Usage: python relay_a2a1.py RELAY_URL TRACES_DIR      (in the venv of requirements-a2a1.txt)

The relay runs with --star, ddecho (`ddwire agent echo`) its hub, py03/py1/py1c leaves.
"""

import asyncio
import sys
import uuid

import httpx

from a2a.client import ClientConfig, create_client
from a2a.types import (CancelTaskRequest, GetTaskRequest, Message, Part, Role, SendMessageRequest,
                       TaskNotCancelableError, TaskState)
from google.protobuf import struct_pb2
from google.protobuf.json_format import MessageToDict, ParseDict

from common import check_hop, check_stream_spans, expect, new_traceparent, run

RELAY = sys.argv[1].rstrip("/")
TRACES = sys.argv[2]


def request(parts, context_id, metadata):
    msg = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=parts, context_id=context_id)
    msg.metadata.update(metadata)
    return SendMessageRequest(message=msg)


def data_part(value):
    return Part(data=ParseDict(value, struct_pb2.Value()))


async def send(peer, parts, metadata):
    """Resolve the card the relay serves for `peer`, send one message (1.0 from the card).
    The sender is named in the metadata, and in `X-Agent-Id` for the calls that carry none
    (GetTask, CancelTask), so the star gate knows who asks."""
    context_id = str(uuid.uuid4())
    http = httpx.AsyncClient(timeout=30, headers={"X-Agent-Id": metadata["agent.id"]})
    client = await create_client(f"{RELAY}/peers/{peer}", ClientConfig(streaming=False, httpx_client=http))
    events = [ev async for ev in client.send_message(request(parts, context_id, metadata))]
    expect(len(events) == 1 and events[0].HasField("task"), f"reply {events!r:.300}")
    return client, events[0].task, context_id


def test_two_turns_in_one_context_to_the_harness_behind_the_relay():
    """A2A 1.0 §3.4.3 through the relay: turn two names turn one's contextId and no taskId; the
    harness behind it starts a new task in that context, and both runs carry it as their
    conversation_id."""
    invocation = {"agent_id": "hello.world", "input": {"schema_class": "Message", "message_text": "hi"}}

    async def go():
        http = httpx.AsyncClient(timeout=30, headers={"X-Agent-Id": "ddecho"})
        client = await create_client(f"{RELAY}/peers/dd", ClientConfig(streaming=False, httpx_client=http))

        async def turn(context_id):
            msg = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[data_part(invocation)])
            if context_id:
                msg.context_id = context_id
            msg.metadata.update({"agent.id": "ddecho"})
            events = [ev async for ev in client.send_message(SendMessageRequest(message=msg))]
            expect(len(events) == 1 and events[0].HasField("task"), f"reply {events!r:.300}")
            return events[0].task

        first = await turn(None)
        context = first.context_id
        second = await turn(context)
        expect(second.id != first.id and second.context_id == context,
               f"turn two {second.id} in {second.context_id}; turn one {first.id} in {context}")
        for task in (first, second):
            expect(task.status.state == TaskState.TASK_STATE_COMPLETED, f"state {TaskState.Name(task.status.state)}")
            envelope = MessageToDict(task.artifacts[0].parts[0].data)
            expect(envelope.get("conversation_id") == context,
                   f"conversation_id {envelope.get('conversation_id')} != {context}")

    asyncio.run(go())


def test_to_a2a1_agent_traced_then_get_and_cancel():
    tp, trace_id, span_id = new_traceparent()

    async def go():
        client, task, ctx = await send("py1", [data_part({"n": 1})], {"agent.id": "ddecho", "traceparent": tp})
        expect(task.status.state == TaskState.TASK_STATE_COMPLETED, f"state {TaskState.Name(task.status.state)}")
        seen = MessageToDict(task.artifacts[0].parts[0].data)
        expect(seen["echo"] == {"n": 1}, f"echo {seen['echo']}")
        expect(seen["wire"]["a2a_version"] == "1.0", f"the peer got A2A-Version {seen['wire']['a2a_version']}")
        check_hop(TRACES, ctx, trace_id, span_id, seen["metadata"]["traceparent"], "py1")
        got = await client.get_task(GetTaskRequest(id=task.id))
        expect(got.id == task.id and got.status.state == task.status.state, "GetTask gave another task")
        try:
            await client.cancel_task(CancelTaskRequest(id=task.id))
        except TaskNotCancelableError:
            pass  # the peer's own error, passed on as it was sent, typed by the SDK
        else:
            raise AssertionError("no TaskNotCancelableError")
        await client.close()
    asyncio.run(go())


def test_to_ddwire_agent():
    tp, trace_id, span_id = new_traceparent()

    async def go():
        client, task, ctx = await send("ddecho", [Part(text="hi from 1.0")], {"agent.id": "py1", "traceparent": tp})
        expect(task.status.state == TaskState.TASK_STATE_COMPLETED, f"state {TaskState.Name(task.status.state)}")
        check_hop(TRACES, ctx, trace_id, span_id, None, "ddecho")
        await client.close()
    asyncio.run(go())


def test_stream_from_a2a1_agent():
    ctx = str(uuid.uuid4())

    async def go():
        http = httpx.AsyncClient(timeout=30, headers={"X-Agent-Id": "ddecho"})
        client = await create_client(f"{RELAY}/peers/st1", ClientConfig(streaming=True, httpx_client=http))
        events = [ev async for ev in client.send_message(request([data_part({"n": 8})], ctx, {"agent.id": "ddecho"}))]
        await client.close()
        return events
    events = asyncio.run(go())
    expect(len(events) >= 2, f"{len(events)} stream events")
    last = events[-1]
    state = last.status_update.status.state if last.HasField("status_update") else last.task.status.state
    expect(state == TaskState.TASK_STATE_COMPLETED, f"last state {TaskState.Name(state)}")
    artifacts = [e.artifact_update.artifact for e in events if e.HasField("artifact_update")]
    expect(artifacts and MessageToDict(artifacts[0].parts[0].data)["echo"] == {"n": 8}, "no echo artifact")
    check_stream_spans(TRACES, ctx, len(events))


def test_star_refuses_leaf_to_leaf():
    async def go():
        try:
            await send("py1c", [data_part({"n": 2})], {"agent.id": "py1"})
        except Exception as e:  # noqa: BLE001 - the SDK raises its generic error for -32010
            text = str(e)
            expect("-32010" in text or "star-topology" in text, f"{type(e).__name__}: {text}")
            return
        raise AssertionError("the leaf-to-leaf send was forwarded")
    asyncio.run(go())


if __name__ == "__main__":
    sys.exit(run([
        ("a2a1-client/to-a2a1-agent-traced-then-get-and-cancel", test_to_a2a1_agent_traced_then_get_and_cancel),
        ("a2a1-client/to-ddwire-agent", test_to_ddwire_agent),
        ("a2a1-client/two-turns-in-one-context-to-the-harness", test_two_turns_in_one_context_to_the_harness_behind_the_relay),
        ("a2a1-client/star-refuses-leaf-to-leaf", test_star_refuses_leaf_to_leaf),
        ("a2a1-client/stream-from-a2a1-agent", test_stream_from_a2a1_agent),
    ]))
