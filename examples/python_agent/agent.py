"""A plain a2a-sdk agent, made Data Director compatible: what it takes, in one page.

    python agent.py PORT          # a2a-sdk 1.3.0 (pip install "a2a-sdk[http-server]==1.3.0"
                                  #   uvicorn opentelemetry-sdk), then register http://127.0.0.1:PORT
                                  #   in the harness's agents config and enable py.example in its profile

A plain a2a-sdk agent is registered by `ddwire serve` as "incompatible" until it does three things:
1. Its card carries the Data Director extension (required) whose params describe the agent:
   what it accepts and returns (with the class schemas and their digests) and its grounding mode.
2. It answers each InvocationRequest (one data part) with a completed task holding one artifact
   named "agent-result": {"result": <AgentResult>, "spans": [<OpenTelemetry span JSON>, ...]}.
3. Its result cites what it rests on; here, its input: metadata["dd.input_ref"] and
   metadata["dd.input_hash"] (worked out the same way when it is called directly, with no harness
   in front). Its spans join the caller's trace (metadata["traceparent"]).
The class schemas are read from this repository (src/contract/schemas/); a copy elsewhere can
read them off any ddwire agent's card instead (params.schemas of the extension).
"""
import asyncio, hashlib, json, pathlib, sys

import uvicorn
from a2a.helpers.proto_helpers import get_data_parts, new_data_part, new_task_from_user_message
from a2a.server.agent_execution import AgentExecutor
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentExtension, AgentInterface, AgentSkill
from google.protobuf.json_format import MessageToDict
from opentelemetry import context
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from starlette.applications import Starlette

SCHEMAS = pathlib.Path(__file__).resolve().parents[2] / "src" / "contract" / "schemas"


def schema(name):  # a class schema and its digest: sha256 of its sorted, compact JSON
    doc = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    canonical = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return {"digest": hashlib.sha256(canonical.encode()).hexdigest(), "json_schema": doc}


SPEC = {  # (1) the extension's params: every key is required
    "agent_id": "py.example", "version": "0.1.0", "requirement_ids": ["EXAMPLE-2"],
    "description": "Counts the words of a message: a Python a2a-sdk agent made DD compatible.",
    "action_class": "converse", "accepts": ["Message"], "payload": "Reply",
    "grounding_mode": "input_only", "derivations": {}, "contract_version": "0.7.0",
    "schemas": {"Message": schema("Message"), "Reply": schema("Reply")},
}


def decide(request, meta, tracer):  # the agent itself; (3) it cites its input
    text = request["input"]["message_text"]
    with tracer.start_as_current_span("chat") as span:  # a chat span, with owned dd.* attributes
        for key, value in {"dd.operation": "chat", "dd.model_id": "word-counter",
                           "dd.input_tokens": len(text.split()), "dd.output_tokens": 4}.items():
            span.set_attribute(key, value)
    # The harness names the input it checked; called directly (ddwire send, ddwire check --dd)
    # there is no harness, so the agent names it the same way itself.
    input_ref = meta.get("dd.input_ref") or f"input:{request.get('invocation_id', '')}"
    input_hash = meta.get("dd.input_hash") or hashlib.sha256(json.dumps(
        request["input"], sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()).hexdigest()
    cite = {"source_id": input_ref, "content_hash": input_hash}
    return {"outcome": {"status": "succeeded", "statement": "Counted the words."},
            "payload": {"schema_class": "Reply", "reply_text": f"{len(text.split())} words.",
                        "reply_derivation": "lexical", "grounded_on": [cite]},
            "evidence": [{**cite, "hash_algorithm": "sha256", "canonicalisation": "dd-input-json-v1"}]}


def run(request, meta):  # spans recorded apart, under the caller's traceparent
    provider, memory = TracerProvider(), InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    token = context.attach(TraceContextTextMapPropagator().extract({"traceparent": meta.get("traceparent", "")}))
    try:
        result = decide(request, meta, provider.get_tracer("py.example"))
    finally:
        context.detach(token)
    return {"result": result, "spans": [s.to_json(indent=None) for s in memory.get_finished_spans()]}


class Executor(AgentExecutor):
    async def execute(self, ctx, queue):
        task = ctx.current_task or new_task_from_user_message(ctx.message)
        if not ctx.current_task:
            await queue.enqueue_event(task)
        updater = TaskUpdater(queue, task.id, task.context_id)
        parts = get_data_parts(ctx.message.parts)
        if len(parts) != 1:
            return await updater.failed(updater.new_agent_message(
                [new_data_part({"error": f"expected exactly one data part, got {len(parts)}"})]))
        meta = MessageToDict(ctx.message.metadata) if ctx.message.HasField("metadata") else {}
        try:
            body = await asyncio.to_thread(run, parts[0], meta)
        except Exception as e:  # the harness records it as agent-error
            return await updater.failed(updater.new_agent_message([new_data_part({"error": f"{type(e).__name__}: {e}"})]))
        await updater.add_artifact([new_data_part(body)], name="agent-result")  # (2)
        await updater.complete()

    async def cancel(self, ctx, queue):
        raise NotImplementedError


port = int(sys.argv[1])
url = f"http://127.0.0.1:{port}"
card = AgentCard(
    name=SPEC["agent_id"], description=SPEC["description"], version=SPEC["version"],
    default_input_modes=["application/json"], default_output_modes=["application/json"],
    capabilities=AgentCapabilities(extensions=[AgentExtension(  # (1)
        uri="https://w3id.org/data-director/a2a/agent-spec/v0", required=True, params=SPEC)]),
    supported_interfaces=[AgentInterface(protocol_binding="JSONRPC", protocol_version="1.0", url=f"{url}/a2a")],
    skills=[AgentSkill(id=SPEC["agent_id"], name=SPEC["agent_id"], description=SPEC["description"], tags=["data-director"])],
)
handler = DefaultRequestHandler(agent_executor=Executor(), task_store=InMemoryTaskStore(), agent_card=card)
app = Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, "/a2a")])
uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
