#!/usr/bin/env python3
"""Run a ddwire command that exports stored runs, then check that an OTLP receiver got every
stored span back, field by field, as the sink (sink.py) decoded it from what rotel forwarded.

    check_received.py TEST RUNS_DIR SINK_FILE [--live] [--service-name NAME] [--common K=V]...
                      [--post-file FILE URL] [--tls-client-cn CN] -- CMD...

Runs CMD (its output goes to this program's log), then waits (at most 60 s) until SINK_FILE,
read from where it ended before CMD ran, holds every span stored under RUNS_DIR (each run's
spans.jsonl, the span JSON OpenTelemetry Python's to_json writes), and compares each:

- ids (trace, span, parent), name, kind, start and end times, trace state;
- attributes, in order, with their types (str, bool, int, float, arrays, maps, null);
- events (name, time, attributes) and links (trace id, span id, trace state, attributes);
- status (code and message);
- the resource: every stored attribute, with its value; the harness's own resource
  (service.name ddwire-harness) also service.version and, with --live (CMD is the process that
  made the runs), a UUID service.instance.id, and with --service-name (OTEL_SERVICE_NAME was
  set) that service.name in place of the stored one; every resource each --common attribute;
  nothing else;
- the scope (ddwire), and flags 0 (span JSON does not record whether a parent was remote).

With --post-file, CMD writes OTLP/JSON lines to FILE (ddwire export --otlp-file), and this
program POSTs each line to URL as application/json before waiting: the file-exporter format,
accepted by a real receiver.

With --tls-client-cn (sink.py serving TLS, CMD exporting to it directly), every span must have
arrived on a connection whose client certificate's common name is CN.

Prints `PASS TEST` or `FAIL TEST: reason`; exits 1 on failure.
"""

from __future__ import annotations

import calendar
import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from datetime import datetime

KINDS = {"SpanKind.INTERNAL": 1, "SpanKind.SERVER": 2, "SpanKind.CLIENT": 3, "SpanKind.PRODUCER": 4, "SpanKind.CONSUMER": 5}
CODES = {"UNSET": 0, "OK": 1, "ERROR": 2}


def ns(text: str | None) -> int:
    """A span JSON time (microseconds, `Z`) as nanoseconds; null is 0."""
    if text is None:
        return 0
    t = datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ")
    return (calendar.timegm(t.timetuple()) * 1_000_000 + t.microsecond) * 1000


def trace_state(repr_text: str) -> str:
    """repr(TraceState) as span JSON stores it -> the W3C header OTLP carries."""
    return ",".join(f"{k}={v}" for k, v in re.findall(r"\{key=([^,]*), value=(.*?)\}'", repr_text))


def value(v):
    """A stored attribute value in the sink's notation (maps as ordered kvlists)."""
    if isinstance(v, dict):
        return {"kvlist": [[k, value(x)] for k, x in v.items()]}
    if isinstance(v, list):
        return [value(x) for x in v]
    return v


def attributes(d: dict) -> list:
    return [[k, value(v)] for k, v in d.items()]


def same(a, b) -> bool:
    # json.dumps tells 1 from 1.0 and True from 1, which == does not.
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def stored_spans(runs: str) -> list[dict]:
    spans = []
    for run in sorted(os.listdir(runs)):
        path = os.path.join(runs, run, "spans.jsonl")
        if os.path.isfile(os.path.join(runs, run, "envelope.json")) and os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                spans += [json.loads(line) for line in f if line.strip()]
    return spans


