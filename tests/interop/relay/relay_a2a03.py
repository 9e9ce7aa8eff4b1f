"""a2a-sdk 0.3.26 (A2A v0.3) client -> `ddwire relay` -> a2a-sdk 0.3.26, 1.3.0 and ddwire agents.

Usage: python relay_a2a03.py RELAY_URL TRACES_DIR      (in the venv of requirements-a2a03.txt)

The relay runs with --star, ddecho (`ddwire agent echo`) its hub, py03/py1/py1c leaves.
"""

import asyncio
import sys
import uuid

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.client.errors import A2AClientJSONRPCError
from a2a.types import DataPart, Message, Part, Role, Task, TaskQueryParams, TaskState, TextPart

from common import check_hop, check_stream_spans, expect, new_traceparent, run

RELAY = sys.argv[1].rstrip("/")
TRACES = sys.argv[2]


def message(parts, context_id, metadata):
    return Message(kind="message", message_id=str(uuid.uuid4()), role=Role.user, parts=parts,
                   context_id=context_id, metadata=metadata)


async def client_for(http, peer=None):
    """A client over the card the relay serves for `peer` (posting to /peers/{peer}/a2a), or over
    that card pointed at the relay's /a2a, where the message metadata names the target."""
    card = await A2ACardResolver(http, f"{RELAY}/peers/{peer or 'ddecho'}").get_agent_card()
    if peer is None:
        card = card.model_copy(update={"url": f"{RELAY}/a2a"})
    return ClientFactory(ClientConfig(streaming=False, httpx_client=http)).create(card), card


async def send(peer, parts, metadata, context_id=None):
    context_id = context_id or str(uuid.uuid4())
    async with httpx.AsyncClient(timeout=30) as http:
        client, _ = await client_for(http, peer)
        events = [ev async for ev in client.send_message(message(parts, context_id, metadata))]
    expect(len(events) == 1, f"expected one reply, got {len(events)}")
    expect(isinstance(events[0], tuple) and isinstance(events[0][0], Task), f"not a Task: {events[0]!r:.300}")
    return events[0][0], context_id


def echoed(task):
    """What an a2a-sdk echo server saw: {"echo", "metadata", "wire"}."""
    expect(task.status.state == TaskState.completed, f"task state {task.status.state}")
    expect(len(task.artifacts) == 1, f"artifacts {task.artifacts!r:.300}")
    return task.artifacts[0].parts[0].root.data


def test_card_points_at_the_relay():
    async def go():
        async with httpx.AsyncClient(timeout=30) as http:
            _, card = await client_for(http, "py03")
        expect(card.url == f"{RELAY}/peers/py03/a2a", f"card url {card.url}")
        expect(card.name == "echo-a2a03", f"card name {card.name}")
    asyncio.run(go())


def test_to_a2a03_agent_traced():
    tp, trace_id, span_id = new_traceparent()
    task, ctx = asyncio.run(send("py03", [Part(root=DataPart(data={"n": 1}))],
                                 {"agent.id": "ddecho", "traceparent": tp}))
    seen = echoed(task)
    expect(seen["echo"] == {"n": 1}, f"echo {seen['echo']}")
    expect(seen["wire"]["path"] == "/", f"the peer was posted at {seen['wire']['path']}")
    check_hop(TRACES, ctx, trace_id, span_id, seen["metadata"]["traceparent"], "py03")


def test_to_ddwire_agent_by_metadata_and_tasks_get_by_owner():
    tp, trace_id, span_id = new_traceparent()
    task, ctx = asyncio.run(send(None, [Part(root=TextPart(text="hello ddwire"))],
                                 {"agent.id": "py03", "agent.target": "ddecho", "traceparent": tp}))
    expect(task.status.state == TaskState.completed, f"task state {task.status.state}")
    text = task.status.message.parts[0].root.text if task.status.message else None
    expect(text == "hello ddwire", f"the ddwire echo answered {text!r}")
    check_hop(TRACES, ctx, trace_id, span_id, None, "ddecho")

    async def get():
        async with httpx.AsyncClient(timeout=30) as http:
            client, _ = await client_for(http, None)
            return await client.get_task(TaskQueryParams(id=task.id))
    got = asyncio.run(get())
    expect(got.id == task.id and got.status.state == TaskState.completed, f"tasks/get gave {got!r:.300}")


def test_to_a2a1_compat_agent_in_v03():
    task, _ = asyncio.run(send(None, [Part(root=DataPart(data={"n": 2}))],
                               {"agent.id": "ddecho", "agent.target": "py1c"}))
    seen = echoed(task)
    expect(seen["wire"]["a2a_version"] in (None, "0.3"), f"A2A-Version {seen['wire']['a2a_version']}")


