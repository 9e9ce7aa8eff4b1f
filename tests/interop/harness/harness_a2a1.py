"""a2a-sdk 1.3.0 client -> ddwire's harness (`ddwire serve`), which calls a Python agent built like
`dd_sdk.serve` (dd_agent.py) and ddwire's own agents.

Usage: python harness_a2a1.py CONFIG.json      (in the venv of requirements-a2a1.txt)
CONFIG: {"harness", "tokens_harness", "runs", "tokens_runs", "ddwire", "py_agent", "token",
         "principal_name"} (written by suite.sh).

Tests (one PASS/FAIL line each):
- registry: GET /agents lists py.chat, py.overreach, py.broken, hello.world and director.route, none
  unavailable or incompatible; py.chat's manifest entry is the description on the Python agent's
  card (the extension's params), unchanged.
- python-agent/invoke: `create_client(harness)` picks A2A 1.0 (`SendMessage`, `A2A-Version: 1.0`
  at <harness>/a2a); one data part with an InvocationRequest for py.chat gives a completed task
  with one artifact `envelope` holding one data part: the Envelope, outcome succeeded, the Python
  agent's reply, model id and token counts, equal to GET /runs/{id}, where the token counts
  (doubles on the A2A wire, a protobuf Struct) are JSON integers again.
- python-agent/trace: GET /runs/{id}/spans holds the harness's `invoke_agent` and `policy_gate`
  spans and the Python agent's `chat` span (resource: telemetry.sdk.language python, service.name
  py.chat), all in one trace; chat's and policy_gate's parent is invoke_agent; chat carries exactly
  the four owned attributes the agent set; every line is `json.dumps` of itself (the Python agent's
  `to_json(indent=None)` text kept as is); the envelope's telemetry.trace_id is that trace; the
  root's dd.input_hash is what the agent cited; `ddwire lint runs/<id>/spans.jsonl
  runs/<id>/envelope.json` exits 0.
- python-agent/grounding-violation: py.overreach (the same agent, but its chat span sets
  dd.grounding_mode) gives a completed task whose envelope is failed / grounding-violation, the
  G0 violation named, payload and evidence withheld; `ddwire lint` on that run exits 1 naming G0.
- python-agent/failed-task: py.broken (the agent raises, so its task fails with
  {"error": "RuntimeError: the model is unavailable"}) gives an envelope failed / agent-error whose
  statement carries that error.
- get-task/completed: `client.get_task` (GetTask) of a task the harness completed returns that
  task as SendMessage returned it: same contextId, status (timestamp included), artifacts
  (artifactId included) and history, as a2a-sdk's own task store does (the a2a suite asserts the
  same of ddwire agents).
- get-task/failed: the same for a task that failed (an unknown agent): GetTask returns it.
- get-task/errors: GetTask of an unknown id raises the SDK's TaskNotFoundError, CancelTask of a
  completed task TaskNotCancelableError.
- delegation/made-up-token-refused: a request to hello.world whose message metadata carries
  `dd.delegation_token: "made-up"` gives a failed task with {"error": "...unknown or expired
  delegation token..."}; GET /runs and the run store are unchanged.
- delegation/director-route: director.route gives a succeeded envelope with exactly one entry in
  `delegations` (hello.world, succeeded) whose content_hash is the dd-envelope-json-v1 hash of the
  child's stored envelope; GET /runs lists the child, whose envelope names the parent; the
  parent's `delegate` span carries dd.source_id invocation:<child> and that hash; the child's
  invoke_agent starts a new trace linked to that delegate span; `ddwire lint` of the parent is 0.
- bearer/no-authorization, bearer/unknown-token: on a harness started with --tokens, a call
  without Authorization, or with a token it does not know, is refused with HTTP 401 before its
  body is read (the client raises, naming 401), and nothing is stored.
- contexts/second-turn-without-task-id: turn two sends turn one's contextId and no taskId (A2A
  1.0 §3.4.3); it is a new task in that context, both envelopes carry it as conversation_id, and
  GET /conversations/{context} lists both runs.
- bearer/known-token: with the right bearer token the call succeeds; the envelope's acting_for and
  GET /runs (read with that token) name the token's principal.
- bearer/reads-need-a-token: GET /runs without a token is 401 with a Bearer challenge.
"""

