"""The a2a-sdk 0.3.26 echo agent benches/agent.sh measures, served the ordinary way.

Usage: python a2a03_echo_server.py PORT      (in the venv of tests/interop/requirements-a2a03.txt)

Adapted from tests/interop/a2a/server_a2a03.py without its wire tap: `A2AStarletteApplication`
+ `DefaultRequestHandler` + `InMemoryTaskStore` and an `AgentExecutor` that answers a
`message/send` with a Task (submitted, one artifact "echo" holding the first data part, completed),
run by `uvicorn.run(app, host, port)`, which is how a2a-sdk's own samples serve an agent: one
process, one worker, an asyncio event loop. `log_level="warning"` keeps uvicorn's per-request
access log off (ddwire and nginx log nothing per request either). Loopback only.
"""

import sys

import uvicorn
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.apps import A2AStarletteApplication
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentSkill, DataPart, Part
from a2a.utils import new_task


class EchoExecutor(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        msg = context.message
        data = next((p.root.data for p in msg.parts if isinstance(p.root, DataPart)), None)
        task = context.current_task or new_task(msg)
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.add_artifact([Part(root=DataPart(data={"echo": data}))], name="echo")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


def main():
    port = int(sys.argv[1])
    card = AgentCard(
        name="echo-a2a03-bench",
        description="a2a-sdk 0.3.26 echo agent, for ddwire's benchmarks",
        url=f"http://127.0.0.1:{port}/",
        version="0.0.1",
        capabilities=AgentCapabilities(streaming=False),
        default_input_modes=["application/json"],
        default_output_modes=["application/json"],
        skills=[AgentSkill(id="echo", name="Echo", description="echoes data parts", tags=["echo"])],
    )
    handler = DefaultRequestHandler(agent_executor=EchoExecutor(), task_store=InMemoryTaskStore())
    app = A2AStarletteApplication(agent_card=card, http_handler=handler).build()
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
