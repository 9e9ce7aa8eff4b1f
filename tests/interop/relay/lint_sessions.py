"""`ddwire lint` over the sessions this suite's a2a-sdk clients drove through the relay (run
after them): every session file the relay wrote, streams and refusals included, lints clean;
and the same stream session with one chunk dropped fails, naming the stream-chunks check
(standard library only).

Usage: python3 lint_sessions.py DDWIRE TRACES_DIR
"""

import json
import os
import subprocess
import sys
import tempfile

from common import expect, run

DDWIRE, TRACES = sys.argv[1], sys.argv[2]


def lint(*args):
    return subprocess.run([DDWIRE, "lint", *args], capture_output=True, text=True, timeout=60)


def sessions_with_chunks():
    found = []
    for name in sorted(os.listdir(TRACES)):
        with open(os.path.join(TRACES, name)) as f:
            spans = [json.loads(line) for line in f if line.strip()]
        if any(e["name"] == "a2a.message.stream_chunk" for s in spans for e in s["events"]):
            found.append((name, spans))
    return found


def test_every_session_lints_clean():
    done = lint("--all", TRACES, "--json")
    reports = [json.loads(line) for line in done.stdout.splitlines()]
    expect(len(reports) >= 10, f"only {len(reports)} sessions linted: {done.stderr}")
    bad = [(r["file"], [c["check"] for c in r.get("checks", []) if not c["passed"]] or r.get("error"))
           for r in reports if not r.get("passed")]
    expect(not bad and done.returncode == 0, f"sessions that fail: {bad}")
    for r in reports:
        expect([c["check"] for c in r["checks"]] == ["parents", "propagation", "session", "task-states",
                                                     "stream-chunks", "failure-class", "time-nesting",
                                                     "attribute-names"], f"checks {r['checks']}")


def test_streams_of_both_sdk_clients_are_among_them():
    streams = sessions_with_chunks()
    bindings = {s["attributes"].get("a2a.binding") for _, spans in streams for s in spans if s["kind"] == "SpanKind.SERVER"}
    expect(len(streams) >= 2 and {"0.3", "1.0"} <= bindings, f"stream sessions {[n for n, _ in streams]}, bindings {bindings}")


def test_a_stream_session_with_a_chunk_dropped_fails_naming_the_check():
    name, spans = next((n, s) for n, s in sessions_with_chunks()
                       if sum(e["name"] == "a2a.message.stream_chunk" for sp in s for e in sp["events"]) >= 3)
    server = next(s for s in spans if any(e["name"] == "a2a.message.stream_chunk" for e in s["events"]))
    chunks = [e for e in server["events"] if e["name"] == "a2a.message.stream_chunk"]
    server["events"].remove(chunks[1])
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, name)
        with open(path, "w") as f:
            f.writelines(json.dumps(s) + "\n" for s in spans)
        done = lint(path)
    expect(done.returncode == 1, f"exit {done.returncode}: {done.stdout}")
    expect("  stream-chunks: FAILED" in done.stdout and "  parents: passed" in done.stdout, done.stdout)


if __name__ == "__main__":
    sys.exit(run([
        ("lint/every-session-lints-clean", test_every_session_lints_clean),
        ("lint/streams-of-both-sdk-clients-are-among-them", test_streams_of_both_sdk_clients_are_among_them),
        ("lint/a-dropped-chunk-fails-stream-chunks", test_a_stream_session_with_a_chunk_dropped_fails_naming_the_check),
    ]))
