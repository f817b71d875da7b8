/**
 * A browser tab in a distributed-DP round: `fedtensor serve --aggregator distributed-dp` samples
 * a cohort of two `fedtensor client` processes and a headless chromium tab on /client. The tab
 * encodes its accumulator with the distributed-DP codec (clipped, rotated, rounded, noised from
 * crypto.getRandomValues) in the page's bundle, SecAgg+ sums the integers, and the round merges
 * with its epsilon in the metrics row. Chromium runs without a WebGPU adapter here (--disable-gpu),
 * so the tab also shows the wasm fallback and its reason. Skipped where /usr/bin/chromium is absent.
 */
import { join } from "node:path";
import type { BrowserContext } from "playwright-core";
import { afterAll, describe, expect, it } from "vitest";
import { readMetrics } from "../../src/lib/run/metrics.js";
import { tempDir } from "../run/temp-dir.js";
import { executablePath, hasChromium, launchChromium, openClientTab } from "./browser-helpers.js";
import { serverUrl, smallServe, startProcess, writeTokens, type Process } from "./serve-helpers.js";
import { partitionFiles } from "./serve-kill-helpers.js";
import { deadline } from "../helpers/deadline.js";

if (!hasChromium) console.log(`serve-browser-ddp.test.ts skipped: no ${executablePath} (apt-get install chromium)`);

const started: Process[] = [];
let browser: BrowserContext | undefined;
afterAll(async () => {
  await browser?.close();
  started.forEach((p) => p.child.exitCode === null && p.child.kill("SIGKILL"));
});

describe.skipIf(!hasChromium)("a browser tab in a distributed-DP served run", () => {
  it("takes part in rounds that merge, with the epsilon in each metrics row, on wasm where there is no WebGPU adapter", async () => {
    const dir = tempDir("fedtensor-browser-ddp-");
    const out = join(dir, "run");
    const { path, tokens } = writeTokens(dir, 3);
    // Little noise (as serve-ddp.test.ts's training run): the decoded sum keeps the model's progress.
    const ddp = ["--aggregator", "distributed-dp", "--ddp-clip", "100", "--ddp-noise", "0.0001", "--ddp-bits", "20"];
    // The Node clients' examples from record files (those --dataset mnist --client-index i reads): no client process reads MNIST.
    const files = partitionFiles(dir, 2);
    const server = startProcess(smallServe(path, out, "--model", "logistic", "--rounds", "2", "--clients-per-round", "3", "--min-clients", "3", "--round-timeout", "120", ...ddp));
    started.push(server);
    const url = await serverUrl(server);
    for (const i of [0, 1]) started.push(startProcess(["client", "--server", url, "--token", tokens[i]!, "--data", files[i]!, "--max-backoff", "1", "--exit-when-done"]));
    browser = await launchChromium({ webgpu: false });
    const tab = await openClientTab(browser, url, `token=${tokens[2]}&demo-client=2&auto=1`);
    expect(await server.exited()).toBe(0);
    const progress = await tab.progress();
    expect(tab.errors).toEqual([]);
    const log = server.output();
    expect(log).toMatch(/client-\d+ ready \(browser/);
    for (const round of [1, 2]) expect(log).toMatch(new RegExp(`round ${round}/2: 3 of 3 clients merged`));
    expect(progress.rounds).toEqual([1, 2]);
    expect(progress.backend).toEqual({ provider: "wasm", why: "the browser gave no WebGPU adapter" });
    expect(await tab.page.locator("#backend").textContent()).toBe("wasm (the browser gave no WebGPU adapter)");
    // The tab's own loss, from its accumulator before the codec's noise: a cross-entropy, finite and positive.
    expect(progress.localLosses.map((l) => l.round)).toEqual([1, 2]);
    for (const { loss } of progress.localLosses) expect(loss).toBeGreaterThan(0);
    const rows = readMetrics(join(out, "metrics.jsonl"));
    expect(rows.map((r) => r.clients)).toEqual([3, 3]);
    expect(rows.every((r) => "epsilon" in r)).toBe(true);
    // Ten-class MNIST: chance is 10%.
    expect(rows.at(-1)!.test_accuracy as number).toBeGreaterThan(0.7);
  }, deadline(240_000));
});
