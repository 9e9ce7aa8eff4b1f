/**
 * @a2a-js/sdk 1.3.0 streaming client (A2A 1.0, the default `ClientFactory`) -> ddwire's harness.
 *
 * Usage: node stream_js.mjs CONFIG.json      (run from tests/interop, after `npm ci` there)
 * CONFIG: {"harness", "token"} (written by suite.sh).
 *
 * Tests (one PASS/FAIL line each):
 * - js-client/stream-stages: `sendMessageStream` (checked on the wire: `SendStreamingMessage`,
 *   `A2A-Version: 1.0`) for hello.world yields the task `TASK_STATE_SUBMITTED`, status updates
 *   `TASK_STATE_WORKING` whose metadata `dd.stage` names policy_gate, input_check, agent_call,
 *   grounding_check and store in order, the `envelope` artifact (succeeded), and
 *   `TASK_STATE_COMPLETED`, last.
 * - js-client/agent-fails: demo.failing ends with `TASK_STATE_FAILED` whose metadata
 *   `dd.problem_type` is the agent-error problem type.
 * - js-client/resubscribe: a `returnImmediately` send for echo.wire (working for 2 s), then
 *   `resubscribeTask` (`SubscribeToTask`) follows it to `TASK_STATE_COMPLETED`.
 * Every POST carries the bearer token (added by wrapping `fetch`).
 */
import { randomBytes, randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { ClientFactory } from "@a2a-js/sdk/client";
import { Role, TaskState } from "@a2a-js/sdk";
import { expect, runTests } from "../lib.mjs";

const CFG = JSON.parse(readFileSync(process.argv[2], "utf8"));
const BASE = CFG.harness.replace(/\/+$/, "");
const STAGES = ["policy_gate", "input_check", "agent_call", "grounding_check", "store"];
const AGENT_ERROR = "https://w3id.org/data-director/problems/agent-error";

const posts = [];
const realFetch = globalThis.fetch;
globalThis.fetch = async (input, init = {}) => {
  const headers = new Headers(init.headers);
  headers.set("Authorization", `Bearer ${CFG.token}`);
  if ((init.method || "GET").toUpperCase() === "POST") {
    posts.push({ url: String(input), headers, body: JSON.parse(init.body) });
  }
  return realFetch(input, { ...init, headers });
};


function uuid7() {
  const ms = BigInt(Date.now());
  const rand = BigInt(`0x${randomBytes(10).toString("hex")}`);
  const value = (ms << 80n) | (7n << 76n) | (((rand >> 68n) & 0xfffn) << 64n) | (2n << 62n)
    | (rand & ((1n << 62n) - 1n));
  const hex = value.toString(16).padStart(32, "0");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

function requestFor(agentId) {
  const input = agentId === "echo.wire"
    ? { schema_class: "Echo", value: { from: "@a2a-js/sdk 1.3.0" } }
    : { schema_class: "Message", message_text: "streamed from @a2a-js/sdk 1.3.0" };
  return { agent_id: agentId, invocation_id: uuid7(), input };
}

function request(doc, configuration) {
  return {
    tenant: "",
    message: { messageId: randomUUID(), contextId: "", taskId: "", role: Role.ROLE_USER,
      parts: [{ content: { $case: "data", value: doc }, metadata: undefined, filename: "", mediaType: "" }],
      metadata: undefined, extensions: [], referenceTaskIds: [] },
    configuration,
    metadata: undefined,
  };
}

const nonBlocking = { acceptedOutputModes: [], taskPushNotificationConfig: undefined,
  historyLength: undefined, returnImmediately: true };

async function collect(stream) {
  const out = [];
  for await (const event of stream) out.push(event);
  return out;
}

function checkEvents(events, wantState) {
  expect(events[0]?.payload?.$case === "task", `first event ${JSON.stringify(events[0]).slice(0, 200)}`);
  const rest = events.slice(1).map((e) => e.payload);
  const statuses = rest.filter((p) => p.$case === "statusUpdate").map((p) => p.value);
  const stages = statuses.map((u) => u.metadata?.["dd.stage"]).filter(Boolean);
  expect(JSON.stringify(stages) === JSON.stringify(STAGES), `stages ${JSON.stringify(stages)}`);
  for (const u of statuses.slice(0, -1)) {
    expect(u.status?.state === TaskState.TASK_STATE_WORKING, `an update before the last is ${u.status?.state}`);
  }
  const last = rest.at(-1);
  expect(last.$case === "statusUpdate" && last.value.status?.state === wantState,
    `the last event is ${JSON.stringify(last).slice(0, 300)}`);
  const arts = rest.map((p, i) => [p, i]).filter(([p]) => p.$case === "artifactUpdate");
  expect(arts.length === 1 && arts[0][1] === rest.length - 2, `artifact positions ${arts.map(([, i]) => i)}`);
  const artifact = arts[0][0].value.artifact;
  expect(artifact.name === "envelope", `artifact ${artifact.name}`);
  return [last.value, artifact.parts[0].content.value];
}

const client = await new ClientFactory().createFromUrl(BASE);

async function testStreamStages() {
  const doc = requestFor("hello.world");
  posts.length = 0;
  const events = await collect(client.sendMessageStream(request(doc, undefined)));
  const p = posts.at(-1);
  expect(p.body.method === "SendStreamingMessage" && p.headers.get("a2a-version") === "1.0",
    `sent ${p.body.method} with A2A-Version ${p.headers.get("a2a-version")}`);
  const task = events[0].payload.value;
  expect(task.id === doc.invocation_id && task.status?.state === TaskState.TASK_STATE_SUBMITTED,
    `first: ${task.id} ${task.status?.state}`);
  const [, envelope] = checkEvents(events, TaskState.TASK_STATE_COMPLETED);
  expect(envelope.outcome.status === "succeeded", `outcome ${JSON.stringify(envelope.outcome)}`);
}

async function testAgentFails() {
  const events = await collect(client.sendMessageStream(request(requestFor("demo.failing"), undefined)));
  const [last, envelope] = checkEvents(events, TaskState.TASK_STATE_FAILED);
  expect(last.metadata?.["dd.problem_type"] === AGENT_ERROR, `metadata ${JSON.stringify(last.metadata)}`);
  expect(envelope.outcome.status === "failed", `outcome ${JSON.stringify(envelope.outcome)}`);
}

async function testResubscribe() {
  const doc = requestFor("echo.wire");
  const task = await client.sendMessage(request(doc, nonBlocking));
  expect(task.id === doc.invocation_id, `task id ${task.id}`);
  const events = await collect(client.resubscribeTask({ tenant: "", id: task.id }));
  expect(posts.at(-1).body.method === "SubscribeToTask", `sent ${posts.at(-1).body.method}`);
  const last = events.at(-1)?.payload;
  expect(last?.$case === "statusUpdate" && last.value.status?.state === TaskState.TASK_STATE_COMPLETED,
    `the stream ended with ${JSON.stringify(last).slice(0, 300)}`);
  expect(events.some((e) => e.payload?.$case === "artifactUpdate"), "no envelope on the stream");
}

await runTests([
  ["js-client/stream-stages", testStreamStages],
  ["js-client/agent-fails", testAgentFails],
  ["js-client/resubscribe", testResubscribe],
]);
