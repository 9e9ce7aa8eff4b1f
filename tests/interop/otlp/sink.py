#!/usr/bin/env python3
"""An OTLP/HTTP protobuf sink: decodes each ExportTraceServiceRequest with the official
opentelemetry-proto classes and appends one JSON line per span to OUT.

    sink.py PORT OUT [--tls-cert FILE --tls-key FILE [--tls-client-ca FILE]]

Each line: {"resource": {...}, "resource_schema_url", "scope": {"name", "version"},
"trace_id", "span_id", "parent_span_id" (hex, "" for none), "trace_state", "flags", "name",
"kind" (int), "start", "end" (ns ints), "attributes": [[key, value], ...], "events":
[{"name", "time", "attributes"}], "links": [{"trace_id", "span_id", "trace_state",
"attributes"}], "status": {"code" (int), "message"}, "content_type", "path"}. Attribute values
are Python values: str, bool, int, float, list, {"kvlist": [[k, v], ...]} for a kvlist (to keep
order), None for an empty AnyValue. A gzip body (rotel compresses what it forwards) is
decompressed. Answers 200 with an empty ExportTraceServiceResponse.
Only for loopback tests; binds 127.0.0.1.

With --tls-cert/--tls-key it serves HTTPS (Python's ssl module, TLS 1.2 and 1.3; each handshake
in the connection's own thread), and each line also has "tls_client_cn": the common name of
the client certificate presented, or null; with --tls-client-ca a client certificate signed by
that CA is required. A failed handshake is logged on stderr and nothing is written.
"""

from __future__ import annotations

import gzip
import json
import ssl
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
    tls = False

    def client_cn(self):
        cert = self.connection.getpeercert() if Handler.tls else None
        for rdn in (cert or {}).get("subject", ()):
            for key, value in rdn:
                if key == "commonName":
                    return value
        return None

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
                    if Handler.tls:
                        lines[-1]["tls_client_cn"] = self.client_cn()
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


class TLSServer(ThreadingHTTPServer):
    """HTTPS: each accepted connection is wrapped, and its handshake done in its own thread."""

    context: ssl.SSLContext

    def get_request(self):
        sock, addr = self.socket.accept()
        return self.context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), addr

    def finish_request(self, request, client_address):
        try:
            request.settimeout(10)
            request.do_handshake()
        except (ssl.SSLError, OSError) as e:
            print(f"sink: TLS handshake with {client_address} failed: {e}", file=sys.stderr, flush=True)
            return
        super().finish_request(request, client_address)


def main() -> None:
    args, opts, i = [], {}, 1
    while i < len(sys.argv):
        if sys.argv[i] in ("--tls-cert", "--tls-key", "--tls-client-ca"):
            opts[sys.argv[i]] = sys.argv[i + 1]
            i += 2
        else:
            args.append(sys.argv[i])
            i += 1
    port, out = int(args[0]), args[1]
    Handler.out = out
    open(out, "a").close()
    if "--tls-cert" not in opts:
        ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
        return
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(opts["--tls-cert"], opts["--tls-key"])
    if "--tls-client-ca" in opts:
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(opts["--tls-client-ca"])
    Handler.tls = True
    server = TLSServer(("127.0.0.1", port), Handler)
    server.context = context
    server.serve_forever()


if __name__ == "__main__":
    main()
