/**
 * @a2a-js/sdk 1.3.0 clients over TLS -> `ddwire agent echo` and ddwire's harness.
 *
 * Usage: NODE_EXTRA_CA_CERTS=fixtures/tls/ca.pem node tls_js.mjs CONFIG.json
 *        (run from tests/interop, after `npm ci` there; CONFIG as for tls_a2a03.py)
 *
 * Node trusts the test CA through NODE_EXTRA_CA_CERTS alone, as a JS user would set it up;
 * the SDK's default `ClientFactory().createFromUrl(base)` reads each card over https and picks
 * JSON-RPC 1.0 (`SendMessage`, `A2A-Version: 1.0`, recorded by wrapping `fetch`).
 * - js/agent-echo/send-text: the card's url is https; a text part comes back as the completed
 *   task's status message;
 * - js/agent-echo/send-invocation: an InvocationRequest for echo.wire: one `agent-result`
 *   artifact, outcome succeeded, the Echo value unchanged;
 * - js/harness/echo-behind-mtls, js/harness/py-agent: through the harness (https) to the mTLS
 *   ddwire echo agent and to the a2a-sdk agent under uvicorn TLS: a completed task whose
 *   `envelope` artifact is succeeded with the agent's payload;
 * - js/without-extra-ca-refused: the same card fetched by a node without NODE_EXTRA_CA_CERTS
 *   fails on the certificate: the server's certificate really is checked.
 */
import { spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { ClientFactory } from "@a2a-js/sdk/client";
import { Role, TaskState } from "@a2a-js/sdk";
import { expect, runTests } from "../lib.mjs";

const CFG = JSON.parse(readFileSync(process.argv[2], "utf8"));

const posts = [];
const realFetch = globalThis.fetch;
globalThis.fetch = async (input, init = {}) => {
  if ((init.method || "GET").toUpperCase() === "POST") {
    posts.push({ url: String(input), headers: new Headers(init.headers), body: JSON.parse(init.body) });
  }
  return realFetch(input, init);
};


// JSON with sorted keys, to compare values whatever their key order.
function canonical(v) {
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  if (v && typeof v === "object") {
    return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`).join(",")}}`;
  }
  return JSON.stringify(v);
}

function part($case, value) {
  return { content: { $case, value }, metadata: undefined, filename: "", mediaType: "" };
}

function request(parts) {
  return {
    tenant: "",
    message: { messageId: randomUUID(), contextId: "", taskId: "", role: Role.ROLE_USER, parts,
      metadata: undefined, extensions: [], referenceTaskIds: [] },
    configuration: undefined,
    metadata: undefined,
  };
}

const VALUE = { over: "tls", from: "@a2a-js/sdk 1.3.0", n: [1, 2.5, null, true] };
const echoInvocation = () => ({ agent_id: "echo.wire", input: { schema_class: "Echo", value: VALUE } });

async function send(base, parts) {
  const card = await (await realFetch(`${base}/.well-known/agent-card.json`)).json();
  const client = await new ClientFactory().createFromUrl(base);
  posts.length = 0;
  const task = await client.sendMessage(request(parts));
  expect(posts.length === 1, `expected one POST, saw ${posts.length}`);
  const p = posts[0];
  expect(p.url === `${base}/a2a`, `posted to ${p.url}, not ${base}/a2a`);
  expect(p.body.method === "SendMessage" && p.headers.get("a2a-version") === "1.0",
    `sent ${p.body.method} with A2A-Version ${p.headers.get("a2a-version")}`);
  return { card, task };
}

async function testEchoText() {
  const { card, task } = await send(CFG.echo, [part("text", "hello over TLS from node")]);
  const urls = (card.supportedInterfaces || []).map((i) => i.url);
  expect(urls.length > 0 && urls.every((u) => u.startsWith("https://")), `card interfaces ${urls}`);
  expect(task.status?.state === TaskState.TASK_STATE_COMPLETED, `task state ${task.status?.state}`);
  const texts = (task.status.message?.parts || []).filter((p) => p.content?.$case === "text").map((p) => p.content.value);
  expect(canonical(texts) === canonical(["hello over TLS from node"]), `echoed ${JSON.stringify(texts)}`);
}

async function testEchoInvocation() {
  const { task } = await send(CFG.echo, [part("data", echoInvocation())]);
  expect(task.status?.state === TaskState.TASK_STATE_COMPLETED, `task state ${task.status?.state}`);
  const arts = task.artifacts || [];
  expect(arts.length === 1 && arts[0].name === "agent-result", `artifacts ${JSON.stringify(arts.map((a) => a.name))}`);
  const result = arts[0].parts[0].content.value.result;
  expect(result.outcome.status === "succeeded", `outcome ${JSON.stringify(result.outcome)}`);
  expect(canonical(result.payload.value) === canonical(VALUE), `payload ${JSON.stringify(result.payload)}`);
}

function envelope(task) {
  expect(task.status?.state === TaskState.TASK_STATE_COMPLETED,
    `task state ${task.status?.state}: ${JSON.stringify(task.status?.message?.parts ?? null).slice(0, 400)}`);
  const arts = task.artifacts || [];
  expect(arts.length === 1 && arts[0].name === "envelope", `artifacts ${JSON.stringify(arts.map((a) => a.name))}`);
  const env = arts[0].parts[0].content.value;
  expect(env.outcome.status === "succeeded", `outcome ${JSON.stringify(env.outcome)}`);
  return env;
}

async function testHarnessEcho() {
  const { task } = await send(CFG.harness, [part("data", echoInvocation())]);
  const env = envelope(task);
  expect(canonical(env.payload.value) === canonical(VALUE), `payload ${JSON.stringify(env.payload)}`);
}

async function testHarnessPy() {
  const text = "node, over TLS, to uvicorn";
  const { task } = await send(CFG.harness,
    [part("data", { agent_id: "py.chat", input: { schema_class: "Message", message_text: text } })]);
  const env = envelope(task);
  expect(env.payload.reply_text === `Python heard: ${text}`, `payload ${JSON.stringify(env.payload).slice(0, 300)}`);
}

async function testWithoutExtraCa() {
  const env = { ...process.env };
  delete env.NODE_EXTRA_CA_CERTS;
  const code = `fetch(${JSON.stringify(`${CFG.echo}/.well-known/agent-card.json`)})
    .then((r) => { console.log("answered " + r.status); process.exit(0); })
    .catch((e) => { console.log("refused " + (e.cause?.code || e.cause?.message || e.message)); process.exit(3); });`;
  const child = spawnSync(process.execPath, ["--input-type=module", "-e", code], { env, encoding: "utf8", timeout: 20000 });
  const out = `${child.stdout}${child.stderr}`.trim();
  expect(child.status === 3, `a node without the CA: exit ${child.status}: ${out}`);
  expect(/CERT|certificate|UNABLE_TO_VERIFY|SELF_SIGNED/i.test(out), `refused, but not for the certificate: ${out}`);
  console.log(`without NODE_EXTRA_CA_CERTS: ${out}`);
}

await runTests([
  ["js/agent-echo/send-text", testEchoText],
  ["js/agent-echo/send-invocation", testEchoInvocation],
  ["js/harness/echo-behind-mtls", testHarnessEcho],
  ["js/harness/py-agent", testHarnessPy],
  ["js/without-extra-ca-refused", testWithoutExtraCa],
]);
