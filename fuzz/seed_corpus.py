#!/usr/bin/env python3
"""Build every fuzz target's seed corpus from fixtures/ (real captures made with the upstream
SDKs): the requests an a2a-sdk client sent and the answers it read, AG-UI frames, span JSON
lines, traceparent/tracestate cases, canonical-JSON inputs, stored runs. Each file is what the
target reads: where a target takes a selector byte first, every selector a seed is useful
under gets a file; where it takes two inputs, they are split by one NUL byte.

    python3 fuzz/seed_corpus.py        # writes fuzz/corpus/<target>/ (not committed)
"""
import hashlib
import json
import pathlib
import re

here = pathlib.Path(__file__).resolve().parent
fixtures = here.parent / "fixtures"
counts = {}


def write(target: str, data: bytes, selectors=None) -> None:
    d = here / "corpus" / target
    d.mkdir(parents=True, exist_ok=True)
    for blob in ([bytes([s]) + data for s in selectors] if selectors is not None else [data]):
        (d / hashlib.sha1(blob).hexdigest()).write_bytes(blob)
        counts[target] = counts.get(target, 0) + 1


def lines(path):
    return [json.loads(l) for l in path.read_text().splitlines() if l.strip()]


def chunked(body: bytes, size: int = 61) -> bytes:
    pieces = [body[i:i + size] for i in range(0, len(body), size)]
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"


def walk(value):
    yield value
    if isinstance(value, dict):
        for v in value.values():
            yield from walk(v)
    elif isinstance(value, list):
        for v in value:
            yield from walk(v)


texts = []  # every fixture file's text, for the RFC 3339 times and patterns in it
# A2A: raw HTTP requests (request, chunked), JSON-RPC bodies both ways (jsonrpc), and every
# object in them for the codecs, which pick the document kind by selector.
for path in sorted((fixtures / "a2a").glob("*.jsonl")):
    texts.append(path.read_text())
    for record in lines(path):
        body = record["body"].encode()
        write("jsonrpc", body, selectors=(0, 1))
        for value in walk(json.loads(body)):
            if isinstance(value, dict) and len(value) > 1:
                write("a2a_v03", json.dumps(value).encode(), selectors=(0, 1, 2, 3))
                write("a2a_v10", json.dumps(value).encode(), selectors=(0, 1, 2, 3))
        if record.get("direction") != "client-request":
            continue
        head = b"POST /a2a HTTP/1.1\r\nHost: agent.test\r\n" + b"".join(
            f"{k}: {v}\r\n".encode() for k, v in record["headers"].items())
        write("request", head + b"Content-Length: %d\r\n\r\n" % len(body) + body,
              selectors=(0x3e, 0x27))
        write("request", head + b"Transfer-Encoding: chunked\r\n\r\n" + chunked(body),
              selectors=(0x3e, 0x27))
        write("chunked", chunked(body), selectors=(0x3e, 0x27))
        # The InvocationRequest in a send, as AG-UI's forwardedProps would carry it.
        for value in walk(json.loads(body)):
            if isinstance(value, dict) and "invocation_id" in value and "input" in value:
                rai = {"threadId": "t", "runId": "r", "messages": [], "tools": [],
                       "context": [], "state": {}, "forwardedProps": {"request": value}}
                write("run_agent_input", json.dumps(rai).encode())
for raw in (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
            b"HEAD /.well-known/agent-card.json HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
            b"POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n{}"):
    write("request", raw, selectors=(0x3e, 0x27))
# AG-UI frames: SSE (event JSON, NUL, an error code) and chunked bodies.
for path in sorted((fixtures / "agui").glob("*.jsonl")):
    for record in lines(path):
        frame = record["sse"].encode()
        data = frame.split(b"data: ", 1)[-1].strip()
        write("sse", data + b"\0" + record["case"].encode())
        write("chunked", chunked(frame, 17), selectors=(0x3e, 0x27))
# Trace context cases: traceparent, NUL, tracestate.
for path in sorted((fixtures / "trace-context").glob("*.jsonl")):
    for record in lines(path):
        parent = record.get("traceparent") or ""
        state = record.get("tracestate") or ""
        if isinstance(state, list):
            state = ",".join(state)
        write("trace_context", parent.encode() + b"\0" + state.encode())
# Span JSON lines: the span fixtures and the stored runs' traces.
for path in [fixtures / "spans" / "cases.jsonl"]:
    texts.append(path.read_text())
    for record in lines(path):
        if isinstance(record.get("json"), str):
            write("span_json", record["json"].encode())
            for m in re.finditer(r"\[\([^\]]*\)\]", record["json"]):
                write("trace_context", b"\0" + m.group(0).encode())
for path in sorted((fixtures / "runs").glob("*/*")):
    text = path.read_text()
    texts.append(text)
    if path.name == "spans.jsonl":
        for line in text.splitlines():
            write("span_json", line.encode())
    if path.name == "envelope.json":
        write("json", text.encode(), selectors=(0x3e, 0x0a))
# The JSON reader and canonical writers: every canonicalisation input, accepted or refused.
for path in sorted((fixtures / "canonical").glob("*.jsonl")):
    texts.append(path.read_text())
    for record in lines(path):
        if isinstance(record.get("input"), str):
            write("json", record["input"].encode(), selectors=(0x3e, 0x0a, 0x00))
            try:
                value = json.loads(record["input"])
            except ValueError:
                continue
            # Schemas among the inputs, with the canonical output as an instance.
            if isinstance(value, dict) and ("type" in value or "properties" in value):
                write("schema", json.dumps(value).encode() + b"\0" + b'{"a":1}')
            write("agent_card", json.dumps(value).encode(), selectors=(1, 3, 5, 7, 9, 11, 13, 15))
for text in texts:
    for t in set(re.findall(r"\d{4}-\d\d-\d\dT[0-9:.]+(?:Z|[+-]\d\d:\d\d)", text)):
        write("rfc3339", t.encode())
for pattern, subject in [(r"\S", "x"), (r"^[A-Z]{2,3}-\d+$", "REQ-7"), (r"(a|b)*c", "ababc"),
                         (r"^\w+@\w+\.\w+$", "a@b.c"), (r"[^\s]+(?:x|y)?", "é  y"),
                         (r"^(\d{4})-(\d\d)$", "2026-01"), (r"a{0,3}?b", "aaab")]:
    write("pattern", pattern.encode() + b"\0" + subject.encode())
for schema, instance in [
        ({"type": "object", "required": ["a"], "properties": {"a": {"type": "integer", "minimum": 0}}},
         {"a": 3}),
        ({"type": "array", "items": {"type": "string", "pattern": r"^\S+$", "maxLength": 4}},
         ["ab", "c d"]),
        ({"anyOf": [{"type": "null"}, {"enum": [1, "x"]}], "definitions": {"d": {"const": 2}}}, 2),
        ({"$ref": "#/definitions/d", "definitions": {"d": {"type": "number", "multipleOf": 0.5}}}, 1.5),
        ({"type": "object", "additionalProperties": False, "properties": {"b": {"format": "date-time"}}},
         {"b": "2026-01-01T00:00:00Z"})]:
    write("schema", json.dumps(schema).encode() + b"\0" + json.dumps(instance).encode())
for fields in [["agent.one", "1750000000", "0123456789abcdef", "v1=" + "0" * 64, "POST", "/a2a", "{}"],
               ["", "", "", "", "GET", "/a2a?x=1", ""]]:
    write("signature", b"\0".join(f.encode() for f in fields))
print("seeded: " + ", ".join(f"{t} {n}" for t, n in sorted(counts.items())))
