#!/usr/bin/env python3
"""An OTLP/HTTP protobuf sink: decodes each ExportTraceServiceRequest with the official
opentelemetry-proto classes and appends one JSON line per span to OUT.

    sink.py PORT OUT

Each line: {"resource": {...}, "resource_schema_url", "scope": {"name", "version"},
"trace_id", "span_id", "parent_span_id" (hex, "" for none), "trace_state", "flags", "name",
"kind" (int), "start", "end" (ns ints), "attributes": [[key, value], ...], "events":
[{"name", "time", "attributes"}], "links": [{"trace_id", "span_id", "trace_state",
"attributes"}], "status": {"code" (int), "message"}, "content_type", "path"}. Attribute values
are Python values: str, bool, int, float, list, {"kvlist": [[k, v], ...]} for a kvlist (to keep
order), None for an empty AnyValue. A gzip body (rotel compresses what it forwards) is
decompressed. Answers 200 with an empty ExportTraceServiceResponse.
Only for loopback tests; binds 127.0.0.1.
"""

from __future__ import annotations

import gzip
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


def any_value(v):
    which = v.WhichOneof("value")
    if which is None:
        return None
    if which == "array_value":
        return [any_value(x) for x in v.array_value.values]
    if which == "kvlist_value":
        return {"kvlist": [[kv.key, any_value(kv.value)] for kv in v.kvlist_value.values]}
    if which == "bytes_value":
        return {"bytes": v.bytes_value.hex()}
    return getattr(v, which)


def key_values(kvs):
    return [[kv.key, any_value(kv.value)] for kv in kvs]


class Handler(BaseHTTPRequestHandler):
    out = None

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        request = ExportTraceServiceRequest()
        try:
            if self.headers.get("content-encoding", "").lower() == "gzip":
                body = gzip.decompress(body)
            request.ParseFromString(body)
        except Exception as e:  # noqa: BLE001
            self.send_response(400)
            self.end_headers()
            self.wfile.write(str(e).encode())
            return
        lines = []
        for rs in request.resource_spans:
            resource = key_values(rs.resource.attributes)
            for ss in rs.scope_spans:
                for s in ss.spans:
                    lines.append(
                        {
                            "resource": resource,
                            "resource_schema_url": rs.schema_url,
                            "scope": {"name": ss.scope.name, "version": ss.scope.version},
                            "trace_id": s.trace_id.hex(),
                            "span_id": s.span_id.hex(),
                            "parent_span_id": s.parent_span_id.hex(),
                            "trace_state": s.trace_state,
                            "flags": s.flags,
                            "name": s.name,
                            "kind": s.kind,
                            "start": s.start_time_unix_nano,
                            "end": s.end_time_unix_nano,
                            "attributes": key_values(s.attributes),
                            "events": [
                                {"name": e.name, "time": e.time_unix_nano, "attributes": key_values(e.attributes)}
                                for e in s.events
                            ],
                            "links": [
                                {
                                    "trace_id": link.trace_id.hex(),
                                    "span_id": link.span_id.hex(),
                                    "trace_state": link.trace_state,
                                    "attributes": key_values(link.attributes),
                                }
                                for link in s.links
                            ],
                            "status": {"code": s.status.code, "message": s.status.message},
                            "content_type": self.headers.get("content-type"),
                            "path": self.path,
                        }
                    )
        with open(Handler.out, "a", encoding="utf-8") as f:
            for line in lines:
                f.write(json.dumps(line) + "\n")
        answer = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def do_GET(self):  # noqa: N802
        self.send_response(200)
        self.send_header("content-length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


def main() -> None:
    port, out = int(sys.argv[1]), sys.argv[2]
    Handler.out = out
    open(out, "a").close()
    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


if __name__ == "__main__":
    main()
