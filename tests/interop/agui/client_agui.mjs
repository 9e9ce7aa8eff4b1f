/**
 * @ag-ui/client 1.0.0 -> ddwire's harness (`ddwire serve`): POST /agui and GET /agui/runs/{id}.
 *
 * Usage: node agui/client_agui.mjs HARNESS_BASE_URL OUT_DIR [CONTROL_URL]    (run from tests/interop)
 *
 * Tests (one PASS/FAIL line each):
 * - live: `HttpAgent({url: <base>/agui})`, `runAgent({runId, forwardedProps: {request}})` with an
 *   InvocationRequest for hello.world (non-ASCII text). The run resolves with `result` = the
 *   envelope (outcome succeeded, requires_human_review true, deep-equal to GET /runs/{id}); the
 *   events the agent's subscribers see are RUN_STARTED (the sent threadId and runId), then
 *   STEP_STARTED/STEP_FINISHED pairs for policy_gate, input_check, agent_call, grounding_check,
 *   then RUN_FINISHED; the client prints no console.warn / console.error (no "Removed
 *   unrecognised material", no null-result deprecation, nothing).
 * - replay: GET <base>/agui/runs/{invocation_id} through the client's own stream pipeline,
 *   `transformHttpEventStream(runHttpRequest(() => fetch(url)))`: the same event types as live,
 *   RUN_STARTED/RUN_FINISHED with runId = invocation_id, the same result; no warnings.
 * - run-error-unknown-agent, run-error-acting-for: HttpAgent runs that the harness refuses (an
 *   agent nobody registered; a request carrying `acting_for`) end without throwing, with exactly
 *   one event, RUN_ERROR, whose message names the cause, and `result` undefined.
 * - thread-is-conversation: an HttpAgent whose threadId is a UUIDv7 runs two turns; both envelopes
 *   carry it as conversation_id, RUN_STARTED/RUN_FINISHED and the replay echo it; a request whose
 *   conversation_id is another conversation than the threadId is exactly one RUN_ERROR.
 * - policy-refused: an agent the profile does not enable (stub.abstain) gives RUN_FINISHED with
 *   the failed envelope (agent-not-permitted) after only the policy_gate and grounding_check
 *   steps; the replay has the same steps and result.
 * - control/warnings-are-caught (with CONTROL_URL, bad_sse.py): a stream with an unknown field
 *   and `result: null` makes the client warn twice, and the capture above sees both.
 * Every response body is saved as it was read (OUT_DIR/<test>.sse) for validate_agui.py, which
 * checks each event against the ag-ui-protocol Python models.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { randomBytes, randomUUID } from "node:crypto";
import { isDeepStrictEqual } from "node:util";
import { HttpAgent, runHttpRequest, transformHttpEventStream } from "@ag-ui/client";
import { expect, runTests } from "../lib.mjs";

const BASE = process.argv[2].replace(/\/+$/, "");
const OUT = process.argv[3];
const CONTROL = process.argv[4]; // optional: bad_sse.py, a stream that must make the client warn
delete process.env.SUPPRESS_TRANSFORMATION_WARNINGS; // it would silence the warnings checked for
mkdirSync(OUT, { recursive: true });

const STEPS = ["policy_gate", "input_check", "agent_call", "grounding_check"];
const LIVE_TYPES = ["RUN_STARTED",
  ...STEPS.flatMap(() => ["STEP_STARTED", "STEP_FINISHED"]), "RUN_FINISHED"];

// Everything the client prints as a warning or an error, per test.
let warnings = [];
for (const level of ["warn", "error"]) {
  const real = console[level];
  console[level] = (...args) => {
    warnings.push(`console.${level}: ${args.map(String).join(" ")}`);
    real(...args);
  };
}


function short(v) {
  return JSON.stringify(v)?.slice(0, 400);
}

// A fetch that keeps the exact body text it hands on to the client (saved as OUT/<name>.sse).
function teeFetch(name, seen) {
  return async (url, init) => {
    const res = await fetch(url, init);
    const text = await res.text();
    seen.status = res.status;
    seen.contentType = res.headers.get("content-type");
    writeFileSync(`${OUT}/${name}.sse`, text);
    return new Response(text, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}

async function getJSON(path) {
  const res = await fetch(BASE + path);
  expect(res.ok, `GET ${path}: HTTP ${res.status}`);
  return res.json();
}

function request(agentId, text, extra = {}) {
  return { agent_id: agentId, input: { schema_class: "Message", message_text: text }, ...extra };
}

async function runHttpAgent(name, req) {
  const seen = {};
  const events = [];
  const agent = new HttpAgent({ url: `${BASE}/agui`, fetch: teeFetch(name, seen) });
  agent.subscribe({ onEvent: ({ event }) => { events.push(event); } });
  const runId = randomUUID();
  const out = await agent.runAgent({ runId, forwardedProps: { request: req } });
  expect(seen.status === 200, `HTTP ${seen.status}`);
  expect(/^text\/event-stream/.test(seen.contentType ?? ""), `content-type ${seen.contentType}`);
  return { out, events, runId, threadId: agent.threadId };
}

let live = null;

async function testLive() {
  const text = "héllo from @ag-ui/client ✓";
  const { out, events, runId, threadId } = await runHttpAgent("live", request("hello.world", text));
  const types = events.map((e) => e.type);
  expect(isDeepStrictEqual(types, LIVE_TYPES), `event types ${short(types)} != ${short(LIVE_TYPES)}`);
  const steps = events.filter((e) => e.type.startsWith("STEP_")).map((e) => e.stepName);
  expect(isDeepStrictEqual(steps, STEPS.flatMap((s) => [s, s])), `step names ${short(steps)}`);
  const [started, finished] = [events[0], events.at(-1)];
  expect(started.threadId === threadId && started.runId === runId,
    `RUN_STARTED ${short(started)} does not echo threadId ${threadId} / runId ${runId}`);
  expect(finished.threadId === threadId && finished.runId === runId,
    `RUN_FINISHED threadId/runId ${finished.threadId}/${finished.runId} != ${threadId}/${runId}`);
  const env = out.result;
  expect(env && typeof env === "object", `runAgent result is ${short(env)}, not the envelope`);
  expect(env.outcome?.status === "succeeded", `outcome ${short(env.outcome)}`);
  expect(env.requires_human_review === true, `requires_human_review ${env.requires_human_review}`);
  expect(env.agent_id === "hello.world", `agent_id ${env.agent_id}`);
  expect(env.payload?.reply_text?.includes(text), `reply_text ${short(env.payload?.reply_text)}`);
  expect(isDeepStrictEqual(finished.result, env), "RUN_FINISHED.result differs from runAgent's result");
  const stored = await getJSON(`/runs/${env.invocation_id}`);
  expect(isDeepStrictEqual(stored, env),
    `the result the client kept differs from the stored envelope (stripped or changed fields?)`);
  live = { types, result: env };
}

async function testReplay() {
  expect(live, "no live run to replay");
  const id = live.result.invocation_id;
  const seen = {};
  const url = `${BASE}/agui/runs/${id}`;
  const tee = teeFetch("replay", seen);
  const events = await new Promise((resolve, reject) => {
    const got = [];
    transformHttpEventStream(runHttpRequest(() => tee(url, { method: "GET" }))).subscribe({
      next: (e) => got.push(e),
      error: reject,
      complete: () => resolve(got),
    });
  });
  expect(seen.status === 200, `HTTP ${seen.status}`);
  const types = events.map((e) => e.type);
  expect(isDeepStrictEqual(types, live.types), `replay event types ${short(types)} != live ${short(live.types)}`);
  const [started, finished] = [events[0], events.at(-1)];
  expect(started.runId === id && finished.runId === id,
    `replay runId ${started.runId}/${finished.runId} != invocation_id ${id}`);
  expect(started.threadId === finished.threadId && typeof started.threadId === "string",
    `replay threadIds ${started.threadId}/${finished.threadId}`);
  expect(isDeepStrictEqual(finished.result, live.result), "the replayed result differs from the live one");
}

async function testRunError(name, req, wantInMessage) {
  let out;
  let events;
  try {
    ({ out, events } = await runHttpAgent(name, req));
  } catch (e) {
    throw new Error(`the client threw: ${e}`);
  }
  const types = events.map((e) => e.type);
  expect(isDeepStrictEqual(types, ["RUN_ERROR"]), `events ${short(types)}, not exactly one RUN_ERROR`);
  const msg = events[0].message;
  expect(typeof msg === "string" && msg.includes(wantInMessage), `RUN_ERROR message ${short(msg)} lacks ${short(wantInMessage)}`);
  expect(out.result === undefined, `result ${short(out.result)} after RUN_ERROR`);
}

// The warning check is only worth something if it sees the client's warnings: a stream with an
// unknown field and `result: null` (bad_sse.py) must produce both of the client's warnings.
async function testControl() {
  const agent = new HttpAgent({ url: CONTROL });
  await agent.runAgent({ runId: "R", forwardedProps: {} });
  const got = warnings.join(" | ");
  expect(/unrecognised material/.test(got) && /RUN_FINISHED\.result: null/.test(got),
    `the client did not warn as expected about bad_sse.py's stream: ${got.slice(0, 400)}`);
  warnings = [];
}

// A UUIDv7 (the contract's conversation and invocation ids): 48-bit ms time, version 7, variant 10.
function uuid7() {
  const b = randomBytes(16);
  const ms = BigInt(Date.now());
  for (let i = 0; i < 6; i++) b[i] = Number((ms >> BigInt(8 * (5 - i))) & 0xffn);
  b[6] = (b[6] & 0x0f) | 0x70;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = b.toString("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

async function replayEvents(id, name) {
  const seen = {};
  const tee = teeFetch(name, seen);
  const events = await new Promise((resolve, reject) => {
    const got = [];
    transformHttpEventStream(runHttpRequest(() => tee(`${BASE}/agui/runs/${id}`, { method: "GET" }))).subscribe({
      next: (e) => got.push(e), error: reject, complete: () => resolve(got),
    });
  });
  expect(seen.status === 200, `replay HTTP ${seen.status}`);
  return events;
}

// The thread is the conversation: an HttpAgent whose threadId is a UUIDv7 runs two turns; both
// envelopes carry it as conversation_id, RUN_STARTED/RUN_FINISHED echo it, the replay's threadId
// is it too. A request naming another conversation than the threadId is one RUN_ERROR.
async function testThreadIsConversation() {
  const thread = uuid7();
  const agent = new HttpAgent({ url: `${BASE}/agui`, threadId: thread, fetch: teeFetch("thread-turn-1", {}) });
  const events = [];
  agent.subscribe({ onEvent: ({ event }) => { events.push(event); } });
  const first = await agent.runAgent({ forwardedProps: { request: request("hello.world", "turn one") } });
  agent.fetch = teeFetch("thread-turn-2", {});
  const second = await agent.runAgent({ forwardedProps: { request: request("hello.world", "turn two") } });
  for (const [i, out] of [first, second].entries()) {
    expect(out.result?.outcome?.status === "succeeded", `turn ${i + 1}: outcome ${short(out.result?.outcome)}`);
    expect(out.result.conversation_id === thread, `turn ${i + 1}: conversation_id ${out.result.conversation_id} != threadId ${thread}`);
  }
  const bounds = events.filter((e) => e.type === "RUN_STARTED" || e.type === "RUN_FINISHED");
  expect(bounds.length === 4 && bounds.every((e) => e.threadId === thread), `RUN_* threadIds ${short(bounds.map((e) => e.threadId))}`);
  const replayed = await replayEvents(second.result.invocation_id, "thread-replay");
  expect(replayed[0].threadId === thread && replayed.at(-1).threadId === thread,
    `replay threadId ${replayed[0].threadId} != ${thread}`);
  const other = await runHttpAgent("run-error-other-conversation",
    request("hello.world", "hi", { conversation_id: uuid7() }));
  expect(isDeepStrictEqual(other.events.map((e) => e.type), ["RUN_ERROR"]),
    `a request naming another conversation than the threadId: events ${short(other.events.map((e) => e.type))}`);
}

// A run the policy refuses (stub.abstain is registered but not in the profile) is still a run:
// RUN_FINISHED with the failed envelope, only the stages that ran, and a replay with the same.
async function testPolicyRefused() {
  const { out, events } = await runHttpAgent("policy-refused", request("stub.abstain", "hi"));
  const env = out.result;
  expect(env?.outcome?.status === "failed" && env.problem?.type?.endsWith("/agent-not-permitted"),
    `outcome ${short(env?.outcome)}, problem ${short(env?.problem)}`);
  const types = events.map((e) => e.stepName ? `${e.type}:${e.stepName}` : e.type);
  const want = ["RUN_STARTED", "STEP_STARTED:policy_gate", "STEP_FINISHED:policy_gate",
    "STEP_STARTED:grounding_check", "STEP_FINISHED:grounding_check", "RUN_FINISHED"];
  expect(isDeepStrictEqual(types, want), `events ${short(types)} != ${short(want)}`);
  const replayed = await replayEvents(env.invocation_id, "policy-refused-replay");
  const rtypes = replayed.map((e) => e.stepName ? `${e.type}:${e.stepName}` : e.type);
  expect(isDeepStrictEqual(rtypes, want), `replay events ${short(rtypes)} != live ${short(want)}`);
  expect(isDeepStrictEqual(replayed.at(-1).result, env), "the replayed result differs from the live one");
}

const tests = [
  ...(CONTROL ? [["control/warnings-are-caught", testControl]] : []),
  ["live", testLive],
  ["replay", testReplay],
  ["run-error-unknown-agent", () => testRunError("run-error-unknown-agent",
    request("no.such-agent", "hi"), "no.such-agent")],
  ["run-error-acting-for", () => testRunError("run-error-acting-for",
    request("hello.world", "hi", { acting_for: { principal_id: "https://example.org/mallory", name: "Mallory" } }),
    "acting_for")],
  ["thread-is-conversation", testThreadIsConversation],
  ["policy-refused", testPolicyRefused],
];

// Every test also fails if the client warned while it ran.
await runTests(tests.map(([name, fn]) => [name, async () => {
  warnings = [];
  await fn();
  expect(warnings.length === 0, `the client warned: ${warnings.join(" | ").slice(0, 500)}`);
}]));
