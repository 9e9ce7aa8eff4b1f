/**
 * `ddwire serve`'s GET /viewer in Debian's Chromium, driven by playwright-core.
 *
 * Usage: node viewer/viewer_test.mjs HARNESS_URL RUNS_JSON OUT_DIR CHROMIUM [TOKENS_HARNESS_URL]
 *        (run from tests/interop)
 *
 * RUNS_JSON maps each demo case (success, abstention, refusal, not-accepted, withheld,
 * agent-error, delegation) to the invocation id the harness made for it. Tests (one PASS/FAIL
 * line each):
 * - self-contained: the page and everything it loads come from the harness's origin; it is
 *   served with a Content-Security-Policy naming its script by hash; no console errors and no
 *   failed request.
 * - runs-list: the list shows every run the store holds, newest first; the agent filter narrows
 *   it to one run; with a page size of 3 the `Link: rel="next"` cursor leads to a second page
 *   of other runs, and "First page" back.
 * - start-order: every run's waterfall draws one row per stored span, in start order.
 * - span-detail: clicking a span shows its attributes and events (the chat span's model and
 *   tokens; the root's input hash and stage events).
 * - withheld: the withheld run is marked (summary and root row), its grounding report names R2;
 *   the successful run carries no marker.
 * - delegation: clicking the parent's delegate span opens the child run, and the child's
 *   "Delegated by" link leads back to the parent.
 * - live-invocation: the form starts hello.world over POST /agui; the events arrive in order
 *   (RUN_STARTED, step pairs, RUN_FINISHED), and the finished run is shown with its waterfall.
 * - tokens (with TOKENS_HARNESS_URL, a harness over the same store started with --tokens): the
 *   runs list asks for a token; another principal's token lists none of the operator's runs;
 *   the operator's token (typed into the header's Token field, kept in sessionStorage) lists
 *   them all, opens one, and starts a live invocation.
 * Screenshots: OUT_DIR/viewer-runs.png, viewer-delegation.png, viewer-withheld.png and
 * viewer-live.png (each printed as a `SCREENSHOT <path>` line).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { expect, finish, launchChromium, test } from "../lib.mjs";

const BASE = process.argv[2].replace(/\/+$/, "");
const RUNS = JSON.parse(readFileSync(process.argv[3], "utf8"));
const OUT = process.argv[4];
const CHROMIUM = process.argv[5] || "/usr/bin/chromium";
const VIEWER = `${BASE}/viewer`;
const TOKENS_BASE = (process.argv[6] || "").replace(/\/+$/, "");

const browser = await launchChromium(chromium, CHROMIUM);
const context = browser.context;
const page = context.pages()[0] || await context.newPage();
page.setDefaultTimeout(20000);
const requests = [];
const consoleErrors = [];
const failedRequests = [];
page.on("request", r => requests.push(r.url()));
page.on("requestfailed", r => failedRequests.push(`${r.url()}: ${r.failure() && r.failure().errorText}`));
page.on("console", m => { if (m.type() === "error") consoleErrors.push(m.text()); });
page.on("pageerror", e => consoleErrors.push(String(e)));

/** Go to a view and wait until the page has rendered it (again, if it is the view shown). */
async function open(hash) {
  if (page.url().startsWith(VIEWER)) {
    await page.evaluate(h => {
      document.body.dataset.ready = "";
      if (location.hash === h) window.dispatchEvent(new HashChangeEvent("hashchange"));
      else location.hash = h;
    }, hash);
  } else {
    await page.goto(`${VIEWER}${hash}`);
  }
  await page.waitForFunction(h => document.body.dataset.ready === h, hash || "#/");
}

/** No "null" or "undefined" leaked into what `selector` shows. */
async function clean(selector) {
  const texts = await page.$$eval(selector, els => els.map(e => e.innerText ?? e.textContent));
  for (const t of texts) expect(!/\b(null|undefined|NaN)\b/.test(t), `${selector} shows: ${t.slice(0, 200)}`);
}

