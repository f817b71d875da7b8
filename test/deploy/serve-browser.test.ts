/**
 * The browser client: a headless Debian chromium tab opens /client?token=...&demo-client=i&auto=1
 * and, with no clicks, joins rounds of a `fedtensor serve` run beside a `fedtensor client`
 * process, training on onnxruntime-web (wasm). Skipped, saying why, where /usr/bin/chromium is absent.
 */
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { chromium, type BrowserContext } from "playwright-core";
import { readMetrics } from "../../src/lib/run/metrics.js";
import { tempDir } from "../run/temp-dir.js";
import { serverUrl, smallServe, startClient, startProcess, writeTokens, type Process } from "./serve-helpers.js";

const executablePath = "/usr/bin/chromium";
const hasChromium = existsSync(executablePath);
if (!hasChromium) console.log(`serve-browser.test.ts skipped: no ${executablePath} (apt-get install chromium)`);

const started: Process[] = [];
let browser: BrowserContext | undefined;
afterAll(async () => {
  await browser?.close();
  started.forEach((p) => p.child.exitCode === null && p.child.kill("SIGKILL"));
});

describe.skipIf(!hasChromium)("the browser client", () => {
  it("joins rounds from /client with ?token&demo-client&auto=1, on onnxruntime-web", async () => {
    const dir = tempDir("fedtensor-browser-");
    const out = join(dir, "run");
    const { path, tokens } = writeTokens(dir, 2);
    const server = startProcess(smallServe(path, out, "--rounds", "2", "--clients-per-round", "2", "--min-clients", "2", "--round-timeout", "120"));
    started.push(server);
    const url = await serverUrl(server);
    started.push(startClient(url, tokens[0]!, 0, "--exit-when-done"));
    browser = await chromium.launchPersistentContext(mkdtempSync(join(tmpdir(), "fedtensor-chromium-")), {
      executablePath,
      headless: true,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    });
    const page = await browser.newPage();
    const pageErrors: string[] = [];
    page.on("pageerror", (error) => pageErrors.push(error.message));
    const http = url.replace(/^ws/, "http").replace(/\/fedtensor$/, "");
    await page.goto(`${http}/client?token=${tokens[1]}&demo-client=1&auto=1`);
    expect(await server.exited()).toBe(0);
    // A string, evaluated in the page (the test's tsconfig has no DOM types).
    const progress = (await page.evaluate("window.fedtensorClient")) as { rounds: number[]; losses: { loss: number }[]; status: string };
    expect(pageErrors).toEqual([]);
    expect(progress.rounds).toEqual([1, 2]);
    expect(progress.losses).toHaveLength(2);
    expect(await page.locator("#rounds").textContent()).toBe("2");
    // The token left the address bar once read.
    expect(page.url()).not.toContain(tokens[1]!);
    expect(server.output()).toMatch(/client-002 ready \(browser/);
    const rows = readMetrics(join(out, "metrics.jsonl"));
    expect(rows.map((r) => r.clients)).toEqual([2, 2]);
    expect(rows.at(-1)!.test_accuracy as number).toBeGreaterThan(0.85);
  }, 180_000);
});
