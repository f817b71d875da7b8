/**
 * `fedtensor serve --clipping-range --quantization-range --modulus-range` (Flower's
 * SecAggPlusWorkflow names): the flags' own values (FT305), their refusal outside
 * --aggregator secure, the start-up check that the largest cohort's sum cannot wrap (FT342),
 * and a served secure run with non-default ranges that reach the clients and train.
 * Needs `npm run build`.
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { checkRangeSettings, rangesOf, secureParams } from "../../src/deploy/server/secure.js";
import { readMetrics } from "../../src/lib/run/metrics.js";
import { tempDir } from "../run/temp-dir.js";
import { writeTokens } from "./serve-helpers.js";
import { killedAfterAll, refusedServe, serveWithFiles, startFileClient } from "./serve-kill-helpers.js";
import { deadline } from "../helpers/deadline.js";

const { track } = killedAfterAll();

describe("SecAgg+ ranges of fedtensor serve", () => {
  it("default to Flower's, and reach the parameters of the float path only (distributed DP brings its modulus)", () => {
    expect(rangesOf({})).toEqual({ clipping_range: 8, quantization_range: 2 ** 22, modulus_range: 2 ** 32 });
    const ranges = { clipping_range: 4, quantization_range: 65536, modulus_range: 2 ** 24 };
    expect(secureParams(1, 10, 4, undefined, {}, ranges)).toMatchObject(ranges);
    expect(secureParams(1, 10, 4, 20, {}, ranges)).toMatchObject({ clipping_range: 1, quantization_range: 1, modulus_range: 2 ** 20 });
  });

  it("are checked at start-up against --clients-per-round: n Q must stay below M (FT342)", () => {
    expect(() => checkRangeSettings({}, 1023)).not.toThrow();
    // 1024 x 2^22 is 2^32: the default ranges take at most 1023 clients.
    expect(() => checkRangeSettings({}, 1024)).toThrow(/^FT342: --clients-per-round 1024 x --quantization-range 4194304 is not below --modulus-range 4294967296: the secure sum would wrap; lower --quantization-range to at most 4194303/);
    expect(() => checkRangeSettings({ quantization_range: 65536, modulus_range: 2 ** 24 }, 255)).not.toThrow();
    expect(() => checkRangeSettings({ quantization_range: 65536, modulus_range: 2 ** 24 }, 256)).toThrow(/^FT342: --clients-per-round 256 x --quantization-range 65536 is not below --modulus-range 16777216: .* at most 65535, raise --modulus-range/);
    // A modulus too small for the cohort whatever Q is.
    expect(() => checkRangeSettings({ quantization_range: 1, modulus_range: 4 }, 4)).toThrow(/^FT342: .*would wrap; no --quantization-range fits: raise --modulus-range \(at most 2\^32\) or lower --clients-per-round/);
  });

  it("refuse values out of their domain (FT305), ranges outside --aggregator secure (FT305), and a sum that wraps (FT342)", async () => {
    const dir = tempDir("fedtensor-serve-ranges-");
    const { path } = writeTokens(dir, 2);
    const run = refusedServe(path, join(dir, "run"));
    const secure = ["--aggregator", "secure"];
    for (const bad of ["0", "-1", "Infinity", "x", ""]) expect(await run(...secure, "--clipping-range", bad)).toMatch(new RegExp(`FT305: --clipping-range: expected a finite number > 0, got ${bad}\\s`));
    for (const bad of ["0", "2.5", "-4"]) expect(await run(...secure, "--quantization-range", bad)).toMatch(new RegExp(`FT305: --quantization-range: expected a whole number >= 1, got ${bad}\\s`));
    for (const bad of ["1", "1000", "8589934592", "0.5"]) expect(await run(...secure, "--modulus-range", bad)).toMatch(new RegExp(`FT305: --modulus-range: expected a power of two from 2 to 2\\^32 \\(4294967296\\), got ${bad}\\s`));
    expect(await run("--clipping-range", "4")).toMatch(/FT305: --clipping-range: SecAgg\+'s ranges need --aggregator secure/);
    expect(await run("--aggregator", "distributed-dp", "--modulus-range", "65536")).toMatch(/FT305: --modulus-range: with --aggregator distributed-dp the codec quantizes each update and --ddp-bits fixes the modulus/);
    expect(await run(...secure, "--clients-per-round", "10", "--quantization-range", "65536", "--modulus-range", "524288")).toMatch(/FT342: --clients-per-round 10 x --quantization-range 65536 is not below --modulus-range 524288: the secure sum would wrap; lower --quantization-range to at most 52428/);
  }, deadline(60_000));

  it("reach the clients through the setup message and train: clipping 4, quantization 2^16, modulus 2^24", async () => {
    const { out, tokens, files, server, url } = await serveWithFiles(track, "fedtensor-serve-ranges-", 4, "--model", "logistic", "--aggregator", "secure", "--rounds", "2", "--clients-per-round", "4", "--min-clients", "4",
      "--clipping-range", "4", "--quantization-range", "65536", "--modulus-range", String(2 ** 24));
    const clients = files.map((file, i) => track(startFileClient(url, tokens[i]!, file)));
    const code = await server.exited();
    const log = server.output();
    expect(code, log + clients.map((c) => c.output()).join('\n---\n')).toBe(0);
    expect(log.match(/SecAgg\+ ranges: /g)).toHaveLength(1);
    expect(log).toMatch(/SecAgg\+ ranges: clipping_range 4, quantization_range 65536, modulus_range 16777216 \(a step of 0\.0001220703125 per client and value\)/);
    // Each client checks the parameters the server sent (FT335 otherwise) and takes part.
    expect(log).toMatch(/round 1\/2: 4 of 4 clients merged/);
    expect(log).toMatch(/round 2\/2: 4 of 4 clients merged/);
    const rows = readMetrics(join(out, "metrics.jsonl"));
    expect(rows.map((r) => r.clients)).toEqual([4, 4]);
    // A wrong modulus or scale would leave noise in the sum, and the model at chance (10%).
    expect(rows.every((r) => (r.test_accuracy as number) > 0.8)).toBe(true);
  }, deadline(60_000));
});