async function spanLines(id) {
  const text = await (await fetch(`${BASE}/runs/${id}/spans`)).text();
  return text.split("\n").filter(l => l.trim()).length;
}

await test("self-contained", async () => {
  const response = await page.goto(VIEWER);
  expect(response.status() === 200, `GET /viewer answered ${response.status()}`);
  const policy = response.headers()["content-security-policy"] || "";
  expect(/script-src 'sha256-[A-Za-z0-9+/=]+'/.test(policy), `no script hash in the policy: ${policy}`);
  await page.waitForFunction(() => document.body.dataset.ready === "#/");
  await page.waitForSelector("#runs tr.run-row");
  const origin = new URL(BASE).origin;
  const foreign = requests.filter(u => !u.startsWith(origin));
  expect(foreign.length === 0, `requests outside the harness: ${foreign.join(", ")}`);
  expect(consoleErrors.length === 0, `console errors: ${consoleErrors.join(" | ")}`);
  expect(failedRequests.length === 0, `failed requests: ${failedRequests.join(" | ")}`);
});

await test("runs-list", async () => {
  await open("#/");
  const ids = await page.$$eval("#runs tr.run-row", rows => rows.map(r => r.dataset.invocationId));
  const expected = Object.values(RUNS);
  for (const id of expected) expect(ids.includes(id), `run ${id} is not listed`);
  expect(ids.length === expected.length + 1, `expected the 7 runs and the delegated child, got ${ids.length}`);
  expect(ids[0] === (await (await fetch(`${BASE}/runs?limit=1`)).json())[0].invocation_id, "not newest first");
  await page.fill("#filters input[name=agent]", "demo.ungrounded");
  await page.evaluate(() => { document.body.dataset.ready = ""; });
  await page.click("#filters button[type=submit]");
  await page.waitForFunction(() => document.body.dataset.ready.includes("agent=demo.ungrounded"));
  const filtered = await page.$$eval("#runs tr.run-row", rows => rows.map(r => r.dataset.invocationId));
  expect(filtered.length === 1 && filtered[0] === RUNS.withheld, `the agent filter gave ${filtered}`);
  await open("#/?limit=3");
  const first = await page.$$eval("#runs tr.run-row", rows => rows.map(r => r.dataset.invocationId));
  expect(first.length === 3, `page 1 has ${first.length} rows`);
  await page.evaluate(() => { document.body.dataset.ready = ""; });
  await page.click("#next-page");
  await page.waitForFunction(() => document.body.dataset.ready.includes("after="));
  const second = await page.$$eval("#runs tr.run-row", rows => rows.map(r => r.dataset.invocationId));
  expect(second.length === 3 && second.every(id => !first.includes(id)), `page 2: ${second}`);
  expect(second[0] === ids[3], "page 2 does not continue where page 1 ended");
  await page.evaluate(() => { document.body.dataset.ready = ""; });
  await page.click("#first-page");
  await page.waitForFunction(() => document.body.dataset.ready === "#/?limit=3");
  const again = await page.$$eval("#runs tr.run-row", rows => rows.map(r => r.dataset.invocationId));
  expect(again.join() === first.join(), "first page differs");
  await open("#/");
  await clean("#filters, #runs, .pager");
  await page.screenshot({ path: join(OUT, "viewer-runs.png"), fullPage: true });
  console.log(`SCREENSHOT ${join(OUT, "viewer-runs.png")}`);
});

await test("start-order", async () => {
  for (const [name, id] of Object.entries(RUNS)) {
    await open(`#/run/${id}`);
    await page.waitForSelector(`.run-view[data-invocation-id="${id}"]`);
    await clean("dl.summary, #waterfall, #grounding-report");
    const rows = await page.$$eval("#waterfall g.span-row", gs => gs.map(g => Number(g.dataset.startUs)));
    expect(rows.length === await spanLines(id), `${name}: ${rows.length} rows for ${await spanLines(id)} spans`);
    expect(rows.length > 0, `${name}: no rows`);
    for (let i = 1; i < rows.length; i++) expect(rows[i - 1] <= rows[i], `${name}: row ${i} starts before row ${i - 1}`);
  }
});