def test_stream_from_a2a03_agent():
    ctx = str(uuid.uuid4())

    async def go():
        async with httpx.AsyncClient(timeout=30) as http:
            card = await A2ACardResolver(http, f"{RELAY}/peers/st03").get_agent_card()
            expect(card.capabilities.streaming is True, "the relayed card does not say it streams")
            client = ClientFactory(ClientConfig(streaming=True, httpx_client=http)).create(card)
            msg = message([Part(root=DataPart(data={"n": 9}))], ctx, {"agent.id": "ddecho"})
            return [ev async for ev in client.send_message(msg)]
    events = asyncio.run(go())
    expect(len(events) >= 2, f"{len(events)} stream events")
    task = events[-1][0]
    expect(task.status.state == TaskState.completed, f"last task state {task.status.state}")
    expect(task.artifacts and task.artifacts[0].parts[0].root.data["echo"] == {"n": 9}, f"artifacts {task.artifacts!r:.300}")
    check_stream_spans(TRACES, ctx, len(events))


def expect_error(peer, metadata, code):
    try:
        asyncio.run(send(peer, [Part(root=DataPart(data={"n": 3}))], metadata))
    except A2AClientJSONRPCError as e:
        expect(e.error.code == code, f"error code {e.error.code} != {code}: {e}")
        return e.error
    raise AssertionError(f"no error (wanted {code})")


def test_star_refuses_leaf_to_leaf():
    error = expect_error(None, {"agent.id": "py03", "agent.target": "py1c"}, -32010)
    expect(error.data["class"] == "topology_violation", f"data {error.data}")


def test_v03_to_a_1_0_only_peer_is_translated():
    task, ctx = asyncio.run(send(None, [Part(root=DataPart(data={"n": 4}))],
                                 {"agent.id": "ddecho", "agent.target": "py1"}))
    seen = echoed(task)
    expect(seen["echo"] == {"n": 4}, f"echo {seen['echo']}")
    expect(seen["wire"]["a2a_version"] == "1.0", f"py1 got A2A-Version {seen['wire']['a2a_version']}")
    expect(task.context_id == ctx, f"contextId {task.context_id} != {ctx}")


def test_v03_stream_to_a_1_0_only_peer_is_translated():
    ctx = str(uuid.uuid4())

    async def go():
        async with httpx.AsyncClient(timeout=30) as http:
            card = await A2ACardResolver(http, f"{RELAY}/peers/st03").get_agent_card()
            card = card.model_copy(update={"url": f"{RELAY}/a2a"})
            client = ClientFactory(ClientConfig(streaming=True, httpx_client=http)).create(card)
            msg = message([Part(root=DataPart(data={"n": 7}))], ctx, {"agent.id": "ddecho", "agent.target": "st1"})
            return [ev async for ev in client.send_message(msg)]
    events = asyncio.run(go())
    task = events[-1][0]
    expect(task.status.state == TaskState.completed, f"last task state {task.status.state}")
    expect(task.artifacts and task.artifacts[0].parts[0].root.data["echo"] == {"n": 7}, f"artifacts {task.artifacts!r:.300}")
    check_stream_spans(TRACES, ctx, len(events))


def test_unreachable_peer():
    error = expect_error(None, {"agent.id": "ddecho", "agent.target": "gone"}, -32013)
    expect(error.data == {"class": "peer_disconnect", "peer": "gone"}, f"data {error.data}")


if __name__ == "__main__":
    sys.exit(run([
        ("a2a03-client/card-points-at-the-relay", test_card_points_at_the_relay),
        ("a2a03-client/to-a2a03-agent-traced", test_to_a2a03_agent_traced),
        ("a2a03-client/to-ddwire-agent-then-tasks-get-by-owner", test_to_ddwire_agent_by_metadata_and_tasks_get_by_owner),
        ("a2a03-client/to-a2a1-compat-agent-in-v0.3", test_to_a2a1_compat_agent_in_v03),
        ("a2a03-client/star-refuses-leaf-to-leaf", test_star_refuses_leaf_to_leaf),
        ("a2a03-client/v0.3-to-1.0-only-peer-translated", test_v03_to_a_1_0_only_peer_is_translated),
        ("a2a03-client/unreachable-peer", test_unreachable_peer),
        ("a2a03-client/stream-from-a2a03-agent", test_stream_from_a2a03_agent),
        ("a2a03-client/v0.3-stream-to-1.0-only-peer-translated", test_v03_stream_to_a_1_0_only_peer_is_translated),
    ]))
