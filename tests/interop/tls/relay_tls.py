"""a2a-sdk 0.3.26 client -> `ddwire relay` over TLS -> peers at https URLs.

Usage: python relay_tls.py CONFIG.json      (in the venv of requirements-a2a03.txt)

CONFIG: {"relay": https URL, "traces": the relay's --traces DIR, "sink": the TLS OTLP sink's
file, "pki": the copies of fixtures/tls}. The relay runs with --tls-cert (it is called over
https), --ca-file ca.pem (it calls its peers over https), --tls-client-cert client.pem and
--otlp-endpoint https://<sink>. Its peers: "ddecho" (`ddwire agent echo --tls-cert`, the hub),
"py03" (server_a2a03.py under uvicorn TLS), "st03" (server_stream.py 03 under uvicorn TLS,
streaming), "mecho" (`ddwire agent echo --tls-client-ca ca.pem`: mTLS), "bad" (server_a2a03.py
with untrusted.pem, signed by another CA).

Tests:
- relay/peers-up-over-tls: GET /peers shows the four good peers up, each with its card
  (read over https; mecho's with the relay's client certificate);
- relay/card-says-https: the card the relay serves for py03 points at the relay's https URL;
- relay/to-uvicorn-agent-traced: a send forwarded over TLS to the a2a-sdk agent is echoed;
  the hop's SERVER and CLIENT spans are under the caller's traceparent, which reached the peer;
- relay/to-ddwire-agent: a send by metadata ("agent.target": "ddecho") to the ddwire TLS agent;
- relay/to-mtls-peer: a send to the peer that requires a client certificate is answered;
- relay/stream-from-uvicorn-agent: message/stream from the streaming a2a-sdk agent, passed on
  event by event over TLS, ends completed; the stream's span records each chunk;
- relay/untrusted-peer-refused: a send to the peer whose certificate is not from a trusted CA
  is a JSON-RPC error naming its class and the certificate, not an answer;
- relay/otlp-to-tls-sink: the traced hop's spans reached the OTLP sink over https.
"""

import asyncio
import json
import os
import re
import ssl
import sys
import time
import urllib.request
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "relay"))

import httpx  # noqa: E402
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory  # noqa: E402
from a2a.client.errors import A2AClientJSONRPCError  # noqa: E402
from a2a.types import DataPart, Message, Part, Role, Task, TaskState, TextPart  # noqa: E402

from common import check_hop, check_stream_spans, expect, new_traceparent, run, spans  # noqa: E402

CFG = json.load(open(sys.argv[1]))
RELAY = CFG["relay"].rstrip("/")
TRACES = CFG["traces"]
CA = os.path.join(CFG["pki"], "ca.pem")
SEEN = {}


def verify():
    return ssl.create_default_context(cafile=CA)


def message(parts, context_id, metadata):
    return Message(kind="message", message_id=str(uuid.uuid4()), role=Role.user, parts=parts,
                   context_id=context_id, metadata=metadata)


async def client_for(http, peer, streaming=False):
    """A client over the card the relay serves for `peer`, or, for peer None, over ddecho's card
    pointed at the relay's /a2a (the message metadata then names the target)."""
    card = await A2ACardResolver(http, f"{RELAY}/peers/{peer or 'ddecho'}").get_agent_card()
    if peer is None:
        card = card.model_copy(update={"url": f"{RELAY}/a2a"})
    return ClientFactory(ClientConfig(streaming=streaming, httpx_client=http)).create(card), card


async def send(peer, parts, metadata, context_id=None):
    context_id = context_id or str(uuid.uuid4())
    async with httpx.AsyncClient(timeout=30, verify=verify()) as http:
        client, _ = await client_for(http, peer)
        events = [ev async for ev in client.send_message(message(parts, context_id, metadata))]
    expect(len(events) == 1 and isinstance(events[0], tuple) and isinstance(events[0][0], Task),
           f"not one Task: {events!r:.300}")
    return events[0][0], context_id


def echoed(task):
    expect(task.status.state == TaskState.completed, f"task state {task.status.state}")
    expect(len(task.artifacts or []) == 1, f"artifacts {task.artifacts!r:.300}")
    return task.artifacts[0].parts[0].root.data


def echoed_text(task):
    expect(task.status.state == TaskState.completed, f"task state {task.status.state}")
    return [p.root.text for p in (task.status.message.parts if task.status.message else [])
            if isinstance(p.root, TextPart)]


def test_peers_up():
    with urllib.request.urlopen(RELAY + "/peers", timeout=30, context=verify()) as r:
        body = json.load(r)
    peers = {p["id"]: p for p in body["peers"]}
    expect(set(peers) == {"ddecho", "py03", "st03", "mecho", "bad"}, f"peers {sorted(peers)}")
    for pid, name in (("ddecho", "echo.wire"), ("py03", "echo-a2a03"), ("st03", "stream-a2a03"), ("mecho", "echo.wire")):
        expect(peers[pid]["health"]["state"] == "up", f"{pid} health {peers[pid]['health']}")
        expect((peers[pid].get("card") or {}).get("name") == name, f"{pid} card {str(peers[pid].get('card'))[:200]}")
    print(f"the untrusted peer: health {peers['bad']['health']}")


