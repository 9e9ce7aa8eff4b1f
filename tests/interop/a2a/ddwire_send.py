"""The ddwire client (`ddwire send`) -> a2a-sdk echo servers (server_a2a03.py, server_a2a1.py).

Usage: python3 ddwire_send.py DDWIRE A2A03_URL A2A1_URL A2A1_COMPAT_URL      (standard library only)

Proves that `ddwire send` works with agents built on the upstream Python SDKs:
- a2a-sdk 0.3.26 (card with only v0.3 fields): ddwire picks v0.3 and sends `message/send`;
  exit 0; the printed task (A2A 1.0 JSON) is TASK_STATE_COMPLETED with the artifact "echo"
  whose data is exactly the data part sent (integers still integers) and the message metadata
  (`traceparent`) as sent; a task that ends failed gives exit 1 and TASK_STATE_FAILED;
- a2a-sdk 1.3.0 without v0.3 compat (card lists only a 1.0 interface): ddwire picks 1.0 and
  sends `SendMessage` with `A2A-Version: 1.0`; same checks (numbers compared as numbers: the
  SDK's protobuf `Struct` turns 42 into 42.0); `--binding 0.3` there gets the server's
  -32601 Method not found, which ddwire reports with exit 2;
- a2a-sdk 1.3.0 with `enable_v0_3_compat=True` (card lists 1.0 and 0.3 and carries the merged
  legacy `protocolVersion: "0.3"`): ddwire still picks 1.0; with `--binding 0.3` it sends
  `message/send` and gets the same echo;
- an agent that answers with a Message instead of a Task: `ddwire send` prints it as
  `{"message": …}` (a task prints as `{"task": …}`, the SendMessage result form) and exits 0.
"""

import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import expect, run  # noqa: E402

DDWIRE, A03, A1, A1C = sys.argv[1:5]
DATA = {"q": 42, "xs": [1, 2.5, "é", None, True], "nested": {"k": "v", "n": -7}}
TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def ddwire_send(url, data, *extra):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(data, f)
    try:
        p = subprocess.run([DDWIRE, "send", url, "--data", f.name, "--timeout", "30", *extra],
                           capture_output=True, text=True, timeout=60)
    finally:
        os.unlink(f.name)
    return p.returncode, p.stdout, p.stderr


def echoed(url, data, code_wanted, state_wanted, *extra):
    """Run ddwire send; check the exit code and state; return the echo artifact's data."""
    code, out, err = ddwire_send(url, data, *extra)
    expect(code == code_wanted, f"exit {code} != {code_wanted}; stderr: {err.strip()[:400]}")
    task = json.loads(out)["task"]
    state = task.get("status", {}).get("state")
    expect(state == state_wanted, f"state {state} != {state_wanted}")
    arts = task.get("artifacts") or []
    expect(len(arts) == 1 and arts[0].get("name") == "echo", f"artifacts {[a.get('name') for a in arts]}")
    parts = arts[0].get("parts") or []
    expect(len(parts) == 1 and "data" in parts[0], f"artifact parts {parts!s:.300}")
    return parts[0]["data"]


def same_json(a, b, exact_types):
    """Equal as JSON values; with exact_types an int must stay an int (and a float a float)."""
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        return a is b or a == b and type(a) is type(b)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b and (not exact_types or type(a) is type(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_json(a[k], b[k], exact_types) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_json(x, y, exact_types) for x, y in zip(a, b))
    return a == b


def check_echo(got, method, a2a_version, exact_types):
    expect(same_json(got["echo"], DATA, exact_types), f"echoed {got['echo']} != sent {DATA}")
    expect(got["metadata"] == {"traceparent": TRACEPARENT}, f"metadata arrived as {got['metadata']}")
    wire = got["wire"]
    expect(wire["method"] == method, f"ddwire sent {wire['method']!r}, not {method!r}")
    if a2a_version:
        expect(wire["a2a_version"] == a2a_version, f"A2A-Version {wire['a2a_version']!r} != {a2a_version!r}")
    expect(isinstance(wire["id"], (str, int)) and wire["id"] is not None, f"JSON-RPC id {wire['id']!r}")


def meta():
    return ("--metadata", json.dumps({"traceparent": TRACEPARENT}))


def test_a2a03():
    got = echoed(A03, DATA, 0, "TASK_STATE_COMPLETED", *meta())
    check_echo(got, "message/send", None, exact_types=True)


def test_failed_task(url):
    got = echoed(url, {"mode": "fail"}, 1, "TASK_STATE_FAILED")
    expect(got["echo"] == {"mode": "fail"}, f"echoed {got['echo']}")


def test_message_reply(url):
    code, out, err = ddwire_send(url, {"mode": "message"})
    expect(code == 0, f"exit {code} != 0 for a Message reply; stderr {err.strip()[:300]}")
    message = json.loads(out).get("message")
    expect(isinstance(message, dict), f"printed {out[:200]!r} for a Message reply, not {{'message': ...}}")
    parts = message.get("parts") or []
    expect(any("data" in p for p in parts), f"the message has no data part: {parts!s:.300}")


def test_a2a1():
    got = echoed(A1, DATA, 0, "TASK_STATE_COMPLETED", *meta())
    check_echo(got, "SendMessage", "1.0", exact_types=False)


def test_a2a1_forced_v03_without_compat():
    code, out, err = ddwire_send(A1, DATA, "--binding", "0.3")
    expect(code == 2, f"exit {code} != 2")
    expect("-32601" in err, f"stderr does not carry -32601: {err.strip()[:300]}")


def test_a2a1_compat_default():
    got = echoed(A1C, DATA, 0, "TASK_STATE_COMPLETED", *meta())
    check_echo(got, "SendMessage", "1.0", exact_types=False)


def test_a2a1_compat_v03():
    got = echoed(A1C, DATA, 0, "TASK_STATE_COMPLETED", "--binding", "0.3", *meta())
    check_echo(got, "message/send", None, exact_types=False)


if __name__ == "__main__":
    sys.exit(run([
        ("ddwire-send->a2a03/task", test_a2a03),
        ("ddwire-send->a2a03/failed-task", lambda: test_failed_task(A03)),
        ("ddwire-send->a2a03/message-reply", lambda: test_message_reply(A03)),
        ("ddwire-send->a2a1/picks-1.0", test_a2a1),
        ("ddwire-send->a2a1/failed-task", lambda: test_failed_task(A1)),
        ("ddwire-send->a2a1/message-reply", lambda: test_message_reply(A1)),
        ("ddwire-send->a2a1/binding-0.3-without-compat", test_a2a1_forced_v03_without_compat),
        ("ddwire-send->a2a1-compat/picks-1.0", test_a2a1_compat_default),
        ("ddwire-send->a2a1-compat/binding-0.3", test_a2a1_compat_v03),
    ]))
