"""Plain JSON-RPC and HTTP against `ddwire relay` (standard library only): the peers view,
health, and failures the SDK clients cannot provoke.

Usage: python3 relay_raw.py RELAY_URL TRACES_DIR
"""

import json
import sys
import urllib.error
import urllib.request
import uuid

from common import class_of, expect, rpc, run, spans

RELAY = sys.argv[1].rstrip("/")
TRACES = sys.argv[2]


def get(path):
    try:
        with urllib.request.urlopen(RELAY + path, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_peers_show_cards_and_health():
    status, body = get("/peers")
    expect(status == 200, f"GET /peers {status}")
    peers = {p["id"]: p for p in body["peers"]}
    expect(set(peers) == {"ddecho", "py03", "py1", "py1c", "st03", "st1", "dd", "gone"}, f"peers {sorted(peers)}")
    for pid, name in (("ddecho", "echo.wire"), ("py03", "echo-a2a03"), ("py1", "echo-a2a1"), ("py1c", "echo-a2a1-compat"),
                      ("dd", "ddwire harness")):
        expect(peers[pid]["health"]["state"] == "up", f"{pid} health {peers[pid]['health']}")
        expect(peers[pid]["card"]["name"] == name, f"{pid} card name {peers[pid]['card'].get('name')}")
    expect(peers["gone"]["health"]["state"] == "down", f"gone health {peers['gone']['health']}")
    bindings = sorted(i["binding"] for i in peers["py1c"]["interfaces"])
    expect(bindings == ["0.3", "1.0"], f"py1c interfaces {peers['py1c']['interfaces']}")


def test_healthz_and_livez():
    status, body = get("/healthz")
    expect(status == 200 and body["status"] == "degraded", f"/healthz {status} {body.get('status')}")
    expect(body["peers"]["up"] == 7 and body["topology"] == "star", f"{body['peers']} {body['topology']}")
    expect(get("/livez")[0] == 200, "/livez")


def test_unknown_target_and_stream_refused():
    msg = {"kind": "message", "role": "user", "messageId": str(uuid.uuid4()),
           "parts": [{"kind": "text", "text": "x"}], "metadata": {"agent.id": "ddecho", "agent.target": "nobody"}}
    expect(class_of(rpc(RELAY + "/a2a", "message/send", {"message": msg})) == (-32015, "unknown_peer"), "unknown peer")
    msg["metadata"] = {"agent.id": "py03", "agent.target": "py1c"}
    reply = rpc(RELAY + "/a2a", "message/stream", {"message": msg})
    expect(class_of(reply) == (-32010, "topology_violation"), f"a leaf's stream to a leaf: {reply}")


def test_send_1_0_by_path_traced():
    ctx = str(uuid.uuid4())
    msg = {"role": "ROLE_USER", "messageId": str(uuid.uuid4()), "contextId": ctx,
           "parts": [{"data": {"n": 5}}], "metadata": {"agent.id": "ddecho"}}
    reply = rpc(RELAY + "/peers/py1/a2a", "SendMessage", {"message": msg}, {"A2A-Version": "1.0"})
    expect(reply["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED", f"{reply}")
    found = spans(TRACES, ctx)
    server = next(s for s in found if s["name"] == "a2a.task")
    events = [e["attributes"] for e in server["events"] if e["name"] == "a2a.task.state_change"]
    expect(events and events[-1]["to"] == "completed", f"state change events {events}")


if __name__ == "__main__":
    sys.exit(run([
        ("raw/peers-show-cards-and-health", test_peers_show_cards_and_health),
        ("raw/healthz-and-livez", test_healthz_and_livez),
        ("raw/unknown-target-and-stream-refused", test_unknown_target_and_stream_refused),
        ("raw/send-1.0-by-path-traced", test_send_1_0_by_path_traced),
    ]))
