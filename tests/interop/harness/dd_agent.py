"""A Python agent served the way `dd_sdk.serve` serves agents, for ddwire's harness to call.

Usage: python dd_agent.py PORT SCHEMAS_FROM_URL [--agent-id ID] [--overreach | --broken]
                          [--key-file F [--record FILE]]
                          [--tls-cert F --tls-key F [--tls-client-ca F]] [--ca F]
       (in the venv of requirements-a2a1.txt: a2a-sdk 1.3.0, opentelemetry-sdk 1.45.2)

What it reproduces of the reference's agent server (Data Director's `dd_sdk.serve` and its A2A
wire, as vendor-notes/a2a.md describes them), written anew here:
- a2a-sdk 1.3.0 server: `create_agent_card_routes(card)` and `create_jsonrpc_routes(handler,
  "/a2a")` on Starlette, `enable_v0_3_compat` left off (A2A 1.0 `SendMessage` only), uvicorn;
- the card names the agent, carries the Data Director extension
  `https://w3id.org/data-director/a2a/agent-spec/v0` (required) whose `params` is the agent's full
  description (the ten DESCRIPTION_KEYS), and lists one JSONRPC 1.0 interface at <base>/a2a;
  the class schemas `Message` and `Reply` are read off the card of a ddwire agent at
  SCHEMAS_FROM_URL (`ddwire agent hello`), and their digests are re-computed here the reference's
  way (sha256 of `json.dumps(schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False)`)
  and must equal what that card says;
- the executor: a task, `start_work()`; exactly one data part is required (else failed with
  `{"error": "expected exactly one data part, got N"}`); the message metadata (`MessageToDict`)
  gives `traceparent`, extracted with `TraceContextTextMapPropagator`; the agent runs in a worker
  thread under a fresh, isolated `TracerProvider` (never the global one) with that parent context
  attached; it records one span `chat` with exactly the owned attributes `dd.operation`,
  `dd.model_id`, `dd.input_tokens`, `dd.output_tokens`; its AgentResult cites its input
  (`dd.input_ref` / `dd.input_hash` from the metadata) in `grounded_on` and in `evidence`;
- the reply: a completed task with one artifact `agent-result` holding one data part
  `{"result": <AgentResult>, "spans": [span.to_json(indent=None), ...]}` (every finished span of
  the isolated provider); an exception becomes a failed task with `{"error": "<Exc>: <msg>"}`.

`--overreach` also sets `dd.grounding_mode` on the chat span, an attribute only the conductor's
`invoke_agent` span may carry (rule G0): the harness must withhold the result.
`--broken` makes the agent raise (`RuntimeError: the model is unavailable`), so the task fails
with that error, as a dd_sdk agent's exception does.

`--key-file F` makes the agent verify the harness's signature on every POST, as
`vendor-notes/hmac-signing.md` specifies, with `dd_signing.py` (the note's twenty lines) inside a
plain ASGI middleware (`SignedCalls`) in front of the a2a-sdk routes: the secret is F's text,
stripped; the key id is the agent id; a call that is unsigned, stale, replayed or altered gets
HTTP 401 with a JSON-RPC error (code -32040, `data.reason`), before a2a-sdk sees it. The card
stays readable. `--record FILE` writes the last call it accepted (method, target, headers, body)
to FILE, so a test can replay it.

`--tls-cert F --tls-key F` serve over TLS (uvicorn's `ssl_certfile`/`ssl_keyfile`, what its
`--ssl-certfile`/`--ssl-keyfile` flags set; the card's interface says https); `--tls-client-ca F`
also requires a client certificate signed by F (`ssl_cert_reqs=CERT_REQUIRED`). `--ca F` trusts
F's CA when reading SCHEMAS_FROM_URL over https.
"""

import argparse
import asyncio
import base64
import hashlib
import json
import os
import ssl
import urllib.request

import dd_signing

import uvicorn
from a2a.helpers.proto_helpers import get_data_parts, new_data_part, new_task_from_user_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentExtension, AgentInterface, AgentSkill
from google.protobuf.json_format import MessageToDict
from opentelemetry import context as otel_context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from starlette.applications import Starlette

EXTENSION_URI = "https://w3id.org/data-director/a2a/agent-spec/v0"
ARTIFACT_NAME = "agent-result"
JSONRPC_PATH = "/a2a"
CONTRACT_VERSION = "0.7.0"
MODEL_ID = "py-interop-model-1"


