/**
 * @a2a-js/sdk 1.3.0 client (A2A 1.0, the default `ClientFactory`) -> `ddwire relay` -> the
 * harness (`ddwire serve`, peer "dd"): two turns in one context.
 *
 * Usage: node relay/relay_js.mjs RELAY_URL HARNESS_URL   (run from tests/interop)
 *
 * Test (one PASS/FAIL line):
 * - js-client/two-turns-in-one-context-to-the-harness: turn two names turn one's contextId and
 *   no taskId (A2A 1.0 §3.4.3; checked on the wire): the harness behind the relay starts a new
 *   task in that context; both envelopes carry it as their conversation_id, and the harness's
 *   conversation lists both runs, the first before the second (the history turn two sees).
 * The caller names itself as the relay's hub peer "ddecho" (`X-Agent-Id`, added by wrapping
 * `fetch`), which the relay's star topology lets call the leaf "dd".
 */
import { randomUUID } from "node:crypto";
import { ClientFactory } from "@a2a-js/sdk/client";
import { Role, TaskState } from "@a2a-js/sdk";
import { expect, runTests } from "../lib.mjs";

const RELAY = process.argv[2].replace(/\/+$/, "");
const HARNESS = process.argv[3].replace(/\/+$/, "");

const posts = [];
const realFetch = globalThis.fetch;
globalThis.fetch = async (input, init = {}) => {
  const headers = new Headers(init.headers);
  headers.set("X-Agent-Id", "ddecho");
  if ((init.method || "GET").toUpperCase() === "POST") {
    posts.push({ url: String(input), headers, body: JSON.parse(init.body) });
  }
  return realFetch(input, { ...init, headers });
};


function turn(contextId) {
  const doc = { agent_id: "hello.world", input: { schema_class: "Message", message_text: "hi from @a2a-js/sdk" } };
  return {
    tenant: "",
    message: { messageId: randomUUID(), contextId: contextId || "", taskId: "", role: Role.ROLE_USER,
      parts: [{ content: { $case: "data", value: doc }, metadata: undefined, filename: "", mediaType: "" }],
      metadata: undefined, extensions: [], referenceTaskIds: [] },
    configuration: undefined,
    metadata: undefined,
  };
}

function envelope(task) {
  const arts = (task.artifacts || []).filter((a) => a.name === "envelope");
  expect(arts.length === 1, `artifacts ${JSON.stringify((task.artifacts || []).map((a) => a.name))}`);
  return arts[0].parts[0].content.value;
}

async function testTwoTurns() {
  // The trailing slash: the SDK resolves `.well-known/agent-card.json` against the URL as a
  // browser resolves a relative link, so without it the card is looked for under /peers/.
  const client = await new ClientFactory().createFromUrl(`${RELAY}/peers/dd/`);
  const first = await client.sendMessage(turn());
  const context = first.contextId;
  expect(context, "turn one has no contextId");
  posts.length = 0;
  const second = await client.sendMessage(turn(context));
  const sent = posts.at(-1);
  expect(sent.url.startsWith(`${RELAY}/peers/dd`), `turn two went to ${sent.url}`);
  expect(sent.body.method === "SendMessage", `method ${sent.body.method}`);
  expect(sent.body.params.message.contextId === context && !sent.body.params.message.taskId,
    `sent ${JSON.stringify(sent.body.params.message).slice(0, 300)}`);
  expect(second.id !== first.id && second.contextId === context,
    `turn two ${second.id} in ${second.contextId}, turn one ${first.id} in ${context}`);
  const ids = [];
  for (const task of [first, second]) {
    expect(task.status.state === TaskState.TASK_STATE_COMPLETED, `${task.id}: state ${task.status.state}`);
    const env = envelope(task);
    expect(env.conversation_id === context, `${task.id}: conversation_id ${env.conversation_id} != ${context}`);
    ids.push(env.invocation_id);
  }
  const conversation = await (await realFetch(`${HARNESS}/conversations/${context}`)).json();
  const listed = (conversation.runs || []).map((r) => r.invocation_id);
  expect(listed.length === 2 && listed.includes(ids[0]) && listed.includes(ids[1]),
    `the harness's conversation lists ${JSON.stringify(listed)}, not ${JSON.stringify(ids)}`);
}

await runTests([["js-client/two-turns-in-one-context-to-the-harness", testTwoTurns]]);