import asyncio
import hashlib
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
from a2a.types import (CancelTaskRequest, GetTaskRequest, Message, Part, Role,  # noqa: E402
                       SendMessageRequest, TaskNotCancelableError, TaskNotFoundError, TaskState)
from google.protobuf import struct_pb2  # noqa: E402
from google.protobuf.json_format import MessageToDict, ParseDict  # noqa: E402

from checks import expect, run  # noqa: E402

CFG = json.load(open(sys.argv[1]))
HARNESS = CFG["harness"].rstrip("/")
TOKENS_HARNESS = CFG["tokens_harness"].rstrip("/")
EXTENSION_URI = "https://w3id.org/data-director/a2a/agent-spec/v0"
OWNED = {"dd.operation", "dd.agent_id", "dd.source_id", "dd.content_hash", "dd.model_id",
         "dd.input_tokens", "dd.output_tokens", "dd.outcome", "dd.grounding_mode", "dd.input_hash"}


def get_json(url, headers=None):
    req = urllib.request.Request(url, headers=headers or {})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.load(r)


def get_text(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.read().decode("utf-8")


def invocation(agent_id, text):
    return {"agent_id": agent_id, "input": {"schema_class": "Message", "message_text": text}}


def send(base, doc, metadata=None, headers=None, context_id=None):
    """One non-streaming message with one data part through the 1.3.0 client, in `context_id`
    when given (with no task id); (task, posts)."""
    posts = []

    async def record(req):
        if req.method == "POST":
            posts.append({"url": str(req.url), "headers": dict(req.headers), "body": json.loads(req.read())})

    async def go():
        async with httpx.AsyncClient(timeout=60, headers=headers, event_hooks={"request": [record]}) as http:
            client = await create_client(base, ClientConfig(streaming=False, httpx_client=http))
            msg = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER,
                          parts=[Part(data=ParseDict(doc, struct_pb2.Value()))])
            if metadata:
                msg.metadata.update(metadata)
            if context_id:
                msg.context_id = context_id
            return [ev async for ev in client.send_message(SendMessageRequest(message=msg))]

    events = asyncio.run(go())
    expect(len(events) == 1 and events[0].HasField("task"),
           f"expected one task, got {[MessageToDict(e) for e in events]!s:.400}")
    return events[0].task, posts


def state(task):
    return TaskState.Name(task.status.state)


def envelope_of(task):
    expect(task.status.state == TaskState.TASK_STATE_COMPLETED,
           f"task {state(task)}: {MessageToDict(task.status)!s:.500}")
    arts = list(task.artifacts)
    expect([a.name for a in arts] == ["envelope"], f"artifacts {[a.name for a in arts]} != ['envelope']")
    parts = list(arts[0].parts)
    expect(len(parts) == 1 and parts[0].HasField("data"), "the envelope artifact is not one data part")
    return MessageToDict(parts[0].data)


def task_error(task):
    expect(task.status.state == TaskState.TASK_STATE_FAILED, f"task {state(task)}, not failed")
    for p in task.status.message.parts:
        if p.HasField("data"):
            d = MessageToDict(p.data)
            if isinstance(d, dict) and "error" in d:
                return d["error"]
    raise AssertionError(f"no {{'error': ...}} data part in the status message: {MessageToDict(task.status)}")


def envelope_hash(doc):
    canonical = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def lint(runs, inv_id):
    d = os.path.join(runs, inv_id)
    return subprocess.run([CFG["ddwire"], "lint", os.path.join(d, "spans.jsonl"), os.path.join(d, "envelope.json")],
                          capture_output=True, text=True, timeout=30)


def store_listing(runs):
    return sorted(os.listdir(runs)) if os.path.isdir(runs) else []


# ---------------------------------------------------------------------------------------------

