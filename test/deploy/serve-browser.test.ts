/**
 * The browser client: headless Debian chromium tabs open /client?token=...&demo-client=i&auto=1
 * and, with no clicks, join rounds of a `fedtensor serve` run beside a `fedtensor client`
 * process. Chromium gets a software WebGPU adapter (SwiftShader, browser-helpers.ts): one tab
 * trains on onnxruntime-web's WebGPU provider, its first task checked against wasm; another is
 * kept on wasm with ?ep=wasm. Each client's own training loss (shown, never sent) averages to the
 * round's loss the server reports. Skipped, saying why, where /usr/bin/chromium is absent.
 */
import { afterAll, describe, expect, it } from "vitest";
import { join } from "node:path";
import { readMetrics } from "../../src/lib/run/metrics.js";
import { tempDir } from "../run/temp-dir.js";
import { executablePath, hasChromium, launchChromium, openClientTab, webGpuAdapterIn, withOption } from "./browser-helpers.js";
import { serverUrl, smallServe, startClient, startProcess, writeTokens, type Process } from "./serve-helpers.js";
import type { BrowserContext } from "playwright-core";
import { deadline } from "../helpers/deadline.js";

if (!hasChromium) console.log(`serve-browser.test.ts skipped: no ${executablePath} (apt-get install chromium)`);

const started: Process[] = [];
let browser: BrowserContext | undefined;
afterAll(async () => {
  await browser?.close();
  started.forEach((p) => p.child.exitCode === null && p.child.kill("SIGKILL"));
});

/**
 * WebGPU's outputs of the first task against wasm's: the largest difference relative to each
 * output's largest magnitude, for this run's round of 25 steps (measured: 2e-6 to 2e-4 for 150 steps). The
 * page itself falls back to wasm beyond 1e-2 (src/deploy/page/backend.ts WEBGPU_TOLERANCE).
 */
const WEBGPU_TOLERANCE = 1e-3;

