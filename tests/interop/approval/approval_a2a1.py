"""A data steward's approval of a referred run, end to end (a2a-sdk 1.3.0 client, `ddwire approve`
and `ddwire decline`, the harness's HTTP routes).

Usage: approval_a2a1.py CONFIG   (CONFIG: {"harness", "ddwire", "referred_out"})

Alice's a2a-sdk client sends hello.world a message; the profile refers it to a data steward. Tests
(one PASS/FAIL line each):
- referred: the task completes with an envelope `referred` (policy_requires_approval, data_steward).
- cli-approve: `ddwire approve` with the steward's token exits 0 and prints a new run's envelope:
  succeeded, for Alice, on the same input and conversation; `GET /runs/{id}/approval` on either run
  (as Alice) names the other; the new run's root span carries an `approved` event.
- second-approval-refused: approving again exits 1 with 409 "already approved", and no run is made.
- others-refused: Bob's token and Alice's own are refused (403) on a fresh referred run, which
  stays undecided.
- http-decline: the steward declines a referred run with POST /runs/{id}/decline: recorded once
  (who, when, why), nothing runs, and a later approval is refused.
Writes CONFIG's referred_out: {"approved", "approved_run", "open": [three undecided runs]}.
"""

import asyncio
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "a2a"))

import httpx  # noqa: E402
from a2a.client import ClientConfig, create_client  # noqa: E402
from a2a.types import Message, Part, Role, SendMessageRequest, TaskState  # noqa: E402
from google.protobuf import struct_pb2  # noqa: E402
from google.protobuf.json_format import MessageToDict, ParseDict  # noqa: E402

from checks import expect, run  # noqa: E402

CFG = json.load(open(sys.argv[1]))
HARNESS = CFG["harness"].rstrip("/")
DDWIRE = CFG["ddwire"]
ALICE = "https://orcid.org/0000-0002-1825-0097"
STEWARD = "urn:example:role:data-steward"
STATE = {}


def http(method, path, token=None, body=None):
    """(status, JSON body) of one request to the harness."""
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(HARNESS + path, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def send_as_alice(text, context_id=None):
    """Alice's a2a-sdk 1.3.0 client sends hello.world one data part: the envelope."""
    doc = {"agent_id": "hello.world", "input": {"schema_class": "Message", "message_text": text}}

    async def go():
        headers = {"Authorization": "Bearer alice-token"}
        async with httpx.AsyncClient(timeout=60, headers=headers) as h:
            client = await create_client(HARNESS, ClientConfig(streaming=False, httpx_client=h))
            msg = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER,
                          parts=[Part(data=ParseDict(doc, struct_pb2.Value()))])
            if context_id:
                msg.context_id = context_id
            return [ev async for ev in client.send_message(SendMessageRequest(message=msg))]

    events = asyncio.run(go())
    expect(len(events) == 1 and events[0].HasField("task"), f"expected one task: {events!s:.300}")
    task = events[0].task
    expect(task.status.state == TaskState.TASK_STATE_COMPLETED,
           f"task {TaskState.Name(task.status.state)}")
    envelopes = [a for a in task.artifacts if a.name == "envelope"]
    expect(len(envelopes) == 1, "one envelope artifact")
    return MessageToDict(envelopes[0].parts[0].data)


def referred_run(text):
    env = send_as_alice(text)
    outcome = env["outcome"]
    expect(outcome["status"] == "referred", f"outcome {outcome}")
    expect(outcome.get("reason_code") == "policy_requires_approval", f"reason {outcome}")
    expect(outcome.get("referred_to") == "data_steward", f"referred_to {outcome}")
    return env["invocation_id"]


def ddwire(*args, token="steward-token"):
    return subprocess.run([DDWIRE, *args, "--harness", HARNESS, "--token", token],
                          capture_output=True, text=True, timeout=120)


def run_count():
    status, body = http("GET", "/runs?limit=1000", token="steward-token")
    expect(status == 200, f"GET /runs: {status}")
    return len(body)


def test_referred():
    STATE["referred"] = referred_run("Publish the dataset")


