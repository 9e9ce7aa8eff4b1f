"""The Python reference path for benches/harness.sh: a harness and an agent built as the
reference (data-director's `workbench` and `dd_sdk.serve`) builds them, on the pinned a2a-sdk
1.3.0 and opentelemetry-sdk 1.45.2 (tests/interop/requirements-a2a1.txt).

Usage (in the venv of tests/interop/venv.sh a2a1):
    python reference_path.py agent PORT
    python reference_path.py harness PORT AGENT_URL RUNS_DIR

agent: an echo agent (accepts Echo, answers EchoReply, grounding mode none) served as
`dd_sdk.serve` serves agents: a2a-sdk 1.3.0 `DefaultRequestHandler` on Starlette and uvicorn,
A2A 1.0 JSON-RPC at /a2a; each run under a fresh, isolated OpenTelemetry `TracerProvider`
parented to the caller's `traceparent`; the reply is a completed task with one `agent-result`
artifact, `{"result": <AgentResult>, "spans": [span.to_json(indent=None), ...]}`.

harness: the conductor as the reference's workbench runs it, reduced to what an echo run
needs: an a2a-sdk 1.3.0 server (the same stack) takes an InvocationRequest in one data part,
gives it an id if it has none, opens the conductor's `invoke_agent` root span and its
`policy_gate` span under its own isolated tracer, forwards the request with the a2a-sdk 1.3.0
client (`create_client`, one long-lived httpx client) with the `traceparent`, `dd.input_ref` and
`dd.input_hash` metadata, builds the envelope from the agent's result, and writes the run's
files as `workbench.store.RunStore` does: `<runs>/<id>/envelope.json` (json.dumps indent=2,
opened with mode "x"), `request.json`, the index line appended to `invocations.jsonl`, then
`spans.jsonl` and `grounding.txt`. Like the reference, it does not fsync. The caller gets a
completed task with one `envelope` artifact.

It is a yardstick, not a second implementation: no policy profile, schema validation or
grounding linter beyond what an echo run passes through.
"""

import asyncio
import datetime
import hashlib
import json
import os
import sys
import uuid

import httpx
import uvicorn
from a2a.client import ClientConfig, create_client
from a2a.helpers.proto_helpers import get_data_parts, new_data_part, new_task_from_user_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Message, Part,
                       Role, SendMessageRequest, TaskState)
from google.protobuf import struct_pb2
from google.protobuf.json_format import MessageToDict, ParseDict
from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from starlette.applications import Starlette

JSONRPC_PATH = "/a2a"
ARTIFACT_NAME = "agent-result"
CONTRACT_VERSION = "0.7.0"


def card(name, base):
    return AgentCard(
        name=name, description=f"{name}, the Python reference path of benches/harness.sh.",
        version="0.1.0", default_input_modes=["application/json"],
        default_output_modes=["application/json"],
        capabilities=AgentCapabilities(streaming=False),
        supported_interfaces=[AgentInterface(protocol_binding="JSONRPC", protocol_version="1.0",
                                             url=base + JSONRPC_PATH)],
        skills=[AgentSkill(id=name, name=name, description=name, tags=["bench"])],
    )


def isolated_tracer(service):
    """A fresh provider per run, as dd_sdk.tracing makes one: never the global provider."""
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    return provider, memory, provider.get_tracer("data-director")


def canonical_hash(doc):
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat().replace("+00:00", "Z")


# --- the agent ---------------------------------------------------------------------------------

def run_echo(request, metadata):
    provider, memory, _tracer = isolated_tracer("echo.wire")
    parent = TraceContextTextMapPropagator().extract({"traceparent": str(metadata.get("traceparent", ""))})
    token = otel_context.attach(parent)
    try:
        ref = {"source_id": str(metadata.get("dd.input_ref", "")),
               "content_hash": str(metadata.get("dd.input_hash", ""))}
        result = {
            "outcome": {"status": "succeeded", "statement": "Returned the input's value unchanged."},
            "payload": {"schema_class": "EchoReply", "value": request["input"].get("value"),
                        "grounded_on": [ref]},
            "evidence": [{**ref, "hash_algorithm": "sha256", "canonicalisation": "dd-input-json-v1"}],
        }
    finally:
        otel_context.detach(token)
        spans = [s.to_json(indent=None) for s in memory.get_finished_spans()]
        provider.shutdown()
    return {"result": result, "spans": spans}


class EchoExecutor(AgentExecutor):
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
        body = await asyncio.to_thread(run_echo, inputs[0], metadata)
        await updater.add_artifact([new_data_part(body, media_type="application/json")], name=ARTIFACT_NAME)
        await updater.complete()

    async def cancel(self, context, event_queue):
        raise NotImplementedError


# --- the harness -------------------------------------------------------------------------------