def schema_digest(schema):
    """The reference's `schema_digest`: sha256 of the dd-json-document-v1 canonical bytes."""
    canonical = json.dumps(schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def schemas_from(base_url, ca=None):
    """`Message` and `Reply` (json_schema + digest) from a ddwire agent's card, digests checked."""
    context = ssl.create_default_context(cafile=ca) if ca else None
    with urllib.request.urlopen(base_url.rstrip("/") + "/.well-known/agent-card.json", timeout=10,
                                context=context) as r:
        card = json.load(r)
    ext = next(e for e in card["capabilities"]["extensions"] if e["uri"] == EXTENSION_URI)
    out = {}
    for name in ("Message", "Reply"):
        entry = ext["params"]["schemas"][name]
        digest = schema_digest(entry["json_schema"])
        if digest != entry["digest"]:
            raise SystemExit(f"{name}: the card says digest {entry['digest']}, the schema hashes to {digest}")
        out[name] = {"digest": digest, "json_schema": entry["json_schema"]}
    return out


def description(agent_id, schemas):
    """`describe(spec)`: every key of the reference's DESCRIPTION_KEYS."""
    return {
        "agent_id": agent_id,
        "version": "0.1.0",
        "description": "A Python agent served like dd_sdk.serve: replies to a message, grounded on it.",
        "requirement_ids": ["INTEROP-1"],
        "action_class": "converse",
        "accepts": ["Message"],
        "grounding_mode": "input_only",
        "payload": "Reply",
        "derivations": {},
        "contract_version": CONTRACT_VERSION,
        "schemas": schemas,
    }


def agent_card(desc, base_url):
    return AgentCard(
        name=desc["agent_id"],
        description=desc["description"],
        version=desc["version"],
        default_input_modes=["application/json"],
        default_output_modes=["application/json"],
        capabilities=AgentCapabilities(
            streaming=False,
            extensions=[AgentExtension(uri=EXTENSION_URI, required=True, params=desc,
                                       description="Data Director agent specification.")],
        ),
        supported_interfaces=[AgentInterface(protocol_binding="JSONRPC", protocol_version="1.0",
                                             url=base_url.rstrip("/") + JSONRPC_PATH)],
        skills=[AgentSkill(id=desc["agent_id"], name=desc["agent_id"], description=desc["description"],
                           tags=["data-director", "grounding:input_only", "accepts:Message",
                                 *desc["requirement_ids"]])],
    )


def run_agent(agent_id, request, metadata, overreach, broken):
    """Run under an isolated tracer parented to the caller's traceparent; return the artifact body."""
    provider = TracerProvider(resource=Resource.create({"service.name": agent_id}))
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("data-director")
    parent = TraceContextTextMapPropagator().extract({"traceparent": str(metadata.get("traceparent", ""))})
    token = otel_context.attach(parent)
    try:
        if broken:
            raise RuntimeError("the model is unavailable")
        text = request["input"]["message_text"]
        input_ref = str(metadata.get("dd.input_ref", ""))
        input_hash = str(metadata.get("dd.input_hash", ""))
        reply = f"Python heard: {text}"
        in_tokens, out_tokens = len(text.split()), len(reply.split())
        with tracer.start_as_current_span("chat") as span:
            span.set_attribute("dd.operation", "chat")
            span.set_attribute("dd.model_id", MODEL_ID)
            span.set_attribute("dd.input_tokens", in_tokens)
            span.set_attribute("dd.output_tokens", out_tokens)
            if overreach:
                span.set_attribute("dd.grounding_mode", "input_only")
        result = {
            "outcome": {"status": "succeeded", "statement": "Replied to the message."},
            "payload": {"schema_class": "Reply", "reply_text": reply, "reply_derivation": "model",
                        "grounded_on": [{"source_id": input_ref, "content_hash": input_hash}]},
            "evidence": [{"source_id": input_ref, "hash_algorithm": "sha256",
                          "canonicalisation": "dd-input-json-v1", "content_hash": input_hash}],
            "model_id": MODEL_ID,
            "input_tokens": in_tokens,
            "output_tokens": out_tokens,
        }
    finally:
        otel_context.detach(token)
        spans = [s.to_json(indent=None) for s in memory.get_finished_spans()]
        provider.shutdown()
    return {"result": result, "spans": spans}


class DDAgentExecutor(AgentExecutor):
    def __init__(self, agent_id, overreach, broken):
        self.agent_id, self.overreach, self.broken = agent_id, overreach, broken

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        message = context.message
        task = context.current_task or new_task_from_user_message(message)
        if not context.current_task:
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.start_work()
        inputs = get_data_parts(message.parts)
        if len(inputs) != 1:
            await updater.failed(updater.new_agent_message(
                [new_data_part({"error": f"expected exactly one data part, got {len(inputs)}"})]))
            return
        metadata = MessageToDict(message.metadata) if message.HasField("metadata") else {}
        try:
            request = inputs[0]
            if not isinstance(request, dict) or request.get("agent_id") != self.agent_id:
                raise ValueError(f"not an InvocationRequest for {self.agent_id}")
            body = await asyncio.to_thread(run_agent, self.agent_id, request, metadata,
                                           self.overreach, self.broken)
        except Exception as exc:  # noqa: BLE001 - reported to the harness as a failed task
            await updater.failed(updater.new_agent_message(
                [new_data_part({"error": f"{type(exc).__name__}: {exc}"})]))
            return
        await updater.add_artifact([new_data_part(body, media_type="application/json")], name=ARTIFACT_NAME)
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError("invocations are synchronous; nothing to cancel")


class SignedCalls:
    """ASGI middleware: every POST must carry a valid `to-agent` signature for `key_id`."""

    def __init__(self, app, secret, key_id, record=None):
        self.app, self.secret, self.key_id, self.record, self.seen = app, secret, key_id, record, {}

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["method"] != "POST":
            return await self.app(scope, receive, send)
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        # The target as sent (raw_path is not percent-decoded), with its query if it has one.
        target = scope.get("raw_path") or scope["path"].encode()
        if scope.get("query_string"):
            target += b"?" + scope["query_string"]
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        try:
            dd_signing.verify(self.secret, self.key_id, "to-agent", scope["method"],
                              target.decode("latin-1"), body, headers, self.seen)
        except ValueError as refused:
            reason = str(refused)
            error = {"code": -32040, "message": f"the request signature was refused: {reason}",
                     "data": {"reason": reason}}
            payload = json.dumps({"jsonrpc": "2.0", "id": None, "error": error}).encode()
            await send({"type": "http.response.start", "status": 401,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"www-authenticate", b"DD-HMAC-SHA256-V1")]})
            await send({"type": "http.response.body", "body": payload})
            return
        if self.record:
            signed = {h: headers[h] for h in dd_signing.HEADERS}
            with open(self.record + ".tmp", "w") as f:
                json.dump({"method": scope["method"], "target": target.decode("latin-1"),
                           "headers": signed, "body": base64.b64encode(body).decode()}, f)
            os.replace(self.record + ".tmp", self.record)
        sent = False

        async def replay():  # hand the body already read to the app, once
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("schemas_from")
    ap.add_argument("--agent-id", default="py.chat")
    ap.add_argument("--overreach", action="store_true")
    ap.add_argument("--broken", action="store_true")
    ap.add_argument("--key-file")
    ap.add_argument("--record")
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    ap.add_argument("--tls-client-ca")
    ap.add_argument("--ca")
    args = ap.parse_args()
    base = f"{'https' if args.tls_cert else 'http'}://127.0.0.1:{args.port}"
    desc = description(args.agent_id, schemas_from(args.schemas_from, args.ca))
    card = agent_card(desc, base)
    handler = DefaultRequestHandler(agent_executor=DDAgentExecutor(args.agent_id, args.overreach, args.broken),
                                    task_store=InMemoryTaskStore(), agent_card=card)
    app = Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, JSONRPC_PATH)])
    if args.key_file:
        with open(args.key_file, "rb") as f:
            app = SignedCalls(app, f.read().strip(), args.agent_id, args.record)
    tls = {}
    if args.tls_cert:
        tls = {"ssl_certfile": args.tls_cert, "ssl_keyfile": args.tls_key}
        if args.tls_client_ca:
            tls.update(ssl_cert_reqs=ssl.CERT_REQUIRED, ssl_ca_certs=args.tls_client_ca)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", **tls)


if __name__ == "__main__":
    main()
