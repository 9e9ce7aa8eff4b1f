"""The a2a suite's echo agents (server_a2a03.py, server_a2a1.py), served with a card saying
`streaming: true`, so that `message/stream` / `SendStreamingMessage` reach their executor.

Usage: python server_stream.py 03|1|long PORT [--tls-cert F --tls-key F [--tls-client-ca F]]
       (in the venv of requirements-a2a03.txt / -a2a1.txt; TLS flags: see ../a2a/tls_options.py)

The executor streams what the echo executor enqueues: the task (submitted), an artifact update
"echo", and the final status update (completed). `long` (1.3.0) serves an agent that streams
many events instead: the task (submitted), `working`, N artifact updates "chunk 0" … "chunk
N-1", then `completed`, N being the message's first data part's "chunks" (default 24); the
relay fixtures (fixtures/relay/record.sh) record a long stream from it.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "a2a"))

import uvicorn  # noqa: E402

import tls_options  # noqa: E402
import wiretap  # noqa: E402


def serve03(port, tls):
    from a2a.server.apps import A2AStarletteApplication
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.tasks import InMemoryTaskStore
    from a2a.types import AgentCapabilities, AgentCard, AgentSkill
    from server_a2a03 import EchoExecutor

    card = AgentCard(
        name="stream-a2a03", description="a2a-sdk 0.3.26 streaming echo agent", url=f"{tls_options.scheme(tls)}://127.0.0.1:{port}/",
        version="0.0.1", capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["application/json"], default_output_modes=["application/json"],
        skills=[AgentSkill(id="echo", name="Echo", description="echoes data parts", tags=["echo"])],
    )
    handler = DefaultRequestHandler(agent_executor=EchoExecutor(), task_store=InMemoryTaskStore())
    app = A2AStarletteApplication(agent_card=card, http_handler=handler).build()
    uvicorn.run(wiretap.WireTap(app), host="127.0.0.1", port=port, log_level="warning",
                **tls_options.uvicorn_kwargs(tls))


def long_executor():
    """The `long` agent's executor (a2a-sdk 1.3.0)."""
    import asyncio

    from a2a.helpers.proto_helpers import new_data_part, new_task_from_user_message
    from a2a.server.agent_execution import AgentExecutor
    from a2a.server.tasks import TaskUpdater
    from google.protobuf.json_format import MessageToDict

    class LongExecutor(AgentExecutor):
        async def execute(self, context, event_queue):
            msg = context.message
            data = next((MessageToDict(p.data) for p in msg.parts if p.HasField("data")), None) or {}
            task = context.current_task or new_task_from_user_message(msg)
            if context.current_task is None:
                task.id, task.context_id = context.task_id, context.context_id
                await event_queue.enqueue_event(task)
            updater = TaskUpdater(event_queue, task.id, task.context_id)
            await updater.start_work()
            for i in range(int(data.get("chunks", 24))):
                await updater.add_artifact([new_data_part({"chunk": i})], name=f"chunk {i}")
                await asyncio.sleep(0.005)
            await updater.complete()

        async def cancel(self, context, event_queue):
            raise NotImplementedError

    return LongExecutor()


def serve1(port, tls, long=False):
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
    from a2a.server.tasks import InMemoryTaskStore
    from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
    from server_a2a1 import EchoExecutor
    from starlette.applications import Starlette

    url = f"{tls_options.scheme(tls)}://127.0.0.1:{port}/"
    card = AgentCard(
        name="long-stream-a2a1" if long else "stream-a2a1",
        description="a2a-sdk 1.3.0 streaming " + ("agent of many events" if long else "echo agent"),
        supported_interfaces=[AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")],
        version="0.0.1", capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["application/json"], default_output_modes=["application/json"],
        skills=[AgentSkill(id="echo", name="Echo", description="echoes data parts", tags=["echo"])],
    )
    executor = long_executor() if long else EchoExecutor()
    handler = DefaultRequestHandler(agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=card)
    routes = create_agent_card_routes(card) + create_jsonrpc_routes(handler, "/")
    uvicorn.run(wiretap.WireTap(Starlette(routes=routes)), host="127.0.0.1", port=port, log_level="warning",
                **tls_options.uvicorn_kwargs(tls))


if __name__ == "__main__":
    args, tls = tls_options.split(sys.argv[1:])
    if args[0] == "long":
        serve1(int(args[1]), tls, long=True)
    else:
        {"03": serve03, "1": serve1}[args[0]](int(args[1]), tls)
