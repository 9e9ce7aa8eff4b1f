"""A ddwire agent still accepts connections after it has had none for longer than its
read timeout (30 s by default).

Usage: python3 idle_listener.py BASE_URL IDLE_SECONDS      (standard library only)

The suite starts a dedicated `ddwire agent hello`, polls its card once until it answers, leaves
it alone for IDLE_SECONDS (> 30), then runs this: the card must still come back (HTTP 200,
name "hello.world") and a v0.3 `message/send` must still get a completed task. An A2A agent is
a long-lived server; a quiet half-minute must not take it off the network.
"""

import json
import sys
import urllib.request

from checks import expect, invocation, run

BASE, IDLE = sys.argv[1].rstrip("/"), sys.argv[2]


def test_still_listening():
    try:
        with urllib.request.urlopen(BASE + "/.well-known/agent-card.json", timeout=10) as r:
            card = json.load(r)
    except OSError as e:
        raise AssertionError(f"after {IDLE}s without connections the agent refuses them: {e}") from None
    expect(card.get("name") == "hello.world", f"card name {card.get('name')!r}")
    body = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {
        "kind": "message", "messageId": "idle-1", "role": "user",
        "parts": [{"kind": "data", "data": invocation()}]}}}
    req = urllib.request.Request(BASE + "/a2a", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        state = json.load(r)["result"]["status"]["state"]
    expect(state == "completed", f"task state {state}")


if __name__ == "__main__":
    sys.exit(run([(f"ddwire-agent/accepts-after-{IDLE}s-idle", test_still_listening)]))