def compare(stored: dict, got: dict, common: list[list[str]], live: bool, service: str | None) -> list[str]:
    problems = []

    def check(what, want, have):
        if not same(want, have):
            problems.append(f"{what}: stored {json.dumps(want)[:200]}, received {json.dumps(have)[:200]}")

    ctx = stored["context"]
    check("parent_span_id", (stored["parent_id"] or "")[2:], got["parent_span_id"])
    check("name", stored["name"], got["name"])
    check("kind", KINDS[stored["kind"]], got["kind"])
    check("start", ns(stored["start_time"]), got["start"])
    check("end", ns(stored["end_time"]), got["end"])
    check("trace_state", trace_state(ctx["trace_state"]), got["trace_state"])
    check("attributes", attributes(stored["attributes"]), got["attributes"])
    check(
        "events",
        [{"name": e["name"], "time": ns(e["timestamp"]), "attributes": attributes(e["attributes"])} for e in stored["events"]],
        got["events"],
    )
    check(
        "links",
        [
            {
                "trace_id": link["context"]["trace_id"][2:],
                "span_id": link["context"]["span_id"][2:],
                "trace_state": trace_state(link["context"]["trace_state"]),
                "attributes": attributes(link["attributes"]),
            }
            for link in stored["links"]
        ],
        got["links"],
    )
    check(
        "status",
        {"code": CODES[stored["status"]["status_code"]], "message": stored["status"].get("description", "")},
        got["status"],
    )
    resource = dict(stored["resource"]["attributes"])
    # The harness's own spans, and spans stored with no resource, are the exporter's own.
    own = resource.get("service.name") == "ddwire-harness" or not resource
    if own and service:
        resource["service.name"] = service
    want = attributes(resource)
    if own:
        have = dict((k, v) for k, v in got["resource"])
        want.append(["service.version", have.get("service.version")])
        if not have.get("service.version"):
            problems.append(f"resource: the harness's own resource lacks service.version: {got['resource']}")
        if live:
            want.append(["service.instance.id", have.get("service.instance.id")])
            if not re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", have.get("service.instance.id") or ""):
                problems.append(f"resource: the live harness's resource lacks a UUIDv4 service.instance.id: {got['resource']}")
    want += [kv for kv in common if kv[0] not in resource]
    check("resource", want, got["resource"])
    check("resource_schema_url", stored["resource"]["schema_url"], got["resource_schema_url"])
    check("scope.name", "ddwire", got["scope"]["name"])
    check("flags", 0, got["flags"])
    check("content_type", "application/x-protobuf", got["content_type"])
    return problems


def main() -> int:
    args = sys.argv[1:]
    cut = args.index("--")
    opts, cmd = args[:cut], args[cut + 1:]
    test, runs, sink = opts[0], opts[1], opts[2]
    common, post, live, service, client_cn = [], None, False, None, None
    i = 3
    while i < len(opts):
        if opts[i] == "--live":
            live = True
            i += 1
        elif opts[i] == "--service-name":
            service = opts[i + 1]
            i += 2
        elif opts[i] == "--common":
            common.append(opts[i + 1].split("=", 1))
            i += 2
        elif opts[i] == "--tls-client-cn":
            client_cn = opts[i + 1]
            i += 2
        elif opts[i] == "--post-file":
            post = (opts[i + 1], opts[i + 2])
            i += 3
        else:
            raise SystemExit(f"unknown option {opts[i]}")

    offset = os.path.getsize(sink)
    print("$", " ".join(cmd), flush=True)
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    print(done.stdout, flush=True)
    if done.returncode != 0:
        print(f"FAIL {test}: {' '.join(cmd[:2])} exited {done.returncode}: {done.stdout.strip().splitlines()[-1:]}")
        return 1
    if post:
        path, url = post
        with open(path, encoding="utf-8") as f:
            lines = [line for line in f if line.strip()]
        for line in lines:
            request = urllib.request.Request(
                url, data=line.encode("utf-8"), headers={"Content-Type": "application/json"}, method="POST"
            )
            with urllib.request.urlopen(request, timeout=10) as r:
                if r.status != 200:
                    print(f"FAIL {test}: {url} answered {r.status} to a line of {path}")
                    return 1
        print(f"posted {len(lines)} lines of {path} to {url}", flush=True)

    stored = stored_spans(runs)
    if not stored:
        print(f"FAIL {test}: no stored spans under {runs}")
        return 1
    wanted = {(s["context"]["trace_id"][2:], s["context"]["span_id"][2:]): s for s in stored}
    received: dict[tuple[str, str], dict] = {}
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with open(sink, encoding="utf-8") as f:
            f.seek(offset)
            for line in f:
                if line.endswith("\n"):
                    got = json.loads(line)
                    received[(got["trace_id"], got["span_id"])] = got
        if all(k in received for k in wanted):
            break
        time.sleep(0.2)
    missing = [k for k in wanted if k not in received]
    if missing:
        print(f"FAIL {test}: {len(missing)} of {len(wanted)} stored spans never arrived, e.g. {missing[0]}")
        return 1
    extra = [k for k in received if k not in wanted]
    problems = []
    for key, span in wanted.items():
        problems += [f"{span['name']} {key[1]}: {p}" for p in compare(span, received[key], common, live, service)]
        if client_cn is not None and received[key].get("tls_client_cn") != client_cn:
            problems.append(f"{span['name']} {key[1]}: arrived with client certificate "
                            f"{received[key].get('tls_client_cn')!r}, not {client_cn!r}")
    if extra:
        problems.append(f"{len(extra)} spans arrived that are not stored, e.g. {extra[0]}")
    if problems:
        print("\n".join(problems))
        print(f"FAIL {test}: {len(problems)} differences, first: {problems[0]}")
        return 1
    runs_count = len({s["context"]["trace_id"] for s in stored})
    print(f"PASS {test} ({len(wanted)} spans in {runs_count} traces equal field by field)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