class Conductor:
    def __init__(self, agent_url, runs):
        self.agent_url, self.runs = agent_url, runs
        self.client = None
        os.makedirs(runs, exist_ok=True)

    async def agent(self):
        if self.client is None:
            http = httpx.AsyncClient(timeout=60)
            self.client = await create_client(self.agent_url, ClientConfig(streaming=False, httpx_client=http))
        return self.client

    async def invoke(self, request):
        request = dict(request)
        request.setdefault("invocation_id", str(uuid.uuid4()))
        request.setdefault("issued_at", now())
        inv = request["invocation_id"]
        provider, memory, tracer = isolated_tracer("ddwire-reference-harness")
        input_hash = canonical_hash(request["input"])
        with tracer.start_as_current_span("invoke_agent") as root:
            root.set_attribute("dd.agent_id", request["agent_id"])
            root.set_attribute("dd.grounding_mode", "none")
            root.set_attribute("dd.input_hash", input_hash)
            with tracer.start_as_current_span("policy_gate") as gate:
                gate.set_attribute("dd.agent_id", request["agent_id"])
            carrier = {}
            TraceContextTextMapPropagator().inject(carrier)
            msg = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER,
                          parts=[Part(data=ParseDict(request, struct_pb2.Value()))])
            msg.metadata.update({"traceparent": carrier.get("traceparent", ""),
                                 "dd.input_ref": f"input:{inv}", "dd.input_hash": input_hash})
            client = await self.agent()
            events = [ev async for ev in client.send_message(SendMessageRequest(message=msg))]
            task = events[-1].task
            if task.status.state != TaskState.TASK_STATE_COMPLETED:
                raise RuntimeError(f"the agent's task ended in {TaskState.Name(task.status.state)}")
            body = MessageToDict(task.artifacts[0].parts[0].data)
            result = body["result"]
            root.set_attribute("dd.outcome", result["outcome"]["status"])
            trace_id = format(root.get_span_context().trace_id, "032x")
        envelope = {
            "invocation_id": inv, "agent_id": request["agent_id"], "agent_version": "0.1.0",
            "completed_at": now(), "grounding_mode": "none",
            "policy_bundle_ref": "profile:ddwire-bench@v1", "policy_digest": "0" * 64,
            "acting_for": {"principal_id": "urn:ddwire:demo:operator",
                           "name": "ddwire demo operator (not a person)",
                           "principal_kind": "service", "assurance": "asserted"},
            "contract_version": CONTRACT_VERSION, "outcome": result["outcome"],
            "payload": result.get("payload"), "evidence": result.get("evidence", []),
            "telemetry": {"trace_id": trace_id, "model_id": None, "input_tokens": None,
                          "output_tokens": None, "energy_estimate_j": None,
                          "energy_method": "not_measured"},
            "requires_human_review": True,
        }
        local = [s.to_json(indent=None) for s in memory.get_finished_spans()]
        provider.shutdown()
        await asyncio.to_thread(self.store, inv, envelope, request, local + body.get("spans", []))
        return envelope

    def store(self, inv, envelope, request, spans):
        """workbench.store.RunStore.append, then the trace and the report, as the reference
        writes them (no fsync)."""
        run_dir = os.path.join(self.runs, inv)
        os.makedirs(run_dir, exist_ok=True)
        with open(os.path.join(run_dir, "envelope.json"), "x", encoding="utf-8") as f:
            f.write(json.dumps(envelope, indent=2))
        with open(os.path.join(run_dir, "request.json"), "w", encoding="utf-8") as f:
            f.write(json.dumps(request, indent=2))
        with open(os.path.join(self.runs, "invocations.jsonl"), "a", encoding="utf-8") as f:
            f.write(json.dumps(envelope, separators=(",", ":")) + "\n")
        with open(os.path.join(run_dir, "spans.jsonl"), "w", encoding="utf-8") as f:
            for line in spans:
                f.write(line + "\n")
        with open(os.path.join(run_dir, "grounding.txt"), "w", encoding="utf-8") as f:
            f.write("grounding: passed [none] (0 retrieval, 0 chat spans)\n")


class HarnessExecutor(AgentExecutor):
    def __init__(self, conductor):
        self.conductor = conductor

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
        try:
            envelope = await self.conductor.invoke(inputs[0])
        except Exception as exc:  # noqa: BLE001 - a failed task, as the reference's transport does
            await updater.failed(updater.new_agent_message(
                [new_data_part({"error": f"{type(exc).__name__}: {exc}"})]))
            return
        await updater.add_artifact([new_data_part(envelope, media_type="application/json")], name="envelope")
        await updater.complete()

    async def cancel(self, context, event_queue):
        raise NotImplementedError


def serve(name, port, executor):
    base = f"http://127.0.0.1:{port}"
    agent_card = card(name, base)
    handler = DefaultRequestHandler(agent_executor=executor, task_store=InMemoryTaskStore(),
                                    agent_card=agent_card)
    app = Starlette(routes=[*create_agent_card_routes(agent_card),
                            *create_jsonrpc_routes(handler, JSONRPC_PATH)])
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "agent":
        serve("echo.wire", int(sys.argv[2]), EchoExecutor())
    elif len(sys.argv) == 5 and sys.argv[1] == "harness":
        conductor = Conductor(sys.argv[3].rstrip("/"), sys.argv[4])
        serve("reference-harness", int(sys.argv[2]), HarnessExecutor(conductor))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
