/**
 * What every node program of the interop suites shares (lib.sh's contract, for JavaScript): one
 * assertion, one test runner printing a `PASS <name>` or `FAIL <name>: <reason>` line per test,
 * and one way to start Debian's Chromium for playwright-core.
 *
 * A failure outside the tests (a browser that does not start, above all) still ends in one
 * `FAIL setup: …` line that says why, so a CI log shows the cause rather than only node's exit.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export function expect(cond, reason) {
  if (!cond) throw new Error(reason);
}

let failures = 0;

/** Run one test now: a PASS or FAIL line on stdout, the stack on stderr. */
export async function test(name, body) {
  try {
    await body();
    console.log(`PASS ${name}`);
  } catch (e) {
    failures += 1;
    console.log(`FAIL ${name}: ${String(e?.message ?? e).replace(/\s+/g, " ").slice(0, 600)}`);
    console.error(e);
  }
}

/** Run `[name, fn]` pairs in order (each name after `prefix`), then exit 1 if any failed. */
export async function runTests(tests, prefix = "") {
  for (const [name, fn] of tests) await test(prefix + name, fn);
  finish();
}

/** Exit: 1 if any test failed, else 0. */
export function finish() {
  process.exit(failures ? 1 : 0);
}

process.on("uncaughtException", e => {
  console.log(`FAIL setup: ${String(e?.message ?? e).split("\n")[0]}`);
  console.error(e);
  process.exit(1);
});

/**
 * Start Chromium at `executablePath` headless in a fresh profile, trying three times: on a freshly
 * installed machine the first start also builds the font cache and can lose a race with it. The
 * last error is thrown, whole. `close()` ends the browser and removes the profile.
 */
export async function launchChromium(chromium, executablePath) {
  const profile = mkdtempSync(join(tmpdir(), "ddwire-interop-chromium-"));
  const options = {
    executablePath,
    headless: true,
    // --disable-dev-shm-usage: containers often give /dev/shm 64 MiB, too little for a renderer.
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-dev-shm-usage", "--disable-crash-reporter", "--disable-background-networking",
      "--disable-component-update", "--disable-sync"],
    viewport: { width: 1400, height: 900 },
    timeout: 120000,
  };
  let last;
  for (let attempt = 1; attempt <= 3; attempt++) {
    try {
      const context = await chromium.launchPersistentContext(profile, options);
      return {
        context,
        close: async () => {
          await context.close();
          rmSync(profile, { recursive: true, force: true });
        },
      };
    } catch (e) {
      last = e;
      console.error(`launch attempt ${attempt} failed: ${e?.message || e}`);
      await new Promise(r => setTimeout(r, 2000));
    }
  }
  throw last;
}
