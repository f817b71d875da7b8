/**
 * The SecAgg+ core in a real browser: bundled with esbuild for the browser platform (no Node
 * API may be pulled in) and run in Debian's chromium, headless, through playwright-core with
 * the system executable (no browser download). Skips, saying so, where chromium is missing.
 */
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { chromium } from "playwright-core";
import { describe, expect, it } from "vitest";

const executablePath = process.env["CHROMIUM_PATH"] ?? "/usr/bin/chromium";
const here = dirname(fileURLToPath(import.meta.url));
const hasChromium = existsSync(executablePath);
if (!hasChromium) console.warn(`secagg-browser: no chromium at ${executablePath}: skipped`);

describe.skipIf(!hasChromium)("SecAgg+ in chromium", () => {
  it("bundles for the browser without Node APIs and sums a round with dropouts in a page", async () => {
    const bundle = await build({
      entryPoints: [join(here, "secagg-browser-entry.ts")],
      bundle: true,
      platform: "browser",
      format: "iife",
      write: false,
      logLevel: "silent",
    });
    const code = bundle.outputFiles[0]!.text;
    expect(code).not.toMatch(/require\(["']node:/);
    const browser = await chromium.launch({ executablePath, headless: true, args: ["--no-sandbox"] });
    try {
      const page = await browser.newPage();
      const errors: string[] = [];
      page.on("pageerror", (e) => errors.push(e.message));
      await page.addScriptTag({ content: code });
      const result = await page.evaluate(() =>
        (globalThis as unknown as { runSecAggRound: (n: number, length: number, drop: number) => Promise<Record<string, unknown>> }).runSecAggRound(6, 256, 2),
      );
      expect(errors).toEqual([]);
      expect(result).toMatchObject({ kind: "done", clients: 6 });
      expect(result["maxError"]).toBeLessThanOrEqual((6 * 2) / 2 ** 20);
      expect(result["userAgent"]).toMatch(/Chrome/);
      // Key reuse (src/deploy/secagg/reuse.ts), with the SecAggRounds every tab's client core keeps: round 2 skips two steps.
      const reused = await page.evaluate(() =>
        (globalThis as unknown as { runReusedRounds: (n: number, length: number, rounds: number) => Promise<{ steps: string[]; maxError: number }[]> }).runReusedRounds(4, 256, 2),
      );
      expect(errors).toEqual([]);
      expect(reused.map((r) => r.steps)).toEqual([["advertise-keys", "share-keys", "masked-input", "consistency-check", "unmask"], ["masked-input", "consistency-check", "unmask"]]);
      for (const r of reused) expect(r.maxError).toBeLessThanOrEqual((4 * 2) / 2 ** 20);
    } finally {
      await browser.close();
    }
  });
});
