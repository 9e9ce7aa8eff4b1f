/**
 * @a2a-js/sdk 1.3.0 client (A2A 1.0, the default `ClientFactory`) -> ddwire's harness:
 * send non-blocking, get, cancel, list.
 *
 * Usage: node tasks_js.mjs CONFIG.json      (run from tests/interop, after `npm ci` there)
 * CONFIG: {"harness", "ada", "grace", "delay_s"} (written by suite.sh).
 *
 * Tests (one PASS/FAIL line each):
 * - js-client/send-non-blocking: `sendMessage` with `configuration.returnImmediately: true`
 *   (checked on the wire: `SendMessage`, `A2A-Version: 1.0`) returns at once the Task
 *   `TASK_STATE_SUBMITTED`, named after the request's invocation_id.
 * - js-client/get-progress: `getTask` shows it `TASK_STATE_WORKING`, later
 *   `TASK_STATE_COMPLETED` with an `envelope` artifact whose outcome is succeeded.
 * - js-client/cancel: `cancelTask` of a running task gives it back `TASK_STATE_CANCELED`;
 *   once stored, its envelope is failed / agent-error `echo.wire: Canceled: …`; a second
 *   `cancelTask` is refused.
 * - js-client/list: `listTasks` pages (pageSize 2, pageToken) through the caller's tasks, newest
 *   first, `totalSize` the count, every task above among them; `status` (as the SDK's enum
 *   number) selects the canceled one; `historyLength: 0` leaves history out.
 * - js-client/second-turn-in-context: turn two names turn one's contextId and no taskId
 *   (A2A 1.0 §3.4.3): a new task in that context; both envelopes carry it as conversation_id.
 * Every POST carries the caller's bearer token (added by wrapping `fetch`).
 */
