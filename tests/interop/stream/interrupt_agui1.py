"""ag-ui-protocol 1.0.0 -> ddwire's harness: a run its agent suspends is an AG-UI 1.0 interrupt.

Usage: python interrupt_agui1.py CONFIG.json      (in the venv of requirements-agui1.txt)
CONFIG: {"harness", "token", "runs"} (written by suite.sh).

Tests (one PASS/FAIL line each):
- agui1/interrupt: `POST /agui` with a `RunAgentInput` (built and serialised by ag-ui-protocol
  1.0.0's own model) whose forwardedProps.request is for demo.confirm: every frame validates as
  the ag-ui-protocol 1.0.0 event its `type` names, with nothing in `model_extra`, and is byte-equal
  to `EventEncoder().encode(event)`; the last is RUN_FINISHED without `result`, its `outcome` a
  `RunFinishedInterruptOutcome` with one `Interrupt` whose id is the invocation_id and whose
  message is the resume condition.
- agui1/resume: a second `RunAgentInput` with `resume=[ResumeEntry(interrupt_id=<id>,
  status="resolved", payload={"confirm": True})]` streams a run that ends RUN_FINISHED with the
  succeeded envelope as `result`; the stored run's turns.json holds both turns.
"""

import json
import os
import secrets
import sys
import time
import urllib.request
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "a2a"))

from ag_ui.core import (Event, EventType, ResumeEntry, RunAgentInput,  # noqa: E402
                        RunFinishedEvent, RunFinishedInterruptOutcome)
from ag_ui.encoder import EventEncoder  # noqa: E402
from pydantic import TypeAdapter  # noqa: E402

from checks import expect, run  # noqa: E402

CFG = json.load(open(sys.argv[1]))
HARNESS = CFG["harness"].rstrip("/")
ADAPTER = TypeAdapter(Event)
ENCODER = EventEncoder()
STATE = {}


def uuid7():
    ms = int(time.time() * 1000)
    rand = int.from_bytes(secrets.token_bytes(10), "big")
    value = (ms << 80) | (0x7 << 76) | ((rand >> 68) & 0xFFF) << 64 | (0b10 << 62) | (rand & ((1 << 62) - 1))
    return str(uuid.UUID(int=value))


def post(run_input):
    body = run_input.model_dump_json(by_alias=True, exclude_none=True).encode()
    req = urllib.request.Request(f"{HARNESS}/agui", data=body, method="POST", headers={
        "Content-Type": "application/json", "Accept": "text/event-stream",
        "Authorization": f"Bearer {CFG['token']}"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        text = resp.read().decode("utf-8")
    events = []
    for frame in text[:-2].split("\n\n"):
        expect(frame.startswith("data: ") and "\n" not in frame, f"a frame {frame[:200]!r}")
        doc = json.loads(frame[len("data: "):])
        event = ADAPTER.validate_python(doc)
        expect(event.type == EventType(doc["type"]), f"{doc['type']} parsed as {type(event).__name__}")
        expect(not event.model_extra, f"{doc['type']} has fields 1.0 does not know: {event.model_extra}")
        expect(ENCODER.encode(event) == frame + "\n\n",
               f"EventEncoder writes {ENCODER.encode(event)!r}, ddwire wrote {frame!r}")
        events.append(event)
    return events


def test_interrupt():
    request = {"agent_id": "demo.confirm", "invocation_id": uuid7(),
               "input": {"schema_class": "Message", "message_text": "archive the thread"}}
    events = post(RunAgentInput(thread_id="thread-1", run_id="run-1", messages=[],
                                forwarded_props={"request": request}))
    last = events[-1]
    expect(isinstance(last, RunFinishedEvent), f"the last event is {type(last).__name__}")
    expect(last.result is None, f"result {last.result!r:.200}")
    expect(isinstance(last.outcome, RunFinishedInterruptOutcome), f"outcome {last.outcome!r:.300}")
    (interrupt,) = last.outcome.interrupts
    expect(interrupt.id == request["invocation_id"], f"interrupt id {interrupt.id}")
    expect(interrupt.message.startswith("Confirm to proceed"), f"message {interrupt.message!r}")
    expect(interrupt.expires_at, "no expiresAt")
    STATE["id"] = interrupt.id


def test_resume():
    expect("id" in STATE, "no interrupt from agui1/interrupt")
    events = post(RunAgentInput(thread_id="thread-1", run_id="run-2", messages=[],
                                resume=[ResumeEntry(interrupt_id=STATE["id"], status="resolved",
                                                    payload={"confirm": True})]))
    last = events[-1]
    expect(isinstance(last, RunFinishedEvent) and last.outcome is None, f"last {last!r:.300}")
    expect(last.result["outcome"]["status"] == "succeeded", f"result {last.result!r:.300}")
    turns = json.load(open(os.path.join(CFG["runs"], STATE["id"], "turns.json")))
    statuses = [t["agent_reply"]["result"]["outcome"]["status"] for t in turns["turns"]]
    expect(statuses == ["suspended", "succeeded"], f"stored turns {statuses}")


if __name__ == "__main__":
    sys.exit(run([
        ("agui1/interrupt", test_interrupt),
        ("agui1/resume", test_resume),
    ]))
