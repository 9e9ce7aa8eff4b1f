#!/usr/bin/env python3
"""Build the fuzz targets' seed corpus from fixtures/: every request an upstream a2a-sdk
client sent (fixtures/a2a/*.jsonl, "client-request" lines) as raw HTTP/1.1, framed by
Content-Length and by chunked coding, and every AG-UI frame (fixtures/agui/*.jsonl) as a
chunked body. Each file starts with the selector byte the targets read first.

    python3 fuzz/seed_corpus.py        # writes fuzz/corpus/request/ and fuzz/corpus/chunked/
"""
import hashlib
import json
import pathlib

here = pathlib.Path(__file__).resolve().parent
fixtures = here.parent / "fixtures"
out = {name: here / "corpus" / name for name in ("request", "chunked")}
for d in out.values():
    d.mkdir(parents=True, exist_ok=True)


def chunked(body: bytes, size: int = 61) -> bytes:
    pieces = [body[i:i + size] for i in range(0, len(body), size)]
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"


def write(target: str, data: bytes) -> None:
    for selector in (b"\x3e", b"\x27"):  # large limits; small ones
        blob = selector + data
        (out[target] / hashlib.sha1(blob).hexdigest()).write_bytes(blob)


count = 0
for path in sorted((fixtures / "a2a").glob("*.jsonl")):
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if record.get("direction") != "client-request":
            continue
        head = b"POST /a2a HTTP/1.1\r\nHost: agent.test\r\n" + b"".join(
            f"{k}: {v}\r\n".encode() for k, v in record["headers"].items())
        body = record["body"].encode()
        write("request", head + b"Content-Length: %d\r\n\r\n" % len(body) + body)
        write("request", head + b"Transfer-Encoding: chunked\r\n\r\n" + chunked(body))
        write("chunked", chunked(body))
        count += 1
for path in sorted((fixtures / "agui").glob("*.jsonl")):
    for line in path.read_text().splitlines()[:50]:
        write("chunked", chunked(line.encode(), 17))
for raw in (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
            b"HEAD /.well-known/agent-card.json HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
            b"POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n{}"):
    write("request", raw)
print(f"seeded from {count} recorded requests: "
      + ", ".join(f"{len(list(d.iterdir()))} in {d.relative_to(here.parent)}" for d in out.values()))