def test_registry():
    listing = get_json(HARNESS + "/agents")
    ids = sorted(a["agent_id"] for a in listing["agents"])
    expect(ids == ["director.route", "hello.world", "py.broken", "py.chat", "py.overreach"], f"registered {ids}")
    expect(not listing.get("unavailable") and not listing.get("incompatible"),
           f"unavailable {listing.get('unavailable')}, incompatible {listing.get('incompatible')}")
    card = get_json(CFG["py_agent"].rstrip("/") + "/.well-known/agent-card.json")
    ext = [e for e in card["capabilities"]["extensions"] if e["uri"] == EXTENSION_URI]
    expect(len(ext) == 1 and ext[0].get("required") is True, f"the Python agent's card extensions {ext!s:.300}")
    entry = next(a for a in listing["agents"] if a["agent_id"] == "py.chat")
    expect(entry == ext[0]["params"], "the harness's manifest entry for py.chat differs from its card's description")


PY = {}


def test_invoke_python_agent():
    text = "what is FAIR data, s'il vous plaît?"
    task, posts = send(HARNESS, invocation("py.chat", text))
    expect(len(posts) == 1, f"{len(posts)} JSON-RPC POSTs")
    post = posts[0]
    expect(post["url"] == HARNESS + "/a2a", f"posted to {post['url']}")
    expect(post["body"].get("method") == "SendMessage" and post["headers"].get("a2a-version") == "1.0",
           f"method {post['body'].get('method')!r}, A2A-Version {post['headers'].get('a2a-version')!r}")
    env = envelope_of(task)
    expect(env["outcome"]["status"] == "succeeded", f"outcome {env['outcome']}")
    expect(env["agent_id"] == "py.chat" and env["grounding_mode"] == "input_only", f"agent/mode {env['agent_id']}/{env['grounding_mode']}")
    expect(env["payload"]["reply_text"] == f"Python heard: {text}", f"reply {env['payload']!s:.300}")
    expect(env["payload"]["reply_derivation"] == "model", f"derivation {env['payload']['reply_derivation']}")
    tel = env["telemetry"]
    expect(tel["model_id"] == "py-interop-model-1", f"telemetry {tel}")
    expect(tel["input_tokens"] == len(text.split()) and tel["output_tokens"] == len(f"Python heard: {text}".split()),
           f"telemetry tokens {tel}")
    expect(env["requires_human_review"] is True, "requires_human_review is not true")
    stored = get_json(f"{HARNESS}/runs/{env['invocation_id']}")
    expect(stored == env, "GET /runs/{id} differs from the envelope in the task")
    # The agent's token counts crossed a protobuf Struct (as doubles); the envelope has integers.
    stored_tel = stored["telemetry"]
    expect(type(stored_tel["input_tokens"]) is int and type(stored_tel["output_tokens"]) is int,
           f"the stored envelope's token counts are not JSON integers: {stored_tel}")
    PY["env"] = stored


def test_python_agent_trace():
    env = PY.get("env")
    expect(env, "no python-agent/invoke run")
    inv = env["invocation_id"]
    lines = [line for line in get_text(f"{HARNESS}/runs/{inv}/spans").splitlines() if line.strip()]
    spans = [json.loads(line) for line in lines]
    for line, span in zip(lines, spans):
        expect(line == json.dumps(span), f"span line is not to_json(indent=None) text: {line[:200]}")
    names = sorted(s["name"] for s in spans)
    expect(names == ["chat", "invoke_agent", "policy_gate"], f"span names {names}")
    by = {s["name"]: s for s in spans}
    traces = {s["context"]["trace_id"] for s in spans}
    expect(len(traces) == 1, f"spans in {len(traces)} traces: {traces}")
    root, gate, chat = by["invoke_agent"], by["policy_gate"], by["chat"]
    expect(root["parent_id"] is None, f"invoke_agent has parent {root['parent_id']}")
    expect(chat["parent_id"] == root["context"]["span_id"],
           f"chat's parent {chat['parent_id']} is not invoke_agent {root['context']['span_id']}")
    expect(gate["parent_id"] == root["context"]["span_id"], f"policy_gate's parent {gate['parent_id']}")
    res = chat["resource"]["attributes"]
    expect(res.get("telemetry.sdk.language") == "python" and res.get("service.name") == "py.chat",
           f"the chat span's resource {res} is not the Python agent's")
    owned = {k: v for k, v in chat["attributes"].items() if k in OWNED}
    want = {"dd.operation": "chat", "dd.model_id": "py-interop-model-1",
            "dd.input_tokens": env["telemetry"]["input_tokens"], "dd.output_tokens": env["telemetry"]["output_tokens"]}
    expect(owned == want, f"chat's owned attributes {owned} != {want}")
    trace_id = traces.pop()
    expect(env["telemetry"]["trace_id"] == trace_id.removeprefix("0x"),
           f"telemetry.trace_id {env['telemetry']['trace_id']} != the spans' {trace_id}")
    expect(root["attributes"].get("dd.input_hash") == env["evidence"][0]["content_hash"]
           == env["payload"]["grounded_on"][0]["content_hash"],
           "the root's dd.input_hash is not what the Python agent cited")
    expect(env["evidence"][0]["source_id"] == f"input:{inv}", f"evidence source {env['evidence'][0]['source_id']}")
    r = lint(CFG["runs"], inv)
    expect(r.returncode == 0, f"ddwire lint exited {r.returncode}: {r.stdout} {r.stderr}")