def test_card_says_https():
    async def go():
        async with httpx.AsyncClient(timeout=30, verify=verify()) as http:
            return (await client_for(http, "py03"))[1]
    card = asyncio.run(go())
    expect(card.url == f"{RELAY}/peers/py03/a2a", f"card url {card.url}")
    expect(card.name == "echo-a2a03", f"card name {card.name}")


def test_to_uvicorn_agent_traced():
    tp, trace_id, span_id = new_traceparent()
    task, ctx = asyncio.run(send("py03", [Part(root=DataPart(data={"n": 1, "tls": True}))],
                                 {"agent.id": "ddecho", "traceparent": tp}))
    seen = echoed(task)
    expect(seen["echo"] == {"n": 1, "tls": True}, f"echo {seen['echo']}")
    expect(seen["wire"]["method"] == "message/send", f"the peer got {seen['wire']}")
    check_hop(TRACES, ctx, trace_id, span_id, seen["metadata"]["traceparent"], "py03")
    SEEN["traced"] = ctx


def test_to_ddwire_agent():
    task, _ = asyncio.run(send(None, [Part(root=TextPart(text="relayed over TLS"))],
                               {"agent.id": "py03", "agent.target": "ddecho"}))
    text = echoed_text(task)
    expect(text == ["relayed over TLS"], f"the ddwire echo answered {text}")


def test_to_mtls_peer():
    task, _ = asyncio.run(send("mecho", [Part(root=TextPart(text="relayed over mutual TLS"))], {"agent.id": "ddecho"}))
    text = echoed_text(task)
    expect(text == ["relayed over mutual TLS"], f"the mTLS echo answered {text}")


def test_stream():
    ctx = str(uuid.uuid4())

    async def go():
        async with httpx.AsyncClient(timeout=30, verify=verify()) as http:
            client, card = await client_for(http, "st03", streaming=True)
            expect(card.capabilities.streaming is True, "the relayed card does not say it streams")
            msg = message([Part(root=DataPart(data={"n": 9}))], ctx, {"agent.id": "ddecho"})
            return [ev async for ev in client.send_message(msg)]
    events = asyncio.run(go())
    expect(len(events) >= 2, f"{len(events)} stream events")
    task = events[-1][0]
    expect(task.status.state == TaskState.completed, f"last task state {task.status.state}")
    expect(task.artifacts and task.artifacts[0].parts[0].root.data["echo"] == {"n": 9}, f"artifacts {task.artifacts!r:.300}")
    check_stream_spans(TRACES, ctx, len(events))


def test_untrusted_peer_refused():
    try:
        asyncio.run(send(None, [Part(root=DataPart(data={"n": 3}))], {"agent.id": "ddecho", "agent.target": "bad"}))
    except A2AClientJSONRPCError as e:
        print(f"refused: {e.error.code} {e.error.message} {e.error.data}")
        expect(isinstance(e.error.data, dict) and e.error.data.get("class"), f"the error names no class: {e.error}")
        expect(e.error.data.get("class") != "peer_jsonrpc_error", f"the peer answered: {e.error}")
        expect(re.search(r"unknown CA|certificate", f"{e.error.message} {e.error.data}", re.I),
               f"the error does not say the peer's certificate was refused: {e.error.message} {e.error.data}")
        return
    raise AssertionError("the relay forwarded to a peer whose certificate no trusted CA signed")


def test_otlp_to_tls_sink():
    ctx = SEEN.get("traced")
    expect(ctx, "no traced send (relay/to-uvicorn-agent-traced failed)")
    want = {s["context"]["span_id"][2:]: s["name"] for s in spans(TRACES, ctx)}
    expect(len(want) >= 2, f"the relay wrote {len(want)} spans for {ctx}")
    deadline = time.monotonic() + 30
    got = {}
    while time.monotonic() < deadline:
        with open(CFG["sink"], encoding="utf-8") as f:
            for line in f:
                span = json.loads(line)
                if span["span_id"] in want:
                    got[span["span_id"]] = span
        if set(got) == set(want):
            break
        time.sleep(0.2)
    missing = sorted(set(want) - set(got))
    expect(not missing, f"{len(missing)} of {len(want)} relay spans never reached the sink, e.g. {missing[:1]}")
    for sid, span in got.items():
        expect(span["name"] == want[sid], f"span {sid}: {span['name']} != {want[sid]}")
        attrs = dict(span["attributes"])
        expect(attrs.get("session.id") == ctx, f"span {sid}: session.id {attrs.get('session.id')}")


if __name__ == "__main__":
    sys.exit(run([
        ("relay/peers-up-over-tls", test_peers_up),
        ("relay/card-says-https", test_card_says_https),
        ("relay/to-uvicorn-agent-traced", test_to_uvicorn_agent_traced),
        ("relay/to-ddwire-agent", test_to_ddwire_agent),
        ("relay/to-mtls-peer", test_to_mtls_peer),
        ("relay/stream-from-uvicorn-agent", test_stream),
        ("relay/untrusted-peer-refused", test_untrusted_peer_refused),
        ("relay/otlp-to-tls-sink", test_otlp_to_tls_sink),
    ]))
