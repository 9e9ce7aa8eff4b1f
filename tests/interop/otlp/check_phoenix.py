#!/usr/bin/env python3
"""Export a delegated run and its child to Arize Phoenix with `ddwire export`, and check that
Phoenix's REST API returns both traces, span for span.

    check_phoenix.py PREFIX PHOENIX_URL RUNS_DIR DDWIRE [--ca FILE]

With --ca FILE (Phoenix serving https, PHOENIX_TLS_ENABLED), the REST API is read trusting FILE's
CA and `ddwire export` is given `--ca-file FILE`; the tests are the same.

Tests (each printed as `PASS PREFIX/<name>` or `FAIL PREFIX/<name>: reason`):

- `delegated-run`: `ddwire export PARENT CHILD --otlp-endpoint PHOENIX_URL` (http/protobuf, the
  default) exits 0; then `GET /v1/projects/default/spans` returns, within 60 s, every stored span
  of both runs: the parent's trace and the child's (a new trace, linked to the parent's
  `delegate` span), each with its name, parent, start and end time, status and attributes;
- `json-refused-clearly`: Phoenix takes only application/x-protobuf (it compares the content
  type as a string), so `--otlp-protocol http/json` exits 1 and says HTTP 415, naming
  --otlp-protocol.
"""

from __future__ import annotations

import calendar
import json
import os
import ssl
import subprocess
import sys
import time
import urllib.request
from datetime import datetime

CODES = {"UNSET": "UNSET", "OK": "OK", "ERROR": "ERROR"}


def micros(span_json_time: str) -> int:
    t = datetime.strptime(span_json_time, "%Y-%m-%dT%H:%M:%S.%fZ")
    return calendar.timegm(t.timetuple()) * 1_000_000 + t.microsecond


def phoenix_micros(text: str) -> int:
    t = datetime.fromisoformat(text)
    return calendar.timegm(t.utctimetuple()) * 1_000_000 + t.microsecond


CONTEXT = None  # with --ca: an SSLContext trusting that CA


def get(url: str):
    with urllib.request.urlopen(url, timeout=10, context=CONTEXT) as r:
        return json.load(r)


def spans_of(runs: str, run_id: str) -> list[dict]:
    with open(os.path.join(runs, run_id, "spans.jsonl"), encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def phoenix_spans(base: str) -> list[dict]:
    out, cursor = [], None
    while True:
        url = f"{base}/v1/projects/default/spans?limit=1000" + (f"&cursor={cursor}" if cursor else "")
        page = get(url)
        out += page["data"]
        cursor = page.get("next_cursor")
        if not cursor:
            return out


def main() -> int:
    global CONTEXT
    prefix, base, runs, ddwire = sys.argv[1:5]
    trust = []
    if sys.argv[5:6] == ["--ca"]:
        CONTEXT = ssl.create_default_context(cafile=sys.argv[6])
        trust = ["--ca-file", sys.argv[6]]
    failures = 0
    # The delegated run: a stored parent whose envelope lists a delegation, and its child.
    parent = child = None
    for run in sorted(os.listdir(runs)):
        path = os.path.join(runs, run, "envelope.json")
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                envelope = json.load(f)
            if envelope.get("delegations"):
                parent, child = run, envelope["delegations"][0]["delegated_invocation_id"]
    if parent is None:
        print(f"FAIL {prefix}/delegated-run: no delegated run under {runs}")
        return 1

    cmd = [ddwire, "export", parent, child, "--runs", runs, "--otlp-endpoint", base, *trust]
    print("$", " ".join(cmd), flush=True)
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    print(done.stdout, flush=True)
    stored = spans_of(runs, parent) + spans_of(runs, child)
    traces = {s["context"]["trace_id"][2:] for s in stored}
    if done.returncode != 0:
        print(f"FAIL {prefix}/delegated-run: ddwire export exited {done.returncode}")
        failures += 1
    elif len(traces) != 2:
        print(f"FAIL {prefix}/delegated-run: the stored runs hold {len(traces)} traces, expected 2")
        failures += 1
    else:
        wanted = {s["context"]["span_id"][2:]: s for s in stored}
        deadline = time.monotonic() + 60
        found: dict[str, dict] = {}
        while time.monotonic() < deadline:
            found = {s["context"]["span_id"]: s for s in phoenix_spans(base) if s["context"]["trace_id"] in traces}
            if all(k in found for k in wanted):
                break
            time.sleep(0.5)
        problems = []
        for span_id, s in wanted.items():
            got = found.get(span_id)
            if got is None:
                problems.append(f"{s['name']} {span_id} is not in Phoenix")
                continue
            want = {
                "trace_id": s["context"]["trace_id"][2:],
                "name": s["name"],
                "parent_id": (s["parent_id"] or "")[2:] or None,
                "start": micros(s["start_time"]),
                "end": micros(s["end_time"]),
                "status_code": CODES[s["status"]["status_code"]],
                "attributes": s["attributes"],
            }
            have = {
                "trace_id": got["context"]["trace_id"],
                "name": got["name"],
                "parent_id": got["parent_id"],
                "start": phoenix_micros(got["start_time"]),
                "end": phoenix_micros(got["end_time"]),
                "status_code": got["status_code"],
                "attributes": got["attributes"],
            }
            if json.dumps(want, sort_keys=True) != json.dumps(have, sort_keys=True):
                problems.append(f"{s['name']} {span_id}: stored {want}, Phoenix {have}")
        print("\n".join(problems))
        if problems:
            print(f"FAIL {prefix}/delegated-run: {len(problems)} differences, first: {problems[0]}")
            failures += 1
        else:
            print(
                f"PASS {prefix}/delegated-run ({len(wanted)} spans of the parent's trace and the "
                f"delegated child's trace returned by GET /v1/projects/default/spans)"
            )

    cmd = [ddwire, "export", parent, "--runs", runs, "--otlp-endpoint", base, "--otlp-protocol", "http/json", *trust]
    print("$", " ".join(cmd), flush=True)
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    print(done.stdout, flush=True)
    if done.returncode == 1 and "HTTP 415" in done.stdout and "--otlp-protocol" in done.stdout:
        print(f"PASS {prefix}/json-refused-clearly")
    else:
        print(f"FAIL {prefix}/json-refused-clearly: exit {done.returncode}, output {done.stdout.strip()[-300:]!r}")
        failures += 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
