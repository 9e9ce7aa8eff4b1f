"""A minimal a2a-sdk 0.3.26 (A2A v0.3) echo agent, for `ddwire send` to call.

Usage: python server_a2a03.py PORT [--tls-cert F --tls-key F [--tls-client-ca F]]
       (in the venv of requirements-a2a03.txt; loopback only; TLS flags: see tls_options.py)

Built the ordinary way: `A2AStarletteApplication` + `DefaultRequestHandler` + `InMemoryTaskStore`
and an `AgentExecutor`, served by uvicorn. The card (v0.3: `url`, `protocolVersion` 0.3.0,
`preferredTransport` JSONRPC, no `supportedInterfaces`) is at /.well-known/agent-card.json.

The executor echoes the first data part it receives as
`{"echo": <data>, "metadata": <message metadata>, "wire": <what wiretap.py saw>}`:
- by default as a Task: submitted, one artifact named "echo" with that data part, completed;
- `{"mode": "fail"}`: the same Task, but ending failed;
- `{"mode": "message"}`: a Message result (no task) with that data part.
"""

import sys

import uvicorn
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.apps import A2AStarletteApplication
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentSkill, DataPart, Part
from a2a.utils import new_agent_parts_message, new_task

import tls_options
import wiretap


class EchoExecutor(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        msg = context.message
        data = next((p.root.data for p in msg.parts if isinstance(p.root, DataPart)), None)
        echo = [Part(root=DataPart(data={"echo": data, "metadata": msg.metadata,
                                         "wire": dict(wiretap.LAST)}))]
        mode = data.get("mode") if isinstance(data, dict) else None
        if mode == "message":
            await event_queue.enqueue_event(new_agent_parts_message(echo, context_id=context.context_id))
            return
        task = context.current_task or new_task(msg)
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.add_artifact(echo, name="echo")
        if mode == "fail":
            await updater.failed()
        else:
            await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


def main():
    args, tls = tls_options.split(sys.argv[1:])
    port = int(args[0])
    card = AgentCard(
        name="echo-a2a03",
        description="a2a-sdk 0.3.26 echo agent for ddwire interop tests",
        url=f"{tls_options.scheme(tls)}://127.0.0.1:{port}/",
        version="0.0.1",
        capabilities=AgentCapabilities(streaming=False),
        default_input_modes=["application/json"],
        default_output_modes=["application/json"],
        skills=[AgentSkill(id="echo", name="Echo", description="echoes data parts", tags=["echo"])],
    )
    handler = DefaultRequestHandler(agent_executor=EchoExecutor(), task_store=InMemoryTaskStore())
    app = A2AStarletteApplication(agent_card=card, http_handler=handler).build()
    uvicorn.run(wiretap.WireTap(app), host="127.0.0.1", port=port, log_level="warning",
                **tls_options.uvicorn_kwargs(tls))


if __name__ == "__main__":
    main()
