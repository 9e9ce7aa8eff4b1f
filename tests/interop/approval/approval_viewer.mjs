/**
 * A data steward's decisions in `ddwire serve`'s viewer, in Debian's Chromium (playwright-core).
 *
 * Usage: node approval/approval_viewer.mjs HARNESS_URL REFERRED_JSON OUT_DIR CHROMIUM
 *
 * REFERRED_JSON (written by approval_a2a1.py): {"referred", "approved_run", "declined",
 * "open": [three referred runs nobody decided]}. The harness takes tokens; the steward's is
 * `steward-token`, Alice's `alice-token`. Tests (one PASS/FAIL line each):
 * - linked: the referred run shows who approved it and links to the run that carried it out,
 *   which links back; the declined run says who declined it and that the agent was not run.
 * - approve: on an undecided referred run the steward enters a reason and presses Approve: the
 *   viewer opens the new run, succeeded, which links back to the referred one.
 * - decline: the steward presses Decline on another: the run then says it was declined.
 * - not-a-steward: Alice's token is refused at the Approve button, the page says a steward's
 *   token is needed, and the run stays undecided.
 * Screenshots: OUT_DIR/approval-referred.png, approval-approved.png (`SCREENSHOT <path>` lines).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { expect, finish, launchChromium, test } from "../lib.mjs";

const BASE = process.argv[2].replace(/\/+$/, "");
const RUNS = JSON.parse(readFileSync(process.argv[3], "utf8"));
const OUT = process.argv[4];
const CHROMIUM = process.argv[5] || "/usr/bin/chromium";

const browser = await launchChromium(chromium, CHROMIUM);
const context = browser.context;

/** A tab holding `token` (sessionStorage is per tab), on the runs list. */
async function tabWith(token) {
  const tab = await context.newPage();
  tab.setDefaultTimeout(20000);
  await tab.goto(`${BASE}/viewer#/`);
  await tab.waitForFunction(() => document.body.dataset.ready === "#/");
  await tab.evaluate(() => { document.body.dataset.ready = ""; });
  await tab.fill("#token", token);
  // Leaving the field is what fires its change (the page reads the token then); a field left
  // focused would fire it again at the next click elsewhere, re-rendering the page under it.
  await tab.locator("#token").blur();
  await tab.waitForFunction(() => document.body.dataset.ready === "#/");
  return tab;
}

/** Show run `id` in `tab` and wait until it is drawn. */
async function show(tab, id) {
  await tab.evaluate(h => { document.body.dataset.ready = ""; location.hash = h; }, `#/run/${id}`);
  await tab.waitForFunction(h => document.body.dataset.ready === h, `#/run/${id}`);
  await tab.waitForSelector(`.run-view[data-invocation-id="${id}"]`);
}

/** Wait until `tab` shows a run other than `from`; its id. */
async function nextRun(tab, from) {
  await tab.waitForFunction(f => {
    const r = document.body.dataset.ready || "";
    return r.startsWith("#/run/") && r !== f;
  }, `#/run/${from}`);
  return decodeURIComponent((await tab.evaluate(() => document.body.dataset.ready)).slice("#/run/".length));
}

async function api(path, token) {
  const r = await fetch(BASE + path, { headers: { Authorization: `Bearer ${token}` } });
  return { status: r.status, body: await r.json().catch(() => null) };
}

const steward = await tabWith("steward-token");

await test("linked", async () => {
  await show(steward, RUNS.referred);
  const said = await steward.textContent("#decision");
  expect(said.includes("Approved by urn:example:role:data-steward"), `referred run says: ${said}`);
  await steward.screenshot({ path: join(OUT, "approval-referred.png"), fullPage: true });
  console.log(`SCREENSHOT ${join(OUT, "approval-referred.png")}`);
  await steward.evaluate(() => { document.body.dataset.ready = ""; });
  await steward.click("#approved-run-link");
  const opened = await nextRun(steward, RUNS.referred);
  expect(opened === RUNS.approved_run, `the link opened ${opened}, not ${RUNS.approved_run}`);
  await steward.waitForSelector(`.run-view[data-invocation-id="${opened}"]`);
  const back = await steward.textContent("#approval");
  expect(back.includes(`Carries out run ${RUNS.referred}`) && back.includes("approved by"), `approved run says: ${back}`);
  expect((await steward.textContent("#outcome")).includes("succeeded"), "the approved run did not succeed");
  await steward.screenshot({ path: join(OUT, "approval-approved.png"), fullPage: true });
  console.log(`SCREENSHOT ${join(OUT, "approval-approved.png")}`);
  await steward.evaluate(() => { document.body.dataset.ready = ""; });
  await steward.click("#referred-run-link");
  expect(await nextRun(steward, opened) === RUNS.referred, "the back link does not lead to the referred run");
  await show(steward, RUNS.declined);
  const declined = await steward.textContent("#decision");
  expect(declined.includes("Declined by") && declined.includes("not for publication")
    && declined.includes("the agent was not run"), `declined run says: ${declined}`);
});

await test("approve", async () => {
  const id = RUNS.open[1];
  await show(steward, id);
  await steward.fill("#decision-reason", "approved in the viewer");
  await steward.evaluate(() => { document.body.dataset.ready = ""; });
  await steward.click("#approve");
  const made = await nextRun(steward, id);
  await steward.waitForSelector(`.run-view[data-invocation-id="${made}"]`);
  const back = await steward.textContent("#approval");
  expect(back.includes(`Carries out run ${id}`) && back.includes("approved in the viewer"), `new run says: ${back}`);
  const stored = await api(`/runs/${made}`, "alice-token");
  expect(stored.status === 200 && stored.body.outcome.status === "succeeded"
    && stored.body.acting_for.principal_id === "https://orcid.org/0000-0002-1825-0097",
    `the approved run as Alice sees it: ${JSON.stringify(stored).slice(0, 300)}`);
});

await test("decline", async () => {
  const id = RUNS.open[2];
  await show(steward, id);
  await steward.evaluate(() => { document.body.dataset.ready = ""; });
  await steward.click("#decline");
  await steward.waitForFunction(h => document.body.dataset.ready === h, `#/run/${id}`);
  await steward.waitForSelector("#decision");
  const said = await steward.textContent("#decision");
  expect(said.includes("Declined by urn:example:role:data-steward"), `after Decline the run says: ${said}`);
  const record = await api(`/runs/${id}/approval`, "alice-token");
  expect(record.status === 200 && record.body.decision === "declined", `record: ${JSON.stringify(record)}`);
});

await test("not-a-steward", async () => {
  const alice = await tabWith("alice-token");
  const id = RUNS.open[0];
  await show(alice, id);
  await alice.click("#approve");
  await alice.waitForFunction(() => /steward/.test(document.getElementById("status").textContent));
  const said = await alice.textContent("#status");
  expect(said.includes("403") || said.includes("only a data steward"), `status line: ${said}`);
  const record = await api(`/runs/${id}/approval`, "alice-token");
  expect(record.status === 404, `the run was decided: ${JSON.stringify(record)}`);
  await alice.close();
});

await browser.close();
finish();
