"""Signed calls (vendor-notes/hmac-signing.md) between ddwire and a Python agent, both ways.

Usage: python signed_a2a.py CONFIG.json      (in the venv of requirements-a2a1.txt)
CONFIG: {"signed_harness", "py_signed", "py_key_file", "py_record", "hello_signed",
         "hello_key_file", "note", "runs"} (written by suite.sh).

The signed harness (`ddwire serve` with `key_file` on both agents) calls py.signed (dd_agent.py
--key-file, verifying with dd_signing.py as ASGI middleware in front of a2a-sdk 1.3.0) and
`ddwire agent hello --key-file`.

Tests (one PASS/FAIL line each):
- signing/vectors: dd_signing.py is, byte for byte, the Python block of the vendor note, and it
  reproduces both of the note's test vectors (canonical string and DD-Signature).
- signing/python-agent-via-harness: an a2a-sdk 1.3.0 client asks the signed harness for py.signed:
  a succeeded envelope, so ddwire signed the call and the Python middleware accepted it.
- signing/ddwire-agent-via-harness: the same for hello.world behind `ddwire agent --key-file`.
- signing/replayed-call-refused: the call the harness made to py.signed (recorded by the agent),
  sent again as it was, gets HTTP 401 with JSON-RPC error -32040, reason "replayed".
- signing/altered-call-refused: that call with its body changed, or sent to another path, gets 401
  "bad-signature"; with no signature headers, 401 "missing". The card is readable unsigned.
- signing/python-signs-ddwire-verifies: a message/send that dd_signing.py signs with hello's key
  is answered by `ddwire agent hello --key-file` (a completed task); sent again, 401 "replayed";
  altered, 401 "bad-signature"; dated 1,000 s ago, 401 "stale"; signed for the other direction,
  401 "bad-signature".
"""

import asyncio
import base64
import json
import os
import re
import sys
import time
import urllib.error
import urllib.request
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "a2a"))
sys.path.insert(0, HERE)

import dd_signing  # noqa: E402
import httpx  # noqa: E402
from a2a.client import ClientConfig, create_client  # noqa: E402
from a2a.types import Message, Part, Role, SendMessageRequest, TaskState  # noqa: E402
from google.protobuf import struct_pb2  # noqa: E402
from google.protobuf.json_format import MessageToDict, ParseDict  # noqa: E402

from checks import expect, run  # noqa: E402

CFG = json.load(open(sys.argv[1]))
SECRET_VECTOR = b"ddwire-test-vector-secret-0123456789"


def key(path):
    with open(path, "rb") as f:
        return f.read().strip()


def post(url, body, headers=None):
    """POST raw bytes; (status, headers, parsed JSON body)."""
    req = urllib.request.Request(url, data=body, method="POST",
                                 headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, dict(r.headers), json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), json.loads(e.read() or b"null")


def expect_refused(response, reason):
    status, headers, body = response
    expect(status == 401, f"HTTP {status}, not 401: {body!s:.300}")
    expect(headers.get("www-authenticate", headers.get("WWW-Authenticate")) == "DD-HMAC-SHA256-V1",
           f"WWW-Authenticate {headers}")
    expect(isinstance(body, dict) and body.get("jsonrpc") == "2.0" and body.get("id") is None,
           f"not a JSON-RPC error with a null id: {body}")
    err = body.get("error", {})
    expect(err.get("code") == -32040, f"code {err.get('code')}")
    expect(err.get("data", {}).get("reason") == reason, f"reason {err.get('data')} != {reason!r}: {err.get('message')}")


def invocation(agent_id, text):
    return {"agent_id": agent_id, "input": {"schema_class": "Message", "message_text": text}}


def ask(base, doc):
    """One message through the a2a-sdk 1.3.0 client; the envelope of the completed task."""
    async def go():
        async with httpx.AsyncClient(timeout=60) as http:
            client = await create_client(base, ClientConfig(streaming=False, httpx_client=http))
            msg = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER,
                          parts=[Part(data=ParseDict(doc, struct_pb2.Value()))])
            return [ev async for ev in client.send_message(SendMessageRequest(message=msg))]

    events = asyncio.run(go())
    expect(len(events) == 1 and events[0].HasField("task"), f"expected one task: {events!s:.300}")
    task = events[0].task
    expect(task.status.state == TaskState.TASK_STATE_COMPLETED, f"task {MessageToDict(task.status)!s:.400}")
    (artifact,) = task.artifacts
    return MessageToDict(artifact.parts[0].data)


def message_send(doc):
    """A JSON-RPC A2A v0.3 message/send body with one data part."""
    return json.dumps({
        "jsonrpc": "2.0", "id": str(uuid.uuid4()), "method": "message/send",
        "params": {"message": {"kind": "message", "messageId": str(uuid.uuid4()), "role": "user",
                               "parts": [{"kind": "data", "data": doc}]}},
    }).encode()


# ---------------------------------------------------------------------------------------------

