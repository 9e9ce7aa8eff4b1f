#!/usr/bin/env python3
"""A relay session in Arize Phoenix: `ddwire relay --otlp-endpoint PHOENIX` carries one A2A
session between a ddwire agent (the hub) and a ddwire harness (a leaf): a send each way, a
stream from the harness, a `tasks/get`,
and Phoenix's REST API shows it as one session whose traces hold every hop (standard library
only).

    check_phoenix_relay.py PREFIX PHOENIX_URL RELAY_URL TRACES_DIR DDWIRE

Tests (each printed as `PASS PREFIX/<name>` or `FAIL PREFIX/<name>: reason`):

- `relay-session-lints-clean`: the session file the relay wrote passes `ddwire lint`;
- `relay-session-is-one-phoenix-session`: `GET /v1/sessions/<contextId>` names the session and
  lists exactly the traces of the relay's file (one per call), within 60 s;
- `relay-hops-in-phoenix`: `GET /v1/projects/default/spans` returns every span of the file, each
  of Phoenix's kind AGENT (read from `openinference.span.kind`, which Phoenix takes out of the
  attributes) and with `session.id` = the contextId beside the relay's own
  attributes (`a2a.*`, `rpc.*`), each forward (CLIENT, a hop to `graph.node.id` = the peer)
  under its SERVER span, as the file has them.
"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

PREFIX, PHOENIX, RELAY, TRACES, DDWIRE = sys.argv[1:6]


def uuid7() -> str:
    """A UUIDv7 (RFC 9562 §5.7): the harness takes only those as a conversation (context) id."""
    value = (int(time.time() * 1000) << 80) | int.from_bytes(os.urandom(10), "big")
    value = (value & ~(0xF << 76)) | (0x7 << 76)
    value = (value & ~(0x3 << 62)) | (0x2 << 62)
    return str(uuid.UUID(int=value))


CTX = uuid7()
CALLS = 4


def get(url: str):
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.load(r)


def rpc(method, params, headers=None):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    req = urllib.request.Request(RELAY + "/a2a", body, {"content-type": "application/json", **(headers or {})})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


def stream(method, params):
    u = urllib.parse.urlparse(RELAY + "/a2a")
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    conn.request("POST", u.path, json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}),
                 {"content-type": "application/json", "accept": "text/event-stream"})
    text = conn.getresponse().read().decode()
    conn.close()
    return [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:")]


INVOCATION = {"agent_id": "hello.world", "input": {"schema_class": "Message", "message_text": "hi"}}


def message(sender, target, part):
    return {"message": {"kind": "message", "role": "user", "messageId": str(uuid.uuid4()), "contextId": CTX,
                        "parts": [part], "metadata": {"agent.id": sender, "agent.target": target}}}


def drive():
    """The session: hub → leaf, a stream hub → leaf, leaf → hub, tasks/get: four calls."""
    invoke = {"kind": "data", "data": INVOCATION}
    first = rpc("message/send", message("hub", "leaf", invoke))
    assert first["result"]["status"]["state"] == "completed", first
    events = stream("message/stream", message("hub", "leaf", invoke))
    assert len(events) > 1 and all("result" in e for e in events), events
    back = rpc("message/send", message("leaf", "hub", {"kind": "text", "text": "hello hub"}))
    assert back["result"]["status"]["state"] == "completed", back
    got = rpc("tasks/get", {"id": first["result"]["id"]}, {"X-Agent-Id": "hub"})
    assert got["result"]["status"]["state"] == "completed", got


def file_spans():
    path = os.path.join(TRACES, f"{CTX}.jsonl")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        lines = open(path).read().splitlines() if os.path.exists(path) else []
        if len(lines) >= 2 * CALLS:
            return path, [json.loads(line) for line in lines]
        time.sleep(0.1)
    raise AssertionError(f"{path} never held {2 * CALLS} spans")


def phoenix_spans(traces):
    out, cursor = [], None
    while True:
        page = get(f"{PHOENIX}/v1/projects/default/spans?limit=1000" + (f"&cursor={cursor}" if cursor else ""))
        out += [s for s in page["data"] if s["context"]["trace_id"] in traces]
        cursor = page.get("next_cursor")
        if not cursor:
            return out


def attr(span, key):
    """An attribute as Phoenix's REST API returns it (flat keys)."""
    return (span.get("attributes") or {}).get(key)