/**
 * Click a span's bar near its top edge: the span's event marks sit on the bar's middle line,
 * and a click there lands on a mark (which selects the span too, but is not the bar).
 */
async function clickBar(name) {
  const bar = await page.waitForSelector(`#waterfall g.span-row[data-name="${name}"] rect.bar`);
  const box = await bar.boundingBox();
  await bar.click({ position: { x: box.width / 2, y: 2 } });
}

await test("span-detail", async () => {
  await open(`#/run/${RUNS.success}`);
  await clickBar("chat");
  const detail = await page.waitForSelector("#span-detail");
  const text = await detail.textContent();
  expect(text.includes("dd.model_id") && text.includes("dd.input_tokens"), `chat detail: ${text}`);
  await clickBar("invoke_agent");
  await page.waitForFunction(() => (document.querySelector("#span-detail") || {}).textContent.includes("policy_gate"));
  const root = await page.textContent("#span-detail");
  expect(root.includes("dd.input_hash") && root.includes("agent_call"), `root detail: ${root}`);
});

await test("withheld", async () => {
  await open(`#/run/${RUNS.withheld}`);
  await page.waitForSelector("#withheld");
  const marker = await page.textContent("#withheld");
  expect(marker.includes("WITHHELD"), `marker: ${marker}`);
  const root = await page.$eval('#waterfall g.span-row[data-name="invoke_agent"]', g => g.dataset.withheld);
  expect(root === "true", "the root span is not marked withheld");
  expect(await page.$('#waterfall .withheld-mark') !== null, "no withheld mark drawn in the waterfall");
  const report = await page.textContent("#grounding-report");
  expect(report.includes("Failed") && report.includes("R2:"), `grounding report: ${report}`);
  const problem = await page.textContent("#problem");
  expect(problem.includes("grounding-violation"), `problem: ${problem}`);
  await page.screenshot({ path: join(OUT, "viewer-withheld.png"), fullPage: true });
  console.log(`SCREENSHOT ${join(OUT, "viewer-withheld.png")}`);
  await open(`#/run/${RUNS.success}`);
  expect(await page.$("#withheld") === null, "a successful run is marked withheld");
  expect(await page.$('#waterfall g.span-row[data-withheld="true"]') === null, "a successful run has withheld rows");
});

await test("delegation", async () => {
  const parent = RUNS.delegation;
  await open(`#/run/${parent}`);
  const link = await page.waitForSelector('#waterfall g.span-row[data-name="delegate"] a.child-link');
  const child = await link.getAttribute("data-child");
  expect(/^[0-9a-f-]{36}$/.test(child || ""), `delegate span names no child: ${child}`);
  const children = await page.$$eval("#children a.child-run", as => as.map(a => a.textContent));
  expect(children.some(t => t.includes(child)), `the summary does not list the child: ${children}`);
  await page.screenshot({ path: join(OUT, "viewer-delegation.png"), fullPage: true });
  console.log(`SCREENSHOT ${join(OUT, "viewer-delegation.png")}`);
  await link.click();
  await page.waitForSelector(`.run-view[data-invocation-id="${child}"]`);
  expect(page.url().endsWith(`#/run/${child}`), `after the click: ${page.url()}`);
  const agent = await (await fetch(`${BASE}/runs/${child}`)).json();
  expect(agent.parent_invocation_id === parent, "the child's envelope does not name its parent");
  const root = await page.$eval('#waterfall g.span-row[data-name="invoke_agent"]', g => g.dataset.depth);
  expect(root === "0", "the child's root is not a root");
  await page.click("#parent-link");
  await page.waitForSelector(`.run-view[data-invocation-id="${parent}"]`);
  expect(page.url().endsWith(`#/run/${parent}`), `back: ${page.url()}`);
});

