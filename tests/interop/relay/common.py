"""Helpers the relay suite's programs share (standard library only)."""

import json
import os
import secrets
import sys
import time
import traceback
import urllib.request


def expect(cond, reason):
    if not cond:
        raise AssertionError(reason)


def run(tests):
    """Run `[(name, fn), ...]`; print PASS/FAIL lines; return 0 if all passed, else 1."""
    failed = 0
    for name, fn in tests:
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - every failure becomes one FAIL line
            failed += 1
            reason = str(e) if isinstance(e, AssertionError) else f"{type(e).__name__}: {e}"
            print(f"FAIL {name}: {' '.join(reason.split())[:600]}", flush=True)
            traceback.print_exc()
        else:
            print(f"PASS {name}", flush=True)
    return 1 if failed else 0


def new_traceparent():
    """A fresh sampled W3C traceparent, and its trace and span ids."""
    trace_id, span_id = secrets.token_hex(16), secrets.token_hex(8)
    return f"00-{trace_id}-{span_id}-01", trace_id, span_id


def spans(traces_dir, context_id, want=2, seconds=5):
    """The spans the relay wrote for a session (waiting briefly for `want` of them)."""
    path = os.path.join(traces_dir, f"{context_id}.jsonl")
    deadline = time.monotonic() + seconds
    while True:
        lines = open(path).read().splitlines() if os.path.exists(path) else []
        if len(lines) >= want or time.monotonic() > deadline:
            return [json.loads(line) for line in lines]
        time.sleep(0.05)


def check_hop(traces_dir, context_id, caller_trace, caller_span, injected_traceparent, peer):
    """The session's spans: a SERVER span under the caller's span, a CLIENT span under it whose
    context is the traceparent the peer received, both with session.id = the context id."""
    found = spans(traces_dir, context_id)
    server = [s for s in found if s["kind"] == "SpanKind.SERVER"]
    client = [s for s in found if s["kind"] == "SpanKind.CLIENT"]
    expect(len(server) >= 1 and len(client) >= 1, f"spans {[s['name'] for s in found]}")
    server, client = server[-1], client[-1]
    expect(server["context"]["trace_id"] == "0x" + caller_trace, f"server trace {server['context']}")
    expect(server["parent_id"] == "0x" + caller_span, f"server parent {server['parent_id']}")
    expect(client["parent_id"] == server["context"]["span_id"], "the forward is not the server span's child")
    expect(client["context"]["trace_id"] == "0x" + caller_trace, f"client trace {client['context']}")
    if injected_traceparent is not None:  # what the peer received, when it tells
        _, trace, span, _ = injected_traceparent.split("-")
        expect(trace == caller_trace, f"the peer got trace {trace}, not the caller's {caller_trace}")
        expect(client["context"]["span_id"] == "0x" + span,
               f"the peer's traceparent names span {span}, not the forward {client['context']['span_id']}")
    for s in (server, client):
        expect(s["attributes"].get("session.id") == context_id, f"session.id {s['attributes'].get('session.id')}")
        expect(s["attributes"].get("a2a.peer.id") == peer, f"a2a.peer.id {s['attributes'].get('a2a.peer.id')}")
    return server, client


def check_stream_spans(traces_dir, context_id, events_seen):
    """The stream's SERVER span: one a2a.message.stream_chunk event per event the client got,
    seq 0, 1, …, the last final; state changes ending in completed."""
    found = spans(traces_dir, context_id)
    server = next(s for s in found if s["kind"] == "SpanKind.SERVER")
    expect(server["attributes"].get("a2a.relay.mode") == "forward-stream", f"mode {server['attributes'].get('a2a.relay.mode')}")
    chunks = [e["attributes"] for e in server["events"] if e["name"] == "a2a.message.stream_chunk"]
    expect([c["seq"] for c in chunks] == list(range(events_seen)),
           f"chunk seqs {[c['seq'] for c in chunks]} for {events_seen} events seen")
    expect(chunks[-1]["final"] is True and not any(c["final"] for c in chunks[:-1]), f"final flags {chunks}")
    states = [e["attributes"]["to"] for e in server["events"] if e["name"] == "a2a.task.state_change"]
    expect(states and states[-1] == "completed", f"state changes {states}")


def rpc(url, method, params, headers=None, rid=1):
    body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode()
    req = urllib.request.Request(url, body, {"content-type": "application/json", **(headers or {})})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


def class_of(reply):
    """The relay error's (code, class), from either binding's error data."""
    err = reply.get("error") or {}
    data = err.get("data")
    if isinstance(data, list) and data:
        data = data[0].get("metadata", {})
    return err.get("code"), (data or {}).get("class") if isinstance(data, dict) else None


if __name__ == "__main__":
    sys.exit("a module, not a program")
