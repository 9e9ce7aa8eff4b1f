"""A minimal a2a-sdk 1.3.0 (A2A 1.0) echo agent, for `ddwire send` to call.

Usage: python server_a2a1.py PORT [--v03-compat]      (in the venv of requirements-a2a1.txt)

Built the ordinary way: `create_agent_card_routes` + `create_jsonrpc_routes` (at "/") on a
Starlette app with `DefaultRequestHandler` + `InMemoryTaskStore` and an `AgentExecutor`, served
by uvicorn on 127.0.0.1. The card lists one JSON-RPC interface with protocolVersion 1.0; the SDK
also merges the legacy v0.3 fields into the served card (`url`, `protocolVersion: "0.3"`,
`preferredTransport`), so a client must read `supportedInterfaces` to find 1.0.

With `--v03-compat` the JSON-RPC route is built with `enable_v0_3_compat=True` (it also answers
v0.3 `message/send`) and the card lists a second interface with protocolVersion 0.3.
Without it, `message/send` gets -32601 Method not found.

The executor echoes the first data part as
`{"echo": <data>, "metadata": <message metadata>, "wire": <what wiretap.py saw>}`, as
server_a2a03.py does: a completed Task with one artifact "echo" by default, a failed Task for
`{"mode": "fail"}`, a Message result for `{"mode": "message"}`.
"""

import sys

import uvicorn
from a2a.helpers.proto_helpers import new_data_message, new_data_part, new_task_from_user_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
from google.protobuf.json_format import MessageToDict
from starlette.applications import Starlette

import wiretap


class EchoExecutor(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        msg = context.message
        data = next((MessageToDict(p.data) for p in msg.parts if p.HasField("data")), None)
        metadata = MessageToDict(msg.metadata) if msg.HasField("metadata") else None
        echo = {"echo": data, "metadata": metadata, "wire": dict(wiretap.LAST)}
        mode = data.get("mode") if isinstance(data, dict) else None
        if mode == "message":
            await event_queue.enqueue_event(new_data_message(echo, context_id=context.context_id))
            return
        task = context.current_task
        if task is None:
            task = new_task_from_user_message(msg)
            task.id, task.context_id = context.task_id, context.context_id
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.add_artifact([new_data_part(echo)], name="echo")
        if mode == "fail":
            await updater.failed()
        else:
            await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


def main():
    port = int(sys.argv[1])
    compat = "--v03-compat" in sys.argv[2:]
    url = f"http://127.0.0.1:{port}/"
    interfaces = [AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")]
    if compat:
        interfaces.append(AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="0.3"))
    card = AgentCard(
        name="echo-a2a1" + ("-compat" if compat else ""),
        description="a2a-sdk 1.3.0 echo agent for ddwire interop tests",
        supported_interfaces=interfaces,
        version="0.0.1",
        capabilities=AgentCapabilities(streaming=False),
        default_input_modes=["application/json"],
        default_output_modes=["application/json"],
        skills=[AgentSkill(id="echo", name="Echo", description="echoes data parts", tags=["echo"])],
    )
    handler = DefaultRequestHandler(agent_executor=EchoExecutor(), task_store=InMemoryTaskStore(),
                                    agent_card=card)
    routes = create_agent_card_routes(card) + create_jsonrpc_routes(handler, "/", enable_v0_3_compat=compat)
    uvicorn.run(wiretap.WireTap(Starlette(routes=routes)), host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