def main() -> int:
    failures = 0

    def verdict(name, problems, note=""):
        nonlocal failures
        if problems:
            failures += 1
            print("\n".join(problems))
            print(f"FAIL {PREFIX}/{name}: {len(problems)} problems, first: {problems[0]}")
        else:
            print(f"PASS {PREFIX}/{name}{note}")

    drive()
    path, spans = file_spans()
    done = subprocess.run([DDWIRE, "lint", path], capture_output=True, text=True, timeout=60)
    print(done.stdout)
    verdict("relay-session-lints-clean",
            [] if done.returncode == 0 else [f"ddwire lint exited {done.returncode}: {done.stdout}{done.stderr}"])

    traces = {s["context"]["trace_id"][2:] for s in spans}
    problems = [f"the file holds {len(traces)} traces for {CALLS} calls"] if len(traces) != CALLS else []
    session = None
    deadline = time.monotonic() + 60
    while not problems and time.monotonic() < deadline:
        try:
            session = get(f"{PHOENIX}/v1/sessions/{CTX}")["data"]
        except urllib.error.HTTPError as e:
            if e.code != 404:
                raise
        if session and {t["trace_id"] for t in session["traces"]} == traces:
            break
        time.sleep(0.5)
    if not problems:
        if session is None:
            problems.append(f"GET /v1/sessions/{CTX}: no such session after 60 s")
        else:
            if session["session_id"] != CTX:
                problems.append(f"session_id {session['session_id']!r}, not {CTX!r}")
            have = {t["trace_id"] for t in session["traces"]}
            if have != traces:
                problems.append(f"the session's traces {sorted(have)}, the relay's {sorted(traces)}")
    verdict("relay-session-is-one-phoenix-session", problems, f" ({len(traces)} traces in session {CTX})")

    wanted = {s["context"]["span_id"][2:]: s for s in spans}
    deadline = time.monotonic() + 60
    found = {}
    while time.monotonic() < deadline:
        found = {s["context"]["span_id"]: s for s in phoenix_spans(traces)}
        if all(k in found for k in wanted):
            break
        time.sleep(0.5)
    if found:
        print("one span as Phoenix returns it:", json.dumps(next(iter(found.values())))[:1500])
    problems = []
    hops = 0
    for span_id, s in wanted.items():
        got = found.get(span_id)
        if got is None:
            problems.append(f"{s['name']} {span_id} is not in Phoenix")
            continue
        # Phoenix reads `openinference.span.kind` into the span's kind, out of its attributes.
        if got.get("span_kind") != "AGENT" or s["attributes"].get("openinference.span.kind") != "AGENT":
            problems.append(f"{s['name']} {span_id}: Phoenix's span kind {got.get('span_kind')!r}")
        if attr(got, "session.id") != CTX:
            problems.append(f"{s['name']} {span_id}: session.id {attr(got, 'session.id')!r}")
        for key in ("rpc.method", "a2a.binding"):
            if attr(got, key) != s["attributes"].get(key):
                problems.append(f"{s['name']} {span_id}: {key} {attr(got, key)!r}, the file has {s['attributes'].get(key)!r}")
        want_parent = (s["parent_id"] or "")[2:] or None
        if got.get("parent_id") != want_parent:
            problems.append(f"{s['name']} {span_id}: parent {got.get('parent_id')!r}, the file has {want_parent!r}")
        if s["kind"] == "SpanKind.CLIENT":
            hops += 1
            server = wanted.get(want_parent or "")
            if server is None or server["kind"] != "SpanKind.SERVER":
                problems.append(f"hop {span_id} is under no SERVER span")
            if attr(got, "graph.node.id") != s["attributes"].get("a2a.peer.id"):
                problems.append(f"hop {span_id}: graph.node.id {attr(got, 'graph.node.id')!r}")
    if hops != CALLS:
        problems.append(f"{hops} hops, expected {CALLS}")
    verdict("relay-hops-in-phoenix", problems, f" ({len(wanted)} spans, {hops} hops)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