def test_grounding_violation():
    task, _ = send(HARNESS, invocation("py.overreach", "hello"))
    env = envelope_of(task)
    out = env["outcome"]
    expect(out["status"] == "failed", f"outcome {out}")
    expect(env.get("problem", {}).get("type", "").endswith("/grounding-violation"), f"problem {env.get('problem')}")
    expect("G0" in out["statement"] and "dd.grounding_mode" in out["statement"], f"statement {out['statement']!r}")
    expect("payload" not in env and env.get("evidence") == [], "the withheld envelope still carries payload or evidence")
    r = lint(CFG["runs"], env["invocation_id"])
    expect(r.returncode == 1 and "G0" in r.stdout + r.stderr,
           f"ddwire lint exited {r.returncode} on the withheld run: {r.stdout} {r.stderr}")


def test_agent_failed_task():
    task, _ = send(HARNESS, invocation("py.broken", "hello"))
    env = envelope_of(task)
    out = env["outcome"]
    expect(out["status"] == "failed" and env.get("problem", {}).get("type", "").endswith("/agent-error"),
           f"outcome {out}, problem {env.get('problem')}")
    expect("RuntimeError: the model is unavailable" in out["statement"], f"statement {out['statement']!r}")
    expect("payload" not in env, "a failed envelope carries a payload")


def get_task(base, task_id):
    async def go():
        async with httpx.AsyncClient(timeout=30) as http:
            client = await create_client(base, ClientConfig(streaming=False, httpx_client=http))
            return await client.get_task(GetTaskRequest(id=task_id))
    return asyncio.run(go())


