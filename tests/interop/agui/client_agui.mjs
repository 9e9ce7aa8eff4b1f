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
 * - control/warnings-are-caught (with CONTROL_URL, bad_sse.py): a stream with an unknown field
 *   and `result: null` makes the client warn twice, and the capture above sees both.
 * Every response body is saved as it was read (OUT_DIR/<test>.sse) for validate_agui.py, which
 * checks each event against the ag-ui-protocol Python models.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { randomUUID } from "node:crypto";
import { isDeepStrictEqual } from "node:util";
import { HttpAgent, runHttpRequest, transformHttpEventStream } from "@ag-ui/client";

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

function expect(cond, reason) {
  if (!cond) throw new Error(reason);
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

const tests = [
  ...(CONTROL ? [["control/warnings-are-caught", testControl]] : []),
  ["live", testLive],
  ["replay", testReplay],
  ["run-error-unknown-agent", () => testRunError("run-error-unknown-agent",
    request("no.such-agent", "hi"), "no.such-agent")],
  ["run-error-acting-for", () => testRunError("run-error-acting-for",
    request("hello.world", "hi", { acting_for: { principal_id: "https://example.org/mallory", name: "Mallory" } }),
    "acting_for")],
];

let failed = 0;
for (const [name, fn] of tests) {
  warnings = [];
  try {
    await fn();
    expect(warnings.length === 0, `the client warned: ${warnings.join(" | ").slice(0, 500)}`);
    console.log(`PASS ${name}`);
  } catch (e) {
    failed += 1;
    console.log(`FAIL ${name}: ${String(e.message ?? e).replace(/\s+/g, " ").slice(0, 600)}`);
    console.log(e.stack);
  }
}
process.exit(failed ? 1 : 0);
