// A minimal @a2a-js/sdk 1.3.0 agent served the SDK's own way, for `ddwire check` to probe.
//
// Usage: node server_js.mjs PORT      (with tests/interop/node_modules from npm.sh; loopback only)
//
// Built like the SDK's sample agent: `DefaultRequestHandler` + `InMemoryTaskStore` and an
// `AgentExecutor`, with the express adapters `agentCardHandler` and `jsonRpcHandler`. The
// card lists one JSON-RPC interface (A2A 1.0) and declares `streaming: true`, so the check's
// streaming probe has a real stream to read. The executor publishes the Task (submitted),
// a working status, an artifact echoing the message's parts, and a completed status.
import express from 'express';
import { A2A_PROTOCOL_VERSION, AGENT_CARD_PATH, Role, TaskState } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';

const port = Number(process.argv[2]);
const base = `http://127.0.0.1:${port}/`;

const card = {
  name: 'echo-a2a-js',
  description: '@a2a-js/sdk 1.3.0 echo agent for ddwire interop tests',
  supportedInterfaces: [
    { url: base, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: A2A_PROTOCOL_VERSION },
  ],
  version: '0.0.1',
  capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
  securitySchemes: {},
  securityRequirements: [],
  defaultInputModes: ['text/plain', 'application/json'],
  defaultOutputModes: ['text/plain', 'application/json'],
  skills: [{ id: 'echo', name: 'Echo', description: 'echoes the parts it gets', tags: ['echo'],
             examples: [], inputModes: [], outputModes: [], securityRequirements: [] }],
  signatures: [],
};

class EchoExecutor {
  async execute(context, bus) {
    const { taskId, contextId, userMessage } = context;
    const now = () => new Date().toISOString();
    if (!context.task) {
      bus.publish(AgentEvent.task({
        id: taskId, contextId, artifacts: [], history: [userMessage], metadata: undefined,
        status: { state: TaskState.TASK_STATE_SUBMITTED, timestamp: now(), message: undefined },
      }));
    }
    bus.publish(AgentEvent.statusUpdate({
      taskId, contextId, metadata: {},
      status: { state: TaskState.TASK_STATE_WORKING, timestamp: now(), message: undefined },
    }));
    bus.publish(AgentEvent.artifactUpdate({
      taskId, contextId, append: false, lastChunk: true, metadata: undefined,
      artifact: { artifactId: crypto.randomUUID(), name: 'echo', description: '', parts: userMessage.parts,
                  metadata: undefined, extensions: [] },
    }));
    bus.publish(AgentEvent.statusUpdate({
      taskId, contextId, metadata: {},
      status: { state: TaskState.TASK_STATE_COMPLETED, timestamp: now(), message: undefined },
    }));
    bus.finished();
  }

  async cancelTask() {}
}

const requestHandler = new DefaultRequestHandler(card, new InMemoryTaskStore(), new EchoExecutor());
const app = express();
app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: requestHandler }));
app.use(jsonRpcHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication }));
app.listen(port, '127.0.0.1', (err) => {
  if (err) throw err;
  console.log(`echo-a2a-js on ${base}`);
});
void Role;