def same_task(sent, got):
    """GetTask must give back the task SendMessage returned: same ids, status, artifacts, history."""
    a, b = MessageToDict(sent), MessageToDict(got)
    diffs = [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
    if not diffs:
        return
    detail = "; ".join(f"{k}: sent {json.dumps(a.get(k))[:160]} / got {json.dumps(b.get(k))[:160]}"
                       for k in diffs if k != "artifacts")
    if "artifacts" in diffs:
        ids = lambda t: [x.get("artifactId") for x in t.get("artifacts", [])]  # noqa: E731
        detail += f"; artifacts: artifactIds sent {ids(a)} / got {ids(b)}"
    raise AssertionError(f"GetTask returned another task than SendMessage: differs in {diffs}: {detail}")


def test_get_task_completed():
    task, _ = send(HARNESS, invocation("hello.world", "remember this task"))
    envelope_of(task)
    same_task(task, get_task(HARNESS, task.id))


def test_get_task_failed():
    task, _ = send(HARNESS, invocation("no.such-agent", "hi"))
    task_error(task)
    try:
        got = get_task(HARNESS, task.id)
    except TaskNotFoundError:
        raise AssertionError(f"GetTask of the failed task {task.id} SendMessage returned: TaskNotFoundError") from None
    same_task(task, got)


def test_get_task_errors():
    task, _ = send(HARNESS, invocation("hello.world", "one more"))
    envelope_of(task)

    async def go():
        async with httpx.AsyncClient(timeout=30) as http:
            client = await create_client(HARNESS, ClientConfig(streaming=False, httpx_client=http))
            for call, error in ((client.get_task(GetTaskRequest(id="no-such-task")), TaskNotFoundError),
                                (client.cancel_task(CancelTaskRequest(id=task.id)), TaskNotCancelableError)):
                try:
                    await call
                except error:
                    pass
                else:
                    raise AssertionError(f"no {error.__name__}")
    asyncio.run(go())


def test_made_up_delegation_token():
    before, files_before = get_json(HARNESS + "/runs"), store_listing(CFG["runs"])
    task, _ = send(HARNESS, invocation("hello.world", "let me in"), metadata={"dd.delegation_token": "made-up"})
    err = task_error(task)
    expect("unknown or expired delegation token" in err, f"error {err!r}")
    expect(get_json(HARNESS + "/runs") == before, "GET /runs changed after a refused delegation")
    expect(store_listing(CFG["runs"]) == files_before, "the run store changed after a refused delegation")


def test_director_route():
    task, _ = send(HARNESS, invocation("director.route", "route me please"))
    env = envelope_of(task)
    expect(env["outcome"]["status"] == "succeeded", f"outcome {env['outcome']}")
    dels = env.get("delegations", [])
    expect(len(dels) == 1, f"delegations {dels}")
    d = dels[0]
    expect(d["delegated_agent_id"] == "hello.world" and d["delegated_status"] == "succeeded", f"delegation {d}")
    child_id = d["delegated_invocation_id"]
    listed = [r["invocation_id"] for r in get_json(HARNESS + "/runs")]
    expect(child_id in listed and env["invocation_id"] in listed, f"GET /runs {listed} lacks the child or the parent")
    child = get_json(f"{HARNESS}/runs/{child_id}")
    expect(child.get("parent_invocation_id") == env["invocation_id"], f"child's parent {child.get('parent_invocation_id')}")
    expect(envelope_hash(child) == d["content_hash"], "the delegation's content_hash is not the child's envelope hash")
    # The child's invoke_agent starts a new trace, linked to the parent's `delegate` span (§6).
    parent_spans = [json.loads(x) for x in get_text(f"{HARNESS}/runs/{env['invocation_id']}/spans").splitlines() if x]
    delegate = [s for s in parent_spans if s["name"] == "delegate"]
    expect(len(delegate) == 1, f"{len(delegate)} delegate spans in the parent's trace")
    delegate = delegate[0]
    expect(delegate["attributes"].get("dd.source_id") == f"invocation:{child_id}"
           and delegate["attributes"].get("dd.content_hash") == d["content_hash"],
           f"the delegate span's attributes {delegate['attributes']}")
    child_root = [json.loads(x) for x in get_text(f"{HARNESS}/runs/{child_id}/spans").splitlines()
                  if x and json.loads(x)["name"] == "invoke_agent"]
    expect(len(child_root) == 1, "the child has no single invoke_agent span")
    links = [(lk["context"]["trace_id"], lk["context"]["span_id"]) for lk in child_root[0]["links"]]
    want = [(delegate["context"]["trace_id"], delegate["context"]["span_id"])]
    expect(links == want, f"the child's invoke_agent links {links} != the parent's delegate span {want}")
    expect(child_root[0]["context"]["trace_id"] != delegate["context"]["trace_id"],
           "the child's invoke_agent is in the parent's trace, not a new one linked to it")
    expect(child["telemetry"]["trace_id"] == child_root[0]["context"]["trace_id"].removeprefix("0x"),
           "the child's telemetry.trace_id is not its invoke_agent's trace")
    r = lint(CFG["runs"], env["invocation_id"])
    expect(r.returncode == 0, f"ddwire lint exited {r.returncode} on the director's run: {r.stdout} {r.stderr}")


def as_token_holder():
    return {"Authorization": f"Bearer {CFG['token']}"}


def test_reads_need_a_token():
    try:
        get_json(TOKENS_HARNESS + "/runs")
    except urllib.error.HTTPError as e:
        expect(e.code == 401, f"GET /runs without a token answered {e.code}")
        expect((e.headers.get("WWW-Authenticate") or "").startswith("Bearer"), "no Bearer challenge")
    else:
        raise AssertionError("GET /runs without a token was answered")
    get_json(TOKENS_HARNESS + "/runs", as_token_holder())


def refused_without(headers):
    before = get_json(TOKENS_HARNESS + "/runs", as_token_holder())
    files_before = store_listing(CFG["tokens_runs"])
    try:
        task, _ = send(TOKENS_HARNESS, invocation("hello.world", "anyone there?"), headers=headers)
    except Exception as e:  # the SDK client raises on the HTTP 401
        expect("401" in str(e), f"error {e!r}")
    else:
        expect(False, f"an unauthenticated call was answered: {task}")
    expect(get_json(TOKENS_HARNESS + "/runs", as_token_holder()) == before,
           "GET /runs changed after an unauthenticated call")
    expect(store_listing(CFG["tokens_runs"]) == files_before, "the run store changed after an unauthenticated call")


def test_known_token():
    task, posts = send(TOKENS_HARNESS, invocation("hello.world", "it's me"),
                       headers={"Authorization": f"Bearer {CFG['token']}"})
    expect(posts and posts[0]["headers"].get("authorization") == f"Bearer {CFG['token']}", "the client sent no bearer token")
    env = envelope_of(task)
    expect(env["outcome"]["status"] == "succeeded", f"outcome {env['outcome']}")
    expect(env["acting_for"]["name"] == CFG["principal_name"], f"acting_for {env['acting_for']}")
    runs = get_json(TOKENS_HARNESS + "/runs", as_token_holder())
    row = next((r for r in runs if r["invocation_id"] == env["invocation_id"]), None)
    expect(row and row["acting_for"] == CFG["principal_name"], f"GET /runs row {row}")


def test_second_turn_in_the_first_turns_context():
    """A2A 1.0 §3.4.3, as a mainstream framework's client does on every second turn: the
    contextId of turn one, no taskId. Turn two is a new task in that context, and the agent was
    given the same conversation both times."""
    first, _ = send(HARNESS, invocation("hello.world", "turn one"))
    context = first.context_id
    expect(context, "turn one's task has no contextId")
    second, posts = send(HARNESS, invocation("hello.world", "turn two"), context_id=context)
    sent = posts[-1]["body"]["params"]["message"]
    expect(sent.get("contextId") == context and "taskId" not in sent, f"the client sent {sent}")
    expect(second.id != first.id, "turn two is a new task")
    expect(second.context_id == context, f"turn two's context {second.context_id} != {context}")
    for task in (first, second):
        env = envelope_of(task)
        expect(env.get("conversation_id") == context,
               f"{env['invocation_id']}: conversation_id {env.get('conversation_id')} != {context}")
    conversation = get_json(f"{HARNESS}/conversations/{context}")
    runs = conversation["runs"] if isinstance(conversation, dict) else conversation
    ids = {r["invocation_id"] for r in runs}
    expect(ids >= {envelope_of(first)["invocation_id"], envelope_of(second)["invocation_id"]},
           f"the conversation lists {sorted(ids)}")


if __name__ == "__main__":
    sys.exit(run([
        ("registry", test_registry),
        ("python-agent/invoke", test_invoke_python_agent),
        ("python-agent/trace", test_python_agent_trace),
        ("python-agent/grounding-violation", test_grounding_violation),
        ("python-agent/failed-task", test_agent_failed_task),
        ("get-task/completed", test_get_task_completed),
        ("get-task/failed", test_get_task_failed),
        ("get-task/errors", test_get_task_errors),
        ("delegation/made-up-token-refused", test_made_up_delegation_token),
        ("delegation/director-route", test_director_route),
        ("bearer/no-authorization", lambda: refused_without(None)),
        ("bearer/unknown-token", lambda: refused_without({"Authorization": "Bearer not-a-token-it-knows"})),
        ("bearer/known-token", test_known_token),
        ("contexts/second-turn-without-task-id", test_second_turn_in_the_first_turns_context),
        ("bearer/reads-need-a-token", test_reads_need_a_token),
    ]))
