/**
 * The tab's page as a person sees it, in headless chromium: a tab and a `fedtensor client` in a
 * distributed-DP run of `fedtensor serve`. When the run is over, the page must show the run's
 * name and its state (finished, no "reconnecting"), what it sends each round and what it sent,
 * the run's epsilon, and a loss chart with axes, tick labels and units whose text is not
 * stretched (the SVG keeps its aspect ratio). The test checks the DOM and keeps a screenshot
 * (page.png in the test's temp folder, and FEDTENSOR_SCREENSHOT when set, to look at).
 * Skipped, saying why, where /usr/bin/chromium is absent.
 */
import { copyFileSync } from "node:fs";
import { join } from "node:path";
import type { BrowserContext } from "playwright-core";
import { afterAll, describe, expect, it } from "vitest";
import { readMetrics } from "../../src/lib/run/metrics.js";
import { deadline } from "../helpers/deadline.js";
import { tempDir } from "../run/temp-dir.js";
import { executablePath, hasChromium, launchChromium, openClientTab } from "./browser-helpers.js";
import { serverUrl, smallServe, startClient, startProcess, writeTokens, type Process } from "./serve-helpers.js";

if (!hasChromium) console.log(`serve-page.test.ts skipped: no ${executablePath} (apt-get install chromium)`);

const started: Process[] = [];
let browser: BrowserContext | undefined;
afterAll(async () => {
  await browser?.close();
  started.forEach((p) => p.child.exitCode === null && p.child.kill("SIGKILL"));
});

describe.skipIf(!hasChromium)("the client page", () => {
  it("shows the run's name and state, what it sends, the epsilon and a loss chart with axes and units", async () => {
    const dir = tempDir("fedtensor-page-");
    const out = join(dir, "page-run");
    const { path, tokens } = writeTokens(dir, 2);
    const ddp = ["--aggregator", "distributed-dp", "--ddp-clip", "1", "--ddp-noise", "1", "--ddp-bits", "16"];
    const server = startProcess(smallServe(path, out, "--model", "logistic", "--rounds", "2", "--clients-per-round", "2", "--min-clients", "2", "--round-timeout", "120", ...ddp));
    started.push(server);
    const url = await serverUrl(server);
    started.push(startClient(url, tokens[0]!, 0));
    browser = await launchChromium({ webgpu: false });
    const tab = await openClientTab(browser, url, `token=${tokens[1]}&demo-client=1&auto=1&ep=wasm`);
    expect(await server.exited()).toBe(0);
    const rows = readMetrics(join(out, "metrics.jsonl"));
    await tab.page.waitForFunction("window.fedtensorClient.state.startsWith('finished')", undefined, { timeout: deadline(30_000) });
    const progress = await tab.progress();
    expect(tab.errors).toEqual([]);
    const text = (selector: string) => tab.page.locator(selector).textContent();

    expect(await text("#run-name")).toBe("page-run");
    expect(await text("#state")).toBe("finished: the run finished after 2 rounds");
    expect(await text("#sends")).toMatch(/^SecAgg\+ messages only, its accumulator clipped, rotated and noised here/);
    // What it sent: the trained message and its SecAgg+ messages, each round; the page shows the last round's.
    // The key setup runs while the tab trains, so "trained" may come after the first SecAgg+ answers.
    expect(progress.sent.map((s) => s.round)).toEqual([1, 2]);
    expect([...progress.sent[1]!.messages].sort()).toEqual(["secagg", "secagg", "secagg", "secagg", "secagg", "trained"]);
    expect(await text("#sent")).toMatch(/^round 2: [\d.]+ KiB in 6 messages \((trained, secagg x5|secagg x5, trained)\)$/);
    // The run's epsilon, as the metrics have it.
    const epsilon = rows.at(-1)!.epsilon as number;
    expect(epsilon).toBeGreaterThan(0);
    expect(progress.epsilons.at(-1)!.epsilon).toBeCloseTo(epsilon, 10);
    expect(await text("#epsilon")).toBe(`${epsilon.toFixed(3)} after round 2 (at the run's delta)`);

    // The chart: axes with tick labels and units, both series, a legend; drawn unstretched.
    const chart = tab.page.locator("#chart");
    expect(await chart.getAttribute("preserveAspectRatio")).toBeNull();
    expect(await chart.locator("text.axis-label").allTextContents()).toEqual(["round", "training loss (cross-entropy, nats)"]);
    expect(await chart.locator("text.tick").allTextContents()).toEqual(expect.arrayContaining(["1", "2"]));
    expect(await chart.locator("polyline").count()).toBe(2);
    expect(await chart.locator("text.legend").allTextContents()).toEqual([`this tab: ${progress.localLosses.at(-1)!.loss.toFixed(3)}`, `round's cohort: ${progress.losses.at(-1)!.loss.toFixed(3)}`]);
    const box = (await chart.boundingBox())!;
    // viewBox 480 x 260: the rendered box keeps that ratio, so text is scaled evenly.
    expect(box.width / box.height).toBeCloseTo(480 / 260, 1);

    const shot = join(dir, "page.png");
    await tab.page.screenshot({ path: shot, fullPage: true });
    if (process.env.FEDTENSOR_SCREENSHOT) copyFileSync(shot, process.env.FEDTENSOR_SCREENSHOT);
  }, deadline(240_000));
});
