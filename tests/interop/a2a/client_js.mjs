/**
 * @a2a-js/sdk 1.3.0 clients -> a ddwire agent (`ddwire agent hello`).
 *
 * Usage: node client_js.mjs BASE_URL      (run from tests/interop, after `npm ci` there)
 *
 * Proves that the JS SDK talks to a ddwire agent:
 * - v0.3: `LegacyJsonRpcTransport` from `@a2a-js/sdk/compat/v0_3/client`, pointed at the card's
 *   `url`, sends `message/send` (numeric JSON-RPC id, `kind` discriminators) with one data part
 *   and a `traceparent` in message metadata; the SDK parses the reply into its Task: completed,
 *   one `agent-result` artifact with one data part, `result.outcome.status == "succeeded"`,
 *   `spans` are strings in the caller's trace, the agent's root span a child of the caller's;
 * - v0.3 malformed (two data parts): a failed task carrying the error text;
 * - 1.0: the SDK's default `ClientFactory().createFromUrl(base)` reads ddwire's card, picks the
 *   JSON-RPC 1.0 interface and sends `SendMessage` with `A2A-Version: 1.0`; same assertions.
 * Requests are recorded by wrapping `fetch`, to show which binding was used.
 * An https BASE_URL works when node trusts its CA (NODE_EXTRA_CA_CERTS=ca.pem, as the tls suite
 * runs it); INTEROP_TEST_PREFIX, when set, is printed before every test name.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { ClientFactory } from "@a2a-js/sdk/client";
import { LegacyJsonRpcTransport } from "@a2a-js/sdk/compat/v0_3/client";
import { Role, TaskState } from "@a2a-js/sdk";
import { expect, runTests } from "../lib.mjs";

const BASE = process.argv[2].replace(/\/+$/, "");
const SPAN_KEYS = ["name", "context", "kind", "parent_id", "start_time", "end_time",
  "status", "attributes", "events", "links", "resource"];

// Record every POST (url, headers, JSON body) made through fetch.
const posts = [];
const realFetch = globalThis.fetch;
globalThis.fetch = async (input, init = {}) => {
  if ((init.method || "GET").toUpperCase() === "POST") {
    posts.push({ url: String(input), headers: new Headers(init.headers), body: JSON.parse(init.body) });
  }
  return realFetch(input, init);
};


function invocation() {
  return { agent_id: "hello.world", input: { schema_class: "Message", message_text: "hi from @a2a-js/sdk" } };
}

function dataPart(value) {
  return { content: { $case: "data", value }, metadata: undefined, filename: "", mediaType: "" };
}

function request(parts, metadata) {
  return {
    tenant: "",
    message: { messageId: randomUUID(), contextId: "", taskId: "", role: Role.ROLE_USER, parts,
      metadata, extensions: [], referenceTaskIds: [] },
    configuration: undefined,
    metadata: undefined,
  };
}

function traceparent() {
  const traceId = randomBytes(16).toString("hex");
  const spanId = randomBytes(8).toString("hex");
  return { traceId, spanId, header: `00-${traceId}-${spanId}-01` };
}

function checkAgentResult(task, tp) {
  expect(task.id && task.status, `the reply is not a task: ${JSON.stringify(task).slice(0, 300)}`);
  expect(task.status.state === TaskState.TASK_STATE_COMPLETED, `task state ${task.status.state}`);
  expect(task.artifacts.length === 1 && task.artifacts[0].name === "agent-result",
    `artifacts ${JSON.stringify(task.artifacts.map((a) => a.name))}`);
  const parts = task.artifacts[0].parts;
  expect(parts.length === 1 && parts[0].content?.$case === "data", "the artifact is not one data part");
  const data = parts[0].content.value;
  expect(data.result?.outcome?.status === "succeeded", `outcome ${JSON.stringify(data.result?.outcome)}`);
  expect(Array.isArray(data.spans) && data.spans.length > 0, "no spans");
  const spans = data.spans.map((s) => {
    expect(typeof s === "string", "a span is not a string");
    return JSON.parse(s);
  });
  const own = new Set(spans.map((s) => s.context.span_id));
  for (const s of spans) {
    expect(JSON.stringify(Object.keys(s)) === JSON.stringify(SPAN_KEYS), `span keys ${Object.keys(s)}`);
    expect(s.context.trace_id === `0x${tp.traceId}`, `trace_id ${s.context.trace_id} != 0x${tp.traceId}`);
    if (!own.has(s.parent_id)) {
      expect(s.parent_id === `0x${tp.spanId}`, `root span parent ${s.parent_id} != 0x${tp.spanId}`);
    }
  }
}

async function card() {
  const res = await realFetch(`${BASE}/.well-known/agent-card.json`);
  expect(res.ok, `card: HTTP ${res.status}`);
  return res.json();
}

async function testLegacyV03() {
  const transport = new LegacyJsonRpcTransport({ endpoint: (await card()).url });
  const tp = traceparent();
  posts.length = 0;
  const task = await transport.sendMessage(request([dataPart(invocation())], { traceparent: tp.header }));
  checkAgentResult(task, tp);
  expect(posts.length === 1 && posts[0].body.method === "message/send", `sent ${posts.map((p) => p.body.method)}`);
  expect(typeof posts[0].body.id === "number", `JSON-RPC id ${JSON.stringify(posts[0].body.id)} is not a number`);
}

async function testLegacyV03Malformed() {
  const transport = new LegacyJsonRpcTransport({ endpoint: (await card()).url });
  const task = await transport.sendMessage(request([dataPart(invocation()), dataPart({ b: 2 })]));
  expect(task.status?.state === TaskState.TASK_STATE_FAILED, `task state ${task.status?.state}, not failed`);
  const errs = (task.status.message?.parts || []).filter((p) => p.content?.$case === "data").map((p) => p.content.value.error);
  expect(errs.includes("expected exactly one data part, got 2"), `status message errors ${JSON.stringify(errs)}`);
}

async function testDefaultV10() {
  const client = await new ClientFactory().createFromUrl(BASE);
  const tp = traceparent();
  posts.length = 0;
  const task = await client.sendMessage(request([dataPart(invocation())], { traceparent: tp.header }));
  checkAgentResult(task, tp);
  expect(posts.length === 1, `expected one POST, saw ${posts.length}`);
  const p = posts[0];
  expect(p.url === `${BASE}/a2a`, `posted to ${p.url}`);
  expect(p.body.method === "SendMessage", `JSON-RPC method ${p.body.method}`);
  expect(p.headers.get("a2a-version") === "1.0", `A2A-Version ${p.headers.get("a2a-version")}`);
}

const PREFIX = process.env.INTEROP_TEST_PREFIX || "";
await runTests([
  ["js-client/legacy-v0.3-send", testLegacyV03],
  ["js-client/legacy-v0.3-malformed", testLegacyV03Malformed],
  ["js-client/default-v1.0-send", testDefaultV10],
], PREFIX);