import { randomBytes, randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { ClientFactory } from "@a2a-js/sdk/client";
import { Role, TaskState } from "@a2a-js/sdk";
import { expect, runTests } from "../lib.mjs";

const CFG = JSON.parse(readFileSync(process.argv[2], "utf8"));
const BASE = CFG.harness.replace(/\/+$/, "");

const posts = [];
const realFetch = globalThis.fetch;
globalThis.fetch = async (input, init = {}) => {
  const headers = new Headers(init.headers);
  headers.set("Authorization", `Bearer ${CFG.ada}`);
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

function echoRequest() {
  return { agent_id: "echo.wire", invocation_id: uuid7(),
    input: { schema_class: "Echo", value: { from: "@a2a-js/sdk 1.3.0" } } };
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

function envelope(task) {
  const arts = (task.artifacts || []).filter((a) => a.name === "envelope");
  expect(arts.length === 1, `artifacts ${JSON.stringify((task.artifacts || []).map((a) => a.name))}`);
  return arts[0].parts[0].content.value;
}

async function waitFor(client, id, state, seconds = 30) {
  const until = Date.now() + seconds * 1000;
  for (;;) {
    const task = await client.getTask({ tenant: "", id, historyLength: undefined });
    if (task.status?.state === state) return task;
    expect(Date.now() < until, `task ${id} is ${task.status?.state}, never ${state}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const client = await new ClientFactory().createFromUrl(BASE);
const seen = {};

async function testSendNonBlocking() {
  const doc = echoRequest();
  posts.length = 0;
  const task = await client.sendMessage(request(doc, nonBlocking));
  const p = posts.at(-1);
  expect(p.body.method === "SendMessage" && p.headers.get("a2a-version") === "1.0",
    `sent ${p.body.method} with A2A-Version ${p.headers.get("a2a-version")}`);
  expect(p.body.params.configuration?.returnImmediately === true,
    `configuration ${JSON.stringify(p.body.params.configuration)}`);
  expect(task.id === doc.invocation_id, `task id ${task.id} != invocation_id`);
  expect(task.status?.state === TaskState.TASK_STATE_SUBMITTED, `the answer is ${task.status?.state}`);
  seen.nb = task.id;
}

async function testGetProgress() {
  expect(seen.nb, "no task from send-non-blocking");
  await waitFor(client, seen.nb, TaskState.TASK_STATE_WORKING);
  const done = await waitFor(client, seen.nb, TaskState.TASK_STATE_COMPLETED);
  expect(envelope(done).outcome.status === "succeeded", `outcome ${JSON.stringify(envelope(done).outcome)}`);
}

async function testCancel() {
  const task = await client.sendMessage(request(echoRequest(), nonBlocking));
  await waitFor(client, task.id, TaskState.TASK_STATE_WORKING);
  const canceled = await client.cancelTask({ tenant: "", id: task.id, metadata: undefined });
  expect(canceled.status?.state === TaskState.TASK_STATE_CANCELED, `cancel gave ${canceled.status?.state}`);
  const until = Date.now() + 20000;
  let got;
  for (;;) {
    got = await client.getTask({ tenant: "", id: task.id, historyLength: undefined });
    if ((got.artifacts || []).some((a) => a.name === "envelope")) break;
    expect(Date.now() < until, "the canceled run was never stored");
    await new Promise((r) => setTimeout(r, 50));
  }
  expect(got.status?.state === TaskState.TASK_STATE_CANCELED, `stored as ${got.status?.state}`);
  const env = envelope(got);
  expect(env.outcome.status === "failed" && env.problem.detail.startsWith("echo.wire: Canceled: "),
    `envelope ${JSON.stringify(env).slice(0, 300)}`);
  let refused = false;
  try {
    await client.cancelTask({ tenant: "", id: task.id, metadata: undefined });
  } catch (e) {
    refused = true;
  }
  expect(refused, "a second cancel succeeded");
  seen.canceled = task.id;
}

async function testList() {
  const ids = [];
  let token = "";
  let total;
  for (;;) {
    const page = await client.listTasks({ tenant: "", contextId: "", status: 0, pageSize: 2, pageToken: token,
      historyLength: 0, statusTimestampAfter: undefined, includeArtifacts: false });
    expect(page.pageSize === 2, `pageSize ${page.pageSize}`);
    total ??= page.totalSize;
    expect(page.totalSize === total, "totalSize changed between pages");
    for (const t of page.tasks) {
      expect(!t.history?.length, `historyLength 0 shows history on ${t.id}`);
      ids.push(t.id);
    }
    token = page.nextPageToken;
    if (!token) break;
    expect(ids.length < 100, "paging does not end");
  }
  expect(ids.length === total && new Set(ids).size === ids.length, `saw ${ids.length} of ${total}`);
  for (const key of ["nb", "canceled"]) expect(ids.includes(seen[key]), `the ${key} task is not listed`);
  expect(ids.indexOf(seen.canceled) < ids.indexOf(seen.nb), "not newest first");
  const canceled = await client.listTasks({ tenant: "", contextId: "", status: TaskState.TASK_STATE_CANCELED,
    pageSize: 50, pageToken: "", historyLength: undefined, statusTimestampAfter: undefined, includeArtifacts: false });
  expect(canceled.tasks.some((t) => t.id === seen.canceled), "the status filter misses the canceled task");
  expect(canceled.tasks.every((t) => t.status?.state === TaskState.TASK_STATE_CANCELED),
    "the status filter let another state through");
}

// A2A 1.0 §3.4.3: turn two sends turn one's contextId and no taskId; it is a new task in that
// context, and both runs carry the context as their conversation_id.
async function testSecondTurnInContext() {
  const first = await client.sendMessage(request(echoRequest(), nonBlocking));
  const context = first.contextId;
  expect(context, "turn one has no contextId");
  const second2 = request(echoRequest(), nonBlocking);
  second2.message.contextId = context;
  posts.length = 0;
  const second = await client.sendMessage(second2);
  const sent = posts.at(-1).body.params.message;
  expect(sent.contextId === context && !sent.taskId, `sent ${JSON.stringify(sent).slice(0, 300)}`);
  expect(second.id !== first.id && second.contextId === context,
    `turn two ${second.id} in ${second.contextId}, turn one ${first.id} in ${context}`);
  for (const id of [first.id, second.id]) {
    const done = await waitFor(client, id, TaskState.TASK_STATE_COMPLETED);
    expect(envelope(done).conversation_id === context,
      `${id}: conversation_id ${envelope(done).conversation_id} != ${context}`);
  }
}

await runTests([
  ["js-client/send-non-blocking", testSendNonBlocking],
  ["js-client/get-progress", testGetProgress],
  ["js-client/cancel", testCancel],
  ["js-client/list", testList],
  ["js-client/second-turn-in-context", testSecondTurnInContext],
]);
