/**
 * A browser tab in a served FedPer run keeps its head in IndexedDB: with a `fedtensor client`
 * process in the cohort, the tab's round 1 starts from the server's initial head and round 2
 * from the state it kept after round 1; its IndexedDB then holds the states of rounds 1 and 2
 * (by run and client id), whose values are in no file of the server's run folder; the tab sent
 * hello, ready and updates only. Skipped where /usr/bin/chromium is absent.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import type { BrowserContext } from "playwright-core";
import { afterAll, describe, expect, it } from "vitest";
import { decodeStates } from "../../src/deploy/client/state.js";
import { tempDir } from "../run/temp-dir.js";
import { executablePath, hasChromium, launchChromium, openClientTab } from "./browser-helpers.js";
import { serverUrl, smallServe, startClient, startProcess, writeTokens, type Process } from "./serve-helpers.js";
import { deadline } from "../helpers/deadline.js";

if (!hasChromium) console.log(`serve-browser-state.test.ts skipped: no ${executablePath} (apt-get install chromium)`);

const started: Process[] = [];
let browser: BrowserContext | undefined;
afterAll(async () => {
  await browser?.close();
  started.forEach((p) => p.child.exitCode === null && p.child.kill("SIGKILL"));
});

describe.skipIf(!hasChromium)("a browser tab in a served FedPer run", () => {
  it("keeps its head in IndexedDB, starts round 2 from it, and sends updates only", async () => {
    const dir = tempDir("fedtensor-browser-state-");
    const out = join(dir, "run");
    const { path, tokens } = writeTokens(dir, 2);
    const server = startProcess(smallServe(path, out, "--model", "logistic", "--algorithm", "fedper", "--rounds", "2", "--clients-per-round", "2", "--min-clients", "2", "--round-timeout", "120"));
    started.push(server);
    const url = await serverUrl(server);
    started.push(startClient(url, tokens[0]!, 0, "--exit-when-done", "--state-dir", join(dir, "state")));
    browser = await launchChromium({ webgpu: false });
    const tab = await openClientTab(browser, url, `token=${tokens[1]}&demo-client=1&auto=1&ep=wasm`);
    expect(await server.exited()).toBe(0);
    expect(server.output()).toMatch(/round 2\/2: 2 of 2 clients merged/);
    const progress = await tab.progress();
    expect(tab.errors).toEqual([]);
    expect(progress.rounds).toEqual([1, 2]);
    expect(progress.stateReads).toEqual([{ round: 1, from: null }, { round: 2, from: 1 }]);
    expect(new Set(progress.sent.flatMap((s) => s.messages))).toEqual(new Set(["update"]));

    // Written when the round-end of a merged round is handled, which may come after the server has exited.
    await tab.page.waitForFunction("window.fedtensorClient.statesKept.includes(2)", undefined, { timeout: deadline(30_000) });
    // The tab's IndexedDB record, read in the page (the test's tsconfig has no DOM types).
    const stored = (await tab.page.evaluate(`new Promise((resolve, reject) => {
      const open = indexedDB.open("fedtensor-client-state");
      open.onerror = () => reject(open.error);
      open.onsuccess = () => {
        const get = open.result.transaction("states").objectStore("states").get(JSON.stringify(["run", "client-002"]));
        get.onsuccess = () => resolve(get.result === undefined ? null : Array.from(new Uint8Array(get.result)));
        get.onerror = () => reject(get.error);
      };
    })`)) as number[] | null;
    expect(stored).not.toBeNull();
    const states = decodeStates(Uint8Array.from(stored!), "the tab's IndexedDB");
    expect(states.map((s) => s.round)).toEqual([1, 2]);
    const head = states[1]!.tensors.get("heads.b")!;
    expect(head.shape).toEqual([1, 10]);
    // Its values (pairs of neighbouring float32s) are in no file of the server's run folder.
    const bytes = Buffer.from((head.data as Float32Array).buffer, (head.data as Float32Array).byteOffset, 40);
    const pairs = Array.from({ length: 9 }, (_, k) => bytes.subarray(4 * k, 4 * k + 8));
    const files = readdirSync(out).map((name) => join(out, name)).filter((p) => statSync(p).isFile());
    for (const file of files) expect(pairs.filter((pair) => readFileSync(file).indexOf(pair) >= 0).length, file).toBe(0);
  }, deadline(240_000));
});