describe.skipIf(!hasChromium)("the browser client", () => {
  it("joins rounds from /client with ?token&demo-client&auto=1, on WebGPU where there is an adapter, and charts its own loss", async () => {
    const dir = tempDir("fedtensor-browser-");
    const out = join(dir, "run");
    const { path, tokens } = writeTokens(dir, 3);
    // 120 clients of 500 examples: 25 steps a round, which WebGPU on SwiftShader (a CPU) runs in seconds.
    const server = startProcess(withOption(smallServe(path, out, "--rounds", "2", "--clients-per-round", "3", "--min-clients", "3", "--round-timeout", "200"), "--clients", "120"));
    started.push(server);
    const url = await serverUrl(server);
    const node = startClient(url, tokens[0]!, 0, "--exit-when-done");
    started.push(node);
    browser = await launchChromium({ webgpu: true });
    const gpuTab = await openClientTab(browser, url, `token=${tokens[1]}&demo-client=1&auto=1`);
    const wasmTab = await openClientTab(browser, url, `token=${tokens[2]}&demo-client=2&auto=1&ep=wasm`);
    const adapter = await webGpuAdapterIn(gpuTab.page);
    // An execution provider the page does not have: refused before it connects.
    const unknownEp = await openClientTab(browser, url, `token=${tokens[2]}&demo-client=2&auto=1&ep=cuda`);
    expect((await unknownEp.progress()).status).toBe('FT305: ?ep: webgpu (the default: WebGPU where there is an adapter) or wasm, not "cuda"');
    await unknownEp.page.close();
    expect(await server.exited()).toBe(0);
    const [onGpu, onWasm] = [await gpuTab.progress(), await wasmTab.progress()];
    expect(gpuTab.errors).toEqual([]);
    expect(wasmTab.errors).toEqual([]);
    for (const tab of [onGpu, onWasm]) expect(tab.rounds).toEqual([1, 2]);
    expect(await gpuTab.page.locator("#rounds").textContent()).toBe("2");
    // The token left the address bar once read.
    expect(gpuTab.page.url()).not.toContain(tokens[1]!);

    if (adapter === null) {
      console.log("serve-browser.test.ts: chromium gave no WebGPU adapter here, so WebGPU was not tested; the page fell back to wasm:", onGpu.backend!.why);
      expect(onGpu.backend).toMatchObject({ provider: "wasm", why: "the browser gave no WebGPU adapter" });
    } else if (onGpu.backend!.provider === "wasm") {
      // The page's own check against wasm caught a WebGPU result that differs (SwiftShader's WebGPU did so in
      // 1 of 4 CI runs here, by 0.0995): the tab must say so and train on wasm, which the checks below hold it to.
      expect(onGpu.backend!.why).toMatch(/^WebGPU's results differ from wasm's by \S+ \(more than 0\.01\); wasm instead$/);
      expect(onGpu.backend!.check!.relativeDifference).toBeGreaterThan(0.01);
      console.log(`serve-browser.test.ts: WebGPU (${adapter}) differed from wasm by ${onGpu.backend!.check!.relativeDifference.toExponential(2)}; the page's check moved the tab to wasm`);
    } else {
      // Trained on WebGPU, and its first task's outputs matched wasm's within the tolerance.
      expect(onGpu.backend, JSON.stringify(onGpu.backend)).toMatchObject({ provider: "webgpu", why: expect.stringContaining(`WebGPU adapter: ${adapter}`) });
      expect(onGpu.backend!.check!.relativeDifference).toBeLessThanOrEqual(WEBGPU_TOLERANCE);
      // The 2NN's client part: its Loop over the steps stays on the CPU provider, its body's matrix products are WebGPU's.
      expect(onGpu.backend!.cpuOps).toContain("Loop");
      expect(onGpu.backend!.cpuOps).not.toContain("Gemm");
      expect(await gpuTab.page.locator("#backend").textContent()).toMatch(/on the CPU provider: .*Loop.*checked against wasm/);
      console.log(`serve-browser.test.ts: WebGPU (${adapter}) against wasm: relative difference ${onGpu.backend!.check!.relativeDifference.toExponential(2)}; on the CPU provider: ${onGpu.backend!.cpuOps!.join(", ")}`);
    }
    expect(await gpuTab.page.locator("#backend").textContent()).toContain(onGpu.backend!.provider);
    expect(onWasm.backend).toEqual({ provider: "wasm", why: "wasm was asked for (?ep=wasm)" });

    // Each client's own loss, from its outputs before sending: the cohort's clients hold 500 examples each
    // (IID, 120 clients), so the round's loss is the mean of the three.
    const rows = readMetrics(join(out, "metrics.jsonl"));
    expect(rows.map((r) => r.clients)).toEqual([3, 3]);
    const nodeLosses = [...node.output().matchAll(/round (\d+): local training loss ([\d.]+)/g)].map((m) => Number(m[2]));
    expect(nodeLosses).toHaveLength(2);
    for (const [i, row] of rows.entries()) {
      const local = [nodeLosses[i]!, onGpu.localLosses[i]!.loss, onWasm.localLosses[i]!.loss];
      expect(onGpu.localLosses[i]!.round).toBe(i + 1);
      // 1e-3: the Node client prints its loss with four decimals.
      expect(Math.abs((local[0]! + local[1]! + local[2]!) / 3 - (row.train_loss as number))).toBeLessThan(1e-3);
      expect(onGpu.losses[i]!.loss).toBeCloseTo(row.train_loss as number, 5);
    }
    expect(server.output()).toMatch(/client-\d+ ready \(browser, 500 examples/);
    // Ten-class MNIST (chance: 10%) after two rounds of 25 steps: it trained (0.77 to 0.85 seen,
    // the clients' shuffles coming from the OS's CSPRNG).
    expect(rows.at(-1)!.test_accuracy as number).toBeGreaterThan(0.6);
  }, deadline(480_000));
});