def test_vectors():
    note = open(CFG["note"], encoding="utf-8").read()
    block = re.search(r"```python\n(.*?)```", note, re.S)
    expect(block, "the note has no python block")
    source = open(os.path.join(HERE, "dd_signing.py"), encoding="utf-8").read()
    expect(block.group(1) == source, "dd_signing.py differs from the note's python block")
    body = b'{"jsonrpc":"2.0","id":1,"method":"message/send","params":{}}'
    text = dd_signing.canonical("to-agent", "hello.world", "POST", "/a2a", 1767225600,
                                "0123456789abcdef0123456789abcdef", body).decode()
    expect(f"```text\n{text}\n```" in note, f"vector 1's canonical string is not the note's:\n{text}")
    signed = dd_signing.sign(SECRET_VECTOR, "hello.world", "to-agent", "POST", "/a2a", body,
                             1767225600, "0123456789abcdef0123456789abcdef")
    expect(f"`DD-Signature: {signed['dd-signature']}`" in note, f"vector 1's signature {signed}")
    text = dd_signing.canonical("to-harness", "director.route", "POST", "/a2a?A2A-Version=1.0",
                                1767225601, "n-_0123456789ABCDEF", b"").decode()
    expect(f"```text\n{text}\n```" in note, f"vector 2's canonical string is not the note's:\n{text}")
    signed = dd_signing.sign(SECRET_VECTOR, "director.route", "to-harness", "POST",
                             "/a2a?A2A-Version=1.0", b"", 1767225601, "n-_0123456789ABCDEF")
    expect(f"`DD-Signature: {signed['dd-signature']}`" in note, f"vector 2's signature {signed}")


def test_python_agent_via_harness():
    env = ask(CFG["signed_harness"], invocation("py.signed", "signed hello"))
    expect(env["outcome"]["status"] == "succeeded", f"outcome {env['outcome']} {env.get('problem')}")
    expect(env["payload"]["reply_text"] == "Python heard: signed hello", f"payload {env['payload']}")
    expect(os.path.exists(CFG["py_record"]), "the Python agent recorded no accepted call")


def test_ddwire_agent_via_harness():
    env = ask(CFG["signed_harness"], invocation("hello.world", "signed hello"))
    expect(env["outcome"]["status"] == "succeeded", f"outcome {env['outcome']} {env.get('problem')}")


def recorded():
    with open(CFG["py_record"]) as f:
        r = json.load(f)
    return r["target"], r["headers"], base64.b64decode(r["body"])


def test_replayed_call_refused():
    target, headers, body = recorded()
    expect(headers["dd-key-id"] == "py.signed", f"recorded key id {headers['dd-key-id']}")
    expect_refused(post(CFG["py_signed"] + target, body, headers), "replayed")


def test_altered_call_refused():
    target, headers, body = recorded()
    altered = body.replace(b"signed hello", b"signed HELLO")
    expect(altered != body, "the recorded body has no text to alter")
    expect_refused(post(CFG["py_signed"] + target, altered, headers), "bad-signature")
    expect_refused(post(CFG["py_signed"] + "/", body, headers), "bad-signature")
    expect_refused(post(CFG["py_signed"] + target, body), "missing")
    with urllib.request.urlopen(CFG["py_signed"] + "/.well-known/agent-card.json", timeout=10) as r:
        expect(json.load(r)["name"] == "py.signed", "the card is not readable unsigned")


def test_python_signs_ddwire_verifies():
    secret = key(CFG["hello_key_file"])
    url = CFG["hello_signed"] + "/a2a"
    body = message_send(invocation("hello.world", "signed by Python"))
    headers = dd_signing.sign(secret, "hello.world", "to-agent", "POST", "/a2a", body)
    status, _, reply = post(url, body, headers)
    expect(status == 200, f"HTTP {status}: {reply!s:.300}")
    state = reply.get("result", {}).get("status", {}).get("state")
    expect(state == "completed", f"task state {state}: {reply!s:.300}")
    expect_refused(post(url, body, headers), "replayed")
    fresh = dd_signing.sign(secret, "hello.world", "to-agent", "POST", "/a2a", body)
    expect_refused(post(url, body + b" ", fresh), "bad-signature")
    stale = dd_signing.sign(secret, "hello.world", "to-agent", "POST", "/a2a", body,
                            timestamp=int(time.time()) - 1000)
    expect_refused(post(url, body, stale), "stale")
    other_way = dd_signing.sign(secret, "hello.world", "to-harness", "POST", "/a2a", body)
    expect_refused(post(url, body, other_way), "bad-signature")


if __name__ == "__main__":
    sys.exit(run([
        ("signing/vectors", test_vectors),
        ("signing/python-agent-via-harness", test_python_agent_via_harness),
        ("signing/ddwire-agent-via-harness", test_ddwire_agent_via_harness),
        ("signing/replayed-call-refused", test_replayed_call_refused),
        ("signing/altered-call-refused", test_altered_call_refused),
        ("signing/python-signs-ddwire-verifies", test_python_signs_ddwire_verifies),
    ]))