await test("live-invocation", async () => {
  await open("#/new");
  await page.selectOption("#agent", "hello.world");
  await page.fill("#input", JSON.stringify({ schema_class: "Message", message_text: "Live from Chromium" }));
  await page.click("#start");
  await page.waitForSelector('#events li[data-type="RUN_FINISHED"], #events li[data-type="RUN_ERROR"]');
  const types = await page.$$eval("#events li", lis => lis.map(li => li.dataset.type));
  expect(types[0] === "RUN_STARTED", `first event ${types[0]}`);
  expect(types[types.length - 1] === "RUN_FINISHED", `last event ${types[types.length - 1]}: ${types}`);
  const steps = types.filter(t => t === "STEP_STARTED").length;
  expect(steps === 4 && types.filter(t => t === "STEP_FINISHED").length === 4, `steps: ${types}`);
  const view = await page.waitForSelector("#result .run-view");
  await clean("#main");
  const id = await view.getAttribute("data-invocation-id");
  const rows = await page.$$eval("#result #waterfall g.span-row", gs => gs.length);
  expect(rows === await spanLines(id), `the finished run shows ${rows} rows`);
  const outcome = await page.textContent("#result #outcome");
  expect(outcome.includes("succeeded"), `outcome: ${outcome}`);
  const stored = await (await fetch(`${BASE}/runs/${id}`)).json();
  expect(stored.input_schema && stored.outcome.status === "succeeded", "the run is not stored");
  await page.screenshot({ path: join(OUT, "viewer-live.png"), fullPage: true });
  console.log(`SCREENSHOT ${join(OUT, "viewer-live.png")}`);
  expect(consoleErrors.length === 0, `console errors: ${consoleErrors.join(" | ")}`);
});

if (TOKENS_BASE) await test("tokens", async () => {
  // A page of its own: its 401s are expected console errors, and its origin (another port)
  // has its own sessionStorage.
  const tab = await context.newPage();
  const ready = async (hash, change) => {
    await tab.evaluate(() => { document.body.dataset.ready = ""; });
    await change();
    await tab.waitForFunction(h => document.body.dataset.ready === h, hash);
  };
  await tab.goto(`${TOKENS_BASE}/viewer#/`);
  await tab.waitForFunction(() => document.body.dataset.ready === "#/");
  const asked = await tab.textContent("#status");
  expect(asked.includes("token"), `without a token the page says: ${asked}`);
  expect(await tab.$$eval("#runs tr.run-row", rows => rows.length) === 0, "runs shown without a token");
  const type = async token => ready("#/", async () => {
    await tab.fill("#token", token);
    // Leaving the field is what fires its change (the page reads the token then); a field left
  // focused would fire it again at the next click elsewhere, re-rendering the page under it.
  await tab.locator("#token").blur();
  });
  await type("viewer-other-token");
  const others = await tab.$$eval("#runs tr.run-row", rows => rows.length);
  expect(others === 0, `another principal's token lists ${others} of the operator's runs`);
  await type("viewer-operator-token");
  const mine = await tab.$$eval("#runs tr.run-row", rows => rows.length);
  expect(mine >= Object.keys(RUNS).length, `the operator's token lists ${mine} runs`);
  expect(await tab.evaluate(() => sessionStorage.getItem("ddwire-token")) === "viewer-operator-token",
    "the token is not kept for the tab");
  await ready(`#/run/${RUNS.success}`, () => tab.evaluate(h => { location.hash = h; }, `#/run/${RUNS.success}`));
  await tab.waitForSelector(`.run-view[data-invocation-id="${RUNS.success}"]`);
  await ready("#/new", () => tab.evaluate(() => { location.hash = "#/new"; }));
  await tab.selectOption("#agent", "hello.world");
  await tab.fill("#input", JSON.stringify({ schema_class: "Message", message_text: "Live, with a token" }));
  await tab.click("#start");
  await tab.waitForSelector('#events li[data-type="RUN_FINISHED"], #events li[data-type="RUN_ERROR"]');
  const last = await tab.$$eval("#events li", lis => lis[lis.length - 1].dataset.type);
  expect(last === "RUN_FINISHED", `the live run ended with ${last}`);
  await tab.waitForSelector("#result .run-view");
  await tab.close();
});

await browser.close();
finish();