def test_cli_approve():
    rid = STATE["referred"]
    done = ddwire("approve", rid, "--reason", "checked the recipient")
    expect(done.returncode == 0, f"exit {done.returncode}: {done.stderr.strip()}")
    env = json.loads(done.stdout)
    new = env["invocation_id"]
    STATE["approved_run"] = new
    expect(new != rid, "the approval made a new run")
    expect(env["outcome"]["status"] == "succeeded", f"outcome {env['outcome']}")
    expect(env["acting_for"]["principal_id"] == ALICE, f"acting_for {env['acting_for']}")
    for run_id in (rid, new):
        status, record = http("GET", f"/runs/{run_id}/approval", token="alice-token")
        expect(status == 200, f"GET /runs/{run_id}/approval as Alice: {status} {record}")
        expect(record["decision"] == "approved" and record["referred_invocation_id"] == rid
               and record["invocation_id"] == new, f"record {record}")
        expect(record["decided_by"]["principal_id"] == STEWARD, f"decided_by {record}")
        expect(record.get("reason") == "checked the recipient", f"reason {record}")
    status, referred_env = http("GET", f"/runs/{rid}", token="alice-token")
    expect(status == 200 and referred_env["outcome"]["status"] == "referred",
           "the referred run is unchanged")
    expect(env.get("conversation_id") == referred_env.get("conversation_id"), "same conversation")
    req = urllib.request.Request(f"{HARNESS}/runs/{new}/spans",
                                 headers={"Authorization": "Bearer alice-token"})
    with urllib.request.urlopen(req, timeout=30) as r:
        spans = [json.loads(line) for line in r.read().decode().splitlines() if line.strip()]
    root = next(s for s in spans if s["name"] == "invoke_agent" and not s.get("parent_id"))
    events = [e for e in root["events"] if e["name"] == "approved"]
    expect(len(events) == 1, f"root events {[e['name'] for e in root['events']]}")
    attrs = events[0]["attributes"]
    expect(attrs["dd.approval.referred_invocation_id"] == rid and attrs["dd.approval.by"] == STEWARD,
           f"approved event {attrs}")


def test_second_approval_refused():
    before = run_count()
    again = ddwire("approve", STATE["referred"])
    expect(again.returncode == 1, f"exit {again.returncode}")
    expect("409" in again.stderr and "already approved" in again.stderr, again.stderr.strip())
    expect(run_count() == before, "a second approval made a run")


def test_others_refused():
    rid = referred_run("Publish the other dataset")
    for token in ("bob-token", "alice-token"):
        refused = ddwire("approve", rid, token=token)
        expect(refused.returncode == 1 and "403" in refused.stderr,
               f"{token}: exit {refused.returncode}: {refused.stderr.strip()}")
    status, body = http("GET", f"/runs/{rid}/approval", token="alice-token")
    expect(status == 404, f"the run was decided: {status} {body}")
    STATE.setdefault("open", []).append(rid)


def test_http_decline():
    rid = referred_run("Publish the third dataset")
    before = run_count()
    status, body = http("POST", f"/runs/{rid}/decline", token="steward-token",
                        body={"reason": "not for publication"})
    expect(status == 200, f"decline: {status} {body}")
    d = body["decision"]
    expect(d["decision"] == "declined" and d["reason"] == "not for publication"
           and d["decided_by"]["principal_id"] == STEWARD and "invocation_id" not in d, f"record {d}")
    expect(run_count() == before, "a decline made a run")
    status, body = http("POST", f"/runs/{rid}/approve", token="steward-token", body={})
    expect(status == 409 and "already declined" in body["error"], f"approve after decline: {status} {body}")
    STATE["declined"] = rid


status = run([("referred", test_referred), ("cli-approve", test_cli_approve),
              ("second-approval-refused", test_second_approval_refused),
              ("others-refused", test_others_refused), ("http-decline", test_http_decline)])
if "approved_run" in STATE:
    # Two more undecided runs for the browser: one to approve there, one to decline.
    try:
        STATE.setdefault("open", []).extend(referred_run(f"For the viewer {i}") for i in range(2))
    except AssertionError as e:
        print(f"FAIL viewer-runs: {e}")
        status = 1
    json.dump({k: STATE[k] for k in ("referred", "approved_run", "open", "declined") if k in STATE},
              open(CFG["referred_out"], "w"))
sys.exit(status)
